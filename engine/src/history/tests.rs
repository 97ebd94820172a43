use datafusion::arrow::array::Int32Array;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;

use super::*;

fn start(user: &str, sql: &str) -> QueryStart {
    QueryStart {
        traceparent: None,
        endpoint: "test",
        user: user.into(),
        sql: sql.into(),
        ..QueryStart::default()
    }
}

fn rows(n: i32, fail: bool) -> SendableRecordBatchStream {
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, false)]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(Int32Array::from((0..n).collect::<Vec<_>>()))],
    );
    let mut items = vec![batch.map_err(DataFusionError::from)];
    if fail {
        items.push(Err(DataFusionError::ResourcesExhausted(
            "out of memory".into(),
        )));
    }
    Box::pin(RecordBatchStreamAdapter::new(
        schema,
        futures::stream::iter(items),
    ))
}

#[tokio::test]
async fn a_query_goes_from_queued_to_finished_with_its_rows() -> DfResult<()> {
    let history = QueryHistory::new(HistorySettings::default());
    let tracker = history.begin(start("ann", "SELECT a"));
    let id = tracker.id().to_string();
    assert_eq!(history.records()[0].snapshot().state, QueryState::Queued);
    tracker.started(None, None, None);
    let mut stream = tracker.observe(rows(3, false));
    assert_eq!(history.records()[0].snapshot().state, QueryState::Running);
    while let Some(batch) = stream.next().await {
        batch?;
    }
    let q = history
        .get(&id)
        .map(|r| r.snapshot())
        .ok_or_else(|| DataFusionError::Internal("gone".into()))?;
    assert_eq!(
        (q.state, q.output_rows, q.start.user.as_str()),
        (QueryState::Finished, 3, "ann")
    );
    assert!(q.ended.is_some() && q.execution_ms.is_some());
    Ok(())
}

#[tokio::test]
async fn stream_errors_fail_the_query_and_reach_the_client_classified() {
    let history = QueryHistory::new(HistorySettings::default());
    let tracker = history.begin(start("ann", "SELECT a"));
    tracker.started(None, None, None);
    let mut stream = tracker.observe(rows(1, true));
    assert!(matches!(stream.next().await, Some(Ok(_))));
    let error = match stream.next().await {
        Some(Err(e)) => Error::from(e),
        other => panic!("expected the error, got {other:?}"),
    };
    assert!(matches!(error, Error::ResourcesExhausted(_)), "{error:?}");
    let q = history.records()[0].snapshot();
    assert_eq!(q.state, QueryState::Failed);
    assert_eq!(q.error_code, Some("EXCEEDED_GLOBAL_MEMORY_LIMIT"));
    assert!(q.error_message.is_some_and(|m| m.contains("out of memory")));
}

#[tokio::test]
async fn a_dropped_stream_is_a_cancelled_query() {
    let history = QueryHistory::new(HistorySettings::default());
    let tracker = history.begin(start("ann", "SELECT a"));
    tracker.started(None, None, None);
    drop(tracker.observe(rows(1, false)));
    assert_eq!(history.records()[0].snapshot().state, QueryState::Canceled);
}

#[test]
fn only_the_owner_kills_a_running_query() {
    let history = QueryHistory::new(HistorySettings::default());
    let tracker = history.begin(start("ann", "SELECT a"));
    let id = tracker.id().to_string();
    let (ann, bob) = (Viewer::user("ann"), Viewer::user("bob"));
    assert_eq!(history.kill("nope", &ann, None), Err(KillError::NotFound));
    assert_eq!(history.kill(&id, &bob, None), Err(KillError::NotOwner));
    assert!(!tracker.record().control().is_cancelled());
    assert_eq!(history.kill(&id, &ann, Some("too slow")), Ok(()));
    let control = tracker.record().control();
    assert!(control.is_cancelled());
    assert_eq!(
        control.error().to_string(),
        "Query killed. Message: too slow"
    );
    let q = history.records()[0].snapshot();
    assert_eq!(
        (q.state, q.error_code),
        (QueryState::Canceled, Some("ADMINISTRATIVELY_KILLED"))
    );
    assert_eq!(
        history.kill(&id, &ann, None),
        Err(KillError::AlreadyEnded(QueryState::Canceled))
    );
    // Ending later changes nothing.
    tracker.finished(Some(1));
    assert_eq!(history.records()[0].snapshot().state, QueryState::Canceled);
}

#[test]
fn an_administrator_sees_and_kills_every_query() {
    let history = QueryHistory::new(HistorySettings::default());
    let tracker = history.begin(start("ann", "SELECT a"));
    let admin = Viewer {
        user: "root".into(),
        admin: true,
    };
    assert!(admin.sees(tracker.record()));
    assert!(!Viewer::user("root").sees(tracker.record()));
    assert_eq!(history.kill(tracker.id(), &admin, None), Ok(()));
    assert!(tracker.record().control().is_cancelled());
}

