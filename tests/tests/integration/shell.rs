//! `sqe shell` as users run it: the real binary against a real coordinator, one-shot (`-e`,
//! piped stdin), every output format, sessions, errors, password and token authentication,
//! TLS; and interactively in a pseudo-terminal (driven by pexpect from the project's .venv).

use std::process::{Output, Stdio};

use sqe_gateway::node::{bind, start_coordinator};
use sqe_tests::cluster::{TestCluster, local_coordinator_config};
use sqe_tests::process::sqe_binary;
use sqe_tests::python::run_python;
use tokio::io::AsyncWriteExt;

use crate::TestResult;

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn ok(self) -> Result<Self, Error> {
        if self.code == Some(0) {
            Ok(self)
        } else {
            Err(format!("sqe shell exited with {:?}: {}", self.code, self.stderr).into())
        }
    }
}

/// Runs `sqe shell` with `args` against `port`, feeding `stdin`.
async fn shell(port: u16, args: &[&str], stdin: &str) -> Result<Ran, Error> {
    let mut child = tokio::process::Command::new(sqe_binary())
        .arg("shell")
        .args(["--port", &port.to_string()])
        .args(args)
        .env_remove("SQE_USER")
        .env_remove("SQE_PASSWORD")
        .env_remove("SQE_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).await?;
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().await?;
    Ok(Ran {
        code: status.code(),
        stdout: String::from_utf8(stdout)?,
        stderr: String::from_utf8(stderr)?,
    })
}

fn port(cluster: &TestCluster) -> u16 {
    cluster.cluster.coordinator.flight_sql_addr.port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_shot_statements_in_every_output_format() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let port = port(&cluster);
    let query = "SELECT n_nationkey, n_name, n_comment IS NULL AS no_comment FROM tpch.nation \
                 WHERE n_nationkey < 2 ORDER BY n_nationkey";

    let table = shell(port, &["-e", query], "").await?.ok()?;
    assert_eq!(
        table.stdout,
        "+-------------+-----------+------------+\n\
         | n_nationkey | n_name    | no_comment |\n\
         +-------------+-----------+------------+\n\
         | 0           | ALGERIA   | false      |\n\
         | 1           | ARGENTINA | false      |\n\
         +-------------+-----------+------------+\n"
    );
    let csv = shell(port, &["--output-format", "csv", "-e", query], "")
        .await?
        .ok()?;
    assert_eq!(
        csv.stdout,
        "n_nationkey,n_name,no_comment\n0,ALGERIA,false\n1,ARGENTINA,false\n"
    );
    let json = shell(port, &["--output-format", "json", "-e", query], "")
        .await?
        .ok()?;
    assert_eq!(
        json.stdout,
        "{\"n_nationkey\":0,\"n_name\":\"ALGERIA\",\"no_comment\":false}\n\
         {\"n_nationkey\":1,\"n_name\":\"ARGENTINA\",\"no_comment\":false}\n"
    );

    // DDL and DML report on stderr, keeping stdout for data; USE sets the session's schema
    // for the statements after it.
    let script = "CREATE SCHEMA shell_demo; \
                  CREATE TABLE shell_demo.t (id BIGINT, label VARCHAR); \
                  INSERT INTO shell_demo.t VALUES (1, 'a;b'), (2, NULL); \
                  USE shell_demo; \
                  SELECT * FROM t ORDER BY id";
    let ran = shell(port, &["--output-format", "csv", "-e", script], "")
        .await?
        .ok()?;
    assert_eq!(ran.stdout, "id,label\n1,a;b\n2,\n");
    assert!(
        ran.stderr
            .contains("CREATE SCHEMA\nCREATE TABLE\nINSERT: 2 rows\n"),
        "{}",
        ran.stderr
    );
    // The same through --schema, and statements piped on stdin.
    let piped = shell(
        port,
        &["--schema", "shell_demo", "--output-format", "csv"],
        "SELECT count(*) AS n FROM t;\n-- a comment; not a statement\nSELECT max(id) AS m FROM t\n",
    )
    .await?
    .ok()?;
    assert_eq!(piped.stdout, "n\n2\nm\n2\n");

    // A large result streams through in full.
    let lineitem = shell(
        port,
        &[
            "--output-format",
            "csv",
            "-e",
            "SELECT l_orderkey, l_linenumber FROM tpch.lineitem",
        ],
        "",
    )
    .await?
    .ok()?;
    let expected = cluster
        .query("SELECT count(*) FROM tpch.lineitem")
        .await?
        .first()
        .and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::Int64Array>()
                .map(|c| c.value(0))
        })
        .ok_or("no count")?;
    assert!(expected > 50_000, "{expected}");
    assert_eq!(lineitem.stdout.lines().count() as i64, expected + 1);
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failures_exit_non_zero_with_the_server_code_and_stop_the_script() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    let port = port(&cluster);
    let syntax = shell(port, &["-e", "SELEC 1"], "").await?;
    assert_eq!(syntax.code, Some(1));
    assert!(
        syntax.stderr.contains("\nSELEC 1\n^"),
        "the caret points at the error: {}",
        syntax.stderr
    );
    assert!(
        syntax
            .stderr
            .contains("Query failed (SYNTAX_ERROR): syntax error"),
        "{}",
        syntax.stderr
    );
    let missing = shell(
        port,
        &[
            "-e",
            "SELECT * FROM nowhere.nothing; CREATE SCHEMA never_made",
        ],
        "",
    )
    .await?;
    assert_eq!(missing.code, Some(1));
    assert!(
        missing
            .stderr
            .contains("Query failed (SCHEMA_NOT_FOUND): Schema 'iceberg.nowhere' does not exist"),
        "{}",
        missing.stderr
    );
    assert!(
        !cluster
            .engine()
            .schema_names()
            .await?
            .contains(&"never_made".to_string()),
        "statements after a failure must not run"
    );
    let unreachable = shell(1, &["-e", "SELECT 1"], "").await?;
    assert_eq!(unreachable.code, Some(1));
    assert!(
        unreachable
            .stderr
            .contains("cannot connect to http://127.0.0.1:1"),
        "{}",
        unreachable.stderr
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn password_and_token_authentication() -> TestResult {
    let cluster = TestCluster::with_password_user("alice", "s3cret").await?;
    let port = port(&cluster);
    let anonymous = shell(port, &["-e", "SELECT 1"], "").await?;
    assert_eq!(anonymous.code, Some(1));
    assert!(
        anonymous.stderr.contains("(Unauthenticated)"),
        "{}",
        anonymous.stderr
    );
    let wrong = shell(
        port,
        &["--user", "alice", "--password", "wrong", "-e", "SELECT 1"],
        "",
    )
    .await?;
    assert_eq!(wrong.code, Some(1));
    assert!(
        wrong.stderr.contains("(UNAUTHENTICATED)"),
        "{}",
        wrong.stderr
    );

    let right = shell(
        port,
        &[
            "--user",
            "alice",
            "--password",
            "s3cret",
            "--output-format",
            "csv",
            "-e",
            "SELECT 41 + 1 AS answer",
        ],
        "",
    )
    .await?
    .ok()?;
    assert_eq!(right.stdout, "answer\n42\n");

    // A token from an earlier handshake works without the password.
    let channel = tonic::transport::Endpoint::from_shared(cluster.flight_url())?
        .connect()
        .await?;
    let mut client = arrow_flight::sql::client::FlightSqlServiceClient::new(channel);
    client.handshake("alice", "s3cret").await?;
    let token = client
        .token()
        .cloned()
        .ok_or("no token from the handshake")?;
    let with_token = shell(
        port,
        &[
            "--token",
            &token,
            "--output-format",
            "csv",
            "-e",
            "SELECT 7 AS n",
        ],
        "",
    )
    .await?
    .ok()?;
    assert_eq!(with_token.stdout, "n\n7\n");
    let forged = shell(port, &["--token", "not-a-token", "-e", "SELECT 7"], "").await?;
    assert_eq!(forged.code, Some(1));
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tls_endpoint() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (ca, cert, key) = sqe_tests::tls::tls_files(dir.path())?;
    let mut config = local_coordinator_config(dir.path());
    config.coordinator.tls_cert_file = Some(cert);
    config.coordinator.tls_key_file = Some(key);
    let coordinator = start_coordinator(&config, bind("127.0.0.1", 0, "flight").await?).await?;
    let port = coordinator.flight_sql_addr.port();
    let ca = ca.display().to_string();
    let secured = shell(
        port,
        &[
            "--host",
            "localhost",
            "--tls-ca-cert",
            &ca,
            "--output-format",
            "csv",
            "-e",
            "SELECT 'over tls' AS how",
        ],
        "",
    )
    .await?
    .ok()?;
    assert_eq!(secured.stdout, "how\nover tls\n");
    // The name checked is the certificate's, not the address dialled.
    let by_ip = shell(
        port,
        &[
            "--tls-ca-cert",
            &ca,
            "--tls-domain",
            "localhost",
            "-e",
            "SELECT 1",
        ],
        "",
    )
    .await?;
    assert_eq!(by_ip.code, Some(0), "{}", by_ip.stderr);
    // An untrusted certificate and a plaintext client are both refused.
    let untrusted = shell(
        port,
        &["--host", "localhost", "--tls", "-e", "SELECT 1"],
        "",
    )
    .await?;
    assert_eq!(untrusted.code, Some(1));
    let plaintext = shell(port, &["-e", "SELECT 1"], "").await?;
    assert_eq!(plaintext.code, Some(1));
    coordinator.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interactive_session_in_a_terminal() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    let dir = tempfile::tempdir()?;
    let history = dir.path().join("history");
    run_python(
        "test_shell.py",
        &[
            sqe_binary().display().to_string(),
            port(&cluster).to_string(),
            history.display().to_string(),
        ],
    )
    .await?;
    let saved = std::fs::read_to_string(&history)?;
    assert!(saved.contains("USE tpch;"), "history: {saved}");
    cluster.stop().await;
    Ok(())
}

/// The commands `sqe local` prints run as printed, by a user whose PATH has no `sqe` on it
/// (who started it with `cargo run`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_prints_commands_that_run_as_printed() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut local = sqe_tests::process::LocalProcess::start(dir.path(), 1, "0.001")?.process;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let command = loop {
        let log = local.log_text();
        if let Some(line) = log.lines().find_map(|l| l.trim().strip_prefix("Try:")) {
            break line.trim().to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no Try: line in {log}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(
        !command.starts_with("sqe "),
        "sqe is not on PATH: {command}"
    );
    let ran = tokio::process::Command::new("sh")
        .args(["-c", &command])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .await?;
    let stdout = String::from_utf8(ran.stdout)?;
    assert!(
        ran.status.success(),
        "`{command}` failed: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(
        stdout.contains("6005"),
        "lineitem at SF 0.001 has 6005 rows: {stdout}"
    );
    assert!(local.terminate(std::time::Duration::from_secs(20)));
    Ok(())
}

/// `sqe shell -e ... | head`: the reader closing stdout early ends an endless statement, and
/// the shell exits as a success (the statement did not fail).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn closing_stdout_early_stops_the_statement_and_succeeds() -> TestResult {
    use tokio::io::AsyncBufReadExt;
    let cluster = TestCluster::start(1, 0.01).await?;
    let mut child = tokio::process::Command::new(sqe_binary())
        .args(["shell", "--port", &port(&cluster).to_string()])
        .args(["--output-format", "csv", "-e"])
        .arg("SELECT a.l_orderkey FROM tpch.lineitem a CROSS JOIN tpch.lineitem b")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    assert_eq!(lines.next_line().await?.as_deref(), Some("l_orderkey"));
    drop(lines);
    let ran = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await??;
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    cluster.stop().await;
    Ok(())
}
