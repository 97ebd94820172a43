//! The coordinator's side: a tonic service dispatching the control plane's methods.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::server::{Grpc, NamedService};
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;

use crate::messages::{
    DeregisterRequest, DeregisterResponse, DrainRequest, DrainResponse, HeartbeatRequest,
    HeartbeatResponse, RegisterRequest, RegisterResponse,
};

type StdError = Box<dyn std::error::Error + Send + Sync + 'static>;
type Reply<T> = Result<Response<T>, Status>;

/// What the coordinator does with each call. The requests carry the caller's verified token
/// claims in their extensions when the server is authenticated.
pub trait ControlPlane: Send + Sync + 'static {
    fn register(
        &self,
        request: Request<RegisterRequest>,
    ) -> impl Future<Output = Reply<RegisterResponse>> + Send;
    fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> impl Future<Output = Reply<HeartbeatResponse>> + Send;
    fn drain(
        &self,
        request: Request<DrainRequest>,
    ) -> impl Future<Output = Reply<DrainResponse>> + Send;
    fn deregister(
        &self,
        request: Request<DeregisterRequest>,
    ) -> impl Future<Output = Reply<DeregisterResponse>> + Send;
}

/// Serves a [`ControlPlane`] (add it to a `tonic::transport::Server`).
#[derive(Debug)]
pub struct ControlPlaneServer<T> {
    inner: Arc<T>,
}

impl<T> ControlPlaneServer<T> {
    pub fn new(inner: Arc<T>) -> Self {
        Self { inner }
    }
}

impl<T> Clone for ControlPlaneServer<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> NamedService for ControlPlaneServer<T> {
    const NAME: &'static str = crate::SERVICE_NAME;
}

type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

/// Decodes one request, runs `handle` on it and encodes its answer.
fn unary<B, Req, Resp, F, Fut>(request: http::Request<B>, handle: F) -> ResponseFuture
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
    Req: prost::Message + Default + Send + 'static,
    Resp: prost::Message + Send + 'static,
    F: FnMut(Request<Req>) -> Fut + Send + 'static,
    Fut: Future<Output = Reply<Resp>> + Send + 'static,
{
    Box::pin(async move {
        let mut grpc = Grpc::new(ProstCodec::<Resp, Req>::default());
        Ok(grpc.unary(tower::service_fn(handle), request).await)
    })
}

impl<T, B> tower::Service<http::Request<B>> for ControlPlaneServer<T>
where
    T: ControlPlane,
    B: http_body::Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let inner = Arc::clone(&self.inner);
        match request.uri().path() {
            crate::REGISTER => unary(request, move |r| {
                let inner = Arc::clone(&inner);
                async move { inner.register(r).await }
            }),
            crate::HEARTBEAT => unary(request, move |r| {
                let inner = Arc::clone(&inner);
                async move { inner.heartbeat(r).await }
            }),
            crate::DRAIN => unary(request, move |r| {
                let inner = Arc::clone(&inner);
                async move { inner.drain(r).await }
            }),
            crate::DEREGISTER => unary(request, move |r| {
                let inner = Arc::clone(&inner);
                async move { inner.deregister(r).await }
            }),
            path => {
                let status = Status::unimplemented(format!("no such method: {path}"));
                Box::pin(std::future::ready(Ok(status.into_http())))
            }
        }
    }
}
