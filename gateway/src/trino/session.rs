//! A Trino client's session: catalog, schema, properties, prepared statements and transaction
//! live in the client, which sends them as headers on every request. This module runs one
//! statement with that session, answers the session statements (`USE`, `SET/RESET SESSION`,
//! `PREPARE`, `EXECUTE`, `DEALLOCATE`, `DESCRIBE INPUT/OUTPUT`, transactions) itself, and says
//! which response headers carry the changes back.
//!
//! Transactions have single-statement semantics: each statement commits on its own, reads see
//! the tables' latest snapshots, and writes inside an explicit transaction are refused (as
//! Trino's Iceberg connector refuses them), so `ROLLBACK` never has anything to undo.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::sqlparser::ast::{Expr, Value};
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::trino::headers::{ClientSession, url_encode};
use sqe_engine::dialect::statements::{
    ClientStatement, bind_parameters, number_parameters, recognize,
};
use sqe_engine::dialect::types::TrinoType;
use sqe_engine::engine::{Engine, Outcome, SessionSettings, StatementKind, StatementTemplate};
use sqe_engine::error::{GatewayError, Result};
use sqe_engine::history::QueryTracker;
use sqe_engine::session_properties::{self, PropertyType, SessionProperties};

/// Open transactions, by id. Ids are ours: a client cannot invent one.
#[derive(Debug, Default)]
pub struct Transactions {
    open: Mutex<HashMap<String, Instant>>,
}

impl Transactions {
    fn start(&self) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        if let Ok(mut open) = self.open.lock() {
            open.insert(id.clone(), Instant::now());
        }
        id
    }

    /// Whether `id` is open; marks it used.
    fn touch(&self, id: &str) -> bool {
        self.open
            .lock()
            .map(|mut open| match open.get_mut(id) {
                Some(seen) => {
                    *seen = Instant::now();
                    true
                }
                None => false,
            })
            .unwrap_or(false)
    }

    fn end(&self, id: &str) {
        if let Ok(mut open) = self.open.lock() {
            open.remove(id);
        }
    }

    /// Forgets transactions unused for `idle`; their clients are gone.
    pub fn reap(&self, idle: Duration) {
        if let Ok(mut open) = self.open.lock() {
            open.retain(|_, seen| seen.elapsed() < idle);
        }
    }
}

/// Changes a statement makes to the client's session, sent back as response headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionChanges {
    pub set_catalog: Option<String>,
    pub set_schema: Option<String>,
    pub set_session: Vec<(String, String)>,
    pub clear_session: Vec<String>,
    pub added_prepare: Vec<(String, String)>,
    pub deallocated_prepare: Vec<String>,
    pub started_transaction: Option<String>,
    pub clear_transaction: bool,
}

impl SessionChanges {
    /// Adds the `X-Trino-*` response headers that carry the changes.
    pub fn write_headers(&self, headers: &mut HeaderMap) {
        let mut add = |name: &'static str, value: String| {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.append(HeaderName::from_static(name), value);
            }
        };
        if let Some(catalog) = &self.set_catalog {
            add("x-trino-set-catalog", catalog.clone());
        }
        if let Some(schema) = &self.set_schema {
            add("x-trino-set-schema", schema.clone());
        }
        for (name, value) in &self.set_session {
            add(
                "x-trino-set-session",
                format!("{name}={}", url_encode(value)),
            );
        }
        for name in &self.clear_session {
            add("x-trino-clear-session", name.clone());
        }
        for (name, sql) in &self.added_prepare {
            add(
                "x-trino-added-prepare",
                format!("{}={}", url_encode(name), url_encode(sql)),
            );
        }
        for name in &self.deallocated_prepare {
            add("x-trino-deallocated-prepare", url_encode(name));
        }
        if let Some(id) = &self.started_transaction {
            add("x-trino-started-transaction-id", id.clone());
        }
        if self.clear_transaction {
            add("x-trino-clear-transaction-id", "true".into());
        }
    }
}

/// A statement's result.
pub struct Executed {
    /// Trino's `updateType`; `None` for statements returning rows.
    pub update_type: Option<&'static str>,
    pub schema: SchemaRef,
    pub outcome: Outcome,
    pub changes: SessionChanges,
}

