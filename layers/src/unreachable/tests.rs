use http::Response;
use tonic::Code;
use tonic::body::Body;
use tower::{ServiceExt, service_fn};

use super::*;
use crate::status::grpc_status_of;

#[derive(Debug, thiserror::Error)]
#[error("transport error")]
struct Transport(#[source] std::io::Error);

#[tokio::test]
async fn a_call_that_cannot_reach_its_peer_is_unavailable_naming_it()
-> Result<(), Box<dyn std::error::Error>> {
    let layer = UnreachableLayer::new("http://w1:50052");
    let refusing = layer.layer(service_fn(|_: ()| async {
        Err::<Response<Body>, _>(Transport(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused",
        )))
    }));
    let answer = refusing.oneshot(()).await?;
    let status = grpc_status_of(answer.headers()).ok_or("no grpc-status in the answer")?;
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(
        status.message(),
        "http://w1:50052 could not be reached: transport error: Connection refused"
    );
    Ok(())
}

#[tokio::test]
async fn answers_pass_untouched() -> Result<(), Box<dyn std::error::Error>> {
    let layer = UnreachableLayer::new("http://w1:50052");
    let answering = layer.layer(service_fn(|_: ()| async {
        Ok::<_, Transport>(Status::not_found("no such task").into_http())
    }));
    let answer = answering.oneshot(()).await?;
    let status = grpc_status_of(answer.headers()).ok_or("no grpc-status in the answer")?;
    assert_eq!(
        (status.code(), status.message()),
        (Code::NotFound, "no such task")
    );
    Ok(())
}

/// A peer that fails in the middle of its answer is named too; what it sent before stands.
#[tokio::test]
async fn an_answer_cut_off_is_unavailable_naming_the_peer() -> Result<(), Box<dyn std::error::Error>>
{
    use http_body_util::BodyExt;
    let layer = UnreachableLayer::new("http://w1:50052");
    let cut_off = layer.layer(service_fn(|_: ()| async {
        let frames: Vec<Result<http_body::Frame<bytes::Bytes>, Status>> = vec![
            Ok(http_body::Frame::data(bytes::Bytes::from_static(b"first"))),
            Err(Status::unknown("h2 protocol error: connection reset")),
        ];
        let body = http_body_util::StreamBody::new(futures::stream::iter(frames));
        Ok::<_, Transport>(Response::new(Body::new(body)))
    }));
    let mut body = cut_off.oneshot(()).await?.into_body();
    let first = body.frame().await.ok_or("no first frame")??;
    assert_eq!(first.into_data().ok().as_deref(), Some(&b"first"[..]));
    let failure = body
        .frame()
        .await
        .ok_or("the failure was lost")?
        .err()
        .ok_or("the failure became data")?;
    assert_eq!(failure.code(), Code::Unavailable);
    assert_eq!(
        failure.message(),
        "http://w1:50052 stopped answering: h2 protocol error: connection reset"
    );
    Ok(())
}

#[test]
fn a_cause_repeated_by_its_wrapper_is_said_once() {
    #[derive(Debug, thiserror::Error)]
    #[error("tcp connect error: {0}")]
    struct Repeats(#[source] std::io::Error);
    let error = Repeats(std::io::Error::other("refused"));
    assert_eq!(error_chain(&error), "tcp connect error: refused");
}
