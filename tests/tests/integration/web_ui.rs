//! The web UI in headless Chromium (tests/python/test_web_ui.py) against a coordinator with
//! two workers: login, the cluster page, progress moving, the query page and its kill button.
//! Screenshots go to `$CARGO_TARGET_DIR/ui-screenshots` (else `target/ui-screenshots`).

use sqe_tests::cluster::TestCluster;
use sqe_tests::python::run_python;

use crate::TestResult;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn web_ui_in_a_real_browser() -> TestResult {
    let cluster = TestCluster::two_workers_with_admin().await?;
    let addr = cluster.trino_addr()?;
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "../target".into());
    let shots = std::path::Path::new(&target).join("ui-screenshots");
    run_python(
        "test_web_ui.py",
        &[
            addr.ip().to_string(),
            addr.port().to_string(),
            shots.display().to_string(),
        ],
    )
    .await?;
    cluster.stop().await;
    Ok(())
}
