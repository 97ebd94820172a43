//! The Trino client protocol through the Python `trino` client and raw HTTP (requests), from
//! the project's virtualenv, against a coordinator with two workers.

use sqe_tests::cluster::TestCluster;
use sqe_tests::python::run_python;

use crate::TestResult;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn python_trino_client_and_protocol_edges() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let addr = cluster
        .cluster
        .coordinator
        .trino_http_addr
        .ok_or("the test cluster serves the Trino protocol")?;
    run_python(
        "test_trino.py",
        &[addr.ip().to_string(), addr.port().to_string()],
    )
    .await?;
    cluster.stop().await;
    Ok(())
}
