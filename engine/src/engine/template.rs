//! Statements planned once and bound many times: prepared statements, and the schemas clients
//! ask for before running anything.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{DdlStatement, DmlStatement, Expr, LogicalPlan, WriteOp};
use sqe_iceberg::write::CommitGate;
use tracing::Instrument;

use super::reload::reload_iceberg_tables;
use super::table_properties::{TableProperties, take_table_properties};
use super::{
    Action, Engine, Prepared, ResultCacheUse, SessionSettings, StatementKind, explain_schema,
};
use crate::cache::{CacheUse, Decision, consider};
use crate::dialect::parse::{Label, Read, read};
use crate::dialect::statements::ClientStatement;
use crate::error::{Error, ErrorCode, Result};

/// A parsed and logically planned statement, possibly with `$1`, `$2`, ... parameters.
#[derive(Clone)]
pub struct StatementTemplate {
    state: SessionState,
    logical: LogicalPlan,
    properties: TableProperties,
    kind: StatementKind,
    dataset_schema: SchemaRef,
    parameter_schema: SchemaRef,
    max_run_time: Option<std::time::Duration>,
    /// Runs a failed query may have after its first (`retry_policy`, `query_retry_attempts`).
    query_retries: u32,
    /// The session's part of a result cache key: who asks, and what decides the answer.
    identity: String,
    /// A procedure call instead of a plan.
    call: Option<Call>,
    /// Trino's names of a query's columns, as the statement wrote them.
    labels: Option<Vec<Label>>,
    /// When the tables in `logical` were loaded.
    planned_at: std::time::Instant,
    /// Set when the statement reads views: bound later, it is planned again from its text,
    /// since a view may have been given another query meanwhile.
    reads_views: Option<Arc<Replan>>,
}

/// What planning a statement again takes.
struct Replan {
    session: SessionSettings,
    sql: String,
}

/// A template bound later than this after it was planned loads its tables again (statements
/// run at once reuse the tables their planning loaded).
const TABLES_FRESH_FOR: std::time::Duration = std::time::Duration::from_millis(500);

/// The procedures SQE knows.
#[derive(Debug, Clone)]
enum Call {
    KillQuery {
        query_id: String,
        message: Option<String>,
        user: String,
    },
    /// Not a procedure, but a change of a table DataFusion does not plan (ALTER TABLE,
    /// COMMENT ON).
    ChangeTable(super::alter::TableChange),
    /// A MERGE (its text), planned when bound: it reads its tables then.
    Merge(String),
    /// CREATE VIEW, DROP VIEW.
    ChangeView(super::views::ViewChange),
    /// `ALTER TABLE t EXECUTE procedure(...)`.
    TableProcedure(super::procedures::TableProcedure),
}

impl std::fmt::Debug for StatementTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatementTemplate")
            .field("kind", &self.kind)
            .field("parameters", &self.parameter_schema.fields().len())
            .finish_non_exhaustive()
    }
}

impl StatementTemplate {
    pub fn kind(&self) -> StatementKind {
        self.kind
    }

    /// The schema of the rows the statement returns.
    pub fn dataset_schema(&self) -> SchemaRef {
        Arc::clone(&self.dataset_schema)
    }

    /// The longest a binding of it may run (`query_max_run_time`).
    pub fn max_run_time(&self) -> Option<std::time::Duration> {
        self.max_run_time
    }

    /// One field per parameter, `$1` first; `Null` where the type could not be inferred.
    pub fn parameter_schema(&self) -> SchemaRef {
        Arc::clone(&self.parameter_schema)
    }
}

/// The output names `labels` give the planned columns `names`, each with whether the statement
/// aliased it: a `*` stands for the columns the others leave (so for at most one `*`); `None`
/// when they do not fit.
fn labelled(names: &[String], labels: &[Label]) -> Option<Vec<(String, bool)>> {
    let expands = labels.iter().filter(|l| **l == Label::Expand).count();
    let named = labels.len() - expands;
    let width = match expands {
        0 if named == names.len() => 0,
        1 if named <= names.len() => names.len() - named,
        _ => return None,
    };
    let mut out = Vec::with_capacity(names.len());
    for label in labels {
        match label {
            Label::Name(name) => out.push((name.clone(), false)),
            Label::Alias(alias) => out.push((alias.clone(), true)),
            Label::Position => out.push((format!("_col{}", out.len()), false)),
            Label::Expand => {
                let start = out.len();
                out.extend(
                    names[start..start + width]
                        .iter()
                        .map(|n| (n.clone(), false)),
                );
            }
        }
    }
    Some(out)
}

