//! The coordinator's view of its workers: the pool planning routes tasks to, the control plane
//! that keeps it current, and the routing of each stage's tasks.

mod compression;
mod head;
mod joins;
mod progress;
mod registry;
mod tasks;
mod worker_results;
mod workers;

use std::sync::Arc;

use datafusion_distributed::ChannelResolver;

pub use compression::IpcCompression;
pub use head::head_on_workers;
pub use joins::WholeBuildSides;
pub use progress::{
    ProgressPoller, QueryProgress, StageProgress, TaskProgressReport, TaskProgressSource,
    TaskSplits, task_state,
};
pub use registry::Registry;
pub use tasks::{StageTasks, TaskLedger, TaskRouter, TaskRow};
pub use worker_results::{ResultPartition, WorkerResults, WorkerResultsExec};
pub(crate) use worker_results::{ServedAtWorkers, serve_at_workers};
pub use workers::{
    Announcement, PoolResolver, PoolSettings, Registration, VersionRequirement, WorkerPool,
    WorkerState, WorkerStatus, host_port,
};

/// How the coordinator reaches its workers: every RPC through the layered channel the node
/// wiring builds.
pub type Channels = Arc<dyn ChannelResolver + Send + Sync>;
