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
use pin_project::pin_project;
use tonic::body::Body;
use tower::{Layer, Service};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::status::grpc_status_of;

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

/// Reads a caller's trace context from `headers` with the global propagator.
pub fn extract_context(headers: &HeaderMap) -> opentelemetry::Context {
    opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)))
}

/// Client side: a `grpc.client` span per call (method, peer, final status, attempts) whose
/// context is injected into the request.
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
        let method = request.uri().path().to_string();
        let span = tracing::info_span!(
            "grpc.client",
            otel.name = %method,
            otel.kind = "client",
            rpc.system = "grpc",
            rpc.method = %method,
            server.address = %self.target,
            rpc.grpc.status_code = tracing::field::Empty,
            rpc.attempts = 1u32,
            error = tracing::field::Empty,
        );
        inject_context(&span, request.headers_mut());
        let inner = span.in_scope(|| self.inner.call(request));
        ResponseFuture { inner, span }
    }
}

/// Response future of [`Trace`] (and of [`TraceExtract`]).
#[pin_project]
pub struct ResponseFuture<F> {
    #[pin]
    inner: F,
    span: Span,
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
    E: std::fmt::Display,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let _entered = this.span.enter();
        let result = std::task::ready!(this.inner.poll(cx));
        match &result {
            // A failed call carries its status in the headers; a started stream reports in trailers.
            Ok(response) => {
                let code = grpc_status_of(response.headers()).map_or(0, |s| s.code() as i32);
                this.span.record("rpc.grpc.status_code", code);
            }
            Err(e) => {
                this.span.record("error", tracing::field::display(e));
            }
        }
        Poll::Ready(result)
    }
}

/// Server side: a `grpc.server` span per request, child of the caller's span when the request
/// carries a trace context.
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
        let method = request.uri().path().to_string();
        let span = tracing::info_span!(
            "grpc.server",
            otel.name = %method,
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.method = %method,
            node = %self.node,
            rpc.grpc.status_code = tracing::field::Empty,
            error = tracing::field::Empty,
        );
        let parent = extract_context(request.headers());
        if let Err(e) = span.set_parent(parent) {
            tracing::debug!(error = %e, "could not continue the caller's trace");
        }
        let inner = span.in_scope(|| self.inner.call(request));
        ResponseFuture { inner, span }
    }
}

#[cfg(test)]
mod tests;
