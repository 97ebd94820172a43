//! Names the stage and task a worker RPC works on in its span.
//!
//! datafusion-distributed puts the task key (query, stage, task) first in both task RPCs
//! (`SetPlanRequest` inside the `CoordinatorChannel` stream, and `ExecuteTaskRequest`), so the
//! first bytes of the request body say which stage and task the call is about. This layer
//! reads them as they pass, without holding the body back, and records `sqe.stage`, `sqe.task`
//! (and `sqe.partitions` for `ExecuteTask`) on the current span: the `grpc.server` span the
//! trace layer above it opened. Requests it cannot read are served all the same.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use datafusion_distributed::TaskKey;
use http::Request;
use http_body::Frame;
use prost::Message;
use prost::encoding::{WireType, decode_key, decode_varint};
use tonic::Status;
use tonic::body::Body;
use tower::{Layer, Service};
use tracing::Span;

/// The RPC through which a task's partitions are executed and streamed to their consumer.
pub(crate) const EXECUTE_TASK: &str = "/worker.WorkerService/ExecuteTask";
/// The RPC that delivers a task's plan; the coordinator keeps it open for the task's life
/// (metrics and work units travel on it), also before any partition is pulled.
pub(crate) const COORDINATOR_CHANNEL: &str = "/worker.WorkerService/CoordinatorChannel";

/// Which task RPC a path is, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskRpc {
    /// `CoordinatorChannel`: a `CoordinatorToWorkerMsg` whose first one holds the plan.
    SetPlan,
    /// `ExecuteTask`: an `ExecuteTaskRequest` for a range of the task's partitions.
    Execute,
}

impl TaskRpc {
    fn of(path: &str) -> Option<Self> {
        match path {
            COORDINATOR_CHANNEL => Some(Self::SetPlan),
            EXECUTE_TASK => Some(Self::Execute),
            _ => None,
        }
    }
}

/// What the first message of a task RPC says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TaskHead {
    stage: u64,
    task: u64,
    /// `ExecuteTask`: the partitions asked for, `start..end`.
    partitions: Option<(u64, u64)>,
}

/// Reads the length-delimited field `field` at the front of `buf` and returns its bytes.
fn front_field(buf: &mut &[u8], field: u32) -> Option<Bytes> {
    let (tag, wire) = decode_key(buf).ok()?;
    if tag != field || wire != WireType::LengthDelimited {
        return None;
    }
    let len = usize::try_from(decode_varint(buf).ok()?).ok()?;
    let bytes = Bytes::copy_from_slice(buf.get(..len)?);
    buf.advance(len);
    Some(bytes)
}

/// Parses the front of a gRPC request body (its 5-byte frame header, then the message).
fn task_head(rpc: TaskRpc, body: &[u8]) -> Option<TaskHead> {
    let mut buf = body.get(5..)?;
    if rpc == TaskRpc::SetPlan {
        // CoordinatorToWorkerMsg.set_plan_request (1): only its tag and length; the plan
        // inside may be large and need not be here.
        let (tag, wire) = decode_key(&mut buf).ok()?;
        if tag != 1 || wire != WireType::LengthDelimited {
            return None;
        }
        decode_varint(&mut buf).ok()?;
    }
    // SetPlanRequest.task_key (1) / ExecuteTaskRequest.task_key (1).
    let key = TaskKey::decode(front_field(&mut buf, 1)?).ok()?;
    let partitions = (rpc == TaskRpc::Execute).then(|| {
        // target_partition_start (2), target_partition_end (3); zero values are not sent.
        let (mut start, mut end) = (0, 0);
        let mut peek = buf;
        while let Ok((tag, WireType::Varint)) = decode_key(&mut peek) {
            if !(tag == 2 || tag == 3) {
                break;
            }
            let value = decode_varint(&mut peek).unwrap_or(0);
            if tag == 2 {
                start = value;
            } else {
                end = value;
            }
        }
        (start, end)
    });
    Some(TaskHead {
        stage: key.stage_id,
        task: key.task_number,
        partitions,
    })
}