#[tokio::test]
async fn a_cancel_drops_the_plan_at_once_and_ends_the_stream_with_its_reason() {
    let history = QueryHistory::new(HistorySettings::default());
    let tracker = history.begin(start("ann", "SELECT a"));
    tracker.started(None, None, None);
    let record = Arc::clone(tracker.record());
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, false)]));
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let guard = DropFlag(Arc::clone(&dropped));
    // A plan that never produces a row, and says when it is dropped.
    let never = futures::stream::pending::<DfResult<RecordBatch>>().map(move |b| {
        let _ = &guard;
        b
    });
    let mut stream = tracker.observe(Box::pin(RecordBatchStreamAdapter::new(schema, never)));
    let waiting = tokio::spawn(async move { stream.next().await.map(|r| r.map_err(Error::from)) });
    tokio::task::yield_now().await;
    assert!(record.cancel(CancelReason::TimeLimit {
        limit: Duration::from_secs(3)
    }));
    assert!(
        dropped.load(std::sync::atomic::Ordering::SeqCst),
        "the plan was dropped at once"
    );
    let ended = waiting.await.ok().flatten();
    assert!(
        matches!(ended, Some(Err(Error::TimeLimit { .. }))),
        "{ended:?}"
    );
    let q = history.records()[0].snapshot();
    assert_eq!(
        (q.state, q.error_code),
        (QueryState::Failed, Some("EXCEEDED_TIME_LIMIT"))
    );
}

struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn finished_queries_are_bounded_and_running_ones_kept() {
    let history = QueryHistory::new(HistorySettings {
        max_entries: 2,
        ttl: Duration::from_secs(600),
    });
    let running = history.begin(start("ann", "SELECT running"));
    for i in 0..4 {
        history
            .begin(start("ann", &format!("SELECT {i}")))
            .finished(Some(1));
    }
    let kept: Vec<String> = history
        .records()
        .iter()
        .map(|r| r.start.sql.clone())
        .collect();
    assert_eq!(kept, ["SELECT 3", "SELECT 2", "SELECT running"]);
    drop(running);

    let expiring = QueryHistory::new(HistorySettings {
        max_entries: 10,
        ttl: Duration::ZERO,
    });
    expiring.begin(start("ann", "SELECT 1")).finished(None);
    assert!(
        expiring.records().is_empty(),
        "past its TTL a finished query is gone"
    );
}

#[test]
fn ids_have_trinos_shape() {
    let history = QueryHistory::new(HistorySettings::default());
    let id = history.next_id();
    let parts: Vec<&str> = id.split('_').collect();
    assert_eq!(parts.len(), 4, "{id}");
    assert_eq!(
        (
            parts[0].len(),
            parts[1].len(),
            parts[2].len(),
            parts[3].len()
        ),
        (8, 6, 5, 5)
    );
    assert_ne!(history.next_id(), history.next_id());
}

#[test]
fn ids_of_an_earlier_run_are_told_apart() {
    let history = QueryHistory::new(HistorySettings::default());
    let ours = history.next_id();
    assert!(!history.from_an_earlier_run(&ours));
    let earlier = QueryHistory::new(HistorySettings::default()).next_id();
    assert!(history.from_an_earlier_run(&earlier), "{earlier}");
    for not_an_id in ["x", "abc_defgh", "20261205_120000_00001_ABCDE", "q_abcde"] {
        assert!(!history.from_an_earlier_run(not_an_id), "{not_an_id}");
    }
}

#[test]
fn a_query_whose_task_panics_is_failed_not_left_running() {
    let history = QueryHistory::new(HistorySettings::default());
    let tracker = history.begin(start("ann", "SELECT a"));
    let record = Arc::clone(tracker.record());
    let unwound = std::thread::spawn(move || {
        let _tracker = tracker;
        std::panic::resume_unwind(Box::new("a bug in the query's task"));
    })
    .join();
    assert!(unwound.is_err());
    let q = record.snapshot();
    assert_eq!(
        (q.state, q.error_code),
        (QueryState::Failed, Some("GENERIC_INTERNAL_ERROR"))
    );
}

/// A parked statement admitted again keeps its first admission: its queued time is the wait
/// before planning, and it does not go back to QUEUED or count PLANNING twice.
#[test]
fn only_the_first_admission_counts() {
    let history = QueryHistory::new(HistorySettings::default());
    let tracker = history.begin(start("ann", "SELECT a"));
    std::thread::sleep(Duration::from_millis(20));
    tracker.admitted();
    let first = tracker.record().queued_for();
    assert!(first >= Duration::from_millis(20), "{first:?}");
    std::thread::sleep(Duration::from_millis(20));
    tracker.admitted();
    assert_eq!(tracker.record().queued_for(), first);
    assert_eq!(tracker.record().state(), QueryState::Planning);
    let planning = history
        .stats()
        .transitions()
        .into_iter()
        .find(|((_, state), _)| *state == "PLANNING")
        .map(|(_, n)| n);
    assert_eq!(planning, Some(1));
}
