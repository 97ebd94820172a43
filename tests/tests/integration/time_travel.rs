//! Time travel and metadata tables: every snapshot a sequence of writes made is readable
//! again, by id and by instant, with the rows it had; `$snapshots`, `$history`, `$properties`
//! and `$refs` say what the table's metadata says, `$files` and `$manifests` what its current
//! snapshot's manifests hold.

use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Int64Type, TimestampMillisecondType};
use sqe_engine::ErrorCode;
use sqe_tests::cluster::TestCluster;
use sqe_tests::render;

use crate::TestResult;

/// The bigint column `column` of every row.
fn longs(batches: &[RecordBatch], column: usize) -> Vec<Option<i64>> {
    batches
        .iter()
        .flat_map(|b| {
            let values = b.column(column).as_primitive::<Int64Type>();
            (0..values.len())
                .map(|i| values.is_valid(i).then(|| values.value(i)))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `SELECT count(*), max(id)` of a query's rows, as longs.
async fn count_and_max(cluster: &TestCluster, from: &str) -> Result<(i64, i64), String> {
    let rows = cluster
        .query(&format!("SELECT count(*), max(id) FROM {from}"))
        .await
        .map_err(|e| format!("{from}: {e}"))?;
    let count = longs(&rows, 0)[0].ok_or("no count")?;
    let max = longs(&rows, 1)[0].unwrap_or(0);
    Ok((count, max))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_snapshot_reads_back_by_id_and_by_instant() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA tt").await?;
    cluster
        .sql("CREATE TABLE tt.t (id bigint, v varchar)")
        .await?;
    for id in 1..=3 {
        cluster
            .sql(&format!("INSERT INTO tt.t VALUES ({id}, 'v{id}')"))
            .await?;
    }
    // The referee: the table's metadata as the catalog holds it.
    let table = cluster.iceberg_table("tt", "t").await?;
    let metadata = table.metadata();
    let mut expected: Vec<_> = metadata
        .snapshots()
        .map(|s| (s.timestamp_ms(), s.snapshot_id(), s.parent_snapshot_id()))
        .collect();
    expected.sort();
    assert_eq!(expected.len(), 3, "one snapshot per INSERT");

    let snapshots = cluster
        .query(
            "SELECT committed_at, snapshot_id, parent_id, operation FROM tt.\"t$snapshots\" \
             ORDER BY committed_at",
        )
        .await?;
    let committed: Vec<i64> = snapshots
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_primitive::<TimestampMillisecondType>()
                .values()
                .to_vec()
        })
        .collect();
    let listed: Vec<_> = committed
        .iter()
        .zip(longs(&snapshots, 1))
        .zip(longs(&snapshots, 2))
        .map(|((at, id), parent)| (*at, id.unwrap_or_default(), parent))
        .collect();
    assert_eq!(listed, expected);
    assert!(
        sqe_tests::render(&snapshots).contains("append"),
        "{}",
        sqe_tests::render(&snapshots)
    );

    for (k, (at, id, _)) in expected.iter().enumerate() {
        let rows = k as i64 + 1;
        assert_eq!(
            count_and_max(&cluster, &format!("tt.t FOR VERSION AS OF {id}")).await?,
            (rows, rows)
        );
        let instant = chrono::DateTime::from_timestamp_millis(*at)
            .ok_or("bad instant")?
            .format("%Y-%m-%d %H:%M:%S%.3f UTC");
        assert_eq!(
            count_and_max(
                &cluster,
                &format!("tt.t FOR TIMESTAMP AS OF TIMESTAMP '{instant}'")
            )
            .await?,
            (rows, rows),
            "as of {instant}"
        );
    }
    // The past and the present in one statement.
    let first = expected[0].1;
    let joined = cluster
        .query(&format!(
            "SELECT count(*) FROM tt.t a JOIN tt.t FOR VERSION AS OF {first} b ON a.id = b.id"
        ))
        .await?;
    assert_eq!(longs(&joined, 0), [Some(1)]);

    // History: each snapshot made current once, all ancestors of the current one.
    let history = cluster
        .query(
            "SELECT snapshot_id, parent_id FROM tt.\"t$history\" \
             WHERE is_current_ancestor ORDER BY made_current_at",
        )
        .await?;
    let chain: Vec<_> = expected
        .iter()
        .map(|(_, id, parent)| (Some(*id), *parent))
        .collect();
    assert_eq!(
        longs(&history, 0)
            .into_iter()
            .zip(longs(&history, 1))
            .collect::<Vec<_>>(),
        chain
    );
    let refs = cluster
        .query("SELECT name, type, snapshot_id FROM tt.\"t$refs\"")
        .await?;
    assert_eq!(longs(&refs, 2), [metadata.current_snapshot_id()]);
    assert!(
        sqe_tests::render(&refs).contains("| main | BRANCH |"),
        "{}",
        sqe_tests::render(&refs)
    );
    assert_eq!(
        count_and_max(&cluster, "tt.t FOR VERSION AS OF 'main'").await?,
        (3, 3)
    );
    let properties = cluster
        .query("SELECT count(*) FROM tt.\"t$properties\"")
        .await?;
    assert_eq!(
        longs(&properties, 0),
        [Some(metadata.properties().len() as i64)]
    );

    // A past the table does not have, and writing to the past.
    for missing in [
        "tt.t FOR VERSION AS OF 12345".to_string(),
        "tt.t FOR VERSION AS OF 'no_such_branch'".to_string(),
        "tt.t FOR TIMESTAMP AS OF TIMESTAMP '2001-01-01 00:00:00 UTC'".to_string(),
    ] {
        let error = cluster
            .query(&format!("SELECT * FROM {missing}"))
            .await
            .err()
            .ok_or_else(|| format!("{missing} was read"))?;
        assert_eq!(
            error.code(),
            ErrorCode::InvalidArguments,
            "{missing}: {error}"
        );
    }
    let refused = cluster
        .sql(&format!("INSERT INTO tt.\"t@{first}\" VALUES (9, 'z')"))
        .await
        .err()
        .ok_or("wrote into a past snapshot")?;
    assert_eq!(refused.code(), ErrorCode::NotSupported, "{refused}");
    assert_eq!(count_and_max(&cluster, "tt.t").await?, (3, 3));
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn files_and_manifests_are_the_current_snapshots() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA fm").await?;
    cluster
        .sql("CREATE TABLE fm.t (id bigint, name varchar) WITH (format_version = 2)")
        .await?;
    let empty = cluster.query("SELECT count(*) FROM fm.\"t$files\"").await?;
    assert_eq!(longs(&empty, 0), [Some(0)]);
    cluster
        .sql("INSERT INTO fm.t VALUES (1, 'a'), (2, 'b')")
        .await?;
    cluster.sql("INSERT INTO fm.t VALUES (3, NULL)").await?;
    cluster.sql("DELETE FROM fm.t WHERE id = 1").await?;

    // The referee: the totals the writers put in the snapshot's summary.
    let table = cluster.iceberg_table("fm", "t").await?;
    let snapshot = table
        .metadata()
        .current_snapshot()
        .ok_or("no snapshot")?
        .clone();
    let total = |key: &str| -> Result<i64, String> {
        snapshot
            .summary()
            .additional_properties
            .get(key)
            .ok_or(format!("no {key}"))?
            .parse::<i64>()
            .map_err(|e| e.to_string())
    };
    let data = cluster
        .query(
            "SELECT count(*), sum(record_count), sum(file_size_in_bytes) FROM fm.\"t$files\" \
             WHERE content = 0 AND file_format = 'PARQUET'",
        )
        .await?;
    assert_eq!(
        [longs(&data, 0)[0], longs(&data, 1)[0]],
        [
            Some(total("total-data-files")?),
            Some(total("total-records")?)
        ]
    );
    let deletes = cluster
        .query("SELECT count(*), sum(record_count) FROM fm.\"t$files\" WHERE content = 1")
        .await?;
    assert_eq!(
        [longs(&deletes, 0)[0], longs(&deletes, 1)[0]],
        [
            Some(total("total-delete-files")?),
            Some(total("total-position-deletes")?)
        ]
    );
    assert_eq!(longs(&deletes, 0)[0], Some(1));
    let sizes = cluster
        .query("SELECT sum(file_size_in_bytes) FROM fm.\"t$files\"")
        .await?;
    assert_eq!(longs(&sizes, 0)[0], Some(total("total-files-size")?));
    // Each data file's counts by field id: the one NULL name is in one file's null counts.
    let nulls = cluster
        .query(
            "SELECT count(*) FROM fm.\"t$files\" \
             WHERE content = 0 AND cardinality(null_value_counts) = 2",
        )
        .await?;
    assert_eq!(longs(&nulls, 0)[0], Some(total("total-data-files")?));
    // Bounds by field id as text, and per column by name in readable_metrics, as Trino's.
    let bounds = render(
        &cluster
            .query(
                "SELECT lower_bounds, upper_bounds, key_metadata FROM fm.\"t$files\" \
                 WHERE content = 0 ORDER BY record_count DESC",
            )
            .await?,
    );
    assert!(
        bounds.contains("| {1: 1, 2: a} | {1: 2, 2: b} |"),
        "{bounds}"
    );
    assert!(
        bounds.contains("| {1: 3}       | {1: 3}       |"),
        "{bounds}"
    );
    let metrics = cluster
        .query(
            "SELECT readable_metrics FROM fm.\"t$files\" WHERE content = 0 \
             ORDER BY record_count DESC LIMIT 1",
        )
        .await?;
    let text = metrics
        .first()
        .and_then(|b| b.column(0).as_any().downcast_ref::<StringArray>())
        .map(|c| c.value(0).to_string())
        .ok_or("no readable_metrics")?;
    let metrics: serde_json::Value = serde_json::from_str(&text)?;
    assert_eq!(metrics["id"]["lower_bound"], serde_json::json!(1), "{text}");
    assert_eq!(metrics["id"]["upper_bound"], serde_json::json!(2), "{text}");
    assert_eq!(
        metrics["name"]["upper_bound"],
        serde_json::json!("b"),
        "{text}"
    );
    assert_eq!(
        metrics["name"]["value_count"],
        serde_json::json!(2),
        "{text}"
    );
    assert_eq!(
        metrics["name"]["null_value_count"],
        serde_json::json!(0),
        "{text}"
    );

    // Manifests: those of the current snapshot's list, counting every live file.
    let manifest_list = table.manifest_list_reader(&snapshot).load().await?;
    let manifests = cluster
        .query(
            "SELECT count(*), \
             sum(coalesce(added_data_files_count, 0) + coalesce(existing_data_files_count, 0)) \
             FROM fm.\"t$manifests\"",
        )
        .await?;
    assert_eq!(
        longs(&manifests, 0)[0],
        Some(manifest_list.entries().len() as i64)
    );
    assert_eq!(
        longs(&manifests, 1)[0],
        Some(total("total-data-files")? + total("total-delete-files")?)
    );
    let paths = cluster
        .query("SELECT count(*) FROM fm.\"t$manifests\" WHERE path LIKE '%.avro' AND length > 0")
        .await?;
    assert_eq!(
        longs(&paths, 0)[0],
        Some(manifest_list.entries().len() as i64)
    );
    cluster.stop().await;
    Ok(())
}
