//! Every Trino type SQE supports, round-tripped through the Trino endpoint (the Python `trino`
//! client), Flight SQL (ADBC) and an Iceberg column: `tests/python/test_types.py`.

use sqe_tests::cluster::TestCluster;
use sqe_tests::python::run_python;

use crate::TestResult;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_type_round_trips_through_both_endpoints_and_iceberg() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    let trino = cluster.trino_addr()?;
    let flight = format!("grpc://{}", cluster.cluster.coordinator.flight_sql_addr);
    run_python(
        "test_types.py",
        &[trino.ip().to_string(), trino.port().to_string(), flight],
    )
    .await?;
    cluster.stop().await;
    Ok(())
}
