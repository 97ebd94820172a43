//! The Flight SQL service against a stand-in `Queries` (the real lifecycle over an in-memory
//! catalog, no workers), served on a loopback port and called with arrow-flight's client:
//! tickets, prepared statements with parameters, updates, status codes and who runs a query.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_flight::error::FlightError;
use arrow_flight::sql::client::FlightSqlServiceClient;
use datafusion::arrow::array::{Array, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use futures::TryStreamExt;
use tonic::Code;
use tonic::transport::Channel;

use crate::client_auth::ClientAuth;
use crate::config::{ClientAuthConfig, ClientAuthType, IpcCompression};
use crate::flight::{flight_service, flight_sql_server};
use sqe_engine::engine::EngineSettings;
use sqe_engine::queries::Queries;

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Endpoint {
    url: String,
    queries: Arc<Queries>,
    _warehouse: tempfile::TempDir,
}

async fn serve(auth: Arc<ClientAuth>) -> Result<Endpoint, Box<dyn std::error::Error>> {
    serve_compressed(auth, IpcCompression::None).await
}

async fn serve_compressed(
    auth: Arc<ClientAuth>,
    compression: IpcCompression,
) -> Result<Endpoint, Box<dyn std::error::Error>> {
    let warehouse = tempfile::tempdir()?;
    let queries =
        sqe_engine::stand_in::queries_in(warehouse.path(), EngineSettings::default()).await?;
    let (layer, service) = flight_service(Arc::clone(&queries), auth, compression, None);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let router = tonic::transport::Server::builder()
        .layer(layer)
        .add_service(flight_sql_server(service));
    tokio::spawn(
        router.serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    Ok(Endpoint {
        url,
        queries,
        _warehouse: warehouse,
    })
}

async fn client(url: &str) -> Result<FlightSqlServiceClient<Channel>, Box<dyn std::error::Error>> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_string())?
        .connect()
        .await?;
    Ok(FlightSqlServiceClient::new(channel))
}

fn status(error: FlightError) -> tonic::Status {
    match error {
        FlightError::Tonic(status) => *status,
        other => tonic::Status::unknown(other.to_string()),
    }
}

/// Plans `sql` and fetches every endpoint's batches.
async fn query(
    client: &mut FlightSqlServiceClient<Channel>,
    sql: &str,
) -> Result<Vec<RecordBatch>, tonic::Status> {
    let info = client
        .execute(sql.to_string(), None)
        .await
        .map_err(status)?;
    let mut batches = Vec::new();
    for endpoint in info.endpoint {
        let ticket = endpoint
            .ticket
            .ok_or_else(|| tonic::Status::internal("endpoint without a ticket"))?;
        let stream = client.do_get(ticket).await.map_err(status)?;
        batches.extend(stream.try_collect::<Vec<_>>().await.map_err(status)?);
    }
    Ok(batches)
}

/// The integers of `column`, whatever their width.
fn longs(batches: &[RecordBatch], column: usize) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let values = datafusion::arrow::compute::cast(b.column(column), &DataType::Int64)
                .ok()
                .and_then(|c| {
                    c.as_any()
                        .downcast_ref::<Int64Array>()
                        .map(|a| (0..a.len()).map(|i| a.value(i)).collect::<Vec<_>>())
                });
            values.unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn a_query_is_planned_then_fetched_by_its_ticket() -> TestResult {
    let endpoint = serve(ClientAuth::disabled()?).await?;
    let mut client = client(&endpoint.url).await?;
    let batches = query(
        &mut client,
        "SELECT n FROM (VALUES (1), (2), (3)) AS t(n) ORDER BY n",
    )
    .await?;
    assert_eq!(longs(&batches, 0), [1, 2, 3]);
    let records = endpoint.queries.engine().history().records();
    let [record] = records.as_slice() else {
        return Err(format!("one query expected, history has {}", records.len()).into());
    };
    assert_eq!(record.start.endpoint, "flight_sql");
    assert_eq!(record.state().name(), "FINISHED");
    Ok(())
}

