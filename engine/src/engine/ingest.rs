//! Bulk loads (Flight SQL `CommandStatementIngest`): a stream of batches into an Iceberg table
//! as one snapshot.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, execute_stream,
};
use datafusion::prelude::SessionConfig;
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableIdent};
use sqe_iceberg::types::iceberg_schema_for;
use sqe_iceberg::write::{CommitGate, IcebergWriteExec, WriteCommit};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::table_properties::TableLayout;
use super::{Engine, SessionSettings, count_rows};
use crate::error::{Error, ObjectKind, Result};
use crate::stopping::Stop;

/// What to do when the target table does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfMissing {
    Create,
    Fail,
}

/// What to do when it exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfExists {
    Fail,
    Append,
    Replace,
}

/// Where an ingest goes.
#[derive(Debug, Clone)]
pub struct IngestTarget {
    /// The schema (namespace); the session's when unset.
    pub schema: Option<String>,
    pub table: String,
    pub if_missing: IfMissing,
    pub if_exists: IfExists,
}

impl Engine {
    /// Loads `data` into the target table and returns the rows written. Append commits one
    /// snapshot; create makes the table from the data's schema. Replace commits one snapshot
    /// of the same table (readers see the old rows or the new): an `overwrite` when the data
    /// has the table's columns, otherwise the data's columns made current with its rows.
    ///
    /// It runs in a task of its own: a caller that goes away once the commit has begun does
    /// not stop it; `cancel` stops it only before that (`gate`).
    pub async fn ingest(
        self: &Arc<Self>,
        session: &SessionSettings,
        target: IngestTarget,
        data: SendableRecordBatchStream,
        gate: Arc<CommitGate>,
        cancel: CancellationToken,
    ) -> Result<u64> {
        let engine = Arc::clone(self);
        let session = session.clone();
        let load = async move {
            let stop = Stop { gate, cancel };
            stop.unless_stopped(Box::pin(engine.load(&session, target, data, &stop.gate)))
                .await
        };
        sqe_layers::task::spawn(load.instrument(tracing::Span::current()))
            .await
            .map_err(|e| Error::Internal(format!("ingest task failed: {e}")))?
    }

    async fn load(
        &self,
        session: &SessionSettings,
        target: IngestTarget,
        data: SendableRecordBatchStream,
        gate: &Arc<CommitGate>,
    ) -> Result<u64> {
        let schema = target
            .schema
            .clone()
            .or_else(|| session.schema.clone())
            .unwrap_or_else(|| crate::catalog::DEFAULT_SCHEMA.to_string());
        let ident = TableIdent::new(NamespaceIdent::new(schema), target.table.clone());
        super::check_new_table_name(&ident)?;
        let catalog = Arc::clone(self.catalog());
        let exists = catalog.table_exists(&ident).await?;
        let rows = match (exists, target.if_exists, target.if_missing) {
            (true, IfExists::Fail, _) => {
                return Err(Error::already_exists(ObjectKind::Table, ident.to_string()));
            }
            (false, _, IfMissing::Fail) => {
                return Err(Error::not_found(ObjectKind::Table, ident.to_string()));
            }
            (true, IfExists::Append, _) => {
                let table = catalog.load_table(&ident).await?;
                self.write_stream(table, data, WriteCommit::Append, gate)
                    .await?
            }
            (false, _, IfMissing::Create) => self.create_and_fill(&ident, data, gate).await?,
            (true, IfExists::Replace, _) => {
                let table = catalog.load_table(&ident).await?;
                let columns = iceberg_schema_for(data.schema().as_ref(), false)?;
                let same =
                    super::replace_table::same_columns(table.metadata().current_schema(), &columns);
                // Other columns: unpartitioned and unsorted, as a table the ingest creates.
                let (table, commit) = self
                    .replacing(table, same, &columns, &TableLayout::default())
                    .await?;
                self.write_stream(table, data, commit, gate).await?
            }
        };
        self.refresh_names(true).await?;
        Ok(rows)
    }

    /// Creates `ident` with the data's columns and fills it; drops it again if filling fails.
    async fn create_and_fill(
        &self,
        ident: &TableIdent,
        data: SendableRecordBatchStream,
        gate: &Arc<CommitGate>,
    ) -> Result<u64> {
        let schema = iceberg_schema_for(data.schema().as_ref(), false)?;
        let table = self
            .create_table(ident, schema, TableLayout::default(), None, None)
            .await?;
        match self
            .write_stream(table, data, WriteCommit::Append, gate)
            .await
        {
            Ok(rows) => Ok(rows),
            Err(e) => {
                if let Err(purge) = self.catalog().purge_table(ident).await {
                    tracing::error!(table = %ident, error = %purge, "could not drop the table of a failed ingest");
                }
                Err(e)
            }
        }
    }

    /// Writes `data` into `table`, committed as `commit` says once `gate` lets it begin.
    async fn write_stream(
        &self,
        table: Table,
        data: SendableRecordBatchStream,
        commit: WriteCommit,
        gate: &Arc<CommitGate>,
    ) -> Result<u64> {
        let input: Arc<dyn ExecutionPlan> = Arc::new(OneShotExec::new(data));
        let write: Arc<dyn ExecutionPlan> = Arc::new(
            IcebergWriteExec::new(
                input,
                Arc::clone(self.catalog()),
                table,
                None,
                // Run here, never shipped: no properties need to travel.
                HashMap::new(),
            )
            .with_commit(commit),
        );
        let config = SessionConfig::new().with_extension(Arc::clone(gate));
        let context = TaskContext::default().with_session_config(config);
        count_rows(execute_stream(write, Arc::new(context))?).await
    }
}

/// A plan node that yields a stream it was given, once.
struct OneShotExec {
    stream: Mutex<Option<SendableRecordBatchStream>>,
    properties: Arc<PlanProperties>,
}

impl OneShotExec {
    fn new(stream: SendableRecordBatchStream) -> Self {
        let schema: SchemaRef = stream.schema();
        Self {
            stream: Mutex::new(Some(stream)),
            properties: Arc::new(PlanProperties::new(
                EquivalenceProperties::new(schema),
                Partitioning::UnknownPartitioning(1),
                EmissionType::Incremental,
                Boundedness::Bounded,
            )),
        }
    }
}

impl fmt::Debug for OneShotExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OneShotExec")
    }
}

impl DisplayAs for OneShotExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OneShotExec")
    }
}

impl ExecutionPlan for OneShotExec {
    fn name(&self) -> &str {
        "OneShotExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "OneShotExec has one partition, not {partition}"
            )));
        }
        self.stream
            .lock()
            .take()
            .ok_or_else(|| DataFusionError::Internal("OneShotExec executed twice".into()))
    }
}
