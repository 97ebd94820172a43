//! Spawning tasks that keep their caller's span: what a spawned task logs or traces stays in
//! the query (or request) that started it. The project's one way to spawn (clippy's
//! `disallowed-methods` refuses a bare `tokio::spawn`).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let span = tracing::info_span!("query", query_id = "q1");
//! let task = span.in_scope(|| sqe_layers::task::spawn(async { tracing::info!("in the query's span") }));
//! task.await.ok();
//! # }
//! ```

use std::future::Future;

use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tracing::Instrument;

/// Spawns `future` on the current runtime, inside the current span.
#[allow(clippy::disallowed_methods)] // the one place that spawns
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(future.instrument(tracing::Span::current()))
}

/// Spawns `future` on the runtime of `handle`, inside the current span.
pub fn spawn_on<F>(handle: &Handle, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    handle.spawn(future.instrument(tracing::Span::current()))
}
