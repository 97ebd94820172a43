//! The one query lifecycle under both front doors: what it does for a query, it does alike for
//! the Trino port and Flight SQL.

use sqe_gateway::local::LocalOptions;
use sqe_tests::cluster::TestCluster;
use sqe_tests::metrics::{sample, scrape};
use sqe_tests::python::run_python;

use crate::TestResult;

/// Every state a query enters is counted, per endpoint, by the one place that moves queries
/// from state to state: a query that runs is QUEUED, PLANNING, RUNNING, then FINISHED; one
/// refused while planning is QUEUED, PLANNING, then FAILED; one whose client cancels it is
/// CANCELED.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_state_a_query_enters_is_counted_alike_on_both_endpoints() -> TestResult {
    let cluster = TestCluster::start_with(LocalOptions {
        workers: 1,
        scale_factor: 0.0,
        metrics_port: Some(sqe_tests::process::free_port()?),
        ..TestCluster::options()
    })
    .await?;
    let http = reqwest::Client::new();
    let trino = cluster.trino_addr()?;
    sqe_tests::trino::statement(&http, trino, "SELECT 1", None).await?;
    assert!(
        sqe_tests::trino::statement(&http, trino, "SELECT * FROM no_such_table", None)
            .await
            .is_err()
    );
    // Cancelled between its first page and the next.
    let (first, _) =
        sqe_tests::trino::submit(&http, trino, "SELECT value FROM range(10000000000)", None)
            .await?;
    let next = first["nextUri"].as_str().ok_or("no nextUri")?;
    http.delete(next)
        .header("X-Trino-User", "test")
        .send()
        .await?;

    let mut flight = sqe_tests::flight::connect(&cluster.flight_url()).await?;
    sqe_tests::flight::query(&mut flight, "SELECT 1").await?;
    let refused = sqe_tests::flight::query(&mut flight, "SELECT * FROM no_such_table").await;
    assert_eq!(refused.err().map(|s| s.code()), Some(tonic::Code::NotFound));
    // Planned (GetFlightInfo), then cancelled before its DoGet.
    let info = flight
        .execute("SELECT value FROM range(10000000000)".to_string(), None)
        .await?;
    sqe_tests::flight::cancel(&mut flight, info).await?;

    let addr = cluster
        .cluster
        .coordinator
        .metrics_addr
        .ok_or("no metrics port")?;
    let metrics = scrape(&http, addr).await?;
    for endpoint in ["trino", "flight_sql"] {
        let count = |state: &str| {
            sample(
                &metrics,
                &format!(
                    "sqe_query_state_transitions_total{{endpoint=\"{endpoint}\",state=\"{state}\"}}"
                ),
            )
            .unwrap_or(0.0)
        };
        // The Trino query cancelled after its first page may be cancelled before its admission.
        let planned = count("PLANNING");
        let cancelled_unplanned = if endpoint == "trino" { 1.0 } else { 0.0 };
        assert!(
            (3.0 - cancelled_unplanned..=3.0).contains(&planned),
            "{endpoint}: {planned} PLANNING\n{metrics}"
        );
        // ... or once it has started running (the Flight SQL one never runs: no DoGet).
        let running = count("RUNNING");
        assert!(
            (1.0..=1.0 + cancelled_unplanned).contains(&running),
            "{endpoint}: {running} RUNNING\n{metrics}"
        );
        assert_eq!(
            [
                count("QUEUED"),
                count("FINISHED"),
                count("FAILED"),
                count("CANCELED")
            ],
            [3.0, 1.0, 1.0, 1.0],
            "{endpoint}:\n{metrics}"
        );
    }
    cluster.stop().await;
    Ok(())
}

/// The same failures through both endpoints, with Trino's error names and gRPC's codes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn errors_have_the_same_code_on_both_endpoints() -> TestResult {
    let cluster = TestCluster::start_with(LocalOptions {
        workers: 2,
        scale_factor: 0.01,
        query_max_run_time_secs: Some(5),
        worker_memory_limit: Some(256 * 1024),
        ..TestCluster::options()
    })
    .await?;
    let trino = cluster.trino_addr()?;
    let flight = format!("grpc://{}", cluster.cluster.coordinator.flight_sql_addr);
    run_python(
        "test_errors.py",
        &[trino.ip().to_string(), trino.port().to_string(), flight],
    )
    .await?;
    cluster.stop().await;
    Ok(())
}
