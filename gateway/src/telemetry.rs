//! Traces of every process: each query's root span gets a W3C trace id (continuing a client's
//! `traceparent`), RPCs to workers carry it on, and with an OTLP endpoint configured
//! (`[telemetry]` or the standard `OTEL_*` variables) the spans are exported in batches.

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing::Subscriber;
use tracing_subscriber::registry::LookupSpan;

use crate::config::TelemetryConfig;
use crate::error::ConfigError;

/// Who this process is, in its spans' resource.
#[derive(Debug, Clone)]
pub struct ProcessIdentity {
    /// `coordinator`, `worker` or `local`: the default service name is `sqe-<role>`.
    pub role: &'static str,
    /// `service.instance.id`: the node id `system.runtime.nodes` shows.
    pub node_id: String,
    /// `service.version`.
    pub version: String,
}

/// Where spans go, resolved from `[telemetry]` and the environment.
#[derive(Debug, Clone, PartialEq)]
struct ExportSettings {
    endpoint: String,
    /// `None`: the SDK's default, which reads `OTEL_TRACES_SAMPLER`.
    sampling_ratio: Option<f64>,
}

/// `None` when nothing asks for export (or `OTEL_SDK_DISABLED=true`). The config's endpoint
/// wins over `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, which wins over `OTEL_EXPORTER_OTLP_ENDPOINT`.
fn export_settings(
    config: &TelemetryConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Option<ExportSettings> {
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let endpoint = config
        .otlp_endpoint
        .clone()
        .or_else(|| set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"))?;
    Some(ExportSettings {
        endpoint,
        sampling_ratio: config.sampling_ratio,
    })
}

/// `service.name` as `OTEL_RESOURCE_ATTRIBUTES` gives it (`key=value,...`, values
/// percent-encoded).
fn service_name_attribute(attributes: &str) -> Option<String> {
    attributes.split(',').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key.trim() == "service.name").then(|| value.trim().to_string())
    })
}

/// The resource: SQE's identity over the SDK's defaults and `OTEL_RESOURCE_ATTRIBUTES`, then
/// `[telemetry]` (which wins). `service.name`: `service_name`, else `OTEL_SERVICE_NAME`, else
/// `OTEL_RESOURCE_ATTRIBUTES`' own, else `sqe-<role>`.
fn resource(
    config: &TelemetryConfig,
    identity: &ProcessIdentity,
    env: impl Fn(&str) -> Option<String>,
) -> Resource {
    let service_name = config
        .service_name
        .clone()
        .or_else(|| env("OTEL_SERVICE_NAME"))
        .or_else(|| env("OTEL_RESOURCE_ATTRIBUTES").and_then(|a| service_name_attribute(&a)))
        .unwrap_or_else(|| format!("sqe-{}", identity.role));
    Resource::builder()
        .with_service_name(service_name)
        .with_attributes([
            KeyValue::new("service.instance.id", identity.node_id.clone()),
            KeyValue::new("service.version", identity.version.clone()),
            KeyValue::new("sqe.role", identity.role),
        ])
        .with_attributes(
            config
                .resource_attributes
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
        )
        .build()
}

/// The process's tracer provider: flush it at exit with [`Telemetry::shutdown`].
#[derive(Debug)]
pub struct Telemetry {
    provider: SdkTracerProvider,
    exporting: bool,
}

impl Telemetry {
    /// Whether spans leave the process.
    pub fn exporting(&self) -> bool {
        self.exporting
    }

    /// Exports what is still buffered; waits at most the exporter's timeout.
    pub fn shutdown(&self) {
        if self.exporting
            && let Err(e) = self.provider.shutdown()
        {
            tracing::warn!(error = %e, "could not flush the last spans");
        }
    }
}

/// Builds the tracer provider for `identity`: exporting over OTLP gRPC when configured.
/// Must run inside a Tokio runtime (the exporter's channel lives on it).
pub fn start(
    config: &TelemetryConfig,
    identity: &ProcessIdentity,
) -> Result<Telemetry, ConfigError> {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let env = |name: &str| std::env::var(name).ok();
    let mut builder = SdkTracerProvider::builder().with_resource(resource(config, identity, env));
    let export = export_settings(config, env);
    if let Some(export) = &export {
        let mut exporter = SpanExporter::builder()
            .with_tonic()
            .with_endpoint(export.endpoint.clone());
        if export.endpoint.starts_with("https://") {
            exporter = exporter
                .with_tls_config(tonic::transport::ClientTlsConfig::new().with_native_roots());
        }
        let exporter = exporter.build().map_err(|e| {
            ConfigError::Invalid(format!(
                "OTLP endpoint '{}' ([telemetry] or OTEL_EXPORTER_OTLP_*): {e}",
                export.endpoint
            ))
        })?;
        builder = builder.with_batch_exporter(exporter);
        if let Some(ratio) = export.sampling_ratio {
            builder = builder.with_sampler(Sampler::ParentBased(Box::new(
                Sampler::TraceIdRatioBased(ratio),
            )));
        }
    }
    let provider = builder.build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    Ok(Telemetry {
        provider,
        exporting: export.is_some(),
    })
}

