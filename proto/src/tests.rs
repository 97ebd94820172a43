use std::sync::{Arc, Mutex};

use tonic::{Request, Response, Status};

use super::*;

/// Records what it was told; refuses heartbeats from workers that did not register.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<String>>,
}

impl Recorder {
    fn push(&self, call: String) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(call);
        }
    }

    fn registered(&self, url: &str) -> bool {
        self.calls
            .lock()
            .map(|c| c.iter().any(|c| c == &format!("register {url}")))
            .unwrap_or(false)
    }
}

#[tonic::async_trait]
impl ControlPlane for Recorder {
    async fn register(
        &self,
        request: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        let r = request.into_inner();
        if r.url.is_empty() {
            return Err(Status::invalid_argument("a worker registers with its URL"));
        }
        self.push(format!("register {}", r.url));
        Ok(Response::new(RegisterResponse {
            coordinator_id: "c1".into(),
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let r = request.into_inner();
        let known = self.registered(&r.url);
        self.push(format!("heartbeat {} {}", r.url, r.running_tasks));
        Ok(Response::new(HeartbeatResponse { known }))
    }

    async fn drain(
        &self,
        request: Request<DrainRequest>,
    ) -> Result<Response<DrainResponse>, Status> {
        self.push(format!("drain {}", request.into_inner().url));
        Ok(Response::new(DrainResponse {}))
    }

    async fn deregister(
        &self,
        request: Request<DeregisterRequest>,
    ) -> Result<Response<DeregisterResponse>, Status> {
        self.push(format!("deregister {}", request.into_inner().url));
        Ok(Response::new(DeregisterResponse {}))
    }
}

#[test]
fn control_plane_paths_are_recognized() {
    assert!(is_control_plane_path(
        "/sqe.control.v1.ControlPlane/Register"
    ));
    assert!(is_control_plane_path(
        "/sqe.control.v1.ControlPlane/Unknown"
    ));
    assert!(!is_control_plane_path(
        "/sqe.control.v1.ControlPlaneX/Register"
    ));
    assert!(!is_control_plane_path(
        "/arrow.flight.protocol.FlightService/DoGet"
    ));
    assert!(!is_control_plane_path(
        "sqe.control.v1.ControlPlane/Register"
    ));
}

#[tokio::test]
async fn every_method_round_trips_over_grpc() -> Result<(), Box<dyn std::error::Error>> {
    let recorder = Arc::new(Recorder::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(ControlPlaneServer::from_arc(Arc::clone(&recorder)))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let mut client = ControlPlaneClient::new(channel);
    let url = "http://w1:50052".to_string();

    // Unknown before registering: the worker is told to register.
    let before = client
        .heartbeat(HeartbeatRequest {
            node_id: "w1".into(),
            url: url.clone(),
            running_tasks: 0,
            draining: false,
        })
        .await?
        .into_inner();
    assert!(!before.known);
    let registered = client
        .register(RegisterRequest {
            node_id: "w1".into(),
            url: url.clone(),
            version: "v1".into(),
            heartbeat_interval_ms: 5000,
            task_threads: 4,
            memory_limit_bytes: 0,
        })
        .await?
        .into_inner();
    assert_eq!(registered.coordinator_id, "c1");
    let after = client
        .heartbeat(HeartbeatRequest {
            node_id: "w1".into(),
            url: url.clone(),
            running_tasks: 3,
            draining: false,
        })
        .await?
        .into_inner();
    assert!(after.known);
    client
        .drain(DrainRequest {
            node_id: "w1".into(),
            url: url.clone(),
        })
        .await?;
    client
        .deregister(DeregisterRequest {
            node_id: "w1".into(),
            url: url.clone(),
        })
        .await?;
    // The handler's error reaches the client as its status.
    let refused = client
        .register(RegisterRequest::default())
        .await
        .err()
        .map(|s| s.code());
    assert_eq!(refused, Some(tonic::Code::InvalidArgument));

    let calls = recorder.calls.lock().map(|c| c.clone()).unwrap_or_default();
    assert_eq!(
        calls,
        [
            format!("heartbeat {url} 0"),
            format!("register {url}"),
            format!("heartbeat {url} 3"),
            format!("drain {url}"),
            format!("deregister {url}"),
        ]
    );
    server.abort();
    Ok(())
}

/// Where the generated code is checked in, and what it is generated from.
const GENERATED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/generated/sqe.control.v1.rs"
);
const PROTO_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/proto");

#[test]
fn the_checked_in_code_is_what_the_proto_generates() -> Result<(), Box<dyn std::error::Error>> {
    let out = tempfile::tempdir()?;
    let descriptors = protox::compile(["control.proto"], [PROTO_DIR])?;
    tonic_prost_build::configure()
        .build_transport(false)
        .emit_rerun_if_changed(false)
        .out_dir(out.path())
        .compile_fds(descriptors)?;
    let generated = std::fs::read_to_string(out.path().join("sqe.control.v1.rs"))?;
    if std::env::var_os("SQE_REGENERATE_PROTO").is_some() {
        std::fs::write(GENERATED, &generated)?;
        return Ok(());
    }
    let checked_in = std::fs::read_to_string(GENERATED)?;
    assert!(
        generated == checked_in,
        "src/generated/sqe.control.v1.rs differs from what proto/control.proto generates: \
         run `SQE_REGENERATE_PROTO=1 cargo test -p sqe-proto` and commit the result"
    );
    Ok(())
}
