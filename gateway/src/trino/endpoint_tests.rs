//! The Trino routes against a stand-in `Queries` (the real lifecycle over an in-memory catalog,
//! no workers): paging, the error JSON, session headers, cancel and who may see a query,
//! through the axum router without a socket.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use base64::Engine as _;
use http::{Method, Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use crate::client_auth::ClientAuth;
use crate::trino::{TrinoEndpoint, trino_router};
use sqe_engine::engine::EngineSettings;
use sqe_engine::queries::Queries;

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Endpoint {
    router: Router,
    queries: Arc<Queries>,
    _warehouse: tempfile::TempDir,
}

async fn endpoint(auth: Arc<ClientAuth>) -> Result<Endpoint, Box<dyn std::error::Error>> {
    endpoint_with(auth, EngineSettings::default()).await
}

async fn endpoint_with(
    auth: Arc<ClientAuth>,
    settings: EngineSettings,
) -> Result<Endpoint, Box<dyn std::error::Error>> {
    let warehouse = tempfile::tempdir()?;
    let queries = sqe_engine::stand_in::queries_in(warehouse.path(), settings).await?;
    let trino = TrinoEndpoint::new(
        Arc::clone(&queries),
        "test".into(),
        Duration::from_secs(60),
        auth,
        false,
        Some(crate::trino::spooling::SegmentStore::new(
            Duration::from_secs(60),
        )),
    );
    Ok(Endpoint {
        router: trino_router(trino),
        queries,
        _warehouse: warehouse,
    })
}

/// How a request says who sends it.
#[derive(Clone, Copy)]
enum As<'a> {
    /// `X-Trino-User`, without a password.
    Named(&'a str),
    /// HTTP Basic with the user's name as password.
    Basic(&'a str),
}

struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: Value,
}

async fn call(
    router: &Router,
    method: Method,
    uri: &str,
    who: As<'_>,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Answer, Box<dyn std::error::Error>> {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "sqe.test");
    request = match who {
        As::Named(user) => request.header("x-trino-user", user),
        As::Basic(user) => {
            let credentials =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{user}"));
            request.header("authorization", format!("Basic {credentials}"))
        }
    };
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::from(body.to_string()))?)
        .await?;
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// `POST /v1/statement` of `sql`: the first page.
async fn post(
    router: &Router,
    who: As<'_>,
    headers: &[(&str, &str)],
    sql: &str,
) -> Result<Answer, Box<dyn std::error::Error>> {
    call(router, Method::POST, "/v1/statement", who, headers, sql).await
}

/// A `nextUri` as a path the router serves.
fn path_of(uri: &str) -> &str {
    uri.strip_prefix("http://sqe.test").unwrap_or(uri)
}

/// Submits `sql` and follows `nextUri` to the last page: every page, in order.
async fn run(
    router: &Router,
    sql: &str,
    who: As<'_>,
    headers: &[(&str, &str)],
) -> Result<Vec<Answer>, Box<dyn std::error::Error>> {
    let first = post(router, who, headers, sql).await?;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    let mut pages = vec![first];
    while let Some(next) = pages.last().and_then(|p| p.body["nextUri"].as_str()) {
        let next = path_of(next).to_string();
        let page = call(router, Method::GET, &next, who, headers, "").await?;
        assert_eq!(page.status, StatusCode::OK, "{:?}", page.body);
        pages.push(page);
    }
    Ok(pages)
}

