//! DELETE, TRUNCATE and UPDATE on the embedded catalog: each statement changes exactly the rows
//! its WHERE is true for (NULL keeps a row, subqueries count), as one snapshot of removed files,
//! position delete files and (UPDATE) new data files; one planned before another commit is
//! rebased onto it, or fails cleanly when the two conflict. DuckDB referees a sequence of them.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use sqe_engine::ErrorCode;
use sqe_engine::engine::{Outcome, SessionSettings};
use sqe_tests::cluster::{Collected, TestCluster};
use sqe_tests::render;

use crate::TestResult;

fn ids(batches: &[RecordBatch]) -> Vec<i64> {
    let mut ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            let column = b.column(0).as_primitive::<Int64Type>();
            (0..column.len())
                .filter(|i| column.is_valid(*i))
                .map(|i| column.value(i))
                .collect::<Vec<_>>()
        })
        .collect();
    ids.sort_unstable();
    ids
}

async fn remaining(cluster: &TestCluster, table: &str) -> Result<Vec<i64>, String> {
    cluster
        .query(&format!("SELECT id FROM {table}"))
        .await
        .map(|b| ids(&b))
        .map_err(|e| e.to_string())
}

async fn changed(cluster: &TestCluster, sql: &str) -> Result<u64, String> {
    match cluster.sql(sql).await.map_err(|e| format!("{sql}: {e}"))? {
        Collected::Updated(Some(rows)) => Ok(rows),
        other => Err(format!("{sql}: {other:?}")),
    }
}

/// Plans `first` and `second` against the same snapshot, as two clients at once would, then
/// runs them: the first changes one row, the second loses with `ICEBERG_COMMIT_ERROR`.
async fn race(cluster: &TestCluster, first: &str, second: &str) -> Result<(), String> {
    let session = SessionSettings::default();
    let engine = cluster.engine();
    let first = engine
        .prepare(&session, first)
        .await
        .map_err(|e| e.to_string())?;
    let second = engine
        .prepare(&session, second)
        .await
        .map_err(|e| e.to_string())?;
    let won = engine.run(first).await.map_err(|e| e.to_string())?;
    if !matches!(won, Outcome::Updated { rows: Some(1) }) {
        return Err("the first statement did not change one row".into());
    }
    let lost = engine
        .run(second)
        .await
        .err()
        .ok_or("both statements committed")?;
    assert_eq!(lost.code(), ErrorCode::IcebergCommitError, "{lost}");
    Ok(())
}

/// The data files and the position delete files under table `del.{table}`'s location.
async fn parquet_files(cluster: &TestCluster, table: &str) -> Result<(usize, usize), String> {
    let table = cluster
        .iceberg_table("del", table)
        .await
        .map_err(|e| e.to_string())?;
    let location = table.metadata().location().trim_start_matches("file://");
    let files: Vec<String> = sqe_tests::files_under(std::path::Path::new(location))
        .into_iter()
        .map(|p| p.display().to_string())
        .filter(|p| p.ends_with(".parquet"))
        .collect();
    let deletes = files
        .iter()
        .filter(|p| p.ends_with("-deletes.parquet"))
        .count();
    Ok((files.len() - deletes, deletes))
}

