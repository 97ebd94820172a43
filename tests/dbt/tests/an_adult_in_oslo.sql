{{ config(tags=['must_fail']) }}
-- Fails on purpose (two rows): shows that SQE's answers decide dbt's tests.
select * from {{ ref('adults') }} where city = 'oslo'
