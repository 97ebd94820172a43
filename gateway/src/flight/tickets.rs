//! Statements planned by GetFlightInfo and waiting for their DoGet.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::engine::Prepared;

/// Planned statements by ticket. A ticket is good for one DoGet within the TTL; the plan is
/// not rebuilt from SQL text, so the client reads exactly what GetFlightInfo described.
pub struct PlannedStatements {
    ttl: Duration,
    entries: Mutex<HashMap<Uuid, (Instant, Prepared)>>,
}

impl PlannedStatements {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn insert(&self, prepared: Prepared) -> Uuid {
        let id = Uuid::new_v4();
        if let Ok(mut entries) = self.entries.lock() {
            let ttl = self.ttl;
            entries.retain(|_, (created, _)| created.elapsed() < ttl);
            entries.insert(id, (Instant::now(), prepared));
        }
        id
    }

    pub fn take(&self, id: &Uuid) -> Option<Prepared> {
        let mut entries = self.entries.lock().ok()?;
        let (created, prepared) = entries.remove(id)?;
        (created.elapsed() < self.ttl).then_some(prepared)
    }

    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
