//! The coordinator's view of its workers.

mod workers;

pub use workers::{PoolResolver, VersionRequirement, WorkerPool, WorkerStatus};
