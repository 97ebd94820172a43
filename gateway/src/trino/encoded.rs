//! Result rows encoded ahead of the pages that carry them: a task of the query's own encodes
//! each batch as it arrives, a few batches ahead, so encoding the next page overlaps with the
//! client reading the last one; a page is then copied together from encoded rows. The encoded
//! batches waiting for their client are held in the query's share of the coordinator's memory
//! pool, as its operators' memory is: a result the pool cannot hold fails the query
//! (EXCEEDED_GLOBAL_MEMORY_LIMIT) instead of growing the process.

use std::sync::Arc;

use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use futures::StreamExt;
use sqe_engine::error::Error;
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::trino::encode::RowsEncoder;

/// Encoded batches waiting for pages: enough to fill more than one default page ahead without
/// holding a whole large result.
const BATCHES_AHEAD: usize = 2;

/// One batch's rows as JSON arrays separated by commas: `[..],[..],[..]`.
pub(crate) struct EncodedBatch {
    json: Vec<u8>,
    /// Where each row's array ends in `json`.
    row_ends: Vec<usize>,
    /// Its bytes in the query's memory pool, given back when it is dropped.
    _held: Option<MemoryReservation>,
}

impl EncodedBatch {
    fn encode(batch: &arrow::array::RecordBatch) -> Result<Self, Error> {
        let encoder = RowsEncoder::of_batch(batch);
        let mut json = Vec::new();
        let mut row_ends = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            if row > 0 {
                json.push(b',');
            }
            encoder.write_row(&mut json, row)?;
            row_ends.push(json.len());
        }
        Ok(Self {
            json,
            row_ends,
            _held: None,
        })
    }

    /// The encoded batch with its bytes taken from `reservation`'s pool.
    fn held_in(mut self, reservation: Option<&mut MemoryReservation>) -> Result<Self, Error> {
        if let Some(reservation) = reservation {
            let bytes = self.json.capacity() + self.row_ends.capacity() * size_of::<usize>();
            reservation.try_grow(bytes)?;
            self._held = Some(reservation.split(bytes));
        }
        Ok(self)
    }

    pub(crate) fn rows(&self) -> usize {
        self.row_ends.len()
    }

    /// Appends rows from `first` on to `out` (comma-separated, as `out`'s rows are) until
    /// `out` reaches `target_bytes` or the rows run out; returns the row after the last one
    /// appended. At least one row is appended.
    pub(crate) fn append(&self, out: &mut Vec<u8>, first: usize, target_bytes: usize) -> usize {
        let start = match first {
            0 => 0,
            // Past the previous row's end and its comma.
            n => self.row_ends[n - 1] + 1,
        };
        let room = target_bytes.saturating_sub(out.len());
        // The first row whose end reaches the room left takes the page to its target.
        let reach = self.row_ends[first..].partition_point(|end| end - start < room);
        let end_row = (first + reach + 1).min(self.rows());
        out.extend_from_slice(&self.json[start..self.row_ends[end_row - 1]]);
        end_row
    }
}

/// The receiving end of a query's encoding task.
pub(crate) struct EncodedRows {
    receiver: mpsc::Receiver<Result<EncodedBatch, Error>>,
}

impl EncodedRows {
    /// Starts encoding `stream`'s batches in a task that ends when the stream does, when it
    /// fails (the error is the last item) or when these rows are dropped (the stream is then
    /// dropped too, which stops the query's plan). Encoded batches are held in `memory` until
    /// their rows are taken.
    pub(crate) fn spawn(
        mut stream: SendableRecordBatchStream,
        memory: Option<Arc<dyn MemoryPool>>,
    ) -> Self {
        let (sender, receiver) = mpsc::channel(BATCHES_AHEAD);
        let mut reservation =
            memory.map(|pool| MemoryConsumer::new("Trino result pages").register(&pool));
        sqe_layers::task::spawn(
            async move {
                loop {
                    let next = tokio::select! {
                        next = stream.next() => next,
                        () = sender.closed() => return,
                    };
                    let encoded = match next {
                        None => return,
                        Some(Ok(batch)) if batch.num_rows() == 0 => continue,
                        Some(Ok(batch)) => EncodedBatch::encode(&batch)
                            .and_then(|encoded| encoded.held_in(reservation.as_mut())),
                        Some(Err(e)) => Err(e.into()),
                    };
                    let failed = encoded.is_err();
                    if sender.send(encoded).await.is_err() || failed {
                        return;
                    }
                }
            }
            .in_current_span(),
        );
        Self { receiver }
    }

    /// The next encoded batch, waiting for it; `None` at the end of the rows.
    pub(crate) async fn next(&mut self) -> Option<Result<EncodedBatch, Error>> {
        self.receiver.recv().await
    }

