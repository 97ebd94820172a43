//! One trace per query across real processes: a coordinator and two registering workers export
//! their spans over OTLP gRPC to a receiver built on the official `opentelemetry-proto`
//! service; the trace continues the client's `traceparent` and links across processes. The
//! worker RPC and commit counters are read from `/metrics` after the same workload.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use sqe_tests::metrics::{sample, scrape};
use sqe_tests::otlp::{OtlpReceiver, ReceivedSpan};
use sqe_tests::process::{SqeProcess, free_port};

use crate::TestResult;

const SECRET: &str = "telemetry-test-cluster-secret";
/// The caller's span our query must continue.
const CALLER_TRACE: &str = "5b8efff798038103d269b633813fc60c";
const CALLER_SPAN: &str = "eee19b7ec3c1b174";

fn write(path: &Path, text: &str) -> std::io::Result<String> {
    std::fs::write(path, text)?;
    Ok(path.display().to_string())
}

/// A statement over the Trino protocol: its rows and the trace id SQE answered with.
async fn trino(
    client: &reqwest::Client,
    addr: SocketAddr,
    sql: &str,
    traceparent: Option<&str>,
) -> Result<(Vec<Value>, String), Box<dyn std::error::Error + Send + Sync>> {
    let answer = sqe_tests::trino::statement(client, addr, sql, traceparent).await?;
    let trace_id = answer.trace_id.ok_or("no X-SQE-Trace-Id header")?;
    Ok((answer.rows, trace_id))
}

/// Waits until `done` holds for the spans received so far.
async fn spans_until(
    receiver: &OtlpReceiver,
    what: &str,
    done: impl Fn(&[ReceivedSpan]) -> bool,
) -> Result<Vec<ReceivedSpan>, String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let spans = receiver.spans();
        if done(&spans) {
            return Ok(spans);
        }
        if tokio::time::Instant::now() > deadline {
            let names: Vec<String> = spans
                .iter()
                .map(|s| format!("{}:{}:{}", s.instance, s.name, s.trace_id))
                .collect();
            return Err(format!("never received {what}; got {names:?}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Task RPCs (CoordinatorChannel) that ended OK on their first attempt, from `/metrics`.
async fn plans_sent(
    client: &reqwest::Client,
    metrics_port: u16,
) -> Result<f64, Box<dyn std::error::Error + Send + Sync>> {
    let text = scrape(client, ([127, 0, 0, 1], metrics_port).into()).await?;
    let key = r#"sqe_worker_rpcs_total{method="worker.WorkerService/CoordinatorChannel",code="OK",attempt="1"}"#;
    Ok(sample(&text, key).unwrap_or(0.0))
}

/// The count once it has stood still for a second: a task is counted when its stream ends,
/// which can be after its query has answered.
async fn plans_sent_settled(
    client: &reqwest::Client,
    metrics_port: u16,
) -> Result<f64, Box<dyn std::error::Error + Send + Sync>> {
    let (mut last, mut still) = (plans_sent(client, metrics_port).await?, 0);
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = plans_sent(client, metrics_port).await?;
        still = if now == last { still + 1 } else { 0 };
        last = now;
        if still == 5 {
            return Ok(now);
        }
    }
    Err("the CoordinatorChannel count never settled".into())
}

fn of_trace<'a>(spans: &'a [ReceivedSpan], trace_id: &str) -> Vec<&'a ReceivedSpan> {
    spans.iter().filter(|s| s.trace_id == trace_id).collect()
}

/// The processes of the traced cluster and where to reach them.
struct TracedCluster {
    coordinator: SqeProcess,
    workers: Vec<SqeProcess>,
    trino_addr: SocketAddr,
    metrics: u16,
}

