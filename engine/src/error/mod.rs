//! Why a statement failed, classified by cause: kinds and names as data, and one
//! protocol-neutral [`ErrorCode`] that each front door maps once to its own shape (Trino's
//! error JSON, a gRPC status).
//!
//! Errors of the libraries below (DataFusion, Arrow, Iceberg, the workers' gRPC) are classified
//! by their type, never by their message: a message reworded by an upgrade changes what a user
//! reads, not the code a client acts on.

use std::time::Duration;

use datafusion::arrow::error::ArrowError;
use datafusion::common::SchemaError;
use datafusion::error::DataFusionError;
use sqe_iceberg::TableError;

mod grpc;

pub use grpc::{ERROR_LOCATION_KEY, ERROR_NAME_KEY, grpc_code};

/// What kind of named thing an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    Catalog,
    Schema,
    Table,
    Column,
    Function,
    /// A query, by its id (`kill_query`).
    Query,
    /// A prepared statement, by its name.
    PreparedStatement,
    SessionProperty,
    Procedure,
}

impl ObjectKind {
    /// How Trino names it in messages.
    pub fn noun(self) -> &'static str {
        match self {
            ObjectKind::Catalog => "Catalog",
            ObjectKind::Schema => "Schema",
            ObjectKind::Table => "Table",
            ObjectKind::Column => "Column",
            ObjectKind::Function => "Function",
            ObjectKind::Query => "Query",
            ObjectKind::PreparedStatement => "Prepared statement",
            ObjectKind::SessionProperty => "Session property",
            ObjectKind::Procedure => "Procedure",
        }
    }

    fn not_found_code(self) -> ErrorCode {
        match self {
            ObjectKind::Catalog => ErrorCode::CatalogNotFound,
            ObjectKind::Schema => ErrorCode::SchemaNotFound,
            ObjectKind::Table => ErrorCode::TableNotFound,
            ObjectKind::Column => ErrorCode::ColumnNotFound,
            ObjectKind::Function => ErrorCode::FunctionNotFound,
            ObjectKind::SessionProperty => ErrorCode::InvalidSessionProperty,
            ObjectKind::Procedure => ErrorCode::ProcedureNotFound,
            ObjectKind::Query | ObjectKind::PreparedStatement => ErrorCode::NotFound,
        }
    }

    fn already_exists_code(self) -> ErrorCode {
        match self {
            ObjectKind::Schema => ErrorCode::SchemaAlreadyExists,
            ObjectKind::Table => ErrorCode::TableAlreadyExists,
            ObjectKind::Column => ErrorCode::DuplicateColumnName,
            ObjectKind::Catalog
            | ObjectKind::Function
            | ObjectKind::Query
            | ObjectKind::PreparedStatement
            | ObjectKind::SessionProperty
            | ObjectKind::Procedure => ErrorCode::AlreadyExists,
        }
    }
}

/// Who is at fault, as Trino's `ErrorType` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The statement or the client.
    User,
    /// SQE itself.
    Internal,
    /// A limit: memory, time, queue.
    InsufficientResources,
    /// A service SQE depends on (the catalog, the object store).
    External,
}

