//! Tower layers for gRPC (tonic) channels and servers.
//!
//! Each layer has tower's shape — `FooLayer`, `Foo<S>`, a named response future and a small error
//! type — and none depends on anything but tonic, tower and http, so any tonic user can stack
//! them. Failures of a layer itself (a refused token, a missed deadline, a signing error) become
//! gRPC status *responses*, never new error types: a stacked channel keeps the inner channel's
//! error type (`tonic::transport::Error`) and still boxes into a
//! `BoxCloneSyncService<Request<Body>, Response<Body>, tonic::transport::Error>`.
//!
//! Client side, outermost first (the order [`WorkerChannelStack`] builds):
//!
//! | layer | what it does |
//! |---|---|
//! | [`unreachable::UnreachableLayer`] | answers a call that could not reach its peer with `UNAVAILABLE` naming the peer |
//! | [`trace::TraceLayer`] | a span per RPC, until its stream ends; injects W3C `traceparent` into the request metadata |
//! | [`retry::RetryLayer`] | retries failures that provably sent nothing (no byte of the body), with backoff, jitter and a budget |
//! | [`peer_down::PeerDownLayer`] | tells a listener (the worker pool) when an attempt failed because the peer could not be reached |
//! | [`rpc_metrics::RpcMetricsLayer`] | counts each attempt by method, final gRPC code and attempt number |
//! | [`timeout::TimeoutLayer`] | a deadline per attempt until response headers; sends `grpc-timeout` |
//! | [`auth::AuthLayer`] | signs a short-lived JWT for each request into `authorization`, its audience the peer's URL |
//! | channel | a tonic `Channel` whose connection tasks run on an [`io_runtime::IoRuntime`] |
//!
//! Server side: [`trace::TraceExtractLayer`] (continues the caller's trace), then
//! [`auth::VerifyLayer`] (rejects requests without a valid token with `Unauthenticated`);
//! [`stream_count::StreamCountLayer`] counts the calls of one RPC still running, streamed
//! responses included (a worker's running task partitions).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use sqe_layers::{ChannelSettings, WorkerChannelStack, auth::TokenSigner, io_runtime::IoRuntime};
//!
//! let io = IoRuntime::new(2)?;
//! let signer = TokenSigner::new(b"a shared secret", "my-client", "my-server")?;
//! let stack = WorkerChannelStack::new(io, Some(signer), ChannelSettings::default());
//! let channel = stack.channel("http://127.0.0.1:50052")?;
//! // `channel` is a tower service any tonic-generated client accepts:
//! // let client = MyServiceClient::new(channel);
//! # Ok(()) }
//! ```

// Test code may lock and spawn as it likes; the bans are for the code that ships.
#![cfg_attr(test, allow(clippy::disallowed_types, clippy::disallowed_methods))]

pub mod auth;
pub mod authorize;
mod call_end;
pub mod dedicated_runtime;
pub mod io_runtime;
pub mod peer_down;
pub mod retry;
pub mod rpc_metrics;
pub mod serve;
mod stack;
pub mod status;
pub mod stream_count;
pub mod task;
pub mod timeout;
pub mod trace;
pub mod unreachable;

pub use stack::{
    ChannelSettings, LayeredChannel, StackError, WorkerChannelStack, server_layers,
    server_layers_except,
};
pub use status::{error_chain, grpc_status_of};