/// A coordinator exporting by its `[telemetry]` section and two workers exporting by the
/// standard variable, all to `receiver`, with both workers active.
async fn start_traced_cluster(
    receiver: &OtlpReceiver,
    cwd: &Path,
) -> Result<TracedCluster, Box<dyn std::error::Error + Send + Sync>> {
    let (flight, trino_port, metrics) = (free_port()?, free_port()?, free_port()?);
    let coordinator_config = write(
        &cwd.join("coordinator.toml"),
        &format!(
            r#"
[coordinator]
node_id = "coordinator"
bind_address = "127.0.0.1"
flight_sql_port = {flight}
trino_http_port = {trino_port}
metrics_port = {metrics}
worker_secret = "{SECRET}"
scan_bytes_per_partition = 1

[catalog]
uri = "{catalog}"
warehouse = "{warehouse}"

[telemetry]
otlp_endpoint = "{endpoint}"
resource_attributes = {{ "deployment.environment" = "ci" }}
"#,
            catalog = cwd.join("catalog.db").display(),
            warehouse = cwd.join("warehouse").display(),
            endpoint = receiver.endpoint(),
        ),
    )?;
    let batching = ("OTEL_BSP_SCHEDULE_DELAY", "100");
    let mut coordinator = SqeProcess::spawn(
        "coordinator",
        &["coordinator", "--config", &coordinator_config],
        cwd,
        &[batching],
    )?;
    let trino_addr = SocketAddr::from(([127, 0, 0, 1], trino_port));
    coordinator.wait_for_port(trino_addr, Duration::from_secs(60))?;
    let endpoint = receiver.endpoint();
    let mut workers = Vec::new();
    for n in 1..=2 {
        let port = free_port()?;
        let config = write(
            &cwd.join(format!("worker-{n}.toml")),
            &format!(
                r#"
[worker]
node_id = "worker-{n}"
bind_address = "127.0.0.1"
flight_port = {port}
coordinator_url = "http://127.0.0.1:{flight}"
heartbeat_interval_secs = 1
shutdown_grace_secs = 0
worker_secret = "{SECRET}"
"#
            ),
        )?;
        let mut worker = SqeProcess::spawn(
            &format!("worker-{n}"),
            &["worker", "--config", &config],
            cwd,
            &[batching, ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
        )?;
        worker.wait_for_port(
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(60),
        )?;
        workers.push(worker);
    }
    let client = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (rows, _) = trino(
            &client,
            trino_addr,
            "SELECT count(*) FROM system.runtime.nodes WHERE NOT coordinator AND state = 'active'",
            None,
        )
        .await?;
        if rows == vec![serde_json::json!([2])] {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("workers never active: {rows:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(TracedCluster {
        coordinator,
        workers,
        trino_addr,
        metrics,
    })
}

/// The query's spans: named for their process, one tree under the caller's span, each worker's
/// task the child of a coordinator client span.
fn assert_query_trace(trace: &[&ReceivedSpan]) -> TestResult {
    // Who sent what: the resource names each process.
    for span in trace {
        let expected = if span.instance == "coordinator" {
            "sqe-coordinator"
        } else {
            "sqe-worker"
        };
        assert_eq!(span.service_name, expected, "{span:?}");
        assert!(!span.service_version.is_empty(), "{span:?}");
    }
    let names_on = |instance: &str| -> Vec<&str> {
        trace
            .iter()
            .filter(|s| s.instance == instance)
            .map(|s| s.name.as_str())
            .collect()
    };
    let on_coordinator = names_on("coordinator");
    for name in [
        "query",
        "parse",
        "plan",
        "cache",
        "plan.physical",
        "trino.page",
        "worker.WorkerService/CoordinatorChannel",
    ] {
        assert!(
            on_coordinator.contains(&name),
            "coordinator span {name} missing: {on_coordinator:?}"
        );
    }

    // One tree: the root continues the caller's span, every other span's parent is in the trace.
    let ids: std::collections::HashSet<&str> = trace.iter().map(|s| s.span_id.as_str()).collect();
    let query = trace
        .iter()
        .find(|s| s.name == "query")
        .ok_or("no query span")?;
    assert_eq!(query.parent_span_id, CALLER_SPAN, "{query:?}");
    for span in trace {
        if span.span_id != query.span_id {
            assert!(
                ids.contains(span.parent_span_id.as_str()),
                "{} on {} has a parent outside the trace: {span:?}",
                span.name,
                span.instance
            );
        }
    }
    let distributed = trace
        .iter()
        .find(|s| s.name == "plan.physical")
        .ok_or("no plan.physical span")?;
    assert_eq!(
        distributed
            .attributes
            .get("distributed")
            .map(String::as_str),
        Some("true")
    );

    // Across processes: each worker's task span is the child of a coordinator client span.
    for worker in ["worker-1", "worker-2"] {
        let task = trace
            .iter()
            .find(|s| s.instance == worker && s.name == "worker.WorkerService/CoordinatorChannel")
            .ok_or(format!("no task span on {worker}"))?;
        let caller = trace
            .iter()
            .find(|s| s.span_id == task.parent_span_id)
            .ok_or("the task's parent was not received")?;
        assert_eq!(caller.instance, "coordinator", "{caller:?}");
        assert_eq!(caller.name, task.name, "client and server span of one call");
        assert_eq!(
            task.attributes
                .get("rpc.grpc.status_code")
                .map(String::as_str),
            Some("0"),
            "the task span ends with its stream: {task:?}"
        );
        assert!(
            task.attributes.contains_key("sqe.stage") && task.attributes.contains_key("sqe.task"),
            "the task span names its stage and task: {task:?}"
        );
    }

    // Partition streams name the partitions they serve.
    assert!(
        trace
            .iter()
            .any(|s| s.name == "worker.WorkerService/ExecuteTask"
                && s.instance.starts_with("worker-")
                && s.attributes.contains_key("sqe.partitions")),
        "{trace:?}"
    );
    Ok(())
}

/// The INSERT's own trace has its commit, with the attempt under it.
fn assert_commit_trace(insert: &[&ReceivedSpan]) -> TestResult {
    let commit = insert
        .iter()
        .find(|s| s.name == "iceberg.commit")
        .ok_or("no iceberg.commit span")?;
    assert_eq!(
        commit.attributes.get("table").map(String::as_str),
        Some("demo.numbers"),
        "{commit:?}"
    );
    assert!(commit.attributes.contains_key("snapshot_id"), "{commit:?}");
    assert!(
        insert
            .iter()
            .any(|s| s.name == "iceberg.commit.attempt" && s.parent_span_id == commit.span_id)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_distributed_query_is_one_trace_across_the_coordinator_and_both_workers() -> TestResult {
    let receiver = OtlpReceiver::start().await?;
    let dir = tempfile::tempdir()?;
    let TracedCluster {
        coordinator,
        workers,
        trino_addr,
        metrics,
    } = start_traced_cluster(&receiver, dir.path()).await?;
    let client = reqwest::Client::new();
    trino(&client, trino_addr, "CREATE SCHEMA demo", None).await?;
    trino(
        &client,
        trino_addr,
        "CREATE TABLE demo.numbers AS SELECT value AS n, value % 7 AS bucket FROM generate_series(1, 20000)",
        None,
    )
    .await?;
    let (_, insert_trace) = trino(
        &client,
        trino_addr,
        "INSERT INTO demo.numbers SELECT value, value % 7 FROM generate_series(20001, 40000)",
        None,
    )
    .await?;

    let plans_before = plans_sent_settled(&client, metrics).await?;
    // The query under test: two data files, one scan task per worker, continuing our trace.
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    let (rows, trace_id) = trino(
        &client,
        trino_addr,
        "SELECT bucket, count(*) FROM demo.numbers GROUP BY bucket ORDER BY bucket",
        Some(&traceparent),
    )
    .await?;
    assert_eq!(trace_id, CALLER_TRACE, "SQE continues the caller's trace");
    assert_eq!(rows.len(), 7, "{rows:?}");
    assert_eq!(rows[0], serde_json::json!([0, 5714]));

    // Spans arrive in batches per process, and a call's span ends after its stream: wait for
    // the whole tree (every parent received) with the tasks of both workers in it.
    let spans = spans_until(&receiver, "the query's whole tree", |spans| {
        let trace = of_trace(spans, CALLER_TRACE);
        let ids: std::collections::HashSet<&str> =
            trace.iter().map(|s| s.span_id.as_str()).collect();
        ["worker-1", "worker-2"].iter().all(|worker| {
            trace
                .iter()
                .any(|s| s.instance == *worker && s.name.ends_with("CoordinatorChannel"))
        }) && trace.iter().any(|s| s.name == "query")
            && trace
                .iter()
                .all(|s| s.name == "query" || ids.contains(s.parent_span_id.as_str()))
    })
    .await?;
    let trace = of_trace(&spans, CALLER_TRACE);
    assert_query_trace(&trace)?;

    // The INSERT's own trace has its commit, with the attempt under it.
    let spans = spans_until(&receiver, "the INSERT's commit", |spans| {
        of_trace(spans, &insert_trace)
            .iter()
            .any(|s| s.name == "iceberg.commit.attempt")
    })
    .await?;
    let insert = of_trace(&spans, &insert_trace);
    assert_commit_trace(&insert)?;

    // The same workload in /metrics: worker RPCs by method, code and attempt; commits.
    let text = client
        .get(format!("http://127.0.0.1:{metrics}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    // The query sent a task to each worker: each call counted OK, on its first attempt.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut sent = plans_sent(&client, metrics).await? - plans_before;
    while sent < 2.0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        sent = plans_sent(&client, metrics).await? - plans_before;
    }
    assert!(sent >= 2.0, "task RPCs counted for the query: {sent}");
    assert_eq!(
        sample(&text, "sqe_iceberg_commits_total"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "sqe_iceberg_commit_conflicts_total"),
        Some(0.0),
        "{text}"
    );

    for worker in workers {
        worker.stop_cleanly()?;
    }
    coordinator.stop_cleanly()?;
    Ok(())
}
