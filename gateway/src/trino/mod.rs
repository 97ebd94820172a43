//! The Trino client protocol (HTTP + JSON) on the coordinator: `POST /v1/statement`, paging
//! through `nextUri`, cancel, `/v1/info`. Kept apart as the Flight SQL endpoint is: header
//! parsing, value encoding and JSON shapes are protocol; `query` owns one query's pages;
//! `server` is the axum wiring.

pub(crate) mod auth;
pub(crate) mod encode;
pub(crate) mod encoded;
pub(crate) mod errors;
pub(crate) mod headers;
pub(crate) mod query;
pub(crate) mod results;
pub(crate) mod server;
pub(crate) mod spooling;

#[cfg(test)]
mod case_tests;
#[cfg(test)]
mod endpoint_tests;

pub(crate) use server::{PeerAddr, TrinoEndpoint, trino_router};
