use std::convert::Infallible;

use futures::StreamExt;
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

/// The `traceparent` a request left with.
fn sent_traceparent(request: &Request<Body>) -> Result<String, tower::BoxError> {
    Ok(request
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .ok_or("no traceparent")?
        .to_string())
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_outside_any_span_continues_the_trace_its_request_carries()
-> Result<(), tower::BoxError> {
    let _guard = otel();
    // What datafusion-distributed does: a task spawned without the query's span sends a request
    // whose passthrough headers carry the query's context.
    let carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (mock, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let mut client = TraceLayer::new("http://w1:50052").layer(mock);
    let mut request = Request::new(Body::empty());
    request
        .headers_mut()
        .insert("traceparent", HeaderValue::from_static(carried));
    let call = client.ready().await?.call(request);
    let (sent, reply) = handle.next_request().await.ok_or("no request")?;
    reply.send_response(Response::new(Body::empty()));
    call.await?;
    let traceparent = sent_traceparent(&sent)?;
    assert!(
        traceparent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
        "same trace: {traceparent}"
    );
    assert!(
        !traceparent.contains("00f067aa0ba902b7"),
        "the call's own span is the parent the server sees: {traceparent}"
    );

    // Inside a span, that span's trace wins over whatever the request carries.
    let query = tracing::info_span!("query");
    let mut request = Request::new(Body::empty());
    request
        .headers_mut()
        .insert("traceparent", HeaderValue::from_static(carried));
    client.ready().await?;
    let call = query.in_scope(|| client.call(request));
    let (sent, reply) = handle.next_request().await.ok_or("no request")?;
    reply.send_response(Response::new(Body::empty()));
    call.await?;
    assert!(
        sent_traceparent(&sent)?.starts_with(&format!("00-{}-", trace_id(&query))),
        "{}",
        sent_traceparent(&sent)?
    );
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn work_a_streamed_response_drives_runs_in_the_server_span() -> Result<(), tower::BoxError> {
    use http_body_util::BodyExt;
    let _guard = otel();
    let query = tracing::info_span!("query");
    let expected = trace_id(&query);
    let mut traceparent = HeaderMap::new();
    inject_context(&query, &mut traceparent);
    // The body's frames are made while it is polled: each records the trace it ran in.
    let handler = tower::service_fn(|_: Request<Body>| async {
        let frames = futures::stream::poll_fn(|_| {
            let id = trace_id(&Span::current());
            std::task::Poll::Ready(Some(Ok::<_, tonic::Status>(http_body::Frame::data(
                bytes::Bytes::from(id),
            ))))
        })
        .take(2);
        Ok::<_, Infallible>(Response::new(Body::new(http_body_util::StreamBody::new(
            frames,
        ))))
    });
    let mut server = TraceExtractLayer::new("worker-1").layer(handler);
    let mut incoming = Request::new(Body::empty());
    *incoming.headers_mut() = traceparent;
    let response = server.ready().await?.call(incoming).await?;
    let body = response.into_body().collect().await?.to_bytes();
    assert_eq!(
        String::from_utf8_lossy(&body),
        format!("{expected}{expected}")
    );
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn calls_outside_any_trace_start_none() -> Result<(), tower::BoxError> {
    let _guard = otel();
    // A heartbeat: no span around it, no context in it.
    let (mock, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let mut client = TraceLayer::new("http://coordinator:50051").layer(mock);
    let call = client.ready().await?.call(Request::new(Body::empty()));
    let (sent, reply) = handle.next_request().await.ok_or("no request")?;
    reply.send_response(Response::new(Body::empty()));
    call.await?;
    assert!(sent.headers().get("traceparent").is_none());

    // Its server side runs the handler outside any span.
    let handler = tower::service_fn(|_: Request<Body>| async {
        let mut response = Response::new(Body::empty());
        if Span::current().is_none() {
            response
                .headers_mut()
                .insert("x-untraced", HeaderValue::from_static("yes"));
        }
        Ok::<_, Infallible>(response)
    });
    let mut server = TraceExtractLayer::new("coordinator").layer(handler);
    let response = server
        .ready()
        .await?
        .call(Request::new(Body::empty()))
        .await?;
    assert!(response.headers().contains_key("x-untraced"));
    Ok(())
}
