//! SQE's control plane (`proto/control.proto`): workers register with a coordinator, send
//! heartbeats, and drain and deregister when they shut down; the coordinator stops the result
//! streams clients read from workers.
//!
//! The messages, client and server are generated from the `.proto` by tonic-prost-build on
//! protox (a protobuf compiler in Rust, so no `protoc` is needed) and checked in under
//! `src/generated/`; a test regenerates them and fails when they drift from the `.proto`
//! (`SQE_REGENERATE_PROTO=1 cargo test -p sqe-proto` writes them anew).

// Test code may lock and spawn as it likes; the bans are for the code that ships.
#![cfg_attr(test, allow(clippy::disallowed_types, clippy::disallowed_methods))]

#[allow(
    clippy::all,
    clippy::pedantic,
    clippy::unwrap_used,
    rust_2018_idioms,
    unreachable_pub,
    missing_docs
)]
mod generated {
    include!("generated/sqe.control.v1.rs");
}

pub use generated::control_plane_client::ControlPlaneClient;
pub use generated::control_plane_server::{ControlPlane, ControlPlaneServer};
pub use generated::result_streams_client::ResultStreamsClient;
pub use generated::result_streams_server::{ResultStreams, ResultStreamsServer};
pub use generated::{
    DeregisterRequest, DeregisterResponse, DrainRequest, DrainResponse, HeartbeatRequest,
    HeartbeatResponse, RedeemedRequest, RedeemedResponse, RegisterRequest, RegisterResponse,
    StopResultsRequest, StopResultsResponse,
};

/// The gRPC service name; every method's path starts with `/{SERVICE_NAME}/`.
pub const SERVICE_NAME: &str = "sqe.control.v1.ControlPlane";

/// Whether a request path is one of the control plane's methods.
pub fn is_control_plane_path(path: &str) -> bool {
    path.strip_prefix('/')
        .and_then(|p| p.strip_prefix(SERVICE_NAME))
        .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests;
