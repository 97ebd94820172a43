//! Statements between calls: planned queries waiting for DoGet, prepared statements, and the
//! running queries a client may cancel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::common::ScalarValue;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::client_auth::Principal;
use sqe_engine::engine::{Prepared, StatementTemplate};
use sqe_engine::history::QueryTracker;

/// How long a planned statement waits for its DoGet, and a prepared statement for its next use.
const PLANNED_TTL: Duration = Duration::from_secs(300);
const PREPARED_IDLE: Duration = Duration::from_secs(3600);

/// A statement planned by GetFlightInfo, run by DoGet from the plan (never re-planned from SQL).
pub struct Planned {
    pub prepared: Prepared,
    pub principal: Principal,
    /// Its record in the query history, from planning on.
    pub tracker: QueryTracker,
}

/// A prepared statement: its template and the parameters last bound (a row of values per
/// execution: queries take one row, updates run once per row).
#[derive(Clone)]
pub struct PreparedStatement {
    /// The text it was prepared from, for the query history.
    pub sql: String,
    pub template: StatementTemplate,
    pub parameter_rows: Vec<Vec<ScalarValue>>,
    pub principal: Principal,
}

/// What happened to a cancellation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancelled {
    /// It was running (or waiting to run) and is stopped.
    Yes,
    /// Nothing by that handle is running.
    NotFound,
}

#[derive(Default)]
pub struct Statements {
    planned: Mutex<HashMap<Uuid, (Instant, Planned)>>,
    prepared: Mutex<HashMap<Uuid, (Instant, PreparedStatement)>>,
    running: Mutex<HashMap<Uuid, CancellationToken>>,
}

impl Statements {
    /// Keeps `planned` for the DoGet of ticket `id`.
    pub fn plan(&self, id: Uuid, planned: Planned) {
        if let Ok(mut map) = self.planned.lock() {
            map.retain(|_, (at, _)| at.elapsed() < PLANNED_TTL);
            map.insert(id, (Instant::now(), planned));
        }
    }

    /// Takes the planned statement `id` to run it; only its principal may.
    pub fn take_planned(&self, id: &Uuid, principal: &Principal) -> Option<Planned> {
        let mut map = self.planned.lock().ok()?;
        let owner_matches = map.get(id).is_some_and(|(_, p)| &p.principal == principal);
        if !owner_matches {
            return None;
        }
        let (at, planned) = map.remove(id)?;
        (at.elapsed() < PLANNED_TTL).then_some(planned)
    }

    pub fn prepare(&self, statement: PreparedStatement) -> Uuid {
        let id = Uuid::new_v4();
        if let Ok(mut map) = self.prepared.lock() {
            map.retain(|_, (at, _)| at.elapsed() < PREPARED_IDLE);
            map.insert(id, (Instant::now(), statement));
        }
        id
    }

    pub fn prepared(&self, id: &Uuid, principal: &Principal) -> Option<PreparedStatement> {
        let mut map = self.prepared.lock().ok()?;
        let (used, statement) = map.get_mut(id)?;
        if &statement.principal != principal {
            return None;
        }
        *used = Instant::now();
        Some(statement.clone())
    }

    pub fn bind(&self, id: &Uuid, principal: &Principal, rows: Vec<Vec<ScalarValue>>) -> bool {
        let Ok(mut map) = self.prepared.lock() else {
            return false;
        };
        match map.get_mut(id) {
            Some((used, statement)) if &statement.principal == principal => {
                *used = Instant::now();
                statement.parameter_rows = rows;
                true
            }
            _ => false,
        }
    }

    pub fn close_prepared(&self, id: &Uuid) {
        if let Ok(mut map) = self.prepared.lock() {
            map.remove(id);
        }
    }

    /// Registers statement `id` as running; its token is cancelled by [`Self::cancel`].
    pub fn start(self: &Arc<Self>, id: Uuid) -> RunningGuard {
        let token = CancellationToken::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(id, token.clone());
        }
        RunningGuard {
            statements: Arc::clone(self),
            id,
            token,
        }
    }

    /// Stops statement `id` if it runs, or drops it if it waits for its DoGet.
    pub fn cancel(&self, id: &Uuid) -> Cancelled {
        if let Some(token) = self.running.lock().ok().and_then(|r| r.get(id).cloned()) {
            token.cancel();
            return Cancelled::Yes;
        }
        if self
            .planned
            .lock()
            .ok()
            .and_then(|mut p| p.remove(id))
            .is_some()
        {
            return Cancelled::Yes;
        }
        Cancelled::NotFound
    }
}

/// Unregisters a running statement when dropped (when its stream ends or is dropped).
pub struct RunningGuard {
    statements: Arc<Statements>,
    id: Uuid,
    token: CancellationToken,
}

impl RunningGuard {
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if let Ok(mut running) = self.statements.running.lock() {
            running.remove(&self.id);
        }
    }
}
