-- dbt-trino's delete+insert incrementals: DELETE … WHERE (id) IN (SELECT …), then INSERT.
{{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key='id', views_enabled=false, tags=['incremental']) }}
select id, name, age + {{ var('bump', 0) }} as age, city
from {{ ref('people') }}
where id <= {{ var('upto', 4) }}
