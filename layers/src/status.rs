//! gRPC status responses made by layers, and a status carried in an error's text.

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

/// What starts a context text that carries a status.
const STATUS_MARKER: &str = "sqe-status ";

/// A status as a context text carries it.
#[derive(serde::Serialize, serde::Deserialize)]
struct CarriedStatus {
    code: i32,
    message: String,
    /// Its ASCII metadata (an error's Trino name and location).
    metadata: Vec<(String, String)>,
}

/// `status` as the text of an error's context, for where only text travels (a task's error
/// through datafusion-distributed, which keeps a `DataFusionError::Context`'s text): a worker
/// puts there the status its own classification of the error gives.
pub fn status_in_context(status: &Status) -> String {
    let metadata = status
        .metadata()
        .iter()
        .filter_map(|entry| match entry {
            tonic::metadata::KeyAndValueRef::Ascii(key, value) => value
                .to_str()
                .ok()
                .map(|value| (key.as_str().to_string(), value.to_string())),
            tonic::metadata::KeyAndValueRef::Binary(..) => None,
        })
        .collect();
    let carried = CarriedStatus {
        code: status.code() as i32,
        message: status.message().to_string(),
        metadata,
    };
    let json = serde_json::to_string(&carried).unwrap_or_default();
    format!("{STATUS_MARKER}{json}")
}

/// The status a context text carries ([`status_in_context`]); `None` for any other text.
pub fn status_from_context(context: &str) -> Option<Status> {
    let carried: CarriedStatus = serde_json::from_str(context.strip_prefix(STATUS_MARKER)?).ok()?;
    let mut status = Status::new(Code::from_i32(carried.code), carried.message);
    for (key, value) in carried.metadata {
        if let (Ok(key), Ok(value)) = (
            tonic::metadata::AsciiMetadataKey::from_bytes(key.as_bytes()),
            value.parse(),
        ) {
            status.metadata_mut().insert(key, value);
        }
    }
    Some(status)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_travels_in_a_context_text_with_its_metadata()
    -> Result<(), Box<dyn std::error::Error>> {
        let mut status = Status::invalid_argument("Invalid base64: \"x\"");
        status
            .metadata_mut()
            .insert("sqe-error-name", "INVALID_FUNCTION_ARGUMENT".parse()?);
        let back = status_from_context(&status_in_context(&status)).ok_or("not carried")?;
        assert_eq!(back.code(), Code::InvalidArgument);
        assert_eq!(back.message(), "Invalid base64: \"x\"");
        assert_eq!(
            back.metadata()
                .get("sqe-error-name")
                .and_then(|v| v.to_str().ok()),
            Some("INVALID_FUNCTION_ARGUMENT")
        );
        // Any other context is nobody's status.
        assert!(status_from_context("while reading the data").is_none());
        assert!(status_from_context("sqe-status not json").is_none());
        Ok(())
    }
}
