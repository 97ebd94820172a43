//! Result streams clients read straight from this worker (Flight SQL parallel endpoints).
//!
//! For a query whose last stage runs on workers, the coordinator answers GetFlightInfo with
//! one endpoint per partition of that stage, located here, each with a result ticket it signed
//! for the client ([`sqe_layers::auth::ResultTicket`]). The client's DoGet lands on this
//! worker's port (past the worker token check: the ticket is its credential), and the partition
//! is executed by this worker's own datafusion-distributed task service, in process: its Arrow
//! IPC messages go to the client as they are (no decoding, no re-encoding, no coordinator in
//! between). The coordinator stops the streams of a query that ends early through
//! [`ResultStreams`](sqe_proto::ResultStreams), and asks how many partitions clients have
//! started to read.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::{
    Action, ActionType, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo,
    HandshakeRequest, HandshakeResponse, PollInfo, PutResult, SchemaResult, Ticket,
};
use bytes::Bytes;
use datafusion_distributed::{TaskKey, Worker, WorkerServiceServer};
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use sqe_layers::auth::{ResultTicket, ResultTicketVerifier};
use sqe_proto::{
    RedeemedRequest, RedeemedResponse, ResultStreams, ResultStreamsServer, StopResultsRequest,
    StopResultsResponse,
};
use tokio_util::sync::CancellationToken;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::{Request, Response, Status, Streaming};
use uuid::Uuid;

use crate::task_errors::status_in;

/// The client's DoGet: the one method of this worker's port a worker token does not guard.
pub const RESULT_DO_GET: &str = "/arrow.flight.protocol.FlightService/DoGet";

/// datafusion-distributed's task execution method, called in process.
const EXECUTE_TASK: &str = "/worker.WorkerService/ExecuteTask";

/// How long a query's redeemed partitions and stop are remembered: past the longest ticket
/// life the coordinator signs (see `flight_sql_result_ticket_ttl_secs`) plus clock leeway.
const REMEMBER_QUERY: Duration = Duration::from_secs(15 * 60);

/// datafusion-distributed's `ExecuteTaskRequest` as it is on the wire (its crate does not
/// export the message): the task, one partition, and the head a coalescing consumer asks for.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ExecuteTaskRequest {
    #[prost(message, optional, tag = "1")]
    pub(crate) task_key: Option<TaskKey>,
    #[prost(uint64, tag = "2")]
    pub(crate) target_partition_start: u64,
    #[prost(uint64, tag = "3")]
    pub(crate) target_partition_end: u64,
    /// The `none` arm of its `producer_head` oneof (a `NetworkCoalesceExec` consumer).
    #[prost(message, optional, tag = "6")]
    pub(crate) none: Option<NoneHead>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct NoneHead {}

/// What this worker knows of one query's result streams.
struct QueryStreams {
    /// Cancelled when the coordinator stops the query; `status` says why.
    stop: CancellationToken,
    status: Option<Status>,
    /// (stage, task, partition) a client has started to read: each is served once.
    served: HashSet<(u64, u64, u64)>,
    forget_at: Instant,
}

/// The queries whose result partitions clients read here.
#[derive(Default)]
pub struct ResultRegistry {
    queries: Mutex<HashMap<Uuid, QueryStreams>>,
}

/// A redeemed partition's link to its query's stop.
struct Redeemed {
    stop: CancellationToken,
    query: Uuid,
    registry: Arc<ResultRegistry>,
}

impl Redeemed {
    fn status(&self) -> Status {
        self.registry
            .queries
            .lock()
            .get(&self.query)
            .and_then(|q| q.status.clone())
            .unwrap_or_else(|| Status::cancelled("the query was stopped"))
    }
}

impl ResultRegistry {
    fn entry(
        queries: &mut HashMap<Uuid, QueryStreams>,
        query: Uuid,
        now: Instant,
    ) -> &mut QueryStreams {
        queries.retain(|_, q| q.forget_at > now);
        queries.entry(query).or_insert_with(|| QueryStreams {
            stop: CancellationToken::new(),
            status: None,
            served: HashSet::new(),
            forget_at: now + REMEMBER_QUERY,
        })
    }

    /// Takes `ticket`'s partition for one read: refused once its query is stopped or the
    /// partition has been read.
    fn redeem(self: &Arc<Self>, ticket: &ResultTicket) -> Result<Redeemed, Status> {
        let mut queries = self.queries.lock();
        let entry = Self::entry(&mut queries, ticket.query, Instant::now());
        if let Some(status) = &entry.status {
            return Err(status.clone());
        }
        if !entry
            .served
            .insert((ticket.stage, ticket.task, ticket.partition))
        {
            return Err(Status::failed_precondition(
                "this result partition has already been read: a result ticket is good for one \
                 read (run the query again)",
            ));
        }
        Ok(Redeemed {
            stop: entry.stop.clone(),
            query: ticket.query,
            registry: Arc::clone(self),
        })
    }

