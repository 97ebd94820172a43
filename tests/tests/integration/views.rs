//! Views as Trino has them: created with the query's text and the catalog and schema it was
//! written in, read in the reader's session as their query in their place (so a view's tables
//! are scanned on the workers like any other), listed as views in every metadata table, replaced
//! atomically, dropped; a view that reads itself is INVALID_VIEW.

use sqe_engine::ErrorCode;
use sqe_engine::engine::{Outcome, SessionSettings};
use sqe_tests::cluster::TestCluster;
use sqe_tests::render;

use crate::TestResult;

async fn rows(cluster: &TestCluster, sql: &str) -> Result<String, String> {
    cluster
        .query(sql)
        .await
        .map(|batches| render(&batches))
        .map_err(|e| format!("{sql}: {e}"))
}

/// Runs `sql` in a session with `schema` and `time_zone`, returning its rows.
async fn in_session(
    cluster: &TestCluster,
    schema: &str,
    time_zone: Option<&str>,
    sql: &str,
) -> Result<String, String> {
    let session = SessionSettings {
        schema: Some(schema.to_string()),
        time_zone: time_zone.map(str::to_string),
        ..Default::default()
    };
    match cluster.engine().execute(&session, sql).await {
        Ok(Outcome::Rows(stream)) => {
            let batches: Vec<_> = futures::TryStreamExt::try_collect(stream)
                .await
                .map_err(|e| format!("{sql}: {e}"))?;
            Ok(render(&batches))
        }
        Ok(Outcome::Updated { .. }) => Ok(String::new()),
        Err(e) => Err(format!("{sql}: {e}")),
    }
}

