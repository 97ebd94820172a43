//! The result cache: a query's rows, kept in coordinator memory and served again to the same
//! user asking the same thing, as long as no table it read has changed.
//!
//! - Key: the user-visible identity of the result: the session's user, catalog, schema, time
//!   zone and properties, and the bound logical plan (table names resolved, parameters
//!   substituted, so `select  *` and `SELECT *` share an entry; two users never do).
//! - Only queries over Iceberg tables whose every function is immutable are cached: `now()`,
//!   `random()`, `uuid()`, `current_*` and any system or metadata table bypass it.
//! - Each entry remembers the snapshot of every table it read. A hit is served only if planning
//!   the query again found the same snapshots (the catalog is asked every time), so commits by
//!   another coordinator invalidate it too; this coordinator's own commits and drops evict the
//!   entries that read the table at once (the cache is one of the catalog's commit listeners,
//!   see [`crate::commits`]).
//! - Bounded by `max_memory_mb` (least recently used entries go first), `max_entry_mb` (larger
//!   results are streamed, not kept) and `ttl_secs`. What it keeps is held in the coordinator's
//!   memory pool, beside the running queries: when the pool cannot hold a new entry, older
//!   ones go first, and a result the pool has no room for is not kept.

mod plan;
mod stream;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use iceberg::{NamespaceIdent, TableIdent};
use sqe_iceberg::write::CommitListener;

pub use plan::{Decision, consider};
pub use stream::CachingStream;

/// `[query_cache]`, in bytes and durations.
#[derive(Debug, Clone)]
pub struct CacheSettings {
    pub enabled: bool,
    pub max_memory: usize,
    pub max_entry: usize,
    pub ttl: Duration,
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            max_memory: 128 << 20,
            max_entry: 16 << 20,
            ttl: Duration::from_secs(300),
        }
    }
}

/// What the cache did for one query, as `system.runtime.queries.result_cache` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheUse {
    Hit,
    Miss,
    /// Not cacheable (a non-deterministic function, a system table, no table at all).
    Bypass,
}

impl CacheUse {
    pub fn name(self) -> &'static str {
        match self {
            CacheUse::Hit => "hit",
            CacheUse::Miss => "miss",
            CacheUse::Bypass => "bypass",
        }
    }
}

/// The identity of a cached result (a SHA-256 of its key text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey([u8; 32]);

/// One table as a query read it: which table (its UUID tells a re-created one apart) at which
/// snapshot (`None`: no snapshot yet, an empty table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableVersion {
    pub table: TableIdent,
    pub uuid: String,
    pub snapshot: Option<i64>,
}

/// Rows served from the cache.
#[derive(Debug, Clone)]
pub struct CachedResult {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

#[derive(Debug)]
struct Entry {
    result: CachedResult,
    bytes: usize,
    tables: Vec<TableVersion>,
    created: Instant,
    last_used: u64,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<CacheKey, Entry>,
    bytes: usize,
    clock: u64,
    /// `bytes`, held in the coordinator's memory pool (none without a pool).
    reservation: Option<MemoryReservation>,
}

impl Entries {
    fn remove(&mut self, key: &CacheKey) {
        if let Some(entry) = self.map.remove(key) {
            self.bytes -= entry.bytes;
            if let Some(reservation) = &mut self.reservation {
                reservation.shrink(entry.bytes);
            }
        }
    }

    /// Drops the least recently used entry; whether there was one.
    fn evict_oldest(&mut self) -> bool {
        let oldest = self
            .map
            .iter()
            .min_by_key(|(_, e)| e.last_used)
            .map(|(k, _)| *k);
        match oldest {
            Some(key) => {
                self.remove(&key);
                true
            }
            None => false,
        }
    }

    /// Takes `bytes` from the pool for a new entry, evicting the least recently used ones
    /// while it has no room; whether it got them.
    fn make_room(&mut self, bytes: usize) -> bool {
        loop {
            let Some(reservation) = &mut self.reservation else {
                return true;
            };
            if reservation.try_grow(bytes).is_ok() {
                return true;
            }
            if !self.evict_oldest() {
                return false;
            }
        }
    }

