//! Iceberg namespaces as DataFusion schemas, Iceberg tables as DataFusion tables.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result as DfResult};
use iceberg::{Catalog, ErrorKind, NamespaceIdent, TableIdent};
use sqe_iceberg::table::IcebergTableProvider;
use sqe_iceberg::write::CommitListener;

use super::addressed::Addressed;
use super::metadata_tables::{metadata_table, references};
use crate::error::{Error, ErrorCode, Result};

/// DataFusion's catalog traits list schemas and tables synchronously while Iceberg catalogs
/// answer asynchronously, so names are cached and [`IcebergCatalogProvider::refresh`]ed before
/// each statement and after DDL. Tables themselves are loaded fresh on every lookup, so a query
/// always reads the table's current snapshot.
#[derive(Debug)]
pub struct IcebergCatalogProvider {
    catalog: Arc<dyn Catalog>,
    schemas: RwLock<BTreeMap<String, Arc<IcebergSchemaProvider>>>,
    static_props: Arc<HashMap<String, String>>,
    listener: Option<Arc<dyn CommitListener>>,
}

impl IcebergCatalogProvider {
    pub fn new(
        catalog: Arc<dyn Catalog>,
        static_props: HashMap<String, String>,
        listener: Option<Arc<dyn CommitListener>>,
    ) -> Self {
        Self {
            catalog,
            schemas: RwLock::new(BTreeMap::new()),
            static_props: Arc::new(static_props),
            listener,
        }
    }

    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// Reloads namespace and table names from the catalog.
    pub async fn refresh(&self) -> Result<()> {
        let namespaces = self.catalog.list_namespaces(None).await?;
        let mut fresh = BTreeMap::new();
        for namespace in namespaces {
            let tables = match self.catalog.list_tables(&namespace).await {
                Ok(tables) => tables,
                // Dropped since it was listed.
                Err(e) if e.kind() == ErrorKind::NamespaceNotFound => continue,
                Err(e) => return Err(e.into()),
            };
            let name = namespace.join(".");
            let schema = IcebergSchemaProvider {
                catalog: Arc::clone(&self.catalog),
                namespace,
                tables: tables.into_iter().map(|t| t.name().to_string()).collect(),
                static_props: Arc::clone(&self.static_props),
                listener: self.listener.clone(),
            };
            fresh.insert(name, Arc::new(schema));
        }
        *self.schemas.write() = fresh;
        Ok(())
    }
}

impl CatalogProvider for IcebergCatalogProvider {
    fn schema_names(&self) -> Vec<String> {
        self.schemas.read().keys().cloned().collect()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let schemas = self.schemas.read();
        schemas
            .get(name)
            .map(|s| Arc::clone(s) as Arc<dyn SchemaProvider>)
    }
}

/// One Iceberg namespace.
#[derive(Debug)]
pub struct IcebergSchemaProvider {
    catalog: Arc<dyn Catalog>,
    namespace: NamespaceIdent,
    tables: Vec<String>,
    static_props: Arc<HashMap<String, String>>,
    listener: Option<Arc<dyn CommitListener>>,
}

impl IcebergSchemaProvider {
    pub fn namespace(&self) -> &NamespaceIdent {
        &self.namespace
    }
}

#[async_trait]
impl SchemaProvider for IcebergSchemaProvider {
    fn table_names(&self) -> Vec<String> {
        self.tables.clone()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let (name, addressed) = Addressed::parse(name);
        let ident = TableIdent::new(self.namespace.clone(), name.to_string());
        let table = match self.catalog.load_table(&ident).await {
            Ok(table) => table,
            Err(e) if e.kind() == ErrorKind::TableNotFound => return Ok(None),
            Err(e) => return Err(sqe_iceberg::error::iceberg_to_df(e)),
        };
        let snapshot_id = match &addressed {
            Addressed::Current => None,
            Addressed::Metadata(kind) => {
                return metadata_table(table.metadata(), *kind)
                    .map(Some)
                    .map_err(|e| DataFusionError::External(Box::new(e)));
            }
            Addressed::Snapshot(id) => Some(*id),
            Addressed::Reference(reference) => Some(
                reference_snapshot(table.metadata(), reference).ok_or_else(|| {
                    past_error(format!(
                        "Cannot find snapshot with reference name: {reference}"
                    ))
                })?,
            ),
            Addressed::AsOf(millis) => {
                Some(snapshot_as_of(table.metadata(), *millis).ok_or_else(|| {
                    past_error(format!(
                        "No version history table {ident} at or before {}",
                        instant_text(*millis)
                    ))
                })?)
            }
        };
        let provider = IcebergTableProvider::try_new(
            Arc::clone(&self.catalog),
            table,
            Arc::clone(&self.static_props),
            self.listener.clone(),
        )
        .map_err(DataFusionError::from)?;
        let provider = match snapshot_id {
            None => provider,
            Some(id) => provider
                .at_snapshot(id)
                .map_err(DataFusionError::from)?
                .ok_or_else(|| past_error(format!("Iceberg snapshot ID does not exists: {id}")))?,
        };
        Ok(Some(Arc::new(provider)))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.tables.iter().any(|t| t == name)
    }
}

/// A past the table does not have (Trino's messages and code).
fn past_error(message: String) -> DataFusionError {
    DataFusionError::External(Box::new(Error::invalid(
        ErrorCode::InvalidArguments,
        message,
    )))
}

/// The snapshot a branch or tag names; Trino folds names, so the match ignores case.
fn reference_snapshot(metadata: &iceberg::spec::TableMetadata, reference: &str) -> Option<i64> {
    if let Some(snapshot) = metadata.snapshot_for_ref(reference) {
        return Some(snapshot.snapshot_id());
    }
    references(metadata)
        .ok()?
        .into_iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(reference))
        .map(|(_, found)| found.snapshot_id)
}

/// The snapshot that was current at `millis`: the last one the table's history made current
/// at or before it.
fn snapshot_as_of(metadata: &iceberg::spec::TableMetadata, millis: i64) -> Option<i64> {
    metadata
        .history()
        .iter()
        .filter(|entry| entry.timestamp_ms <= millis)
        .max_by_key(|entry| entry.timestamp_ms)
        .map(|entry| entry.snapshot_id)
}

fn instant_text(millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string())
        .unwrap_or_else(|| millis.to_string())
}
