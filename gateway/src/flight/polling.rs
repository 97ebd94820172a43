//! `PollFlightInfo`: a statement that waits for a slot in the admission queue (or plans for
//! long) is answered within [`POLL_WAIT`] with a descriptor to poll again, instead of holding
//! the call open. Its planning goes on in a task of its own; a client that stops polling for
//! [`PENDING_IDLE`] loses it (the task is aborted, which cancels the query).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arrow_flight::sql::Any;
use arrow_flight::{FlightDescriptor, FlightInfo, PollInfo};
use prost::Message;
use sqe_engine::expiring::{Expire, ExpiringMap, QuotaExceeded};
use tokio::task::{AbortHandle, JoinHandle};
use tonic::Status;
use uuid::Uuid;

use super::protocol::{handle_bytes, parse_handle};
use super::statements::MAX_STATEMENTS_PER_USER;
use crate::client_auth::Principal;

/// Longest one poll waits for its statement before answering "not yet".
pub(super) const POLL_WAIT: Duration = Duration::from_secs(1);
/// A statement nobody has polled for this long is dropped.
const PENDING_IDLE: Duration = Duration::from_secs(60);
const MAX_PENDING: u64 = 10_000;
/// What marks a descriptor as a poll of a pending statement of this server.
const PENDING_TYPE_URL: &str = "type.sqe.dev/sqe.PendingFlightInfo";

/// What GetFlightInfo answers for the statement, once it has.
type Planning = JoinHandle<Result<FlightInfo, Status>>;

/// A statement still being admitted or planned.
struct PendingPlan {
    principal: Principal,
    /// Taken by the poll that sees it finish: a finished task is never polled again (two
    /// clients polling one descriptor at once would otherwise poll it after completion).
    task: tokio::sync::Mutex<Option<Planning>>,
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
            task: tokio::sync::Mutex::new(Some(planning)),
            abort,
        });
        self.plans
            .insert_owned(&owner, id, plan)
            .map_err(over_quota)?;
        Ok(id)
    }

    /// Waits up to `wait` for statement `id`: its whole FlightInfo once planned, else a
    /// descriptor to poll again. Only its principal may poll for it.
    pub(super) async fn poll(
        &self,
        id: Uuid,
        principal: &Principal,
        wait: Duration,
    ) -> Result<PollInfo, Status> {
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
        let mut task = plan.task.lock().await;
        let running = task.as_mut().ok_or_else(gone)?;
        let answered = match tokio::time::timeout(wait, running).await {
            Err(_) => None,
            Ok(Ok(answer)) => Some(answer),
            Ok(Err(e)) => Some(Err(Status::internal(format!(
                "planning the statement stopped: {e}"
            )))),
        };
        if answered.is_some() {
            task.take();
        }
        drop(task);
        match answered {
            None => Ok(PollInfo {
                info: None,
                flight_descriptor: Some(pending_descriptor(id)),
                progress: Some(0.0),
                expiration_time: Some((SystemTime::now() + PENDING_IDLE).into()),
            }),
            Some(answer) => {
                self.plans.remove(&id);
                Ok(PollInfo {
                    info: Some(answer?),
                    flight_descriptor: None,
                    progress: Some(1.0),
                    expiration_time: None,
                })
            }
        }
    }
}
