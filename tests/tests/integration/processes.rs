//! The shipped example cluster, run as separate `sqe` processes the way its comments say.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use sqe_tests::process::{SqeProcess, shell};

use crate::TestResult;

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/cluster")
        .join(name)
        .display()
        .to_string()
}

fn sql(cwd: &std::path::Path, statement: &str) -> Result<String, String> {
    shell(cwd, &[], statement)
}

#[test]
fn example_cluster_runs_as_separate_processes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let cwd = dir.path();
    let startup = Duration::from_secs(60);
    let mut worker_1 = SqeProcess::spawn(
        "worker-1",
        &["worker", "--config", &example("worker-1.toml")],
        cwd,
        &[],
    )?;
    let mut worker_2 = SqeProcess::spawn(
        "worker-2",
        &["worker", "--config", &example("worker-2.toml")],
        cwd,
        &[],
    )?;
    worker_1.wait_for_port(SocketAddr::from(([127, 0, 0, 1], 50052)), startup)?;
    worker_2.wait_for_port(SocketAddr::from(([127, 0, 0, 1], 50053)), startup)?;
    // Tiny tables: one scan task per byte, so that even they spread over both workers.
    let mut coordinator = SqeProcess::spawn(
        "coordinator",
        &["coordinator", "--config", &example("coordinator.toml")],
        cwd,
        &[("SQE_COORDINATOR__SCAN_BYTES_PER_PARTITION", "1")],
    )?;
    coordinator.wait_for_port(SocketAddr::from(([127, 0, 0, 1], 50051)), startup)?;

    sql(cwd, "CREATE SCHEMA demo")?;
    let created = sql(
        cwd,
        "CREATE TABLE demo.numbers AS SELECT value AS n, value % 7 AS bucket FROM generate_series(1, 20000)",
    )?;
    assert!(created.contains("CREATE TABLE: 20,000 rows"), "{created}");
    sql(
        cwd,
        "INSERT INTO demo.numbers SELECT value, value % 7 FROM generate_series(20001, 40000)",
    )?;
    let totals = sql(
        cwd,
        "SELECT count(*) AS rows_, sum(n) AS total FROM demo.numbers",
    )?;
    assert!(totals.contains("| 40000 | 800020000 |"), "{totals}");
    let grouped = sql(
        cwd,
        "SELECT bucket, count(*) AS c FROM demo.numbers GROUP BY bucket ORDER BY bucket",
    )?;
    assert!(grouped.contains("| 0      | 5714 |"), "{grouped}");
    assert!(grouped.contains("| 6      | 5714 |"), "{grouped}");

    // Two reachable workers and two files: the scan runs as two tasks, one per worker.
    let explained = sql(
        cwd,
        "EXPLAIN ANALYZE SELECT bucket, count(*) FROM demo.numbers GROUP BY bucket",
    )?;
    assert!(explained.contains("DistributedExec"), "{explained}");
    assert!(explained.contains("t1:[p0"), "{explained}");

    // The data is in the shared warehouse under the working directory.
    assert!(
        cwd.join("sqe-cluster/warehouse/demo/numbers/metadata")
            .is_dir()
    );

    // SIGTERM stops each process cleanly.
    coordinator.stop_cleanly()?;
    worker_1.stop_cleanly()?;
    worker_2.stop_cleanly()?;
    Ok(())
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
