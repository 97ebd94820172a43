//! Distributed execution: same answers as single-process DataFusion, work on every worker.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion_distributed::DistributedExec;
use sqe_engine::engine::SessionSettings;
use sqe_gateway::tpch::queries::QUERIES;
use sqe_tests::baseline::parquet_session;
use sqe_tests::cluster::TestCluster;
use sqe_tests::render;
use sqe_tpch::Table;

use crate::TestResult;

/// Each TPC-H query distributed answers what SQE answers on the coordinator alone (the same
/// Trino semantics: `avg` of a decimal in its type, which single-process DataFusion does not
/// have; benches/tpch.py checks all 22 against DuckDB).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tpch_distributed_equals_the_coordinator_alone() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let (_, session) = tpch_baseline(&cluster).await?;
    let alone = sqe_tests::cluster::coordinator_alone(session.clone())?;
    for (number, sql) in QUERIES {
        let what = format!("Q{number}");
        let (distributed, expected) =
            distributed_and_alone(&cluster, &session, &alone, sql, &what).await?;
        let rows: usize = expected.iter().map(|b| b.num_rows()).sum();
        assert!(
            rows > 0,
            "Q{number} has no rows at this scale; the comparison would prove nothing"
        );
        assert_eq!(render(&distributed), render(&expected), "Q{number} differs");
    }
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn join_aggregate_runs_tasks_on_every_worker() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let before = cluster.tasks_per_worker();
    let rows = cluster
        .query(
            "SELECT o_orderpriority, count(*) AS lines, sum(l_quantity) AS qty \
             FROM tpch.orders JOIN tpch.lineitem ON o_orderkey = l_orderkey \
             GROUP BY o_orderpriority ORDER BY o_orderpriority",
        )
        .await?;
    assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 5);
    let after = cluster.tasks_per_worker();
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert!(
            a > b,
            "worker {} ran no task of the join (tasks before {b}, after {a})",
            i + 1
        );
    }
    // The executed plan says the same: stages with a task per worker.
    let explained = cluster
        .query("EXPLAIN ANALYZE SELECT o_orderpriority, count(*) FROM tpch.orders JOIN tpch.lineitem ON o_orderkey = l_orderkey GROUP BY o_orderpriority")
        .await?;
    let text = render(&explained);
    assert!(text.contains("DistributedExec"), "{text}");
    assert!(
        text.contains("t1:[p0"),
        "no second task in the plan:\n{text}"
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_reachable_workers_the_coordinator_runs_the_query() -> TestResult {
    let mut cluster = TestCluster::start(2, 0.01).await?;
    let sql = "SELECT count(*), sum(l_quantity) FROM tpch.lineitem";
    let distributed = render(&cluster.query(sql).await?);
    cluster.stop_workers().await;
    assert!(cluster.engine().workers().reachable_urls().is_empty());
    assert!(
        !is_distributed(&cluster, sql).await?,
        "planned for workers that are gone"
    );
    let local = render(&cluster.query(sql).await?);
    assert_eq!(local, distributed);
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn worker_memory_limit_is_enforced() -> TestResult {
    let cluster = TestCluster::start_with(sqe_gateway::local::LocalOptions {
        workers: 2,
        scale_factor: 0.01,
        worker_memory_limit: Some(256 * 1024),
        ..TestCluster::options()
    })
    .await?;
    // A self-join builds a hash table of a whole lineitem partition: far over 256 KiB.
    let err = cluster
        .query("SELECT count(*) FROM tpch.lineitem a JOIN tpch.lineitem b ON a.l_orderkey = b.l_orderkey")
        .await
        .err()
        .ok_or("a 256 KiB worker memory pool should not fit a hash join over lineitem")?;
    assert!(
        matches!(err, sqe_engine::Error::ResourcesExhausted(_)),
        "expected the memory pool to refuse, got: {err:?}"
    );
    assert!(err.to_string().contains("pool_size: 256.0 KB"), "{err}");
    // Small queries still run in the same pool.
    let rows = cluster.query("SELECT count(*) FROM tpch.nation").await?;
    assert_eq!(
        render(&rows),
        "+-------+\n| _col0 |\n+-------+\n| 25    |\n+-------+"
    );
    cluster.stop().await;
    Ok(())
}

/// A sort larger than its workers' memory pools spills to the configured directory instead of
/// failing, and answers every row in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sort_larger_than_the_memory_pool_spills_and_answers() -> TestResult {
    let spill = tempfile::tempdir()?;
    let cluster = TestCluster::start_with(sqe_gateway::local::LocalOptions {
        workers: 2,
        scale_factor: 0.01,
        worker_memory_limit: Some(SPILLING_POOL),
        spill_directory: Some(spill.path().to_path_buf()),
        ..TestCluster::options()
    })
    .await?;
    // Sixteen copies of every line item's comment: more than the pool holds.
    let sql = "SELECT l_comment AS c FROM tpch.lineitem CROSS JOIN \
               (VALUES 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16) AS v(x) ORDER BY c";
    let rows = cluster.query(sql).await?;
    let mut comments = Vec::new();
    for batch in &rows {
        let column = cast(batch.column(0), &DataType::Utf8)?;
        comments.extend(
            column
                .as_string::<i32>()
                .iter()
                .map(Option::unwrap_or_default)
                .map(str::to_string),
        );
    }
    assert_eq!(comments.len(), 16 * 60_175);
    assert!(comments.is_sorted(), "the rows are not in order");
    // It spilled (the workers' sorts' metrics say so), and where it was told to: each node's
    // disk manager (the coordinator's and both workers') keeps its working directory there.
    let explained = render(&cluster.query(&format!("EXPLAIN ANALYZE {sql}")).await?);
    let spills: u64 = explained
        .split("spill_count=")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u64>().ok()
        })
        .sum();
    assert!(spills > 0, "the sort did not spill:\n{explained}");
    assert_eq!(
        std::fs::read_dir(spill.path())?.count(),
        3,
        "working directories in {}",
        spill.path().display()
    );
    cluster.stop().await;
    Ok(())
}