impl Executed {
    fn update(update_type: &'static str, changes: SessionChanges) -> Self {
        Self {
            update_type: Some(update_type),
            schema: Arc::new(Schema::empty()),
            outcome: Outcome::Updated { rows: None },
            changes,
        }
    }

    fn rows(batch: RecordBatch) -> Result<Self> {
        let schema = batch.schema();
        let plan = MemorySourceConfig::try_new_exec(&[vec![batch]], Arc::clone(&schema), None)?;
        let stream = plan.execute(0, Arc::new(TaskContext::default()))?;
        Ok(Self {
            update_type: None,
            schema,
            outcome: Outcome::Rows(stream),
            changes: SessionChanges::default(),
        })
    }
}

/// The engine settings a client's headers ask for; invalid session properties are an error.
pub fn settings(engine: &Engine, client: &ClientSession) -> Result<SessionSettings> {
    Ok(SessionSettings {
        catalog: client.catalog.clone(),
        schema: client.schema.clone(),
        user: client.user.clone(),
        time_zone: client.time_zone.clone(),
        properties: SessionProperties::from_pairs(&client.properties, &engine.property_limits())?,
    })
}

/// Runs one statement for a client.
pub async fn execute(
    engine: &Arc<Engine>,
    client: &ClientSession,
    transactions: &Transactions,
    sql: &str,
    tracker: &QueryTracker,
) -> Result<Executed> {
    if let Some(id) = &client.transaction_id
        && !transactions.touch(id)
    {
        return Err(GatewayError::Analysis(format!(
            "Unknown transaction ID: {id}"
        )));
    }
    let settings = settings(engine, client)?;
    let in_transaction = client.transaction_id.is_some();
    let statement = match recognize(sql)? {
        // SHOW and CALL are planned by the engine, for both endpoints.
        None | Some(ClientStatement::Show(_) | ClientStatement::KillQuery { .. }) => {
            return run_sql(engine, &settings, sql, in_transaction, tracker).await;
        }
        Some(statement) => statement,
    };
    let mut changes = SessionChanges::default();
    let name = statement.name();
    match statement {
        ClientStatement::Use { catalog, schema } => {
            let catalog = catalog
                .or_else(|| client.catalog.clone())
                .unwrap_or_else(|| engine.catalog_name().to_string());
            engine.require_schema_exists(&catalog, &schema).await?;
            changes.set_catalog = Some(catalog);
            changes.set_schema = Some(schema);
        }
        ClientStatement::SetSession { name, value } => {
            let text = property_literal(&name, &value)?;
            let canonical =
                SessionProperties::default().set(&name, &text, &engine.property_limits())?;
            changes.set_session.push((name, canonical));
        }
        ClientStatement::ResetSession { name } => {
            if session_properties::definition(&name).is_none() {
                return Err(session_properties::unknown_property(&name));
            }
            changes.clear_session.push(name);
        }
        ClientStatement::Prepare { name, sql } => {
            if let Some(inner) = recognize(&sql)?.filter(|s| !matches!(s, ClientStatement::Show(_)))
            {
                return Err(GatewayError::NotSupported(format!(
                    "preparing {}: only queries, DDL and DML can be prepared",
                    inner.name()
                )));
            }
            // Checked now, as Trino does: a statement that does not plan is not stored.
            engine
                .template(&settings, &number_parameters(&sql)?)
                .await?;
            changes.added_prepare.push((name, sql));
        }
        ClientStatement::Execute { name, parameters } => {
            let sql = prepared(client, &name)?;
            return run_sql(
                engine,
                &settings,
                &bind_parameters(sql, &parameters)?,
                in_transaction,
                tracker,
            )
            .await;
        }
        ClientStatement::ExecuteImmediate { sql, parameters } => {
            if recognize(&sql)?.is_some_and(|s| !matches!(s, ClientStatement::Show(_))) {
                return Err(GatewayError::NotSupported(
                    "EXECUTE IMMEDIATE of a session statement".into(),
                ));
            }
            return run_sql(
                engine,
                &settings,
                &bind_parameters(&sql, &parameters)?,
                in_transaction,
                tracker,
            )
            .await;
        }
        ClientStatement::Deallocate { name } => {
            prepared(client, &name)?;
            changes.deallocated_prepare.push(name);
        }
        ClientStatement::DescribeInput { name } => {
            let template = engine
                .template(&settings, &number_parameters(prepared(client, &name)?)?)
                .await?;
            return Executed::rows(describe_input(&template)?);
        }
        ClientStatement::DescribeOutput { name } => {
            let template = engine
                .template(&settings, &number_parameters(prepared(client, &name)?)?)
                .await?;
            return Executed::rows(describe_output(engine, &settings, &template)?);
        }
        ClientStatement::StartTransaction => {
            if !client.supports_transactions {
                return Err(GatewayError::Analysis(
                    "Client does not support transactions".into(),
                ));
            }
            if in_transaction {
                return Err(GatewayError::NotSupported("Nested transactions".into()));
            }
            changes.started_transaction = Some(transactions.start());
        }
        ClientStatement::Commit | ClientStatement::Rollback => {
            let Some(id) = &client.transaction_id else {
                return Err(GatewayError::Analysis("No transaction in progress".into()));
            };
            transactions.end(id);
            changes.clear_transaction = true;
        }
        ClientStatement::Show(_) | ClientStatement::KillQuery { .. } => {}
    }
    Ok(Executed::update(name, changes))
}

