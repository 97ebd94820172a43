//! The attempts of one commit. iceberg-rust retries a conflicting commit itself (reloading the
//! table and re-applying the append); this catalog view, handed to that one commit, sees each
//! attempt: a span per attempt, and the conflicts it met for the metrics. It also keeps the
//! commit on the table it was planned against: iceberg-rust rebases onto whatever table it
//! reloads under the name, so a table dropped and created again meanwhile would get the files.

use std::sync::atomic::{AtomicU32, Ordering};

use iceberg::table::Table;
use iceberg::{
    Catalog, Error, ErrorKind, NamespaceIdent, Result, TableCommit, TableCreation, TableIdent,
};
use tracing::Instrument;

/// `inner`, observing `update_table`, and loading only the table with the planned one's id.
#[derive(Debug)]
pub(crate) struct CommitAttempts<'a> {
    inner: &'a dyn Catalog,
    table_uuid: uuid::Uuid,
    attempts: AtomicU32,
    conflicts: AtomicU32,
}

impl<'a> CommitAttempts<'a> {
    /// The attempts of a commit to `planned` (the table as the statement loaded it).
    pub(crate) fn new(inner: &'a dyn Catalog, planned: &Table) -> Self {
        Self {
            inner,
            table_uuid: planned.metadata().uuid(),
            attempts: AtomicU32::new(0),
            conflicts: AtomicU32::new(0),
        }
    }

    /// Commit attempts the catalog refused as conflicting (another writer committed first).
    pub(crate) fn conflicts(&self) -> u32 {
        self.conflicts.load(Ordering::Relaxed)
    }
}

crate::catalog_view!(impl<'a> Catalog for CommitAttempts<'a>, inner = self.inner; {
    async fn update_table(&self, commit: TableCommit) -> Result<Table> {
        let attempt = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
        let span = tracing::info_span!(
            "iceberg.commit.attempt",
            attempt,
            conflict = tracing::field::Empty
        );
        let result = self
            .inner
            .update_table(commit)
            .instrument(span.clone())
            .await;
        if let Err(e) = &result
            && e.kind() == ErrorKind::CatalogCommitConflicts
        {
            self.conflicts.fetch_add(1, Ordering::Relaxed);
            span.record("conflict", true);
        }
        result
    }

    async fn create_table(
        &self,
        namespace: &NamespaceIdent,
        creation: TableCreation,
    ) -> Result<Table> {
        self.inner.create_table(namespace, creation).await
    }

    async fn load_table(&self, table: &TableIdent) -> Result<Table> {
        let loaded = self.inner.load_table(table).await?;
        if loaded.metadata().uuid() != self.table_uuid {
            return Err(Error::new(
                ErrorKind::TableNotFound,
                format!(
                    "table {table} was dropped while the statement ran (a table of that name \
                     was created since); nothing was written"
                ),
            ));
        }
        Ok(loaded)
    }

    async fn register_table(&self, table: &TableIdent, metadata_location: String) -> Result<Table> {
        self.inner.register_table(table, metadata_location).await
    }
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::racing::{Racing, TestResult, append, table_in_memory};

    #[tokio::test]
    async fn a_commit_beaten_by_another_writer_is_counted_and_still_lands() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (catalog, base) = table_in_memory(dir.path()).await?;

        // Another writer commits between our load and our commit.
        let racing = Racing::new(&catalog, base.identifier().clone(), 1);
        let attempts = CommitAttempts::new(&racing, &base);
        let committed = append(&base, &attempts, "ours").await?;
        assert_eq!(attempts.conflicts(), 1, "our first attempt conflicted");
        assert_eq!(
            committed.metadata().snapshots().count(),
            2,
            "both appends are in the history: ours was re-applied on the new snapshot"
        );

        // Without a competitor there is nothing to count.
        let attempts = CommitAttempts::new(&catalog, &committed);
        append(&committed, &attempts, "third").await?;
        assert_eq!(attempts.conflicts(), 0);
        Ok(())
    }
}
