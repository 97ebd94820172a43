//! The Flight SQL endpoint through real clients: ADBC and pyarrow (Python, from the project's
//! virtualenv), and arrow-flight's Rust client for the commands ADBC does not send.

use std::sync::Arc;

use arrow_flight::sql::client::FlightSqlServiceClient;
use arrow_flight::sql::{CommandGetPrimaryKeys, CommandStatementQuery, ProstMessageExt, SqlInfo};
use arrow_flight::{CancelStatus, FlightDescriptor};
use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use prost::Message;
use sqe_tests::cluster::TestCluster;
use sqe_tests::flight::{cancel, fetch, statement_descriptor};
use sqe_tests::python::run_python;
use sqe_tests::render;
use tonic::transport::Channel;

use crate::TestResult;

async fn python_suite(suite: &str, uri: String) -> TestResult {
    run_python("test_flight_sql.py", &[suite.to_string(), uri]).await?;
    Ok(())
}

fn grpc_uri(cluster: &TestCluster) -> String {
    format!("grpc://{}", cluster.cluster.coordinator.flight_sql_addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adbc_and_pyarrow_against_an_open_endpoint() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    python_suite("open", grpc_uri(&cluster)).await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn adbc_with_password_authentication() -> TestResult {
    let cluster = TestCluster::with_password_user("alice", "s3cret").await?;
    python_suite("auth", grpc_uri(&cluster)).await?;
    cluster.stop().await;
    Ok(())
}

async fn client(
    cluster: &TestCluster,
) -> Result<FlightSqlServiceClient<Channel>, Box<dyn std::error::Error + Send + Sync>> {
    sqe_tests::flight::connect(&cluster.flight_url()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn flight_sql_commands_adbc_does_not_send() -> TestResult {
    let cluster = TestCluster::start(1, 0.01).await?;
    let mut client = client(&cluster).await?;

    // SqlInfo and XDBC types.
    let info = client
        .get_sql_info(vec![
            SqlInfo::FlightSqlServerName,
            SqlInfo::FlightSqlServerCancel,
        ])
        .await?;
    let text = render(&fetch(&mut client, info).await?);
    assert!(text.contains("SQE"), "{text}");
    let info = client
        .get_xdbc_type_info(arrow_flight::sql::CommandGetXdbcTypeInfo { data_type: None })
        .await?;
    let text = render(&fetch(&mut client, info).await?);
    for name in ["BIGINT", "DECIMAL", "VARCHAR", "TIMESTAMP"] {
        assert!(
            text.contains(name),
            "{name} missing from XDBC types:\n{text}"
        );
    }

    // Keys: none, in the right shape.
    let info = client
        .get_primary_keys(CommandGetPrimaryKeys {
            catalog: None,
            db_schema: Some("tpch".into()),
            table: "nation".into(),
        })
        .await?;
    let key_schema = info.clone().try_decode_schema()?;
    let names: Vec<&str> = key_schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(
        names,
        [
            "catalog_name",
            "db_schema_name",
            "table_name",
            "column_name",
            "key_name",
            "key_sequence"
        ]
    );
    let batches = fetch(&mut client, info).await?;
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);

    // GetSchema and PollFlightInfo on the plain Flight service.
    let command = CommandStatementQuery {
        query: "SELECT n_nationkey, n_name FROM tpch.nation".into(),
        transaction_id: None,
    };
    let descriptor = FlightDescriptor::new_cmd(command.as_any().encode_to_vec());
    let mut flight = client.inner().clone();
    let schema_result = flight.get_schema(descriptor.clone()).await?.into_inner();
    let schema = Schema::try_from(&schema_result)?;
    assert_eq!(schema.field(0).name(), "n_nationkey");
    assert_eq!(schema.field(1).data_type(), &DataType::Utf8);
    let poll = flight.poll_flight_info(descriptor).await?.into_inner();
    // A small query completes within the poll that sees it planned.
    assert_eq!(poll.progress, Some(1.0));
    assert!(poll.flight_descriptor.is_none(), "the query is complete");
    let rows: usize = fetch(&mut client, poll.info.ok_or("no info")?)
        .await?
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(rows, 25);

    // Cancelling a planned statement before its DoGet: the ticket is gone.
    let info = client
        .execute("SELECT * FROM tpch.lineitem".into(), None)
        .await?;
    assert_eq!(
        cancel(&mut client, info.clone()).await?,
        CancelStatus::Cancelled
    );
    let err = fetch(&mut client, info)
        .await
        .err()
        .ok_or("a cancelled ticket still ran")?;
    // The coordinator's ticket is gone, or (a result its worker serves) its query is cancelled.
    let text = err.to_string();
    assert!(
        text.contains("cancelled or expired") || text.contains("Query was canceled"),
        "{text}"
    );

    // A prepared update with parameters, run twice.
    client
        .execute_update("CREATE SCHEMA demo".into(), None)
        .await?;
    client
        .execute_update("CREATE TABLE demo.kv (k BIGINT, v VARCHAR)".into(), None)
        .await?;
    let mut insert = client
        .prepare("INSERT INTO demo.kv VALUES ($1, $2)".into(), None)
        .await?;
    assert_eq!(insert.parameter_schema()?.fields().len(), 2);
    let parameters = Arc::new(Schema::new(vec![
        Field::new("$1", DataType::Int64, true),
        Field::new("$2", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        parameters,
        vec![
            Arc::new(Int64Array::from(vec![1, 2])),
            Arc::new(StringArray::from(vec!["one", "two"])),
        ],
    )?;
    insert.set_parameters(batch)?;
    assert_eq!(insert.execute_update().await?, 2);
    insert.close().await?;
    let info = client
        .execute("SELECT * FROM demo.kv ORDER BY k".into(), None)
        .await?;
    assert_eq!(
        render(&fetch(&mut client, info).await?),
        "+---+-----+\n| k | v   |\n+---+-----+\n| 1 | one |\n| 2 | two |\n+---+-----+"
    );
    cluster.stop().await;
    Ok(())
}

/// A prepared statement is planned once and run many times: each run's `now()` is its own.
/// A long join over both workers' partitions.
const LONG_JOIN: &str = "SELECT count(*) FROM tpch.lineitem a JOIN tpch.lineitem b \
     ON a.l_linenumber = b.l_linenumber WHERE a.l_orderkey < 10000";

/// PollFlightInfo as Flight means it: a polled query runs as soon as it is planned; every
/// answer carries its ticket (its rows may be fetched before it completes) and its progress,
/// which rises until the answer that completes it. A cancelled one's next poll says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_polled_query_reports_its_progress_until_it_completes() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let mut client = client(&cluster).await?;
    let mut flight = client.inner().clone();
    let info = client.execute(LONG_JOIN.into(), None).await?;
    let expected = fetch(&mut client, info).await?;

    let mut poll = flight
        .poll_flight_info(statement_descriptor(LONG_JOIN))
        .await?
        .into_inner();
    let first = poll.info.clone().ok_or("an answer without info")?;
    assert_eq!(
        first.endpoint.len(),
        1,
        "its ticket in the first answer: {poll:?}"
    );
    assert!(
        poll.flight_descriptor.is_some(),
        "the join ran on: {poll:?}"
    );
    // Its rows, fetched while it runs.
    let mut reader = client.clone();
    let rows = tokio::spawn(async move { fetch(&mut reader, first).await });
    let mut progress = Vec::new();
    while let Some(again) = poll.flight_descriptor.take() {
        let info = poll.info.as_ref().ok_or("an answer without info")?;
        assert_eq!(info.endpoint.len(), 1, "{poll:?}");
        progress.extend(poll.progress);
        poll = flight.poll_flight_info(again).await?.into_inner();
    }
    assert_eq!(poll.progress, Some(1.0), "the complete answer");
    assert!(
        progress.iter().any(|p| 0.0 < *p && *p < 1.0),
        "no progress between start and end: {progress:?}"
    );
    assert!(
        progress.windows(2).all(|w| w[0] <= w[1]),
        "progress went back: {progress:?}"
    );
    assert_eq!(render(&rows.await??), render(&expected));

    // Cancelled while polled: the next poll hears it, the ticket is gone.
    let poll = flight
        .poll_flight_info(statement_descriptor(LONG_JOIN))
        .await?
        .into_inner();
    let info = poll.info.clone().ok_or("an answer without info")?;
    assert_eq!(
        cancel(&mut client, info.clone()).await?,
        CancelStatus::Cancelled
    );
    let status = flight
        .poll_flight_info(poll.flight_descriptor.ok_or("no descriptor")?)
        .await
        .err()
        .ok_or("a cancelled query polled as running")?;
    assert_eq!(status.code(), tonic::Code::Cancelled, "{status}");
    let err = fetch(&mut client, info)
        .await
        .err()
        .ok_or("a cancelled ticket ran")?;
    assert!(err.to_string().contains("cancelled or expired"), "{err}");
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prepared_statements_read_the_clock_on_each_run() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    let mut client = client(&cluster).await?;
    let mut statement = client.prepare("SELECT now() AS t".into(), None).await?;
    let mut times = Vec::new();
    for _ in 0..2 {
        let info = statement.execute().await?;
        let batches = fetch(&mut client, info).await?;
        let column = batches
            .first()
            .map(|b| b.column(0).clone())
            .ok_or("now() returned no rows")?;
        // Trino's timestamp(3) with time zone.
        let millis = column
            .as_any()
            .downcast_ref::<datafusion::arrow::array::TimestampMillisecondArray>()
            .ok_or_else(|| format!("now() is {:?}", column.data_type()))?
            .value(0);
        times.push(millis);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        times[1] >= times[0] + 20,
        "the second run's now() is at least 20 ms after the first: {times:?}"
    );
    statement.close().await?;
    cluster.stop().await;
    Ok(())
}

/// A prepared statement reads a view as it is when run, as Trino analyses each EXECUTE: one
/// replaced by another query reads the new one; one given other columns is an error that says
/// so, not rows under the old names.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prepared_statements_read_views_as_they_are_when_run() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    for sql in [
        "CREATE SCHEMA vw",
        "CREATE TABLE vw.t AS SELECT value AS x FROM generate_series(1, 10)",
        "CREATE VIEW vw.small AS SELECT x FROM vw.t WHERE x <= 3",
    ] {
        cluster.sql(sql).await?;
    }
    let mut client = client(&cluster).await?;
    let mut statement = client
        .prepare("SELECT * FROM vw.small ORDER BY x".into(), None)
        .await?;
    let mut run = async || -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        let info = statement.execute().await?;
        Ok(render(&fetch(&mut client, info).await?))
    };
    let rows = |rendered: &str| rendered.lines().filter(|l| l.starts_with("| ")).count() - 1;
    let first = run().await?;
    assert_eq!(rows(&first), 3, "{first}");

    cluster
        .sql("CREATE OR REPLACE VIEW vw.small AS SELECT x FROM vw.t WHERE x <= 5")
        .await?;
    // Past the moment a prepared plan counts as fresh.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let replaced = run().await?;
    assert_eq!(rows(&replaced), 5, "{replaced}");

    cluster
        .sql("CREATE OR REPLACE VIEW vw.small AS SELECT 'a' AS x")
        .await?;
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let error = run()
        .await
        .err()
        .ok_or("ran over the old columns")?
        .to_string();
    assert!(error.contains("other columns"), "{error}");
    cluster.stop().await;
    Ok(())
}
