//! `system.jdbc` (what Trino's JDBC driver's `DatabaseMetaData` reads) and `system.metadata`.

use std::sync::{Arc, Weak};

use datafusion::catalog::{CatalogProviderList, TableProvider};

use super::rows::{Cell, Kind, NULL, TableSpec};
use super::walk::{self, Scope};
use super::{Filters, MetadataTable};
use crate::dialect::types::TrinoType;

use Kind::{Bool as B, Int as I, Text as T};

const CATALOGS: TableSpec = TableSpec {
    name: "catalogs",
    columns: &[("table_cat", T)],
};
const SCHEMAS: TableSpec = TableSpec {
    name: "schemas",
    columns: &[("table_schem", T), ("table_catalog", T)],
};
const TABLES: TableSpec = TableSpec {
    name: "tables",
    columns: &[
        ("table_cat", T),
        ("table_schem", T),
        ("table_name", T),
        ("table_type", T),
        ("remarks", T),
        ("type_cat", T),
        ("type_schem", T),
        ("type_name", T),
        ("self_referencing_col_name", T),
        ("ref_generation", T),
    ],
};
const TABLE_TYPES: TableSpec = TableSpec {
    name: "table_types",
    columns: &[("table_type", T)],
};
const COLUMNS: TableSpec = TableSpec {
    name: "columns",
    columns: &[
        ("table_cat", T),
        ("table_schem", T),
        ("table_name", T),
        ("column_name", T),
        ("data_type", I),
        ("type_name", T),
        ("column_size", I),
        ("buffer_length", I),
        ("decimal_digits", I),
        ("num_prec_radix", I),
        ("nullable", I),
        ("remarks", T),
        ("column_def", T),
        ("sql_data_type", I),
        ("sql_datetime_sub", I),
        ("char_octet_length", I),
        ("ordinal_position", I),
        ("is_nullable", T),
        ("scope_catalog", T),
        ("scope_schema", T),
        ("scope_table", T),
        ("source_data_type", I),
        ("is_autoincrement", T),
        ("is_generatedcolumn", T),
    ],
};
const TYPES: TableSpec = TableSpec {
    name: "types",
    columns: &[
        ("type_name", T),
        ("data_type", I),
        ("precision", I),
        ("literal_prefix", T),
        ("literal_suffix", T),
        ("create_params", T),
        ("nullable", I),
        ("case_sensitive", B),
        ("searchable", I),
        ("unsigned_attribute", B),
        ("fixed_prec_scale", B),
        ("auto_increment", B),
        ("local_type_name", T),
        ("minimum_scale", I),
        ("maximum_scale", I),
        ("sql_data_type", I),
        ("sql_datetime_sub", I),
        ("num_prec_radix", I),
    ],
};

