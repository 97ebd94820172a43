//! DDL and DML: one Iceberg snapshot per statement, nothing visible from a failed one.

use iceberg::{NamespaceIdent, TableIdent};
use sqe_tests::cluster::{Collected, TestCluster};
use sqe_tests::render;

use crate::TestResult;

fn ident(schema: &str, table: &str) -> TableIdent {
    TableIdent::new(NamespaceIdent::new(schema.into()), table.into())
}

async fn snapshots(
    cluster: &TestCluster,
    table: &TableIdent,
) -> Result<(Option<i64>, usize), Box<dyn std::error::Error + Send + Sync>> {
    let table = cluster.engine().catalog().load_table(table).await?;
    let metadata = table.metadata();
    Ok((metadata.current_snapshot_id(), metadata.snapshots().count()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ctas_reads_back_in_order_as_one_snapshot() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    assert!(matches!(
        cluster.sql("CREATE SCHEMA demo").await?,
        Collected::Updated(None)
    ));
    let created = cluster
        .sql(
            "CREATE TABLE demo.top_orders AS \
             SELECT o_orderkey, o_custkey, o_totalprice, o_orderdate FROM tpch.orders \
             WHERE o_totalprice > 300000 ORDER BY o_totalprice DESC",
        )
        .await?;
    let expected = cluster
        .query(
            "SELECT o_orderkey, o_custkey, o_totalprice, o_orderdate FROM tpch.orders \
             WHERE o_totalprice > 300000 ORDER BY o_totalprice DESC, o_orderkey",
        )
        .await?;
    let expected_rows: usize = expected.iter().map(|b| b.num_rows()).sum();
    assert!(
        expected_rows > 10,
        "too few rows to show anything: {expected_rows}"
    );
    match created {
        Collected::Updated(Some(n)) => assert_eq!(n as usize, expected_rows),
        other => panic!("CTAS reported {other:?}"),
    }
    let read_back = cluster
        .query("SELECT * FROM demo.top_orders ORDER BY o_totalprice DESC, o_orderkey")
        .await?;
    assert_eq!(render(&read_back), render(&expected));
    let (_, count) = snapshots(&cluster, &ident("demo", "top_orders")).await?;
    assert_eq!(count, 1, "CREATE TABLE AS must commit exactly one snapshot");

    // INSERT adds exactly one more snapshot, VALUES included.
    let inserted = cluster
        .sql("INSERT INTO demo.top_orders VALUES (1, 2, 123.45, DATE '1999-01-01'), (3, 4, 0.5, DATE '1999-01-02')")
        .await?;
    assert!(
        matches!(inserted, Collected::Updated(Some(2))),
        "{inserted:?}"
    );
    assert_eq!(
        snapshots(&cluster, &ident("demo", "top_orders")).await?.1,
        2
    );
    let total = cluster
        .query("SELECT count(*) AS n FROM demo.top_orders")
        .await?;
    assert!(
        render(&total).contains(&format!("| {} |", expected_rows + 2)),
        "{}",
        render(&total)
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failed_insert_leaves_the_snapshot_unchanged() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster
        .sql(
            "CREATE TABLE demo.nations AS SELECT n_nationkey AS k, n_name AS name FROM tpch.nation",
        )
        .await?;
    let table = ident("demo", "nations");
    let before = snapshots(&cluster, &table).await?;
    let rows_before = render(
        &cluster
            .query("SELECT * FROM demo.nations ORDER BY k")
            .await?,
    );
    let files_before = data_files(&cluster).await?;

    // Fails while executing (k = 3 divides by zero), after other rows may have been written.
    let err = cluster
        .sql("INSERT INTO demo.nations SELECT 100 / (l_linenumber - 3), 'x' FROM tpch.lineitem")
        .await
        .err()
        .ok_or("the INSERT should fail")?;
    assert_eq!(err.code(), sqe_engine::ErrorCode::DivisionByZero, "{err}");
    assert_eq!(
        snapshots(&cluster, &table).await?,
        before,
        "a failed INSERT committed a snapshot"
    );
    assert_eq!(
        render(
            &cluster
                .query("SELECT * FROM demo.nations ORDER BY k")
                .await?
        ),
        rows_before
    );
    assert_eq!(
        data_files(&cluster).await?,
        files_before,
        "a failed INSERT left data files behind"
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failed_ctas_leaves_no_table() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    let err = cluster
        .sql("CREATE TABLE demo.broken AS SELECT 100 / (l_linenumber - 3) AS x FROM tpch.lineitem")
        .await
        .err()
        .ok_or("the CTAS should fail")?;
    assert_eq!(err.code(), sqe_engine::ErrorCode::DivisionByZero, "{err}");
    assert!(
        !cluster
            .engine()
            .catalog()
            .table_exists(&ident("demo", "broken"))
            .await?
    );
    let err = cluster
        .query("SELECT * FROM demo.broken")
        .await
        .err()
        .ok_or("table must not exist")?;
    assert!(
        matches!(
            err,
            sqe_engine::Error::NotFound {
                kind: sqe_engine::ObjectKind::Table,
                ..
            }
        ),
        "{err}"
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_insert_drop_and_errors() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA s").await?;
    cluster
        .sql("CREATE TABLE s.t (id BIGINT NOT NULL, name VARCHAR, price DECIMAL(10,2))")
        .await?;
    let err = cluster
        .sql("CREATE TABLE s.t (id BIGINT)")
        .await
        .err()
        .ok_or("duplicate table")?;
    assert!(err.to_string().contains("already exists"), "{err}");
    assert!(matches!(
        cluster
            .sql("CREATE TABLE IF NOT EXISTS s.t (id BIGINT)")
            .await?,
        Collected::Updated(None)
    ));
    cluster
        .sql("INSERT INTO s.t VALUES (1, 'a', 1.50), (2, NULL, NULL)")
        .await?;
    let rows = cluster.query("SELECT * FROM s.t ORDER BY id").await?;
    assert_eq!(
        render(&rows),
        "+----+------+-------+\n| id | name | price |\n+----+------+-------+\n| 1  | a    | 1.50  |\n| 2  |      |       |\n+----+------+-------+"
    );
    // NOT NULL is enforced by the table schema.
    assert!(
        cluster
            .sql("INSERT INTO s.t VALUES (NULL, 'x', 1)")
            .await
            .is_err()
    );
    assert_eq!(snapshots(&cluster, &ident("s", "t")).await?.1, 1);
    // A schema with tables is not dropped without CASCADE.
    let err = cluster
        .sql("DROP SCHEMA s")
        .await
        .err()
        .ok_or("non-empty schema")?;
    assert!(err.to_string().contains("CASCADE"), "{err}");
    cluster.sql("DROP TABLE s.t").await?;
    assert!(cluster.query("SELECT * FROM s.t").await.is_err());
    cluster.sql("DROP TABLE IF EXISTS s.t").await?;
    cluster.sql("DROP SCHEMA s").await?;
    let err = cluster.sql("UPDATE tpch.nation SET n_name = 'x'").await;
    assert!(err.is_err());
    cluster.stop().await;
    Ok(())
}

/// `demo.big (n BIGINT)`, written in files of 64 KiB so an INSERT's first files show while it
/// still runs.
async fn table_of_small_files(
    cluster: &TestCluster,
) -> Result<TableIdent, Box<dyn std::error::Error + Send + Sync>> {
    use iceberg::transaction::{ApplyTransactionAction, Transaction};
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster.sql("CREATE TABLE demo.big (n BIGINT)").await?;
    let table = ident("demo", "big");
    let catalog = cluster.engine().catalog();
    let loaded = catalog.load_table(&table).await?;
    let tx = Transaction::new(&loaded);
    let tx = tx
        .update_table_properties()
        .set("write.target-file-size-bytes".into(), "65536".into())
        .apply(tx)?;
    tx.commit(catalog.as_ref()).await?;
    Ok(table)
}

/// Polls `statement` until the warehouse holds `count` finished data files; an error if the
/// statement ends first or writes none within two minutes.
async fn until_files_are_written<T: std::fmt::Debug>(
    cluster: &TestCluster,
    statement: &mut std::pin::Pin<Box<impl std::future::Future<Output = T>>>,
    count: usize,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let finished = |files: &[String]| files.iter().filter(|f| f.ends_with(".parquet")).count();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        tokio::select! {
            done = statement.as_mut() => return Err(format!("the statement ended first: {done:?}").into()),
            () = tokio::time::sleep(std::time::Duration::from_millis(50)) => {}
        }
        if finished(&data_files(cluster).await?) >= count {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err("the statement wrote no finished file in time".into());
        }
    }
}

/// The data files left once they stop going (they go in the background; up to 30 s).
async fn files_left(
    cluster: &TestCluster,
) -> Result<Vec<String>, Box<dyn std::error::Error + Send + Sync>> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = data_files(cluster).await?;
        if left.is_empty() || std::time::Instant::now() > deadline {
            return Ok(left);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Whether `demo.big` counts no row.
async fn is_empty(cluster: &TestCluster) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
    let counted = cluster.query("SELECT count(*) FROM demo.big").await?;
    Ok(render(&counted).matches("| 0 ").count() == 1)
}

/// An INSERT dropped while its writers run (what cancelling a query does) leaves no data file
/// behind, finished or not, and no snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancelled_insert_leaves_no_files() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    let table = table_of_small_files(&cluster).await?;
    let before = snapshots(&cluster, &table).await?;
    let mut insert = Box::pin(
        cluster.sql("INSERT INTO demo.big SELECT value FROM generate_series(1, 2000000000)"),
    );
    until_files_are_written(&cluster, &mut insert, 4).await?;
    drop(insert);
    let left = files_left(&cluster).await?;
    assert!(
        left.is_empty(),
        "a cancelled INSERT left {} files: {left:?}",
        left.len()
    );
    assert_eq!(snapshots(&cluster, &table).await?, before);
    assert!(is_empty(&cluster).await?);
    cluster.stop().await;
    Ok(())
}

/// An INSERT stopped after its writers have written but before its commit (the cancel won
/// its commit gate) leaves no file, no snapshot and no row; one whose commit began before the
/// cancel commits its rows once, in one snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_insert_commits_only_if_its_commit_began_before_the_cancel() -> TestResult {
    use sqe_engine::engine::{Outcome, SessionSettings};

    let cluster = TestCluster::start(2, 0.0).await?;
    let table = table_of_small_files(&cluster).await?;
    let before = snapshots(&cluster, &table).await?;
    let insert = "INSERT INTO demo.big SELECT value FROM generate_series(1, 300000)";
    let engine = cluster.engine();
    let session = SessionSettings::default();

    let prepared = engine.prepare(&session, insert).await?;
    let gate = prepared
        .commit_gate()
        .ok_or("an INSERT has a commit gate")?;
    assert!(gate.cancel(), "nothing has begun");
    let refused = engine
        .run_cancellable(prepared, tokio_util::sync::CancellationToken::new())
        .await;
    assert!(refused.is_err(), "the commit went ahead");
    let left = files_left(&cluster).await?;
    assert!(left.is_empty(), "{} files left: {left:?}", left.len());
    assert_eq!(snapshots(&cluster, &table).await?, before);
    assert!(is_empty(&cluster).await?);

    let prepared = engine.prepare(&session, insert).await?;
    let gate = prepared
        .commit_gate()
        .ok_or("an INSERT has a commit gate")?;
    assert!(gate.begin());
    assert!(
        !gate.cancel(),
        "a cancel after the commit began does not stop it"
    );
    let committed = engine
        .run_cancellable(prepared, tokio_util::sync::CancellationToken::new())
        .await?;
    assert!(
        matches!(committed, Outcome::Updated { rows: Some(300000) }),
        "the rows went in once"
    );
    assert_eq!(snapshots(&cluster, &table).await?.1, before.1 + 1);
    assert_eq!(
        render(
            &cluster
                .query("SELECT count(*) AS n, count(DISTINCT n) AS d FROM demo.big")
                .await?
        ),
        "+--------+--------+\n| n      | d      |\n+--------+--------+\n| 300000 | 300000 |\n+--------+--------+"
    );
    cluster.stop().await;
    Ok(())
}

/// A table dropped and created again under its name while an INSERT writes into it: the
/// INSERT fails with TABLE_NOT_FOUND (its commit checks the table's UUID), the new table gets
/// none of its rows, and its files are deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_insert_into_a_table_dropped_and_created_again_commits_nothing() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    let table = table_of_small_files(&cluster).await?;
    let mut insert =
        Box::pin(cluster.sql("INSERT INTO demo.big SELECT value FROM generate_series(1, 6000000)"));
    until_files_are_written(&cluster, &mut insert, 1).await?;
    // While it writes (its future is polled again only below, its writers run on).
    cluster.sql("DROP TABLE demo.big").await?;
    cluster.sql("CREATE TABLE demo.big (n BIGINT)").await?;
    let error = insert
        .await
        .err()
        .ok_or("the INSERT committed into the new table")?;
    assert_eq!(
        error.code(),
        sqe_engine::error::ErrorCode::TableNotFound,
        "{error}"
    );
    assert_eq!(snapshots(&cluster, &table).await?, (None, 0));
    assert!(is_empty(&cluster).await?);
    let left = files_left(&cluster).await?;
    assert!(
        left.is_empty(),
        "the failed INSERT left {} files: {left:?}",
        left.len()
    );
    cluster.stop().await;
    Ok(())
}

/// Every file under the warehouse's `demo` data directories.
async fn data_files(
    cluster: &TestCluster,
) -> Result<Vec<String>, Box<dyn std::error::Error + Send + Sync>> {
    let root = cluster.data_dir().join("warehouse").join("demo");
    let mut files: Vec<String> = sqe_tests::files_under(&root)
        .into_iter()
        .filter(|path| path.components().any(|c| c.as_os_str() == "data"))
        .map(|path| path.display().to_string())
        .collect();
    files.sort();
    Ok(files)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_schema_made_outside_sqe_is_visible_to_the_next_statement() -> TestResult {
    let cluster = TestCluster::start(1, 0.01).await?;
    // Warm the name cache, then create a namespace and table behind SQE's back.
    cluster.query("SELECT count(*) FROM tpch.nation").await?;
    let catalog = cluster.engine().catalog();
    let namespace = NamespaceIdent::new("elsewhere".into());
    catalog
        .create_namespace(&namespace, Default::default())
        .await?;
    let schema = iceberg::spec::Schema::builder()
        .with_fields(vec![std::sync::Arc::new(
            iceberg::spec::NestedField::required(
                1,
                "id",
                iceberg::spec::Type::Primitive(iceberg::spec::PrimitiveType::Long),
            ),
        )])
        .build()?;
    let creation = iceberg::TableCreation::builder()
        .name("made_outside".into())
        .schema(schema)
        .build();
    catalog.create_table(&namespace, creation).await?;
    let rows = cluster
        .query("SELECT count(*) AS n FROM elsewhere.made_outside")
        .await?;
    assert!(render(&rows).contains("| 0 |"), "{}", render(&rows));
    Ok(())
}

/// An INSERT's rows are written where they are produced: each worker's task writes its own
/// data files and sends on only their metadata; the coordinator commits them as one snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn inserts_write_their_files_on_the_workers() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster
        .sql("CREATE TABLE demo.lines (k BIGINT, q DECIMAL(15,2), flag VARCHAR)")
        .await?;
    let insert =
        "INSERT INTO demo.lines SELECT l_orderkey, l_quantity, l_returnflag FROM tpch.lineitem";
    let plan = render(&cluster.query(&format!("EXPLAIN {insert}")).await?);
    // The head stage commits; the writers are in the stage the workers run, two tasks of it.
    let (head, stages) = plan
        .split_once("Stage 1 ── Tasks: t0:")
        .ok_or_else(|| format!("no worker stage in {plan}"))?;
    assert!(
        head.contains("IcebergWriteExec: table=demo.lines"),
        "{plan}"
    );
    assert!(!head.contains("DataFileWriteExec"), "{plan}");
    assert!(
        stages.contains("DataFileWriteExec: table=demo.lines"),
        "{plan}"
    );
    assert!(
        stages.lines().next().is_some_and(|l| l.contains(" t1:")),
        "the writing stage runs on both workers: {plan}"
    );

    let analyzed = render(&cluster.query(&format!("EXPLAIN ANALYZE {insert}")).await?);
    let (_, stage) = analyzed
        .split_once("DataFileWriteExec: table=demo.lines, metrics=[")
        .ok_or_else(|| format!("no writer metrics in {analyzed}"))?;
    assert!(stage.contains("rows_written=60.17 K"), "{analyzed}");
    let inserted = cluster.sql(insert).await?;
    assert!(
        matches!(inserted, Collected::Updated(Some(60175))),
        "{inserted:?}"
    );

    // Twice the lineitem rows (EXPLAIN ANALYZE ran it too), in two snapshots, read back whole.
    let counted = cluster
        .query("SELECT count(*) AS n, sum(k) AS keys, sum(q) AS quantity FROM demo.lines")
        .await?;
    let expected = cluster
        .query(
            "SELECT 2 * count(*) AS n, 2 * sum(l_orderkey) AS keys, 2 * sum(l_quantity) AS quantity \
             FROM tpch.lineitem",
        )
        .await?;
    assert_eq!(render(&counted), render(&expected));
    assert_eq!(snapshots(&cluster, &ident("demo", "lines")).await?.1, 2);
    let table = cluster
        .engine()
        .catalog()
        .load_table(&ident("demo", "lines"))
        .await?;
    let summary = &table
        .metadata()
        .current_snapshot()
        .ok_or("no snapshot")?
        .summary()
        .additional_properties;
    let added: u32 = summary
        .get("added-data-files")
        .ok_or("no added-data-files")?
        .parse()?;
    assert!(
        added >= 2,
        "one file per writing partition at least: {summary:?}"
    );
    cluster.stop().await;
    Ok(())
}

/// CREATE OR REPLACE TABLE: always the same table in one commit, its past still there to
/// travel to: with the same columns and layout an overwrite snapshot; with others they become
/// current with the rows; a table that does not exist is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_or_replace_table() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster
        .sql("CREATE TABLE demo.r AS SELECT value AS k, 'old' AS v FROM generate_series(1, 3)")
        .await?;
    let first = cluster
        .iceberg_table("demo", "r")
        .await?
        .metadata()
        .current_snapshot_id()
        .ok_or("no snapshot")?;
    let replaced = cluster
        .sql("CREATE OR REPLACE TABLE demo.r AS SELECT value + 10 AS k, 'new' AS v FROM generate_series(1, 2)")
        .await?;
    assert!(
        matches!(replaced, Collected::Updated(Some(2))),
        "{replaced:?}"
    );
    assert_eq!(
        render(&cluster.query("SELECT k, v FROM demo.r ORDER BY k").await?),
        "+----+-----+\n| k  | v   |\n+----+-----+\n| 11 | new |\n| 12 | new |\n+----+-----+"
    );
    assert_eq!(
        render(
            &cluster
                .query("SELECT operation FROM demo.\"r$snapshots\" ORDER BY committed_at")
                .await?
        ),
        "+-----------+\n| operation |\n+-----------+\n| append    |\n| overwrite |\n+-----------+"
    );
    assert_eq!(
        render(
            &cluster
                .query(&format!(
                    "SELECT count(*) AS n FROM demo.r FOR VERSION AS OF {first}"
                ))
                .await?
        ),
        "+---+\n| n |\n+---+\n| 3 |\n+---+"
    );

    // Other columns: the same table, given them with its rows in one commit; its past stays.
    let uuid = cluster.iceberg_table("demo", "r").await?.metadata().uuid();
    cluster
        .sql("CREATE OR REPLACE TABLE demo.r AS SELECT 1 AS k, 'x' AS v, 2.5 AS score")
        .await?;
    assert_eq!(
        render(&cluster.query("SELECT * FROM demo.r").await?),
        "+---+---+-------+\n| k | v | score |\n+---+---+-------+\n| 1 | x | 2.5   |\n+---+---+-------+"
    );
    let table = cluster.iceberg_table("demo", "r").await?;
    assert_eq!(table.metadata().uuid(), uuid, "the same table");
    assert_eq!(snapshots(&cluster, &ident("demo", "r")).await?.1, 3);
    assert_eq!(
        render(
            &cluster
                .query(&format!(
                    "SELECT k, v FROM demo.r FOR VERSION AS OF {first} ORDER BY k"
                ))
                .await?
        ),
        "+---+-----+\n| k | v   |\n+---+-----+\n| 1 | old |\n| 2 | old |\n| 3 | old |\n+---+-----+",
        "the old snapshot reads in its own columns"
    );
    // Another partitioning of the same columns is a new layout too.
    cluster
        .sql(
            "CREATE OR REPLACE TABLE demo.r WITH (partitioning = ARRAY['k']) AS \
             SELECT value AS k, 'p' AS v, 0.5 AS score FROM generate_series(1, 3)",
        )
        .await?;
    let table = cluster.iceberg_table("demo", "r").await?;
    let spec = table.metadata().default_partition_spec();
    assert_eq!(spec.fields().len(), 1, "{spec:?}");
    assert_eq!(
        render(&cluster.query("SELECT k, v FROM demo.r WHERE k = 2").await?),
        "+---+---+\n| k | v |\n+---+---+\n| 2 | p |\n+---+---+"
    );
    cluster
        .sql("CREATE OR REPLACE TABLE demo.r (a INT)")
        .await?;
    assert_eq!(
        render(&cluster.query("SELECT count(*) AS n FROM demo.r").await?),
        "+---+\n| n |\n+---+\n| 0 |\n+---+"
    );
    assert_eq!(
        cluster
            .iceberg_table("demo", "r")
            .await?
            .metadata()
            .current_snapshot_id(),
        None,
        "new columns and no rows: no current snapshot"
    );
    cluster.sql("INSERT INTO demo.r VALUES (7)").await?;
    // The same columns, no rows: the rows go, the table stays.
    cluster
        .sql("CREATE OR REPLACE TABLE demo.r (a INT)")
        .await?;
    assert_eq!(
        render(&cluster.query("SELECT count(*) AS n FROM demo.r").await?),
        "+---+\n| n |\n+---+\n| 0 |\n+---+"
    );
    assert_eq!(snapshots(&cluster, &ident("demo", "r")).await?.1, 6);
    // Its own location may be named; another is refused, as Trino does.
    let location = cluster
        .iceberg_table("demo", "r")
        .await?
        .metadata()
        .location()
        .to_string();
    cluster
        .sql(&format!(
            "CREATE OR REPLACE TABLE demo.r WITH (location = '{location}') AS SELECT 'b' AS b"
        ))
        .await?;
    let refused = cluster
        .error_code(&format!(
            "CREATE OR REPLACE TABLE demo.r WITH (location = '{location}-elsewhere') AS SELECT 'c' AS b"
        ))
        .await?;
    assert_eq!(refused, sqe_engine::ErrorCode::InvalidTableProperty);
    assert_eq!(
        render(&cluster.query("SELECT b FROM demo.r").await?),
        "+---+\n| b |\n+---+\n| b |\n+---+"
    );
    // A table that is not there is created.
    let created = cluster
        .sql("CREATE OR REPLACE TABLE demo.fresh AS SELECT 1 AS x")
        .await?;
    assert!(
        matches!(created, Collected::Updated(Some(1))),
        "{created:?}"
    );
    assert_eq!(
        render(&cluster.query("SHOW TABLES FROM demo").await?),
        "+-------+\n| Table |\n+-------+\n| fresh |\n| r     |\n+-------+"
    );
    cluster.stop().await;
    Ok(())
}

