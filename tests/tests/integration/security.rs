//! Where data may go, on a real coordinator with its embedded catalog and a local warehouse:
//! a table's location lies under the warehouse, names cannot climb out of it, and the local
//! storage reads nothing outside it, even for a table another catalog client registered there.
//! And credentials never cross plain gRPC unless a TLS proxy is said to be in front.

use sqe_engine::error::ErrorCode;
use sqe_tests::cluster::{TestCluster, local_coordinator_config};
use sqe_tests::files_under;

use crate::TestResult;

fn code_of(result: Result<impl std::fmt::Debug, sqe_engine::Error>) -> Option<ErrorCode> {
    result.err().map(|e| e.code())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_stay_in_the_warehouse() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    let data = cluster.data_dir().to_path_buf();
    let warehouse = data.join("warehouse");
    cluster.sql("CREATE SCHEMA s").await?;

    // A location under the warehouse is where the table's files go.
    let custom = warehouse.join("custom").join("kept");
    cluster
        .sql(&format!(
            "CREATE TABLE s.kept (x INTEGER) WITH (location = 'file://{}')",
            custom.display()
        ))
        .await?;
    cluster.sql("INSERT INTO s.kept VALUES (1), (2)").await?;
    let rows = cluster.query("SELECT count(*) FROM s.kept").await?;
    assert_eq!(rows[0].num_rows(), 1);
    assert!(
        files_under(&custom)
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "parquet")),
        "no data file under {}",
        custom.display()
    );

    // Anywhere else is refused before anything is written.
    let outside = data.join("outside");
    for location in [
        format!("file://{}", outside.display()),
        format!("file://{}/../outside", warehouse.display()),
        format!("{}/elsewhere", warehouse.display()),
        "s3://another-bucket/t".to_string(),
    ] {
        let create = cluster
            .sql(&format!(
                "CREATE TABLE s.escaped (x INTEGER) WITH (location = '{location}')"
            ))
            .await;
        assert_eq!(
            code_of(create),
            Some(ErrorCode::InvalidTableProperty),
            "{location}"
        );
        let ctas = cluster
            .sql(&format!(
                "CREATE TABLE s.escaped WITH (location = '{location}') AS SELECT 1 AS x"
            ))
            .await;
        assert_eq!(
            code_of(ctas),
            Some(ErrorCode::InvalidTableProperty),
            "{location}"
        );
    }
    // Names that are not one path segment are refused, for tables and schemas alike.
    for statement in [
        r#"CREATE TABLE s."../../outside" (x INTEGER)"#,
        r#"CREATE TABLE s."a/b" AS SELECT 1 AS x"#,
        r#"CREATE SCHEMA "../outside""#,
        r#"CREATE TABLE "..".t (x INTEGER)"#,
    ] {
        assert_eq!(
            code_of(cluster.sql(statement).await),
            Some(ErrorCode::NotSupported),
            "{statement}"
        );
    }
    // DataFusion's own file statements stay refused, and a path is not a table.
    let copied = data.join("copied.csv");
    for statement in [
        format!(
            "CREATE EXTERNAL TABLE passwd (line VARCHAR) STORED AS CSV LOCATION '{}'",
            copied.display()
        ),
        format!("COPY (VALUES 1) TO '{}' STORED AS CSV", copied.display()),
    ] {
        assert_eq!(
            code_of(cluster.sql(&statement).await),
            Some(ErrorCode::NotSupported),
            "{statement}"
        );
    }
    for path in ["'/etc/hostname'", "\"file:///etc/hostname\""] {
        assert_eq!(
            code_of(cluster.sql(&format!("SELECT * FROM {path}")).await),
            Some(ErrorCode::TableNotFound),
            "{path}"
        );
    }
    assert!(!copied.exists());
    assert!(
        !outside.exists(),
        "something was written outside the warehouse"
    );
    let escaped: Vec<_> = files_under(&data)
        .into_iter()
        .filter(|f| !f.starts_with(&warehouse) && !f.starts_with(data.join("catalog.db")))
        .collect();
    assert!(
        escaped.is_empty(),
        "files outside the warehouse: {escaped:?}"
    );
    cluster.stop().await;
    Ok(())
}

