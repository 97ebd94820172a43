//! A minimal Trino protocol client over raw HTTP, for tests that need the protocol's headers.

use std::net::SocketAddr;

use serde_json::Value;

/// What a statement answered: its rows (JSON arrays) and the trace id SQE sent back.
pub struct Answer {
    pub rows: Vec<Value>,
    pub trace_id: Option<String>,
}

/// Runs `sql` as user `test` (following `nextUri` to the end), with a `traceparent` if given;
/// a Trino error becomes `Err` with its message.
pub async fn statement(
    client: &reqwest::Client,
    addr: SocketAddr,
    sql: &str,
    traceparent: Option<&str>,
) -> Result<Answer, Box<dyn std::error::Error + Send + Sync>> {
    let (mut page, trace_id) = submit(client, addr, sql, traceparent).await?;
    let mut rows = Vec::new();
    loop {
        if let Some(error) = page.get("error") {
            return Err(format!("`{sql}` failed: {error}").into());
        }
        if let Some(data) = page.get("data").and_then(Value::as_array) {
            rows.extend(data.iter().cloned());
        }
        match next_page(client, &page).await? {
            Some(next) => page = next,
            None => return Ok(Answer { rows, trace_id }),
        }
    }
}

/// Posts `sql` as user `test`: the first page, and the trace id SQE sent back.
pub async fn submit(
    client: &reqwest::Client,
    addr: SocketAddr,
    sql: &str,
    traceparent: Option<&str>,
) -> Result<(Value, Option<String>), Box<dyn std::error::Error + Send + Sync>> {
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
    Ok((response.json().await?, trace_id))
}

/// The page after `page` (its `nextUri`), or `None` when `page` was the last.
pub async fn next_page(
    client: &reqwest::Client,
    page: &Value,
) -> Result<Option<Value>, Box<dyn std::error::Error + Send + Sync>> {
    let Some(next) = page.get("nextUri").and_then(Value::as_str) else {
        return Ok(None);
    };
    let page = client
        .get(next)
        .header("X-Trino-User", "test")
        .send()
        .await?
        .json()
        .await?;
    Ok(Some(page))
}