    /// The next encoded batch if one is ready: `Err(())` when none is yet.
    pub(crate) fn ready(&mut self) -> Result<Option<Result<EncodedBatch, Error>>, ()> {
        match self.receiver.try_recv() {
            Ok(batch) => Ok(Some(batch)),
            Err(mpsc::error::TryRecvError::Empty) => Err(()),
            Err(mpsc::error::TryRecvError::Disconnected) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use futures::StreamExt;

    use super::*;

    fn batch(values: Vec<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values))]).expect("a batch")
    }

    /// A stream of `batches` then one that never ends, which says when it is dropped.
    fn endless(
        batches: Vec<RecordBatch>,
        dropped: Arc<std::sync::atomic::AtomicBool>,
    ) -> SendableRecordBatchStream {
        struct OnDrop(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let guard = OnDrop(dropped);
        let schema = batches[0].schema();
        let stream = futures::stream::iter(batches.into_iter().map(Ok))
            .chain(futures::stream::pending())
            .map(move |b| {
                let _keep = &guard;
                b
            });
        Box::pin(datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(schema, stream))
    }

    #[tokio::test]
    async fn batches_are_encoded_before_they_are_asked_for_and_dropping_stops_the_plan()
    -> Result<(), Error> {
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let batches = vec![batch(vec![1]), batch(vec![2]), batch(vec![3])];
        let mut rows = EncodedRows::spawn(endless(batches, Arc::clone(&dropped)), None);
        // Nobody asks, yet the first batches get encoded.
        let mut ready = None;
        for _ in 0..1000 {
            if let Ok(batch) = rows.ready() {
                ready = batch;
                break;
            }
            tokio::task::yield_now().await;
        }
        let first = ready.ok_or_else(|| Error::Internal("nothing was encoded ahead".into()))??;
        assert_eq!(first.json, b"[1]");
        for expected in [b"[2]", b"[3]"] {
            let next = rows
                .next()
                .await
                .ok_or_else(|| Error::Internal("a batch is missing".into()))??;
            assert_eq!(next.json, expected);
        }
        // The encoder now waits on the plan, which has nothing more yet.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!dropped.load(std::sync::atomic::Ordering::SeqCst));
        // An abandoned query's rows go, and with them the plan's stream, though it never ends.
        drop(rows);
        for _ in 0..1000 {
            if dropped.load(std::sync::atomic::Ordering::SeqCst) {
                return Ok(());
            }
            tokio::task::yield_now().await;
        }
        Err(Error::Internal(
            "the plan's stream outlived its rows".into(),
        ))
    }

    #[tokio::test]
    async fn encoded_rows_are_held_in_the_querys_pool_until_taken() -> Result<(), Error> {
        use datafusion::execution::memory_pool::GreedyMemoryPool;
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1 << 20));
        let batches = vec![batch(vec![1, 2]), batch(vec![3])];
        let schema = batches[0].schema();
        let stream = futures::stream::iter(batches.into_iter().map(Ok));
        let stream = Box::pin(
            datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(schema, stream),
        );
        let mut rows = EncodedRows::spawn(stream, Some(Arc::clone(&pool)));
        let first = rows
            .next()
            .await
            .ok_or_else(|| Error::Internal("no first batch".into()))??;
        assert!(pool.reserved() >= first.json.len(), "{}", pool.reserved());
        drop(first);
        let last = rows
            .next()
            .await
            .ok_or_else(|| Error::Internal("no last batch".into()))??;
        drop(last);
        assert!(rows.next().await.is_none());
        assert_eq!(pool.reserved(), 0, "taken rows give their memory back");

        // A pool too small for one encoded batch fails the query, as its operators would.
        let tiny: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(4));
        let mut rows = EncodedRows::spawn(
            endless(vec![batch(vec![1, 2, 3])], Arc::default()),
            Some(tiny),
        );
        let refused = rows
            .next()
            .await
            .ok_or_else(|| Error::Internal("no answer".into()))?;
        assert!(
            matches!(refused, Err(Error::ResourcesExhausted(_))),
            "{:?}",
            refused.err()
        );
        Ok(())
    }

    #[test]
    fn pages_take_whole_rows_up_to_their_target() -> Result<(), Error> {
        let encoded = EncodedBatch::encode(&batch(vec![1, 22, 333, 4444]))?;
        assert_eq!(encoded.json, b"[1],[22],[333],[4444]");
        // Room for everything.
        let mut out = Vec::new();
        assert_eq!(encoded.append(&mut out, 0, 1000), 4);
        assert_eq!(out, b"[1],[22],[333],[4444]");
        // The row that reaches the target is the page's last.
        let mut out = Vec::new();
        assert_eq!(encoded.append(&mut out, 0, 5), 2);
        assert_eq!(out, b"[1],[22]");
        let mut out = b"[0],".to_vec();
        assert_eq!(encoded.append(&mut out, 2, 6), 3);
        assert_eq!(out, b"[0],[333]");
        // A page already at its target still takes one row.
        let mut out = vec![b'x'; 10];
        assert_eq!(encoded.append(&mut out, 3, 5), 4);
        assert_eq!(&out[10..], b"[4444]");
        Ok(())
    }
}
