//! A request body that stays reusable until a connection first polls it.

use std::pin::Pin;
use std::sync::Arc;

use parking_lot::Mutex;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tonic::Status;
use tonic::body::Body;

/// Holds a body until the first attempt that actually starts sending it takes it.
#[derive(Clone)]
pub(super) struct BodySlot(Arc<Mutex<Option<Body>>>);

impl BodySlot {
    pub(super) fn new(body: Body) -> Self {
        Self(Arc::new(Mutex::new(Some(body))))
    }

    /// A body for one attempt: it takes the real body on its first poll.
    pub(super) fn body(&self) -> Body {
        Body::new(SlotBody {
            slot: self.clone(),
            body: None,
        })
    }

    /// No attempt has polled the body yet: nothing of it left this process.
    pub(super) fn unsent(&self) -> bool {
        self.0.lock().is_some()
    }
}

struct SlotBody {
    slot: BodySlot,
    body: Option<Body>,
}

impl http_body::Body for SlotBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if self.body.is_none() {
            let taken = self.slot.0.lock().take();
            match taken {
                Some(body) => self.body = Some(body),
                None => {
                    return Poll::Ready(Some(Err(Status::internal(
                        "request body already sent by an earlier attempt",
                    ))));
                }
            }
        }
        match self.body.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.body {
            Some(body) => body.is_end_stream(),
            None => self
                .slot
                .0
                .lock()
                .as_ref()
                .is_some_and(http_body::Body::is_end_stream),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.body {
            Some(body) => body.size_hint(),
            None => self
                .slot
                .0
                .lock()
                .as_ref()
                .map(http_body::Body::size_hint)
                .unwrap_or_default(),
        }
    }
}
