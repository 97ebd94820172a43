//! Trino's SQL on DataFusion: its statements read as Trino means them ([`parse`]), its type
//! names ([`sql_types`], [`types`]), the statements SQE answers itself, its session functions
//! and Airlift's unit texts.

mod calls;
pub mod functions;
mod intervals;
mod joins;
mod json_clauses;
mod json_table;
mod json_table_lateral;
mod lambdas;
pub use lambdas::has_lambdas;
pub mod logical;
pub mod merge;
pub mod parse;
mod periods;
pub mod planner;
pub mod quoting;
mod rewrite;
pub(crate) mod spellings;
pub mod sql_types;
pub mod statements;
mod table_functions;
pub mod types;
pub mod units;
pub mod views;
