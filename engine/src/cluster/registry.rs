//! The coordinator's control plane: workers register, heartbeat, drain and deregister here.

use std::sync::Arc;
use std::time::Duration;

use sqe_proto::{
    ControlPlane, DeregisterRequest, DeregisterResponse, DrainRequest, DrainResponse,
    HeartbeatRequest, HeartbeatResponse, RegisterRequest, RegisterResponse,
};
use tonic::{Request, Response, Status};
use url::Url;

use super::workers::{Announcement, WorkerPool};

/// Heartbeat intervals a worker may announce: anything else is a configuration mistake.
const HEARTBEAT_INTERVALS: std::ops::RangeInclusive<u64> = 100..=3_600_000;

/// Serves the control plane over the coordinator's [`WorkerPool`]. Callers are authenticated
/// by the worker_secret verifier layered in front of it (see `runtime`).
#[derive(Debug)]
pub struct Registry {
    pool: Arc<WorkerPool>,
    coordinator_id: String,
    /// False when the coordinator has neither a worker_secret nor
    /// `allow_unauthenticated_workers`: nobody may join it.
    accepts_workers: bool,
}

impl Registry {
    pub fn new(pool: Arc<WorkerPool>, coordinator_id: String, accepts_workers: bool) -> Self {
        Self {
            pool,
            coordinator_id,
            accepts_workers,
        }
    }

    /// Where every call starts: the coordinator accepts workers, and the caller's URL is one.
    fn admitted_url(&self, url: &str) -> Result<Url, Status> {
        if !self.accepts_workers {
            return Err(Status::failed_precondition(
                "this coordinator accepts no workers: set worker_secret (or, on a private test \
                 network, allow_unauthenticated_workers) in its [coordinator] section",
            ));
        }
        worker_url(url)
    }
}

fn worker_url(url: &str) -> Result<Url, Status> {
    let parsed = Url::parse(url)
        .map_err(|e| Status::invalid_argument(format!("worker URL '{url}': {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(Status::invalid_argument(format!(
            "worker URL '{url}': expected http(s)://host:port"
        )));
    }
    Ok(parsed)
}

#[tonic::async_trait]
impl ControlPlane for Registry {
    async fn register(
        &self,
        request: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        let r = request.into_inner();
        let url = self.admitted_url(&r.url)?;
        if r.node_id.is_empty() || r.version.is_empty() {
            return Err(Status::invalid_argument(
                "a worker registers with its node_id and version",
            ));
        }
        if !HEARTBEAT_INTERVALS.contains(&r.heartbeat_interval_ms) {
            return Err(Status::invalid_argument(format!(
                "heartbeat_interval_ms {} is outside {HEARTBEAT_INTERVALS:?}",
                r.heartbeat_interval_ms
            )));
        }
        self.pool
            .register(Announcement {
                url,
                node_id: r.node_id,
                version: r.version,
                heartbeat_interval: Duration::from_millis(r.heartbeat_interval_ms),
            })
            .map_err(Status::already_exists)?;
        Ok(Response::new(RegisterResponse {
            coordinator_id: self.coordinator_id.clone(),
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let r = request.into_inner();
        let url = self.admitted_url(&r.url)?;
        let known = self.pool.heartbeat(&url, &r.node_id, r.draining);
        Ok(Response::new(HeartbeatResponse { known }))
    }

    async fn drain(
        &self,
        request: Request<DrainRequest>,
    ) -> Result<Response<DrainResponse>, Status> {
        let r = request.into_inner();
        let url = self.admitted_url(&r.url)?;
        if self.pool.drain(&url, &r.node_id) {
            Ok(Response::new(DrainResponse {}))
        } else {
            Err(Status::not_found(format!(
                "no worker '{}' at {url} is registered here",
                r.node_id
            )))
        }
    }

    async fn deregister(
        &self,
        request: Request<DeregisterRequest>,
    ) -> Result<Response<DeregisterResponse>, Status> {
        let r = request.into_inner();
        let url = self.admitted_url(&r.url)?;
        self.pool.deregister(&url, &r.node_id);
        Ok(Response::new(DeregisterResponse {}))
    }
}
