//! Client authentication on the Flight SQL endpoint: every call but `Handshake` must carry the
//! bearer token a handshake issued, when authentication is on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use base64::Engine as _;
use http::{Request, Response};
use pin_project::pin_project;
use tonic::Status;
use tonic::body::Body;
use tower::{Layer, Service};

use crate::client_auth::{ClientAuth, Principal};

const HANDSHAKE_PATH: &str = "/arrow.flight.protocol.FlightService/Handshake";

/// Puts the caller's [`Principal`] into the request extensions, or answers `Unauthenticated`.
#[derive(Debug, Clone)]
pub struct ClientAuthLayer {
    auth: Arc<ClientAuth>,
}

impl ClientAuthLayer {
    pub fn new(auth: Arc<ClientAuth>) -> Self {
        Self { auth }
    }
}

impl<S> Layer<S> for ClientAuthLayer {
    type Service = ClientAuthService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ClientAuthService {
            inner,
            auth: Arc::clone(&self.auth),
        }
    }
}

/// See [`ClientAuthLayer`].
#[derive(Debug, Clone)]
pub struct ClientAuthService<S> {
    inner: S,
    auth: Arc<ClientAuth>,
}

/// Credentials a request carries.
pub enum Credentials {
    Bearer(String),
    Basic { user: String, password: String },
}

/// Reads `authorization: Bearer ...` or `authorization: Basic ...`.
pub fn credentials(headers: &http::HeaderMap) -> Result<Option<Credentials>, Status> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value
        .to_str()
        .map_err(|_| Status::unauthenticated("the authorization header is not text"))?;
    if let Some(token) = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
    {
        return Ok(Some(Credentials::Bearer(token.trim().to_string())));
    }
    if let Some(encoded) = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))
    {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| Status::unauthenticated("malformed Basic credentials"))?;
        let (user, password) = decoded
            .split_once(':')
            .ok_or_else(|| Status::unauthenticated("malformed Basic credentials"))?;
        return Ok(Some(Credentials::Basic {
            user: user.to_string(),
            password: password.to_string(),
        }));
    }
    Err(Status::unauthenticated(
        "unsupported authorization scheme (use Basic on Handshake, then Bearer)",
    ))
}

impl<S> ClientAuthService<S> {
    fn principal(&self, headers: &http::HeaderMap) -> Result<Principal, Status> {
        match credentials(headers)? {
            Some(Credentials::Bearer(token)) => match self.auth.verify(&token) {
                Ok(principal) => Ok(principal),
                Err(e) if self.auth.required() => Err(Status::from(e)),
                Err(_) => Ok(Principal::anonymous()),
            },
            Some(Credentials::Basic { user, .. }) if !self.auth.required() => {
                Ok(Principal { user })
            }
            _ if self.auth.required() => Err(Status::unauthenticated(
                "authentication required: call Handshake with user and password, then send the bearer token",
            )),
            _ => Ok(Principal::anonymous()),
        }
    }
}

impl<S, B> Service<Request<B>> for ClientAuthService<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ClientAuthFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // Workers' control-plane calls carry worker_secret tokens, verified by their own layer.
        let path = request.uri().path();
        if path == HANDSHAKE_PATH || sqe_proto::is_control_plane_path(path) {
            return ClientAuthFuture::Accepted {
                future: self.inner.call(request),
            };
        }
        match self.principal(request.headers()) {
            Ok(principal) => {
                request.extensions_mut().insert(principal);
                ClientAuthFuture::Accepted {
                    future: self.inner.call(request),
                }
            }
            Err(status) => ClientAuthFuture::Rejected {
                response: Some(status.into_http()),
            },
        }
    }
}

/// Response future of [`ClientAuthService`].
#[pin_project(project = ClientAuthFutureProj)]
pub enum ClientAuthFuture<F> {
    Accepted {
        #[pin]
        future: F,
    },
    Rejected {
        response: Option<Response<Body>>,
    },
}

impl<F, E> Future for ClientAuthFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            ClientAuthFutureProj::Accepted { future } => future.poll(cx),
            ClientAuthFutureProj::Rejected { response } => Poll::Ready(Ok(response
                .take()
                .unwrap_or_else(|| Status::internal("polled after completion").into_http()))),
        }
    }
}
