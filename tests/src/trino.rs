//! A minimal Trino protocol client over raw HTTP, for tests that need the protocol's headers.

use std::net::SocketAddr;

use serde_json::Value;

/// What a statement answered: its rows (JSON arrays) and the trace id SQE sent back.
pub struct Answer {
    pub rows: Vec<Value>,
    pub trace_id: Option<String>,
}

/// Runs `sql` as user `telemetry` (following `nextUri` to the end), with a `traceparent` if
/// given; a Trino error becomes `Err` with its message.
pub async fn statement(
    client: &reqwest::Client,
    addr: SocketAddr,
    sql: &str,
    traceparent: Option<&str>,
) -> Result<Answer, Box<dyn std::error::Error + Send + Sync>> {
    let mut request = client
        .post(format!("http://{addr}/v1/statement"))
        .header("X-Trino-User", "test")
        .body(sql.to_string());
    if let Some(traceparent) = traceparent {
        request = request.header("traceparent", traceparent);
    }
    let response = request.send().await?;
    let trace_id = response
        .headers()
        .get("x-sqe-trace-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut page: Value = response.json().await?;
    let mut rows = Vec::new();
    loop {
        if let Some(error) = page.get("error") {
            return Err(format!("`{sql}` failed: {error}").into());
        }
        if let Some(data) = page.get("data").and_then(Value::as_array) {
            rows.extend(data.iter().cloned());
        }
        let Some(next) = page.get("nextUri").and_then(Value::as_str) else {
            return Ok(Answer { rows, trace_id });
        };
        page = client
            .get(next)
            .header("X-Trino-User", "test")
            .send()
            .await?
            .json()
            .await?;
    }
}
