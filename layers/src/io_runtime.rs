//! A dedicated runtime for network I/O.
//!
//! HTTP/2 connection tasks (reading frames, flow control, keep-alive pings) of channels built
//! with [`IoRuntime::endpoint`] run on this runtime's threads, so a query runtime busy with
//! CPU-heavy operators never delays a peer's bytes, and the other way round.
//!
//! ```
//! use sqe_layers::io_runtime::IoRuntime;
//!
//! let io = IoRuntime::new(2)?;
//! let channel = io.endpoint("http://127.0.0.1:50052")?.connect_lazy();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use pin_project::pin_project;

use crate::dedicated_runtime::DedicatedRuntime;
use tokio::runtime::Handle;
use tonic::transport::Endpoint;

/// Threads of an I/O runtime are named `sqe-io-<n>`.
pub const THREAD_PREFIX: &str = "sqe-io-";

/// What ran on the runtime, to check the wiring.
#[derive(Debug, Default)]
pub struct IoStats {
    tasks: AtomicU64,
    foreign_polls: AtomicU64,
}

impl IoStats {
    /// Connection tasks handed to this runtime.
    pub fn tasks(&self) -> u64 {
        self.tasks.load(Ordering::Relaxed)
    }

    /// Polls of those tasks that happened on a thread not of this runtime (should stay 0).
    pub fn foreign_polls(&self) -> u64 {
        self.foreign_polls.load(Ordering::Relaxed)
    }
}

/// A multi-thread tokio runtime reserved for network I/O.
#[derive(Debug)]
pub struct IoRuntime {
    runtime: DedicatedRuntime,
    stats: Arc<IoStats>,
}

impl IoRuntime {
    pub fn new(threads: usize) -> std::io::Result<Arc<Self>> {
        Ok(Arc::new(Self {
            runtime: DedicatedRuntime::new(THREAD_PREFIX, threads)?,
            stats: Arc::default(),
        }))
    }

    pub fn handle(&self) -> &Handle {
        self.runtime.handle()
    }

    pub fn stats(&self) -> Arc<IoStats> {
        Arc::clone(&self.stats)
    }

    /// An executor for `Endpoint::executor`.
    pub fn executor(&self) -> IoExecutor {
        IoExecutor {
            handle: self.handle().clone(),
            stats: Arc::clone(&self.stats),
        }
    }

    /// An endpoint whose connection tasks run on this runtime.
    pub fn endpoint(&self, url: &str) -> Result<Endpoint, tonic::transport::Error> {
        Ok(Endpoint::from_shared(url.to_string())?.executor(self.executor()))
    }
}

/// Spawns connection tasks onto an [`IoRuntime`].
#[derive(Debug, Clone)]
pub struct IoExecutor {
    handle: Handle,
    stats: Arc<IoStats>,
}

impl<F> hyper::rt::Executor<F> for IoExecutor
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, future: F) {
        self.stats.tasks.fetch_add(1, Ordering::Relaxed);
        self.handle.spawn(OnIoThread {
            inner: future,
            stats: Arc::clone(&self.stats),
        });
    }
}

/// Counts polls that happen off the I/O runtime's threads.
#[pin_project]
struct OnIoThread<F> {
    #[pin]
    inner: F,
    stats: Arc<IoStats>,
}

impl<F: Future<Output = ()>> Future for OnIoThread<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.project();
        let on_io = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with(THREAD_PREFIX));
        if !on_io {
            this.stats.foreign_polls.fetch_add(1, Ordering::Relaxed);
        }
        this.inner.poll(cx)
    }
}
