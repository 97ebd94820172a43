//! Trino's SQL on DataFusion: the statements SQE answers itself, Trino's type names, its
//! session functions and Airlift's unit texts.

pub mod functions;
pub mod statements;
pub mod types;
pub mod units;
