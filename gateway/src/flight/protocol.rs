//! The parts of the Flight (SQL) protocol arrow-flight does not model: session options, cookie
//! sessions, statement handles.

use std::collections::HashMap;
use std::net::SocketAddr;

use bytes::Bytes;
use tonic::metadata::MetadataMap;
use uuid::Uuid;

/// Flight action types for session options and cancellation (Flight RPC spec).
pub(crate) const SET_SESSION_OPTIONS: &str = "SetSessionOptions";
pub(crate) const GET_SESSION_OPTIONS: &str = "GetSessionOptions";
pub(crate) const CLOSE_SESSION: &str = "CloseSession";
pub(crate) const CANCEL_FLIGHT_INFO: &str = "CancelFlightInfo";
/// SQE's own action: how far a statement streaming to its caller has got.
pub(crate) const QUERY_PROGRESS: &str = "sqe.QueryProgress";

/// The cookie that names a Flight session.
pub(crate) const SESSION_COOKIE: &str = "arrow_flight_session_id";

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SessionOptionValue {
    #[prost(oneof = "session_option_value::OptionValue", tags = "1, 2, 3, 4, 5")]
    pub option_value: Option<session_option_value::OptionValue>,
}

pub(crate) mod session_option_value {
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct StringListValue {
        #[prost(string, repeated, tag = "1")]
        pub values: Vec<String>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(crate) enum OptionValue {
        #[prost(string, tag = "1")]
        String(String),
        #[prost(bool, tag = "2")]
        Bool(bool),
        #[prost(sfixed64, tag = "3")]
        Int64(i64),
        #[prost(double, tag = "4")]
        Double(f64),
        #[prost(message, tag = "5")]
        StringList(StringListValue),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SetSessionOptionsRequest {
    #[prost(map = "string, message", tag = "1")]
    pub session_options: HashMap<String, SessionOptionValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SetSessionOptionsResult {
    #[prost(map = "string, message", tag = "1")]
    pub errors: HashMap<String, SetSessionOptionsError>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SetSessionOptionsError {
    #[prost(enumeration = "SetSessionOptionsErrorValue", tag = "1")]
    pub value: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum SetSessionOptionsErrorValue {
    Unspecified = 0,
    InvalidName = 1,
    InvalidValue = 2,
    Error = 3,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct GetSessionOptionsResult {
    #[prost(map = "string, message", tag = "1")]
    pub session_options: HashMap<String, SessionOptionValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct CloseSessionResult {
    #[prost(enumeration = "CloseSessionStatus", tag = "1")]
    pub status: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum CloseSessionStatus {
    Unspecified = 0,
    Closed = 1,
    Closing = 2,
    NotCloseable = 3,
}

/// `FlightInfo.app_metadata` of a DDL or DML statement: `sqe.update_type=<TYPE>`, e.g.
/// `sqe.update_type=INSERT`, so clients can tell a command's one-row result from a query's.
/// Queries carry no app metadata.
pub(crate) fn update_type_metadata(update_type: &str) -> Bytes {
    Bytes::from(format!("{UPDATE_TYPE_PREFIX}{update_type}"))
}

/// The update type in a `FlightInfo.app_metadata`, if it names one.
pub(crate) fn parse_update_type(app_metadata: &[u8]) -> Option<&str> {
    std::str::from_utf8(app_metadata)
        .ok()?
        .strip_prefix(UPDATE_TYPE_PREFIX)
}

const UPDATE_TYPE_PREFIX: &str = "sqe.update_type=";

/// A statement or prepared-statement handle: 16 bytes of UUID.
pub(crate) fn handle_bytes(id: Uuid) -> Bytes {
    Bytes::copy_from_slice(id.as_bytes())
}

pub(crate) fn parse_handle(bytes: &[u8]) -> Option<Uuid> {
    Uuid::from_slice(bytes).ok()
}

/// The session a request belongs to: its session cookie, else its bearer token, else its
/// connection (clients such as ADBC keep one HTTP/2 connection per database connection and do
/// not send cookies unless asked to).
pub(crate) fn session_key(metadata: &MetadataMap, peer: Option<SocketAddr>) -> Option<String> {
    if let Some(id) = session_cookie(metadata) {
        return Some(format!("cookie:{id}"));
    }
    if let Some(token) = metadata
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        return Some(format!("bearer:{token}"));
    }
    peer.map(|addr| format!("peer:{addr}"))
}

/// The value of the session cookie, if the request carries one.
pub(crate) fn session_cookie(metadata: &MetadataMap) -> Option<String> {
    metadata
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn cookies_and_bearers_name_sessions() {
        let mut metadata = MetadataMap::new();
        assert_eq!(session_key(&metadata, None), None);
        let peer: SocketAddr = "127.0.0.1:4242".parse().expect("address");
        assert_eq!(
            session_key(&metadata, Some(peer)).as_deref(),
            Some("peer:127.0.0.1:4242")
        );
        metadata.insert("authorization", "Bearer abc".parse().expect("header"));
        assert_eq!(
            session_key(&metadata, Some(peer)).as_deref(),
            Some("bearer:abc")
        );
        metadata.insert(
            "cookie",
            "a=1; arrow_flight_session_id=s-42; b=2"
                .parse()
                .expect("header"),
        );
        assert_eq!(
            session_key(&metadata, Some(peer)).as_deref(),
            Some("cookie:s-42")
        );
    }

    #[test]
    fn session_options_round_trip() -> Result<(), prost::DecodeError> {
        let request = SetSessionOptionsRequest {
            session_options: HashMap::from([(
                "schema".to_string(),
                SessionOptionValue {
                    option_value: Some(session_option_value::OptionValue::String("tpch".into())),
                },
            )]),
        };
        let decoded = SetSessionOptionsRequest::decode(request.encode_to_vec().as_slice())?;
        assert_eq!(decoded, request);
        Ok(())
    }
}