/// A worker pool that holds the sort's merge reservations but not its rows.
const SPILLING_POOL: usize = 32 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_query_past_its_max_run_time_is_stopped() -> TestResult {
    let cluster = TestCluster::start_with(sqe_gateway::local::LocalOptions {
        workers: 2,
        scale_factor: 0.01,
        query_max_run_time_secs: Some(2),
        ..TestCluster::options()
    })
    .await?;
    // A hundred billion rows: far more than two seconds of work.
    let started = std::time::Instant::now();
    let err = cluster
        .submit("SELECT count(*) FROM generate_series(1, 100000000000)")
        .await
        .err()
        .ok_or("the cross join finished within its time limit")?;
    assert!(
        matches!(err, sqe_engine::Error::TimeLimit { .. }),
        "expected a time-limit error, got: {err:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    // The cluster is fine afterwards.
    let rows = cluster.query("SELECT count(*) FROM tpch.region").await?;
    assert_eq!(
        render(&rows),
        "+-------+\n| _col0 |\n+-------+\n| 5     |\n+-------+"
    );
    cluster.stop().await;
    Ok(())
}

/// SQE's own functions (Trino's `substr` and `split_part`) run inside worker tasks: the
/// workers decode and evaluate them, with Trino's meaning.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn trino_functions_run_on_the_workers() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let baseline = parquet_session(
        &cluster.data_dir().join("warehouse"),
        "tpch",
        &Table::ALL.map(Table::name),
    )
    .await?;
    let sql = "SELECT substr(c_name, -3) AS tail, split_part(c_phone, '-', 5) IS NULL AS past, \
               count(*) AS n FROM tpch.customer JOIN tpch.orders ON c_custkey = o_custkey \
               GROUP BY 1, 2 ORDER BY 1, 2";
    let rows = rows_on_every_worker(&cluster, sql).await?;
    // DataFusion's own spelling of the same question: the last three characters; a phone
    // number has four fields, so the fifth is always missing.
    let expected = baseline
        .sql(
            "SELECT right(c_name, 3) AS tail, true AS past, count(*) AS n \
             FROM customer JOIN orders ON c_custkey = o_custkey GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .await?
        .collect()
        .await?;
    assert!(expected.iter().map(|b| b.num_rows()).sum::<usize>() > 100);
    assert_eq!(render(&rows), render(&expected));
    cluster.stop().await;
    Ok(())
}

