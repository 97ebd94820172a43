//! Client side: a fresh token on every request.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use parking_lot::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use http::header::AUTHORIZATION;
use http::{HeaderValue, Request, Response};
use pin_project::pin_project;
use tonic::body::Body;
use tonic::{Code, Status};
use tower::{Layer, Service};

use super::token::TokenSigner;
use crate::status::{grpc_status_of, response};

/// How long a signed token is reused by default before a fresh one is signed (tokens live 60 s
/// by default, so a token sent is always valid for most of its life).
pub const DEFAULT_TOKEN_REUSE: Duration = Duration::from_secs(10);

/// Adds `authorization: Bearer <token>` to every request, signed by `signer`. A token is reused
/// for [`DEFAULT_TOKEN_REUSE`] (see [`AuthLayer::with_reuse`]; zero signs one per request), which
/// keeps signing and, with the verifier's cache, verification off the per-request path. A
/// server's `Unauthenticated` answer is reworded to "<peer kind> authentication failed at
/// <target>: ...", so an operator sees which peer refused the token.
#[derive(Debug, Clone)]
pub struct AuthLayer {
    signer: Arc<TokenSigner>,
    peer: Arc<str>,
    current: Arc<CurrentToken>,
}

/// The token being reused, shared by every service of a layer.
#[derive(Debug)]
struct CurrentToken {
    reuse: Duration,
    token: Mutex<Option<(HeaderValue, Instant)>>,
}

impl CurrentToken {
    fn header(&self, signer: &TokenSigner) -> Result<HeaderValue, Status> {
        let reusable = self
            .token
            .lock()
            .as_ref()
            .filter(|(_, signed)| signed.elapsed() < self.reuse)
            .map(|(value, _)| value.clone());
        if let Some(value) = reusable {
            return Ok(value);
        }
        let token = signer.sign().map_err(Status::from)?;
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| Status::internal("a signed token is not a valid header value"))?;
        // Never indexed by HPACK: it is a credential.
        value.set_sensitive(true);
        {
            let mut current = self.token.lock();
            *current = Some((value.clone(), Instant::now()));
        }
        Ok(value)
    }
}

impl AuthLayer {
    /// `target` names the peer in errors (its URL, say).
    pub fn new(signer: Arc<TokenSigner>, target: &str) -> Self {
        Self::for_peer(signer, "peer", target)
    }

    /// Names the peer's kind in errors too: `for_peer(signer, "worker", url)`.
    pub fn for_peer(signer: Arc<TokenSigner>, kind: &str, target: &str) -> Self {
        Self {
            signer,
            peer: Arc::from(format!("{kind} authentication failed at {target}")),
            current: Arc::new(CurrentToken {
                reuse: DEFAULT_TOKEN_REUSE,
                token: Mutex::new(None),
            }),
        }
    }

    /// Reuses a signed token for `reuse` (capped at half the signer's TTL); zero signs a new
    /// token, with a new `jti`, for every request.
    pub fn with_reuse(mut self, reuse: Duration) -> Self {
        self.current = Arc::new(CurrentToken {
            reuse: reuse.min(self.signer.ttl() / 2),
            token: Mutex::new(None),
        });
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
            current: Arc::clone(&self.current),
        }
    }
}

/// See [`AuthLayer`].
#[derive(Debug, Clone)]
pub struct Auth<S> {
    inner: S,
    signer: Arc<TokenSigner>,
    peer: Arc<str>,
    current: Arc<CurrentToken>,
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
        let header = self.current.header(&self.signer);
        match header {
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
    async fn every_request_carries_a_fresh_valid_token() -> Result<(), tower::BoxError> {
        let signer = Arc::new(TokenSigner::new(
            b"the-cluster-secret",
            "coordinator",
            "sqe-worker",
        )?);
        let verifier =
            crate::auth::TokenVerifier::new(&[b"the-cluster-secret".as_slice()], "sqe-worker")?;
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let mut service = AuthLayer::new(signer, "http://w1:50052")
            .with_reuse(Duration::ZERO)
            .layer(service);
        let mut seen = Vec::new();
        for _ in 0..2 {
            let call = service.ready().await?.call(Request::new(Body::empty()));
            let (request, reply) = handle.next_request().await.ok_or("no request")?;
            let token = request
                .headers()
                .get(AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .ok_or("no bearer token")?
                .to_string();
            seen.push(verifier.verify(&token)?.jti);
            reply.send_response(Response::new(Body::empty()));
            call.await?;
        }
        assert_ne!(seen[0], seen[1]);
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_are_reused_then_renewed() -> Result<(), tower::BoxError> {
        let signer = Arc::new(TokenSigner::new(
            b"the-cluster-secret",
            "coordinator",
            "sqe-worker",
        )?);
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let mut service = AuthLayer::new(signer, "w")
            .with_reuse(Duration::from_secs(10))
            .layer(service);
        let mut tokens = Vec::new();
        for wait in [0, 1, 10] {
            tokio::time::advance(Duration::from_secs(wait)).await;
            let call = service.ready().await?.call(Request::new(Body::empty()));
            let (request, reply) = handle.next_request().await.ok_or("no request")?;
            let value = request.headers().get(AUTHORIZATION).ok_or("no token")?;
            assert!(
                value.is_sensitive(),
                "credentials must not be indexed by HPACK"
            );
            tokens.push(value.clone());
            reply.send_response(Response::new(Body::empty()));
            call.await?;
        }
        assert_eq!(tokens[0], tokens[1], "reused within the window");
        assert_ne!(tokens[1], tokens[2], "renewed after it");
        Ok(())
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
