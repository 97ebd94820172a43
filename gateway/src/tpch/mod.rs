//! TPC-H sample data and queries.

mod generate;
pub mod queries;

pub use generate::create_tpch;