/// Each data file under `table`'s current snapshot with its `sort_order_id`, read from
/// `"t$files"`.
async fn files_and_orders(
    cluster: &TestCluster,
    table: &str,
) -> Result<Vec<(String, Option<i32>)>, Box<dyn std::error::Error + Send + Sync>> {
    use datafusion::arrow::array::{Array, AsArray, Int32Array};
    let batches = cluster
        .query(&format!(
            "SELECT file_path, sort_order_id FROM demo.\"{table}$files\" WHERE content = 0"
        ))
        .await?;
    let mut files = Vec::new();
    for batch in &batches {
        let paths = batch.column(0).as_string::<i32>();
        let orders = batch
            .column(1)
            .as_any()
            .downcast_ref::<Int32Array>()
            .ok_or("sort_order_id is not an integer")?;
        for i in 0..batch.num_rows() {
            files.push((
                paths.value(i).to_string(),
                orders.is_valid(i).then(|| orders.value(i)),
            ));
        }
    }
    Ok(files)
}

/// Whether the rows of the Parquet file at `path` are in the order of `columns`, each
/// `(name, descending, nulls_first)`; and how many rows it has.
fn file_in_order(
    path: &str,
    columns: &[(&str, bool, bool)],
) -> Result<(bool, usize), Box<dyn std::error::Error + Send + Sync>> {
    use datafusion::arrow::compute::{SortOptions, concat_batches};
    use datafusion::arrow::row::{RowConverter, SortField};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = std::fs::File::open(path.trim_start_matches("file://"))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)?.build()?;
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    let schema = batches.first().ok_or("an empty file")?.schema();
    let batch = concat_batches(&schema, &batches)?;
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for (name, descending, nulls_first) in columns {
        let array = batch.column_by_name(name).ok_or("no such column")?;
        fields.push(SortField::new_with_options(
            array.data_type().clone(),
            SortOptions {
                descending: *descending,
                nulls_first: *nulls_first,
            },
        ));
        arrays.push(std::sync::Arc::clone(array));
    }
    let rows = RowConverter::new(fields)?.convert_columns(&arrays)?;
    let sorted = (1..rows.num_rows()).all(|i| rows.row(i - 1) <= rows.row(i));
    Ok((sorted, batch.num_rows()))
}

