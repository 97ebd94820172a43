use std::future::poll_fn;

use http_body::Body as _;
use tower::ServiceExt;

use super::*;

const PATH: &str = "/worker.WorkerService/ExecuteTask";

fn request(path: &str) -> Request<Body> {
    let mut request = Request::new(Body::empty());
    *request.uri_mut() = path.parse().unwrap_or_default();
    request
}

type Mock = tower_test::mock::Mock<Request<Body>, Response<Body>>;
type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

fn counted() -> (StreamCount<Mock>, Handle, OpenStreams) {
    let (mock, handle) = tower_test::mock::pair();
    let open = OpenStreams::default();
    let service = StreamCountLayer::new(PATH, open.clone()).layer(mock);
    (service, handle, open)
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_counts_until_its_response_body_is_dropped() -> Result<(), tower::BoxError> {
    let (mut service, mut handle, open) = counted();
    let call = service.ready().await?.call(request(PATH));
    assert_eq!(open.current(), 1, "counted from the call on");

    let (_, reply) = handle.next_request().await.ok_or("no request")?;
    reply.send_response(Response::new(Body::new(String::from("a page"))));
    let mut body = call.await?.into_body();
    assert_eq!(open.current(), 1, "still counted while the body streams");

    let frame = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
    let data = frame
        .ok_or("no frame")??
        .into_data()
        .map_err(|_| "not data")?;
    assert_eq!(
        data,
        Bytes::from("a page"),
        "the body passes through unchanged"
    );
    assert!(
        poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
            .await
            .is_none()
    );

    drop(body);
    assert_eq!(open.current(), 0, "a dropped body ends the call");
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn an_abandoned_stream_stops_counting() -> Result<(), tower::BoxError> {
    let (mut service, mut handle, open) = counted();
    let first = service.ready().await?.call(request(PATH));
    let second = service.ready().await?.call(request(PATH));
    assert_eq!(open.current(), 2);

    // The client gives up before the response: the server drops the call's future.
    drop(first);
    assert_eq!(open.current(), 1);

    // The client resets a stream midway: the server drops the unread body.
    let _ = handle.next_request().await.ok_or("no first request")?;
    let (_, reply) = handle.next_request().await.ok_or("no second request")?;
    reply.send_response(Response::new(Body::new(String::from("unread"))));
    let body = second.await?.into_body();
    assert_eq!(open.current(), 1);
    drop(body);
    assert_eq!(open.current(), 0);
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_call_stops_counting() -> Result<(), tower::BoxError> {
    let (mut service, mut handle, open) = counted();
    let call = service.ready().await?.call(request(PATH));
    let (_, reply) = handle.next_request().await.ok_or("no request")?;
    reply.send_error("connection lost");
    assert!(call.await.is_err());
    assert_eq!(open.current(), 0);
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn other_methods_are_not_counted() -> Result<(), tower::BoxError> {
    let (mut service, mut handle, open) = counted();
    let call = service
        .ready()
        .await?
        .call(request("/worker.WorkerService/GetWorkerInfo"));
    assert_eq!(open.current(), 0);
    let (_, reply) = handle.next_request().await.ok_or("no request")?;
    reply.send_response(Response::new(Body::empty()));
    let _body = call.await?.into_body();
    assert_eq!(open.current(), 0);
    Ok(())
}