#[tokio::test]
async fn refusals_carry_the_grpc_code_of_their_kind() -> TestResult {
    let endpoint = serve(ClientAuth::disabled()?).await?;
    let mut client = client(&endpoint.url).await?;
    client
        .execute_update("CREATE SCHEMA iceberg.s".into(), None)
        .await?;
    let cases = [
        ("SELEC 1", Code::InvalidArgument),
        ("SELECT * FROM iceberg.s.missing", Code::NotFound),
        ("SELECT * FROM iceberg.nowhere.t", Code::NotFound),
        ("CREATE SCHEMA iceberg.s", Code::AlreadyExists),
    ];
    for (sql, code) in cases {
        let refused = query(&mut client, sql)
            .await
            .err()
            .ok_or_else(|| format!("{sql} ran"))?;
        assert_eq!(refused.code(), code, "{sql}: {}", refused.message());
    }
    Ok(())
}

#[tokio::test]
async fn a_prepared_statement_runs_once_per_parameter_row() -> TestResult {
    let endpoint = serve(ClientAuth::disabled()?).await?;
    let mut client = client(&endpoint.url).await?;
    client
        .execute_update("CREATE SCHEMA iceberg.s".into(), None)
        .await?;
    client
        .execute_update("CREATE TABLE iceberg.s.t (n BIGINT)".into(), None)
        .await?;
    let mut insert = client
        .prepare("INSERT INTO iceberg.s.t VALUES (?)".into(), None)
        .await?;
    let rows = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("p", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from(vec![10, 20, 30]))],
    )?;
    insert.set_parameters(rows)?;
    assert_eq!(insert.execute_update().await?, 3);
    insert.close().await?;
    let mut select = client
        .prepare(
            "SELECT n FROM iceberg.s.t WHERE n > ? ORDER BY n".into(),
            None,
        )
        .await?;
    let threshold = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("p", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from(vec![15]))],
    )?;
    select.set_parameters(threshold)?;
    let info = select.execute().await?;
    let mut batches = Vec::new();
    for endpoint in info.endpoint {
        let ticket = endpoint.ticket.ok_or("endpoint without a ticket")?;
        batches.extend(client.do_get(ticket).await?.try_collect::<Vec<_>>().await?);
    }
    assert_eq!(longs(&batches, 0), [20, 30]);
    Ok(())
}

#[tokio::test]
async fn a_batch_of_parameter_rows_is_one_statement_all_or_nothing() -> TestResult {
    let endpoint = serve(ClientAuth::disabled()?).await?;
    let mut client = client(&endpoint.url).await?;
    for sql in [
        "CREATE SCHEMA iceberg.b",
        "CREATE TABLE iceberg.b.t (n BIGINT)",
    ] {
        client.execute_update(sql.into(), None).await?;
    }
    let mut insert = client
        .prepare("INSERT INTO iceberg.b.t VALUES (60 / ?)".into(), None)
        .await?;
    let batch = |values: Vec<i64>| {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("p", DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from(values))],
        )
    };
    // The second row divides by zero: the statement fails, and the first row is not kept.
    insert.set_parameters(batch(vec![1, 0, 2])?)?;
    let failed = insert.execute_update().await;
    assert!(failed.is_err(), "a row divided by zero: {failed:?}");
    let counted = query(&mut client, "SELECT count(*) FROM iceberg.b.t").await?;
    assert_eq!(
        longs(&counted, 0),
        [0],
        "part of a failed batch was committed"
    );
    // A good batch is one snapshot for all its rows.
    insert.set_parameters(batch(vec![1, 2, 3, 4])?)?;
    assert_eq!(insert.execute_update().await?, 4);
    let table = iceberg::TableIdent::from_strs(["b", "t"])?;
    let loaded = endpoint
        .queries
        .engine()
        .catalog()
        .load_table(&table)
        .await?;
    assert_eq!(
        loaded.metadata().snapshots().count(),
        1,
        "one commit for the batch"
    );
    let sum = query(&mut client, "SELECT sum(n) FROM iceberg.b.t").await?;
    assert_eq!(longs(&sum, 0), [60 + 30 + 20 + 15]);
    // Other statements take one row at a time.
    let mut create = client
        .prepare("CREATE TABLE iceberg.b.u AS SELECT ? AS n".into(), None)
        .await?;
    create.set_parameters(batch(vec![1, 2])?)?;
    let refused = create
        .execute_update()
        .await
        .err()
        .map(|e| status(e).code());
    assert_eq!(refused, Some(Code::InvalidArgument));
    Ok(())
}