fn rows(pages: &[Answer]) -> Vec<Value> {
    pages
        .iter()
        .filter_map(|p| p.body["data"].as_array())
        .flatten()
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_query_pages_to_its_rows_with_trino_types() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    let pages = run(
        &endpoint.router,
        "SELECT 1 AS n, CAST('ab' AS VARCHAR) AS s UNION ALL SELECT 2, CAST('c' AS VARCHAR)",
        As::Named("alice"),
        &[],
    )
    .await?;
    let last = pages.last().ok_or("no page")?;
    assert_eq!(last.body["stats"]["state"], "FINISHED");
    let columns = pages
        .iter()
        .find_map(|p| p.body["columns"].as_array())
        .ok_or("no columns")?;
    let names: Vec<_> = columns.iter().map(|c| c["name"].clone()).collect();
    let types: Vec<_> = columns.iter().map(|c| c["type"].clone()).collect();
    assert_eq!(names, ["n", "s"]);
    assert_eq!(types, ["integer", "varchar"]);
    let mut data = rows(&pages);
    data.sort_by_key(|r| r[0].as_i64());
    assert_eq!(
        data,
        [serde_json::json!([1, "ab"]), serde_json::json!([2, "c"])]
    );
    // The query went through the one lifecycle: recorded, for its user, as FINISHED.
    let id = last.body["id"].as_str().ok_or("no id")?;
    let record = endpoint
        .queries
        .engine()
        .history()
        .get(id)
        .ok_or("the query is not in the history")?;
    assert_eq!(record.start.user, "alice");
    assert_eq!(record.start.endpoint, "trino");
    assert_eq!(record.state().name(), "FINISHED");
    Ok(())
}

#[tokio::test]
async fn failures_are_trino_error_json() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    let cases = [
        ("SELEC 1", "SYNTAX_ERROR", "USER_ERROR"),
        ("SELECT * FROM nowhere.t", "SCHEMA_NOT_FOUND", "USER_ERROR"),
        ("SELECT 1 / 0", "DIVISION_BY_ZERO", "USER_ERROR"),
    ];
    for (sql, name, kind) in cases {
        let pages = run(&endpoint.router, sql, As::Named("alice"), &[]).await?;
        let last = pages.last().ok_or("no page")?;
        assert_eq!(last.body["stats"]["state"], "FAILED", "{sql}");
        assert_eq!(
            last.body["error"]["errorName"], name,
            "{sql}: {:?}",
            last.body
        );
        assert_eq!(last.body["error"]["errorType"], kind, "{sql}");
        assert!(last.body["error"]["errorCode"].is_u64(), "{sql}");
        assert!(
            last.body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{sql}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn session_statements_answer_with_session_headers() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    run(
        &endpoint.router,
        "CREATE SCHEMA iceberg.s",
        As::Named("a"),
        &[],
    )
    .await?;
    let pages = run(&endpoint.router, "USE iceberg.s", As::Named("a"), &[]).await?;
    let header = |name: &str| {
        pages
            .iter()
            .find_map(|p| p.headers.get(name))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    assert_eq!(header("x-trino-set-catalog").as_deref(), Some("iceberg"));
    assert_eq!(header("x-trino-set-schema").as_deref(), Some("s"));
    // A table created in the session's schema is found there by the next statement.
    let schema = [("x-trino-catalog", "iceberg"), ("x-trino-schema", "s")];
    run(
        &endpoint.router,
        "CREATE TABLE t AS SELECT 7 AS v",
        As::Named("a"),
        &schema,
    )
    .await?;
    let pages = run(&endpoint.router, "SELECT v FROM t", As::Named("a"), &schema).await?;
    assert_eq!(rows(&pages), [serde_json::json!([7])]);
    Ok(())
}

#[tokio::test]
async fn a_request_without_a_user_is_refused() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    let request = Request::builder()
        .method(Method::POST)
        .uri("/v1/statement")
        .body(Body::from("SELECT 1"))?;
    let response = endpoint.router.clone().oneshot(request).await?;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(endpoint.queries.engine().history().records().is_empty());
    Ok(())
}

/// A statement that runs until it is stopped.
const ENDLESS: &str = "SELECT count(*) FROM range(1000000000000)";

#[tokio::test]
async fn delete_cancels_the_query_and_its_pages_say_so() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    let first = post(&endpoint.router, As::Named("a"), &[], ENDLESS).await?;
    let next = path_of(first.body["nextUri"].as_str().ok_or("no nextUri")?).to_string();
    let id = first.body["id"].as_str().ok_or("no id")?.to_string();
    let deleted = call(
        &endpoint.router,
        Method::DELETE,
        &next,
        As::Named("a"),
        &[],
        "",
    )
    .await?;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let record = endpoint
        .queries
        .engine()
        .history()
        .get(&id)
        .ok_or("no record")?;
    let ended = record.control().ended();
    tokio::time::timeout(Duration::from_secs(30), ended.cancelled()).await?;
    let snapshot = record.snapshot();
    assert!(snapshot.state.is_final());
    assert_eq!(snapshot.error_code, Some("USER_CANCELED"));
    Ok(())
}

