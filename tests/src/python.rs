//! The project's Python clients (`.venv`, made by `scripts/test.sh` from the pinned
//! `tests/python/requirements.txt`), run as scripts against a running cluster.

use std::path::PathBuf;

/// Runs `tests/python/<script>` with `args`; its combined output when it exits 0 and prints
/// unittest's `OK` (or its own), an error with that output otherwise.
pub async fn run_python(script: &str, args: &[String]) -> Result<String, String> {
    run_script(&tests_dir().join("python").join(script), args).await
}

/// Runs `benches/<script>` (a harness that also checks answers) the same way.
pub async fn run_bench_script(script: &str, args: &[String]) -> Result<String, String> {
    run_script(&tests_dir().join("../benches").join(script), args).await
}

/// This checkout's `tests` directory. Read at run time (cargo sets it for `cargo test`): a
/// library built from another checkout sharing the target directory must not run that
/// checkout's scripts.
fn tests_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

async fn run_script(path: &std::path::Path, args: &[String]) -> Result<String, String> {
    let root = tests_dir();
    let script = path.display();
    let python = root.join("../.venv/bin/python");
    if !python.exists() {
        return Err(format!(
            "{} is missing: scripts/test.sh creates the virtualenv with the pinned clients",
            python.display()
        ));
    }
    let output = tokio::process::Command::new(python)
        .arg(path)
        .args(args)
        .output()
        .await
        .map_err(|e| format!("cannot run {script}: {e}"))?;
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() && report.contains("OK") {
        Ok(report)
    } else {
        Err(format!("{script} {args:?} failed:\n{report}"))
    }
}
