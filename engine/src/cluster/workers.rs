//! Which workers can take tasks right now.
//!
//! Workers come from two places, merged by URL: `worker_urls` in the coordinator's config
//! (their liveness is a periodic `GetWorkerInfo` probe), and workers that register over the
//! control plane (their liveness is their heartbeats; they are probed only until their
//! registered URL and version are confirmed, as seed 001's version-aware resolver polls only
//! workers whose version is unknown).

use std::sync::Arc;

use parking_lot::RwLock;
use std::time::{Duration, Instant};

use super::Channels;
use datafusion::error::DataFusionError;
use datafusion_distributed::{ChannelResolver, GetWorkerInfoRequest, WorkerResolver};
use sqe_layers::peer_down::PeerDown;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use url::Url;

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A worker's state as `system.runtime.nodes` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerState {
    /// Gets tasks.
    Active,
    /// Shutting down: finishes its tasks, gets no new ones.
    Draining,
    /// Missed its heartbeats, or does not answer: gets no tasks until it is back.
    Unreachable,
    /// Up, but of a version the coordinator sends no tasks to.
    Incompatible,
}

impl WorkerState {
    pub fn name(self) -> &'static str {
        match self {
            WorkerState::Active => "active",
            WorkerState::Draining => "draining",
            WorkerState::Unreachable => "unreachable",
            WorkerState::Incompatible => "incompatible",
        }
    }
}

/// What a registered worker told the coordinator.
#[derive(Debug, Clone)]
pub struct Registration {
    pub node_id: String,
    pub heartbeat_interval: Duration,
    pub last_heartbeat: Instant,
}

impl Registration {
    /// It has not missed `missed_heartbeats` heartbeats in a row.
    fn live(&self, missed_heartbeats: u32) -> bool {
        self.last_heartbeat.elapsed() <= self.heartbeat_interval * missed_heartbeats
    }
}

/// What the coordinator last learned about one worker.
#[derive(Debug, Clone)]
pub struct WorkerStatus {
    pub url: Url,
    /// Listed in `worker_urls` (kept when it deregisters; probed while not registered).
    pub configured: bool,
    /// Listed by the last answer for `worker_dns` (kept and probed like a configured one).
    pub discovered: bool,
    /// Present while the worker is registered over the control plane.
    pub registration: Option<Registration>,
    /// The node id it last registered with, kept after it leaves.
    known_as: Option<String>,
    /// It answered the last probe (possibly with an authentication error). For a registered
    /// worker: its registered URL was confirmed by a probe.
    pub reachable: bool,
    /// It refused the coordinator's token: a `worker_secret` mismatch.
    pub auth_failed: bool,
    pub version: Option<String>,
    /// The last successful probe or heartbeat.
    pub last_seen: Option<Instant>,
    /// Its version is one the coordinator sends tasks to.
    pub compatible: bool,
    pub draining: bool,
    /// Bumped by each registration, so a probe begun before it cannot confirm it.
    epoch: u64,
}

impl WorkerStatus {
    fn new(url: Url, configured: bool) -> Self {
        Self {
            url,
            configured,
            discovered: false,
            registration: None,
            known_as: None,
            reachable: false,
            auth_failed: false,
            version: None,
            last_seen: None,
            compatible: false,
            draining: false,
            epoch: 0,
        }
    }

    /// Whether it is up: a registered worker by its heartbeats, a configured one by probes.
    fn alive(&self, missed_heartbeats: u32) -> bool {
        match &self.registration {
            Some(r) => self.reachable && r.live(missed_heartbeats),
            None => self.reachable,
        }
    }

    /// Registered at `url` as `node_id` (a call from another node, or from an old instance of
    /// this one, must not change the current registration).
    fn registered_as(&self, url: &Url, node_id: &str) -> bool {
        &self.url == url
            && self
                .registration
                .as_ref()
                .is_some_and(|r| r.node_id == node_id)
    }

    pub fn state(&self, missed_heartbeats: u32) -> WorkerState {
        if !self.alive(missed_heartbeats) {
            WorkerState::Unreachable
        } else if self.draining {
            WorkerState::Draining
        } else if !self.compatible {
            WorkerState::Incompatible
        } else {
            WorkerState::Active
        }
    }

    /// Its name in `system.runtime`: the node id it registered, else its URL's `host:port`.
    pub fn node_id(&self) -> String {
        match &self.known_as {
            Some(name) => name.clone(),
            None => host_port(&self.url),
        }
    }

    /// Needs a probe: configured workers always (probes are their liveness), registered ones
    /// until their URL and version are confirmed.
    fn wants_probe(&self) -> bool {
        self.registration.is_none() || !self.reachable
    }

