//! Trino's SQL as Trino's documentation answers it: each case in `cases/*.txt` is a statement
//! with the type and value (as the Trino protocol writes it) or the error Trino gives, run
//! through the Trino routes over a stand-in `Queries`. Every case that differs is reported.
//!
//! A case is a statement on one line, then a line `=> <type>: <JSON value>` (the first
//! column of the first row) or `=> error <ERROR_NAME>`, or `=> error <ERROR_NAME>: <text>`
//! where the message must say `<text>`. `#` starts a comment line.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use http::{Method, Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use crate::client_auth::ClientAuth;
use crate::trino::{TrinoEndpoint, trino_router};
use sqe_engine::engine::EngineSettings;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Debug)]
enum Expected {
    Value {
        trino_type: String,
        value: Value,
    },
    /// The error's name, and text its message must contain.
    Error(String, Option<String>),
}

#[derive(Debug)]
struct Case {
    file: &'static str,
    line: usize,
    sql: String,
    expected: Expected,
}

const FILES: &[(&str, &str)] = &[
    ("literals.txt", include_str!("cases/literals.txt")),
    ("semantics.txt", include_str!("cases/semantics.txt")),
    ("functions.txt", include_str!("cases/functions.txt")),
    ("errors.txt", include_str!("cases/errors.txt")),
];

fn cases() -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for (file, text) in FILES {
        let mut sql: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match (line.strip_prefix("=>"), sql.take()) {
                (None, None) => sql = Some((i + 1, line.to_string())),
                (None, Some((at, _))) => {
                    return Err(format!("{file}:{at}: a statement without its expectation"));
                }
                (Some(_), None) => return Err(format!("{file}:{}: an expectation alone", i + 1)),
                (Some(expected), Some((at, statement))) => {
                    let expected = expected.trim();
                    let expected = match expected.strip_prefix("error ") {
                        Some(error) => match error.split_once(": ") {
                            Some((name, message)) => {
                                Expected::Error(name.trim().to_string(), Some(message.to_string()))
                            }
                            None => Expected::Error(error.trim().to_string(), None),
                        },
                        None => {
                            let (trino_type, value) =
                                expected.split_once(": ").ok_or_else(|| {
                                    format!("{file}:{}: `type: value` expected", i + 1)
                                })?;
                            let value = serde_json::from_str(value)
                                .map_err(|e| format!("{file}:{}: {e}", i + 1))?;
                            Expected::Value {
                                trino_type: trino_type.to_string(),
                                value,
                            }
                        }
                    };
                    cases.push(Case {
                        file,
                        line: at,
                        sql: statement,
                        expected,
                    });
                }
            }
        }
        if let Some((at, _)) = sql {
            return Err(format!("{file}:{at}: a statement without its expectation"));
        }
    }
    Ok(cases)
}

/// The last page's body and the first row's first value (with its column type) of `sql`.
async fn answer(router: &Router, sql: &str) -> Result<(Value, Option<(String, Value)>), String> {
    let mut uri = "/v1/statement".to_string();
    let mut method = Method::POST;
    let mut body = sql.to_string();
    let mut first: Option<(String, Value)> = None;
    let mut column_type: Option<String> = None;
    loop {
        let request = Request::builder()
            .method(method.clone())
            .uri(&uri)
            .header("host", "sqe.test")
            .header("x-trino-user", "test")
            .body(Body::from(std::mem::take(&mut body)))
            .map_err(|e| e.to_string())?;
        let response = router
            .clone()
            .oneshot(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .map_err(|e| e.to_string())?;
        if status != StatusCode::OK {
            return Err(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        let page: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        if column_type.is_none() {
            column_type = page["columns"][0]["type"].as_str().map(str::to_string);
        }
        if first.is_none()
            && let (Some(t), Some(v)) = (&column_type, page["data"][0].get(0))
        {
            first = Some((t.clone(), v.clone()));
        }
        match page["nextUri"].as_str() {
            Some(next) => {
                uri = next
                    .strip_prefix("http://sqe.test")
                    .unwrap_or(next)
                    .to_string();
                method = Method::GET;
            }
            None => return Ok((page, first)),
        }
    }
}

/// What Rust's debug formatting and DataFusion's internal errors leave in a message.
const DEBUG_MARKERS: &[&str] = &[
    "Ident(",
    "Some(",
    "TableReference",
    "DataType:",
    "Internal error",
    "bug in DataFusion",
    "Arrow error",
    "Execution error",
    "Error during planning",
    "{ ",
    // Arrow's type names, where Trino's belong.
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Float32",
    "Float64",
    "Decimal128",
    "Utf8",
    "Date32",
];

fn check(case: &Case, page: &Value, first: Option<&(String, Value)>) -> Option<String> {
    let error = page["error"]["errorName"].as_str();
    let message = page["error"]["message"].as_str().unwrap_or_default();
    if let Some(marker) = DEBUG_MARKERS.iter().find(|m| message.contains(**m)) {
        return Some(format!("the message shows `{marker}`: {message}"));
    }
    match (&case.expected, error) {
        (Expected::Error(name, expected), Some(got)) if got == name => match expected {
            Some(expected) if !message.contains(expected.as_str()) => Some(format!(
                "expected the message to say `{expected}`: {message}"
            )),
            _ => None,
        },
        (Expected::Error(name, _), Some(got)) => Some(format!(
            "expected error {name}, got {got}: {}",
            page["error"]["message"]
        )),
        (Expected::Error(name, _), None) => Some(format!("expected error {name}, got {first:?}")),
        (Expected::Value { .. }, Some(got)) => {
            Some(format!("error {got}: {}", page["error"]["message"]))
        }
        (Expected::Value { trino_type, value }, None) => match first {
            Some((t, v)) if t == trino_type && v == value => None,
            Some((t, v)) => Some(format!("expected {trino_type}: {value}, got {t}: {v}")),
            None => Some("no rows".into()),
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trino_sql_answers_as_trino_documents() -> TestResult {
    let cases = cases()?;
    let warehouse = tempfile::tempdir()?;
    let queries =
        sqe_engine::stand_in::queries_in(warehouse.path(), EngineSettings::default()).await?;
    let router = trino_router(TrinoEndpoint::new(
        queries,
        "test".into(),
        Duration::from_secs(60),
        ClientAuth::disabled()?,
        false,
        Some(crate::trino::spooling::SegmentStore::new(
            Duration::from_secs(60),
        )),
    ));
    let mut differences = Vec::new();
    for case in &cases {
        let verdict = match answer(&router, &case.sql).await {
            Ok((page, first)) => check(case, &page, first.as_ref()),
            Err(e) => Some(e),
        };
        if let Some(difference) = verdict {
            differences.push(format!(
                "{}:{}: {}\n    {difference}",
                case.file, case.line, case.sql
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} cases differ from Trino:\n{}",
        differences.len(),
        cases.len(),
        differences.join("\n")
    );
    Ok(())
}
