//! Trino's Iceberg table procedures on the embedded catalog: optimize, expire_snapshots,
//! remove_orphan_files.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use futures::TryStreamExt;
use sqe_engine::ErrorCode;
use sqe_engine::engine::{Outcome, SessionSettings};
use sqe_tests::cluster::{Collected, TestCluster};
use sqe_tests::render;

use crate::TestResult;

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// The one number a one-row, one-column query returns.
async fn number(cluster: &TestCluster, sql: &str) -> Result<i64, Failure> {
    let batches = cluster.query(sql).await?;
    let text = render(&batches);
    let value = text
        .lines()
        .nth(3)
        .and_then(|line| line.trim_matches('|').trim().parse::<i64>().ok())
        .ok_or_else(|| format!("no number in {text}"))?;
    Ok(value)
}

/// Every file under the table's directory `sub` (`data` or `metadata`).
fn files_in(cluster: &TestCluster, table: &str, sub: &str) -> Vec<PathBuf> {
    let dir = cluster
        .data_dir()
        .join("warehouse")
        .join("demo")
        .join(table)
        .join(sub);
    sqe_tests::files_under(&dir)
}

async fn with_session(
    cluster: &TestCluster,
    session: &SessionSettings,
    sql: &str,
) -> Result<Option<u64>, Failure> {
    match cluster.engine().execute(session, sql).await? {
        Outcome::Updated { rows } => Ok(rows),
        Outcome::Rows(stream) => {
            stream.try_collect::<Vec<_>>().await?;
            Ok(None)
        }
    }
}