#[tokio::test]
async fn polling_a_query_of_a_coordinator_run_before_a_restart_says_so() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    let earlier = sqe_engine::history::QueryHistory::new(Default::default()).next_id();
    let ours = endpoint.queries.engine().history().next_id();
    for (id, words) in [(&earlier, "restarted"), (&ours, "not found")] {
        let uri = format!("/v1/statement/executing/{id}/y1/1");
        let answer = call(&endpoint.router, Method::GET, &uri, As::Named("a"), &[], "").await?;
        assert_eq!(answer.status, StatusCode::NOT_FOUND);
        let text = answer.body.as_str().ok_or("no text")?;
        assert!(text.contains(words), "{text}");
    }
    Ok(())
}

#[tokio::test]
async fn with_authentication_a_query_is_only_its_users() -> TestResult {
    let endpoint = endpoint(crate::client_auth::alice_and_bob()?).await?;
    let first = post(&endpoint.router, As::Basic("alice"), &[], ENDLESS).await?;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    let next = path_of(first.body["nextUri"].as_str().ok_or("no nextUri")?).to_string();
    let id = first.body["id"].as_str().ok_or("no id")?.to_string();
    // Bob can neither page nor cancel alice's query: to him it does not exist.
    for method in [Method::GET, Method::DELETE] {
        let answer = call(&endpoint.router, method, &next, As::Basic("bob"), &[], "").await?;
        assert_eq!(answer.status, StatusCode::NOT_FOUND);
    }
    let info = call(
        &endpoint.router,
        Method::GET,
        &format!("/v1/query/{id}"),
        As::Basic("bob"),
        &[],
        "",
    )
    .await?;
    assert_eq!(info.status, StatusCode::NOT_FOUND);
    // Nor may he claim to be her.
    let impersonating = post(
        &endpoint.router,
        As::Basic("bob"),
        &[("x-trino-user", "alice")],
        "SELECT 1",
    )
    .await?;
    assert_eq!(impersonating.status, StatusCode::FORBIDDEN);
    // A wrong password is a 401 with the challenges.
    let wrong = post(
        &endpoint.router,
        As::Named("alice"),
        &[("authorization", "Basic YWxpY2U6bm9wZQ==")],
        "SELECT 1",
    )
    .await?;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.contains_key("www-authenticate"));
    let record = endpoint
        .queries
        .engine()
        .history()
        .get(&id)
        .ok_or("no record")?;
    assert!(
        !record.state().is_final(),
        "bob's DELETE stopped alice's query"
    );
    // Alice can.
    let deleted = call(
        &endpoint.router,
        Method::DELETE,
        &next,
        As::Basic("alice"),
        &[],
        "",
    )
    .await?;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let ended = record.control().ended();
    tokio::time::timeout(Duration::from_secs(30), ended.cancelled()).await?;
    assert_eq!(record.snapshot().error_code, Some("USER_CANCELED"));
    assert_eq!(record.start.user, "alice");
    Ok(())
}

/// The error name of a statement's last page.
fn error_name(pages: &[Answer]) -> Option<String> {
    pages.last()?.body["error"]["errorName"]
        .as_str()
        .map(str::to_string)
}

