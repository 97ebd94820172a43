//! Iceberg namespaces as DataFusion schemas, Iceberg tables as DataFusion tables, and views as
//! tables that only describe themselves (a statement reads a view's query in its place: see
//! `engine::views`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{CatalogProvider, SchemaProvider, Session, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use iceberg::{Catalog, ErrorKind, NamespaceIdent, TableIdent};
use sqe_iceberg::table::IcebergTableProvider;
use sqe_iceberg::write::CommitListener;

use super::addressed::Addressed;
use super::metadata_tables::{metadata_table, references};
use super::views::{StoredView, ViewCatalog};
use crate::error::{Error, ErrorCode, Result};

/// DataFusion's catalog traits list schemas and tables synchronously while Iceberg catalogs
/// answer asynchronously, so names are cached and [`IcebergCatalogProvider::refresh`]ed before
/// each statement and after DDL. Tables themselves are loaded fresh on every lookup, so a query
/// always reads the table's current snapshot.
#[derive(Debug)]
pub struct IcebergCatalogProvider {
    catalog: Arc<dyn Catalog>,
    views: Arc<dyn ViewCatalog>,
    schemas: RwLock<BTreeMap<String, Arc<IcebergSchemaProvider>>>,
    static_props: Arc<HashMap<String, String>>,
    listener: Option<Arc<dyn CommitListener>>,
}

impl IcebergCatalogProvider {
    pub fn new(
        catalog: Arc<dyn Catalog>,
        views: Arc<dyn ViewCatalog>,
        static_props: HashMap<String, String>,
        listener: Option<Arc<dyn CommitListener>>,
    ) -> Self {
        Self {
            catalog,
            views,
            schemas: RwLock::new(BTreeMap::new()),
            static_props: Arc::new(static_props),
            listener,
        }
    }

    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    pub fn views(&self) -> &Arc<dyn ViewCatalog> {
        &self.views
    }

    /// Reloads namespace, table and view names from the catalog.
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
            // Views are extra: a catalog that will not list them still serves its tables.
            let views = match self.views.list_views(&namespace).await {
                Ok(views) => views,
                Err(e) => {
                    tracing::warn!(namespace = %namespace.join("."), error = %e, "views not listed");
                    Vec::new()
                }
            };
            let name = namespace.join(".");
            let schema = IcebergSchemaProvider {
                catalog: Arc::clone(&self.catalog),
                view_catalog: Arc::clone(&self.views),
                namespace,
                tables: tables.into_iter().map(|t| t.name().to_string()).collect(),
                views,
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
    view_catalog: Arc<dyn ViewCatalog>,
    namespace: NamespaceIdent,
    tables: Vec<String>,
    /// Views by name, as listed at the last refresh.
    views: Vec<String>,
    static_props: Arc<HashMap<String, String>>,
    listener: Option<Arc<dyn CommitListener>>,
}

impl IcebergSchemaProvider {
    pub fn namespace(&self) -> &NamespaceIdent {
        &self.namespace
    }

    /// Whether `name` was a view at the last refresh.
    pub fn is_view(&self, name: &str) -> bool {
        self.views.iter().any(|v| v == name)
    }

    /// The view `name`, if it is one: a name listed as a table is not looked up.
    pub async fn view(&self, name: &str) -> Result<Option<StoredView>> {
        if self.tables.iter().any(|t| t == name) && !self.is_view(name) {
            return Ok(None);
        }
        let ident = TableIdent::new(self.namespace.clone(), name.to_string());
        self.view_catalog
            .load_view(&ident)
            .await?
            .map(|metadata| StoredView::from_metadata(&metadata))
            .transpose()
    }
}

#[async_trait]
impl SchemaProvider for IcebergSchemaProvider {
    fn table_names(&self) -> Vec<String> {
        self.tables.iter().chain(&self.views).cloned().collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let (table_name, addressed) = Addressed::parse(name);
        if self.is_view(name) {
            return self.view_provider(name).await;
        }
        let ident = TableIdent::new(self.namespace.clone(), table_name.to_string());
        let table = match self.catalog.load_table(&ident).await {
            Ok(table) => table,
            Err(e) if e.kind() == ErrorKind::TableNotFound => {
                return match addressed {
                    Addressed::Current => self.view_provider(name).await,
                    _ => Ok(None),
                };
            }
            Err(e) => return Err(sqe_iceberg::error::iceberg_to_df(e)),
        };
        let snapshot_id = match &addressed {
            Addressed::Current => None,
            Addressed::Metadata(kind) => {
                return metadata_table(&table, *kind)
                    .await
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
        self.tables.iter().any(|t| t == name) || self.is_view(name)
    }
}

impl IcebergSchemaProvider {
    async fn view_provider(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let view = self
            .view(name)
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let Some(view) = view else {
            return Ok(None);
        };
        let schema = iceberg::arrow::schema_to_arrow_schema(&view.columns)
            .map_err(sqe_iceberg::error::iceberg_to_df)?;
        Ok(Some(Arc::new(ViewProvider {
            schema: Arc::new(schema),
            view,
        })))
    }
}

/// A view as DataFusion's catalog sees it: its columns and SQL, for metadata. Statements read
/// the view's query in its place before planning, so a scan of it is never planned.
#[derive(Debug)]
pub struct ViewProvider {
    schema: SchemaRef,
    view: StoredView,
}

impl ViewProvider {
    pub fn view(&self) -> &StoredView {
        &self.view
    }
}

#[async_trait]
impl TableProvider for ViewProvider {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn get_table_definition(&self) -> Option<&str> {
        Some(&self.view.sql)
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::External(Box::new(Error::NotSupported(
            "a view is read through its query; this statement cannot read it".into(),
        ))))
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