/// A table of many small files in two partitions, with deletes, made into few: same rows, one
/// `replace` snapshot, the delete files gone; a query planned before still reads its snapshot.
/// `optimize WHERE`, as in Trino: the condition picks whole partitions by their identity
/// partition columns; only those are rewritten. A condition on any other column is refused,
/// and one that selects nothing rewrites nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn optimize_where_rewrites_only_the_partitions_it_selects() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster
        .sql("CREATE TABLE demo.w (k BIGINT, p VARCHAR) WITH (partitioning = ARRAY['p'])")
        .await?;
    for batch in 0..3 {
        let from = batch * 10 + 1;
        cluster
            .sql(&format!(
                "INSERT INTO demo.w SELECT value, CASE WHEN value % 2 = 0 THEN 'a' ELSE 'b' END \
                 FROM generate_series({from}, {})",
                from + 9
            ))
            .await?;
    }
    let files = "SELECT \"partition\".p AS p, file_count FROM demo.\"w$partitions\" ORDER BY p";
    let before = render(&cluster.query(files).await?);
    assert!(
        before.contains("| a | 3 ") && before.contains("| b | 3 "),
        "{before}"
    );
    // `data`: each partition's column statistics over its three files.
    let data = render(
        &cluster
            .query(
                "SELECT \"partition\".p AS p, data.k.min AS lo, data.k.max AS hi, \
                 data.k.null_count AS nulls, data.k.nan_count AS nans FROM demo.\"w$partitions\" ORDER BY p",
            )
            .await?,
    );
    assert!(
        data.contains("| a | 2  | 30 | 0     |      |")
            && data.contains("| b | 1  | 29 | 0     |      |"),
        "{data}"
    );
    let snapshots = "SELECT count(*) FROM demo.\"w$snapshots\"";
    let committed = number(&cluster, snapshots).await?;

    let rewritten = cluster
        .sql("ALTER TABLE demo.w EXECUTE optimize WHERE p = 'a'")
        .await?;
    assert!(
        matches!(rewritten, Collected::Updated(Some(15))),
        "the even rows: {rewritten:?}"
    );
    let after = render(&cluster.query(files).await?);
    assert!(
        after.contains("| a | 1 ") && after.contains("| b | 3 "),
        "{after}"
    );
    assert_eq!(
        number(&cluster, "SELECT count(*) FROM demo.w").await?,
        30,
        "the same rows"
    );

    let refused = cluster
        .sql("ALTER TABLE demo.w EXECUTE optimize WHERE k > 5")
        .await
        .err()
        .ok_or("a condition on a data column was taken")?;
    assert_eq!(refused.code(), ErrorCode::NotSupported, "{refused}");
    assert!(
        refused.to_string().contains("identity partition columns"),
        "{refused}"
    );

    let none = cluster
        .sql("ALTER TABLE demo.w EXECUTE optimize WHERE p = 'zzz'")
        .await?;
    assert!(matches!(none, Collected::Updated(Some(0))), "{none:?}");
    assert_eq!(number(&cluster, snapshots).await?, committed + 1);
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn optimize_compacts_small_files_and_applies_deletes() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster
        .sql("CREATE TABLE demo.t (k BIGINT, p VARCHAR) WITH (partitioning = ARRAY['p'])")
        .await?;
    // No file yet: no partition, and the `partition` column is there to read.
    let empty = cluster
        .query("SELECT \"partition\".p AS p, record_count FROM demo.\"t$partitions\"")
        .await?;
    assert_eq!(empty.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    for batch in 0..6 {
        let from = batch * 100 + 1;
        cluster
            .sql(&format!(
                "INSERT INTO demo.t SELECT value, CASE WHEN value % 2 = 0 THEN 'even' ELSE 'odd' END \
                 FROM generate_series({from}, {}) ",
                from + 99
            ))
            .await?;
    }
    cluster.sql("DELETE FROM demo.t WHERE k % 7 = 0").await?;
    let all = "SELECT k, p FROM demo.t ORDER BY k";
    let before = render(&cluster.query(all).await?);
    let data_before = number(
        &cluster,
        "SELECT count(*) FROM demo.\"t$files\" WHERE content = 0",
    )
    .await?;
    let deletes_before = number(
        &cluster,
        "SELECT count(*) FROM demo.\"t$files\" WHERE content = 1",
    )
    .await?;
    assert!(
        data_before >= 12,
        "two partitions, six inserts: {data_before}"
    );
    assert!(deletes_before > 0);
    let snapshot_before = number(
        &cluster,
        "SELECT snapshot_id FROM demo.\"t$snapshots\" ORDER BY committed_at DESC LIMIT 1",
    )
    .await?;
    // Planned (and its snapshot pinned) before the rewrite, run after it.
    let pinned = cluster
        .engine()
        .prepare(
            &SessionSettings::default(),
            "SELECT count(*) AS n FROM demo.t",
        )
        .await?;

    let rewritten = cluster
        .sql("ALTER TABLE demo.t EXECUTE optimize(file_size_threshold => '10MB')")
        .await?;
    let live = 600 - 600 / 7;
    assert!(
        matches!(rewritten, Collected::Updated(Some(n)) if n == live as u64),
        "{rewritten:?}"
    );
    assert_eq!(render(&cluster.query(all).await?), before);
    let data_after = number(
        &cluster,
        "SELECT count(*) FROM demo.\"t$files\" WHERE content = 0",
    )
    .await?;
    assert_eq!(data_after, 2, "one file per partition value");
    assert_eq!(
        number(
            &cluster,
            "SELECT count(*) FROM demo.\"t$files\" WHERE content = 1"
        )
        .await?,
        0,
        "the delete files went with the files they applied to"
    );
    let operation = render(
        &cluster
            .query("SELECT operation FROM demo.\"t$snapshots\" ORDER BY committed_at DESC LIMIT 1")
            .await?,
    );
    assert!(operation.contains("replace"), "{operation}");
    let Outcome::Rows(stream) = cluster.engine().run(pinned).await? else {
        return Err("the pinned query returned no rows".into());
    };
    let counted = render(&stream.try_collect::<Vec<_>>().await?);
    assert!(counted.contains(&format!("| {live} |")), "{counted}");
    // The table as it was is still there to travel to.
    let travelled = render(
        &cluster
            .query(&format!(
                "SELECT k, p FROM demo.t FOR VERSION AS OF {snapshot_before} ORDER BY k"
            ))
            .await?,
    );
    assert_eq!(travelled, before);

    // Nothing is left to compact: no new snapshot.
    let again = cluster.sql("ALTER TABLE demo.t EXECUTE optimize").await?;
    assert!(matches!(again, Collected::Updated(Some(0))), "{again:?}");
    assert_eq!(
        number(&cluster, "SELECT count(*) FROM demo.\"t$snapshots\"").await?,
        8,
        "six inserts, a delete, one optimize"
    );
    let unknown = cluster
        .error_code("ALTER TABLE demo.t EXECUTE compact")
        .await?;
    assert_eq!(unknown, ErrorCode::ProcedureNotFound);
    let bad = cluster
        .error_code("ALTER TABLE demo.t EXECUTE optimize(file_size_threshold => 'large')")
        .await?;
    assert_eq!(bad, ErrorCode::InvalidProcedureArgument);
    cluster.stop().await;
    Ok(())
}

