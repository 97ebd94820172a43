//! `system.runtime`: the cluster's nodes, its queries and their distributed tasks, live.

use std::sync::Arc;

use datafusion::catalog::TableProvider;

use super::rows::{Cell, Kind, NULL, TableSpec};
use super::{Filters, MetadataTable};
use crate::cluster::{WorkerPool, task_state};
use crate::history::{QueryHistory, QueryRecord, QueryState};

use Kind::{Bool as B, Double as D, Int as I, Text as T, Time as TS};

/// What `system.runtime` reads: the coordinator itself, its workers and its query history.
#[derive(Debug, Clone)]
pub struct RuntimeView {
    pub history: Arc<QueryHistory>,
    pub workers: Arc<WorkerPool>,
    pub coordinator: NodeIdentity,
}

/// How the coordinator names itself in `system.runtime.nodes`.
#[derive(Debug, Clone, Default)]
pub struct NodeIdentity {
    pub node_id: String,
    pub uri: Option<String>,
    pub version: String,
}

const NODES: TableSpec = TableSpec {
    name: "nodes",
    columns: &[
        ("node_id", T),
        ("http_uri", T),
        ("node_version", T),
        ("coordinator", B),
        ("state", T),
        ("last_heartbeat", TS),
        ("running_tasks", I),
    ],
};

const QUERIES: TableSpec = TableSpec {
    name: "queries",
    columns: &[
        ("query_id", T),
        ("state", T),
        ("user", T),
        ("source", T),
        ("query", T),
        ("catalog", T),
        ("schema", T),
        ("endpoint", T),
        ("created", TS),
        ("started", TS),
        ("end", TS),
        ("queued_time_ms", I),
        ("planning_time_ms", I),
        ("execution_time_ms", I),
        ("output_rows", I),
        ("bytes_scanned", I),
        ("peak_memory_bytes", I),
        ("distributed_tasks", I),
        ("total_splits", I),
        ("completed_splits", I),
        ("progress_percentage", D),
        ("attempts", I),
        ("result_cache", T),
        ("error_code", T),
        ("error_message", T),
        ("trace_id", T),
    ],
};

const TASKS: TableSpec = TableSpec {
    name: "tasks",
    columns: &[
        ("query_id", T),
        ("stage_id", I),
        ("task_id", I),
        ("node_id", T),
        ("worker_uri", T),
        ("state", T),
        ("total_splits", I),
        ("completed_splits", I),
        ("elapsed_ms", I),
        ("cpu_ms", I),
        ("input_rows", I),
        ("output_rows", I),
        ("bytes_scanned", I),
    ],
};

