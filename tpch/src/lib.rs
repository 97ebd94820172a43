//! Trino's `tpch` catalog for SQE: the eight TPC-H tables at any scale factor, generated on
//! the fly with `tpchgen` (the same data as dbgen and Trino's own connector).
//!
//! - [`TpchCatalog`]: schemas `tiny` (scale factor 0.01) and `sf<N>`, with Trino's column names
//!   and types; read-only.
//! - [`TpchScanExec`]: the scan; every partition generates its own range of the table's parts,
//!   so [`TpchTaskEstimator`] can split it over workers and each task generates only its share.
//! - [`TpchCodec`]: how the scan travels inside a distributed plan fragment.
//!
//! The same generator fills `sqe local`'s Iceberg sample tables, with the TPC-H specification's
//! column names (`l_orderkey`) and decimal money ([`Naming::Standard`], [`Money::Decimal`]).

mod catalog;
mod codec;
mod distribute;
mod exec;
mod generate;
mod tables;

pub use catalog::{TPCH_CATALOG, TpchCatalog, scale_factor_of};
pub use codec::TpchCodec;
pub use distribute::TpchTaskEstimator;
pub use exec::TpchScanExec;
pub use tables::{Money, Naming, Table, TableShape};
