//! Storage credentials a REST catalog vends for a table, preferred over the process's own
//! `[storage]` keys for that table's files.
//!
//! iceberg-catalog-rest 0.10 merges a LoadTable's `config` into the table's FileIO but drops its
//! `storage-credentials`, which is where current catalogs (Polaris, rustberg) put vended
//! credentials. So SQE asks for them itself with the spec's `loadCredentials` call each time a
//! table is loaded (a statement's tables are loaded fresh, so credentials never outlive a
//! statement by much) and builds the table's FileIO with them. They reach workers inside the
//! scan's plan fragment (`IcebergTableProvider::plan_props`): workers keep no long-lived keys.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iceberg::Runtime;
use iceberg::table::Table;
use iceberg::{
    Catalog, Error, ErrorKind, NamespaceIdent, Result, TableCommit, TableCreation, TableIdent,
};
use reqwest::StatusCode;
use serde::Deserialize;
use sqe_iceberg::storage::{file_io_with_props, overlay_table_props};

use super::rest_http::{RestEndpoint, error_message};
use super::settings::{CatalogSettings, OAuth2Credentials};
use crate::expiring::{Expire, ExpiringMap};

/// `inner` (a REST catalog), with vended credentials attached to every table it hands out.
#[derive(Debug)]
pub(super) struct VendedCredentialsCatalog {
    inner: Arc<dyn Catalog>,
    vendor: CredentialVendor,
}

impl VendedCredentialsCatalog {
    pub(super) fn new(inner: Arc<dyn Catalog>, vendor: CredentialVendor) -> Self {
        Self { inner, vendor }
    }

    async fn with_vended(&self, table: Table) -> Result<Table> {
        let vended = self
            .vendor
            .credentials_for(table.identifier(), table.metadata().location())
            .await?;
        let Some(vended) = vended else {
            return Ok(table);
        };
        let props = overlay_table_props(table.file_io().config().props().clone(), &vended);
        let mut builder = Table::builder()
            .identifier(table.identifier().clone())
            .metadata(table.metadata_ref())
            .file_io(file_io_with_props(props))
            .runtime(self.vendor.runtime.clone());
        if let Some(location) = table.metadata_location() {
            builder = builder.metadata_location(location);
        }
        builder.build()
    }
}

sqe_iceberg::catalog_view!(impl Catalog for VendedCredentialsCatalog, inner = self.inner; {
    async fn create_table(
        &self,
        namespace: &NamespaceIdent,
        creation: TableCreation,
    ) -> Result<Table> {
        let table = self.inner.create_table(namespace, creation).await?;
        self.with_vended(table).await
    }

    async fn load_table(&self, table: &TableIdent) -> Result<Table> {
        let table = self.inner.load_table(table).await?;
        self.with_vended(table).await
    }

    async fn register_table(&self, table: &TableIdent, metadata_location: String) -> Result<Table> {
        let table = self.inner.register_table(table, metadata_location).await?;
        self.with_vended(table).await
    }

    /// The committed table is not read or written through again (a retry loads the table
    /// afresh), so it is not worth a credential exchange.
    async fn update_table(&self, commit: TableCommit) -> Result<Table> {
        self.inner.update_table(commit).await
    }
});

/// What the catalog vends for a table: the credential's properties, or nothing.
type Vended = Option<HashMap<String, String>>;

/// Asks a REST catalog for the storage credentials of a table.
pub(super) struct CredentialVendor {
    endpoint: RestEndpoint,
    /// Credentials by table location, until shortly before they expire: metadata queries load
    /// every table, and each answer can cost the catalog a token exchange.
    cached: ExpiringMap<String, Vended>,
    runtime: Runtime,
}

/// Names what the vendor talks to; never a header value, token or credential.
impl std::fmt::Debug for CredentialVendor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialVendor")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// How long a vended credential is used when the catalog does not say when it expires (AWS STS
/// hands out at least 15 minutes).
const CREDENTIAL_REUSE: Duration = Duration::from_secs(60);
/// Table locations whose credentials are kept at most.
const MAX_CACHED: u64 = 10_000;
/// A credential that says when it expires is renewed this long before.
const CREDENTIAL_EXPIRY_MARGIN: Duration = Duration::from_secs(300);
/// Where a vended S3 credential says when it expires (Iceberg's property).
const S3_EXPIRES_AT_MS: &str = "s3.session-token-expires-at-ms";

