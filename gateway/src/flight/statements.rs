//! Statements between calls: planned queries waiting for DoGet, prepared statements, and the
//! running queries a client may cancel.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::common::ScalarValue;
use parking_lot::Mutex;
use sqe_engine::engine::StatementTemplate;
use sqe_engine::expiring::{Expire, ExpiringMap, QuotaExceeded};
use sqe_engine::history::{CancelReason, QueryRecord};
use sqe_engine::queries::{Canceller, QueryHandle};
use uuid::Uuid;

use super::read_ahead::ReadAhead;
use crate::client_auth::Principal;

/// How long a planned statement waits for its DoGet, and a prepared statement for its next use.
const PLANNED_TTL: Duration = Duration::from_secs(300);
const PREPARED_IDLE: Duration = Duration::from_secs(3600);
/// Most planned and prepared statements kept at once, and per user (each of the two kinds).
const MAX_STATEMENTS: u64 = 10_000;
pub(super) const MAX_STATEMENTS_PER_USER: u64 = 1_000;

/// A statement planned by GetFlightInfo, waiting for its DoGet.
pub(super) struct Planned {
    pub work: Work,
    pub principal: Principal,
}

/// What a ticket's DoGet does.
pub(super) enum Work {
    /// Runs the query from its plan (never re-planned from SQL); dropped unrun, it ends as
    /// cancelled.
    Run(Box<QueryHandle>),
    /// Sends the result of a statement that already ran: DDL and writes run when executed,
    /// whether or not the client reads their result.
    Ran(RecordBatch),
    /// Sends the rows of a query that started when it was polled for.
    ReadAhead(ReadAhead),
}

/// A prepared statement: its template and the parameters last bound (a row of values per
/// execution: queries and most updates take one row; an INSERT any number, as one statement).
#[derive(Clone)]
pub(super) struct PreparedStatement {
    /// The text it was prepared from, for the query history.
    pub sql: String,
    pub template: StatementTemplate,
    pub parameter_rows: Vec<Vec<ScalarValue>>,
    pub principal: Principal,
}

/// What happened to a cancellation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cancelled {
    /// It was running (or waiting to run) and is stopped.
    Yes,
    /// Nothing by that handle is running.
    NotFound,
}

/// A planned statement under its ticket: taken once by its DoGet (a handle is not shared).
type Ticketed = Arc<Mutex<Option<Planned>>>;

pub(super) struct Statements {
    planned: ExpiringMap<Uuid, Ticketed>,
    prepared: ExpiringMap<Uuid, PreparedStatement>,
    running: Mutex<HashMap<Uuid, Running>>,
}

/// A statement whose DoGet streams now.
struct Running {
    canceller: Canceller,
    principal: Principal,
    record: Option<Arc<QueryRecord>>,
}

impl Default for Statements {
    fn default() -> Self {
        Self {
            planned: ExpiringMap::with_quota(
                MAX_STATEMENTS,
                Expire::AfterWrite(PLANNED_TTL),
                MAX_STATEMENTS_PER_USER,
                "statements waiting for their DoGet",
            ),
            prepared: ExpiringMap::with_quota(
                MAX_STATEMENTS,
                Expire::WhenIdle(PREPARED_IDLE),
                MAX_STATEMENTS_PER_USER,
                "prepared statements",
            ),
            running: Mutex::default(),
        }
    }
}

/// A ticket's place in its user's share, taken before the statement is planned (or, for a
/// write, run): over the share nothing is done. Dropped unfilled (planning failed, the call was
/// cancelled) it gives the place back.
pub(super) struct Reservation<'a> {
    statements: &'a Statements,
    id: Uuid,
    slot: Ticketed,
    filled: bool,
}

impl Reservation<'_> {
    pub(super) fn id(&self) -> Uuid {
        self.id
    }

    /// Keeps `planned` for the DoGet of the ticket.
    pub(super) fn fill(mut self, planned: Planned) {
        *self.slot.lock() = Some(planned);
        self.filled = true;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.statements.planned.remove(&self.id);
        }
    }
}

