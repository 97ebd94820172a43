select id, name, age, city from {{ ref('people') }} where age > 30
