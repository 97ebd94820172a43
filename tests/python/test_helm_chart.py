"""The Helm chart, rendered by Helm's own library (helm-python-sdk) and validated strictly
against Kubernetes' schemas (kubernetes-validate), plus the Dockerfile's shape.

Run by tests/tests/integration/helm_chart.rs:
    python test_helm_chart.py <chart dir> <Dockerfile> <out dir>
Writes the rendered coordinator.toml and worker.toml of the production values to <out dir>, for
the Rust side to load with SQE's own config loader.
"""

import os
import re
import sys
import unittest

import helm_python as helm
import kubernetes_validate
import yaml

CHART, DOCKERFILE, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
KUBERNETES = "1.33.0"
PRODUCTION = helm.values_from_yaml(open(os.path.join(CHART, "values-production.yaml")).read())


def render(values):
    return helm.Chart.load(CHART).render(values, name="demo", namespace="sqe", is_install=True)


def documents(rendered):
    for path, text in sorted(rendered.items()):
        for doc in yaml.safe_load_all(text):
            if doc:
                yield path, doc


class HelmChart(unittest.TestCase):
    def check_valid(self, rendered):
        kinds = []
        for path, doc in documents(rendered):
            kinds.append(doc["kind"])
            if doc["apiVersion"].startswith("monitoring.coreos.com/"):
                # A CRD: no schema in Kubernetes'; check what Prometheus Operator needs.
                self.assertEqual(doc["spec"]["endpoints"][0]["port"], "metrics")
                continue
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        return kinds

    def test_default_values_render_valid_manifests(self):
        rendered = render({"workerSecret": {"value": "a-cluster-secret-of-the-chart-test"}})
        kinds = self.check_valid(rendered)
        self.assertEqual(
            sorted(kinds),
            ["ConfigMap", "Deployment", "Deployment", "PodDisruptionBudget", "Secret", "Service", "Service"],
        )
        self.assertEqual(helm.lint(CHART, {"workerSecret": {"value": "a-cluster-secret-of-the-chart-test"}}, strict=True)["errors"], [])

    def test_production_values_render_valid_manifests_and_config(self):
        values = dict(PRODUCTION, workerSecret={"existingSecret": "sqe-worker-secret"})
        rendered = render(values)
        kinds = self.check_valid(rendered)
        self.assertIn("ServiceMonitor", kinds)
        self.assertNotIn("Secret", kinds, "an existing secret is used, not created")
        docs = dict(((d["kind"], d["metadata"]["name"]), d) for _, d in documents(rendered))
        worker = docs[("Deployment", "demo-sqe-worker")]
        self.assertEqual(worker["spec"]["replicas"], 4)
        pod = worker["spec"]["template"]["spec"]
        self.assertEqual(pod["terminationGracePeriodSeconds"], 330, "drain timeout + 30 s")
        env = {e["name"]: e for e in pod["containers"][0]["env"]}
        self.assertEqual(env["SQE_WORKER_SECRET"]["valueFrom"]["secretKeyRef"]["name"], "sqe-worker-secret")
        self.assertEqual(env["SQE_VERSION"]["value"], "0.1.0")
        # TLS between the nodes: https everywhere, the cluster certificate mounted in every pod.
        self.assertEqual(env["SQE_WORKER__ADVERTISE_URL"]["value"], "https://$(POD_IP):50052")
        for deployment in ("demo-sqe-worker", "demo-sqe-coordinator"):
            spec = docs[("Deployment", deployment)]["spec"]["template"]["spec"]
            volumes = {v["name"]: v for v in spec["volumes"]}
            self.assertEqual(volumes["cluster-tls"]["secret"]["secretName"], "sqe-cluster-tls")
            mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
            self.assertEqual(mounts["cluster-tls"], "/etc/sqe/tls")
        self.assertEqual(pod["containers"][0]["readinessProbe"]["httpGet"]["path"], "/readyz")
        config = docs[("ConfigMap", "demo-sqe-config")]["data"]
        self.assertIn("allow_unauthenticated_workers = false", config["coordinator.toml"])
        for name in ("coordinator.toml", "worker.toml"):
            self.assertIn('[cluster]\ntls_cert_file = "/etc/sqe/tls/tls.crt"', config[name])
            self.assertIn("tls_client_auth = true", config[name])
        self.assertIn('coordinator_url = "https://demo-sqe-coordinator:50051"', config["worker.toml"])
        with self.assertRaises(helm.HelmRenderError) as refused:
            render(dict(values, clusterTls={"enabled": True, "secretName": ""}))
        self.assertIn("clusterTls.secretName", str(refused.exception))
        # The catalog's OAuth2 client: credentials from the Secret on the coordinator only.
        coordinator_pod = docs[("Deployment", "demo-sqe-coordinator")]["spec"]["template"]["spec"]
        coordinator_env = {e["name"]: e for e in coordinator_pod["containers"][0]["env"]}
        self.assertEqual(
            coordinator_env["SQE_AUTH__CLIENT_SECRET"]["valueFrom"]["secretKeyRef"],
            {"name": "sqe-catalog-client", "key": "client-secret"},
        )
        self.assertEqual(coordinator_env["SQE_AUTH__CLIENT_ID"]["valueFrom"]["secretKeyRef"]["key"], "client-id")
        self.assertNotIn("SQE_AUTH__CLIENT_SECRET", env, "workers never log in to the catalog")
        self.assertIn('[auth]\nscope = "PRINCIPAL_ROLE:ALL"', config["coordinator.toml"])
        self.assertNotIn("[auth]", config["worker.toml"])
        with self.assertRaises(helm.HelmRenderError) as refused:
            render(dict(values, catalog={"type": "sql", "auth": {"credentialsSecret": "sqe-catalog-client"}}))
        self.assertIn("catalog.auth", str(refused.exception))
        self.assertIn('ui_trace_url = "http://grafana.monitoring:3000/explore?', config["coordinator.toml"])
        self.assertIn('trino_spooling_location = "s3://warehouse/spool"', config["coordinator.toml"])
        for name in ("coordinator.toml", "worker.toml"):
            self.assertIn('otlp_endpoint = "http://tempo.monitoring:4317"', config[name])
            self.assertIn('"deployment.environment" = "production"', config[name])
        for name in ("coordinator.toml", "worker.toml"):
            with open(os.path.join(OUT, name), "w") as f:
                f.write(config[name])

    def test_dns_discovery_lists_the_headless_service_instead_of_registering(self):
        values = {"workerSecret": {"value": "a-cluster-secret-of-the-chart-test"}, "worker": {"discovery": "dns"}}
        rendered = render(values)
        self.check_valid(rendered)
        docs = dict(((d["kind"], d["metadata"]["name"]), d) for _, d in documents(rendered))
        config = docs[("ConfigMap", "demo-sqe-config")]["data"]
        self.assertIn('worker_dns = "demo-sqe-workers:50052"', config["coordinator.toml"])
        self.assertNotIn("coordinator_url", config["worker.toml"])
        headless = docs[("Service", "demo-sqe-workers")]
        self.assertEqual(headless["spec"]["clusterIP"], "None")
        registering = documents(render({"workerSecret": {"value": "a-cluster-secret-of-the-chart-test"}}))
        config = dict(((d["kind"], d["metadata"]["name"]), d) for _, d in registering)[("ConfigMap", "demo-sqe-config")]["data"]
        self.assertNotIn("worker_dns", config["coordinator.toml"])
        self.assertIn('coordinator_url = "http://demo-sqe-coordinator:50051"', config["worker.toml"])
        self.assertNotIn("[cluster]", config["worker.toml"], "TLS between the nodes is off by default")
        with self.assertRaises(helm.HelmRenderError) as refused:
            render({"workerSecret": {"value": "a-cluster-secret-of-the-chart-test"}, "worker": {"discovery": "gossip"}})
        self.assertIn("worker.discovery", str(refused.exception))

    def test_a_short_worker_secret_fails_with_a_clear_message(self):
        with self.assertRaises(helm.HelmRenderError) as refused:
            render({"workerSecret": {"value": "s3cret"}})
        self.assertIn("at least 16 bytes", str(refused.exception))

    def test_production_values_without_a_secret_fail_with_a_clear_message(self):
        with self.assertRaises(helm.HelmRenderError) as refused:
            render(PRODUCTION)
        self.assertIn("production clusters refuse unauthenticated workers", str(refused.exception))
        # Without production's flag, a missing secret still needs an explicit opt-out.
        with self.assertRaises(helm.HelmRenderError) as default:
            render({})
        self.assertIn("allowUnauthenticatedWorkers=true", str(default.exception))

    def test_dockerfile_is_multi_stage_non_root_and_runs_sqe(self):
        with open(DOCKERFILE) as f:
            text = f.read()
        stages = re.findall(r"^FROM\s+\S+(?:\s+AS\s+(\w+))?", text, re.M | re.I)
        self.assertGreaterEqual(len(stages), 2, "a build stage and a runtime stage")
        self.assertRegex(text, r"(?m)^COPY --from=build\s+\S*/release/sqe\s")
        users = re.findall(r"(?m)^USER\s+(\S+)", text)
        self.assertTrue(users and users[-1] not in ("root", "0"), users)
        self.assertRegex(text, r'(?m)^ENTRYPOINT \["/usr/local/bin/sqe"\]')
        # The chart's command lines match the image's entry point.
        rendered = render({"workerSecret": {"value": "a-cluster-secret-of-the-chart-test"}})
        args = [
            d["spec"]["template"]["spec"]["containers"][0]["args"]
            for _, d in documents(rendered)
            if d["kind"] == "Deployment"
        ]
        self.assertEqual(
            sorted(a[0] for a in args), ["coordinator", "worker"]
        )


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
