//! The shipped example cluster, run as separate `sqe` processes the way its comments say.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use sqe_tests::metrics::{sample, scrape};
use sqe_tests::process::{SqeProcess, free_port, shell};

use crate::TestResult;

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/cluster")
        .join(name)
        .display()
        .to_string()
}

fn sql(cwd: &std::path::Path, port: u16, statement: &str) -> Result<String, String> {
    shell(cwd, &["--port", &port.to_string()], statement)
}

#[test]
fn example_cluster_runs_as_separate_processes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let cwd = dir.path();
    let startup = Duration::from_secs(60);
    // The example's files as shipped, on free ports instead of its fixed ones (those lie in the
    // ephemeral range, where another connection may hold them), set from the environment as
    // its comments say.
    let (flight, trino) = (free_port()?, free_port()?);
    let worker_ports = [free_port()?, free_port()?];
    // Each process's /metrics, in the order coordinator, worker-1, worker-2.
    let metrics_ports = [free_port()?, free_port()?, free_port()?];
    let coordinator_url = format!("http://127.0.0.1:{flight}");
    let mut workers = Vec::new();
    for ((name, port), metrics) in ["worker-1", "worker-2"]
        .into_iter()
        .zip(worker_ports)
        .zip(&metrics_ports[1..])
    {
        let (port_text, metrics_text) = (port.to_string(), metrics.to_string());
        let mut worker = SqeProcess::spawn(
            name,
            &["worker", "--config", &example(&format!("{name}.toml"))],
            cwd,
            &[
                ("SQE_WORKER__FLIGHT_PORT", &port_text),
                ("SQE_WORKER__COORDINATOR_URL", &coordinator_url),
                ("SQE_WORKER__METRICS_PORT", &metrics_text),
            ],
        )?;
        worker.wait_for_port(SocketAddr::from(([127, 0, 0, 1], port)), startup)?;
        workers.push(worker);
    }
    let worker_urls = format!(
        "[\"http://127.0.0.1:{}\", \"http://127.0.0.1:{}\"]",
        worker_ports[0], worker_ports[1]
    );
    let (flight_text, trino_text, metrics_text) = (
        flight.to_string(),
        trino.to_string(),
        metrics_ports[0].to_string(),
    );
    // Tiny tables: one scan task per byte, so that even they spread over both workers.
    let mut coordinator = SqeProcess::spawn(
        "coordinator",
        &["coordinator", "--config", &example("coordinator.toml")],
        cwd,
        &[
            ("SQE_COORDINATOR__SCAN_BYTES_PER_PARTITION", "1"),
            ("SQE_COORDINATOR__FLIGHT_SQL_PORT", &flight_text),
            ("SQE_COORDINATOR__TRINO_HTTP_PORT", &trino_text),
            ("SQE_COORDINATOR__WORKER_URLS", &worker_urls),
            ("SQE_COORDINATOR__METRICS_PORT", &metrics_text),
        ],
    )?;
    coordinator.wait_for_port(SocketAddr::from(([127, 0, 0, 1], flight)), startup)?;

    sql(cwd, flight, "CREATE SCHEMA demo")?;
    let created = sql(
        cwd,
        flight,
        "CREATE TABLE demo.numbers AS SELECT value AS n, value % 7 AS bucket FROM generate_series(1, 20000)",
    )?;
    assert!(created.contains("CREATE TABLE: 20,000 rows"), "{created}");
    sql(
        cwd,
        flight,
        "INSERT INTO demo.numbers SELECT value, value % 7 FROM generate_series(20001, 40000)",
    )?;
    let totals = sql(
        cwd,
        flight,
        "SELECT count(*) AS rows_, sum(n) AS total FROM demo.numbers",
    )?;
    assert!(totals.contains("| 40000 | 800020000 |"), "{totals}");
    let grouped = sql(
        cwd,
        flight,
        "SELECT bucket, count(*) AS c FROM demo.numbers GROUP BY bucket ORDER BY bucket",
    )?;
    assert!(grouped.contains("| 0      | 5714 |"), "{grouped}");
    assert!(grouped.contains("| 6      | 5714 |"), "{grouped}");

    // Two reachable workers and two files: the scan runs as two tasks, one per worker.
    let explained = sql(
        cwd,
        flight,
        "EXPLAIN ANALYZE SELECT bucket, count(*) FROM demo.numbers GROUP BY bucket",
    )?;
    assert!(explained.contains("DistributedExec"), "{explained}");
    assert!(explained.contains("t1:[p0"), "{explained}");

    // Trino's tpch catalog, generated on the worker processes (the plan carries the scan, the
    // workers' codec decodes it), each its own share, and loaded into Iceberg.
    let generated = sql(
        cwd,
        flight,
        "EXPLAIN ANALYZE SELECT count(DISTINCT orderkey) FROM tpch.\"sf0.3\".orders",
    )?;
    assert!(
        generated.contains("t1: TpchScanExec: table=orders"),
        "{generated}"
    );
    let loaded = sql(
        cwd,
        flight,
        "CREATE TABLE demo.nation AS SELECT * FROM tpch.tiny.nation",
    )?;
    assert!(loaded.contains("CREATE TABLE: 25 rows"), "{loaded}");
    let lines = sql(cwd, flight, "SELECT count(*) AS n FROM tpch.tiny.lineitem")?;
    assert!(lines.contains("| 60175 |"), "{lines}");

    // A CTAS writes its data files on the workers, each its share of the rows (the two files
    // of demo.numbers are read by a task each); only the files' metadata reaches the
    // coordinator, which writes none of it.
    let before = rows_written(&metrics_ports)?;
    let copied = sql(
        cwd,
        flight,
        "CREATE TABLE demo.numbers_copy AS SELECT * FROM demo.numbers",
    )?;
    assert!(copied.contains("CREATE TABLE: 40,000 rows"), "{copied}");
    let after = rows_written(&metrics_ports)?;
    let written: Vec<f64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(written[0], 0.0, "the coordinator wrote rows: {written:?}");
    assert!(
        written[1] > 0.0 && written[2] > 0.0,
        "both workers write: {written:?}"
    );
    assert_eq!(written[1] + written[2], 40000.0, "{written:?}");
    let same = sql(
        cwd,
        flight,
        "SELECT count(*) AS n FROM (SELECT * FROM demo.numbers_copy EXCEPT ALL SELECT * FROM demo.numbers) AS d",
    )?;
    assert!(same.contains("| 0 |"), "{same}");

    // A statement that nests deep (a 300-way UNION ALL) is planned and run, and the
    // coordinator is still there after it: a thread out of stack would abort the process.
    let union = vec!["SELECT 1 AS n"; 300].join(" UNION ALL ");
    let counted = sql(
        cwd,
        flight,
        &format!("SELECT count(*) AS c FROM ({union}) AS u"),
    )?;
    assert!(counted.contains("| 300 |"), "{counted}");
    let after = sql(cwd, flight, "SELECT count(*) AS n FROM demo.nation")?;
    assert!(after.contains("| 25 |"), "{after}");

    // The data is in the shared warehouse under the working directory.
    assert!(
        cwd.join("sqe-cluster/warehouse/demo/numbers/metadata")
            .is_dir()
    );

    // SIGTERM stops each process cleanly.
    coordinator.stop_cleanly()?;
    for worker in workers {
        worker.stop_cleanly()?;
    }
    Ok(())
}

