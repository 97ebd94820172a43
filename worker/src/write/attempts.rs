//! The attempts of one commit. iceberg-rust retries a conflicting commit itself (reloading the
//! table and re-applying the append); this catalog view, handed to that one commit, sees each
//! attempt: a span per attempt, and the conflicts it met for the metrics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use iceberg::table::Table;
use iceberg::{
    Catalog, ErrorKind, Namespace, NamespaceIdent, Result, TableCommit, TableCreation, TableIdent,
};
use tracing::Instrument;

/// `inner`, observing `update_table`.
#[derive(Debug)]
pub(crate) struct CommitAttempts<'a> {
    inner: &'a dyn Catalog,
    attempts: AtomicU32,
    conflicts: AtomicU32,
}

impl<'a> CommitAttempts<'a> {
    pub(crate) fn new(inner: &'a dyn Catalog) -> Self {
        Self {
            inner,
            attempts: AtomicU32::new(0),
            conflicts: AtomicU32::new(0),
        }
    }

    /// Commit attempts the catalog refused as conflicting (another writer committed first).
    pub(crate) fn conflicts(&self) -> u32 {
        self.conflicts.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl Catalog for CommitAttempts<'_> {
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

    async fn list_namespaces(
        &self,
        parent: Option<&NamespaceIdent>,
    ) -> Result<Vec<NamespaceIdent>> {
        self.inner.list_namespaces(parent).await
    }

    async fn create_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> Result<Namespace> {
        self.inner.create_namespace(namespace, properties).await
    }

    async fn get_namespace(&self, namespace: &NamespaceIdent) -> Result<Namespace> {
        self.inner.get_namespace(namespace).await
    }

    async fn namespace_exists(&self, namespace: &NamespaceIdent) -> Result<bool> {
        self.inner.namespace_exists(namespace).await
    }

    async fn update_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> Result<()> {
        self.inner.update_namespace(namespace, properties).await
    }

    async fn drop_namespace(&self, namespace: &NamespaceIdent) -> Result<()> {
        self.inner.drop_namespace(namespace).await
    }

    async fn list_tables(&self, namespace: &NamespaceIdent) -> Result<Vec<TableIdent>> {
        self.inner.list_tables(namespace).await
    }

    async fn create_table(
        &self,
        namespace: &NamespaceIdent,
        creation: TableCreation,
    ) -> Result<Table> {
        self.inner.create_table(namespace, creation).await
    }

    async fn load_table(&self, table: &TableIdent) -> Result<Table> {
        self.inner.load_table(table).await
    }

    async fn drop_table(&self, table: &TableIdent) -> Result<()> {
        self.inner.drop_table(table).await
    }

    async fn purge_table(&self, table: &TableIdent) -> Result<()> {
        self.inner.purge_table(table).await
    }

    async fn table_exists(&self, table: &TableIdent) -> Result<bool> {
        self.inner.table_exists(table).await
    }

    async fn rename_table(&self, src: &TableIdent, dest: &TableIdent) -> Result<()> {
        self.inner.rename_table(src, dest).await
    }

    async fn register_table(&self, table: &TableIdent, metadata_location: String) -> Result<Table> {
        self.inner.register_table(table, metadata_location).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use iceberg::CatalogBuilder;
    use iceberg::memory::{MEMORY_CATALOG_WAREHOUSE, MemoryCatalogBuilder};
    use iceberg::spec::{
        DataContentType, DataFile, DataFileBuilder, DataFileFormat, NestedField, PrimitiveType,
        Schema, Struct, Type,
    };
    use iceberg::transaction::{ApplyTransactionAction, Transaction};

    use super::*;
    use crate::storage::ObjectStoreStorageFactory;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn data_file(
        table: &Table,
        name: &str,
    ) -> std::result::Result<DataFile, Box<dyn std::error::Error>> {
        Ok(DataFileBuilder::default()
            .content(DataContentType::Data)
            .file_path(format!(
                "{}/data/{name}.parquet",
                table.metadata().location()
            ))
            .file_format(DataFileFormat::Parquet)
            .file_size_in_bytes(100)
            .record_count(1)
            .partition_spec_id(table.metadata().default_partition_spec_id())
            .partition(Struct::empty())
            .build()?)
    }

    async fn append(table: &Table, catalog: &dyn Catalog, name: &str) -> Result<Table> {
        let tx = Transaction::new(table);
        let file = data_file(table, name)
            .map_err(|e| iceberg::Error::new(ErrorKind::Unexpected, e.to_string()))?;
        let tx = tx.fast_append().add_data_files(vec![file]).apply(tx)?;
        tx.commit(catalog).await
    }

    /// A catalog where, right before the first commit lands, another writer commits to the
    /// same table: the race a busy table has.
    #[derive(Debug)]
    struct Racing<'a> {
        inner: &'a dyn Catalog,
        competitor: tokio::sync::Mutex<Option<Table>>,
    }

    #[async_trait]
    impl Catalog for Racing<'_> {
        async fn update_table(&self, commit: TableCommit) -> Result<Table> {
            if let Some(base) = self.competitor.lock().await.take() {
                append(&base, self.inner, "competitor").await?;
            }
            self.inner.update_table(commit).await
        }
        async fn load_table(&self, table: &TableIdent) -> Result<Table> {
            self.inner.load_table(table).await
        }
        async fn list_namespaces(&self, p: Option<&NamespaceIdent>) -> Result<Vec<NamespaceIdent>> {
            self.inner.list_namespaces(p).await
        }
        async fn create_namespace(
            &self,
            n: &NamespaceIdent,
            p: HashMap<String, String>,
        ) -> Result<Namespace> {
            self.inner.create_namespace(n, p).await
        }
        async fn get_namespace(&self, n: &NamespaceIdent) -> Result<Namespace> {
            self.inner.get_namespace(n).await
        }
        async fn namespace_exists(&self, n: &NamespaceIdent) -> Result<bool> {
            self.inner.namespace_exists(n).await
        }
        async fn update_namespace(
            &self,
            n: &NamespaceIdent,
            p: HashMap<String, String>,
        ) -> Result<()> {
            self.inner.update_namespace(n, p).await
        }
        async fn drop_namespace(&self, n: &NamespaceIdent) -> Result<()> {
            self.inner.drop_namespace(n).await
        }
        async fn list_tables(&self, n: &NamespaceIdent) -> Result<Vec<TableIdent>> {
            self.inner.list_tables(n).await
        }
        async fn create_table(&self, n: &NamespaceIdent, c: TableCreation) -> Result<Table> {
            self.inner.create_table(n, c).await
        }
        async fn drop_table(&self, t: &TableIdent) -> Result<()> {
            self.inner.drop_table(t).await
        }
        async fn purge_table(&self, t: &TableIdent) -> Result<()> {
            self.inner.purge_table(t).await
        }
        async fn table_exists(&self, t: &TableIdent) -> Result<bool> {
            self.inner.table_exists(t).await
        }
        async fn rename_table(&self, s: &TableIdent, d: &TableIdent) -> Result<()> {
            self.inner.rename_table(s, d).await
        }
        async fn register_table(&self, t: &TableIdent, m: String) -> Result<Table> {
            self.inner.register_table(t, m).await
        }
    }