impl Statements {
    /// A place for a new ticket of `owner`, within its share.
    pub(super) fn reserve(&self, owner: &str) -> Result<Reservation<'_>, QuotaExceeded> {
        let id = Uuid::new_v4();
        let slot: Ticketed = Arc::new(Mutex::new(None));
        self.planned.insert_owned(owner, id, Arc::clone(&slot))?;
        Ok(Reservation {
            statements: self,
            id,
            slot,
            filled: false,
        })
    }

    /// Whether `owner` may prepare another statement (checked before planning it).
    pub(super) fn check_room_to_prepare(&self, owner: &str) -> Result<(), QuotaExceeded> {
        self.prepared.check_room(owner)
    }

    /// Takes the planned statement `id` to run it; only its principal may.
    pub(super) fn take_planned(&self, id: &Uuid, principal: &Principal) -> Option<Planned> {
        let ticketed = self.planned.get(id)?;
        let owner_matches = ticketed
            .lock()
            .as_ref()
            .is_some_and(|p| &p.principal == principal);
        if !owner_matches {
            return None;
        }
        self.planned.remove(id);
        ticketed.lock().take()
    }

    /// Gives the planned statement `id` its full time to wait for its DoGet again, from now:
    /// a polled statement stays while its client polls.
    pub(super) fn renew(&self, id: &Uuid, principal: &Principal) {
        let Some(ticketed) = self.planned.get(id) else {
            return;
        };
        let owned = ticketed
            .lock()
            .as_ref()
            .is_some_and(|p| &p.principal == principal);
        // Replacing its own entry: never over the quota.
        if owned {
            let _renewed = self.planned.insert_owned(&principal.user, *id, ticketed);
        }
    }

    pub(super) fn prepare(&self, statement: PreparedStatement) -> Result<Uuid, QuotaExceeded> {
        let id = Uuid::new_v4();
        let owner = statement.principal.user.clone();
        self.prepared.insert_owned(&owner, id, statement)?;
        Ok(id)
    }

    pub(super) fn prepared(&self, id: &Uuid, principal: &Principal) -> Option<PreparedStatement> {
        self.prepared
            .get(id)
            .filter(|statement| &statement.principal == principal)
    }

    pub(super) fn bind(
        &self,
        id: &Uuid,
        principal: &Principal,
        rows: Vec<Vec<ScalarValue>>,
    ) -> bool {
        let Some(mut statement) = self.prepared(id, principal) else {
            return false;
        };
        statement.parameter_rows = rows;
        // Replacing its own entry: never over the quota.
        let owner = statement.principal.user.clone();
        self.prepared.insert_owned(&owner, *id, statement).is_ok()
    }

    pub(super) fn close_prepared(&self, id: &Uuid) {
        self.prepared.remove(id);
    }

    /// Registers statement `id` as running until the guard is dropped; [`Self::cancel`] stops
    /// it through `canceller`.
    pub(super) fn start(
        self: &Arc<Self>,
        id: Uuid,
        principal: Principal,
        handle: &QueryHandle,
    ) -> Option<RunningGuard> {
        let running = Running {
            canceller: handle.canceller()?,
            principal,
            record: handle.record(),
        };
        self.running.lock().insert(id, running);
        Some(RunningGuard {
            statements: Arc::clone(self),
            id,
        })
    }

    /// The history record of statement `id`, while it streams, for its principal only.
    pub(super) fn running_record(
        &self,
        id: &Uuid,
        principal: &Principal,
    ) -> Option<Arc<QueryRecord>> {
        let running = self.running.lock();
        let statement = running.get(id).filter(|r| &r.principal == principal)?;
        statement.record.clone()
    }

    /// Stops statement `id` if it runs, and drops it if it waits for its DoGet (a polled
    /// statement does both: it runs before its DoGet).
    pub(super) fn cancel(&self, id: &Uuid) -> Cancelled {
        let running = self.running.lock().get(id).map(|r| r.canceller.clone());
        if let Some(canceller) = &running {
            canceller.cancel(CancelReason::Client);
        }
        // A dropped handle ends its query; dropped rows read ahead free their memory.
        let waiting = self
            .planned
            .remove(id)
            .and_then(|ticketed| ticketed.lock().take());
        if running.is_some() || waiting.is_some() {
            Cancelled::Yes
        } else {
            Cancelled::NotFound
        }
    }
}

/// Unregisters a running statement when dropped (when its stream ends or is dropped).
pub(super) struct RunningGuard {
    statements: Arc<Statements>,
    id: Uuid,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.statements.running.lock().remove(&self.id);
    }
}