/// The protocol-neutral code of an error. Its [name](ErrorCode::name) is Trino's name for the
/// same condition (Trino's semantics are SQE's); the Trino endpoint adds Trino's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    GenericUserError,
    SyntaxError,
    UserCanceled,
    PermissionDenied,
    /// The caller did not prove who it is.
    Unauthenticated,
    NotFound,
    FunctionNotFound,
    InvalidFunctionArgument,
    DivisionByZero,
    InvalidCastArgument,
    AlreadyExists,
    NotSupported,
    InvalidSessionProperty,
    InvalidTableProperty,
    NumericValueOutOfRange,
    UnknownTransaction,
    NotInTransaction,
    IncompatibleClient,
    ProcedureNotFound,
    SchemaNotEmpty,
    AdministrativelyKilled,
    CatalogNotFound,
    SchemaNotFound,
    TableNotFound,
    ColumnNotFound,
    RoleNotFound,
    SchemaAlreadyExists,
    TableAlreadyExists,
    ColumnAlreadyExists,
    DuplicateColumnName,
    TypeMismatch,
    /// A literal whose text is not a value of its type (`TIMESTAMP '2021-02-30'`).
    InvalidLiteral,
    AmbiguousName,
    InvalidParameterUsage,
    /// Arguments that name nothing that exists (a snapshot a table never had).
    InvalidArguments,
    /// A table procedure's argument is out of its range (Trino's `INVALID_PROCEDURE_ARGUMENT`).
    InvalidProcedureArgument,
    GenericInternalError,
    ConfigurationInvalid,
    ExceededGlobalMemoryLimit,
    ExceededTimeLimit,
    /// The Iceberg catalog failed or could not be reached.
    CatalogUnavailable,
    /// A MERGE whose target row matched more than one source row.
    MergeTargetRowMultipleMatches,
    /// A scalar subquery returned more than one row.
    SubqueryMultipleRows,
    /// A JSON path that does not read (SQL/JSON functions).
    InvalidPath,
    JsonInputConversionError,
    JsonOutputConversionError,
    PathEvaluationError,
    JsonValueResultError,
    /// A function's output past the size Trino allows it (`listagg`'s 1 MiB).
    ExceededFunctionMemoryLimit,
    /// A `json_table` naming two of its columns or paths alike.
    DuplicateColumnOrPathName,
    /// A `json_table` whose specific `PLAN` needs a path's name it was not given.
    MissingPathName,
    /// A `json_table`'s specific `PLAN` that does not match its paths.
    InvalidPlan,
    /// A view that cannot be read: its SQL no longer reads as a query.
    InvalidView,
    /// A view reads itself, directly or through others (Trino's `VIEW_IS_RECURSIVE`).
    ViewIsRecursive,
    /// An aggregate or window function where only a value per row can be (`WHERE`, `SET`).
    ExpressionNotScalar,
    /// A commit lost to another writer's (Trino's Iceberg connector's name).
    IcebergCommitError,
    /// A worker running part of the query could not be reached.
    RemoteHostGone,
    /// A cap on what one caller may hold or do (sessions, statements, logins) was reached.
    GenericInsufficientResources,
    /// Every slot is taken and the admission queue is full.
    QueryQueueFull,
}

