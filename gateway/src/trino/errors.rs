//! The one mapping of SQE's errors to Trino's `QueryError` JSON (`io.trino.spi.StandardErrorCode`
//! codes and names, so clients and BI tools recognise them).

use serde_json::{Value, json};

use crate::error::GatewayError;

/// Trino's `ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    User,
    Internal,
    InsufficientResources,
}

impl ErrorType {
    fn as_str(self) -> &'static str {
        match self {
            ErrorType::User => "USER_ERROR",
            ErrorType::Internal => "INTERNAL_ERROR",
            ErrorType::InsufficientResources => "INSUFFICIENT_RESOURCES",
        }
    }
}

/// A Trino standard error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCode {
    pub code: i32,
    pub name: &'static str,
    pub kind: ErrorType,
}

const fn user(code: i32, name: &'static str) -> ErrorCode {
    ErrorCode {
        code,
        name,
        kind: ErrorType::User,
    }
}

pub const GENERIC_USER_ERROR: ErrorCode = user(0, "GENERIC_USER_ERROR");
pub const SYNTAX_ERROR: ErrorCode = user(1, "SYNTAX_ERROR");
pub const USER_CANCELED: ErrorCode = user(3, "USER_CANCELED");
pub const PERMISSION_DENIED: ErrorCode = user(4, "PERMISSION_DENIED");
pub const NOT_FOUND: ErrorCode = user(5, "NOT_FOUND");
pub const FUNCTION_NOT_FOUND: ErrorCode = user(6, "FUNCTION_NOT_FOUND");
pub const DIVISION_BY_ZERO: ErrorCode = user(8, "DIVISION_BY_ZERO");
pub const INVALID_CAST_ARGUMENT: ErrorCode = user(9, "INVALID_CAST_ARGUMENT");
pub const ALREADY_EXISTS: ErrorCode = user(12, "ALREADY_EXISTS");
pub const NOT_SUPPORTED: ErrorCode = user(13, "NOT_SUPPORTED");
pub const INVALID_SESSION_PROPERTY: ErrorCode = user(14, "INVALID_SESSION_PROPERTY");
pub const UNKNOWN_TRANSACTION: ErrorCode = user(20, "UNKNOWN_TRANSACTION");
pub const NOT_IN_TRANSACTION: ErrorCode = user(21, "NOT_IN_TRANSACTION");
pub const INCOMPATIBLE_CLIENT: ErrorCode = user(27, "INCOMPATIBLE_CLIENT");
pub const INVALID_PARAMETER_USAGE: ErrorCode = user(80, "INVALID_PARAMETER_USAGE");
pub const CATALOG_NOT_FOUND: ErrorCode = user(44, "CATALOG_NOT_FOUND");
pub const SCHEMA_NOT_FOUND: ErrorCode = user(45, "SCHEMA_NOT_FOUND");
pub const TABLE_NOT_FOUND: ErrorCode = user(46, "TABLE_NOT_FOUND");
pub const COLUMN_NOT_FOUND: ErrorCode = user(47, "COLUMN_NOT_FOUND");
pub const SCHEMA_ALREADY_EXISTS: ErrorCode = user(49, "SCHEMA_ALREADY_EXISTS");
pub const TABLE_ALREADY_EXISTS: ErrorCode = user(50, "TABLE_ALREADY_EXISTS");
pub const TYPE_MISMATCH: ErrorCode = user(58, "TYPE_MISMATCH");
pub const AMBIGUOUS_NAME: ErrorCode = user(62, "AMBIGUOUS_NAME");
pub const GENERIC_INTERNAL_ERROR: ErrorCode = ErrorCode {
    code: 65536,
    name: "GENERIC_INTERNAL_ERROR",
    kind: ErrorType::Internal,
};
pub const EXCEEDED_GLOBAL_MEMORY_LIMIT: ErrorCode = ErrorCode {
    code: 131073,
    name: "EXCEEDED_GLOBAL_MEMORY_LIMIT",
    kind: ErrorType::InsufficientResources,
};
pub const EXCEEDED_TIME_LIMIT: ErrorCode = ErrorCode {
    code: 131075,
    name: "EXCEEDED_TIME_LIMIT",
    kind: ErrorType::InsufficientResources,
};

