//! The Trino client protocol's HTTP routes (axum). Handlers return `Result<_, Refusal>`, whose
//! error is the HTTP answer, and get the authenticated caller from the [`Caller`] extractor.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use parking_lot::Mutex;
use serde_json::json;
use sqe_engine::dialect::units::{format_duration, parse_data_size, parse_duration};
use sqe_engine::history::CancelReason;
use sqe_engine::queries::Queries;

use crate::client_auth::{ClientAuth, Principal};
use crate::trino::auth::{Refused, TrinoAuth};
use crate::trino::headers::{ClientSession, HeaderError, write_session_changes};
use crate::trino::query::{PageError, TrinoQuery};
use crate::trino::results::{BaseUri, render};
use crate::trino::spooling::{SEGMENT_KEY_HEADER, SegmentStore, Spooling};

/// Longest `maxWait` a client may ask for.
const MAX_WAIT_LIMIT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);
/// Page size without `targetResultSize`, and the most a client may ask for.
const DEFAULT_TARGET_BYTES: usize = 1024 * 1024;
const MAX_TARGET_BYTES: usize = 128 * 1024 * 1024;
/// Most queries the port keeps at once (finished ones wait for a repeated last request), and
/// most unfinished ones per user.
const MAX_QUERIES: usize = 100_000;
pub(crate) const MAX_QUERIES_PER_USER: usize = 1_000;
/// How long a finished query (and its last page) is kept for a repeated request.
const FINISHED_RETENTION: Duration = Duration::from_secs(60);

/// What the routes share.
pub(crate) struct TrinoEndpoint {
    queries: Arc<Queries>,
    running: Mutex<HashMap<String, Arc<TrinoQuery>>>,
    started: Instant,
    environment: String,
    /// A query nobody asked about for this long is cancelled and forgotten.
    abandoned_after: Duration,
    auth: TrinoAuth,
    /// `https` when the port serves TLS.
    scheme: &'static str,
    /// Spooled segments waiting for their clients; `None` when the spooling protocol is off.
    segments: Option<Arc<SegmentStore>>,
}

impl TrinoEndpoint {
    pub(crate) fn new(
        queries: Arc<Queries>,
        environment: String,
        abandoned_after: Duration,
        client_auth: Arc<ClientAuth>,
        tls: bool,
        segments: Option<Arc<SegmentStore>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            queries,
            running: Mutex::new(HashMap::new()),
            started: Instant::now(),
            environment,
            abandoned_after,
            auth: TrinoAuth::new(client_auth),
            scheme: if tls { "https" } else { "http" },
            segments,
        })
    }

    /// The query `id` as `caller` may see it: another user's query is not found.
    fn query_for(&self, caller: &Caller, id: &str) -> Result<Arc<TrinoQuery>, Refusal> {
        match self.running.lock().get(id) {
            Some(query) if caller.may_see(&query.user) => Ok(Arc::clone(query)),
            _ => Err(self.not_found(id)),
        }
    }

    /// The query of a `nextUri` (`id` and `slug`) as `caller` may see it.
    fn statement_for(
        &self,
        caller: &Caller,
        id: &str,
        slug: &str,
    ) -> Result<Arc<TrinoQuery>, Refusal> {
        let query = self.query_for(caller, id)?;
        if query.slug != slug {
            return Err(self.not_found(id));
        }
        Ok(query)
    }

    /// The refusal for a query this endpoint does not have (or not for this caller).
    fn not_found(&self, id: &str) -> Refusal {
        if self.queries.engine().history().from_an_earlier_run(id) {
            return Refusal::NotFound(format!(
                "query {id} was started before this coordinator restarted: its state and \
                 results are lost; run it again"
            ));
        }
        Refusal::NotFound(format!("query {id} not found"))
    }

    /// Whether `user` may start another query: one user's queries cannot fill the port.
    fn admit(&self, user: &str) -> Result<(), Refusal> {
        let running = self.running.lock();
        if running.len() >= MAX_QUERIES {
            return Err(Refusal::TooMany(format!(
                "the coordinator holds {} queries, the most it keeps; try again shortly",
                running.len()
            )));
        }
        let own = running
            .values()
            .filter(|q| q.user == user && !q.is_finished())
            .count();
        if own >= MAX_QUERIES_PER_USER {
            return Err(Refusal::TooMany(format!(
                "user {user} has {own} queries open, the most one user may; finish or cancel some"
            )));
        }
        Ok(())
    }

    /// Cancels and forgets queries abandoned by their clients.
    pub(crate) fn reap(&self) -> usize {
        let mut running = self.running.lock();
        let before = running.len();
        running.retain(|_, q| {
            // A finished query is kept only for a client repeating its last request.
            let limit = if q.is_finished() {
                FINISHED_RETENTION.min(self.abandoned_after)
            } else {
                self.abandoned_after
            };
            let keep = q.idle_for() < limit;
            if !keep {
                q.cancel(CancelReason::Abandoned);
                if !q.is_finished() {
                    self.forget_segments(&q.id);
                }
            }
            keep
        });
        if let Some(segments) = &self.segments {
            segments.sweep();
        }
        before - running.len()
    }

    /// Drops the spooled segments of query `id`, whose client stopped or left it.
    fn forget_segments(&self, id: &str) {
        if let Some(segments) = &self.segments {
            segments.forget_query(id);
        }
    }

    /// How a query's rows go to a client asking for the spooling protocol.
    fn spooling(&self, client: &ClientSession) -> Option<Spooling> {
        Some(Spooling {
            encoding: client.encoding?,
            store: Arc::clone(self.segments.as_ref()?),
        })
    }

    fn segment_store(&self) -> Result<&SegmentStore, Refusal> {
        self.segments
            .as_deref()
            .ok_or_else(|| Refusal::NotFound("the spooling protocol is off".into()))
    }

    /// Nodes in the cluster, as Trino's stats count them: the workers and the coordinator.
    fn nodes(&self) -> usize {
        self.queries.engine().workers().statuses().len() + 1
    }
}

