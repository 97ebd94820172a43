//! Writing Iceberg tables: Parquet data files written in parallel where the rows are (on the
//! workers), one atomic snapshot commit on the coordinator.

mod attempts;
mod data_files;
mod exec;
mod files;
#[cfg(test)]
mod racing;
mod recreate;
mod sorting;

pub use data_files::{DATA_FILE_COLUMN, DataFileWriteExec};
pub(crate) use data_files::{UncommittedFiles, data_files_batch, read_data_files};
pub use exec::{
    CommitGate, CommitListener, IcebergWriteExec, PartitionOverwrite, Replacement, WriteCommit,
};
pub use files::{CreatedFiles, WRITTEN, WriteTotals, WrittenFiles, write_partition};
pub use recreate::{Recreation, recreation};
