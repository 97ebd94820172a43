//! Bad configuration stops the real binary with an error that names the file and the key.

use sqe_tests::process::run_sqe;

use crate::TestResult;

/// Runs `sqe <role> --config <file>` with `text` as the file and returns (exit success, stderr).
fn start_with(
    role: &str,
    text: &str,
    env: &[(&str, &str)],
) -> Result<(bool, String), std::io::Error> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join(format!("{role}.toml"));
    std::fs::write(&path, text)?;
    let mut command = std::process::Command::new(sqe_tests::process::sqe_binary());
    command
        .args([role, "--config", path.to_str().unwrap_or_default()])
        .current_dir(dir.path());
    for (k, v) in env {
        command.env(k, v);
    }
    let output = command.output()?;
    Ok((
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

#[test]
fn unknown_key_names_the_key_and_the_file() -> TestResult {
    let (ok, stderr) = start_with(
        "coordinator",
        "[coordinator]\nworker_url = [\"http://w:1\"]\n",
        &[],
    )?;
    assert!(!ok);
    assert!(stderr.contains("coordinator.toml"), "{stderr}");
    assert!(stderr.contains("unknown field `worker_url`"), "{stderr}");
    assert!(
        stderr.contains("expected one of"),
        "should list valid keys: {stderr}"
    );
    Ok(())
}

#[test]
fn unknown_section_is_refused() -> TestResult {
    let (ok, stderr) = start_with("worker", "[wroker]\nflight_port = 1\n", &[])?;
    assert!(!ok);
    assert!(stderr.contains("unknown field `wroker`"), "{stderr}");
    Ok(())
}

#[test]
fn distributed_coordinator_without_worker_secret_refuses_to_start() -> TestResult {
    let (ok, stderr) = start_with(
        "coordinator",
        "[coordinator]\nworker_urls = [\"http://127.0.0.1:1\"]\nflight_sql_port = 0\n",
        &[],
    )?;
    assert!(!ok);
    assert!(
        stderr.contains("needs [coordinator] worker_secret"),
        "{stderr}"
    );
    assert!(stderr.contains("allow_unauthenticated_workers"), "{stderr}");
    Ok(())
}

#[test]
fn worker_without_worker_secret_refuses_to_start() -> TestResult {
    let (ok, stderr) = start_with("worker", "[worker]\nflight_port = 0\n", &[])?;
    assert!(!ok);
    assert!(stderr.contains("needs [worker] worker_secret"), "{stderr}");
    Ok(())
}

#[test]
fn a_short_worker_secret_refuses_to_start() -> TestResult {
    let (ok, stderr) = start_with(
        "worker",
        "[worker]\nflight_port = 0\nworker_secret = \"s3cr3t\"\n",
        &[],
    )?;
    assert!(!ok);
    assert!(stderr.contains("at least 16"), "{stderr}");
    Ok(())
}

#[test]
fn wrong_types_and_syntax_are_reported_with_their_place() -> TestResult {
    let (ok, stderr) = start_with("worker", "[worker]\nflight_port = \"fifty\"\n", &[])?;
    assert!(!ok);
    assert!(stderr.contains("flight_port"), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    let (ok, stderr) = start_with("worker", "[worker\n", &[])?;
    assert!(!ok);
    assert!(stderr.contains("invalid config"), "{stderr}");
    let (ok, stderr) = start_with(
        "worker",
        "[worker]\nmemory_limit = \"12 parsecs\"\nallow_unauthenticated_workers = true\n",
        &[],
    )?;
    assert!(!ok);
    assert!(stderr.contains("unknown size unit"), "{stderr}");
    Ok(())
}

#[test]
fn bad_environment_override_names_the_variable() -> TestResult {
    let (ok, stderr) = start_with(
        "coordinator",
        "",
        &[("SQE_COORDINATOR__FLIGHT_SQL_PORT", "many")],
    )?;
    assert!(!ok);
    assert!(
        stderr.contains("SQE_COORDINATOR__FLIGHT_SQL_PORT"),
        "{stderr}"
    );
    Ok(())
}

#[test]
fn missing_file_is_reported() -> TestResult {
    let dir = tempfile::tempdir()?;
    let output = run_sqe(&["coordinator", "--config", "nope.toml"], dir.path())?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("cannot read config file nope.toml"),
        "{stderr}"
    );
    Ok(())
}

#[test]
fn unreachable_rest_catalog_is_a_start_up_error() -> TestResult {
    let (ok, stderr) = start_with(
        "coordinator",
        "[coordinator]\nflight_sql_port = 0\ntrino_http_port = 0\n[catalog]\ntype = \"rest\"\ncatalog_url = \"http://127.0.0.1:9/api/catalog\"\n",
        &[],
    )?;
    assert!(!ok);
    assert!(
        stderr.contains("http://127.0.0.1:9/api/catalog"),
        "{stderr}"
    );
    assert!(stderr.contains("unreachable"), "{stderr}");
    Ok(())
}
