//! Write throughput of CREATE TABLE AS: SQE copying TPC-H lineitem into a new Iceberg table
//! with its two workers writing the data files, the same with the coordinator alone
//! (`distributed_execution = false`), and single-process DataFusion writing the same rows as
//! Parquet (zstd, as SQE's writers) from the same files.
//!
//! ```sh
//! cargo run -p sqe-benches --release --bin ctas_throughput [-- <scale factor> <runs>]
//! ```

// Benchmark code: the lock and spawn bans are for the code that ships.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]
#![allow(clippy::print_stdout)] // a harness prints its table

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::common::config::TableParquetOptions;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use futures::TryStreamExt;
use sqe_engine::engine::{Engine, Outcome, SessionSettings};
use sqe_gateway::local::{LocalOptions, start_local};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// What one run wrote.
#[derive(Clone, Copy, Default)]
struct Run {
    rows: u64,
    /// Bytes of the data files written.
    bytes: u64,
    elapsed: Duration,
}

/// Every file under `dir`, in bytes.
fn bytes_under(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            bytes_under(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

async fn datafusion_baseline(warehouse: &Path, out: &Path) -> Result<Run, Error> {
    let started = Instant::now();
    let ctx = SessionContext::new();
    let dir = warehouse.join("tpch").join("lineitem").join("data");
    ctx.register_parquet(
        "lineitem",
        &format!("{}/", dir.display()),
        ParquetReadOptions::default(),
    )
    .await?;
    let mut parquet = TableParquetOptions::default();
    parquet.global.compression = Some("zstd(3)".into());
    let written = ctx
        .sql("SELECT * FROM lineitem")
        .await?
        .write_parquet(
            &format!("{}/", out.display()),
            DataFrameWriteOptions::new(),
            Some(parquet),
        )
        .await?;
    let elapsed = started.elapsed();
    let rows = written
        .first()
        .and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::UInt64Array>()
                .map(|a| a.value(0))
        })
        .ok_or("DataFusion reported no row count")?;
    let bytes = bytes_under(out)?;
    std::fs::remove_dir_all(out)?;
    Ok(Run {
        rows,
        bytes,
        elapsed,
    })
}

async fn statement(
    engine: &Arc<Engine>,
    session: &SessionSettings,
    sql: &str,
) -> Result<u64, Error> {
    match engine.execute(session, sql).await? {
        Outcome::Updated { rows, .. } => Ok(rows.unwrap_or(0)),
        Outcome::Rows(stream) => {
            stream.try_collect::<Vec<_>>().await?;
            Ok(0)
        }
    }
}

async fn sqe_ctas(engine: &Arc<Engine>, distributed: bool, run: usize) -> Result<Run, Error> {
    let mut session = SessionSettings::default();
    session.properties.set(
        "distributed_execution",
        &distributed.to_string(),
        &engine.property_limits(),
    )?;
    let table = format!("bench.lineitem_{run}");
    let written_before = sqe_iceberg_bytes();
    let started = Instant::now();
    let rows = statement(
        engine,
        &session,
        &format!("CREATE TABLE {table} AS SELECT * FROM tpch.lineitem"),
    )
    .await?;
    let elapsed = started.elapsed();
    let bytes = sqe_iceberg_bytes() - written_before;
    statement(engine, &session, &format!("DROP TABLE {table}")).await?;
    Ok(Run {
        rows,
        bytes,
        elapsed,
    })
}

/// Data file bytes written in this process (coordinator and workers share it here).
fn sqe_iceberg_bytes() -> u64 {
    sqe_iceberg::write::WRITTEN.bytes()
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
        trino_http_port: None,
        scale_factor,
        tpch_parts: 8,
        ..LocalOptions::default()
    })
    .await?;
    let warehouse = dir.path().join("warehouse");
    let out = dir.path().join("datafusion-out");
    let engine = Arc::clone(&cluster.coordinator.engine);
    statement(&engine, &SessionSettings::default(), "CREATE SCHEMA bench").await?;

    // Warm the page cache once, then alternate the cases run by run.
    datafusion_baseline(&warehouse, &out).await?;
    let mut results: [Vec<Run>; 3] = Default::default();
    for run in 0..runs {
        results[0].push(datafusion_baseline(&warehouse, &out).await?);
        results[1].push(sqe_ctas(&engine, true, run).await?);
        results[2].push(sqe_ctas(&engine, false, run).await?);
    }
    let names = [
        "DataFusion, one process, Parquet (baseline)",
        "SQE CTAS, 2 workers write",
        "SQE CTAS, coordinator alone",
    ];
    println!(
        "\nCREATE TABLE AS SELECT * FROM tpch.lineitem at SF {scale_factor}, median of {runs} runs"
    );
    println!(
        "{:<46} {:>11} {:>9} {:>9} {:>12} {:>9}",
        "case", "rows", "MB", "seconds", "M rows/s", "MB/s"
    );
    let mut expected = None;
    for (name, runs) in names.iter().zip(results.iter_mut()) {
        let m = median(runs);
        if *expected.get_or_insert(m.rows) != m.rows {
            return Err(format!("{name} wrote {} rows, not {expected:?}", m.rows).into());
        }
        let seconds = m.elapsed.as_secs_f64();
        println!(
            "{:<46} {:>11} {:>9.1} {:>9.3} {:>12.2} {:>9.1}",
            name,
            m.rows,
            m.bytes as f64 / 1e6,
            seconds,
            m.rows as f64 / seconds / 1e6,
            m.bytes as f64 / seconds / 1e6,
        );
    }
    println!("\nMB: bytes of the Parquet data files written.");
    cluster.stop().await;
    Ok(())
}