#[tokio::test]
async fn a_transaction_is_only_its_starters() -> TestResult {
    let endpoint = endpoint(crate::client_auth::alice_and_bob()?).await?;
    let none = [("x-trino-transaction-id", "NONE")];
    let pages = run(
        &endpoint.router,
        "START TRANSACTION",
        As::Basic("alice"),
        &none,
    )
    .await?;
    let id = pages
        .iter()
        .find_map(|p| p.headers.get("x-trino-started-transaction-id"))
        .and_then(|v| v.to_str().ok())
        .ok_or("no transaction started")?
        .to_string();
    let theirs = [("x-trino-transaction-id", id.as_str())];
    let bob = run(&endpoint.router, "SELECT 1", As::Basic("bob"), &theirs).await?;
    assert_eq!(error_name(&bob).as_deref(), Some("UNKNOWN_TRANSACTION"));
    let bob_commits = run(&endpoint.router, "COMMIT", As::Basic("bob"), &theirs).await?;
    assert_eq!(
        error_name(&bob_commits).as_deref(),
        Some("UNKNOWN_TRANSACTION")
    );
    // Bob's attempts neither used nor ended it: alice goes on in it.
    let alice = run(&endpoint.router, "SELECT 1", As::Basic("alice"), &theirs).await?;
    assert_eq!(rows(&alice), [serde_json::json!([1])]);
    let commit = run(&endpoint.router, "COMMIT", As::Basic("alice"), &theirs).await?;
    assert_eq!(error_name(&commit), None);
    Ok(())
}

#[tokio::test]
async fn system_runtime_shows_a_user_only_its_own_queries_and_an_admin_all() -> TestResult {
    let settings = EngineSettings {
        admin_users: vec!["root".into()],
        ..EngineSettings::default()
    };
    let endpoint = endpoint_with(ClientAuth::disabled()?, settings).await?;
    run(
        &endpoint.router,
        "SELECT 'alice private'",
        As::Named("alice"),
        &[],
    )
    .await?;
    run(
        &endpoint.router,
        "SELECT 'bob private'",
        As::Named("bob"),
        &[],
    )
    .await?;
    let seen = |user: &'static str| {
        let router = endpoint.router.clone();
        async move {
            let pages = run(
                &router,
                "SELECT \"user\", query FROM system.runtime.queries",
                As::Named(user),
                &[],
            )
            .await?;
            let mut users: Vec<String> = rows(&pages)
                .iter()
                .filter(|r| r[1].as_str().is_some_and(|q| q.contains("private")))
                .filter_map(|r| r[0].as_str().map(str::to_string))
                .collect();
            users.sort();
            Ok::<_, Box<dyn std::error::Error>>(users)
        }
    };
    assert_eq!(seen("alice").await?, ["alice"]);
    assert_eq!(seen("bob").await?, ["bob"]);
    assert_eq!(seen("root").await?, ["alice", "bob"]);
    Ok(())
}

#[tokio::test]
async fn repeated_wrong_passwords_are_held_off_with_429() -> TestResult {
    let endpoint = endpoint(crate::client_auth::alice_and_bob()?).await?;
    let wrong = [("authorization", "Basic YWxpY2U6bm9wZQ==")];
    for _ in 0..5 {
        let answer = post(&endpoint.router, As::Named("alice"), &wrong, "SELECT 1").await?;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    // Now the right password is not even checked, and bob is not affected.
    let held = post(&endpoint.router, As::Basic("alice"), &[], "SELECT 1").await?;
    assert_eq!(
        held.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{:?}",
        held.body
    );
    assert!(
        held.body
            .as_str()
            .is_some_and(|m| m.contains("too many failed logins"))
    );
    let bob = post(&endpoint.router, As::Basic("bob"), &[], "SELECT 1").await?;
    assert_eq!(bob.status, StatusCode::OK);
    Ok(())
}

#[tokio::test]
async fn a_run_time_limit_past_the_clocks_range_is_no_limit() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    let pages = run(
        &endpoint.router,
        "SELECT x FROM (VALUES 1) AS t(x)",
        As::Named("a"),
        &[(
            "x-trino-session",
            "query_max_run_time=10000000000000000000s",
        )],
    )
    .await?;
    assert_eq!(
        error_name(&pages),
        None,
        "{:?}",
        pages.last().map(|p| &p.body)
    );
    assert_eq!(rows(&pages), [serde_json::json!([1])]);
    Ok(())
}