/// A table another client of the same catalog registered outside the warehouse: SQE's storage
/// reads none of its files (its metadata included), and writes none there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_storage_never_leaves_the_warehouse() -> TestResult {
    use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
    use iceberg::{NamespaceIdent, TableCreation};

    let cluster = TestCluster::start(1, 0.0).await?;
    let data = cluster.data_dir().to_path_buf();
    cluster.sql("CREATE SCHEMA s").await?;
    // Another client: the same SQLite catalog, no SQE policy.
    let (uri, warehouse) = sqe_engine::catalog::default_warehouse_layout(&data);
    let other = sqe_engine::catalog::connect_catalog(
        &sqe_engine::catalog::CatalogSettings {
            uri: Some(uri),
            warehouse: Some(warehouse),
            ..Default::default()
        },
        &std::collections::HashMap::new(),
    )
    .await?
    .catalog;
    let outside = data.join("registered-outside");
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "x", Type::Primitive(PrimitiveType::Int)).into(),
        ])
        .build()?;
    other
        .create_table(
            &NamespaceIdent::new("s".into()),
            TableCreation::builder()
                .name("planted".into())
                .schema(schema)
                .location(format!("file://{}", outside.display()))
                .build(),
        )
        .await?;
    assert!(outside.exists(), "the other client wrote its metadata");
    let before = files_under(&outside);

    let read = cluster.sql("SELECT * FROM s.planted").await;
    let message = read.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("not under the warehouse"),
        "a table outside the warehouse was read: {message}"
    );
    assert!(
        cluster
            .sql("INSERT INTO s.planted VALUES (1)")
            .await
            .is_err()
    );
    assert_eq!(
        files_under(&outside),
        before,
        "SQE wrote outside the warehouse"
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flight_sql_takes_no_credentials_over_plain_grpc() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut config = local_coordinator_config(dir.path());
    config.client_auth = sqe_gateway::config::ClientAuthConfig {
        kind: sqe_gateway::config::ClientAuthType::Password,
        users: std::collections::HashMap::from([("alice".to_string(), bcrypt::hash("s3cret", 4)?)]),
        ..Default::default()
    };
    let flight = sqe_gateway::node::bind("127.0.0.1", 0, "flight").await?;
    let refused = sqe_gateway::node::start_coordinator_on(&config, flight, None)
        .await
        .err()
        .ok_or("a coordinator took passwords over plain gRPC")?;
    let refused = refused.to_string();
    assert!(refused.contains("Flight SQL port needs TLS"), "{refused}");
    // Said to be behind a TLS-terminating proxy, it starts.
    config.coordinator.flight_sql_allow_insecure_auth = true;
    let flight = sqe_gateway::node::bind("127.0.0.1", 0, "flight").await?;
    let coordinator = sqe_gateway::node::start_coordinator_on(&config, flight, None).await?;
    coordinator.stop().await;
    Ok(())
}

/// `sqe local` answers only requests addressed to a loopback name: a web page whose name
/// resolves to 127.0.0.1 cannot drive it from the user's browser (DNS rebinding). And a body
/// over the Trino port's limit is a 413 with a message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_trino_port_answers_only_loopback_names() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    let addr = cluster.trino_addr()?;
    let client = reqwest::Client::new();
    let post = |host: String, body: String| {
        client
            .post(format!("http://{addr}/v1/statement"))
            .header("host", host)
            .header("x-trino-user", "test")
            .body(body)
            .send()
    };
    let rebound = post(format!("evil.example:{}", addr.port()), "SELECT 1".into()).await?;
    assert_eq!(rebound.status(), reqwest::StatusCode::FORBIDDEN);
    for host in [format!("localhost:{}", addr.port()), addr.to_string()] {
        let answered = post(host.clone(), "SELECT 1".into()).await?;
        assert_eq!(answered.status(), reqwest::StatusCode::OK, "{host}");
    }
    // Announced too large, it is refused before a byte of the body is read.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let head = format!(
        "POST /v1/statement HTTP/1.1\r\nhost: {addr}\r\nx-trino-user: test\r\ncontent-length: {}\r\n\r\n",
        17 * 1024 * 1024
    );
    stream.write_all(head.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 413"),
        "{}",
        answer.lines().next().unwrap_or_default()
    );
    assert!(answer.contains("length limit exceeded"), "{answer}");
    cluster.stop().await;
    Ok(())
}
