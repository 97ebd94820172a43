//! A tokio runtime owned by a value: its threads are named, and it can be let go of from
//! inside another runtime (where dropping a runtime the ordinary way panics).

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::runtime::{Handle, Runtime};

/// The stack of every runtime thread SQE starts. Planning and running a statement recurse as
/// deep as the statement nests (a long `UNION ALL` chain, nested subqueries), and a thread that
/// runs out of stack aborts the whole process; tokio's 2 MiB default is reached by a 100-way
/// `UNION ALL` in a debug build. Untouched stack is only reserved, not used.
pub const THREAD_STACK_BYTES: usize = 64 * 1024 * 1024;

/// A multi-thread runtime whose threads are named `<prefix><n>`.
#[derive(Debug)]
pub struct DedicatedRuntime {
    runtime: Option<Runtime>,
    handle: Handle,
}

impl DedicatedRuntime {
    pub fn new(prefix: &str, threads: usize) -> std::io::Result<Self> {
        let counter = AtomicU64::new(0);
        let prefix = prefix.to_string();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_stack_size(THREAD_STACK_BYTES)
            .thread_name_fn(move || format!("{prefix}{}", counter.fetch_add(1, Ordering::Relaxed)))
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Self {
            runtime: Some(runtime),
            handle,
        })
    }

    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for DedicatedRuntime {
    fn drop(&mut self) {
        // Dropping a runtime blocks; from inside another runtime that panics. Let it go quietly.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn names_its_threads_and_drops_inside_another_runtime() -> std::io::Result<()> {
        let runtime = DedicatedRuntime::new("sqe-test-", 1)?;
        let name = runtime
            .handle()
            .spawn(async { std::thread::current().name().map(str::to_string) })
            .await
            .map_err(std::io::Error::other)?;
        assert_eq!(name.as_deref(), Some("sqe-test-0"));
        drop(runtime);
        Ok(())
    }
}