/// The current snapshot's operation and summary.
async fn last_snapshot(
    cluster: &TestCluster,
    table: &str,
) -> Result<(String, std::collections::HashMap<String, String>), String> {
    let table = cluster
        .iceberg_table("del", table)
        .await
        .map_err(|e| e.to_string())?;
    let snapshot = table
        .metadata()
        .current_snapshot()
        .ok_or("no snapshot")?
        .clone();
    let summary = snapshot.summary();
    Ok((
        summary.operation.as_str().to_string(),
        summary.additional_properties.clone(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deletes_remove_exactly_the_rows_their_where_selects() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA del").await?;
    cluster
        .sql("CREATE TABLE del.t (id bigint, grp varchar, v double)")
        .await?;
    // Three data files of ten rows; grp is NULL on every seventh row.
    for file in 0..3 {
        let values: Vec<String> = (1..=10)
            .map(|i| {
                let id = file * 10 + i;
                let grp = if id % 7 == 0 {
                    "NULL".to_string()
                } else {
                    format!("'g{}'", id % 3)
                };
                format!("({id}, {grp}, {id}.5)")
            })
            .collect();
        cluster
            .sql(&format!("INSERT INTO del.t VALUES {}", values.join(", ")))
            .await?;
    }
    let mut expected: Vec<i64> = (1..=30).collect();
    let group = |id: i64| (id % 7 != 0).then(|| format!("g{}", id % 3));

    // Some rows of every file: position delete files; NULL grp is not 'g1', so it stays.
    let in_g1 = expected
        .iter()
        .filter(|id| group(**id).as_deref() == Some("g1"))
        .count();
    assert_eq!(
        changed(&cluster, "DELETE FROM del.t WHERE grp = 'g1'").await?,
        in_g1 as u64
    );
    expected.retain(|id| group(*id).as_deref() != Some("g1"));
    assert_eq!(remaining(&cluster, "del.t").await?, expected);
    let (operation, summary) = last_snapshot(&cluster, "t").await?;
    assert_eq!(operation, "delete");
    let in_g1 = in_g1.to_string();
    assert_eq!(summary.get("added-position-deletes"), Some(&in_g1));
    assert_eq!(
        summary.get("added-delete-files").map(String::as_str),
        Some("3")
    );
    assert_eq!(summary.get("deleted-data-files"), None);

    // Every live row of the second file (ids 11..=20), some already deleted: the file goes
    // (metadata only), and only the rows still there are counted.
    let live_in_second = expected.iter().filter(|id| (11..=20).contains(*id)).count() as u64;
    assert_eq!(
        changed(&cluster, "DELETE FROM del.t WHERE id BETWEEN 11 AND 20").await?,
        live_in_second
    );
    expected.retain(|id| !(11..=20).contains(id));
    assert_eq!(remaining(&cluster, "del.t").await?, expected);
    let (_, summary) = last_snapshot(&cluster, "t").await?;
    assert_eq!(
        summary.get("deleted-data-files").map(String::as_str),
        Some("1")
    );
    assert_eq!(
        summary.get("deleted-records").map(String::as_str),
        Some("10")
    );
    assert_eq!(summary.get("added-delete-files"), None);
    assert_eq!(
        summary.get("total-data-files").map(String::as_str),
        Some("2")
    );

    // A subquery, over the same table, decides; rows deleted before are not counted again.
    assert_eq!(
        changed(
            &cluster,
            "DELETE FROM del.t WHERE id IN (SELECT id + 1 FROM del.t WHERE v > 25) OR id = 1",
        )
        .await?,
        {
            let doomed: Vec<i64> = expected
                .iter()
                .filter(|id| {
                    **id == 1 || (expected.contains(&(**id - 1)) && (**id - 1) as f64 + 0.5 > 25.0)
                })
                .copied()
                .collect();
            expected.retain(|id| !doomed.contains(id));
            doomed.len() as u64
        }
    );
    assert_eq!(remaining(&cluster, "del.t").await?, expected);

    // NULL is not true: nothing goes, and nothing is committed.
    let snapshots_before = cluster
        .iceberg_table("del", "t")
        .await?
        .metadata()
        .snapshots()
        .count();
    assert_eq!(
        changed(&cluster, "DELETE FROM del.t WHERE grp = NULL").await?,
        0
    );
    assert_eq!(
        cluster
            .iceberg_table("del", "t")
            .await?
            .metadata()
            .snapshots()
            .count(),
        snapshots_before
    );
    // Every earlier state is still there to travel to.
    let first = cluster
        .query("SELECT count(*) FROM del.t FOR VERSION AS OF 'main'")
        .await?;
    assert_eq!(
        first[0].column(0).as_primitive::<Int64Type>().value(0),
        expected.len() as i64
    );

    // DELETE without WHERE and TRUNCATE empty the table by removing its files.
    assert_eq!(
        changed(&cluster, "DELETE FROM del.t").await?,
        expected.len() as u64
    );
    assert_eq!(remaining(&cluster, "del.t").await?, Vec::<i64>::new());
    cluster
        .sql("INSERT INTO del.t VALUES (100, 'x', 1.0)")
        .await?;
    let truncated = cluster.sql("TRUNCATE TABLE del.t").await?;
    assert!(
        matches!(truncated, Collected::Updated(None)),
        "{truncated:?}"
    );
    assert_eq!(remaining(&cluster, "del.t").await?, Vec::<i64>::new());
    let (_, summary) = last_snapshot(&cluster, "t").await?;
    assert_eq!(summary.get("total-records").map(String::as_str), Some("0"));
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delete_planned_before_another_commit_fails_and_leaves_nothing() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA del").await?;
    cluster.sql("CREATE TABLE del.race (id bigint)").await?;
    cluster
        .sql("INSERT INTO del.race VALUES (1), (2), (3), (4)")
        .await?;
    race(
        &cluster,
        "DELETE FROM del.race WHERE id = 1",
        "DELETE FROM del.race WHERE id = 2",
    )
    .await?;
    assert_eq!(remaining(&cluster, "del.race").await?, vec![2, 3, 4]);
    // The loser's delete file and manifests were removed again: only the winner's remain.
    let (_, delete_files) = parquet_files(&cluster, "race").await?;
    assert_eq!(delete_files, 1);
    // Run again, it is planned on the new snapshot and succeeds.
    assert_eq!(
        changed(&cluster, "DELETE FROM del.race WHERE id = 2").await?,
        1
    );
    assert_eq!(remaining(&cluster, "del.race").await?, vec![3, 4]);
    cluster.stop().await;
    Ok(())
}

/// Runs `statements` planned together against one snapshot, one after the other: each one's
/// outcome (rows changed, or the error's code and message).
async fn planned_together(
    cluster: &TestCluster,
    statements: &[&str],
) -> Result<Vec<Result<Option<u64>, (ErrorCode, String)>>, String> {
    let session = SessionSettings::default();
    let engine = cluster.engine();
    let mut prepared = Vec::new();
    for sql in statements {
        prepared.push(
            engine
                .prepare(&session, sql)
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    let mut outcomes = Vec::new();
    for statement in prepared {
        outcomes.push(match engine.run(statement).await {
            Ok(Outcome::Updated { rows }) => Ok(rows),
            Ok(_) => return Err("a statement returned rows".into()),
            Err(e) => Err((e.code(), e.to_string())),
        });
    }
    Ok(outcomes)
}

/// Plans `first` and `second` together; the first changes one row, the second then fails
/// with `ICEBERG_COMMIT_ERROR` saying `why`.
async fn second_conflicts(
    cluster: &TestCluster,
    first: &str,
    second: &str,
    why: &str,
) -> Result<(), String> {
    let outcomes = planned_together(cluster, &[first, second]).await?;
    match outcomes.as_slice() {
        [Ok(Some(1)), Err((ErrorCode::IcebergCommitError, message))] if message.contains(why) => {
            Ok(())
        }
        other => Err(format!("{first} then {second}: {other:?}")),
    }
}

/// Serializable isolation, as Trino's connector checks it: a row-level change whose snapshot
/// was overtaken commits on top of the other writer's when that one touched other files only,
/// and fails cleanly when it removed or deleted from a file the change reads, or added rows its
/// condition might match.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_change_overtaken_by_another_commit_rebases_unless_they_conflict() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA del").await?;
    cluster.sql("CREATE TABLE del.rebase (id bigint)").await?;
    // Two data files: {1, 2} and {3, 4}.
    cluster
        .sql("INSERT INTO del.rebase VALUES (1), (2)")
        .await?;
    cluster
        .sql("INSERT INTO del.rebase VALUES (3), (4)")
        .await?;

    // Different files: both commit, the second on top of the first.
    let outcomes = planned_together(
        &cluster,
        &[
            "DELETE FROM del.rebase WHERE id = 1",
            "DELETE FROM del.rebase WHERE id = 3",
        ],
    )
    .await?;
    assert_eq!(outcomes, vec![Ok(Some(1)), Ok(Some(1))]);
    assert_eq!(remaining(&cluster, "del.rebase").await?, vec![2, 4]);
    let operations = cluster
        .query("SELECT operation FROM del.\"rebase$snapshots\" ORDER BY committed_at")
        .await?;
    assert!(
        render(&operations).matches("delete").count() == 2,
        "{}",
        render(&operations)
    );

    // The other writer removed the file this one deletes from.
    second_conflicts(
        &cluster,
        "DELETE FROM del.rebase WHERE id >= 3",
        "DELETE FROM del.rebase WHERE id = 4",
        "whose rows the statement changes",
    )
    .await?;
    // Rows appended meanwhile might match the condition: serializable refuses.
    second_conflicts(
        &cluster,
        "INSERT INTO del.rebase VALUES (5)",
        "DELETE FROM del.rebase WHERE id = 2",
        "added rows",
    )
    .await?;
    assert_eq!(remaining(&cluster, "del.rebase").await?, vec![2, 5]);
    // The losers left no delete file behind.
    let (_, delete_files) = parquet_files(&cluster, "rebase").await?;
    assert_eq!(delete_files, 2);
    cluster.stop().await;
    Ok(())
}

/// Trino's conflict-detection filter: rows appended meanwhile conflict only where the part of
/// the statement's condition the table's partitions enforce may hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn appends_to_other_partitions_do_not_conflict() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA del").await?;
    cluster
        .sql("CREATE TABLE del.parts (id bigint, p varchar) WITH (partitioning = ARRAY['p'])")
        .await?;
    cluster
        .sql("INSERT INTO del.parts VALUES (1, 'a'), (2, 'a'), (3, 'b'), (4, 'b')")
        .await?;
    let outcomes = planned_together(
        &cluster,
        &[
            "INSERT INTO del.parts VALUES (5, 'b')",
            "DELETE FROM del.parts WHERE p = 'a' AND id = 1",
        ],
    )
    .await?;
    assert_eq!(outcomes, vec![Ok(Some(1)), Ok(Some(1))]);
    assert_eq!(remaining(&cluster, "del.parts").await?, vec![2, 3, 4, 5]);
    second_conflicts(
        &cluster,
        "INSERT INTO del.parts VALUES (6, 'a')",
        "DELETE FROM del.parts WHERE p = 'a' AND id = 2",
        "added rows",
    )
    .await?;
    // A condition on no partition column: every append might match.
    second_conflicts(
        &cluster,
        "INSERT INTO del.parts VALUES (7, 'c')",
        "DELETE FROM del.parts WHERE id = 3",
        "added rows",
    )
    .await?;
    assert_eq!(
        remaining(&cluster, "del.parts").await?,
        vec![2, 3, 4, 5, 6, 7]
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_cannot_be_deleted_is_refused_with_trinos_codes() -> TestResult {
    // (Format 1 tables, where only whole files can go, are tested with pyiceberg's: SQE
    // creates format 2 only.)
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA del").await?;
    assert_eq!(
        cluster
            .error_code("DELETE FROM tpch.tiny.nation WHERE nationkey = 1")
            .await?,
        ErrorCode::NotSupported
    );
    assert_eq!(
        cluster
            .error_code("DELETE FROM del.missing WHERE id = 1")
            .await?,
        ErrorCode::TableNotFound
    );
    // A table without a snapshot has nothing to delete.
    cluster.sql("CREATE TABLE del.empty (id bigint)").await?;
    // An aggregate or window function where each row's value is wanted.
    for sql in [
        "DELETE FROM del.empty WHERE id = sum(1)",
        "UPDATE del.empty SET id = max(id)",
        "UPDATE del.empty SET id = 1 WHERE row_number() OVER () > 1",
    ] {
        assert_eq!(
            cluster.error_code(sql).await?,
            ErrorCode::ExpressionNotScalar,
            "{sql}"
        );
    }
    assert_eq!(
        changed(&cluster, "DELETE FROM del.empty WHERE id = 1").await?,
        0
    );
    cluster.stop().await;
    Ok(())
}

/// `(id, grp, v)` of every row, by id.
async fn all_rows(
    cluster: &TestCluster,
    table: &str,
) -> Result<Vec<(i64, Option<String>, f64)>, String> {
    let batches = cluster
        .query(&format!("SELECT id, grp, v FROM {table} ORDER BY id"))
        .await
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for batch in &batches {
        let id = batch.column(0).as_primitive::<Int64Type>();
        let grp = datafusion::arrow::compute::cast(
            batch.column(1),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .map_err(|e| e.to_string())?;
        let grp = grp.as_string::<i32>();
        let v = batch
            .column(2)
            .as_primitive::<datafusion::arrow::datatypes::Float64Type>();
        for i in 0..batch.num_rows() {
            rows.push((
                id.value(i),
                grp.is_valid(i).then(|| grp.value(i).to_string()),
                v.value(i),
            ));
        }
    }
    Ok(rows)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn updates_rewrite_exactly_the_rows_their_where_selects() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA del").await?;
    cluster
        .sql(
            "CREATE TABLE del.u (id bigint, grp varchar, v double) \
             WITH (partitioning = ARRAY['grp'])",
        )
        .await?;
    let mut expected: Vec<(i64, Option<String>, f64)> = (1..=20)
        .map(|id| {
            let grp = (id % 5 != 0).then(|| format!("g{}", id % 2));
            (id, grp, id as f64)
        })
        .collect();
    for half in [1..=10, 11..=20] {
        let values: Vec<String> = expected
            .iter()
            .filter(|(id, _, _)| half.contains(id))
            .map(|(id, grp, v)| match grp {
                Some(g) => format!("({id}, '{g}', {v})"),
                None => format!("({id}, NULL, {v})"),
            })
            .collect();
        cluster
            .sql(&format!("INSERT INTO del.u VALUES {}", values.join(", ")))
            .await?;
    }

    // Some rows of several files get new values; the rest keep theirs.
    let doubled = expected.iter().filter(|(id, _, _)| id % 3 == 0).count() as u64;
    assert_eq!(
        changed(&cluster, "UPDATE del.u SET v = v * 2 WHERE id % 3 = 0").await?,
        doubled
    );
    for row in &mut expected {
        if row.0 % 3 == 0 {
            row.2 *= 2.0;
        }
    }
    assert_eq!(all_rows(&cluster, "del.u").await?, expected);
    let (operation, summary) = last_snapshot(&cluster, "u").await?;
    assert_eq!(operation, "overwrite");
    let doubled_text = doubled.to_string();
    assert_eq!(summary.get("added-records"), Some(&doubled_text));
    assert_eq!(summary.get("added-position-deletes"), Some(&doubled_text));
    // Iceberg's total counts the rows of data files: masked rows stay in it.
    let total = (20 + doubled).to_string();
    assert_eq!(summary.get("total-records"), Some(&total));

    // A partition column: the rows move to their new partition; NULL groups are not 'g1'.
    let moved = expected
        .iter()
        .filter(|(_, g, _)| g.as_deref() == Some("g1"))
        .count() as u64;
    assert_eq!(
        changed(&cluster, "UPDATE del.u SET grp = 'moved' WHERE grp = 'g1'").await?,
        moved
    );
    for row in &mut expected {
        if row.1.as_deref() == Some("g1") {
            row.1 = Some("moved".into());
        }
    }
    assert_eq!(all_rows(&cluster, "del.u").await?, expected);
    // Every row of the g1 partition changed: its files were removed, not masked.
    let (_, summary) = last_snapshot(&cluster, "u").await?;
    assert!(summary.contains_key("deleted-data-files"), "{summary:?}");

    // A subquery decides, over the table itself.
    let top = expected.iter().map(|r| r.2).fold(f64::MIN, f64::max);
    assert_eq!(
        changed(
            &cluster,
            "UPDATE del.u SET grp = NULL WHERE v = (SELECT max(v) FROM del.u)"
        )
        .await?,
        expected.iter().filter(|r| r.2 == top).count() as u64
    );
    for row in &mut expected {
        if row.2 == top {
            row.1 = None;
        }
    }
    assert_eq!(all_rows(&cluster, "del.u").await?, expected);

    // Nothing matches: nothing is written or committed.
    let snapshots = cluster
        .iceberg_table("del", "u")
        .await?
        .metadata()
        .snapshots()
        .count();
    assert_eq!(
        changed(&cluster, "UPDATE del.u SET v = 0 WHERE id > 1000").await?,
        0
    );
    assert_eq!(
        cluster
            .iceberg_table("del", "u")
            .await?
            .metadata()
            .snapshots()
            .count(),
        snapshots
    );

    // A value the column cannot hold fails the statement and changes nothing.
    assert!(
        cluster
            .sql("UPDATE del.u SET v = CAST('x' AS double) WHERE id = 1")
            .await
            .is_err()
    );
    assert_eq!(all_rows(&cluster, "del.u").await?, expected);
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn merges_apply_the_first_clause_that_holds_to_each_source_row() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA del").await?;
    cluster
        .sql("CREATE TABLE del.m (id bigint, grp varchar, v double)")
        .await?;
    // A table with no snapshot yet: MERGE can only insert.
    assert_eq!(
        changed(
            &cluster,
            "MERGE INTO del.m USING (VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, 'a', 3.0), (4, 'b', 4.0)) \
             AS s (id, grp, v) ON m.id = s.id \
             WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.grp, s.v)",
        )
        .await?,
        4
    );
    let (operation, _) = last_snapshot(&cluster, "m").await?;
    assert_eq!(operation, "append");
    let mut expected: Vec<(i64, Option<String>, f64)> = vec![
        (1, Some("a".into()), 1.0),
        (2, Some("b".into()), 2.0),
        (3, Some("a".into()), 3.0),
        (4, Some("b".into()), 4.0),
    ];
    assert_eq!(all_rows(&cluster, "del.m").await?, expected);

    // Every clause kind, with conditions, clauses in order, an alias and qualified targets:
    // 1 and 3 match (1 is deleted: its source row says so; 3 is updated), 2 and 4 stay, 5 is
    // new and inserted with a column left out, 6 is new but no clause applies to it.
    let applied = changed(
        &cluster,
        "MERGE INTO del.m AS t USING (VALUES (1, 'gone', 10.0), (3, 'x', 30.0), (5, 'new', 50.0), (6, 'skip', 60.0)) \
         AS s (id, grp, v) ON t.id = s.id \
         WHEN MATCHED AND s.grp = 'gone' THEN DELETE \
         WHEN MATCHED THEN UPDATE SET t.v = s.v + t.v, grp = upper(s.grp) \
         WHEN NOT MATCHED AND s.grp <> 'skip' THEN INSERT (id, v) VALUES (s.id, s.v)",
    )
    .await?;
    assert_eq!(applied, 3, "a delete, an update and an insert");
    expected.remove(0);
    expected[1] = (3, Some("X".into()), 33.0);
    expected.push((5, None, 50.0));
    assert_eq!(all_rows(&cluster, "del.m").await?, expected);
    let (operation, summary) = last_snapshot(&cluster, "m").await?;
    assert_eq!(operation, "overwrite");
    assert_eq!(summary.get("added-records").map(String::as_str), Some("2"));
    assert_eq!(
        summary.get("added-position-deletes").map(String::as_str),
        Some("2")
    );

    // A target row two source rows match is refused, and nothing changes.
    let snapshots = cluster
        .iceberg_table("del", "m")
        .await?
        .metadata()
        .snapshots()
        .count();
    assert_eq!(
        cluster
            .error_code(
                "MERGE INTO del.m USING (VALUES (2), (2)) AS s (id) ON m.id = s.id \
                 WHEN MATCHED THEN UPDATE SET v = 0",
            )
            .await?,
        ErrorCode::MergeTargetRowMultipleMatches
    );
    assert_eq!(all_rows(&cluster, "del.m").await?, expected);
    assert_eq!(
        cluster
            .iceberg_table("del", "m")
            .await?
            .metadata()
            .snapshots()
            .count(),
        snapshots
    );
    // Two source rows for a target row that no clause acts on are fine (Trino checks the
    // rows it changes).
    assert_eq!(
        changed(
            &cluster,
            "MERGE INTO del.m USING (VALUES (2), (2)) AS s (id) ON m.id = s.id \
             WHEN MATCHED AND s.id > 100 THEN DELETE",
        )
        .await?,
        0
    );
    assert_eq!(
        cluster
            .error_code(
                "MERGE INTO del.m USING (VALUES (7)) AS s (id) ON m.id = s.id \
                 WHEN MATCHED THEN UPDATE SET nope = 1",
            )
            .await?,
        ErrorCode::ColumnNotFound
    );
    assert_eq!(
        cluster
            .error_code(
                "MERGE INTO tpch.tiny.nation USING (VALUES (7)) AS s (id) ON nationkey = s.id \
                 WHEN MATCHED THEN DELETE",
            )
            .await?,
        ErrorCode::NotSupported
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_two_merges_planned_on_one_snapshot_the_second_fails_cleanly() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA del").await?;
    cluster
        .sql("CREATE TABLE del.mm (id bigint, v bigint)")
        .await?;
    cluster
        .sql("INSERT INTO del.mm VALUES (1, 0), (2, 0)")
        .await?;
    let merge = |add: i64| {
        format!(
            "MERGE INTO del.mm USING (VALUES (1)) AS s (id) ON mm.id = s.id \
             WHEN MATCHED THEN UPDATE SET v = v + {add}"
        )
    };
    race(&cluster, &merge(1), &merge(10)).await?;
    // No lost update: the first's change is there, the second's is not.
    let rows = cluster.query("SELECT v FROM del.mm WHERE id = 1").await?;
    assert_eq!(ids(&rows), vec![1]);
    // Its new data file was removed again: only the first MERGE's is there besides the INSERT's.
    let (data_files, _) = parquet_files(&cluster, "mm").await?;
    assert_eq!(data_files, 2);
    cluster.stop().await;
    Ok(())
}

/// An UPDATE cancelled before its commit changes nothing and leaves no file; cancelled once its
/// commit has begun, it answers the commit's outcome (its rows changed once), not a cancel a
/// client would retry, adding 1 twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_update_cancelled_during_its_commit_answers_its_outcome() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster
        .sql("CREATE TABLE demo.counters AS SELECT value AS id, 0 AS hits FROM generate_series(1, 5)")
        .await?;
    let engine = cluster.engine();
    let session = SessionSettings::default();
    let update = "UPDATE demo.counters SET hits = hits + 1 WHERE id <= 2";
    let hits = || async {
        cluster
            .query("SELECT CAST(sum(hits) AS bigint) AS id FROM demo.counters")
            .await
            .map(|b| ids(&b))
    };
    for (begun, answer, total) in [(false, None, 0), (true, Some(2), 2)] {
        let prepared = engine.prepare(&session, update).await?;
        let gate = prepared
            .commit_gate()
            .ok_or("an UPDATE has a commit gate")?;
        if begun {
            assert!(gate.begin());
        }
        let cancel = tokio_util::sync::CancellationToken::new();
        cancel.cancel();
        let outcome = match engine.run_cancellable(prepared, cancel).await {
            Ok(Outcome::Updated { rows }) => Ok(rows),
            Ok(Outcome::Rows(_)) => return Err("rows from an UPDATE".into()),
            Err(e) => Err(e),
        };
        match answer {
            Some(rows) => assert_eq!(outcome.ok(), Some(Some(rows)), "begun"),
            None => assert!(
                matches!(outcome, Err(sqe_engine::Error::Cancelled)),
                "not begun: {outcome:?}"
            ),
        }
        assert_eq!(hits().await?, vec![total], "begun: {begun}");
    }
    cluster.stop().await;
    Ok(())
}

/// The one bigint value `sql` answers.
async fn one_number(cluster: &TestCluster, sql: &str) -> Result<i64, String> {
    let batches = cluster.query(sql).await.map_err(|e| e.to_string())?;
    let values = ids(&batches);
    match values.as_slice() {
        [value] => Ok(*value),
        other => Err(format!("{sql}: {other:?}")),
    }
}

/// On a cluster, a row-level change is selected where the rows are, on the workers, and an
/// UPDATE's or MERGE's new rows are written there: both workers run tasks of each statement,
/// and every answer is the one the statement asks for.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn row_changes_select_and_write_on_the_workers() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    cluster.sql("CREATE SCHEMA del").await?;
    cluster
        .sql(
            "CREATE TABLE del.lines AS SELECT l_orderkey AS k, CAST(l_linenumber AS BIGINT) AS n, \
             CAST(l_quantity AS BIGINT) AS q FROM tpch.lineitem",
        )
        .await?;
    let firsts = one_number(&cluster, "SELECT count(*) FROM del.lines WHERE n = 1").await?;
    let quantity = one_number(&cluster, "SELECT sum(q) FROM del.lines").await?;

    let before = cluster.tasks_per_worker();
    let updated = changed(&cluster, "UPDATE del.lines SET q = q + 1 WHERE n = 1").await?;
    let after = cluster.tasks_per_worker();
    assert_eq!(updated, u64::try_from(firsts)?);
    assert!(
        before.iter().zip(&after).all(|(b, a)| a > b),
        "the UPDATE ran on both workers: {before:?} -> {after:?}"
    );
    assert_eq!(
        one_number(&cluster, "SELECT sum(q) FROM del.lines").await?,
        quantity + firsts
    );
    assert_eq!(
        one_number(&cluster, "SELECT count(*) FROM del.lines").await?,
        60175
    );

    let even = one_number(
        &cluster,
        "SELECT count(*) FROM del.lines WHERE n = 1 AND k % 2 = 0",
    )
    .await?;
    let before = cluster.tasks_per_worker();
    let merged = changed(
        &cluster,
        "MERGE INTO del.lines t USING (SELECT o_orderkey FROM tpch.orders WHERE o_orderkey % 2 = 0) s \
         ON t.k = s.o_orderkey AND t.n = 1 \
         WHEN MATCHED THEN UPDATE SET q = 0",
    )
    .await?;
    let after = cluster.tasks_per_worker();
    assert_eq!(merged, u64::try_from(even)?);
    assert!(
        before.iter().zip(&after).all(|(b, a)| a > b),
        "the MERGE ran on both workers: {before:?} -> {after:?}"
    );
    assert_eq!(
        one_number(&cluster, "SELECT count(*) FROM del.lines WHERE q = 0").await?,
        even
    );
    assert_eq!(
        one_number(&cluster, "SELECT count(*) FROM del.lines").await?,
        60175
    );

    let seconds = one_number(&cluster, "SELECT count(*) FROM del.lines WHERE n = 2").await?;
    assert_eq!(
        changed(&cluster, "DELETE FROM del.lines WHERE n = 2").await?,
        u64::try_from(seconds)?
    );
    assert_eq!(
        one_number(&cluster, "SELECT count(*) FROM del.lines").await?,
        60175 - seconds
    );
    cluster.stop().await;
    Ok(())
}

/// DuckDB as referee: a sequence of DELETEs, UPDATEs and MERGEs on a partitioned copy of
/// TPC-H's orders, run on two workers through the Trino endpoint, changes the rows DuckDB's
/// same statements change (tests/python/test_row_changes_reference.py).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn row_changes_answer_what_duckdb_answers() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let addr = cluster.trino_addr()?;
    let warehouse = cluster.data_dir().join("warehouse").display().to_string();
    let args = [addr.ip().to_string(), addr.port().to_string(), warehouse];
    sqe_tests::python::run_python("test_row_changes_reference.py", &args).await?;
    cluster.stop().await;
    Ok(())
}
