//! Join order (Trino's `join_reordering_strategy = AUTOMATIC`): a tree of inner joins is
//! rebuilt by estimated sizes, so a query written fact table first, as in
//! `FROM sales JOIN inventory ON … JOIN date_dim d ON … WHERE d.year = 1999`, joins the
//! filtered dimensions before the large tables they narrow. DataFusion keeps the written order.
//!
//! Sizes come from the tables' row counts (Iceberg snapshot summaries) and fixed selectivities
//! for filters, as Trino estimates without column statistics; an equi-join divides by the
//! larger count of distinct keys of its sides (System R's estimate; of several keys, the most
//! selective), counted from the key columns' bounds (the data files' bounds in the manifests).
//! Without bounds on every key the written order stays: a key of a few values would look as
//! selective as a table's own key.
//! The order is chosen greedily (at each step the pair of joinable parts with the smallest
//! estimated result is joined, which may make bushy trees), and kept only where its estimated
//! intermediate rows are less than half the written order's: estimates are rough, and the
//! written order is the user's.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, ColumnStatistics, DataFusionError, NullEquality, Result};
use datafusion::datasource::source_as_provider;
use datafusion::execution::SessionState;
use datafusion::logical_expr::utils::{conjunction, split_conjunction_owned};
use datafusion::logical_expr::{
    Between, BinaryExpr, Expr, Filter, Join, JoinConstraint, JoinType, Like, LogicalPlan, Operator,
    Projection,
};
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use sqe_iceberg::table::IcebergTableProvider;

/// Joins of more tables than this keep their order (the greedy search is cubic).
const MAX_TABLES: usize = 24;
/// A new order is kept only when it is estimated to make fewer than this share of the rows
/// the written order makes.
const REQUIRED_GAIN: f64 = 0.5;

const RULE_NAME: &str = "sqe_reorder_joins";

/// The optimizer rule.
#[derive(Debug, Default)]
pub(super) struct ReorderJoins;

impl OptimizerRule for ReorderJoins {
    fn name(&self) -> &str {
        RULE_NAME
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        reorder_joins(plan)
    }
}

/// `plan` with each tree of inner joins in it reordered where that pays.
fn reorder_joins(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    plan.transform_down(|node| {
        if !is_inner_join(&node) {
            return Ok(Transformed::no(node));
        }
        // The topmost inner join of a tree: its parts are rewritten first, on their own.
        let mut region = Region::default();
        region.flatten(&node);
        let mut changed = false;
        let mut leaves = Vec::with_capacity(region.leaves.len());
        for leaf in std::mem::take(&mut region.leaves) {
            let rewritten = reorder_joins(leaf)?;
            changed |= rewritten.transformed;
            leaves.push(rewritten.data);
        }
        region.leaves = leaves;
        let rebuilt = match region.reordered(node.schema())? {
            Some(plan) => {
                changed = true;
                plan
            }
            None => replace_leaves(&node, &mut region.leaves.into_iter())?,
        };
        Ok(Transformed::new(rebuilt, changed, TreeNodeRecursion::Jump))
    })
}

