//! Flight SQL calls mapped onto the engine.

use std::pin::Pin;
use std::sync::Arc;

use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::FlightService;
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionBeginTransactionRequest, ActionBeginTransactionResult, ActionCancelQueryRequest,
    ActionCancelQueryResult, ActionClosePreparedStatementRequest,
    ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult, Command,
    CommandGetCatalogs, CommandGetCrossReference, CommandGetDbSchemas, CommandGetExportedKeys,
    CommandGetImportedKeys, CommandGetPrimaryKeys, CommandGetSqlInfo, CommandGetTableTypes,
    CommandGetTables, CommandGetXdbcTypeInfo, CommandPreparedStatementQuery,
    CommandPreparedStatementUpdate, CommandStatementIngest, CommandStatementQuery,
    CommandStatementUpdate, DoPutPreparedStatementResult, ProstMessageExt, SqlInfo,
    TableExistsOption, TableNotExistOption, TicketStatementQuery,
};
use arrow_flight::{
    Action, ActionType, CancelFlightInfoRequest, CancelFlightInfoResult, CancelStatus,
    FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse, IpcMessage,
    SchemaAsIpc, Ticket,
};
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::ipc::writer::IpcWriteOptions;
use datafusion::common::ScalarValue;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt, TryStreamExt, stream};
use prost::Message;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status, Streaming};
use tracing::Instrument;
use uuid::Uuid;

use super::auth::{Credentials, credentials};
use super::metadata::{self, foreign_keys_schema, primary_keys_schema, sql_info, xdbc_types};
use super::polling::Polled;
use super::protocol::{
    self, CANCEL_FLIGHT_INFO, CLOSE_SESSION, CloseSessionResult, CloseSessionStatus,
    GET_SESSION_OPTIONS, GetSessionOptionsResult, QUERY_PROGRESS, SESSION_COOKIE,
    SET_SESSION_OPTIONS, SessionOptionValue, SetSessionOptionsError, SetSessionOptionsErrorValue,
    SetSessionOptionsRequest, SetSessionOptionsResult, handle_bytes, parse_handle, session_key,
    session_option_value::OptionValue,
};
use super::read_ahead::{Execution, ReadAhead};
use super::sessions::Sessions;
use super::statements::{Cancelled, Planned, PreparedStatement, RunningGuard, Statements, Work};
use super::worker_results::{AtWorkers, ResultsAtWorkers};
use crate::client_auth::{ClientAuth, Principal};
use crate::config::IpcCompression;
use sqe_engine::engine::{Engine, IfExists, IfMissing, IngestTarget};
use sqe_engine::error::{Error, ErrorCode};
use sqe_engine::queries::{
    Endpoint, Output, Queries, QueryHandle, QueryRequest, Session, Statement, command_batch,
};

/// When a planned query runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// In the DoGet of its ticket: GetFlightInfo's client reads as it runs.
    OnDoGet,
    /// Now, its rows read ahead of the DoGet: PollFlightInfo's client polls its progress.
    Now,
}

type BoxedStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// SQE's Flight SQL service. Wrapped by [`super::server::SqeFlightService`], which adds the
/// RPCs arrow-flight's blanket implementation leaves out.
pub(crate) struct SqeFlightSqlService {
    queries: Arc<Queries>,
    auth: Arc<ClientAuth>,
    sessions: Sessions,
    statements: Arc<Statements>,
    /// How query results' buffers are compressed unless a call asks otherwise.
    compression: IpcCompression,
    /// Serving results at the workers (parallel endpoints); `None` when off or impossible
    /// (no worker_secret to sign tickets with).
    at_workers: Option<Arc<ResultsAtWorkers>>,
}

/// The call header that picks a result's IPC compression (`none`, `lz4` or `zstd`) over the
/// port's setting; ADBC sends it with `adbc.flight.sql.rpc.call_header.x-sqe-ipc-compression`.
pub(crate) const COMPRESSION_HEADER: &str = "x-sqe-ipc-compression";

impl SqeFlightSqlService {
    pub(crate) fn new(
        queries: Arc<Queries>,
        auth: Arc<ClientAuth>,
        compression: IpcCompression,
        at_workers: Option<Arc<ResultsAtWorkers>>,
    ) -> Self {
        Self {
            queries,
            auth,
            sessions: Sessions::default(),
            statements: Arc::default(),
            compression,
            at_workers,
        }
    }

    /// The statement a FlightInfo's tickets are for: a coordinator ticket's handle, or the
    /// statement a result ticket at the workers names.
    fn statement_of(&self, info: &FlightInfo) -> Option<Uuid> {
        ticket_handle(info).or_else(|| {
            let ticket = info.endpoint.first()?.ticket.as_ref()?;
            self.at_workers.as_ref()?.statement_of(&ticket.ticket)
        })
    }

