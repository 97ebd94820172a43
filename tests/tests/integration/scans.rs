//! Scan planning: partition pruning, delete files, projections, and the plan codec.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, BooleanArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion_distributed::DistributedLeafExec;
use datafusion_proto::physical_plan::PhysicalExtensionCodec;
use iceberg::scan::FileScanTaskDeleteFile;
use iceberg::spec::DataContentType;
use parquet::arrow::ArrowWriter;
use sqe_engine::engine::SessionSettings;
use sqe_iceberg::codec::SqeCodec;
use sqe_iceberg::delete::{
    APPLIED_COLUMN, FILE_COLUMN, POS_COLUMN, RowChangeWriteExec, RowPositionsProvider,
    WRITE_COLUMN, changed_files,
};
use sqe_iceberg::scan::{IcebergScanExec, ScanIo};
use sqe_iceberg::storage::file_io_with_props;
use sqe_iceberg::table::IcebergTableProvider;
use sqe_tests::cluster::TestCluster;
use sqe_tests::render;

use crate::TestResult;

/// Data files the plan's Iceberg scans read, summed over scans.
fn scanned_files(plan: &Arc<dyn ExecutionPlan>) -> usize {
    let mut files = 0;
    let _ = plan.apply(|node| {
        if let Some(scan) = node.downcast_ref::<IcebergScanExec>() {
            files += scan.file_count();
        } else if let Some(leaf) = node.downcast_ref::<DistributedLeafExec>()
            && let Some(scan) = leaf.original().downcast_ref::<IcebergScanExec>()
        {
            files += scan.file_count();
        }
        Ok(TreeNodeRecursion::Continue)
    });
    files
}

