//! Client side: a fresh token on every request, for the peer it goes to.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use std::task::{Context, Poll};

use http::header::AUTHORIZATION;
use http::{HeaderValue, Request, Response};
use pin_project::pin_project;
use tonic::body::Body;
use tonic::{Code, Status};
use tower::{Layer, Service};

use super::token::TokenSigner;
use crate::status::{grpc_status_of, response};

/// The audience a token for `target` names: `scheme://authority` of a URL, lower-case and
/// without path (`http://W1:50052/` and `http://w1:50052` are one node); any other target
/// as it is. Callers and callees both derive it with this function.
pub fn audience_of(target: &str) -> String {
    match target.parse::<http::Uri>() {
        Ok(uri) => match (uri.scheme_str(), uri.authority()) {
            (Some(scheme), Some(authority)) => format!(
                "{}://{}",
                scheme.to_ascii_lowercase(),
                authority.as_str().to_ascii_lowercase()
            ),
            _ => target.to_string(),
        },
        Err(_) => target.to_string(),
    }
}

/// Adds `authorization: Bearer <token>` to every request: a token signed by `signer` for this
/// request alone (its own `jti`), naming the peer as its audience, so a verifier that accepts
/// each token once refuses it anywhere else or a second time. A server's `Unauthenticated`
/// answer is reworded to "<peer kind> authentication failed at <target>: ...", so an operator
/// sees which peer refused the token.
#[derive(Debug, Clone)]
pub struct AuthLayer {
    signer: Arc<TokenSigner>,
    peer: Arc<str>,
    audience: Arc<str>,
}

impl AuthLayer {
    /// `target` names the peer in errors (its URL, say) and is the tokens' audience.
    pub fn new(signer: Arc<TokenSigner>, target: &str) -> Self {
        Self::for_peer(signer, "peer", target)
    }

    /// Names the peer's kind in errors too: `for_peer(signer, "worker", url)`.
    pub fn for_peer(signer: Arc<TokenSigner>, kind: &str, target: &str) -> Self {
        Self {
            signer,
            peer: Arc::from(format!("{kind} authentication failed at {target}")),
            audience: Arc::from(audience_of(target)),
        }
    }

    /// Tokens name `audience` instead of the target (a peer known by its role).
    pub fn with_audience(mut self, audience: &str) -> Self {
        self.audience = Arc::from(audience);
        self
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Auth {
            inner,
            signer: Arc::clone(&self.signer),
            peer: Arc::clone(&self.peer),
            audience: Arc::clone(&self.audience),
        }
    }
}

/// See [`AuthLayer`].
#[derive(Debug, Clone)]
pub struct Auth<S> {
    inner: S,
    signer: Arc<TokenSigner>,
    peer: Arc<str>,
    audience: Arc<str>,
}

impl<S> Auth<S> {
    fn header(&self) -> Result<HeaderValue, Status> {
        let token = self.signer.sign_to(&self.audience).map_err(Status::from)?;
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| Status::internal("a signed token is not a valid header value"))?;
        // Never indexed by HPACK: it is a credential.
        value.set_sensitive(true);
        Ok(value)
    }
}

impl<S, B> Service<Request<B>> for Auth<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = AuthFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        match self.header() {
            Ok(value) => {
                request.headers_mut().insert(AUTHORIZATION, value);
                AuthFuture::Called {
                    future: self.inner.call(request),
                    peer: Arc::clone(&self.peer),
                }
            }
            Err(status) => AuthFuture::Refused {
                response: Some(response(status)),
            },
        }
    }
}

/// Response future of [`Auth`].
#[pin_project(project = AuthFutureProj)]
pub enum AuthFuture<F> {
    Called {
        #[pin]
        future: F,
        peer: Arc<str>,
    },
    Refused {
        response: Option<Response<Body>>,
    },
}

impl<F, E> Future for AuthFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AuthFutureProj::Called { future, peer } => {
                let mut response = std::task::ready!(future.poll(cx))?;
                if let Some(status) = grpc_status_of(response.headers())
                    && status.code() == Code::Unauthenticated
                {
                    let reworded = Status::unauthenticated(format!("{peer}: {}", status.message()));
                    // Replaces grpc-status and grpc-message; a header that cannot be encoded
                    // leaves the original wording.
                    let _ = reworded.add_header(response.headers_mut());
                }
                Poll::Ready(Ok(response))
            }
            AuthFutureProj::Refused { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                None => Poll::Ready(Ok(self::response(Status::internal(
                    "AuthFuture polled after completion",
                )))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use tower::ServiceExt;
    use tower_test::mock;

    use super::*;

    #[tokio::test]
    async fn every_request_carries_its_own_token_for_its_peer() -> Result<(), tower::BoxError> {
        let signer = Arc::new(TokenSigner::new(
            b"the-cluster-secret",
            "coordinator",
            "unused",
        )?);
        let verifier = crate::auth::TokenVerifier::new(
            &[b"the-cluster-secret".as_slice()],
            "http://w1:50052",
        )?
        .single_use();
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let mut service = AuthLayer::new(signer, "HTTP://W1:50052/").layer(service);
        let mut seen = Vec::new();
        for _ in 0..2 {
            let call = service.ready().await?.call(Request::new(Body::empty()));
            let (request, reply) = handle.next_request().await.ok_or("no request")?;
            let value = request.headers().get(AUTHORIZATION).ok_or("no token")?;
            assert!(
                value.is_sensitive(),
                "credentials must not be indexed by HPACK"
            );
            let token = value
                .to_str()?
                .strip_prefix("Bearer ")
                .ok_or("no bearer token")?
                .to_string();
            seen.push(verifier.verify(&token)?.jti);
            reply.send_response(Response::new(Body::empty()));
            call.await?;
        }
        assert_ne!(seen[0], seen[1]);
        Ok(())
    }

    #[test]
    fn audiences_are_the_scheme_and_authority_of_a_url() {
        assert_eq!(
            audience_of("HTTPS://W1.Example:50052/"),
            "https://w1.example:50052"
        );
        assert_eq!(
            audience_of("http://10.0.0.7:50052"),
            "http://10.0.0.7:50052"
        );
        assert_eq!(audience_of("sqe-coordinator"), "sqe-coordinator");
    }

    #[tokio::test]
    async fn unauthenticated_answers_name_the_peer() -> Result<(), tower::BoxError> {
        let signer = Arc::new(TokenSigner::new(
            b"the-cluster-secret",
            "coordinator",
            "sqe-worker",
        )?);
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let mut service = AuthLayer::for_peer(signer, "worker", "http://w1:50052").layer(service);
        let call = service.ready().await?.call(Request::new(Body::empty()));
        let (_, reply) = handle.next_request().await.ok_or("no request")?;
        reply.send_response(Status::unauthenticated("the token signature is invalid").into_http());
        let response = call.await?;
        let status = grpc_status_of(response.headers()).ok_or("no status")?;
        assert_eq!(status.code(), Code::Unauthenticated);
        assert_eq!(
            status.message(),
            "worker authentication failed at http://w1:50052: the token signature is invalid"
        );
        Ok(())
    }
}