/// A column a query returns, with the table it comes from when it is a plain table column.
#[derive(Debug, Clone)]
pub struct OutputColumn {
    pub name: String,
    /// Its value's type, with what Arrow cannot say (a varchar's length) in its metadata.
    pub field: datafusion::arrow::datatypes::FieldRef,
    /// `(catalog, schema, table)`
    pub origin: Option<(String, String, String)>,
}

impl StatementTemplate {
    /// Output column names as Trino gives them: a column or an alias keeps its name, any other
    /// expression is `_col<position>`.
    pub fn trino_column_names(&self) -> Vec<String> {
        let fields = self.dataset_schema.fields();
        let mut names: Vec<String> = fields.iter().map(|f| f.name().clone()).collect();
        if self.kind != StatementKind::Query {
            return names;
        }
        if let Some(labels) = &self.labels
            && let Some(labelled) = labelled(&names, labels)
        {
            return labelled.into_iter().map(|(name, _)| name).collect();
        }
        let mut plan = &self.logical;
        loop {
            match plan {
                LogicalPlan::Sort(sort) => plan = sort.input.as_ref(),
                LogicalPlan::Limit(limit) => plan = limit.input.as_ref(),
                LogicalPlan::Distinct(datafusion::logical_expr::Distinct::All(input)) => {
                    plan = input.as_ref()
                }
                _ => break,
            }
        }
        if let LogicalPlan::Projection(projection) = plan
            && projection.expr.len() == names.len()
        {
            for (i, expr) in projection.expr.iter().enumerate() {
                if !matches!(expr, Expr::Alias(_) | Expr::Column(_)) {
                    names[i] = format!("_col{i}");
                }
            }
        }
        names
    }

    /// Whether the statement gave each output column its name with `AS` (DESCRIBE OUTPUT's
    /// `Aliased`).
    pub fn aliased_columns(&self) -> Vec<bool> {
        let width = self.dataset_schema.fields().len();
        let names: Vec<String> = self
            .dataset_schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        match (&self.kind, &self.labels) {
            (StatementKind::Query, Some(labels)) => labelled(&names, labels)
                .map(|l| l.into_iter().map(|(_, aliased)| aliased).collect())
                .unwrap_or_else(|| vec![false; width]),
            _ => vec![false; width],
        }
    }

    /// The columns the statement returns; table references are resolved against the given
    /// default catalog and schema.
    pub fn output_columns(&self, catalog: &str, schema: &str) -> Vec<OutputColumn> {
        self.logical
            .schema()
            .iter()
            .map(|(qualifier, field)| OutputColumn {
                name: field.name().clone(),
                field: Arc::clone(field),
                origin: qualifier.map(|q| {
                    let resolved = q.clone().resolve(catalog, schema);
                    (
                        resolved.catalog.to_string(),
                        resolved.schema.to_string(),
                        resolved.table.to_string(),
                    )
                }),
            })
            .collect()
    }
}

/// A planning failure in the terms of what the engine knows: a user error DataFusion gives
/// only in words is a function's refusal of its arguments (`refused`, when the statement
/// calls that function), or the missing table or function, when one is missing.
fn explained(
    error: datafusion::error::DataFusionError,
    state: &SessionState,
    statement: &datafusion::sql::parser::Statement,
    refused: Option<sqe_functions::UnexpectedParameters>,
) -> Error {
    let error = Error::from(error);
    if error.code() != ErrorCode::GenericUserError {
        return error;
    }
    if let Some(refused) =
        refused.filter(|r| super::unknown_names::calls(state, statement, &r.function))
    {
        return Error::invalid(ErrorCode::FunctionNotFound, refused.to_string());
    }
    super::unknown_names::unknown_name(state, statement).unwrap_or(error)
}

