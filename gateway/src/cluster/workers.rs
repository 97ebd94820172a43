//! Which workers can take tasks right now.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use datafusion::error::DataFusionError;
use datafusion_distributed::{
    BoxCloneSyncChannel, GetWorkerInfoRequest, WorkerResolver, create_worker_client,
};
use tokio::task::JoinHandle;
use tonic::transport::{Channel, Endpoint};
use url::Url;

const PROBE_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the coordinator last learned about one worker.
#[derive(Debug, Clone)]
pub struct WorkerStatus {
    pub url: Url,
    pub reachable: bool,
    pub version: Option<String>,
    pub last_seen: Option<Instant>,
}

/// The configured workers and their reachability, refreshed by a background probe.
///
/// The distributed planner asks for worker URLs synchronously while planning; it gets the
/// workers that answered the last probe. With none reachable the coordinator plans the query
/// for itself instead of sending tasks nowhere.
#[derive(Debug)]
pub struct WorkerPool {
    status: RwLock<Vec<WorkerStatus>>,
    channels: RwLock<HashMap<Url, Channel>>,
    probe_task: RwLock<Option<JoinHandle<()>>>,
}

impl WorkerPool {
    pub fn new(urls: Vec<Url>) -> Arc<Self> {
        let status = urls
            .into_iter()
            .map(|url| WorkerStatus {
                url,
                reachable: false,
                version: None,
                last_seen: None,
            })
            .collect();
        Arc::new(Self {
            status: RwLock::new(status),
            channels: RwLock::new(HashMap::new()),
            probe_task: RwLock::new(None),
        })
    }

    pub fn statuses(&self) -> Vec<WorkerStatus> {
        self.status.read().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn reachable_urls(&self) -> Vec<Url> {
        self.statuses()
            .into_iter()
            .filter(|s| s.reachable)
            .map(|s| s.url)
            .collect()
    }

    /// Asks every worker for its info, concurrently, and records who answered.
    pub async fn probe(&self) {
        let urls: Vec<Url> = self.statuses().into_iter().map(|s| s.url).collect();
        let probes = urls.iter().map(|url| self.probe_one(url));
        let results = futures::future::join_all(probes).await;
        let now = Instant::now();
        if let Ok(mut status) = self.status.write() {
            for (entry, result) in status.iter_mut().zip(results) {
                match result {
                    Ok(version) => {
                        if !entry.reachable {
                            tracing::info!(worker = %entry.url, %version, "worker reachable");
                        }
                        entry.reachable = true;
                        entry.version = Some(version);
                        entry.last_seen = Some(now);
                    }
                    Err(e) => {
                        if entry.reachable {
                            tracing::warn!(worker = %entry.url, error = %e, "worker unreachable");
                        }
                        entry.reachable = false;
                    }
                }
            }
        }
    }

    async fn probe_one(&self, url: &Url) -> Result<String, String> {
        let channel = self.channel(url)?;
        let mut client = create_worker_client(BoxCloneSyncChannel::new(channel));
        let response = tokio::time::timeout(
            PROBE_TIMEOUT,
            client.get_worker_info(GetWorkerInfoRequest {}),
        )
        .await
        .map_err(|_| "timed out".to_string())?
        .map_err(|status| status.message().to_string())?;
        Ok(response.into_inner().version)
    }

    fn channel(&self, url: &Url) -> Result<Channel, String> {
        if let Some(channel) = self.channels.read().ok().and_then(|c| c.get(url).cloned()) {
            return Ok(channel);
        }
        let channel = Endpoint::from_shared(url.to_string())
            .map_err(|e| format!("invalid worker URL {url}: {e}"))?
            .connect_timeout(PROBE_CONNECT_TIMEOUT)
            .timeout(PROBE_TIMEOUT)
            .connect_lazy();
        if let Ok(mut channels) = self.channels.write() {
            channels.insert(url.clone(), channel.clone());
        }
        Ok(channel)
    }

    /// Probes now, then every `interval` in the background until the pool is dropped.
    pub async fn start(self: &Arc<Self>, interval: Duration) {
        self.probe().await;
        let weak = Arc::downgrade(self);
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let Some(pool) = weak.upgrade() else { break };
                pool.probe().await;
            }
        });
        if let Ok(mut slot) = self.probe_task.write()
            && let Some(old) = slot.replace(task)
        {
            old.abort();
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        if let Ok(mut slot) = self.probe_task.write()
            && let Some(task) = slot.take()
        {
            task.abort();
        }
    }
}

/// The pool as datafusion-distributed sees it.
#[derive(Debug, Clone)]
pub struct PoolResolver(pub Arc<WorkerPool>);

impl WorkerResolver for PoolResolver {
    fn get_urls(&self) -> Result<Vec<Url>, DataFusionError> {
        Ok(self.0.reachable_urls())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unreachable_worker_is_not_offered() -> Result<(), Box<dyn std::error::Error>> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let url = Url::parse(&format!("http://{}", listener.local_addr()?))?;
        drop(listener);
        let pool = WorkerPool::new(vec![url]);
        pool.probe().await;
        assert!(pool.reachable_urls().is_empty());
        assert!(!pool.statuses()[0].reachable);
        Ok(())
    }
}
