//! Committing metadata changes SQE builds itself (row-level deletes): iceberg-rust 0.10 commits
//! only through its own transaction actions, whose `TableCommit` cannot be built outside it, so
//! each catalog kind gets SQE's own optimistic commit of the spec's requirements and updates.

use std::fmt;

use async_trait::async_trait;
use iceberg::{Error, ErrorKind, Result, TableIdent, TableRequirement, TableUpdate};

/// Applies `updates` to a table atomically, if and only if every requirement holds in the
/// catalog at that moment. A requirement that fails is `CatalogCommitConflicts` (nothing was
/// applied); `TableNotFound`, `DataInvalid` and `FeatureUnsupported` were refused, so nothing
/// was applied either; any other error leaves the outcome open.
#[async_trait]
pub trait CommitUpdates: fmt::Debug + Send + Sync {
    async fn commit_updates(
        &self,
        table: &TableIdent,
        requirements: Vec<TableRequirement>,
        updates: Vec<TableUpdate>,
    ) -> Result<()>;
}

/// For catalogs SQE cannot commit its own changes to (in-memory ones in unit tests).
#[derive(Debug, Default)]
pub struct NoCommits;

#[async_trait]
impl CommitUpdates for NoCommits {
    async fn commit_updates(
        &self,
        table: &TableIdent,
        _requirements: Vec<TableRequirement>,
        _updates: Vec<TableUpdate>,
    ) -> Result<()> {
        Err(Error::new(
            ErrorKind::FeatureUnsupported,
            format!("the catalog of {table} takes no row-level changes"),
        ))
    }
}