fn is_merge(statement: &datafusion::sql::parser::Statement) -> bool {
    matches!(statement, datafusion::sql::parser::Statement::Statement(s)
        if matches!(s.as_ref(), datafusion::sql::sqlparser::ast::Statement::Merge(_)))
}

/// What a logical plan will do, before it is physically planned.
pub(super) fn statement_kind(logical: &LogicalPlan) -> StatementKind {
    match logical {
        LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(create)) => match create.input.as_ref() {
            LogicalPlan::EmptyRelation(empty) if !empty.produce_one_row => {
                StatementKind::CreateTable
            }
            _ => StatementKind::CreateTableAs,
        },
        LogicalPlan::Ddl(DdlStatement::CreateCatalogSchema(_)) => StatementKind::CreateSchema,
        LogicalPlan::Ddl(DdlStatement::DropTable(_)) => StatementKind::DropTable,
        LogicalPlan::Ddl(DdlStatement::DropCatalogSchema(_)) => StatementKind::DropSchema,
        LogicalPlan::Dml(DmlStatement {
            op: WriteOp::Insert(_),
            ..
        }) => StatementKind::Insert,
        LogicalPlan::Dml(DmlStatement {
            op: WriteOp::Delete,
            ..
        }) => StatementKind::Delete,
        LogicalPlan::Dml(DmlStatement {
            op: WriteOp::Truncate,
            ..
        }) => StatementKind::Truncate,
        LogicalPlan::Dml(DmlStatement {
            op: WriteOp::Update,
            ..
        }) => StatementKind::Update,
        _ => StatementKind::Query,
    }
}

fn parameter_schema(logical: &LogicalPlan) -> Result<SchemaRef> {
    let types = logical.get_parameter_types()?;
    let mut numbered: Vec<(usize, Option<DataType>)> = Vec::with_capacity(types.len());
    for (name, data_type) in types {
        let position = name
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                Error::invalid(
                    ErrorCode::InvalidParameterUsage,
                    format!("parameter {name}: use positional parameters $1, $2, ..."),
                )
            })?;
        numbered.push((position, data_type));
    }
    numbered.sort_by_key(|(position, _)| *position);
    if let Some(i) = numbered
        .iter()
        .enumerate()
        .position(|(i, (p, _))| *p != i + 1)
    {
        return Err(Error::invalid(
            ErrorCode::InvalidParameterUsage,
            format!(
                "parameters must be numbered $1 to ${}; ${} is missing",
                numbered.len(),
                i + 1
            ),
        ));
    }
    let fields: Vec<Field> = numbered
        .into_iter()
        .map(|(position, data_type)| {
            Field::new(
                format!("${position}"),
                data_type.unwrap_or(DataType::Null),
                true,
            )
        })
        .collect();
    Ok(Arc::new(Schema::new(fields)))
}

