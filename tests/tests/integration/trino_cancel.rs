//! Cancelling a Trino query ends its work on every worker, through both of Trino's cancel
//! calls, over real HTTP and real gRPC.

use std::time::Duration;

use datafusion::arrow::array::{Array, Int64Array};
use serde_json::Value;
use sqe_tests::cluster::TestCluster;

use crate::TestResult;

/// About 500 million rows at SF 0.01 (7 line numbers), streamed: it runs for minutes on the
/// workers, far longer than the test takes to cancel it.
const ENDLESS_JOIN: &str = "SELECT a.l_orderkey, b.l_partkey FROM lineitem a \
     JOIN lineitem b ON a.l_linenumber = b.l_linenumber";

/// How long the cluster may take to start the join everywhere, or to end it after a cancel.
const LIVENESS: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
enum Cancel {
    /// `DELETE` on the current `nextUri` (what the Trino clients send).
    NextUri,
    /// `DELETE /v1/query/{queryId}`.
    Query,
}

fn open_task_streams(cluster: &TestCluster) -> Vec<usize> {
    cluster
        .cluster
        .workers
        .iter()
        .map(|w| w.stats.open_task_streams())
        .collect()
}

/// Waits until `done` holds for the workers' open task streams, or fails after [`LIVENESS`].
async fn wait_for_streams(
    cluster: &TestCluster,
    what: &str,
    done: impl Fn(&[usize]) -> bool,
) -> TestResult {
    let deadline = tokio::time::Instant::now() + LIVENESS;
    loop {
        let open = open_task_streams(cluster);
        if done(&open) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("{what}: open task streams per worker are still {open:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn trino_request(builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    builder
        .header("X-Trino-User", "tester")
        .header("X-Trino-Catalog", "iceberg")
        .header("X-Trino-Schema", "tpch")
}

async fn json(
    response: reqwest::Response,
) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    let status = response.status();
    let body = response.text().await?;
    if !status.is_success() {
        return Err(format!("HTTP {status}: {body}").into());
    }
    Ok(serde_json::from_str(&body)?)
}

fn field<'a>(results: &'a Value, name: &str) -> Result<&'a str, String> {
    results[name]
        .as_str()
        .ok_or_else(|| format!("no {name} in {results}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_stops_the_query_on_every_worker() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let addr = cluster.trino_addr()?;
    let base = format!("http://{addr}");
    let http = reqwest::Client::new();
    assert_eq!(
        open_task_streams(&cluster),
        [0, 0],
        "an idle cluster runs nothing"
    );

    for how in [Cancel::NextUri, Cancel::Query] {
        let posted = json(
            trino_request(http.post(format!("{base}/v1/statement")))
                .body(ENDLESS_JOIN)
                .send()
                .await?,
        )
        .await?;
        let id = field(&posted, "id")?.to_string();
        // One page in: the plan is running and streaming.
        let page = json(
            trino_request(http.get(field(&posted, "nextUri")?))
                .send()
                .await?,
        )
        .await?;
        let next_uri = field(&page, "nextUri")?.to_string();
        wait_for_streams(&cluster, "the join never ran on every worker", |open| {
            open.iter().all(|&n| n > 0)
        })
        .await?;

        let target = match how {
            Cancel::NextUri => next_uri.clone(),
            Cancel::Query => format!("{base}/v1/query/{id}"),
        };
        let deleted = trino_request(http.delete(target)).send().await?;
        assert_eq!(deleted.status(), 204, "{how:?}: cancel answers 204");

        wait_for_streams(
            &cluster,
            &format!("{how:?}: the cancelled query kept running"),
            |open| open.iter().all(|&n| n == 0),
        )
        .await?;

        // A client coming back for the next page learns that the query was cancelled.
        let after = json(trino_request(http.get(&next_uri)).send().await?).await?;
        assert_eq!(after["stats"]["state"], "FAILED", "{how:?}: {after}");
        assert_eq!(
            after["error"]["errorName"], "USER_CANCELED",
            "{how:?}: {after}"
        );
    }

    // The cluster is whole afterwards: a distributed query over both workers succeeds.
    let before = cluster.tasks_per_worker();
    let batches = cluster.query("SELECT count(*) FROM tpch.lineitem").await?;
    let count = batches
        .first()
        .and_then(|b| b.column(0).as_any().downcast_ref::<Int64Array>())
        .filter(|c| !c.is_empty())
        .map(|c| c.value(0))
        .ok_or("count(*) returned no value")?;
    assert!(
        count > 50_000,
        "lineitem at SF 0.01 has about 60k rows, got {count}"
    );
    let after = cluster.tasks_per_worker();
    assert!(
        before.iter().zip(&after).all(|(b, a)| a > b),
        "every worker took part: tasks {before:?} -> {after:?}"
    );
    cluster.stop().await;
    Ok(())
}
