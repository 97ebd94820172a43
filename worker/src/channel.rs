//! SQE's `ChannelResolver`: every connection to a worker goes through the layer stack.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use datafusion::error::DataFusionError;
use datafusion_distributed::{
    BoxCloneSyncChannel, ChannelResolver, ObservabilityServiceClient, WorkerServiceClient,
    create_worker_client,
};
use sqe_layers::{LayeredChannel, WorkerChannelStack};
use sqe_proto::{RedeemedRequest, ResultStreamsClient, StopResultsRequest};
use url::Url;

/// Resolves worker URLs to clients whose channel is the full [`WorkerChannelStack`] (trace,
/// retry, timeout, token auth, connections on the I/O runtime). One client per URL is built
/// lazily and reused; channels reconnect by themselves, so a cached client never goes stale.
///
/// Build one per process (per node in `sqe local`) and register it on the coordinator's
/// session and in every worker's session builder, so worker-to-worker traffic is layered too.
#[derive(Clone)]
pub struct SqeChannelResolver {
    stack: WorkerChannelStack,
    clients: Arc<Mutex<HashMap<Url, WorkerServiceClient<BoxCloneSyncChannel>>>>,
    observability: Arc<Mutex<HashMap<Url, ObservabilityServiceClient<LayeredChannel>>>>,
    results: Arc<Mutex<HashMap<Url, ResultStreamsClient<LayeredChannel>>>>,
}

impl std::fmt::Debug for SqeChannelResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqeChannelResolver")
            .field("stack", &self.stack)
            .finish_non_exhaustive()
    }
}

impl SqeChannelResolver {
    pub fn new(stack: WorkerChannelStack) -> Self {
        Self {
            stack,
            clients: Arc::default(),
            observability: Arc::default(),
            results: Arc::default(),
        }
    }

    pub fn stack(&self) -> &WorkerChannelStack {
        &self.stack
    }

    /// The cached client for `url`, built on first use.
    pub fn client(
        &self,
        url: &Url,
    ) -> Result<WorkerServiceClient<BoxCloneSyncChannel>, DataFusionError> {
        self.cached(&self.clients, url, create_worker_client)
    }

    /// What `url` reports of the tasks it holds (datafusion-distributed's observability
    /// service), through the same layers.
    pub async fn task_progress(
        &self,
        url: &Url,
    ) -> Result<datafusion_distributed::GetTaskProgressResponse, tonic::Status> {
        let mut client = self
            .observability_client(url)
            .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?;
        Ok(client
            .get_task_progress(datafusion_distributed::GetTaskProgressRequest {})
            .await?
            .into_inner())
    }

    /// Ends the streams of query `query` that clients read from `url` with `status`
    /// ([`crate::results`]): the partitions that were being read there.
    pub async fn stop_results(
        &self,
        url: &Url,
        query: uuid::Uuid,
        status: &tonic::Status,
    ) -> Result<u64, tonic::Status> {
        let mut client = self.results_client(url)?;
        let request = StopResultsRequest {
            query_id: query.to_string(),
            code: status.code() as i32,
            message: status.message().to_string(),
        };
        Ok(client.stop(request).await?.into_inner().stopped)
    }

    /// How many of query `query`'s result partitions clients have started to read at `url`.
    pub async fn redeemed_results(
        &self,
        url: &Url,
        query: uuid::Uuid,
    ) -> Result<u64, tonic::Status> {
        let mut client = self.results_client(url)?;
        let request = RedeemedRequest {
            query_id: query.to_string(),
        };
        Ok(client.redeemed(request).await?.into_inner().partitions)
    }

    fn results_client(
        &self,
        url: &Url,
    ) -> Result<ResultStreamsClient<LayeredChannel>, tonic::Status> {
        self.cached(&self.results, url, ResultStreamsClient::new)
            .map_err(|e| tonic::Status::invalid_argument(e.to_string()))
    }

    /// The cached client of `url`'s observability service, built on first use.
    fn observability_client(
        &self,
        url: &Url,
    ) -> Result<ObservabilityServiceClient<LayeredChannel>, DataFusionError> {
        self.cached(&self.observability, url, ObservabilityServiceClient::new)
    }

    /// The client in `cache` for `url`, else one `build` makes over a new layered channel.
    fn cached<C: Clone>(
        &self,
        cache: &Mutex<HashMap<Url, C>>,
        url: &Url,
        build: impl FnOnce(LayeredChannel) -> C,
    ) -> Result<C, DataFusionError> {
        let mut clients = cache.lock();
        if let Some(client) = clients.get(url) {
            return Ok(client.clone());
        }
        let channel = self
            .stack
            .channel(url.as_str())
            .map_err(|e| DataFusionError::Configuration(e.to_string()))?;
        let client = build(channel);
        clients.insert(url.clone(), client.clone());
        Ok(client)
    }
}

#[async_trait]
impl ChannelResolver for SqeChannelResolver {
    async fn get_worker_client_for_url(
        &self,
        url: &Url,
    ) -> Result<WorkerServiceClient<BoxCloneSyncChannel>, DataFusionError> {
        self.client(url)
    }
}
