//! TPC-H's 22 queries with the specification's validation parameters (Q15's view as a `WITH`),
//! one file each in `queries/`, written so that SQE, DataFusion and DuckDB all read them
//! (`benches/tpch.py` runs every one against DuckDB).

/// Query number and text of the queries SQE checks distributed against single-process runs.
pub const QUERIES: [(u8, &str); 6] = [(1, Q1), (3, Q3), (5, Q5), (6, Q6), (10, Q10), (18, Q18)];

pub const Q1: &str = include_str!("queries/q01.sql");
pub const Q3: &str = include_str!("queries/q03.sql");
pub const Q5: &str = include_str!("queries/q05.sql");
pub const Q6: &str = include_str!("queries/q06.sql");
pub const Q10: &str = include_str!("queries/q10.sql");
pub const Q18: &str = include_str!("queries/q18.sql");
