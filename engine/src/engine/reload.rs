//! A statement prepared earlier and run now reads its Iceberg tables as they are now: their
//! current snapshot, and storage credentials that have not expired since it was prepared (as
//! Trino analyses an EXECUTE afresh). The plan's tables are loaded again and put in place of
//! the ones it was planned with.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::TableReference;
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::datasource::provider_as_source;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{LogicalPlan, TableSource};
use sqe_iceberg::table::with_iceberg_provider;

use crate::error::{Error, ErrorCode, Result};

fn is_iceberg(source: &Arc<dyn TableSource>) -> bool {
    with_iceberg_provider(source, |_| ()).is_some()
}

/// `plan` with every Iceberg table it scans or writes loaded afresh through `state`'s catalogs.
pub(super) async fn reload_iceberg_tables(
    state: &SessionState,
    plan: LogicalPlan,
) -> Result<LogicalPlan> {
    let mut planned: Vec<(TableReference, Arc<dyn TableSource>)> = Vec::new();
    plan.apply_with_subqueries(|node| {
        let table = match node {
            LogicalPlan::TableScan(scan) if is_iceberg(&scan.source) => {
                Some((&scan.table_name, &scan.source))
            }
            LogicalPlan::Dml(dml) if is_iceberg(&dml.target) => {
                Some((&dml.table_name, &dml.target))
            }
            _ => None,
        };
        if let Some((name, source)) = table
            && !planned.iter().any(|(n, _)| n == name)
        {
            planned.push((name.clone(), Arc::clone(source)));
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    if planned.is_empty() {
        return Ok(plan);
    }
    let mut fresh: HashMap<TableReference, Arc<dyn TableSource>> = HashMap::new();
    for (name, before) in planned {
        let provider = state
            .schema_for_ref(name.clone())?
            .table(name.table())
            .await?
            .ok_or_else(|| {
                Error::invalid(
                    ErrorCode::TableNotFound,
                    format!(
                        "table {name} no longer exists; it was dropped after the statement was prepared"
                    ),
                )
            })?;
        if provider.schema() != before.schema() {
            return Err(Error::invalid(
                ErrorCode::GenericUserError,
                format!(
                    "table {name} has other columns than when the statement was prepared; prepare it again"
                ),
            ));
        }
        fresh.insert(name, provider_as_source(provider));
    }
    let reloaded = plan.transform_up_with_subqueries(|node| {
        Ok(match node {
            LogicalPlan::TableScan(mut scan) => match fresh.get(&scan.table_name) {
                Some(source) if is_iceberg(&scan.source) => {
                    scan.source = Arc::clone(source);
                    Transformed::yes(LogicalPlan::TableScan(scan))
                }
                _ => Transformed::no(LogicalPlan::TableScan(scan)),
            },
            LogicalPlan::Dml(mut dml) => match fresh.get(&dml.table_name) {
                Some(source) if is_iceberg(&dml.target) => {
                    dml.target = Arc::clone(source);
                    Transformed::yes(LogicalPlan::Dml(dml))
                }
                _ => Transformed::no(LogicalPlan::Dml(dml)),
            },
            other => Transformed::no(other),
        })
    })?;
    Ok(reloaded.data)
}
