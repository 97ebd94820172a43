//! A map whose entries go after a while and which never holds more than its capacity: what
//! SQE keeps on behalf of clients (tickets, prepared statements, sessions, transactions,
//! remembered passwords, vended credentials) must not grow without bound or live forever.
//! On moka: when full, the entries least likely to be used again go first. A map with a quota
//! also caps what each owner (a user) holds, so that one user filling it cannot push everybody
//! else's entries out.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::Expiry;
use moka::sync::Cache;

/// When an entry goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expire {
    /// Once unused this long: every read and write renews it.
    WhenIdle(Duration),
    /// This long after it was written (reads do not renew it).
    AfterWrite(Duration),
}

#[derive(Clone)]
struct Entry<V> {
    value: V,
    /// This entry's own lifetime, overriding the map's.
    lifetime: Option<Duration>,
    /// Whose quota it counts against.
    owner: Option<Arc<str>>,
}

/// Entries held per owner, kept by the map's eviction listener.
type Held = Arc<parking_lot::Mutex<HashMap<Arc<str>, u64>>>;

/// What each owner may hold.
struct Quota {
    per_owner: u64,
    held: Held,
    /// What the entries are, for the error (`prepared statements`).
    what: &'static str,
}

/// An owner already holds as many entries as it may.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("user {owner} holds {held} {what} already, the most one user may; close some or wait")]
pub struct QuotaExceeded {
    pub owner: String,
    pub held: u64,
    pub what: &'static str,
}

impl From<QuotaExceeded> for crate::error::Error {
    fn from(e: QuotaExceeded) -> Self {
        crate::error::Error::LimitReached(e.to_string())
    }
}

struct Rule(Expire);

impl Rule {
    fn base(&self) -> Duration {
        match self.0 {
            Expire::WhenIdle(d) | Expire::AfterWrite(d) => d,
        }
    }
}

impl<K, V> Expiry<K, Entry<V>> for Rule {
    fn expire_after_create(&self, _: &K, entry: &Entry<V>, _: Instant) -> Option<Duration> {
        Some(entry.lifetime.unwrap_or_else(|| self.base()))
    }

    fn expire_after_read(
        &self,
        _: &K,
        entry: &Entry<V>,
        _: Instant,
        remaining: Option<Duration>,
        _: Instant,
    ) -> Option<Duration> {
        match (self.0, entry.lifetime) {
            (Expire::WhenIdle(idle), None) => Some(idle),
            _ => remaining,
        }
    }

    fn expire_after_update(
        &self,
        _: &K,
        entry: &Entry<V>,
        _: Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(entry.lifetime.unwrap_or_else(|| self.base()))
    }
}

/// See the module documentation.
pub struct ExpiringMap<K, V> {
    cache: Cache<K, Entry<V>>,
    quota: Option<Quota>,
}

impl<K, V> std::fmt::Debug for ExpiringMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExpiringMap")
            .field("entries", &self.cache.entry_count())
            .finish_non_exhaustive()
    }
}

