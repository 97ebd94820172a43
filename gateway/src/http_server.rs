//! The Trino port's HTTP server, with the limits a public port needs: a cap on open
//! connections, a time limit for a request's headers and for the whole request, a body size
//! limit (413), a handler panic answered as a 500, and requests traced at DEBUG with
//! `Authorization` kept out of the trace.
//!
//! Its own accept loop on hyper-util (what `axum::serve` is made of) because `axum::serve` has
//! neither a header-read timeout nor a connection limit: a client trickling headers (slowloris)
//! would hold its connection, and enough of them every connection, for ever.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, DefaultBodyLimit};
use axum::response::IntoResponse;
use http::{Request, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;
use tower::ServiceExt;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate as _, SizeAbove};
use tower_http::compression::{CompressionLayer, CompressionLevel};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};

use crate::trino::PeerAddr;

/// How much one client may hold of the server.
#[derive(Debug, Clone)]
pub(crate) struct HttpLimits {
    /// Connections open at once; beyond, new ones wait in the listen backlog.
    pub max_connections: usize,
    /// Longest a client may take to send a request's headers.
    pub header_read_timeout: Duration,
    /// Longest a request may take, its body and the answer included (408 after).
    pub request_timeout: Duration,
    /// Largest request body (413 above).
    pub max_body_bytes: usize,
    /// Host names requests may be addressed to (`Host`, port aside); empty: any. A local
    /// cluster lists the loopback names, so a web page whose name resolves to 127.0.0.1 (DNS
    /// rebinding) cannot drive it from the user's browser.
    pub allowed_hosts: Vec<String>,
}

/// How long open connections may finish their requests once the server stops.
const DRAIN: Duration = Duration::from_secs(5);

/// Answers smaller than this go uncompressed: a page without rows is about 1 KB, and
/// compressing it costs more than it saves.
const COMPRESS_ABOVE: u16 = 2048;

/// `router` with its answers compressed with gzip when the client's `Accept-Encoding` asks (as
/// the python client and JDBC do), at its fastest level: JSON pages still shrink to less than
/// half (2.5x for lineitem), and a slower level would make compression the bottleneck of a
/// fast network. Not zstd:
/// tower-http's zstd would add a second zstd version beside parquet's.
pub(crate) fn compressed(router: Router) -> Router {
    router.layer(
        CompressionLayer::new()
            .quality(CompressionLevel::Fastest)
            // Spooled segments are sent as their encoding wrote them (zstd or lz4 already).
            .compress_when(
                SizeAbove::new(COMPRESS_ABOVE)
                    .and(NotForContentType::const_new("application/octet-stream")),
            ),
    )
}

/// `router` behind the per-request limits.
pub(crate) fn limited(router: Router, limits: &HttpLimits) -> Router {
    let allowed: Arc<[String]> = limits
        .allowed_hosts
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    router
        .layer(axum::middleware::from_fn_with_state(allowed, check_host))
        .layer(DefaultBodyLimit::disable())
        .layer(RequestBodyLimitLayer::new(limits.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            limits.request_timeout,
        ))
        .layer(CatchPanicLayer::new())
        // Requests at DEBUG (`SQE_LOG=tower_http=debug`) with their headers, the sensitive ones
        // (marked by the layer outside it) redacted.
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().include_headers(true))
                .on_response(DefaultOnResponse::new().include_headers(false)),
        )
        .layer(SetSensitiveRequestHeadersLayer::new([
            header::AUTHORIZATION,
            header::HeaderName::from_static(crate::trino::spooling::SEGMENT_KEY_HEADER),
        ]))
}

/// Refuses a request addressed to a host not in `allowed` (when that is not empty).
async fn check_host(
    axum::extract::State(allowed): axum::extract::State<Arc<[String]>>,
    request: Request<Body>,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if allowed.is_empty() || host_of(&request).is_some_and(|h| allowed.contains(&h)) {
        return next.run(request).await;
    }
    (
        StatusCode::FORBIDDEN,
        "this server answers only requests addressed to its own host names",
    )
        .into_response()
}

/// The host a request is addressed to, lower-case and without its port.
fn host_of(request: &Request<Body>) -> Option<String> {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().host())?;
    let name = match host.strip_prefix('[') {
        // [::1]:8080
        Some(v6) => v6.split(']').next()?,
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    Some(name.to_ascii_lowercase())
}

