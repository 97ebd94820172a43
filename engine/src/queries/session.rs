//! The statements about the client's session itself, which SQE answers without a plan: `USE`,
//! `SET/RESET SESSION`, `PREPARE`, `EXECUTE`, `EXECUTE IMMEDIATE`, `DEALLOCATE`,
//! `DESCRIBE INPUT/OUTPUT` and transactions. Their effect on the session comes back as
//! [`SessionChanges`], which each endpoint carries back its own way (Trino: response headers).
//!
//! Transactions have single-statement semantics: each statement commits on its own, reads see
//! the tables' latest snapshots, and writes inside an explicit transaction are refused (as
//! Trino's Iceberg connector refuses them), so `ROLLBACK` never has anything to undo.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::sql::sqlparser::ast::{Expr, Value};

use super::{Described, Planned, Session};
use crate::dialect::statements::{
    ClientStatement, bind_parameters, number_parameters, recognize, require_no_parameters,
};
use crate::dialect::types::TrinoType;
use crate::engine::{Engine, OutputColumn, SessionSettings, StatementKind, StatementTemplate};
use crate::error::{Error, ErrorCode, ObjectKind, Result};
use crate::expiring::{Expire, ExpiringMap};
use crate::session_properties::{self, PropertyType, SessionProperties};

/// Open transactions, by id, with the user who started each. Ids are ours: a client cannot
/// invent one, nor use another user's. A transaction unused for its idle time is forgotten:
/// its client is gone.
#[derive(Debug)]
pub struct Transactions {
    open: ExpiringMap<String, String>,
}

/// Most transactions open at once, and per user.
const MAX_TRANSACTIONS: u64 = 10_000;
const MAX_TRANSACTIONS_PER_USER: u64 = 100;

impl Transactions {
    pub fn new(idle: Duration) -> Self {
        Self {
            open: ExpiringMap::with_quota(
                MAX_TRANSACTIONS,
                Expire::WhenIdle(idle),
                MAX_TRANSACTIONS_PER_USER,
                "open transactions",
            ),
        }
    }

    fn start(&self, user: &str) -> Result<String> {
        let id = uuid::Uuid::new_v4().to_string();
        self.open.insert_owned(user, id.clone(), user.to_string())?;
        Ok(id)
    }

    /// Whether `id` is open and `user`'s; marks it used.
    fn touch(&self, id: &str, user: &str) -> bool {
        self.open
            .get(&id.to_string())
            .is_some_and(|owner| owner == user)
    }

    fn end(&self, id: &str) {
        self.open.remove(&id.to_string());
    }
}

/// Changes a statement makes to the client's session.
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
    /// The role set in a catalog (`system` when none is named): `ALL` or `NONE`.
    pub set_role: Option<(String, String)>,
}

/// The engine settings a session asks for; invalid session properties are an error.
pub(super) fn settings(engine: &Engine, session: &Session) -> Result<SessionSettings> {
    Ok(SessionSettings {
        catalog: session.catalog.clone(),
        schema: session.schema.clone(),
        user: session.user.clone(),
        time_zone: session.time_zone.clone(),
        properties: SessionProperties::from_pairs(&session.properties, &engine.property_limits())?,
    })
}

/// `sql` planned as a prepared statement, its `?` parameters (as JDBC, ADBC and Trino's
/// PREPARE write them) numbered as DataFusion's `$1`, `$2`, ...
pub(super) async fn template(
    engine: &Engine,
    settings: &SessionSettings,
    sql: &str,
) -> Result<StatementTemplate> {
    engine.template(settings, &number_parameters(sql)?).await
}

