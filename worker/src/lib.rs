//! The SQE worker node: a datafusion-distributed `Worker` behind the server-side layers.
//!
//! - [`server`]: the worker's gRPC server (plan fragments in, Arrow batches out).
//! - [`channel::SqeChannelResolver`]: every connection to a worker goes through the layer stack,
//!   from the coordinator and from other workers; [`peers`] builds it from a node's settings.
//! - [`membership`]: registration with a coordinator, heartbeats and the drain at shutdown.

pub mod channel;
pub mod error;
pub mod membership;
pub mod node;
pub mod peers;
pub mod server;
mod task_span;

pub use error::NodeError;
