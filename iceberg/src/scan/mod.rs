//! Reading Iceberg tables: scan planning lives in the table provider; this module holds the
//! distributable scan node, how it splits across tasks, and filter conversion.

mod distribute;
mod exec;
mod predicate;

pub use distribute::IcebergTaskEstimator;
pub use exec::{IcebergScanExec, ScanIo, balance_by_bytes};
pub use predicate::filters_to_predicate;
