//! The Trino client protocol's HTTP routes (axum).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use crate::client_auth::ClientAuth;
use crate::trino::auth::{Refused, TrinoAuth};
use crate::trino::headers::{ClientSession, HeaderError};
use crate::trino::query::{PageError, TrinoQuery};
use crate::trino::results::{BaseUri, render};
use crate::trino::session::Transactions;
use sqe_engine::dialect::units::{format_duration, parse_data_size, parse_duration};
use sqe_engine::engine::Engine;

/// Longest `maxWait` a client may ask for.
const MAX_WAIT_LIMIT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);
/// Page size without `targetResultSize`, and the most a client may ask for.
const DEFAULT_TARGET_BYTES: usize = 1024 * 1024;
const MAX_TARGET_BYTES: usize = 128 * 1024 * 1024;
/// How long a finished query (and its last page) is kept for a repeated request.
const FINISHED_RETENTION: Duration = Duration::from_secs(60);

/// What the routes share.
pub struct TrinoEndpoint {
    engine: Arc<Engine>,
    queries: std::sync::Mutex<HashMap<String, Arc<TrinoQuery>>>,
    started: Instant,
    environment: String,
    /// A query nobody asked about for this long is cancelled and forgotten.
    abandoned_after: Duration,
    transactions: Arc<Transactions>,
    auth: TrinoAuth,
    /// `https` when the port serves TLS.
    scheme: &'static str,
}

impl TrinoEndpoint {
    pub fn new(
        engine: Arc<Engine>,
        environment: String,
        abandoned_after: Duration,
        client_auth: Arc<ClientAuth>,
        tls: bool,
    ) -> Arc<Self> {
        Arc::new(Self {
            engine,
            queries: std::sync::Mutex::new(HashMap::new()),
            started: Instant::now(),
            environment,
            abandoned_after,
            transactions: Arc::new(Transactions::default()),
            auth: TrinoAuth::new(client_auth),
            scheme: if tls { "https" } else { "http" },
        })
    }

    fn query(&self, id: &str) -> Option<Arc<TrinoQuery>> {
        self.queries.lock().ok()?.get(id).cloned()
    }

    /// The query `id` as the request's user may see it: another user's query is not found.
    async fn query_for(&self, headers: &HeaderMap, id: &str) -> Result<Arc<TrinoQuery>, Response> {
        let principal = self.auth.authenticate(headers).await.map_err(refused)?;
        match self.query(id) {
            Some(query) if principal.is_none_or(|p| p.user == query.user) => Ok(query),
            _ => Err(text_error(
                StatusCode::NOT_FOUND,
                format!("query {id} not found"),
            )),
        }
    }

    /// Cancels and forgets queries abandoned by their clients.
    pub fn reap(&self) -> usize {
        let Ok(mut queries) = self.queries.lock() else {
            return 0;
        };
        self.transactions.reap(self.abandoned_after);
        let before = queries.len();
        queries.retain(|_, q| {
            // A finished query is kept only for a client repeating its last request.
            let limit = if q.is_finished() {
                FINISHED_RETENTION.min(self.abandoned_after)
            } else {
                self.abandoned_after
            };
            let keep = q.idle_for() < limit;
            if !keep {
                q.cancel();
            }
            keep
        });
        before - queries.len()
    }

    pub fn running_queries(&self) -> usize {
        self.queries.lock().map(|q| q.len()).unwrap_or(0)
    }
}

/// The routes, with a background task reaping abandoned queries.
pub fn trino_router(endpoint: Arc<TrinoEndpoint>) -> Router {
    let reaper = Arc::downgrade(&endpoint);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        loop {
            tick.tick().await;
            let Some(endpoint) = reaper.upgrade() else {
                break;
            };
            let reaped = endpoint.reap();
            if reaped > 0 {
                tracing::info!(reaped, "cancelled queries abandoned by their clients");
            }
        }
    });
    Router::new()
        .route("/v1/statement", post(submit))
        .route(
            "/v1/statement/{phase}/{id}/{slug}/{token}",
            get(next_page).delete(cancel_statement),
        )
        .route("/v1/query/{id}", get(query_info).delete(cancel_query))
        .route("/v1/info", get(info))
        .route("/v1/info/state", get(info_state))
        .with_state(endpoint)
}

fn refused(refused: Refused) -> Response {
    let mut response = text_error(refused.status, refused.message.clone());
    for (name, value) in refused.headers() {
        response.headers_mut().append(name, value);
    }
    response
}

fn base_uri(headers: &HeaderMap, scheme: &str) -> BaseUri {
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(header::HOST))
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .unwrap_or(scheme);
    BaseUri(format!("{scheme}://{host}"))
}

/// Where each page names the query's trace (not a Trino header: Trino clients ignore it).
const TRACE_ID_HEADER: &str = "x-sqe-trace-id";

/// A page's JSON, with the headers carrying the statement's session changes once it has run.
fn page_response(query: &TrinoQuery, body: Vec<u8>) -> Response {
    let mut response = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Some(changes) = query.session_changes() {
        changes.write_headers(response.headers_mut());
    }
    if let Some(trace_id) = query
        .trace_id()
        .and_then(|t| header::HeaderValue::from_str(t).ok())
    {
        response.headers_mut().insert(TRACE_ID_HEADER, trace_id);
    }
    response
}

