//! Result throughput of large scans through each client protocol: SQE's Flight SQL endpoint
//! and its Trino JSON paging, each to a real client over loopback, beside the same plan run
//! in-process by SQE's engine (no protocol) and by single-process DataFusion over the same
//! Parquet files. A wide result (every lineitem column) and a narrow one (one bigint column).
//!
//! ```sh
//! cargo run -p sqe-benches --release --bin result_throughput [-- <scale factor> <runs>]
//! ```

// Test and benchmark code: the lock and spawn bans are for the code that ships.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]
#![allow(clippy::print_stdout)] // a harness prints its table

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use futures::{Stream, StreamExt};
use sqe_engine::engine::{Engine, Outcome, SessionSettings};
use sqe_gateway::local::{LocalOptions, start_local};
use sqe_gateway::shell::connection::{
    Connection, Credentials, StatementResult, Target, flight_error,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// What one run moved.
#[derive(Clone, Copy, Default)]
struct Run {
    rows: u64,
    /// Arrow data bytes (buffers as sliced) for Arrow cases; JSON bytes for Trino paging.
    bytes: u64,
    elapsed: Duration,
}

fn data_bytes(batch: &RecordBatch) -> u64 {
    batch
        .columns()
        .iter()
        .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0) as u64)
        .sum()
}

async fn drain<S, E>(started: Instant, mut stream: S) -> Result<Run, Error>
where
    S: Stream<Item = Result<RecordBatch, E>> + Unpin,
    E: Into<Error>,
{
    let mut run = Run::default();
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(Into::into)?;
        run.rows += batch.num_rows() as u64;
        run.bytes += data_bytes(&batch);
    }
    run.elapsed = started.elapsed();
    Ok(run)
}

async fn datafusion_baseline(warehouse: &Path, sql: &str) -> Result<Run, Error> {
    let started = Instant::now();
    let ctx = SessionContext::new();
    let dir = warehouse.join("tpch").join("lineitem").join("data");
    ctx.register_parquet(
        "lineitem",
        &format!("{}/", dir.display()),
        ParquetReadOptions::default(),
    )
    .await?;
    let sql = sql.replace("tpch.lineitem", "lineitem");
    let stream = ctx.sql(&sql).await?.execute_stream().await?;
    drain(started, stream).await
}

async fn engine_in_process(engine: &Arc<Engine>, sql: &str) -> Result<Run, Error> {
    let started = Instant::now();
    match engine.execute(&SessionSettings::default(), sql).await? {
        Outcome::Rows(stream) => drain(started, stream).await,
        Outcome::Updated { .. } => Err("the scan reported an update".into()),
    }
}

async fn flight_sql(target: &Target, sql: &str) -> Result<Run, Error> {
    let started = Instant::now();
    let mut connection = Connection::open(target, &Credentials::None).await?;
    let info = connection.plan(sql).await?;
    match connection.fetch(&info).await? {
        StatementResult::Rows(stream) => {
            drain(started, stream.map(|b| b.map_err(flight_error))).await
        }
        StatementResult::Update { .. } => Err("the scan reported an update".into()),
    }
}

/// A Trino client's work: POST, then GET every `nextUri`, parsing each page's JSON; with
/// `gzip`, asking for compressed pages and inflating them (as the python client does).
async fn trino_json(base: &str, sql: &str, gzip: bool) -> Result<Run, Error> {
    let started = Instant::now();
    let client = reqwest::Client::new();
    let accept = if gzip { "gzip" } else { "identity" };
    let mut run = Run::default();
    let mut response = client
        .post(format!("{base}/v1/statement"))
        .header("X-Trino-User", "bench")
        .header("Accept-Encoding", accept)
        .body(sql.to_string())
        .send()
        .await?;
    loop {
        let compressed = response.headers().get("content-encoding").is_some();
        let body = response.bytes().await?;
        run.bytes += body.len() as u64;
        let body = if compressed {
            let mut json = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut json)?;
            json.into()
        } else {
            body
        };
        let page: serde_json::Value = serde_json::from_slice(&body)?;
        if let Some(error) = page.get("error") {
            return Err(format!("query failed: {error}").into());
        }
        if let Some(rows) = page.get("data").and_then(|d| d.as_array()) {
            run.rows += rows.len() as u64;
        }
        let Some(next) = page.get("nextUri").and_then(|u| u.as_str()) else {
            break;
        };
        response = client
            .get(next)
            .header("Accept-Encoding", accept)
            .send()
            .await?;
    }
    run.elapsed = started.elapsed();
    Ok(run)
}

