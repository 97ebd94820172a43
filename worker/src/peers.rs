//! How nodes reach and authenticate each other: the worker channel stack built from config.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

use sqe_layers::auth::{ResultTicketVerifier, TokenSigner, TokenVerifier, audience_of};
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
    /// TLS between the nodes (`[cluster]`); `None` speaks in clear.
    pub tls: Option<ClusterTls>,
}

/// TLS between the nodes, from PEM files: every node serves with its certificate and dials its
/// peers over `https://` only, checking their certificates against `ca_file`.
#[derive(Debug, Clone)]
pub struct ClusterTls {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// The CA that signed the nodes' certificates; the system's roots when `None`.
    pub ca_file: Option<PathBuf>,
    /// Workers accept only callers presenting a certificate signed by `ca_file` (mutual TLS).
    pub require_client_cert: bool,
    /// The name peers' certificates must carry, instead of the host of the URL dialled (workers
    /// are dialled by pod IP; one cluster certificate names them all).
    pub server_name: Option<String>,
}

impl ClusterTls {
    fn read(path: &std::path::Path, key: &str) -> Result<Vec<u8>> {
        std::fs::read(path)
            .map_err(|e| NodeError::Settings(format!("cluster.{key} {}: {e}", path.display())))
    }

    fn identity(&self) -> Result<Identity> {
        Ok(Identity::from_pem(
            Self::read(&self.cert_file, "tls_cert_file")?,
            Self::read(&self.key_file, "tls_key_file")?,
        ))
    }

    fn ca(&self) -> Result<Option<Certificate>> {
        self.ca_file
            .as_ref()
            .map(|ca| Ok(Certificate::from_pem(Self::read(ca, "tls_ca_file")?)))
            .transpose()
    }

    /// How this node dials its peers: their certificates checked, its own presented.
    pub fn client_config(&self) -> Result<ClientTlsConfig> {
        let mut tls = ClientTlsConfig::new().identity(self.identity()?);
        tls = match self.ca()? {
            Some(ca) => tls.ca_certificate(ca),
            None => tls.with_native_roots(),
        };
        if let Some(name) = &self.server_name {
            tls = tls.domain_name(name.clone());
        }
        // tonic parses the PEM files when an endpoint takes the config: do it now, so a bad
        // file stops the node at start-up rather than failing its first query.
        tonic::transport::Endpoint::from_static("https://tls.check")
            .tls_config(tls.clone())
            .map_err(|e| NodeError::Settings(format!("[cluster] TLS files: {e}")))?;
        Ok(tls)
    }

    /// How this node serves its peers.
    pub fn server_config(&self) -> Result<ServerTlsConfig> {
        let tls = ServerTlsConfig::new().identity(self.identity()?);
        if !self.require_client_cert {
            return Ok(tls);
        }
        let ca = self.ca()?.ok_or_else(|| {
            NodeError::Settings("cluster.tls_client_auth needs cluster.tls_ca_file".into())
        })?;
        Ok(tls.client_ca_root(ca))
    }
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
            .field("tls", &self.tls)
            .finish()
    }
}

/// The audience of tokens for the coordinator's control plane (register, heartbeat, drain):
/// workers dial it by a name (a Service) it does not know itself, so it is named by its role.
/// Tokens for a worker name the worker's URL.
pub const CONTROL_PLANE_AUDIENCE: &str = "sqe-coordinator";

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
            TokenSigner::new(secret.as_bytes(), node_id, CONTROL_PLANE_AUDIENCE)
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
    let mut stack = WorkerChannelStack::new(io, signer, settings);
    if let Some(tls) = &peers.tls {
        stack = stack.with_tls(tls.client_config()?);
    }
    Ok(SqeChannelResolver::new(stack))
}

/// The verifier for requests to a node reached as `audience` (a worker's URL, or
/// [`CONTROL_PLANE_AUDIENCE`]): the current secret and, during rotation, the previous; each
/// token is accepted once.
pub fn token_verifier(peers: &PeerSettings, audience: &str) -> Result<Option<Arc<TokenVerifier>>> {
    let Some(secret) = &peers.secret else {
        if peers.allow_unauthenticated {
            tracing::warn!(
                "allow_unauthenticated_workers = true: worker RPCs carry no tokens and any client can \
                 submit plans; use this only on a private test network"
            );
        }
        return Ok(None);
    };
    let secrets = accepted_secrets(secret, peers);
    let verifier = TokenVerifier::new(&secrets, audience_of(audience))
        .map_err(|e| NodeError::Settings(format!("worker_secret: {e}")))?
        .single_use();
    Ok(Some(Arc::new(verifier)))
}

/// The secrets a verifier accepts: `secret` (the current one) and, during rotation, the
/// previous.
fn accepted_secrets<'a>(secret: &'a str, peers: &'a PeerSettings) -> Vec<&'a [u8]> {
    let mut secrets = vec![secret.as_bytes()];
    if let Some(previous) = &peers.previous_secret {
        secrets.push(previous.as_bytes());
    }
    secrets
}

/// The verifier of the result tickets clients redeem at a worker: the current secret and,
/// during rotation, the previous; `None` without a secret.
pub fn ticket_verifier(peers: &PeerSettings) -> Result<Option<Arc<ResultTicketVerifier>>> {
    let Some(secret) = &peers.secret else {
        return Ok(None);
    };
    let secrets = accepted_secrets(secret, peers);
    let verifier = ResultTicketVerifier::new(&secrets)
        .map_err(|e| NodeError::Settings(format!("worker_secret: {e}")))?;
    Ok(Some(Arc::new(verifier)))
}
