//! Trino's `retry_policy = QUERY`: a query whose run fails for a reason not its own (Trino's
//! INTERNAL_ERROR and EXTERNAL kinds: a worker lost, a task that failed on it, the catalog
//! away) before any of its rows has been handed on is planned again and run once more, up to
//! `query_retry_attempts` times. The new plan is made from the same logical plan and session
//! (its `now()` included) and routed to the workers the pool has then; a worker whose call
//! failed has already left it. A user's error (a division by zero, a bad cast) is never
//! retried, nor anything once a row has gone: the client could see rows twice. An INSERT is
//! run again only when its failed run had not begun to commit (its files were deleted, so it
//! certainly added nothing); once a commit has begun its outcome may be unknown, and a second
//! run could add the rows twice. Other writes (CREATE TABLE AS, DELETE, UPDATE, MERGE) run once.

use std::sync::Arc;
use std::time::Duration;

use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, SessionState, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;
use tracing::Instrument;

use sqe_iceberg::write::CommitGate;

use crate::cluster::TaskLedger;
use crate::error::{Error, ErrorKind};
use crate::query_runtime::QueryRuntime;

/// The first wait before a new attempt; it doubles up to [`MAX_DELAY`]. Short: the worker
/// that failed is out of the rotation already, so waiting long buys nothing.
const FIRST_DELAY: Duration = Duration::from_millis(100);
const MAX_DELAY: Duration = Duration::from_secs(2);

/// What a query needs to be planned again.
pub(super) struct Replanning {
    pub(super) state: SessionState,
    pub(super) logical: LogicalPlan,
    /// Runs after the first that it may have.
    pub(super) retries: u32,
}

impl Replanning {
    /// Whether a failed run may have changed a table: an INSERT whose commit had begun (its
    /// gate, among the state's extensions, knows; a query has none).
    fn may_have_written(&self) -> bool {
        self.state
            .config()
            .get_extension::<CommitGate>()
            .is_some_and(|gate| gate.begun())
    }
}

/// Whether a run that failed with `error` may be run again: the failure was not the query's.
fn retryable(error: &Error) -> bool {
    matches!(
        error.code().kind(),
        ErrorKind::Internal | ErrorKind::External
    )
}

/// `first` (the query's first run), run again from `replanning` while it fails retryably
/// before its first row; from that row on, the run that gave it streams on as it is.
pub(super) fn retrying(
    first: SendableRecordBatchStream,
    replanning: Replanning,
    runtime: Arc<QueryRuntime>,
    task_ctx: Arc<TaskContext>,
) -> SendableRecordBatchStream {
    let schema = first.schema();
    let answering_run = async move {
        let mut stream = first;
        let mut retries_left = replanning.retries;
        let mut delay = FIRST_DELAY;
        loop {
            let failure = match stream.next().await {
                None => return futures::stream::empty().boxed(),
                // An empty batch carries no row: holding it back keeps a retry open.
                Some(Ok(batch)) if batch.num_rows() == 0 => continue,
                Some(Ok(batch)) => {
                    return futures::stream::once(async { Ok(batch) })
                        .chain(stream)
                        .boxed();
                }
                Some(Err(e)) => Error::from(e),
            };
            if retries_left == 0 || !retryable(&failure) || replanning.may_have_written() {
                let error = DataFusionError::External(Box::new(failure));
                return futures::stream::once(async { Err(error) }).boxed();
            }
            // The failed run's tasks stop with its stream, before the next one starts.
            drop(stream);
            retries_left -= 1;
            tracing::warn!(
                error = %failure,
                retries_left,
                "the query failed before sending a row; running it again (retry_policy QUERY)"
            );
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(MAX_DELAY);
            stream = run_again(&replanning, &runtime, &task_ctx).await;
        }
    };
    let batches = futures::stream::once(answering_run).flatten();
    Box::pin(RecordBatchStreamAdapter::new(schema, batches))
}

