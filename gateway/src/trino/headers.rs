//! The `X-Trino-*` request headers, parsed into what a statement runs with. A malformed
//! header is a 400 with a message, never a panic.

use std::collections::BTreeMap;

use http::{HeaderMap, HeaderName, HeaderValue};
use sqe_engine::queries::{Session, SessionChanges};

use crate::trino::spooling::DataEncoding;

/// A header that cannot be used, with what is wrong with it.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadHeader(pub String);

/// Why a request's headers are refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HeaderError {
    /// Malformed or missing (400).
    #[error("{0}")]
    Bad(String),
    /// `X-Trino-User` names someone other than the authenticated user (403).
    #[error("{0}")]
    Impersonation(String),
}

impl From<BadHeader> for HeaderError {
    fn from(e: BadHeader) -> Self {
        HeaderError::Bad(e.0)
    }
}

/// The client's view of its session, from one request's headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ClientSession {
    /// What its statements run with: user, catalog, schema, time zone, `X-Trino-Session`
    /// properties, `X-Trino-Prepared-Statement`s, the transaction.
    pub session: Session,
    pub source: Option<String>,
    pub client_tags: Vec<String>,
    pub client_capabilities: Vec<String>,
    pub client_info: Option<String>,
    pub trace_token: Option<String>,
    /// W3C `traceparent`: the query's trace continues the caller's.
    pub traceparent: Option<String>,
    /// The spooling protocol's encoding, when `X-Trino-Query-Data-Encoding` names one SQE
    /// writes.
    pub encoding: Option<DataEncoding>,
}

impl ClientSession {
    /// The session a request asks for. `authenticated` is the user the request proved to
    /// be, if authentication is on: `X-Trino-User` may then be left out, and may not name
    /// anybody else.
    pub(crate) fn from_headers(
        headers: &HeaderMap,
        authenticated: Option<&str>,
    ) -> Result<Self, HeaderError> {
        let named = single(headers, "x-trino-user")?.filter(|u| !u.trim().is_empty());
        let user = match (named, authenticated) {
            (Some(named), Some(user)) if named != user => {
                return Err(HeaderError::Impersonation(format!(
                    "Access Denied: User {user} cannot impersonate user {named}"
                )));
            }
            (_, Some(user)) => user.to_string(),
            (Some(named), None) => named,
            (None, None) => {
                return Err(HeaderError::Bad(
                    "the X-Trino-User header is required".into(),
                ));
            }
        };
        let session = Session {
            user,
            catalog: single(headers, "x-trino-catalog")?.filter(|c| !c.is_empty()),
            schema: single(headers, "x-trino-schema")?.filter(|s| !s.is_empty()),
            time_zone: single(headers, "x-trino-time-zone")?,
            properties: pairs(headers, "x-trino-session")?,
            prepared: pairs(headers, "x-trino-prepared-statement")?,
            transaction_id: single(headers, "x-trino-transaction-id")?
                .filter(|t| !t.eq_ignore_ascii_case("NONE")),
            supports_transactions: headers.contains_key("x-trino-transaction-id"),
        };
        Ok(Self {
            session,
            source: single(headers, "x-trino-source")?,
            client_tags: list(headers, "x-trino-client-tags")?,
            client_capabilities: list(headers, "x-trino-client-capabilities")?,
            client_info: single(headers, "x-trino-client-info")?,
            trace_token: single(headers, "x-trino-trace-token")?,
            traceparent: single(headers, "traceparent")?,
            encoding: single(headers, "x-trino-query-data-encoding")?
                .and_then(|e| DataEncoding::negotiate(&e)),
        })
    }
}

fn text<'a>(value: &'a http::HeaderValue, name: &str) -> Result<&'a str, BadHeader> {
    value
        .to_str()
        .map_err(|_| BadHeader(format!("header {name} is not visible ASCII")))
}

/// A header that may appear once.
fn single(headers: &HeaderMap, name: &str) -> Result<Option<String>, BadHeader> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(BadHeader(format!("header {name} is given more than once")));
    }
    Ok(Some(text(first, name)?.trim().to_string()))
}