/// Serves `router` on `listener` until `stop` resolves; handlers see the caller's address as
/// `ConnectInfo<PeerAddr>`.
pub(crate) async fn serve<L>(
    mut listener: L,
    router: Router,
    limits: HttpLimits,
    stop: impl Future<Output = ()>,
) -> io::Result<()>
where
    L: axum::serve::Listener<Addr = SocketAddr>,
{
    let app = limited(router, &limits);
    let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&connections).acquire_owned() => permit.map_err(io::Error::other)?,
            () = &mut stop => break,
        };
        let (io, addr) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let service = app
            .clone()
            .map_request(move |mut request: Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(PeerAddr(addr)));
                request.map(Body::new)
            });
        let watcher = graceful.watcher();
        let header_read_timeout = limits.header_read_timeout;
        sqe_layers::task::spawn(async move {
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout);
            let connection = builder.serve_connection_with_upgrades(
                TokioIo::new(io),
                TowerToHyperService::new(service),
            );
            if let Err(e) = watcher.watch(connection.into_owned()).await {
                tracing::debug!(%addr, error = %e, "HTTP connection ended with an error");
            }
            drop(permit);
        });
    }
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("HTTP connections still open after the drain time");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use axum::routing::{get, post};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    const LIMITS: HttpLimits = HttpLimits {
        max_connections: 2,
        header_read_timeout: Duration::from_millis(500),
        request_timeout: Duration::from_millis(500),
        max_body_bytes: 64,
        allowed_hosts: Vec::new(),
    };

    /// A server on loopback with routes that echo, panic, dawdle and say who called.
    async fn server() -> Result<(SocketAddr, tokio::sync::oneshot::Sender<()>), io::Error> {
        let router = Router::new()
            .route("/echo", post(|body: String| async move { body }))
            .route(
                "/panic",
                get(|| async {
                    std::panic::resume_unwind(Box::new("a handler bug"));
                    #[allow(unreachable_code)]
                    ""
                }),
            )
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    "late"
                }),
            )
            .route(
                "/peer",
                get(
                    |ConnectInfo(PeerAddr(addr)): ConnectInfo<PeerAddr>| async move {
                        addr.ip().to_string()
                    },
                ),
            );
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, router, LIMITS, async {
            let _ = stopped.await;
        }));
        Ok((addr, stop))
    }

    /// Sends `request` on a new connection and reads the status line of the answer.
    async fn status_of(addr: SocketAddr, request: &str) -> Result<String, io::Error> {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        let text = String::from_utf8_lossy(&answer);
        Ok(text.lines().next().unwrap_or_default().to_string())
    }

    fn get_request(path: &str) -> String {
        format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_413_and_panics_are_500() -> TestResult {
        let (addr, _stop) = server().await?;
        let small =
            "POST /echo HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: 5\r\n\r\nhello";
        assert_eq!(status_of(addr, small).await?, "HTTP/1.1 200 OK");
        let large = format!(
            "POST /echo HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: 100\r\n\r\n{}",
            "x".repeat(100)
        );
        assert_eq!(
            status_of(addr, &large).await?,
            "HTTP/1.1 413 Payload Too Large"
        );
        assert_eq!(
            status_of(addr, &get_request("/panic")).await?,
            "HTTP/1.1 500 Internal Server Error"
        );
        // The server goes on, and handlers know the caller's address.
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(get_request("/peer").as_bytes()).await?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await?;
        assert!(answer.ends_with("127.0.0.1"), "{answer}");
        Ok(())
    }

    #[tokio::test]
    async fn only_the_allowed_host_names_are_served() -> TestResult {
        let limits = HttpLimits {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            ..LIMITS
        };
        let router = limited(Router::new().route("/", get(|| async { "ok" })), &limits);
        for (host, allowed) in [
            ("localhost:8080", true),
            ("LOCALHOST", true),
            ("127.0.0.1:8080", true),
            ("[::1]:8080", true),
            ("evil.example:8080", false),
            ("localhost.evil.example", false),
            ("127.0.0.1.nip.io", false),
        ] {
            let request = Request::builder()
                .uri("/")
                .header("host", host)
                .body(Body::empty())?;
            let status = router.clone().oneshot(request).await?.status();
            assert_eq!(status == StatusCode::OK, allowed, "{host}: {status}");
        }
        Ok(())
    }

    /// The `Content-Encoding` of `router`'s answer to a GET of `path` accepting `accept`.
    async fn encoding_of(
        router: &Router,
        path: &str,
        accept: Option<&str>,
    ) -> Result<Option<String>, Box<dyn std::error::Error>> {
        let mut request = Request::builder().uri(path);
        if let Some(accept) = accept {
            request = request.header(header::ACCEPT_ENCODING, accept);
        }
        let response = router.clone().oneshot(request.body(Body::empty())?).await?;
        Ok(response
            .headers()
            .get(header::CONTENT_ENCODING)
            .map(|v| v.to_str().map(str::to_string))
            .transpose()?)
    }

    #[tokio::test]
    async fn answers_are_compressed_as_the_client_accepts() -> TestResult {
        let big = "[1,2,3],".repeat(1000);
        let router = compressed(
            Router::new()
                .route("/big", get(move || async move { big }))
                .route("/small", get(|| async { "{}" })),
        );
        for (accept, expected) in [
            (None, None),
            (Some("identity"), None),
            (Some("gzip"), Some("gzip")),
            (Some("gzip, deflate"), Some("gzip")),
            (Some("zstd"), None),
            (Some("br, gzip;q=0.5"), Some("gzip")),
            (Some("gzip;q=0"), None),
        ] {
            let encoding = encoding_of(&router, "/big", accept).await?;
            assert_eq!(encoding.as_deref(), expected, "Accept-Encoding: {accept:?}");
        }
        assert_eq!(encoding_of(&router, "/small", Some("gzip")).await?, None);
        Ok(())
    }

    /// Log lines written to a buffer, for the test that reads them.
    #[derive(Clone, Default)]
    struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            match self.0.lock() {
                Ok(mut buffer) => buffer.extend_from_slice(bytes),
                Err(poisoned) => poisoned.into_inner().extend_from_slice(bytes),
            }
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn requests_are_traced_without_their_authorization() -> TestResult {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        let _default = tracing::subscriber::set_default(subscriber);
        let router = limited(Router::new().route("/", get(|| async { "ok" })), &LIMITS);
        let request = Request::builder()
            .uri("/")
            .header("authorization", "Basic c2VjcmV0LXBhc3N3b3Jk")
            .header("x-trino-user", "traced-user")
            .body(Body::empty())?;
        assert_eq!(router.oneshot(request).await?.status(), StatusCode::OK);
        let logged = match captured.0.lock() {
            Ok(buffer) => String::from_utf8_lossy(&buffer).into_owned(),
            Err(poisoned) => String::from_utf8_lossy(&poisoned.into_inner()).into_owned(),
        };
        assert!(logged.contains("traced-user"), "{logged}");
        assert!(!logged.contains("c2VjcmV0LXBhc3N3b3Jk"), "{logged}");
        Ok(())
    }

    #[tokio::test]
    async fn a_slow_request_is_408() -> TestResult {
        let (addr, _stop) = server().await?;
        assert_eq!(
            status_of(addr, &get_request("/slow")).await?,
            "HTTP/1.1 408 Request Timeout"
        );
        Ok(())
    }

    #[tokio::test]
    async fn trickled_headers_lose_their_connection_and_connections_are_capped() -> TestResult {
        let (addr, _stop) = server().await?;
        // Two clients that never finish their headers hold both connections...
        let mut holders = Vec::new();
        for _ in 0..LIMITS.max_connections {
            let mut stream = TcpStream::connect(addr).await?;
            stream.write_all(b"GET /echo HTTP/1.1\r\nhost:").await?;
            holders.push(stream);
        }
        // ...so a third waits, and is answered once the header timeout has closed theirs.
        let started = Instant::now();
        let request = get_request("/peer");
        let third = tokio::time::timeout(Duration::from_secs(10), status_of(addr, &request));
        assert_eq!(third.await??, "HTTP/1.1 200 OK");
        assert!(
            started.elapsed() >= LIMITS.header_read_timeout / 2,
            "the third connection did not wait: {:?}",
            started.elapsed()
        );
        for mut holder in holders {
            let mut rest = Vec::new();
            // Closed by the server (possibly after a 408), not left open.
            tokio::time::timeout(Duration::from_secs(5), holder.read_to_end(&mut rest)).await??;
        }
        Ok(())
    }
}
