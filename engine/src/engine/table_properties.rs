//! Trino-style table properties on CREATE TABLE: `WITH (partitioning = ARRAY['col', 'day(ts)'])`.
//!
//! DataFusion's planner rejects table options, so they are taken off the parsed statement before
//! planning and applied when the Iceberg table is created.

use datafusion::sql::parser::Statement as DfStatement;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    ColumnOption, CommentDef, CreateTableOptions, Expr, SqlOption, Statement, Value,
};
use iceberg::spec::{
    NullOrder, Schema, SortDirection, SortField, SortOrder, Transform, UnboundPartitionSpec,
};

use crate::error::{Error, ErrorCode, Result};

/// Properties SQE understands on CREATE TABLE.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TableProperties {
    /// Partition fields in Trino's syntax: `col`, `year(col)`, `month(col)`, `day(col)`,
    /// `hour(col)`, `bucket(col, n)`, `truncate(col, n)` (Spark's `bucket(n, col)` too).
    pub partitioning: Vec<String>,
    /// The order rows are written in, in Trino's syntax: `col`, `col DESC`,
    /// `col ASC NULLS LAST`.
    pub sorted_by: Vec<String>,
    /// Where the table's files go, instead of the catalog's default.
    pub location: Option<String>,
    /// `COMMENT '…'` of the table (kept as its `comment` property, as Trino's Iceberg
    /// connector keeps it).
    pub comment: Option<String>,
    /// `COMMENT '…'` of columns, by column name (kept as the Iceberg fields' `doc`).
    pub column_comments: Vec<(String, String)>,
    /// Columns defined `uuid` (planned as 16 bytes, which Iceberg's `fixed(16)` also is).
    pub uuid_columns: Vec<String>,
}

impl TableProperties {
    /// `schema` (a column list's) with its `uuid` columns marked so.
    pub(super) fn typed(
        &self,
        schema: &datafusion::arrow::datatypes::Schema,
    ) -> datafusion::arrow::datatypes::Schema {
        let fields: Vec<datafusion::arrow::datatypes::FieldRef> = schema
            .fields()
            .iter()
            .map(|field| {
                if self.uuid_columns.contains(field.name()) {
                    Arc::new(
                        sqe_functions::SixteenBytes::Uuid.field(field.name(), field.is_nullable()),
                    )
                } else {
                    Arc::clone(field)
                }
            })
            .collect();
        datafusion::arrow::datatypes::Schema::new(fields)
    }

    /// `schema` with the columns' comments as its fields' docs.
    pub(super) fn documented(&self, schema: Schema) -> Result<Schema> {
        if self.column_comments.is_empty() {
            return Ok(schema);
        }
        Ok(sqe_iceberg::types::with_fields_changed(&schema, |field| {
            if let Some((_, doc)) = self.column_comments.iter().find(|(n, _)| *n == field.name) {
                field.doc = Some(doc.clone());
            }
        })?)
    }
}

/// How a new table lays out its rows: its partition spec and its sort order.
#[derive(Debug, Clone, Default)]
pub(super) struct TableLayout {
    pub partition: Option<UnboundPartitionSpec>,
    pub sort_order: Option<SortOrder>,
}

impl TableLayout {
    /// The layout `properties` ask of a table of `schema`; bad fields are
    /// `INVALID_TABLE_PROPERTY` before anything is created.
    pub(super) fn new(schema: &Schema, properties: &TableProperties) -> Result<Self> {
        Ok(Self {
            partition: partition_spec(schema, &properties.partitioning)?,
            sort_order: sort_order(schema, &properties.sorted_by)?,
        })
    }
}

/// A table property SQE accepts, as `system.metadata.table_properties` lists it.
pub(crate) struct TablePropertySpec {
    pub(crate) name: &'static str,
    pub(crate) default_value: &'static str,
    /// Its Trino type.
    pub(crate) type_name: &'static str,
    pub(crate) description: &'static str,
}

