select city, count(*) as adults, avg(age) as mean_age
from {{ ref('adults') }}
group by city
