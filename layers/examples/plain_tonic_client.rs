//! The layer stack around a plain tonic client and server (the standard gRPC health service),
//! outside SQE.
//!
//! ```sh
//! cargo run -p sqe-layers --example plain_tonic_client
//! ```
//!
//! Starts a health server that requires tokens, then calls it three ways: through the stack
//! with the right secret (SERVING), with a wrong secret (refused, naming the server), and with
//! a bare channel (refused: no token).

// Test and benchmark code: the lock and spawn bans are for the code that ships.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]
#![allow(clippy::print_stdout)] // an example prints what it shows

use std::sync::Arc;

use sqe_layers::auth::{TokenSigner, TokenVerifier};
use sqe_layers::io_runtime::IoRuntime;
use sqe_layers::{ChannelSettings, WorkerChannelStack, server_layers};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A server that checks tokens for the audience "health".
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter.set_serving::<tonic_health::pb::health_server::HealthServer<tonic_health::server::HealthService>>().await;
    let verifier = Arc::new(TokenVerifier::new(
        &[b"shared-secret".as_slice()],
        "health",
    )?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(
        tonic::transport::Server::builder()
            .layer(server_layers("example-server", Some(Arc::clone(&verifier))))
            .add_service(health)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    let io = IoRuntime::new(1)?;
    let request = || HealthCheckRequest {
        service: "grpc.health.v1.Health".into(),
    };

    // 1. Through the stack, with the right secret.
    let signer = TokenSigner::new(b"shared-secret", "example-client", "health")?;
    let stack = WorkerChannelStack::new(Arc::clone(&io), Some(signer), ChannelSettings::default());
    let response = HealthClient::new(stack.channel(&url)?)
        .check(request())
        .await?;
    println!("right secret: {:?}", response.into_inner().status());

    // 2. A wrong secret: the error names the server.
    let wrong = TokenSigner::new(b"wrong-secret", "example-client", "health")?;
    let stack = WorkerChannelStack::new(Arc::clone(&io), Some(wrong), ChannelSettings::default());
    if let Err(status) = HealthClient::new(stack.channel(&url)?)
        .check(request())
        .await
    {
        println!("wrong secret: {:?}: {}", status.code(), status.message());
    }

    // 3. No token at all.
    let bare = tonic::transport::Endpoint::from_shared(url.clone())?
        .connect()
        .await?;
    if let Err(status) = HealthClient::new(bare).check(request()).await {
        println!("no token: {:?}: {}", status.code(), status.message());
    }
    println!(
        "tokens verified by the server: {}",
        verifier.stats().verified()
    );
    Ok(())
}