impl Engine {
    /// Parses and logically plans `sql` for `session` without running or physically planning it.
    pub async fn template(
        &self,
        session: &SessionSettings,
        sql: &str,
    ) -> Result<StatementTemplate> {
        self.refresh_names(false).await?;
        let read = tracing::info_span!("parse").in_scope(|| read(sql))?;
        let mut call = None;
        let mut labels = None;
        let mut views_read = 0;
        let (state, logical, properties) = match read {
            Read::Client(ClientStatement::Show(show)) => {
                let state = self.session_state_with(session, false)?;
                let logical = self.show_plan(&state, session, show).await?;
                (state, logical, TableProperties::default())
            }
            Read::Client(ClientStatement::KillQuery { query_id, message }) => {
                call = Some(Call::KillQuery {
                    query_id,
                    message,
                    user: session.user.clone(),
                });
                let state = self.session_state_with(session, false)?;
                let nothing = LogicalPlan::EmptyRelation(datafusion::logical_expr::EmptyRelation {
                    produce_one_row: false,
                    schema: Arc::new(datafusion::common::DFSchema::empty()),
                });
                (state, nothing, TableProperties::default())
            }
            Read::TableProcedure(procedure) => {
                let state = self.session_state(session)?;
                call = Some(Call::TableProcedure(
                    self.plan_table_procedure(&state, session, procedure)?,
                ));
                let nothing = LogicalPlan::EmptyRelation(datafusion::logical_expr::EmptyRelation {
                    produce_one_row: false,
                    schema: Arc::new(datafusion::common::DFSchema::empty()),
                });
                (state, nothing, TableProperties::default())
            }
            Read::Client(other) => {
                return Err(Error::NotSupported(format!(
                    "{}: a Trino session statement, answered by the Trino endpoint only",
                    other.name()
                )));
            }
            Read::Sql(parsed) => {
                let mut state = self.session_state(session)?;
                labels = parsed.labels;
                let mut statement = parsed.statement;
                let properties = take_table_properties(&mut statement)?;
                if crate::dialect::has_lambdas(&statement) {
                    // DataFusion's plan codec cannot carry lambda expressions to the workers
                    // yet: the statement runs on the coordinator.
                    state = self.session_state_with(session, false)?;
                }
                if let Some(change) = self.plan_table_change(&state, &statement).await? {
                    call = Some(Call::ChangeTable(change));
                } else if let Some(change) = self
                    .plan_view_change(session, &state, &statement, sql)
                    .await?
                {
                    call = Some(Call::ChangeView(change));
                } else if is_merge(&statement) {
                    call = Some(Call::Merge(sql.to_string()));
                }
                let logical = async {
                    if call.is_some() {
                        return Ok(LogicalPlan::EmptyRelation(
                            datafusion::logical_expr::EmptyRelation {
                                produce_one_row: false,
                                schema: Arc::new(datafusion::common::DFSchema::empty()),
                            },
                        ));
                    }
                    self.refresh_if_schemas_unknown(&state, &statement).await?;
                    views_read = self.expand_views(&state, &mut statement).await?;
                    if views_read > 0 && crate::dialect::has_lambdas(&statement) {
                        // A view's lambdas: see above.
                        state = self.session_state_with(session, false)?;
                    }
                    if self.reads_metadata(&state, &statement)? {
                        // Metadata is computed on the coordinator.
                        state = self.session_state_with(session, false)?;
                    }
                    let (planned, refused) = sqe_functions::recording_refusals(
                        state.statement_to_plan(statement.clone()),
                    )
                    .await;
                    match planned {
                        Ok(plan) => Ok(crate::dialect::logical::to_trino(plan)?),
                        Err(e) => Err(explained(e, &state, &statement, refused)),
                    }
                }
                .instrument(tracing::info_span!("plan"))
                .await?;
                (state, logical, properties)
            }
        };
        let kind = match &call {
            Some(Call::ChangeTable(change)) => change.kind(),
            Some(Call::Merge(_)) => StatementKind::Merge,
            Some(Call::ChangeView(change)) => change.kind(),
            Some(Call::KillQuery { .. }) => StatementKind::Call,
            Some(Call::TableProcedure(_)) => StatementKind::AlterTableExecute,
            None => statement_kind(&logical),
        };
        let dataset_schema = match (&logical, kind) {
            (LogicalPlan::Explain(_) | LogicalPlan::Analyze(_), _) => explain_schema(),
            (_, StatementKind::Query) => Arc::new(logical.schema().as_arrow().clone()),
            (_, kind) => kind.command_schema(),
        };
        let parameter_schema = parameter_schema(&logical)?;
        Ok(StatementTemplate {
            state,
            logical,
            properties,
            kind,
            dataset_schema,
            parameter_schema,
            max_run_time: session.properties.max_run_time(&self.property_limits()),
            query_retries: session.properties.query_retries(&self.property_limits()),
            identity: format!(
                "{}\0{:?}\0{:?}\0{:?}\0{:?}",
                session.user,
                session.catalog,
                session.schema,
                session.time_zone,
                session.properties
            ),
            call,
            labels,
            planned_at: std::time::Instant::now(),
            reads_views: (views_read > 0).then(|| {
                Arc::new(Replan {
                    session: session.clone(),
                    sql: sql.to_string(),
                })
            }),
        })
    }