/// `vw.orders` with three rows, and a table of the same name in the reader's default schema
/// with another row: a view must not read it.
async fn orders(cluster: &TestCluster) -> Result<(), sqe_engine::Error> {
    cluster.sql("CREATE SCHEMA vw").await?;
    for sql in [
        "CREATE TABLE vw.orders (id bigint, region varchar, amount double)",
        "INSERT INTO vw.orders VALUES (1, 'eu', 5.0), (2, 'us', 20.0), (3, 'eu', 30.0)",
        "CREATE TABLE orders (id bigint, region varchar, amount double)",
        "INSERT INTO orders VALUES (99, 'xx', 1000.0)",
    ] {
        cluster.sql(sql).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn views_are_read_as_their_query_where_they_were_written() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    orders(&cluster).await?;

    let sql = "CREATE VIEW big COMMENT 'orders over 10' SECURITY DEFINER AS\n  SELECT id, amount * 2 AS doubled, upper(region) FROM orders WHERE amount > 10";
    in_session(&cluster, "vw", None, sql).await?;
    assert_eq!(
        rows(&cluster, "SELECT * FROM vw.big ORDER BY id").await?,
        "+----+---------+-------+\n\
         | id | doubled | _col2 |\n\
         +----+---------+-------+\n\
         | 2  | 40.0    | US    |\n\
         | 3  | 60.0    | EU    |\n\
         +----+---------+-------+"
    );
    // Aliased, joined, filtered, in a subquery, and read by another view.
    assert_eq!(
        rows(
            &cluster,
            "SELECT b.id, o.region FROM vw.big AS b JOIN vw.orders o ON b.id = o.id \
             WHERE b.doubled > 50 AND b.id IN (SELECT id FROM vw.big)"
        )
        .await?,
        "+----+--------+\n| id | region |\n+----+--------+\n| 3  | eu     |\n+----+--------+"
    );
    in_session(
        &cluster,
        "vw",
        None,
        "CREATE VIEW total AS SELECT sum(doubled) AS s, count(*) AS n FROM big",
    )
    .await?;
    assert_eq!(
        rows(&cluster, "SELECT s, n FROM vw.total").await?,
        "+-------+---+\n| s     | n |\n+-------+---+\n| 100.0 | 2 |\n+-------+---+"
    );
    // A CTE of the view's name is the CTE.
    assert_eq!(
        rows(&cluster, "WITH big AS (SELECT 7 AS id) SELECT id FROM big").await?,
        "+----+\n| id |\n+----+\n| 7  |\n+----+"
    );
    // A view reads the data current when it is read.
    cluster
        .sql("INSERT INTO vw.orders VALUES (4, 'us', 11.0)")
        .await?;
    assert_eq!(
        rows(&cluster, "SELECT n FROM vw.total").await?,
        "+---+\n| n |\n+---+\n| 3 |\n+---+"
    );
    // Planned in the reader's session: its time zone, not the creator's.
    in_session(
        &cluster,
        "vw",
        Some("Asia/Kolkata"),
        "CREATE VIEW zone AS SELECT current_timezone() AS z",
    )
    .await?;
    assert!(
        in_session(
            &cluster,
            "vw",
            Some("America/New_York"),
            "SELECT z FROM zone"
        )
        .await?
        .contains("America/New_York")
    );

    // Listed as a view wherever Trino lists them.
    assert_eq!(
        rows(
            &cluster,
            "SELECT table_name, table_type FROM information_schema.tables \
             WHERE table_schema = 'vw' ORDER BY table_name"
        )
        .await?,
        "+------------+------------+\n\
         | table_name | table_type |\n\
         +------------+------------+\n\
         | big        | VIEW       |\n\
         | orders     | BASE TABLE |\n\
         | total      | VIEW       |\n\
         | zone       | VIEW       |\n\
         +------------+------------+"
    );
    // The query as it was written.
    let definition = rows(
        &cluster,
        "SELECT view_definition FROM information_schema.views \
         WHERE table_schema = 'vw' AND table_name = 'big'",
    )
    .await?;
    assert!(
        definition.contains(
            "| SELECT id, amount * 2 AS doubled, upper(region) FROM orders WHERE amount > 10 |"
        ),
        "{definition}"
    );
    assert_eq!(
        rows(
            &cluster,
            "SELECT column_name, data_type FROM information_schema.columns \
             WHERE table_schema = 'vw' AND table_name = 'big' ORDER BY ordinal_position"
        )
        .await?,
        "+-------------+-----------+\n\
         | column_name | data_type |\n\
         +-------------+-----------+\n\
         | id          | bigint    |\n\
         | doubled     | double    |\n\
         | _col2       | varchar   |\n\
         +-------------+-----------+"
    );
    assert_eq!(
        rows(
            &cluster,
            "SELECT table_name, table_type FROM system.jdbc.tables \
             WHERE table_schem = 'vw' AND table_name = 'big'"
        )
        .await?,
        "+------------+------------+\n| table_name | table_type |\n+------------+------------+\n| big        | VIEW       |\n+------------+------------+"
    );
    let show = rows(&cluster, "SHOW CREATE VIEW vw.big").await?;
    assert!(
        show.contains("CREATE VIEW iceberg.vw.big COMMENT 'orders over 10' SECURITY DEFINER AS"),
        "{show}"
    );
    assert!(
        rows(&cluster, "SHOW TABLES FROM vw")
            .await?
            .contains("| big ")
    );

    // Replaced at once; a name taken by a table or a view is refused.
    in_session(
        &cluster,
        "vw",
        None,
        "CREATE OR REPLACE VIEW big SECURITY INVOKER AS SELECT id FROM orders WHERE amount > 25",
    )
    .await?;
    assert_eq!(
        rows(&cluster, "SELECT * FROM vw.big").await?,
        "+----+\n| id |\n+----+\n| 3  |\n+----+"
    );
    let show = rows(&cluster, "SHOW CREATE VIEW vw.big").await?;
    assert!(!show.contains("COMMENT"), "{show}");
    assert!(show.contains("big SECURITY INVOKER AS"), "{show}");
    for (sql, code) in [
        (
            "CREATE VIEW vw.big AS SELECT 1 AS x",
            ErrorCode::TableAlreadyExists,
        ),
        (
            "CREATE VIEW vw.orders AS SELECT 1 AS x",
            ErrorCode::TableAlreadyExists,
        ),
        (
            "CREATE TABLE vw.big (x bigint)",
            ErrorCode::TableAlreadyExists,
        ),
        (
            "CREATE VIEW vw.twice AS SELECT id, id FROM vw.orders",
            ErrorCode::DuplicateColumnName,
        ),
        (
            "CREATE VIEW vw.bad AS SELECT * FROM vw.missing",
            ErrorCode::TableNotFound,
        ),
        (
            "CREATE VIEW nowhere.v AS SELECT 1 AS x",
            ErrorCode::SchemaNotFound,
        ),
        ("INSERT INTO vw.big VALUES (5)", ErrorCode::NotSupported),
        ("DELETE FROM vw.big", ErrorCode::NotSupported),
        ("DROP VIEW vw.missing", ErrorCode::TableNotFound),
        ("DROP SCHEMA vw", ErrorCode::SchemaNotEmpty),
    ] {
        assert_eq!(cluster.error_code(sql).await?, code, "{sql}");
    }

    // A view that reads itself, through another, cannot be read.
    in_session(&cluster, "vw", None, "CREATE VIEW a1 AS SELECT 1 AS x").await?;
    in_session(&cluster, "vw", None, "CREATE VIEW a2 AS SELECT x FROM a1").await?;
    in_session(
        &cluster,
        "vw",
        None,
        "CREATE OR REPLACE VIEW a1 AS SELECT x FROM a2",
    )
    .await?;
    assert_eq!(
        cluster.error_code("SELECT * FROM vw.a1").await?,
        ErrorCode::ViewIsRecursive
    );

    // Dropped: gone from the catalog and from reads; the schema drops with its views.
    cluster.sql("DROP VIEW vw.total").await?;
    cluster.sql("DROP VIEW IF EXISTS vw.total").await?;
    assert_eq!(
        cluster.error_code("SELECT * FROM vw.total").await?,
        ErrorCode::TableNotFound
    );
    cluster.sql("DROP SCHEMA vw CASCADE").await?;
    assert_eq!(
        cluster.error_code("SELECT * FROM vw.big").await?,
        ErrorCode::SchemaNotFound
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn views_read_what_they_were_written_to_read_or_fail() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    orders(&cluster).await?;
    // A view's CTE named like a table reads that table of the view's schema in its own
    // definition, whoever reads the view.
    in_session(
        &cluster,
        "vw",
        None,
        "CREATE VIEW open AS WITH orders AS (SELECT * FROM orders WHERE amount > 10) \
         SELECT count(*) AS n FROM orders",
    )
    .await?;
    assert_eq!(
        rows(&cluster, "SELECT n FROM vw.open").await?,
        "+---+\n| n |\n+---+\n| 2 |\n+---+"
    );

    // A view of `*` reads its columns by name: a table changed under it fails the read
    // rather than show another column under a stored name.
    cluster
        .sql("CREATE TABLE vw.wide (a bigint, b varchar)")
        .await?;
    cluster.sql("INSERT INTO vw.wide VALUES (1, 'x')").await?;
    cluster
        .sql("CREATE VIEW vw.star AS SELECT * FROM vw.wide")
        .await?;
    assert_eq!(
        rows(&cluster, "SELECT a, b FROM vw.star").await?,
        "+---+---+\n| a | b |\n+---+---+\n| 1 | x |\n+---+---+"
    );
    cluster.sql("ALTER TABLE vw.wide DROP COLUMN b").await?;
    cluster
        .sql("ALTER TABLE vw.wide ADD COLUMN c varchar")
        .await?;
    cluster.sql("INSERT INTO vw.wide VALUES (2, 'y')").await?;
    assert_eq!(
        cluster.error_code("SELECT b FROM vw.star").await?,
        ErrorCode::ColumnNotFound
    );

    // Views reading views many times over are refused before they are copied out: ten
    // references a level, 1,110 three levels up.
    in_session(&cluster, "vw", None, "CREATE VIEW x0 AS SELECT 1 AS n").await?;
    let ten = |view: &str| vec![format!("SELECT n FROM {view}"); 10].join(" UNION ALL ");
    for level in 1..=2 {
        let below = format!("x{}", level - 1);
        in_session(
            &cluster,
            "vw",
            None,
            &format!("CREATE VIEW x{level} AS {}", ten(&below)),
        )
        .await?;
    }
    assert_eq!(
        rows(&cluster, "SELECT count(*) AS c FROM vw.x2").await?,
        "+-----+\n| c   |\n+-----+\n| 100 |\n+-----+"
    );
    assert_eq!(
        cluster
            .error_code(&format!("CREATE VIEW vw.x3 AS {}", ten("vw.x2")))
            .await?,
        ErrorCode::InvalidView
    );

    cluster.stop().await;
    Ok(())
}
