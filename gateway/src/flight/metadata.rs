//! Flight SQL metadata answers: SqlInfo, XDBC types, catalogs, schemas, tables, keys.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use arrow_flight::sql::metadata::{
    SqlInfoData, SqlInfoDataBuilder, XdbcTypeInfo, XdbcTypeInfoData, XdbcTypeInfoDataBuilder,
};
use arrow_flight::sql::{
    CommandGetDbSchemas, CommandGetTables, Nullable, Searchable, SqlInfo, SqlNullOrdering,
    SqlSupportedCaseSensitivity, SqlSupportedTransaction, SupportedSqlGrammar, XdbcDataType,
};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use sqe_engine::dialect::types::{TrinoType, precision_and_scale};
use sqe_engine::engine::Engine;
use sqe_engine::error::{Error, Result};

/// What GetSqlInfo reports.
pub(super) static SQL_INFO: LazyLock<Option<SqlInfoData>> = LazyLock::new(|| {
    let mut b = SqlInfoDataBuilder::new();
    b.append(SqlInfo::FlightSqlServerName, "SQE");
    b.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    b.append(SqlInfo::FlightSqlServerArrowVersion, "58");
    b.append(SqlInfo::FlightSqlServerReadOnly, false);
    b.append(SqlInfo::FlightSqlServerSql, true);
    b.append(SqlInfo::FlightSqlServerSubstrait, false);
    b.append(
        SqlInfo::FlightSqlServerTransaction,
        SqlSupportedTransaction::None as i32,
    );
    b.append(SqlInfo::FlightSqlServerCancel, true);
    b.append(SqlInfo::FlightSqlServerBulkIngestion, true);
    b.append(SqlInfo::FlightSqlServerIngestTransactionsSupported, false);
    b.append(SqlInfo::FlightSqlServerStatementTimeout, 0i32);
    b.append(SqlInfo::FlightSqlServerTransactionTimeout, 0i32);
    b.append(SqlInfo::SqlDdlCatalog, false);
    b.append(SqlInfo::SqlDdlSchema, true);
    b.append(SqlInfo::SqlDdlTable, true);
    b.append(
        SqlInfo::SqlIdentifierCase,
        SqlSupportedCaseSensitivity::SqlCaseSensitivityLowercase as i32,
    );
    b.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
    b.append(
        SqlInfo::SqlQuotedIdentifierCase,
        SqlSupportedCaseSensitivity::SqlCaseSensitivityCaseInsensitive as i32,
    );
    b.append(SqlInfo::SqlAllTablesAreSelectable, true);
    b.append(
        SqlInfo::SqlNullOrdering,
        SqlNullOrdering::SqlNullsSortedHigh as i32,
    );
    b.append(SqlInfo::SqlSearchStringEscape, "\\");
    b.append(SqlInfo::SqlSupportsColumnAliasing, true);
    b.append(SqlInfo::SqlNullPlusNullIsNull, true);
    b.append(SqlInfo::SqlSupportsTableCorrelationNames, true);
    b.append(SqlInfo::SqlSupportsExpressionsInOrderBy, true);
    b.append(SqlInfo::SqlSupportsLikeEscapeClause, true);
    b.append(SqlInfo::SqlSupportsNonNullableColumns, true);
    b.append(
        SqlInfo::SqlSupportedGrammar,
        SupportedSqlGrammar::SqlCoreGrammar as i32,
    );
    b.append(SqlInfo::SqlSchemaTerm, "schema");
    b.append(SqlInfo::SqlCatalogTerm, "catalog");
    b.append(SqlInfo::SqlCatalogAtStart, true);
    b.append(SqlInfo::SqlSelectForUpdateSupported, false);
    b.append(SqlInfo::SqlStoredProceduresSupported, false);
    b.append(SqlInfo::SqlCorrelatedSubqueriesSupported, true);
    b.append(SqlInfo::SqlTransactionsSupported, false);
    b.append(SqlInfo::SqlBatchUpdatesSupported, false);
    b.append(SqlInfo::SqlSavepointsSupported, false);
    b.append(SqlInfo::SqlNamedParametersSupported, false);
    b.build().ok()
});

