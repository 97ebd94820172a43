//! Flight SQL parallel endpoints: a query whose last stage runs on workers is answered with one
//! endpoint per partition of that stage, located at the worker that produces it, so clients
//! (ADBC, the Flight SQL JDBC driver) fetch them in parallel and the result's bytes never cross
//! the coordinator ([`sqe_engine::cluster::WorkerResults`] plans it, `sqe_worker::results`
//! serves it).
//!
//! The query runs from GetFlightInfo on (its tasks are on the workers when the client gets the
//! tickets) and stays running, in the history and the admission count, until every partition
//! has been read. Each ticket is signed for the client that asked ([`ResultTicketSigner`]):
//! bound to its `authorization` header, good for one read, and only for
//! `flight_sql_result_ticket_ttl_secs`. A query that ends early (CancelFlightInfo, kill_query,
//! its deadline, a failure) has its workers end the streams with its error; one whose tickets
//! expire with partitions nobody started to read ends as abandoned.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use arrow_flight::{FlightEndpoint, FlightInfo, Location, Ticket};
use datafusion::arrow::datatypes::Schema;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use sqe_engine::cluster::{ResultPartition, WorkerResults};
use sqe_engine::error::Error;
use sqe_engine::history::CancelReason;
use sqe_engine::queries::Canceller;
use sqe_layers::auth::{ResultTicket, ResultTicketSigner};
use sqe_worker::channel::SqeChannelResolver;
use tokio::sync::oneshot;
use tonic::Status;
use tonic::metadata::MetadataMap;
use tracing::Instrument;
use url::Url;
use uuid::Uuid;

use super::statements::RunningGuard;

/// The call header that turns parallel endpoints off for one call (`false`; `true` is the
/// port's default when `flight_sql_parallel_endpoints` is on); ADBC sends it with
/// `adbc.flight.sql.rpc.call_header.x-sqe-parallel-endpoints`.
pub(crate) const PARALLEL_ENDPOINTS_HEADER: &str = "x-sqe-parallel-endpoints";

/// Clock leeway past a ticket's expiry before its unread partitions count as abandoned.
const EXPIRY_LEEWAY: Duration = Duration::from_secs(30);

/// What serving results at the workers takes: the tickets' signer and the channels to the
/// workers (to stop a query's streams there).
pub(crate) struct ResultsAtWorkers {
    signer: ResultTicketSigner,
    channels: SqeChannelResolver,
}

/// One GetFlightInfo's request to be served at the workers.
pub(super) struct AtWorkers {
    results: Arc<ResultsAtWorkers>,
    /// The caller's credential, which its tickets are bound to.
    authorization: Option<Vec<u8>>,
}

impl ResultsAtWorkers {
    /// On for every call that does not ask otherwise (the port's setting is on).
    pub(crate) fn new(signer: ResultTicketSigner, channels: SqeChannelResolver) -> Self {
        Self { signer, channels }
    }

    /// Whether the call with `metadata` is served at the workers (when its query allows).
    pub(super) fn for_call(
        self: &Arc<Self>,
        metadata: &MetadataMap,
    ) -> Result<Option<AtWorkers>, Status> {
        let wanted = match metadata.get(PARALLEL_ENDPOINTS_HEADER) {
            None => true,
            Some(value) => match value.to_str().map(str::trim) {
                Ok(v) if v.eq_ignore_ascii_case("true") => true,
                Ok(v) if v.eq_ignore_ascii_case("false") => false,
                _ => {
                    return Err(Status::invalid_argument(format!(
                        "{PARALLEL_ENDPOINTS_HEADER} is true or false"
                    )));
                }
            },
        };
        Ok(wanted.then(|| AtWorkers {
            results: Arc::clone(self),
            authorization: metadata
                .get("authorization")
                .map(|value| value.as_bytes().to_vec()),
        }))
    }

    /// The statement of a result ticket this coordinator signed (CancelFlightInfo).
    pub(super) fn statement_of(&self, ticket: &[u8]) -> Option<Uuid> {
        self.signer.statement_of(ticket)
    }
}

impl AtWorkers {
    /// Drives the query's stream (it yields no rows: the clients read them at the workers)
    /// until every task has ended, and answers with the FlightInfo of its partitions once they
    /// are located; the query stays registered as running (`running`) until it ends.
    pub(super) async fn serve(
        self,
        statement: Uuid,
        schema: &Schema,
        stream: SendableRecordBatchStream,
        located: WorkerResults,
        running: RunningGuard,
        canceller: Option<Canceller>,
    ) -> Result<FlightInfo, Status> {
        let (answer, partitions) = oneshot::channel();
        let results = Arc::clone(&self.results);
        let ttl = results.signer.ttl();
        sqe_layers::task::spawn(
            drive(stream, located, answer, running, canceller, results, ttl).in_current_span(),
        );
        let partitions = partitions
            .await
            .map_err(|_| Status::internal("the query's driver ended without an answer"))??;
        self.info(statement, schema, &partitions)
    }

    fn info(
        &self,
        statement: Uuid,
        schema: &Schema,
        partitions: &[ResultPartition],
    ) -> Result<FlightInfo, Status> {
        let mut info = FlightInfo::new()
            .try_with_schema(schema)
            .map_err(|e| Status::internal(format!("cannot encode schema: {e}")))?;
        for partition in partitions {
            let ticket = ResultTicket {
                query: partition.query,
                stage: partition.stage,
                task: partition.task,
                partition: partition.partition,
                statement,
            };
            let signed = self
                .results
                .signer
                .sign(&ticket, self.authorization.as_deref())?;
            let endpoint = FlightEndpoint::new()
                .with_ticket(Ticket::new(signed))
                .with_location(flight_location(&partition.worker).uri);
            info = info.with_endpoint(endpoint);
        }
        Ok(info)
    }
}

