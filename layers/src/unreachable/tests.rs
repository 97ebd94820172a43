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

#[test]
fn a_cause_repeated_by_its_wrapper_is_said_once() {
    #[derive(Debug, thiserror::Error)]
    #[error("tcp connect error: {0}")]
    struct Repeats(#[source] std::io::Error);
    let error = Repeats(std::io::Error::other("refused"));
    assert_eq!(error_chain(&error), "tcp connect error: refused");
}