/// See the [module documentation](self).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TaskSpanLayer;

impl<S> Layer<S> for TaskSpanLayer {
    type Service = TaskSpan<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TaskSpan { inner }
    }
}

/// See [`TaskSpanLayer`].
#[derive(Debug, Clone)]
pub(crate) struct TaskSpan<S> {
    inner: S,
}

impl<S> Service<Request<Body>> for TaskSpan<S>
where
    S: Service<Request<Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        match TaskRpc::of(request.uri().path()) {
            Some(rpc) => {
                let span = Span::current();
                self.inner.call(request.map(|body| {
                    Body::new(ProbedBody {
                        body,
                        probe: Some((rpc, span)),
                    })
                }))
            }
            None => self.inner.call(request),
        }
    }
}

/// A request body that reports its task key to the span when its first frame passes.
struct ProbedBody {
    body: Body,
    probe: Option<(TaskRpc, Span)>,
}

impl http_body::Body for ProbedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
            && let Some((rpc, span)) = self.probe.take()
            && let Some(head) = task_head(rpc, data)
        {
            span.record("sqe.stage", head.stage);
            span.record("sqe.task", head.task);
            if let Some((start, end)) = head.partitions {
                span.record("sqe.partitions", format!("{start}..{end}"));
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages' fields as datafusion-distributed 2.0 numbers them (`worker.proto`).
    #[derive(Clone, PartialEq, prost::Message)]
    struct SetPlanRequest {
        #[prost(message, optional, tag = "1")]
        task_key: Option<TaskKey>,
        #[prost(uint64, tag = "2")]
        task_count: u64,
        #[prost(bytes = "vec", tag = "3")]
        plan_proto: Vec<u8>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct CoordinatorToWorkerMsg {
        #[prost(message, optional, tag = "1")]
        set_plan_request: Option<SetPlanRequest>,
    }

    use crate::results::ExecuteTaskRequest;

    /// A gRPC frame: uncompressed flag, big-endian length, message.
    fn framed(message: &impl Message) -> Vec<u8> {
        let bytes = message.encode_to_vec();
        let mut frame = vec![0u8];
        frame.extend((bytes.len() as u32).to_be_bytes());
        frame.extend(bytes);
        frame
    }

    fn key(stage: u64, task: u64) -> TaskKey {
        TaskKey {
            query_id: vec![7; 16],
            stage_id: stage,
            task_number: task,
        }
    }

    #[test]
    fn the_task_key_is_read_from_the_front_of_either_rpc() {
        let plan = CoordinatorToWorkerMsg {
            set_plan_request: Some(SetPlanRequest {
                task_key: Some(key(2, 1)),
                task_count: 3,
                plan_proto: vec![0; 100_000],
            }),
        };
        // Only the first bytes arrive in the first frame: enough.
        let front = &framed(&plan)[..64];
        assert_eq!(
            task_head(TaskRpc::SetPlan, front),
            Some(TaskHead {
                stage: 2,
                task: 1,
                partitions: None
            })
        );
        let execute = ExecuteTaskRequest {
            task_key: Some(key(1, 0)),
            target_partition_start: 0,
            target_partition_end: 4,
            none: None,
        };
        assert_eq!(
            task_head(TaskRpc::Execute, &framed(&execute)),
            Some(TaskHead {
                stage: 1,
                task: 0,
                partitions: Some((0, 4))
            })
        );
    }

    #[test]
    fn anything_else_is_left_alone() {
        assert_eq!(task_head(TaskRpc::Execute, b"\0\0\0"), None);
        assert_eq!(
            task_head(TaskRpc::SetPlan, &[0, 0, 0, 0, 2, 0x10, 0x01]),
            None
        );
        let no_key = ExecuteTaskRequest {
            task_key: None,
            target_partition_start: 1,
            target_partition_end: 2,
            none: None,
        };
        assert_eq!(task_head(TaskRpc::Execute, &framed(&no_key)), None);
    }
}
