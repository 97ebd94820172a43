//! `SHOW` and `DESCRIBE`, answered as Trino does: as queries over `information_schema`, or
//! (functions, session, CREATE TABLE) from the session and the catalog directly.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::catalog::MemTable;
use datafusion::datasource::provider_as_source;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder, Volatility, lit};
use datafusion::prelude::ident as column;
use datafusion::sql::parser::Statement as DfStatement;
use iceberg::spec::Transform;
use iceberg::{NamespaceIdent, TableIdent};

use super::function_signatures::{Function, Listed, signatures};
use super::table_properties::sort_item_text;
use super::{Engine, SessionSettings};
use crate::dialect::quoting::{ident, ident_if_needed, literal};
use crate::dialect::statements::Show;
use crate::dialect::types::TrinoType;
use crate::error::{Error, ErrorCode, ObjectKind, Result};
use crate::metadata::{INFORMATION_SCHEMA, is_metadata};
use crate::session_properties::{self, PROPERTIES};

fn like_clause(column: &str, like: Option<&String>) -> String {
    like.map(|p| format!(" AND {column} LIKE {}", literal(p)))
        .unwrap_or_default()
}

impl Engine {
    /// Whether a statement reads `system` or `information_schema` tables.
    pub(super) fn reads_metadata(
        &self,
        state: &SessionState,
        statement: &DfStatement,
    ) -> Result<bool> {
        let defaults = &state.config_options().catalog;
        Ok(state.resolve_table_references(statement)?.iter().any(|t| {
            is_metadata(
                t.catalog().unwrap_or(&defaults.default_catalog),
                t.schema().unwrap_or(&defaults.default_schema),
            )
        }))
    }

    fn session_catalog<'a>(&'a self, session: &'a SessionSettings) -> &'a str {
        session
            .catalog
            .as_deref()
            .unwrap_or(&self.settings.catalog_name)
    }

    fn require_catalog(&self, state: &SessionState, catalog: &str) -> Result<()> {
        if state.catalog_list().catalog(catalog).is_none() {
            return Err(Error::not_found(ObjectKind::Catalog, catalog));
        }
        Ok(())
    }

    fn require_schema(&self, state: &SessionState, catalog: &str, schema: &str) -> Result<()> {
        self.require_catalog(state, catalog)?;
        let exists = state
            .catalog_list()
            .catalog(catalog)
            .is_some_and(|c| c.schema(schema).is_some());
        if !exists {
            return Err(Error::not_found(
                ObjectKind::Schema,
                format!("{catalog}.{schema}"),
            ));
        }
        Ok(())
    }

    /// `[[catalog.]schema.]table` resolved against the session.
    fn resolve_table(
        &self,
        session: &SessionSettings,
        name: &[String],
    ) -> (String, String, String) {
        let catalog = self.session_catalog(session).to_string();
        let schema = session
            .schema
            .clone()
            .unwrap_or_else(|| crate::catalog::DEFAULT_SCHEMA.into());
        match name {
            [c, s, t] => (c.clone(), s.clone(), t.clone()),
            [s, t] => (catalog, s.clone(), t.clone()),
            [t] => (catalog, schema, t.clone()),
            _ => (catalog, schema, String::new()),
        }
    }

    async fn require_table(
        &self,
        state: &SessionState,
        (c, s, t): (&str, &str, &str),
    ) -> Result<()> {
        self.require_schema(state, c, s)?;
        let schema = state.catalog_list().catalog(c).and_then(|c| c.schema(s));
        // The cached names answer without loading the table; a miss is checked with the catalog.
        let found = match schema {
            Some(schema) => schema.table_exist(t) || schema.table(t).await?.is_some(),
            None => false,
        };
        if !found {
            return Err(Error::not_found(ObjectKind::Table, format!("{c}.{s}.{t}")));
        }
        Ok(())
    }

