//! The query's own deadline (`query_max_run_time`): what bounds long result streams, since the
//! worker channel's timeout stops at response headers.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use futures::Stream;
use tokio::time::{Instant, Sleep};

use crate::error::GatewayError;

/// The error a query gets when it runs out of time.
pub fn time_limit_error(limit: Duration) -> GatewayError {
    GatewayError::TimeLimit(format!(
        "query exceeded the maximum run time of {limit:?} (query_max_run_time)"
    ))
}

/// Ends `inner` with a time-limit error at `deadline`; dropping the inner stream then cancels
/// the plan on every worker.
pub struct DeadlineStream {
    inner: Option<SendableRecordBatchStream>,
    schema: SchemaRef,
    sleep: Pin<Box<Sleep>>,
    limit: Duration,
}

impl DeadlineStream {
    pub fn new(inner: SendableRecordBatchStream, deadline: Instant, limit: Duration) -> Self {
        Self {
            schema: inner.schema(),
            inner: Some(inner),
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
            limit,
        }
    }
}

impl Stream for DeadlineStream {
    type Item = Result<RecordBatch, DataFusionError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(item) = inner.as_mut().poll_next(cx) {
            return Poll::Ready(item);
        }
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.inner = None;
                let error = time_limit_error(self.limit);
                Poll::Ready(Some(Err(DataFusionError::External(Box::new(error)))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl RecordBatchStream for DeadlineStream {
    fn schema(&self) -> SchemaRef {
        SchemaRef::clone(&self.schema)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::datatypes::Schema;
    use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
    use futures::StreamExt;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_outlives_its_deadline_fails() {
        let schema = Arc::new(Schema::empty());
        let never = RecordBatchStreamAdapter::new(Arc::clone(&schema), futures::stream::pending());
        let limit = Duration::from_secs(5);
        let mut stream = DeadlineStream::new(Box::pin(never), Instant::now() + limit, limit);
        let started = Instant::now();
        let item = stream.next().await;
        assert_eq!(started.elapsed(), limit);
        let message = item
            .and_then(|r| r.err())
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains("maximum run time of 5s"), "{message}");
        assert!(stream.next().await.is_none());
    }
}
