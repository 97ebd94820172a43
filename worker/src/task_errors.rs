//! A task's errors in the client's terms, for result streams read straight from this worker.
//!
//! datafusion-distributed sends a task's error to its consumer as its own encoding of the
//! `DataFusionError` (gRPC `Internal` with the error in the details), which its consumers on
//! other nodes decode; a client reading a partition at the worker (`crate::results`) would get
//! that `Internal` instead of the statement's error (a `NUMERIC_VALUE_OUT_OF_RANGE` as
//! `InvalidArgument`, with its Trino name). So the root of every task that a coalescing
//! consumer reads is wrapped ([`ClassifiedErrors`]): an error is classified where it happens,
//! by the node's own mapping (the gateway's, the one the coordinator uses), and travels as
//! `DataFusionError::Context(<the status>, <the error>)`. The encoding keeps a context's text,
//! so the worker's DoGet finds the status again in what the task service answers
//! ([`status_in`]); a consumer on another node decodes the same error with its context, which
//! classification looks through.

use std::sync::Arc;

use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_distributed::{
    BroadcastExec, DistributedLeafExec, NetworkBroadcastExec, NetworkCoalesceExec,
    NetworkShuffleExec,
};
use futures::StreamExt;
use prost::Message;
use sqe_layers::status::{status_from_context, status_in_context};
use tonic::Status;

/// How a node turns an error into the status a client gets.
#[derive(Clone)]
pub struct ErrorStatus(Arc<dyn Fn(DataFusionError) -> Status + Send + Sync>);

impl ErrorStatus {
    pub fn new(status: impl Fn(DataFusionError) -> Status + Send + Sync + 'static) -> Self {
        Self(Arc::new(status))
    }

    fn of(&self, error: DataFusionError) -> Status {
        (self.0)(error)
    }
}

impl std::fmt::Debug for ErrorStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ErrorStatus")
    }
}

/// The parts of datafusion-distributed's error encoding a carried status is found in: the
/// wire format of its `DataFusionError` message (a `oneof`; these are the arms that nest an
/// error), read with every other arm skipped.
#[derive(Clone, PartialEq, prost::Message)]
struct EncodedError {
    #[prost(message, optional, tag = "15")]
    context: Option<EncodedContext>,
    #[prost(message, optional, boxed, tag = "17")]
    diagnostic: Option<Box<EncodedError>>,
    #[prost(message, optional, boxed, tag = "19")]
    shared: Option<Box<EncodedError>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct EncodedContext {
    #[prost(message, optional, boxed, tag = "1")]
    error: Option<Box<EncodedError>>,
    #[prost(string, tag = "2")]
    context: String,
}

/// The client's status carried in a task service's error status, if a task classified it.
pub fn status_in(task_status: &Status) -> Option<Status> {
    if task_status.code() != tonic::Code::Internal || task_status.details().is_empty() {
        return None;
    }
    let mut next = EncodedError::decode(task_status.details()).ok();
    // Bounded: an encoding nests as deep as the error did.
    for _ in 0..64 {
        let error = next?;
        if let Some(context) = error.context {
            if let Some(status) = status_from_context(&context.context) {
                return Some(status);
            }
            next = context.error.map(|e| *e);
        } else {
            next = error.shared.or(error.diagnostic).map(|e| *e);
        }
    }
    None
}

/// `plan` with its errors classified by `status`, unless its root is one datafusion-distributed
/// replaces or specializes (a repartition or broadcast head, its own nodes): those roots are
/// not read by a coalescing consumer, and must stay what they are.
pub fn classify_errors(
    plan: Arc<dyn ExecutionPlan>,
    status: &ErrorStatus,
) -> Arc<dyn ExecutionPlan> {
    let replaced = plan.is::<RepartitionExec>()
        || plan.is::<BroadcastExec>()
        || plan.is::<DistributedLeafExec>()
        || plan.is::<NetworkBroadcastExec>()
        || plan.is::<NetworkCoalesceExec>()
        || plan.is::<NetworkShuffleExec>()
        // Not exported; it chooses its children per task.
        || plan.name() == "ChildrenIsolatorUnionExec";
    if replaced {
        return plan;
    }
    Arc::new(ClassifiedErrors {
        inner: plan,
        status: status.clone(),
    })
}

/// `error` with the client's status for it in front: a context that keeps the error itself.
fn classify(error: DataFusionError, status: &ErrorStatus) -> DataFusionError {
    let shared = Arc::new(error);
    let client = status.of(DataFusionError::Shared(Arc::clone(&shared)));
    DataFusionError::Context(
        status_in_context(&client),
        Box::new(DataFusionError::Shared(shared)),
    )
}

/// A task's root whose errors carry the client's status. It stands in for the root without
/// being a node of its own: its children and metrics are the root's, so the metrics a task
/// reports (one set per node, in order) line up with the coordinator's copy of the plan.
pub struct ClassifiedErrors {
    inner: Arc<dyn ExecutionPlan>,
    status: ErrorStatus,
}

impl std::fmt::Debug for ClassifiedErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClassifiedErrors")
            .field("inner", &self.inner.name())
            .finish_non_exhaustive()
    }
}

