//! TPC-H sample data and queries.

mod generate;
pub mod queries;

pub use generate::{TABLES, create_tpch, generate_part, table_schema};