async fn run_sql(
    engine: &Arc<Engine>,
    settings: &SessionSettings,
    sql: &str,
    in_transaction: bool,
    tracker: &QueryTracker,
) -> Result<Executed> {
    let template = engine.template(settings, sql).await?;
    if in_transaction && !matches!(template.kind(), StatementKind::Query | StatementKind::Call) {
        return Err(GatewayError::NotSupported(format!(
            "Catalog only supports writes using autocommit: {}",
            engine.catalog_name()
        )));
    }
    let prepared = engine.bind(&template, Vec::new()).await?;
    let kind = prepared.kind();
    let schema = renamed(&prepared.schema(), template.trino_column_names());
    prepared.mark_running(tracker);
    let outcome = engine.run(prepared).await?;
    Ok(Executed {
        update_type: kind.update_type(),
        schema,
        outcome,
        changes: SessionChanges::default(),
    })
}

/// `schema` with Trino's column names.
fn renamed(schema: &SchemaRef, names: Vec<String>) -> SchemaRef {
    if names.len() != schema.fields().len() {
        return Arc::clone(schema);
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .zip(names)
        .map(|(f, name)| f.as_ref().clone().with_name(name))
        .collect();
    Arc::new(Schema::new(fields))
}

fn prepared<'a>(client: &'a ClientSession, name: &str) -> Result<&'a str> {
    client
        .prepared
        .get(name)
        .map(String::as_str)
        .ok_or_else(|| GatewayError::NotFound(format!("Prepared statement not found: {name}")))
}

/// The text form of a `SET SESSION` value, checked against the property's type.
fn property_literal(name: &str, value: &Expr) -> Result<String> {
    let Some(definition) = session_properties::definition(name) else {
        return Err(session_properties::unknown_property(name));
    };
    let literal = match value {
        Expr::Value(v) => Some(&v.value),
        _ => None,
    };
    let text = match (definition.property_type, literal) {
        (PropertyType::Varchar, Some(Value::SingleQuotedString(s))) => s.clone(),
        (PropertyType::Integer, Some(Value::Number(n, _))) => n.to_string(),
        (PropertyType::Boolean, Some(Value::Boolean(b))) => b.to_string(),
        (expected, _) => {
            return Err(GatewayError::Analysis(format!(
                "invalid value for session property {name}: {value} is not a {} literal",
                expected.name()
            )));
        }
    };
    Ok(text)
}

