//! Whether a bound query can be cached, and under which key.

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::{Expr, LogicalPlan, Volatility};
use sha2::{Digest, Sha256};
use sqe_iceberg::table::with_iceberg_provider;

use super::{CacheKey, TableVersion};

/// What the cache can do with a query.
#[derive(Debug, Clone)]
pub enum Decision {
    /// Not cacheable, and why (logged at debug level).
    Bypass(String),
    /// Cacheable: its key and the tables (at the versions) it reads.
    Cacheable {
        key: CacheKey,
        tables: Vec<TableVersion>,
    },
}

/// Looks at every node of `logical` (subqueries included). `identity` is the session's part of
/// the key (user, catalog, schema, time zone, properties).
pub fn consider(identity: &str, logical: &LogicalPlan) -> Decision {
    let mut tables: Vec<TableVersion> = Vec::new();
    let mut bypass: Option<String> = None;
    let walked = logical.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let iceberg = with_iceberg_provider(&scan.source, |p| p.table().clone());
            match iceberg {
                Some(table) => {
                    let version = TableVersion {
                        table: table.identifier().clone(),
                        uuid: table.metadata().uuid().to_string(),
                        snapshot: table.metadata().current_snapshot_id(),
                    };
                    if !tables.contains(&version) {
                        tables.push(version);
                    }
                }
                None => {
                    bypass = Some(format!("reads {}, not an Iceberg table", scan.table_name));
                    return Ok(TreeNodeRecursion::Stop);
                }
            }
        }
        node.apply_expressions(|expr| {
            expr.apply(|e| {
                if let Expr::ScalarFunction(f) = e
                    && f.func.signature().volatility != Volatility::Immutable
                {
                    bypass = Some(format!("calls {}(), which is not deterministic", f.name()));
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    if let Err(e) = walked {
        return Decision::Bypass(format!("plan not inspectable: {e}"));
    }
    if let Some(reason) = bypass {
        return Decision::Bypass(reason);
    }
    if tables.is_empty() {
        return Decision::Bypass("reads no table".into());
    }
    let mut hasher = Sha256::new();
    hasher.update(identity.as_bytes());
    hasher.update([0]);
    hasher.update(logical.display_indent_schema().to_string().as_bytes());
    // The display shows only the first rows of a VALUES list: the key needs all of them.
    let _ = logical.apply_with_subqueries(|node| {
        if let LogicalPlan::Values(values) = node {
            hasher.update(format!("{:?}", values.values).as_bytes());
        }
        Ok(TreeNodeRecursion::Continue)
    });
    Decision::Cacheable {
        key: CacheKey(hasher.finalize().into()),
        tables,
    }
}
