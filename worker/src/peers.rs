//! How nodes reach and authenticate each other: the worker channel stack built from config.

use std::sync::{Arc, OnceLock};

use sqe_layers::auth::{TokenSigner, TokenVerifier};
use sqe_layers::io_runtime::IoRuntime;
use sqe_layers::retry::RetryPolicy;
use sqe_layers::{ChannelSettings, WorkerChannelStack};

use crate::channel::SqeChannelResolver;
use crate::error::{NodeError, Result};

/// How a node authenticates to and talks with its peers (the worker channel).
#[derive(Clone)]
pub struct PeerSettings {
    pub secret: Option<String>,
    pub previous_secret: Option<String>,
    pub allow_unauthenticated: bool,
    pub rpc_timeout: std::time::Duration,
    pub connect_timeout: std::time::Duration,
    pub retry_budget_percent: f32,
    pub io_threads: usize,
}

/// Says whether the secrets are set, never what they are.
impl std::fmt::Debug for PeerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |s: &Option<String>| s.as_ref().map(|_| "[REDACTED]");
        f.debug_struct("PeerSettings")
            .field("secret", &set(&self.secret))
            .field("previous_secret", &set(&self.previous_secret))
            .field("allow_unauthenticated", &self.allow_unauthenticated)
            .field("rpc_timeout", &self.rpc_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("retry_budget_percent", &self.retry_budget_percent)
            .field("io_threads", &self.io_threads)
            .finish()
    }
}

/// The audience of tokens for worker RPCs.
pub const WORKER_AUDIENCE: &str = "sqe-worker";

static IO_RUNTIME: OnceLock<Arc<IoRuntime>> = OnceLock::new();

/// The process's I/O runtime, created by the first caller with its thread count.
pub fn process_io_runtime(threads: usize) -> Result<Arc<IoRuntime>> {
    if let Some(io) = IO_RUNTIME.get() {
        return Ok(Arc::clone(io));
    }
    let io = IoRuntime::new(threads)
        .map_err(|e| NodeError::Start(format!("cannot start the I/O runtime: {e}")))?;
    Ok(Arc::clone(IO_RUNTIME.get_or_init(|| io)))
}

/// The channel resolver of node `node_id`: its tokens name it as their issuer.
pub fn channel_resolver(node_id: &str, peers: &PeerSettings) -> Result<SqeChannelResolver> {
    let io = process_io_runtime(peers.io_threads)?;
    let signer = match &peers.secret {
        Some(secret) => Some(
            TokenSigner::new(secret.as_bytes(), node_id, WORKER_AUDIENCE)
                .map_err(|e| NodeError::Settings(format!("worker_secret: {e}")))?,
        ),
        None => None,
    };
    let settings = ChannelSettings {
        connect_timeout: peers.connect_timeout,
        rpc_timeout: peers.rpc_timeout,
        retry: RetryPolicy::default(),
        retry_budget_percent: peers.retry_budget_percent,
        ..ChannelSettings::default()
    };
    Ok(SqeChannelResolver::new(WorkerChannelStack::new(
        io, signer, settings,
    )))
}

/// The verifier for requests to a node: the current secret and, during rotation, the previous.
pub fn token_verifier(peers: &PeerSettings) -> Result<Option<Arc<TokenVerifier>>> {
    let Some(secret) = &peers.secret else {
        if peers.allow_unauthenticated {
            tracing::warn!(
                "allow_unauthenticated_workers = true: worker RPCs carry no tokens and any client can \
                 submit plans; use this only on a private test network"
            );
        }
        return Ok(None);
    };
    let mut secrets: Vec<&[u8]> = vec![secret.as_bytes()];
    if let Some(previous) = &peers.previous_secret {
        secrets.push(previous.as_bytes());
    }
    let verifier = TokenVerifier::new(&secrets, WORKER_AUDIENCE)
        .map_err(|e| NodeError::Settings(format!("worker_secret: {e}")))?;
    Ok(Some(Arc::new(verifier)))
}
