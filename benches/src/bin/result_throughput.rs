//! Result throughput of large scans through each client protocol: SQE's Flight SQL endpoint
//! (through the coordinator, and in parallel endpoints read at the workers) and its Trino JSON
//! paging, each to a real client over loopback, beside the same plan run
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

/// Flight SQL parallel endpoints, as ADBC reads them: GetFlightInfo on the coordinator, then
/// every endpoint at once, each straight from the worker it is located at.
async fn flight_sql_parallel(target: &Target, sql: &str) -> Result<Run, Error> {
    use arrow_flight::decode::FlightRecordBatchStream;
    use arrow_flight::flight_service_client::FlightServiceClient;
    use arrow_flight::sql::client::FlightSqlServiceClient;

    let started = Instant::now();
    let channel = tonic::transport::Endpoint::from_shared(target.uri())?
        .connect()
        .await?;
    let info = FlightSqlServiceClient::new(channel)
        .execute(sql.to_string(), None)
        .await?;
    if info.endpoint.len() < 2 {
        return Err(format!(
            "{sql}: {} endpoint, not one per partition",
            info.endpoint.len()
        )
        .into());
    }
    let mut readers = Vec::new();
    for endpoint in info.endpoint {
        let ticket = endpoint.ticket.ok_or("an endpoint without a ticket")?;
        let location = endpoint
            .location
            .first()
            .ok_or("an endpoint without a location")?
            .uri
            .replace("grpc+tcp://", "http://");
        readers.push(tokio::spawn(async move {
            let channel = tonic::transport::Endpoint::from_shared(location)?
                .connect()
                .await?;
            let data = FlightServiceClient::new(channel)
                .do_get(ticket)
                .await?
                .into_inner();
            let batches = FlightRecordBatchStream::new_from_flight_data(
                data.map(|d| d.map_err(arrow_flight::error::FlightError::from)),
            );
            drain(started, batches).await
        }));
    }
    let mut total = Run::default();
    for reader in readers {
        let part = reader.await??;
        total.rows += part.rows;
        total.bytes += part.bytes;
    }
    total.elapsed = started.elapsed();
    Ok(total)
}

/// How a Trino client asks for its rows.
#[derive(Clone, Copy)]
enum Paging {
    /// Rows in the pages, compressed with gzip or not.
    Classic { gzip: bool },
    /// The spooling protocol with `json+zstd` segments.
    SpooledZstd,
}

/// A Trino client's work: POST, then GET every `nextUri`, parsing each page's JSON; with gzip,
/// asking for compressed pages and inflating them (as the python client does); spooled, also
/// downloading, decompressing, parsing and acknowledging each segment.
async fn trino_json(base: &str, sql: &str, paging: Paging) -> Result<Run, Error> {
    let started = Instant::now();
    let client = reqwest::Client::new();
    let accept = match paging {
        Paging::Classic { gzip: true } => "gzip",
        _ => "identity",
    };
    let mut run = Run::default();
    let mut post = client
        .post(format!("{base}/v1/statement"))
        .header("X-Trino-User", "bench")
        .header("Accept-Encoding", accept);
    if let Paging::SpooledZstd = paging {
        post = post.header("X-Trino-Query-Data-Encoding", "json+zstd");
    }
    let mut response = post.body(sql.to_string()).send().await?;
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
        match page.get("data") {
            Some(serde_json::Value::Array(rows)) => run.rows += rows.len() as u64,
            Some(data) => {
                for segment in data["segments"].as_array().into_iter().flatten() {
                    run.rows += read_segment(&client, segment, &mut run.bytes).await?;
                }
            }
            None => {}
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

/// A spooling protocol segment's rows: decoded from the page or downloaded (and then
/// acknowledged), decompressed and parsed; bytes downloaded are added to `bytes`.
async fn read_segment(
    client: &reqwest::Client,
    segment: &serde_json::Value,
    bytes: &mut u64,
) -> Result<u64, Error> {
    use base64::Engine as _;
    let data = match segment["type"].as_str() {
        Some("inline") => base64::engine::general_purpose::STANDARD.decode(
            segment["data"]
                .as_str()
                .ok_or("an inline segment without data")?,
        )?,
        _ => {
            let headers: Vec<(String, String)> = segment["headers"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v[0].as_str()?.to_string())))
                .collect();
            let with_headers = |mut request: reqwest::RequestBuilder| {
                for (name, value) in &headers {
                    request = request.header(name, value);
                }
                request
            };
            let uri = segment["uri"].as_str().ok_or("a segment without uri")?;
            let data = with_headers(client.get(uri)).send().await?.bytes().await?;
            *bytes += data.len() as u64;
            let ack = segment["ackUri"]
                .as_str()
                .ok_or("a segment without ackUri")?;
            with_headers(client.get(ack)).send().await?;
            data.to_vec()
        }
    };
    let json = match segment["metadata"]["uncompressedSize"].as_u64() {
        Some(size) => zstd::bulk::decompress(&data, usize::try_from(size)?)?,
        None => data,
    };
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&json)?;
    Ok(rows.len() as u64)
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
    let target = sqe_benches::flight_target(&cluster);
    let trino = sqe_benches::trino_base(&cluster)?;
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
        let mut results: [Vec<Run>; 7] = Default::default();
        for _ in 0..runs {
            results[0].push(datafusion_baseline(&warehouse, sql).await?);
            results[1].push(engine_in_process(&engine, sql).await?);
            results[2].push(flight_sql(&target, sql).await?);
            results[3].push(trino_json(&trino, sql, Paging::Classic { gzip: false }).await?);
            results[4].push(trino_json(&trino, sql, Paging::Classic { gzip: true }).await?);
            results[5].push(trino_json(&trino, sql, Paging::SpooledZstd).await?);
            results[6].push(flight_sql_parallel(&target, sql).await?);
        }
        let names = [
            "DataFusion, one process, Parquet (baseline)",
            "SQE engine in-process, 2 workers, no protocol",
            "SQE Flight SQL -> Rust client, loopback",
            "SQE Trino JSON paging -> HTTP client, loopback",
            "SQE Trino JSON paging, gzip -> HTTP client",
            "SQE Trino spooled json+zstd -> HTTP client",
            "SQE Flight SQL parallel endpoints -> workers",
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
        "\nMB: Arrow buffer bytes for the Arrow cases, bytes received (JSON, gzip, or pages and \
         zstd segments) for the Trino cases."
    );
    cluster.stop().await;
    Ok(())
}