/// JDBC features SQE does not have: always empty, with the columns the driver expects.
const EMPTY: &[TableSpec] = &[
    TableSpec {
        name: "attributes",
        columns: &[
            ("type_cat", T),
            ("type_schem", T),
            ("type_name", T),
            ("attr_name", T),
            ("data_type", I),
            ("attr_type_name", T),
            ("attr_size", I),
            ("decimal_digits", I),
            ("num_prec_radix", I),
            ("nullable", I),
            ("remarks", T),
            ("attr_def", T),
            ("sql_data_type", I),
            ("sql_datetime_sub", I),
            ("char_octet_length", I),
            ("ordinal_position", I),
            ("is_nullable", T),
            ("scope_catalog", T),
            ("scope_schema", T),
            ("scope_table", T),
            ("source_data_type", I),
        ],
    },
    TableSpec {
        name: "procedure_columns",
        columns: &[
            ("procedure_cat", T),
            ("procedure_schem", T),
            ("procedure_name", T),
            ("column_name", T),
            ("column_type", I),
            ("data_type", I),
            ("type_name", T),
            ("precision", I),
            ("length", I),
            ("scale", I),
            ("radix", I),
            ("nullable", I),
            ("remarks", T),
            ("column_def", T),
            ("sql_data_type", I),
            ("sql_datetime_sub", I),
            ("char_octet_length", I),
            ("ordinal_position", I),
            ("is_nullable", T),
            ("specific_name", T),
        ],
    },
    TableSpec {
        name: "procedures",
        columns: &[
            ("procedure_cat", T),
            ("procedure_schem", T),
            ("procedure_name", T),
            ("remarks", T),
            ("procedure_type", I),
            ("specific_name", T),
        ],
    },
    TableSpec {
        name: "pseudo_columns",
        columns: &[
            ("table_cat", T),
            ("table_schem", T),
            ("table_name", T),
            ("column_name", T),
            ("data_type", I),
            ("column_size", I),
            ("decimal_digits", I),
            ("num_prec_radix", I),
            ("column_usage", T),
            ("remarks", T),
            ("char_octet_length", I),
            ("is_nullable", T),
        ],
    },
    TableSpec {
        name: "super_tables",
        columns: &[
            ("table_cat", T),
            ("table_schem", T),
            ("table_name", T),
            ("supertable_name", T),
        ],
    },
    TableSpec {
        name: "super_types",
        columns: &[
            ("type_cat", T),
            ("type_schem", T),
            ("type_name", T),
            ("supertype_cat", T),
            ("supertype_schem", T),
            ("supertype_name", T),
        ],
    },
    TableSpec {
        name: "udts",
        columns: &[
            ("type_cat", T),
            ("type_schem", T),
            ("type_name", T),
            ("class_name", T),
            ("data_type", I),
            ("remarks", T),
            ("base_type", I),
        ],
    },
];

const METADATA_CATALOGS: TableSpec = TableSpec {
    name: "catalogs",
    columns: &[
        ("catalog_name", T),
        ("connector_id", T),
        ("connector_name", T),
    ],
};
const TABLE_COMMENTS: TableSpec = TableSpec {
    name: "table_comments",
    columns: &[
        ("catalog_name", T),
        ("schema_name", T),
        ("table_name", T),
        ("comment", T),
    ],
};

/// The shape of Trino's `system.metadata.*_properties` tables.
const fn properties(name: &'static str) -> TableSpec {
    TableSpec {
        name,
        columns: &[
            ("catalog_name", T),
            ("property_name", T),
            ("default_value", T),
            ("type", T),
            ("description", T),
        ],
    }
}
const TABLE_PROPERTIES: TableSpec = properties("table_properties");
/// Properties SQE has none of: listed empty, as dbt-trino and BI tools read them.
const NO_PROPERTIES: [TableSpec; 4] = [
    properties("schema_properties"),
    properties("column_properties"),
    properties("analyze_properties"),
    properties("materialized_view_properties"),
];
/// SQE has no materialized views; dbt-trino lists them before every run.
const MATERIALIZED_VIEWS: TableSpec = TableSpec {
    name: "materialized_views",
    columns: &[
        ("catalog_name", T),
        ("schema_name", T),
        ("name", T),
        ("storage_catalog", T),
        ("storage_schema", T),
        ("storage_table", T),
        ("freshness", T),
        ("last_fresh_time", Kind::Time),
        ("comment", T),
        ("definition", T),
    ],
};

/// `java.sql.Types` codes.
mod sql_type {
    pub(super) const TINYINT: i64 = -6;
    pub(super) const SMALLINT: i64 = 5;
    pub(super) const INTEGER: i64 = 4;
    pub(super) const BIGINT: i64 = -5;
    pub(super) const REAL: i64 = 7;
    pub(super) const DOUBLE: i64 = 8;
    pub(super) const DECIMAL: i64 = 3;
    pub(super) const VARCHAR: i64 = 12;
    pub(super) const VARBINARY: i64 = -3;
    pub(super) const DATE: i64 = 91;
    pub(super) const TIME: i64 = 92;
    pub(super) const TIMESTAMP: i64 = 93;
    pub(super) const TIMESTAMP_WITH_TIMEZONE: i64 = 2014;
    pub(super) const ARRAY: i64 = 2003;
    pub(super) const JAVA_OBJECT: i64 = 2000;
    pub(super) const BOOLEAN: i64 = 16;
}