impl CredentialVendor {
    /// A vendor for the REST catalog of `config`, authenticating as the catalog client does.
    pub(super) fn new(config: &CatalogSettings, oauth2: Option<OAuth2Credentials>) -> Result<Self> {
        Ok(Self {
            endpoint: RestEndpoint::new(config, oauth2)?,
            cached: ExpiringMap::new(MAX_CACHED, Expire::AfterWrite(CREDENTIAL_REUSE)),
            runtime: Runtime::try_current()?,
        })
    }

    /// The credentials the catalog vends for the table at `location`, if it vends any. A
    /// catalog that does not vend (the call is not implemented, not offered for this location,
    /// or withheld by its policy) leaves the table to the process's own `[storage]` keys; a
    /// catalog that tried and failed is an error, so the query says why instead of reading
    /// with other keys.
    pub(super) async fn credentials_for(
        &self,
        table: &TableIdent,
        location: &str,
    ) -> Result<Option<HashMap<String, String>>> {
        if location.starts_with("file:") || !location.contains("://") {
            return Ok(None);
        }
        let now = Instant::now();
        if let Some(credentials) = self.cached.get(&location.to_string()) {
            return Ok(credentials);
        }
        let credentials = self.ask(table, location).await?;
        let until = reuse_until(credentials.as_ref(), now);
        self.cached.insert_for(
            location.to_string(),
            credentials.clone(),
            until.saturating_duration_since(Instant::now()),
        );
        Ok(credentials)
    }

    async fn ask(
        &self,
        table: &TableIdent,
        location: &str,
    ) -> Result<Option<HashMap<String, String>>> {
        let url = self.endpoint.table_url(table, Some("credentials")).await?;
        let response = self
            .endpoint
            .send(|http| {
                http.get(url.clone())
                    .header("X-Iceberg-Access-Delegation", "vended-credentials")
            })
            .await?;
        let status = response.status();
        match status {
            StatusCode::OK => {
                let body: LoadCredentials = response.json().await.map_err(|e| {
                    refused(table, format!("unreadable loadCredentials answer: {e}"))
                })?;
                let chosen = longest_covering(location, body.storage_credentials);
                if chosen.is_none() {
                    tracing::debug!(%table, location, "no vended credential covers the table");
                }
                Ok(chosen)
            }
            StatusCode::NOT_IMPLEMENTED | StatusCode::NOT_ACCEPTABLE => {
                tracing::debug!(%table, %status, "the catalog vends no credentials for this table");
                Ok(None)
            }
            // An older catalog without the call; also what a wrong URL would get, so it is
            // said where operators look.
            StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED => {
                tracing::warn!(%table, %status, %url, "the catalog does not answer loadCredentials; using [storage]");
                Ok(None)
            }
            StatusCode::FORBIDDEN => {
                tracing::info!(%table, "the catalog withholds credentials for this table; using [storage]");
                Ok(None)
            }
            _ => Err(refused(
                table,
                format!("HTTP {status}: {}", error_message(response).await),
            )),
        }
    }
}

/// Until when `credentials` may be used from `now`: shortly before the expiry they state, or a
/// short while when they state none (or when there are none).
fn reuse_until(credentials: Option<&HashMap<String, String>>, now: Instant) -> Instant {
    let expires_in = credentials
        .and_then(|c| c.get(S3_EXPIRES_AT_MS))
        .and_then(|ms| ms.parse::<u64>().ok())
        .map(|ms| {
            let at = std::time::UNIX_EPOCH + Duration::from_millis(ms);
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or_default()
                .saturating_sub(CREDENTIAL_EXPIRY_MARGIN)
        });
    now + expires_in.unwrap_or(CREDENTIAL_REUSE)
}

