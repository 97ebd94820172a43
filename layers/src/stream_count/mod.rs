//! Server side: how many calls of one RPC are still running, streamed responses included.
//!
//! A call counts from the moment it reaches the service until its response body is dropped:
//! finished, failed, or abandoned because the client went away (a cancelled query's stream is
//! reset, and the server drops its body). For a streaming RPC whose body drives the work — a
//! worker's task partitions — the count is the work still running, and returns to zero when
//! every caller has ended or cancelled.
//!
//! The layer never fails a request: its service has the inner service's error type.
//!
//! ```
//! use sqe_layers::stream_count::{OpenStreams, StreamCountLayer};
//!
//! let open = OpenStreams::default();
//! let layer = StreamCountLayer::new("/worker.WorkerService/ExecuteTask", open.clone());
//! assert_eq!(open.current(), 0);
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Frame, SizeHint};
use pin_project::pin_project;
use tonic::Status;
use tonic::body::Body;
use tower::{Layer, Service};

#[cfg(test)]
mod tests;

/// Calls currently open; clones share one count.
#[derive(Debug, Clone, Default)]
pub struct OpenStreams(Arc<AtomicUsize>);

impl OpenStreams {
    pub fn current(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn open(&self) -> OpenGuard {
        self.0.fetch_add(1, Ordering::Relaxed);
        OpenGuard(self.clone())
    }
}

/// Counts one call while alive.
#[derive(Debug)]
struct OpenGuard(OpenStreams);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        (self.0).0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct StreamCountLayer {
    path: &'static str,
    open: OpenStreams,
}

impl StreamCountLayer {
    /// Counts the calls whose request path is `path` (`/package.Service/Method`) in `open`.
    pub fn new(path: &'static str, open: OpenStreams) -> Self {
        Self { path, open }
    }
}

impl<S> Layer<S> for StreamCountLayer {
    type Service = StreamCount<S>;

    fn layer(&self, inner: S) -> Self::Service {
        StreamCount {
            inner,
            path: self.path,
            open: self.open.clone(),
        }
    }
}

/// See [`StreamCountLayer`].
#[derive(Debug, Clone)]
pub struct StreamCount<S> {
    inner: S,
    path: &'static str,
    open: OpenStreams,
}

impl<S, B> Service<Request<B>> for StreamCount<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = StreamCountFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let guard = (request.uri().path() == self.path).then(|| self.open.open());
        StreamCountFuture {
            future: self.inner.call(request),
            guard,
        }
    }
}

/// Response future of [`StreamCount`]: hands the call's count over to the response body.
#[pin_project]
pub struct StreamCountFuture<F> {
    #[pin]
    future: F,
    guard: Option<OpenGuard>,
}

impl<F, E> Future for StreamCountFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = std::task::ready!(this.future.poll(cx))?;
        Poll::Ready(Ok(match this.guard.take() {
            Some(guard) => response.map(|body| {
                Body::new(CountedBody {
                    body,
                    _guard: guard,
                })
            }),
            None => response,
        }))
    }
}

/// A response body that keeps its call counted until it is dropped.
struct CountedBody {
    body: Body,
    _guard: OpenGuard,
}

impl http_body::Body for CountedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
