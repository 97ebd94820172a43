//! The one mapping of SQE's error codes to Trino's `QueryError` JSON: the numbers and types of
//! `io.trino.spi.StandardErrorCode` (and of Trino's Iceberg connector for catalog failures), so
//! clients and BI tools recognise them.

use serde_json::{Value, json};
use sqe_engine::error::{Error, ErrorCode};

/// Trino's `ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TrinoErrorType {
    User,
    Internal,
    InsufficientResources,
    External,
}

impl TrinoErrorType {
    fn as_str(self) -> &'static str {
        match self {
            TrinoErrorType::User => "USER_ERROR",
            TrinoErrorType::Internal => "INTERNAL_ERROR",
            TrinoErrorType::InsufficientResources => "INSUFFICIENT_RESOURCES",
            TrinoErrorType::External => "EXTERNAL",
        }
    }
}

/// A Trino error code: its number, name and type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TrinoErrorCode {
    pub code: i32,
    pub name: &'static str,
    kind: TrinoErrorType,
}

const USER: TrinoErrorType = TrinoErrorType::User;
const INTERNAL: TrinoErrorType = TrinoErrorType::Internal;
const RESOURCES: TrinoErrorType = TrinoErrorType::InsufficientResources;
/// Trino's Iceberg connector numbers its codes from here.
const ICEBERG_CODES: i32 = 0x0504_0000;

/// The Trino code of `code`.
pub(crate) fn trino_code(code: ErrorCode) -> TrinoErrorCode {
    let (number, kind) = match code {
        ErrorCode::GenericUserError => (0, USER),
        ErrorCode::SyntaxError => (1, USER),
        ErrorCode::UserCanceled => (3, USER),
        ErrorCode::PermissionDenied | ErrorCode::Unauthenticated => (4, USER),
        ErrorCode::NotFound => (5, USER),
        ErrorCode::FunctionNotFound => (6, USER),
        ErrorCode::InvalidFunctionArgument => (7, USER),
        ErrorCode::DivisionByZero => (8, USER),
        ErrorCode::InvalidCastArgument => (9, USER),
        ErrorCode::InvalidView => (11, USER),
        ErrorCode::AlreadyExists => (12, USER),
        ErrorCode::NotSupported => (13, USER),
        ErrorCode::InvalidSessionProperty => (14, USER),
        ErrorCode::InvalidTableProperty => (18, USER),
        ErrorCode::NumericValueOutOfRange => (19, USER),
        ErrorCode::UnknownTransaction => (20, USER),
        ErrorCode::NotInTransaction => (21, USER),
        ErrorCode::IncompatibleClient => (27, USER),
        ErrorCode::ProcedureNotFound => (29, USER),
        ErrorCode::SchemaNotEmpty => (34, USER),
        ErrorCode::AdministrativelyKilled => (38, USER),
        ErrorCode::CatalogNotFound => (44, USER),
        ErrorCode::SchemaNotFound => (45, USER),
        ErrorCode::TableNotFound => (46, USER),
        ErrorCode::ColumnNotFound => (47, USER),
        ErrorCode::RoleNotFound => (48, USER),
        ErrorCode::SchemaAlreadyExists => (49, USER),
        ErrorCode::TableAlreadyExists => (50, USER),
        ErrorCode::ColumnAlreadyExists => (51, USER),
        ErrorCode::DuplicateColumnName => (54, USER),
        ErrorCode::TypeMismatch => (58, USER),
        ErrorCode::InvalidLiteral => (59, USER),
        ErrorCode::AmbiguousName => (62, USER),
        ErrorCode::InvalidParameterUsage => (80, USER),
        ErrorCode::ViewIsRecursive => (82, USER),
        ErrorCode::ExpressionNotScalar => (74, USER),
        ErrorCode::InvalidArguments => (76, USER),
        ErrorCode::InvalidProcedureArgument => (30, USER),
        ErrorCode::MergeTargetRowMultipleMatches => (119, USER),
        ErrorCode::SubqueryMultipleRows => (28, USER),
        ErrorCode::InvalidPath => (113, USER),
        ErrorCode::JsonInputConversionError => (114, USER),
        ErrorCode::JsonOutputConversionError => (115, USER),
        ErrorCode::PathEvaluationError => (116, USER),
        ErrorCode::JsonValueResultError => (118, USER),
        ErrorCode::ExceededFunctionMemoryLimit => (37, USER),
        ErrorCode::DuplicateColumnOrPathName => (127, USER),
        ErrorCode::MissingPathName => (128, USER),
        ErrorCode::InvalidPlan => (129, USER),
        ErrorCode::GenericInternalError => (65536, INTERNAL),
        ErrorCode::ConfigurationInvalid => (65559, INTERNAL),
        ErrorCode::RemoteHostGone => (65558, INTERNAL),
        ErrorCode::GenericInsufficientResources => (131072, RESOURCES),
        ErrorCode::ExceededGlobalMemoryLimit => (131073, RESOURCES),
        ErrorCode::QueryQueueFull => (131074, RESOURCES),
        ErrorCode::ExceededTimeLimit => (131075, RESOURCES),
        ErrorCode::IcebergCommitError => (ICEBERG_CODES + 12, TrinoErrorType::External),
        ErrorCode::CatalogUnavailable => (ICEBERG_CODES + 13, TrinoErrorType::External),
    };
    // A caller who did not authenticate is denied, in Trino's words.
    let name = match code {
        ErrorCode::Unauthenticated => ErrorCode::PermissionDenied.name(),
        other => other.name(),
    };
    TrinoErrorCode {
        code: number,
        name,
        kind,
    }
}

