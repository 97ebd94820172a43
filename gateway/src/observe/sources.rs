//! What the coordinator and the workers report on their observability port.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sqe_layers::auth::VerifierStats;
use sqe_layers::retry::RetryStats;
use sqe_layers::rpc_metrics::{RpcCounts, code_name};
use sqe_worker::server::WorkerStats;

use super::{Exposition, Observed};
use crate::trino::spooling::SegmentStore;
use sqe_engine::cluster::WorkerState;
use sqe_engine::engine::Engine;
use sqe_engine::queries::Admission;
use sqe_worker::membership::MembershipState;

/// How long `/readyz` waits for the catalog.
const CATALOG_PROBE: Duration = Duration::from_secs(3);

/// Token checks and outgoing RPCs, which both roles have.
fn peer_metrics(text: &mut Exposition, verifier: Option<&VerifierStats>, peers: &PeerCalls) {
    let retry = &peers.retry;
    if let Some(verifier) = verifier {
        text.singles(&[
            (
                "sqe_peer_auth_verified_total",
                "counter",
                "worker_secret tokens accepted from peers.",
                verifier.verified() as f64,
            ),
            (
                "sqe_peer_auth_failures_total",
                "counter",
                "Peer requests refused: no token, another secret, expired or wrong audience.",
                verifier.rejected() as f64,
            ),
        ]);
    }
    text.singles(&[
        (
            "sqe_worker_rpc_retries_total",
            "counter",
            "Worker RPC attempts retried (failed before the request was sent).",
            retry.retries() as f64,
        ),
        (
            "sqe_worker_rpc_retry_budget_exhausted_total",
            "counter",
            "Retries refused because the retry budget was spent.",
            retry.budget_exhausted() as f64,
        ),
    ]);
    text.family(
        "sqe_worker_rpcs_total",
        "counter",
        "Worker RPC attempts by method, final gRPC code (a stream's at its end) and attempt number.",
    );
    for (key, count) in peers.rpcs.snapshot() {
        let attempt = key.attempt.to_string();
        text.sample(
            "sqe_worker_rpcs_total",
            &[
                ("method", key.method.trim_start_matches('/')),
                ("code", code_name(key.code)),
                ("attempt", &attempt),
            ],
            count as f64,
        );
    }
}

/// Data files this process wrote (both roles write: workers an INSERT's rows, the
/// coordinator what stays on it, such as UPDATE's new rows and ingests).
fn write_metrics(text: &mut Exposition) {
    let written = &sqe_iceberg::write::WRITTEN;
    text.singles(&[
        (
            "sqe_data_files_written_total",
            "counter",
            "Iceberg data files this process wrote (committed or not).",
            written.files() as f64,
        ),
        (
            "sqe_data_rows_written_total",
            "counter",
            "Rows this process wrote into Iceberg data files.",
            written.rows() as f64,
        ),
        (
            "sqe_data_bytes_written_total",
            "counter",
            "Bytes of Iceberg data files this process wrote.",
            written.bytes() as f64,
        ),
    ]);
}

/// What a process's worker channels report: retries and RPC outcomes.
pub(crate) struct PeerCalls {
    pub retry: Arc<RetryStats>,
    pub rpcs: RpcCounts,
}

impl PeerCalls {
    pub(crate) fn of(stack: &sqe_layers::WorkerChannelStack) -> Self {
        Self {
            retry: stack.retry_stats(),
            rpcs: stack.rpc_counts().clone(),
        }
    }
}

/// The coordinator: queries, result cache, workers, memory, commits.
pub(crate) struct CoordinatorObserved {
    pub engine: Arc<Engine>,
    /// The statements' slots and queue.
    pub admission: Arc<Admission>,
    pub verifier: Option<Arc<VerifierStats>>,
    pub peers: PeerCalls,
    /// The Trino port's spooled result segments, when the spooling protocol is on.
    pub spooled: Option<Arc<SegmentStore>>,
}