    /// The template's plan, its tables reloaded when it was planned a while ago; a statement
    /// that reads views is then planned again from its text (the template it makes is the
    /// one to bind: its session state follows the new plan, which may run elsewhere).
    async fn fresh_logical(
        &self,
        template: &StatementTemplate,
    ) -> Result<(LogicalPlan, Option<Box<StatementTemplate>>)> {
        if template.planned_at.elapsed() <= TABLES_FRESH_FOR {
            return Ok((template.logical.clone(), None));
        }
        let Some(replan) = &template.reads_views else {
            let reloaded = reload_iceberg_tables(&template.state, template.logical.clone()).await?;
            return Ok((reloaded, None));
        };
        let fresh = Box::pin(self.template(&replan.session, &replan.sql)).await?;
        if fresh.dataset_schema != template.dataset_schema
            || fresh.parameter_schema != template.parameter_schema
        {
            return Err(Error::invalid(
                ErrorCode::GenericUserError,
                "a view the statement reads has other columns than when the statement was \
                 prepared; prepare it again",
            ));
        }
        Ok((fresh.logical.clone(), Some(Box::new(fresh))))
    }

    /// Binds every row of `rows` into **one** statement, ready to run once: an `INSERT` gets
    /// the union of what each row would insert, so a batch of rows is one commit, all or none.
    /// Other statements take one row (several would be several statements, half of which
    /// could succeed).
    pub async fn bind_rows(
        &self,
        template: &StatementTemplate,
        mut rows: Vec<Vec<ScalarValue>>,
    ) -> Result<Prepared> {
        if rows.len() <= 1 {
            return self.bind(template, rows.pop().unwrap_or_default()).await;
        }
        let (logical, replanned) = self.fresh_logical(template).await?;
        let template = replanned.as_deref().unwrap_or(template);
        let LogicalPlan::Dml(insert) = &logical else {
            return Err(too_many_rows(rows.len()));
        };
        if !matches!(insert.op, WriteOp::Insert(_)) {
            return Err(too_many_rows(rows.len()));
        }
        let mut inputs = Vec::with_capacity(rows.len());
        for row in rows {
            match with_parameters(template, logical.clone(), row)? {
                LogicalPlan::Dml(bound) => inputs.push(Arc::unwrap_or_clone(bound.input)),
                _ => return Err(Error::Internal("a bound INSERT is not an INSERT".into())),
            }
        }
        let mut union = datafusion::logical_expr::LogicalPlanBuilder::from(inputs.remove(0));
        for input in inputs {
            union = union.union(input)?;
        }
        let one = LogicalPlan::Dml(DmlStatement {
            input: Arc::new(union.build()?),
            ..insert.clone()
        });
        self.prepare_bound(template, one).await
    }

    /// Fills in the parameters and plans the statement physically, ready to run once.
    pub async fn bind(
        &self,
        template: &StatementTemplate,
        parameters: Vec<ScalarValue>,
    ) -> Result<Prepared> {
        if let Some(call) = &template.call {
            let action = match call {
                Call::KillQuery {
                    query_id,
                    message,
                    user,
                } => Action::KillQuery {
                    query_id: query_id.clone(),
                    message: message.clone(),
                    user: user.clone(),
                },
                Call::ChangeTable(change) => Action::ChangeTable(change.clone()),
                Call::ChangeView(change) => Action::ChangeView(change.clone()),
                Call::TableProcedure(procedure) => Action::TableProcedure {
                    procedure: procedure.clone(),
                    state: Box::new(template.state.clone()),
                },
                Call::Merge(sql) => {
                    let plan = self.plan_merge(&template.state, sql).await?;
                    Action::ChangeRows(Box::new(plan))
                }
            };
            return Ok(Prepared {
                kind: template.kind,
                schema: template.kind.command_schema(),
                action,
                max_run_time: None,
                cache: ResultCacheUse::default(),
            });
        }
        let (logical, replanned) = self.fresh_logical(template).await?;
        let template = replanned.as_deref().unwrap_or(template);
        let logical = with_parameters(template, logical, parameters)?;
        self.prepare_bound(template, logical).await
    }

