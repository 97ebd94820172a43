//! Per-RPC cost of SQE's worker channel stack (trace, retry, timeout, token auth on the client;
//! trace extract and token verify on the server) against a bare tonic channel and server, over
//! an in-memory transport and over loopback TCP, plus the cost of signing and verifying a token.
//!
//! ```sh
//! cargo run -p sqe-benches --release --bin channel_overhead [-- <calls per case>]
//! ```

// Test and benchmark code: the lock and spawn bans are for the code that ships.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]
#![allow(clippy::print_stdout)] // a harness prints its table

use std::sync::Arc;
use std::time::Instant;

use hyper_util::rt::TokioIo;
use sqe_benches::Percentiles;
use sqe_layers::auth::{TokenSigner, TokenVerifier, audience_of};
use sqe_layers::io_runtime::IoRuntime;
use sqe_layers::{ChannelSettings, LayeredChannel, WorkerChannelStack, server_layers};
use tonic::transport::{Channel, Endpoint, Server};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};

type Error = Box<dyn std::error::Error + Send + Sync>;

const SECRET: &[u8] = b"benchmark secret";
/// What the in-memory server is called, and its tokens' audience.
const IN_MEMORY: &str = "in-memory";

/// The standard health service; the empty service name is SERVING from the start.
fn health() -> HealthServer<impl Health> {
    tonic_health::server::health_reporter().1
}

/// The server-side layers for `layers`: None = none, Some(auth) = trace extract (+ verify,
/// each token once, as a worker does), for tokens to `audience`.
fn verifier(layers: Option<bool>, audience: &str) -> Result<Option<Arc<TokenVerifier>>, Error> {
    match layers {
        Some(true) => Ok(Some(Arc::new(
            TokenVerifier::new(&[SECRET], audience_of(audience))?.single_use(),
        ))),
        _ => Ok(None),
    }
}

/// A health server on loopback, bare (`None`) or behind the server-side layers.
async fn tcp_server(layers: Option<bool>) -> Result<String, Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let service = health();
    match layers {
        Some(_) => {
            let layers = server_layers("bench", verifier(layers, &url)?);
            tokio::spawn(
                Server::builder()
                    .layer(layers)
                    .add_service(service)
                    .serve_with_incoming(incoming),
            );
        }
        None => {
            tokio::spawn(
                Server::builder()
                    .add_service(service)
                    .serve_with_incoming(incoming),
            );
        }
    }
    Ok(url)
}

/// A channel over an in-memory duplex pipe to a fresh server, bare (`None`) or layered.
async fn in_memory_channel(layers: Option<bool>) -> Result<Channel, Error> {
    let (client, server) = tokio::io::duplex(1 << 20);
    let service = health();
    let incoming = tokio_stream::once(Ok::<_, std::io::Error>(server));
    match layers {
        Some(_) => {
            let layers = server_layers("bench", verifier(layers, IN_MEMORY)?);
            tokio::spawn(
                Server::builder()
                    .layer(layers)
                    .add_service(service)
                    .serve_with_incoming(incoming),
            );
        }
        None => {
            tokio::spawn(
                Server::builder()
                    .add_service(service)
                    .serve_with_incoming(incoming),
            );
        }
    }
    let mut client = Some(client);
    let channel = Endpoint::from_static("http://in-memory")
        .connect_with_connector(tower::service_fn(move |_| {
            let io = client.take();
            async move {
                io.map(TokioIo::new)
                    .ok_or_else(|| std::io::Error::other("one connection only"))
            }
        }))
        .await?;
    Ok(channel)
}

