//! The Flight service clients talk to: arrow-flight's Flight SQL dispatch, plus `GetSchema`
//! and `PollFlightInfo`, which its blanket implementation leaves unimplemented.

use std::sync::Arc;

use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::{Any, Command};
use arrow_flight::{
    Action, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo, HandshakeRequest, PollInfo,
    SchemaAsIpc, SchemaResult, Ticket,
};
use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::ipc::writer::IpcWriteOptions;
use prost::Message;
use tonic::{Request, Response, Status, Streaming};

use super::metadata::{foreign_keys_schema, primary_keys_schema, sql_info, xdbc_types};
use super::parse_handle_or_status;
use super::polling::{POLL_WAIT, PendingPlans, pending_id};
use super::service::{SqeFlightSqlService, principal, ticket_handle};

/// Serves Flight SQL; see the module documentation.
pub(crate) struct SqeFlightService {
    inner: Arc<SqeFlightSqlService>,
    pending: PendingPlans,
}

impl SqeFlightService {
    pub(crate) fn new(inner: SqeFlightSqlService) -> Self {
        Self {
            inner: Arc::new(inner),
            pending: PendingPlans::default(),
        }
    }

    /// The schema a command's results will have, without running it.
    async fn schema_of(&self, request: &Request<FlightDescriptor>) -> Result<Schema, Status> {
        let any = Any::decode(request.get_ref().cmd.as_ref())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let command =
            Command::try_from(any).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let engine = self.inner.engine();
        let schema = match command {
            Command::CommandStatementQuery(query) => {
                let settings = self
                    .inner
                    .queries()
                    .settings(&self.inner.session(request))?;
                engine
                    .template(&settings, &query.query)
                    .await?
                    .dataset_schema()
                    .as_ref()
                    .clone()
            }
            Command::CommandPreparedStatementQuery(query) => {
                let id = parse_handle_or_status(&query.prepared_statement_handle)?;
                let statement = self
                    .inner
                    .prepared_statement(&id, &principal(request))
                    .ok_or_else(|| Status::not_found("unknown or closed prepared statement"))?;
                statement.template.dataset_schema().as_ref().clone()
            }
            Command::CommandGetCatalogs(q) => q.into_builder().schema().as_ref().clone(),
            Command::CommandGetDbSchemas(q) => q.into_builder().schema().as_ref().clone(),
            Command::CommandGetTables(q) => q.into_builder().schema().as_ref().clone(),
            Command::CommandGetTableTypes(q) => q.into_builder().schema().as_ref().clone(),
            Command::CommandGetSqlInfo(q) => q.into_builder(sql_info()?).schema().as_ref().clone(),
            Command::CommandGetXdbcTypeInfo(q) => {
                q.into_builder(xdbc_types()?).schema().as_ref().clone()
            }
            Command::CommandGetPrimaryKeys(_) => primary_keys_schema().as_ref().clone(),
            Command::CommandGetExportedKeys(_)
            | Command::CommandGetImportedKeys(_)
            | Command::CommandGetCrossReference(_) => foreign_keys_schema().as_ref().clone(),
            other => {
                return Err(Status::unimplemented(format!(
                    "GetSchema of {}",
                    other.type_url()
                )));
            }
        };
        Ok(schema)
    }
}

#[tonic::async_trait]
impl FlightService for SqeFlightService {
    type HandshakeStream = <SqeFlightSqlService as FlightService>::HandshakeStream;
    type ListFlightsStream = <SqeFlightSqlService as FlightService>::ListFlightsStream;
    type DoGetStream = <SqeFlightSqlService as FlightService>::DoGetStream;
    type DoPutStream = <SqeFlightSqlService as FlightService>::DoPutStream;
    type DoActionStream = <SqeFlightSqlService as FlightService>::DoActionStream;
    type ListActionsStream = <SqeFlightSqlService as FlightService>::ListActionsStream;
    type DoExchangeStream = <SqeFlightSqlService as FlightService>::DoExchangeStream;

    async fn handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        FlightService::handshake(self.inner.as_ref(), request).await
    }

    async fn list_flights(
        &self,
        request: Request<Criteria>,
    ) -> Result<Response<Self::ListFlightsStream>, Status> {
        FlightService::list_flights(self.inner.as_ref(), request).await
    }

    async fn get_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        FlightService::get_flight_info(self.inner.as_ref(), request).await
    }

    /// GetFlightInfo without holding the call open while the statement waits for its slot:
    /// see [`super::polling`].
    async fn poll_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        let principal = principal(&request);
        let id = match pending_id(request.get_ref()) {
            Some(id) => id,
            None => {
                // Refused before anything starts: a statement over the quota never runs.
                self.pending.check_room(&principal.user)?;
                let inner = Arc::clone(&self.inner);
                let planning =
                    sqe_layers::task::spawn(async move { inner.plan_polled(request).await });
                self.pending.start(principal.clone(), planning)?
            }
        };
        let info = self.pending.poll(id, &principal, POLL_WAIT).await?;
        // Its rows wait for their DoGet as long as the client polls.
        if let Some(ticket) = info.info.as_ref().and_then(ticket_handle) {
            self.inner.statements().renew(&ticket, &principal);
        }
        Ok(Response::new(info))
    }

    async fn get_schema(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<SchemaResult>, Status> {
        let schema = self.schema_of(&request).await?;
        let result: SchemaResult = SchemaAsIpc::new(&schema, &IpcWriteOptions::default())
            .try_into()
            .map_err(|e: datafusion::arrow::error::ArrowError| Status::internal(e.to_string()))?;
        Ok(Response::new(result))
    }

    async fn do_get(
        &self,
        request: Request<Ticket>,
    ) -> Result<Response<Self::DoGetStream>, Status> {
        FlightService::do_get(self.inner.as_ref(), request).await
    }

    async fn do_put(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        FlightService::do_put(self.inner.as_ref(), request).await
    }

    async fn do_action(
        &self,
        request: Request<Action>,
    ) -> Result<Response<Self::DoActionStream>, Status> {
        FlightService::do_action(self.inner.as_ref(), request).await
    }

    async fn list_actions(
        &self,
        request: Request<Empty>,
    ) -> Result<Response<Self::ListActionsStream>, Status> {
        FlightService::list_actions(self.inner.as_ref(), request).await
    }

    async fn do_exchange(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        FlightService::do_exchange(self.inner.as_ref(), request).await
    }
}

/// The tonic service to serve.
pub(crate) fn flight_sql_server(
    service: SqeFlightService,
) -> FlightServiceServer<SqeFlightService> {
    FlightServiceServer::new(service)
        .max_decoding_message_size(64 * 1024 * 1024)
        .max_encoding_message_size(64 * 1024 * 1024)
}
