//! The response future.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Response;
use pin_project::pin_project;
use tonic::Status;
use tonic::body::Body;

/// Response future of [`super::AuthorizeService`]: the service's, or the refusal.
#[pin_project(project = AuthorizeFutureProj)]
pub enum AuthorizeFuture<F> {
    Accepted {
        #[pin]
        future: F,
    },
    Rejected {
        response: Option<Response<Body>>,
    },
}

impl<F> AuthorizeFuture<F> {
    pub(super) fn accepted(future: F) -> Self {
        AuthorizeFuture::Accepted { future }
    }

    pub(super) fn rejected(status: Status) -> Self {
        AuthorizeFuture::Rejected {
            response: Some(status.into_http()),
        }
    }
}

impl<F, E> Future for AuthorizeFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AuthorizeFutureProj::Accepted { future } => future.poll(cx),
            AuthorizeFutureProj::Rejected { response } => {
                Poll::Ready(Ok(response.take().unwrap_or_else(|| {
                    Status::internal("AuthorizeFuture polled after completion").into_http()
                })))
            }
        }
    }
}
