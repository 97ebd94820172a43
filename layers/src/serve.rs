//! The servers of one node: each runs as a task of its own, all share one stop signal, and the
//! set is stopped gracefully, aborted or waited for as one.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use sqe_layers::serve::Servers;
//!
//! let mut servers = Servers::new();
//! servers.spawn("example", |stop| async move {
//!     // Serve until `stop` resolves, e.g. `axum::serve(..).with_graceful_shutdown(stop)`.
//!     stop.await;
//! });
//! servers.stop().await;
//! # }
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

use tokio::net::TcpListener;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A stop signal shared by the servers of a node.
#[derive(Clone, Debug)]
pub struct Shutdown {
    tx: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    pub fn new() -> Self {
        Self {
            tx: watch::channel(false).0,
        }
    }

    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    /// Resolves once [`Self::trigger`] has been called (at once if it has been already).
    pub fn wait(&self) -> Stop {
        let mut rx = self.tx.subscribe();
        Box::pin(async move {
            let _ = rx.wait_for(|stop| *stop).await;
        })
    }
}

/// What a server is given to stop on: resolves when its node shuts down.
pub type Stop = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// The servers of one node and their one stop signal.
#[derive(Debug)]
pub struct Servers {
    shutdown: Shutdown,
    tasks: Vec<(&'static str, JoinHandle<()>)>,
    /// Counts the servers that have ended (stopped or failed).
    ended_tx: watch::Sender<usize>,
}

impl Default for Servers {
    fn default() -> Self {
        Self::new()
    }
}

impl Servers {
    pub fn new() -> Self {
        Self {
            shutdown: Shutdown::new(),
            tasks: Vec::new(),
            ended_tx: watch::channel(0).0,
        }
    }

    /// Starts a server on the current runtime; `serve` gets the node's stop signal.
    pub fn spawn<F>(&mut self, name: &'static str, serve: impl FnOnce(Stop) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.spawn_on(&Handle::current(), name, serve);
    }

    /// Starts a server on the runtime of `handle`.
    pub fn spawn_on<F>(
        &mut self,
        handle: &Handle,
        name: &'static str,
        serve: impl FnOnce(Stop) -> F,
    ) where
        F: Future<Output = ()> + Send + 'static,
    {
        let served = serve(self.shutdown.wait());
        let ended = self.ended_tx.clone();
        let task = handle.spawn(async move {
            served.await;
            ended.send_modify(|n| *n += 1);
        });
        self.tasks.push((name, task));
    }

    /// The names of the servers, in the order they were started.
    pub fn names(&self) -> Vec<&'static str> {
        self.tasks.iter().map(|(name, _)| *name).collect()
    }

    /// Resolves when any server has ended (stopped, or failed), without waiting for it.
    pub fn ended(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut ended = self.ended_tx.subscribe();
        async move {
            let _ = ended.wait_for(|n| *n > 0).await;
        }
    }

    /// Stops accepting requests everywhere and waits for every server to end.
    pub async fn stop(self) {
        self.shutdown.trigger();
        self.join().await;
    }

    /// Stops at once, dropping open connections and their streams.
    pub async fn abort(self) {
        for (_, task) in &self.tasks {
            task.abort();
        }
        self.join().await;
    }

    /// Waits until every server has ended (a signal, or an error).
    pub async fn join(self) {
        for (name, task) in self.tasks {
            if let Err(e) = task.await
                && e.is_panic()
            {
                tracing::error!(server = name, "a server task panicked");
            }
        }
    }

    /// The signal that stops every server of the set.
    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }
}

/// The connections `listener` accepts, as a tonic server takes them, with `TCP_NODELAY` set:
/// a small response (one row, a status) goes out at once instead of waiting for the peer's
/// delayed ACK (Nagle's algorithm costs ~40 ms a round trip otherwise).
pub fn incoming(listener: TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))
}

/// Binds `address:port` with `SO_REUSEADDR`, so a restarted server can bind its port while
/// connections of its previous run linger in `TIME_WAIT`. The error says which address.
pub async fn bind(address: &str, port: u16) -> std::io::Result<TcpListener> {
    let failed = |e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("cannot listen on {address}:{port}: {e}"))
    };
    let addrs = tokio::net::lookup_host((address, port))
        .await
        .map_err(failed)?;
    let mut last = None;
    for addr in addrs {
        match listen_reusing(addr) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(failed(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such address")
    })))
}

fn listen_reusing(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test]
    async fn one_signal_stops_every_server_of_the_set() {
        let stopped = Arc::new(AtomicUsize::new(0));
        let mut servers = Servers::new();
        for name in ["a", "b"] {
            let stopped = Arc::clone(&stopped);
            servers.spawn(name, move |stop| async move {
                stop.await;
                stopped.fetch_add(1, Ordering::SeqCst);
            });
        }
        assert_eq!(servers.names(), vec!["a", "b"]);
        servers.stop().await;
        assert_eq!(stopped.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn ended_resolves_when_one_server_ends_on_its_own() {
        let mut servers = Servers::new();
        servers.spawn("forever", |stop| stop);
        servers.spawn("fails", |_stop| async {});
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), servers.ended()).await;
        assert!(ended.is_ok(), "the server that returned counts as ended");
        let shutdown = servers.shutdown_handle();
        shutdown.trigger();
        servers.join().await;
    }

    #[tokio::test]
    async fn a_port_with_connections_in_time_wait_can_be_bound_again() -> std::io::Result<()> {
        let listener = bind("127.0.0.1", 0).await?;
        let addr = listener.local_addr()?;
        let client = tokio::net::TcpStream::connect(addr).await?;
        let (mut accepted, _) = listener.accept().await?;
        // The server side closes first, so its end of the connection stays in TIME_WAIT.
        accepted.shutdown().await?;
        drop(accepted);
        drop(client);
        drop(listener);
        bind("127.0.0.1", addr.port()).await?;
        Ok(())
    }
}
