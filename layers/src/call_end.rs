//! When a gRPC call ends, and with which code: a streamed call ends with its response body
//! (status in the trailers), not with its response headers.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use http_body::{Frame, SizeHint};
use tonic::body::Body;
use tonic::{Code, Status};

/// Told how a call ended, exactly once.
pub(crate) trait CallObserver: Send + Unpin + 'static {
    /// Runs `poll` (one poll of the response body) in the observer's context, a span say.
    fn polling<R>(&self, poll: impl FnOnce() -> R) -> R {
        poll()
    }

    /// The call's final code: from the trailers, the error that cut the body, or
    /// `Cancelled` when the body was dropped before its end (the caller went away).
    fn ended(self, code: Code);
}

/// The code gRPC gives a response without `grpc-status` and without a body (a proxy's error
/// page, say), from its HTTP status, as gRPC's HTTP-to-gRPC status mapping does.
fn code_of_http(status: StatusCode) -> Code {
    match status.as_u16() {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502..=504 => Code::Unavailable,
        _ => Code::Unknown,
    }
}

/// Hands `response` to `observer`: at once when its headers carry the status (a trailers-only
/// response, as failed calls have) or when it has no body, otherwise when its body ends.
pub(crate) fn observe_response<O: CallObserver>(
    response: Response<Body>,
    observer: O,
) -> Response<Body> {
    if let Some(status) = Status::from_header_map(response.headers()) {
        observer.ended(status.code());
        return response;
    }
    if http_body::Body::is_end_stream(response.body()) {
        observer.ended(code_of_http(response.status()));
        return response;
    }
    response.map(|body| {
        Body::new(ObservedBody {
            body,
            observer: Some(observer),
        })
    })
}

/// The code a trailers frame reports; a stream ending without one broke the protocol.
fn trailers_code(trailers: &HeaderMap) -> Code {
    Status::from_header_map(trailers).map_or(Code::Unknown, |s| s.code())
}

struct ObservedBody<O: CallObserver> {
    body: Body,
    observer: Option<O>,
}

impl<O: CallObserver> ObservedBody<O> {
    fn end(&mut self, code: Code) {
        if let Some(observer) = self.observer.take() {
            observer.ended(code);
        }
    }
}

impl<O: CallObserver> http_body::Body for ObservedBody<O> {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        let polled = match &this.observer {
            Some(observer) => observer.polling(|| Pin::new(&mut this.body).poll_frame(cx)),
            None => Pin::new(&mut this.body).poll_frame(cx),
        };
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    let code = trailers_code(trailers);
                    this.end(code);
                }
            }
            Poll::Ready(Some(Err(status))) => this.end(status.code()),
            Poll::Ready(None) => this.end(Code::Unknown),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl<O: CallObserver> Drop for ObservedBody<O> {
    fn drop(&mut self) {
        self.end(Code::Cancelled);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use http_body_util::BodyExt;

    use super::*;

    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<Code>>>);

    impl CallObserver for Seen {
        fn ended(self, code: Code) {
            if let Ok(mut seen) = self.0.lock() {
                seen.push(code);
            }
        }
    }

    impl Seen {
        fn codes(&self) -> Vec<Code> {
            self.0.lock().map(|s| s.clone()).unwrap_or_default()
        }
    }

    fn streamed(trailers: Option<HeaderMap>) -> Response<Body> {
        let mut frames = vec![Ok::<_, Status>(Frame::data(Bytes::from_static(b"row")))];
        frames.extend(trailers.map(|t| Ok(Frame::trailers(t))));
        Response::new(Body::new(http_body_util::StreamBody::new(
            futures::stream::iter(frames),
        )))
    }

    #[tokio::test]
    async fn a_streamed_call_ends_with_its_trailers() -> Result<(), Status> {
        let seen = Seen::default();
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("13"));
        let response = observe_response(streamed(Some(trailers)), seen.clone());
        assert!(seen.codes().is_empty(), "ended before its body");
        response.into_body().collect().await?;
        assert_eq!(seen.codes(), vec![Code::Internal]);
        Ok(())
    }

    #[tokio::test]
    async fn a_failed_call_ends_with_its_headers_and_a_dropped_one_is_cancelled() {
        let seen = Seen::default();
        let _ = observe_response(Status::not_found("no such task").into_http(), seen.clone());
        assert_eq!(seen.codes(), vec![Code::NotFound]);

        let dropped = observe_response(streamed(None), seen.clone());
        drop(dropped);
        assert_eq!(seen.codes(), vec![Code::NotFound, Code::Cancelled]);
    }

    #[test]
    fn a_response_without_status_or_body_ends_by_its_http_status() {
        let seen = Seen::default();
        let mut bad_gateway = Response::new(Body::empty());
        *bad_gateway.status_mut() = StatusCode::BAD_GATEWAY;
        let _ = observe_response(bad_gateway, seen.clone());
        let _ = observe_response(Response::new(Body::empty()), seen.clone());
        assert_eq!(seen.codes(), vec![Code::Unavailable, Code::Unknown]);
    }

    #[tokio::test]
    async fn a_body_without_trailers_is_a_broken_call() -> Result<(), Status> {
        let seen = Seen::default();
        observe_response(streamed(None), seen.clone())
            .into_body()
            .collect()
            .await?;
        assert_eq!(seen.codes(), vec![Code::Unknown]);
        Ok(())
    }
}
