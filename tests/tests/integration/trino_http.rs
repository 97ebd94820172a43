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
        "test_dbt.py",
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

/// Every page of `sql` asking for `accept` encoding: the rows (decoded), the bytes that came
/// over the wire, and each page's `Content-Encoding`.
async fn pages_encoded(
    http: &reqwest::Client,
    addr: std::net::SocketAddr,
    sql: &str,
    accept: &str,
) -> Result<
    (Vec<serde_json::Value>, usize, Vec<Option<String>>),
    Box<dyn std::error::Error + Send + Sync>,
> {
    let mut request = http
        .post(format!("http://{addr}/v1/statement"))
        .header("X-Trino-User", "test")
        .body(sql.to_string());
    let (mut rows, mut wire, mut encodings) = (Vec::new(), 0, Vec::new());
    loop {
        let response = request.header("Accept-Encoding", accept).send().await?;
        let encoding = response
            .headers()
            .get("content-encoding")
            .map(|v| v.to_str().map(str::to_string))
            .transpose()?;
        let body = response.bytes().await?;
        wire += body.len();
        let json = match encoding.as_deref() {
            None => body.to_vec(),
            Some("gzip") => {
                let mut out = Vec::new();
                std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut out)?;
                out
            }
            Some(other) => return Err(format!("unexpected encoding {other}").into()),
        };
        encodings.push(encoding);
        let page: serde_json::Value = serde_json::from_slice(&json)?;
        if let Some(error) = page.get("error") {
            return Err(format!("{sql}: {error}").into());
        }
        rows.extend(page["data"].as_array().into_iter().flatten().cloned());
        let Some(next) = page["nextUri"].as_str() else {
            return Ok((rows, wire, encodings));
        };
        request = http.get(next).header("X-Trino-User", "test");
    }
}

/// The Trino port compresses its pages with gzip when `Accept-Encoding` asks for it, and only
/// then: the rows are the same either way, and the compressed pages are less than half the size.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pages_are_compressed_as_the_client_accepts() -> TestResult {
    let cluster = TestCluster::start(1, 0.01).await?;
    let addr = cluster.trino_addr()?;
    let http = reqwest::Client::new();
    let sql = "SELECT * FROM tpch.lineitem ORDER BY l_orderkey, l_linenumber";
    let (plain, plain_bytes, plain_encodings) = pages_encoded(&http, addr, sql, "identity").await?;
    assert!(plain.len() > 50_000, "{} rows", plain.len());
    assert!(
        plain_encodings.iter().all(Option::is_none),
        "{plain_encodings:?}"
    );
    // zstd is not offered: it falls back to plain.
    let (rows, _, encodings) = pages_encoded(&http, addr, sql, "zstd").await?;
    assert_eq!(rows, plain);
    assert!(encodings.iter().all(Option::is_none), "{encodings:?}");
    for encoding in ["gzip"] {
        let (rows, bytes, encodings) = pages_encoded(&http, addr, sql, encoding).await?;
        assert_eq!(rows, plain, "{encoding}");
        assert!(
            encodings.iter().any(|e| e.as_deref() == Some(encoding)),
            "{encoding}: {encodings:?}"
        );
        // Small pages (QUEUED, the last) stay plain; the row pages shrink.
        assert!(
            bytes * 2 < plain_bytes,
            "{encoding}: {bytes} bytes vs {plain_bytes} plain"
        );
    }
    cluster.stop().await;
    Ok(())
}

/// Result pages the Trino endpoint has encoded ahead of a client that has stopped polling are
/// held in the coordinator's memory pool (they count against its limit like a query's own
/// memory), and go back to it when the client cancels.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pages_waiting_for_a_client_are_held_in_the_memory_pool() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    let engine = std::sync::Arc::clone(cluster.engine());
    let idle = engine.memory_reserved();
    let client = reqwest::Client::new();
    let (first, _) = sqe_tests::trino::submit(
        &client,
        cluster.trino_addr()?,
        "SELECT value, repeat('x', 200) AS padding FROM generate_series(1, 2000000)",
        None,
    )
    .await?;
    // One page, then the client stops reading.
    let page = sqe_tests::trino::next_page(&client, &first)
        .await?
        .ok_or("no second page")?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while engine.memory_reserved() <= idle && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let held = engine.memory_reserved();
    assert!(
        held > idle,
        "pages waiting: {held} bytes reserved, {idle} idle"
    );
    let next = page
        .get("nextUri")
        .and_then(serde_json::Value::as_str)
        .ok_or("no nextUri")?;
    client
        .delete(next)
        .header("X-Trino-User", "test")
        .send()
        .await?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while engine.memory_reserved() > idle && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(engine.memory_reserved(), idle, "given back on cancel");
    cluster.stop().await;
    Ok(())
}
