//! `MERGE INTO target USING source ON … WHEN …` read as the query that selects what it does:
//!
//! ```sql
//! SELECT CASE WHEN <clause 1 applies> THEN 1 WHEN <clause 2 applies> THEN 2 … ELSE 0 END,
//!        t.<file>, t.<position>,
//!        CASE WHEN <clause 1 applies> THEN <its value of column c> … END AS c, …
//! FROM source LEFT JOIN <target read with row positions> AS t ON …
//! ```
//!
//! Each source row gets the first clause that applies to it (`MATCHED` ones when a target row
//! joined, `NOT MATCHED` ones when none did), as SQL's MERGE says; the engine turns the rows
//! into deletes (a `DELETE` or `UPDATE` clause) and new rows (`UPDATE` or `INSERT`). The
//! expressions are the statement's own, rewritten as every statement is once the query is
//! built.

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    Assignment, AssignmentTarget, BinaryOperator, CaseWhen, Expr, Ident, JoinConstraint,
    JoinOperator, Merge, MergeAction, MergeClauseKind, MergeInsertKind, ObjectName, SelectItem,
    SetExpr, Statement, TableAlias, TableFactor, Value,
};

use super::parse::{raw_statement, rewritten};
use crate::error::{Error, ErrorCode, Result};

/// The catalog, schema and table under which the target with its row positions is planned.
pub const TARGET_CATALOG: &str = "$sqe_merge";
pub const TARGET_SCHEMA: &str = "merge";
pub const TARGET_TABLE: &str = "target";
/// The column holding the number of the clause applied to a row (from 1; 0: none).
pub const ACTION_COLUMN: &str = "$sqe_merge_action";

/// What a WHEN clause does to the rows it applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClauseAction {
    Update,
    Delete,
    Insert,
}

/// A MERGE's target, as the statement named it.
#[derive(Debug, Clone)]
pub struct MergeTarget {
    pub name: ObjectName,
    /// The name its columns are qualified by: the alias, else the table's own name.
    pub qualifier: Ident,
}