#[tokio::test]
async fn floods_of_queries_and_transactions_stop_at_the_users_share() -> TestResult {
    use crate::trino::server::MAX_QUERIES_PER_USER;
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    // Queries whose client never reads their last page stay open.
    for _ in 0..MAX_QUERIES_PER_USER {
        let first = post(&endpoint.router, As::Named("alice"), &[], "SELECT 1").await?;
        assert_eq!(first.status, StatusCode::OK);
    }
    let refused = post(&endpoint.router, As::Named("alice"), &[], "SELECT 1").await?;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{:?}",
        refused.body
    );
    // Transactions: at most 100 open per user.
    let none = [("x-trino-transaction-id", "NONE")];
    let mut started = 0;
    let failure = loop {
        let pages = run(
            &endpoint.router,
            "START TRANSACTION",
            As::Named("bob"),
            &none,
        )
        .await?;
        match error_name(&pages) {
            None => started += 1,
            Some(name) => break name,
        }
        assert!(started <= 100, "a user opened more than 100 transactions");
    };
    assert_eq!(
        (started, failure.as_str()),
        (100, "GENERIC_INSUFFICIENT_RESOURCES")
    );
    // Others are served as before.
    let carol = tokio::time::timeout(
        Duration::from_secs(30),
        run(&endpoint.router, "SELECT 1", As::Named("carol"), &[]),
    )
    .await??;
    assert_eq!(rows(&carol), [serde_json::json!([1])]);
    let carol_tx = run(
        &endpoint.router,
        "START TRANSACTION",
        As::Named("carol"),
        &none,
    )
    .await?;
    assert_eq!(error_name(&carol_tx), None);
    Ok(())
}

/// The raw body of `GET uri` with `headers`, and its status.
async fn download(
    router: &Router,
    uri: &str,
    headers: &[(&str, &str)],
) -> Result<(StatusCode, Vec<u8>), Box<dyn std::error::Error>> {
    let mut request = Request::builder()
        .uri(path_of(uri))
        .header("host", "sqe.test");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router.clone().oneshot(request.body(Body::empty())?).await?;
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
    Ok((status, bytes.to_vec()))
}

/// The rows of a spooling protocol page's segments, each checked against its metadata and
/// (when spooled) downloaded with its key, refused without it, and acknowledged. Returns the
/// rows and whether a segment was spooled and whether one was compressed.
async fn segment_rows(
    router: &Router,
    data: &Value,
    encoding: &str,
    row_offset: u64,
) -> Result<(Vec<Value>, bool, bool), Box<dyn std::error::Error>> {
    assert_eq!(data["encoding"], encoding, "{data}");
    let (mut rows, mut spooled, mut compressed) = (Vec::new(), false, false);
    let mut offset = row_offset;
    for segment in data["segments"].as_array().ok_or("no segments")? {
        let metadata = &segment["metadata"];
        assert_eq!(metadata["rowOffset"], offset, "{metadata}");
        let bytes = match segment["type"].as_str() {
            Some("inline") => base64::engine::general_purpose::STANDARD
                .decode(segment["data"].as_str().ok_or("no inline data")?)?,
            Some("spooled") => {
                spooled = true;
                let uri = segment["uri"].as_str().ok_or("no uri")?;
                let ack = segment["ackUri"].as_str().ok_or("no ackUri")?;
                let (name, values) = segment["headers"]
                    .as_object()
                    .and_then(|h| h.iter().next())
                    .ok_or("no headers")?;
                let key = values[0].as_str().ok_or("no key")?;
                // The URI alone does not reach the rows.
                assert_eq!(download(router, uri, &[]).await?.0, StatusCode::NOT_FOUND);
                let (status, bytes) = download(router, uri, &[(name, key)]).await?;
                assert_eq!(status, StatusCode::OK);
                assert_eq!(
                    download(router, ack, &[(name, key)]).await?.0,
                    StatusCode::OK
                );
                // Acknowledged, it is deleted.
                let (status, _) = download(router, uri, &[(name, key)]).await?;
                assert_eq!(status, StatusCode::NOT_FOUND);
                bytes
            }
            other => return Err(format!("segment type {other:?}").into()),
        };
        assert_eq!(metadata["segmentSize"], bytes.len());
        let json = match metadata["uncompressedSize"].as_u64() {
            None => bytes,
            Some(size) => {
                compressed = true;
                let size = usize::try_from(size)?;
                let json = match encoding {
                    "json+zstd" => zstd::bulk::decompress(&bytes, size)?,
                    "json+lz4" => lz4_flex::block::decompress(&bytes, size)?,
                    other => return Err(format!("{other} segments are not compressed").into()),
                };
                assert_eq!(json.len(), size);
                json
            }
        };
        let segment_rows: Vec<Value> = serde_json::from_slice(&json)?;
        assert_eq!(metadata["rowsCount"], segment_rows.len());
        offset += segment_rows.len() as u64;
        rows.extend(segment_rows);
    }
    Ok((rows, spooled, compressed))
}