/// The `tracing` layer that gives spans OpenTelemetry contexts (and exports them through
/// `telemetry`). Install it once per process, in its subscriber. It has its own filter, SQE's
/// spans at INFO, so that the log filter (`SQE_LOG`) neither turns traces off nor exports
/// the internals of the HTTP/2 stack.
pub fn trace_layer<S>(telemetry: &Telemetry) -> impl tracing_subscriber::Layer<S> + use<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    use tracing_subscriber::Layer as _;
    let sqe = tracing_subscriber::filter::Targets::new()
        .with_target("sqe_gateway", tracing::Level::INFO)
        .with_target("sqe_engine", tracing::Level::INFO)
        .with_target("sqe_iceberg", tracing::Level::INFO)
        .with_target("sqe_layers", tracing::Level::INFO)
        .with_target("sqe_worker", tracing::Level::INFO);
    tracing_opentelemetry::layer()
        .with_tracer(telemetry.provider.tracer("sqe"))
        .with_filter(sqe)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use opentelemetry::Key;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn export_is_off_unless_an_endpoint_is_set_and_the_config_wins() {
        let none = TelemetryConfig::default();
        assert_eq!(export_settings(&none, env(&[])), None);
        let from_env = export_settings(
            &none,
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")]),
        );
        assert_eq!(
            from_env.map(|e| e.endpoint).as_deref(),
            Some("http://collector:4317")
        );
        let empty_is_unset = export_settings(
            &none,
            env(&[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
            ]),
        );
        assert_eq!(
            empty_is_unset.map(|e| e.endpoint).as_deref(),
            Some("http://collector:4317")
        );
        let traces_first = export_settings(
            &none,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://general:4317"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4317"),
            ]),
        );
        assert_eq!(
            traces_first.map(|e| e.endpoint).as_deref(),
            Some("http://traces:4317")
        );
        let configured = TelemetryConfig {
            otlp_endpoint: Some("http://tempo:4317".into()),
            sampling_ratio: Some(0.25),
            ..Default::default()
        };
        assert_eq!(
            export_settings(
                &configured,
                env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://other:4317")])
            ),
            Some(ExportSettings {
                endpoint: "http://tempo:4317".into(),
                sampling_ratio: Some(0.25)
            })
        );
        assert_eq!(
            export_settings(&configured, env(&[("OTEL_SDK_DISABLED", "true")])),
            None
        );
    }

    #[test]
    fn the_resource_names_the_process() {
        let identity = ProcessIdentity {
            role: "worker",
            node_id: "worker-7".into(),
            version: "1.2.3".into(),
        };
        let get =
            |r: &Resource, k: &'static str| r.get(&Key::from_static_str(k)).map(|v| v.to_string());
        let plain = resource(&TelemetryConfig::default(), &identity, env(&[]));
        assert_eq!(get(&plain, "service.name").as_deref(), Some("sqe-worker"));
        assert_eq!(
            get(&plain, "service.instance.id").as_deref(),
            Some("worker-7")
        );
        assert_eq!(get(&plain, "service.version").as_deref(), Some("1.2.3"));

        let named_by_attributes = resource(
            &TelemetryConfig::default(),
            &identity,
            env(&[(
                "OTEL_RESOURCE_ATTRIBUTES",
                "team=data,service.name=lakehouse",
            )]),
        );
        assert_eq!(
            get(&named_by_attributes, "service.name").as_deref(),
            Some("lakehouse")
        );
        let named_by_env = resource(
            &TelemetryConfig::default(),
            &identity,
            env(&[("OTEL_SERVICE_NAME", "from-env")]),
        );
        assert_eq!(
            get(&named_by_env, "service.name").as_deref(),
            Some("from-env")
        );

        let configured = TelemetryConfig {
            service_name: Some("sqe-prod-worker".into()),
            resource_attributes: [("deployment.environment".to_string(), "prod".to_string())]
                .into(),
            ..Default::default()
        };
        let r = resource(
            &configured,
            &identity,
            env(&[("OTEL_SERVICE_NAME", "from-env")]),
        );
        assert_eq!(get(&r, "service.name").as_deref(), Some("sqe-prod-worker"));
        assert_eq!(get(&r, "deployment.environment").as_deref(), Some("prod"));
    }
}