/// The coordinator is a gateway: with one worker (every stage one task, which
/// datafusion-distributed would fold into the coordinator's own stage) the query still runs
/// on the worker, and with two a join that must stay in one task (`LEFT JOIN`) runs on one of
/// them; either way the answer is the coordinator's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_coordinator_hands_its_work_to_the_workers() -> TestResult {
    // TPC-H's Q13.
    let q13 = "SELECT c_count, count(*) AS custdist FROM (SELECT c_custkey, count(o_orderkey) \
               AS c_count FROM tpch.customer LEFT OUTER JOIN tpch.orders ON c_custkey = o_custkey \
               AND o_comment NOT LIKE '%special%requests%' GROUP BY c_custkey) AS c_orders \
               GROUP BY c_count ORDER BY custdist DESC, c_count DESC";
    let join = "SELECT o_orderpriority, count(*) AS lines FROM tpch.orders \
                JOIN tpch.lineitem ON o_orderkey = l_orderkey GROUP BY o_orderpriority \
                ORDER BY o_orderpriority";
    for workers in [1, 2] {
        let cluster = TestCluster::start(workers, 0.01).await?;
        let (_, session) = tpch_baseline(&cluster).await?;
        let alone = sqe_tests::cluster::coordinator_alone(session.clone())?;
        for sql in [q13, join] {
            let what = format!("{workers} worker(s): {sql}");
            let before: u64 = cluster.tasks_per_worker().iter().sum();
            let (rows, expected) =
                distributed_and_alone(&cluster, &session, &alone, sql, &what).await?;
            let after: u64 = cluster.tasks_per_worker().iter().sum();
            assert!(after > before, "{workers} worker(s) ran no task of {sql}");
            assert_eq!(
                render(&rows),
                render(&expected),
                "{workers} worker(s): {sql}"
            );
        }
        cluster.stop().await;
    }
    Ok(())
}

/// One partition per task (`task_concurrency = 1`, or a coordinator with one core) must not
/// let tasks answer for their share of a grouping alone: TPC-H's Q15 (the suppliers of the
/// top revenue) found two suppliers where there is one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_partition_per_task_still_groups_across_tasks() -> TestResult {
    let q15 = "WITH revenue AS (SELECT l_suppkey AS supplier_no, \
               sum(l_extendedprice * (1 - l_discount)) AS total_revenue FROM tpch.lineitem \
               GROUP BY l_suppkey) SELECT supplier_no, total_revenue FROM revenue \
               WHERE total_revenue = (SELECT max(total_revenue) FROM revenue) ORDER BY supplier_no";
    let cluster = TestCluster::start(2, 0.01).await?;
    let (_, session) = tpch_baseline(&cluster).await?;
    let mut narrow = session.clone();
    narrow.properties.set(
        "task_concurrency",
        "1",
        &sqe_engine::PropertyLimits::default(),
    )?;
    let alone = sqe_tests::cluster::coordinator_alone(session)?;
    let (distributed, expected) =
        distributed_and_alone(&cluster, &narrow, &alone, q15, "Q15").await?;
    assert_eq!(expected.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    assert_eq!(render(&distributed), render(&expected));
    cluster.stop().await;
    Ok(())
}

/// The rows of `sql`, which must be planned distributed and run a task on every worker.
async fn rows_on_every_worker(
    cluster: &TestCluster,
    sql: &str,
) -> Result<Vec<datafusion::arrow::array::RecordBatch>, Box<dyn std::error::Error + Send + Sync>> {
    assert!(
        is_distributed(cluster, sql).await?,
        "not distributed: {sql}"
    );
    let before = cluster.tasks_per_worker();
    let rows = cluster.query(sql).await?;
    let after = cluster.tasks_per_worker();
    assert!(
        before.iter().zip(&after).all(|(b, a)| a > b),
        "a worker ran no task: before {before:?}, after {after:?}"
    );
    Ok(rows)
}

