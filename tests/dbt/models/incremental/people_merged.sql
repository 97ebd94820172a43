-- dbt-trino's merge incrementals: the new rows as a temporary view, then MERGE INTO … USING it
-- WHEN MATCHED THEN UPDATE … WHEN NOT MATCHED THEN INSERT.
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id', tags=['incremental']) }}
select id, name, age + {{ var('bump', 0) }} as age, city
from {{ ref('people') }}
where id <= {{ var('upto', 4) }}