    /// Ends the query's streams here with `status`, and refuses its tickets from now on: the
    /// partitions that were being read.
    pub fn stop(&self, query: Uuid, status: Status) -> u64 {
        let mut queries = self.queries.lock();
        let entry = Self::entry(&mut queries, query, Instant::now());
        if entry.status.is_none() {
            entry.status = Some(status);
        }
        entry.stop.cancel();
        entry.served.len() as u64
    }

    /// How many of the query's partitions clients have started to read here.
    pub fn redeemed(&self, query: Uuid) -> u64 {
        self.queries
            .lock()
            .get(&query)
            .map_or(0, |q| q.served.len() as u64)
    }
}

/// The client-facing Flight service of a worker: DoGet of result tickets, nothing else.
#[derive(Clone)]
pub struct ResultEndpoints {
    tasks: WorkerServiceServer<Worker>,
    tickets: Option<Arc<ResultTicketVerifier>>,
    registry: Arc<ResultRegistry>,
}

type Boxed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

impl ResultEndpoints {
    /// Serves partitions of `worker`'s tasks to holders of tickets `tickets` accepts; with
    /// no verifier (a cluster without `worker_secret`) every ticket is refused.
    pub fn new(worker: &Worker, tickets: Option<Arc<ResultTicketVerifier>>) -> Self {
        Self {
            tasks: worker.clone().into_worker_server(),
            tickets,
            registry: Arc::default(),
        }
    }

    pub fn registry(&self) -> &Arc<ResultRegistry> {
        &self.registry
    }

    pub fn into_flight_server(self) -> FlightServiceServer<Self> {
        FlightServiceServer::new(self)
    }

    /// The coordinator's side, behind the worker token check.
    pub fn stops_server(&self) -> ResultStreamsServer<ResultStops> {
        ResultStreamsServer::new(ResultStops {
            registry: Arc::clone(&self.registry),
        })
    }

    /// The partition's Arrow IPC stream from this worker's task service.
    async fn execute(&self, ticket: &ResultTicket) -> Result<Streaming<FlightData>, Status> {
        let request = ExecuteTaskRequest {
            task_key: Some(TaskKey {
                query_id: ticket.query.as_bytes().to_vec(),
                stage_id: ticket.stage,
                task_number: ticket.task,
            }),
            target_partition_start: ticket.partition,
            target_partition_end: ticket.partition + 1,
            none: Some(NoneHead {}),
        };
        let mut tasks = tonic::client::Grpc::new(self.tasks.clone());
        tasks
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("the task service is not ready: {e}")))?;
        let codec = tonic_prost::ProstCodec::<ExecuteTaskRequest, FlightData>::default();
        let response = tasks
            .server_streaming(
                Request::new(request),
                PathAndQuery::from_static(EXECUTE_TASK),
                codec,
            )
            .await?;
        Ok(response.into_inner())
    }
}

/// `data` until it ends, or until the query is stopped (then the stop's status).
fn until_stopped(data: Streaming<FlightData>, redeemed: Redeemed) -> Boxed<FlightData> {
    Box::pin(futures::stream::unfold(
        (data, redeemed, false),
        |(mut data, redeemed, ended)| async move {
            if ended {
                return None;
            }
            tokio::select! {
                biased;
                () = redeemed.stop.cancelled() => {
                    let status = redeemed.status();
                    Some((Err(status), (data, redeemed, true)))
                }
                next = data.next() => match next {
                    // The task service's own bookkeeping (partition, timestamps) is not the
                    // client's.
                    Some(Ok(mut message)) => {
                        message.app_metadata = Bytes::new();
                        Some((Ok(message), (data, redeemed, false)))
                    }
                    Some(Err(status)) => {
                        let status = status_in(&status).unwrap_or(status);
                        Some((Err(status), (data, redeemed, true)))
                    }
                    None => None,
                },
            }
        },
    ))
}

fn only_do_get<T>() -> Result<T, Status> {
    Err(Status::unimplemented(
        "a worker serves result tickets only (DoGet); send everything else to the coordinator",
    ))
}

#[tonic::async_trait]
impl FlightService for ResultEndpoints {
    type HandshakeStream = Boxed<HandshakeResponse>;
    type ListFlightsStream = Boxed<FlightInfo>;
    type DoGetStream = Boxed<FlightData>;
    type DoPutStream = Boxed<PutResult>;
    type DoActionStream = Boxed<arrow_flight::Result>;
    type ListActionsStream = Boxed<ActionType>;
    type DoExchangeStream = Boxed<FlightData>;

