//! Trino's `tpch` catalog: generated on the workers, each task its own share of the table.
//! (Its names, types and answers through the Trino client: `tests/python/test_trino_tpch.py`;
//! on separate processes: `processes::example_cluster_runs_as_separate_processes`.)

use datafusion_distributed::DistributedExec;
use sqe_engine::engine::SessionSettings;
use sqe_tests::cluster::TestCluster;
use sqe_tests::render;

use crate::TestResult;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_worker_generates_its_own_share_of_a_tpch_table() -> TestResult {
    // No Iceberg sample data: the tpch catalog needs none.
    let cluster = TestCluster::start(2, 0.0).await?;
    // 450 000 orders at scale factor 0.3, in four parts of the generator's.
    let sql = "SELECT count(*), count(DISTINCT orderkey), max(orderkey), count(DISTINCT custkey) > 1000 \
               FROM tpch.\"sf0.3\".orders";
    let prepared = cluster
        .engine()
        .prepare(&SessionSettings::default(), sql)
        .await?;
    let plan = prepared.plan().ok_or("a query has a plan")?;
    assert!(
        plan.is::<DistributedExec>(),
        "the scan was not distributed:\n{}",
        sqe_engine::engine::render_plan(plan, false)
    );
    let before = cluster.tasks_per_worker();
    let rows = render(&cluster.query(sql).await?);
    // Every order once: TPC-H's order keys are sparse (8 of every 32), so the 450 000th is
    // 450 000 / 8 * 32.
    assert!(
        rows.contains("| 450000 ") && rows.contains("| 1800000 "),
        "{rows}"
    );
    assert_eq!(rows.matches("| 450000 ").count(), 2, "{rows}");
    let after = cluster.tasks_per_worker();
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert!(
            a > b,
            "worker {} generated no share (tasks {b} -> {a})",
            i + 1
        );
    }
    let explained = render(&cluster.query(&format!("EXPLAIN ANALYZE {sql}")).await?);
    // Two tasks, each generating half of the four parts.
    for task in ["t0", "t1"] {
        let share = format!("{task}: TpchScanExec: table=orders, scale_factor=0.3, parts=2 of 4");
        assert!(explained.contains(&share), "no {share}:\n{explained}");
    }
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tpch_join_on_the_workers_equals_the_coordinator_alone() -> TestResult {
    let cluster = TestCluster::start(2, 0.0).await?;
    let sql = "SELECT n.name, count(*) AS orders, sum(round(o.totalprice * 100)) AS cents \
               FROM tpch.\"sf0.3\".orders o JOIN tpch.\"sf0.3\".customer c ON o.custkey = c.custkey \
               JOIN tpch.\"sf0.3\".nation n ON c.nationkey = n.nationkey \
               GROUP BY n.name ORDER BY n.name";
    let distributed = render(&cluster.query(sql).await?);
    let local = sqe_tests::cluster::coordinator_alone(SessionSettings::default())?;
    let alone = match cluster.engine().execute(&local, sql).await? {
        sqe_engine::engine::Outcome::Rows(stream) => {
            render(&futures::TryStreamExt::try_collect::<Vec<_>>(stream).await?)
        }
        _ => return Err("a query returns rows".into()),
    };
    assert_eq!(distributed, alone);
    assert_eq!(distributed.matches("\n| ").count(), 25 + 1, "{distributed}");
    cluster.stop().await;
    Ok(())
}