impl ErrorCode {
    /// The name clients see (`errorName`, `system.runtime.queries.error_code`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::GenericUserError => "GENERIC_USER_ERROR",
            ErrorCode::SyntaxError => "SYNTAX_ERROR",
            ErrorCode::UserCanceled => "USER_CANCELED",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::FunctionNotFound => "FUNCTION_NOT_FOUND",
            ErrorCode::InvalidFunctionArgument => "INVALID_FUNCTION_ARGUMENT",
            ErrorCode::DivisionByZero => "DIVISION_BY_ZERO",
            ErrorCode::InvalidCastArgument => "INVALID_CAST_ARGUMENT",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::NotSupported => "NOT_SUPPORTED",
            ErrorCode::InvalidSessionProperty => "INVALID_SESSION_PROPERTY",
            ErrorCode::InvalidTableProperty => "INVALID_TABLE_PROPERTY",
            ErrorCode::NumericValueOutOfRange => "NUMERIC_VALUE_OUT_OF_RANGE",
            ErrorCode::UnknownTransaction => "UNKNOWN_TRANSACTION",
            ErrorCode::NotInTransaction => "NOT_IN_TRANSACTION",
            ErrorCode::IncompatibleClient => "INCOMPATIBLE_CLIENT",
            ErrorCode::ProcedureNotFound => "PROCEDURE_NOT_FOUND",
            ErrorCode::SchemaNotEmpty => "SCHEMA_NOT_EMPTY",
            ErrorCode::AdministrativelyKilled => "ADMINISTRATIVELY_KILLED",
            ErrorCode::CatalogNotFound => "CATALOG_NOT_FOUND",
            ErrorCode::SchemaNotFound => "SCHEMA_NOT_FOUND",
            ErrorCode::TableNotFound => "TABLE_NOT_FOUND",
            ErrorCode::ColumnNotFound => "COLUMN_NOT_FOUND",
            ErrorCode::RoleNotFound => "ROLE_NOT_FOUND",
            ErrorCode::SchemaAlreadyExists => "SCHEMA_ALREADY_EXISTS",
            ErrorCode::TableAlreadyExists => "TABLE_ALREADY_EXISTS",
            ErrorCode::ColumnAlreadyExists => "COLUMN_ALREADY_EXISTS",
            ErrorCode::DuplicateColumnName => "DUPLICATE_COLUMN_NAME",
            ErrorCode::TypeMismatch => "TYPE_MISMATCH",
            ErrorCode::InvalidLiteral => "INVALID_LITERAL",
            ErrorCode::AmbiguousName => "AMBIGUOUS_NAME",
            ErrorCode::InvalidParameterUsage => "INVALID_PARAMETER_USAGE",
            ErrorCode::InvalidArguments => "INVALID_ARGUMENTS",
            ErrorCode::InvalidProcedureArgument => "INVALID_PROCEDURE_ARGUMENT",
            ErrorCode::GenericInternalError => "GENERIC_INTERNAL_ERROR",
            ErrorCode::ConfigurationInvalid => "CONFIGURATION_INVALID",
            ErrorCode::ExceededGlobalMemoryLimit => "EXCEEDED_GLOBAL_MEMORY_LIMIT",
            ErrorCode::ExceededTimeLimit => "EXCEEDED_TIME_LIMIT",
            ErrorCode::CatalogUnavailable => "ICEBERG_CATALOG_ERROR",
            ErrorCode::IcebergCommitError => "ICEBERG_COMMIT_ERROR",
            ErrorCode::MergeTargetRowMultipleMatches => "MERGE_TARGET_ROW_MULTIPLE_MATCHES",
            ErrorCode::SubqueryMultipleRows => "SUBQUERY_MULTIPLE_ROWS",
            ErrorCode::InvalidPath => "INVALID_PATH",
            ErrorCode::ExceededFunctionMemoryLimit => "EXCEEDED_FUNCTION_MEMORY_LIMIT",
            ErrorCode::DuplicateColumnOrPathName => "DUPLICATE_COLUMN_OR_PATH_NAME",
            ErrorCode::MissingPathName => "MISSING_PATH_NAME",
            ErrorCode::InvalidPlan => "INVALID_PLAN",
            ErrorCode::JsonInputConversionError => "JSON_INPUT_CONVERSION_ERROR",
            ErrorCode::JsonOutputConversionError => "JSON_OUTPUT_CONVERSION_ERROR",
            ErrorCode::PathEvaluationError => "PATH_EVALUATION_ERROR",
            ErrorCode::JsonValueResultError => "JSON_VALUE_RESULT_ERROR",
            ErrorCode::InvalidView => "INVALID_VIEW",
            ErrorCode::ViewIsRecursive => "VIEW_IS_RECURSIVE",
            ErrorCode::ExpressionNotScalar => "EXPRESSION_NOT_SCALAR",
            ErrorCode::RemoteHostGone => "REMOTE_HOST_GONE",
            ErrorCode::GenericInsufficientResources => "GENERIC_INSUFFICIENT_RESOURCES",
            ErrorCode::QueryQueueFull => "QUERY_QUEUE_FULL",
        }
    }

    pub fn kind(self) -> ErrorKind {
        match self {
            ErrorCode::GenericInternalError
            | ErrorCode::ConfigurationInvalid
            | ErrorCode::RemoteHostGone => ErrorKind::Internal,
            ErrorCode::ExceededGlobalMemoryLimit
            | ErrorCode::ExceededTimeLimit
            | ErrorCode::GenericInsufficientResources
            | ErrorCode::QueryQueueFull => ErrorKind::InsufficientResources,
            ErrorCode::CatalogUnavailable | ErrorCode::IcebergCommitError => ErrorKind::External,
            ErrorCode::GenericUserError
            | ErrorCode::SyntaxError
            | ErrorCode::UserCanceled
            | ErrorCode::PermissionDenied
            | ErrorCode::Unauthenticated
            | ErrorCode::NotFound
            | ErrorCode::FunctionNotFound
            | ErrorCode::InvalidFunctionArgument
            | ErrorCode::DivisionByZero
            | ErrorCode::InvalidCastArgument
            | ErrorCode::AlreadyExists
            | ErrorCode::NotSupported
            | ErrorCode::InvalidSessionProperty
            | ErrorCode::InvalidTableProperty
            | ErrorCode::NumericValueOutOfRange
            | ErrorCode::UnknownTransaction
            | ErrorCode::NotInTransaction
            | ErrorCode::IncompatibleClient
            | ErrorCode::InvalidView
            | ErrorCode::ViewIsRecursive
            | ErrorCode::ExpressionNotScalar
            | ErrorCode::ProcedureNotFound
            | ErrorCode::SchemaNotEmpty
            | ErrorCode::AdministrativelyKilled
            | ErrorCode::CatalogNotFound
            | ErrorCode::SchemaNotFound
            | ErrorCode::TableNotFound
            | ErrorCode::ColumnNotFound
            | ErrorCode::RoleNotFound
            | ErrorCode::SchemaAlreadyExists
            | ErrorCode::TableAlreadyExists
            | ErrorCode::DuplicateColumnName
            | ErrorCode::ColumnAlreadyExists
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
            | ErrorCode::InvalidPlan => ErrorKind::User,
        }
    }
}