impl<K, V> ExpiringMap<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// At most `capacity` entries, each going as `expire` says.
    pub fn new(capacity: u64, expire: Expire) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(capacity)
                .expire_after(Rule(expire))
                .build(),
            quota: None,
        }
    }

    /// As [`Self::new`], and each owner may hold at most `per_owner` entries
    /// ([`Self::insert_owned`]).
    pub fn with_quota(capacity: u64, expire: Expire, per_owner: u64, what: &'static str) -> Self {
        let held: Held = Arc::default();
        let released = Arc::clone(&held);
        let cache = Cache::builder()
            .max_capacity(capacity)
            .expire_after(Rule(expire))
            // Every way an entry goes (expired, removed, replaced, evicted) gives its place back.
            .eviction_listener(move |_key, entry: Entry<V>, _cause| {
                if let Some(owner) = &entry.owner {
                    let mut held = released.lock();
                    if let Some(n) = held.get_mut(owner) {
                        *n = n.saturating_sub(1);
                        if *n == 0 {
                            held.remove(owner);
                        }
                    }
                }
            })
            .build();
        Self {
            cache,
            quota: Some(Quota {
                per_owner,
                held,
                what,
            }),
        }
    }

    pub fn insert(&self, key: K, value: V) {
        self.cache.insert(
            key,
            Entry {
                value,
                lifetime: None,
                owner: None,
            },
        );
    }

    /// Whether `owner` may add an entry now: a check before costly work whose result would be
    /// refused anyway ([`Self::insert_owned`] checks again).
    pub fn check_room(&self, owner: &str) -> Result<(), QuotaExceeded> {
        let Some(quota) = &self.quota else {
            return Ok(());
        };
        let held = |quota: &Quota| quota.held.lock().get(owner).copied().unwrap_or(0);
        if held(quota) >= quota.per_owner {
            // Expired entries give their places back at the next upkeep: do it now.
            self.cache.run_pending_tasks();
            let now = held(quota);
            if now >= quota.per_owner {
                return Err(QuotaExceeded {
                    owner: owner.to_string(),
                    held: now,
                    what: quota.what,
                });
            }
        }
        Ok(())
    }

    /// Inserts an entry of `owner`, unless `owner` holds its quota already (replacing one of
    /// its own entries always succeeds).
    pub fn insert_owned(&self, owner: &str, key: K, value: V) -> Result<(), QuotaExceeded> {
        if let Some(quota) = &self.quota {
            if !self.cache.contains_key(&key) {
                self.check_room(owner)?;
            }
            *quota.held.lock().entry(Arc::from(owner)).or_default() += 1;
        }
        self.cache.insert(
            key,
            Entry {
                value,
                lifetime: None,
                owner: Some(Arc::from(owner)),
            },
        );
        Ok(())
    }

    /// An entry that goes after `lifetime` (from now, however it is used), whatever the map's
    /// rule.
    pub fn insert_for(&self, key: K, value: V, lifetime: Duration) {
        self.cache.insert(
            key,
            Entry {
                value,
                lifetime: Some(lifetime),
                owner: None,
            },
        );
    }

    /// The value of `key` (renewing it in a [`Expire::WhenIdle`] map).
    pub fn get(&self, key: &K) -> Option<V> {
        self.cache.get(key).map(|entry| entry.value)
    }

    pub fn remove(&self, key: &K) -> Option<V> {
        self.cache.remove(key).map(|entry| entry.value)
    }

    /// Changes the value of `key` (starting from `default()` when there is none) and writes
    /// it back. Not atomic against a concurrent change of the same key: the last write wins.
    pub fn update(&self, key: K, default: impl FnOnce() -> V, change: impl FnOnce(&mut V)) {
        let mut value = self.get(&key).unwrap_or_else(default);
        change(&mut value);
        self.insert(key, value);
    }

    /// As [`Self::update`], for an entry of `owner` (see [`Self::insert_owned`]).
    pub fn update_owned(
        &self,
        owner: &str,
        key: K,
        default: impl FnOnce() -> V,
        change: impl FnOnce(&mut V),
    ) -> Result<(), QuotaExceeded> {
        let mut value = self.get(&key).unwrap_or_else(default);
        change(&mut value);
        self.insert_owned(owner, key, value)
    }

    /// Entries held (an estimate: expired ones go at the next upkeep).
    pub fn len(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.entry_count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_holds_at_most_its_quota_and_gets_places_back() {
        let map = ExpiringMap::with_quota(
            1_000,
            Expire::WhenIdle(Duration::from_millis(150)),
            3,
            "things",
        );
        for key in 0..3 {
            assert_eq!(map.insert_owned("alice", key, "x"), Ok(()));
        }
        let refused = map.insert_owned("alice", 3, "x");
        assert_eq!(refused.map_err(|e| e.held), Err(3));
        // Replacing her own entry is no new place; bob is not affected.
        assert_eq!(map.insert_owned("alice", 0, "y"), Ok(()));
        assert_eq!(map.insert_owned("bob", 10, "x"), Ok(()));
        // A removed entry's place is hers again, and so are expired ones'.
        map.remove(&1);
        assert_eq!(map.insert_owned("alice", 4, "x"), Ok(()));
        assert!(map.insert_owned("alice", 5, "x").is_err());
        // moka sweeps expired entries out on a wheel of about a second.
        std::thread::sleep(Duration::from_millis(1_500));
        for key in 6..9 {
            assert_eq!(map.insert_owned("alice", key, "x"), Ok(()), "{key}");
        }
        assert!(map.insert_owned("alice", 9, "x").is_err());
    }

    #[test]
    fn idle_entries_are_renewed_by_use_and_written_ones_are_not() {
        let idle = ExpiringMap::new(10, Expire::WhenIdle(Duration::from_millis(120)));
        let written = ExpiringMap::new(10, Expire::AfterWrite(Duration::from_millis(120)));
        idle.insert("a", 1);
        written.insert("a", 1);
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(60));
            assert_eq!(idle.get(&"a"), Some(1), "used within its idle time");
        }
        assert_eq!(written.get(&"a"), None, "gone 120 ms after it was written");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(idle.get(&"a"), None, "gone once unused");
    }

    #[test]
    fn an_entry_can_have_a_lifetime_of_its_own() {
        let map = ExpiringMap::new(10, Expire::WhenIdle(Duration::from_secs(60)));
        map.insert_for("short", 1, Duration::from_millis(50));
        map.insert("long", 2);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(map.get(&"short"), None);
        assert_eq!(map.get(&"long"), Some(2));
    }

    #[test]
    fn the_map_never_holds_more_than_its_capacity() {
        let map = ExpiringMap::new(100, Expire::WhenIdle(Duration::from_secs(60)));
        for i in 0..10_000 {
            map.insert(i, i);
        }
        assert!(map.len() <= 100, "{} entries", map.len());
        map.update(20_000, || 0, |v| *v += 5);
        map.update(20_000, || 0, |v| *v += 5);
        assert_eq!(map.get(&20_000), Some(10));
        assert_eq!(map.remove(&20_000), Some(10));
        assert_eq!(map.get(&20_000), None);
    }
}
