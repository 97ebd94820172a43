//! TLS between the nodes, on real processes: a coordinator and two registering workers with
//! `[cluster]` mutual TLS answer a distributed query, while a worker refuses callers in clear
//! and callers without a certificate of the cluster's CA.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use datafusion_distributed::{GetWorkerInfoRequest, WorkerServiceClient};
use sqe_tests::process::{SqeProcess, free_port, shell};
use sqe_tests::tls::Authority;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use crate::TestResult;

const SECRET: &str = "the-cluster-secret-of-the-tls-test";
/// The name every node's certificate carries; nodes are dialled by address.
const CLUSTER_NAME: &str = "sqe-cluster";

fn quoted(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

/// `sqe shell` over TLS to the coordinator's Flight SQL port.
fn sql(cwd: &Path, port: u16, ca: &Path, statement: &str) -> Result<String, String> {
    let (port, ca) = (port.to_string(), ca.display().to_string());
    let options = [
        "--port",
        &port,
        "--tls-ca-cert",
        &ca,
        "--tls-domain",
        CLUSTER_NAME,
    ];
    shell(cwd, &options, statement)
}

/// A call to a worker's task service: how far a caller with this channel gets.
async fn worker_info(endpoint: Endpoint) -> Result<(), tonic::Status> {
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| tonic::Status::unavailable(format!("connect: {e}")))?;
    WorkerServiceClient::new(channel)
        .get_worker_info(GetWorkerInfoRequest {})
        .await
        .map(drop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_speak_mutual_tls_and_refuse_callers_in_clear_or_without_a_certificate() -> TestResult
{
    let dir = tempfile::tempdir()?;
    let cwd = dir.path();
    let ca = Authority::new("SQE cluster CA")?;
    let ca_file = ca.write_ca(&cwd.join("cluster-ca.pem"))?;
    let (cert, key) = ca.issue(cwd, "node", &[CLUSTER_NAME])?;
    let cluster = format!(
        "[cluster]\ntls_cert_file = {}\ntls_key_file = {}\ntls_ca_file = {}\n\
         tls_client_auth = true\ntls_server_name = \"{CLUSTER_NAME}\"\n",
        quoted(&cert),
        quoted(&key),
        quoted(&ca_file)
    );
    let (flight, worker_ports) = (free_port()?, [free_port()?, free_port()?]);
    // The control plane rides on the Flight SQL port: it serves with the cluster certificate.
    let coordinator_toml = cwd.join("coordinator.toml");
    std::fs::write(
        &coordinator_toml,
        format!(
            "[coordinator]\nbind_address = \"127.0.0.1\"\nflight_sql_port = {flight}\n\
             trino_http_port = 0\nworker_secret = \"{SECRET}\"\nscan_bytes_per_partition = 1\n\
             tls_cert_file = {}\ntls_key_file = {}\n\
             [catalog]\nuri = {}\nwarehouse = {}\n{cluster}",
            quoted(&cert),
            quoted(&key),
            quoted(&cwd.join("catalog.db")),
            quoted(&cwd.join("warehouse")),
        ),
    )?;
    let startup = Duration::from_secs(60);
    let mut coordinator = SqeProcess::spawn(
        "coordinator",
        &[
            "coordinator",
            "--config",
            &coordinator_toml.display().to_string(),
        ],
        cwd,
        &[],
    )?;
    coordinator.wait_for_port(SocketAddr::from(([127, 0, 0, 1], flight)), startup)?;
    let mut workers = Vec::new();
    for (n, port) in worker_ports.iter().enumerate() {
        let toml = cwd.join(format!("worker-{n}.toml"));
        std::fs::write(
            &toml,
            format!(
                "[worker]\nnode_id = \"worker-{n}\"\nbind_address = \"127.0.0.1\"\n\
                 flight_port = {port}\ncoordinator_url = \"https://127.0.0.1:{flight}\"\n\
                 heartbeat_interval_secs = 1\nshutdown_grace_secs = 0\n\
                 worker_secret = \"{SECRET}\"\n{cluster}"
            ),
        )?;
        let mut worker = SqeProcess::spawn(
            &format!("worker-{n}"),
            &["worker", "--config", &toml.display().to_string()],
            cwd,
            &[],
        )?;
        worker.wait_for_port(SocketAddr::from(([127, 0, 0, 1], *port)), startup)?;
        workers.push(worker);
    }

    // Both register over TLS and are probed back over mutual TLS.
    let deadline = Instant::now() + startup;
    let active = "SELECT count(*) AS active FROM system.runtime.nodes \
                  WHERE NOT coordinator AND state = 'active'";
    loop {
        let listed = sql(cwd, flight, &ca_file, active)?;
        if listed.contains("| 2      |") {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the workers did not become active: {listed}\n{}\n{}",
                workers[0].log_text(),
                coordinator.log_text()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    sql(cwd, flight, &ca_file, "CREATE SCHEMA demo")?;
    sql(
        cwd,
        flight,
        &ca_file,
        "CREATE TABLE demo.numbers AS SELECT value AS n, value % 7 AS bucket FROM generate_series(1, 20000)",
    )?;
    sql(
        cwd,
        flight,
        &ca_file,
        "INSERT INTO demo.numbers SELECT value, value % 7 FROM generate_series(20001, 40000)",
    )?;
    let totals = sql(
        cwd,
        flight,
        &ca_file,
        "SELECT count(*) AS rows_, sum(n) AS total FROM demo.numbers",
    )?;
    assert!(totals.contains("| 40000 | 800020000 |"), "{totals}");
    // Two files on two workers: the scan runs as two tasks, one per worker, over TLS.
    let explained = sql(
        cwd,
        flight,
        &ca_file,
        "EXPLAIN ANALYZE SELECT bucket, count(*) FROM demo.numbers GROUP BY bucket",
    )?;
    assert!(explained.contains("DistributedExec"), "{explained}");
    assert!(explained.contains("t1:[p0"), "{explained}");

    let worker_url = format!("127.0.0.1:{}", worker_ports[0]);
    let https = || Endpoint::from_shared(format!("https://{worker_url}"));
    let identity = |cert: &Path, key: &Path| -> std::io::Result<Identity> {
        Ok(Identity::from_pem(
            std::fs::read(cert)?,
            std::fs::read(key)?,
        ))
    };
    let anonymous = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(std::fs::read(&ca_file)?))
        .domain_name(CLUSTER_NAME);
    let rogue = Authority::new("Another CA")?;
    let (rogue_cert, rogue_key) = rogue.issue(cwd, "rogue", &[CLUSTER_NAME])?;
    // Cut off before any gRPC request is read, so none reaches the token check: in clear; TLS
    // that trusts the cluster's CA without a certificate of its own; a certificate of another CA.
    let callers = [
        (
            "in clear",
            Endpoint::from_shared(format!("http://{worker_url}"))?,
        ),
        (
            "without a certificate",
            https()?.tls_config(anonymous.clone())?,
        ),
        (
            "with another CA's certificate",
            https()?.tls_config(
                anonymous
                    .clone()
                    .identity(identity(&rogue_cert, &rogue_key)?),
            )?,
        ),
    ];
    for (caller, endpoint) in callers {
        let refused = worker_info(endpoint)
            .await
            .err()
            .ok_or(format!("a worker answered a caller {caller}"))?;
        assert_ne!(
            refused.code(),
            tonic::Code::Unauthenticated,
            "{caller}: {refused}"
        );
    }
    // With the cluster's certificate the call gets through TLS to the token check.
    let member = anonymous.identity(identity(&cert, &key)?);
    let status = worker_info(https()?.tls_config(member)?)
        .await
        .err()
        .ok_or("a worker answered a call without a token")?;
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status}");

    for worker in workers {
        worker.stop_cleanly()?;
    }
    coordinator.stop_cleanly()?;
    Ok(())
}
