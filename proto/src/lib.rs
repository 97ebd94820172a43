//! SQE's control plane (`proto/control.proto`): workers register with a coordinator, send
//! heartbeats, and drain and deregister when they shut down.
//!
//! Messages, client and server are written by hand over tonic's building blocks, so building
//! needs no `protoc`.

mod client;
mod messages;
mod server;

pub use client::ControlPlaneClient;
pub use messages::{
    DeregisterRequest, DeregisterResponse, DrainRequest, DrainResponse, HeartbeatRequest,
    HeartbeatResponse, RegisterRequest, RegisterResponse,
};
pub use server::{ControlPlane, ControlPlaneServer};

/// The gRPC service name; every method's path starts with `/{SERVICE_NAME}/`.
pub const SERVICE_NAME: &str = "sqe.control.v1.ControlPlane";

const REGISTER: &str = "/sqe.control.v1.ControlPlane/Register";
const HEARTBEAT: &str = "/sqe.control.v1.ControlPlane/Heartbeat";
const DRAIN: &str = "/sqe.control.v1.ControlPlane/Drain";
const DEREGISTER: &str = "/sqe.control.v1.ControlPlane/Deregister";

/// Whether a request path is one of the control plane's methods.
pub fn is_control_plane_path(path: &str) -> bool {
    path.strip_prefix('/')
        .and_then(|p| p.strip_prefix(SERVICE_NAME))
        .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests;