impl DisplayAs for ClassifiedErrors {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt_as(t, f)
    }
}

impl ExecutionPlan for ClassifiedErrors {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.inner.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.inner.children()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self {
            inner: Arc::clone(&self.inner).with_new_children(children)?,
            status: self.status.clone(),
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.inner.metrics()
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> datafusion::common::Result<SendableRecordBatchStream> {
        let stream = self.inner.execute(partition, context)?;
        let schema = stream.schema();
        let status = self.status.clone();
        let classified = stream.map(move |item| item.map_err(|error| classify(error, &status)));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, classified)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn out_of_range() -> Result<Status, Box<dyn std::error::Error>> {
        let mut status = Status::invalid_argument("bigint addition overflow");
        status
            .metadata_mut()
            .insert("sqe-error-name", "NUMERIC_VALUE_OUT_OF_RANGE".parse()?);
        Ok(status)
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct EncodedLeaf {
        #[prost(string, tag = "11")]
        execution: String,
    }

    /// The wire form datafusion-distributed gives `Context(ctx, Shared(Execution("boom")))`,
    /// written from its message's field numbers.
    fn encoded(context: &str) -> Vec<u8> {
        let execution = EncodedLeaf {
            execution: "boom".into(),
        }
        .encode_to_vec();
        let mut shared = Vec::new();
        prost::encoding::bytes::encode(19, &execution, &mut shared);
        let mut context_message = Vec::new();
        prost::encoding::bytes::encode(1, &shared, &mut context_message);
        prost::encoding::string::encode(2, &context.to_string(), &mut context_message);
        let mut error = Vec::new();
        prost::encoding::bytes::encode(15, &context_message, &mut error);
        error
    }

    #[test]
    fn a_carried_status_is_found_in_the_task_services_encoding() -> TestResult {
        let task = Status::with_details(
            tonic::Code::Internal,
            "DataFusionError",
            encoded(&status_in_context(&out_of_range()?)).into(),
        );
        let found = status_in(&task).ok_or("no status found")?;
        assert_eq!(found.code(), tonic::Code::InvalidArgument);
        assert_eq!(found.message(), "bigint addition overflow");
        assert_eq!(
            found
                .metadata()
                .get("sqe-error-name")
                .and_then(|v| v.to_str().ok()),
            Some("NUMERIC_VALUE_OUT_OF_RANGE")
        );
        // A context of someone else's, or no details at all: nothing is made up.
        let other = Status::with_details(
            tonic::Code::Internal,
            "DataFusionError",
            encoded("while reading").into(),
        );
        assert!(status_in(&other).is_none());
        assert!(status_in(&Status::unavailable("worker gone")).is_none());
        Ok(())
    }

    #[test]
    fn an_error_keeps_its_cause_behind_the_clients_status() -> TestResult {
        let mapper = ErrorStatus::new(|error: DataFusionError| {
            Status::invalid_argument(format!("classified: {}", error.strip_backtrace()))
        });
        let classified = classify(DataFusionError::Execution("boom".into()), &mapper);
        let DataFusionError::Context(context, inner) = classified else {
            return Err("not a context".into());
        };
        let status = status_from_context(&context).ok_or("no status carried")?;
        assert_eq!(status.message(), "classified: Execution error: boom");
        // What another node's consumer classifies is the error itself.
        assert_eq!(inner.strip_backtrace(), "Execution error: boom");
        Ok(())
    }

    #[test]
    fn roots_datafusion_distributed_replaces_are_left_alone() -> TestResult {
        use datafusion::arrow::datatypes::Schema;
        use datafusion::physical_plan::Partitioning;
        use datafusion::physical_plan::empty::EmptyExec;

        let mapper = ErrorStatus::new(|_| Status::internal("x"));
        let plan: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(Arc::new(Schema::empty())));
        let classified = classify_errors(Arc::clone(&plan), &mapper);
        assert!(classified.is::<ClassifiedErrors>());
        assert_eq!(classified.name(), plan.name());
        assert_eq!(classified.children().len(), plan.children().len());
        let repartition: Arc<dyn ExecutionPlan> = Arc::new(RepartitionExec::try_new(
            plan,
            Partitioning::RoundRobinBatch(2),
        )?);
        assert!(classify_errors(repartition, &mapper).is::<RepartitionExec>());
        Ok(())
    }
}