/// `sqe_data_rows_written_total` of each process whose /metrics listens on `ports`.
fn rows_written(ports: &[u16]) -> Result<Vec<f64>, Box<dyn std::error::Error + Send + Sync>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = reqwest::Client::new();
    ports
        .iter()
        .map(|port| {
            let text =
                runtime.block_on(scrape(&client, SocketAddr::from(([127, 0, 0, 1], *port))))?;
            sample(&text, "sqe_data_rows_written_total")
                .ok_or_else(|| format!("no rows written in the metrics of :{port}").into())
        })
        .collect()
}

/// Seed 004 on real processes: 1 coordinator and registering workers, driven by the Trino
/// client and ADBC (`tests/python/test_distributed_cluster.py`): the seed's invariants, a
/// killed worker, a rolling deploy under load, a worker back with a new version.
#[tokio::test]
async fn seed_004_distributed_cluster_membership_and_rolling_deploy() -> TestResult {
    let dir = tempfile::tempdir()?;
    sqe_tests::python::run_python(
        "test_distributed_cluster.py",
        &[
            sqe_tests::process::sqe_binary().display().to_string(),
            dir.path().display().to_string(),
        ],
    )
    .await
    .map_err(|e| {
        let logs: String = [
            "coordinator",
            "worker-1",
            "worker-2",
            "worker-3",
            "worker-4",
        ]
        .iter()
        .map(|name| {
            let text =
                std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            format!(
                "\n--- {name}.log (last lines) ---\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        })
        .collect();
        format!("{e}{logs}")
    })?;
    Ok(())
}
