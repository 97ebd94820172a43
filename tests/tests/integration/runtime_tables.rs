//! `system.runtime` through real clients (the Trino client and ADBC), on a coordinator with
//! two workers: the nodes, the query history of both endpoints, each query's tasks on the
//! workers with their metrics, and `kill_query`.

use std::time::Duration;

use sqe_tests::cluster::TestCluster;
use sqe_tests::python::run_python;

use crate::TestResult;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runtime_tables_show_nodes_queries_and_tasks() -> TestResult {
    let cluster = TestCluster::two_workers_with_admin().await?;
    let addr = cluster.trino_addr()?;
    let flight = format!("grpc://{}", cluster.cluster.coordinator.flight_sql_addr);
    run_python(
        "test_runtime_tables.py",
        &[addr.ip().to_string(), addr.port().to_string(), flight],
    )
    .await?;
    // The killed query stopped on the workers too.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let open: Vec<usize> = cluster
            .cluster
            .workers
            .iter()
            .map(|w| w.stats.open_task_streams())
            .collect();
        if open.iter().all(|&n| n == 0) {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("the killed query still runs on the workers: {open:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cluster.stop().await;
    Ok(())
}
