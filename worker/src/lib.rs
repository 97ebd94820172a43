//! The SQE worker node: a datafusion-distributed `Worker` behind the server-side layers.
//!
//! - [`server`]: the worker's gRPC server (plan fragments in, Arrow batches out).
//! - [`channel::SqeChannelResolver`]: every connection to a worker goes through the layer stack,
//!   from the coordinator and from other workers; [`peers`] builds it from a node's settings.
//! - [`membership`]: registration with a coordinator, heartbeats and the drain at shutdown.
//! - [`results`]: result partitions clients read straight from the worker (Flight SQL parallel
//!   endpoints).

// Test code may lock and spawn as it likes; the bans are for the code that ships.
#![cfg_attr(test, allow(clippy::disallowed_types, clippy::disallowed_methods))]

pub mod channel;
mod error;
pub mod membership;
pub mod node;
pub mod peers;
pub mod results;
pub mod server;
pub mod task_errors;
mod task_span;

pub use error::NodeError;
