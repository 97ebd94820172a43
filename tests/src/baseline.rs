//! Single-process DataFusion over the Parquet files of SQE's tables.

use std::path::Path;

use datafusion::error::Result;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

/// A plain DataFusion session (no distribution, no SQE code on the read path) with each table
/// registered from the Parquet files in its Iceberg `data/` directory. Valid for tables written
/// once and never deleted from, such as generated TPC-H tables.
pub async fn parquet_session(
    warehouse: &Path,
    namespace: &str,
    tables: &[&str],
) -> Result<SessionContext> {
    let ctx = SessionContext::new();
    for table in tables {
        let dir = warehouse.join(namespace).join(table).join("data");
        let path = format!("{}/", dir.display());
        ctx.register_parquet(*table, &path, ParquetReadOptions::default())
            .await?;
    }
    Ok(ctx)
}