fn xdbc(
    name: &str,
    data_type: XdbcDataType,
    column_size: Option<i32>,
    prefix: Option<&str>,
) -> XdbcTypeInfo {
    XdbcTypeInfo {
        type_name: name.into(),
        data_type,
        column_size,
        literal_prefix: prefix.map(Into::into),
        literal_suffix: prefix.map(|_| "'".into()),
        create_params: None,
        nullable: Nullable::NullabilityNullable,
        case_sensitive: matches!(data_type, XdbcDataType::XdbcVarchar),
        searchable: Searchable::Full,
        unsigned_attribute: Some(false),
        fixed_prec_scale: false,
        auto_increment: Some(false),
        local_type_name: Some(name.into()),
        minimum_scale: None,
        maximum_scale: None,
        sql_data_type: data_type,
        datetime_subcode: None,
        num_prec_radix: None,
        interval_precision: None,
    }
}

/// What GetXdbcTypeInfo reports: the types SQE tables can hold.
pub(super) static XDBC_TYPES: LazyLock<Option<XdbcTypeInfoData>> = LazyLock::new(|| {
    let mut b = XdbcTypeInfoDataBuilder::new();
    b.append(xdbc("BOOLEAN", XdbcDataType::XdbcBit, Some(1), None));
    b.append(xdbc("INTEGER", XdbcDataType::XdbcInteger, Some(10), None));
    b.append(xdbc("BIGINT", XdbcDataType::XdbcBigint, Some(19), None));
    b.append(xdbc("REAL", XdbcDataType::XdbcReal, Some(24), None));
    b.append(xdbc("DOUBLE", XdbcDataType::XdbcDouble, Some(53), None));
    let mut decimal = xdbc("DECIMAL", XdbcDataType::XdbcDecimal, Some(38), None);
    decimal.create_params = Some(vec!["precision".into(), "scale".into()]);
    decimal.maximum_scale = Some(38);
    decimal.minimum_scale = Some(0);
    b.append(decimal);
    b.append(xdbc("VARCHAR", XdbcDataType::XdbcVarchar, None, Some("'")));
    b.append(xdbc(
        "VARBINARY",
        XdbcDataType::XdbcVarbinary,
        None,
        Some("X'"),
    ));
    b.append(xdbc(
        "DATE",
        XdbcDataType::XdbcDate,
        Some(10),
        Some("DATE '"),
    ));
    b.append(xdbc(
        "TIME",
        XdbcDataType::XdbcTime,
        Some(15),
        Some("TIME '"),
    ));
    b.append(xdbc(
        "TIMESTAMP",
        XdbcDataType::XdbcTimestamp,
        Some(26),
        Some("TIMESTAMP '"),
    ));
    b.build().ok()
});

pub(super) fn sql_info() -> Result<&'static SqlInfoData> {
    SQL_INFO
        .as_ref()
        .ok_or_else(|| Error::Internal("SqlInfo data could not be built".into()))
}

pub(super) fn xdbc_types() -> Result<&'static XdbcTypeInfoData> {
    XDBC_TYPES
        .as_ref()
        .ok_or_else(|| Error::Internal("XDBC type data could not be built".into()))
}