/// The routes, with a background task reaping abandoned queries.
pub(crate) fn trino_router(endpoint: Arc<TrinoEndpoint>) -> Router {
    let reaper = Arc::downgrade(&endpoint);
    sqe_layers::task::spawn(async move {
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
            get(next_page).head(heartbeat).delete(cancel_statement),
        )
        .route("/v1/spooled/download/{segment}", get(download_segment))
        .route("/v1/spooled/ack/{segment}", get(acknowledge_segment))
        .route("/v1/query/{id}", get(query_info).delete(cancel_query))
        .route("/v1/info", get(info))
        .route("/v1/info/state", get(info_state))
        .with_state(endpoint)
}

/// Why a request gets no page: an HTTP status with a plain-text message, as Trino answers.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Not authenticated: 401 with the challenges the port accepts.
    Unauthenticated(Refused),
    BadRequest(String),
    /// Authenticated, but naming another user (impersonation).
    Forbidden(String),
    NotFound(String),
    /// A page that was served already and is gone.
    Gone(String),
    /// The caller holds as much as one user may (429).
    TooMany(String),
    Internal(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            Refusal::Unauthenticated(refused) => {
                let mut response = text(refused.status, refused.message.clone());
                for (name, value) in refused.headers() {
                    response.headers_mut().append(name, value);
                }
                return response;
            }
            Refusal::BadRequest(m) => (StatusCode::BAD_REQUEST, m),
            Refusal::Forbidden(m) => (StatusCode::FORBIDDEN, m),
            Refusal::NotFound(m) => (StatusCode::NOT_FOUND, m),
            Refusal::Gone(m) => (StatusCode::GONE, m),
            Refusal::TooMany(m) => (StatusCode::TOO_MANY_REQUESTS, m),
            Refusal::Internal(m) => (StatusCode::INTERNAL_SERVER_ERROR, m),
        };
        text(status, message)
    }
}

fn text(status: StatusCode, message: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], message).into_response()
}

/// The address a connection comes from, over plain TCP or TLS alike (set by the server).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerAddr(pub std::net::SocketAddr);

/// Who sends the request: `None` inside when client authentication is off.
pub(crate) struct Caller(Option<Principal>);

impl Caller {
    /// Whether the caller may see a query of `user`.
    fn may_see(&self, user: &str) -> bool {
        self.0.as_ref().is_none_or(|p| p.user == user)
    }
}

impl FromRequestParts<Arc<TrinoEndpoint>> for Caller {
    type Rejection = Refusal;

    async fn from_request_parts(
        parts: &mut Parts,
        endpoint: &Arc<TrinoEndpoint>,
    ) -> Result<Self, Self::Rejection> {
        let source = parts
            .extensions
            .get::<axum::extract::ConnectInfo<PeerAddr>>()
            .map(|info| info.0.0.ip());
        endpoint
            .auth
            .authenticate(&parts.headers, source)
            .await
            .map(Caller)
            .map_err(Refusal::Unauthenticated)
    }
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
        write_session_changes(changes, response.headers_mut());
    }
    if let Some(trace_id) = query
        .trace_id()
        .and_then(|t| header::HeaderValue::from_str(t).ok())
    {
        response.headers_mut().insert(TRACE_ID_HEADER, trace_id);
    }
    response
}

