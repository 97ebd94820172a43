//! Test catalogs for commits: an in-memory Iceberg catalog with one table, and a catalog
//! where other writers commit just before ours.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use iceberg::memory::MemoryCatalog;
use iceberg::spec::{
    DataContentType, DataFile, DataFileBuilder, DataFileFormat, NestedField, PrimitiveType, Schema,
    Struct, Type,
};
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::{Catalog, ErrorKind, NamespaceIdent, Result, TableCommit, TableCreation, TableIdent};

pub(crate) type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// A memory catalog whose warehouse is `dir`, holding `ns.t` (one BIGINT column).
pub(crate) async fn table_in_memory(
    dir: &Path,
) -> std::result::Result<(MemoryCatalog, Table), Box<dyn std::error::Error>> {
    let catalog = crate::storage::memory_catalog("test", dir).await?;
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
    let table = catalog.create_table(&namespace, creation).await?;
    Ok((catalog, table))
}

/// A data file entry of `table` (the file itself need not exist to be committed).
pub(crate) fn data_file(table: &Table, name: &str) -> Result<DataFile> {
    DataFileBuilder::default()
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
        .build()
        .map_err(|e| iceberg::Error::new(ErrorKind::Unexpected, e.to_string()))
}

/// Appends one file entry to `table` through `catalog`.
pub(crate) async fn append(table: &Table, catalog: &dyn Catalog, name: &str) -> Result<Table> {
    let tx = Transaction::new(table);
    let tx = tx
        .fast_append()
        .add_data_files(vec![data_file(table, name)?])
        .apply(tx)?;
    tx.commit(catalog).await
}

/// A catalog where, right before each of the next `competitors` commits, another writer
/// commits to `table` first: the race a busy table has.
#[derive(Debug)]
pub(crate) struct Racing<'a> {
    inner: &'a dyn Catalog,
    table: TableIdent,
    competitors: AtomicU32,
}

impl<'a> Racing<'a> {
    pub(crate) fn new(inner: &'a dyn Catalog, table: TableIdent, competitors: u32) -> Self {
        Self {
            inner,
            table,
            competitors: AtomicU32::new(competitors),
        }
    }
}

crate::catalog_view!(impl<'a> Catalog for Racing<'a>, inner = self.inner; {
    async fn update_table(&self, commit: TableCommit) -> Result<Table> {
        let left = self.competitors.load(Ordering::SeqCst);
        if left > 0 {
            self.competitors.store(left - 1, Ordering::SeqCst);
            let current = self.inner.load_table(&self.table).await?;
            append(&current, self.inner, &format!("competitor-{left}")).await?;
        }
        self.inner.update_table(commit).await
    }
    async fn load_table(&self, table: &TableIdent) -> Result<Table> {
        self.inner.load_table(table).await
    }
    async fn create_table(&self, n: &NamespaceIdent, c: TableCreation) -> Result<Table> {
        self.inner.create_table(n, c).await
    }
    async fn register_table(&self, t: &TableIdent, m: String) -> Result<Table> {
        self.inner.register_table(t, m).await
    }
});
