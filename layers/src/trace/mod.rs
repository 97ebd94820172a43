//! Trace context across RPCs: a client span per call that travels as W3C `traceparent`, and a
//! server span that continues it.
//!
//! Both use OpenTelemetry's global text-map propagator and the current `tracing` span's
//! OpenTelemetry context (via `tracing-opentelemetry`); a process that installs neither still
//! gets its `tracing` spans, just no propagation.
//!
//! ```
//! use sqe_layers::trace::{TraceExtractLayer, TraceLayer};
//!
//! let client = TraceLayer::new("http://127.0.0.1:50052");
//! let server = TraceExtractLayer::new("worker");
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Request, Response};
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt;
use pin_project::{pin_project, pinned_drop};
use tonic::body::Body;
use tower::{Layer, Service};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use tonic::Code;

use crate::call_end::{CallObserver, observe_response};

struct HeaderInjector<'a>(&'a mut HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct HeaderExtractor<'a>(&'a HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

/// Writes `span`'s trace context into `headers` with the global propagator.
pub fn inject_context(span: &Span, headers: &mut HeaderMap) {
    let cx = span.context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&cx, &mut HeaderInjector(headers))
    });
}

/// `span`'s trace context as headers of their own (empty outside any trace): for callers that
/// hand them to something that makes the RPCs itself, such as datafusion-distributed's
/// passthrough headers.
pub fn context_headers(span: &Span) -> HeaderMap {
    let mut headers = HeaderMap::new();
    inject_context(span, &mut headers);
    headers
}

/// The span's trace id as 32 hex digits; `None` when the process has no trace layer.
pub fn trace_id(span: &Span) -> Option<String> {
    let id = span.context().span().span_context().trace_id();
    (id != opentelemetry::trace::TraceId::INVALID).then(|| id.to_string())
}

/// Reads a caller's trace context from `headers` with the global propagator.
pub fn extract_context(headers: &HeaderMap) -> opentelemetry::Context {
    opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)))
}

/// `/package.Service/Method` as OpenTelemetry names RPC spans: `package.Service/Method`.
fn span_name(path: &str) -> &str {
    path.strip_prefix('/').unwrap_or(path)
}

/// Which side of a call a span is: they judge codes differently.
#[derive(Debug, Clone, Copy)]
enum Side {
    Client,
    Server,
}

impl Side {
    /// Whether `code` makes the span an error. A caller going away (`Cancelled`) is not one;
    /// a server only fails for its own faults (OpenTelemetry's gRPC conventions), a client for
    /// any other code.
    fn failed(self, code: Code) -> bool {
        match self {
            _ if matches!(code, Code::Ok | Code::Cancelled) => false,
            Side::Client => true,
            Side::Server => matches!(
                code,
                Code::Unknown
                    | Code::DeadlineExceeded
                    | Code::Unimplemented
                    | Code::Internal
                    | Code::Unavailable
                    | Code::DataLoss
            ),
        }
    }
}

/// Ends a call's span with the call: records its final gRPC code, and runs each poll of a
/// streamed response body inside the span (so work the body drives is its child).
struct SpanObserver(Span, Side);

impl CallObserver for SpanObserver {
    fn polling<R>(&self, poll: impl FnOnce() -> R) -> R {
        self.0.in_scope(poll)
    }

    fn ended(self, code: Code) {
        self.0.record("rpc.grpc.status_code", code as i32);
        if self.1.failed(code) {
            self.0.record("otel.status_code", "ERROR");
        }
    }
}

/// Client side: a `grpc.client` span per call (method, peer, final status, attempts) whose
/// context is injected into the request. The span is a child of the current span; in a task
/// spawned without one (datafusion-distributed sends tasks from its own tasks), of the trace
/// context the request already carries (the query's, set as a passthrough header). It lasts
/// until the response stream ends. A call with neither is not traced.
#[derive(Debug, Clone)]
pub struct TraceLayer {
    target: Arc<str>,
}

impl TraceLayer {
    pub fn new(target: impl Into<Arc<str>>) -> Self {
        Self {
            target: target.into(),
        }
    }
}

impl<S> Layer<S> for TraceLayer {
    type Service = Trace<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Trace {
            inner,
            target: Arc::clone(&self.target),
        }
    }
}

/// See [`TraceLayer`].
#[derive(Debug, Clone)]
pub struct Trace<S> {
    inner: S,
    target: Arc<str>,
}

/// Whether `span` belongs to a trace (a process without a trace layer has none).
fn in_trace(span: &Span) -> bool {
    span.context().span().span_context().is_valid()
}

