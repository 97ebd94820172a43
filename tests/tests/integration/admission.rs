//! Admission control end to end: statements beyond `max_running_queries` wait in a QUEUED
//! state the Trino protocol and Flight SQL's PollFlightInfo report, beyond `max_queued_queries`
//! they are refused with QUERY_QUEUE_FULL / RESOURCE_EXHAUSTED, and the history and `/metrics`
//! show the queue.

use std::time::{Duration, Instant};

use arrow_flight::PollInfo;
use arrow_flight::sql::Any;
use prost::Message;
use serde_json::Value;
use sqe_engine::history::QueryState;
use sqe_engine::queries::AdmissionLimits;
use sqe_gateway::local::LocalOptions;
use sqe_tests::cluster::TestCluster;
use sqe_tests::flight::statement_descriptor;

use crate::TestResult;

/// Holds its slot until cancelled: more rows than its client ever reads, produced only as far
/// as the unread pages allow (no CPU spent waiting). A count over a range would not do: it is
/// answered from the range's statistics at once, and a finished query gives its slot back.
const LONG: &str = "SELECT value FROM range(10000000000)";

async fn cluster(
    limits: AdmissionLimits,
) -> Result<TestCluster, Box<dyn std::error::Error + Send + Sync>> {
    Ok(TestCluster::start_with(LocalOptions {
        workers: 1,
        scale_factor: 0.0,
        admission: Some(limits),
        metrics_port: Some(sqe_tests::process::free_port()?),
        ..TestCluster::options()
    })
    .await?)
}

/// Posts `sql` as `user`: the POST's answer.
async fn post(
    http: &reqwest::Client,
    cluster: &TestCluster,
    user: &str,
    sql: &str,
) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    post_with_session(http, cluster, user, "", sql).await
}

/// Posts `sql` as `user` with `session` as its `X-Trino-Session` (none when empty).
async fn post_with_session(
    http: &reqwest::Client,
    cluster: &TestCluster,
    user: &str,
    session: &str,
    sql: &str,
) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    let request = http
        .post(format!("http://{}/v1/statement", cluster.trino_addr()?))
        .header("X-Trino-User", user);
    let request = if session.is_empty() {
        request
    } else {
        request.header("X-Trino-Session", session)
    };
    Ok(request.body(sql.to_string()).send().await?.json().await?)
}

async fn next(
    http: &reqwest::Client,
    page: &Value,
    user: &str,
) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    let uri = page["nextUri"]
        .as_str()
        .ok_or_else(|| format!("no nextUri: {page}"))?;
    Ok(http
        .get(uri)
        .header("X-Trino-User", user)
        .send()
        .await?
        .json()
        .await?)
}

/// Follows `page` to its end: its rows, or its error JSON.
async fn finish(
    http: &reqwest::Client,
    mut page: Value,
    user: &str,
) -> Result<Result<Vec<Value>, Value>, Box<dyn std::error::Error + Send + Sync>> {
    let mut rows = Vec::new();
    loop {
        if let Some(error) = page.get("error") {
            return Ok(Err(error.clone()));
        }
        if let Some(data) = page["data"].as_array() {
            rows.extend(data.iter().cloned());
        }
        if page.get("nextUri").is_none() {
            return Ok(Ok(rows));
        }
        page = next(http, &page, user).await?;
    }
}

/// The state of query `id` in the coordinator's history.
fn state_of(cluster: &TestCluster, id: &str) -> Option<QueryState> {
    cluster.engine().history().get(id).map(|r| r.state())
}

