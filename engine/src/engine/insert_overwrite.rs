//! `INSERT OVERWRITE [TABLE] t …` as Hive's and Spark's dynamic partition overwrite (Trino's
//! Hive connector's `insert_existing_partitions_behavior = OVERWRITE`): the rows are written as
//! an INSERT's are, on the workers, and one `overwrite` snapshot adds them and removes every
//! data file of the partitions they were written into (an unpartitioned table is one
//! partition), committed only while the table is at the snapshot the statement read.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::provider_as_source;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{LogicalPlan, WriteOp};
use sqe_iceberg::table::with_iceberg_provider;
use sqe_iceberg::write::{PartitionOverwrite, WriteCommit};

use super::Engine;
use crate::error::Result;

impl Engine {
    /// `logical` with each INSERT OVERWRITE into an Iceberg table made an insert committed as a
    /// partition overwrite.
    pub(super) fn partition_overwrites(&self, logical: LogicalPlan) -> Result<LogicalPlan> {
        let rewritten = logical.transform_up(|node| {
            let LogicalPlan::Dml(mut dml) = node else {
                return Ok(Transformed::no(node));
            };
            if dml.op != WriteOp::Insert(InsertOp::Overwrite) {
                return Ok(Transformed::no(LogicalPlan::Dml(dml)));
            }
            let overwriting = with_iceberg_provider(&dml.target, |provider| {
                let snapshot_id = provider.table().metadata().current_snapshot_id();
                // A table without a snapshot has nothing to replace: an append.
                let commit = snapshot_id.map_or(WriteCommit::Append, |snapshot_id| {
                    WriteCommit::OverwritePartitions(Arc::new(PartitionOverwrite {
                        snapshot_id,
                        committer: Arc::clone(&self.committer),
                    }))
                });
                provider.clone().committing(commit)
            });
            let Some(provider) = overwriting else {
                return Ok(Transformed::no(LogicalPlan::Dml(dml)));
            };
            dml.target = provider_as_source(Arc::new(provider));
            dml.op = WriteOp::Insert(InsertOp::Append);
            Ok(Transformed::yes(LogicalPlan::Dml(dml)))
        })?;
        Ok(rewritten.data)
    }
}
