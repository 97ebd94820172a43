//! Tells a listener the moment a call to a peer fails because the peer could not be reached
//! (the channel's own error: refused, reset, no route), or its answer breaks off mid-stream (the
//! peer was killed while streaming), so whoever routes work to peers can stop at once instead
//! of waiting for its next probe or a missed heartbeat. Answers the peer sent, errors included
//! (a status in its trailers), are not reported: the peer is there.
//!
//! ```
//! use std::sync::Arc;
//! use sqe_layers::peer_down::{PeerDown, PeerDownLayer, PeerFailures};
//!
//! struct Log;
//! impl PeerDown for Log {
//!     fn unreachable(&self, target: &str, error: &str) {
//!         eprintln!("{target} is down: {error}");
//!     }
//! }
//! let failures = PeerFailures::default();
//! let log: Arc<dyn PeerDown> = Arc::new(Log);
//! failures.listen(Arc::downgrade(&log));
//! let layer = PeerDownLayer::new(failures, "http://w1:50052");
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use http::Response;
use parking_lot::RwLock;
use pin_project::pin_project;
use tonic::body::Body;
use tower::{Layer, Service};

#[cfg(test)]
pub(crate) mod tests;

/// Whoever wants to know that a peer could not be reached.
pub trait PeerDown: Send + Sync {
    /// A call to `target` failed before the peer answered, with `error`.
    fn unreachable(&self, target: &str, error: &str);
}

/// Where the channels of a stack report unreachable peers; the listener can be set after the
/// channels exist (the worker pool is built from them). Without one, reports go nowhere.
#[derive(Clone, Default)]
pub struct PeerFailures(Arc<RwLock<Option<Weak<dyn PeerDown>>>>);

impl std::fmt::Debug for PeerFailures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerFailures")
            .field("listening", &self.0.read().is_some())
            .finish()
    }
}

impl PeerFailures {
    /// Reports go to `listener` from now on (held weakly: a dropped listener hears nothing).
    pub fn listen(&self, listener: Weak<dyn PeerDown>) {
        *self.0.write() = Some(listener);
    }

    fn report(&self, target: &str, error: &str) {
        let listener = self.0.read().as_ref().and_then(Weak::upgrade);
        if let Some(listener) = listener {
            listener.unreachable(target, error);
        }
    }
}

/// See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct PeerDownLayer {
    failures: PeerFailures,
    target: Arc<str>,
}

impl PeerDownLayer {
    /// Reports failed calls to `target` to `failures`.
    pub fn new(failures: PeerFailures, target: &str) -> Self {
        Self {
            failures,
            target: Arc::from(target),
        }
    }
}

impl<S> Layer<S> for PeerDownLayer {
    type Service = PeerDownService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PeerDownService {
            inner,
            failures: self.failures.clone(),
            target: Arc::clone(&self.target),
        }
    }
}

/// See [`PeerDownLayer`].
#[derive(Debug, Clone)]
pub struct PeerDownService<S> {
    inner: S,
    failures: PeerFailures,
    target: Arc<str>,
}

impl<S, R> Service<R> for PeerDownService<S>
where
    S: Service<R, Response = Response<Body>>,
    S::Error: std::fmt::Display,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = PeerDownFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        PeerDownFuture {
            inner: self.inner.call(request),
            failures: self.failures.clone(),
            target: Arc::clone(&self.target),
        }
    }
}

/// Response future of [`PeerDownService`].
#[pin_project]
pub struct PeerDownFuture<F> {
    #[pin]
    inner: F,
    failures: PeerFailures,
    target: Arc<str>,
}

impl<F, E> Future for PeerDownFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
    E: std::fmt::Display,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = std::task::ready!(this.inner.poll(cx));
        Poll::Ready(match result {
            Ok(answer) => {
                let (failures, target) = (this.failures.clone(), Arc::clone(this.target));
                Ok(answer.map(|body| {
                    Body::new(ReportingBody {
                        inner: body,
                        failures,
                        target,
                    })
                }))
            }
            Err(error) => {
                this.failures.report(this.target, &error.to_string());
                Err(error)
            }
        })
    }
}

/// Whether a body's failure is its connection's (an I/O error down its causes: reset,
/// broken pipe, closed), not a stream the live peer reset or refused (a cancelled task, h2's
/// flow rules): only the first says the peer is gone.
fn connection_lost(failure: &tonic::Status) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(failure);
    while let Some(e) = cause {
        if e.is::<std::io::Error>() {
            return true;
        }
        cause = e.source();
    }
    false
}

/// An answer's body that reports its peer when its connection breaks off mid-answer (a status
/// the peer sent arrives as trailers, and a stream reset by a live peer is not reported).
#[pin_project]
struct ReportingBody {
    #[pin]
    inner: Body,
    failures: PeerFailures,
    target: Arc<str>,
}

impl http_body::Body for ReportingBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let frame = std::task::ready!(this.inner.poll_frame(cx));
        if let Some(Err(failure)) = &frame
            && connection_lost(failure)
        {
            this.failures.report(this.target, failure.message());
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