impl<S, B> Service<Request<B>> for Trace<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Error: std::fmt::Display,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // Only calls made for a traced piece of work are traced: background calls (heartbeats,
        // probes) would each start a trace of their own.
        let parent = if in_trace(&Span::current()) {
            None
        } else {
            let carried = extract_context(request.headers());
            if !carried.span().span_context().is_valid() {
                let inner = self.inner.call(request);
                return ResponseFuture { inner, span: None };
            }
            Some(carried)
        };
        let method = request.uri().path().to_string();
        let span = tracing::info_span!(
            "grpc.client",
            otel.name = span_name(&method),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            rpc.system = "grpc",
            rpc.method = %method,
            server.address = %self.target,
            rpc.grpc.status_code = tracing::field::Empty,
            rpc.attempts = 1u32,
            error = tracing::field::Empty,
        );
        if let Some(carried) = parent
            && let Err(e) = span.set_parent(carried)
        {
            tracing::debug!(error = %e, "could not continue the request's trace");
        }
        inject_context(&span, request.headers_mut());
        let inner = span.in_scope(|| self.inner.call(request));
        ResponseFuture {
            inner,
            span: Some(SpanObserver(span, Side::Client)),
        }
    }
}

/// Response future of [`Trace`] (and of [`TraceExtract`]): hands the span to the response;
/// dropped before one, ends it as `Cancelled`.
#[pin_project(PinnedDrop)]
pub struct ResponseFuture<F> {
    #[pin]
    inner: F,
    span: Option<SpanObserver>,
}

#[pinned_drop]
impl<F> PinnedDrop for ResponseFuture<F> {
    fn drop(self: Pin<&mut Self>) {
        if let Some(span) = self.project().span.take() {
            span.ended(Code::Cancelled);
        }
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
    E: std::fmt::Display,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(span) = this.span.take() else {
            return this.inner.poll(cx);
        };
        let polled = span.0.in_scope(|| this.inner.poll(cx));
        match polled {
            Poll::Pending => {
                *this.span = Some(span);
                Poll::Pending
            }
            Poll::Ready(Ok(response)) => Poll::Ready(Ok(observe_response(response, span))),
            Poll::Ready(Err(e)) => {
                // No response: the connection failed (or the service did).
                span.0.record("error", tracing::field::display(&e));
                span.ended(Code::Unavailable);
                Poll::Ready(Err(e))
            }
        }
    }
}

/// Server side: a `grpc.server` span per request that carries a trace context, child of the
/// caller's span, lasting until the response stream ends.
#[derive(Debug, Clone)]
pub struct TraceExtractLayer {
    node: Arc<str>,
}

impl TraceExtractLayer {
    /// `node` names this server in its spans.
    pub fn new(node: impl Into<Arc<str>>) -> Self {
        Self { node: node.into() }
    }
}

impl<S> Layer<S> for TraceExtractLayer {
    type Service = TraceExtract<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TraceExtract {
            inner,
            node: Arc::clone(&self.node),
        }
    }
}

/// See [`TraceExtractLayer`].
#[derive(Debug, Clone)]
pub struct TraceExtract<S> {
    inner: S,
    node: Arc<str>,
}

impl<S, B> Service<Request<B>> for TraceExtract<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Error: std::fmt::Display,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // A request without a trace context (a heartbeat, a probe) gets no span: it would be a
        // trace of its own.
        let parent = extract_context(request.headers());
        if !parent.span().span_context().is_valid() {
            let inner = self.inner.call(request);
            return ResponseFuture { inner, span: None };
        }
        let method = request.uri().path().to_string();
        let span = tracing::info_span!(
            "grpc.server",
            otel.name = span_name(&method),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            rpc.system = "grpc",
            rpc.method = %method,
            node = %self.node,
            // Filled by a layer below that knows the protocol (a worker's task key).
            sqe.stage = tracing::field::Empty,
            sqe.task = tracing::field::Empty,
            sqe.partitions = tracing::field::Empty,
            // For log lines written inside the span (JSON logs show span fields).
            trace_id = %parent.span().span_context().trace_id(),
            rpc.grpc.status_code = tracing::field::Empty,
            error = tracing::field::Empty,
        );
        if let Err(e) = span.set_parent(parent) {
            tracing::debug!(error = %e, "could not continue the caller's trace");
        }
        let inner = span.in_scope(|| self.inner.call(request));
        ResponseFuture {
            inner,
            span: Some(SpanObserver(span, Side::Server)),
        }
    }
}

#[cfg(test)]
mod tests;
