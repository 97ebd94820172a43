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
        | ErrorCode::InvalidArguments => Code::InvalidArgument,
        ErrorCode::NotFound
        | ErrorCode::FunctionNotFound
        | ErrorCode::ProcedureNotFound
        | ErrorCode::CatalogNotFound
        | ErrorCode::SchemaNotFound
        | ErrorCode::TableNotFound
        | ErrorCode::ColumnNotFound => Code::NotFound,
        ErrorCode::AlreadyExists
        | ErrorCode::SchemaAlreadyExists
        | ErrorCode::TableAlreadyExists
        | ErrorCode::ColumnAlreadyExists => Code::AlreadyExists,
        ErrorCode::SchemaNotEmpty | ErrorCode::ConfigurationInvalid => Code::FailedPrecondition,
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

/// An error as a gRPC status: its code, and its message as the engine words it.
impl From<Error> for Status {
    fn from(error: Error) -> Self {
        Status::new(grpc_code(error.code()), error.to_string())
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
}
