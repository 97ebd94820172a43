//! A polled statement's rows, read ahead of its DoGet. `PollFlightInfo` follows Flight's model
//! (the server runs the query, the client polls its progress and may fetch what is there
//! before it completes), while a statement fetched through `GetFlightInfo` runs in its DoGet.
//! So a polled query starts as soon as it is planned, and a task of its own reads its batches
//! into a buffer its DoGet drains. The buffer holds at most [`READ_AHEAD_BYTES`] (the query
//! waits while it is full: a larger result completes only as the client reads it, as a Trino
//! query does) and its batches are held in the query's share of the coordinator's memory
//! pool, like the Trino endpoint's pages.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_flight::error::FlightError;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use futures::StreamExt;
use futures::stream::BoxStream;
use sqe_engine::error::Error;
use sqe_engine::history::QueryRecord;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use tracing::Instrument;

/// The most result bytes a polled statement buffers before its client reads them.
pub(super) const READ_AHEAD_BYTES: usize = 32 * 1024 * 1024;

/// Where a statement running ahead of its DoGet stands.
#[derive(Debug, Clone)]
pub(super) enum RunState {
    Running,
    /// Its last batch is buffered (or already read): the query is complete.
    Finished,
    Failed(Status),
}

/// A batch waiting for the DoGet, with its place in the buffer and the pool.
struct Buffered {
    batch: RecordBatch,
    _room: OwnedSemaphorePermit,
    _memory: Option<MemoryReservation>,
}

/// What the buffer holds: batches, then the end (a channel closed without it was cut short).
enum Item {
    Batch(Buffered),
    End,
}

/// The rows of a statement running ahead, for its DoGet.
pub(super) struct ReadAhead {
    schema: SchemaRef,
    receiver: mpsc::UnboundedReceiver<Result<Item, Status>>,
    /// Set once a DoGet reads the rows: from then on the reader, not the poller, keeps the
    /// query going.
    taken: Arc<AtomicBool>,
}

/// How the run of a statement reading ahead goes, for its polls.
pub(super) struct Execution {
    record: Option<Arc<QueryRecord>>,
    state: watch::Receiver<RunState>,
    _abandon: AbandonUnread,
}

/// Stops a query nobody polls any more whose rows no DoGet has taken (a client that went
/// away): dropped with the last [`Execution`].
struct AbandonUnread {
    abandon: CancellationToken,
    taken: Arc<AtomicBool>,
}

impl Drop for AbandonUnread {
    fn drop(&mut self) {
        if !self.taken.load(Ordering::Acquire) {
            self.abandon.cancel();
        }
    }
}

impl ReadAhead {
    /// Starts reading `stream` into a buffer. The task ends at the stream's end, at its first
    /// error, or when these rows are dropped unread (the stream is then dropped, which stops
    /// the query); `keep` lives as long as the task (the statement's registration as running).
    pub(super) fn spawn(
        mut stream: SendableRecordBatchStream,
        memory: Option<Arc<dyn MemoryPool>>,
        record: Option<Arc<QueryRecord>>,
        keep: impl Send + 'static,
    ) -> (Self, Execution) {
        let schema = stream.schema();
        let (sender, receiver) = mpsc::unbounded_channel();
        let (state, watched) = watch::channel(RunState::Running);
        let abandon = CancellationToken::new();
        let taken = Arc::new(AtomicBool::new(false));
        let abandoned = abandon.clone();
        let room = Arc::new(Semaphore::new(READ_AHEAD_BYTES));
        let mut reservation =
            memory.map(|pool| MemoryConsumer::new("Flight SQL read-ahead").register(&pool));
        sqe_layers::task::spawn(
            async move {
                let _keep = keep;
                let outcome = loop {
                    let next = tokio::select! {
                        next = stream.next() => next,
                        () = sender.closed() => break dropped_unread(),
                        () = abandoned.cancelled() => break dropped_unread(),
                    };
                    let batch = match next {
                        None => break RunState::Finished,
                        Some(Ok(batch)) if batch.num_rows() == 0 => continue,
                        Some(Ok(batch)) => batch,
                        Some(Err(e)) => break RunState::Failed(Error::from(e).into()),
                    };
                    let bytes = batch.get_array_memory_size().clamp(1, READ_AHEAD_BYTES);
                    let permits = u32::try_from(bytes).unwrap_or(u32::MAX);
                    let room = tokio::select! {
                        room = Arc::clone(&room).acquire_many_owned(permits) => room,
                        () = sender.closed() => break dropped_unread(),
                        () = abandoned.cancelled() => break dropped_unread(),
                    };
                    // The semaphore is never closed.
                    let Ok(room) = room else {
                        break RunState::Failed(Status::internal("the read-ahead buffer closed"));
                    };
                    let memory = match held(reservation.as_mut(), bytes) {
                        Ok(memory) => memory,
                        Err(e) => break RunState::Failed(e.into()),
                    };
                    let buffered = Buffered {
                        batch,
                        _room: room,
                        _memory: memory,
                    };
                    if sender.send(Ok(Item::Batch(buffered))).is_err() {
                        break dropped_unread();
                    }
                };
                // The stream goes first: a query stopped by its dropped rows ends before its
                // polls hear of it.
                drop(stream);
                // Unread rows go with the receiver; the end or the error is the last item.
                let last = match &outcome {
                    RunState::Failed(status) => Err(status.clone()),
                    RunState::Finished | RunState::Running => Ok(Item::End),
                };
                let _unread = sender.send(last);
                // Nobody polls any more: the DoGet alone reads on.
                let _unwatched = state.send(outcome);
            }
            .in_current_span(),
        );
        (
            Self {
                schema: schema.clone(),
                receiver,
                taken: Arc::clone(&taken),
            },
            Execution {
                record,
                state: watched,
                _abandon: AbandonUnread { abandon, taken },
            },
        )
    }