    async fn do_get(
        &self,
        request: Request<Ticket>,
    ) -> Result<Response<Self::DoGetStream>, Status> {
        let Some(tickets) = &self.tickets else {
            return Err(Status::failed_precondition(
                "this worker has no worker_secret, so it cannot check result tickets",
            ));
        };
        let authorization = request
            .metadata()
            .get("authorization")
            .map(|value| value.as_bytes().to_vec());
        let ticket = tickets.verify(&request.get_ref().ticket, authorization.as_deref())?;
        let redeemed = self.registry.redeem(&ticket)?;
        let data = self.execute(&ticket).await?;
        Ok(Response::new(until_stopped(data, redeemed)))
    }

    async fn handshake(
        &self,
        _request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        only_do_get()
    }

    async fn list_flights(
        &self,
        _request: Request<Criteria>,
    ) -> Result<Response<Self::ListFlightsStream>, Status> {
        only_do_get()
    }

    async fn get_flight_info(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        only_do_get()
    }

    async fn poll_flight_info(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        only_do_get()
    }

    async fn get_schema(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> Result<Response<SchemaResult>, Status> {
        only_do_get()
    }

    async fn do_put(
        &self,
        _request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        only_do_get()
    }

    async fn do_action(
        &self,
        _request: Request<Action>,
    ) -> Result<Response<Self::DoActionStream>, Status> {
        only_do_get()
    }

    async fn list_actions(
        &self,
        _request: Request<Empty>,
    ) -> Result<Response<Self::ListActionsStream>, Status> {
        only_do_get()
    }

    async fn do_exchange(
        &self,
        _request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        only_do_get()
    }
}

/// The coordinator's calls about a query's result streams here.
pub struct ResultStops {
    registry: Arc<ResultRegistry>,
}

fn query_id(text: &str) -> Result<Uuid, Status> {
    Uuid::parse_str(text).map_err(|_| Status::invalid_argument("query_id is not a UUID"))
}

#[tonic::async_trait]
impl ResultStreams for ResultStops {
    async fn stop(
        &self,
        request: Request<StopResultsRequest>,
    ) -> Result<Response<StopResultsResponse>, Status> {
        let request = request.into_inner();
        let query = query_id(&request.query_id)?;
        let status = Status::new(tonic::Code::from_i32(request.code), request.message);
        let stopped = self.registry.stop(query, status);
        Ok(Response::new(StopResultsResponse { stopped }))
    }

    async fn redeemed(
        &self,
        request: Request<RedeemedRequest>,
    ) -> Result<Response<RedeemedResponse>, Status> {
        let query = query_id(&request.into_inner().query_id)?;
        Ok(Response::new(RedeemedResponse {
            partitions: self.registry.redeemed(query),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(query: Uuid, partition: u64) -> ResultTicket {
        ResultTicket {
            query,
            stage: 1,
            task: 0,
            partition,
            statement: Uuid::new_v4(),
        }
    }

    #[test]
    fn a_partition_is_served_once_and_a_stopped_query_not_at_all() {
        let registry = Arc::new(ResultRegistry::default());
        let query = Uuid::new_v4();
        assert!(registry.redeem(&ticket(query, 0)).is_ok());
        let again = registry.redeem(&ticket(query, 0)).err();
        assert_eq!(
            again.map(|s| s.code()),
            Some(tonic::Code::FailedPrecondition)
        );
        assert!(registry.redeem(&ticket(query, 1)).is_ok());
        assert_eq!(registry.redeemed(query), 2);
        assert_eq!(registry.redeemed(Uuid::new_v4()), 0);

        assert_eq!(
            registry.stop(query, Status::cancelled("Query was cancelled")),
            2
        );
        let late = registry.redeem(&ticket(query, 2)).err();
        assert_eq!(
            late.map(|s| (s.code(), s.message().to_string())),
            Some((tonic::Code::Cancelled, "Query was cancelled".to_string()))
        );
    }

    #[tokio::test]
    async fn a_stop_ends_the_streams_being_read_with_its_status() {
        let registry = Arc::new(ResultRegistry::default());
        let query = Uuid::new_v4();
        let redeemed = registry.redeem(&ticket(query, 0));
        let Ok(redeemed) = redeemed else {
            panic!("not redeemed");
        };
        let waiting = tokio::spawn(async move {
            redeemed.stop.cancelled().await;
            redeemed.status()
        });
        registry.stop(
            query,
            Status::deadline_exceeded("Query exceeded maximum time limit"),
        );
        let status = waiting.await.map(|s| s.code()).ok();
        assert_eq!(status, Some(tonic::Code::DeadlineExceeded));
    }
}