/// Where in the statement's text an error is (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub line: u64,
    pub column: u64,
}

/// `line:column`, as the gRPC status carries it.
impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

impl std::str::FromStr for Location {
    type Err = ();

    fn from_str(text: &str) -> std::result::Result<Self, ()> {
        let (line, column) = text.split_once(':').ok_or(())?;
        Ok(Location {
            line: line.parse().map_err(|_| ())?,
            column: column.parse().map_err(|_| ())?,
        })
    }
}

/// Why a statement failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The SQL text does not parse.
    #[error("syntax error: {message}")]
    Syntax {
        message: String,
        location: Option<Location>,
    },
    /// A named thing does not exist.
    #[error("{} '{name}' does not exist", .kind.noun())]
    NotFound { kind: ObjectKind, name: String },
    /// It exists already.
    #[error("{} '{name}' already exists", .kind.noun())]
    AlreadyExists { kind: ObjectKind, name: String },
    /// Valid SQL that means something wrong (a type, an argument, a property); `code` says what.
    #[error("{message}")]
    Invalid { code: ErrorCode, message: String },
    /// Valid SQL this engine does not do.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// Memory or another resource ran out.
    #[error("resources exhausted: {0}")]
    ResourcesExhausted(String),
    /// The caller reached a cap on what it may hold or do; it may try again later.
    #[error("{0}")]
    LimitReached(String),
    /// Every slot was taken and the queue was full: refused before anything ran.
    #[error(
        "Too many queued queries: all running slots are taken and {max_queued} queries wait \
         already (coordinator max_queued_queries); try again later"
    )]
    QueueFull { max_queued: usize },
    /// The query's own client cancelled it (or went away).
    #[error("Query was canceled")]
    Cancelled,
    /// `kill_query` ended it.
    #[error("{}", killed_message(.message.as_deref()))]
    Killed { message: Option<String> },
    /// It ran longer than it may.
    #[error("query exceeded the maximum run time of {limit:?} (query_max_run_time)")]
    TimeLimit { limit: Duration },
    /// The caller did not prove who it is.
    #[error("authentication failed: {0}")]
    Unauthenticated(String),
    /// Authenticated, but not allowed to do this.
    #[error("Access Denied: {0}")]
    PermissionDenied(String),
    /// The Iceberg catalog could not be reached or refused a request.
    #[error("catalog: {0}")]
    Catalog(String),
    /// A worker running part of the query could not be reached (it stopped, or its network did).
    #[error(
        "Could not communicate with a worker ({0}). It may have stopped or be overloaded; \
         retrying the query may succeed"
    )]
    WorkerUnreachable(String),
    /// The engine's own settings are wrong (found when it starts).
    #[error("{0}")]
    Settings(String),
    /// A bug, or a failure of the environment (storage, workers).
    #[error("internal error: {0}")]
    Internal(String),
}

fn killed_message(message: Option<&str>) -> String {
    match message {
        Some(m) => format!("Query killed. Message: {m}"),
        None => "Query killed. No message provided.".to_string(),
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A user error of `code` with `message`.
    pub fn invalid(code: ErrorCode, message: impl Into<String>) -> Self {
        Error::Invalid {
            code,
            message: message.into(),
        }
    }

    pub fn not_found(kind: ObjectKind, name: impl Into<String>) -> Self {
        Error::NotFound {
            kind,
            name: name.into(),
        }
    }

    pub fn already_exists(kind: ObjectKind, name: impl Into<String>) -> Self {
        Error::AlreadyExists {
            kind,
            name: name.into(),
        }
    }

    /// Its protocol-neutral code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Syntax { .. } => ErrorCode::SyntaxError,
            Error::NotFound { kind, .. } => kind.not_found_code(),
            Error::AlreadyExists { kind, .. } => kind.already_exists_code(),
            Error::Invalid { code, .. } => *code,
            Error::NotSupported(_) => ErrorCode::NotSupported,
            Error::ResourcesExhausted(_) => ErrorCode::ExceededGlobalMemoryLimit,
            Error::LimitReached(_) => ErrorCode::GenericInsufficientResources,
            Error::QueueFull { .. } => ErrorCode::QueryQueueFull,
            Error::Cancelled => ErrorCode::UserCanceled,
            Error::Killed { .. } => ErrorCode::AdministrativelyKilled,
            Error::TimeLimit { .. } => ErrorCode::ExceededTimeLimit,
            Error::Unauthenticated(_) => ErrorCode::Unauthenticated,
            Error::PermissionDenied(_) => ErrorCode::PermissionDenied,
            Error::Catalog(_) => ErrorCode::CatalogUnavailable,
            Error::WorkerUnreachable(_) => ErrorCode::RemoteHostGone,
            Error::Settings(_) => ErrorCode::ConfigurationInvalid,
            Error::Internal(_) => ErrorCode::GenericInternalError,
        }
    }

    /// Where in the statement it is, when known.
    pub fn location(&self) -> Option<Location> {
        match self {
            Error::Syntax { location, .. } => *location,
            _ => None,
        }
    }

    /// Whether it ended the query as cancelled (by its client, `kill_query` or the reaper)
    /// rather than failed.
    pub fn is_cancellation(&self) -> bool {
        matches!(self, Error::Cancelled | Error::Killed { .. })
    }
}