/// A comma-separated list, in one or several headers.
fn list(headers: &HeaderMap, name: &str) -> Result<Vec<String>, BadHeader> {
    let mut items = Vec::new();
    for value in headers.get_all(name) {
        items.extend(
            text(value, name)?
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
    }
    Ok(items)
}

/// `name=value` pairs (values URL-encoded), comma-joined and/or in repeated headers.
fn pairs(headers: &HeaderMap, name: &str) -> Result<BTreeMap<String, String>, BadHeader> {
    let mut map = BTreeMap::new();
    for item in list(headers, name)? {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| BadHeader(format!("header {name}: '{item}' is not name=value")))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(BadHeader(format!(
                "header {name}: an empty name in '{item}'"
            )));
        }
        let value = url_decode(value.trim())
            .ok_or_else(|| BadHeader(format!("header {name}: '{item}' is not URL-encoded text")))?;
        map.insert(url_decode(key).unwrap_or_else(|| key.to_string()), value);
    }
    Ok(map)
}

/// Percent-decoding with `+` as space (Java's `URLEncoder`, which Trino clients use).
pub(crate) fn url_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Percent-encoding for response headers (`X-Trino-Set-Session`, `X-Trino-Added-Prepare`).
pub(crate) fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// Adds the `X-Trino-*` response headers that carry a statement's changes to the session.
pub(crate) fn write_session_changes(changes: &SessionChanges, headers: &mut HeaderMap) {
    let mut add = |name: &'static str, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.append(HeaderName::from_static(name), value);
        }
    };
    if let Some(catalog) = &changes.set_catalog {
        add("x-trino-set-catalog", catalog.clone());
    }
    if let Some(schema) = &changes.set_schema {
        add("x-trino-set-schema", schema.clone());
    }
    for (name, value) in &changes.set_session {
        add(
            "x-trino-set-session",
            format!("{name}={}", url_encode(value)),
        );
    }
    if let Some((catalog, role)) = &changes.set_role {
        add("x-trino-set-role", format!("{catalog}={role}"));
    }
    for name in &changes.clear_session {
        add("x-trino-clear-session", name.clone());
    }
    for (name, sql) in &changes.added_prepare {
        add(
            "x-trino-added-prepare",
            format!("{}={}", url_encode(name), url_encode(sql)),
        );
    }
    for name in &changes.deallocated_prepare {
        add("x-trino-deallocated-prepare", url_encode(name));
    }
    if let Some(id) = &changes.started_transaction {
        add("x-trino-started-transaction-id", id.clone());
    }
    if changes.clear_transaction {
        add("x-trino-clear-transaction-id", "true".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_become_trino_headers() {
        let changes = SessionChanges {
            set_catalog: Some("iceberg".into()),
            set_session: vec![("query_max_run_time".into(), "1.50m".into())],
            added_prepare: vec![("q1".into(), "SELECT 'a b', ?".into())],
            deallocated_prepare: vec!["q0".into()],
            clear_transaction: true,
            ..SessionChanges::default()
        };
        let mut headers = HeaderMap::new();
        write_session_changes(&changes, &mut headers);
        assert_eq!(headers["x-trino-set-catalog"], "iceberg");
        assert_eq!(headers["x-trino-set-session"], "query_max_run_time=1.50m");
        assert_eq!(
            headers["x-trino-added-prepare"],
            "q1=SELECT+%27a+b%27%2C+%3F"
        );
        assert_eq!(headers["x-trino-deallocated-prepare"], "q0");
        assert_eq!(headers["x-trino-clear-transaction-id"], "true");
        assert!(headers.get("x-trino-set-schema").is_none());
    }

    fn headers(pairs: &[(&'static str, &'static [u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_bytes(value).expect("test header"));
        }
        map
    }

    #[test]
    fn reads_the_session_from_headers() {
        let session = ClientSession::from_headers(
            &headers(&[
                ("x-trino-user", b"alice"),
                ("x-trino-schema", b"tpch"),
                ("x-trino-session", b"query_max_run_time=10m, a=1"),
                ("x-trino-session", b"b=x%2Cy"),
                ("x-trino-prepared-statement", b"q1=SELECT+%3F+%2B+1"),
                ("x-trino-client-tags", b"etl, nightly"),
                ("x-trino-transaction-id", b"NONE"),
            ]),
            None,
        )
        .expect("valid headers");
        assert_eq!(session.session.user, "alice");
        assert_eq!(session.session.schema.as_deref(), Some("tpch"));
        assert_eq!(
            session
                .session
                .properties
                .get("query_max_run_time")
                .map(String::as_str),
            Some("10m")
        );
        assert_eq!(
            session.session.properties.get("a").map(String::as_str),
            Some("1")
        );
        assert_eq!(
            session.session.properties.get("b").map(String::as_str),
            Some("x,y")
        );
        assert_eq!(
            session.session.prepared.get("q1").map(String::as_str),
            Some("SELECT ? + 1")
        );
        assert_eq!(session.client_tags, vec!["etl", "nightly"]);
        assert_eq!(session.session.transaction_id, None);
    }

    #[test]
    fn malformed_headers_are_errors_with_a_message() {
        let missing = ClientSession::from_headers(&headers(&[]), None).expect_err("no user");
        assert!(missing.to_string().contains("X-Trino-User"));
        let bad_pair = ClientSession::from_headers(
            &headers(&[("x-trino-user", b"a"), ("x-trino-session", b"novalue")]),
            None,
        )
        .expect_err("not a pair");
        assert!(
            bad_pair.to_string().contains("not name=value"),
            "{bad_pair}"
        );
        let bad_escape = ClientSession::from_headers(
            &headers(&[("x-trino-user", b"a"), ("x-trino-session", b"a=%zz")]),
            None,
        )
        .expect_err("bad escape");
        assert!(
            bad_escape.to_string().contains("URL-encoded"),
            "{bad_escape}"
        );
        let twice = ClientSession::from_headers(
            &headers(&[("x-trino-user", b"a"), ("x-trino-user", b"b")]),
            None,
        )
        .expect_err("two users");
        assert!(twice.to_string().contains("more than once"));
        let binary = ClientSession::from_headers(&headers(&[("x-trino-user", b"\xff\xfe")]), None)
            .expect_err("not ascii");
        assert!(binary.to_string().contains("ASCII"));
    }

    #[test]
    fn an_authenticated_user_cannot_be_someone_else() {
        let impersonating =
            ClientSession::from_headers(&headers(&[("x-trino-user", b"bob")]), Some("alice"));
        assert!(matches!(impersonating, Err(HeaderError::Impersonation(_))));
        let implied = ClientSession::from_headers(&headers(&[]), Some("alice"));
        assert_eq!(
            implied.map(|s| s.session.user).ok().as_deref(),
            Some("alice")
        );
    }

    #[test]
    fn url_coding_round_trips() {
        let text = "SELECT * FROM t WHERE a = 'x,y' AND b = 50%";
        assert_eq!(url_decode(&url_encode(text)).as_deref(), Some(text));
        assert_eq!(url_decode("%E2%82%AC").as_deref(), Some("€"));
        assert_eq!(url_decode("%4"), None);
    }

    const NAMES: [&str; 8] = [
        "x-trino-user",
        "x-trino-catalog",
        "x-trino-schema",
        "x-trino-time-zone",
        "x-trino-session",
        "x-trino-prepared-statement",
        "x-trino-transaction-id",
        "x-trino-client-tags",
    ];

    proptest::proptest! {
        /// Any bytes a client puts in Trino's headers give a session or a 400/403, never a
        /// panic; what it names as its user is the user.
        #[test]
        fn any_trino_headers_parse_without_panicking(
            values in proptest::collection::vec(
                (proptest::sample::select(NAMES.to_vec()), proptest::collection::vec(0x20u8..0x7f, 0..40)),
                0..12,
            ),
            user in "[a-z]{1,8}",
        ) {
            let mut headers = HeaderMap::new();
            headers.insert("x-trino-user", http::HeaderValue::from_str(&user)?);
            for (name, bytes) in &values {
                if let Ok(value) = http::HeaderValue::from_bytes(bytes) {
                    headers.append(*name, value);
                }
            }
            if let Ok(session) = ClientSession::from_headers(&headers, None) {
                proptest::prop_assert!(!session.session.user.trim().is_empty());
            }
            let _ = ClientSession::from_headers(&headers, Some(&user));
        }

        #[test]
        fn url_encoding_round_trips(text in "\\PC{0,30}") {
            proptest::prop_assert_eq!(url_decode(&url_encode(&text)), Some(text));
        }

        #[test]
        fn any_percent_text_decodes_or_is_refused(text in "[%0-9A-Fa-fxz\\u{20ac}]{0,16}") {
            let _ = url_decode(&text);
        }
    }
}