async fn files_for(
    cluster: &TestCluster,
    sql: &str,
) -> Result<usize, Box<dyn std::error::Error + Send + Sync>> {
    let prepared = cluster
        .engine()
        .prepare(&SessionSettings::default(), sql)
        .await?;
    Ok(scanned_files(prepared.plan().ok_or("no plan")?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partition_pruning_skips_files() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster
        .sql("CREATE TABLE demo.events (id BIGINT, region VARCHAR, amount DOUBLE) WITH (partitioning = ARRAY['region', 'bucket(4, id)'])")
        .await?;
    cluster
        .sql(
            "INSERT INTO demo.events SELECT value, CASE value % 3 WHEN 0 THEN 'eu' WHEN 1 THEN 'us' ELSE 'apac' END, \
             value * 1.5 FROM generate_series(1, 3000)",
        )
        .await?;
    let all = files_for(&cluster, "SELECT * FROM demo.events").await?;
    let eu = files_for(&cluster, "SELECT * FROM demo.events WHERE region = 'eu'").await?;
    let one_id = files_for(
        &cluster,
        "SELECT * FROM demo.events WHERE region = 'eu' AND id = 42",
    )
    .await?;
    assert!(
        all >= 12,
        "3 regions x 4 buckets should give at least 12 files, got {all}"
    );
    assert!(
        eu < all && eu >= 4,
        "region = 'eu' should read only eu files: {eu} of {all}"
    );
    assert!(
        one_id < eu && one_id >= 1,
        "id = 42 should read one bucket: {one_id} of {eu}"
    );

    let counts = cluster
        .query("SELECT region, count(*) AS c, sum(amount) AS s FROM demo.events GROUP BY region ORDER BY region")
        .await?;
    assert_eq!(
        render(&counts),
        "+--------+------+-----------+\n| region | c    | s         |\n+--------+------+-----------+\n| apac   | 1000 | 2250750.0 |\n| eu     | 1000 | 2252250.0 |\n| us     | 1000 | 2249250.0 |\n+--------+------+-----------+"
    );
    let one = cluster
        .query("SELECT id, region FROM demo.events WHERE region = 'eu' AND id = 42")
        .await?;
    assert_eq!(
        render(&one),
        "+----+--------+\n| id | region |\n+----+--------+\n| 42 | eu     |\n+----+--------+"
    );
    // count(*) needs no column at all.
    let count = cluster
        .query("SELECT count(*) AS c FROM demo.events WHERE region = 'us'")
        .await?;
    assert_eq!(
        render(&count),
        "+------+\n| c    |\n+------+\n| 1000 |\n+------+"
    );
    // Partitioned files live under partition directories.
    let dir = cluster
        .data_dir()
        .join("warehouse/demo/events/data/region=eu");
    assert!(dir.is_dir(), "{} missing", dir.display());
    cluster.stop().await;
    Ok(())
}

/// Writes an Iceberg positional delete file (file_path, pos) deleting `positions` of `data_file`.
fn write_position_deletes(
    path: &std::path::Path,
    data_file: &str,
    positions: &[i64],
) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let field = |name: &str, ty: DataType, id: i32| {
        Field::new(name, ty, false).with_metadata(HashMap::from([(
            "PARQUET:field_id".to_string(),
            id.to_string(),
        )]))
    };
    let schema = Arc::new(Schema::new(vec![
        field("file_path", DataType::Utf8, i32::MAX - 101),
        field("pos", DataType::Int64, i32::MAX - 102),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from_iter_values(
                positions.iter().map(|_| data_file),
            )),
            Arc::new(Int64Array::from(positions.to_vec())),
        ],
    )?;
    let file = std::fs::File::create(path)?;
    let mut writer = ArrowWriter::try_new(file, schema, None)?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(std::fs::metadata(path)?.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn positional_deletes_survive_the_codec_and_hide_rows() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster
        .sql("CREATE TABLE demo.small AS SELECT value AS id FROM generate_series(0, 9) ORDER BY value")
        .await?;
    let catalog = Arc::clone(cluster.engine().catalog());
    let table = catalog
        .load_table(&iceberg::TableIdent::from_strs(["demo", "small"])?)
        .await?;
    let provider =
        IcebergTableProvider::try_new(Arc::clone(&catalog), table, Arc::new(HashMap::new()), None)?;
    let mut tasks = provider.plan_files(&["id".to_string()], &[]).await?;
    assert!(!tasks.is_empty());
    // Delete positions 0 and 1 of the first data file.
    let data_file = tasks[0].data_file_path.clone();
    let delete_path = cluster.data_dir().join("position-deletes.parquet");
    let size = write_position_deletes(&delete_path, &data_file, &[0, 1])?;
    let first_file_rows = tasks[0].record_count.ok_or("record count")?;
    tasks[0].deletes.push(FileScanTaskDeleteFile {
        file_path: format!("file://{}", delete_path.display()),
        file_size_in_bytes: size,
        file_type: DataContentType::PositionDeletes,
        partition_spec_id: 0,
        equality_ids: None,
    });
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    let io = ScanIo {
        file_io: file_io_with_props(HashMap::new()),
        plan_props: HashMap::new(),
    };
    let scan: Arc<dyn ExecutionPlan> = Arc::new(IcebergScanExec::new(
        "demo.small".into(),
        schema,
        tasks,
        1,
        io,
        None,
    ));

    // As a worker would receive it: encoded on one side, decoded on the other.
    let codec = SqeCodec::new(HashMap::new());
    let mut buf = Vec::new();
    codec.try_encode(Arc::clone(&scan), &mut buf)?;
    let decoded = codec.try_decode(&buf, &[], &TaskContext::default())?;
    let rows: usize = collect(decoded, Arc::new(TaskContext::default()))
        .await?
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(
        rows,
        10 - 2,
        "two rows of {first_file_rows} in the first file are deleted"
    );
    cluster.stop().await;
    Ok(())
}

/// A row-level change's nodes travel to workers: through the codec and back, the row-position
/// read numbers the table's rows, and the row-change writer passes positions on and writes the
/// new rows into a data file of the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn row_change_nodes_survive_the_codec() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster.sql("CREATE TABLE demo.three (id bigint)").await?;
    cluster
        .sql("INSERT INTO demo.three VALUES (1), (2), (3)")
        .await?;
    let catalog = Arc::clone(cluster.engine().catalog());
    let table = catalog
        .load_table(&iceberg::TableIdent::from_strs(["demo", "three"])?)
        .await?;
    let provider = IcebergTableProvider::try_new(
        Arc::clone(&catalog),
        table.clone(),
        Arc::new(HashMap::new()),
        None,
    )?;
    let codec = SqeCodec::new(HashMap::new());
    let through_codec = |node: Arc<dyn ExecutionPlan>, inputs: Vec<Arc<dyn ExecutionPlan>>| {
        let mut buf = Vec::new();
        codec.try_encode(node, &mut buf)?;
        codec.try_decode(&buf, &inputs, &TaskContext::default())
    };

    let positions = RowPositionsProvider::try_new(provider)?;
    let state = datafusion::prelude::SessionContext::new().state();
    let read = positions.scan(&state, None, &[], None).await?;
    let read = through_codec(read, vec![])?;
    assert_eq!(read.name(), "RowPositionsExec");
    let numbered = collect(read, Arc::new(TaskContext::default())).await?;
    let text = render(&numbered);
    assert_eq!(
        numbered.iter().map(|b| b.num_rows()).sum::<usize>(),
        3,
        "{text}"
    );
    assert!(
        text.contains(POS_COLUMN) && text.contains(".parquet"),
        "{text}"
    );

    // An update of two rows: positions 0 and 2 of a file, new versions 10 and 30.
    let schema = Arc::new(Schema::new(vec![
        Field::new(FILE_COLUMN, DataType::Utf8, true),
        Field::new(POS_COLUMN, DataType::Int64, true),
        Field::new(WRITE_COLUMN, DataType::Boolean, true),
        Field::new(APPLIED_COLUMN, DataType::Boolean, true),
        Field::new("id", DataType::Int64, true),
    ]));
    let selection = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from(vec!["f", "f"])),
            Arc::new(Int64Array::from(vec![0, 2])),
            Arc::new(BooleanArray::from(vec![true, true])),
            Arc::new(BooleanArray::from(vec![false, false])),
            Arc::new(Int64Array::from(vec![10, 30])),
        ],
    )?;
    let input = MemorySourceConfig::try_new_exec(&[vec![selection]], schema, None)?;
    let write: Arc<dyn ExecutionPlan> = Arc::new(RowChangeWriteExec::new(
        Arc::clone(&input) as Arc<dyn ExecutionPlan>,
        table.clone(),
        HashMap::new(),
    )?);
    let write = through_codec(write, vec![input])?;
    assert_eq!(write.name(), "RowChangeWriteExec");
    let sent = collect(write, Arc::new(TaskContext::default())).await?;
    let mut files = Vec::new();
    let mut positions = 0;
    for batch in &sent {
        positions += batch.column(1).len() - batch.column(1).null_count();
        files.extend(changed_files(&table, batch)?);
    }
    assert_eq!(positions, 2);
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].record_count(), 2);
    assert!(
        files[0]
            .file_path()
            .starts_with(table.metadata().location()),
        "{}",
        files[0].file_path()
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn codec_refuses_coordinator_only_nodes() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    cluster.sql("CREATE SCHEMA demo").await?;
    cluster.sql("CREATE TABLE demo.t (a INT)").await?;
    let prepared = cluster
        .engine()
        .prepare(&SessionSettings::default(), "INSERT INTO demo.t VALUES (1)")
        .await?;
    let plan = prepared.plan().ok_or("plan")?;
    let mut write = None;
    let _ = plan.apply(|node| {
        if node.name() == "IcebergWriteExec" {
            write = Some(Arc::clone(node));
        }
        Ok(TreeNodeRecursion::Continue)
    });
    let write = write.ok_or("no IcebergWriteExec in an INSERT plan")?;
    let err = SqeCodec::new(HashMap::new())
        .try_encode(write, &mut Vec::new())
        .err()
        .ok_or("must refuse")?;
    assert!(
        err.to_string().contains("runs on the coordinator only"),
        "{err}"
    );
    cluster.stop().await;
    Ok(())
}

