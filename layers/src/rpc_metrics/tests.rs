use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http_body::Frame;
use http_body_util::BodyExt;
use tonic::Status;
use tower::ServiceExt;
use tower_test::mock;

use super::*;
use crate::retry::{RetryLayer, RetryPolicy};

const METHOD: &str = "/worker.WorkerService/ExecuteTask";

fn request() -> Request<Body> {
    let mut request = Request::new(Body::empty());
    *request.uri_mut() = http::Uri::from_static("http://w1/worker.WorkerService/ExecuteTask");
    request
}

/// A streamed response: one message, then trailers with `code`.
fn streamed(code: Code) -> Response<Body> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from(code as i32));
    let frames = vec![
        Ok::<_, Status>(Frame::data(Bytes::from_static(b"batch"))),
        Ok(Frame::trailers(trailers)),
    ];
    Response::new(Body::new(http_body_util::StreamBody::new(
        futures::stream::iter(frames),
    )))
}

fn key(code: Code, attempt: u32) -> RpcKey {
    RpcKey {
        method: METHOD.into(),
        code,
        attempt,
    }
}

#[tokio::test(start_paused = true)]
async fn each_attempt_counts_with_its_number_and_final_code() -> Result<(), tower::BoxError> {
    let counts = RpcCounts::default();
    let (mock, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
    let policy = RetryPolicy {
        max_attempts: 3,
        base_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(10),
    };
    let mut service = tower::ServiceBuilder::new()
        .layer(RetryLayer::new(policy, 100.0))
        .layer(RpcMetricsLayer::new(counts.clone()))
        .service(mock);
    let call = tokio::spawn(service.ready().await?.call(request()));
    let (_, reply) = handle.next_request().await.ok_or("no first attempt")?;
    reply.send_error("tcp connect error: Connection refused");
    let (_, reply) = handle.next_request().await.ok_or("no retry")?;
    reply.send_response(streamed(Code::Ok));
    let response = call.await??;
    assert_eq!(
        counts.snapshot(),
        vec![(key(Code::Unavailable, 1), 1)],
        "the retried attempt counts only when its stream ends"
    );
    response.into_body().collect().await?;
    assert_eq!(
        counts.snapshot(),
        vec![(key(Code::Ok, 2), 1), (key(Code::Unavailable, 1), 1)]
    );
    Ok(())
}

#[tokio::test]
async fn failures_in_headers_streams_and_abandoned_calls_are_counted() -> Result<(), tower::BoxError>
{
    let counts = RpcCounts::default();
    let (mock, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
    let mut service = RpcMetricsLayer::new(counts.clone()).layer(mock);

    // Refused at once (a trailers-only response).
    let call = tokio::spawn(service.ready().await?.call(request()));
    let (_, reply) = handle.next_request().await.ok_or("no request")?;
    reply.send_response(Status::unauthenticated("bad token").into_http());
    drop(call.await??);

    // Failed mid-stream.
    let call = tokio::spawn(service.ready().await?.call(request()));
    let (_, reply) = handle.next_request().await.ok_or("no request")?;
    reply.send_response(streamed(Code::ResourceExhausted));
    call.await??.into_body().collect().await?;

    // Given up before any response.
    let call = service.ready().await?.call(request());
    drop(call);

    assert_eq!(
        counts.snapshot(),
        vec![
            (key(Code::Cancelled, 1), 1),
            (key(Code::ResourceExhausted, 1), 1),
            (key(Code::Unauthenticated, 1), 1),
        ]
    );
    Ok(())
}
