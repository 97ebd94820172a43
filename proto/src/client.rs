//! The worker's side: calls to the coordinator's control plane.

use http::uri::PathAndQuery;
use tonic::body::Body;
use tonic::client::{Grpc, GrpcService};
use tonic::{Request, Status};
use tonic_prost::ProstCodec;

use crate::messages::{
    DeregisterRequest, DeregisterResponse, DrainRequest, DrainResponse, HeartbeatRequest,
    HeartbeatResponse, RegisterRequest, RegisterResponse,
};

type StdError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A control-plane client over any tonic channel (in SQE: the layered worker channel, so calls
/// carry the worker_secret token and are retried and timed out like every peer RPC).
#[derive(Debug, Clone)]
pub struct ControlPlaneClient<T> {
    inner: Grpc<T>,
}

impl<T> ControlPlaneClient<T>
where
    T: GrpcService<Body>,
    T::Error: Into<StdError>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<StdError> + Send,
{
    pub fn new(channel: T) -> Self {
        Self {
            inner: Grpc::new(channel),
        }
    }

    async fn unary<Req, Resp>(&mut self, path: &'static str, request: Req) -> Result<Resp, Status>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        self.inner
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("coordinator not ready: {}", e.into())))?;
        let codec: ProstCodec<Req, Resp> = ProstCodec::default();
        self.inner
            .unary(
                Request::new(request),
                PathAndQuery::from_static(path),
                codec,
            )
            .await
            .map(tonic::Response::into_inner)
    }

    pub async fn register(&mut self, request: RegisterRequest) -> Result<RegisterResponse, Status> {
        self.unary(crate::REGISTER, request).await
    }

    pub async fn heartbeat(
        &mut self,
        request: HeartbeatRequest,
    ) -> Result<HeartbeatResponse, Status> {
        self.unary(crate::HEARTBEAT, request).await
    }

    pub async fn drain(&mut self, request: DrainRequest) -> Result<DrainResponse, Status> {
        self.unary(crate::DRAIN, request).await
    }

    pub async fn deregister(
        &mut self,
        request: DeregisterRequest,
    ) -> Result<DeregisterResponse, Status> {
        self.unary(crate::DEREGISTER, request).await
    }
}
