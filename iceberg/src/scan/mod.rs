//! Reading Iceberg tables: scan planning lives in the table provider; this module holds the
//! distributable scan node, how it splits across tasks, and filter conversion.

mod distribute;
mod exec;
mod predicate;
mod statistics;

pub use distribute::IcebergTaskEstimator;
pub use exec::{IcebergScanExec, ScanIo, balance_by_bytes};
pub use predicate::filters_to_predicate;
pub use statistics::{FileBounds, ScanBounds, column_statistics, scan_bounds, snapshot_bounds};

use futures::TryStreamExt;
use iceberg::scan::FileScanTask;
use iceberg::table::Table;

/// Every data file of snapshot `snapshot_id` of `table`, with the delete files that apply to
/// it, as the scan planner assigns them (no column is read).
pub async fn snapshot_files(table: &Table, snapshot_id: i64) -> iceberg::Result<Vec<FileScanTask>> {
    table
        .scan()
        .snapshot_id(snapshot_id)
        .select_empty()
        .build()?
        .plan_files()
        .await?
        .try_collect()
        .await
}
