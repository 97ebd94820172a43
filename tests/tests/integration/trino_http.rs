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
    let args = [addr.ip().to_string(), addr.port().to_string()];
    for script in [
        "test_trino.py",
        "test_trino_session.py",
        "test_trino_metadata.py",
    ] {
        run_python(script, &args).await?;
    }
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_authentication_is_never_silently_skipped_on_the_trino_port() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut config = sqe_tests::cluster::local_coordinator_config(dir.path());
    config.client_auth = sqe_gateway::config::ClientAuthConfig {
        kind: sqe_gateway::config::ClientAuthType::Password,
        users: std::collections::HashMap::from([("alice".to_string(), bcrypt::hash("s3cret", 4)?)]),
        ..Default::default()
    };
    let flight = sqe_gateway::runtime::bind("127.0.0.1", 0, "flight").await?;
    let trino = sqe_gateway::runtime::bind("127.0.0.1", 0, "trino").await?;
    let refused = sqe_gateway::runtime::start_coordinator_on(&config, flight, Some(trino))
        .await
        .err()
        .ok_or("a coordinator with passwords served the Trino protocol without them")?;
    assert!(
        refused
            .to_string()
            .contains("not enforced on the Trino protocol"),
        "{refused}"
    );
    Ok(())
}