    fn remove_where(&mut self, stale: impl Fn(&Entry) -> bool) {
        let keys: Vec<CacheKey> = self
            .map
            .iter()
            .filter(|(_, e)| stale(e))
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            self.remove(&key);
        }
    }
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct ResultCache {
    settings: CacheSettings,
    entries: Mutex<Entries>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl ResultCache {
    /// A cache whose entries are held in `pool` (the coordinator's), when given.
    pub fn new(settings: CacheSettings, pool: Option<&Arc<dyn MemoryPool>>) -> Self {
        let reservation = pool.map(|pool| MemoryConsumer::new("result cache").register(pool));
        Self {
            settings,
            entries: Mutex::new(Entries {
                reservation,
                ..Entries::default()
            }),
            ..Self::default()
        }
    }

    pub fn enabled(&self) -> bool {
        self.settings.enabled && self.settings.max_memory > 0
    }

    pub fn max_entry_bytes(&self) -> usize {
        self.settings.max_entry.min(self.settings.max_memory)
    }

    /// The cached rows for `key` if they were computed from exactly `tables` (the versions
    /// planning found just now) and have not expired. Counts a hit or a miss.
    pub fn get(&self, key: &CacheKey, tables: &[TableVersion]) -> Option<CachedResult> {
        let found = (|| {
            let mut entries = self.entries.lock();
            entries.clock += 1;
            let clock = entries.clock;
            let fresh = match entries.map.get_mut(key) {
                None => return None,
                Some(entry)
                    if entry.tables == tables && entry.created.elapsed() < self.settings.ttl =>
                {
                    entry.last_used = clock;
                    return Some(entry.result.clone());
                }
                Some(_) => false,
            };
            if !fresh {
                // A table changed since, or it expired: it can never be served again.
                entries.remove(key);
            }
            None
        })();
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps a complete result, evicting the least recently used entries to make room.
    pub fn put(&self, key: CacheKey, result: CachedResult, tables: Vec<TableVersion>) {
        let bytes: usize = result
            .batches
            .iter()
            .map(RecordBatch::get_array_memory_size)
            .sum();
        if !self.enabled() || bytes > self.max_entry_bytes() {
            return;
        }
        let mut entries = self.entries.lock();
        entries.remove(&key);
        let ttl = self.settings.ttl;
        entries.remove_where(|e| e.created.elapsed() >= ttl);
        while entries.bytes + bytes > self.settings.max_memory && entries.evict_oldest() {}
        if !entries.make_room(bytes) {
            return;
        }
        entries.clock += 1;
        let last_used = entries.clock;
        entries.bytes += bytes;
        entries.map.insert(
            key,
            Entry {
                result,
                bytes,
                tables,
                created: Instant::now(),
                last_used,
            },
        );
    }

    /// Drops every entry that read `table`.
    pub fn invalidate_table(&self, table: &TableIdent) {
        {
            let mut entries = self.entries.lock();
            entries.remove_where(|e| e.tables.iter().any(|t| &t.table == table));
        }
    }

    /// Drops every entry that read a table of `namespace`.
    pub fn invalidate_namespace(&self, namespace: &NamespaceIdent) {
        {
            let mut entries = self.entries.lock();
            entries.remove_where(|e| e.tables.iter().any(|t| t.table.namespace() == namespace));
        }
    }

    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Entries and the bytes they hold.
    pub fn usage(&self) -> (usize, usize) {
        let entries = self.entries.lock();
        (entries.map.len(), entries.bytes)
    }
}

/// A commit through this coordinator evicts the entries that read the table.
impl CommitListener for ResultCache {
    fn committed(&self, table: &TableIdent, _snapshot_id: Option<i64>) {
        self.invalidate_table(table);
    }
}

#[cfg(test)]
mod tests;