    /// The IPC options of a result for `request`: its compression header, else the port's.
    fn result_options<T>(&self, request: &Request<T>) -> Result<IpcWriteOptions, Status> {
        let compression = match request.metadata().get(COMPRESSION_HEADER) {
            None => self.compression,
            Some(value) => value
                .to_str()
                .map_err(|_| Status::invalid_argument(format!("{COMPRESSION_HEADER} is not text")))?
                .parse()
                .map_err(Status::invalid_argument)?,
        };
        IpcWriteOptions::default()
            .try_with_compression(compression.compression_type())
            .map_err(|e| Status::internal(format!("IPC compression: {e}")))
    }

    pub(super) fn engine(&self) -> &Arc<Engine> {
        self.queries.engine()
    }

    pub(super) fn queries(&self) -> &Arc<Queries> {
        &self.queries
    }

    pub(super) fn statements(&self) -> &Statements {
        &self.statements
    }

    pub(super) fn prepared_statement(
        &self,
        id: &Uuid,
        principal: &Principal,
    ) -> Option<PreparedStatement> {
        self.statements.prepared(id, principal)
    }

    /// The caller's session: the settings it chose with `SetSessionOptions`, run as the user
    /// it authenticated as.
    pub(super) fn session<T>(&self, request: &Request<T>) -> Session {
        let mut session = self
            .sessions
            .get(session_key(request.metadata(), request.remote_addr()).as_deref());
        session.user = principal(request).user;
        session
    }

    /// Submits a statement this endpoint received; its trace continues the caller's
    /// `traceparent` metadata.
    fn submit<T>(&self, request: &Request<T>, statement: Statement) -> QueryHandle {
        self.queries.submit(QueryRequest {
            statement,
            session: self.session(request),
            endpoint: Endpoint::FlightSql,
            source: None,
            traceparent: request
                .metadata()
                .get("traceparent")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        })
    }

    /// Plans `handle` and describes it, for a DoGet of its ticket. A statement that changes
    /// something (DDL, a write) runs now: ADBC's `cursor.execute` never reads its result, and
    /// Trino runs a statement when it is submitted. A query runs in its DoGet, or at once when
    /// `start` says so (with how its run goes, for the polls).
    async fn planned_info(
        &self,
        mut handle: QueryHandle,
        principal: Principal,
        descriptor: FlightDescriptor,
        start: Start,
        at_workers: Option<AtWorkers>,
    ) -> Result<(FlightInfo, Option<Execution>), Status> {
        // Over the user's share nothing is planned, let alone run (a write would be applied
        // and then reported refused).
        let reservation = match self.statements.reserve(&principal.user) {
            Ok(reservation) => reservation,
            Err(full) => return Err(handle.fail(sqe_engine::Error::from(full)).into()),
        };
        let id = reservation.id();
        let span = rpc_span(&handle, "GetFlightInfo");
        let described = handle.describe().instrument(span.clone()).await?.clone();
        let mut execution = None;
        let work = match (described.update_type, start) {
            (Some(_), _) => {
                let output = handle.run().instrument(span).await?;
                match output.output {
                    Output::Updated { rows } => Work::Ran(command_batch(&output.described, rows)?),
                    Output::Rows(_) => return Err(Status::internal("an update returned rows")),
                }
            }
            (None, Start::OnDoGet) => {
                if let Some(at_workers) = at_workers
                    && let Some(located) = handle.serve_at_workers()
                {
                    // Its clients read the result at the workers: it runs now, and no
                    // ticket of the coordinator's is kept for it.
                    let canceller = handle.canceller();
                    let (running, stream, _) = self.run_now(handle, id, &principal, &span).await?;
                    let info = at_workers
                        .serve(id, &described.schema, stream, located, running, canceller)
                        .instrument(span)
                        .await?
                        .with_descriptor(descriptor);
                    return Ok((info, None));
                }
                // Waiting for its DoGet it runs nothing: its slot is for others meanwhile.
                handle.park();
                Work::Run(Box::new(handle))
            }
            (None, Start::Now) => {
                let record = handle.record();
                let (running, stream, memory) = self.run_now(handle, id, &principal, &span).await?;
                let memory = memory.map(|m| m as Arc<dyn MemoryPool>);
                let (rows, run) =
                    span.in_scope(|| ReadAhead::spawn(stream, memory, record, running));
                execution = Some(run);
                Work::ReadAhead(rows)
            }
        };
        reservation.fill(Planned { work, principal });
        let ticket = TicketStatementQuery {
            statement_handle: handle_bytes(id),
        };
        let info = info(
            &described.schema,
            ticket.as_any().encode_to_vec(),
            descriptor,
        )?;
        let info = match described.update_type {
            Some(kind) => info.with_app_metadata(protocol::update_type_metadata(kind)),
            None => info,
        };
        Ok((info, execution))
    }