    pub(super) fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// The rows, as the DoGet sends them: buffered ones first, then the rest as they come. A
    /// run cut short without a word (its task stopped) is an error, never a shorter result.
    pub(super) fn into_batches(self) -> BoxStream<'static, Result<RecordBatch, FlightError>> {
        self.taken.store(true, Ordering::Release);
        futures::stream::unfold(Some(self.receiver), |receiver| async move {
            let mut receiver = receiver?;
            let item = match receiver.recv().await {
                Some(Ok(Item::Batch(buffered))) => Ok(buffered.batch),
                Some(Ok(Item::End)) => return None,
                Some(Err(status)) => return Some((Err(FlightError::from(status)), None)),
                None => {
                    let cut = Status::internal("the statement's run stopped before its end");
                    return Some((Err(FlightError::from(cut)), None));
                }
            };
            Some((item, Some(receiver)))
        })
        .boxed()
    }
}

/// Rows dropped before the end (the statement was cancelled, or left unread and unpolled
/// until it expired): the query stopped with them.
fn dropped_unread() -> RunState {
    RunState::Failed(Status::cancelled(
        "the query was cancelled: its rows were dropped unread",
    ))
}

/// `bytes` more of the query's pool, held apart for one batch.
fn held(
    reservation: Option<&mut MemoryReservation>,
    bytes: usize,
) -> Result<Option<MemoryReservation>, Error> {
    let Some(reservation) = reservation else {
        return Ok(None);
    };
    reservation.try_grow(bytes)?;
    Ok(Some(reservation.split(bytes)))
}

impl Execution {
    /// How the run stands now.
    pub(super) fn state(&self) -> RunState {
        let state = self.state.borrow().clone();
        // Its task gone without a word (the runtime shutting down): it runs no more.
        if matches!(state, RunState::Running) && self.state.has_changed().is_err() {
            return RunState::Failed(Status::internal("the statement's run stopped"));
        }
        state
    }

    /// Waits until the run has ended or `deadline` has passed.
    pub(super) async fn ended_by(&mut self, deadline: Instant) {
        let ended = self
            .state
            .wait_for(|state| !matches!(state, RunState::Running));
        // A dropped sender ends the wait too (see `state`).
        let _in_time = tokio::time::timeout_at(deadline, ended).await;
    }