/// Old snapshots go, with the files only they reached; files no snapshot references go once
/// older than the retention; the table reads the same throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expire_snapshots_and_remove_orphan_files() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster.sql("CREATE TABLE demo.t (k BIGINT)").await?;
    for batch in 0..3 {
        let from = batch * 10 + 1;
        cluster
            .sql(&format!(
                "INSERT INTO demo.t SELECT value FROM generate_series({from}, {})",
                from + 9
            ))
            .await?;
    }
    cluster.sql("DELETE FROM demo.t WHERE k > 25").await?;
    cluster.sql("ALTER TABLE demo.t EXECUTE optimize").await?;
    let all = "SELECT k FROM demo.t ORDER BY k";
    let rows = render(&cluster.query(all).await?);
    let first = number(
        &cluster,
        "SELECT snapshot_id FROM demo.\"t$snapshots\" ORDER BY committed_at LIMIT 1",
    )
    .await?;

    // Trino's minimum retention (7 days) holds unless the session lowers it.
    let short = "ALTER TABLE demo.t EXECUTE expire_snapshots(retention_threshold => '0s')";
    assert_eq!(
        cluster.error_code(short).await?,
        ErrorCode::InvalidProcedureArgument
    );
    let kept = cluster
        .sql("ALTER TABLE demo.t EXECUTE expire_snapshots(retention_threshold => '7d')")
        .await?;
    assert!(matches!(kept, Collected::Updated(_)), "{kept:?}");
    assert_eq!(
        number(&cluster, "SELECT count(*) FROM demo.\"t$snapshots\"").await?,
        5
    );

    let limits = cluster.engine().property_limits();
    let mut session = SessionSettings::default();
    session
        .properties
        .set("expire_snapshots_min_retention", "0s", &limits)?;
    session
        .properties
        .set("remove_orphan_files_min_retention", "0s", &limits)?;
    let data_before = files_in(&cluster, "t", "data").len();
    with_session(&cluster, &session, short).await?;
    assert_eq!(
        number(&cluster, "SELECT count(*) FROM demo.\"t$snapshots\"").await?,
        1,
        "only the current snapshot stays"
    );
    assert_eq!(render(&cluster.query(all).await?), rows);
    let live_files = number(&cluster, "SELECT count(*) FROM demo.\"t$files\"").await?;
    // An unpartitioned table is one partition, without a `partition` column.
    let partitions = render(&cluster.query("SELECT * FROM demo.\"t$partitions\"").await?);
    assert!(
        partitions.contains(&format!("| {:<12} | {live_files:<10} |", 25)),
        "{partitions}"
    );
    let data_after = files_in(&cluster, "t", "data");
    assert_eq!(
        data_after.len() as i64,
        live_files,
        "the files only expired snapshots reached are deleted: {data_after:?}"
    );
    assert!(data_after.len() < data_before);
    let travel = cluster
        .error_code(&format!("SELECT * FROM demo.t FOR VERSION AS OF {first}"))
        .await?;
    assert_ne!(travel, ErrorCode::GenericInternalError);

    // Two files no snapshot references: one written an hour ago, one just now.
    let data_dir = data_after
        .first()
        .and_then(|f| f.parent())
        .ok_or("no data directory")?
        .to_path_buf();
    let old = data_dir.join("left-by-a-crashed-writer.parquet");
    let young = data_dir.join("being-written.parquet");
    for orphan in [&old, &young] {
        std::fs::write(orphan, b"not committed")?;
    }
    std::fs::File::options()
        .write(true)
        .open(&old)?
        .set_modified(SystemTime::now() - Duration::from_secs(3600))?;
    with_session(
        &cluster,
        &session,
        "ALTER TABLE demo.t EXECUTE remove_orphan_files(retention_threshold => '10m')",
    )
    .await?;
    assert!(!old.exists(), "an old orphan stays");
    assert!(young.exists(), "a file younger than the retention went");
    assert_eq!(
        files_in(&cluster, "t", "data").len() as i64,
        live_files + 1,
        "every referenced file stays"
    );
    assert_eq!(render(&cluster.query(all).await?), rows);
    // A table whose files may be another's (gc.enabled=false) loses none of them.
    {
        use iceberg::transaction::{ApplyTransactionAction, Transaction};
        let table = cluster.iceberg_table("demo", "t").await?;
        let tx = Transaction::new(&table);
        let tx = tx
            .update_table_properties()
            .set("gc.enabled".into(), "false".into())
            .apply(tx)?;
        tx.commit(cluster.engine().catalog().as_ref()).await?;
    }
    for procedure in ["expire_snapshots", "remove_orphan_files"] {
        let refused = cluster
            .engine()
            .execute(
                &session,
                &format!("ALTER TABLE demo.t EXECUTE {procedure}(retention_threshold => '0s')"),
            )
            .await
            .err()
            .ok_or(format!("{procedure} ran with gc.enabled=false"))?;
        assert_eq!(refused.code(), ErrorCode::NotSupported, "{refused}");
    }
    assert!(young.exists());
    // With the default minimum retention, a short threshold is refused.
    assert_eq!(
        cluster
            .error_code(
                "ALTER TABLE demo.t EXECUTE remove_orphan_files(retention_threshold => '1h')"
            )
            .await?,
        ErrorCode::InvalidProcedureArgument
    );
    cluster.stop().await;
    Ok(())
}