impl Observed for CoordinatorObserved {
    fn metrics(&self) -> String {
        let mut text = Exposition::default();
        let history = self.engine.history();
        history.stats().with(|endpoints| {
            text.family(
                "sqe_queries_total",
                "counter",
                "Ended queries by endpoint and final state.",
            );
            for (endpoint, stats) in endpoints {
                for (state, count) in &stats.by_state {
                    text.sample(
                        "sqe_queries_total",
                        &[("endpoint", endpoint), ("state", state)],
                        *count as f64,
                    );
                }
            }
            text.family(
                "sqe_query_duration_seconds",
                "histogram",
                "Query latency, from arrival to end, by endpoint.",
            );
            for (endpoint, stats) in endpoints {
                text.histogram(
                    "sqe_query_duration_seconds",
                    &[("endpoint", endpoint)],
                    &stats.latency,
                );
            }
            text.family(
                "sqe_query_output_rows_total",
                "counter",
                "Rows returned to clients, by endpoint.",
            );
            for (endpoint, stats) in endpoints {
                text.sample(
                    "sqe_query_output_rows_total",
                    &[("endpoint", endpoint)],
                    stats.output_rows as f64,
                );
            }
            text.family(
                "sqe_query_output_bytes_total",
                "counter",
                "Arrow size of the rows returned to clients, by endpoint.",
            );
            for (endpoint, stats) in endpoints {
                text.sample(
                    "sqe_query_output_bytes_total",
                    &[("endpoint", endpoint)],
                    stats.output_bytes as f64,
                );
            }
        });
        text.family(
            "sqe_query_state_transitions_total",
            "counter",
            "Queries that entered each state (QUEUED, PLANNING, RUNNING, FINISHED, FAILED, CANCELED), by endpoint.",
        );
        for ((endpoint, state), count) in history.stats().transitions() {
            text.sample(
                "sqe_query_state_transitions_total",
                &[("endpoint", endpoint), ("state", state)],
                count as f64,
            );
        }
        let load = self.admission.load();
        let limits = self.admission.limits();
        text.singles(&[
            (
                "sqe_queries_running",
                "gauge",
                "Queries planning or running now (each holds a slot).",
                load.running as f64,
            ),
            (
                "sqe_queries_queued",
                "gauge",
                "Queries waiting for a slot (admission control).",
                load.queued as f64,
            ),
            (
                "sqe_queries_running_limit",
                "gauge",
                "Slots: coordinator max_running_queries.",
                limits.max_running as f64,
            ),
            (
                "sqe_queries_queued_limit",
                "gauge",
                "Queue places: coordinator max_queued_queries.",
                limits.max_queued as f64,
            ),
        ]);

        if let Some(spooled) = &self.spooled {
            let (segments, bytes) = spooled.held();
            text.singles(&[
                (
                    "sqe_trino_spooled_segments",
                    "gauge",
                    "Spooled result segments waiting for their clients to acknowledge them.",
                    segments as f64,
                ),
                (
                    "sqe_trino_spooled_bytes",
                    "gauge",
                    "Bytes of spooled segments the coordinator holds (0 with trino_spooling_location).",
                    bytes as f64,
                ),
            ]);
        }

        let cache = self.engine.result_cache();
        let (entries, bytes) = cache.usage();
        text.singles(&[
            (
                "sqe_result_cache_hits_total",
                "counter",
                "Queries answered from the result cache.",
                cache.hits() as f64,
            ),
            (
                "sqe_result_cache_misses_total",
                "counter",
                "Cacheable queries not in the result cache.",
                cache.misses() as f64,
            ),
            (
                "sqe_result_cache_entries",
                "gauge",
                "Results in the cache.",
                entries as f64,
            ),
            (
                "sqe_result_cache_bytes",
                "gauge",
                "Memory the cached results hold.",
                bytes as f64,
            ),
        ]);

        let pool = self.engine.workers();
        let missed = pool.missed_heartbeats();
        let statuses = pool.statuses();
        text.family("sqe_workers", "gauge", "Known workers by state.");
        for state in [
            WorkerState::Active,
            WorkerState::Draining,
            WorkerState::Unreachable,
            WorkerState::Incompatible,
        ] {
            let count = statuses.iter().filter(|s| s.state(missed) == state).count();
            text.sample("sqe_workers", &[("state", state.name())], count as f64);
        }
        text.singles(&[
            (
                "sqe_memory_pool_reserved_bytes",
                "gauge",
                "Memory the coordinator's running queries hold in its pool.",
                self.engine.memory_reserved() as f64,
            ),
            (
                "sqe_memory_pool_limit_bytes",
                "gauge",
                "The size of the coordinator's memory pool (0: unbounded).",
                self.engine.memory_limit().unwrap_or(0) as f64,
            ),
            (
                "sqe_iceberg_commits_total",
                "counter",
                "Iceberg snapshots committed through this coordinator.",
                self.engine.commits().commits() as f64,
            ),
            (
                "sqe_iceberg_commit_conflicts_total",
                "counter",
                "Commit attempts refused because another writer committed first (retried on the new snapshot).",
                self.engine.commits().conflicts() as f64,
            ),
        ]);
        peer_metrics(&mut text, self.verifier.as_deref(), &self.peers);
        write_metrics(&mut text);
        text.finish()
    }

