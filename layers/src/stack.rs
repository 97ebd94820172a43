//! Where the order of the layers is decided.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use tonic::body::Body;
use tonic::transport::{Channel, ClientTlsConfig};
use tower::ServiceBuilder;
use tower::retry::budget::TpsBudget;
use tower::util::BoxCloneSyncService;

use crate::auth::{AuthLayer, TokenSigner, TokenVerifier, VerifyLayer};
use crate::io_runtime::IoRuntime;
use crate::peer_down::{PeerDownLayer, PeerFailures};
use crate::retry::{RetryLayer, RetryPolicy, RetryStats};
use crate::rpc_metrics::{RpcCounts, RpcMetricsLayer};
use crate::timeout::TimeoutLayer;
use crate::trace::{TraceExtractLayer, TraceLayer};
use crate::unreachable::UnreachableLayer;

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
    /// The stack speaks TLS to its peers; an `http://` peer would get tokens and plans in clear.
    #[error("'{url}' is not an https:// URL, and TLS between the nodes is on")]
    Plaintext { url: String },
    #[error("TLS to '{url}': {source}")]
    Tls {
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

/// Builds layered channels, outermost first: unreachable -> trace -> retry -> peer-down report -> RPC counts ->
/// timeout -> auth -> channel on the I/O runtime. Retry sits above timeout so each attempt gets
/// its own deadline, and above auth so each attempt carries a fresh token; the counts see each
/// attempt. A peer is reported down by the first attempt that cannot reach it, not once retries
/// are spent: a call still retrying is dropped when its query fails another way first, and its
/// report would be lost with it. Outermost, a peer that could not be reached becomes an
/// `UNAVAILABLE` status naming it, once the layers below have seen the channel's own error.
/// One stack per process shares the retry budget and the counts.
#[derive(Debug, Clone)]
pub struct WorkerChannelStack {
    io: Arc<IoRuntime>,
    signer: Option<Arc<TokenSigner>>,
    settings: ChannelSettings,
    retry: RetryLayer,
    rpcs: RpcCounts,
    /// TLS for every peer: `https://` URLs only. `None`: `http://` in clear, and `https://`
    /// checked against the system's roots.
    tls: Option<ClientTlsConfig>,
    failures: PeerFailures,
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
            tls: None,
            failures: PeerFailures::default(),
        }
    }

    /// Where attempts that could not reach their peer are reported.
    pub fn peer_failures(&self) -> &PeerFailures {
        &self.failures
    }

    /// Speaks TLS to every peer, and refuses to build channels to `http://` URLs.
    pub fn with_tls(mut self, tls: ClientTlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Whether peers must be reached over TLS.
    pub fn requires_tls(&self) -> bool {
        self.tls.is_some()
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

    /// A channel to `url` that connects lazily (on the first request) and reconnects as needed;
    /// its tokens are for `url`.
    pub fn channel(&self, url: &str) -> Result<LayeredChannel, StackError> {
        self.channel_for(url, None)
    }

    /// A channel to `url` whose tokens are for `audience` (a peer known by its role) when given.
    pub fn channel_for(
        &self,
        url: &str,
        audience: Option<&str>,
    ) -> Result<LayeredChannel, StackError> {
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
        // tonic speaks TLS to https:// URLs only, whatever the endpoint's TLS config.
        let https = endpoint.uri().scheme_str() == Some("https");
        let tls = match (&self.tls, https) {
            (Some(tls), true) => Some(tls.clone()),
            (Some(_), false) => {
                return Err(StackError::Plaintext {
                    url: url.to_string(),
                });
            }
            (None, true) => Some(ClientTlsConfig::new().with_native_roots()),
            (None, false) => None,
        };
        let endpoint = match tls {
            Some(tls) => endpoint.tls_config(tls).map_err(|source| StackError::Tls {
                url: url.to_string(),
                source,
            })?,
            None => endpoint,
        };
        Ok(self.wrap_for(endpoint.connect_lazy(), url, audience))
    }

    /// The layers around any channel (an in-memory one, say); `target` names the peer and is
    /// its tokens' audience.
    pub fn wrap(&self, channel: Channel, target: &str) -> LayeredChannel {
        self.wrap_for(channel, target, None)
    }

    fn wrap_for(&self, channel: Channel, target: &str, audience: Option<&str>) -> LayeredChannel {
        let service = ServiceBuilder::new()
            .layer(UnreachableLayer::new(target))
            .layer(TraceLayer::new(target))
            .layer(self.retry.clone())
            .layer(PeerDownLayer::new(self.failures.clone(), target))
            .layer(RpcMetricsLayer::new(self.rpcs.clone()))
            .layer(TimeoutLayer::new(self.settings.rpc_timeout))
            .option_layer(self.signer.as_ref().map(|s| {
                let auth = AuthLayer::for_peer(Arc::clone(s), "worker", target);
                match audience {
                    Some(audience) => auth.with_audience(audience),
                    None => auth,
                }
            }))
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
    server_layers_except(node, verifier, &[])
}

/// [`server_layers`] whose token check lets the methods at `open_paths` through: their
/// service checks a credential of its own (a worker's client-facing result DoGet).
pub fn server_layers_except(
    node: &str,
    verifier: Option<Arc<TokenVerifier>>,
    open_paths: &'static [&'static str],
) -> ServiceBuilder<
    tower::layer::util::Stack<
        tower::util::Either<VerifyLayer, tower::layer::util::Identity>,
        tower::layer::util::Stack<TraceExtractLayer, tower::layer::util::Identity>,
    >,
> {
    ServiceBuilder::new()
        .layer(TraceExtractLayer::new(node))
        .option_layer(verifier.map(|v| VerifyLayer::verifying_except(v, open_paths)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn with_tls_a_peer_in_clear_is_refused() -> Result<(), Box<dyn std::error::Error>> {
        let io = IoRuntime::new(1)?;
        let plain = WorkerChannelStack::new(Arc::clone(&io), None, ChannelSettings::default());
        assert!(!plain.requires_tls());
        assert!(plain.channel("http://w1:50052").is_ok());
        let tls = plain.with_tls(ClientTlsConfig::new().with_native_roots());
        assert!(tls.requires_tls());
        assert!(matches!(
            tls.channel("http://w1:50052"),
            Err(StackError::Plaintext { .. })
        ));
        assert!(tls.channel("https://w1:50052").is_ok());
        Ok(())
    }

    /// A stack retrying as `retry`, and the URL of a port nothing listens on.
    fn stack_and_closed_port(
        retry: RetryPolicy,
    ) -> Result<(WorkerChannelStack, String), Box<dyn std::error::Error>> {
        let gone = std::net::TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", gone.local_addr()?);
        drop(gone);
        let settings = ChannelSettings {
            retry,
            ..ChannelSettings::default()
        };
        Ok((
            WorkerChannelStack::new(IoRuntime::new(1)?, None, settings),
            url,
        ))
    }

    /// A query that fails another way drops its calls still waiting to retry; the peer they
    /// could not reach must already be reported by then.
    #[tokio::test]
    async fn a_peer_is_reported_by_the_first_attempt_that_cannot_reach_it()
    -> Result<(), Box<dyn std::error::Error>> {
        let (stack, url) = stack_and_closed_port(RetryPolicy {
            max_attempts: 3,
            base_backoff: Duration::from_secs(60),
            max_backoff: Duration::from_secs(60),
        })?;
        let heard = Arc::new(crate::peer_down::tests::Heard::default());
        let listener: Arc<dyn crate::peer_down::PeerDown> = heard.clone();
        stack.peer_failures().listen(Arc::downgrade(&listener));
        let mut health = tonic_health::pb::health_client::HealthClient::new(stack.channel(&url)?);
        let call = health.check(tonic_health::pb::HealthCheckRequest::default());
        let dropped = tokio::time::timeout(Duration::from_secs(1), call).await;
        assert!(dropped.is_err(), "the call waits to retry: {dropped:?}");
        let targets: Vec<String> = heard.0.lock().iter().map(|(t, _)| t.clone()).collect();
        assert_eq!(targets, [url]);
        Ok(())
    }

    /// The caller learns which peer is gone from the status itself.
    #[tokio::test]
    async fn a_peer_that_cannot_be_reached_is_named_in_the_status()
    -> Result<(), Box<dyn std::error::Error>> {
        let (stack, url) = stack_and_closed_port(RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        })?;
        let mut health = tonic_health::pb::health_client::HealthClient::new(stack.channel(&url)?);
        let status = health
            .check(tonic_health::pb::HealthCheckRequest::default())
            .await
            .err()
            .ok_or("a closed port answered")?;
        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert!(
            status
                .message()
                .starts_with(&format!("{url} could not be reached: ")),
            "{status:?}"
        );
        Ok(())
    }
}