impl From<DataFusionError> for Error {
    fn from(err: DataFusionError) -> Self {
        classify_datafusion(err)
    }
}

impl From<iceberg::Error> for Error {
    fn from(err: iceberg::Error) -> Self {
        classify_iceberg(&err)
    }
}

impl From<ArrowError> for Error {
    fn from(err: ArrowError) -> Self {
        classify_arrow(err)
    }
}

impl From<TableError> for Error {
    fn from(err: TableError) -> Self {
        match err {
            TableError::Iceberg(e) => classify_iceberg(&e),
            TableError::Arrow(e) => classify_arrow(e),
            TableError::UnsupportedType {
                column,
                type_name,
                hint,
            } => Error::invalid(
                ErrorCode::NotSupported,
                format!(
                    "column '{column}' has type {type_name}, which Iceberg tables cannot store{hint}"
                ),
            ),
            TableError::NotSupported(m) => Error::NotSupported(m),
            other @ (TableError::Storage(_) | TableError::Schema(_) | TableError::Codec(_)) => {
                Error::Internal(other.to_string())
            }
        }
    }
}

fn classify_iceberg(err: &iceberg::Error) -> Error {
    use iceberg::ErrorKind as K;
    let message = err.to_string();
    match err.kind() {
        K::NamespaceNotFound => Error::invalid(ErrorCode::SchemaNotFound, message),
        K::TableNotFound => Error::invalid(ErrorCode::TableNotFound, message),
        K::NamespaceAlreadyExists => Error::invalid(ErrorCode::SchemaAlreadyExists, message),
        K::TableAlreadyExists => Error::invalid(ErrorCode::TableAlreadyExists, message),
        K::FeatureUnsupported => Error::NotSupported(message),
        // Another writer committed first: the statement changed nothing and can run again.
        K::CatalogCommitConflicts => Error::invalid(ErrorCode::IcebergCommitError, message),
        _ => Error::Internal(message),
    }
}

fn classify_arrow(err: ArrowError) -> Error {
    if let Some(user) = value_error(&err) {
        return user;
    }
    match err {
        ArrowError::ExternalError(e) => classify_boxed(e),
        other => Error::Internal(other.to_string()),
    }
}

