//! Joins that must run in one task. datafusion-distributed spreads a stage over several tasks,
//! each reading its share of the stage's scans; a join that builds a hash table (or the left
//! side of a nested loop) from a side it must see whole — because it emits that side's
//! unmatched rows (`LEFT`, `FULL`) or answers per build row (`EXISTS`, `NOT IN`: left semi and
//! anti joins) — is only right when that side reaches it entire. The library broadcasts the
//! build side only for joins that answer per probe row (inner, right, right semi/anti); for the
//! others it still splits the stage, and each task joined part of the build side: rows were
//! lost (a `LEFT JOIN` answered half its matches) or invented (`NOT IN` kept rows another task
//! had matched). This estimator keeps such a join's stage in one task.

use std::sync::Arc;

use datafusion::common::JoinType;
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::joins::{HashJoinExec, NestedLoopJoinExec, PartitionMode};
use datafusion_distributed::{TaskEstimation, TaskEstimator};

/// Gives a join that needs its whole build side a stage of one task.
#[derive(Debug, Default)]
pub struct WholeBuildSides;

impl TaskEstimator for WholeBuildSides {
    fn task_estimation(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        _cfg: &ConfigOptions,
    ) -> Option<TaskEstimation> {
        needs_whole_build_side(plan).then(|| TaskEstimation::maximum(1))
    }

    fn scale_up_leaf_node(
        &self,
        _plan: &Arc<dyn ExecutionPlan>,
        _task_count: usize,
        _cfg: &ConfigOptions,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        Ok(None)
    }
}

/// Whether `plan` is a join that builds from its left side and must see all of it.
/// (A partitioned hash join gets both sides hash-partitioned on its keys: each task sees every
/// row of its keys, so it may run in many.)
fn needs_whole_build_side(plan: &Arc<dyn ExecutionPlan>) -> bool {
    if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
        return join.partition_mode() == &PartitionMode::CollectLeft
            && !answers_per_probe_row(*join.join_type());
    }
    if let Some(join) = plan.downcast_ref::<NestedLoopJoinExec>() {
        return !answers_per_probe_row(*join.join_type());
    }
    false
}

/// Whether every output row of a join of this type follows from one probe (right) row and the
/// build side, so tasks that each hold the whole build side and part of the probe side answer
/// together what one task would.
fn answers_per_probe_row(join_type: JoinType) -> bool {
    match join_type {
        JoinType::Inner
        | JoinType::Right
        | JoinType::RightSemi
        | JoinType::RightAnti
        | JoinType::RightMark => true,
        JoinType::Left
        | JoinType::Full
        | JoinType::LeftSemi
        | JoinType::LeftAnti
        | JoinType::LeftMark => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_joins_that_answer_per_probe_row_may_split() {
        let splittable: Vec<JoinType> = [
            JoinType::Inner,
            JoinType::Left,
            JoinType::Right,
            JoinType::Full,
            JoinType::LeftSemi,
            JoinType::RightSemi,
            JoinType::LeftAnti,
            JoinType::RightAnti,
            JoinType::LeftMark,
            JoinType::RightMark,
        ]
        .into_iter()
        .filter(|t| answers_per_probe_row(*t))
        .collect();
        assert_eq!(
            splittable,
            [
                JoinType::Inner,
                JoinType::Right,
                JoinType::RightSemi,
                JoinType::RightAnti,
                JoinType::RightMark
            ]
        );
    }
}
