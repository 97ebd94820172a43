//! gRPC status responses made by layers.

use http::HeaderMap;
use tonic::body::Body;
use tonic::{Code, Status};

/// The response a layer returns in place of calling its inner service.
pub(crate) fn response(status: Status) -> http::Response<Body> {
    status.into_http()
}

/// The gRPC status of a trailers-only response (a call that failed before any message): tonic
/// servers and layers put `grpc-status` in the headers then.
pub fn grpc_status_of(headers: &HeaderMap) -> Option<Status> {
    Status::from_header_map(headers).filter(|s| s.code() != Code::Ok)
}
