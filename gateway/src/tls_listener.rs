//! HTTPS for axum: TCP connections are accepted by one task and each TLS handshake runs in a
//! task of its own (with a time limit), so a slow or broken client never holds up the others.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::error::ConfigError;

/// Longest a client may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The server side of TLS from PEM files: a certificate chain and its private key.
pub(crate) fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, ConfigError> {
    let invalid = |what: &str, path: &Path, e: &dyn std::fmt::Display| {
        ConfigError::Invalid(format!("coordinator.{what} {}: {e}", path.display()))
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect::<std::result::Result<Vec<_>, _>>)
        .map_err(|e| invalid("tls_cert_file", cert, &e))?;
    if chain.is_empty() {
        return Err(invalid(
            "tls_cert_file",
            cert,
            &"no certificate in the file",
        ));
    }
    let key_der =
        PrivateKeyDer::from_pem_file(key).map_err(|e| invalid("tls_key_file", key, &e))?;
    let mut config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid("tls_cert_file", cert, &e))?
            .with_no_client_auth()
            .with_single_cert(chain, key_der)
            .map_err(|e| invalid("tls_key_file", key, &e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A listener yielding connections whose TLS handshake has completed.
pub(crate) struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    pub(crate) fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        sqe_layers::task::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = tcp.accept() => accepted,
                    // The server is gone: stop listening.
                    () = tx.closed() => break,
                };
                let (stream, addr) = match accepted {
                    Ok(connection) => connection,
                    Err(e) => {
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                nodelay(&stream);
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                sqe_layers::task::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, addr)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%addr, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%addr, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self { ready, local })
    }
}

/// Small responses go out at once, not after the client's delayed ACK (Nagle's algorithm).
pub(crate) fn nodelay(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept task only ends once this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}