/// Loads the column bounds of the Iceberg tables a plan with joins to order reads (see
/// [`sqe_iceberg::table::IcebergTableProvider::load_column_bounds`]), so that the rule can
/// estimate distinct keys. Planning is synchronous; this is its asynchronous part.
pub(super) async fn load_join_statistics(state: &SessionState, plan: &LogicalPlan) {
    if !state
        .optimizers()
        .iter()
        .any(|rule| rule.name() == RULE_NAME)
    {
        return;
    }
    let mut inner_joins = 0;
    let mut providers = Vec::new();
    let walked = plan.apply_with_subqueries(|node| {
        match node {
            LogicalPlan::Join(join) if join.join_type == JoinType::Inner => inner_joins += 1,
            LogicalPlan::TableScan(scan) => {
                if let Ok(provider) = source_as_provider(&scan.source) {
                    providers.push(provider);
                }
            }
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    });
    if walked.is_err() || inner_joins < 2 {
        return;
    }
    let loads = providers.iter().filter_map(|provider| {
        provider
            .downcast_ref::<IcebergTableProvider>()
            .map(IcebergTableProvider::load_column_bounds)
    });
    futures::future::join_all(loads).await;
}

/// An inner join whose parts can be joined in any order.
fn is_inner_join(plan: &LogicalPlan) -> bool {
    matches!(
        plan,
        LogicalPlan::Join(join) if join.join_type == JoinType::Inner
            && join.join_constraint == JoinConstraint::On
            && join.null_equality == NullEquality::NullEqualsNothing
            && !join.null_aware
    )
}

/// A projection of plain columns over an inner join: it only narrows the join's columns, and a
/// new order ends with the columns the tree's root had.
fn is_narrowing_join(plan: &LogicalPlan) -> bool {
    matches!(
        plan,
        LogicalPlan::Projection(p) if p.expr.iter().all(|e| matches!(e, Expr::Column(_)))
            && is_inner_join(&p.input)
    )
}

/// `plan` with the leaves of its join tree replaced, in the order [`Region::flatten`] met them.
fn replace_leaves(
    plan: &LogicalPlan,
    leaves: &mut impl Iterator<Item = LogicalPlan>,
) -> Result<LogicalPlan> {
    match plan {
        LogicalPlan::Join(join) if is_inner_join(plan) => {
            let left = replace_leaves(&join.left, leaves)?;
            let right = replace_leaves(&join.right, leaves)?;
            Ok(LogicalPlan::Join(Join {
                left: Arc::new(left),
                right: Arc::new(right),
                ..join.clone()
            }))
        }
        LogicalPlan::Projection(p) if is_narrowing_join(plan) => {
            let input = replace_leaves(&p.input, leaves)?;
            Ok(LogicalPlan::Projection(Projection::try_new_with_schema(
                p.expr.clone(),
                Arc::new(input),
                Arc::clone(&p.schema),
            )?))
        }
        _ => leaves
            .next()
            .ok_or_else(|| DataFusionError::Internal("join tree lost a table".into())),
    }
}

/// A join condition: an equality of two keys (hashable), or any other predicate.
#[derive(Debug, Clone)]
enum Condition {
    Keys(Expr, Expr),
    Other(Expr),
}

/// A tree of inner joins taken apart: what it joins and on what.
#[derive(Debug, Default)]
struct Region {
    leaves: Vec<LogicalPlan>,
    conditions: Vec<Condition>,
    /// The written order, as pairs of parts joined (leaf indices for leaves, then joins).
    written: Vec<(usize, usize)>,
}

/// One table or join of them while an order is built.
#[derive(Debug, Clone)]
struct Part {
    /// The leaves it holds (bit i: leaf i).
    leaves: u64,
    rows: f64,
    plan: Option<LogicalPlan>,
}

impl Region {
    /// Takes `plan`'s join tree apart; returns the index its node has in `written`'s numbering.
    fn flatten(&mut self, plan: &LogicalPlan) -> usize {
        match plan {
            LogicalPlan::Join(join) if is_inner_join(plan) => {
                let left = self.flatten(&join.left);
                let right = self.flatten(&join.right);
                for (l, r) in &join.on {
                    self.conditions.push(Condition::Keys(l.clone(), r.clone()));
                }
                if let Some(filter) = &join.filter {
                    self.conditions.extend(
                        split_conjunction_owned(filter.clone())
                            .into_iter()
                            .map(Condition::Other),
                    );
                }
                self.written.push((left, right));
                usize::MAX - (self.written.len() - 1)
            }
            LogicalPlan::Projection(p) if is_narrowing_join(plan) => self.flatten(&p.input),
            leaf => {
                self.leaves.push(leaf.clone());
                self.leaves.len() - 1
            }
        }
    }

    /// The tree in a better order, ending with `schema`'s columns; `None` to keep it as written.
    fn reordered(&self, schema: &datafusion::common::DFSchemaRef) -> Result<Option<LogicalPlan>> {
        if self.leaves.len() < 3 || self.leaves.len() > MAX_TABLES {
            return Ok(None);
        }
        let Some(sizes) = self
            .leaves
            .iter()
            .map(estimate)
            .collect::<Option<Vec<Size>>>()
        else {
            return Ok(None);
        };
        let Some(placed) = self.place_conditions(&sizes) else {
            return Ok(None);
        };
        let written = written_cost(&self.written, &sizes, &placed);
        let (order, greedy) = greedy_order(&sizes, &placed);
        if greedy >= written * REQUIRED_GAIN {
            return Ok(None);
        }
        let mut parts: Vec<Part> = self
            .leaves
            .iter()
            .enumerate()
            .map(|(i, leaf)| Part {
                leaves: 1 << i,
                rows: sizes[i].rows,
                plan: Some(leaf.clone()),
            })
            .collect();
        let mut used = vec![false; placed.len()];
        // Conditions on one table alone (a join's `ON t.x = 1`) filter that table.
        for (i, part) in parts.iter_mut().enumerate() {
            let own: Vec<Expr> = placed
                .iter()
                .enumerate()
                .filter(|(_, p)| p.leaves == 1 << i)
                .map(|(c, p)| {
                    used[c] = true;
                    p.condition_expr()
                })
                .collect();
            if let Some(predicate) = conjunction(own)
                && let Some(plan) = part.plan.take()
            {
                part.plan = Some(LogicalPlan::Filter(Filter::try_new(
                    predicate,
                    Arc::new(plan),
                )?));
            }
        }
        for (a, b, rows) in order {
            let joined = join_parts(&mut parts, (a, b, rows), &placed, &mut used)?;
            parts.push(joined);
        }
        let Some(mut plan) = parts.last_mut().and_then(|p| p.plan.take()) else {
            return Ok(None);
        };
        // Conditions on no table at all (constants) filter the whole.
        let rest: Vec<Expr> = placed
            .iter()
            .zip(&used)
            .filter(|(_, used)| !**used)
            .map(|(p, _)| p.condition_expr())
            .collect();
        if let Some(predicate) = conjunction(rest) {
            plan = LogicalPlan::Filter(Filter::try_new(predicate, Arc::new(plan))?);
        }
        let columns = schema.columns().into_iter().map(Expr::Column).collect();
        Ok(Some(LogicalPlan::Projection(
            Projection::try_new_with_schema(columns, Arc::new(plan), Arc::clone(schema))?,
        )))
    }

    /// Each condition with the leaves it reads; `None` when a column is not found in exactly
    /// one leaf, a key reads more than one leaf or has no bounds, or a condition cannot move.
    fn place_conditions(&self, sizes: &[Size]) -> Option<Vec<Placed>> {
        let leaf_of = |column: &Column| -> Option<u64> {
            let mut found = self
                .leaves
                .iter()
                .enumerate()
                .filter(|(_, leaf)| leaf.schema().has_column(column));
            let (i, _) = found.next()?;
            found.next().is_none().then_some(1u64 << i)
        };
        let leaves_of = |expr: &Expr| -> Option<u64> {
            expr.column_refs()
                .into_iter()
                .try_fold(0u64, |acc, c| Some(acc | leaf_of(c)?))
        };
        // Volatile conditions, subqueries and outer references stay where they are written.
        let movable = |e: &Expr| {
            !e.is_volatile()
                && !e
                    .exists(|e| {
                        Ok(matches!(
                            e,
                            Expr::ScalarSubquery(_)
                                | Expr::Exists(_)
                                | Expr::InSubquery(_)
                                | Expr::SetComparison(_)
                                | Expr::OuterReferenceColumn(..)
                        ))
                    })
                    .unwrap_or(true)
        };
        let all_movable = self.conditions.iter().all(|c| match c {
            Condition::Keys(l, r) => movable(l) && movable(r),
            Condition::Other(e) => movable(e),
        });
        if !all_movable {
            return None;
        }
        self.conditions
            .iter()
            .map(|condition| match condition {
                Condition::Keys(l, r) => {
                    let (left, right) = (leaves_of(l)?, leaves_of(r)?);
                    let single = |bits: u64| bits.count_ones() == 1;
                    if !single(left) || !single(right) || left == right {
                        return None;
                    }
                    // Distinct keys on both sides, from column bounds: without them, a key
                    // of a few values (a nation) looks as selective as a table's own key.
                    let distinct = |bit: u64, key: &Expr| match key {
                        Expr::Column(c) => sizes[bit.trailing_zeros() as usize]
                            .distinct
                            .get(c)
                            .copied(),
                        _ => None,
                    };
                    Some(Placed {
                        condition: condition.clone(),
                        leaves: left | right,
                        keys: Some((left, right)),
                        distinct: (distinct(left, l)?, distinct(right, r)?),
                    })
                }
                Condition::Other(e) => Some(Placed {
                    condition: condition.clone(),
                    leaves: leaves_of(e)?,
                    keys: None,
                    distinct: (0.0, 0.0),
                }),
            })
            .collect()
    }
}

/// A condition and the leaves it reads.
#[derive(Debug, Clone)]
struct Placed {
    condition: Condition,
    leaves: u64,
    /// For key equalities: the leaf of each side.
    keys: Option<(u64, u64)>,
    /// For key equalities: how many distinct values each side's column has at most.
    distinct: (f64, f64),
}

impl Placed {
    fn condition_expr(&self) -> Expr {
        match &self.condition {
            Condition::Keys(l, r) => l.clone().eq(r.clone()),
            Condition::Other(e) => e.clone(),
        }
    }
}

/// Joins parts `a` and `b` into one of `rows` estimated rows (the smaller estimate on the
/// left, DataFusion's build side) on the conditions that first have both their sides.
fn join_parts(
    parts: &mut [Part],
    (a, b, rows): (usize, usize, f64),
    placed: &[Placed],
    used: &mut [bool],
) -> Result<Part> {
    let (a, b) = if parts[b].rows < parts[a].rows {
        (b, a)
    } else {
        (a, b)
    };
    let (left_leaves, right_leaves) = (parts[a].leaves, parts[b].leaves);
    let both = left_leaves | right_leaves;
    let mut on = Vec::new();
    let mut filters = Vec::new();
    for (c, p) in placed.iter().enumerate() {
        if used[c] || p.leaves & both != p.leaves || p.leaves == 0 {
            continue;
        }
        used[c] = true;
        match (&p.condition, p.keys) {
            (Condition::Keys(l, r), Some((l_leaf, _))) => {
                if l_leaf & left_leaves != 0 {
                    on.push((l.clone(), r.clone()));
                } else {
                    on.push((r.clone(), l.clone()));
                }
            }
            _ => filters.push(p.condition_expr()),
        }
    }
    let missing = || DataFusionError::Internal("join part used twice".into());
    let left = parts[a].plan.take().ok_or_else(missing)?;
    let right = parts[b].plan.take().ok_or_else(missing)?;
    let join = Join::try_new(
        Arc::new(left),
        Arc::new(right),
        on,
        conjunction(filters),
        JoinType::Inner,
        JoinConstraint::On,
        NullEquality::NullEqualsNothing,
        false,
    )?;
    Ok(Part {
        leaves: both,
        rows,
        plan: Some(LogicalPlan::Join(join)),
    })
}

/// Estimated rows of a leaf, and how many distinct values its columns have at most.
#[derive(Debug, Clone, Default)]
struct Size {
    rows: f64,
    distinct: HashMap<Column, f64>,
}

/// Estimated rows joining parts of `a_rows` and `b_rows` makes: a key equality between them
/// divides by the larger count of distinct keys of its two sides (each at most its part's
/// rows), as System R estimates equi-joins; of several, only the most selective counts (keys
/// are often correlated: a compound key's parts, one key equated twice), and other conditions
/// newly covered keep a share.
fn merged_rows(a_rows: f64, b_rows: f64, a: u64, b: u64, placed: &[Placed]) -> f64 {
    let both = a | b;
    let mut rows = a_rows * b_rows;
    let mut divisor: f64 = 1.0;
    for p in placed {
        let newly =
            p.leaves & both == p.leaves && p.leaves & a != p.leaves && p.leaves & b != p.leaves;
        if !newly {
            continue;
        }
        match p.keys {
            Some((l, _)) => {
                let (in_a, in_b) = if l & a != 0 {
                    p.distinct
                } else {
                    (p.distinct.1, p.distinct.0)
                };
                divisor = divisor.max(in_a.min(a_rows).max(in_b.min(b_rows)));
            }
            None => rows *= selectivity(&p.condition_expr()),
        }
    }
    (rows / divisor).max(1.0)
}

/// The estimated rows the written order makes: the sum over its joins.
fn written_cost(written: &[(usize, usize)], sizes: &[Size], placed: &[Placed]) -> f64 {
    let mut joins: Vec<(u64, f64)> = Vec::with_capacity(written.len());
    let mut cost = 0.0;
    for &(left, right) in written {
        let side = |node: usize| match sizes.get(node) {
            Some(size) => (1u64 << node, size.rows),
            None => joins[usize::MAX - node],
        };
        let ((a, a_rows), (b, b_rows)) = (side(left), side(right));
        let rows = merged_rows(a_rows, b_rows, a, b, placed);
        cost += rows;
        joins.push((a | b, rows));
    }
    cost
}

/// The greedy order: pairs of parts to join (leaves first, then each join made, in order) with
/// the rows each join is estimated to make, and their sum.
fn greedy_order(sizes: &[Size], placed: &[Placed]) -> (Vec<(usize, usize, f64)>, f64) {
    // (index in the numbering of parts, leaves, rows)
    let mut alive: Vec<(usize, u64, f64)> = sizes
        .iter()
        .enumerate()
        .map(|(i, s)| (i, 1u64 << i, s.rows))
        .collect();
    let mut next = sizes.len();
    let mut order = Vec::with_capacity(sizes.len().saturating_sub(1));
    let mut cost = 0.0;
    while alive.len() > 1 {
        let mut best: Option<(usize, usize, f64)> = None;
        for i in 0..alive.len() {
            for j in i + 1..alive.len() {
                let (a, b) = (alive[i].1, alive[j].1);
                let joined_by_keys = placed.iter().any(|p| {
                    p.keys.is_some_and(|(l, r)| {
                        (l & a != 0 && r & b != 0) || (l & b != 0 && r & a != 0)
                    })
                });
                if !joined_by_keys {
                    continue;
                }
                let rows = merged_rows(alive[i].2, alive[j].2, a, b, placed);
                if best.is_none_or(|(_, _, least)| rows < least) {
                    best = Some((i, j, rows));
                }
            }
        }
        // Nothing joins on keys: the two smallest parts are crossed.
        let (i, j, rows) = best.unwrap_or_else(|| {
            let mut by_rows: Vec<usize> = (0..alive.len()).collect();
            by_rows.sort_by(|&x, &y| alive[x].2.total_cmp(&alive[y].2));
            let (i, j) = (by_rows[0].min(by_rows[1]), by_rows[0].max(by_rows[1]));
            let rows = merged_rows(alive[i].2, alive[j].2, alive[i].1, alive[j].1, placed);
            (i, j, rows)
        });
        order.push((alive[i].0, alive[j].0, rows));
        cost += rows;
        let leaves = alive[i].1 | alive[j].1;
        alive.remove(j);
        alive.remove(i);
        alive.push((next, leaves, rows));
        next += 1;
    }
    (order, cost)
}

/// Rows assumed to pass a predicate, by its form (Trino's and most planners' defaults when no
/// column statistics say more).
fn selectivity(predicate: &Expr) -> f64 {
    match predicate {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => selectivity(left) * selectivity(right),
            Operator::Or => {
                let (a, b) = (selectivity(left), selectivity(right));
                a + b - a * b
            }
            Operator::Eq | Operator::IsNotDistinctFrom => 0.1,
            Operator::NotEq | Operator::IsDistinctFrom => 0.9,
            Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => 0.33,
            _ => 0.5,
        },
        Expr::Not(inner) => 1.0 - selectivity(inner),
        Expr::Between(Between { negated, .. }) => negate(0.25, *negated),
        Expr::InList(list) => negate((0.1 * list.list.len() as f64).min(0.5), list.negated),
        Expr::Like(Like { negated, .. }) | Expr::SimilarTo(Like { negated, .. }) => {
            negate(0.25, *negated)
        }
        Expr::IsNull(_) => 0.1,
        Expr::IsNotNull(_) => 0.9,
        _ => 0.5,
    }
}

