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
use sqe_tests::files_under;
use sqe_tests::stack::Stack;
use sqe_tests::trino::{next_page, statement, submit};

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

/// A server process of the test's own, stopped when dropped (also when the test fails early).
struct Server(std::process::Child);

impl Server {
    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An s3s-fs of the caller's own with the stack's keys and an empty `warehouse` bucket, on a
/// free port; the store's root lives as long as the returned directory.
async fn own_store(
    stack: &Stack,
) -> Result<(Server, u16, tempfile::TempDir), Box<dyn std::error::Error + Send + Sync>> {
    let root = tempfile::tempdir()?;
    std::fs::create_dir(root.path().join("warehouse"))?;
    let port = sqe_tests::process::free_port()?;
    let store = std::process::Command::new(stack.get("SQE_STACK_S3S_BIN")?)
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
    let store = Server(store);
    listening(port, Duration::from_secs(10))
        .await
        .map_err(|e| format!("the test's own s3s-fs: {e}"))?;
    Ok((store, port, root))
}

async fn listening(port: u16, within: Duration) -> Result<(), String> {
    let deadline = std::time::Instant::now() + within;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if std::time::Instant::now() > deadline {
            return Err(format!("nothing listens on port {port} after {within:?}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Files of the mid-query test's table and rows in each: enough that the result streams for a
/// while (pages are produced as the client asks for them, so most files are read after the
/// first page).
const OUTAGE_FILES: usize = 20;
const OUTAGE_ROWS_PER_FILE: usize = 100_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_stopped_mid_query_fails_it_clearly_and_the_coordinator_keeps_serving() -> TestResult
{
    let stack = Stack::running()?;
    // A store of this test's own (the stack's serves the other tests), same catalog.
    let (mut store, port, _root) = own_store(&stack).await?;
    let mut settings = stack.settings.clone();
    settings.storage.s3_endpoint = Some(format!("http://127.0.0.1:{port}"));
    let cluster = cluster_on(settings, 2).await?;
    let addr = cluster.trino_addr()?;
    let schema = unique("outage");
    sql(addr, &format!("CREATE SCHEMA {schema}")).await?;
    sql(addr, &format!("CREATE TABLE {schema}.t (n BIGINT)")).await?;
    for file in 0..OUTAGE_FILES {
        let first = file * OUTAGE_ROWS_PER_FILE + 1;
        let last = first + OUTAGE_ROWS_PER_FILE - 1;
        sql(
            addr,
            &format!("INSERT INTO {schema}.t SELECT value FROM generate_series({first}, {last})"),
        )
        .await?;
    }
    let total = OUTAGE_FILES * OUTAGE_ROWS_PER_FILE;
    assert_eq!(
        sql(addr, &format!("SELECT count(*) FROM {schema}.t")).await?,
        vec![json!([total])]
    );

    // The store stops once the first rows have reached the client.
    let client = reqwest::Client::new();
    let (mut page, _) = submit(&client, addr, &format!("SELECT n FROM {schema}.t"), None).await?;
    let mut received = 0;
    let mut stopped_at = None;
    let error = loop {
        if let Some(error) = page.get("error") {
            break error.clone();
        }
        received += page
            .get("data")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        if received > 0 && stopped_at.is_none() {
            store.stop();
            stopped_at = Some(std::time::Instant::now());
        }
        page = next_page(&client, &page).await?.ok_or(format!(
            "the query finished ({received} of {total} rows) though the store stopped mid-query"
        ))?;
    };
    let stopped_at = stopped_at.ok_or("the query failed before any row arrived")?;
    assert!(received < total, "{received} rows");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("127.0.0.1:{port}")),
        "the error names the store: {error}"
    );
    assert!(
        stopped_at.elapsed() < Duration::from_secs(60),
        "failed {:?} after the store stopped",
        stopped_at.elapsed()
    );

    // A query started after the outage fails as clearly.
    let later = sql(addr, &format!("SELECT sum(n) FROM {schema}.t"))
        .await
        .err()
        .ok_or("a query over a stopped store succeeded")?
        .to_string();
    assert!(later.contains(&format!("127.0.0.1:{port}")), "{later}");
    // The coordinator goes on: metadata, system tables, queries needing no data file.
    assert_eq!(sql(addr, "SELECT 1 + 1").await?, vec![json!([2])]);
    let failed = sql(
        addr,
        "SELECT count(*) FROM system.runtime.queries WHERE state = 'FAILED'",
    )
    .await?;
    assert_eq!(failed, vec![json!([2])]);
    let workers = sql(
        addr,
        "SELECT count(*) FROM system.runtime.nodes WHERE coordinator = false AND state = 'active'",
    )
    .await?;
    assert_eq!(workers, vec![json!([2])], "the workers are still there");
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

/// The form-encoded requests an endpoint of the test's own received.
#[derive(Clone, Default)]
struct Forms(std::sync::Arc<std::sync::Mutex<Vec<std::collections::HashMap<String, String>>>>);

impl Forms {
    fn all(&self) -> Vec<std::collections::HashMap<String, String>> {
        self.0.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// An identity provider's client-credentials token endpoint (the stack's catalog runs without
/// auth, so it takes any token; what is checked here is how SQE obtains and renews them).
async fn token_endpoint() -> Result<(SocketAddr, Forms), Box<dyn std::error::Error + Send + Sync>> {
    let grants = Forms::default();
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
    settings.auth.client_id = Some("sqe-coordinator".into());
    settings.auth.client_secret = Some("client-secret".into());
    settings.auth.token_endpoint = Some(format!("http://{idp}/oauth/token"));
    settings.auth.scope = Some("catalog:rw".into());
    settings.auth.refresh_secs = 1;
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

/// An AWS STS `AssumeRole` endpoint standing in for AWS's (no STS can run here): each call gets
/// the store's key pair with a fresh session token, and its form is recorded.
async fn sts_endpoint(
    access_key: String,
    secret_key: String,
) -> Result<(SocketAddr, Forms), Box<dyn std::error::Error + Send + Sync>> {
    let calls = Forms::default();
    let recorded = calls.clone();
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |body: String| {
            let recorded = recorded.clone();
            let (access_key, secret_key) = (access_key.clone(), secret_key.clone());
            async move {
                let form: std::collections::HashMap<String, String> =
                    url::form_urlencoded::parse(body.as_bytes())
                        .into_owned()
                        .collect();
                let n = recorded.0.lock().map_or(0, |mut c| {
                    c.push(form);
                    c.len()
                });
                let xml = format!(
                    r#"<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <Credentials>
      <AccessKeyId>{access_key}</AccessKeyId>
      <SecretAccessKey>{secret_key}</SecretAccessKey>
      <SessionToken>sqe-test-session-{n}</SessionToken>
      <Expiration>2099-01-01T00:00:00Z</Expiration>
    </Credentials>
    <AssumedRoleUser>
      <AssumedRoleId>AROATEST:sqe</AssumedRoleId>
      <Arn>arn:aws:sts::000000000000:assumed-role/sqe-test/sqe</Arn>
    </AssumedRoleUser>
  </AssumeRoleResult>
  <ResponseMetadata><RequestId>req-{n}</RequestId></ResponseMetadata>
</AssumeRoleResponse>"#
                );
                ([(axum::http::header::CONTENT_TYPE, "text/xml")], xml)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((addr, calls))
}

/// A rustberg of the test's own that vends credentials through AWS STS (at `sts`), over `store`.
fn vending_catalog(
    stack: &Stack,
    dir: &Path,
    store_port: u16,
    sts: SocketAddr,
) -> Result<(Server, u16), Box<dyn std::error::Error + Send + Sync>> {
    let port = sqe_tests::process::free_port()?;
    let config = dir.join("rustberg.toml");
    std::fs::write(
        &config,
        format!(
            r#"[storage]
catalog_url = "file://{dir}/catalog"
warehouse_location = "s3://warehouse"

[storage.properties]
"s3.endpoint" = "http://127.0.0.1:{store_port}"
"s3.path-style-access" = "true"
"s3.region" = "us-east-1"
"s3.access-key-id" = "env:SQE_STACK_ACCESS_KEY"
"s3.secret-access-key" = "env:SQE_STACK_SECRET_KEY"

[rate_limit]
enabled = false

[credentials]
provider = "aws"

[credentials.aws]
region = "us-east-1"
role_arn = "arn:aws:iam::000000000000:role/sqe-test"
duration_seconds = 900
"#,
            dir = dir.display()
        ),
    )?;
    let log = std::fs::File::create(dir.join("rustberg.log"))?;
    let child = std::process::Command::new(stack.get("SQE_STACK_RUSTBERG_BIN")?)
        .arg("--config")
        .arg(&config)
        .args([
            "--dev",
            "--no-auth",
            "--insecure-http",
            "--host",
            "127.0.0.1",
        ])
        .args(["--port", &port.to_string()])
        .env(
            "SQE_STACK_ACCESS_KEY",
            stack.get("SQE_STORAGE__S3_ACCESS_KEY_ID")?,
        )
        .env(
            "SQE_STACK_SECRET_KEY",
            stack.get("SQE_STORAGE__S3_SECRET_ACCESS_KEY")?,
        )
        // The catalog's own AWS identity, for signing its AssumeRole calls.
        .env("AWS_ENDPOINT_URL_STS", format!("http://{sts}"))
        .env("AWS_ACCESS_KEY_ID", "rustberg-caller")
        .env("AWS_SECRET_ACCESS_KEY", "rustberg-caller-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()?;
    Ok((Server(child), port))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn credentials_vended_by_the_catalog_are_used_by_the_coordinator_and_the_workers()
-> TestResult {
    let stack = Stack::running()?;
    let (_store, store_port, _root) = own_store(&stack).await?;
    let (sts, assumed) = sts_endpoint(
        stack.get("SQE_STORAGE__S3_ACCESS_KEY_ID")?.to_string(),
        stack.get("SQE_STORAGE__S3_SECRET_ACCESS_KEY")?.to_string(),
    )
    .await?;
    let catalog_dir = tempfile::tempdir()?;
    let (_catalog, catalog_port) = vending_catalog(&stack, catalog_dir.path(), store_port, sts)?;
    let up = listening(catalog_port, Duration::from_secs(20)).await;
    let catalog_log =
        || std::fs::read_to_string(catalog_dir.path().join("rustberg.log")).unwrap_or_default();
    if let Err(e) = up {
        return Err(format!("the vending rustberg: {e}\n{}", catalog_log()).into());
    }

    // SQE's own keys (coordinator and workers) are not accepted by the store: every file it
    // reads or writes, it reads and writes with what the catalog vends.
    let mut settings = stack.settings.clone();
    settings.catalog.catalog_url = Some(format!("http://127.0.0.1:{catalog_port}"));
    settings.storage.s3_endpoint = Some(format!("http://127.0.0.1:{store_port}"));
    settings.storage.s3_access_key_id = Some("sqe-not-a-key".into());
    settings.storage.s3_secret_access_key = Some("sqe-not-a-secret".into());
    let cluster = cluster_on(settings.clone(), 2).await?;
    let addr = cluster.trino_addr()?;
    let result: TestResult = async {
        sql(addr, "CREATE SCHEMA vend").await?;
        sql(
            addr,
            "CREATE TABLE vend.numbers AS SELECT value AS n, value % 7 AS bucket \
             FROM generate_series(1, 20000)",
        )
        .await?;
        sql(
            addr,
            "INSERT INTO vend.numbers SELECT value, value % 7 FROM generate_series(20001, 40000)",
        )
        .await?;
        let before: u64 = cluster.tasks_per_worker().iter().sum();
        let grouped = sql(
            addr,
            "SELECT bucket, count(*), sum(n) FROM vend.numbers GROUP BY bucket ORDER BY bucket",
        )
        .await?;
        assert_eq!(grouped.len(), 7);
        assert_eq!(grouped[0], json!([0, 5714, 114294285]));
        let after: u64 = cluster.tasks_per_worker().iter().sum();
        assert!(after > before, "the workers read the table's files");
        // An UPDATE reads the rows and writes their new versions on the workers, with the
        // same vended credentials.
        let updated = sql(
            addr,
            "UPDATE vend.numbers SET bucket = bucket + 10 WHERE bucket = 0",
        )
        .await?;
        assert_eq!(updated, vec![json!([5714])]);
        assert!(
            cluster.tasks_per_worker().iter().sum::<u64>() > after,
            "the workers ran the UPDATE"
        );
        let moved = sql(
            addr,
            "SELECT bucket, count(*), sum(n) FROM vend.numbers WHERE bucket IN (0, 10) GROUP BY bucket",
        )
        .await?;
        assert_eq!(moved, vec![json!([10, 5714, 114294285])]);

        // The catalog asked STS for a credential scoped to the table for each load.
        let calls = assumed.all();
        assert!(!calls.is_empty(), "no credential was vended");
        for call in &calls {
            assert_eq!(call.get("Action").map(String::as_str), Some("AssumeRole"));
            assert_eq!(
                call.get("RoleArn").map(String::as_str),
                Some("arn:aws:iam::000000000000:role/sqe-test")
            );
            let policy = call.get("Policy").map(String::as_str).unwrap_or_default();
            assert!(
                policy.contains("vend/numbers"),
                "scoped to the table: {policy}"
            );
        }

        // Without vended credentials the same cluster's own keys are refused by the store.
        let mut own_keys = settings.clone();
        own_keys.catalog.vended_credentials = false;
        let refused = cluster_on(own_keys, 1).await?;
        let error = sql(refused.trino_addr()?, "SELECT count(*) FROM vend.numbers")
            .await
            .err()
            .ok_or("the store accepted SQE's own (wrong) keys")?
            .to_string();
        assert!(
            error.contains("403 Forbidden") && error.contains("NotSignedUp"),
            "the store refused the unknown key: {error}"
        );
        refused.stop().await;
        Ok(())
    }
    .await;
    cluster.stop().await;
    result.map_err(|e| format!("{e}\nrustberg log:\n{}", catalog_log()).into())
}

/// `sqe local` (the README's run command) in a directory where `scripts/stack.sh up` left a
/// stack running in `.stack`: the cluster runs on that stack; `--embedded` keeps it off.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqe_local_runs_on_a_running_stack_unless_told_embedded() -> TestResult {
    let stack = Stack::running()?;
    let cwd = tempfile::tempdir()?;
    std::os::unix::fs::symlink(&stack.dir, cwd.path().join(".stack"))?;
    let schema = unique("local");
    for embedded in [false, true] {
        let trino = sqe_tests::process::free_port()?;
        let flight = sqe_tests::process::free_port()?;
        let (trino_port, flight_port) = (trino.to_string(), flight.to_string());
        let mut args = vec![
            "local",
            "--scale-factor",
            "0",
            "--trino-http-port",
            &trino_port,
            "--flight-sql-port",
            &flight_port,
        ];
        if embedded {
            args.push("--embedded");
        }
        let mut local = sqe_tests::process::SqeProcess::spawn("local", &args, cwd.path(), &[])?;
        let addr = SocketAddr::from(([127, 0, 0, 1], trino));
        local.wait_for_port(addr, Duration::from_secs(60))?;
        let table = format!("{schema}.t");
        let made = async {
            sql(addr, &format!("CREATE SCHEMA IF NOT EXISTS {schema}")).await?;
            sql(addr, &format!("CREATE TABLE {table} AS SELECT 1 AS one")).await
        }
        .await;
        let log = local.log_text();
        assert!(local.terminate(Duration::from_secs(20)), "{log}");
        made?;
        let in_store = Path::new(stack.get("SQE_STACK_S3_ROOT")?)
            .join("warehouse")
            .join(&schema)
            .join("t");
        let in_embedded = cwd
            .path()
            .join("sqe-data/warehouse")
            .join(&schema)
            .join("t");
        if embedded {
            assert!(
                in_embedded.is_dir(),
                "--embedded wrote to ./sqe-data: {log}"
            );
            assert!(!log.contains("Using the REST catalog"), "{log}");
        } else {
            assert!(
                in_store.is_dir(),
                "the table went to the stack's store: {log}"
            );
            assert!(!in_embedded.exists(), "{log}");
            assert!(log.contains("Using the REST catalog + S3 stack"), "{log}");
        }
    }
    Ok(())
}

/// `sqe local` answers its first query only when its sample tables and its `default` schema
/// exist: a client that connects the moment the port opens never sees TABLE_NOT_FOUND.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqe_local_serves_once_its_tables_exist() -> TestResult {
    let cwd = tempfile::tempdir()?;
    let trino = sqe_tests::process::free_port()?;
    let flight = sqe_tests::process::free_port()?;
    let (trino_port, flight_port) = (trino.to_string(), flight.to_string());
    let args = [
        "local",
        "--embedded",
        "--scale-factor",
        "0.01",
        "--trino-http-port",
        &trino_port,
        "--flight-sql-port",
        &flight_port,
    ];
    let mut local = sqe_tests::process::SqeProcess::spawn("local", &args, cwd.path(), &[])?;
    let addr = SocketAddr::from(([127, 0, 0, 1], trino));
    local.wait_for_port(addr, Duration::from_secs(60))?;
    let answered = async {
        let counted = sql(addr, "SELECT count(*) FROM tpch.lineitem").await?;
        // No schema named: the session's `default` schema, which `sqe local` created.
        sql(addr, "CREATE TABLE t (a integer)").await?;
        sql(addr, "INSERT INTO t VALUES (7)").await?;
        let read = sql(addr, "SELECT a FROM iceberg.default.t").await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((counted, read))
    }
    .await;
    let log = local.log_text();
    assert!(local.terminate(Duration::from_secs(20)), "{log}");
    let (counted, read) = answered.map_err(|e| format!("{e}\n{log}"))?;
    assert_eq!(counted, vec![serde_json::json!([60175])]);
    assert_eq!(read, vec![serde_json::json!([7])]);
    Ok(())
}

/// Files under `dir` (none when it does not exist).
fn objects_under(dir: &Path) -> usize {
    files_under(dir).len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spooled_segments_come_from_the_store_and_go_when_acknowledged() -> TestResult {
    let stack = Stack::running()?;
    let prefix = unique("spool");
    let cluster = TestCluster::start_with(LocalOptions {
        workers: 1,
        scale_factor: 0.0,
        stack: Some(stack.settings.clone()),
        trino_spooling_location: Some(format!("s3://warehouse/{prefix}")),
        metrics_port: Some(sqe_tests::process::free_port()?),
        ..TestCluster::options()
    })
    .await?;
    let addr = cluster.trino_addr()?;
    let spool_dir = Path::new(stack.get("SQE_STACK_S3_ROOT")?)
        .join("warehouse")
        .join(&prefix);
    let sql_text = "SELECT value AS n, 'row ' || CAST(value AS VARCHAR) AS s \
                    FROM generate_series(1, 20000) ORDER BY n";
    let classic = sql(addr, sql_text).await?;
    assert_eq!(classic.len(), 20000);

    let client = reqwest::Client::new();
    let mut page: Value = client
        .post(format!("http://{addr}/v1/statement"))
        .header("X-Trino-User", "test")
        .header("X-Trino-Query-Data-Encoding", "json+zstd")
        .body(sql_text)
        .send()
        .await?
        .json()
        .await?;
    let mut rows: Vec<Value> = Vec::new();
    let mut acknowledgements = Vec::new();
    loop {
        assert!(page.get("error").is_none(), "{page}");
        for segment in page["data"]["segments"].as_array().into_iter().flatten() {
            assert_eq!(page["data"]["encoding"], "json+zstd");
            let bytes = match segment["type"].as_str() {
                Some("spooled") => {
                    let uri = segment["uri"].as_str().ok_or("no uri")?;
                    // A presigned URL of the store: the rows do not pass the coordinator.
                    let url = url::Url::parse(uri)?;
                    assert_ne!(url.port(), Some(addr.port()), "{uri}");
                    assert!(
                        url.query().is_some_and(|q| q.contains("X-Amz-Signature")),
                        "{uri}"
                    );
                    assert!(url.path().contains(&prefix), "{uri}");
                    let key = segment["headers"]["x-sqe-segment-key"][0]
                        .as_str()
                        .ok_or("no key")?
                        .to_string();
                    // Downloaded without credentials, with the segment's headers, as the
                    // python client does.
                    let answer = client
                        .get(uri)
                        .header("x-sqe-segment-key", &key)
                        .send()
                        .await?;
                    assert_eq!(answer.status(), 200, "{uri}");
                    acknowledgements.push((segment["ackUri"].clone(), key, uri.to_string()));
                    answer.bytes().await?.to_vec()
                }
                _ => base64_decode(segment["data"].as_str().ok_or("no data")?)?,
            };
            let json = match segment["metadata"]["uncompressedSize"].as_u64() {
                Some(size) => zstd::bulk::decompress(&bytes, usize::try_from(size)?)?,
                None => bytes,
            };
            rows.extend(serde_json::from_slice::<Vec<Value>>(&json)?);
        }
        match next_page(&client, &page).await? {
            Some(next) => page = next,
            None => break,
        }
    }
    assert_eq!(rows, classic);
    assert!(!acknowledgements.is_empty(), "20000 rows were spooled");
    assert_eq!(objects_under(&spool_dir), acknowledgements.len());
    let metrics = cluster
        .cluster
        .coordinator
        .metrics_addr
        .ok_or("no metrics port")?;
    let spooled = || async {
        let text = sqe_tests::metrics::scrape(&client, metrics).await?;
        sqe_tests::metrics::sample(&text, "sqe_trino_spooled_segments")
            .ok_or_else(|| format!("no spooled segments gauge in\n{text}").into())
    };
    let waiting: Result<f64, Box<dyn std::error::Error + Send + Sync>> = spooled().await;
    assert_eq!(waiting?, acknowledgements.len() as f64);

    // Each acknowledgement deletes its object from the store.
    for (ack, key, _) in &acknowledgements {
        let answer = client
            .get(ack.as_str().ok_or("no ackUri")?)
            .header("x-sqe-segment-key", key)
            .send()
            .await?;
        assert_eq!(answer.status(), 200);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while objects_under(&spool_dir) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} spooled objects outlived their acknowledgement",
            objects_under(&spool_dir)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, _, uri) = &acknowledgements[0];
    assert_eq!(client.get(uri).send().await?.status(), 404);
    let waiting: Result<f64, Box<dyn std::error::Error + Send + Sync>> = spooled().await;
    assert_eq!(waiting?, 0.0);
    cluster.stop().await;
    Ok(())
}

fn base64_decode(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text)
}
