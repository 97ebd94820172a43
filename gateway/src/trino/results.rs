//! `QueryResults` JSON, as Trino's coordinator writes it.

use serde::Serialize;
use serde_json::{Value, json};

use sqe_engine::cluster::{QueryProgress, StageProgress};

use crate::trino::errors::trino_error;
use crate::trino::query::{Page, PageData, QueryState, TrinoQuery};

/// Where a query's URIs point: the scheme and authority the client used to reach us.
pub(crate) struct BaseUri(pub String);

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    id: &'a str,
    info_uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    partial_cancel_uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    columns: Option<Vec<Value>>,
    stats: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    warnings: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    update_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    update_count: Option<u64>,
}

/// A query's splits (its tasks' partitions), all completed once its last page is served.
struct Splits {
    total: u64,
    queued: u64,
    running: u64,
    completed: u64,
}

impl Splits {
    fn of(progress: &QueryProgress, more: bool) -> Self {
        let total = progress.total_splits();
        if more {
            Self {
                total,
                queued: progress.queued_splits(),
                running: progress.running_splits(),
                completed: progress.completed_splits(),
            }
        } else {
            Self {
                total,
                queued: 0,
                running: 0,
                completed: total,
            }
        }
    }
}

/// Trino's `rootStage`: the coordinator's stage, with the distributed stages it reads below.
fn root_stage(state: &str, more: bool, progress: &QueryProgress, rows: u64, elapsed: u64) -> Value {
    fn stage_json(stage: &StageProgress, progress: &QueryProgress, more: bool) -> Value {
        let done = !more || stage.done();
        let (queued, running, completed) = if done {
            (0, 0, stage.total_splits)
        } else {
            (
                stage.queued_splits,
                stage.running_splits,
                stage.completed_splits,
            )
        };
        json!({
            "stageId": stage.stage.to_string(),
            "state": if done { "FINISHED" } else { "RUNNING" },
            "done": done,
            "nodes": stage.tasks,
            "totalSplits": stage.total_splits,
            "queuedSplits": queued,
            "runningSplits": running,
            "completedSplits": completed,
            "cpuTimeMillis": 0,
            "wallTimeMillis": 0,
            "processedRows": stage.output_rows,
            "processedBytes": 0,
            "physicalInputBytes": 0,
            "failedTasks": 0,
            "coordinatorOnly": false,
            "subStages": sub_stages(Some(stage.stage), progress, more),
        })
    }
    fn sub_stages(parent: Option<usize>, progress: &QueryProgress, more: bool) -> Vec<Value> {
        progress
            .stages
            .iter()
            .filter(|s| s.parent == parent)
            .map(|s| stage_json(s, progress, more))
            .collect()
    }
    json!({
        "stageId": "0",
        "state": state,
        "done": !more,
        "nodes": 1,
        "totalSplits": 0,
        "queuedSplits": 0,
        "runningSplits": 0,
        "completedSplits": 0,
        "cpuTimeMillis": 0,
        "wallTimeMillis": elapsed,
        "processedRows": rows,
        "processedBytes": 0,
        "physicalInputBytes": 0,
        "failedTasks": 0,
        "coordinatorOnly": true,
        "subStages": sub_stages(None, progress, more),
    })
}

/// The JSON body of `page`, whose token is `token`.
pub(crate) fn render(
    base: &BaseUri,
    query: &TrinoQuery,
    token: u64,
    page: &Page,
    nodes: usize,
) -> Vec<u8> {
    let base = base.0.trim_end_matches('/');
    let phase = if page.state == QueryState::Queued {
        "queued"
    } else {
        "executing"
    };
    let next_uri = page.more.then(|| {
        format!(
            "{base}/v1/statement/{phase}/{}/{}/{}",
            query.id,
            query.slug,
            token + 1
        )
    });
    let columns = page.columns.as_ref().map(|columns| {
        columns
            .iter()
            .map(|(name, t)| json!({"name": name, "type": t.client_name(), "typeSignature": t.signature()}))
            .collect()
    });
    let elapsed = query.created.elapsed().as_millis() as u64;
    let state = page.state.as_str();
    let progress = query.progress().unwrap_or_default();
    let splits = Splits::of(&progress, page.more);
    let bytes_scanned = query.bytes_scanned().unwrap_or(0);
    let total = splits.total.max(1) as f64;
    let (progress_percentage, running_percentage) = if !page.more {
        (json!(100.0), json!(0.0))
    } else if progress.stages.is_empty() {
        // Nothing to measure (planning, or a plan the coordinator runs alone): Trino's
        // clients then show no bar rather than a made-up one.
        (Value::Null, Value::Null)
    } else {
        (
            json!(progress.percentage),
            json!(100.0 * splits.running as f64 / total),
        )
    };
    let stats = json!({
        "state": state,
        "queued": page.state == QueryState::Queued,
        "scheduled": !matches!(page.state, QueryState::Queued | QueryState::Planning),
        "progressPercentage": progress_percentage,
        "runningPercentage": running_percentage,
        "nodes": nodes,
        "totalSplits": splits.total,
        "queuedSplits": splits.queued,
        "runningSplits": splits.running,
        "completedSplits": splits.completed,
        "rootStage": root_stage(state, page.more, &progress, page.rows, elapsed),
        "planningTimeMillis": 0,
        "analysisTimeMillis": 0,
        "cpuTimeMillis": 0,
        "wallTimeMillis": elapsed,
        "queuedTimeMillis": query.queued_for().as_millis() as u64,
        "elapsedTimeMillis": elapsed,
        "finishingTimeMillis": 0,
        "physicalInputTimeMillis": 0,
        "processedRows": page.rows,
        "processedBytes": bytes_scanned,
        "physicalInputBytes": bytes_scanned,
        "physicalWrittenBytes": 0,
        "internalNetworkInputBytes": 0,
        "peakMemoryBytes": 0,
        "spilledBytes": 0,
    });
    let envelope = Envelope {
        id: &query.id,
        info_uri: format!("{base}/v1/query/{}", query.id),
        partial_cancel_uri: None,
        next_uri,
        columns,
        stats,
        error: page.error.as_ref().map(trino_error),
        warnings: Vec::new(),
        update_type: page.update_type,
        update_count: page.update_count,
    };
    // Serializing these plain values cannot fail.
    let mut out = serde_json::to_vec(&envelope).unwrap_or_default();
    if let Some(data) = &page.data {
        // Rows are encoded once, as they are read; splice them in rather than re-serialize.
        out.pop();
        out.extend_from_slice(b",\"data\":");
        match data {
            PageData::Rows(rows) => out.extend_from_slice(rows),
            PageData::Segment(segment) => {
                out.extend_from_slice(segment.to_json(base).to_string().as_bytes());
            }
        }
        out.push(b'}');
    }
    out
}
