//! `QueryResults` JSON, as Trino's coordinator writes it.

use serde::Serialize;
use serde_json::{Value, json};

use crate::trino::errors::trino_error;
use crate::trino::query::{Page, QueryState, TrinoQuery};

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
    let stats = json!({
        "state": state,
        "queued": page.state == QueryState::Queued,
        "scheduled": !matches!(page.state, QueryState::Queued | QueryState::Planning),
        "progressPercentage": if page.more { Value::Null } else { json!(100.0) },
        "runningPercentage": if page.more { json!(100.0) } else { json!(0.0) },
        "nodes": nodes,
        "totalSplits": 0,
        "queuedSplits": 0,
        "runningSplits": 0,
        "completedSplits": 0,
        "planningTimeMillis": 0,
        "analysisTimeMillis": 0,
        "cpuTimeMillis": 0,
        "wallTimeMillis": elapsed,
        "queuedTimeMillis": query.queued_for().as_millis() as u64,
        "elapsedTimeMillis": elapsed,
        "finishingTimeMillis": 0,
        "physicalInputTimeMillis": 0,
        "processedRows": page.rows,
        "processedBytes": 0,
        "physicalInputBytes": 0,
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
        out.extend_from_slice(data);
        out.push(b'}');
    }
    out
}
