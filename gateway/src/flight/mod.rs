//! The Arrow Flight SQL endpoint.
//!
//! As in InfluxDB 3, three parts: [`protocol`] (what arrow-flight does not model: session
//! options, cookies, handles), [`service`] (Flight SQL calls onto the engine) with its state
//! ([`sessions`], [`statements`], [`metadata`]), and [`server`] plus [`auth`] (the tonic service,
//! the RPCs the blanket implementation lacks, client authentication).

mod auth;
mod metadata;
mod polling;
pub(crate) mod protocol;
mod read_ahead;
mod server;
pub(crate) mod service;
mod sessions;
mod statements;
pub(crate) mod worker_results;

#[cfg(test)]
mod endpoint_tests;

use std::sync::Arc;

pub(crate) use auth::{ClientAuthLayer, client_auth_layer};
pub(crate) use server::{SqeFlightService, flight_sql_server};
pub(crate) use service::SqeFlightSqlService;
use tonic::Status;
use uuid::Uuid;

use crate::client_auth::ClientAuth;
use crate::config::IpcCompression;
use sqe_engine::queries::Queries;
use worker_results::ResultsAtWorkers;

/// The Flight SQL service over `queries`, with its client authentication layer.
pub(crate) fn flight_service(
    queries: Arc<Queries>,
    auth: Arc<ClientAuth>,
    compression: IpcCompression,
    at_workers: Option<Arc<ResultsAtWorkers>>,
) -> (ClientAuthLayer, SqeFlightService) {
    let layer = client_auth_layer(Arc::clone(&auth));
    (
        layer,
        SqeFlightService::new(SqeFlightSqlService::new(
            queries,
            auth,
            compression,
            at_workers,
        )),
    )
}

fn parse_handle_or_status(bytes: &[u8]) -> Result<Uuid, Status> {
    protocol::parse_handle(bytes).ok_or_else(|| Status::invalid_argument("malformed handle"))
}
