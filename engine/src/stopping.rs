//! A statement stopped while it runs (its client's cancel, `kill_query`, the reaper, its time
//! limit): before a write's commit begins the stop wins; after, the commit's outcome stands.

use std::sync::Arc;

use sqe_iceberg::write::CommitGate;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};

/// `work` unless `stopped` comes first: then `error()`. A write whose commit has begun (its
/// `gate` refuses the cancel) is not stopped: its true outcome is awaited and answered, so a
/// client never hears of a cancel while the rows went in (and would add them twice again).
pub(crate) async fn unless_stopped<T>(
    work: impl std::future::Future<Output = Result<T>>,
    stopped: impl std::future::Future<Output = ()>,
    error: impl FnOnce() -> Error,
    gate: Option<Arc<CommitGate>>,
) -> Result<T> {
    let mut work = std::pin::pin!(work);
    tokio::select! {
        biased;
        () = stopped => {}
        result = &mut work => return result,
    }
    match gate {
        Some(gate) if !gate.cancel() => {
            tracing::info!("stopped while committing: the commit runs to its end");
            work.await
        }
        _ => Err(error()),
    }
}

/// How a write is stopped: its cancel, and the gate it meets its commit at.
pub(crate) struct Stop {
    pub(crate) gate: Arc<CommitGate>,
    pub(crate) cancel: CancellationToken,
}

impl Stop {
    /// `work` unless cancelled before its commit began ([`unless_stopped`]).
    pub(crate) async fn unless_stopped<T>(
        &self,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        unless_stopped(
            work,
            self.cancel.cancelled(),
            || Error::Cancelled,
            Some(Arc::clone(&self.gate)),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn cancelled() -> Error {
        Error::Cancelled
    }

    /// A write that takes 50 ms before its commit and 100 ms in it, stopped after `stop_after`.
    async fn write_stopped_after(
        stop_after: Duration,
    ) -> (std::result::Result<u64, Error>, Arc<CommitGate>) {
        let gate = Arc::new(CommitGate::default());
        let writer = Arc::clone(&gate);
        let work = async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if !writer.begin() {
                return Err(Error::Internal("refused to commit".into()));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(7)
        };
        let stopped = tokio::time::sleep(stop_after);
        let outcome = unless_stopped(work, stopped, cancelled, Some(Arc::clone(&gate))).await;
        (outcome, gate)
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_during_the_commit_waits_for_its_true_outcome() {
        let (outcome, gate) = write_stopped_after(Duration::from_millis(80)).await;
        assert_eq!(
            outcome.ok(),
            Some(7),
            "the rows went in: the answer says so"
        );
        assert!(gate.begun());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_before_the_commit_stops_it() {
        let (outcome, gate) = write_stopped_after(Duration::from_millis(20)).await;
        assert!(matches!(outcome, Err(Error::Cancelled)), "{outcome:?}");
        assert!(!gate.begin(), "the commit can no longer begin");
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_gate_a_stop_is_the_answer() {
        let work = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(1)
        };
        let stopped = tokio::time::sleep(Duration::from_millis(10));
        let outcome = unless_stopped(work, stopped, cancelled, None).await;
        assert!(matches!(outcome, Err(Error::Cancelled)));
    }
}