/// Errors of a value (a division by zero, a failed cast, an overflow, a function's refusal of
/// its argument), as `sqe_functions` classifies them for `try` too.
fn value_error(err: &(dyn std::error::Error + 'static)) -> Option<Error> {
    use sqe_functions::ValueError;
    let (kind, message) = sqe_functions::value_error(err)?;
    let code = match kind {
        ValueError::DivisionByZero => ErrorCode::DivisionByZero,
        ValueError::InvalidCast => ErrorCode::InvalidCastArgument,
        ValueError::OutOfRange => ErrorCode::NumericValueOutOfRange,
        ValueError::InvalidArgument => ErrorCode::InvalidFunctionArgument,
    };
    Some(Error::invalid(code, message))
}

/// A value's error as the worker that raised it classified it, from the status its task
/// carries in the error's context (`sqe_worker::task_errors`): datafusion-distributed passes
/// an error of ours on only as text, so without it a function's refusal in a worker's task
/// would be an internal error here. Only the value errors are taken from it (what a worker
/// classifies by types this node no longer sees); anything else is classified here, by the
/// error the context wraps.
fn carried_value_error(context: &str) -> Option<Error> {
    let status = sqe_layers::status::status_from_context(context)?;
    let name = status.metadata().get(ERROR_NAME_KEY)?.to_str().ok()?;
    let code = [
        ErrorCode::DivisionByZero,
        ErrorCode::InvalidCastArgument,
        ErrorCode::NumericValueOutOfRange,
        ErrorCode::InvalidFunctionArgument,
        ErrorCode::SubqueryMultipleRows,
        ErrorCode::InvalidPath,
        ErrorCode::JsonInputConversionError,
        ErrorCode::JsonOutputConversionError,
        ErrorCode::PathEvaluationError,
        ErrorCode::JsonValueResultError,
        ErrorCode::ExceededFunctionMemoryLimit,
    ]
    .into_iter()
    .find(|code| code.name() == name)?;
    Some(Error::invalid(code, status.message()))
}

/// Errors that travel boxed inside DataFusion's or Arrow's: ours, the table layer's, a
/// worker's gRPC status.
fn classify_boxed(e: Box<dyn std::error::Error + Send + Sync>) -> Error {
    if let Some(known) = classify_by_reference(e.as_ref()) {
        return known;
    }
    let e = match e.downcast::<TableError>() {
        Ok(table) => return Error::from(*table),
        Err(e) => e,
    };
    let e = match e.downcast::<DataFusionError>() {
        Ok(df) => return classify_datafusion(*df),
        Err(e) => e,
    };
    let e = match e.downcast::<ArrowError>() {
        Ok(arrow) => return classify_arrow(*arrow),
        Err(e) => e,
    };
    let e = match e.downcast::<iceberg::Error>() {
        Ok(iceberg) => return classify_iceberg(&iceberg),
        Err(e) => e,
    };
    Error::Internal(e.to_string())
}

/// The errors that classify as well through a reference as owned: ours, a function's refusal,
/// Arrow's user errors, a node's status, DataFusion's refusals and exhausted memory.
fn classify_by_reference(e: &(dyn std::error::Error + 'static)) -> Option<Error> {
    if let Some(ours) = e.downcast_ref::<Error>() {
        return Some(ours.clone());
    }
    match e.downcast_ref::<DataFusionError>() {
        Some(DataFusionError::ResourcesExhausted(m)) => {
            return Some(Error::ResourcesExhausted(m.clone()));
        }
        Some(DataFusionError::NotImplemented(m)) => return Some(Error::NotSupported(m.clone())),
        _ => {}
    }
    if let Some(user) = value_error(e) {
        return Some(user);
    }
    if let Some(rows) = e.downcast_ref::<sqe_functions::SubqueryMultipleRows>() {
        return Some(Error::invalid(
            ErrorCode::SubqueryMultipleRows,
            rows.to_string(),
        ));
    }
    if let Some(limit) = e.downcast_ref::<sqe_functions::FunctionMemoryLimit>() {
        return Some(Error::invalid(
            ErrorCode::ExceededFunctionMemoryLimit,
            limit.to_string(),
        ));
    }
    if let Some(json) = e.downcast_ref::<sqe_functions::JsonError>() {
        use sqe_functions::JsonErrorKind;
        let code = match json.kind {
            JsonErrorKind::InvalidPath => ErrorCode::InvalidPath,
            JsonErrorKind::InputConversion => ErrorCode::JsonInputConversionError,
            JsonErrorKind::OutputConversion => ErrorCode::JsonOutputConversionError,
            JsonErrorKind::PathEvaluation => ErrorCode::PathEvaluationError,
            JsonErrorKind::ValueResult => ErrorCode::JsonValueResultError,
        };
        return Some(Error::invalid(code, json.message.clone()));
    }
    e.downcast_ref::<tonic::Status>().map(classify_status)
}

/// A gRPC status from another node, by its code.
fn classify_status(status: &tonic::Status) -> Error {
    match status.code() {
        tonic::Code::Cancelled => Error::Cancelled,
        tonic::Code::ResourceExhausted => Error::ResourcesExhausted(status.message().to_string()),
        tonic::Code::Unavailable => Error::WorkerUnreachable(status.message().to_string()),
        _ => Error::Internal(status.to_string()),
    }
}

fn classify_datafusion(err: DataFusionError) -> Error {
    match err {
        DataFusionError::SQL(e, _) => {
            use datafusion::sql::sqlparser::parser::ParserError;
            // The parser's own words, without its "sql parser error:" banner.
            let message = match e.as_ref() {
                ParserError::TokenizerError(m) | ParserError::ParserError(m) => m.clone(),
                ParserError::RecursionLimitExceeded => "the statement nests too deeply".into(),
            };
            Error::Syntax {
                location: parser_location(&message),
                message,
            }
        }
        DataFusionError::NotImplemented(m) => Error::NotSupported(m),
        DataFusionError::ResourcesExhausted(m) => Error::ResourcesExhausted(m),
        DataFusionError::SchemaError(e, _) => classify_schema(*e),
        DataFusionError::Plan(m) => Error::invalid(ErrorCode::GenericUserError, m),
        DataFusionError::ArrowError(e, _) => classify_arrow(*e),
        DataFusionError::Context(context, inner) => {
            carried_value_error(&context).unwrap_or_else(|| classify_datafusion(*inner))
        }
        DataFusionError::Diagnostic(_, inner) => classify_datafusion(*inner),
        DataFusionError::Shared(shared) => match std::sync::Arc::try_unwrap(shared) {
            Ok(inner) => classify_datafusion(inner),
            Err(shared) => classify_shared(&shared),
        },
        DataFusionError::Collection(mut errors) if !errors.is_empty() => {
            classify_datafusion(errors.swap_remove(0))
        }
        DataFusionError::External(e) => classify_boxed(e),
        other => Error::Internal(other.to_string()),
    }
}

/// An error other partitions hold too (a join's failed build side): what can be read through a
/// reference, found down its sources — ours, a function's refusal, Arrow's user errors, a
/// node's status.
fn classify_shared(shared: &DataFusionError) -> Error {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(shared);
    while let Some(e) = next {
        if let Some(known) = classify_by_reference(e) {
            return known;
        }
        next = e.source();
    }
    Error::Internal(shared.to_string())
}

fn classify_schema(err: SchemaError) -> Error {
    match err {
        SchemaError::FieldNotFound { field, .. } => {
            Error::not_found(ObjectKind::Column, field.name().to_string())
        }
        SchemaError::AmbiguousReference { ref field } => Error::invalid(
            ErrorCode::AmbiguousName,
            format!("Column '{}' is ambiguous", field.name()),
        ),
        SchemaError::DuplicateQualifiedField { .. }
        | SchemaError::DuplicateUnqualifiedField { .. } => {
            Error::invalid(ErrorCode::DuplicateColumnName, err.to_string())
        }
    }
}

/// The position sqlparser writes at the end of its messages (`... at Line: 1, Column: 8`).
/// Only the location is read from the text; the code is the error's type.
fn parser_location(message: &str) -> Option<Location> {
    let at = message.rfind("Line: ")?;
    let rest = &message[at + "Line: ".len()..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let (line, column) = (line.trim().parse().ok()?, column.parse().ok()?);
    (line >= 1 && column >= 1).then_some(Location { line, column })
}

#[cfg(test)]
mod tests {
    use datafusion::common::Column;

    use super::*;

    #[test]
    fn datafusion_errors_are_classified_by_their_type() {
        let parse = datafusion::sql::sqlparser::parser::ParserError::ParserError(
            "Expected: an SQL statement, found: SELEC at Line: 1, Column: 1".into(),
        );
        let syntax = Error::from(DataFusionError::SQL(Box::new(parse), None));
        assert_eq!(syntax.code(), ErrorCode::SyntaxError);
        assert_eq!(syntax.location(), Some(Location { line: 1, column: 1 }));
        assert_eq!(
            syntax.to_string(),
            "syntax error: Expected: an SQL statement, found: SELEC at Line: 1, Column: 1",
            "the parser's words, not its banner"
        );
        let context = Error::from(DataFusionError::Context(
            "while planning".into(),
            Box::new(DataFusionError::NotImplemented("x".into())),
        ));
        assert_eq!(context.code(), ErrorCode::NotSupported);
        // A worker's classification of a value error, carried in its task's error context
        // (the error itself came as text: internal, without it).
        let carried = |name: &'static str| {
            let mut status = tonic::Status::invalid_argument("Invalid base64: symbol 46");
            status.metadata_mut().insert(
                ERROR_NAME_KEY,
                tonic::metadata::MetadataValue::from_static(name),
            );
            Error::from(DataFusionError::Context(
                sqe_layers::status::status_in_context(&status),
                Box::new(DataFusionError::Execution("Invalid base64".into())),
            ))
        };
        let refused = carried("INVALID_FUNCTION_ARGUMENT");
        assert_eq!(refused.code(), ErrorCode::InvalidFunctionArgument);
        assert_eq!(refused.to_string(), "Invalid base64: symbol 46");
        // Other kinds are this node's to classify, from the error the context wraps.
        assert_eq!(
            carried("TABLE_NOT_FOUND").code(),
            ErrorCode::GenericInternalError
        );
        let column = Error::from(DataFusionError::SchemaError(
            Box::new(SchemaError::FieldNotFound {
                field: Box::new(Column::from_name("nope")),
                valid_fields: Vec::new(),
            }),
            Box::new(None),
        ));
        assert_eq!(column.code(), ErrorCode::ColumnNotFound);
        assert_eq!(column.to_string(), "Column 'nope' does not exist");
        let divide = Error::from(DataFusionError::ArrowError(
            Box::new(ArrowError::DivideByZero),
            None,
        ));
        assert_eq!(divide.code(), ErrorCode::DivisionByZero);
        let cast = Error::from(DataFusionError::ArrowError(
            Box::new(ArrowError::CastError(
                "Cannot cast string 'x' to Int32".into(),
            )),
            None,
        ));
        assert_eq!(cast.code(), ErrorCode::InvalidCastArgument);
    }

    #[test]
    fn the_same_message_in_another_type_gets_another_code() {
        // A plan error worded like a missing table is not a missing table: only the engine's
        // own checks say that.
        let plan = Error::from(DataFusionError::Plan("table 'x' not found".into()));
        assert_eq!(plan.code(), ErrorCode::GenericUserError);
        // Text that mentions cancelling does not cancel.
        let execution = Error::from(DataFusionError::Execution("stream cancelled".into()));
        assert_eq!(execution.code(), ErrorCode::GenericInternalError);
    }

    #[test]
    fn errors_inside_others_keep_their_code() {
        let ours = DataFusionError::External(Box::new(Error::Cancelled));
        assert_eq!(Error::from(ours).code(), ErrorCode::UserCanceled);
        let table = DataFusionError::External(Box::new(TableError::NotSupported("x".into())));
        assert_eq!(Error::from(table).code(), ErrorCode::NotSupported);
        let status = DataFusionError::External(Box::new(tonic::Status::resource_exhausted("pool")));
        assert_eq!(
            Error::from(status).code(),
            ErrorCode::ExceededGlobalMemoryLimit
        );
        let gone = DataFusionError::External(Box::new(tonic::Status::unavailable(
            "http://w1:50052 could not be reached: tcp connect error",
        )));
        let gone = Error::from(gone);
        assert_eq!(gone.code(), ErrorCode::RemoteHostGone);
        assert!(gone.to_string().contains("http://w1:50052"), "{gone}");
        let shared = DataFusionError::Shared(std::sync::Arc::new(DataFusionError::ArrowError(
            Box::new(ArrowError::DivideByZero),
            None,
        )));
        assert_eq!(Error::from(shared).code(), ErrorCode::DivisionByZero);
        // Held by other partitions too, so it cannot be taken apart; read through a reference.
        let held = std::sync::Arc::new(DataFusionError::External(Box::new(
            tonic::Status::unavailable("http://w1:50052 could not be reached"),
        )));
        let other_partition = std::sync::Arc::clone(&held);
        assert_eq!(
            Error::from(DataFusionError::Shared(held)).code(),
            ErrorCode::RemoteHostGone
        );
        drop(other_partition);
        let held = std::sync::Arc::new(DataFusionError::ArrowError(
            Box::new(ArrowError::ArithmeticOverflow(
                "bigint addition overflow".into(),
            )),
            None,
        ));
        let other_partition = std::sync::Arc::clone(&held);
        assert_eq!(
            Error::from(DataFusionError::Shared(held)).code(),
            ErrorCode::NumericValueOutOfRange
        );
        drop(other_partition);
        // A hash join's build side out of memory, as every probing partition holds it.
        let held = std::sync::Arc::new(DataFusionError::Context(
            "HashJoinInput".into(),
            Box::new(DataFusionError::ResourcesExhausted(
                "Failed to allocate additional 1.0 MB for HashJoinInput".into(),
            )),
        ));
        let other_partition = std::sync::Arc::clone(&held);
        assert_eq!(
            Error::from(DataFusionError::Shared(held)).code(),
            ErrorCode::ExceededGlobalMemoryLimit
        );
        drop(other_partition);
        let iceberg = iceberg::Error::new(iceberg::ErrorKind::TableNotFound, "no table t");
        assert_eq!(Error::from(iceberg).code(), ErrorCode::TableNotFound);
    }

    #[test]
    fn messages_are_in_trinos_words() {
        assert_eq!(
            Error::not_found(ObjectKind::Table, "iceberg.s.t").to_string(),
            "Table 'iceberg.s.t' does not exist"
        );
        assert_eq!(
            Error::already_exists(ObjectKind::Schema, "s").to_string(),
            "Schema 's' already exists"
        );
        assert_eq!(
            Error::Killed { message: None }.to_string(),
            "Query killed. No message provided."
        );
        assert_eq!(Error::Cancelled.to_string(), "Query was canceled");
    }
}