/// Times `calls` RPCs on each client, alternating between them call by call so that all see
/// the same machine state (on a small machine, drift between two separate runs is larger than
/// the differences measured). Every channel is boxed the same way, the bare one included.
async fn measure(calls: usize, clients: Vec<LayeredChannel>) -> Result<Vec<Percentiles>, Error> {
    let mut clients: Vec<_> = clients.into_iter().map(HealthClient::new).collect();
    let request = || HealthCheckRequest {
        service: String::new(),
    };
    for client in &mut clients {
        for _ in 0..calls / 10 {
            client.check(request()).await?;
        }
    }
    let mut samples = vec![Vec::with_capacity(calls); clients.len()];
    for _ in 0..calls {
        for (client, samples) in clients.iter_mut().zip(&mut samples) {
            let started = Instant::now();
            client.check(request()).await?;
            samples.push(started.elapsed().as_nanos() as u64);
        }
    }
    Ok(samples.iter_mut().map(|s| Percentiles::of(s)).collect())
}

fn boxed(channel: Channel) -> LayeredChannel {
    tower::util::BoxCloneSyncService::new(channel)
}

fn stack(io: &Arc<IoRuntime>, auth: bool) -> Result<WorkerChannelStack, Error> {
    let signer = if auth {
        Some(TokenSigner::new(SECRET, "bench", IN_MEMORY)?)
    } else {
        None
    };
    Ok(WorkerChannelStack::new(
        Arc::clone(io),
        signer,
        ChannelSettings::default(),
    ))
}

fn row(name: &str, results: &[Percentiles]) {
    let [bare, no_auth, full] = results else {
        return;
    };
    println!(
        "| {name:<10} | {:>6.1} / {:>6.1} | {:>6.1} / {:>6.1} | {:>6.1} / {:>6.1} | {:>+8.1} | {:>+8.1} |",
        bare.p50,
        bare.p99,
        no_auth.p50,
        no_auth.p99,
        full.p50,
        full.p99,
        no_auth.p50 - bare.p50,
        full.p50 - bare.p50,
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5000);
    let io = IoRuntime::new(1)?;
    println!("Unary health-check RPCs, {calls} sequential calls per case; latencies in µs.\n");
    println!(
        "Each cell: p50 / p99. \"stack, no auth\": trace, retry and timeout layers (client) and"
    );
    println!("trace extract (server); \"full stack\" adds token signing and verification.\n");
    println!(
        "| transport  | bare            | stack, no auth  | full stack      | +p50 no auth | +p50 full |"
    );
    println!(
        "|------------|-----------------|-----------------|-----------------|----------|----------|"
    );

    let clients = vec![
        boxed(in_memory_channel(None).await?),
        stack(&io, false)?.wrap(in_memory_channel(Some(false)).await?, IN_MEMORY),
        stack(&io, true)?.wrap(in_memory_channel(Some(true)).await?, IN_MEMORY),
    ];
    row("in-memory", &measure(calls, clients).await?);

    // The same TCP and HTTP/2 settings for all clients; the layered ones also run their
    // connection on the I/O runtime.
    let bare_endpoint = Endpoint::from_shared(tcp_server(None).await?)?
        .tcp_nodelay(true)
        .http2_keep_alive_interval(ChannelSettings::default().keep_alive)
        .keep_alive_while_idle(true);
    let clients = vec![
        boxed(bare_endpoint.connect().await?),
        stack(&io, false)?.channel(&tcp_server(Some(false)).await?)?,
        stack(&io, true)?.channel(&tcp_server(Some(true)).await?)?,
    ];
    row("loopback", &measure(calls, clients).await?);

    let signer = TokenSigner::new(SECRET, "bench", IN_MEMORY)?;
    let verifier = TokenVerifier::new(&[SECRET], IN_MEMORY)?.single_use();
    let mut sign = Vec::with_capacity(calls);
    let mut verify = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let token = signer.sign()?;
        sign.push(started.elapsed().as_nanos() as u64);
        let started = Instant::now();
        verifier.verify(&token)?;
        verify.push(started.elapsed().as_nanos() as u64);
    }
    let (sign, verify) = (Percentiles::of(&mut sign), Percentiles::of(&mut verify));
    println!("\n| token (HS256) | p50 µs | p99 µs |");
    println!("|---------------|--------|--------|");
    println!("| sign          | {:>6.2} | {:>6.2} |", sign.p50, sign.p99);
    println!(
        "| verify        | {:>6.2} | {:>6.2} |",
        verify.p50, verify.p99
    );
    Ok(())
}
