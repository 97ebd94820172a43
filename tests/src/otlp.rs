//! An OTLP gRPC trace receiver on the official `opentelemetry-proto` service definition:
//! what Tempo or a collector would receive from SQE's processes, kept for assertions.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use tokio::sync::oneshot;
use tokio_stream::wrappers::TcpListenerStream;

/// One received span, with the resource of the process that sent it.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub service_name: String,
    /// `service.instance.id`: the sending node.
    pub instance: String,
    pub service_version: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// String renderings of the span's attributes.
    pub attributes: HashMap<String, String>,
}

#[derive(Clone, Default)]
struct Collected(Arc<Mutex<Vec<ReceivedSpan>>>);

fn text(value: Option<&Value>) -> String {
    match value {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(pairs: &[KeyValue]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|kv| {
            (
                kv.key.clone(),
                text(kv.value.as_ref().and_then(|v| v.value.as_ref())),
            )
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tonic::async_trait]
impl TraceService for Collected {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut received = Vec::new();
        for resource_spans in request.into_inner().resource_spans {
            let resource = resource_spans
                .resource
                .map(|r| attributes(&r.attributes))
                .unwrap_or_default();
            let attr = |key: &str| resource.get(key).cloned().unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    received.push(ReceivedSpan {
                        service_name: attr("service.name"),
                        instance: attr("service.instance.id"),
                        service_version: attr("service.version"),
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        name: span.name.clone(),
                        attributes: attributes(&span.attributes),
                    });
                }
            }
        }
        self.0
            .lock()
            .map_err(|_| tonic::Status::internal("poisoned"))?
            .extend(received);
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

/// A receiver listening on 127.0.0.1; stops when dropped.
pub struct OtlpReceiver {
    pub addr: SocketAddr,
    spans: Collected,
    _stop: oneshot::Sender<()>,
}

impl OtlpReceiver {
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let spans = Collected::default();
        let (stop, stopped) = oneshot::channel::<()>();
        let service = TraceServiceServer::new(spans.clone());
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(TcpListenerStream::new(listener), async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            spans,
            _stop: stop,
        })
    }

    /// `http://127.0.0.1:<port>`, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.0.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
