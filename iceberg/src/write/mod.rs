//! Writing Iceberg tables: Parquet data files written in parallel, one atomic snapshot commit.

mod attempts;
mod exec;
mod files;
#[cfg(test)]
mod racing;

pub use exec::{CommitListener, IcebergWriteExec};
pub use files::{CreatedFiles, WrittenFiles, write_partition};