#[tokio::test]
async fn with_authentication_statements_run_as_the_signed_in_user() -> TestResult {
    let mut users = HashMap::new();
    users.insert("alice".to_string(), bcrypt::hash("secret", 4)?);
    let auth = ClientAuth::from_config(&ClientAuthConfig {
        kind: ClientAuthType::Password,
        users,
        token_secret: Some("a test secret that is long enough".into()),
        ..ClientAuthConfig::default()
    })?;
    let endpoint = serve(auth).await?;
    let mut anonymous = client(&endpoint.url).await?;
    let refused = query(&mut anonymous, "SELECT 1")
        .await
        .err()
        .ok_or("an anonymous query ran")?;
    assert_eq!(refused.code(), Code::Unauthenticated);
    // (arrow-flight's `handshake` hides the status; the raw call shows it.)
    let mut wrong = client(&endpoint.url).await?;
    let mut handshake = tonic::Request::new(futures::stream::iter([
        arrow_flight::HandshakeRequest::default(),
    ]));
    handshake
        .metadata_mut()
        .insert("authorization", "Basic YWxpY2U6bm9wZQ==".parse()?);
    let refused = wrong
        .inner_mut()
        .handshake(handshake)
        .await
        .err()
        .ok_or("signed in with a wrong password")?;
    assert_eq!(refused.code(), Code::Unauthenticated);
    let mut alice = client(&endpoint.url).await?;
    alice.handshake("alice", "secret").await?;
    query(&mut alice, "SELECT 1").await?;
    let users: Vec<String> = endpoint
        .queries
        .engine()
        .history()
        .records()
        .iter()
        .map(|r| r.start.user.clone())
        .collect();
    assert_eq!(users, ["alice"]);
    Ok(())
}

#[tokio::test]
async fn ddl_and_writes_run_when_executed_even_if_never_read() -> TestResult {
    let endpoint = serve(ClientAuth::disabled()?).await?;
    let mut client = client(&endpoint.url).await?;
    // ADBC's `cursor.execute` plans a statement and may never fetch its ticket.
    for sql in [
        "CREATE SCHEMA unread",
        "CREATE TABLE unread.t (n INTEGER)",
        "INSERT INTO unread.t VALUES (1), (2)",
    ] {
        client
            .execute(sql.to_string(), None)
            .await
            .map_err(status)?;
    }
    let batches = query(&mut client, "SELECT n FROM unread.t ORDER BY n").await?;
    assert_eq!(longs(&batches, 0), [1, 2]);
    // Its ticket still answers what the statement did.
    let counted = query(&mut client, "INSERT INTO unread.t VALUES (3)").await?;
    assert_eq!(longs(&counted, 0), [1]);
    // An error is the execute call's.
    let refused = client
        .execute("CREATE SCHEMA unread".to_string(), None)
        .await
        .map_err(status);
    assert!(refused.is_err(), "a second CREATE SCHEMA succeeded");
    Ok(())
}

#[tokio::test]
async fn repeated_wrong_passwords_are_held_off_as_resource_exhausted() -> TestResult {
    let users = HashMap::from([("alice".to_string(), bcrypt::hash("secret", 4)?)]);
    let auth = ClientAuth::from_config(&ClientAuthConfig {
        kind: ClientAuthType::Password,
        users,
        ..ClientAuthConfig::default()
    })?;
    let endpoint = serve(auth).await?;
    let url = endpoint.url.clone();
    for _ in 0..5 {
        // alice:nope
        assert_eq!(
            handshake_code(&url, "Basic YWxpY2U6bm9wZQ==").await?,
            Code::Unauthenticated
        );
    }
    // alice:secret, from the same address: held off, not checked.
    assert_eq!(
        handshake_code(&url, "Basic YWxpY2U6c2VjcmV0").await?,
        Code::ResourceExhausted
    );
    Ok(())
}

