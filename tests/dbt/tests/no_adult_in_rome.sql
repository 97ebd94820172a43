-- Passes: rows are failures, and bob (27, rome) is no adult.
select * from {{ ref('adults') }} where city = 'rome'
