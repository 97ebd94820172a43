//! Where the order of the layers is decided.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use tonic::body::Body;
use tonic::transport::Channel;
use tower::ServiceBuilder;
use tower::retry::budget::TpsBudget;
use tower::util::BoxCloneSyncService;

use crate::auth::{AuthLayer, TokenSigner, TokenVerifier, VerifyLayer};
use crate::io_runtime::IoRuntime;
use crate::retry::{RetryLayer, RetryPolicy, RetryStats};
use crate::rpc_metrics::{RpcCounts, RpcMetricsLayer};
use crate::timeout::TimeoutLayer;
use crate::trace::{TraceExtractLayer, TraceLayer};

/// A layered channel, boxed: the type tonic clients and datafusion-distributed accept.
pub type LayeredChannel =
    BoxCloneSyncService<Request<Body>, Response<Body>, tonic::transport::Error>;

/// Why a channel could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("invalid URL '{url}': {source}")]
    InvalidUrl {
        url: String,
        #[source]
        source: tonic::transport::Error,
    },
}

/// Timeouts and retry settings of every channel a stack builds.
#[derive(Debug, Clone, Copy)]
pub struct ChannelSettings {
    /// Deadline for establishing a connection.
    pub connect_timeout: Duration,
    /// Deadline per attempt until response headers.
    pub rpc_timeout: Duration,
    pub retry: RetryPolicy,
    /// Retries allowed, as a percentage of requests (over a 10 s window, at least 10/s).
    pub retry_budget_percent: f32,
    /// HTTP/2 keep-alive ping interval on idle connections.
    pub keep_alive: Duration,
}

impl Default for ChannelSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            rpc_timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            retry_budget_percent: 20.0,
            keep_alive: Duration::from_secs(30),
        }
    }
}

/// Builds layered channels, outermost first: trace -> retry -> RPC counts -> timeout -> auth ->
/// channel on the I/O runtime. Retry sits above timeout so each attempt gets its own deadline,
/// and above auth so each attempt carries a fresh token; the counts see each attempt. One stack
/// per process shares the retry budget and the counts.
#[derive(Debug, Clone)]
pub struct WorkerChannelStack {
    io: Arc<IoRuntime>,
    signer: Option<Arc<TokenSigner>>,
    settings: ChannelSettings,
    retry: RetryLayer,
    rpcs: RpcCounts,
}

impl WorkerChannelStack {
    /// `signer: None` sends no tokens (for peers that do not check them).
    pub fn new(io: Arc<IoRuntime>, signer: Option<TokenSigner>, settings: ChannelSettings) -> Self {
        let budget = Arc::new(TpsBudget::new(
            Duration::from_secs(10),
            10,
            (settings.retry_budget_percent / 100.0).clamp(0.0, 10.0),
        ));
        let retry = RetryLayer::with_budget(settings.retry, budget);
        Self {
            io,
            signer: signer.map(Arc::new),
            settings,
            retry,
            rpcs: RpcCounts::default(),
        }
    }

    pub fn io_runtime(&self) -> &Arc<IoRuntime> {
        &self.io
    }

    pub fn retry_stats(&self) -> Arc<RetryStats> {
        self.retry.stats()
    }

    /// Attempts of every channel of this stack, by method, final code and attempt number.
    pub fn rpc_counts(&self) -> &RpcCounts {
        &self.rpcs
    }

    /// A channel to `url` that connects lazily (on the first request) and reconnects as needed.
    pub fn channel(&self, url: &str) -> Result<LayeredChannel, StackError> {
        let endpoint = self
            .io
            .endpoint(url)
            .map_err(|source| StackError::InvalidUrl {
                url: url.to_string(),
                source,
            })?
            .connect_timeout(self.settings.connect_timeout)
            .http2_keep_alive_interval(self.settings.keep_alive)
            .keep_alive_while_idle(true)
            .tcp_nodelay(true);
        Ok(self.wrap(endpoint.connect_lazy(), url))
    }

    /// The layers around any channel (an in-memory one, say); `target` names the peer.
    pub fn wrap(&self, channel: Channel, target: &str) -> LayeredChannel {
        let service = ServiceBuilder::new()
            .layer(TraceLayer::new(target))
            .layer(self.retry.clone())
            .layer(RpcMetricsLayer::new(self.rpcs.clone()))
            .layer(TimeoutLayer::new(self.settings.rpc_timeout))
            .option_layer(
                self.signer
                    .as_ref()
                    .map(|s| AuthLayer::for_peer(Arc::clone(s), "worker", target)),
            )
            .service(channel);
        BoxCloneSyncService::new(service)
    }
}

/// The server-side layers, outermost first: trace extract -> token verify (when a verifier is
/// given). Use with `tonic::transport::Server::builder().layer(server_layers(..))`.
pub fn server_layers(
    node: &str,
    verifier: Option<Arc<TokenVerifier>>,
) -> ServiceBuilder<
    tower::layer::util::Stack<
        tower::util::Either<VerifyLayer, tower::layer::util::Identity>,
        tower::layer::util::Stack<TraceExtractLayer, tower::layer::util::Identity>,
    >,
> {
    ServiceBuilder::new()
        .layer(TraceExtractLayer::new(node))
        .option_layer(verifier.map(VerifyLayer::verifying))
}
