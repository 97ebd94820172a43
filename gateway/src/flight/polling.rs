//! `PollFlightInfo`: a statement that waits for a slot in the admission queue (or plans for
//! long) is answered within [`POLL_WAIT`] with a descriptor to poll again, instead of holding
//! the call open. Its planning goes on in a task of its own; a client that stops polling for
//! [`PENDING_IDLE`] before it is planned loses it (the task is aborted, which cancels the
//! query). Once planned, a query runs at once, its rows read ahead of its DoGet
//! ([`super::read_ahead`]): the polls report its progress until it completes, and its info
//! (the ticket) is in every answer, so the client may fetch rows before then.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use arrow_flight::sql::Any;
use arrow_flight::{FlightDescriptor, FlightInfo, PollInfo};
use prost::Message;
use sqe_engine::expiring::{Expire, ExpiringMap, QuotaExceeded};
use tokio::task::{AbortHandle, JoinHandle};
use tonic::Status;
use uuid::Uuid;

use super::protocol::{handle_bytes, parse_handle};
use super::read_ahead::{Execution, RunState};
use super::statements::MAX_STATEMENTS_PER_USER;
use crate::client_auth::Principal;

/// Longest one poll waits for its statement before answering "not yet".
pub(super) const POLL_WAIT: Duration = Duration::from_secs(1);
/// How long the poll that sees a query planned waits for it to complete: a small query is
/// answered complete in that poll, a longer one's ticket goes out at once.
const COMPLETION_GRACE: Duration = Duration::from_millis(100);
/// A statement nobody has polled for this long is dropped.
const PENDING_IDLE: Duration = Duration::from_secs(60);
const MAX_PENDING: u64 = 10_000;
/// What marks a descriptor as a poll of a pending statement of this server.
const PENDING_TYPE_URL: &str = "type.sqe.dev/sqe.PendingFlightInfo";

/// What planning a polled statement gives.
pub(super) enum Polled {
    /// All there will be: metadata, or the result of a statement that ran while planned.
    Complete(FlightInfo),
    /// A query that runs on, its rows read ahead of the DoGet the info's ticket opens.
    Running(FlightInfo, Execution),
}

/// The task planning a polled statement.
type Planning = JoinHandle<Result<Polled, Status>>;

/// Where a polled statement is.
enum Stage {
    /// Admitted and planned in a task; taken by the poll that sees it finish (a finished task
    /// is never polled again: two clients polling one descriptor at once would otherwise).
    Planning(Option<Planning>),
    /// Planned and running: its info is the client's to fetch while it polls on.
    Running(Box<FlightInfo>, Execution),
    /// Answered in full: a poll that waited for the one that answered finds nothing.
    Answered,
}

/// A statement polled for and not yet answered in full.
struct PendingPlan {
    principal: Principal,
    stage: tokio::sync::Mutex<Stage>,
    abort: AbortHandle,
}
impl Drop for PendingPlan {
    fn drop(&mut self) {
        // Forgotten before it finished: its query is cancelled (a finished task is unaffected).
        self.abort.abort();
    }
}

/// Statements polled for and not yet answered in full.
pub(super) struct PendingPlans {
    plans: ExpiringMap<Uuid, Arc<PendingPlan>>,
}

impl Default for PendingPlans {
    fn default() -> Self {
        Self {
            plans: ExpiringMap::with_quota(
                MAX_PENDING,
                Expire::WhenIdle(PENDING_IDLE),
                MAX_STATEMENTS_PER_USER,
                "statements being polled for",
            ),
        }
    }
}

/// The pending statement a descriptor polls for, if it is one of ours.
pub(super) fn pending_id(descriptor: &FlightDescriptor) -> Option<Uuid> {
    let any = Any::decode(descriptor.cmd.as_ref()).ok()?;
    (any.type_url == PENDING_TYPE_URL)
        .then(|| parse_handle(&any.value))
        .flatten()
}

fn over_quota(e: QuotaExceeded) -> Status {
    sqe_engine::Error::from(e).into()
}