/// How the JDBC driver describes a type: code, column size, decimal digits, radix.
fn jdbc_type(t: &TrinoType) -> (i64, Option<i64>, Option<i64>, Option<i64>) {
    use sql_type::*;
    match t {
        TrinoType::Boolean => (BOOLEAN, None, None, None),
        TrinoType::TinyInt => (TINYINT, Some(3), Some(0), Some(10)),
        TrinoType::SmallInt => (SMALLINT, Some(5), Some(0), Some(10)),
        TrinoType::Integer => (INTEGER, Some(10), Some(0), Some(10)),
        TrinoType::BigInt => (BIGINT, Some(19), Some(0), Some(10)),
        TrinoType::Real => (REAL, Some(24), None, Some(2)),
        TrinoType::Double => (DOUBLE, Some(53), None, Some(2)),
        TrinoType::Decimal { precision, scale } => (
            DECIMAL,
            Some(i64::from(*precision)),
            Some(i64::from(*scale)),
            Some(10),
        ),
        TrinoType::Varchar(_)
        | TrinoType::Char(_)
        | TrinoType::Json
        | TrinoType::Uuid
        | TrinoType::IpAddress => (VARCHAR, None, None, None),
        TrinoType::Varbinary => (VARBINARY, None, None, None),
        TrinoType::Date => (DATE, Some(10), None, None),
        TrinoType::Time { precision } => (
            TIME,
            Some(8 + i64::from(*precision) + i64::from(*precision > 0)),
            Some(i64::from(*precision)),
            None,
        ),
        TrinoType::Timestamp { precision } => (
            TIMESTAMP,
            Some(19 + i64::from(*precision) + i64::from(*precision > 0)),
            Some(i64::from(*precision)),
            None,
        ),
        TrinoType::TimestampWithTimeZone { precision } => (
            TIMESTAMP_WITH_TIMEZONE,
            Some(19 + i64::from(*precision) + i64::from(*precision > 0) + 6),
            Some(i64::from(*precision)),
            None,
        ),
        TrinoType::Array(_) => (ARRAY, None, None, None),
        TrinoType::Unknown
        | TrinoType::IntervalYearToMonth
        | TrinoType::IntervalDayToSecond
        | TrinoType::Map(..)
        | TrinoType::Row(_) => (JAVA_OBJECT, None, None, None),
    }
}

fn jdbc_scope(filters: &Filters) -> Scope {
    Scope {
        catalog: filters.get("table_cat").map(str::to_string),
        schema: filters.get("table_schem").map(str::to_string),
        table: filters.get("table_name").map(str::to_string),
    }
}

