-- Rebuilt with CREATE OR REPLACE TABLE: the same table, a new snapshot.
{{ config(on_table_exists='replace') }}
select city, count(*) as adults, avg(age) as mean_age
from {{ ref('adults') }}
group by city
