//! Server side: no valid token, no service. The check is an [`Authorize`] for the generic
//! authorize-or-reject layer.

use std::sync::Arc;

use http::Request;
use http::header::AUTHORIZATION;
use tonic::Status;

use super::token::{AuthError, TokenVerifier};
use crate::authorize::{Authorize, AuthorizeFuture, AuthorizeLayer, AuthorizeService};

/// Lets a request through only with a valid bearer token; answers `Unauthenticated` (without
/// calling the service) otherwise. The verified claims are put in the request extensions.
pub type VerifyLayer = AuthorizeLayer<VerifyToken>;
/// See [`VerifyLayer`].
pub type Verify<S> = AuthorizeService<S, VerifyToken>;
/// Response future of [`Verify`].
pub type VerifyFuture<F> = AuthorizeFuture<F>;

impl VerifyLayer {
    /// Checks tokens with `verifier`.
    pub fn verifying(verifier: Arc<TokenVerifier>) -> Self {
        Self::verifying_except(verifier, &[])
    }

    /// Checks tokens with `verifier`, except on the methods at `open_paths`: those carry a
    /// credential of their own, which their service checks (a client's result ticket).
    pub fn verifying_except(
        verifier: Arc<TokenVerifier>,
        open_paths: &'static [&'static str],
    ) -> Self {
        AuthorizeLayer::new(VerifyToken {
            verifier,
            open_paths,
        })
    }
}

/// The worker token check.
#[derive(Debug, Clone)]
pub struct VerifyToken {
    verifier: Arc<TokenVerifier>,
    open_paths: &'static [&'static str],
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

impl<B> Authorize<B> for VerifyToken {
    fn authorize(&self, request: &mut Request<B>) -> Result<(), Status> {
        if self.open_paths.contains(&request.uri().path()) {
            return Ok(());
        }
        match bearer(request).and_then(|token| self.verifier.verify(token)) {
            Ok(claims) => {
                request.extensions_mut().insert(claims);
                Ok(())
            }
            Err(e) => {
                tracing::warn!(path = %request.uri().path(), error = %e, "rejected an unauthenticated request");
                Err(Status::from(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;
    use tower::ServiceExt;
    use tower_test::mock;

    use http::Response;
    use tonic::body::Body;
    use tower::{Layer, Service};

    use super::*;
    use crate::auth::{Claims, TokenSigner};
    use crate::status::grpc_status_of;

    fn layer() -> Result<VerifyLayer, AuthError> {
        Ok(VerifyLayer::verifying(Arc::new(TokenVerifier::new(
            &[b"the-cluster-secret".as_slice()],
            "sqe-worker",
        )?)))
    }

    #[tokio::test]
    async fn refuses_without_calling_the_service() -> Result<(), tower::BoxError> {
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let mut service = layer()?.layer(service);
        let other = TokenSigner::new(b"another-cluster-secret", "w2", "sqe-worker")?;
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
        let signer = TokenSigner::new(b"the-cluster-secret", "worker-2", "sqe-worker")?;
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

    #[tokio::test]
    async fn open_paths_pass_without_a_token_and_no_other_does() -> Result<(), tower::BoxError> {
        let verifier = Arc::new(TokenVerifier::new(
            &[b"the-cluster-secret".as_slice()],
            "sqe-worker",
        )?);
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let layer = VerifyLayer::verifying_except(verifier, &["/results/DoGet"]);
        let mut service = layer.layer(service);
        let refused = Request::builder()
            .uri("/results/DoPut")
            .body(Body::empty())?;
        let response = service.ready().await?.call(refused).await?;
        let status = grpc_status_of(response.headers()).ok_or("no status")?;
        assert_eq!(status.code(), Code::Unauthenticated);

        let open = Request::builder()
            .uri("/results/DoGet")
            .body(Body::empty())?;
        let call = service.ready().await?.call(open);
        let (seen, reply) = handle.next_request().await.ok_or("no request")?;
        assert_eq!(seen.uri().path(), "/results/DoGet");
        assert!(seen.extensions().get::<Claims>().is_none());
        reply.send_response(Response::new(Body::empty()));
        assert!(grpc_status_of(call.await?.headers()).is_none());
        Ok(())
    }
}
