//! Server side: no valid token, no service.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::AUTHORIZATION;
use http::{Request, Response};
use pin_project::pin_project;
use tonic::Status;
use tonic::body::Body;
use tower::{Layer, Service};

use super::token::{AuthError, TokenVerifier};
use crate::status::response;

/// Lets a request through only with a valid bearer token; answers `Unauthenticated` (without
/// calling the service) otherwise. The verified claims are put in the request extensions.
#[derive(Debug, Clone)]
pub struct VerifyLayer {
    verifier: Arc<TokenVerifier>,
}

impl VerifyLayer {
    pub fn new(verifier: Arc<TokenVerifier>) -> Self {
        Self { verifier }
    }
}

impl<S> Layer<S> for VerifyLayer {
    type Service = Verify<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Verify {
            inner,
            verifier: Arc::clone(&self.verifier),
        }
    }
}

/// See [`VerifyLayer`].
#[derive(Debug, Clone)]
pub struct Verify<S> {
    inner: S,
    verifier: Arc<TokenVerifier>,
}

/// A verified service keeps its gRPC name, so it can be added to a tonic server on its own.
impl<S: tonic::server::NamedService> tonic::server::NamedService for Verify<S> {
    const NAME: &'static str = S::NAME;
}

fn bearer<B>(request: &Request<B>) -> Result<&str, AuthError> {
    let value = request
        .headers()
        .get(AUTHORIZATION)
        .ok_or(AuthError::MissingToken)?
        .to_str()
        .map_err(|_| AuthError::Malformed)?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .ok_or(AuthError::MissingToken)
}

impl<S, B> Service<Request<B>> for Verify<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = VerifyFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        match bearer(&request).and_then(|token| self.verifier.verify(token)) {
            Ok(claims) => {
                request.extensions_mut().insert(claims);
                VerifyFuture::Accepted {
                    future: self.inner.call(request),
                }
            }
            Err(e) => {
                tracing::warn!(path = %request.uri().path(), error = %e, "rejected an unauthenticated request");
                VerifyFuture::Rejected {
                    response: Some(response(Status::from(e))),
                }
            }
        }
    }
}

/// Response future of [`Verify`].
#[pin_project(project = VerifyFutureProj)]
pub enum VerifyFuture<F> {
    Accepted {
        #[pin]
        future: F,
    },
    Rejected {
        response: Option<Response<Body>>,
    },
}

impl<F, E> Future for VerifyFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            VerifyFutureProj::Accepted { future } => future.poll(cx),
            VerifyFutureProj::Rejected { response } => {
                Poll::Ready(Ok(response.take().unwrap_or_else(|| {
                    self::response(Status::internal("VerifyFuture polled after completion"))
                })))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;
    use tower::ServiceExt;
    use tower_test::mock;

    use super::*;
    use crate::auth::{Claims, TokenSigner};
    use crate::status::grpc_status_of;

    fn layer() -> Result<VerifyLayer, AuthError> {
        Ok(VerifyLayer::new(Arc::new(TokenVerifier::new(
            &[b"secret".as_slice()],
            "sqe-worker",
        )?)))
    }

    #[tokio::test]
    async fn refuses_without_calling_the_service() -> Result<(), tower::BoxError> {
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let mut service = layer()?.layer(service);
        let other = TokenSigner::new(b"other", "w2", "sqe-worker")?;
        for auth in [
            None,
            Some("Basic abc".to_string()),
            Some(format!("Bearer {}", other.sign()?)),
        ] {
            let mut request = Request::new(Body::empty());
            if let Some(value) = auth {
                request.headers_mut().insert(AUTHORIZATION, value.parse()?);
            }
            let response = service.ready().await?.call(request).await?;
            let status = grpc_status_of(response.headers()).ok_or("no status")?;
            assert_eq!(status.code(), Code::Unauthenticated);
        }
        // The inner service never saw a request.
        handle.allow(1);
        assert!(futures_util_poll_none(&mut handle).await);
        Ok(())
    }

    async fn futures_util_poll_none(
        handle: &mut mock::Handle<Request<Body>, Response<Body>>,
    ) -> bool {
        tokio::time::timeout(std::time::Duration::from_millis(20), handle.next_request())
            .await
            .is_err()
    }

    #[tokio::test]
    async fn passes_valid_tokens_with_their_claims() -> Result<(), tower::BoxError> {
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let mut service = layer()?.layer(service);
        let signer = TokenSigner::new(b"secret", "worker-2", "sqe-worker")?;
        let mut request = Request::new(Body::empty());
        request
            .headers_mut()
            .insert(AUTHORIZATION, format!("Bearer {}", signer.sign()?).parse()?);
        let call = service.ready().await?.call(request);
        let (seen, reply) = handle.next_request().await.ok_or("no request")?;
        assert_eq!(
            seen.extensions().get::<Claims>().map(|c| c.iss.as_str()),
            Some("worker-2")
        );
        reply.send_response(Response::new(Body::empty()));
        assert!(grpc_status_of(call.await?.headers()).is_none());
        Ok(())
    }
}