/// `sorted_by`: every file a write makes (INSERT and UPDATE, on both workers)
/// holds its rows in the table's sort order and records the order's id; a new order set with
/// SET PROPERTIES applies to files written after it; SHOW CREATE TABLE prints it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sorted_tables_write_every_file_in_their_order() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    let refused = cluster
        .sql("CREATE TABLE demo.bad (k BIGINT) WITH (sorted_by = ARRAY['nope'])")
        .await
        .err()
        .ok_or("a sort by a column that does not exist was taken")?;
    assert_eq!(refused.code(), sqe_engine::ErrorCode::InvalidTableProperty);
    cluster
        .sql(
            "CREATE TABLE demo.sorted (k BIGINT, mode VARCHAR, q DECIMAL(15,2)) \
             WITH (sorted_by = ARRAY['mode DESC', 'k'])",
        )
        .await?;
    // Line 1 of each order has no mode: NULLs go last under DESC.
    let insert = "INSERT INTO demo.sorted SELECT l_orderkey, \
         CASE WHEN l_linenumber = 1 THEN NULL ELSE l_shipmode END, l_quantity FROM tpch.lineitem";
    cluster.sql(insert).await?;
    let by_mode_then_key = [("mode", true, false), ("k", false, true)];
    let files = files_and_orders(&cluster, "sorted").await?;
    assert!(files.len() >= 2, "a file per writer at least: {files:?}");
    let mut rows = 0;
    for (path, order) in &files {
        assert_eq!(*order, Some(1), "{path}");
        let (sorted, count) = file_in_order(path, &by_mode_then_key)?;
        assert!(sorted, "{path} is not in the table's order");
        rows += count;
    }
    assert_eq!(rows, 60175);
    let created = render(&cluster.query("SHOW CREATE TABLE demo.sorted").await?);
    assert!(
        created.contains("sorted_by = ARRAY['mode DESC','k']"),
        "{created}"
    );

    // A new order: files written from now on follow it, the old ones keep theirs.
    cluster
        .sql("ALTER TABLE demo.sorted SET PROPERTIES sorted_by = ARRAY['q DESC NULLS FIRST']")
        .await?;
    cluster
        .sql("UPDATE demo.sorted SET q = q + 100 WHERE k < 1000")
        .await?;
    let files = files_and_orders(&cluster, "sorted").await?;
    let new: Vec<_> = files.iter().filter(|(_, o)| *o == Some(2)).collect();
    assert!(
        !new.is_empty(),
        "the UPDATE's files (a writer's each): {files:?}"
    );
    for (path, _) in &new {
        let (sorted, _) = file_in_order(path, &[("q", true, true)])?;
        assert!(sorted, "{path} is not in the new order");
    }
    assert!(files.iter().all(|(_, o)| matches!(o, Some(1 | 2))));
    let created = render(&cluster.query("SHOW CREATE TABLE demo.sorted").await?);
    assert!(
        created.contains("sorted_by = ARRAY['q DESC NULLS FIRST']"),
        "{created}"
    );
    let total = cluster
        .query("SELECT count(*) AS n FROM demo.sorted")
        .await?;
    assert!(render(&total).contains("60175"), "{}", render(&total));

    // Unsorted again: SHOW CREATE TABLE drops the property.
    cluster
        .sql("ALTER TABLE demo.sorted SET PROPERTIES sorted_by = ARRAY[]")
        .await?;
    let created = render(&cluster.query("SHOW CREATE TABLE demo.sorted").await?);
    assert!(!created.contains("sorted_by"), "{created}");
    cluster.stop().await;
    Ok(())
}

