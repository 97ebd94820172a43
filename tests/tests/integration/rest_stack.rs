//! SQE on the real stack of `scripts/stack.sh`: an Iceberg REST catalog (rustberg) over an
//! S3-compatible store (s3s-fs), both separate processes on loopback. Coordinator and workers
//! read and write the data files in S3 themselves; table metadata goes through the catalog.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use sqe_gateway::local::{LocalOptions, StackSettings};
use sqe_tests::cluster::TestCluster;
use sqe_tests::stack::Stack;
use sqe_tests::trino::statement;

use crate::TestResult;

/// A schema name no other test run uses (the stack may outlive a run).
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{prefix}_{}_{nanos}", std::process::id())
}

async fn cluster_on(settings: StackSettings, workers: usize) -> Result<TestCluster, String> {
    TestCluster::start_with(LocalOptions {
        workers,
        scale_factor: 0.0,
        stack: Some(settings),
        ..TestCluster::options()
    })
    .await
    .map_err(|e| e.to_string())
}

async fn sql(
    addr: SocketAddr,
    text: &str,
) -> Result<Vec<Value>, Box<dyn std::error::Error + Send + Sync>> {
    Ok(statement(&reqwest::Client::new(), addr, text, None)
        .await?
        .rows)
}

/// Files under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tables_round_trip_through_the_rest_catalog_and_s3() -> TestResult {
    let stack = Stack::running()?;
    let cluster = cluster_on(stack.settings.clone(), 2).await?;
    let addr = cluster.trino_addr()?;
    let schema = unique("roundtrip");
    sql(addr, &format!("CREATE SCHEMA {schema}")).await?;
    sql(
        addr,
        &format!("CREATE TABLE {schema}.numbers AS SELECT value AS n, value % 7 AS bucket FROM generate_series(1, 20000)"),
    )
    .await?;
    sql(
        addr,
        &format!("INSERT INTO {schema}.numbers SELECT value, value % 7 FROM generate_series(20001, 40000)"),
    )
    .await?;
    assert_eq!(
        sql(
            addr,
            &format!("SELECT count(*), sum(n) FROM {schema}.numbers")
        )
        .await?,
        vec![json!([40000, 800020000])]
    );
    let grouped = sql(
        addr,
        &format!("SELECT bucket, count(*) FROM {schema}.numbers GROUP BY bucket ORDER BY bucket"),
    )
    .await?;
    assert_eq!(grouped.len(), 7);
    assert_eq!(grouped[0], json!([0, 5714]));
    let ordered = sql(
        addr,
        &format!("SELECT n FROM {schema}.numbers WHERE n > 39995 ORDER BY n DESC"),
    )
    .await?;
    assert_eq!(
        ordered,
        vec![
            json!([40000]),
            json!([39999]),
            json!([39998]),
            json!([39997]),
            json!([39996])
        ]
    );

    // The catalog knows the table at an S3 location without `//`; its files are in the store.
    let ident = iceberg::TableIdent::from_strs([schema.as_str(), "numbers"])?;
    let table = cluster.engine().catalog().load_table(&ident).await?;
    let location = table.metadata().location().to_string();
    assert_eq!(location, format!("s3://warehouse/{schema}/numbers"));
    let root = Path::new(stack.get("SQE_STACK_S3_ROOT")?)
        .join("warehouse")
        .join(&schema);
    let parquet = files_under(&root)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "parquet"))
        .count();
    assert!(
        parquet >= 2,
        "CTAS and INSERT wrote data files into the store: {parquet}"
    );
    assert_eq!(table.metadata().snapshots().count(), 2);

    sql(addr, &format!("DROP TABLE {schema}.numbers")).await?;
    assert!(!cluster.engine().catalog().table_exists(&ident).await?);
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_from_many_clients_all_land() -> TestResult {
    let stack = Stack::running()?;
    let cluster = cluster_on(stack.settings.clone(), 2).await?;
    let addr = cluster.trino_addr()?;
    let schema = unique("concurrent");
    sql(addr, &format!("CREATE SCHEMA {schema}")).await?;
    sql(
        addr,
        &format!("CREATE TABLE {schema}.events (client BIGINT, n BIGINT)"),
    )
    .await?;

    // Eight clients append at once: optimistic commits conflict and are re-applied.
    let inserts = (0..8).map(|client| {
        let text = format!(
            "INSERT INTO {schema}.events SELECT {client}, value FROM generate_series(1, 500)"
        );
        tokio::spawn(async move { sql(addr, &text).await.map_err(|e| e.to_string()) })
    });
    for insert in futures::future::join_all(inserts).await {
        insert??;
    }
    let per_client = sql(
        addr,
        &format!(
            "SELECT client, count(*), sum(n) FROM {schema}.events GROUP BY client ORDER BY client"
        ),
    )
    .await?;
    let expected: Vec<Value> = (0..8).map(|c| json!([c, 500, 125250])).collect();
    assert_eq!(per_client, expected, "every row of every client");

    // The history is one line of eight appends, each on top of the one before.
    let ident = iceberg::TableIdent::from_strs([schema.as_str(), "events"])?;
    let table = cluster.engine().catalog().load_table(&ident).await?;
    let metadata = table.metadata();
    let by_id: BTreeMap<i64, _> = metadata.snapshots().map(|s| (s.snapshot_id(), s)).collect();
    assert_eq!(by_id.len(), 8);
    let mut chain = 0;
    let mut added = 0u64;
    let mut current = metadata.current_snapshot();
    while let Some(snapshot) = current {
        chain += 1;
        added += snapshot
            .summary()
            .additional_properties
            .get("added-records")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        current = snapshot
            .parent_snapshot_id()
            .and_then(|id| by_id.get(&id).copied());
    }
    assert_eq!(chain, 8, "every snapshot is reachable from the current one");
    assert_eq!(added, 4000);
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_object_store_fails_queries_clearly_and_the_coordinator_keeps_serving()
-> TestResult {
    let stack = Stack::running()?;
    // A store of this test's own (the stack's serves the other tests), same catalog.
    let root = tempfile::tempdir()?;
    std::fs::create_dir(root.path().join("warehouse"))?;
    let port = sqe_tests::process::free_port()?;
    let mut store = std::process::Command::new(stack.get("SQE_STACK_S3S_BIN")?)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--access-key", stack.get("SQE_STORAGE__S3_ACCESS_KEY_ID")?])
        .args([
            "--secret-key",
            stack.get("SQE_STORAGE__S3_SECRET_ACCESS_KEY")?,
        ])
        .arg(root.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if std::time::Instant::now() > deadline {
            let _ = store.kill();
            return Err("the test's own s3s-fs did not listen".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut settings = stack.settings.clone();
    settings.storage.s3_endpoint = Some(format!("http://127.0.0.1:{port}"));
    let cluster = cluster_on(settings, 1).await?;
    let addr = cluster.trino_addr()?;
    let schema = unique("outage");
    sql(addr, &format!("CREATE SCHEMA {schema}")).await?;
    sql(
        addr,
        &format!("CREATE TABLE {schema}.t AS SELECT value AS n FROM generate_series(1, 1000)"),
    )
    .await?;
    assert_eq!(
        sql(addr, &format!("SELECT count(*) FROM {schema}.t")).await?,
        vec![json!([1000])]
    );

    store.kill()?;
    store.wait()?;
    let started = std::time::Instant::now();
    let error = sql(addr, &format!("SELECT sum(n) FROM {schema}.t"))
        .await
        .err()
        .ok_or("a query over a stopped store succeeded")?
        .to_string();
    assert!(
        error.contains(&format!("127.0.0.1:{port}")) || error.to_lowercase().contains("s3"),
        "the error names the store: {error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "failed in {:?}",
        started.elapsed()
    );
    // The coordinator goes on: metadata, system tables, queries needing no data file.
    assert_eq!(sql(addr, "SELECT 1 + 1").await?, vec![json!([2])]);
    let failed = sql(
        addr,
        "SELECT count(*) FROM system.runtime.queries WHERE state = 'FAILED'",
    )
    .await?;
    assert_eq!(failed, vec![json!([1])]);
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tables_written_by_pyiceberg_read_back_identically() -> TestResult {
    let stack = Stack::running()?;
    let cluster = cluster_on(stack.settings.clone(), 2).await?;
    let addr = cluster.trino_addr()?;
    // pyiceberg writes partitioned tables, evolves a schema and deletes rows through the same
    // catalog and store; SQE's rows must be the ones pyiceberg reads.
    sqe_tests::python::run_python(
        "test_pyiceberg_interop.py",
        &[
            addr.ip().to_string(),
            addr.port().to_string(),
            // Short: s3s-fs keeps an object's metadata in a file named after its whole key,
            // and pyiceberg's partition paths are long already (255-byte file names).
            format!("pyi{}", unique("").rsplit('_').next().unwrap_or("0")),
            stack.dir.display().to_string(),
        ],
    )
    .await?;
    cluster.stop().await;
    Ok(())
}

/// The grant requests an OAuth2 token endpoint received.
#[derive(Clone, Default)]
struct Grants(std::sync::Arc<std::sync::Mutex<Vec<std::collections::HashMap<String, String>>>>);

impl Grants {
    fn all(&self) -> Vec<std::collections::HashMap<String, String>> {
        self.0.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// An identity provider's client-credentials token endpoint (the stack's catalog runs without
/// auth, so it takes any token; what is checked here is how SQE obtains and renews them).
async fn token_endpoint() -> Result<(SocketAddr, Grants), Box<dyn std::error::Error + Send + Sync>>
{
    let grants = Grants::default();
    let recorded = grants.clone();
    let app = axum::Router::new().route(
        "/oauth/token",
        axum::routing::post(move |body: String| {
            let recorded = recorded.clone();
            async move {
                let grant: std::collections::HashMap<String, String> =
                    url::form_urlencoded::parse(body.as_bytes())
                        .into_owned()
                        .collect();
                let n = recorded.0.lock().map(|mut g| {
                    g.push(grant);
                    g.len()
                });
                axum::Json(json!({
                    "access_token": format!("token-{}", n.unwrap_or(0)),
                    "token_type": "bearer",
                    "expires_in": 3600,
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((addr, grants))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_catalog_is_reached_with_oauth2_client_credentials_renewed_in_time() -> TestResult {
    let stack = Stack::running()?;
    let (idp, grants) = token_endpoint().await?;
    let mut settings = stack.settings.clone();
    settings.catalog.oauth2_client_id = Some("sqe-coordinator".into());
    settings.catalog.oauth2_client_secret = Some("client-secret".into());
    settings.catalog.oauth2_token_endpoint = Some(format!("http://{idp}/oauth/token"));
    settings.catalog.oauth2_scope = Some("catalog:rw".into());
    settings.catalog.oauth2_refresh_secs = 1;
    let cluster = cluster_on(settings, 1).await?;
    let addr = cluster.trino_addr()?;
    let schema = unique("oauth");
    sql(addr, &format!("CREATE SCHEMA {schema}")).await?;
    sql(addr, &format!("CREATE TABLE {schema}.t AS SELECT 1 AS one")).await?;

    let first = grants.all();
    let grant = first.first().ok_or("no token was requested")?;
    assert_eq!(
        grant.get("grant_type").map(String::as_str),
        Some("client_credentials")
    );
    assert_eq!(
        grant.get("client_id").map(String::as_str),
        Some("sqe-coordinator")
    );
    assert_eq!(
        grant.get("client_secret").map(String::as_str),
        Some("client-secret")
    );
    assert_eq!(grant.get("scope").map(String::as_str), Some("catalog:rw"));
    // Renewed on its schedule while the coordinator runs, and the catalog keeps answering.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while grants.all().len() < first.len() + 2 {
        if tokio::time::Instant::now() > deadline {
            return Err(format!("token not renewed: {} grants", grants.all().len()).into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        sql(addr, &format!("SELECT one FROM {schema}.t")).await?,
        vec![json!([1])]
    );
    cluster.stop().await;
    Ok(())
}
