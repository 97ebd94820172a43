//! Benchmark harnesses. Each binary prints a table comparing SQE's code with a baseline measured
//! in the same run; see `benches/README.md`.

// Test and benchmark code: the lock and spawn bans are for the code that ships.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

/// Latency percentiles of a sample, in microseconds.
#[derive(Debug, Clone, Copy)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub mean: f64,
}

impl Percentiles {
    /// From durations in nanoseconds (sorted in place).
    pub fn of(samples: &mut [u64]) -> Self {
        if samples.is_empty() {
            return Self {
                p50: 0.0,
                p99: 0.0,
                mean: 0.0,
            };
        }
        samples.sort_unstable();
        let at =
            |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
        let mean = samples.iter().sum::<u64>() as f64 / samples.len() as f64 / 1000.0;
        Self {
            p50: at(0.50),
            p99: at(0.99),
            mean,
        }
    }
}

/// A harness's two arguments: the TPC-H scale factor and the number of runs (at least one),
/// each with its default when not given.
pub fn scale_and_runs(
    default_scale_factor: f64,
    default_runs: usize,
) -> Result<(f64, usize), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let scale_factor = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(default_scale_factor);
    let runs = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(default_runs)
        .max(1);
    Ok((scale_factor, runs))
}

/// The Flight SQL target of a local cluster's coordinator, over plain gRPC.
pub fn flight_target(
    cluster: &sqe_gateway::local::LocalCluster,
) -> sqe_gateway::shell::connection::Target {
    let addr = cluster.coordinator.flight_sql_addr;
    sqe_gateway::shell::connection::Target {
        host: addr.ip().to_string(),
        port: addr.port(),
        tls: None,
    }
}

/// The base URI (`http://host:port`) of a local cluster's Trino port.
pub fn trino_base(
    cluster: &sqe_gateway::local::LocalCluster,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let addr = cluster
        .coordinator
        .trino_http_addr
        .ok_or("the Trino protocol is not served")?;
    Ok(format!("http://{addr}"))
}