fn pending_descriptor(id: Uuid) -> FlightDescriptor {
    let any = Any {
        type_url: PENDING_TYPE_URL.to_string(),
        value: handle_bytes(id),
    };
    FlightDescriptor::new_cmd(any.encode_to_vec())
}

impl PendingPlans {
    /// Whether `owner` may start another polled statement.
    pub(super) fn check_room(&self, owner: &str) -> Result<(), Status> {
        self.plans.check_room(owner).map_err(over_quota)
    }

    /// Keeps `planning` for `principal`'s later polls.
    pub(super) fn start(&self, principal: Principal, planning: Planning) -> Result<Uuid, Status> {
        let id = Uuid::new_v4();
        let owner = principal.user.clone();
        let abort = planning.abort_handle();
        let plan = Arc::new(PendingPlan {
            principal,
            stage: tokio::sync::Mutex::new(Stage::Planning(Some(planning))),
            abort,
        });
        self.plans
            .insert_owned(&owner, id, plan)
            .map_err(over_quota)?;
        Ok(id)
    }

    /// Waits up to `wait` for statement `id` to change: while it is queued or planned, a
    /// descriptor to poll again and an info without endpoints; once it runs, its info (the
    /// client may fetch its rows now), how far it got and, until it has ended, a descriptor to
    /// poll again. Only its principal may poll for it.
    pub(super) async fn poll(
        &self,
        id: Uuid,
        principal: &Principal,
        wait: Duration,
    ) -> Result<PollInfo, Status> {
        let mut deadline = Instant::now() + wait;
        let gone = || {
            Status::not_found(
                "no statement is pending under this descriptor (answered, expired, another user's, or begun before the coordinator restarted)",
            )
        };
        let plan = self
            .plans
            .get(&id)
            .filter(|plan| &plan.principal == principal)
            .ok_or_else(gone)?;
        let mut stage = plan.stage.lock().await;
        if let Stage::Planning(task) = &mut *stage {
            let planning = task.as_mut().ok_or_else(gone)?;
            let planned = match tokio::time::timeout_at(deadline, planning).await {
                Err(_) => return Ok(still_planning(id)),
                Ok(Ok(planned)) => planned,
                Ok(Err(e)) => Err(Status::internal(format!(
                    "planning the statement stopped: {e}"
                ))),
            };
            task.take();
            match planned {
                Ok(Polled::Running(info, execution)) => {
                    *stage = Stage::Running(Box::new(info), execution);
                    // Its ticket is news: answered soon, or at once complete if it is small.
                    deadline = deadline.min(Instant::now() + COMPLETION_GRACE);
                }
                Ok(Polled::Complete(info)) => {
                    self.plans.remove(&id);
                    return Ok(complete(info));
                }
                Err(status) => {
                    self.plans.remove(&id);
                    return Err(status);
                }
            }
        }
        let Stage::Running(info, execution) = &mut *stage else {
            return Err(gone());
        };
        execution.ended_by(deadline).await;
        let ended = match execution.state() {
            RunState::Running => return Ok(poll_again(id, (**info).clone(), execution.progress())),
            RunState::Finished => Ok(complete((**info).clone())),
            RunState::Failed(status) => Err(status),
        };
        *stage = Stage::Answered;
        self.plans.remove(&id);
        ended
    }
}

/// A statement still waiting for its slot or its plan: no endpoints yet (ADBC's incremental
/// execution wants an info in every answer).
fn still_planning(id: Uuid) -> PollInfo {
    poll_again(id, FlightInfo::new(), Some(0.0))
}

fn poll_again(id: Uuid, info: FlightInfo, progress: Option<f64>) -> PollInfo {
    PollInfo {
        info: Some(info),
        flight_descriptor: Some(pending_descriptor(id)),
        progress,
        expiration_time: Some((SystemTime::now() + PENDING_IDLE).into()),
    }
}

fn complete(info: FlightInfo) -> PollInfo {
    PollInfo {
        info: Some(info),
        flight_descriptor: None,
        progress: Some(1.0),
        expiration_time: None,
    }
}