    /// Runs query `handle` now, registered as running statement `id` for as long as the
    /// guard lives: its rows and its share of the memory pool.
    async fn run_now(
        &self,
        handle: QueryHandle,
        id: Uuid,
        principal: &Principal,
        span: &tracing::Span,
    ) -> Result<
        (
            RunningGuard,
            SendableRecordBatchStream,
            Option<Arc<dyn MemoryPool>>,
        ),
        Status,
    > {
        let running = self
            .statements
            .start(id, principal.clone(), &handle)
            .ok_or_else(|| Status::internal("the statement has already run"))?;
        let output = handle.run().instrument(span.clone()).await?;
        let Output::Rows(stream) = output.output else {
            return Err(Status::internal("a query returned no rows"));
        };
        let memory = output.memory.map(|m| m as Arc<dyn MemoryPool>);
        Ok((running, stream, memory))
    }

    /// Plans a polled statement: a query starts at once ([`super::read_ahead`]); anything
    /// else is answered as GetFlightInfo answers it.
    pub(super) async fn plan_polled(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Polled, Status> {
        let command = arrow_flight::sql::Any::decode(request.get_ref().cmd.as_ref())
            .ok()
            .and_then(|any| Command::try_from(any).ok());
        let handle = match command {
            Some(Command::CommandStatementQuery(query)) => {
                self.submit(&request, Statement::Sql(query.query))
            }
            Some(Command::CommandPreparedStatementQuery(command)) => {
                self.prepared_handle(&command, &request)?
            }
            _ => {
                let info = FlightService::get_flight_info(self, request).await?;
                return Ok(Polled::Complete(info.into_inner()));
            }
        };
        let principal = principal(&request);
        let (info, execution) = self
            .planned_info(handle, principal, request.into_inner(), Start::Now, None)
            .await?;
        Ok(match execution {
            Some(execution) => Polled::Running(info, execution),
            None => Polled::Complete(info),
        })
    }

    /// GetFlightInfo of a query: planned now, run by the DoGet of its ticket.
    async fn info_for_do_get(
        &self,
        handle: QueryHandle,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let principal = principal(&request);
        let at_workers = match &self.at_workers {
            Some(results) => results.for_call(request.metadata())?,
            None => None,
        };
        let (info, _) = self
            .planned_info(
                handle,
                principal,
                request.into_inner(),
                Start::OnDoGet,
                at_workers,
            )
            .await?;
        Ok(Response::new(info))
    }

    /// The query of prepared statement `command`, with the parameters last bound to it.
    fn prepared_handle<T>(
        &self,
        command: &CommandPreparedStatementQuery,
        request: &Request<T>,
    ) -> Result<QueryHandle, Status> {
        let id = parse_handle(&command.prepared_statement_handle)
            .ok_or_else(|| Status::invalid_argument("malformed prepared statement handle"))?;
        let statement = self
            .statements
            .prepared(&id, &principal(request))
            .ok_or_else(|| Status::not_found("unknown or closed prepared statement"))?;
        Ok(self.submit(
            request,
            Statement::Prepared {
                sql: statement.sql,
                template: Box::new(statement.template),
                parameters: statement.parameter_rows,
            },
        ))
    }

    /// Runs an update to its end: the rows it wrote. A statement that returns rows is refused
    /// (and its query failed).
    async fn run_update(&self, mut handle: QueryHandle, refused: &str) -> Result<i64, Status> {
        let span = rpc_span(&handle, "DoPut");
        let described = handle.describe().instrument(span.clone()).await?;
        if described.update_type.is_none() {
            let error = Error::invalid(ErrorCode::GenericUserError, refused);
            return Err(handle.fail(error).into());
        }
        match handle.run().instrument(span).await?.output {
            Output::Updated { rows } => {
                Ok(rows.map_or(0, |r| i64::try_from(r).unwrap_or(i64::MAX)))
            }
            Output::Rows(_) => Err(Status::internal("an update returned rows")),
        }
    }

    /// Parameters sent with DoPut: one value per column, one set per row. Counted while they
    /// stream, so a client cannot make the coordinator hold more than [`MAX_PARAMETER_BYTES`].
    async fn parameter_rows(
        request: Request<PeekableFlightDataStream>,
    ) -> Result<Vec<Vec<ScalarValue>>, Status> {
        let mut stream = record_batches(request.into_inner());
        let mut batches = Vec::new();
        let mut bytes = 0usize;
        while let Some(batch) = stream.try_next().await? {
            bytes = bytes.saturating_add(batch.get_array_memory_size());
            if bytes > MAX_PARAMETER_BYTES {
                return Err(Status::resource_exhausted(format!(
                    "the parameters bound to a prepared statement may take at most {} MB; \
                     ingest bulk data with a statement ingest (ADBC adbc_ingest) instead",
                    MAX_PARAMETER_BYTES / (1024 * 1024)
                )));
            }
            batches.push(batch);
        }
        let mut rows = Vec::new();
        for batch in batches {
            for row in 0..batch.num_rows() {
                let values = batch
                    .columns()
                    .iter()
                    .map(|column| ScalarValue::try_from_array(column, row))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| Status::invalid_argument(format!("bad parameter value: {e}")))?;
                rows.push(values);
            }
        }
        Ok(rows)
    }
}