fn negate(share: f64, negated: bool) -> f64 {
    if negated { 1.0 - share } else { share }
}

/// Estimated size of a plan from its tables' row counts and column bounds; `None` when a
/// table's row count is unknown.
fn estimate(plan: &LogicalPlan) -> Option<Size> {
    let rows_only = |rows: f64| Size {
        rows: rows.max(1.0),
        distinct: HashMap::new(),
    };
    match plan {
        LogicalPlan::TableScan(scan) => {
            let provider = source_as_provider(&scan.source).ok()?;
            let stats = provider.statistics()?;
            let rows = *stats.num_rows.get_value()? as f64;
            let rows = scan.fetch.map_or(rows, |n| rows.min(n as f64));
            let mut distinct = HashMap::new();
            for (i, (qualifier, field)) in scan.projected_schema.iter().enumerate() {
                let source = scan
                    .projection
                    .as_ref()
                    .map_or(Some(i), |p| p.get(i).copied());
                let bound = source
                    .and_then(|s| stats.column_statistics.get(s))
                    .and_then(distinct_at_most);
                if let Some(bound) = bound {
                    distinct.insert(
                        Column::new(qualifier.cloned(), field.name()),
                        bound.min(rows),
                    );
                }
            }
            Some(Size {
                rows: rows.max(1.0),
                distinct,
            })
        }
        LogicalPlan::Filter(filter) => {
            let input = estimate(&filter.input)?;
            Some(Size {
                rows: (input.rows * selectivity(&filter.predicate)).max(1.0),
                ..input
            })
        }
        LogicalPlan::Projection(p) => {
            let input = estimate(&p.input)?;
            let distinct = p
                .expr
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    let source = match e {
                        Expr::Column(c) => c,
                        Expr::Alias(alias) => match alias.expr.as_ref() {
                            Expr::Column(c) => c,
                            _ => return None,
                        },
                        _ => return None,
                    };
                    let bound = *input.distinct.get(source)?;
                    Some((Column::from(p.schema.qualified_field(i)), bound))
                })
                .collect();
            Some(Size { distinct, ..input })
        }
        LogicalPlan::SubqueryAlias(a) => {
            let input = estimate(&a.input)?;
            let distinct = a
                .input
                .schema()
                .columns()
                .into_iter()
                .zip(a.schema.columns())
                .filter_map(|(from, to)| Some((to, *input.distinct.get(&from)?)))
                .collect();
            Some(Size { distinct, ..input })
        }
        LogicalPlan::Sort(s) => estimate(&s.input),
        LogicalPlan::Limit(l) => estimate(&l.input),
        LogicalPlan::Repartition(r) => estimate(&r.input),
        // Grouped rows: a tenth of their input's.
        LogicalPlan::Aggregate(a) if a.group_expr.is_empty() => Some(rows_only(1.0)),
        LogicalPlan::Aggregate(a) => Some(rows_only(estimate(&a.input)?.rows * 0.1)),
        LogicalPlan::Distinct(d) => Some(rows_only(estimate(d.input())?.rows * 0.1)),
        LogicalPlan::Union(u) => {
            let rows = u
                .inputs
                .iter()
                .map(|i| estimate(i).map(|s| s.rows))
                .sum::<Option<f64>>()?;
            Some(rows_only(rows))
        }
        LogicalPlan::Join(join) => {
            let (left, right) = (estimate(&join.left)?, estimate(&join.right)?);
            let half = |side: Size| Size {
                rows: (side.rows * 0.5).max(1.0),
                ..side
            };
            Some(match join.join_type {
                JoinType::Left => left,
                JoinType::Right => right,
                JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => half(left),
                JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => half(right),
                JoinType::Full => rows_only(left.rows + right.rows),
                JoinType::Inner if left.rows >= right.rows => left,
                JoinType::Inner => right,
            })
        }
        _ => None,
    }
}