/// Whether `sql`, planned now with the default session, runs on the workers.
async fn is_distributed(
    cluster: &TestCluster,
    sql: &str,
) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
    let prepared = cluster
        .engine()
        .prepare(&SessionSettings::default(), sql)
        .await?;
    let plan = prepared.plan().ok_or("a query has a plan")?;
    Ok(plan.is::<DistributedExec>())
}

/// Trino's aggregates SQE implements itself run their partial aggregation on the workers
/// (which must know them by name) and answer as Trino's do: `approx_percentile` in its
/// argument's type, `listagg` in its order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn trino_aggregates_run_on_the_workers() -> TestResult {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{DataType, Decimal128Type};
    let cluster = TestCluster::start(2, 0.01).await?;
    let percentile = "SELECT approx_percentile(l_quantity, 0.5) AS q FROM tpch.lineitem";
    assert!(is_distributed(&cluster, percentile).await?, "{percentile}");
    let batches = cluster.query(percentile).await?;
    let column = batches.first().ok_or("no rows")?.column(0);
    assert_eq!(column.data_type(), &DataType::Decimal128(15, 2));
    // l_quantity is 1 to 50, about evenly: its median is near 25.
    let median = column.as_primitive::<Decimal128Type>().value(0);
    assert!((2300..=2700).contains(&median), "{median}");
    // An array of percentages: one digest per percentage, each merged from the workers'
    // partial states, answering what each percentage alone answers.
    let both = "SELECT approx_percentile(l_quantity, ARRAY[0.5, 1]) = \
                ARRAY[approx_percentile(l_quantity, 0.5), max(l_quantity)] AS same \
                FROM tpch.lineitem";
    assert!(is_distributed(&cluster, both).await?, "{both}");
    assert_eq!(
        render(&cluster.query(both).await?).matches("true").count(),
        1
    );

    let names = "SELECT listagg(n_name, ',') WITHIN GROUP (ORDER BY n_name DESC) AS names \
                 FROM tpch.nation WHERE n_regionkey = 0";
    let listed = render(&cluster.query(names).await?);
    assert!(
        listed.contains("MOZAMBIQUE,MOROCCO,KENYA,ETHIOPIA,ALGERIA"),
        "{listed}"
    );
    // listagg past Trino's 1 MiB fails with Trino's name; TRUNCATE keeps what fits.
    let comments = "SELECT listagg(l_comment, ',') WITHIN GROUP (ORDER BY l_orderkey) AS c \
                    FROM tpch.lineitem";
    let refused = cluster
        .query(comments)
        .await
        .err()
        .ok_or("1 MiB of listagg")?;
    assert_eq!(
        refused.code(),
        sqe_engine::error::ErrorCode::ExceededFunctionMemoryLimit,
        "{refused}"
    );
    let kept = "SELECT length(listagg(l_comment, ',' ON OVERFLOW TRUNCATE '~' WITHOUT COUNT) \
                WITHIN GROUP (ORDER BY l_orderkey)) BETWEEN 1048000 AND 1048578 AS near \
                FROM tpch.lineitem";
    assert_eq!(
        render(&cluster.query(kept).await?).matches("true").count(),
        1
    );

    // checksum's partial sums from the workers add up to what one process sums.
    let checksum = "SELECT checksum(l_orderkey) AS a, checksum(l_comment) AS b, \
                    checksum(l_extendedprice) AS c, checksum(l_shipdate) AS d FROM tpch.lineitem";
    assert!(is_distributed(&cluster, checksum).await?, "{checksum}");
    let alone = sqe_tests::cluster::coordinator_alone(SessionSettings::default())?;
    let prepared = cluster.engine().prepare(&alone, checksum).await?;
    assert!(prepared.plan().is_some_and(|p| !p.is::<DistributedExec>()));
    assert_eq!(
        render(&cluster.query(checksum).await?),
        render(&rows_of(&cluster, prepared, "checksum").await?)
    );
    cluster.stop().await;
    Ok(())
}

