//! One statement's share of the coordinator's memory pool, to report its peak.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::error::Result;
use datafusion::execution::memory_pool::{
    MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation,
};

/// Forwards every reservation to the coordinator's shared pool (which enforces
/// `memory_limit`), counting what this statement holds and the most it ever held.
#[derive(Debug)]
pub struct QueryMemory {
    shared: Arc<dyn MemoryPool>,
    reserved: AtomicUsize,
    peak: AtomicUsize,
}

impl QueryMemory {
    pub fn new(shared: Arc<dyn MemoryPool>) -> Self {
        Self {
            shared,
            reserved: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// The most this statement's operators had reserved at once, in bytes.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    fn grew(&self, additional: usize) {
        let now = self.reserved.fetch_add(additional, Ordering::Relaxed) + additional;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }
}

impl std::fmt::Display for QueryMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "query share ({} bytes, peak {}) of {}",
            self.reserved.load(Ordering::Relaxed),
            self.peak(),
            self.shared
        )
    }
}

impl MemoryPool for QueryMemory {
    fn name(&self) -> &str {
        "query"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        self.shared.register(consumer);
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        self.shared.unregister(consumer);
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.shared.grow(reservation, additional);
        self.grew(additional);
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.shared.shrink(reservation, shrink);
        self.reserved.fetch_sub(shrink, Ordering::Relaxed);
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        self.shared.try_grow(reservation, additional)?;
        self.grew(additional);
        Ok(())
    }

    /// The whole pool's: operators deciding whether to spill look at everyone's use.
    fn reserved(&self) -> usize {
        self.shared.reserved()
    }

    fn memory_limit(&self) -> MemoryLimit {
        self.shared.memory_limit()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::execution::memory_pool::GreedyMemoryPool;

    use super::*;

    #[test]
    fn counts_its_own_peak_and_obeys_the_shared_limit() -> Result<()> {
        let shared: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1000));
        let query: Arc<dyn MemoryPool> = Arc::new(QueryMemory::new(Arc::clone(&shared)));
        let other = MemoryConsumer::new("other").register(&shared);
        other.try_grow(300)?;
        let mine = MemoryConsumer::new("mine").register(&query);
        mine.try_grow(400)?;
        mine.shrink(300);
        mine.try_grow(200)?;
        // The shared pool's limit still applies: 300 + 300 + 500 > 1000.
        assert!(mine.try_grow(500).is_err());
        let peak = |q: &Arc<dyn MemoryPool>| q.downcast_ref::<QueryMemory>().map(QueryMemory::peak);
        assert_eq!(peak(&query), Some(400));
        mine.free();
        assert_eq!(shared.reserved(), 300);
        Ok(())
    }
}
