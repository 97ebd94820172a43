//! The layer and its service.

use std::task::{Context, Poll};

use http::{Request, Response};
use tonic::Status;
use tonic::body::Body;
use tower::{Layer, Service};

use super::future::AuthorizeFuture;

/// Decides whether a request may reach the service.
pub trait Authorize<B> {
    /// `Ok` lets the request through (after putting what the service needs in its
    /// extensions); `Err` answers with that status instead of calling the service.
    fn authorize(&self, request: &mut Request<B>) -> Result<(), Status>;
}

/// Wraps a service so that only authorized requests reach it.
#[derive(Debug, Clone)]
pub struct AuthorizeLayer<A> {
    authorize: A,
}

impl<A> AuthorizeLayer<A> {
    pub fn new(authorize: A) -> Self {
        Self { authorize }
    }
}

impl<S, A: Clone> Layer<S> for AuthorizeLayer<A> {
    type Service = AuthorizeService<S, A>;

    fn layer(&self, inner: S) -> Self::Service {
        AuthorizeService {
            inner,
            authorize: self.authorize.clone(),
        }
    }
}

/// See [`AuthorizeLayer`].
#[derive(Debug, Clone)]
pub struct AuthorizeService<S, A> {
    inner: S,
    authorize: A,
}

/// An authorized service keeps its gRPC name, so it can be added to a tonic server on its own.
impl<S: tonic::server::NamedService, A> tonic::server::NamedService for AuthorizeService<S, A> {
    const NAME: &'static str = S::NAME;
}

impl<S, A, B> Service<Request<B>> for AuthorizeService<S, A>
where
    S: Service<Request<B>, Response = Response<Body>>,
    A: Authorize<B>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = AuthorizeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        match self.authorize.authorize(&mut request) {
            Ok(()) => AuthorizeFuture::accepted(self.inner.call(request)),
            Err(status) => {
                tracing::debug!(path = %request.uri().path(), code = ?status.code(), "refused a request");
                AuthorizeFuture::rejected(status)
            }
        }
    }
}