#[tokio::test]
async fn spooling_protocol_segments_hold_the_classic_protocols_rows() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    let sql = "SELECT x, 'row ' || CAST(x AS VARCHAR) AS s FROM UNNEST(sequence(1, 5000)) AS t(x)";
    let classic = rows(&run(&endpoint.router, sql, As::Named("alice"), &[]).await?);
    assert_eq!(classic.len(), 5000);
    for encoding in ["json", "json+zstd", "json+lz4"] {
        // A client lists encodings in its order of preference; unknown ones are passed over.
        let asked = format!("arrow-ipc,{encoding},json");
        let headers = [("x-trino-query-data-encoding", asked.as_str())];
        let pages = run(&endpoint.router, sql, As::Named("alice"), &headers).await?;
        let (mut spooled_rows, mut spooled, mut compressed) = (Vec::new(), false, false);
        for page in &pages {
            if page.body["data"].is_null() {
                continue;
            }
            let offset = spooled_rows.len() as u64;
            let (rows, s, c) =
                segment_rows(&endpoint.router, &page.body["data"], encoding, offset).await?;
            spooled_rows.extend(rows);
            spooled |= s;
            compressed |= c;
        }
        assert_eq!(spooled_rows, classic, "{encoding}");
        assert!(
            spooled,
            "{encoding}: 5000 rows are more than a page inlines"
        );
        assert_eq!(compressed, encoding != "json", "{encoding}");

        // A small result comes inline.
        let pages = run(
            &endpoint.router,
            "SELECT 1, 'a'",
            As::Named("alice"),
            &headers,
        )
        .await?;
        let data = pages
            .iter()
            .map(|p| &p.body["data"])
            .find(|d| !d.is_null())
            .ok_or("no data")?;
        assert_eq!(data["segments"][0]["type"], "inline");
        let (rows, spooled, _) = segment_rows(&endpoint.router, data, encoding, 0).await?;
        assert_eq!((rows, spooled), (vec![serde_json::json!([1, "a"])], false));
    }
    // Only encodings SQE does not write: the classic protocol.
    let pages = run(
        &endpoint.router,
        "SELECT 1",
        As::Named("alice"),
        &[("x-trino-query-data-encoding", "arrow-ipc")],
    )
    .await?;
    assert_eq!(rows(&pages), [serde_json::json!([1])]);
    Ok(())
}