/// The most memory the parameter rows of one DoPut may take.
const MAX_PARAMETER_BYTES: usize = 64 * 1024 * 1024;

/// A Flight SQL call's span, in its query's trace.
fn rpc_span(handle: &QueryHandle, rpc: &'static str) -> tracing::Span {
    tracing::info_span!(parent: handle.span(), "flight_sql", otel.name = rpc)
}

pub(super) fn principal<T>(request: &Request<T>) -> Principal {
    request
        .extensions()
        .get::<Principal>()
        .cloned()
        .unwrap_or_else(Principal::anonymous)
}

fn ipc_schema(schema: &Schema) -> Result<Bytes, Status> {
    let IpcMessage(bytes) = SchemaAsIpc::new(schema, &IpcWriteOptions::default())
        .try_into()
        .map_err(|e: datafusion::arrow::error::ArrowError| {
            Status::internal(format!("cannot encode schema: {e}"))
        })?;
    Ok(bytes)
}

pub(super) fn info(
    schema: &Schema,
    ticket: Vec<u8>,
    descriptor: FlightDescriptor,
) -> Result<FlightInfo, Status> {
    let endpoint = FlightEndpoint::new().with_ticket(Ticket::new(ticket));
    Ok(FlightInfo::new()
        .try_with_schema(schema)
        .map_err(|e| Status::internal(format!("cannot encode schema: {e}")))?
        .with_endpoint(endpoint)
        .with_descriptor(descriptor))
}

/// Record batches from a DoPut stream. Messages without IPC data (clients send the command
/// descriptor alone when there is nothing to bind) are skipped.
fn record_batches(data: PeekableFlightDataStream) -> FlightRecordBatchStream {
    let data = data
        .map_err(FlightError::from)
        .try_filter(|message| futures::future::ready(!message.data_header.is_empty()));
    FlightRecordBatchStream::new_from_flight_data(data)
}

fn flight_status(error: FlightError) -> Status {
    match error {
        FlightError::Tonic(status) => *status,
        other => Status::internal(other.to_string()),
    }
}

/// Batches as Flight data, ending with `Cancelled` if the statement is cancelled midway.
fn encode(
    schema: SchemaRef,
    batches: BoxStream<'static, Result<RecordBatch, FlightError>>,
) -> BoxedStream<arrow_flight::FlightData> {
    encode_with(schema, batches, IpcWriteOptions::default())
}

/// [`encode`] with `options` (a result's compression).
fn encode_with(
    schema: SchemaRef,
    batches: BoxStream<'static, Result<RecordBatch, FlightError>>,
    options: IpcWriteOptions,
) -> BoxedStream<arrow_flight::FlightData> {
    Box::pin(
        FlightDataEncoderBuilder::new()
            .with_options(options)
            .with_schema(schema)
            .build(batches)
            .map_err(flight_status),
    )
}

fn one_batch(
    batch: Result<RecordBatch, Error>,
) -> BoxStream<'static, Result<RecordBatch, FlightError>> {
    stream::iter([batch.map_err(|e| FlightError::from(Status::from(e)))]).boxed()
}

fn batch_stream(schema: SchemaRef, batch: RecordBatch) -> BoxedStream<arrow_flight::FlightData> {
    encode(schema, one_batch(Ok(batch)))
}

/// The result of a key command: Iceberg tables have no keys, so no rows of `schema`.
fn no_rows(schema: SchemaRef) -> Response<BoxedStream<arrow_flight::FlightData>> {
    Response::new(batch_stream(
        Arc::clone(&schema),
        RecordBatch::new_empty(schema),
    ))
}

/// FlightInfo for a key command, whose ticket is the command itself.
fn keyless_info(
    schema: &Schema,
    ticket: Vec<u8>,
    request: Request<FlightDescriptor>,
) -> Result<Response<FlightInfo>, Status> {
    Ok(Response::new(info(schema, ticket, request.into_inner())?))
}

fn ingest_target(command: &CommandStatementIngest) -> Result<IngestTarget, Status> {
    if command.temporary {
        return Err(Status::unimplemented("temporary tables are not supported"));
    }
    if command.transaction_id.is_some() {
        return Err(Status::unimplemented("transactions are not supported"));
    }
    let options = command.table_definition_options.unwrap_or_default();
    let if_missing = match TableNotExistOption::try_from(options.if_not_exist) {
        Ok(TableNotExistOption::Fail) => IfMissing::Fail,
        _ => IfMissing::Create,
    };
    let if_exists = match TableExistsOption::try_from(options.if_exists) {
        Ok(TableExistsOption::Append) => IfExists::Append,
        Ok(TableExistsOption::Replace) => IfExists::Replace,
        _ => IfExists::Fail,
    };
    Ok(IngestTarget {
        schema: command.schema.clone(),
        table: command.table.clone(),
        if_missing,
        if_exists,
    })
}

