//! `information_schema` of one catalog, with Trino's tables and columns.

use std::sync::{Arc, Weak};

use datafusion::catalog::{CatalogProviderList, MemorySchemaProvider, SchemaProvider};

use super::rows::{Cell, Kind, NULL, TableSpec};
use super::walk::{self, Scope};
use super::{Filters, MetadataTable};
use crate::dialect::types::TrinoType;

const SCHEMATA: TableSpec = TableSpec {
    name: "schemata",
    columns: &[("catalog_name", Kind::Text), ("schema_name", Kind::Text)],
};

const TABLES: TableSpec = TableSpec {
    name: "tables",
    columns: &[
        ("table_catalog", Kind::Text),
        ("table_schema", Kind::Text),
        ("table_name", Kind::Text),
        ("table_type", Kind::Text),
        ("table_comment", Kind::Text),
    ],
};

const COLUMNS: TableSpec = TableSpec {
    name: "columns",
    columns: &[
        ("table_catalog", Kind::Text),
        ("table_schema", Kind::Text),
        ("table_name", Kind::Text),
        ("column_name", Kind::Text),
        ("ordinal_position", Kind::Int),
        ("column_default", Kind::Text),
        ("is_nullable", Kind::Text),
        ("data_type", Kind::Text),
        ("comment", Kind::Text),
        ("extra_info", Kind::Text),
    ],
};

const VIEWS: TableSpec = TableSpec {
    name: "views",
    columns: &[
        ("table_catalog", Kind::Text),
        ("table_schema", Kind::Text),
        ("table_name", Kind::Text),
        ("view_definition", Kind::Text),
    ],
};

fn scope(
    catalog: &str,
    filters: &Filters,
    schema_column: &str,
    table_column: Option<&str>,
) -> Scope {
    Scope {
        catalog: Some(catalog.to_string()),
        schema: filters.get(schema_column).map(str::to_string),
        table: table_column
            .and_then(|c| filters.get(c))
            .map(str::to_string),
    }
}

/// The `information_schema` schema of `catalog`.
pub(super) fn schema(catalog: &str, all: Weak<dyn CatalogProviderList>) -> Arc<dyn SchemaProvider> {
    let provider = MemorySchemaProvider::new();
    let register = |spec: &TableSpec, table| {
        // Distinct names in a fresh schema: registering cannot fail.
        let _ = provider.register_table(spec.name.to_string(), table);
    };

    let c = catalog.to_string();
    register(
        &SCHEMATA,
        MetadataTable::over_catalogs(&SCHEMATA, all.clone(), move |a, filters| {
            let scope = scope(&c, &filters, "schema_name", None);
            async move {
                Ok(walk::schemas(&a, &scope)?
                    .into_iter()
                    .map(|(catalog, schema)| vec![Cell::from(catalog), Cell::from(schema)])
                    .collect())
            }
        }),
    );

    let c = catalog.to_string();
    register(
        &TABLES,
        MetadataTable::over_catalogs(&TABLES, all.clone(), move |a, filters| {
            let scope = scope(&c, &filters, "table_schema", Some("table_name"));
            async move {
                Ok(walk::tables(&a, &scope)?
                    .into_iter()
                    .map(|t| {
                        vec![
                            Cell::from(t.catalog),
                            Cell::from(t.schema),
                            Cell::from(t.table),
                            Cell::from(if t.view { "VIEW" } else { "BASE TABLE" }),
                            NULL,
                        ]
                    })
                    .collect())
            }
        }),
    );

    let c = catalog.to_string();
    register(
        &COLUMNS,
        MetadataTable::over_catalogs(&COLUMNS, all.clone(), move |a, filters| {
            let scope = scope(&c, &filters, "table_schema", Some("table_name"));
            async move {
                let mut rows = Vec::new();
                for (t, columns, comments) in walk::table_columns(&a, &scope).await? {
                    for (i, (field, comment)) in columns.fields().iter().zip(comments).enumerate() {
                        rows.push(vec![
                            Cell::from(t.catalog.clone()),
                            Cell::from(t.schema.clone()),
                            Cell::from(t.table.clone()),
                            Cell::from(field.name().clone()),
                            Cell::from(i as i64 + 1),
                            NULL,
                            Cell::from(if field.is_nullable() { "YES" } else { "NO" }),
                            Cell::from(TrinoType::from_field(field).to_string()),
                            comment.map_or(NULL, Cell::from),
                            NULL,
                        ]);
                    }
                }
                Ok(rows)
            }
        }),
    );

    let c = catalog.to_string();
    register(
        &VIEWS,
        MetadataTable::over_catalogs(&VIEWS, all.clone(), move |a, filters| {
            let scope = scope(&c, &filters, "table_schema", Some("table_name"));
            async move {
                let mut rows = Vec::new();
                for (t, table) in walk::view_providers(&a, &scope).await? {
                    if let Some(view) = table.downcast_ref::<crate::catalog::ViewProvider>() {
                        rows.push(vec![
                            Cell::from(t.catalog),
                            Cell::from(t.schema),
                            Cell::from(t.table),
                            Cell::from(view.view().sql.clone()),
                        ]);
                    }
                }
                Ok(rows)
            }
        }),
    );
    Arc::new(provider)
}
