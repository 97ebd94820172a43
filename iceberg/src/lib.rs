//! What both SQE roles need of Iceberg: everything that touches Iceberg data.
//!
//! - [`table::IcebergTableProvider`]: an Iceberg table in DataFusion (scan planning, inserts).
//! - [`scan`]: the distributable scan node, its task splitting and filter conversion.
//! - [`write`]: parallel Parquet writers and the single-snapshot commit.
//! - [`delete`]: DELETE as position delete files and removed files, in one snapshot.
//! - [`maintenance`]: expiring snapshots and removing orphan files.
//! - [`commit`]: SQE's own metadata commits, for the changes iceberg-rust cannot commit.
//! - [`codec::SqeCodec`]: how SQE's nodes travel inside distributed plan fragments.
//! - [`storage`]: Iceberg storage on `object_store` (local files, S3).
//! - [`catalog_view`]: catalogs seen through a wrapper (commit listeners, token renewal).

// Test code may lock and spawn as it likes; the bans are for the code that ships.
#![cfg_attr(test, allow(clippy::disallowed_types, clippy::disallowed_methods))]

pub mod catalog_view;
pub mod codec;
pub mod commit;
pub mod delete;
pub mod error;
pub mod maintenance;
pub mod scan;
pub mod storage;
pub mod table;
pub mod types;
pub mod write;

pub use error::TableError;