fn describe_input(template: &StatementTemplate) -> Result<RecordBatch> {
    let parameters = template.parameter_schema();
    let positions: Int64Array = (0..parameters.fields().len() as i64).collect();
    let types = StringArray::from_iter_values(parameters.fields().iter().map(|f| {
        if f.data_type() == &DataType::Null {
            "unknown".to_string()
        } else {
            TrinoType::from_arrow(f.data_type()).to_string()
        }
    }));
    let schema = Arc::new(Schema::new(vec![
        Field::new("Position", DataType::Int64, false),
        Field::new("Type", DataType::Utf8, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![Arc::new(positions) as ArrayRef, Arc::new(types)],
    )
    .map_err(|e| GatewayError::Internal(e.to_string()))
}

/// Bytes of a fixed-width type, 0 for variable-width ones (Trino's "Type Size").
fn fixed_size(t: &TrinoType) -> i64 {
    match t {
        TrinoType::Boolean | TrinoType::TinyInt => 1,
        TrinoType::SmallInt => 2,
        TrinoType::Integer | TrinoType::Real | TrinoType::Date => 4,
        TrinoType::BigInt | TrinoType::Double | TrinoType::IntervalDayToSecond => 8,
        TrinoType::IntervalYearToMonth => 4,
        TrinoType::Decimal { precision, .. } => {
            if *precision <= 18 {
                8
            } else {
                16
            }
        }
        TrinoType::Time { .. } => 8,
        TrinoType::Timestamp { precision } | TrinoType::TimestampWithTimeZone { precision } => {
            if *precision <= 6 {
                8
            } else {
                12
            }
        }
        _ => 0,
    }
}

fn describe_output(
    engine: &Engine,
    settings: &SessionSettings,
    template: &StatementTemplate,
) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("Column Name", DataType::Utf8, false),
        Field::new("Catalog", DataType::Utf8, false),
        Field::new("Schema", DataType::Utf8, false),
        Field::new("Table", DataType::Utf8, false),
        Field::new("Type", DataType::Utf8, false),
        Field::new("Type Size", DataType::Int64, false),
        Field::new("Aliased", DataType::Boolean, false),
    ]));
    // DDL and DML describe no output, as in Trino.
    let columns = if template.kind() == StatementKind::Query {
        let mut columns = template.output_columns(
            settings.catalog.as_deref().unwrap_or(engine.catalog_name()),
            settings.schema.as_deref().unwrap_or("default"),
        );
        for (column, name) in columns.iter_mut().zip(template.trino_column_names()) {
            column.name = name;
        }
        columns
    } else {
        Vec::new()
    };
    let text = |f: &dyn Fn(&sqe_engine::engine::OutputColumn) -> String| {
        Arc::new(StringArray::from_iter_values(columns.iter().map(f))) as ArrayRef
    };
    let types: Vec<TrinoType> = columns
        .iter()
        .map(|c| TrinoType::from_arrow(&c.data_type))
        .collect();
    let arrays = vec![
        text(&|c| c.name.clone()),
        text(&|c| c.origin.as_ref().map(|o| o.0.clone()).unwrap_or_default()),
        text(&|c| c.origin.as_ref().map(|o| o.1.clone()).unwrap_or_default()),
        text(&|c| c.origin.as_ref().map(|o| o.2.clone()).unwrap_or_default()),
        Arc::new(StringArray::from_iter_values(
            types.iter().map(|t| t.to_string()),
        )) as ArrayRef,
        Arc::new(types.iter().map(fixed_size).collect::<Int64Array>()),
        Arc::new(
            columns
                .iter()
                .map(|c| Some(c.origin.is_none()))
                .collect::<BooleanArray>(),
        ),
    ];
    RecordBatch::try_new(schema, arrays).map_err(|e| GatewayError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_become_trino_headers() {
        let changes = SessionChanges {
            set_catalog: Some("iceberg".into()),
            set_session: vec![("query_max_run_time".into(), "1.50m".into())],
            added_prepare: vec![("q1".into(), "SELECT 'a b', ?".into())],
            deallocated_prepare: vec!["q0".into()],
            clear_transaction: true,
            ..SessionChanges::default()
        };
        let mut headers = HeaderMap::new();
        changes.write_headers(&mut headers);
        assert_eq!(headers["x-trino-set-catalog"], "iceberg");
        assert_eq!(headers["x-trino-set-session"], "query_max_run_time=1.50m");
        assert_eq!(
            headers["x-trino-added-prepare"],
            "q1=SELECT+%27a+b%27%2C+%3F"
        );
        assert_eq!(headers["x-trino-deallocated-prepare"], "q0");
        assert_eq!(headers["x-trino-clear-transaction-id"], "true");
        assert!(headers.get("x-trino-set-schema").is_none());
    }

    #[test]
    fn transactions_are_ours_to_name() {
        let transactions = Transactions::default();
        let id = transactions.start();
        assert!(transactions.touch(&id));
        assert!(!transactions.touch("made-up"));
        transactions.end(&id);
        assert!(!transactions.touch(&id));
    }
}