    /// The share of its splits done, in [0, 1]; `None` while nothing is measured (a plan that
    /// runs on the coordinator alone).
    pub(super) fn progress(&self) -> Option<f64> {
        let ledger = self.record.as_ref()?.tasks()?;
        let percentage = ledger.progress().measured_percentage()?;
        Some((percentage / 100.0).clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::common::DataFusionError;
    use datafusion::execution::memory_pool::GreedyMemoryPool;
    use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
    use futures::TryStreamExt;

    use super::*;

    fn batch(values: Vec<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values))])
            .expect("a valid batch")
    }

    fn stream_of(
        items: Vec<Result<RecordBatch, DataFusionError>>,
        then: impl futures::Stream<Item = Result<RecordBatch, DataFusionError>> + Send + 'static,
    ) -> SendableRecordBatchStream {
        let schema = batch(vec![0]).schema();
        Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter(items).chain(then),
        ))
    }

    fn soon() -> Instant {
        Instant::now() + std::time::Duration::from_secs(5)
    }

    #[tokio::test]
    async fn a_small_result_completes_before_anyone_reads_it() -> Result<(), FlightError> {
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1 << 20));
        let stream = stream_of(
            vec![Ok(batch(vec![1, 2])), Ok(batch(vec![3]))],
            futures::stream::empty(),
        );
        let (rows, mut execution) = ReadAhead::spawn(stream, Some(Arc::clone(&pool)), None, ());
        execution.ended_by(soon()).await;
        assert!(matches!(execution.state(), RunState::Finished));
        assert!(
            pool.reserved() > 0,
            "the buffered rows are held in the pool"
        );
        let read: Vec<RecordBatch> = rows.into_batches().try_collect().await?;
        assert_eq!(read, vec![batch(vec![1, 2]), batch(vec![3])]);
        assert_eq!(pool.reserved(), 0, "read rows give their memory back");
        Ok(())
    }

    #[tokio::test]
    async fn a_failure_reaches_both_the_poll_and_the_reader() -> Result<(), FlightError> {
        let stream = stream_of(
            vec![
                Ok(batch(vec![1])),
                Err(DataFusionError::Execution("boom".into())),
            ],
            futures::stream::empty(),
        );
        let (rows, mut execution) = ReadAhead::spawn(stream, None, None, ());
        execution.ended_by(soon()).await;
        let RunState::Failed(status) = execution.state() else {
            panic!("the run did not fail: {:?}", execution.state());
        };
        assert!(status.message().contains("boom"), "{status}");
        let mut batches = rows.into_batches();
        assert_eq!(batches.try_next().await?, Some(batch(vec![1])));
        let error = batches.try_next().await.err();
        assert!(
            error.is_some_and(|e| e.to_string().contains("boom")),
            "the reader gets the error after the rows before it"
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_full_buffer_holds_the_query_and_dropping_the_rows_stops_it() {
        struct OnDrop(Arc<AtomicBool>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicBool::new(false));
        let guard = OnDrop(Arc::clone(&dropped));
        // Each batch is larger than the buffer: the second waits for the first to be read.
        let big = || batch(vec![7; READ_AHEAD_BYTES / 8 + 1]);
        let pulled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&pulled);
        let endless = futures::stream::repeat_with(move || {
            let _keep = &guard;
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(big())
        });
        let (rows, mut execution) = ReadAhead::spawn(stream_of(vec![], endless), None, None, ());
        execution
            .ended_by(Instant::now() + std::time::Duration::from_millis(200))
            .await;
        assert!(matches!(execution.state(), RunState::Running));
        assert!(
            pulled.load(Ordering::SeqCst) <= 2,
            "the query ran on past a full buffer: {} batches",
            pulled.load(Ordering::SeqCst)
        );
        drop(rows);
        for _ in 0..100 {
            if dropped.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the query's stream outlived its unread rows");
    }

    #[tokio::test]
    async fn a_query_nobody_polls_or_reads_any_more_is_stopped() {
        struct OnDrop(Arc<AtomicBool>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let stream_with_guard = |dropped: &Arc<AtomicBool>| {
            let guard = OnDrop(Arc::clone(dropped));
            let endless = futures::stream::pending().map(move |b| {
                let _keep = &guard;
                b
            });
            stream_of(vec![Ok(batch(vec![1]))], endless)
        };
        // Polled, then forgotten before any DoGet: the plan stops.
        let dropped = Arc::new(AtomicBool::new(false));
        let (_rows, execution) = ReadAhead::spawn(stream_with_guard(&dropped), None, None, ());
        drop(execution);
        assert!(eventually(&dropped).await, "an abandoned query ran on");
        // Taken by a DoGet: the reader keeps it going after the polls stop.
        let dropped = Arc::new(AtomicBool::new(false));
        let (rows, execution) = ReadAhead::spawn(stream_with_guard(&dropped), None, None, ());
        let mut batches = rows.into_batches();
        drop(execution);
        let first = batches.next().await.and_then(|b| b.ok());
        assert_eq!(first, Some(batch(vec![1])));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(
            !dropped.load(Ordering::SeqCst),
            "a query being read was stopped"
        );
    }

    #[tokio::test]
    async fn a_run_cut_short_is_an_error_not_a_shorter_result() {
        let panics = futures::stream::once(async {
            panic!("an operator panicked");
            #[allow(unreachable_code)]
            Ok(batch(vec![0]))
        });
        let (rows, _execution) =
            ReadAhead::spawn(stream_of(vec![Ok(batch(vec![1]))], panics), None, None, ());
        let read: Vec<Result<RecordBatch, FlightError>> = rows.into_batches().collect().await;
        assert_eq!(read.len(), 2, "{read:?}");
        assert!(
            read[1]
                .as_ref()
                .err()
                .is_some_and(|e| e.to_string().contains("stopped before its end")),
            "{read:?}"
        );
    }

    async fn eventually(flag: &AtomicBool) -> bool {
        for _ in 0..100 {
            if flag.load(Ordering::SeqCst) {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        false
    }

    #[tokio::test]
    async fn a_pool_too_small_fails_the_query_as_its_operators_would() {
        let tiny: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(4));
        let stream = stream_of(vec![Ok(batch(vec![1, 2, 3]))], futures::stream::empty());
        let (_rows, mut execution) = ReadAhead::spawn(stream, Some(tiny), None, ());
        execution.ended_by(soon()).await;
        let RunState::Failed(status) = execution.state() else {
            panic!("the run did not fail: {:?}", execution.state());
        };
        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status}");
    }
}