    /// Ready when the catalog answers.
    fn ready(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(async move {
            match tokio::time::timeout(CATALOG_PROBE, self.engine.catalog().list_namespaces(None))
                .await
            {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(format!("the catalog fails: {e}")),
                Err(_) => Err(format!(
                    "the catalog did not answer within {CATALOG_PROBE:?}"
                )),
            }
        })
    }
}

/// A worker: its tasks, memory, token checks and registration.
pub(crate) struct WorkerObserved {
    pub stats: Arc<WorkerStats>,
    pub verifier: Option<Arc<VerifierStats>>,
    pub peers: PeerCalls,
    /// `None` when it does not register (listed in the coordinator's `worker_urls`).
    pub membership: Option<Arc<MembershipState>>,
}

impl Observed for WorkerObserved {
    fn metrics(&self) -> String {
        let mut text = Exposition::default();
        text.singles(&[
            (
                "sqe_worker_tasks_received_total",
                "counter",
                "Plan fragments received.",
                self.stats.tasks_received() as f64,
            ),
            (
                "sqe_worker_task_streams_open",
                "gauge",
                "Task partition streams executing now.",
                self.stats.open_task_streams() as f64,
            ),
            (
                "sqe_memory_pool_reserved_bytes",
                "gauge",
                "Memory the worker's tasks hold in its pool.",
                self.stats.memory_reserved() as f64,
            ),
            (
                "sqe_memory_pool_limit_bytes",
                "gauge",
                "The size of the worker's memory pool (0: unbounded).",
                self.stats.memory_limit().unwrap_or(0) as f64,
            ),
        ]);
        if let Some(membership) = &self.membership {
            text.singles(&[
                (
                    "sqe_worker_registered",
                    "gauge",
                    "1 while registered with the coordinator.",
                    f64::from(u8::from(membership.registered())),
                ),
                (
                    "sqe_worker_draining",
                    "gauge",
                    "1 while draining for shutdown.",
                    f64::from(u8::from(membership.draining())),
                ),
            ]);
        }
        peer_metrics(&mut text, self.verifier.as_deref(), &self.peers);
        write_metrics(&mut text);
        text.finish()
    }

    /// Ready when registered and not draining (a worker that does not register: always).
    fn ready(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>> {
        let state = match &self.membership {
            None => Ok(()),
            Some(m) if m.draining() => Err("draining".to_string()),
            Some(m) if !m.registered() => {
                Err("not registered with the coordinator yet".to_string())
            }
            Some(_) => Ok(()),
        };
        Box::pin(std::future::ready(state))
    }
}