/// Every table property CREATE TABLE accepts.
pub(crate) const TABLE_PROPERTIES: &[TablePropertySpec] = &[
    TablePropertySpec {
        name: "format",
        default_value: "PARQUET",
        type_name: "varchar",
        description: "File format for the table's data files (PARQUET only)",
    },
    TablePropertySpec {
        name: "format_version",
        default_value: "2",
        type_name: "integer",
        description: "Iceberg table format version (2 only)",
    },
    TablePropertySpec {
        name: "location",
        default_value: "",
        type_name: "varchar",
        description: "File system location URI for the table",
    },
    TablePropertySpec {
        name: "partitioning",
        default_value: "[]",
        type_name: "array(varchar)",
        description: "Partition transforms",
    },
    TablePropertySpec {
        name: "sorted_by",
        default_value: "[]",
        type_name: "array(varchar)",
        description: "Sorted columns",
    },
];

/// Removes SQE's table properties from a CREATE TABLE statement and returns them.
pub(super) fn take_table_properties(statement: &mut DfStatement) -> Result<TableProperties> {
    let DfStatement::Statement(statement) = statement else {
        return Ok(TableProperties::default());
    };
    let Statement::CreateTable(create) = statement.as_mut() else {
        return Ok(TableProperties::default());
    };
    let comment = create.comment.take().map(|c| match c {
        CommentDef::WithEq(text) | CommentDef::WithoutEq(text) => text,
    });
    let mut column_comments = Vec::new();
    let uuid_columns = create
        .columns
        .iter()
        .filter(|c| matches!(c.data_type, datafusion::sql::sqlparser::ast::DataType::Uuid))
        .map(|c| c.name.value.to_lowercase())
        .collect();
    for column in &mut create.columns {
        column.options.retain(|option| match &option.option {
            ColumnOption::Comment(text) => {
                // Names are folded before planning (quoted ones by the dialect).
                column_comments.push((column.name.value.to_lowercase(), text.clone()));
                false
            }
            _ => true,
        });
    }
    let mut properties = TableProperties {
        comment,
        column_comments,
        uuid_columns,
        ..TableProperties::default()
    };
    let options = match std::mem::take(&mut create.table_options) {
        CreateTableOptions::None => return Ok(properties),
        CreateTableOptions::With(options) => options,
        other => {
            create.table_options = other;
            return Ok(properties);
        }
    };
    let given = PropertyValues::read(&options)?;
    // `format` and `format_version` are accepted as SHOW CREATE TABLE prints them, so its text
    // creates the table again.
    if let Some(format) = &given.format
        && !format.eq_ignore_ascii_case("PARQUET")
    {
        return Err(Error::NotSupported(format!(
            "table format '{format}': SQE writes PARQUET"
        )));
    }
    if let Some(version) = given.format_version
        && version != 2
    {
        return Err(Error::NotSupported(format!(
            "format_version = {version}: SQE creates Iceberg v2 tables"
        )));
    }
    properties.partitioning = given.partitioning.unwrap_or_default();
    properties.sorted_by = given.sorted_by.unwrap_or_default();
    properties.location = given.location;
    Ok(properties)
}

/// The table properties a statement gives (CREATE TABLE's `WITH`, ALTER TABLE's
/// `SET PROPERTIES`), read and type-checked; each statement decides which it takes.
#[derive(Debug, Clone, Default)]
pub(super) struct PropertyValues {
    pub partitioning: Option<Vec<String>>,
    pub sorted_by: Option<Vec<String>>,
    pub location: Option<String>,
    pub format: Option<String>,
    pub format_version: Option<u8>,
}

