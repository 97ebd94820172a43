//! The Trino client protocol (HTTP + JSON) on the coordinator: `POST /v1/statement`, paging
//! through `nextUri`, cancel, `/v1/info`. Kept apart as the Flight SQL endpoint is: header
//! parsing, value encoding and JSON shapes are protocol; `query` owns one query's pages;
//! `server` is the axum wiring.

pub mod auth;
pub mod encode;
pub mod errors;
pub mod headers;
pub mod query;
pub mod results;
pub mod server;

pub use server::{TrinoEndpoint, trino_router};