/// Joins whose build side must be seen whole (LEFT and FULL joins, EXISTS and NOT IN as left
/// semi and anti joins, a non-equi LEFT JOIN) answer distributed what one process answers: the
/// library broadcast only the build sides of inner and right joins and split the others' over
/// tasks, so each task joined part of the build side (a LEFT JOIN lost half its matches).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn joins_that_need_their_whole_build_side_answer_as_one_process() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let (baseline, session) = tpch_baseline(&cluster).await?;
    for sql in [
        "SELECT count(*) AS n, count(o_orderkey) AS matched FROM customer LEFT JOIN orders ON c_custkey = o_custkey",
        "SELECT count(*) AS n FROM customer FULL JOIN orders ON c_custkey = o_custkey",
        "SELECT count(*) AS n FROM customer WHERE c_custkey NOT IN (SELECT o_custkey FROM orders)",
        "SELECT count(*) AS n FROM customer WHERE EXISTS (SELECT 1 FROM orders WHERE o_custkey = c_custkey)",
        "SELECT count(*) AS n FROM nation LEFT JOIN supplier ON s_nationkey < n_nationkey",
    ] {
        // With the build side in one task the whole plan is one task, which the coordinator
        // runs itself; what matters is the answer.
        let prepared = cluster.engine().prepare(&session, sql).await?;
        let distributed = rows_of(&cluster, prepared, sql).await?;
        let expected = baseline.sql(sql).await?.collect().await?;
        assert_eq!(render(&distributed), render(&expected), "{sql}");
    }
    cluster.stop().await;
    Ok(())
}

/// The 22 TPC-H queries through the Trino endpoint, distributed and on the coordinator alone,
/// answer what DuckDB answers over the same files (benches/tpch.py, checking only): another
/// engine as referee, where the test above compares SQE with itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tpch_answers_are_duckdbs() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let address = cluster.trino_addr()?.to_string();
    let warehouse = cluster.data_dir().join("warehouse").display().to_string();
    let args = [
        "--trino",
        &address,
        "--warehouse",
        &warehouse,
        "--runs",
        "0",
        "--check",
    ];
    let report = sqe_tests::python::run_bench_script("tpch.py", &args.map(String::from)).await?;
    assert!(report.contains("every answer is DuckDB's"), "{report}");
    cluster.stop().await;
    Ok(())
}

/// The 99 TPC-DS queries through Flight SQL answer what DuckDB answers over the same rows
/// (benches/tpcds.py at a tiny scale, checking only): the tables are DuckDB's `dsdgen`'s,
/// ingested into the cluster over ADBC. Queries SQE cannot answer yet are the script's known
/// failures, each with its reason; the check fails on any other, and on a known one that
/// passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tpcds_answers_are_duckdbs() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let uri = cluster.flight_url().replacen("http://", "grpc://", 1);
    let args = [
        "--flight",
        &uri,
        "--scale-factor",
        "0.01",
        "--runs",
        "0",
        "--check",
    ];
    let report = sqe_tests::python::run_bench_script("tpcds.py", &args.map(String::from)).await?;
    assert!(report.contains("OK: "), "{report}");
    cluster.stop().await;
    Ok(())
}

/// Single-process DataFusion over the cluster's TPC-H files, and a session in that schema.
async fn tpch_baseline(
    cluster: &TestCluster,
) -> Result<
    (datafusion::prelude::SessionContext, SessionSettings),
    Box<dyn std::error::Error + Send + Sync>,
> {
    let baseline = parquet_session(
        &cluster.data_dir().join("warehouse"),
        "tpch",
        &Table::ALL.map(Table::name),
    )
    .await?;
    let session = SessionSettings {
        schema: Some("tpch".into()),
        ..Default::default()
    };
    Ok((baseline, session))
}

