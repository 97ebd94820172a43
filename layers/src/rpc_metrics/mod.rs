//! Client side: calls counted by method, final gRPC code and attempt.
//!
//! Below the retry layer each attempt passes through separately, carrying its
//! [`Attempt`](crate::retry::Attempt) number, so a call retried once counts as attempt 1 with
//! `Unavailable` and attempt 2 with its real outcome. A streamed call counts when its stream
//! ends (its trailers' code), a call dropped before its end as `Cancelled`, and a transport
//! failure (no connection) as `Unavailable`, the code a gRPC client reports for it.
//!
//! ```
//! use sqe_layers::rpc_metrics::{RpcCounts, RpcMetricsLayer};
//!
//! let counts = RpcCounts::default();
//! let layer = RpcMetricsLayer::new(counts.clone());
//! assert!(counts.snapshot().is_empty());
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use parking_lot::Mutex;
use std::task::{Context, Poll};

use http::{Request, Response};
use pin_project::{pin_project, pinned_drop};
use tonic::Code;
use tonic::body::Body;
use tower::{Layer, Service};

use crate::call_end::{CallObserver, observe_response};
use crate::retry::Attempt;

#[cfg(test)]
mod tests;

/// One counted outcome: method path, final code, attempt number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RpcKey {
    pub method: String,
    pub code: Code,
    pub attempt: u32,
}

/// gRPC's canonical name of `code` (`OK`, `UNAVAILABLE`, ...), as metrics label it.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// Counts shared by every service of a layer (clones share them).
#[derive(Debug, Clone, Default)]
pub struct RpcCounts(Arc<Mutex<HashMap<RpcKey, u64>>>);

impl RpcCounts {
    fn add(&self, key: RpcKey) {
        {
            let mut counts = self.0.lock();
            *counts.entry(key).or_default() += 1;
        }
    }

    /// Every outcome seen so far, ordered by method, code number, attempt.
    pub fn snapshot(&self) -> Vec<(RpcKey, u64)> {
        let mut all: Vec<(RpcKey, u64)> =
            self.0.lock().iter().map(|(k, v)| (k.clone(), *v)).collect();
        all.sort_by(|(a, _), (b, _)| {
            (&a.method, a.code as i32, a.attempt).cmp(&(&b.method, b.code as i32, b.attempt))
        });
        all
    }
}

/// See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct RpcMetricsLayer {
    counts: RpcCounts,
}

impl RpcMetricsLayer {
    pub fn new(counts: RpcCounts) -> Self {
        Self { counts }
    }
}

impl<S> Layer<S> for RpcMetricsLayer {
    type Service = RpcMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RpcMetrics {
            inner,
            counts: self.counts.clone(),
        }
    }
}

/// See [`RpcMetricsLayer`].
#[derive(Debug, Clone)]
pub struct RpcMetrics<S> {
    inner: S,
    counts: RpcCounts,
}

/// Counts one attempt when it ends.
struct Counter {
    counts: RpcCounts,
    method: String,
    attempt: u32,
}

impl CallObserver for Counter {
    fn ended(self, code: Code) {
        self.counts.add(RpcKey {
            method: self.method,
            code,
            attempt: self.attempt,
        });
    }
}

impl<S, B> Service<Request<B>> for RpcMetrics<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = RpcMetricsFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let counter = Counter {
            counts: self.counts.clone(),
            method: request.uri().path().to_string(),
            attempt: request.extensions().get::<Attempt>().map_or(1, |a| a.0),
        };
        RpcMetricsFuture {
            inner: self.inner.call(request),
            counter: Some(counter),
        }
    }
}

/// Response future of [`RpcMetrics`]: hands the count over to the response; dropped before
/// it has one (the caller gave up), counts the attempt as `Cancelled`.
#[pin_project(PinnedDrop)]
pub struct RpcMetricsFuture<F> {
    #[pin]
    inner: F,
    counter: Option<Counter>,
}

impl<F, E> Future for RpcMetricsFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = std::task::ready!(this.inner.poll(cx));
        let Some(counter) = this.counter.take() else {
            return Poll::Ready(result);
        };
        Poll::Ready(match result {
            Ok(response) => Ok(observe_response(response, counter)),
            Err(e) => {
                counter.ended(Code::Unavailable);
                Err(e)
            }
        })
    }
}

#[pinned_drop]
impl<F> PinnedDrop for RpcMetricsFuture<F> {
    fn drop(self: Pin<&mut Self>) {
        if let Some(counter) = self.project().counter.take() {
            counter.ended(Code::Cancelled);
        }
    }
}
