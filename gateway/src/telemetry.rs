//! Trace context for every process: each query's root span gets a W3C trace id (continuing a
//! client's `traceparent`), which RPCs to workers carry on. Exporting the spans (OTLP) is not
//! built yet; the ids already tie a query's history record to its logs.

use opentelemetry::trace::{TraceContextExt, TraceId, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::registry::LookupSpan;

/// The `tracing` layer that gives spans OpenTelemetry contexts, and the W3C propagator the
/// worker channel uses. Install it once per process, in its subscriber.
pub fn trace_layer<S>() -> impl tracing_subscriber::Layer<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let provider = SdkTracerProvider::builder().build();
    let tracer = provider.tracer("sqe");
    opentelemetry::global::set_tracer_provider(provider);
    tracing_opentelemetry::layer().with_tracer(tracer)
}

/// The span's trace id as 32 hex digits; `None` when the process has no trace layer.
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    let id = span.context().span().span_context().trace_id();
    (id != TraceId::INVALID).then(|| id.to_string())
}