async fn wait_for_state(cluster: &TestCluster, id: &str, state: QueryState) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(10);
    while state_of(cluster, id) != Some(state) {
        if Instant::now() > deadline {
            return Err(format!("query {id} is {:?}, not {state:?}", state_of(cluster, id)).into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

async fn metric(
    http: &reqwest::Client,
    cluster: &TestCluster,
    name: &str,
) -> Result<f64, Box<dyn std::error::Error + Send + Sync>> {
    let addr = cluster
        .cluster
        .coordinator
        .metrics_addr
        .ok_or("no metrics port")?;
    let text = sqe_tests::metrics::scrape(http, addr).await?;
    sqe_tests::metrics::sample(&text, name).ok_or_else(|| format!("no {name} in\n{text}").into())
}

/// A cluster of one slot and `max_queued` queue places, its slot held by a statement that runs
/// until cancelled: the cluster, a client, the holder's first page and its id.
async fn one_slot_held(
    max_queued: usize,
) -> Result<(TestCluster, reqwest::Client, Value, String), Box<dyn std::error::Error + Send + Sync>>
{
    let cluster = cluster(AdmissionLimits {
        max_running: 1,
        max_queued,
        max_running_per_user: None,
    })
    .await?;
    let http = reqwest::Client::new();
    let holder = post(&http, &cluster, "test", LONG).await?;
    let holder_id = holder["id"].as_str().ok_or("no id")?.to_string();
    wait_for_state(&cluster, &holder_id, QueryState::Running).await?;
    Ok((cluster, http, holder, holder_id))
}

/// `query_priority`: a waiting statement of higher priority takes the freed slot before one
/// that arrived earlier.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_higher_query_priority_is_admitted_first() -> TestResult {
    let (cluster, http, holder, _) = one_slot_held(2).await?;
    let low = post(&http, &cluster, "test", "SELECT 1").await?;
    let low_id = low["id"].as_str().ok_or("no id")?.to_string();
    // In the queue before the other arrives.
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric(&http, &cluster, "sqe_queries_queued").await? < 1.0 {
        if Instant::now() > deadline {
            return Err("the first waiter never queued".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let high = post_with_session(&http, &cluster, "test", "query_priority=5", LONG).await?;
    let high_id = high["id"].as_str().ok_or("no id")?.to_string();
    assert_eq!(state_of(&cluster, &low_id), Some(QueryState::Queued));
    assert_eq!(state_of(&cluster, &high_id), Some(QueryState::Queued));

    http.delete(holder["nextUri"].as_str().ok_or("no nextUri")?)
        .header("X-Trino-User", "test")
        .send()
        .await?;
    wait_for_state(&cluster, &high_id, QueryState::Running).await?;
    assert_eq!(
        state_of(&cluster, &low_id),
        Some(QueryState::Queued),
        "the earlier, lower-priority statement still waits"
    );
    http.delete(high["nextUri"].as_str().ok_or("no nextUri")?)
        .header("X-Trino-User", "test")
        .send()
        .await?;
    let rows = finish(&http, low, "test")
        .await?
        .map_err(|e| format!("queued query failed: {e}"))?;
    assert_eq!(rows, vec![serde_json::json!([1])]);
    cluster.stop().await;
    Ok(())
}

/// `query_max_run_time` counts the time a statement waits for its slot, as Trino's does: a
/// statement queued past it fails with EXCEEDED_TIME_LIMIT while the slot is still taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_queued_statement_times_out_in_the_queue() -> TestResult {
    let (cluster, http, holder, holder_id) = one_slot_held(1).await?;
    let started = Instant::now();
    let waiting =
        post_with_session(&http, &cluster, "test", "query_max_run_time=1s", "SELECT 1").await?;
    let error = tokio::time::timeout(Duration::from_secs(20), finish(&http, waiting, "test"))
        .await
        .map_err(|_| "the queued statement outwaited its limit")??
        .err()
        .ok_or("ran although the slot was taken")?;
    assert_eq!(error["errorName"], "EXCEEDED_TIME_LIMIT", "{error}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(
        state_of(&cluster, &holder_id),
        Some(QueryState::Running),
        "the slot's holder is untouched"
    );
    http.delete(holder["nextUri"].as_str().ok_or("no nextUri")?)
        .header("X-Trino-User", "test")
        .send()
        .await?;
    cluster.stop().await;
    Ok(())
}

/// One slot, one queue place: the second statement waits QUEUED (as Trino reports it), the
/// third is refused with Trino's QUERY_QUEUE_FULL on the Trino port and RESOURCE_EXHAUSTED on
/// Flight SQL, and the waiting one runs once the slot frees, its queued time recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn statements_beyond_the_slots_queue_and_beyond_the_queue_are_refused() -> TestResult {
    let cluster = cluster(AdmissionLimits {
        max_running: 1,
        max_queued: 1,
        max_running_per_user: None,
    })
    .await?;
    let http = reqwest::Client::new();

    let long = post(&http, &cluster, "test", LONG).await?;
    let long_id = long["id"].as_str().ok_or("no id")?.to_string();
    wait_for_state(&cluster, &long_id, QueryState::Running).await?;

    let waiting = post(&http, &cluster, "test", "SELECT 42").await?;
    let waiting_id = waiting["id"].as_str().ok_or("no id")?.to_string();
    assert_eq!(waiting["stats"]["state"], "QUEUED");
    let page = next(&http, &waiting, "test").await?;
    assert_eq!(page["stats"]["state"], "QUEUED", "{page}");
    assert_eq!(page["stats"]["queued"], true, "{page}");
    assert!(
        page["nextUri"]
            .as_str()
            .is_some_and(|u| u.contains("/v1/statement/queued/")),
        "{page}"
    );
    assert!(
        page["stats"]["queuedTimeMillis"]
            .as_u64()
            .is_some_and(|ms| ms > 0),
        "{page}"
    );
    assert_eq!(state_of(&cluster, &waiting_id), Some(QueryState::Queued));
    let info: Value = http
        .get(format!(
            "http://{}/v1/query/{waiting_id}",
            cluster.trino_addr()?
        ))
        .header("X-Trino-User", "test")
        .send()
        .await?
        .json()
        .await?;
    assert_eq!(info["state"], "QUEUED", "{info}");
    assert_eq!(metric(&http, &cluster, "sqe_queries_queued").await?, 1.0);
    assert_eq!(metric(&http, &cluster, "sqe_queries_running").await?, 1.0);

    let refused = post(&http, &cluster, "test", "SELECT 1").await?;
    let error = finish(&http, refused, "test")
        .await?
        .err()
        .ok_or("ran beyond the queue")?;
    assert_eq!(error["errorName"], "QUERY_QUEUE_FULL", "{error}");
    assert_eq!(error["errorCode"], 131074, "{error}");
    assert_eq!(error["errorType"], "INSUFFICIENT_RESOURCES", "{error}");

    let mut flight = sqe_tests::flight::connect(&cluster.flight_url()).await?;
    let status = sqe_tests::flight::query(&mut flight, "SELECT 1")
        .await
        .err()
        .ok_or("ran beyond the queue")?;
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status}");
    assert!(
        status.message().contains("Too many queued queries"),
        "{status}"
    );

    // The slot frees: the waiting statement runs to its answer.
    tokio::time::sleep(Duration::from_millis(300)).await;
    http.delete(long["nextUri"].as_str().ok_or("no nextUri")?)
        .header("X-Trino-User", "test")
        .send()
        .await?;
    let rows = finish(&http, page, "test")
        .await?
        .map_err(|e| format!("queued query failed: {e}"))?;
    assert_eq!(rows, vec![serde_json::json!([42])]);

    let snapshot = cluster
        .engine()
        .history()
        .get(&waiting_id)
        .ok_or("no record")?
        .snapshot();
    assert_eq!(snapshot.state, QueryState::Finished);
    assert!(
        snapshot.queued_ms >= 300,
        "queued {} ms",
        snapshot.queued_ms
    );
    assert!(snapshot.planning_ms.is_some());
    // system.runtime.queries shows the same.
    let answer = sqe_tests::trino::statement(
        &http,
        cluster.trino_addr()?,
        &format!("SELECT state, queued_time_ms FROM system.runtime.queries WHERE query_id = '{waiting_id}'"),
        None,
    )
    .await?;
    assert_eq!(answer.rows.len(), 1);
    assert_eq!(answer.rows[0][0], "FINISHED");
    assert!(
        answer.rows[0][1].as_i64().is_some_and(|ms| ms >= 300),
        "{:?}",
        answer.rows
    );
    cluster.stop().await;
    Ok(())
}

/// A user at its own limit waits while another user's statement runs at once; a queued
/// statement whose client leaves gives its place up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_user_at_its_limit_waits_while_others_run() -> TestResult {
    let cluster = cluster(AdmissionLimits {
        max_running: 4,
        max_queued: 4,
        max_running_per_user: Some(1),
    })
    .await?;
    let http = reqwest::Client::new();
    let long = post(&http, &cluster, "ann", LONG).await?;
    wait_for_state(
        &cluster,
        long["id"].as_str().ok_or("no id")?,
        QueryState::Running,
    )
    .await?;

    let waiting = post(&http, &cluster, "ann", "SELECT 1").await?;
    let waiting_page = next(&http, &waiting, "ann").await?;
    assert_eq!(waiting_page["stats"]["state"], "QUEUED", "{waiting_page}");

    let other = post(&http, &cluster, "bob", "SELECT 2").await?;
    let rows = finish(&http, other, "bob")
        .await?
        .map_err(|e| format!("bob's query failed: {e}"))?;
    assert_eq!(rows, vec![serde_json::json!([2])]);
    assert_eq!(
        state_of(&cluster, waiting["id"].as_str().ok_or("no id")?),
        Some(QueryState::Queued),
        "ann's second statement waits for her first"
    );

    // Its client cancels it: it leaves the queue.
    http.delete(waiting_page["nextUri"].as_str().ok_or("no nextUri")?)
        .header("X-Trino-User", "ann")
        .send()
        .await?;
    wait_for_state(
        &cluster,
        waiting["id"].as_str().ok_or("no id")?,
        QueryState::Canceled,
    )
    .await?;
    // Its task leaves the queue as it stops, just after its record says CANCELED.
    let deadline = Instant::now() + Duration::from_secs(5);
    while metric(&http, &cluster, "sqe_queries_queued").await? != 0.0 {
        if Instant::now() > deadline {
            return Err("a cancelled statement still holds its place in the queue".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.stop().await;
    Ok(())
}

/// PollFlightInfo answers at once while the statement is queued, with a descriptor to poll
/// again; once a slot frees, the poll completes with tickets that fetch the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn flight_sql_polls_a_queued_statement_until_it_is_planned() -> TestResult {
    let cluster = cluster(AdmissionLimits {
        max_running: 1,
        max_queued: 4,
        max_running_per_user: None,
    })
    .await?;
    let http = reqwest::Client::new();
    let long = post(&http, &cluster, "test", LONG).await?;
    wait_for_state(
        &cluster,
        long["id"].as_str().ok_or("no id")?,
        QueryState::Running,
    )
    .await?;

    let mut flight = sqe_tests::flight::connect(&cluster.flight_url()).await?;
    let started = Instant::now();
    let first: PollInfo = flight
        .inner_mut()
        .poll_flight_info(statement_descriptor("SELECT 7 AS seven"))
        .await?
        .into_inner();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the poll waited for the slot"
    );
    // An info in every answer (ADBC's incremental execution fails without one), no
    // endpoints before the statement is planned.
    assert!(
        first
            .info
            .as_ref()
            .is_some_and(|info| info.endpoint.is_empty()),
        "{first:?}"
    );
    assert_eq!(first.progress, Some(0.0));
    let again = first
        .flight_descriptor
        .ok_or("a queued statement's poll has no descriptor")?;
    let any = Any::decode(again.cmd.as_ref())?;
    assert!(any.type_url.starts_with("type.sqe.dev/"), "{any:?}");
    let second = flight
        .inner_mut()
        .poll_flight_info(again.clone())
        .await?
        .into_inner();
    assert!(
        second.flight_descriptor.is_some()
            && second
                .info
                .as_ref()
                .is_some_and(|info| info.endpoint.is_empty()),
        "{second:?}"
    );

    http.delete(long["nextUri"].as_str().ok_or("no nextUri")?)
        .header("X-Trino-User", "test")
        .send()
        .await?;
    // Two clients poll the one descriptor at once: one gets the answer, the other is told it
    // is gone (or to poll again); neither call fails otherwise.
    let mut done = None;
    for _ in 0..20 {
        let (mut a, mut b) = (flight.inner().clone(), flight.inner().clone());
        let (first, second) = tokio::join!(
            a.poll_flight_info(again.clone()),
            b.poll_flight_info(again.clone())
        );
        let mut finished = false;
        for poll in [first, second] {
            match poll {
                Ok(poll) if poll.get_ref().flight_descriptor.is_none() => {
                    assert!(done.is_none(), "answered twice");
                    done = Some(poll.into_inner());
                    finished = true;
                }
                Ok(_) => {}
                Err(status) if status.code() == tonic::Code::NotFound => finished = true,
                Err(status) => return Err(format!("a concurrent poll failed: {status}").into()),
            }
        }
        if finished {
            break;
        }
    }
    let done = done.ok_or("the statement never left the queue")?;
    assert_eq!(done.progress, Some(1.0));
    let info = done.info.ok_or("a complete poll has no FlightInfo")?;
    let batches = sqe_tests::flight::fetch(&mut flight, info).await?;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
    assert!(text.contains("seven") && text.contains("| 7 "), "{text}");
    // Answered in full, the poll is gone.
    let status = flight
        .inner_mut()
        .poll_flight_info(again)
        .await
        .err()
        .ok_or("an answered poll was answered again")?;
    assert_eq!(status.code(), tonic::Code::NotFound, "{status}");
    cluster.stop().await;
    Ok(())
}
