//! The one mapping of SQE's error codes to gRPC status codes: what the Flight SQL endpoint and
//! the control plane answer. It lives with the codes (not in the gateway) so that `?` turns an
//! engine error into a status wherever a gRPC handler meets one.

use super::{Error, ErrorCode};
use tonic::{Code, Status};

/// The gRPC code of `code`.
pub fn grpc_code(code: ErrorCode) -> Code {
    match code {
        ErrorCode::GenericUserError
        | ErrorCode::SyntaxError
        | ErrorCode::InvalidFunctionArgument
        | ErrorCode::DivisionByZero
        | ErrorCode::InvalidCastArgument
        | ErrorCode::InvalidSessionProperty
        | ErrorCode::InvalidTableProperty
        | ErrorCode::NumericValueOutOfRange
        | ErrorCode::UnknownTransaction
        | ErrorCode::NotInTransaction
        | ErrorCode::IncompatibleClient
        | ErrorCode::DuplicateColumnName
        | ErrorCode::TypeMismatch
        | ErrorCode::InvalidLiteral
        | ErrorCode::AmbiguousName
        | ErrorCode::InvalidParameterUsage
        | ErrorCode::InvalidArguments
        | ErrorCode::InvalidProcedureArgument
        | ErrorCode::MergeTargetRowMultipleMatches
        | ErrorCode::SubqueryMultipleRows
        | ErrorCode::InvalidPath
        | ErrorCode::JsonInputConversionError
        | ErrorCode::JsonOutputConversionError
        | ErrorCode::PathEvaluationError
        | ErrorCode::JsonValueResultError
        | ErrorCode::ExceededFunctionMemoryLimit
        | ErrorCode::DuplicateColumnOrPathName
        | ErrorCode::MissingPathName
        | ErrorCode::InvalidPlan
        | ErrorCode::InvalidView
        | ErrorCode::ViewIsRecursive
        | ErrorCode::ExpressionNotScalar => Code::InvalidArgument,
        ErrorCode::NotFound
        | ErrorCode::FunctionNotFound
        | ErrorCode::ProcedureNotFound
        | ErrorCode::CatalogNotFound
        | ErrorCode::SchemaNotFound
        | ErrorCode::TableNotFound
        | ErrorCode::ColumnNotFound
        | ErrorCode::RoleNotFound => Code::NotFound,
        ErrorCode::AlreadyExists
        | ErrorCode::SchemaAlreadyExists
        | ErrorCode::TableAlreadyExists
        | ErrorCode::ColumnAlreadyExists => Code::AlreadyExists,
        ErrorCode::SchemaNotEmpty | ErrorCode::ConfigurationInvalid => Code::FailedPrecondition,
        ErrorCode::IcebergCommitError => Code::Aborted,
        ErrorCode::NotSupported => Code::Unimplemented,
        ErrorCode::UserCanceled | ErrorCode::AdministrativelyKilled => Code::Cancelled,
        ErrorCode::PermissionDenied => Code::PermissionDenied,
        ErrorCode::Unauthenticated => Code::Unauthenticated,
        ErrorCode::ExceededGlobalMemoryLimit
        | ErrorCode::GenericInsufficientResources
        | ErrorCode::QueryQueueFull => Code::ResourceExhausted,
        ErrorCode::ExceededTimeLimit => Code::DeadlineExceeded,
        ErrorCode::CatalogUnavailable | ErrorCode::RemoteHostGone => Code::Unavailable,
        ErrorCode::GenericInternalError => Code::Internal,
    }
}

/// The status metadata key holding the error's name (`TABLE_NOT_FOUND`): the gRPC code is
/// coarser than the kinds clients tell apart.
pub const ERROR_NAME_KEY: &str = "sqe-error-name";
/// The status metadata key holding where in the statement the error is, as `line:column`.
pub const ERROR_LOCATION_KEY: &str = "sqe-error-location";

/// An error as a gRPC status: its code, its message as the engine words it, and its name and
/// location as metadata.
impl From<Error> for Status {
    fn from(error: Error) -> Self {
        let mut status = Status::new(grpc_code(error.code()), error.to_string());
        let metadata = status.metadata_mut();
        metadata.insert(
            ERROR_NAME_KEY,
            tonic::metadata::MetadataValue::from_static(error.code().name()),
        );
        // `line:column` is digits and a colon, always a valid value.
        if let Some(at) = error.location()
            && let Ok(value) = tonic::metadata::MetadataValue::try_from(at.to_string())
        {
            metadata.insert(ERROR_LOCATION_KEY, value);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::super::ObjectKind;

    use super::*;

    #[test]
    fn codes_become_grpc_codes() {
        let cases = [
            (Error::not_found(ObjectKind::Table, "t"), Code::NotFound),
            (Error::not_found(ObjectKind::Schema, "s"), Code::NotFound),
            (Error::not_found(ObjectKind::Column, "c"), Code::NotFound),
            (
                Error::already_exists(ObjectKind::Table, "t"),
                Code::AlreadyExists,
            ),
            (
                Error::Syntax {
                    message: "x".into(),
                    location: None,
                },
                Code::InvalidArgument,
            ),
            (Error::Cancelled, Code::Cancelled),
            (
                Error::TimeLimit {
                    limit: std::time::Duration::from_secs(1),
                },
                Code::DeadlineExceeded,
            ),
            (
                Error::ResourcesExhausted("pool".into()),
                Code::ResourceExhausted,
            ),
            (Error::NotSupported("x".into()), Code::Unimplemented),
            (Error::Catalog("down".into()), Code::Unavailable),
            (Error::WorkerUnreachable("w1".into()), Code::Unavailable),
            (Error::Internal("bug".into()), Code::Internal),
        ];
        for (error, code) in cases {
            assert_eq!(Status::from(error).code(), code);
        }
    }

    #[test]
    fn a_status_names_its_error_and_where_it_is() {
        let status = Status::from(Error::Syntax {
            message: "x".into(),
            location: Some(super::super::Location { line: 2, column: 7 }),
        });
        let metadata = status.metadata();
        let value = |key| metadata.get(key).and_then(|v| v.to_str().ok());
        assert_eq!(value(ERROR_NAME_KEY), Some("SYNTAX_ERROR"));
        assert_eq!(value(ERROR_LOCATION_KEY), Some("2:7"));
        assert_eq!(
            value(ERROR_LOCATION_KEY).and_then(|v| v.parse().ok()),
            Some(super::super::Location { line: 2, column: 7 })
        );
        let missing = Status::from(Error::not_found(ObjectKind::Table, "t"));
        assert_eq!(
            missing
                .metadata()
                .get(ERROR_NAME_KEY)
                .and_then(|v| v.to_str().ok()),
            Some("TABLE_NOT_FOUND")
        );
        assert!(missing.metadata().get(ERROR_LOCATION_KEY).is_none());
    }
}
