//! The execution side of SQE: everything that touches Iceberg data.
//!
//! - [`table::IcebergTableProvider`]: an Iceberg table in DataFusion (scan planning, inserts).
//! - [`scan`]: the distributable scan node, its task splitting and filter conversion.
//! - [`write`]: parallel Parquet writers and the single-snapshot commit.
//! - [`codec::SqeCodec`]: how SQE's nodes travel inside distributed plan fragments.
//! - [`storage`]: Iceberg storage on `object_store` (local files, S3).
//! - [`server`]: the worker process (a datafusion-distributed `Worker` behind gRPC).

pub mod catalog_view;
pub mod channel;
pub mod codec;
pub mod error;
pub mod scan;
pub mod server;
pub mod storage;
pub mod table;
mod task_span;
pub mod types;
pub mod write;

pub use error::WorkerError;