/// The code a raw Handshake with `authorization` ends with (arrow-flight's hides it).
async fn handshake_code(
    url: &str,
    authorization: &str,
) -> Result<Code, Box<dyn std::error::Error>> {
    let mut caller = client(url).await?;
    let mut request = tonic::Request::new(futures::stream::iter([
        arrow_flight::HandshakeRequest::default(),
    ]));
    request
        .metadata_mut()
        .insert("authorization", authorization.parse()?);
    Ok(match caller.inner_mut().handshake(request).await {
        Ok(_) => Code::Ok,
        Err(status) => status.code(),
    })
}

/// A client naming itself `user` (authentication off: the Basic user is taken as said).
async fn client_as(
    url: &str,
    user: &str,
) -> Result<FlightSqlServiceClient<Channel>, Box<dyn std::error::Error>> {
    use base64::Engine as _;
    let mut caller = client(url).await?;
    let credentials = base64::engine::general_purpose::STANDARD.encode(format!("{user}:"));
    caller.set_header("authorization", format!("Basic {credentials}"));
    Ok(caller)
}

#[tokio::test]
async fn a_flood_of_prepared_statements_stops_at_the_users_share() -> TestResult {
    use super::statements::MAX_STATEMENTS_PER_USER;
    let endpoint = serve(ClientAuth::disabled()?).await?;
    let mut alice = client_as(&endpoint.url, "alice").await?;
    for _ in 0..MAX_STATEMENTS_PER_USER {
        alice
            .prepare("SELECT 1".into(), None)
            .await
            .map_err(status)?;
    }
    let refused = alice
        .prepare("SELECT 1".into(), None)
        .await
        .err()
        .map(|e| status(e).code());
    assert_eq!(refused, Some(Code::ResourceExhausted));
    // Nobody else is crowded out, and queries go on being answered.
    let mut bob = client_as(&endpoint.url, "bob").await?;
    bob.prepare("SELECT 1".into(), None).await.map_err(status)?;
    let answered = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        query(&mut alice, "SELECT 1"),
    )
    .await??;
    assert_eq!(longs(&answered, 0), [1]);
    Ok(())
}

#[tokio::test]
async fn at_the_cap_a_write_is_refused_before_it_runs() -> TestResult {
    use super::statements::MAX_STATEMENTS_PER_USER;
    let endpoint = serve(ClientAuth::disabled()?).await?;
    let mut alice = client_as(&endpoint.url, "alice").await?;
    for sql in ["CREATE SCHEMA capped", "CREATE TABLE capped.t (n INTEGER)"] {
        query(&mut alice, sql).await?;
    }
    // Tickets never fetched fill alice's share.
    for _ in 0..MAX_STATEMENTS_PER_USER {
        alice
            .execute("SELECT 1".into(), None)
            .await
            .map_err(status)?;
    }
    let refused = alice
        .execute("INSERT INTO capped.t VALUES (1)".into(), None)
        .await
        .err()
        .map(|e| status(e).code());
    assert_eq!(refused, Some(Code::ResourceExhausted));
    // Refused means not done: the table is still empty.
    let mut bob = client_as(&endpoint.url, "bob").await?;
    let counted = query(&mut bob, "SELECT count(*) FROM capped.t").await?;
    assert_eq!(longs(&counted, 0), [0]);
    Ok(())
}

#[tokio::test]
async fn parameters_over_the_limit_are_refused_while_they_stream() -> TestResult {
    let endpoint = serve(ClientAuth::disabled()?).await?;
    let mut client = client(&endpoint.url).await?;
    let mut select = client.prepare("SELECT length(?)".into(), None).await?;
    // 80 rows of 1 MiB: more than the 64 MiB one DoPut may bind.
    let huge = "x".repeat(1024 * 1024);
    let rows = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("p", DataType::Utf8, false)])),
        vec![Arc::new(datafusion::arrow::array::StringArray::from(vec![
            huge.as_str();
            80
        ]))],
    )?;
    select.set_parameters(rows)?;
    let refused = select.execute().await.err().map(|e| status(e).code());
    assert_eq!(refused, Some(Code::ResourceExhausted));
    // The endpoint goes on.
    assert_eq!(longs(&query(&mut client, "SELECT 1").await?, 0), [1]);
    Ok(())
}

