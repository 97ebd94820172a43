//! What operators watch: Prometheus metrics and health probes, on a port of their own
//! (`metrics_port`), for the coordinator and for workers.

mod exposition;
mod server;
mod sources;

pub(crate) use exposition::Exposition;
pub(crate) use server::{Observed, observability_router};
pub(crate) use sources::{CoordinatorObserved, PeerCalls, WorkerObserved};
