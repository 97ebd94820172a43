use std::convert::Infallible;

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tower::ServiceExt;
use tracing_subscriber::layer::SubscriberExt;

use super::*;

/// A subscriber that gives spans OpenTelemetry ids, and the W3C propagator.
fn otel() -> tracing::subscriber::DefaultGuard {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let provider = SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    tracing::subscriber::set_default(subscriber)
}

fn trace_id(span: &Span) -> String {
    span.context().span().span_context().trace_id().to_string()
}

#[tokio::test(flavor = "current_thread")]
async fn client_and_server_share_one_trace() -> Result<(), tower::BoxError> {
    let _guard = otel();
    let root = tracing::info_span!("query");
    let expected = trace_id(&root);

    // Client side: the request leaves with a traceparent of the caller's trace.
    let (mock, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let mut client = TraceLayer::new("http://w1:50052").layer(mock);
    let call = {
        let _entered = root.enter();
        client.ready().await?.call(Request::new(Body::empty()))
    };
    let (sent, reply) = handle.next_request().await.ok_or("no request")?;
    reply.send_response(Response::new(Body::empty()));
    call.await?;
    let traceparent = sent
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .ok_or("no traceparent")?
        .to_string();
    assert!(
        traceparent.starts_with(&format!("00-{expected}-")),
        "{traceparent}"
    );

    // Server side: the handler runs in a span of that same trace.
    let handler = tower::service_fn(|_: Request<Body>| async {
        let mut response = Response::new(Body::empty());
        let id = trace_id(&Span::current());
        response.headers_mut().insert(
            "x-trace",
            HeaderValue::from_str(&id).unwrap_or(HeaderValue::from_static("?")),
        );
        Ok::<_, Infallible>(response)
    });
    let mut server = TraceExtractLayer::new("worker-1").layer(handler);
    let mut incoming = Request::new(Body::empty());
    incoming
        .headers_mut()
        .insert("traceparent", HeaderValue::from_str(&traceparent)?);
    let response = server.ready().await?.call(incoming).await?;
    assert_eq!(
        response
            .headers()
            .get("x-trace")
            .and_then(|v| v.to_str().ok()),
        Some(expected.as_str())
    );
    Ok(())
}
