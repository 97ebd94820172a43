//! Flight SQL calls mapped onto the engine.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::FlightServiceServer;
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    CommandStatementQuery, CommandStatementUpdate, ProstMessageExt, SqlInfo, TicketStatementQuery,
};
use arrow_flight::{
    FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse, Ticket,
};
use futures::{Stream, StreamExt, TryStreamExt, stream};
use prost::Message;
use tonic::{Request, Response, Status, Streaming};
use uuid::Uuid;

use super::tickets::PlannedStatements;
use crate::engine::{Engine, Outcome, SessionSettings};
use crate::error::GatewayError;

/// How long a planned statement waits for its DoGet.
const TICKET_TTL: Duration = Duration::from_secs(300);

type BoxedStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// SQE's Flight SQL service.
pub struct SqeFlightSqlService {
    engine: Arc<Engine>,
    planned: PlannedStatements,
}

impl SqeFlightSqlService {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            planned: PlannedStatements::new(TICKET_TTL),
        }
    }
}

/// The tonic service to serve.
pub fn flight_sql_server(engine: Arc<Engine>) -> FlightServiceServer<SqeFlightSqlService> {
    FlightServiceServer::new(SqeFlightSqlService::new(engine))
        .max_decoding_message_size(64 * 1024 * 1024)
        .max_encoding_message_size(64 * 1024 * 1024)
}

#[tonic::async_trait]
impl FlightSqlService for SqeFlightSqlService {
    type FlightService = SqeFlightSqlService;

    async fn do_handshake(
        &self,
        _request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<BoxedStream<HandshakeResponse>>, Status> {
        let response = HandshakeResponse {
            protocol_version: 0,
            payload: Default::default(),
        };
        Ok(Response::new(Box::pin(stream::iter([Ok(response)]))))
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let prepared = self
            .engine
            .prepare(&SessionSettings::default(), &query.query)
            .await?;
        let schema = prepared.schema();
        let id = self.planned.insert(prepared);
        let ticket = TicketStatementQuery {
            statement_handle: id.as_bytes().to_vec().into(),
        };
        let endpoint =
            FlightEndpoint::new().with_ticket(Ticket::new(ticket.as_any().encode_to_vec()));
        let info = FlightInfo::new()
            .try_with_schema(&schema)
            .map_err(|e| Status::internal(format!("cannot encode schema: {e}")))?
            .with_endpoint(endpoint)
            .with_descriptor(request.into_inner());
        Ok(Response::new(info))
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        _request: Request<Ticket>,
    ) -> Result<Response<BoxedStream<arrow_flight::FlightData>>, Status> {
        let id = Uuid::from_slice(&ticket.statement_handle)
            .map_err(|_| Status::invalid_argument("malformed statement ticket"))?;
        let prepared = self.planned.take(&id).ok_or_else(|| {
            Status::not_found("statement ticket unknown, already used or expired")
        })?;
        let schema = prepared.schema();
        let kind = prepared.kind();
        let batches = match self.engine.run(prepared).await? {
            Outcome::Rows(stream) => stream
                .map_err(|e| FlightError::from(Status::from(GatewayError::from(e))))
                .boxed(),
            Outcome::Updated { rows } => {
                let batch = kind.command_result(rows)?;
                stream::iter([Ok(batch)]).boxed()
            }
        };
        let flight = FlightDataEncoderBuilder::new()
            .with_schema(schema)
            .build(batches)
            .map_err(|e| match e {
                FlightError::Tonic(status) => *status,
                other => Status::internal(other.to_string()),
            });
        Ok(Response::new(Box::pin(flight)))
    }

    async fn do_put_statement_update(
        &self,
        command: CommandStatementUpdate,
        _request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        match self
            .engine
            .execute(&SessionSettings::default(), &command.query)
            .await?
        {
            Outcome::Updated { rows } => Ok(rows.map(|r| r as i64).unwrap_or(0)),
            Outcome::Rows(_) => Err(Status::invalid_argument(
                "this statement returns rows: run it as a query (CommandStatementQuery)",
            )),
        }
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}
