//! How a query is stopped: one cancellation per query, whoever asks (its client, `kill_query`,
//! the reaper of abandoned queries, its deadline). The first reason given wins; the plan's
//! result stream is dropped at once, which ends its tasks on every worker.

use std::sync::OnceLock;
use std::time::Duration;

use datafusion::execution::SendableRecordBatchStream;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::error::Error;

/// Why a query was stopped before it ended on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelReason {
    /// Its client cancelled it, or went away.
    Client,
    /// Nobody asked for it for too long.
    Abandoned,
    /// `kill_query`, with its message.
    Killed { message: Option<String> },
    /// It ran out of time (`query_max_run_time`).
    TimeLimit { limit: Duration },
}

impl CancelReason {
    /// The error the query ends with.
    pub fn error(&self) -> Error {
        match self {
            CancelReason::Client | CancelReason::Abandoned => Error::Cancelled,
            CancelReason::Killed { message } => Error::Killed {
                message: message.clone(),
            },
            CancelReason::TimeLimit { limit } => Error::TimeLimit { limit: *limit },
        }
    }
}

/// A query's stop switch and the result stream it cuts.
#[derive(Default)]
pub struct QueryControl {
    token: CancellationToken,
    /// Cancelled when the query has ended, however it ended (timers stop waiting then).
    ended: CancellationToken,
    reason: OnceLock<CancelReason>,
    /// The running plan's stream, while it runs (see [`super::QueryTracker::observe`]).
    plan: Mutex<Option<SendableRecordBatchStream>>,
}

impl std::fmt::Debug for QueryControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryControl")
            .field("reason", &self.reason.get())
            .finish_non_exhaustive()
    }
}

impl QueryControl {
    /// Stops the query for `reason`; `false` when it had been stopped already.
    pub(super) fn cancel(&self, reason: CancelReason) -> bool {
        let first = self.reason.set(reason).is_ok();
        // Dropped outside the lock: ending a plan's stream may take a moment.
        let plan = self.plan.lock().take();
        drop(plan);
        self.token.cancel();
        first
    }

    /// Why it was stopped, once it has been.
    pub fn reason(&self) -> Option<&CancelReason> {
        self.reason.get()
    }

    /// The error of a stopped query (`Cancelled` if it is not stopped: callers ask only then).
    pub fn error(&self) -> Error {
        self.reason().map_or(Error::Cancelled, CancelReason::error)
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves when the query is stopped.
    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }

    /// A token cancelled once the query has ended (finished, failed or stopped).
    pub fn ended(&self) -> CancellationToken {
        self.ended.clone()
    }

    pub(super) fn end(&self) {
        self.ended.cancel();
    }

    /// A token cancelled when the query is stopped, for work that runs on its own.
    pub fn cancellation(&self) -> CancellationToken {
        self.token.clone()
    }

    pub(super) fn token(&self) -> &CancellationToken {
        &self.token
    }

    pub(super) fn plan(&self) -> &Mutex<Option<SendableRecordBatchStream>> {
        &self.plan
    }
}
