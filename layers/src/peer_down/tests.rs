use std::sync::Arc;

use parking_lot::Mutex;
use tower::{ServiceExt, service_fn};

use super::*;

/// Every report heard: target and error.
#[derive(Default)]
pub(crate) struct Heard(pub(crate) Mutex<Vec<(String, String)>>);

impl PeerDown for Heard {
    fn unreachable(&self, target: &str, error: &str) {
        self.0.lock().push((target.to_string(), error.to_string()));
    }
}

#[tokio::test]
async fn a_failed_call_is_reported_and_an_answer_is_not() -> Result<(), Box<dyn std::error::Error>>
{
    let failures = PeerFailures::default();
    let heard = Arc::new(Heard::default());
    let listener: Arc<dyn PeerDown> = heard.clone();
    failures.listen(Arc::downgrade(&listener));
    let layer = PeerDownLayer::new(failures, "http://w1:50052");
    let answering = layer.layer(service_fn(|_: ()| async {
        Ok::<_, std::io::Error>(tonic::Status::not_found("no such task").into_http())
    }));
    answering.oneshot(()).await?;
    assert!(heard.0.lock().is_empty(), "an answer is not a failure");
    let refusing = layer.layer(service_fn(|_: ()| async {
        Err::<Response<Body>, _>(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        ))
    }));
    assert!(refusing.oneshot(()).await.is_err());
    assert_eq!(
        heard.0.lock().as_slice(),
        [("http://w1:50052".to_string(), "refused".to_string())]
    );
    // A listener that is gone hears nothing, and nothing breaks.
    let counted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    struct Counting(Arc<std::sync::atomic::AtomicUsize>);
    impl PeerDown for Counting {
        fn unreachable(&self, _target: &str, _error: &str) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let gone = PeerFailures::default();
    let listener: Arc<dyn PeerDown> = Arc::new(Counting(Arc::clone(&counted)));
    gone.listen(Arc::downgrade(&listener));
    drop(listener);
    let refusing = PeerDownLayer::new(gone, "http://w2:50052").layer(service_fn(|_: ()| async {
        Err::<Response<Body>, _>(std::io::Error::other("reset"))
    }));
    assert!(refusing.oneshot(()).await.is_err());
    assert_eq!(counted.load(std::sync::atomic::Ordering::SeqCst), 0);
    Ok(())
}

/// An answer that breaks off mid-stream (its peer killed while streaming) is reported when the
/// break is read; the frames before it stand.
#[tokio::test]
async fn an_answer_cut_off_is_reported() -> Result<(), Box<dyn std::error::Error>> {
    use http_body_util::BodyExt;
    let failures = PeerFailures::default();
    let heard = Arc::new(Heard::default());
    let listener: Arc<dyn PeerDown> = heard.clone();
    failures.listen(Arc::downgrade(&listener));
    let layer = PeerDownLayer::new(failures, "http://w1:50052");
    let cut_off = layer.layer(service_fn(|_: ()| async {
        let frames: Vec<Result<http_body::Frame<bytes::Bytes>, tonic::Status>> = vec![
            Ok(http_body::Frame::data(bytes::Bytes::from_static(b"first"))),
            // A stream the live peer reset: not a sign it is gone.
            Err(tonic::Status::cancelled("stream reset by peer")),
            Err(tonic::Status::from_error(Box::new(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "connection reset",
            )))),
        ];
        let body = http_body_util::StreamBody::new(futures::stream::iter(frames));
        Ok::<_, std::io::Error>(Response::new(Body::new(body)))
    }));
    let mut body = cut_off.oneshot(()).await?.into_body();
    body.frame().await.ok_or("no first frame")??;
    assert!(heard.0.lock().is_empty(), "nothing is wrong yet");
    assert!(body.frame().await.ok_or("the reset was lost")?.is_err());
    assert!(
        heard.0.lock().is_empty(),
        "a reset stream is not a lost peer"
    );
    assert!(body.frame().await.ok_or("the failure was lost")?.is_err());
    assert_eq!(
        heard.0.lock().as_slice(),
        [(
            "http://w1:50052".to_string(),
            "connection reset".to_string()
        )]
    );
    Ok(())
}