/// A table's columns with the `ARROW:FLIGHT:SQL:*` metadata the Flight SQL JDBC driver reads.
pub(super) fn annotated_schema(
    catalog: &str,
    schema: &str,
    table: &str,
    columns: &Schema,
) -> Schema {
    let fields: Vec<Field> = columns
        .fields()
        .iter()
        .map(|field| {
            let (precision, scale) = precision_and_scale(field.data_type());
            let mut metadata = HashMap::from([
                (
                    "ARROW:FLIGHT:SQL:CATALOG_NAME".to_string(),
                    catalog.to_string(),
                ),
                (
                    "ARROW:FLIGHT:SQL:DB_SCHEMA_NAME".to_string(),
                    schema.to_string(),
                ),
                ("ARROW:FLIGHT:SQL:TABLE_NAME".to_string(), table.to_string()),
                (
                    "ARROW:FLIGHT:SQL:TYPE_NAME".to_string(),
                    TrinoType::from_field(field)
                        .to_string()
                        .to_ascii_uppercase(),
                ),
                (
                    "ARROW:FLIGHT:SQL:IS_AUTO_INCREMENT".to_string(),
                    "0".to_string(),
                ),
                (
                    "ARROW:FLIGHT:SQL:IS_CASE_SENSITIVE".to_string(),
                    if matches!(
                        field.data_type(),
                        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
                    ) {
                        "1"
                    } else {
                        "0"
                    }
                    .to_string(),
                ),
                ("ARROW:FLIGHT:SQL:IS_READ_ONLY".to_string(), "0".to_string()),
                (
                    "ARROW:FLIGHT:SQL:IS_SEARCHABLE".to_string(),
                    "1".to_string(),
                ),
            ]);
            if let Some(p) = precision {
                metadata.insert("ARROW:FLIGHT:SQL:PRECISION".to_string(), p.to_string());
            }
            if let Some(s) = scale {
                metadata.insert("ARROW:FLIGHT:SQL:SCALE".to_string(), s.to_string());
            }
            field.as_ref().clone().with_metadata(metadata)
        })
        .collect();
    Schema::new(fields)
}

/// GetDbSchemas: every schema of the catalog (the builder applies the client's filters).
pub(super) async fn db_schemas(engine: &Engine, query: CommandGetDbSchemas) -> Result<RecordBatch> {
    let mut builder = query.into_builder();
    for schema in engine.schema_names().await? {
        builder.append(engine.catalog_name(), schema);
    }
    builder.build().map_err(|e| Error::Internal(e.to_string()))
}

/// GetTables, with each table's annotated schema when asked for.
pub(super) async fn tables(engine: &Engine, query: CommandGetTables) -> Result<RecordBatch> {
    let include_schema = query.include_schema;
    let catalog = engine.catalog_name().to_string();
    if query.catalog.as_deref().is_some_and(|c| c != catalog) {
        return query
            .into_builder()
            .build()
            .map_err(|e| Error::Internal(e.to_string()));
    }
    let mut builder = query.into_builder();
    let empty = Schema::empty();
    for schema in engine.schema_names().await? {
        for table in engine.table_names(&schema).await? {
            let columns = if include_schema {
                match engine.table_schema(&schema, &table).await? {
                    Some(columns) => annotated_schema(&catalog, &schema, &table, &columns),
                    None => continue,
                }
            } else {
                empty.clone()
            };
            builder
                .append(&catalog, &schema, &table, "TABLE", &columns)
                .map_err(|e| Error::Internal(e.to_string()))?;
        }
    }
    builder.build().map_err(|e| Error::Internal(e.to_string()))
}

fn utf8(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

/// GetPrimaryKeys: Iceberg tables have none.
pub(super) fn primary_keys_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("catalog_name", true),
        utf8("db_schema_name", true),
        utf8("table_name", false),
        utf8("column_name", false),
        utf8("key_name", true),
        Field::new("key_sequence", DataType::Int32, false),
    ]))
}

/// Exported/imported keys and cross references: none either.
pub(super) fn foreign_keys_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("pk_catalog_name", true),
        utf8("pk_db_schema_name", true),
        utf8("pk_table_name", false),
        utf8("pk_column_name", false),
        utf8("fk_catalog_name", true),
        utf8("fk_db_schema_name", true),
        utf8("fk_table_name", false),
        utf8("fk_column_name", false),
        Field::new("key_sequence", DataType::Int32, false),
        utf8("fk_key_name", true),
        utf8("pk_key_name", true),
        Field::new("update_rule", DataType::UInt8, false),
        Field::new("delete_rule", DataType::UInt8, false),
    ]))
}