async fn signed_in(
    url: &str,
    user: &str,
) -> Result<FlightSqlServiceClient<Channel>, Box<dyn std::error::Error>> {
    let mut caller = client(url).await?;
    caller.handshake(user, user).await?;
    Ok(caller)
}

#[tokio::test]
async fn every_flight_sql_path_runs_as_the_signed_in_user() -> TestResult {
    use arrow_flight::sql::{
        CommandStatementIngest, TableDefinitionOptions, TableExistsOption, TableNotExistOption,
    };
    let endpoint = serve(crate::client_auth::alice_and_bob()?).await?;
    let mut alice = signed_in(&endpoint.url, "alice").await?;
    alice
        .execute_update("CREATE SCHEMA iceberg.s".into(), None)
        .await?;
    alice
        .execute_update("CREATE TABLE iceberg.s.t (n BIGINT)".into(), None)
        .await?;
    let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    let values = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(Int64Array::from(vec![1, 2]))],
    )?;
    let mut insert = alice
        .prepare("INSERT INTO iceberg.s.t VALUES (?)".into(), None)
        .await?;
    insert.set_parameters(values.clone())?;
    assert_eq!(insert.execute_update().await?, 2);
    let mut select = alice
        .prepare("SELECT count(*) FROM iceberg.s.t WHERE n > ?".into(), None)
        .await?;
    select.set_parameters(RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(Int64Array::from(vec![0]))],
    )?)?;
    select.execute().await?;
    let ingest = CommandStatementIngest {
        table_definition_options: Some(TableDefinitionOptions {
            if_not_exist: TableNotExistOption::Create.into(),
            if_exists: TableExistsOption::Fail.into(),
        }),
        table: "u".into(),
        schema: Some("s".into()),
        ..Default::default()
    };
    let rows = futures::stream::iter([Ok(values)]);
    assert_eq!(alice.execute_ingest(ingest, rows).await?, 2);
    let me = query(&mut alice, "SELECT current_user").await?;
    let me = me[0]
        .column(0)
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>()
        .map(|a| a.value(0).to_string());
    assert_eq!(me.as_deref(), Some("alice"));
    let history = endpoint.queries.engine().history().records();
    assert!(history.len() >= 6, "{} statements recorded", history.len());
    let users: std::collections::BTreeSet<String> =
        history.iter().map(|r| r.start.user.clone()).collect();
    assert_eq!(users.into_iter().collect::<Vec<_>>(), ["alice"]);
    Ok(())
}

#[tokio::test]
async fn only_its_user_kills_a_flight_sql_query() -> TestResult {
    let endpoint = serve(crate::client_auth::alice_and_bob()?).await?;
    let mut alice = signed_in(&endpoint.url, "alice").await?;
    let info = alice
        .execute("SELECT count(*) FROM range(1000000000000)".into(), None)
        .await?;
    let ticket = info.endpoint[0].ticket.clone().ok_or("no ticket")?;
    let mut reader = signed_in(&endpoint.url, "alice").await?;
    let running = tokio::spawn(async move {
        match reader.do_get(ticket).await {
            Ok(stream) => stream
                .try_collect::<Vec<_>>()
                .await
                .map(|_| ())
                .map_err(status),
            Err(e) => Err(status(e)),
        }
    });
    let id = loop {
        let history = endpoint.queries.engine().history().records();
        if let Some(record) = history
            .iter()
            .find(|r| r.state().name() == "RUNNING" && r.start.sql.contains("range"))
        {
            break record.snapshot().id;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let kill = format!("CALL system.runtime.kill_query(query_id => '{id}')");
    let mut bob = signed_in(&endpoint.url, "bob").await?;
    let refused = query(&mut bob, &kill).await.err().map(|s| s.code());
    assert_eq!(refused, Some(Code::PermissionDenied));
    query(&mut alice, &kill).await?;
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), running).await??;
    assert_eq!(ended.err().map(|s| s.code()), Some(Code::Cancelled));
    Ok(())
}

