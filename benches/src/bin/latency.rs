//! Small-query latency as a tight Rust client sees it, beside the floor of the same round trips
//! to bare servers on the same machine: `SELECT 1` and a small distributed aggregate over Flight
//! SQL (GetFlightInfo then DoGet on one kept connection), `SELECT 1` over the Trino protocol
//! (POST, then GET until the last page, one kept HTTP connection); floors: a bare tonic server's
//! unary call (the standard health check) twice, as Flight SQL's two round trips, and a bare axum
//! server answering a POST and a GET with a small JSON body, as the Trino client's two.
//!
//! ```sh
//! cargo run -p sqe-benches --release --bin latency [-- <calls per case>]
//! ```

// Test and benchmark code: the lock and spawn bans are for the code that ships.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]
#![allow(clippy::print_stdout)] // a harness prints its table

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use sqe_benches::Percentiles;
use sqe_gateway::local::{LocalOptions, start_local};
use sqe_gateway::shell::connection::{Connection, Credentials, StatementResult};
use tokio::sync::Mutex;
use tonic::transport::{Endpoint, Server};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The answer the bare HTTP server gives: the size of a small Trino page.
const PAGE: &str = r#"{"id":"q","nextUri":null,"columns":[{"name":"_col0","type":"integer"}],"data":[[1]],"stats":{"state":"FINISHED"}}"#;

/// `calls` timings of `call` (after a tenth as many warm-up calls), in nanoseconds.
async fn timed<F, Fut>(calls: usize, mut call: F) -> Result<Percentiles, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), Error>>,
{
    for _ in 0..calls / 10 + 1 {
        call().await?;
    }
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        call().await?;
        samples.push(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    Ok(Percentiles::of(&mut samples))
}

/// A statement over Flight SQL on `connection`: GetFlightInfo, DoGet, every batch read.
async fn flight_sql(connection: &mut Connection, sql: &str) -> Result<(), Error> {
    let info = connection.plan(sql).await?;
    match connection.fetch(&info).await? {
        StatementResult::Rows(mut stream)
        | StatementResult::Update {
            result: mut stream, ..
        } => {
            while let Some(batch) = stream.next().await {
                batch?;
            }
        }
    }
    Ok(())
}

/// A statement over the Trino protocol: POST, then GET every `nextUri`.
async fn trino(client: &reqwest::Client, base: &str, sql: &str) -> Result<(), Error> {
    let mut page: serde_json::Value = client
        .post(format!("{base}/v1/statement"))
        .header("X-Trino-User", "bench")
        .body(sql.to_string())
        .send()
        .await?
        .json()
        .await?;
    while let Some(next) = page.get("nextUri").and_then(|u| u.as_str()) {
        page = client.get(next).send().await?.json().await?;
    }
    if let Some(error) = page.get("error") {
        return Err(format!("`{sql}` failed: {error}").into());
    }
    Ok(())
}

/// A bare axum server on loopback answering `PAGE` to a POST and a GET.
async fn bare_http() -> Result<String, Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let page = || async { ([("content-type", "application/json")], PAGE) };
    let router = axum::Router::new().route("/page", axum::routing::post(page).get(page));
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(base)
}

/// A bare tonic server (the standard health service) on loopback.
async fn bare_grpc() -> Result<String, Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let service = tonic_health::server::health_reporter().1;
    tokio::spawn(
        Server::builder()
            .tcp_nodelay(true)
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    Ok(url)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let calls = match std::env::args().nth(1) {
        Some(n) => n.parse::<usize>()?.max(1),
        None => 200,
    };
    let dir = tempfile::tempdir()?;
    println!("generating TPC-H SF 0.01 and starting a coordinator with 2 workers ...");
    let cluster = start_local(&LocalOptions {
        data_dir: dir.path().to_path_buf(),
        workers: 2,
        flight_sql_port: 0,
        trino_http_port: Some(0),
        scale_factor: 0.01,
        ..LocalOptions::default()
    })
    .await?;
    let target = sqe_benches::flight_target(&cluster);
    let trino_base = sqe_benches::trino_base(&cluster)?;
    // One call at a time: the lock is never contended, it only lends the connection.
    let connection = Arc::new(Mutex::new(
        Connection::open(&target, &Credentials::None).await?,
    ));
    let http = reqwest::Client::new();
    let nation = "SELECT n_regionkey, count(*) FROM tpch.nation GROUP BY n_regionkey";

    let http_base = bare_http().await?;
    let grpc_url = bare_grpc().await?;
    let channel = Endpoint::from_shared(grpc_url)?
        .tcp_nodelay(true)
        .connect()
        .await?;
    let health = HealthClient::new(channel);

    let mut rows = Vec::new();
    rows.push((
        "floor: bare tonic, 2 unary calls",
        timed(calls, || {
            let mut health = health.clone();
            async move {
                for _ in 0..2 {
                    health.check(HealthCheckRequest::default()).await?;
                }
                Ok(())
            }
        })
        .await?,
    ));
    for (name, sql) in [
        ("SQE Flight SQL: SELECT 1", "SELECT 1"),
        ("SQE Flight SQL: nation aggregate", nation),
    ] {
        let latency = timed(calls, || {
            let connection = Arc::clone(&connection);
            async move { flight_sql(&mut *connection.lock().await, sql).await }
        })
        .await?;
        rows.push((name, latency));
    }
    rows.push((
        "floor: bare axum, POST + GET",
        timed(calls, || {
            let http = http.clone();
            let base = http_base.clone();
            async move {
                http.post(format!("{base}/page"))
                    .send()
                    .await?
                    .bytes()
                    .await?;
                http.get(format!("{base}/page"))
                    .send()
                    .await?
                    .bytes()
                    .await?;
                Ok(())
            }
        })
        .await?,
    ));
    rows.push((
        "SQE Trino: SELECT 1",
        timed(calls, || {
            let http = http.clone();
            let base = trino_base.clone();
            async move { trino(&http, &base, "SELECT 1").await }
        })
        .await?,
    ));

    println!("\n{calls} calls per case, one at a time, loopback; microseconds");
    println!("{:<40} {:>10} {:>10} {:>10}", "case", "p50", "p99", "mean");
    for (name, p) in &rows {
        println!(
            "{:<40} {:>10.0} {:>10.0} {:>10.0}",
            name, p.p50, p.p99, p.mean
        );
    }
    cluster.stop().await;
    Ok(())
}