/// The rows `prepared` (named `what` in errors) answers.
/// The rows of `sql` planned with `session`, which must distribute it, and with `alone`, which
/// must keep it on the coordinator.
async fn distributed_and_alone(
    cluster: &TestCluster,
    session: &SessionSettings,
    alone: &SessionSettings,
    sql: &str,
    what: &str,
) -> Result<
    (
        Vec<datafusion::arrow::array::RecordBatch>,
        Vec<datafusion::arrow::array::RecordBatch>,
    ),
    Box<dyn std::error::Error + Send + Sync>,
> {
    let prepared = cluster.engine().prepare(session, sql).await?;
    let plan = prepared.plan().ok_or("a query has a plan")?;
    assert!(
        plan.is::<DistributedExec>(),
        "{what} was not distributed:\n{}",
        sqe_engine::engine::render_plan(plan, false)
    );
    let distributed = rows_of(cluster, prepared, what).await?;
    let prepared = cluster.engine().prepare(alone, sql).await?;
    assert!(
        prepared.plan().is_some_and(|p| !p.is::<DistributedExec>()),
        "{what} was distributed on the coordinator alone"
    );
    let expected = rows_of(cluster, prepared, what).await?;
    Ok((distributed, expected))
}

async fn rows_of(
    cluster: &TestCluster,
    prepared: sqe_engine::engine::Prepared,
    what: &str,
) -> Result<Vec<datafusion::arrow::array::RecordBatch>, Box<dyn std::error::Error + Send + Sync>> {
    match cluster.engine().run(prepared).await? {
        sqe_engine::engine::Outcome::Rows(stream) => {
            Ok(futures::TryStreamExt::try_collect::<Vec<_>>(stream).await?)
        }
        _ => Err(format!("{what} returned no rows").into()),
    }
}

/// Lambda expressions over a table the workers scan: the statement runs where its plan can
/// go (DataFusion's plan codec cannot carry lambdas to the workers yet) and answers what the
/// same question without lambdas answers, also in an UPDATE's assignments.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lambdas_answer_over_distributed_tables() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    for (with_lambdas, without) in [
        (
            "SELECT sum(cardinality(filter(ARRAY[l_orderkey, l_partkey], v -> v > 100))) AS n \
             FROM tpch.lineitem",
            "SELECT sum(CASE WHEN l_orderkey > 100 THEN 1 ELSE 0 END \
             + CASE WHEN l_partkey > 100 THEN 1 ELSE 0 END) AS n FROM tpch.lineitem",
        ),
        (
            "SELECT count(*) AS n FROM tpch.lineitem \
             WHERE all_match(ARRAY[l_orderkey, l_partkey], v -> v < 100)",
            "SELECT count(*) AS n FROM tpch.lineitem WHERE l_orderkey < 100 AND l_partkey < 100",
        ),
    ] {
        assert_eq!(
            render(&cluster.query(with_lambdas).await?),
            render(&cluster.query(without).await?),
            "{with_lambdas}"
        );
    }
    cluster.sql("CREATE SCHEMA lam").await?;
    cluster
        .sql("CREATE TABLE lam.t AS SELECT l_orderkey AS k, ARRAY[l_partkey, l_suppkey] AS a FROM tpch.lineitem")
        .await?;
    // A view's lambdas run where the view's query can go.
    cluster
        .sql("CREATE VIEW lam.v AS SELECT transform(a, x -> x + 1) AS b FROM lam.t")
        .await?;
    assert_eq!(
        render(&cluster.query("SELECT sum(b[1]) AS s FROM lam.v").await?),
        render(
            &cluster
                .query("SELECT sum(a[1] + 1) AS s FROM lam.t")
                .await?
        )
    );
    cluster
        .sql("UPDATE lam.t SET a = transform(a, x -> x * 2) WHERE k % 2 = 0")
        .await?;
    assert_eq!(
        render(&cluster.query("SELECT sum(a[1] + a[2]) AS s FROM lam.t").await?),
        render(
            &cluster
                .query(
                    "SELECT sum((l_partkey + l_suppkey) * CASE WHEN l_orderkey % 2 = 0 THEN 2 ELSE 1 END) AS s \
                     FROM tpch.lineitem"
                )
                .await?
        )
    );
    cluster.stop().await;
    Ok(())
}