/// A result fetched with `header` (the compression call header, if any) as raw Flight data:
/// each record batch message's compression codec, and the rows decoded.
async fn fetched_with(
    url: &str,
    sql: &str,
    header: Option<&str>,
) -> Result<
    (
        Vec<Option<datafusion::arrow::ipc::CompressionType>>,
        Vec<i64>,
    ),
    tonic::Status,
> {
    let unavailable = |e: &dyn std::fmt::Display| tonic::Status::unavailable(e.to_string());
    let channel = tonic::transport::Endpoint::from_shared(url.to_string())
        .map_err(|e| unavailable(&e))?
        .connect()
        .await
        .map_err(|e| unavailable(&e))?;
    let mut sql_client = FlightSqlServiceClient::new(channel.clone());
    let info = sql_client
        .execute(sql.to_string(), None)
        .await
        .map_err(status)?;
    let ticket = info
        .endpoint
        .first()
        .and_then(|e| e.ticket.clone())
        .ok_or_else(|| tonic::Status::internal("no ticket"))?;
    let mut request = tonic::Request::new(ticket);
    if let Some(value) = header {
        request.metadata_mut().insert(
            crate::flight::service::COMPRESSION_HEADER,
            value.parse().map_err(|e| unavailable(&e))?,
        );
    }
    let mut raw = arrow_flight::flight_service_client::FlightServiceClient::new(channel);
    let data: Vec<arrow_flight::FlightData> = raw
        .do_get(request)
        .await?
        .into_inner()
        .try_collect()
        .await?;
    let mut codecs = Vec::new();
    for message in &data {
        let header = datafusion::arrow::ipc::root_as_message(&message.data_header)
            .map_err(|e| tonic::Status::internal(e.to_string()))?;
        if let Some(batch) = header.header_as_record_batch() {
            codecs.push(batch.compression().map(|c| c.codec()));
        }
    }
    let batches: Vec<RecordBatch> =
        arrow_flight::decode::FlightRecordBatchStream::new_from_flight_data(futures::stream::iter(
            data.into_iter().map(Ok),
        ))
        .try_collect()
        .await
        .map_err(status)?;
    Ok((codecs, longs(&batches, 0)))
}

#[tokio::test]
async fn results_are_compressed_as_the_port_or_the_call_asks() -> TestResult {
    use datafusion::arrow::ipc::CompressionType;
    let sql = "SELECT value FROM generate_series(1, 5000) ORDER BY value";
    let expected: Vec<i64> = (1..=5000).collect();

    let plain = serve(ClientAuth::disabled()?).await?;
    let (codecs, rows) = fetched_with(&plain.url, sql, None).await?;
    assert!(
        !codecs.is_empty() && codecs.iter().all(Option::is_none),
        "{codecs:?}"
    );
    assert_eq!(rows, expected);
    let (codecs, rows) = fetched_with(&plain.url, sql, Some("ZSTD")).await?;
    assert!(
        !codecs.is_empty() && codecs.iter().all(|c| *c == Some(CompressionType::ZSTD)),
        "{codecs:?}"
    );
    assert_eq!(rows, expected);
    let refused = fetched_with(&plain.url, sql, Some("brotli"))
        .await
        .err()
        .ok_or("an unknown codec was taken")?;
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused}");

    let lz4 = serve_compressed(ClientAuth::disabled()?, IpcCompression::Lz4).await?;
    let (codecs, rows) = fetched_with(&lz4.url, sql, None).await?;
    assert!(
        !codecs.is_empty()
            && codecs
                .iter()
                .all(|c| *c == Some(CompressionType::LZ4_FRAME)),
        "{codecs:?}"
    );
    assert_eq!(rows, expected);
    let (codecs, _) = fetched_with(&lz4.url, sql, Some("none")).await?;
    assert!(codecs.iter().all(Option::is_none), "{codecs:?}");
    Ok(())
}