/// At most how many distinct values a column has: its statistics' count, else one per value
/// between its bounds (integers, dates, times, decimals: the bounds Iceberg keeps exactly).
fn distinct_at_most(column: &ColumnStatistics) -> Option<f64> {
    if let Some(count) = column.distinct_count.get_value() {
        return Some(*count as f64);
    }
    let (min, max) = (column.min_value.get_value()?, column.max_value.get_value()?);
    Some(min.distance(max)? as f64 + 1.0)
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
    use datafusion::catalog::Session;
    use datafusion::common::stats::Precision;
    use datafusion::common::{ScalarValue, Statistics};
    use datafusion::datasource::{MemTable, TableProvider, TableType, provider_as_source};
    use datafusion::execution::SessionStateBuilder;
    use datafusion::logical_expr::{LogicalPlanBuilder, col, lit};
    use datafusion::optimizer::OptimizerContext;
    use datafusion::physical_plan::ExecutionPlan;
    use datafusion::prelude::SessionContext;

    use super::*;

    /// A table that claims `rows` rows, columns of `distinct` values, and holds `data`.
    #[derive(Debug)]
    struct Sized {
        rows: usize,
        distinct: Vec<usize>,
        data: MemTable,
    }

    #[async_trait]
    impl TableProvider for Sized {
        fn schema(&self) -> SchemaRef {
            self.data.schema()
        }
        fn table_type(&self) -> TableType {
            TableType::Base
        }
        async fn scan(
            &self,
            state: &dyn Session,
            projection: Option<&Vec<usize>>,
            filters: &[Expr],
            limit: Option<usize>,
        ) -> Result<Arc<dyn ExecutionPlan>> {
            self.data.scan(state, projection, filters, limit).await
        }
        fn statistics(&self) -> Option<Statistics> {
            let mut stats = Statistics::new_unknown(&self.schema());
            stats.num_rows = Precision::Inexact(self.rows);
            let bounded = self.distinct.iter().map(|d| (*d > 0).then_some(*d));
            for (column, distinct) in stats.column_statistics.iter_mut().zip(bounded) {
                let Some(distinct) = distinct else { continue };
                column.min_value = Precision::Inexact(ScalarValue::Int64(Some(1)));
                column.max_value = Precision::Inexact(ScalarValue::Int64(Some(distinct as i64)));
            }
            Some(stats)
        }
    }

    /// `columns` (name, distinct values; 0: no bounds) of `rows` claimed rows, holding `values`
    /// in each.
    fn table(columns: &[(&str, usize)], rows: usize, values: &[i64]) -> Arc<Sized> {
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|(c, _)| Field::new(*c, DataType::Int64, true))
                .collect::<Vec<_>>(),
        ));
        let arrays = columns
            .iter()
            .map(|_| Arc::new(Int64Array::from(values.to_vec())) as _)
            .collect();
        let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).expect("batch");
        let data = MemTable::try_new(schema, vec![vec![batch]]).expect("table");
        let distinct = columns.iter().map(|(_, d)| *d).collect();
        Arc::new(Sized {
            rows,
            distinct,
            data,
        })
    }

    fn scan(name: &str, provider: Arc<Sized>) -> LogicalPlanBuilder {
        LogicalPlanBuilder::scan(name, provider_as_source(provider), None).expect("scan")
    }

    /// Sales joined first with the large inventory on the item alone, then with a filtered
    /// date dimension and an item dimension (TPC-DS's Q72 in small).
    fn fact_first(sizes: [usize; 4]) -> LogicalPlan {
        fact_first_with_date_keys(sizes, sizes[3])
    }

    /// [`fact_first`], its date dimension's key of `date_keys` distinct values (0: no bounds).
    fn fact_first_with_date_keys(sizes: [usize; 4], date_keys: usize) -> LogicalPlan {
        let [sales, inventory, items, dates] = sizes;
        let values = [1, 2, 3, 1999];
        let sales_table = table(&[("s_item", items), ("s_date", dates)], sales, &values);
        scan("sales", sales_table)
            .join_on(
                scan(
                    "inventory",
                    table(&[("i_item", items), ("i_date", dates)], inventory, &values),
                )
                .build()
                .expect("plan"),
                JoinType::Inner,
                vec![col("s_item").eq(col("i_item"))],
            )
            .and_then(|b| {
                b.join_on(
                    scan("items", table(&[("it_sk", items)], items, &values))
                        .build()
                        .expect("plan"),
                    JoinType::Inner,
                    vec![col("it_sk").eq(col("s_item"))],
                )
            })
            .and_then(|b| {
                b.join_on(
                    scan(
                        "dates",
                        table(&[("d_sk", date_keys), ("d_year", 200)], dates, &values),
                    )
                    .filter(col("d_year").eq(lit(1999_i64)))
                    .and_then(|b| b.build())
                    .expect("plan"),
                    JoinType::Inner,
                    vec![col("s_date").eq(col("d_sk")), col("i_date").eq(col("d_sk"))],
                )
            })
            .and_then(|b| b.build())
            .expect("plan")
    }

    /// `plan` as DataFusion's optimizer leaves it, with or without the rule.
    fn optimized(plan: LogicalPlan, reorder: bool) -> LogicalPlan {
        let mut builder = SessionStateBuilder::new().with_default_features();
        if reorder {
            builder = builder.with_optimizer_rule(Arc::new(ReorderJoins));
        }
        builder.build().optimize(&plan).expect("optimized")
    }

    /// The tables under `plan`, by name.
    fn tables(plan: &LogicalPlan) -> Vec<String> {
        let mut names = Vec::new();
        plan.apply(|node| {
            if let LogicalPlan::TableScan(scan) = node {
                names.push(scan.table_name.to_string());
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .expect("walk");
        names.sort();
        names
    }

    /// The tables on the other side of the join that reads `table` alone.
    fn joined_with(plan: &LogicalPlan, table: &str) -> Vec<String> {
        let mut other = Vec::new();
        plan.apply(|node| {
            if let LogicalPlan::Join(join) = node {
                let (l, r) = (tables(&join.left), tables(&join.right));
                if l == [table] {
                    other = r;
                } else if r == [table] {
                    other = l;
                }
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .expect("walk");
        other
    }

    #[test]
    fn joins_the_filtered_dimensions_before_the_large_table_they_narrow() {
        let plan = fact_first([1_000_000, 10_000_000, 18_000, 70_000]);
        let written = optimized(plan.clone(), false);
        assert_eq!(joined_with(&written, "inventory"), ["sales"], "{written}");
        let reordered = optimized(plan, true);
        let with_inventory = joined_with(&reordered, "inventory");
        assert!(
            with_inventory.contains(&"dates".to_string()) && with_inventory.len() >= 2,
            "{reordered}"
        );
        assert_eq!(
            reordered.schema().as_ref(),
            written.schema().as_ref(),
            "same columns, in the same order"
        );
    }

    #[test]
    fn keeps_the_written_order_where_it_is_not_much_worse() {
        // Small to large along the keys: as good an order as any.
        let values = [1_i64, 2];
        let plan = scan("a", table(&[("a_x", 100)], 100, &values))
            .join_on(
                scan(
                    "b",
                    table(&[("b_x", 100), ("b_y", 10_000)], 10_000, &values),
                )
                .build()
                .expect("plan"),
                JoinType::Inner,
                vec![col("a_x").eq(col("b_x"))],
            )
            .and_then(|p| {
                p.join_on(
                    scan("c", table(&[("c_y", 10_000)], 1_000_000, &values)).build()?,
                    JoinType::Inner,
                    vec![col("b_y").eq(col("c_y"))],
                )
            })
            .and_then(|p| p.build())
            .expect("plan");
        let written = optimized(plan.clone(), false);
        let kept = optimized(plan, true);
        assert_eq!(kept, written, "{kept}");
    }

    #[test]
    fn leaves_joins_of_a_table_of_unknown_size_alone() {
        let values = [1_i64, 2];
        let unknown = |name: &str| {
            let schema = Arc::new(Schema::new(vec![Field::new(name, DataType::Int64, true)]));
            let batch = RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(Int64Array::from(values.to_vec()))],
            )
            .expect("batch");
            Arc::new(MemTable::try_new(schema, vec![vec![batch]]).expect("table"))
        };
        let plan = scan("a", table(&[("a", 1_000)], 10_000_000, &values))
            .join_on(
                scan("b", table(&[("b", 1_000)], 10_000_000, &values))
                    .build()
                    .expect("plan"),
                JoinType::Inner,
                vec![col("a").eq(col("b"))],
            )
            .and_then(|p| {
                p.join_on(
                    LogicalPlanBuilder::scan("c", provider_as_source(unknown("c")), None)?
                        .filter(col("c").eq(lit(1_i64)))?
                        .build()?,
                    JoinType::Inner,
                    vec![col("c").eq(col("a"))],
                )
            })
            .and_then(|p| p.build())
            .expect("plan");
        assert_eq!(optimized(plan.clone(), true), optimized(plan, false));
    }

    #[test]
    fn leaves_joins_on_keys_of_unknown_distinct_values_alone() {
        // Without bounds, a key of a few values would look as selective as a table's own key.
        let plan = fact_first_with_date_keys([1_000_000, 10_000_000, 18_000, 70_000], 0);
        assert_eq!(optimized(plan.clone(), true), optimized(plan, false));
    }

    #[test]
    fn a_new_order_is_kept_when_optimized_again() {
        let plan = fact_first([1_000_000, 10_000_000, 18_000, 70_000]);
        let once = optimized(plan, true);
        let again = ReorderJoins
            .rewrite(once.clone(), &OptimizerContext::new())
            .expect("rewrite");
        assert!(!again.transformed, "{}", again.data);
    }

    #[tokio::test]
    async fn answers_as_the_written_order_does() {
        let plan = fact_first([1_000_000, 10_000_000, 18_000, 70_000]);
        let rows = |reorder: bool| {
            let plan = plan.clone();
            async move {
                let mut builder = SessionStateBuilder::new().with_default_features();
                if reorder {
                    builder = builder.with_optimizer_rule(Arc::new(ReorderJoins));
                }
                let ctx = SessionContext::new_with_state(builder.build());
                let frame = ctx.execute_logical_plan(plan).await.expect("plan");
                let batches = frame.collect().await.expect("rows");
                datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                    .expect("format")
                    .to_string()
            }
        };
        let written = rows(false).await;
        assert!(written.contains("1999"), "{written}");
        assert_eq!(rows(true).await, written);
    }
}
