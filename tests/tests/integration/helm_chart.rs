//! The Helm chart rendered by Helm's own library and validated against Kubernetes' schemas
//! (`tests/python/test_helm_chart.py`), and its rendered config files loaded by SQE's own
//! config loader with the environment its pods set.

use std::path::PathBuf;

use sqe_gateway::config::{ConfigFile, CoordinatorConfig, WorkerConfig};
use sqe_tests::python::run_python;

use crate::TestResult;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn the_chart_renders_valid_manifests_and_configs_sqe_accepts() -> TestResult {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = tempfile::tempdir()?;
    run_python(
        "test_helm_chart.py",
        &[
            root.join("helm/sqe").display().to_string(),
            root.join("Dockerfile").display().to_string(),
            out.path().display().to_string(),
        ],
    )
    .await?;

    // What every pod gets from the chart: the secret and the release's version.
    let common = [
        ("SQE_WORKER_SECRET", "from-the-secret"),
        ("SQE_VERSION", "0.1.0"),
    ];
    let text = std::fs::read_to_string(out.path().join("coordinator.toml"))?;
    let mut coordinator_env = common.to_vec();
    coordinator_env.extend([
        ("SQE_AUTH__CLIENT_ID", "sqe"),
        ("SQE_AUTH__CLIENT_SECRET", "from-the-catalog-secret"),
    ]);
    let coordinator =
        CoordinatorConfig::from_toml(&text, "rendered coordinator.toml", &env(&coordinator_env))?;
    let oauth2 = coordinator
        .auth
        .oauth2()?
        .ok_or("the catalog's client credentials were not taken")?;
    assert_eq!(
        (oauth2.client_id.as_str(), oauth2.client_secret.as_str()),
        ("sqe", "from-the-catalog-secret")
    );
    assert_eq!(oauth2.scope.as_deref(), Some("PRINCIPAL_ROLE:ALL"));
    assert_eq!(coordinator.coordinator.metrics_port, 9464);
    assert!(
        coordinator
            .coordinator
            .ui_trace_url
            .as_deref()
            .is_some_and(|url| url.contains("{trace_id}")),
        "the web UI's trace link: {:?}",
        coordinator.coordinator.ui_trace_url
    );
    assert!(coordinator.coordinator.trino_spooling);
    assert_eq!(
        coordinator.coordinator.trino_spooling_location.as_deref(),
        Some("s3://warehouse/spool")
    );
    // Clients outside the cluster reach the coordinator Service only.
    assert!(!coordinator.coordinator.flight_sql_parallel_endpoints);
    assert!(!coordinator.coordinator.allow_unauthenticated_workers);
    assert_eq!(
        coordinator.worker_secret()?.as_deref(),
        Some("from-the-secret")
    );
    assert_eq!(
        coordinator.coordinator.expected_worker_version.as_deref(),
        Some("0.1.0")
    );

    let mut worker_env = common.to_vec();
    worker_env.extend([
        ("SQE_WORKER__NODE_ID", "demo-sqe-worker-7d9c-abcde"),
        ("SQE_WORKER__ADVERTISE_URL", "https://10.0.0.7:50052"),
    ]);
    let text = std::fs::read_to_string(out.path().join("worker.toml"))?;
    let worker = WorkerConfig::from_toml(&text, "rendered worker.toml", &env(&worker_env))?;
    assert_eq!(
        worker.worker.coordinator_url.as_deref(),
        Some("https://demo-sqe-coordinator:50051")
    );
    assert_eq!(
        worker.worker.advertise_url.as_deref(),
        Some("https://10.0.0.7:50052")
    );
    assert_eq!(
        worker.worker.node_id.as_deref(),
        Some("demo-sqe-worker-7d9c-abcde")
    );
    assert_eq!(worker.worker.metrics_port, 9465);
    // Both speak TLS to each other, with the cluster certificate the chart mounts.
    for cluster in [&coordinator.cluster, &worker.cluster] {
        let tls = cluster
            .tls()
            .ok_or("the production values turn on TLS between the nodes")?;
        assert_eq!(
            tls.ca_file.as_deref(),
            Some(std::path::Path::new("/etc/sqe/tls/ca.crt"))
        );
        assert!(tls.require_client_cert);
        assert_eq!(tls.server_name.as_deref(), Some("sqe-cluster"));
    }
    assert_eq!(worker.worker_secret()?.as_deref(), Some("from-the-secret"));
    for telemetry in [&coordinator.telemetry, &worker.telemetry] {
        assert_eq!(
            telemetry.otlp_endpoint.as_deref(),
            Some("http://tempo.monitoring:4317")
        );
        assert_eq!(telemetry.sampling_ratio, Some(0.2));
        assert_eq!(
            telemetry
                .resource_attributes
                .get("k8s.namespace.name")
                .map(String::as_str),
            Some("sqe")
        );
    }
    Ok(())
}
