//! ALTER TABLE as Iceberg evolves a schema: by field id, so rows written before read an added
//! column as NULL and a dropped-then-re-added column never brings its old values back; RENAME TO
//! moves the table; a renamed or widened column keeps its field id, so older files read under
//! the new name and type; what SQE cannot alter is refused with Trino's codes.

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
            .error_code("ALTER TABLE al.u ALTER COLUMN id SET DEFAULT 0")
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
            .error_code("COMMENT ON TABLE al.missing IS 'x'")
            .await?,
        ErrorCode::TableNotFound
    );
    cluster.stop().await;
    Ok(())
}

/// `COMMENT '…'` of a new table and of its columns are kept as Trino's Iceberg connector keeps
/// them (the table's `comment` property, the fields' `doc`) and shown where Trino shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn comments_given_at_creation_are_kept() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA cm").await?;
    cluster
        .sql(
            "CREATE TABLE cm.t (id integer COMMENT 'the id', \"Name\" varchar) \
             COMMENT 'people' WITH (partitioning = ARRAY['id'])",
        )
        .await?;
    cluster
        .sql("CREATE TABLE cm.copy COMMENT 'a copy' AS SELECT * FROM cm.t")
        .await?;
    let table = cluster.iceberg_table("cm", "t").await?;
    assert_eq!(
        table
            .metadata()
            .properties()
            .get("comment")
            .map(String::as_str),
        Some("people")
    );
    let docs: Vec<(String, Option<String>)> = table
        .metadata()
        .current_schema()
        .as_struct()
        .fields()
        .iter()
        .map(|f| (f.name.clone(), f.doc.clone()))
        .collect();
    assert_eq!(
        docs,
        vec![
            ("id".to_string(), Some("the id".to_string())),
            ("name".to_string(), None)
        ]
    );
    assert_eq!(
        rows(
            &cluster,
            "SELECT table_name, comment FROM system.metadata.table_comments \
             WHERE schema_name = 'cm' ORDER BY table_name"
        )
        .await?,
        "+------------+---------+\n| table_name | comment |\n+------------+---------+\n| copy       | a copy  |\n| t          | people  |\n+------------+---------+"
    );
    assert_eq!(
        rows(
            &cluster,
            "SELECT column_name, comment FROM information_schema.columns \
             WHERE table_schema = 'cm' AND table_name = 't' ORDER BY ordinal_position"
        )
        .await?,
        "+-------------+---------+\n| column_name | comment |\n+-------------+---------+\n| id          | the id  |\n| name        |         |\n+-------------+---------+"
    );
    assert_eq!(
        cluster
            .error_code("CREATE OR REPLACE TABLE cm.t (id integer) COMMENT 'again'")
            .await?,
        ErrorCode::NotSupported
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn columns_rename_widen_and_take_comments_by_field_id() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA ev").await?;
    cluster
        .sql("CREATE TABLE ev.t (id integer, price decimal(5, 2), ratio real)")
        .await?;
    cluster
        .sql("INSERT INTO ev.t VALUES (1, 12.50, 0.5)")
        .await?;
    let field_ids = |table: &iceberg::table::Table| -> Vec<(String, i32)> {
        let schema = table.metadata().current_schema().clone();
        schema
            .as_struct()
            .fields()
            .iter()
            .map(|f| (f.name.clone(), f.id))
            .collect()
    };
    let before = field_ids(&cluster.iceberg_table("ev", "t").await?);

    let renamed = cluster
        .sql("ALTER TABLE ev.t RENAME COLUMN id TO key_id")
        .await?;
    assert!(matches!(renamed, Collected::Updated(None)), "{renamed:?}");
    cluster
        .sql("ALTER TABLE ev.t ALTER COLUMN key_id SET DATA TYPE bigint")
        .await?;
    cluster
        .sql("ALTER TABLE ev.t ALTER COLUMN price SET DATA TYPE decimal(9, 2)")
        .await?;
    cluster
        .sql("ALTER TABLE ev.t ALTER COLUMN ratio SET DATA TYPE double")
        .await?;
    let after = field_ids(&cluster.iceberg_table("ev", "t").await?);
    assert_eq!(
        after,
        vec![
            ("key_id".to_string(), before[0].1),
            ("price".to_string(), before[1].1),
            ("ratio".to_string(), before[2].1),
        ]
    );
    // A value too wide for the old type fits the new one, beside the row written before.
    cluster
        .sql("INSERT INTO ev.t VALUES (5000000000, 1234567.89, 0.25)")
        .await?;
    assert_eq!(
        rows(&cluster, "SELECT * FROM ev.t ORDER BY key_id").await?,
        "+------------+------------+-------+\n\
         | key_id     | price      | ratio |\n\
         +------------+------------+-------+\n\
         | 1          | 12.50      | 0.5   |\n\
         | 5000000000 | 1234567.89 | 0.25  |\n\
         +------------+------------+-------+"
    );
    assert_eq!(
        rows(
            &cluster,
            "SELECT column_name, data_type FROM information_schema.columns \
             WHERE table_schema = 'ev' AND table_name = 't' ORDER BY ordinal_position"
        )
        .await?,
        "+-------------+--------------+\n\
         | column_name | data_type    |\n\
         +-------------+--------------+\n\
         | key_id      | bigint       |\n\
         | price       | decimal(9,2) |\n\
         | ratio       | double       |\n\
         +-------------+--------------+"
    );

    // What Iceberg cannot promote, or names that clash, are refused and change nothing.
    for (sql, code) in [
        (
            "ALTER TABLE ev.t ALTER COLUMN key_id SET DATA TYPE integer",
            ErrorCode::NotSupported,
        ),
        (
            "ALTER TABLE ev.t ALTER COLUMN price SET DATA TYPE decimal(9, 3)",
            ErrorCode::NotSupported,
        ),
        (
            "ALTER TABLE ev.t ALTER COLUMN ratio SET DATA TYPE varchar",
            ErrorCode::NotSupported,
        ),
        (
            "ALTER TABLE ev.t RENAME COLUMN price TO ratio",
            ErrorCode::ColumnAlreadyExists,
        ),
        (
            "ALTER TABLE ev.t RENAME COLUMN missing TO other",
            ErrorCode::ColumnNotFound,
        ),
        (
            "ALTER TABLE ev.missing RENAME COLUMN a TO b",
            ErrorCode::TableNotFound,
        ),
        (
            "COMMENT ON COLUMN ev.t.missing IS 'x'",
            ErrorCode::ColumnNotFound,
        ),
    ] {
        assert_eq!(cluster.error_code(sql).await?, code, "{sql}");
    }
    assert_eq!(field_ids(&cluster.iceberg_table("ev", "t").await?), after);

    // Column comments: the field's doc, shown wherever Trino shows them.
    let commented = cluster
        .sql("COMMENT ON COLUMN ev.t.price IS 'in euros'")
        .await?;
    assert!(
        matches!(commented, Collected::Updated(None)),
        "{commented:?}"
    );
    let table = cluster.iceberg_table("ev", "t").await?;
    let schema = table.metadata().current_schema().clone();
    assert_eq!(
        schema
            .as_struct()
            .field_by_name("price")
            .and_then(|f| f.doc.as_deref()),
        Some("in euros")
    );
    assert_eq!(
        rows(
            &cluster,
            "SELECT column_name, comment FROM information_schema.columns \
             WHERE table_schema = 'ev' AND table_name = 't' ORDER BY ordinal_position"
        )
        .await?,
        "+-------------+----------+\n\
         | column_name | comment  |\n\
         +-------------+----------+\n\
         | key_id      |          |\n\
         | price       | in euros |\n\
         | ratio       |          |\n\
         +-------------+----------+"
    );
    let show_columns = rows(&cluster, "SHOW COLUMNS FROM ev.t").await?;
    assert!(
        show_columns.contains("| price  | decimal(9,2) |       | in euros |"),
        "{show_columns}"
    );
    let create = rows(&cluster, "SHOW CREATE TABLE ev.t").await?;
    assert!(
        create.contains("price decimal(9,2) COMMENT 'in euros'"),
        "{create}"
    );
    cluster.sql("COMMENT ON COLUMN ev.t.price IS NULL").await?;
    assert_eq!(
        rows(
            &cluster,
            "SELECT count(*) AS n FROM information_schema.columns \
             WHERE table_schema = 'ev' AND table_name = 't' AND comment IS NOT NULL"
        )
        .await?,
        "+---+\n| n |\n+---+\n| 0 |\n+---+"
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partitioning_evolves_and_older_files_keep_their_spec() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA pe").await?;
    cluster
        .sql(
            "CREATE TABLE pe.t (id bigint, region varchar, day date) \
             WITH (partitioning = ARRAY['region'])",
        )
        .await?;
    cluster
        .sql("INSERT INTO pe.t VALUES (1, 'eu', DATE '2026-01-05'), (2, 'us', DATE '2026-02-07')")
        .await?;
    let changed = cluster
        .sql("ALTER TABLE pe.t SET PROPERTIES partitioning = ARRAY['month(day)', 'bucket(id, 4)']")
        .await?;
    assert!(matches!(changed, Collected::Updated(None)), "{changed:?}");
    cluster
        .sql("INSERT INTO pe.t VALUES (3, 'eu', DATE '2026-01-20'), (4, 'us', DATE '2026-03-01')")
        .await?;
    let table = cluster.iceberg_table("pe", "t").await?;
    let spec = table.metadata().default_partition_spec();
    let fields: Vec<String> = spec
        .fields()
        .iter()
        .map(|f| format!("{}:{}", f.name, f.transform))
        .collect();
    assert_eq!(fields, ["day_month:month", "id_bucket:bucket[4]"]);
    // Files written before keep the spec they were written with.
    assert_eq!(
        rows(
            &cluster,
            "SELECT spec_id, sum(record_count) AS n FROM pe.\"t$files\" GROUP BY spec_id ORDER BY spec_id"
        )
        .await?,
        format!(
            "+---------+---+\n| spec_id | n |\n+---------+---+\n| 0       | 2 |\n| {} | 2 |\n+---------+---+",
            format_args!("{:<7}", spec.spec_id())
        )
    );
    // "$partitions": a row per partition of either spec, with the other spec's fields NULL.
    assert_eq!(
        rows(
            &cluster,
            "SELECT \"partition\".region AS region, \"partition\".day_month AS m, \
             \"partition\".id_bucket IS NOT NULL AS bucketed, record_count AS n, file_count AS f \
             FROM pe.\"t$partitions\" ORDER BY region, m"
        )
        .await?,
        "+--------+-----+----------+---+---+\n\
         | region | m   | bucketed | n | f |\n\
         +--------+-----+----------+---+---+\n\
         | eu     |     | false    | 1 | 1 |\n\
         | us     |     | false    | 1 | 1 |\n\
         |        | 672 | true     | 1 | 1 |\n\
         |        | 674 | true     | 1 | 1 |\n\
         +--------+-----+----------+---+---+"
    );
    // "$files" names each file's partition in the same row type.
    assert_eq!(
        rows(
            &cluster,
            "SELECT spec_id, \"partition\".region AS region, \"partition\".day_month AS m \
             FROM pe.\"t$files\" ORDER BY region, m"
        )
        .await?,
        format!(
            "+---------+--------+-----+\n\
             | spec_id | region | m   |\n\
             +---------+--------+-----+\n\
             | 0       | eu     |     |\n\
             | 0       | us     |     |\n\
             | {id} |        | 672 |\n\
             | {id} |        | 674 |\n\
             +---------+--------+-----+",
            id = format_args!("{:<7}", spec.spec_id())
        )
    );
    // "$manifests": each manifest's partition fields summarized in its own spec's terms.
    let summaries = rows(
        &cluster,
        "SELECT partition_spec_id, partition_summaries FROM pe.\"t$manifests\" \
         ORDER BY partition_spec_id",
    )
    .await?;
    assert!(
        summaries.contains(
            "contains_null: false, contains_nan: false, lower_bound: eu, upper_bound: us}]"
        ),
        "{summaries}"
    );
    assert!(
        summaries.contains("lower_bound: 672, upper_bound: 674}, {contains_null: false"),
        "{summaries}"
    );
    // Filters on either spec's columns read both kinds of files right, and so do deletes.
    assert_eq!(
        rows(
            &cluster,
            "SELECT id FROM pe.t WHERE region = 'eu' ORDER BY id"
        )
        .await?,
        "+----+\n| id |\n+----+\n| 1  |\n| 3  |\n+----+"
    );
    assert_eq!(
        rows(
            &cluster,
            "SELECT id FROM pe.t WHERE day < DATE '2026-02-01' ORDER BY id"
        )
        .await?,
        "+----+\n| id |\n+----+\n| 1  |\n| 3  |\n+----+"
    );
    cluster.sql("DELETE FROM pe.t WHERE id IN (2, 3)").await?;
    assert_eq!(
        rows(&cluster, "SELECT id FROM pe.t ORDER BY id").await?,
        "+----+\n| id |\n+----+\n| 1  |\n| 4  |\n+----+"
    );
    let create = rows(&cluster, "SHOW CREATE TABLE pe.t").await?;
    assert!(
        create.contains("partitioning = ARRAY['month(day)','bucket(id, 4)']"),
        "{create}"
    );
    // Back to unpartitioned.
    cluster
        .sql("ALTER TABLE pe.t SET PROPERTIES partitioning = ARRAY[]")
        .await?;
    let table = cluster.iceberg_table("pe", "t").await?;
    assert!(
        table
            .metadata()
            .default_partition_spec()
            .fields()
            .is_empty()
    );

    for (sql, code) in [
        (
            "ALTER TABLE pe.t SET PROPERTIES partitioning = ARRAY['nope']",
            ErrorCode::InvalidTableProperty,
        ),
        (
            "ALTER TABLE pe.t SET PROPERTIES colour = 'red'",
            ErrorCode::InvalidTableProperty,
        ),
        (
            "ALTER TABLE pe.t SET PROPERTIES location = 'file:///elsewhere'",
            ErrorCode::NotSupported,
        ),
        (
            "ALTER TABLE pe.t SET PROPERTIES format_version = 1",
            ErrorCode::NotSupported,
        ),
        (
            "ALTER TABLE pe.missing SET PROPERTIES partitioning = ARRAY[]",
            ErrorCode::TableNotFound,
        ),
    ] {
        assert_eq!(cluster.error_code(sql).await?, code, "{sql}");
    }
    cluster.stop().await;
    Ok(())
}