    /// Plans a bound statement physically, through the result cache when it is a query.
    async fn prepare_bound(
        &self,
        template: &StatementTemplate,
        logical: LogicalPlan,
    ) -> Result<Prepared> {
        // An INSERT OVERWRITE is an insert committed as an overwrite, also when retried.
        let logical = self.partition_overwrites(logical)?;
        // Each binding is one execution: its `now()` is this instant (simplified to it when
        // the plan is optimized), also for a prepared statement run again later.
        let mut state = self.execution_state(template.state.clone())?;
        state.mark_start_execution();
        let cache_span = tracing::info_span!("cache", result = tracing::field::Empty);
        let entered = cache_span.enter();
        let cache = match self.cache_decision(template, &logical) {
            Some(Decision::Cacheable { key, tables }) => {
                if let Some(hit) = self.cache.get(&key, &tables) {
                    cache_span.record("result", "hit");
                    return Ok(Prepared {
                        kind: StatementKind::Query,
                        schema: Arc::clone(&hit.schema),
                        action: Action::Cached(hit),
                        max_run_time: template.max_run_time,
                        cache: ResultCacheUse {
                            used: Some(CacheUse::Hit),
                            fill: None,
                        },
                    });
                }
                ResultCacheUse {
                    used: Some(CacheUse::Miss),
                    fill: Some((key, tables)),
                }
            }
            Some(Decision::Bypass(reason)) => {
                tracing::debug!(%reason, "result cache bypassed");
                ResultCacheUse {
                    used: Some(CacheUse::Bypass),
                    fill: None,
                }
            }
            None => ResultCacheUse::default(),
        };
        if let Some(used) = cache.used {
            cache_span.record("result", used.name());
        }
        drop(entered);
        // An INSERT's commit and a cancel of it meet at a gate in its task context: a cancel
        // stops it only before its commit begins, and a retry runs it again only then.
        let insert = template.kind == StatementKind::Insert;
        if insert {
            state
                .config_mut()
                .set_extension(Arc::new(CommitGate::default()));
        }
        let replanning = (template.query_retries > 0
            && (insert || plain_query(template, &logical)))
        .then(|| super::query_retry::Replanning {
            state: state.clone(),
            logical: logical.clone(),
            retries: template.query_retries,
        });
        let mut prepared = self
            .prepare_logical(state, logical, template.properties.clone())
            .await?;
        prepared.max_run_time = template.max_run_time;
        prepared.cache = cache;
        if let Some(replanning) = replanning {
            prepared.retry_with(replanning);
        }
        Ok(prepared)
    }

    /// `None` when the cache is off or the statement is not a plain query.
    fn cache_decision(
        &self,
        template: &StatementTemplate,
        logical: &LogicalPlan,
    ) -> Option<Decision> {
        (plain_query(template, logical) && self.cache.enabled())
            .then(|| consider(&template.identity, logical))
    }
}

/// A query that answers rows from its plan (not EXPLAIN).
fn plain_query(template: &StatementTemplate, logical: &LogicalPlan) -> bool {
    template.kind == StatementKind::Query
        && !matches!(logical, LogicalPlan::Explain(_) | LogicalPlan::Analyze(_))
}

/// `logical` with `parameters` in place of its placeholders, once their number is checked.
fn with_parameters(
    template: &StatementTemplate,
    logical: LogicalPlan,
    parameters: Vec<ScalarValue>,
) -> Result<LogicalPlan> {
    let expected = template.parameter_schema.fields().len();
    if parameters.len() != expected {
        return Err(Error::invalid(
            ErrorCode::InvalidParameterUsage,
            format!(
                "the statement takes {expected} parameters, {} were given",
                parameters.len()
            ),
        ));
    }
    if expected == 0 {
        return Ok(logical);
    }
    Ok(logical.with_param_values(parameters)?)
}

fn too_many_rows(rows: usize) -> Error {
    Error::invalid(
        ErrorCode::InvalidParameterUsage,
        format!("only an INSERT runs with several rows of parameters; {rows} were bound"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_numbered_from_one() -> Result<()> {
        use datafusion::logical_expr::{LogicalPlanBuilder, col, lit, placeholder};
        let plan = LogicalPlanBuilder::empty(true)
            .project(vec![lit(1).alias("a")])?
            .filter(
                col("a")
                    .eq(placeholder("$2"))
                    .and(col("a").gt(placeholder("$1"))),
            )?
            .build()?;
        let schema = parameter_schema(&plan)?;
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, vec!["$1", "$2"]);
        let gap = LogicalPlanBuilder::empty(true)
            .project(vec![lit(1).alias("a")])?
            .filter(col("a").eq(placeholder("$3")))?
            .build()?;
        assert!(parameter_schema(&gap).is_err());
        Ok(())
    }
}
