//! The JSON the UI's pages show, read from the engine's history, task ledgers and worker pool.

use serde_json::{Value, json};
use sqe_engine::cluster::{QueryProgress, task_state};
use sqe_engine::engine::Engine;
use sqe_engine::history::{QueryRecord, QuerySnapshot, QueryState, Viewer};

/// Most queries the list shows, newest first.
const LIST_LIMIT: usize = 200;
/// Characters of SQL the list shows of each query.
const LIST_SQL_CHARS: usize = 300;
/// The window rows/s is measured over.
const RATE_WINDOW_SECS: i64 = 60;

fn elapsed_ms(q: &QuerySnapshot) -> u64 {
    let end = q.ended.unwrap_or_else(chrono::Utc::now);
    (end - q.created).num_milliseconds().max(0) as u64
}

/// How far a query's distributed stages have got (nothing measured without any).
fn progress_of(record: &QueryRecord) -> QueryProgress {
    record.tasks().map(|t| t.progress()).unwrap_or_default()
}

/// What the list and a query's page both show of a query; its SQL cut to `sql_chars`.
fn summary(
    q: &QuerySnapshot,
    progress: &QueryProgress,
    sql_chars: Option<usize>,
) -> serde_json::Map<String, Value> {
    let sql: String = match sql_chars {
        Some(n) => q.start.sql.chars().take(n).collect(),
        None => q.start.sql.clone(),
    };
    let fields = json!({
        "queryId": q.id,
        "state": q.state.name(),
        "user": q.start.user,
        "source": q.start.source,
        "endpoint": q.start.endpoint,
        "query": sql,
        "created": q.created.to_rfc3339(),
        "elapsedMs": elapsed_ms(q),
        "outputRows": q.output_rows,
        "progressPercentage": progress.percentage_for(q.state),
        "errorCode": q.error_code,
    });
    match fields {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// The cluster page: this coordinator, its workers and the queries the viewer may see.
pub(super) fn cluster(engine: &Engine, viewer: &Viewer) -> Value {
    let history = engine.history();
    let running_tasks = history.running_tasks_per_worker();
    let missed = engine.workers().missed_heartbeats();
    let workers: Vec<Value> = engine
        .workers()
        .statuses()
        .into_iter()
        .map(|w| {
            json!({
                "nodeId": w.node_id(),
                "uri": w.url.as_str().trim_end_matches('/'),
                "state": w.state(missed).name(),
                "version": w.version,
                "runningTasks": running_tasks.get(&w.url).copied().unwrap_or(0),
                "lastSeenMsAgo": w.last_seen.map(|t| t.elapsed().as_millis() as u64),
            })
        })
        .collect();
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    let since = chrono::Utc::now() - chrono::Duration::seconds(RATE_WINDOW_SECS);
    let mut recent_rows = 0u64;
    for record in history.records().iter().filter(|r| viewer.sees(r)) {
        let snapshot = record.snapshot();
        *counts.entry(snapshot.state.name()).or_default() += 1;
        if snapshot.ended.is_none_or(|end| end >= since) {
            recent_rows += snapshot.output_rows;
        }
    }
    let node = engine.node();
    json!({
        "user": viewer.user,
        "admin": viewer.admin,
        "coordinator": {"nodeId": node.node_id, "uri": node.uri, "version": node.version},
        "workers": workers,
        "queries": counts,
        "rowsPerSecond": recent_rows as f64 / RATE_WINDOW_SECS as f64,
    })
}

/// The live query list: newest first.
pub(super) fn queries(engine: &Engine, viewer: &Viewer) -> Value {
    let mut records: Vec<_> = engine
        .history()
        .records()
        .into_iter()
        .filter(|r| viewer.sees(r))
        .collect();
    records.sort_by_key(|r| std::cmp::Reverse(r.created_at()));
    let rows: Vec<Value> = records
        .iter()
        .take(LIST_LIMIT)
        .map(|record| {
            let q = record.snapshot();
            Value::Object(summary(&q, &progress_of(record), Some(LIST_SQL_CHARS)))
        })
        .collect();
    Value::Array(rows)
}

/// One query's page: its SQL, state, times, errors, stages and tasks per worker, trace.
pub(super) fn query(
    engine: &Engine,
    record: &QueryRecord,
    viewer: &Viewer,
    trace_url: Option<&str>,
) -> Value {
    let q = record.snapshot();
    let progress = progress_of(record);
    let tasks = record.tasks().map(|t| t.tasks()).unwrap_or_default();
    let stages: Vec<Value> = progress
        .stages
        .iter()
        .map(|stage| {
            let task_rows: Vec<Value> = tasks
                .iter()
                .filter(|t| t.stage == stage.stage)
                .map(|t| {
                    let live = progress.task(t.stage, t.task);
                    let (state, splits) = task_state(q.state, live);
                    // Rows so far from its worker's progress until its final metrics are in.
                    let output_rows = t
                        .metrics
                        .map(|m| m.output_rows)
                        .or_else(|| live.map(|l| l.output_rows));
                    json!({
                        "task": t.task,
                        "nodeId": engine.workers().node_id_of(&t.worker),
                        "workerUri": t.worker.as_str().trim_end_matches('/'),
                        "state": state,
                        "totalSplits": splits.map(|s| s.0),
                        "completedSplits": splits.map(|s| s.1),
                        "cpuMs": t.metrics.map(|m| m.cpu_ms),
                        "inputRows": t.metrics.map(|m| m.input_rows),
                        "outputRows": output_rows,
                        "bytesScanned": t.metrics.map(|m| m.bytes_scanned),
                    })
                })
                .collect();
            json!({
                "stageId": stage.stage,
                "feeds": stage.parent,
                "tasks": task_rows,
                "totalSplits": stage.total_splits,
                "completedSplits": if q.state == QueryState::Finished {
                    stage.total_splits
                } else {
                    stage.completed_splits
                },
            })
        })
        .collect();
    let trace_link = q
        .trace_id
        .as_deref()
        .zip(trace_url)
        .map(|(id, url)| url.replace("{trace_id}", id));
    let mut page = summary(&q, &progress, None);
    let details = json!({
        "catalog": q.start.catalog,
        "schema": q.start.schema,
        "started": q.started.map(|t| t.to_rfc3339()),
        "ended": q.ended.map(|t| t.to_rfc3339()),
        "queuedMs": q.queued_ms,
        "planningMs": q.planning_ms,
        "executionMs": q.execution_ms,
        "bytesScanned": q.bytes_scanned,
        "peakMemoryBytes": q.peak_memory_bytes,
        "totalSplits": progress.total_splits(),
        "errorMessage": q.error_message,
        "traceId": q.trace_id,
        "traceUrl": trace_link,
        "stages": stages,
        "mayKill": !q.state.is_final() && viewer.sees(record),
    });
    if let Value::Object(details) = details {
        page.extend(details);
    }
    Value::Object(page)
}