fn median(runs: &mut [Run]) -> Run {
    runs.sort_by_key(|r| r.elapsed);
    runs[runs.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (scale_factor, runs) = sqe_benches::scale_and_runs(1.0, 3)?;

    let dir = tempfile::tempdir()?;
    println!("generating TPC-H SF {scale_factor} and starting a coordinator with 2 workers ...");
    let cluster = start_local(&LocalOptions {
        data_dir: dir.path().to_path_buf(),
        workers: 2,
        flight_sql_port: 0,
        trino_http_port: Some(0),
        scale_factor,
        tpch_parts: 8,
        ..LocalOptions::default()
    })
    .await?;
    let warehouse = dir.path().join("warehouse");
    let addr = cluster.coordinator.flight_sql_addr;
    let target = Target {
        host: addr.ip().to_string(),
        port: addr.port(),
        tls: None,
    };
    let trino = format!(
        "http://{}",
        cluster
            .coordinator
            .trino_http_addr
            .ok_or("the Trino protocol is not served")?
    );
    let engine = Arc::clone(&cluster.coordinator.engine);

    for (label, sql) in [
        ("wide: every lineitem column", "SELECT * FROM tpch.lineitem"),
        (
            "narrow: one bigint column",
            "SELECT l_orderkey FROM tpch.lineitem",
        ),
    ] {
        // Warm the page cache and the connections once, then alternate the cases run by run.
        datafusion_baseline(&warehouse, sql).await?;
        let mut results: [Vec<Run>; 5] = Default::default();
        for _ in 0..runs {
            results[0].push(datafusion_baseline(&warehouse, sql).await?);
            results[1].push(engine_in_process(&engine, sql).await?);
            results[2].push(flight_sql(&target, sql).await?);
            results[3].push(trino_json(&trino, sql, false).await?);
            results[4].push(trino_json(&trino, sql, true).await?);
        }
        let names = [
            "DataFusion, one process, Parquet (baseline)",
            "SQE engine in-process, 2 workers, no protocol",
            "SQE Flight SQL -> Rust client, loopback",
            "SQE Trino JSON paging -> HTTP client, loopback",
            "SQE Trino JSON paging, gzip -> HTTP client",
        ];
        println!("\n{label}: `{sql}` at SF {scale_factor}, median of {runs} runs");
        println!(
            "{:<48} {:>11} {:>9} {:>9} {:>12} {:>9}",
            "case", "rows", "MB", "seconds", "M rows/s", "MB/s"
        );
        let mut expected = None;
        for (name, runs) in names.iter().zip(results.iter_mut()) {
            let m = median(runs);
            if *expected.get_or_insert(m.rows) != m.rows {
                return Err(format!("{name} returned {} rows, not {expected:?}", m.rows).into());
            }
            let seconds = m.elapsed.as_secs_f64();
            println!(
                "{:<48} {:>11} {:>9.1} {:>9.3} {:>12.2} {:>9.1}",
                name,
                m.rows,
                m.bytes as f64 / 1e6,
                seconds,
                m.rows as f64 / seconds / 1e6,
                m.bytes as f64 / seconds / 1e6,
            );
        }
    }
    println!(
        "\nMB: Arrow buffer bytes for the Arrow cases, bytes received (JSON, or gzip) for Trino paging."
    );
    cluster.stop().await;
    Ok(())
}
