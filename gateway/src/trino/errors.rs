//! The one mapping of SQE's errors to Trino's `QueryError` JSON (`io.trino.spi.StandardErrorCode`
//! codes and names, so clients and BI tools recognise them).

use serde_json::{Value, json};

use sqe_engine::error::{GatewayError, error_code};

/// Line and column (1-based) an error message points at, as DataFusion's parser words it
/// ("... at Line: 1, Column: 8").
fn error_location(message: &str) -> Option<(u64, u64)> {
    let at = message.rfind("Line: ")?;
    let rest = &message[at + "Line: ".len()..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let (line, column) = (line.trim().parse().ok()?, column.parse().ok()?);
    (line >= 1 && column >= 1).then_some((line, column))
}

/// `QueryError` JSON for `error`.
pub fn trino_error(error: &GatewayError) -> Value {
    let code = error_code(error);
    let message = match error {
        // The query was abandoned when the reaper cancelled it; a user cancel says so too.
        GatewayError::Cancelled => "Query was canceled".to_string(),
        other => other.to_string(),
    };
    let location = error_location(&message)
        .map(|(line, column)| json!({"lineNumber": line, "columnNumber": column}));
    let mut failure = json!({
        "type": format!("sqe.{}", code.name),
        "message": message,
        "suppressed": [],
        "stack": [],
    });
    let mut body = json!({
        "message": message,
        "errorCode": code.code,
        "errorName": code.name,
        "errorType": code.kind.as_str(),
    });
    if let (Some(location), Some(failure), Some(body)) =
        (location, failure.as_object_mut(), body.as_object_mut())
    {
        failure.insert("errorLocation".into(), location.clone());
        body.insert("errorLocation".into(), location);
    }
    if let Some(body) = body.as_object_mut() {
        body.insert("failureInfo".into(), failure);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_trinos_standard_codes() {
        let syntax = trino_error(&GatewayError::Syntax(
            "sql parser error: Expected: an SQL statement, found: SELEC at Line: 1, Column: 1"
                .into(),
        ));
        assert_eq!(syntax["errorName"], "SYNTAX_ERROR");
        assert_eq!(syntax["errorCode"], 1);
        assert_eq!(syntax["errorType"], "USER_ERROR");
        assert_eq!(
            syntax["errorLocation"],
            json!({"lineNumber": 1, "columnNumber": 1})
        );
        assert_eq!(syntax["failureInfo"]["stack"], json!([]));

        let cases = [
            (
                GatewayError::NotFound("table 'iceberg.tpch.x' not found".into()),
                "TABLE_NOT_FOUND",
            ),
            (
                GatewayError::NotFound("Schema error: No field named y".into()),
                "COLUMN_NOT_FOUND",
            ),
            (
                GatewayError::NotFound("namespace s does not exist".into()),
                "SCHEMA_NOT_FOUND",
            ),
            (
                GatewayError::AlreadyExists("table s.t already exists".into()),
                "TABLE_ALREADY_EXISTS",
            ),
            (GatewayError::Cancelled, "USER_CANCELED"),
            (
                GatewayError::TimeLimit("query exceeded".into()),
                "EXCEEDED_TIME_LIMIT",
            ),
            (
                GatewayError::ResourcesExhausted("pool".into()),
                "EXCEEDED_GLOBAL_MEMORY_LIMIT",
            ),
            (
                GatewayError::Internal("Arrow error: Divide by zero error".into()),
                "DIVISION_BY_ZERO",
            ),
            (
                GatewayError::Internal("worker crashed".into()),
                "GENERIC_INTERNAL_ERROR",
            ),
            (GatewayError::NotSupported("x".into()), "NOT_SUPPORTED"),
            (
                GatewayError::PermissionDenied("another user's query".into()),
                "PERMISSION_DENIED",
            ),
        ];
        for (error, name) in cases {
            assert_eq!(trino_error(&error)["errorName"], name, "{error}");
        }
        let internal = trino_error(&GatewayError::Internal("boom".into()));
        assert_eq!(internal["errorType"], "INTERNAL_ERROR");
        assert!(internal.get("errorLocation").is_none());
    }
}
