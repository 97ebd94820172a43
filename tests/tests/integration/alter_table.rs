//! ALTER TABLE as Iceberg evolves a schema: by field id, so rows written before read an added
//! column as NULL and a dropped-then-re-added column never brings its old values back; RENAME TO
//! moves the table; what SQE cannot alter is refused with Trino's codes.

use sqe_engine::ErrorCode;
use sqe_tests::cluster::{Collected, TestCluster};
use sqe_tests::render;

use crate::TestResult;

async fn rows(cluster: &TestCluster, sql: &str) -> Result<String, String> {
    cluster
        .query(sql)
        .await
        .map(|batches| render(&batches))
        .map_err(|e| format!("{sql}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn columns_evolve_by_field_id_and_tables_rename() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA al").await?;
    cluster
        .sql("CREATE TABLE al.t (id bigint, name varchar)")
        .await?;
    cluster.sql("INSERT INTO al.t VALUES (1, 'a')").await?;
    let first_snapshot = cluster
        .iceberg_table("al", "t")
        .await?
        .metadata()
        .current_snapshot_id()
        .ok_or("no snapshot")?;

    let added = cluster
        .sql("ALTER TABLE al.t ADD COLUMN score double")
        .await?;
    assert!(matches!(added, Collected::Updated(None)), "{added:?}");
    cluster.sql("INSERT INTO al.t VALUES (2, 'b', 2.5)").await?;
    assert_eq!(
        rows(&cluster, "SELECT * FROM al.t ORDER BY id").await?,
        "+----+------+-------+\n\
         | id | name | score |\n\
         +----+------+-------+\n\
         | 1  | a    |       |\n\
         | 2  | b    | 2.5   |\n\
         +----+------+-------+"
    );
    assert_eq!(
        cluster
            .error_code("ALTER TABLE al.t ADD COLUMN score double")
            .await?,
        ErrorCode::ColumnAlreadyExists
    );
    cluster
        .sql("ALTER TABLE al.t ADD COLUMN IF NOT EXISTS score double")
        .await?;

    cluster.sql("ALTER TABLE al.t DROP COLUMN name").await?;
    assert_eq!(
        cluster
            .error_code("ALTER TABLE al.t DROP COLUMN name")
            .await?,
        ErrorCode::ColumnNotFound
    );
    cluster
        .sql("ALTER TABLE al.t DROP COLUMN IF EXISTS name")
        .await?;
    // Added again, it is a new column: the old values stay with the old field id.
    cluster
        .sql("ALTER TABLE al.t ADD COLUMN name varchar")
        .await?;
    assert_eq!(
        rows(&cluster, "SELECT id, score, name FROM al.t ORDER BY id").await?,
        "+----+-------+------+\n\
         | id | score | name |\n\
         +----+-------+------+\n\
         | 1  |       |      |\n\
         | 2  | 2.5   |      |\n\
         +----+-------+------+"
    );
    // The past keeps the schema it was written with.
    assert_eq!(
        rows(
            &cluster,
            &format!("SELECT * FROM al.t FOR VERSION AS OF {first_snapshot}")
        )
        .await?,
        "+----+------+\n\
         | id | name |\n\
         +----+------+\n\
         | 1  | a    |\n\
         +----+------+"
    );

    cluster.sql("ALTER TABLE al.t RENAME TO al.u").await?;
    assert_eq!(
        rows(&cluster, "SELECT count(*) AS n FROM al.u").await?,
        "+---+\n| n |\n+---+\n| 2 |\n+---+"
    );
    assert_eq!(
        cluster.error_code("SELECT * FROM al.t").await?,
        ErrorCode::TableNotFound
    );
    assert_eq!(
        cluster
            .error_code("ALTER TABLE al.missing ADD COLUMN x integer")
            .await?,
        ErrorCode::TableNotFound
    );
    cluster
        .sql("ALTER TABLE IF EXISTS al.missing ADD COLUMN x integer")
        .await?;
    assert_eq!(
        cluster
            .error_code("ALTER TABLE al.u RENAME COLUMN id TO k")
            .await?,
        ErrorCode::NotSupported
    );
    assert_eq!(
        cluster
            .error_code("CREATE TABLE al.\"v$snapshots\" (x integer)")
            .await?,
        ErrorCode::NotSupported
    );

    // Table comments: the `comment` property, as Trino's Iceberg connector keeps them.
    let comment = "SELECT comment FROM system.metadata.table_comments \
                   WHERE schema_name = 'al' AND table_name = 'u'";
    assert_eq!(
        rows(&cluster, comment).await?,
        "+---------+\n| comment |\n+---------+\n|         |\n+---------+"
    );
    let commented = cluster
        .sql("COMMENT ON TABLE al.u IS 'adults, by city'")
        .await?;
    assert!(
        matches!(commented, Collected::Updated(None)),
        "{commented:?}"
    );
    assert_eq!(
        rows(&cluster, comment).await?,
        "+-----------------+\n| comment         |\n+-----------------+\n| adults, by city |\n+-----------------+"
    );
    let table = cluster.iceberg_table("al", "u").await?;
    assert_eq!(
        table
            .metadata()
            .properties()
            .get("comment")
            .map(String::as_str),
        Some("adults, by city")
    );
    cluster.sql("COMMENT ON TABLE al.u IS NULL").await?;
    assert_eq!(
        rows(&cluster, comment).await?,
        "+---------+\n| comment |\n+---------+\n|         |\n+---------+"
    );
    assert_eq!(
        cluster
            .error_code("COMMENT ON COLUMN al.u.id IS 'key'")
            .await?,
        ErrorCode::NotSupported
    );
    assert_eq!(
        cluster
            .error_code("COMMENT ON TABLE al.missing IS 'x'")
            .await?,
        ErrorCode::TableNotFound
    );
    cluster.stop().await;
    Ok(())
}
