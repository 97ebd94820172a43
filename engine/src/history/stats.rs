//! Totals over every query since the coordinator started, for `/metrics`.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::QueryState;

/// Counts of ended queries for `/metrics`, by endpoint.
#[derive(Debug, Default)]
pub struct QueryStats {
    inner: Mutex<HashMap<&'static str, EndpointStats>>,
    /// Queries that entered each state, by endpoint and state.
    entered: Mutex<HashMap<(&'static str, &'static str), u64>>,
}

/// What the queries of one endpoint did.
#[derive(Debug)]
pub struct EndpointStats {
    pub by_state: HashMap<&'static str, u64>,
    pub output_rows: u64,
    /// Arrow (in-memory) size of the rows returned; what goes over the wire differs by
    /// encoding (Arrow IPC on Flight SQL, JSON on the Trino port).
    pub output_bytes: u64,
    /// From arrival to end, in seconds.
    pub latency: Histogram,
}

impl QueryStats {
    pub(super) fn ended(
        &self,
        endpoint: &'static str,
        state: QueryState,
        seconds: f64,
        (rows, bytes): (u64, u64),
    ) {
        {
            let mut inner = self.inner.lock();
            let stats = inner.entry(endpoint).or_insert_with(|| EndpointStats {
                by_state: HashMap::new(),
                output_rows: 0,
                output_bytes: 0,
                latency: Histogram::new(LATENCY_BUCKETS),
            });
            *stats.by_state.entry(state.name()).or_default() += 1;
            stats.output_rows += rows;
            stats.output_bytes += bytes;
            stats.latency.observe(seconds);
        }
    }

    pub(super) fn entered(&self, endpoint: &'static str, state: QueryState) {
        *self
            .entered
            .lock()
            .entry((endpoint, state.name()))
            .or_default() += 1;
    }

    /// Queries that entered each state since the coordinator started, by endpoint and state.
    pub fn transitions(&self) -> Vec<((&'static str, &'static str), u64)> {
        let mut counts: Vec<_> = self.entered.lock().iter().map(|(k, v)| (*k, *v)).collect();
        counts.sort();
        counts
    }

    /// Reads the stats of every endpoint.
    pub fn with<R>(&self, read: impl FnOnce(&HashMap<&'static str, EndpointStats>) -> R) -> R {
        read(&self.inner.lock())
    }
}

/// Seconds, counted into fixed buckets.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    buckets: Vec<AtomicU64>,
    sum_micros: AtomicU64,
    count: AtomicU64,
}

/// Query latencies: 10 ms to 10 minutes.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0,
];

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            buckets: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, seconds: f64) {
        if let Some(i) = self.bounds.iter().position(|b| seconds <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.sum_micros
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Each bucket's upper bound and the observations in it (not cumulative).
    pub fn buckets(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.bounds
            .iter()
            .zip(&self.buckets)
            .map(|(bound, count)| (*bound, count.load(Ordering::Relaxed)))
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn sum_seconds(&self) -> f64 {
        self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6
    }
}