/// A new run of the query: planned again (on the workers there are now) and started; a plan
/// that cannot be made is a run that failed at once.
async fn run_again(
    replanning: &Replanning,
    runtime: &QueryRuntime,
    task_ctx: &Arc<TaskContext>,
) -> SendableRecordBatchStream {
    let span = tracing::info_span!("query.retry");
    let plan = super::physical_plan(&replanning.state, &replanning.logical)
        .instrument(span)
        .await;
    match plan {
        Ok(plan) => {
            if let Some(ledger) = task_ctx.session_config().get_extension::<TaskLedger>() {
                ledger.retry_with(&plan);
            }
            runtime.execute(plan, Arc::clone(task_ctx))
        }
        Err(e) => {
            let schema = replanning.logical.schema().inner().clone();
            let failed =
                futures::stream::once(async move { Err(DataFusionError::External(Box::new(e))) });
            Box::pin(RecordBatchStreamAdapter::new(schema, failed))
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::error::ArrowError;
    use datafusion::prelude::SessionContext;
    use futures::TryStreamExt;

    use super::*;
    use crate::error::ErrorCode;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    /// A query answering 1, 2, 3, and a first run of it that yields `first` then fails with
    /// `failure`.
    async fn query_and_first_run(
        first: Vec<i64>,
        failure: DataFusionError,
    ) -> std::result::Result<(Replanning, SendableRecordBatchStream), Box<dyn std::error::Error>>
    {
        let ctx = SessionContext::new();
        let logical = ctx
            .sql("SELECT column1 AS n FROM (VALUES (1), (2), (3))")
            .await?
            .into_unoptimized_plan();
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]));
        let batch =
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(Int64Array::from(first))])?;
        let items = vec![Ok(batch), Err(failure)];
        let run: SendableRecordBatchStream = Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter(items),
        ));
        let mut state = ctx.state();
        state
            .config_mut()
            .set_extension(Arc::new(TaskLedger::default()));
        let replanning = Replanning {
            state,
            logical,
            retries: 2,
        };
        Ok((replanning, run))
    }

    async fn answer(
        replanning: Replanning,
        first: SendableRecordBatchStream,
    ) -> std::result::Result<(Vec<i64>, Option<Error>, u32), Box<dyn std::error::Error>> {
        let runtime = QueryRuntime::new("retry-test", 1)?;
        let task_ctx = Arc::new(TaskContext::from(&replanning.state));
        let ledger = task_ctx
            .session_config()
            .get_extension::<TaskLedger>()
            .ok_or("no ledger")?;
        let mut stream = retrying(first, replanning, runtime, task_ctx);
        let mut values = Vec::new();
        loop {
            match stream.try_next().await {
                Ok(Some(batch)) => values.extend(
                    batch
                        .column(0)
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .ok_or("not int64")?
                        .values(),
                ),
                Ok(None) => return Ok((values, None, ledger.attempts())),
                Err(e) => return Ok((values, Some(Error::from(e)), ledger.attempts())),
            }
        }
    }

    fn worker_gone() -> DataFusionError {
        DataFusionError::External(Box::new(tonic::Status::unavailable(
            "http://w2:50052 stopped answering: connection reset",
        )))
    }

    #[tokio::test]
    async fn a_run_that_lost_a_worker_before_its_first_row_runs_again() -> TestResult {
        // Its first run yielded an empty batch only: no row has gone.
        let (replanning, first) = query_and_first_run(vec![], worker_gone()).await?;
        let (values, error, attempts) = answer(replanning, first).await?;
        assert!(error.is_none(), "{error:?}");
        assert_eq!(values, vec![1, 2, 3]);
        assert_eq!(attempts, 2, "the ledger counts the second run");
        Ok(())
    }

    #[tokio::test]
    async fn a_users_error_is_never_run_again() -> TestResult {
        let divide = DataFusionError::ArrowError(Box::new(ArrowError::DivideByZero), None);
        let (replanning, first) = query_and_first_run(vec![], divide).await?;
        let (values, error, attempts) = answer(replanning, first).await?;
        assert_eq!((values, attempts), (Vec::<i64>::new(), 1));
        assert_eq!(
            error.map(|e| e.code()),
            Some(ErrorCode::DivisionByZero),
            "its own error, classified as before"
        );
        Ok(())
    }

    #[tokio::test]
    async fn nothing_runs_again_once_a_row_has_gone() -> TestResult {
        let (replanning, first) = query_and_first_run(vec![7], worker_gone()).await?;
        let (values, error, attempts) = answer(replanning, first).await?;
        assert_eq!(values, vec![7], "no row twice, none from another run");
        assert_eq!(attempts, 1);
        assert_eq!(error.map(|e| e.code()), Some(ErrorCode::RemoteHostGone));
        Ok(())
    }

    #[tokio::test]
    async fn an_insert_runs_again_only_if_its_commit_had_not_begun() -> TestResult {
        let (mut replanning, first) = query_and_first_run(vec![], worker_gone()).await?;
        replanning
            .state
            .config_mut()
            .set_extension(Arc::new(CommitGate::default()));
        let (values, error, attempts) = answer(replanning, first).await?;
        assert!(error.is_none(), "{error:?}");
        assert_eq!((values, attempts), (vec![1, 2, 3], 2));

        let (mut replanning, first) = query_and_first_run(vec![], worker_gone()).await?;
        let gate = Arc::new(CommitGate::default());
        assert!(gate.begin());
        replanning.state.config_mut().set_extension(gate);
        let (values, error, attempts) = answer(replanning, first).await?;
        assert_eq!(
            (values, attempts),
            (Vec::<i64>::new(), 1),
            "its rows may be in"
        );
        assert_eq!(error.map(|e| e.code()), Some(ErrorCode::RemoteHostGone));
        Ok(())
    }

    #[tokio::test]
    async fn with_no_retries_left_the_failure_is_the_answer() -> TestResult {
        let (mut replanning, first) = query_and_first_run(vec![], worker_gone()).await?;
        replanning.retries = 0;
        let (values, error, attempts) = answer(replanning, first).await?;
        assert_eq!((values, attempts), (Vec::<i64>::new(), 1));
        assert_eq!(error.map(|e| e.code()), Some(ErrorCode::RemoteHostGone));
        Ok(())
    }
}
