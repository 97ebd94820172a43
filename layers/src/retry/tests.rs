use std::time::Duration;

use http_body::Body as _;
use tonic::Status;
use tower_test::mock;

use super::*;

type Mock = mock::Mock<Request<Body>, Response<Body>>;
type Handle = mock::Handle<Request<Body>, Response<Body>>;

fn service(layer: &RetryLayer) -> (Retry<Mock>, Handle) {
    let (mock, handle) = mock::pair::<Request<Body>, Response<Body>>();
    (layer.layer(mock), handle)
}

fn fast_policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(1),
    }
}

fn request() -> Request<Body> {
    Request::new(Body::new(http_body_full("plan bytes")))
}

/// A one-frame body.
fn http_body_full(
    text: &'static str,
) -> impl http_body::Body<Data = bytes::Bytes, Error = Status> + Send + 'static {
    struct Once(Option<bytes::Bytes>);
    impl http_body::Body for Once {
        type Data = bytes::Bytes;
        type Error = Status;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, Status>>> {
            Poll::Ready(self.0.take().map(|b| Ok(http_body::Frame::data(b))))
        }
    }
    Once(Some(bytes::Bytes::from_static(text.as_bytes())))
}

/// Reads one frame, as a connection does when it starts sending.
async fn read_first_frame(body: &mut Body) -> Option<bytes::Bytes> {
    let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await?;
    frame.ok()?.into_data().ok()
}

#[tokio::test(start_paused = true)]
async fn retries_a_connect_failure_and_resends_the_body() -> Result<(), tower::BoxError> {
    let layer = RetryLayer::new(fast_policy(3), 100.0);
    let (mut svc, mut handle) = service(&layer);
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(svc.ready().await?.call(request()));
    // First attempt: the connection fails before touching the body.
    let (_, reply) = handle.next_request().await.ok_or("no first attempt")?;
    reply.send_error("tcp connect error: Connection refused");
    // Second attempt gets the original body intact.
    let (mut second, reply) = handle.next_request().await.ok_or("no retry")?;
    assert_eq!(
        read_first_frame(second.body_mut()).await.as_deref(),
        Some(b"plan bytes".as_slice())
    );
    reply.send_response(Response::new(Body::empty()));
    let response = call.await??;
    assert!(grpc_status_of(response.headers()).is_none());
    assert_eq!(layer.stats().retries(), 1);
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "backed off before retrying"
    );
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn never_retries_once_the_body_was_sent() -> Result<(), tower::BoxError> {
    let layer = RetryLayer::new(fast_policy(3), 100.0);
    let (mut svc, mut handle) = service(&layer);
    let call = tokio::spawn(svc.ready().await?.call(request()));
    let (mut first, reply) = handle.next_request().await.ok_or("no attempt")?;
    // The plan went out, then the connection broke: the peer may have accepted it.
    read_first_frame(first.body_mut()).await;
    reply.send_error("connection reset");
    assert!(call.await?.is_err());
    assert_eq!(layer.stats().retries(), 0);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn never_retries_after_a_response() -> Result<(), tower::BoxError> {
    let layer = RetryLayer::new(fast_policy(3), 100.0);
    let (mut svc, mut handle) = service(&layer);
    let call = tokio::spawn(svc.ready().await?.call(request()));
    let (_, reply) = handle.next_request().await.ok_or("no attempt")?;
    reply.send_response(Status::internal("boom").into_http());
    let response = call.await??;
    assert_eq!(
        grpc_status_of(response.headers()).map(|s| s.code()),
        Some(Code::Internal)
    );
    assert_eq!(layer.stats().retries(), 0);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn unavailable_without_a_server_is_retried() -> Result<(), tower::BoxError> {
    let layer = RetryLayer::new(fast_policy(3), 100.0);
    let (mut svc, mut handle) = service(&layer);
    let call = tokio::spawn(svc.ready().await?.call(request()));
    let (_, reply) = handle.next_request().await.ok_or("no attempt")?;
    reply.send_response(Status::unavailable("no connection").into_http());
    let (_, reply) = handle.next_request().await.ok_or("no retry")?;
    reply.send_response(Response::new(Body::empty()));
    assert!(grpc_status_of(call.await??.headers()).is_none());
    assert_eq!(layer.stats().retries(), 1);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn stops_after_max_attempts() -> Result<(), tower::BoxError> {
    let layer = RetryLayer::new(fast_policy(3), 100.0);
    let (mut svc, mut handle) = service(&layer);
    let call = tokio::spawn(svc.ready().await?.call(request()));
    for _ in 0..3 {
        let (_, reply) = handle.next_request().await.ok_or("missing attempt")?;
        reply.send_error("connection refused");
    }
    assert!(call.await?.is_err());
    assert_eq!(layer.stats().retries(), 2);
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn an_empty_budget_stops_retries() -> Result<(), tower::BoxError> {
    let budget = Arc::new(TpsBudget::new(Duration::from_secs(10), 0, 0.0));
    let layer = RetryLayer::with_budget(fast_policy(5), budget);
    let (mut svc, mut handle) = service(&layer);
    let call = tokio::spawn(svc.ready().await?.call(request()));
    let (_, reply) = handle.next_request().await.ok_or("no attempt")?;
    reply.send_error("connection refused");
    assert!(call.await?.is_err());
    assert_eq!(layer.stats().retries(), 0);
    assert_eq!(layer.stats().budget_exhausted(), 1);
    Ok(())
}

#[test]
fn backoff_grows_and_is_capped() {
    let policy = fast_policy(10);
    let first = policy.backoff(1);
    assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
    let third = policy.backoff(3);
    assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
    assert!(policy.backoff(30) <= Duration::from_secs(1));
}