/// Plans one SQL statement of `session`: a query, DDL or DML, or a session statement answered
/// at once.
pub(super) async fn plan_sql(
    engine: &Arc<Engine>,
    transactions: &Transactions,
    session: &Session,
    sql: &str,
) -> Result<Planned> {
    if let Some(id) = &session.transaction_id
        && !transactions.touch(id, &session.user)
    {
        return Err(Error::invalid(
            ErrorCode::UnknownTransaction,
            format!("Unknown transaction ID: {id}"),
        ));
    }
    let settings = settings(engine, session)?;
    let in_transaction = session.transaction_id.is_some();
    let statement = match recognize(sql)? {
        // SHOW and CALL are planned by the engine.
        None | Some(ClientStatement::Show(_) | ClientStatement::KillQuery { .. }) => {
            require_no_parameters(sql)?;
            return plan_query(engine, &settings, sql, in_transaction).await;
        }
        Some(statement) => statement,
    };
    let mut changes = SessionChanges::default();
    let name = statement.name();
    match statement {
        ClientStatement::Use { catalog, schema } => {
            let catalog = catalog
                .or_else(|| session.catalog.clone())
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
                return Err(Error::NotSupported(format!(
                    "preparing {}: only queries, DDL and DML can be prepared",
                    inner.name()
                )));
            }
            // Checked now, as Trino does: a statement that does not plan is not stored.
            template(engine, &settings, &sql).await?;
            changes.added_prepare.push((name, sql));
        }
        ClientStatement::Execute { name, parameters } => {
            let sql = prepared(session, &name)?;
            return plan_query(
                engine,
                &settings,
                &bind_parameters(sql, &parameters)?,
                in_transaction,
            )
            .await;
        }
        ClientStatement::ExecuteImmediate { sql, parameters } => {
            if recognize(&sql)?.is_some_and(|s| !matches!(s, ClientStatement::Show(_))) {
                return Err(Error::NotSupported(
                    "EXECUTE IMMEDIATE of a session statement".into(),
                ));
            }
            return plan_query(
                engine,
                &settings,
                &bind_parameters(&sql, &parameters)?,
                in_transaction,
            )
            .await;
        }
        ClientStatement::Deallocate { name } => {
            prepared(session, &name)?;
            changes.deallocated_prepare.push(name);
        }
        ClientStatement::DescribeInput { name } => {
            let template = template(engine, &settings, prepared(session, &name)?).await?;
            return Ok(Planned::Rows(describe_input(&template)?));
        }
        ClientStatement::DescribeOutput { name } => {
            let template = template(engine, &settings, prepared(session, &name)?).await?;
            return Ok(Planned::Rows(describe_output(
                engine, &settings, &template,
            )?));
        }
        ClientStatement::StartTransaction => {
            if !session.supports_transactions {
                return Err(Error::invalid(
                    ErrorCode::IncompatibleClient,
                    "Client does not support transactions",
                ));
            }
            if in_transaction {
                return Err(Error::NotSupported("Nested transactions".into()));
            }
            changes.started_transaction = Some(transactions.start(&session.user)?);
        }
        ClientStatement::Commit | ClientStatement::Rollback => {
            let Some(id) = &session.transaction_id else {
                return Err(Error::invalid(
                    ErrorCode::NotInTransaction,
                    "No transaction in progress",
                ));
            };
            transactions.end(id);
            changes.clear_transaction = true;
        }
        // SQE has no roles: ALL and NONE (all or none of the user's roles) are what there
        // is to choose, as in Trino, and the client hears it chose them.
        ClientStatement::SetRole { role, catalog } => {
            let catalog = catalog.unwrap_or_else(|| "system".to_string());
            if catalog == engine.catalog_name() {
                return Err(Error::NotSupported(format!(
                    "Catalog '{catalog}' does not support role management"
                )));
            }
            if catalog != "system" {
                return Err(Error::not_found(ObjectKind::Catalog, catalog));
            }
            if role != "ALL" && role != "NONE" {
                return Err(Error::invalid(
                    ErrorCode::RoleNotFound,
                    format!("Role '{role}' does not exist"),
                ));
            }
            changes.set_role = Some((catalog, role));
        }
        ClientStatement::Show(_) | ClientStatement::KillQuery { .. } => {}
    }
    Ok(Planned::Session {
        update_type: name,
        changes,
    })
}

/// A query, DDL or DML, planned to run.
async fn plan_query(
    engine: &Arc<Engine>,
    settings: &SessionSettings,
    sql: &str,
    in_transaction: bool,
) -> Result<Planned> {
    let template = engine.template(settings, sql).await?;
    if in_transaction && !matches!(template.kind(), StatementKind::Query | StatementKind::Call) {
        return Err(Error::NotSupported(format!(
            "Catalog only supports writes using autocommit: {}",
            engine.catalog_name()
        )));
    }
    let prepared = engine.bind(&template, Vec::new()).await?;
    Ok(Planned::plan(prepared, template.trino_column_names()))
}

