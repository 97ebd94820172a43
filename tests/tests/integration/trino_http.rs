//! The Trino client protocol through the Python `trino` client and raw HTTP (requests), from
//! the project's virtualenv, against a coordinator with two workers.

use sqe_tests::cluster::TestCluster;
use sqe_tests::python::run_python;

use crate::TestResult;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn python_trino_client_and_protocol_edges() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let addr = cluster.trino_addr()?;
    let args = [addr.ip().to_string(), addr.port().to_string()];
    for script in [
        "test_trino.py",
        "test_trino_session.py",
        "test_trino_metadata.py",
        "test_trino_tpch.py",
    ] {
        run_python(script, &args).await?;
    }
    cluster.stop().await;
    Ok(())
}

/// `[client_auth]` with users and an identity provider's JWT secret.
fn secured_config(
    dir: &std::path::Path,
) -> Result<sqe_gateway::config::CoordinatorConfig, Box<dyn std::error::Error + Send + Sync>> {
    let mut config = sqe_tests::cluster::local_coordinator_config(dir);
    config.client_auth = sqe_gateway::config::ClientAuthConfig {
        kind: sqe_gateway::config::ClientAuthType::Password,
        users: std::collections::HashMap::from([
            ("alice".to_string(), bcrypt::hash("s3cret", 4)?),
            ("bob".to_string(), bcrypt::hash("hunter2", 4)?),
        ]),
        jwt_secret: Some(JWT_SECRET.into()),
        jwt_issuer: Some("https://idp.test".into()),
        ..Default::default()
    };
    Ok(config)
}

const JWT_SECRET: &str = "identity-provider-secret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_never_cross_plain_http() -> TestResult {
    let dir = tempfile::tempdir()?;
    let config = secured_config(dir.path())?;
    let flight = sqe_gateway::node::bind("127.0.0.1", 0, "flight").await?;
    let trino = sqe_gateway::node::bind("127.0.0.1", 0, "trino").await?;
    let refused = sqe_gateway::node::start_coordinator_on(&config, flight, Some(trino))
        .await
        .err()
        .ok_or("a coordinator took passwords over plain HTTP")?;
    assert!(refused.to_string().contains("needs TLS"), "{refused}");
    Ok(())
}

/// A coordinator (no workers) serving the Trino protocol, and that port's address.
async fn coordinator_with_trino(
    config: &sqe_gateway::config::CoordinatorConfig,
) -> Result<
    (sqe_gateway::node::RunningCoordinator, std::net::SocketAddr),
    Box<dyn std::error::Error + Send + Sync>,
> {
    let flight = sqe_gateway::node::bind("127.0.0.1", 0, "flight").await?;
    let trino = sqe_gateway::node::bind("127.0.0.1", 0, "trino").await?;
    let coordinator = sqe_gateway::node::start_coordinator_on(config, flight, Some(trino)).await?;
    let addr = coordinator
        .trino_http_addr
        .ok_or("the coordinator serves the Trino protocol")?;
    Ok((coordinator, addr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn basic_and_jwt_authentication_over_https() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (ca, cert, key) = sqe_tests::tls::tls_files(dir.path())?;
    let mut config = secured_config(dir.path())?;
    config.coordinator.tls_cert_file = Some(cert);
    config.coordinator.tls_key_file = Some(key);
    let (coordinator, addr) = coordinator_with_trino(&config).await?;
    run_python(
        "test_trino_auth.py",
        &[
            "localhost".to_string(),
            addr.port().to_string(),
            ca.display().to_string(),
            JWT_SECRET.to_string(),
        ],
    )
    .await?;
    coordinator.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn abandoned_queries_are_reaped() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut config = sqe_tests::cluster::local_coordinator_config(dir.path());
    config.coordinator.trino_client_timeout_secs = 1;
    let (coordinator, addr) = coordinator_with_trino(&config).await?;
    run_python(
        "test_trino_reaper.py",
        &[addr.ip().to_string(), addr.port().to_string()],
    )
    .await?;
    coordinator.stop().await;
    Ok(())
}