/// Trino's map aggregates computed in parts on the workers and merged: `histogram` counts
/// what a GROUP BY counts, `map_agg` keeps one entry per key.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn map_aggregates_merge_across_workers() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let before = cluster.tasks_per_worker();
    let histogram = render(
        &cluster
            .query(
                "SELECT h['A'] AS a, h['N'] AS n, h['R'] AS r \
                 FROM (SELECT histogram(l_returnflag) AS h FROM tpch.lineitem)",
            )
            .await?,
    );
    let counted = render(
        &cluster
            .query(
                "SELECT count_if(l_returnflag = 'A') AS a, count_if(l_returnflag = 'N') AS n, \
                 count_if(l_returnflag = 'R') AS r FROM tpch.lineitem",
            )
            .await?,
    );
    assert_eq!(histogram, counted);
    let keys = render(
        &cluster
            .query("SELECT cardinality(map_agg(l_orderkey, l_linenumber)) AS n FROM tpch.lineitem")
            .await?,
    );
    let distinct = render(
        &cluster
            .query("SELECT count(DISTINCT l_orderkey) AS n FROM tpch.lineitem")
            .await?,
    );
    assert_eq!(keys, distinct);
    let after = cluster.tasks_per_worker();
    assert!(
        before.iter().zip(&after).all(|(b, a)| a > b),
        "both workers ran tasks: {before:?} -> {after:?}"
    );
    cluster.stop().await;
    Ok(())
}

/// `json_table` beside a distributed table: its rows per input row, joined laterally, computed
/// in the workers' tasks (which must know `sqe_json_table` and the row type its definition
/// gives), as the same values read without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn json_table_answers_over_distributed_tables() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    cluster.sql("CREATE SCHEMA docs").await?;
    cluster
        .sql(
            "CREATE TABLE docs.orders AS SELECT o_orderkey AS k, \
             json_object('key' : o_orderkey, 'items' : json_array(o_custkey, o_shippriority, NULL), \
             'note' : CASE WHEN o_orderkey % 3 = 0 THEN o_comment END) AS doc FROM tpch.orders",
        )
        .await?;
    let sql = "SELECT sum(x) AS s, count(*) AS n, count(o) AS numbered, count(note) AS notes \
               FROM docs.orders AS d, json_table(d.doc, 'lax $' COLUMNS (key bigint PATH 'lax $.key', \
               note varchar PATH 'lax $.note', NESTED PATH 'lax $.items[*]' COLUMNS (o FOR ORDINALITY, \
               x bigint PATH 'lax $'))) AS jt WHERE jt.key = d.k";
    let rows = rows_on_every_worker(&cluster, sql).await?;
    let expected = cluster
        .query(
            "SELECT sum(o_custkey + o_shippriority) AS s, 2 * count(*) AS n, 2 * count(*) AS numbered, \
             2 * count(CASE WHEN o_orderkey % 3 = 0 THEN o_comment END) AS notes FROM tpch.orders",
        )
        .await?;
    assert_eq!(render(&rows), render(&expected));
    // LEFT JOIN keeps the rows json_table has none for; a CROSS JOIN drops them.
    for (join, kept) in [("LEFT JOIN", "count(*)"), ("CROSS JOIN", "0 * count(*)")] {
        let on = if join == "LEFT JOIN" { " ON TRUE" } else { "" };
        let rows = cluster
            .query(&format!(
                "SELECT count(*) AS n FROM docs.orders AS d {join} json_table(d.doc, 'lax $.nothing[*]' \
                 COLUMNS (x bigint PATH 'lax $')) AS jt{on}"
            ))
            .await?;
        let expected = cluster
            .query(&format!("SELECT {kept} AS n FROM tpch.orders"))
            .await?;
        assert_eq!(render(&rows), render(&expected), "{join}");
    }
    cluster.stop().await;
    Ok(())
}
