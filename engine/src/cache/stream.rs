//! A result stream that keeps a copy of what it passes on, for the cache.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result;
use datafusion::physical_plan::{RecordBatchStream, SendableRecordBatchStream};
use futures::Stream;

use super::{CacheKey, CachedResult, ResultCache, TableVersion};

/// Passes its input through; once the input has ended without an error, gives the cache the
/// whole result. Gives up copying past the cache's entry limit, and keeps nothing from a
/// stream that fails or is dropped early (the client went away: the result is incomplete).
pub struct CachingStream {
    input: SendableRecordBatchStream,
    cache: Arc<ResultCache>,
    key: CacheKey,
    tables: Vec<TableVersion>,
    /// `None` once the result is too large (or already handed over).
    kept: Option<Vec<RecordBatch>>,
    bytes: usize,
}

impl CachingStream {
    pub fn new(
        input: SendableRecordBatchStream,
        cache: Arc<ResultCache>,
        key: CacheKey,
        tables: Vec<TableVersion>,
    ) -> Self {
        Self {
            input,
            cache,
            key,
            tables,
            kept: Some(Vec::new()),
            bytes: 0,
        }
    }
}

impl Stream for CachingStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let polled = this.input.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(batch))) => {
                this.bytes += batch.get_array_memory_size();
                if this.bytes > this.cache.max_entry_bytes() {
                    this.kept = None;
                } else if let Some(kept) = this.kept.as_mut() {
                    kept.push(batch.clone());
                }
            }
            Poll::Ready(Some(Err(_))) => this.kept = None,
            Poll::Ready(None) => {
                if let Some(batches) = this.kept.take() {
                    let result = CachedResult {
                        schema: this.input.schema(),
                        batches,
                    };
                    this.cache
                        .put(this.key, result, std::mem::take(&mut this.tables));
                }
            }
            Poll::Pending => {}
        }
        polled
    }
}

impl RecordBatchStream for CachingStream {
    fn schema(&self) -> SchemaRef {
        self.input.schema()
    }
}
