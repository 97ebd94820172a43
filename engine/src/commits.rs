//! Iceberg commits made through this coordinator: counted for `/metrics`, and passed on to
//! whoever must know of them (the result cache evicts what read the table).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use iceberg::TableIdent;
use sqe_iceberg::write::CommitListener;

/// The catalog's commit listener: counts, then tells each of `listeners`.
#[derive(Debug)]
pub struct Commits {
    commits: AtomicU64,
    conflicts: AtomicU64,
    listeners: Vec<Arc<dyn CommitListener>>,
}

impl Commits {
    pub fn new(listeners: Vec<Arc<dyn CommitListener>>) -> Self {
        Self {
            commits: AtomicU64::new(0),
            conflicts: AtomicU64::new(0),
            listeners,
        }
    }

    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Commit attempts refused because another writer committed first (then retried).
    pub fn conflicts(&self) -> u64 {
        self.conflicts.load(Ordering::Relaxed)
    }
}

impl CommitListener for Commits {
    fn committed(&self, table: &TableIdent, snapshot_id: Option<i64>) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        for listener in &self.listeners {
            listener.committed(table, snapshot_id);
        }
    }

    fn conflicted(&self, table: &TableIdent, conflicts: u32) {
        self.conflicts
            .fetch_add(u64::from(conflicts), Ordering::Relaxed);
        for listener in &self.listeners {
            listener.conflicted(table, conflicts);
        }
    }
}
