//! Which workers can take tasks right now.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use datafusion::error::DataFusionError;
use datafusion_distributed::{GetWorkerInfoRequest, WorkerResolver};
use sqe_worker::channel::SqeChannelResolver;
use tokio::task::JoinHandle;
use url::Url;

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the coordinator last learned about one worker.
#[derive(Debug, Clone)]
pub struct WorkerStatus {
    pub url: Url,
    /// It answered the last probe (possibly with an authentication error).
    pub reachable: bool,
    /// It refused the coordinator's token: a `worker_secret` mismatch.
    pub auth_failed: bool,
    pub version: Option<String>,
    pub last_seen: Option<Instant>,
    /// Its version is one the coordinator sends tasks to.
    pub compatible: bool,
}

/// Which worker versions get tasks: during a rolling deploy only the new code's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum VersionRequirement {
    #[default]
    Any,
    Exact(String),
}

impl VersionRequirement {
    pub fn accepts(&self, version: Option<&str>) -> bool {
        match self {
            VersionRequirement::Any => true,
            VersionRequirement::Exact(expected) => version == Some(expected.as_str()),
        }
    }
}

/// Why a probe did not return the worker's info.
enum ProbeError {
    /// The worker answered, refusing the token.
    Unauthenticated(String),
    /// Nothing usable came back.
    Unreachable(String),
}

/// The configured workers and their reachability, refreshed by a background probe.
///
/// The distributed planner asks for worker URLs synchronously while planning; it gets the
/// workers that answered the last probe. With none reachable the coordinator plans the query
/// for itself instead of sending tasks nowhere.
///
/// A worker that answers but refuses the coordinator's token stays in the rotation on purpose:
/// queries sent to it fail with "worker authentication failed at <url>", which points at the
/// misconfigured secret, and every probe logs it.
#[derive(Debug)]
pub struct WorkerPool {
    status: RwLock<Vec<WorkerStatus>>,
    required: RwLock<VersionRequirement>,
    channels: SqeChannelResolver,
    probe_task: RwLock<Option<JoinHandle<()>>>,
}

impl WorkerPool {
    pub fn new(
        urls: Vec<Url>,
        channels: SqeChannelResolver,
        required: VersionRequirement,
    ) -> Arc<Self> {
        let status = urls
            .into_iter()
            .map(|url| WorkerStatus {
                url,
                reachable: false,
                auth_failed: false,
                version: None,
                last_seen: None,
                compatible: false,
            })
            .collect();
        Arc::new(Self {
            status: RwLock::new(status),
            required: RwLock::new(required),
            channels,
            probe_task: RwLock::new(None),
        })
    }