/// Reads `sql` if it is a MERGE: names folded as every statement's are, nothing else
/// rewritten yet.
pub fn read(sql: &str) -> Result<Option<Merge>> {
    match raw_statement(sql)? {
        DFStatement::Statement(statement) => match *statement {
            Statement::Merge(merge) => Ok(Some(merge)),
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

/// The target table of `merge`.
pub fn target(merge: &Merge) -> Result<MergeTarget> {
    let TableFactor::Table { name, alias, .. } = &merge.table else {
        return Err(Error::NotSupported(format!(
            "MERGE INTO {}: the target must be a table",
            merge.table
        )));
    };
    let qualifier = match alias {
        Some(TableAlias { name, .. }) => name.clone(),
        None => name
            .0
            .last()
            .and_then(|part| part.as_ident())
            .cloned()
            .ok_or_else(|| Error::NotSupported(format!("MERGE INTO {name}")))?,
    };
    Ok(MergeTarget {
        name: name.clone(),
        qualifier,
    })
}

/// The query selecting what `merge` does to a table with `columns` (its names, in order), for
/// DataFusion to plan, and what each clause does (clause `i` is action number `i + 1`).
/// `file` and `position` name the target's row position columns.
pub fn selection(
    merge: &Merge,
    columns: &[String],
    file: &str,
    position: &str,
) -> Result<(DFStatement, Vec<ClauseAction>)> {
    let target = target(merge)?;
    let t = |column: &str| {
        Expr::CompoundIdentifier(vec![
            target.qualifier.clone(),
            Ident::with_quote('"', column),
        ])
    };
    let matched = Expr::IsNotNull(Box::new(t(file)));
    let unmatched = Expr::IsNull(Box::new(t(file)));
    let mut conditions = Vec::new();
    let mut actions = Vec::new();
    // Per clause, the value it gives each column (None: the row is not written).
    let mut values: Vec<Option<Vec<Expr>>> = Vec::new();
    for clause in &merge.clauses {
        let applies = match clause.clause_kind {
            MergeClauseKind::Matched => matched.clone(),
            MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget => unmatched.clone(),
            MergeClauseKind::NotMatchedBySource => {
                return Err(Error::NotSupported(
                    "MERGE … WHEN NOT MATCHED BY SOURCE".into(),
                ));
            }
        };
        let is_matched = clause.clause_kind == MergeClauseKind::Matched;
        let condition = match &clause.predicate {
            Some(predicate) => Expr::BinaryOp {
                left: Box::new(applies),
                op: BinaryOperator::And,
                right: Box::new(Expr::Nested(Box::new(predicate.clone()))),
            },
            None => applies,
        };
        let (action, row) = match &clause.action {
            MergeAction::Delete { .. } if is_matched => (ClauseAction::Delete, None),
            MergeAction::Update(update) if is_matched => {
                if update.update_predicate.is_some() || update.delete_predicate.is_some() {
                    return Err(Error::NotSupported(
                        "MERGE … UPDATE … WHERE / DELETE WHERE (Oracle's forms)".into(),
                    ));
                }
                let row = updated_row(&update.assignments, columns, &t)?;
                (ClauseAction::Update, Some(row))
            }
            MergeAction::Insert(insert) if !is_matched => {
                if insert.insert_predicate.is_some() {
                    return Err(Error::NotSupported("MERGE … INSERT … WHERE".into()));
                }
                let MergeInsertKind::Values(given) = &insert.kind else {
                    return Err(Error::NotSupported("MERGE … INSERT ROW".into()));
                };
                let [row] = given.rows.as_slice() else {
                    return Err(Error::invalid(
                        ErrorCode::GenericUserError,
                        "MERGE … INSERT takes one row of VALUES",
                    ));
                };
                let row = inserted_row(&insert.columns, &row.content, columns)?;
                (ClauseAction::Insert, Some(row))
            }
            other => {
                return Err(Error::invalid(
                    ErrorCode::SyntaxError,
                    format!(
                        "WHEN {} THEN {other}: MATCHED rows take UPDATE or DELETE, NOT MATCHED ones INSERT",
                        clause.clause_kind
                    ),
                ));
            }
        };
        conditions.push(condition);
        actions.push(action);
        values.push(row);
    }
    if actions.is_empty() {
        return Err(Error::invalid(
            ErrorCode::SyntaxError,
            "MERGE needs at least one WHEN clause",
        ));
    }

    let number = |n: usize| Expr::value(Value::Number(n.to_string(), false));
    let null = || Expr::value(Value::Null);
    let case = |results: Vec<Expr>, otherwise: Expr| Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: conditions
            .iter()
            .cloned()
            .zip(results)
            .map(|(condition, result)| CaseWhen { condition, result })
            .collect(),
        else_result: Some(Box::new(otherwise)),
    };
    let named = |expr: Expr, name: &str| SelectItem::ExprWithAlias {
        expr,
        alias: Ident::with_quote('"', name),
    };
    let mut projection = vec![
        named(
            case((1..=actions.len()).map(number).collect(), number(0)),
            ACTION_COLUMN,
        ),
        named(t(file), file),
        named(t(position), position),
    ];
    for (index, column) in columns.iter().enumerate() {
        let results = values
            .iter()
            .map(|row| row.as_ref().map_or_else(null, |r| r[index].clone()))
            .collect();
        projection.push(named(case(results, null()), column));
    }

    let mut statement = raw_query(&format!(
        "SELECT NULL FROM source LEFT JOIN \"{TARGET_CATALOG}\".\"{TARGET_SCHEMA}\".\"{TARGET_TABLE}\" AS {} ON TRUE",
        target.qualifier
    ))?;
    let Statement::Query(query) = &mut statement else {
        return Err(Error::Internal("the MERGE template is not a query".into()));
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Err(Error::Internal("the MERGE template is not a SELECT".into()));
    };
    select.projection = projection;
    let [from] = select.from.as_mut_slice() else {
        return Err(Error::Internal(
            "the MERGE template reads one relation".into(),
        ));
    };
    from.relation = merge.source.clone();
    let [join] = from.joins.as_mut_slice() else {
        return Err(Error::Internal("the MERGE template joins once".into()));
    };
    let on = JoinConstraint::On(merge.on.as_ref().clone());
    let inserts = actions.contains(&ClauseAction::Insert);
    // Source rows matching no target row matter only to INSERT clauses.
    join.join_operator = if inserts {
        JoinOperator::LeftOuter(on)
    } else {
        JoinOperator::Inner(on)
    };
    Ok((rewritten(statement)?, actions))
}

/// An UPDATE clause's row: the assigned columns' new values, the others as they were.
fn updated_row(
    assignments: &[Assignment],
    columns: &[String],
    current: &impl Fn(&str) -> Expr,
) -> Result<Vec<Expr>> {
    let mut row: Vec<Expr> = columns.iter().map(|c| current(c)).collect();
    let mut assigned = vec![false; columns.len()];
    for assignment in assignments {
        let AssignmentTarget::ColumnName(name) = &assignment.target else {
            return Err(Error::NotSupported(format!(
                "MERGE … UPDATE SET {}: assign one column at a time",
                assignment.target
            )));
        };
        let index = column_index(name, columns)?;
        if std::mem::replace(&mut assigned[index], true) {
            return Err(Error::invalid(
                ErrorCode::DuplicateColumnName,
                format!("Multiple updates to the same column: {}", columns[index]),
            ));
        }
        row[index] = assignment.value.clone();
    }
    Ok(row)
}

/// An INSERT clause's row: the values given, by the columns named (every column, in order,
/// when none are), the rest NULL.
fn inserted_row(named: &[ObjectName], values: &[Expr], columns: &[String]) -> Result<Vec<Expr>> {
    let indices: Vec<usize> = if named.is_empty() {
        (0..columns.len()).collect()
    } else {
        named
            .iter()
            .map(|name| column_index(name, columns))
            .collect::<Result<_>>()?
    };
    if indices.len() != values.len() {
        return Err(Error::invalid(
            ErrorCode::GenericUserError,
            format!(
                "MERGE … INSERT names {} columns and gives {} values",
                indices.len(),
                values.len()
            ),
        ));
    }
    let mut row = vec![Expr::value(Value::Null); columns.len()];
    let mut given = vec![false; columns.len()];
    for (index, value) in indices.into_iter().zip(values) {
        if std::mem::replace(&mut given[index], true) {
            return Err(Error::invalid(
                ErrorCode::DuplicateColumnName,
                format!(
                    "Insert column name is specified more than once: {}",
                    columns[index]
                ),
            ));
        }
        row[index] = value.clone();
    }
    Ok(row)
}

/// The target column `name` (perhaps qualified by the target) stands for.
fn column_index(name: &ObjectName, columns: &[String]) -> Result<usize> {
    let column = name
        .0
        .last()
        .and_then(|part| part.as_ident())
        .map(|ident| ident.value.to_lowercase())
        .unwrap_or_default();
    columns
        .iter()
        .position(|c| c.to_lowercase() == column)
        .ok_or_else(|| Error::not_found(crate::error::ObjectKind::Column, column))
}

fn raw_query(sql: &str) -> Result<Statement> {
    match raw_statement(sql)? {
        DFStatement::Statement(statement) => Ok(*statement),
        _ => Err(Error::Internal(format!("not a statement: {sql}"))),
    }
}