    /// The logical plan answering a `SHOW` statement.
    pub(super) async fn show_plan(
        &self,
        state: &SessionState,
        session: &SessionSettings,
        show: Show,
    ) -> Result<LogicalPlan> {
        let sql = match show {
            Show::Catalogs { like } => format!(
                "SELECT catalog_name AS \"Catalog\" FROM system.metadata.catalogs WHERE true{} ORDER BY 1",
                like_clause("catalog_name", like.as_ref())
            ),
            Show::Schemas { catalog, like } => {
                let catalog = catalog.unwrap_or_else(|| self.session_catalog(session).to_string());
                self.require_catalog(state, &catalog)?;
                format!(
                    "SELECT schema_name AS \"Schema\" FROM {}.{INFORMATION_SCHEMA}.schemata WHERE true{} ORDER BY 1",
                    ident(&catalog),
                    like_clause("schema_name", like.as_ref())
                )
            }
            Show::Tables { schema, like } => {
                let (catalog, schema) = match schema.as_slice() {
                    [c, s] => (c.clone(), s.clone()),
                    [s] => (self.session_catalog(session).to_string(), s.clone()),
                    _ => (
                        self.session_catalog(session).to_string(),
                        session
                            .schema
                            .clone()
                            .unwrap_or_else(|| crate::catalog::DEFAULT_SCHEMA.into()),
                    ),
                };
                self.require_schema(state, &catalog, &schema)?;
                format!(
                    "SELECT table_name AS \"Table\" FROM {}.{INFORMATION_SCHEMA}.tables WHERE table_schema = {}{} ORDER BY 1",
                    ident(&catalog),
                    literal(&schema),
                    like_clause("table_name", like.as_ref())
                )
            }
            Show::Columns { table } => {
                let (c, s, t) = self.resolve_table(session, &table);
                self.require_table(state, (&c, &s, &t)).await?;
                format!(
                    "SELECT column_name AS \"Column\", data_type AS \"Type\", '' AS \"Extra\", coalesce(comment, '') AS \"Comment\" \
                     FROM {}.{INFORMATION_SCHEMA}.columns WHERE table_schema = {} AND table_name = {} ORDER BY ordinal_position",
                    ident(&c),
                    literal(&s),
                    literal(&t)
                )
            }
            Show::CreateTable { table } => {
                let (c, s, t) = self.resolve_table(session, &table);
                let text = self.create_table_text(state, (&c, &s, &t)).await?;
                return single_text_column("Create Table", vec![text]);
            }
            Show::CreateView { view } => {
                let (c, s, v) = self.resolve_table(session, &view);
                let text = self.create_view_text((&c, &s, &v)).await?;
                return single_text_column("Create View", vec![text]);
            }
            Show::Functions { like } => return functions_plan(state, like),
            Show::Session { like } => return self.session_plan(session, like),
        };
        Ok(state.create_logical_plan(&sql).await?)
    }

    /// `CREATE VIEW` text for a view: its query as it was written.
    async fn create_view_text(&self, (c, s, v): (&str, &str, &str)) -> Result<String> {
        let (_, view) = self.stored_view(c, s, v).await?.ok_or_else(|| {
            Error::invalid(
                ErrorCode::TableNotFound,
                format!("View '{c}.{s}.{v}' does not exist"),
            )
        })?;
        let comment = view
            .comment
            .as_deref()
            .map_or_else(String::new, |c| format!(" COMMENT {}", literal(c)));
        let security = match view.run_as_owner {
            Some(_) => "DEFINER",
            None => "INVOKER",
        };
        Ok(format!(
            "CREATE VIEW {}.{}.{}{comment} SECURITY {security} AS\n{}",
            ident_if_needed(c),
            ident_if_needed(s),
            ident_if_needed(v),
            view.sql
        ))
    }

