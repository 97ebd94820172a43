//! The coordinator's view of its workers, and the control plane that keeps it current.

mod membership;
mod registry;
mod workers;

pub use membership::{Membership, MembershipSettings, MembershipState, advertised_url};
pub use registry::Registry;
pub use workers::{
    Announcement, PoolResolver, PoolSettings, Registration, VersionRequirement, WorkerPool,
    WorkerState, WorkerStatus, host_port,
};