impl PropertyValues {
    pub(super) fn read(options: &[SqlOption]) -> Result<Self> {
        let mut given = Self::default();
        for option in options {
            let SqlOption::KeyValue { key, value } = option else {
                return Err(Error::invalid(
                    ErrorCode::InvalidTableProperty,
                    format!("unsupported table option {option}"),
                ));
            };
            match key.value.to_ascii_lowercase().as_str() {
                "partitioning" => given.partitioning = Some(string_array(value, "partitioning")?),
                "sorted_by" => given.sorted_by = Some(string_array(value, "sorted_by")?),
                "location" => given.location = Some(string(value, "location")?),
                "format" => given.format = Some(string(value, "format")?),
                "format_version" => {
                    given.format_version = Some(value.to_string().parse().map_err(|_| {
                        Error::invalid(
                            ErrorCode::InvalidTableProperty,
                            format!("format_version takes 1 or 2, got {value}"),
                        )
                    })?);
                }
                other => {
                    let supported: Vec<&str> = TABLE_PROPERTIES.iter().map(|p| p.name).collect();
                    return Err(Error::invalid(
                        ErrorCode::InvalidTableProperty,
                        format!(
                            "unknown table property '{other}' (supported: {})",
                            supported.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(given)
    }
}

fn string(value: &Expr, property: &str) -> Result<String> {
    match value {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Ok(s.clone()),
            other => Err(Error::invalid(
                ErrorCode::InvalidTableProperty,
                format!("table property '{property}' takes a string, got {other}"),
            )),
        },
        other => Err(Error::invalid(
            ErrorCode::InvalidTableProperty,
            format!("table property '{property}' takes a string, got {other}"),
        )),
    }
}

fn string_array(value: &Expr, property: &str) -> Result<Vec<String>> {
    let items = match value {
        Expr::Array(array) => &array.elem,
        _ => {
            return Err(Error::invalid(
                ErrorCode::InvalidTableProperty,
                format!("table property '{property}' takes ARRAY['...', ...], got {value}"),
            ));
        }
    };
    items
        .iter()
        .map(|item| match item {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Ok(s.clone()),
                other => Err(Error::invalid(
                    ErrorCode::InvalidTableProperty,
                    format!("table property '{property}' takes strings, got {other}"),
                )),
            },
            other => Err(Error::invalid(
                ErrorCode::InvalidTableProperty,
                format!("table property '{property}' takes strings, got {other}"),
            )),
        })
        .collect()
}

/// Builds the partition spec for `schema` from Trino-style partition fields.
pub(super) fn partition_spec(
    schema: &Schema,
    fields: &[String],
) -> Result<Option<UnboundPartitionSpec>> {
    if fields.is_empty() {
        return Ok(None);
    }
    let mut builder = UnboundPartitionSpec::builder();
    for field in fields {
        let (transform, column) = parse_partition_field(field)?;
        let source = schema.field_by_name(&column).ok_or_else(|| {
            Error::invalid(
                ErrorCode::InvalidTableProperty,
                format!("partition column '{column}' is not a column of the table"),
            )
        })?;
        let name = match transform {
            Transform::Identity => column.clone(),
            Transform::Bucket(_) => format!("{column}_bucket"),
            Transform::Truncate(_) => format!("{column}_trunc"),
            Transform::Year => format!("{column}_year"),
            Transform::Month => format!("{column}_month"),
            Transform::Day => format!("{column}_day"),
            Transform::Hour => format!("{column}_hour"),
            _ => format!("{column}_{transform}"),
        };
        if transform.result_type(&source.field_type).is_err() {
            return Err(Error::invalid(
                ErrorCode::InvalidTableProperty,
                format!(
                    "partition transform '{field}' does not apply to column '{column}' of type {}",
                    source.field_type
                ),
            ));
        }
        builder = builder
            .add_partition_field(source.id, name, transform)
            .map_err(|e| {
                Error::invalid(
                    ErrorCode::InvalidTableProperty,
                    format!("partition field '{field}': {e}"),
                )
            })?;
    }
    Ok(Some(builder.build()))
}

/// Builds the sort order for `schema` from Trino's `sorted_by` items: a column, then `ASC`
/// (the default, nulls first) or `DESC` (nulls last), then optionally `NULLS FIRST|LAST`.
pub(super) fn sort_order(schema: &Schema, items: &[String]) -> Result<Option<SortOrder>> {
    if items.is_empty() {
        return Ok(None);
    }
    let mut builder = SortOrder::builder();
    let mut seen = Vec::new();
    for item in items {
        let (column, direction, null_order) = parse_sort_item(item)?;
        let field = schema
            .as_struct()
            .fields()
            .iter()
            .find(|f| f.name == column)
            .or_else(|| {
                let mut named = schema
                    .as_struct()
                    .fields()
                    .iter()
                    .filter(|f| f.name.eq_ignore_ascii_case(&column));
                named.next().filter(|_| named.next().is_none())
            })
            .ok_or_else(|| {
                Error::invalid(
                    ErrorCode::InvalidTableProperty,
                    format!("sorted_by column '{column}' is not a column of the table"),
                )
            })?;
        if !field.field_type.is_primitive() {
            return Err(Error::invalid(
                ErrorCode::InvalidTableProperty,
                format!(
                    "sorted_by column '{column}' is of type {}: only primitive columns sort",
                    field.field_type
                ),
            ));
        }
        if seen.contains(&field.id) {
            return Err(Error::invalid(
                ErrorCode::InvalidTableProperty,
                format!("sorted_by names column '{column}' twice"),
            ));
        }
        seen.push(field.id);
        builder.with_sort_field(SortField {
            source_id: field.id,
            transform: Transform::Identity,
            direction,
            null_order,
        });
    }
    builder
        .build(schema)
        .map(Some)
        .map_err(|e| Error::invalid(ErrorCode::InvalidTableProperty, format!("sorted_by: {e}")))
}

fn parse_sort_item(item: &str) -> Result<(String, SortDirection, NullOrder)> {
    let invalid = || {
        Error::invalid(
            ErrorCode::InvalidTableProperty,
            format!(
                "invalid sorted_by item '{item}': use col, col ASC, col DESC, optionally followed by NULLS FIRST or NULLS LAST"
            ),
        )
    };
    let item = item.trim();
    let (column, rest) = if let Some(quoted) = item.strip_prefix('"') {
        // A quoted name keeps its spaces; `""` is a quote inside it.
        let mut name = String::new();
        let mut chars = quoted.char_indices().peekable();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            if c == '"' {
                if chars.peek().is_some_and(|(_, n)| *n == '"') {
                    chars.next();
                    name.push('"');
                } else {
                    end = Some(i + 1);
                    break;
                }
            } else {
                name.push(c);
            }
        }
        let end = end.ok_or_else(invalid)?;
        (name, &quoted[end..])
    } else {
        let end = item.find(char::is_whitespace).unwrap_or(item.len());
        (item[..end].to_lowercase(), &item[end..])
    };
    if column.is_empty() {
        return Err(invalid());
    }
    let words: Vec<String> = rest
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let (direction, nulls) = match words.as_slice() {
        [] => (SortDirection::Ascending, None),
        ["ASC"] => (SortDirection::Ascending, None),
        ["DESC"] => (SortDirection::Descending, None),
        ["NULLS", n] => (SortDirection::Ascending, Some(*n)),
        ["ASC", "NULLS", n] => (SortDirection::Ascending, Some(*n)),
        ["DESC", "NULLS", n] => (SortDirection::Descending, Some(*n)),
        _ => return Err(invalid()),
    };
    let null_order = match (nulls, direction) {
        (Some("FIRST"), _) | (None, SortDirection::Ascending) => NullOrder::First,
        (Some("LAST"), _) | (None, SortDirection::Descending) => NullOrder::Last,
        _ => return Err(invalid()),
    };
    Ok((column, direction, null_order))
}

/// A sort field as Trino's `sorted_by` property writes it: the column, then its direction and
/// null order where they are not the defaults.
pub(super) fn sort_item_text(column: &str, field: &SortField) -> String {
    let name = crate::dialect::quoting::ident_if_needed(column);
    match (field.direction, field.null_order) {
        (SortDirection::Ascending, NullOrder::First) => name,
        (SortDirection::Ascending, NullOrder::Last) => format!("{name} ASC NULLS LAST"),
        (SortDirection::Descending, NullOrder::Last) => format!("{name} DESC"),
        (SortDirection::Descending, NullOrder::First) => format!("{name} DESC NULLS FIRST"),
    }
}

fn parse_partition_field(field: &str) -> Result<(Transform, String)> {
    let field = field.trim();
    let invalid = || {
        Error::invalid(
            ErrorCode::InvalidTableProperty,
            format!(
                "invalid partition field '{field}': use col, year(col), month(col), day(col), hour(col), bucket(col, n) or truncate(col, n)"
            ),
        )
    };
    let Some((function, rest)) = field.split_once('(') else {
        if field.is_empty() || field.contains([' ', ',', ')']) {
            return Err(invalid());
        }
        return Ok((Transform::Identity, field.to_string()));
    };
    let args = rest.strip_suffix(')').ok_or_else(invalid)?;
    let args: Vec<&str> = args.split(',').map(str::trim).collect();
    let transform = match (
        function.trim().to_ascii_lowercase().as_str(),
        args.as_slice(),
    ) {
        ("year", [column]) => return Ok((Transform::Year, column.to_string())),
        ("month", [column]) => return Ok((Transform::Month, column.to_string())),
        ("day", [column]) => return Ok((Transform::Day, column.to_string())),
        ("hour", [column]) => return Ok((Transform::Hour, column.to_string())),
        // Trino writes `bucket(col, n)`, Spark `bucket(n, col)`: a column is never a number.
        ("bucket", [a, b]) => {
            let (n, column) = count_and_column(a, b).ok_or_else(invalid)?;
            (Transform::Bucket(n), column)
        }
        ("truncate", [a, b]) => {
            let (n, column) = count_and_column(a, b).ok_or_else(invalid)?;
            (Transform::Truncate(n), column)
        }
        _ => return Err(invalid()),
    };
    Ok((transform.0, transform.1.to_string()))
}

fn count_and_column<'a>(a: &'a str, b: &'a str) -> Option<(u32, &'a str)> {
    match (positive(a), positive(b)) {
        (None, Some(n)) => Some((n, a)),
        (Some(n), None) => Some((n, b)),
        _ => None,
    }
}

/// A bucket count or truncation width: 1 up to i32::MAX (Iceberg stores them as int).
fn positive(text: &str) -> Option<u32> {
    text.parse::<u32>()
        .ok()
        .filter(|n| *n > 0 && i32::try_from(*n).is_ok())
}

#[cfg(test)]
mod tests {
    use datafusion::sql::parser::DFParser;
    use iceberg::spec::{NestedField, PrimitiveType, Type};

    use super::*;

    fn parse(sql: &str) -> DfStatement {
        let mut statements = DFParser::parse_sql(sql).expect("valid SQL");
        statements.pop_front().expect("one statement")
    }

    #[test]
    fn takes_partitioning_and_leaves_a_plannable_statement() -> Result<()> {
        let mut statement = parse(
            "CREATE TABLE s.t (a INT, ts TIMESTAMP) WITH (partitioning = ARRAY['a', 'day(ts)'])",
        );
        let properties = take_table_properties(&mut statement)?;
        assert_eq!(
            properties.partitioning,
            vec!["a".to_string(), "day(ts)".to_string()]
        );
        assert_eq!(
            statement.to_string(),
            "CREATE TABLE s.t (a INT, ts TIMESTAMP)"
        );
        Ok(())
    }

    #[test]
    fn unknown_and_unsupported_properties_are_errors() {
        let error = |sql: &str| {
            take_table_properties(&mut parse(sql))
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(
            error("CREATE TABLE t (a INT) WITH (orc_bloom_filter_columns = ARRAY['a'])").as_deref(),
            Some(
                "unknown table property 'orc_bloom_filter_columns' (supported: format, format_version, location, partitioning, sorted_by)"
            )
        );
        assert_eq!(
            error("CREATE TABLE t (a INT) WITH (format = 'ORC')").as_deref(),
            Some("not supported: table format 'ORC': SQE writes PARQUET")
        );
        assert!(error("CREATE TABLE t (a INT) WITH (format_version = 1)").is_some());
        assert_eq!(
            error("CREATE TABLE t (a INT) WITH (format = 'parquet', format_version = 2)"),
            None
        );
    }

    #[test]
    fn location_is_kept() -> Result<()> {
        let mut statement = parse("CREATE TABLE t (a INT) WITH (location = 'file:///tmp/t')");
        let properties = take_table_properties(&mut statement)?;
        assert_eq!(properties.location.as_deref(), Some("file:///tmp/t"));
        Ok(())
    }

    #[test]
    fn sort_orders_read_and_print_as_trino_writes_them() -> Result<()> {
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::optional(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "Name x", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()
            .map_err(|e| Error::Internal(e.to_string()))?;
        let items = ["ID DESC", "\"Name x\" asc nulls last"].map(String::from);
        let order = sort_order(&schema, &items)?.ok_or_else(|| Error::Internal("order".into()))?;
        let read: Vec<_> = order
            .fields
            .iter()
            .map(|f| (f.source_id, f.direction, f.null_order))
            .collect();
        assert_eq!(
            read,
            vec![
                (1, SortDirection::Descending, NullOrder::Last),
                (2, SortDirection::Ascending, NullOrder::Last),
            ]
        );
        let printed: Vec<String> = order
            .fields
            .iter()
            .zip(["id", "Name x"])
            .map(|(f, column)| sort_item_text(column, f))
            .collect();
        assert_eq!(printed, ["id DESC", "\"Name x\" ASC NULLS LAST"]);
        // What it prints reads back as the same order.
        assert_eq!(sort_order(&schema, &printed)?, Some(order));

        for bad in [
            "missing",
            "id DOWN",
            "id NULLS MIDDLE",
            "\"id",
            "",
            "id ASC DESC",
        ] {
            let e = sort_order(&schema, &[bad.to_string()])
                .err()
                .ok_or_else(|| Error::Internal(format!("{bad} was taken")))?;
            assert_eq!(e.code(), ErrorCode::InvalidTableProperty, "{bad}: {e}");
        }
        let twice = sort_order(&schema, &["id".into(), "id DESC".into()]);
        assert!(twice.is_err());
        assert_eq!(sort_order(&schema, &[])?, None);
        Ok(())
    }

    #[test]
    fn builds_specs_and_refuses_bad_fields() -> Result<()> {
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::optional(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "name", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()
            .map_err(|e| Error::Internal(e.to_string()))?;
        let spec = partition_spec(&schema, &["bucket(8, id)".into(), "name".into()])?
            .ok_or_else(|| Error::Internal("spec".into()))?;
        let fields: Vec<_> = spec
            .fields()
            .iter()
            .map(|f| (f.source_id, f.name.clone(), f.transform))
            .collect();
        assert_eq!(
            fields,
            vec![
                (1, "id_bucket".to_string(), Transform::Bucket(8)),
                (2, "name".to_string(), Transform::Identity)
            ]
        );
        assert!(partition_spec(&schema, &["day(name)".into()]).is_err());
        assert!(partition_spec(&schema, &["missing".into()]).is_err());
        assert!(partition_spec(&schema, &["bucket(x, id)".into()]).is_err());
        let trino_order = partition_spec(&schema, &["bucket(id, 8)".into()])?;
        assert_eq!(
            trino_order,
            partition_spec(&schema, &["bucket(8, id)".into()])?
        );
        assert!(partition_spec(&schema, &["bucket(0, id)".into()]).is_err());
        assert!(partition_spec(&schema, &["truncate(0, name)".into()]).is_err());
        Ok(())
    }
}
