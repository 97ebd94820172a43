//! A deadline for each attempt, up to the response headers.
//!
//! The deadline is also sent as `grpc-timeout` (unless the caller set one), so the server can
//! give up too. A streamed response body is not bounded here: once headers arrive the layer is
//! done, and long result streams are bounded by the query's own deadline instead.
//!
//! ```
//! use std::time::Duration;
//! use sqe_layers::timeout::TimeoutLayer;
//!
//! let layer = TimeoutLayer::new(Duration::from_secs(30));
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{HeaderValue, Request, Response};
use pin_project::pin_project;
use tokio::time::Sleep;
use tonic::Status;
use tonic::body::Body;
use tower::{Layer, Service};

use crate::status::response;

const GRPC_TIMEOUT: &str = "grpc-timeout";

/// See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    timeout: Duration,
    header: Option<HeaderValue>,
}

impl TimeoutLayer {
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            header: grpc_timeout_value(timeout),
        }
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timeout {
            inner,
            timeout: self.timeout,
            header: self.header.clone(),
        }
    }
}

/// See [`TimeoutLayer`].
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
    header: Option<HeaderValue>,
}

/// `grpc-timeout` in milliseconds (the format allows at most 8 digits per unit).
fn grpc_timeout_value(timeout: Duration) -> Option<HeaderValue> {
    let ms = timeout.as_millis().clamp(1, 99_999_999);
    HeaderValue::from_str(&format!("{ms}m")).ok()
}

impl<S, B> Service<Request<B>> for Timeout<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        if !request.headers().contains_key(GRPC_TIMEOUT)
            && let Some(value) = &self.header
        {
            request.headers_mut().insert(GRPC_TIMEOUT, value.clone());
        }
        ResponseFuture {
            inner: self.inner.call(request),
            sleep: tokio::time::sleep(self.timeout),
            timeout: self.timeout,
        }
    }
}

/// Response future of [`Timeout`].
#[pin_project]
pub struct ResponseFuture<F> {
    #[pin]
    inner: F,
    #[pin]
    sleep: Sleep,
    timeout: Duration,
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(result) = this.inner.poll(cx) {
            return Poll::Ready(result);
        }
        match this.sleep.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Ok(response(Status::deadline_exceeded(format!(
                "no response within {:?}",
                this.timeout
            ))))),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;
    use tower::ServiceExt;
    use tower_test::mock;

    use super::*;
    use crate::status::grpc_status_of;

    #[tokio::test(start_paused = true)]
    async fn fires_when_headers_do_not_come_in_time() -> Result<(), tower::BoxError> {
        let (mock, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let mut svc = TimeoutLayer::new(Duration::from_secs(2)).layer(mock);
        let call = tokio::spawn(svc.ready().await?.call(Request::new(Body::empty())));
        let (request, _reply) = handle.next_request().await.ok_or("no request")?;
        assert_eq!(
            request
                .headers()
                .get(GRPC_TIMEOUT)
                .and_then(|v| v.to_str().ok()),
            Some("2000m")
        );
        let started = tokio::time::Instant::now();
        let response = call.await??;
        assert_eq!(
            grpc_status_of(response.headers()).map(|s| s.code()),
            Some(Code::DeadlineExceeded)
        );
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn passes_timely_responses_and_keeps_callers_deadline() -> Result<(), tower::BoxError> {
        let (mock, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let mut svc = TimeoutLayer::new(Duration::from_secs(2)).layer(mock);
        let mut request = Request::new(Body::empty());
        request
            .headers_mut()
            .insert(GRPC_TIMEOUT, HeaderValue::from_static("5S"));
        let call = tokio::spawn(svc.ready().await?.call(request));
        let (request, reply) = handle.next_request().await.ok_or("no request")?;
        assert_eq!(
            request
                .headers()
                .get(GRPC_TIMEOUT)
                .and_then(|v| v.to_str().ok()),
            Some("5S")
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        reply.send_response(Response::new(Body::empty()));
        assert!(grpc_status_of(call.await??.headers()).is_none());
        Ok(())
    }
}
