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

/// `error` and its causes, each said once, the way a user needs them: the innermost cause is
/// usually the one that says what went wrong ("transport error: tcp connect error: Connection
/// refused (os error 111)"). Layers often end their own words with their cause's.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.ends_with(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}
