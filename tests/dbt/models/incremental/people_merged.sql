-- dbt-trino's merge incrementals: MERGE INTO … WHEN MATCHED THEN UPDATE … WHEN NOT MATCHED THEN INSERT.
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id', views_enabled=false, tags=['incremental']) }}
select id, name, age + {{ var('bump', 0) }} as age, city
from {{ ref('people') }}
where id <= {{ var('upto', 4) }}