/// A worker URL as written in config, without the trailing `/` the URL type adds.
fn uri(url: &url::Url) -> String {
    url.as_str().trim_end_matches('/').to_string()
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The queries the scanning session may see: its user's own, or all for an administrator.
fn records(view: &RuntimeView, filters: &Filters) -> Vec<Arc<QueryRecord>> {
    let Some(viewer) = filters.viewer() else {
        return Vec::new();
    };
    let records = match filters.get("query_id") {
        Some(id) => view.history.get(id).into_iter().collect(),
        None => view.history.records(),
    };
    records.into_iter().filter(|r| viewer.sees(r)).collect()
}

fn node_rows(view: &RuntimeView) -> Vec<Vec<Cell>> {
    let coordinator = &view.coordinator;
    let mut rows = vec![vec![
        Cell::from(coordinator.node_id.clone()),
        Cell::from(coordinator.uri.clone()),
        Cell::from(coordinator.version.clone()),
        Cell::from(true),
        Cell::from("active"),
        NULL,
        Cell::from(0),
    ]];
    let running = view.history.running_tasks_per_worker();
    let missed = view.workers.missed_heartbeats();
    for worker in view.workers.statuses() {
        let state = worker.state(missed).name();
        let last_seen = worker.last_seen.map(|at| {
            chrono::Utc::now() - chrono::Duration::from_std(at.elapsed()).unwrap_or_default()
        });
        rows.push(vec![
            Cell::from(worker.node_id()),
            Cell::from(uri(&worker.url)),
            Cell::from(worker.version.clone()),
            Cell::from(false),
            Cell::from(state),
            Cell::from(last_seen),
            Cell::from(running.get(&worker.url).copied().unwrap_or(0) as i64),
        ]);
    }
    rows
}

fn query_rows(view: &RuntimeView, filters: &Filters) -> Vec<Vec<Cell>> {
    records(view, filters)
        .iter()
        .map(|record| {
            let q = record.snapshot();
            let tasks = record.tasks().map(|t| t.task_count() as i64);
            let progress = record.tasks().map(|t| t.progress()).unwrap_or_default();
            let finished = q.state == QueryState::Finished;
            let total = as_i64(progress.total_splits());
            let completed = if finished {
                total
            } else {
                as_i64(progress.completed_splits())
            };
            let percentage = progress.percentage_for(q.state);
            vec![
                Cell::from(q.id),
                Cell::from(q.state.name()),
                Cell::from(q.start.user),
                Cell::from(q.start.source),
                Cell::from(q.start.sql),
                Cell::from(q.start.catalog),
                Cell::from(q.start.schema),
                Cell::from(q.start.endpoint),
                Cell::from(Some(q.created)),
                Cell::from(q.started),
                Cell::from(q.ended),
                Cell::from(q.queued_ms),
                Cell::from(q.planning_ms),
                Cell::from(q.execution_ms),
                Cell::from(as_i64(q.output_rows)),
                Cell::from(q.bytes_scanned.map(as_i64)),
                Cell::from(q.peak_memory_bytes.map(as_i64)),
                Cell::from(tasks.unwrap_or(0)),
                Cell::from(total),
                Cell::from(completed),
                Cell::from(percentage),
                Cell::from(record.tasks().map(|t| i64::from(t.attempts()))),
                Cell::from(q.cache.map(|c| c.name().to_string())),
                Cell::from(q.error_code.map(str::to_string)),
                Cell::from(q.error_message),
                Cell::from(q.trace_id),
            ]
        })
        .collect()
}

fn task_rows(view: &RuntimeView, filters: &Filters) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for record in records(view, filters) {
        let Some(ledger) = record.tasks() else {
            continue;
        };
        let q = record.snapshot();
        let progress = ledger.progress();
        for task in ledger.tasks() {
            let metrics = task.metrics;
            let (state, splits) = task_state(q.state, progress.task(task.stage, task.task));
            let total = splits.map(|(total, _)| as_i64(total));
            let completed = splits.map(|(_, completed)| as_i64(completed));
            rows.push(vec![
                Cell::from(q.id.clone()),
                Cell::from(task.stage as i64),
                Cell::from(task.task as i64),
                Cell::from(view.workers.node_id_of(&task.worker)),
                Cell::from(uri(&task.worker)),
                Cell::from(state),
                Cell::from(total),
                Cell::from(completed),
                Cell::from(q.execution_ms),
                Cell::from(metrics.map(|m| as_i64(m.cpu_ms))),
                Cell::from(metrics.map(|m| as_i64(m.input_rows))),
                Cell::from(metrics.map(|m| as_i64(m.output_rows))),
                Cell::from(metrics.map(|m| as_i64(m.bytes_scanned))),
            ]);
        }
    }
    rows
}

/// The tables of `system.runtime`.
pub(super) fn tables(view: RuntimeView) -> Vec<(&'static str, Arc<dyn TableProvider>)> {
    let nodes = {
        let view = view.clone();
        MetadataTable::provider(&NODES, move |_| {
            let rows = node_rows(&view);
            Box::pin(async move { Ok(rows) })
        })
    };
    let queries = {
        let view = view.clone();
        MetadataTable::provider(&QUERIES, move |filters| {
            let rows = query_rows(&view, &filters);
            Box::pin(async move { Ok(rows) })
        })
    };
    let tasks = MetadataTable::provider(&TASKS, move |filters| {
        let rows = task_rows(&view, &filters);
        Box::pin(async move { Ok(rows) })
    });
    vec![
        (NODES.name, nodes),
        (QUERIES.name, queries),
        (TASKS.name, tasks),
    ]
}