/// A worker's task URL as a Flight location: `grpc+tcp://` in clear, `grpc+tls://` over TLS.
fn flight_location(worker: &Url) -> Location {
    let scheme = if worker.scheme() == "https" {
        "grpc+tls"
    } else {
        "grpc+tcp"
    };
    let host = worker.host_str().unwrap_or_default();
    let uri = match worker.port_or_known_default() {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    };
    Location { uri }
}

/// Polls the query's stream to its end, answering with its partitions as soon as they are
/// located; after the tickets' life, makes sure every partition has a reader; stops the
/// workers' streams if the query ends with an error.
async fn drive(
    mut stream: SendableRecordBatchStream,
    located: WorkerResults,
    answer: oneshot::Sender<Result<Vec<ResultPartition>, Status>>,
    running: RunningGuard,
    canceller: Option<Canceller>,
    results: Arc<ResultsAtWorkers>,
    ttl: Duration,
) {
    let _running = running;
    let mut answer = Some(answer);
    let mut located = Box::pin(located.located());
    let mut located_done = false;
    let mut partitions: Option<Vec<ResultPartition>> = None;
    let expiry = tokio::time::sleep(ttl + EXPIRY_LEEWAY);
    tokio::pin!(expiry);
    let mut checked = false;
    let outcome: Result<(), Status> = loop {
        tokio::select! {
            found = &mut located, if !located_done => {
                located_done = true;
                // None: the plan failed before its tasks were sent; the stream says why.
                if let Some(found) = found {
                    if let Some(answer) = answer.take() {
                        let _ = answer.send(Ok(found.clone()));
                    }
                    partitions = Some(found);
                }
            }
            () = &mut expiry, if partitions.is_some() && !checked => {
                checked = true;
                if let Some(found) = &partitions
                    && !all_redeemed(&results.channels, found).await
                    && let Some(canceller) = &canceller
                {
                    tracing::info!("result tickets expired with partitions nobody read");
                    canceller.cancel(CancelReason::Abandoned);
                }
            }
            next = stream.next() => match next {
                Some(Ok(_)) => {}
                Some(Err(error)) => break Err(Status::from(Error::from(error))),
                None => break Ok(()),
            },
        }
    };
    if let Some(answer) = answer.take() {
        let _ = answer.send(Err(outcome.clone().err().unwrap_or_else(|| {
            Status::internal("the query ended before its result partitions were located")
        })));
    }
    if let (Err(status), Some(found)) = (&outcome, &partitions) {
        stop_at_workers(&results.channels, found, status).await;
    }
}

fn queries_by_worker(partitions: &[ResultPartition]) -> BTreeSet<(Url, Uuid)> {
    partitions
        .iter()
        .map(|p| (p.worker.clone(), p.query))
        .collect()
}

/// Whether clients have started to read every partition (a worker that cannot say counts as
/// read: the query is not failed for a worker's silence).
async fn all_redeemed(channels: &SqeChannelResolver, partitions: &[ResultPartition]) -> bool {
    let mut redeemed = 0u64;
    for (worker, query) in queries_by_worker(partitions) {
        match channels.redeemed_results(&worker, query).await {
            Ok(count) => redeemed += count,
            Err(status) => {
                tracing::warn!(%worker, error = %status, "cannot ask a worker what was read");
                return true;
            }
        }
    }
    redeemed >= partitions.len() as u64
}

/// Ends the query's streams at its workers with `status`.
async fn stop_at_workers(
    channels: &SqeChannelResolver,
    partitions: &[ResultPartition],
    status: &Status,
) {
    for (worker, query) in queries_by_worker(partitions) {
        if let Err(error) = channels.stop_results(&worker, query, status).await {
            tracing::warn!(%worker, %error, "cannot stop a query's result streams at a worker");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_keep_the_worker_address_and_its_transport() -> Result<(), url::ParseError> {
        assert_eq!(
            flight_location(&Url::parse("http://10.0.0.7:50052")?).uri,
            "grpc+tcp://10.0.0.7:50052"
        );
        assert_eq!(
            flight_location(&Url::parse("https://worker-1.sqe:50052")?).uri,
            "grpc+tls://worker-1.sqe:50052"
        );
        Ok(())
    }

    #[test]
    fn the_call_header_overrides_the_port_setting() -> Result<(), Box<dyn std::error::Error>> {
        let resolver = SqeChannelResolver::new(sqe_layers::WorkerChannelStack::new(
            sqe_layers::io_runtime::IoRuntime::new(1)?,
            None,
            sqe_layers::ChannelSettings::default(),
        ));
        let signer = ResultTicketSigner::new(b"a-secret-of-sixteen-bytes-or-more", ttl())?;
        let results = Arc::new(ResultsAtWorkers::new(signer, resolver));
        let mut metadata = MetadataMap::new();
        assert!(results.for_call(&metadata)?.is_some());
        metadata.insert(PARALLEL_ENDPOINTS_HEADER, "FALSE".parse()?);
        assert!(results.for_call(&metadata)?.is_none());
        metadata.insert(PARALLEL_ENDPOINTS_HEADER, "maybe".parse()?);
        assert_eq!(
            results.for_call(&metadata).err().map(|s| s.code()),
            Some(tonic::Code::InvalidArgument)
        );
        Ok(())
    }

    fn ttl() -> Duration {
        Duration::from_secs(60)
    }
}