    pub fn statuses(&self) -> Vec<WorkerStatus> {
        self.status.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// The workers that get tasks: reachable, of a compatible version.
    pub fn reachable_urls(&self) -> Vec<Url> {
        self.statuses()
            .into_iter()
            .filter(|s| s.reachable && s.compatible)
            .map(|s| s.url)
            .collect()
    }

    pub fn required_version(&self) -> VersionRequirement {
        self.required.read().map(|r| r.clone()).unwrap_or_default()
    }

    /// Changes which versions get tasks, from the next query on (a rolling deploy's switch).
    pub fn require_version(&self, required: VersionRequirement) {
        if let Ok(mut status) = self.status.write() {
            for entry in status.iter_mut() {
                entry.compatible = required.accepts(entry.version.as_deref());
            }
        }
        if let Ok(mut slot) = self.required.write() {
            *slot = required;
        }
    }

    /// Asks every worker for its info, concurrently, and records who answered.
    pub async fn probe(&self) {
        let urls: Vec<Url> = self.statuses().into_iter().map(|s| s.url).collect();
        let probes = urls.iter().map(|url| self.probe_one(url));
        let results = futures::future::join_all(probes).await;
        let now = Instant::now();
        let required = self.required_version();
        if let Ok(mut status) = self.status.write() {
            for (entry, result) in status.iter_mut().zip(results) {
                match result {
                    Ok(version) => {
                        if !entry.reachable || entry.auth_failed {
                            tracing::info!(worker = %entry.url, %version, "worker reachable");
                        }
                        let compatible = required.accepts(Some(&version));
                        if !compatible && (entry.compatible || !entry.reachable) {
                            tracing::warn!(worker = %entry.url, %version, ?required, "worker version not accepted: it gets no tasks");
                        }
                        entry.reachable = true;
                        entry.auth_failed = false;
                        entry.version = Some(version);
                        entry.last_seen = Some(now);
                        entry.compatible = compatible;
                    }
                    Err(ProbeError::Unauthenticated(message)) => {
                        tracing::error!(worker = %entry.url, %message, "worker refuses this coordinator's token: check worker_secret");
                        entry.reachable = true;
                        entry.auth_failed = true;
                        entry.last_seen = Some(now);
                        // Kept in the rotation, so queries fail naming the bad secret.
                        entry.compatible = true;
                    }
                    Err(ProbeError::Unreachable(e)) => {
                        if entry.reachable {
                            tracing::warn!(worker = %entry.url, error = %e, "worker unreachable");
                        }
                        entry.reachable = false;
                    }
                }
            }
        }
    }

    async fn probe_one(&self, url: &Url) -> Result<String, ProbeError> {
        let mut client = self
            .channels
            .client(url)
            .map_err(|e| ProbeError::Unreachable(e.to_string()))?;
        let response = tokio::time::timeout(
            PROBE_TIMEOUT,
            client.get_worker_info(GetWorkerInfoRequest {}),
        )
        .await
        .map_err(|_| ProbeError::Unreachable("timed out".to_string()))?;
        match response {
            Ok(info) => Ok(info.into_inner().version),
            Err(status) if status.code() == tonic::Code::Unauthenticated => {
                Err(ProbeError::Unauthenticated(status.message().to_string()))
            }
            Err(status) => Err(ProbeError::Unreachable(status.message().to_string())),
        }
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
        let peers = crate::config::CoordinatorConfig::default().peer_settings()?;
        let channels = crate::peers::channel_resolver("coordinator", &peers)?;
        let pool = WorkerPool::new(vec![url], channels, VersionRequirement::Any);
        pool.probe().await;
        assert!(pool.reachable_urls().is_empty());
        assert!(!pool.statuses()[0].reachable);
        Ok(())
    }

    fn version_requirement(version: &str) -> VersionRequirement {
        VersionRequirement::Exact(version.into())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_workers_of_the_required_version_get_tasks()
    -> Result<(), Box<dyn std::error::Error>> {
        let mut workers = Vec::new();
        for version in ["v1", "v2"] {
            let mut config = crate::config::WorkerConfig::default();
            config.worker.allow_unauthenticated_workers = true;
            config.worker.version = Some(version.into());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            workers.push(crate::runtime::start_worker(&config, listener).await?);
        }
        let urls: Vec<Url> = workers.iter().map(|w| w.url.clone()).collect();
        let mut coordinator = crate::config::CoordinatorConfig::default();
        coordinator.coordinator.allow_unauthenticated_workers = true;
        let channels =
            crate::peers::channel_resolver("coordinator", &coordinator.peer_settings()?)?;
        let pool = WorkerPool::new(urls.clone(), channels, version_requirement("v1"));
        pool.probe().await;
        assert_eq!(pool.reachable_urls(), [urls[0].clone()]);
        let versions: Vec<Option<String>> =
            pool.statuses().into_iter().map(|s| s.version).collect();
        assert_eq!(versions, [Some("v1".into()), Some("v2".into())]);

        // The rolling deploy's switch: from the next query on, only v2 gets tasks.
        pool.require_version(version_requirement("v2"));
        assert_eq!(pool.reachable_urls(), [urls[1].clone()]);
        pool.probe().await;
        assert_eq!(pool.reachable_urls(), [urls[1].clone()]);
        pool.require_version(VersionRequirement::Any);
        assert_eq!(pool.reachable_urls(), urls);
        for worker in workers {
            worker.stop().await;
        }
        Ok(())
    }
}
