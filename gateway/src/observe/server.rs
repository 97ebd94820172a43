//! `/metrics`, `/healthz` and `/readyz`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

/// A process that can be watched: its metrics now, and whether it should get work.
pub(crate) trait Observed: Send + Sync + 'static {
    fn metrics(&self) -> String;
    /// `Err(reason)` when it should not get work yet (or any more).
    fn ready(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>>;
}

async fn metrics(State(observed): State<Arc<dyn Observed>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        observed.metrics(),
    )
}

/// Alive: it answers.
async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(observed): State<Arc<dyn Observed>>) -> impl IntoResponse {
    match observed.ready().await {
        Ok(()) => (StatusCode::OK, "ready\n".to_string()),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {reason}\n"),
        ),
    }
}

/// The routes of the observability port.
pub(crate) fn observability_router(observed: Arc<dyn Observed>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(observed)
}
