//! A node's observability port: `/metrics`, `/healthz` and `/readyz`.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::error::{StartError, StartResult as Result};
use sqe_layers::serve::Servers;
use tokio::net::TcpListener;
use tokio::runtime::Handle;

use super::bind;
use crate::observe::{Observed, observability_router};

/// Binds `metrics_port` on `address` and adds its server to `servers` (on the runtime of
/// `handle`); `None` when the port is 0 (off). Returns where it listens.
pub(super) async fn serve_observability<O: Observed>(
    servers: &mut Servers,
    handle: &Handle,
    (address, port, what): (&str, u16, &str),
    observed: O,
) -> Result<Option<SocketAddr>> {
    if port == 0 {
        return Ok(None);
    }
    let listener = bind(address, port, what).await?;
    let addr = listener
        .local_addr()
        .map_err(|e| StartError::System(format!("metrics listener: {e}")))?;
    // A std listener: it is served on whichever runtime runs the server task.
    let listener = listener
        .into_std()
        .map_err(|e| StartError::System(format!("metrics listener: {e}")))?;
    let observed: Arc<dyn Observed> = Arc::new(observed);
    servers.spawn_on(handle, "metrics", |stop| async move {
        let served = match TcpListener::from_std(listener) {
            Ok(listener) => {
                axum::serve(listener, observability_router(observed))
                    .with_graceful_shutdown(stop)
                    .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = served {
            tracing::error!(error = %e, "metrics server failed");
        }
    });
    tracing::info!(%addr, "metrics and health probes listening");
    Ok(Some(addr))
}