/// The Trino error code of an SQE error. Our variants say what kind of thing went wrong; the
/// message says which object (table, schema, column), which Trino's codes distinguish.
pub fn error_code(error: &GatewayError) -> ErrorCode {
    match error {
        GatewayError::Syntax(_) => SYNTAX_ERROR,
        GatewayError::NotFound(message) => not_found_code(message),
        GatewayError::AlreadyExists(message) => {
            let lower = message.to_ascii_lowercase();
            if lower.contains("table") {
                TABLE_ALREADY_EXISTS
            } else if lower.contains("schema") || lower.contains("namespace") {
                SCHEMA_ALREADY_EXISTS
            } else {
                ALREADY_EXISTS
            }
        }
        GatewayError::Analysis(message) => analysis_code(message),
        GatewayError::NotSupported(_) => NOT_SUPPORTED,
        GatewayError::ResourcesExhausted(_) => EXCEEDED_GLOBAL_MEMORY_LIMIT,
        GatewayError::Cancelled => USER_CANCELED,
        GatewayError::Unauthenticated(_) | GatewayError::PermissionDenied(_) => PERMISSION_DENIED,
        GatewayError::TimeLimit(_) => EXCEEDED_TIME_LIMIT,
        GatewayError::Internal(message) => {
            // Arithmetic and cast failures surface from Arrow kernels as plain errors.
            let lower = message.to_ascii_lowercase();
            if lower.contains("divide by zero") || lower.contains("division by zero") {
                DIVISION_BY_ZERO
            } else if lower.contains("cannot cast") || lower.contains("cast error") {
                INVALID_CAST_ARGUMENT
            } else {
                GENERIC_INTERNAL_ERROR
            }
        }
        GatewayError::Remote { code, message } => match code {
            tonic::Code::InvalidArgument => analysis_code(message),
            tonic::Code::NotFound => not_found_code(message),
            tonic::Code::Cancelled => USER_CANCELED,
            tonic::Code::DeadlineExceeded => EXCEEDED_TIME_LIMIT,
            tonic::Code::ResourceExhausted => EXCEEDED_GLOBAL_MEMORY_LIMIT,
            tonic::Code::Unimplemented => NOT_SUPPORTED,
            tonic::Code::PermissionDenied | tonic::Code::Unauthenticated => PERMISSION_DENIED,
            _ => GENERIC_INTERNAL_ERROR,
        },
        GatewayError::Config(_)
        | GatewayError::Catalog(_)
        | GatewayError::Connect(_)
        | GatewayError::Output(_) => GENERIC_INTERNAL_ERROR,
    }
}

fn not_found_code(message: &str) -> ErrorCode {
    let lower = message.to_ascii_lowercase();
    if lower.contains("no field named") || lower.contains("column") {
        COLUMN_NOT_FOUND
    } else if lower.contains("table") {
        TABLE_NOT_FOUND
    } else if lower.contains("schema") || lower.contains("namespace") {
        SCHEMA_NOT_FOUND
    } else if lower.contains("catalog") {
        CATALOG_NOT_FOUND
    } else if lower.contains("function") {
        FUNCTION_NOT_FOUND
    } else {
        NOT_FOUND
    }
}

fn analysis_code(message: &str) -> ErrorCode {
    let lower = message.to_ascii_lowercase();
    if lower.contains("invalid function") || lower.contains("function not found") {
        FUNCTION_NOT_FOUND
    } else if lower.contains("ambiguous") {
        AMBIGUOUS_NAME
    } else if lower.contains("cannot coerce")
        || lower.contains("type mismatch")
        || lower.contains("no function matches")
    {
        TYPE_MISMATCH
    } else if lower.contains("session property") {
        INVALID_SESSION_PROPERTY
    } else if lower.contains("unknown transaction") {
        UNKNOWN_TRANSACTION
    } else if lower.contains("no transaction in progress") {
        NOT_IN_TRANSACTION
    } else if lower.contains("does not support transactions") {
        INCOMPATIBLE_CLIENT
    } else if lower.contains("number of parameters") {
        INVALID_PARAMETER_USAGE
    } else {
        GENERIC_USER_ERROR
    }
}

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
