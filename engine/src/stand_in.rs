//! A [`Queries`] service for unit tests of the front doors: the real lifecycle over one
//! process with an in-memory Iceberg catalog whose files live in a directory, and no workers.
//! What the front doors see of it (history, errors, cancellation, results) is what they see of
//! a coordinator; only the catalog and the cluster are left out.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use datafusion_distributed::DefaultChannelResolver;

use crate::cluster::{PoolSettings, WorkerPool};
use crate::engine::{Engine, EngineSettings};
use crate::error::{Error, Result};
use crate::queries::Queries;

/// `Queries` over an engine whose catalog keeps its tables under `warehouse`, with `settings`.
pub async fn queries_in(warehouse: &Path, settings: EngineSettings) -> Result<Arc<Queries>> {
    let catalog = sqe_iceberg::storage::memory_catalog("stand-in", warehouse)
        .await
        .map_err(|e| Error::Internal(format!("memory catalog: {e}")))?;
    let channels = Arc::new(DefaultChannelResolver::default());
    let workers = WorkerPool::new(Vec::new(), channels.clone(), PoolSettings::default());
    let catalog = crate::catalog::ConnectedCatalog {
        catalog: Arc::new(catalog),
        committer: Arc::new(sqe_iceberg::commit::NoCommits),
        views: Arc::new(crate::catalog::NoViews),
    };
    let engine = Engine::new(settings, catalog, workers, channels).await?;
    Ok(Queries::new(
        engine,
        Duration::from_secs(60),
        crate::queries::AdmissionLimits::default(),
    ))
}