async fn submit(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    Caller(principal): Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Refusal> {
    let authenticated = principal.as_ref().map(|p| p.user.as_str());
    let session = ClientSession::from_headers(&headers, authenticated).map_err(|e| match e {
        HeaderError::Bad(message) => Refusal::BadRequest(message),
        HeaderError::Impersonation(message) => Refusal::Forbidden(message),
    })?;
    let sql = String::from_utf8(body.to_vec())
        .map_err(|_| Refusal::BadRequest("the SQL statement is not UTF-8".into()))?;
    if sql.trim().is_empty() {
        return Err(Refusal::BadRequest("SQL statement is empty".into()));
    }
    endpoint.admit(&session.session.user)?;
    let spooling = endpoint.spooling(&session);
    let query = TrinoQuery::start(&endpoint.queries, sql, session, spooling)
        .ok_or_else(|| Refusal::Internal("the query vanished".into()))?;
    endpoint
        .running
        .lock()
        .insert(query.id.clone(), Arc::clone(&query));
    let page = query
        .page(0, Duration::ZERO, DEFAULT_TARGET_BYTES)
        .await
        .map_err(|_| Refusal::Internal("the query vanished".into()))?;
    let body = render(
        &base_uri(&headers, endpoint.scheme),
        &query,
        0,
        &page,
        endpoint.nodes(),
    );
    Ok(page_response(&query, body))
}

async fn next_page(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    caller: Caller,
    Path((_phase, id, slug, token)): Path<(String, String, String, String)>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, Refusal> {
    let query = endpoint.statement_for(&caller, &id, &slug)?;
    let token = token
        .parse::<u64>()
        .map_err(|_| Refusal::NotFound("invalid token".into()))?;
    let max_wait = match params.get("maxWait").map(|w| parse_duration(w)) {
        None => DEFAULT_MAX_WAIT,
        Some(Some(wait)) => wait.min(MAX_WAIT_LIMIT),
        Some(None) => return Err(Refusal::BadRequest("invalid maxWait".into())),
    };
    let target = match params.get("targetResultSize").map(|s| parse_data_size(s)) {
        None => DEFAULT_TARGET_BYTES,
        Some(Some(bytes)) => bytes.clamp(1, MAX_TARGET_BYTES),
        Some(None) => return Err(Refusal::BadRequest("invalid targetResultSize".into())),
    };
    let page = query
        .page(token, max_wait, target)
        .await
        .map_err(|e| match e {
            PageError::Gone => Refusal::Gone(format!("token {token} is no longer available")),
            PageError::NotFound => Refusal::NotFound(format!("token {token} not found")),
            PageError::Lost => Refusal::Internal(format!("page {token} could not be produced")),
        })?;
    let body = render(
        &base_uri(&headers, endpoint.scheme),
        &query,
        token,
        &page,
        endpoint.nodes(),
    );
    Ok(page_response(&query, body))
}

async fn cancel_statement(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    caller: Caller,
    Path((_phase, id, slug, _token)): Path<(String, String, String, String)>,
) -> Result<StatusCode, Refusal> {
    let query = endpoint.statement_for(&caller, &id, &slug)?;
    query.cancel(CancelReason::Client);
    endpoint.forget_segments(&query.id);
    Ok(StatusCode::NO_CONTENT)
}

/// A client's sign of life while it downloads a spooled segment (the python client sends
/// it): the query is not abandoned, and no page is produced.
async fn heartbeat(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    caller: Caller,
    Path((_phase, id, slug, _token)): Path<(String, String, String, String)>,
) -> Result<StatusCode, Refusal> {
    let query = endpoint.statement_for(&caller, &id, &slug)?;
    query.touch();
    Ok(StatusCode::OK)
}

/// The segment's key, from the header its page named.
fn segment_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(SEGMENT_KEY_HEADER)
        .and_then(|k| k.to_str().ok())
}

/// A spooled segment's bytes. Not authenticated, as Trino's: the python client fetches
/// segments without credentials, which may be meant for the coordinator alone; the
/// segment's identifier and the key in its header are what reach it.
async fn download_segment(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    Path(segment): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Refusal> {
    let store = endpoint.segment_store()?;
    let bytes = store
        .download(&segment, segment_key(&headers))
        .map_err(|_| segment_not_found(&segment))?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

/// Deletes a spooled segment its client has read.
async fn acknowledge_segment(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    Path(segment): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, Refusal> {
    endpoint
        .segment_store()?
        .acknowledge(&segment, segment_key(&headers))
        .map_err(|_| segment_not_found(&segment))?;
    Ok(StatusCode::OK)
}

fn segment_not_found(segment: &str) -> Refusal {
    Refusal::NotFound(format!(
        "spooled segment {segment} not found: acknowledged, expired, or never spooled"
    ))
}

async fn cancel_query(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, Refusal> {
    endpoint
        .query_for(&caller, &id)?
        .cancel(CancelReason::Client);
    endpoint.forget_segments(&id);
    Ok(StatusCode::NO_CONTENT)
}

async fn query_info(
    State(endpoint): State<Arc<TrinoEndpoint>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    let query = endpoint.query_for(&caller, &id)?;
    Ok(axum::Json(json!({
        "queryId": query.id,
        "query": query.sql,
        "session": {"user": query.user},
        "state": if query.is_cancelled() {
            "FAILED"
        } else if query.is_finished() {
            "FINISHED"
        } else {
            query.live_state().as_str()
        },
        "elapsedTimeMillis": query.created.elapsed().as_millis() as u64,
    }))
    .into_response())
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