#[tokio::test]
async fn heartbeats_are_answered_and_cancelling_a_query_drops_its_spooled_segments() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    let headers = [("x-trino-query-data-encoding", "json")];
    let sql = "SELECT x FROM UNNEST(sequence(1, 3000)) AS t(x)";
    for cancel_by_next_uri in [false, true] {
        let mut page = post(&endpoint.router, As::Named("alice"), &headers, sql).await?;
        let mut polled = String::new();
        // Poll until a page carries a spooled segment, with a heartbeat before each poll.
        let data = loop {
            let next =
                path_of(page.body["nextUri"].as_str().ok_or("ended without rows")?).to_string();
            // A heartbeat names a query, not a page: even a token past the next is answered
            // (as a page it would be 404), and no page is taken.
            let (base, token) = next.rsplit_once('/').ok_or("no token")?;
            let beyond = format!("{base}/{}", token.parse::<u64>()? + 1);
            for uri in [&next, &beyond] {
                let head = call(
                    &endpoint.router,
                    Method::HEAD,
                    uri,
                    As::Named("alice"),
                    &headers,
                    "",
                )
                .await?;
                assert_eq!(head.status, StatusCode::OK, "HEAD {uri}");
            }
            let poll = || {
                call(
                    &endpoint.router,
                    Method::GET,
                    &next,
                    As::Named("alice"),
                    &headers,
                    "",
                )
            };
            page = poll().await?;
            assert_eq!(page.status, StatusCode::OK);
            polled.clone_from(&next);
            if !page.body["data"].is_null() {
                // Asked again, the page is the same: the same segment, not another.
                assert_eq!(poll().await?.body["data"], page.body["data"]);
                break page.body["data"].clone();
            }
        };
        assert_eq!(data["segments"][0]["metadata"]["rowOffset"], 0);
        let segment = &data["segments"][0];
        assert_eq!(segment["type"], "spooled");
        let key = segment["headers"]["x-sqe-segment-key"][0]
            .as_str()
            .ok_or("no key")?;
        let uri = segment["uri"].as_str().ok_or("no uri")?;
        let key_header = [("x-sqe-segment-key", key)];
        assert_eq!(
            download(&endpoint.router, uri, &key_header).await?.0,
            StatusCode::OK
        );
        // The client cancels (either way): its segments go with the query.
        let cancel_uri = if cancel_by_next_uri {
            polled.clone()
        } else {
            format!("/v1/query/{}", page.body["id"].as_str().ok_or("no id")?)
        };
        let cancel = call(
            &endpoint.router,
            Method::DELETE,
            &cancel_uri,
            As::Named("alice"),
            &[],
            "",
        )
        .await?;
        assert_eq!(cancel.status, StatusCode::NO_CONTENT);
        assert_eq!(
            download(&endpoint.router, uri, &key_header).await?.0,
            StatusCode::NOT_FOUND,
            "after DELETE {cancel_uri}"
        );
    }
    Ok(())
}

/// Polls a query's `nextUri` until a page carries rows: that page, and the URI it answered.
async fn poll_to_rows(
    router: &Router,
    mut page: Answer,
    headers: &[(&str, &str)],
) -> Result<(Answer, String), Box<dyn std::error::Error>> {
    loop {
        let next = path_of(page.body["nextUri"].as_str().ok_or("ended without rows")?).to_string();
        page = call(router, Method::GET, &next, As::Named("alice"), headers, "").await?;
        assert_eq!(page.status, StatusCode::OK, "{:?}", page.body);
        if !page.body["data"].is_null() {
            return Ok((page, next));
        }
    }
}

#[tokio::test]
async fn a_killed_querys_client_reads_the_segments_it_was_given_then_the_error() -> TestResult {
    let endpoint = endpoint(ClientAuth::disabled()?).await?;
    let headers = [("x-trino-query-data-encoding", "json")];
    // Rows without end: the query is still running when it is killed.
    let sql = "SELECT value FROM range(1000000000000)";
    let first = post(&endpoint.router, As::Named("alice"), &headers, sql).await?;
    let id = first.body["id"].as_str().ok_or("no id")?.to_string();
    let (page, _) = poll_to_rows(&endpoint.router, first, &headers).await?;
    let segment = &page.body["data"]["segments"][0];
    assert_eq!(segment["type"], "spooled");
    let key = segment["headers"]["x-sqe-segment-key"][0]
        .as_str()
        .ok_or("no key")?;
    let uri = segment["uri"].as_str().ok_or("no uri")?;
    let kill = format!("CALL system.runtime.kill_query(query_id => '{id}', message => 'enough')");
    let killed = run(&endpoint.router, &kill, As::Named("alice"), &[]).await?;
    assert_eq!(
        error_name(&killed),
        None,
        "{:?}",
        killed.last().map(|p| &p.body)
    );
    // The segment handed out before the kill is still the client's to read...
    let (status, bytes) = download(&endpoint.router, uri, &[("x-sqe-segment-key", key)]).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(!bytes.is_empty());
    // ...and the next page tells it why the query ended.
    let mut page = page;
    let ended = loop {
        let Some(next) = page.body["nextUri"].as_str() else {
            break page;
        };
        let next = path_of(next).to_string();
        page = call(
            &endpoint.router,
            Method::GET,
            &next,
            As::Named("alice"),
            &headers,
            "",
        )
        .await?;
    };
    assert_eq!(
        ended.body["error"]["errorName"], "ADMINISTRATIVELY_KILLED",
        "{:?}",
        ended.body
    );
    Ok(())
}