/// `QueryError` JSON for `error`.
pub(crate) fn trino_error(error: &Error) -> Value {
    let code = trino_code(error.code());
    let message = error.to_string();
    let location = error
        .location()
        .map(|at| json!({"lineNumber": at.line, "columnNumber": at.column}));
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
    use std::time::Duration;

    use sqe_engine::error::{Location, ObjectKind};

    use super::*;

    #[test]
    fn codes_follow_trinos_standard_codes() {
        let syntax = trino_error(&Error::Syntax {
            message: "Expected: an SQL statement, found: SELEC".into(),
            location: Some(Location { line: 1, column: 1 }),
        });
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
                Error::not_found(ObjectKind::Table, "iceberg.tpch.x"),
                "TABLE_NOT_FOUND",
                46,
            ),
            (
                Error::not_found(ObjectKind::Column, "y"),
                "COLUMN_NOT_FOUND",
                47,
            ),
            (
                Error::not_found(ObjectKind::Schema, "s"),
                "SCHEMA_NOT_FOUND",
                45,
            ),
            (
                Error::not_found(ObjectKind::Catalog, "c"),
                "CATALOG_NOT_FOUND",
                44,
            ),
            (
                Error::already_exists(ObjectKind::Table, "s.t"),
                "TABLE_ALREADY_EXISTS",
                50,
            ),
            (
                Error::already_exists(ObjectKind::Schema, "s"),
                "SCHEMA_ALREADY_EXISTS",
                49,
            ),
            (Error::Cancelled, "USER_CANCELED", 3),
            (
                Error::Killed { message: None },
                "ADMINISTRATIVELY_KILLED",
                38,
            ),
            (
                Error::TimeLimit {
                    limit: Duration::from_secs(1),
                },
                "EXCEEDED_TIME_LIMIT",
                131075,
            ),
            (
                Error::ResourcesExhausted("pool".into()),
                "EXCEEDED_GLOBAL_MEMORY_LIMIT",
                131073,
            ),
            (
                Error::invalid(ErrorCode::DivisionByZero, "Division by zero"),
                "DIVISION_BY_ZERO",
                8,
            ),
            (
                Error::Internal("worker crashed".into()),
                "GENERIC_INTERNAL_ERROR",
                65536,
            ),
            (Error::NotSupported("x".into()), "NOT_SUPPORTED", 13),
            (
                Error::PermissionDenied("another user's query".into()),
                "PERMISSION_DENIED",
                4,
            ),
            (
                Error::Unauthenticated("no token".into()),
                "PERMISSION_DENIED",
                4,
            ),
            (
                Error::Catalog("unreachable".into()),
                "ICEBERG_CATALOG_ERROR",
                0x0504_0000 + 13,
            ),
            // Trino's numbers (StandardErrorCode): 58 is TYPE_MISMATCH's.
            (
                Error::invalid(ErrorCode::InvalidProcedureArgument, "retention"),
                "INVALID_PROCEDURE_ARGUMENT",
                30,
            ),
            (
                Error::invalid(ErrorCode::ViewIsRecursive, "View is recursive"),
                "VIEW_IS_RECURSIVE",
                82,
            ),
            (
                Error::invalid(ErrorCode::ExpressionNotScalar, "WHERE clause cannot ..."),
                "EXPRESSION_NOT_SCALAR",
                74,
            ),
        ];
        for (error, name, number) in cases {
            let json = trino_error(&error);
            assert_eq!(json["errorName"], name, "{error}");
            assert_eq!(json["errorCode"], number, "{error}");
        }
        let internal = trino_error(&Error::Internal("boom".into()));
        assert_eq!(internal["errorType"], "INTERNAL_ERROR");
        assert!(internal.get("errorLocation").is_none());
        let catalog = trino_error(&Error::Catalog("down".into()));
        assert_eq!(catalog["errorType"], "EXTERNAL");
    }
}
