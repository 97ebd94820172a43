//! What operators watch: Prometheus metrics and health probes, on a port of their own
//! (`metrics_port`), for the coordinator and for workers.

mod exposition;
mod server;
mod sources;

pub use exposition::Exposition;
pub use server::{Observed, observability_router};
pub use sources::{CoordinatorObserved, PeerCalls, WorkerObserved};
