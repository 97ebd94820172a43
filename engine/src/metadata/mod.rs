//! The metadata tables BI tools and drivers query, in Trino's shapes: `information_schema` in
//! every catalog, and the `system` catalog's `jdbc` and `metadata` schemas. Rows are computed
//! from the live catalogs when a table is scanned; equality filters on the catalog, schema and
//! table columns narrow what is loaded.

mod information_schema;
mod jdbc;
mod rows;
mod system_runtime;
mod walk;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, MemoryCatalogProvider, MemoryCatalogProviderList,
    MemorySchemaProvider, SchemaProvider, Session, TableProvider,
};
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use futures::future::BoxFuture;
use sqe_tpch::{TPCH_CATALOG, TpchCatalog};

pub use self::rows::{Cell, Kind, TableSpec};
pub use self::system_runtime::{NodeIdentity, RuntimeView};
use crate::error::{Error, Result};
use crate::history::Viewer;

/// The catalog of metadata about all catalogs.
pub const SYSTEM_CATALOG: &str = "system";
pub const INFORMATION_SCHEMA: &str = "information_schema";

/// `column = 'text'` filters of a scan, by column name, and who scans.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    equal: HashMap<String, String>,
    viewer: Option<Arc<Viewer>>,
}

impl Filters {
    fn from_exprs(filters: &[Expr], viewer: Option<Arc<Viewer>>) -> Self {
        let mut equal = HashMap::new();
        for filter in filters {
            if let Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq,
                right,
            }) = filter
            {
                let pair = match (left.as_ref(), right.as_ref()) {
                    (Expr::Column(c), Expr::Literal(v, _))
                    | (Expr::Literal(v, _), Expr::Column(c)) => v
                        .try_as_str()
                        .flatten()
                        .map(|s| (c.name.clone(), s.to_string())),
                    _ => None,
                };
                if let Some((column, value)) = pair {
                    equal.insert(column, value);
                }
            }
        }
        Self { equal, viewer }
    }

    /// The session's user, who sees only its own queries unless an administrator; `None`
    /// (a scan outside any session) sees none.
    pub fn viewer(&self) -> Option<&Viewer> {
        self.viewer.as_deref()
    }

    /// The value `column` must equal, if a filter says so.
    pub fn get(&self, column: &str) -> Option<&str> {
        self.equal.get(column).map(String::as_str)
    }
}

type RowSource = Arc<dyn Fn(Filters) -> BoxFuture<'static, DfResult<Vec<Vec<Cell>>>> + Send + Sync>;

/// A table whose rows are computed when it is scanned.
pub struct MetadataTable {
    schema: SchemaRef,
    source: RowSource,
}

impl std::fmt::Debug for MetadataTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataTable")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl MetadataTable {
    pub fn provider<F>(spec: &TableSpec, source: F) -> Arc<dyn TableProvider>
    where
        F: Fn(Filters) -> BoxFuture<'static, DfResult<Vec<Vec<Cell>>>> + Send + Sync + 'static,
    {
        Arc::new(Self {
            schema: spec.schema(),
            source: Arc::new(source),
        })
    }

    /// A table whose rows are computed from the catalogs SQL sees.
    pub fn over_catalogs<F, Fut>(
        spec: &TableSpec,
        all: Weak<dyn CatalogProviderList>,
        rows: F,
    ) -> Arc<dyn TableProvider>
    where
        F: Fn(Weak<dyn CatalogProviderList>, Filters) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = DfResult<Vec<Vec<Cell>>>> + Send + 'static,
    {
        let rows = Arc::new(rows);
        Self::provider(spec, move |filters| {
            let (all, rows) = (all.clone(), Arc::clone(&rows));
            Box::pin(async move { rows(all, filters).await })
        })
    }

    /// A table that never has rows (the JDBC tables for features SQE does not have).
    pub fn empty(spec: &TableSpec) -> Arc<dyn TableProvider> {
        Self::provider(spec, |_| Box::pin(async { Ok(Vec::new()) }))
    }
}

#[async_trait]
impl TableProvider for MetadataTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        // Filters only narrow what is loaded; DataFusion still applies them.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let viewer = state.config().get_extension::<Viewer>();
        let rows = (self.source)(Filters::from_exprs(filters, viewer)).await?;
        let batch = rows::batch(&self.schema, rows)?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            Arc::clone(&self.schema),
            projection.cloned(),
        )?)
    }
}

/// A catalog with Trino's `information_schema` added to its schemas.
#[derive(Debug)]
struct WithInformationSchema {
    inner: Arc<dyn CatalogProvider>,
    information_schema: Arc<dyn SchemaProvider>,
}

impl CatalogProvider for WithInformationSchema {
    fn schema_names(&self) -> Vec<String> {
        let mut names = self.inner.schema_names();
        names.push(INFORMATION_SCHEMA.to_string());
        names
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if name == INFORMATION_SCHEMA {
            Some(Arc::clone(&self.information_schema))
        } else {
            self.inner.schema(name)
        }
    }
}

/// The catalogs SQL sees: the Iceberg catalog under `name`, Trino's `tpch` catalog and the
/// `system` catalog (with `runtime` computed from `runtime`), each with its
/// `information_schema`.
pub fn catalog_list(
    name: &str,
    iceberg: Arc<dyn CatalogProvider>,
    runtime: RuntimeView,
) -> Result<Arc<dyn CatalogProviderList>> {
    if name == SYSTEM_CATALOG || name == INFORMATION_SCHEMA || name == TPCH_CATALOG {
        return Err(Error::Settings(format!(
            "the catalog cannot be named '{name}': that name is SQE's own"
        )));
    }
    let list = Arc::new_cyclic(|weak: &Weak<MemoryCatalogProviderList>| {
        let all: Weak<dyn CatalogProviderList> = weak.clone();
        let list = MemoryCatalogProviderList::new();
        list.register_catalog(
            name.to_string(),
            Arc::new(WithInformationSchema {
                inner: iceberg,
                information_schema: information_schema::schema(name, all.clone()),
            }),
        );
        list.register_catalog(
            TPCH_CATALOG.to_string(),
            Arc::new(WithInformationSchema {
                inner: Arc::new(TpchCatalog::trino()),
                information_schema: information_schema::schema(TPCH_CATALOG, all.clone()),
            }),
        );
        list.register_catalog(SYSTEM_CATALOG.to_string(), system_catalog(all, runtime));
        list
    });
    Ok(list)
}

fn system_catalog(
    all: Weak<dyn CatalogProviderList>,
    runtime: RuntimeView,
) -> Arc<dyn CatalogProvider> {
    let schemas = MemoryCatalogProvider::new();
    let register = |name: &str, tables: Vec<(&'static str, Arc<dyn TableProvider>)>| {
        let schema = MemorySchemaProvider::new();
        for (table, provider) in tables {
            // A fresh schema with distinct names cannot refuse a table.
            let _ = schema.register_table(table.to_string(), provider);
        }
        let _ = schemas.register_schema(name, Arc::new(schema));
    };
    register("jdbc", jdbc::tables(all.clone()));
    register("metadata", jdbc::metadata_tables(all.clone()));
    register("runtime", system_runtime::tables(runtime));
    Arc::new(WithInformationSchema {
        inner: Arc::new(schemas),
        information_schema: information_schema::schema(SYSTEM_CATALOG, all),
    })
}

/// Whether a table reference points into metadata (which is computed on the coordinator).
pub fn is_metadata(catalog: &str, schema: &str) -> bool {
    catalog == SYSTEM_CATALOG || schema == INFORMATION_SCHEMA
}