/// The first hash join of a plan.
fn first_hash_join(plan: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    let mut found = None;
    let _ = plan.apply(|node| {
        if node.name() == "HashJoinExec" {
            found = Some(Arc::clone(node));
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scans_report_column_bounds_so_joins_are_estimated_by_key_ranges() -> TestResult {
    let cluster = TestCluster::start(0, 0.01).await?;
    // The bounds of the files read, from their manifest entries.
    let prepared = cluster
        .engine()
        .prepare(
            &SessionSettings::default(),
            "SELECT l_orderkey, l_shipdate, l_comment FROM tpch.lineitem",
        )
        .await?;
    let plan = prepared.plan().ok_or("no plan")?;
    let mut scan = None;
    let _ = plan.apply(|node| {
        if node.downcast_ref::<IcebergScanExec>().is_some() {
            scan = Some(Arc::clone(node));
        }
        Ok(TreeNodeRecursion::Continue)
    });
    let stats = scan.ok_or("no scan")?.partition_statistics(None)?;
    let keys = &stats.column_statistics[0];
    assert_eq!(
        keys.min_value.get_value(),
        Some(&datafusion::common::ScalarValue::Int64(Some(1)))
    );
    assert!(
        !keys.min_value.is_exact().unwrap_or(true),
        "bounds are inexact"
    );
    assert!(keys.max_value.get_value().is_some(), "{stats:?}");
    assert_eq!(keys.null_count.get_value(), Some(&0));
    assert!(stats.column_statistics[1].min_value.get_value().is_some());
    // Text bounds may be truncated: none is taken.
    assert!(stats.column_statistics[2].min_value.get_value().is_none());

    // lineitem joins its 100 suppliers by key: each of its rows finds one. Without bounds
    // DataFusion took l_suppkey to have as many values as rows and estimated the join at
    // the supplier side's 100 rows.
    let prepared = cluster
        .engine()
        .prepare(
            &SessionSettings::default(),
            "SELECT l_orderkey, s_name FROM tpch.lineitem JOIN tpch.supplier ON l_suppkey = s_suppkey",
        )
        .await?;
    let join = first_hash_join(prepared.plan().ok_or("no plan")?).ok_or("no join")?;
    let rows = join
        .partition_statistics(None)?
        .num_rows
        .get_value()
        .copied()
        .ok_or("no estimate")?;
    assert!(
        rows > 30_000,
        "the join of ~60,000 lineitem rows is estimated at {rows}"
    );
    cluster.stop().await;
    Ok(())
}