/// A replacing ingest of `name` strings into `demo.t` whose data stream, after its one batch,
/// runs `between` (while the ingest's rows are being written, before its commit) and ends.
async fn replace_ingest_with(
    cluster: &TestCluster,
    between: impl std::future::Future<Output = ()> + Send + 'static,
    gate: std::sync::Arc<sqe_iceberg::write::CommitGate>,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<u64, sqe_engine::Error> {
    use std::sync::Arc;

    use datafusion::arrow::array::{RecordBatch, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
    use futures::StreamExt;
    use sqe_engine::engine::{IfExists, IfMissing, IngestTarget, SessionSettings};

    let schema = Arc::new(Schema::new(vec![Field::new("name", DataType::Utf8, true)]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(StringArray::from(vec!["a", "b"]))],
    )
    .map_err(|e| sqe_engine::Error::Internal(e.to_string()))?;
    let tail = futures::stream::once(between).filter_map(|()| async { None });
    let data = futures::stream::iter([Ok(batch)]).chain(tail);
    let target = IngestTarget {
        schema: Some("demo".into()),
        table: "t".into(),
        if_missing: IfMissing::Fail,
        if_exists: IfExists::Replace,
    };
    cluster
        .engine()
        .ingest(
            &SessionSettings::default(),
            target,
            Box::pin(RecordBatchStreamAdapter::new(schema, data)),
            gate,
            cancel,
        )
        .await
}

/// A replacing ingest of other columns commits only onto the table it read: another writer's
/// INSERT landing while its rows are written makes its commit conflict, and the table keeps its
/// columns, its rows and the other writer's, with no file of the ingest left; a cancel before
/// its commit leaves it as it was too. Without the commit's requirements the replace would
/// have swept the other writer's row away.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replacing_ingest_that_loses_its_commit_leaves_the_table_as_it_was() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster
        .sql("CREATE TABLE demo.t AS SELECT value AS k FROM generate_series(1, 3)")
        .await?;
    let files_before = data_files(&cluster).await?;
    let engine = std::sync::Arc::clone(cluster.engine());
    let other_writer = async move {
        let inserted = engine
            .execute(
                &sqe_engine::engine::SessionSettings::default(),
                "INSERT INTO demo.t VALUES (4)",
            )
            .await;
        assert!(inserted.is_ok(), "{:?}", inserted.err());
    };
    let lost = replace_ingest_with(
        &cluster,
        other_writer,
        std::sync::Arc::default(),
        tokio_util::sync::CancellationToken::new(),
    )
    .await;
    assert!(lost.is_err(), "the ingest's commit conflicted: {lost:?}");
    let everything = "+---+\n| k |\n+---+\n| 1 |\n| 2 |\n| 3 |\n| 4 |\n+---+";
    assert_eq!(
        render(&cluster.query("SELECT k FROM demo.t ORDER BY k").await?),
        everything
    );
    let after_insert = data_files(&cluster).await?;
    assert_eq!(
        after_insert.len(),
        files_before.len() + 1,
        "the INSERT's file only: {after_insert:?}"
    );

    // Cancelled while its rows are written: nothing changes, nothing is left.
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    let cancelled = replace_ingest_with(
        &cluster,
        async move {
            stop.cancel();
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        },
        std::sync::Arc::default(),
        cancel,
    )
    .await;
    assert!(
        matches!(cancelled, Err(sqe_engine::Error::Cancelled)),
        "{cancelled:?}"
    );
    assert_eq!(
        render(&cluster.query("SELECT k FROM demo.t ORDER BY k").await?),
        everything
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while data_files(&cluster).await? != after_insert && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(data_files(&cluster).await?, after_insert);

    // Unhindered, it replaces the columns and rows.
    let rows = replace_ingest_with(
        &cluster,
        async {},
        std::sync::Arc::default(),
        tokio_util::sync::CancellationToken::new(),
    )
    .await?;
    assert_eq!(rows, 2);
    assert_eq!(
        render(&cluster.query("SELECT * FROM demo.t ORDER BY name").await?),
        "+------+\n| name |\n+------+\n| a    |\n| b    |\n+------+"
    );
    cluster.stop().await;
    Ok(())
}

/// A CREATE TABLE AS cancelled once its commit has begun answers the commit's outcome (its rows
/// and its table, as a client retrying must see), not a cancel with its table dropped after
/// the rows went in; cancelled before its commit, it leaves no table. The same for a CREATE OR
/// REPLACE TABLE AS: begun, its rows replace the old; not begun, the old rows stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_create_table_as_cancelled_during_its_commit_answers_its_outcome() -> TestResult {
    use sqe_engine::engine::{Outcome, SessionSettings};

    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    let session = SessionSettings::default();
    let cancelled_run = |sql: &'static str, begun: bool| {
        let engine = std::sync::Arc::clone(cluster.engine());
        let session = session.clone();
        async move {
            let prepared = engine.prepare(&session, sql).await?;
            let gate = prepared
                .commit_gate()
                .ok_or("a CREATE TABLE AS has a commit gate")?;
            if begun {
                assert!(gate.begin(), "nothing else has stopped it");
            }
            let cancel = tokio_util::sync::CancellationToken::new();
            cancel.cancel();
            let outcome = engine.run_cancellable(prepared, cancel).await;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(match outcome {
                Ok(Outcome::Updated { rows }) => Ok(rows),
                Ok(Outcome::Rows(_)) => return Err("rows from a CREATE TABLE AS".into()),
                Err(e) => Err(e),
            })
        }
    };
    let create = "CREATE TABLE demo.c AS SELECT value AS k FROM generate_series(1, 5)";
    let replace = "CREATE OR REPLACE TABLE demo.c AS SELECT 'x' AS v FROM generate_series(1, 2)";
    let five = "+---+\n| n |\n+---+\n| 5 |\n+---+";
    // (statement, whether its commit has begun when the cancel comes, its answer, what a
    // query then reads)
    let cases = [
        (create, false, None, ("SHOW TABLES FROM demo", "++\n++")),
        (
            create,
            true,
            Some(5),
            ("SELECT count(*) AS n FROM demo.c", five),
        ),
        (
            replace,
            false,
            None,
            ("SELECT count(*) AS n FROM demo.c", five),
        ),
        (
            replace,
            true,
            Some(2),
            (
                "SELECT * FROM demo.c",
                "+---+\n| v |\n+---+\n| x |\n| x |\n+---+",
            ),
        ),
    ];
    for (sql, begun, rows, (query, read)) in cases {
        let outcome = cancelled_run(sql, begun).await?;
        match rows {
            Some(rows) => assert_eq!(outcome.ok(), Some(Some(rows)), "{sql}"),
            None => assert!(
                matches!(outcome, Err(sqe_engine::Error::Cancelled)),
                "{sql}: {outcome:?}"
            ),
        }
        assert_eq!(render(&cluster.query(query).await?), read, "after {sql}");
    }
    cluster.stop().await;
    Ok(())
}

