use std::time::Duration;

use http::{Request, Response};
use tonic::body::Body;
use tonic::{Code, Status};
use tower::{Layer, Service, ServiceExt};
use tower_test::mock;

use super::*;
use crate::status::grpc_status_of;

/// Lets through requests with `x-key: open`, and marks them.
#[derive(Clone)]
struct Key;

#[derive(Clone, Debug, PartialEq)]
struct Opened;

impl<B> Authorize<B> for Key {
    fn authorize(&self, request: &mut Request<B>) -> Result<(), Status> {
        if request.headers().get("x-key").is_some_and(|v| v == "open") {
            request.extensions_mut().insert(Opened);
            Ok(())
        } else {
            Err(Status::permission_denied("wrong key"))
        }
    }
}

#[tokio::test]
async fn refused_requests_never_reach_the_service() -> Result<(), tower::BoxError> {
    let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
    let mut service = AuthorizeLayer::new(Key).layer(service);
    handle.allow(1);
    let response = service
        .ready()
        .await?
        .call(Request::new(Body::empty()))
        .await?;
    let status = grpc_status_of(response.headers()).ok_or("no status")?;
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(status.message(), "wrong key");
    let seen = tokio::time::timeout(Duration::from_millis(20), handle.next_request()).await;
    assert!(seen.is_err(), "the service saw a refused request");
    Ok(())
}

#[tokio::test]
async fn authorized_requests_carry_what_was_found() -> Result<(), tower::BoxError> {
    let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
    let mut service = AuthorizeLayer::new(Key).layer(service);
    let mut request = Request::new(Body::empty());
    request.headers_mut().insert("x-key", "open".parse()?);
    let call = service.ready().await?.call(request);
    let (seen, reply) = handle.next_request().await.ok_or("no request")?;
    assert_eq!(seen.extensions().get::<Opened>(), Some(&Opened));
    reply.send_response(Response::new(Body::empty()));
    assert!(grpc_status_of(call.await?.headers()).is_none());
    Ok(())
}
