//! The web UI at `/ui` on the Trino port: static pages embedded in the binary and a JSON API
//! they poll. A browser logs in with the port's own client authentication (a password, or any
//! user name when authentication is off, as the Trino endpoint takes `X-Trino-User`) and gets
//! an SQE-issued token in an `HttpOnly`, `SameSite=Strict` cookie; what it sees and may kill
//! follows `system.runtime`'s rules (its own queries, or all for `admin_users`).

mod views;

use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;
use sqe_engine::history::{KillError, Viewer};
use sqe_engine::queries::Queries;

use crate::client_auth::ClientAuth;
use crate::trino::PeerAddr;

/// The cookie that carries a browser's token.
const SESSION_COOKIE: &str = "sqe_ui_session";
/// How long a browser stays logged in (the token's own expiry may be sooner).
const SESSION_MAX_AGE_SECS: u64 = 12 * 3600;

/// What the UI serves from.
pub(crate) struct Ui {
    queries: Arc<Queries>,
    auth: Arc<ClientAuth>,
    /// The port serves TLS: the cookie is `Secure`.
    tls: bool,
    /// `[coordinator] ui_trace_url`: a URL with `{trace_id}`.
    trace_url: Option<String>,
}

impl Ui {
    pub(crate) fn new(
        queries: Arc<Queries>,
        auth: Arc<ClientAuth>,
        tls: bool,
        trace_url: Option<String>,
    ) -> Arc<Self> {
        Arc::new(Self {
            queries,
            auth,
            tls,
            trace_url,
        })
    }
}

/// The UI's routes, to merge into the Trino port's router.
pub(crate) fn ui_router(ui: Arc<Ui>) -> Router {
    Router::new()
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/app.js", get(script))
        .route("/ui/style.css", get(style))
        .route("/ui/api/login", post(login))
        .route("/ui/api/logout", post(logout))
        .route("/ui/api/cluster", get(cluster))
        .route("/ui/api/queries", get(queries))
        .route("/ui/api/queries/{id}", get(query))
        .route("/ui/api/queries/{id}/kill", post(kill))
        .with_state(ui)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

async fn index() -> Response {
    asset(
        "text/html; charset=utf-8",
        include_str!("assets/index.html"),
    )
}

async fn script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/app.js"),
    )
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/style.css"))
}

/// An API error: a status and a JSON `{"error": ...}` the page shows.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(json!({"error": self.1}))).into_response()
    }
}

type ApiResult = Result<Response, ApiError>;

/// The logged-in browser's user, as `system.runtime` sees it.
struct Browser(Viewer);

impl FromRequestParts<Arc<Ui>> for Browser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, ui: &Arc<Ui>) -> Result<Self, ApiError> {
        let token = session_token(&parts.headers)
            .ok_or_else(|| ApiError(StatusCode::UNAUTHORIZED, "log in".into()))?;
        let principal = ui
            .auth
            .verify(&token)
            .map_err(|_| ApiError(StatusCode::UNAUTHORIZED, "the session has expired".into()))?;
        Ok(Browser(ui.queries.engine().viewer(&principal.user)))
    }
}

/// The session token from the cookie, else from a bearer `Authorization` (scripts).
fn session_token(headers: &HeaderMap) -> Option<String> {
    let from_cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.to_string());
    from_cookie.or_else(|| {
        headers
            .get(header::AUTHORIZATION)?
            .to_str()
            .ok()?
            .strip_prefix("Bearer ")
            .map(str::to_string)
    })
}

fn session_cookie(ui: &Ui, token: &str, max_age: u64) -> String {
    let secure = if ui.tls { "; Secure" } else { "" };
    format!(
        "{SESSION_COOKIE}={token}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    )
}

#[derive(Deserialize)]
struct Login {
    #[serde(default)]
    user: String,
    #[serde(default)]
    password: String,
    /// A bearer token (of the configured identity provider, or one SQE issued) instead of a
    /// user and password: how a deployment with only external JWTs logs in.
    #[serde(default)]
    token: String,
}

/// The caller's address, when the listener records it (failed logins are held off by it).
struct Source(Option<IpAddr>);

impl FromRequestParts<Arc<Ui>> for Source {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &Arc<Ui>) -> Result<Self, Self::Rejection> {
        Ok(Source(
            parts
                .extensions
                .get::<ConnectInfo<PeerAddr>>()
                .map(|info| info.0.0.ip()),
        ))
    }
}

async fn login(
    State(ui): State<Arc<Ui>>,
    Source(source): Source,
    axum::Json(form): axum::Json<Login>,
) -> ApiResult {
    let bearer = form.token.trim();
    let (principal, token) = if bearer.is_empty() {
        let user = form.user.trim();
        if user.is_empty() {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                "a user name or a token is needed".into(),
            ));
        }
        let principal = ui
            .auth
            .login(user, &form.password, source)
            .await
            .map_err(|e| ApiError(StatusCode::UNAUTHORIZED, e.to_string()))?;
        let token = ui
            .auth
            .issue(&principal)
            .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        (principal, token)
    } else {
        // Kept as given: every page checks it again, so its own expiry holds.
        let principal = ui
            .auth
            .verify(bearer)
            .map_err(|e| ApiError(StatusCode::UNAUTHORIZED, e.to_string()))?;
        (principal, bearer.to_string())
    };
    Ok((
        [(
            header::SET_COOKIE,
            session_cookie(&ui, &token, SESSION_MAX_AGE_SECS),
        )],
        axum::Json(json!({"user": principal.user})),
    )
        .into_response())
}

async fn logout(State(ui): State<Arc<Ui>>) -> Response {
    (
        StatusCode::NO_CONTENT,
        [(header::SET_COOKIE, session_cookie(&ui, "", 0))],
    )
        .into_response()
}

async fn cluster(State(ui): State<Arc<Ui>>, Browser(viewer): Browser) -> ApiResult {
    Ok(axum::Json(views::cluster(ui.queries.engine(), &viewer)).into_response())
}

async fn queries(State(ui): State<Arc<Ui>>, Browser(viewer): Browser) -> ApiResult {
    Ok(axum::Json(views::queries(ui.queries.engine(), &viewer)).into_response())
}

async fn query(
    State(ui): State<Arc<Ui>>,
    Browser(viewer): Browser,
    Path(id): Path<String>,
) -> ApiResult {
    let engine = ui.queries.engine();
    let record = engine
        .history()
        .get(&id)
        .filter(|r| viewer.sees(r))
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("query {id} not found")))?;
    Ok(axum::Json(views::query(
        engine,
        &record,
        &viewer,
        ui.trace_url.as_deref(),
    ))
    .into_response())
}

async fn kill(
    State(ui): State<Arc<Ui>>,
    Browser(viewer): Browser,
    Path(id): Path<String>,
) -> ApiResult {
    let message = format!("killed from the web UI by {}", viewer.user);
    match ui
        .queries
        .engine()
        .history()
        .kill(&id, &viewer, Some(&message))
    {
        Ok(()) => Ok(StatusCode::NO_CONTENT.into_response()),
        Err(KillError::NotFound) => Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("query {id} not found"),
        )),
        // Another user's query is not shown either: the same answer as no query at all.
        Err(KillError::NotOwner) => Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("query {id} not found"),
        )),
        Err(KillError::AlreadyEnded(state)) => Err(ApiError(
            StatusCode::CONFLICT,
            format!("query {id} has already ended ({})", state.name()),
        )),
    }
}

#[cfg(test)]
mod tests;
