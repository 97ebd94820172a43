//! Walks the catalogs SQL sees, narrowed to what a scan's filters ask for.

use std::sync::{Arc, Weak};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{CatalogProviderList, TableProvider};
use datafusion::error::{DataFusionError, Result as DfResult};

/// Which catalogs, schemas and tables to list; `None` is all.
#[derive(Debug, Clone, Default)]
pub(super) struct Scope {
    pub catalog: Option<String>,
    pub schema: Option<String>,
    pub table: Option<String>,
}

/// A table and, when loaded, its columns.
#[derive(Debug, Clone)]
pub(super) struct TableEntry {
    pub catalog: String,
    pub schema: String,
    pub table: String,
    /// Whether it is a view (else a table).
    pub view: bool,
}

fn upgrade(all: &Weak<dyn CatalogProviderList>) -> DfResult<Arc<dyn CatalogProviderList>> {
    all.upgrade()
        .ok_or_else(|| DataFusionError::Internal("the catalog list is gone".into()))
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

pub(super) fn catalogs(
    all: &Weak<dyn CatalogProviderList>,
    scope: &Scope,
) -> DfResult<Vec<String>> {
    let list = upgrade(all)?;
    Ok(sorted(list.catalog_names())
        .into_iter()
        .filter(|c| scope.catalog.as_ref().is_none_or(|want| want == c))
        .collect())
}

/// `(catalog, schema)` pairs.
pub(super) fn schemas(
    all: &Weak<dyn CatalogProviderList>,
    scope: &Scope,
) -> DfResult<Vec<(String, String)>> {
    let list = upgrade(all)?;
    let mut out = Vec::new();
    for catalog in catalogs(all, scope)? {
        let Some(provider) = list.catalog(&catalog) else {
            continue;
        };
        for schema in sorted(provider.schema_names()) {
            if scope.schema.as_ref().is_none_or(|want| *want == schema) {
                out.push((catalog.clone(), schema));
            }
        }
    }
    Ok(out)
}

/// Tables by name, without loading them.
pub(super) fn tables(
    all: &Weak<dyn CatalogProviderList>,
    scope: &Scope,
) -> DfResult<Vec<TableEntry>> {
    let list = upgrade(all)?;
    let mut out = Vec::new();
    for (catalog, schema) in schemas(all, scope)? {
        let Some(provider) = list.catalog(&catalog).and_then(|c| c.schema(&schema)) else {
            continue;
        };
        let iceberg = provider.downcast_ref::<crate::catalog::IcebergSchemaProvider>();
        for table in sorted(provider.table_names()) {
            if scope.table.as_ref().is_none_or(|want| *want == table) {
                out.push(TableEntry {
                    catalog: catalog.clone(),
                    schema: schema.clone(),
                    view: iceberg.is_some_and(|s| s.is_view(&table)),
                    table,
                });
            }
        }
    }
    Ok(out)
}

/// Tables with their providers; a table dropped while listing is skipped.
pub(super) async fn table_providers(
    all: &Weak<dyn CatalogProviderList>,
    scope: &Scope,
) -> DfResult<Vec<(TableEntry, Arc<dyn TableProvider>)>> {
    providers(all, tables(all, scope)?).await
}

/// Views with their providers (tables are not loaded).
pub(super) async fn view_providers(
    all: &Weak<dyn CatalogProviderList>,
    scope: &Scope,
) -> DfResult<Vec<(TableEntry, Arc<dyn TableProvider>)>> {
    let views = tables(all, scope)?.into_iter().filter(|t| t.view).collect();
    providers(all, views).await
}

/// The providers of `entries`; one dropped while listing is skipped.
async fn providers(
    all: &Weak<dyn CatalogProviderList>,
    entries: Vec<TableEntry>,
) -> DfResult<Vec<(TableEntry, Arc<dyn TableProvider>)>> {
    let list = upgrade(all)?;
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let Some(schema) = list
            .catalog(&entry.catalog)
            .and_then(|c| c.schema(&entry.schema))
        else {
            continue;
        };
        if let Some(table) = schema.table(&entry.table).await? {
            out.push((entry, table));
        }
    }
    Ok(out)
}

/// Tables with their columns and each column's comment (an Iceberg field's doc, set by
/// `COMMENT ON COLUMN`; other tables' columns have none); a table dropped while listing is
/// skipped.
pub(super) async fn table_columns(
    all: &Weak<dyn CatalogProviderList>,
    scope: &Scope,
) -> DfResult<Vec<(TableEntry, SchemaRef, Vec<Option<String>>)>> {
    Ok(table_providers(all, scope)
        .await?
        .into_iter()
        .map(|(entry, table)| {
            let schema = table.schema();
            let iceberg = table
                .downcast_ref::<sqe_iceberg::table::IcebergTableProvider>()
                .map(|p| p.table().metadata().current_schema().clone());
            let comments = schema
                .fields()
                .iter()
                .map(|f| {
                    iceberg
                        .as_ref()
                        .and_then(|s| s.as_struct().field_by_name(f.name()))
                        .and_then(|field| field.doc.clone())
                })
                .collect();
            (entry, schema, comments)
        })
        .collect())
}