/// INSERT OVERWRITE replaces the partitions its rows are written into (Hive's and Spark's
/// dynamic partition overwrite), written on the workers and committed as one `overwrite`
/// snapshot: the other partitions stay as they were, the replaced partitions' delete files go
/// with their data files, an unpartitioned table is replaced whole, no rows change nothing,
/// and one planned before another commit fails and leaves the table as that commit left it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn insert_overwrite_replaces_the_partitions_it_writes() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA ow").await?;
    cluster
        .sql(
            "CREATE TABLE ow.t (k bigint, p varchar) \
             WITH (partitioning = ARRAY['p'], format_version = 2)",
        )
        .await?;
    let part = "CASE value % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' ELSE 'c' END";
    for (from, to) in [(1, 300), (301, 600)] {
        cluster
            .sql(&format!(
                "INSERT INTO ow.t SELECT value, {part} FROM generate_series({from}, {to})"
            ))
            .await?;
    }
    cluster.sql("DELETE FROM ow.t WHERE k % 10 = 0").await?;
    let rows_of = |p: &str| format!("SELECT k FROM ow.t WHERE p = '{p}' ORDER BY k");
    let (b, c) = (
        render(&cluster.query(&rows_of("b")).await?),
        render(&cluster.query(&rows_of("c")).await?),
    );
    let (before, _) = snapshots(&cluster, &ident("ow", "t")).await?;
    let before = before.ok_or("no snapshot")?;
    let whole = "SELECT k, p FROM ow.t ORDER BY k";
    let rows_before = render(&cluster.query(whole).await?);

    let plan = render(
        &cluster
            .query("EXPLAIN INSERT OVERWRITE ow.t VALUES (1, 'a')")
            .await?,
    );
    assert!(plan.contains("commit=overwrite partitions"), "{plan}");
    let written = cluster
        .sql(
            "INSERT OVERWRITE ow.t SELECT value, 'a' FROM generate_series(1000, 1004) \
             UNION ALL SELECT value, 'd' FROM generate_series(2000, 2001)",
        )
        .await?;
    assert!(
        matches!(written, Collected::Updated(Some(7))),
        "{written:?}"
    );
    assert_eq!(
        render(&cluster.query(&rows_of("a")).await?),
        render(
            &cluster
                .query("SELECT value AS k FROM generate_series(1000, 1004)")
                .await?
        )
    );
    assert_eq!(render(&cluster.query(&rows_of("b")).await?), b);
    assert_eq!(render(&cluster.query(&rows_of("c")).await?), c);
    assert_eq!(
        render(&cluster.query(&rows_of("d")).await?),
        render(
            &cluster
                .query("SELECT value AS k FROM generate_series(2000, 2001)")
                .await?
        )
    );
    // element_at: appends' summaries have no such keys (a subscript fails, as in Trino).
    let last = "SELECT operation, element_at(summary, 'deleted-data-files') AS removed, \
                element_at(summary, 'removed-delete-files') AS removed_deletes \
                FROM ow.\"t$snapshots\" ORDER BY committed_at DESC LIMIT 1";
    let snapshot = render(&cluster.query(last).await?);
    assert!(
        snapshot.contains("| overwrite | 2 "),
        "both files of 'a': {snapshot}"
    );
    let deletes_in_a = cluster
        .query(
            "SELECT count(*) AS n FROM ow.\"t$files\" WHERE content = 1 AND \"partition\".p = 'a'",
        )
        .await?;
    assert!(
        render(&deletes_in_a).contains("| 0 |"),
        "{}",
        render(&deletes_in_a)
    );
    let travelled = render(
        &cluster
            .query(&format!(
                "SELECT k, p FROM ow.t FOR VERSION AS OF {before} ORDER BY k"
            ))
            .await?,
    );
    assert_eq!(travelled, rows_before);

    // No rows: no partition is written, nothing changes.
    let count = snapshots(&cluster, &ident("ow", "t")).await?.1;
    let nothing = cluster
        .sql("INSERT OVERWRITE ow.t SELECT value, 'b' FROM generate_series(1, 3) WHERE value > 5")
        .await?;
    assert!(
        matches!(nothing, Collected::Updated(Some(0))),
        "{nothing:?}"
    );
    assert_eq!(snapshots(&cluster, &ident("ow", "t")).await?.1, count);
    assert_eq!(render(&cluster.query(&rows_of("b")).await?), b);

    // Unpartitioned: the table is one partition.
    cluster
        .sql("CREATE TABLE ow.u AS SELECT value AS k FROM generate_series(1, 10)")
        .await?;
    cluster.sql("INSERT OVERWRITE ow.u VALUES (42)").await?;
    let all = "SELECT k FROM ow.u ORDER BY k";
    assert_eq!(
        render(&cluster.query(all).await?),
        render(&cluster.query("SELECT 42 AS k").await?)
    );

    // A table made unpartitioned is replaced whole, the files of its old partitioning too;
    // a partitioned one with files of an earlier partitioning is refused, unchanged.
    for sql in [
        "CREATE TABLE ow.e (k bigint, p varchar) WITH (partitioning = ARRAY['p'])",
        "INSERT INTO ow.e VALUES (1, 'a'), (2, 'b')",
        "ALTER TABLE ow.e SET PROPERTIES partitioning = ARRAY[]",
        "INSERT OVERWRITE ow.e VALUES (3, 'a')",
    ] {
        cluster.sql(sql).await?;
    }
    assert_eq!(
        render(&cluster.query("SELECT k FROM ow.e").await?),
        render(&cluster.query("SELECT CAST(3 AS BIGINT) AS k").await?)
    );
    cluster
        .sql("ALTER TABLE ow.e SET PROPERTIES partitioning = ARRAY['bucket(k, 4)']")
        .await?;
    let refused = cluster
        .error_code("INSERT OVERWRITE ow.e VALUES (4, 'b')")
        .await?;
    assert_eq!(refused, sqe_engine::ErrorCode::NotSupported);
    assert_eq!(
        render(&cluster.query("SELECT k FROM ow.e").await?),
        render(&cluster.query("SELECT CAST(3 AS BIGINT) AS k").await?)
    );

    // Planned before another writer's commit: it fails, and that commit's rows stay.
    let session = sqe_engine::engine::SessionSettings::default();
    let planned = cluster
        .engine()
        .prepare(&session, "INSERT OVERWRITE ow.u VALUES (7)")
        .await?;
    cluster.sql("INSERT INTO ow.u VALUES (43)").await?;
    let lost = match cluster.engine().run(planned).await {
        Err(e) => e,
        Ok(sqe_engine::engine::Outcome::Rows(stream)) => {
            futures::TryStreamExt::try_collect::<Vec<_>>(stream)
                .await
                .err()
                .ok_or("the overwrite planned before the insert committed")?
                .into()
        }
        Ok(_) => return Err("the overwrite answered without running".into()),
    };
    assert_eq!(
        lost.code(),
        sqe_engine::ErrorCode::IcebergCommitError,
        "{lost}"
    );
    assert_eq!(
        render(&cluster.query(all).await?),
        render(
            &cluster
                .query("SELECT 42 AS k UNION ALL SELECT 43 ORDER BY k")
                .await?
        )
    );
    cluster.stop().await;
    Ok(())
}