    /// `CREATE TABLE` text for an Iceberg table, in Trino's form.
    async fn create_table_text(
        &self,
        state: &SessionState,
        (c, s, t): (&str, &str, &str),
    ) -> Result<String> {
        self.require_table(state, (c, s, t)).await?;
        if c != self.settings.catalog_name || s == INFORMATION_SCHEMA {
            return Err(Error::NotSupported(format!(
                "SHOW CREATE TABLE of {c}.{s}.{t}: it is a metadata table"
            )));
        }
        let ident = TableIdent::new(NamespaceIdent::new(s.to_string()), t.to_string());
        let table = self.catalog().load_table(&ident).await?;
        let metadata = table.metadata();
        let schema = metadata.current_schema();
        let arrow = iceberg::arrow::schema_to_arrow_schema(schema)?;
        let columns: Vec<String> = arrow
            .fields()
            .iter()
            .zip(schema.as_struct().fields())
            .map(|(f, field)| {
                let not_null = if f.is_nullable() { "" } else { " NOT NULL" };
                let comment = field
                    .doc
                    .as_deref()
                    .map_or_else(String::new, |doc| format!(" COMMENT {}", literal(doc)));
                format!(
                    "   {} {}{not_null}{comment}",
                    ident_if_needed(f.name()),
                    TrinoType::from_field(f)
                )
            })
            .collect();
        let table_comment = metadata
            .properties()
            .get(super::COMMENT_PROPERTY)
            .map_or_else(String::new, |c| format!("COMMENT {}\n", literal(c)));
        let mut properties = vec![
            "   format = 'PARQUET'".to_string(),
            format!("   format_version = {}", metadata.format_version() as u8),
            format!("   location = {}", literal(metadata.location())),
        ];
        let spec = metadata.default_partition_spec();
        if !spec.fields().is_empty() {
            let fields: Vec<String> = spec
                .fields()
                .iter()
                .map(|field| {
                    let column = schema
                        .name_by_field_id(field.source_id)
                        .unwrap_or("?")
                        .to_string();
                    literal(&partition_text(&column, &field.transform))
                })
                .collect();
            properties.insert(0, format!("   partitioning = ARRAY[{}]", fields.join(",")));
        }
        let order = metadata.default_sort_order();
        if !order.is_unsorted() {
            let fields: Vec<String> = order
                .fields
                .iter()
                .map(|field| {
                    let column = schema.name_by_field_id(field.source_id).unwrap_or("?");
                    literal(&sort_item_text(column, field))
                })
                .collect();
            let after_partitioning = usize::from(!spec.fields().is_empty());
            properties.insert(
                after_partitioning,
                format!("   sorted_by = ARRAY[{}]", fields.join(",")),
            );
        }
        Ok(format!(
            "CREATE TABLE {c}.{s}.{t} (\n{}\n)\n{table_comment}WITH (\n{}\n)",
            columns.join(",\n"),
            properties.join(",\n")
        ))
    }

    fn session_plan(&self, session: &SessionSettings, like: Option<String>) -> Result<LogicalPlan> {
        let limits = self.property_limits();
        let texts = |f: &dyn Fn(&session_properties::PropertyDefinition) -> String| {
            Arc::new(StringArray::from_iter_values(PROPERTIES.iter().map(f))) as ArrayRef
        };
        let columns = vec![
            ("Name", texts(&|p| p.name.to_string())),
            (
                "Value",
                texts(&|p| {
                    session
                        .properties
                        .value(p.name, &limits)
                        .unwrap_or_default()
                }),
            ),
            (
                "Default",
                texts(&|p| session_properties::default_value(p.name, &limits).unwrap_or_default()),
            ),
            ("Type", texts(&|p| p.property_type.name().to_string())),
            ("Description", texts(&|p| p.description.to_string())),
        ];
        table_plan(columns, "Name", like)
    }
}

/// A partition field as Trino's `partitioning` property writes it.
fn partition_text(column: &str, transform: &Transform) -> String {
    let column = ident_if_needed(column);
    match transform {
        Transform::Identity => column,
        Transform::Bucket(n) => format!("bucket({column}, {n})"),
        Transform::Truncate(w) => format!("truncate({column}, {w})"),
        Transform::Year => format!("year({column})"),
        Transform::Month => format!("month({column})"),
        Transform::Day => format!("day({column})"),
        Transform::Hour => format!("hour({column})"),
        Transform::Void => format!("void({column})"),
        Transform::Unknown => format!("unknown({column})"),
    }
}

/// A plan over literal rows, filtered by `LIKE` on one column and sorted by it.
fn table_plan(
    columns: Vec<(&str, ArrayRef)>,
    key: &str,
    like: Option<String>,
) -> Result<LogicalPlan> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    // By the key, then by the other columns (a function's signatures), for a stable order.
    let mut order = vec![column(key).sort(true, false)];
    order.extend(
        columns
            .iter()
            .filter(|(name, _)| *name != key)
            .map(|(name, _)| column(*name).sort(true, true)),
    );
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays)
        .map_err(|e| Error::Internal(e.to_string()))?;
    let table = MemTable::try_new(schema, vec![vec![batch]])?;
    let mut builder = LogicalPlanBuilder::scan("show", provider_as_source(Arc::new(table)), None)?;
    if let Some(pattern) = like {
        builder = builder.filter(column(key).like(lit(pattern)))?;
    }
    Ok(builder.sort(order)?.build()?)
}