fn cancel_result(cancelled: Cancelled) -> CancelStatus {
    match cancelled {
        Cancelled::Yes => CancelStatus::Cancelled,
        Cancelled::NotFound => CancelStatus::NotCancellable,
    }
}

pub(super) fn ticket_handle(info: &FlightInfo) -> Option<Uuid> {
    let ticket = info.endpoint.first()?.ticket.as_ref()?;
    let any = arrow_flight::sql::Any::decode(ticket.ticket.as_ref()).ok()?;
    let statement: TicketStatementQuery = any.unpack().ok()??;
    parse_handle(&statement.statement_handle)
}

fn action_result(message: impl Message) -> arrow_flight::Result {
    arrow_flight::Result {
        body: message.encode_to_vec().into(),
    }
}

#[tonic::async_trait]
impl FlightSqlService for SqeFlightSqlService {
    type FlightService = SqeFlightSqlService;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<BoxedStream<HandshakeResponse>>, Status> {
        let source = request.remote_addr().map(|a| a.ip());
        let principal = match credentials(request.metadata().as_ref())? {
            Some(Credentials::Basic { user, password }) => {
                self.auth.login(&user, &password, source).await?
            }
            Some(Credentials::Bearer(token)) => self.auth.verify(&token)?,
            None if self.auth.required() => {
                return Err(Status::unauthenticated(
                    "authentication required: send user and password",
                ));
            }
            None => Principal::anonymous(),
        };
        let token = self.auth.issue(&principal)?;
        let response = HandshakeResponse {
            protocol_version: 0,
            payload: Bytes::from(token.clone()),
        };
        let mut response =
            Response::new(Box::pin(stream::iter([Ok(response)])) as BoxedStream<HandshakeResponse>);
        let bearer = MetadataValue::try_from(format!("Bearer {token}"))
            .map_err(|_| Status::internal("a token is not a valid header value"))?;
        response.metadata_mut().insert("authorization", bearer);
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let handle = self.submit(&request, Statement::Sql(query.query));
        self.info_for_do_get(handle, request).await
    }

