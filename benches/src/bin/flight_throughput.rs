//! Result-stream throughput of a large scan: SQE's Flight SQL endpoint to a real client over
//! loopback, beside the same plan run in-process by SQE's engine (no client protocol) and by
//! single-process DataFusion over the same Parquet files.
//!
//! ```sh
//! cargo run -p sqe-benches --release --bin flight_throughput [-- <scale factor> <runs>]
//! ```
#![allow(clippy::print_stdout)] // a harness prints its table

use std::path::Path;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use futures::{Stream, StreamExt};
use sqe_gateway::engine::{Outcome, SessionSettings};
use sqe_gateway::local::{LocalOptions, start_local};
use sqe_gateway::shell::connection::{
    Connection, Credentials, StatementResult, Target, flight_error,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

const QUERY: &str = "SELECT * FROM tpch.lineitem";

/// What one run moved.
#[derive(Clone, Copy, Default)]
struct Run {
    rows: u64,
    /// Arrow data bytes (the buffers the rows occupy, as sliced), the same measure for every case.
    bytes: u64,
    elapsed: Duration,
}

impl Run {
    fn gb_per_s(&self) -> f64 {
        self.bytes as f64 / self.elapsed.as_secs_f64() / 1e9
    }
    fn mrows_per_s(&self) -> f64 {
        self.rows as f64 / self.elapsed.as_secs_f64() / 1e6
    }
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

async fn datafusion_baseline(warehouse: &Path) -> Result<Run, Error> {
    let started = Instant::now();
    let ctx = SessionContext::new();
    let dir = warehouse.join("tpch").join("lineitem").join("data");
    ctx.register_parquet(
        "lineitem",
        &format!("{}/", dir.display()),
        ParquetReadOptions::default(),
    )
    .await?;
    let stream = ctx
        .sql("SELECT * FROM lineitem")
        .await?
        .execute_stream()
        .await?;
    drain(started, stream).await
}

async fn engine_in_process(
    engine: &std::sync::Arc<sqe_gateway::engine::Engine>,
) -> Result<Run, Error> {
    let started = Instant::now();
    match engine.execute(&SessionSettings::default(), QUERY).await? {
        Outcome::Rows(stream) => drain(started, stream).await,
        Outcome::Updated { .. } => Err("the scan reported an update".into()),
    }
}

async fn flight_sql(target: &Target) -> Result<Run, Error> {
    let started = Instant::now();
    let mut connection = Connection::open(target, &Credentials::None).await?;
    let info = connection.plan(QUERY).await?;
    match connection.fetch(&info).await? {
        StatementResult::Rows(stream) => {
            drain(started, stream.map(|b| b.map_err(flight_error))).await
        }
        StatementResult::Update { .. } => Err("the scan reported an update".into()),
    }
}

fn median(runs: &mut [Run]) -> Run {
    runs.sort_by_key(|r| r.elapsed);
    runs[runs.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let scale_factor: f64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1.0);
    let runs: usize = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(3)
        .max(1);

    let dir = tempfile::tempdir()?;
    println!("generating TPC-H SF {scale_factor} and starting a coordinator with 2 workers ...");
    let cluster = start_local(&LocalOptions {
        data_dir: dir.path().to_path_buf(),
        workers: 2,
        flight_sql_port: 0,
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
    let engine = std::sync::Arc::clone(&cluster.coordinator.engine);

    // Warm the page cache and the connections once, then alternate the cases run by run.
    datafusion_baseline(&warehouse).await?;
    let mut results: [Vec<Run>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..runs {
        results[0].push(datafusion_baseline(&warehouse).await?);
        results[1].push(engine_in_process(&engine).await?);
        results[2].push(flight_sql(&target).await?);
    }
    let names = [
        "DataFusion, one process, Parquet files (baseline)",
        "SQE engine in-process (2 workers, no client protocol)",
        "SQE Flight SQL -> client over loopback",
    ];
    println!("\n`{QUERY}` at SF {scale_factor}, median of {runs} runs\n");
    println!(
        "{:<56} {:>12} {:>10} {:>10} {:>10}",
        "case", "rows", "GB", "seconds", "GB/s"
    );
    let mut rows = None;
    for (name, runs) in names.iter().zip(results.iter_mut()) {
        let m = median(runs);
        if *rows.get_or_insert(m.rows) != m.rows {
            return Err(format!("{name} returned {} rows, not {rows:?}", m.rows).into());
        }
        println!(
            "{:<56} {:>12} {:>10.3} {:>10.3} {:>10.3}   ({:.2} M rows/s)",
            name,
            m.rows,
            m.bytes as f64 / 1e9,
            m.elapsed.as_secs_f64(),
            m.gb_per_s(),
            m.mrows_per_s()
        );
    }
    println!(
        "{:<56} {:>12}",
        "SQE Trino HTTP -> client", "not served yet (Trino protocol issue)"
    );
    cluster.stop().await;
    Ok(())
}