    #[tokio::test]
    async fn a_commit_beaten_by_another_writer_is_counted_and_still_lands() -> TestResult {
        let dir = tempfile::tempdir()?;
        let catalog = MemoryCatalogBuilder::default()
            .with_storage_factory(Arc::new(ObjectStoreStorageFactory))
            .load(
                "test",
                HashMap::from([(
                    MEMORY_CATALOG_WAREHOUSE.to_string(),
                    format!("file://{}", dir.path().display()),
                )]),
            )
            .await?;
        let namespace = NamespaceIdent::new("ns".into());
        catalog.create_namespace(&namespace, HashMap::new()).await?;
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "n", Type::Primitive(PrimitiveType::Long)).into(),
            ])
            .build()?;
        let creation = TableCreation::builder()
            .name("t".into())
            .schema(schema)
            .build();
        let base = catalog.create_table(&namespace, creation).await?;

        // Another writer commits between our load and our commit.
        let racing = Racing {
            inner: &catalog,
            competitor: tokio::sync::Mutex::new(Some(base.clone())),
        };
        let attempts = CommitAttempts::new(&racing);
        let committed = append(&base, &attempts, "ours").await?;
        assert_eq!(attempts.conflicts(), 1, "our first attempt conflicted");
        assert_eq!(
            committed.metadata().snapshots().count(),
            2,
            "both appends are in the history: ours was re-applied on the new snapshot"
        );

        // Without a competitor there is nothing to count.
        let attempts = CommitAttempts::new(&catalog);
        append(&committed, &attempts, "third").await?;
        assert_eq!(attempts.conflicts(), 0);
        Ok(())
    }
}