/// The tables of `system.jdbc`.
pub(super) fn tables(
    all: Weak<dyn CatalogProviderList>,
) -> Vec<(&'static str, Arc<dyn TableProvider>)> {
    let mut out: Vec<(&'static str, Arc<dyn TableProvider>)> = Vec::new();

    out.push((
        CATALOGS.name,
        MetadataTable::over_catalogs(&CATALOGS, all.clone(), |a, _filters| async move {
            Ok(walk::catalogs(&a, &Scope::default())?
                .into_iter()
                .map(|c| vec![Cell::from(c)])
                .collect())
        }),
    ));

    out.push((
        SCHEMAS.name,
        MetadataTable::over_catalogs(&SCHEMAS, all.clone(), |a, filters| async move {
            let scope = Scope {
                catalog: filters.get("table_catalog").map(str::to_string),
                schema: filters.get("table_schem").map(str::to_string),
                table: None,
            };
            Ok(walk::schemas(&a, &scope)?
                .into_iter()
                .map(|(c, s)| vec![Cell::from(s), Cell::from(c)])
                .collect())
        }),
    ));

    out.push((
        TABLES.name,
        MetadataTable::over_catalogs(&TABLES, all.clone(), |a, filters| async move {
            Ok(walk::tables(&a, &jdbc_scope(&filters))?
                .into_iter()
                .map(|t| {
                    let mut row = vec![
                        Cell::from(t.catalog),
                        Cell::from(t.schema),
                        Cell::from(t.table),
                        Cell::from(if t.view { "VIEW" } else { "TABLE" }),
                    ];
                    row.resize(TABLES.columns.len(), NULL);
                    row
                })
                .collect())
        }),
    ));

    out.push((
        TABLE_TYPES.name,
        MetadataTable::provider(&TABLE_TYPES, |_| {
            Box::pin(async { Ok(vec![vec![Cell::from("TABLE")], vec![Cell::from("VIEW")]]) })
        }),
    ));

    out.push((
        COLUMNS.name,
        MetadataTable::over_catalogs(&COLUMNS, all.clone(), |a, filters| async move {
            let mut rows = Vec::new();
            for (t, columns, comments) in walk::table_columns(&a, &jdbc_scope(&filters)).await? {
                for (i, (field, comment)) in columns.fields().iter().zip(comments).enumerate() {
                    let trino = TrinoType::from_field(field);
                    let (code, size, digits, radix) = jdbc_type(&trino);
                    let nullable = field.is_nullable();
                    rows.push(vec![
                        Cell::from(t.catalog.clone()),
                        Cell::from(t.schema.clone()),
                        Cell::from(t.table.clone()),
                        Cell::from(field.name().clone()),
                        Cell::from(code),
                        Cell::from(trino.to_string()),
                        Cell::from(size),
                        NULL,
                        Cell::from(digits),
                        Cell::from(radix),
                        Cell::from(i64::from(nullable)),
                        comment.map_or(NULL, Cell::from),
                        NULL,
                        NULL,
                        NULL,
                        NULL,
                        Cell::from(i as i64 + 1),
                        Cell::from(if nullable { "YES" } else { "NO" }),
                        NULL,
                        NULL,
                        NULL,
                        NULL,
                        Cell::from("NO"),
                        Cell::from("NO"),
                    ]);
                }
            }
            Ok(rows)
        }),
    ));

    out.push((
        TYPES.name,
        MetadataTable::provider(&TYPES, |_| Box::pin(async { Ok(type_rows()) })),
    ));
    for spec in EMPTY {
        out.push((spec.name, MetadataTable::empty(spec)));
    }
    out
}

/// The types SQE's columns can have, one row each.
fn type_rows() -> Vec<Vec<Cell>> {
    let types = [
        TrinoType::Boolean,
        TrinoType::TinyInt,
        TrinoType::SmallInt,
        TrinoType::Integer,
        TrinoType::BigInt,
        TrinoType::Real,
        TrinoType::Double,
        TrinoType::Decimal {
            precision: 38,
            scale: 0,
        },
        TrinoType::Varchar(None),
        TrinoType::Varbinary,
        TrinoType::Date,
        TrinoType::Time { precision: 6 },
        TrinoType::Timestamp { precision: 6 },
        TrinoType::TimestampWithTimeZone { precision: 6 },
        TrinoType::Array(Box::new(TrinoType::Unknown)),
        TrinoType::Map(Box::new(TrinoType::Unknown), Box::new(TrinoType::Unknown)),
        TrinoType::Row(Vec::new()),
    ];
    types
        .iter()
        .map(|t| {
            let (code, size, _, radix) = jdbc_type(t);
            let name = t.raw_name();
            let quoted = matches!(t, TrinoType::Varchar(_) | TrinoType::Varbinary);
            let exact = matches!(
                t,
                TrinoType::TinyInt | TrinoType::SmallInt | TrinoType::Integer | TrinoType::BigInt
            );
            vec![
                Cell::from(name),
                Cell::from(code),
                Cell::from(size),
                Cell::from(if quoted { Some("'".to_string()) } else { None }),
                Cell::from(if quoted { Some("'".to_string()) } else { None }),
                NULL,
                Cell::from(1),
                Cell::from(matches!(t, TrinoType::Varchar(_))),
                Cell::from(3),
                Cell::from(false),
                Cell::from(exact),
                Cell::from(false),
                NULL,
                Cell::from(0),
                Cell::from(match t {
                    TrinoType::Decimal { precision, .. } => i64::from(*precision),
                    _ => 0,
                }),
                NULL,
                NULL,
                Cell::from(radix),
            ]
        })
        .collect()
}

/// The tables of `system.metadata`.
pub(super) fn metadata_tables(
    all: Weak<dyn CatalogProviderList>,
) -> Vec<(&'static str, Arc<dyn TableProvider>)> {
    let catalogs =
        MetadataTable::over_catalogs(&METADATA_CATALOGS, all.clone(), |a, _filters| async move {
            Ok(walk::catalogs(&a, &Scope::default())?
                .into_iter()
                .map(|c| {
                    let connector = match c.as_str() {
                        super::SYSTEM_CATALOG => "system",
                        sqe_tpch::TPCH_CATALOG => "tpch",
                        _ => "iceberg",
                    };
                    vec![Cell::from(c.clone()), Cell::from(c), Cell::from(connector)]
                })
                .collect())
        });
    let comments =
        MetadataTable::over_catalogs(&TABLE_COMMENTS, all.clone(), |a, filters| async move {
            let scope = Scope {
                catalog: filters.get("catalog_name").map(str::to_string),
                schema: filters.get("schema_name").map(str::to_string),
                table: filters.get("table_name").map(str::to_string),
            };
            Ok(walk::table_providers(&a, &scope)
                .await?
                .into_iter()
                .map(|(t, table)| {
                    vec![
                        Cell::from(t.catalog),
                        Cell::from(t.schema),
                        Cell::from(t.table),
                        table_comment(table.as_ref()).map_or(NULL, Cell::from),
                    ]
                })
                .collect())
        });
    let table_properties =
        MetadataTable::over_catalogs(&TABLE_PROPERTIES, all, |a, filters| async move {
            let scope = Scope {
                catalog: filters.get("catalog_name").map(str::to_string),
                ..Scope::default()
            };
            let mut rows = Vec::new();
            for catalog in walk::catalogs(&a, &scope)? {
                if catalog == super::SYSTEM_CATALOG || catalog == sqe_tpch::TPCH_CATALOG {
                    continue;
                }
                for p in crate::engine::TABLE_PROPERTIES {
                    rows.push(vec![
                        Cell::from(catalog.clone()),
                        Cell::from(p.name),
                        Cell::from(p.default_value),
                        Cell::from(p.type_name),
                        Cell::from(p.description),
                    ]);
                }
            }
            Ok(rows)
        });
    let mut out = vec![
        (METADATA_CATALOGS.name, catalogs),
        (TABLE_COMMENTS.name, comments),
        (TABLE_PROPERTIES.name, table_properties),
        (
            MATERIALIZED_VIEWS.name,
            MetadataTable::empty(&MATERIALIZED_VIEWS),
        ),
    ];
    for spec in &NO_PROPERTIES {
        out.push((spec.name, MetadataTable::empty(spec)));
    }
    out
}

/// An Iceberg table's comment (`COMMENT ON TABLE`), read from its properties; other tables
/// have none.
fn table_comment(table: &dyn TableProvider) -> Option<String> {
    table
        .downcast_ref::<sqe_iceberg::table::IcebergTableProvider>()
        .and_then(|p| {
            p.table()
                .metadata()
                .properties()
                .get(crate::engine::COMMENT_PROPERTY)
                .cloned()
        })
}