fn text_error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain")],
        message.into(),
    )
        .into_response()
}

async fn submit(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let principal = match endpoint.auth.authenticate(&headers).await {
        Ok(principal) => principal,
        Err(e) => return refused(e),
    };
    let authenticated = principal.as_ref().map(|p| p.user.as_str());
    let session = match ClientSession::from_headers(&headers, authenticated) {
        Ok(session) => session,
        Err(HeaderError::Bad(message)) => return text_error(StatusCode::BAD_REQUEST, message),
        Err(HeaderError::Impersonation(message)) => {
            return text_error(StatusCode::FORBIDDEN, message);
        }
    };
    let Ok(sql) = String::from_utf8(body.to_vec()) else {
        return text_error(StatusCode::BAD_REQUEST, "the SQL statement is not UTF-8");
    };
    if sql.trim().is_empty() {
        return text_error(StatusCode::BAD_REQUEST, "SQL statement is empty");
    }
    let query = TrinoQuery::start(
        Arc::clone(&endpoint.engine),
        Arc::clone(&endpoint.transactions),
        endpoint.engine.history().next_id(),
        sql,
        session,
    );
    if let Ok(mut queries) = endpoint.queries.lock() {
        queries.insert(query.id.clone(), Arc::clone(&query));
    }
    match query.page(0, Duration::ZERO, DEFAULT_TARGET_BYTES).await {
        Ok(page) => page_response(
            &query,
            render(
                &base_uri(&headers, endpoint.scheme),
                &query,
                0,
                &page,
                endpoint.engine.workers().statuses().len() + 1,
            ),
        ),
        Err(_) => text_error(StatusCode::INTERNAL_SERVER_ERROR, "the query vanished"),
    }
}

async fn next_page(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    Path((_phase, id, slug, token)): Path<(String, String, String, String)>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let query = match endpoint.query_for(&headers, &id).await {
        Ok(query) => query,
        Err(response) => return response,
    };
    if query.slug != slug {
        return text_error(StatusCode::NOT_FOUND, format!("query {id} not found"));
    }
    let Ok(token) = token.parse::<u64>() else {
        return text_error(StatusCode::NOT_FOUND, "invalid token");
    };
    let max_wait = match params.get("maxWait").map(|w| parse_duration(w)) {
        None => DEFAULT_MAX_WAIT,
        Some(Some(wait)) => wait.min(MAX_WAIT_LIMIT),
        Some(None) => return text_error(StatusCode::BAD_REQUEST, "invalid maxWait"),
    };
    let target = match params.get("targetResultSize").map(|s| parse_data_size(s)) {
        None => DEFAULT_TARGET_BYTES,
        Some(Some(bytes)) => bytes.clamp(1, MAX_TARGET_BYTES),
        Some(None) => return text_error(StatusCode::BAD_REQUEST, "invalid targetResultSize"),
    };
    match query.page(token, max_wait, target).await {
        Ok(page) => {
            let body = render(
                &base_uri(&headers, endpoint.scheme),
                &query,
                token,
                &page,
                endpoint.engine.workers().statuses().len() + 1,
            );
            page_response(&query, body)
        }
        Err(PageError::Gone) => text_error(
            StatusCode::GONE,
            format!("token {token} is no longer available"),
        ),
        Err(PageError::NotFound) => {
            text_error(StatusCode::NOT_FOUND, format!("token {token} not found"))
        }
    }
}

async fn cancel_statement(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    Path((_phase, id, slug, _token)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    match endpoint.query_for(&headers, &id).await {
        Ok(query) if query.slug == slug => {
            query.cancel();
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(_) => text_error(StatusCode::NOT_FOUND, format!("query {id} not found")),
        Err(response) => response,
    }
}

async fn cancel_query(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match endpoint.query_for(&headers, &id).await {
        Ok(query) => {
            query.cancel();
            StatusCode::NO_CONTENT.into_response()
        }
        Err(response) => response,
    }
}

async fn query_info(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match endpoint.query_for(&headers, &id).await {
        Ok(query) => axum::Json(json!({
            "queryId": query.id,
            "query": query.sql,
            "session": {"user": query.user},
            "state": if query.is_cancelled() {
                "FAILED"
            } else if query.is_finished() {
                "FINISHED"
            } else {
                "RUNNING"
            },
            "elapsedTimeMillis": query.created.elapsed().as_millis() as u64,
        }))
        .into_response(),
        Err(response) => response,
    }
}

async fn info(State(endpoint): State<Arc<TrinoEndpoint>>) -> Response {
    axum::Json(json!({
        "nodeVersion": {"version": env!("CARGO_PKG_VERSION")},
        "environment": endpoint.environment,
        "coordinator": true,
        "starting": false,
        "uptime": format_duration(endpoint.started.elapsed()),
    }))
    .into_response()
}

async fn info_state() -> Response {
    axum::Json("ACTIVE").into_response()
}