    async fn get_flight_info_prepared_statement(
        &self,
        command: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let handle = self.prepared_handle(&command, &request)?;
        self.info_for_do_get(handle, request).await
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        let principal = principal(&request);
        let options = self.result_options(&request)?;
        let id = parse_handle(&ticket.statement_handle)
            .ok_or_else(|| Status::invalid_argument("malformed ticket"))?;
        let Planned { work, .. } =
            self.statements
                .take_planned(&id, &principal)
                .ok_or_else(|| {
                    Status::not_found(
                        "statement ticket unknown (or issued before the coordinator restarted), already used, cancelled or expired",
                    )
                })?;
        let handle = match work {
            Work::Run(handle) => *handle,
            Work::Ran(batch) => {
                return Ok(Response::new(encode_with(
                    batch.schema(),
                    one_batch(Ok(batch)),
                    options,
                )));
            }
            // Registered as running by its read-ahead task, for as long as that runs.
            Work::ReadAhead(rows) => {
                return Ok(Response::new(encode_with(
                    rows.schema(),
                    rows.into_batches(),
                    options,
                )));
            }
        };
        let running = self
            .statements
            .start(id, principal, &handle)
            .ok_or_else(|| Status::internal("the statement has already run"))?;
        let span = rpc_span(&handle, "DoGet");
        let output = handle.run().instrument(span).await?;
        let schema = Arc::clone(&output.described.schema);
        let batches = match output.output {
            Output::Rows(stream) => stream,
            Output::Updated { rows } => {
                let batch = command_batch(&output.described, rows)?;
                Box::pin(RecordBatchStreamAdapter::new(
                    batch.schema(),
                    stream::iter([Ok(batch)]),
                ))
            }
        };
        Ok(Response::new(encode_with(
            schema,
            guarded(batches, running),
            options,
        )))
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.into_builder().schema();
        Ok(Response::new(info(
            &schema,
            query.as_any().encode_to_vec(),
            request.into_inner(),
        )?))
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        let mut builder = query.into_builder();
        builder.append(self.engine().catalog_name());
        let schema = builder.schema();
        let batch = builder
            .build()
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(batch_stream(schema, batch)))
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        Ok(Response::new(info(
            &schema,
            query.as_any().encode_to_vec(),
            request.into_inner(),
        )?))
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        let schema = query.clone().into_builder().schema();
        let batch = metadata::db_schemas(self.engine(), query).await?;
        Ok(Response::new(batch_stream(schema, batch)))
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        Ok(Response::new(info(
            &schema,
            query.as_any().encode_to_vec(),
            request.into_inner(),
        )?))
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        let schema = query.clone().into_builder().schema();
        let batch = metadata::tables(self.engine(), query).await?;
        Ok(Response::new(batch_stream(schema, batch)))
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.into_builder().schema();
        Ok(Response::new(info(
            &schema,
            query.as_any().encode_to_vec(),
            request.into_inner(),
        )?))
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        let mut builder = query.into_builder();
        builder.append("TABLE");
        let schema = builder.schema();
        let batch = builder
            .build()
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(batch_stream(schema, batch)))
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder(sql_info()?).schema();
        Ok(Response::new(info(
            &schema,
            query.as_any().encode_to_vec(),
            request.into_inner(),
        )?))
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        let builder = query.into_builder(sql_info()?);
        let schema = builder.schema();
        let batch = builder
            .build()
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(batch_stream(schema, batch)))
    }

    async fn get_flight_info_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.into_builder(xdbc_types()?).schema();
        Ok(Response::new(info(
            &schema,
            query.as_any().encode_to_vec(),
            request.into_inner(),
        )?))
    }

    async fn do_get_xdbc_type_info(
        &self,
        query: CommandGetXdbcTypeInfo,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        let builder = query.into_builder(xdbc_types()?);
        let schema = builder.schema();
        let batch = builder
            .build()
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(batch_stream(schema, batch)))
    }

    async fn get_flight_info_primary_keys(
        &self,
        query: CommandGetPrimaryKeys,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        keyless_info(
            &primary_keys_schema(),
            query.as_any().encode_to_vec(),
            request,
        )
    }

    async fn do_get_primary_keys(
        &self,
        _query: CommandGetPrimaryKeys,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        Ok(no_rows(primary_keys_schema()))
    }

    async fn get_flight_info_exported_keys(
        &self,
        query: CommandGetExportedKeys,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        keyless_info(
            &foreign_keys_schema(),
            query.as_any().encode_to_vec(),
            request,
        )
    }

    async fn do_get_exported_keys(
        &self,
        _query: CommandGetExportedKeys,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        Ok(no_rows(foreign_keys_schema()))
    }

    async fn get_flight_info_imported_keys(
        &self,
        query: CommandGetImportedKeys,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        keyless_info(
            &foreign_keys_schema(),
            query.as_any().encode_to_vec(),
            request,
        )
    }

    async fn do_get_imported_keys(
        &self,
        _query: CommandGetImportedKeys,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        Ok(no_rows(foreign_keys_schema()))
    }

    async fn get_flight_info_cross_reference(
        &self,
        query: CommandGetCrossReference,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        keyless_info(
            &foreign_keys_schema(),
            query.as_any().encode_to_vec(),
            request,
        )
    }

    async fn do_get_cross_reference(
        &self,
        _query: CommandGetCrossReference,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        Ok(no_rows(foreign_keys_schema()))
    }

    async fn do_put_statement_update(
        &self,
        command: CommandStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let handle = self.submit(&request, Statement::Sql(command.query));
        self.run_update(
            handle,
            "this statement returns rows: run it as a query (CommandStatementQuery)",
        )
        .await
    }

    async fn do_put_statement_ingest(
        &self,
        command: CommandStatementIngest,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let target = ingest_target(&command)?;
        let description = format!(
            "INSERT INTO {}{} (Flight SQL ingest)",
            command
                .schema
                .as_deref()
                .map(|s| format!("{s}."))
                .unwrap_or_default(),
            command.table
        );
        let session = self.session(&request);
        let traceparent = request
            .metadata()
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut batches = record_batches(request.into_inner());
        // The schema arrives with the first message; an upload of no rows still has one.
        let first = batches.next().await.transpose().map_err(flight_status)?;
        let schema = match (&first, batches.schema()) {
            (Some(batch), _) => batch.schema(),
            (None, Some(schema)) => Arc::clone(schema),
            (None, None) => {
                return Err(Status::invalid_argument(
                    "the ingest stream carried no schema",
                ));
            }
        };
        let rest = batches
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(flight_status(e))));
        let data: SendableRecordBatchStream = Box::pin(RecordBatchStreamAdapter::new(
            schema,
            stream::iter(first.map(Ok)).chain(rest),
        ));
        let handle = self.queries.submit(QueryRequest {
            statement: Statement::Ingest {
                description,
                target,
                data,
            },
            session,
            endpoint: Endpoint::FlightSql,
            source: None,
            traceparent,
        });
        self.run_update(handle, "an upload returns no rows").await
    }

    async fn do_put_prepared_statement_query(
        &self,
        command: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let principal = principal(&request);
        let id = parse_handle(&command.prepared_statement_handle)
            .ok_or_else(|| Status::invalid_argument("malformed prepared statement handle"))?;
        let rows = Self::parameter_rows(request).await?;
        if !self.statements.bind(&id, &principal, rows) {
            return Err(Status::not_found("unknown or closed prepared statement"));
        }
        Ok(DoPutPreparedStatementResult {
            prepared_statement_handle: Some(command.prepared_statement_handle),
        })
    }

    async fn do_put_prepared_statement_update(
        &self,
        command: CommandPreparedStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let principal = principal(&request);
        let id = parse_handle(&command.prepared_statement_handle)
            .ok_or_else(|| Status::invalid_argument("malformed prepared statement handle"))?;
        let statement = self
            .statements
            .prepared(&id, &principal)
            .ok_or_else(|| Status::not_found("unknown or closed prepared statement"))?;
        let session = self.session(&request);
        let traceparent = request
            .metadata()
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut rows = Self::parameter_rows(request).await?;
        if rows.is_empty() {
            rows = statement.parameter_rows;
        }
        let handle = self.queries.submit(QueryRequest {
            statement: Statement::Prepared {
                sql: statement.sql,
                template: Box::new(statement.template),
                parameters: rows,
            },
            session,
            endpoint: Endpoint::FlightSql,
            source: None,
            traceparent,
        });
        self.run_update(handle, "this statement returns rows: execute it as a query")
            .await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        if query.transaction_id.is_some() {
            return Err(Status::unimplemented("transactions are not supported"));
        }
        let principal = principal(&request);
        self.statements
            .check_room_to_prepare(&principal.user)
            .map_err(sqe_engine::Error::from)?;
        let template = self
            .queries
            .template(&self.session(&request), &query.query)
            .await?;
        let dataset_schema = ipc_schema(&template.dataset_schema())?;
        let parameter_schema = ipc_schema(&template.parameter_schema())?;
        let id = self
            .statements
            .prepare(PreparedStatement {
                sql: query.query.clone(),
                template,
                parameter_rows: Vec::new(),
                principal,
            })
            .map_err(sqe_engine::Error::from)?;
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: handle_bytes(id),
            dataset_schema,
            parameter_schema,
        })
    }

    async fn do_action_close_prepared_statement(
        &self,
        query: ActionClosePreparedStatementRequest,
        _request: Request<Action>,
    ) -> Result<(), Status> {
        if let Some(id) = parse_handle(&query.prepared_statement_handle) {
            self.statements.close_prepared(&id);
        }
        Ok(())
    }

    async fn do_action_begin_transaction(
        &self,
        _query: ActionBeginTransactionRequest,
        _request: Request<Action>,
    ) -> Result<ActionBeginTransactionResult, Status> {
        Err(Status::unimplemented(
            "transactions are not supported: every statement commits on its own",
        ))
    }

    async fn do_action_cancel_query(
        &self,
        query: ActionCancelQueryRequest,
        _request: Request<Action>,
    ) -> Result<ActionCancelQueryResult, Status> {
        let info = FlightInfo::decode(query.info.as_ref())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let id = self
            .statement_of(&info)
            .ok_or_else(|| Status::invalid_argument("not a statement of this server"))?;
        // The deprecated action shares CancelFlightInfo's status numbers.
        let result = cancel_result(self.statements.cancel(&id));
        Ok(ActionCancelQueryResult {
            result: result as i32,
        })
    }

    async fn do_action_fallback(
        &self,
        request: Request<Action>,
    ) -> Result<Response<<Self as FlightService>::DoActionStream>, Status> {
        let key = session_key(request.metadata(), request.remote_addr());
        let cookie = protocol::session_cookie(request.metadata());
        let caller = principal(&request);
        let user = caller.user.clone();
        let action = request.into_inner();
        let (result, new_cookie): (arrow_flight::Result, Option<String>) =
            match action.r#type.as_str() {
                SET_SESSION_OPTIONS => {
                    let options = SetSessionOptionsRequest::decode(action.body.as_ref())
                        .map_err(|e| Status::invalid_argument(e.to_string()))?;
                    // A client without a cookie gets one; until it sends it back (if ever), its
                    // bearer token or connection keeps naming the same session.
                    let new_cookie = cookie
                        .is_none()
                        .then(|| Uuid::new_v4().simple().to_string());
                    let keys: Vec<String> = key
                        .into_iter()
                        .chain(new_cookie.as_ref().map(|id| format!("cookie:{id}")))
                        .collect();
                    let mut errors = std::collections::HashMap::new();
                    let mut settings = self.sessions.get(keys.first().map(String::as_str));
                    {
                        let session = &mut settings;
                        for (name, value) in options.session_options {
                            let text = match value.option_value {
                                Some(OptionValue::String(s)) => Some(s),
                                None => None,
                                Some(_) => {
                                    errors.insert(
                                        name,
                                        error_value(SetSessionOptionsErrorValue::InvalidValue),
                                    );
                                    continue;
                                }
                            };
                            match name.as_str() {
                                "catalog" => session.catalog = text,
                                "schema" => session.schema = text,
                                _ => {
                                    errors.insert(
                                        name,
                                        error_value(SetSessionOptionsErrorValue::InvalidName),
                                    );
                                }
                            }
                        }
                    }
                    for key in &keys {
                        self.sessions
                            .update(key, &user, |session| *session = settings.clone())
                            .map_err(sqe_engine::Error::from)?;
                    }
                    (
                        action_result(SetSessionOptionsResult { errors }),
                        new_cookie,
                    )
                }
                GET_SESSION_OPTIONS => {
                    let session = self.sessions.get(key.as_deref());
                    let string = |s: String| SessionOptionValue {
                        option_value: Some(OptionValue::String(s)),
                    };
                    let mut options = std::collections::HashMap::new();
                    options.insert(
                        "catalog".to_string(),
                        string(
                            session
                                .catalog
                                .unwrap_or_else(|| self.engine().catalog_name().to_string()),
                        ),
                    );
                    options.insert(
                        "schema".to_string(),
                        string(
                            session
                                .schema
                                .unwrap_or_else(|| sqe_engine::catalog::DEFAULT_SCHEMA.to_string()),
                        ),
                    );
                    (
                        action_result(GetSessionOptionsResult {
                            session_options: options,
                        }),
                        None,
                    )
                }
                CLOSE_SESSION => {
                    let closed = key.as_deref().is_some_and(|k| self.sessions.close(k));
                    let status = if closed {
                        CloseSessionStatus::Closed
                    } else {
                        CloseSessionStatus::NotCloseable
                    };
                    (
                        action_result(CloseSessionResult {
                            status: status as i32,
                        }),
                        None,
                    )
                }
                CANCEL_FLIGHT_INFO => {
                    let request = CancelFlightInfoRequest::decode(action.body.as_ref())
                        .map_err(|e| Status::invalid_argument(e.to_string()))?;
                    let status = request
                        .info
                        .as_ref()
                        .and_then(|info| self.statement_of(info))
                        .map(|id| cancel_result(self.statements.cancel(&id)))
                        .ok_or_else(|| Status::not_found("not a statement of this server"))?;
                    (
                        action_result(CancelFlightInfoResult {
                            status: status as i32,
                        }),
                        None,
                    )
                }
                QUERY_PROGRESS => {
                    let info = FlightInfo::decode(action.body.as_ref())
                        .map_err(|e| Status::invalid_argument(e.to_string()))?;
                    let record = self
                        .statement_of(&info)
                        .and_then(|id| self.statements.running_record(&id, &caller))
                        .ok_or_else(|| {
                            Status::not_found("no statement of yours streams under this ticket")
                        })?;
                    (query_progress(&record), None)
                }
                other => return Err(Status::unimplemented(format!("unknown action {other}"))),
            };
        let mut response = Response::new(
            Box::pin(stream::iter([Ok(result)])) as <Self as FlightService>::DoActionStream
        );
        if let Some(id) = new_cookie {
            let cookie = MetadataValue::try_from(format!("{SESSION_COOKIE}={id}"))
                .map_err(|_| Status::internal("invalid session cookie"))?;
            response.metadata_mut().insert("set-cookie", cookie);
        }
        Ok(response)
    }

    async fn list_custom_actions(&self) -> Option<Vec<Result<ActionType, Status>>> {
        let action = |name: &str, description: &str| {
            Ok(ActionType {
                r#type: name.to_string(),
                description: description.to_string(),
            })
        };
        Some(vec![
            action(SET_SESSION_OPTIONS, "Set session options: catalog, schema"),
            action(GET_SESSION_OPTIONS, "Get session options"),
            action(CLOSE_SESSION, "Close the session"),
            action(CANCEL_FLIGHT_INFO, "Cancel a running query"),
            action(
                QUERY_PROGRESS,
                "Progress of a streaming statement (body: its FlightInfo; result: JSON)",
            ),
        ])
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}

/// A streaming statement's progress as JSON: its state, completed and total splits and the
/// percentage (`null` when nothing is measured: no distributed stages).
fn query_progress(record: &sqe_engine::history::QueryRecord) -> arrow_flight::Result {
    let progress = record.tasks().map(|t| t.progress()).unwrap_or_default();
    let body = serde_json::json!({
        "state": record.state().name(),
        "progressPercentage": progress.measured_percentage(),
        "totalSplits": progress.total_splits(),
        "completedSplits": progress.completed_splits(),
    });
    arrow_flight::Result {
        body: body.to_string().into(),
    }
}

fn error_value(value: SetSessionOptionsErrorValue) -> SetSessionOptionsError {
    SetSessionOptionsError {
        value: value as i32,
    }
}

/// `batches` as Flight data's input, keeping the statement registered as running (so
/// CancelFlightInfo finds it) until the stream ends or is dropped.
fn guarded(
    batches: SendableRecordBatchStream,
    running: RunningGuard,
) -> BoxStream<'static, Result<RecordBatch, FlightError>> {
    batches
        .map(move |item| {
            let _running = &running;
            item.map_err(|e| FlightError::from(Status::from(Error::from(e))))
        })
        .boxed()
}
