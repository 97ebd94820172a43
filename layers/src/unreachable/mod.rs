//! Answers a call whose peer could not be reached with a gRPC `UNAVAILABLE` status that names
//! the peer. Without it tonic turns the channel's error into a status whose message is the
//! innermost cause ("tcp connect error") and whose peer address is only in a `Debug` dump of its
//! source: a caller could not say which node is gone without printing internals. A peer that
//! stops in the middle of its answer (killed, its connection reset) is named the same way: the
//! answer's stream ends with `UNAVAILABLE` instead of an anonymous transport error. Statuses the
//! peer sent (in its trailers) are its answer and pass untouched.
//!
//! ```
//! use sqe_layers::unreachable::UnreachableLayer;
//!
//! let layer = UnreachableLayer::new("http://w1:50052");
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Response;
use pin_project::pin_project;
use tonic::Status;
use tonic::body::Body;
use tower::{Layer, Service};

use crate::status::{error_chain, response};

#[cfg(test)]
mod tests;

/// See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct UnreachableLayer {
    target: Arc<str>,
}

impl UnreachableLayer {
    /// Names `target` in the status of calls that could not reach it.
    pub fn new(target: &str) -> Self {
        Self {
            target: Arc::from(target),
        }
    }
}

impl<S> Layer<S> for UnreachableLayer {
    type Service = Unreachable<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Unreachable {
            inner,
            target: Arc::clone(&self.target),
        }
    }
}

/// See [`UnreachableLayer`].
#[derive(Debug, Clone)]
pub struct Unreachable<S> {
    inner: S,
    target: Arc<str>,
}

impl<S, R> Service<R> for Unreachable<S>
where
    S: Service<R, Response = Response<Body>>,
    S::Error: std::error::Error,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = UnreachableFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        UnreachableFuture {
            inner: self.inner.call(request),
            target: Arc::clone(&self.target),
        }
    }
}

/// Response future of [`Unreachable`].
#[pin_project]
pub struct UnreachableFuture<F> {
    #[pin]
    inner: F,
    target: Arc<str>,
}

impl<F, E> Future for UnreachableFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
    E: std::error::Error,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        Poll::Ready(match std::task::ready!(this.inner.poll(cx)) {
            Ok(answer) => {
                let target = Arc::clone(this.target);
                Ok(answer.map(|body| {
                    Body::new(NamedBody {
                        inner: body,
                        target,
                    })
                }))
            }
            Err(error) => Ok(response(Status::unavailable(format!(
                "{} could not be reached: {}",
                this.target,
                error_chain(&error)
            )))),
        })
    }
}

/// An answer's body whose transport failures name the peer.
#[pin_project]
struct NamedBody {
    #[pin]
    inner: Body,
    target: Arc<str>,
}

impl http_body::Body for NamedBody {
    type Data = bytes::Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        match std::task::ready!(this.inner.poll_frame(cx)) {
            Some(Err(failure)) => Poll::Ready(Some(Err(Status::unavailable(format!(
                "{} stopped answering: {}",
                this.target,
                failure.message()
            ))))),
            other => Poll::Ready(other),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