fn refused(table: &TableIdent, why: String) -> Error {
    Error::new(
        ErrorKind::Unexpected,
        format!("the catalog could not vend storage credentials for {table}: {why}"),
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct LoadCredentials {
    storage_credentials: Vec<StorageCredential>,
}

#[derive(Deserialize)]
struct StorageCredential {
    prefix: String,
    config: HashMap<String, String>,
}

/// The config of the credential with the longest prefix containing `location`, as the spec
/// asks. Prefixes match whole path segments (`s3://b/wh` does not cover `s3://b/wh-other`), and
/// `s3a://`/`s3n://` are `s3://`.
fn longest_covering(
    location: &str,
    credentials: Vec<StorageCredential>,
) -> Option<HashMap<String, String>> {
    let location = with_slash(&s3_scheme(location));
    credentials
        .into_iter()
        .map(|c| (with_slash(&s3_scheme(&c.prefix)), c.config))
        .filter(|(prefix, _)| location.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, config)| config)
}

fn s3_scheme(location: &str) -> String {
    for alias in ["s3a://", "s3n://"] {
        if let Some(rest) = location.strip_prefix(alias) {
            return format!("s3://{rest}");
        }
    }
    location.to_string()
}

fn with_slash(location: &str) -> String {
    if location.ends_with('/') {
        location.to_string()
    } else {
        format!("{location}/")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Json;
    use axum::extract::{Path, State};
    use axum::http::{HeaderMap as Headers, StatusCode as Status};
    use axum::routing::{get, post};
    use serde_json::json;

    use iceberg::io::{S3_ACCESS_KEY_ID, S3_SESSION_TOKEN};

    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn credential(prefix: &str, key: &str) -> StorageCredential {
        StorageCredential {
            prefix: prefix.into(),
            config: HashMap::from([(S3_ACCESS_KEY_ID.to_string(), key.to_string())]),
        }
    }

    fn key_of(config: Option<HashMap<String, String>>) -> Option<String> {
        config.and_then(|c| c.get(S3_ACCESS_KEY_ID).cloned())
    }

    #[test]
    fn the_longest_prefix_covering_the_location_is_chosen() {
        let all = || {
            vec![
                credential("s3://bucket", "bucket"),
                credential("s3://bucket/wh/ns/t", "table"),
                credential("s3://bucket/wh/ns/t-other", "other"),
                credential("s3://", "any"),
            ]
        };
        assert_eq!(
            key_of(longest_covering("s3://bucket/wh/ns/t", all())).as_deref(),
            Some("table")
        );
        assert_eq!(
            key_of(longest_covering("s3a://bucket/wh/ns/t/", all())).as_deref(),
            Some("table"),
            "s3a is s3, a trailing slash changes nothing"
        );
        assert_eq!(
            key_of(longest_covering("s3://bucket/wh/ns/t2", all())).as_deref(),
            Some("bucket"),
            "prefixes match whole segments"
        );
        assert_eq!(
            key_of(longest_covering("s3://elsewhere/x", all())).as_deref(),
            Some("any")
        );
        assert_eq!(
            longest_covering("gs://bucket/wh/ns/t", all()),
            None,
            "nothing covers another scheme"
        );
    }

    /// What the test catalog saw and how it answers.
    #[derive(Default)]
    struct Seen {
        credential_calls: AtomicUsize,
        token_grants: AtomicUsize,
        /// The credential call answers 401 to the first token it sees.
        refuse_first_token: bool,
        status: Option<u16>,
        headers: parking_lot::Mutex<Vec<Headers>>,
        paths: parking_lot::Mutex<Vec<String>>,
    }

    async fn config_route() -> Json<serde_json::Value> {
        Json(json!({"defaults": {"prefix": "ignored"}, "overrides": {"prefix": "cat/one"}}))
    }

    async fn credentials_route(
        State(seen): State<Arc<Seen>>,
        Path((prefix, sub, ns, table)): Path<(String, String, String, String)>,
        headers: Headers,
    ) -> (Status, Json<serde_json::Value>) {
        let call = seen.credential_calls.fetch_add(1, Ordering::SeqCst);
        {
            let mut paths = seen.paths.lock();
            paths.push(format!("{prefix}/{sub}/{ns}/{table}"));
        }
        let bearer = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        {
            let mut all = seen.headers.lock();
            all.push(headers);
        }
        if seen.refuse_first_token && bearer == "Bearer token-1" {
            return (Status::UNAUTHORIZED, Json(json!({})));
        }
        if let Some(status) = seen.status {
            let status = Status::from_u16(status).unwrap_or(Status::IM_A_TEAPOT);
            return (
                status,
                Json(json!({"error": {"message": "the token service is down", "code": 503}})),
            );
        }
        (
            Status::OK,
            Json(json!({"storage-credentials": [
                {"prefix": "s3://bucket/wh", "config": {"s3.access-key-id": format!("wide-{call}")}},
                {"prefix": format!("s3://bucket/wh/{table}"), "config": {
                    "s3.access-key-id": format!("narrow-{call}"),
                    "s3.secret-access-key": "secret",
                    "s3.session-token": "session"
                }}
            ]})),
        )
    }

    async fn token_route(State(seen): State<Arc<Seen>>) -> Json<serde_json::Value> {
        let n = seen.token_grants.fetch_add(1, Ordering::SeqCst) + 1;
        Json(
            json!({"access_token": format!("token-{n}"), "token_type": "bearer", "expires_in": 3600}),
        )
    }

    async fn catalog(seen: Seen) -> std::io::Result<(String, Arc<Seen>)> {
        let seen = Arc::new(seen);
        let app = axum::Router::new()
            .route("/v1/config", get(config_route))
            .route(
                "/v1/{prefix}/{sub}/namespaces/{ns}/tables/{table}/credentials",
                get(credentials_route),
            )
            .route("/v1/oauth/tokens", post(token_route))
            .with_state(Arc::clone(&seen));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok((format!("http://{addr}"), seen))
    }

    fn config(url: &str) -> CatalogSettings {
        CatalogSettings {
            catalog_url: Some(url.into()),
            warehouse: Some("s3://bucket".into()),
            headers: HashMap::from([("X-Tenant".to_string(), "sqe".to_string())]),
            ..Default::default()
        }
    }

    fn table() -> TableIdent {
        TableIdent::new(
            NamespaceIdent::from_strs(["a", "b"])
                .unwrap_or_else(|_| NamespaceIdent::new("a".into())),
            "t".into(),
        )
    }

    #[tokio::test]
    async fn credentials_are_asked_for_at_the_prefixed_path_and_the_narrowest_is_used() -> TestResult
    {
        let (url, seen) = catalog(Seen::default()).await?;
        let mut config = config(&url);
        config.token = Some("static-token".into());
        let vendor = CredentialVendor::new(&config, None)?;
        let vended = vendor
            .credentials_for(&table(), "s3://bucket/wh/t")
            .await?
            .ok_or("no credentials")?;
        assert_eq!(
            vended.get(S3_ACCESS_KEY_ID).map(String::as_str),
            Some("narrow-0")
        );
        assert_eq!(
            vended.get(S3_SESSION_TOKEN).map(String::as_str),
            Some("session")
        );
        let paths = seen.paths.lock().clone();
        assert_eq!(paths, vec!["cat/one/a\u{1f}b/t".to_string()]);
        let headers = seen.headers.lock().clone();
        let first = headers.first().ok_or("no request")?;
        assert_eq!(first["authorization"], "Bearer static-token");
        assert_eq!(first["x-iceberg-access-delegation"], "vended-credentials");
        assert_eq!(first["x-tenant"], "sqe");

        // Local tables are never asked about.
        assert!(
            vendor
                .credentials_for(&table(), "file:///tmp/wh/t")
                .await?
                .is_none()
        );
        assert_eq!(seen.credential_calls.load(Ordering::SeqCst), 1);
        Ok(())
    }

    #[tokio::test]
    async fn a_catalog_that_does_not_vend_leaves_the_table_to_the_own_keys() -> TestResult {
        for status in [404, 501, 403] {
            let (url, _) = catalog(Seen {
                status: Some(status),
                ..Default::default()
            })
            .await?;
            let vendor = CredentialVendor::new(&config(&url), None)?;
            let vended = vendor.credentials_for(&table(), "s3://bucket/wh/t").await?;
            assert!(vended.is_none(), "HTTP {status}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_failed_exchange_is_an_error_naming_the_table_and_the_catalogs_reason() -> TestResult
    {
        let (url, _) = catalog(Seen {
            status: Some(503),
            ..Default::default()
        })
        .await?;
        let vendor = CredentialVendor::new(&config(&url), None)?;
        let error = vendor
            .credentials_for(&table(), "s3://bucket/wh/t")
            .await
            .err()
            .ok_or("a failed exchange was taken for no credentials")?
            .to_string();
        assert!(
            error.contains("could not vend storage credentials for a.b.t"),
            "{error}"
        );
        assert!(
            error.contains("503") && error.contains("the token service is down"),
            "{error}"
        );
        Ok(())
    }

    #[tokio::test]
    async fn oauth2_tokens_are_reused_and_renewed_when_the_catalog_refuses_one() -> TestResult {
        let (url, seen) = catalog(Seen {
            refuse_first_token: true,
            ..Default::default()
        })
        .await?;
        let oauth2 = OAuth2Credentials {
            client_id: "sqe".into(),
            client_secret: "secret".into(),
            token_endpoint: None,
            scope: None,
            refresh: Duration::from_secs(600),
        };
        let vendor = CredentialVendor::new(&config(&url), Some(oauth2))?;
        let vended = vendor.credentials_for(&table(), "s3://bucket/wh/t").await?;
        assert!(
            vended.is_some(),
            "the call went through with a renewed token"
        );
        assert_eq!(seen.token_grants.load(Ordering::SeqCst), 2);
        vendor.credentials_for(&table(), "s3://bucket/wh/t").await?;
        assert_eq!(
            seen.credential_calls.load(Ordering::SeqCst),
            2,
            "credentials are reused for a while"
        );
        vendor
            .credentials_for(&table(), "s3://bucket/wh/elsewhere")
            .await?;
        assert_eq!(seen.credential_calls.load(Ordering::SeqCst), 3);
        assert_eq!(
            seen.token_grants.load(Ordering::SeqCst),
            2,
            "a valid token is reused"
        );
        Ok(())
    }

    #[test]
    fn credentials_are_reused_until_shortly_before_they_expire() {
        let now = Instant::now();
        let expiring_in = |d: Duration| {
            let at = std::time::SystemTime::now() + d;
            let ms = at
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            HashMap::from([(S3_EXPIRES_AT_MS.to_string(), ms.to_string())])
        };
        let hour = reuse_until(Some(&expiring_in(Duration::from_secs(3600))), now) - now;
        assert!(
            hour > Duration::from_secs(3200) && hour <= Duration::from_secs(3300),
            "{hour:?}"
        );
        let soon = reuse_until(Some(&expiring_in(Duration::from_secs(120))), now) - now;
        assert_eq!(soon, Duration::ZERO, "not reused past its renewal margin");
        assert_eq!(reuse_until(None, now) - now, CREDENTIAL_REUSE);
        assert_eq!(
            reuse_until(Some(&HashMap::new()), now) - now,
            CREDENTIAL_REUSE
        );
    }

    #[test]
    fn debug_output_shows_no_token_or_header_value() -> TestResult {
        let mut config = config("http://catalog:8181");
        config.token = Some("the-bearer-token".into());
        config
            .headers
            .insert("X-Api-Key".into(), "the-api-key".into());
        let runtime = tokio::runtime::Builder::new_current_thread().build()?;
        let _entered = runtime.enter();
        let debug = format!("{:?}", CredentialVendor::new(&config, None)?);
        assert!(debug.contains("x-api-key"), "{debug}");
        assert!(
            !debug.contains("the-bearer-token") && !debug.contains("the-api-key"),
            "{debug}"
        );
        Ok(())
    }
}