fn single_text_column(name: &str, values: Vec<String>) -> Result<LogicalPlan> {
    let array: ArrayRef = Arc::new(StringArray::from(values));
    table_plan(vec![(name, array)], name, None)
}

/// Every function the session knows, as Trino's `SHOW FUNCTIONS` lists them: a row per
/// signature (see [`function_signatures`]), or one without types where none is known.
fn functions_plan(state: &SessionState, like: Option<String>) -> Result<LogicalPlan> {
    struct Entry<'a> {
        name: String,
        kind: &'static str,
        deterministic: bool,
        description: String,
        function: Option<Function<'a>>,
    }
    fn registered<'a>(name: &str, function: Function<'a>) -> Entry<'a> {
        Entry {
            name: name.to_string(),
            kind: function.kind(),
            deterministic: function.signature().volatility == Volatility::Immutable,
            description: function
                .documentation()
                .map(|d| d.description.clone())
                .unwrap_or_default(),
            function: Some(function),
        }
    }
    let mut entries: Vec<Entry<'_>> = Vec::new();
    entries.extend(
        state
            .scalar_functions()
            .iter()
            .map(|(name, f)| registered(name, Function::Scalar(f))),
    );
    entries.extend(
        state
            .aggregate_functions()
            .iter()
            .map(|(name, f)| registered(name, Function::Aggregate(f))),
    );
    entries.extend(
        state
            .window_functions()
            .iter()
            .map(|(name, f)| registered(name, Function::Window(f))),
    );
    // Trino's functions that are rewritten into DataFusion's while planning.
    for (name, aggregate, description) in crate::dialect::spellings::listed() {
        if !entries.iter().any(|e| e.name == name) {
            entries.push(Entry {
                name: name.to_string(),
                kind: if aggregate { "aggregate" } else { "scalar" },
                deterministic: true,
                description,
                function: None,
            });
        }
    }
    // LIKE keeps its functions here, before their signatures are asked for.
    if let Some(pattern) = &like {
        let names = StringArray::from_iter_values(entries.iter().map(|e| e.name.as_str()));
        let pattern = StringArray::new_scalar(pattern.as_str());
        let matches = datafusion::arrow::compute::kernels::comparison::like(&names, &pattern)
            .map_err(|e| Error::Internal(e.to_string()))?;
        let mut keep = (0..entries.len()).map(|i| matches.value(i));
        entries.retain(|_| keep.next().unwrap_or(false));
    }
    let mut rows: Vec<(&Entry<'_>, Option<Listed>)> = Vec::new();
    for e in &entries {
        let listed: Vec<Listed> = e
            .function
            .map(signatures)
            .into_iter()
            .flat_map(|l| l.as_ref().clone())
            // A call SQE rewrites has the rewritten expression's types, not these.
            .filter(|l| !crate::dialect::spellings::is_respelled(&e.name, l.arity))
            .map(|mut l| {
                if e.kind == "window"
                    && crate::dialect::planner::COUNTING.contains(&e.name.as_str())
                {
                    // Planned as a bigint, as Trino types it (see the dialect's planner).
                    l.returns = "bigint".into();
                }
                l
            })
            .collect();
        if listed.is_empty() {
            rows.push((e, None));
        }
        rows.extend(listed.into_iter().map(|l| (e, Some(l))));
    }
    type Row<'r, 'f> = (&'r Entry<'f>, Option<Listed>);
    let text = |f: &dyn Fn(&Row<'_, '_>) -> Option<String>| {
        Arc::new(StringArray::from(rows.iter().map(f).collect::<Vec<_>>())) as ArrayRef
    };
    let deterministic = BooleanArray::from(
        rows.iter()
            .map(|(e, _)| Some(e.deterministic))
            .collect::<Vec<_>>(),
    );
    table_plan(
        vec![
            ("Function", text(&|(e, _)| Some(e.name.clone()))),
            (
                "Return Type",
                text(&|(_, l)| l.as_ref().map(|l| l.returns.clone())),
            ),
            (
                "Argument Types",
                text(&|(_, l)| l.as_ref().map(|l| l.arguments.clone())),
            ),
            ("Function Type", text(&|(e, _)| Some(e.kind.to_string()))),
            ("Deterministic", Arc::new(deterministic)),
            ("Description", text(&|(e, _)| Some(e.description.clone()))),
        ],
        "Function",
        None,
    )
}