    /// Listed without registering: by `worker_urls` or by DNS.
    fn listed(&self) -> bool {
        self.configured || self.discovered
    }
}

/// The IPv4 addresses of a DNS answer that has both families: a dual-stack Service lists each
/// pod twice, and one worker must not be two.
fn one_family(addrs: Vec<std::net::SocketAddr>) -> Vec<std::net::SocketAddr> {
    if addrs.iter().any(std::net::SocketAddr::is_ipv4) {
        addrs
            .into_iter()
            .filter(std::net::SocketAddr::is_ipv4)
            .collect()
    } else {
        addrs
    }
}

/// The worker URL of a resolved address: `https://` when the nodes speak TLS.
fn url_of(addr: std::net::SocketAddr, tls: bool) -> Option<Url> {
    let scheme = if tls { "https" } else { "http" };
    Url::parse(&format!("{scheme}://{addr}")).ok()
}

/// A URL's `host:port`.
pub fn host_port(url: &Url) -> String {
    match (url.host_str(), url.port_or_known_default()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        _ => url.to_string(),
    }
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

/// How the pool judges its workers.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    pub required: VersionRequirement,
    /// A registered worker silent for this many heartbeat intervals is unreachable.
    pub missed_heartbeats: u32,
    /// A registered worker (not in `worker_urls`) silent this long is forgotten.
    pub forget_after: Duration,
    /// `host:port` whose addresses are workers (a headless Service), looked up before each probe.
    pub dns: Option<String>,
    /// The nodes speak TLS: workers found by DNS are dialled at `https://`.
    pub tls: bool,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            required: VersionRequirement::Any,
            missed_heartbeats: 3,
            forget_after: Duration::from_secs(600),
            dns: None,
            tls: false,
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

/// A worker's registration, as the control plane received it.
#[derive(Debug, Clone)]
pub struct Announcement {
    pub url: Url,
    pub node_id: String,
    pub version: String,
    pub heartbeat_interval: Duration,
}

/// The workers and their state, refreshed by a background probe and by the control plane.
///
/// The distributed planner asks for worker URLs synchronously while planning; it gets the
/// active ones. With none the coordinator plans the query for itself instead of sending tasks
/// nowhere.
///
/// A worker that answers but refuses the coordinator's token stays in the rotation on purpose:
/// queries sent to it fail with "worker authentication failed at <url>", which points at the
/// misconfigured secret, and every probe logs it.
pub struct WorkerPool {
    status: RwLock<Vec<WorkerStatus>>,
    required: RwLock<VersionRequirement>,
    missed_heartbeats: u32,
    forget_after: Duration,
    dns: Option<String>,
    tls: bool,
    channels: Channels,
    /// Wakes the probe loop to confirm a new registration at once.
    registered: Arc<Notify>,
    probe_task: RwLock<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool")
            .field("status", &self.status)
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

impl WorkerPool {
    pub fn new(urls: Vec<Url>, channels: Channels, settings: PoolSettings) -> Arc<Self> {
        let mut status: Vec<WorkerStatus> = Vec::new();
        for url in urls {
            if !status.iter().any(|s| s.url == url) {
                status.push(WorkerStatus::new(url, true));
            }
        }
        Arc::new(Self {
            status: RwLock::new(status),
            required: RwLock::new(settings.required),
            missed_heartbeats: settings.missed_heartbeats.max(1),
            forget_after: settings.forget_after,
            dns: settings.dns,
            tls: settings.tls,
            channels,
            registered: Arc::new(Notify::new()),
            probe_task: RwLock::new(None),
        })
    }

    pub fn statuses(&self) -> Vec<WorkerStatus> {
        self.status.read().clone()
    }

    pub fn missed_heartbeats(&self) -> u32 {
        self.missed_heartbeats
    }

    /// The workers that get tasks: the active ones.
    pub fn reachable_urls(&self) -> Vec<Url> {
        self.statuses()
            .into_iter()
            .filter(|s| s.state(self.missed_heartbeats) == WorkerState::Active)
            .map(|s| s.url)
            .collect()
    }

    /// The name `system.runtime` gives the worker at `url`.
    pub fn node_id_of(&self, url: &Url) -> String {
        self.status
            .read()
            .iter()
            .find(|s| &s.url == url)
            .map_or_else(|| host_port(url), WorkerStatus::node_id)
    }

    pub fn required_version(&self) -> VersionRequirement {
        self.required.read().clone()
    }

    /// Changes which versions get tasks, from the next query on (a rolling deploy's switch).
    pub fn require_version(&self, required: VersionRequirement) {
        // Under the status lock, as probes and registrations read the requirement: none of
        // them can apply the old one after this.
        let mut status = self.status.write();
        for entry in status.iter_mut().filter(|e| !e.auth_failed) {
            entry.compatible = required.accepts(entry.version.as_deref());
        }
        tracing::info!(?required, "worker version requirement set");
        {
            let mut slot = self.required.write();
            *slot = required;
        }
    }

    /// A worker registered: it gets tasks once a probe confirms its URL and version. Refused
    /// (with the reason) while another live node holds the URL.
    pub fn register(&self, worker: Announcement) -> Result<(), String> {
        {
            let mut status = self.status.write();
            let required = self.required_version();
            let missed = self.missed_heartbeats;
            if let Some(holder) = status
                .iter()
                .find(|s| s.url == worker.url)
                .and_then(|s| s.registration.as_ref())
                .filter(|r| r.node_id != worker.node_id && r.live(missed))
            {
                return Err(format!(
                    "{} is registered by the live node '{}': give each worker its own advertise_url",
                    worker.url, holder.node_id
                ));
            }
            let index = match status.iter().position(|s| s.url == worker.url) {
                Some(i) => i,
                None => {
                    status.push(WorkerStatus::new(worker.url.clone(), false));
                    status.len() - 1
                }
            };
            let entry = &mut status[index];
            match &entry.version {
                Some(old) if *old != worker.version => tracing::info!(
                    url = %worker.url, from = %old, to = %worker.version,
                    "worker came back with a new version"
                ),
                _ => {}
            }
            tracing::info!(url = %worker.url, node_id = %worker.node_id, version = %worker.version, "worker registered");
            entry.known_as = Some(worker.node_id.clone());
            entry.registration = Some(Registration {
                node_id: worker.node_id,
                heartbeat_interval: worker.heartbeat_interval,
                last_heartbeat: Instant::now(),
            });
            entry.compatible = required.accepts(Some(&worker.version));
            entry.version = Some(worker.version);
            entry.reachable = false;
            entry.auth_failed = false;
            entry.draining = false;
            entry.last_seen = Some(Instant::now());
            entry.epoch += 1;
        }
        self.registered.notify_one();
        Ok(())
    }

    /// A heartbeat; false when the worker is not registered here (it should register again).
    pub fn heartbeat(&self, url: &Url, node_id: &str, draining: bool) -> bool {
        let mut status = self.status.write();
        let Some(entry) = status.iter_mut().find(|s| s.registered_as(url, node_id)) else {
            return false;
        };
        let Some(registration) = entry.registration.as_mut() else {
            return false;
        };
        if !registration.live(self.missed_heartbeats) {
            tracing::info!(%url, node_id, "worker heartbeats resumed");
        }
        let now = Instant::now();
        registration.last_heartbeat = now;
        entry.last_seen = Some(now);
        if draining && !entry.draining {
            entry.draining = true;
        }
        true
    }

    /// The worker is shutting down: no new tasks. False when it is not registered here (under
    /// that node id).
    pub fn drain(&self, url: &Url, node_id: &str) -> bool {
        let mut status = self.status.write();
        let Some(entry) = status.iter_mut().find(|s| s.registered_as(url, node_id)) else {
            return false;
        };
        if !entry.draining {
            tracing::info!(%url, "worker draining: no new tasks");
        }
        entry.draining = true;
        true
    }

    /// The worker left. A configured one stays listed, unreachable until a probe finds it again.
    /// Ignored unless `node_id` is the registration at that URL (a late call of an old instance
    /// must not remove its successor).
    pub fn deregister(&self, url: &Url, node_id: &str) {
        {
            let mut status = self.status.write();
            if !status.iter().any(|s| s.registered_as(url, node_id)) {
                return;
            }
            tracing::info!(%url, node_id, "worker deregistered");
            status.retain(|s| &s.url != url || s.listed());
            if let Some(entry) = status.iter_mut().find(|s| &s.url == url) {
                entry.registration = None;
                entry.reachable = false;
                entry.draining = false;
                entry.epoch += 1;
            }
        }
    }

    /// Lists the workers `name` resolves to: new addresses join (probed like configured
    /// workers), addresses no longer listed leave unless registered. A failed lookup keeps the
    /// last answer: a DNS hiccup must not empty the cluster.
    async fn discover(&self, name: &str) {
        let found: Vec<Url> = match tokio::time::timeout(
            PROBE_TIMEOUT,
            tokio::net::lookup_host(name),
        )
        .await
        {
            Ok(Ok(addrs)) => one_family(addrs.collect())
                .into_iter()
                .filter_map(|addr| url_of(addr, self.tls))
                .collect(),
            Ok(Err(e)) => {
                tracing::warn!(worker_dns = name, error = %e, "worker DNS lookup failed; keeping the last answer");
                return;
            }
            Err(_) => {
                tracing::warn!(
                    worker_dns = name,
                    "worker DNS lookup timed out; keeping the last answer"
                );
                return;
            }
        };
        self.listed_by_dns(name, &found);
    }

    /// Applies one DNS answer to the list.
    fn listed_by_dns(&self, name: &str, found: &[Url]) {
        let mut status = self.status.write();
        for entry in status.iter_mut() {
            let listed = found.contains(&entry.url);
            if entry.discovered && !listed {
                tracing::info!(worker = %entry.url, worker_dns = name, "worker no longer in DNS");
            }
            entry.discovered = listed;
        }
        for url in found {
            if !status.iter().any(|s| &s.url == url) {
                tracing::info!(worker = %url, worker_dns = name, "worker found in DNS");
                let mut entry = WorkerStatus::new(url.clone(), false);
                entry.discovered = true;
                status.push(entry);
            }
        }
        status.retain(|s| s.listed() || s.registration.is_some());
    }

    /// Probes the workers that need it, concurrently, and records who answered; forgets
    /// registered workers long silent.
    pub async fn probe(&self) {
        if let Some(name) = &self.dns {
            self.discover(name).await;
        }
        let targets: Vec<(Url, u64)> = self
            .statuses()
            .into_iter()
            .filter(WorkerStatus::wants_probe)
            .map(|s| (s.url, s.epoch))
            .collect();
        let probes = targets.iter().map(|(url, _)| self.probe_one(url));
        let results = futures::future::join_all(probes).await;
        let now = Instant::now();
        let mut status = self.status.write();
        let required = self.required_version();
        for ((url, epoch), result) in targets.into_iter().zip(results) {
            let Some(entry) = status.iter_mut().find(|s| s.url == url && s.epoch == epoch) else {
                continue;
            };
            match result {
                Ok(version) => {
                    if !entry.reachable || entry.auth_failed {
                        tracing::info!(worker = %entry.url, %version, "worker reachable");
                    }
                    if let Some(registered) = entry
                        .version
                        .as_deref()
                        .filter(|_| entry.registration.is_some())
                        && registered != version
                    {
                        tracing::warn!(worker = %entry.url, registered, reported = %version, "worker reports another version than it registered: using the reported one");
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
                    if entry.reachable || entry.registration.is_some() {
                        tracing::warn!(worker = %entry.url, error = %e, "worker unreachable");
                    }
                    entry.reachable = false;
                }
            }
        }
        let forget_after = self.forget_after;
        status.retain_mut(|s| {
            let silent = s
                .registration
                .as_ref()
                .is_some_and(|r| r.last_heartbeat.elapsed() > forget_after);
            if !silent {
                return true;
            }
            tracing::info!(worker = %s.url, "forgetting a worker silent for {forget_after:?}");
            s.registration = None;
            s.reachable = false;
            s.listed()
        });
    }

    async fn probe_one(&self, url: &Url) -> Result<String, ProbeError> {
        let mut client = self
            .channels
            .get_worker_client_for_url(url)
            .await
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

    /// Probes now, then every `interval` (and at once after a registration) in the background
    /// until the pool is dropped.
    pub async fn start(self: &Arc<Self>, interval: Duration) {
        self.probe().await;
        let weak = Arc::downgrade(self);
        let registered = Arc::clone(&self.registered);
        let task = sqe_layers::task::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.tick().await;
            loop {
                tokio::select! {
                    _ = ticker.tick() => {}
                    () = registered.notified() => {}
                }
                let Some(pool) = weak.upgrade() else { break };
                pool.probe().await;
            }
        });
        if let Some(old) = self.probe_task.write().replace(task) {
            old.abort();
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        if let Some(task) = self.probe_task.write().take() {
            task.abort();
        }
    }
}

/// An attempt of a call that could not reach a worker (retried or not) takes it out of the
/// rotation at once, instead of at the next probe or missed heartbeat; the probe, woken now,
/// brings it back when it answers again. Only the change wakes the probe: its own failed calls
/// come back here too.
impl PeerDown for WorkerPool {
    fn unreachable(&self, target: &str, error: &str) {
        let Ok(url) = Url::parse(target) else {
            return;
        };
        let changed = {
            let mut status = self.status.write();
            match status.iter_mut().find(|s| s.url == url) {
                Some(entry) if entry.reachable => {
                    entry.reachable = false;
                    true
                }
                _ => false,
            }
        };
        if changed {
            tracing::warn!(worker = %url, error, "a call to the worker failed: no tasks for it until a probe reaches it");
            self.registered.notify_one();
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
mod tests;