fn prepared<'a>(session: &'a Session, name: &str) -> Result<&'a str> {
    session
        .prepared
        .get(name)
        .map(String::as_str)
        .ok_or_else(|| Error::not_found(ObjectKind::PreparedStatement, name))
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
            return Err(Error::invalid(
                ErrorCode::InvalidSessionProperty,
                format!(
                    "invalid value for session property {name}: {value} is not a {} literal",
                    expected.name()
                ),
            ));
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
    Ok(RecordBatch::try_new(
        schema,
        vec![Arc::new(positions) as ArrayRef, Arc::new(types)],
    )?)
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
    let mut aliased = template.aliased_columns();
    let columns = if template.kind() == StatementKind::Query {
        let mut columns = template.output_columns(
            settings.catalog.as_deref().unwrap_or(engine.catalog_name()),
            settings
                .schema
                .as_deref()
                .unwrap_or(crate::catalog::DEFAULT_SCHEMA),
        );
        for (column, name) in columns.iter_mut().zip(template.trino_column_names()) {
            column.name = name;
        }
        columns
    } else {
        Vec::new()
    };
    aliased.resize(columns.len(), false);
    let text = |f: &dyn Fn(&OutputColumn) -> String| {
        Arc::new(StringArray::from_iter_values(columns.iter().map(f))) as ArrayRef
    };
    let types: Vec<TrinoType> = columns
        .iter()
        .map(|c| TrinoType::from_field(&c.field))
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
        Arc::new(BooleanArray::from(aliased)),
    ];
    Ok(RecordBatch::try_new(schema, arrays)?)
}

/// `schema` with `names` (Trino's names for its columns), when there is one name per field.
pub(super) fn renamed(schema: &SchemaRef, names: &[String]) -> SchemaRef {
    if names.len() != schema.fields().len()
        || schema
            .fields()
            .iter()
            .zip(names)
            .all(|(f, n)| f.name() == n)
    {
        return Arc::clone(schema);
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .zip(names)
        .map(|(f, name)| f.as_ref().clone().with_name(name))
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// A session statement's result as a client sees it before it runs: its name as the one
/// `result` row of a command.
pub(super) fn session_statement(update_type: &'static str) -> Described {
    Described {
        schema: Arc::new(Schema::new(vec![Field::new(
            "result",
            DataType::Utf8,
            false,
        )])),
        update_type: Some(update_type),
        kind: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactions_are_ours_to_name_and_their_starters_to_use() {
        let transactions = Transactions::new(Duration::from_secs(60));
        let id = transactions.start("alice").unwrap_or_default();
        assert!(transactions.touch(&id, "alice"));
        assert!(!transactions.touch(&id, "bob"));
        assert!(!transactions.touch("made-up", "alice"));
        transactions.end(&id);
        assert!(!transactions.touch(&id, "alice"));
    }

    #[test]
    fn a_user_holds_at_most_its_share_of_open_transactions() {
        let transactions = Transactions::new(Duration::from_secs(60));
        for _ in 0..MAX_TRANSACTIONS_PER_USER {
            assert!(transactions.start("alice").is_ok());
        }
        let refused = transactions.start("alice").err();
        assert_eq!(
            refused.map(|e| e.code()),
            Some(crate::error::ErrorCode::GenericInsufficientResources)
        );
        assert!(transactions.start("bob").is_ok());
    }

    #[test]
    fn columns_get_their_trino_names() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("count(*)", DataType::Int64, false),
            Field::new("n", DataType::Utf8, true),
        ]));
        let names = vec!["_col0".to_string(), "n".to_string()];
        let named = renamed(&schema, &names);
        assert_eq!(named.field(0).name(), "_col0");
        assert_eq!(named.field(1).data_type(), &DataType::Utf8);
        assert!(Arc::ptr_eq(&renamed(&named, &names), &named));
    }
}
