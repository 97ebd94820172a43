//! Talking to a REST catalog beside iceberg-catalog-rest, for the calls it does not make
//! (vended credentials, SQE's own commits): the catalog's URL, path prefix, headers and
//! authentication, as the catalog client uses them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use iceberg::{Error, ErrorKind, NamespaceIdent, Result, TableIdent};
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use tokio::sync::{Mutex, OnceCell};

use super::settings::{CatalogSettings, OAuth2Credentials};

/// A whole exchange with the catalog (the catalog may itself call a token service to vend).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// A token is renewed this long before the identity provider said it expires.
const TOKEN_EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// One REST catalog's HTTP side.
pub(super) struct RestEndpoint {
    http: reqwest::Client,
    catalog_url: url::Url,
    warehouse: Option<String>,
    headers: HeaderMap,
    auth: CatalogAuth,
    /// The catalog's path prefix (`/v1/config`'s `prefix`, as the catalog wrote it), asked for
    /// once.
    prefix: OnceCell<String>,
}

/// Names what it talks to; never a header value or token.
impl std::fmt::Debug for RestEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("RestEndpoint")
            .field("catalog_url", &self.catalog_url.as_str())
            .field("headers", &headers)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

impl RestEndpoint {
    /// The REST catalog of `config`, authenticating as the catalog client does.
    pub(super) fn new(config: &CatalogSettings, oauth2: Option<OAuth2Credentials>) -> Result<Self> {
        let url = config.catalog_url.as_deref().unwrap_or_default();
        let catalog_url = url::Url::parse(url)
            .map_err(|e| Error::new(ErrorKind::DataInvalid, format!("catalog_url '{url}': {e}")))?;
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let name = HeaderName::try_from(name.as_str()).map_err(|e| {
                Error::new(
                    ErrorKind::DataInvalid,
                    format!("catalog header '{name}': {e}"),
                )
            })?;
            let value = HeaderValue::try_from(value.as_str()).map_err(|e| {
                Error::new(
                    ErrorKind::DataInvalid,
                    format!("catalog header '{name}': {e}"),
                )
            })?;
            headers.insert(name, value);
        }
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| Error::new(ErrorKind::Unexpected, format!("HTTP client: {e}")))?;
        let auth = match (oauth2, &config.token) {
            (Some(oauth2), _) => {
                let endpoint = match &oauth2.token_endpoint {
                    Some(endpoint) => endpoint.clone(),
                    None => format!("{}/v1/oauth/tokens", url.trim_end_matches('/')),
                };
                CatalogAuth::OAuth2(TokenSource {
                    oauth2,
                    endpoint,
                    current: Mutex::new(None),
                })
            }
            (None, Some(token)) => CatalogAuth::Bearer(token.clone()),
            (None, None) => CatalogAuth::Anonymous,
        };
        Ok(Self {
            http,
            catalog_url,
            warehouse: config.warehouse.clone(),
            headers,
            auth,
            prefix: OnceCell::new(),
        })
    }

    /// Sends the request `build` makes, with the catalog's headers and token; a token the
    /// catalog refuses is replaced once.
    pub(super) async fn send(
        &self,
        build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        let response = self.send_once(&build).await?;
        if response.status() == StatusCode::UNAUTHORIZED && self.auth.forget().await {
            return self.send_once(&build).await;
        }
        Ok(response)
    }

    async fn send_once(
        &self,
        build: &impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        let mut request = build(&self.http).headers(self.headers.clone());
        if let Some(token) = self.auth.bearer(&self.http).await? {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        // Unexpected, not refused: a request that timed out may have been acted on.
        request.send().await.map_err(|e| {
            Error::new(
                ErrorKind::Unexpected,
                format!("catalog at {} is unreachable: {e}", self.catalog_url),
            )
        })
    }

    /// `{catalog_url}/v1/{prefix}/namespaces/{namespace}/tables/{table}[/{tail}]`, the prefix
    /// as the catalog wrote it (it may be encoded already), namespace and table encoded.
    pub(super) async fn table_url(
        &self,
        table: &TableIdent,
        tail: Option<&str>,
    ) -> Result<url::Url> {
        let mut below = vec!["tables", table.name()];
        below.extend(tail);
        self.namespace_url(table.namespace(), &below).await
    }

    /// `{catalog_url}/v1/{prefix}/namespaces/{namespace}/{below…}`, each segment encoded.
    pub(super) async fn namespace_url(
        &self,
        namespace: &NamespaceIdent,
        below: &[&str],
    ) -> Result<url::Url> {
        let prefix = self.prefix.get_or_try_init(|| self.fetch_prefix()).await?;
        let base = self.catalog_url.as_str().trim_end_matches('/');
        let base = match prefix.trim_matches('/') {
            "" => format!("{base}/v1/"),
            prefix => format!("{base}/v1/{prefix}/"),
        };
        let mut url = url::Url::parse(&base).map_err(|e| {
            Error::new(
                ErrorKind::DataInvalid,
                format!("catalog path prefix '{prefix}': {e}"),
            )
        })?;
        {
            let mut segments = url.path_segments_mut().map_err(|()| {
                Error::new(ErrorKind::DataInvalid, "catalog_url cannot be a base URL")
            })?;
            segments
                .pop_if_empty()
                .push("namespaces")
                .push(&namespace.join("\u{1f}"))
                .extend(below);
        }
        Ok(url)
    }

    /// The prefix the catalog's `/v1/config` sets (an override wins over a default).
    async fn fetch_prefix(&self) -> Result<String> {
        let mut url = self.catalog_url.clone();
        url.path_segments_mut()
            .map_err(|()| Error::new(ErrorKind::DataInvalid, "catalog_url cannot be a base URL"))?
            .pop_if_empty()
            .extend(["v1", "config"]);
        if let Some(warehouse) = &self.warehouse {
            url.query_pairs_mut().append_pair("warehouse", warehouse);
        }
        let response = self.send(|http| http.get(url.clone())).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(Error::new(
                ErrorKind::Unexpected,
                format!(
                    "catalog config at {url}: HTTP {status}: {}",
                    error_message(response).await
                ),
            ));
        }
        let config: CatalogConfig = response
            .json()
            .await
            .map_err(|e| Error::new(ErrorKind::Unexpected, format!("catalog config: {e}")))?;
        Ok(config
            .overrides
            .get("prefix")
            .or_else(|| config.defaults.get("prefix"))
            .cloned()
            .unwrap_or_default())
    }
}

/// The `message` of an Iceberg REST error body, or the start of whatever the body is.
pub(super) async fn error_message(response: reqwest::Response) -> String {
    let text = response.text().await.unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| text.chars().take(200).collect())
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CatalogConfig {
    defaults: HashMap<String, String>,
    overrides: HashMap<String, String>,
}

/// How the calls authenticate: as the catalog client does.
enum CatalogAuth {
    Anonymous,
    Bearer(String),
    OAuth2(TokenSource),
}

impl std::fmt::Debug for CatalogAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CatalogAuth::Anonymous => f.write_str("Anonymous"),
            CatalogAuth::Bearer(_) => f.write_str("Bearer(..)"),
            CatalogAuth::OAuth2(source) => source.fmt(f),
        }
    }
}

impl CatalogAuth {
    async fn bearer(&self, http: &reqwest::Client) -> Result<Option<String>> {
        match self {
            CatalogAuth::Anonymous => Ok(None),
            CatalogAuth::Bearer(token) => Ok(Some(token.clone())),
            CatalogAuth::OAuth2(source) => source.token(http).await.map(Some),
        }
    }

    /// Drops a token the catalog refused; true when a new one can be had.
    async fn forget(&self) -> bool {
        match self {
            CatalogAuth::OAuth2(source) => {
                *source.current.lock().await = None;
                true
            }
            _ => false,
        }
    }
}

/// Client-credentials tokens for these calls, kept until shortly before they expire
/// (or `[auth] refresh_secs`, whichever is first).
struct TokenSource {
    oauth2: OAuth2Credentials,
    endpoint: String,
    current: Mutex<Option<(String, Instant)>>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("client_id", &self.oauth2.client_id)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: Option<u64>,
}

impl TokenSource {
    async fn token(&self, http: &reqwest::Client) -> Result<String> {
        let mut current = self.current.lock().await;
        if let Some((token, until)) = current.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let scope = self.oauth2.scope.as_deref().unwrap_or("catalog");
        let response = http
            .post(&self.endpoint)
            .form(&[
                ("grant_type", "client_credentials"),
                ("client_id", self.oauth2.client_id.as_str()),
                ("client_secret", self.oauth2.client_secret.as_str()),
                ("scope", scope),
            ])
            .send()
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::Unexpected,
                    format!("token endpoint {} is unreachable: {e}", self.endpoint),
                )
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(Error::new(
                ErrorKind::Unexpected,
                format!(
                    "token endpoint {} refused the client credentials: HTTP {status}",
                    self.endpoint
                ),
            ));
        }
        let answer: TokenAnswer = response.json().await.map_err(|e| {
            Error::new(
                ErrorKind::Unexpected,
                format!("token endpoint {}: unreadable answer: {e}", self.endpoint),
            )
        })?;
        let lifetime = answer
            .expires_in
            .map(|s| Duration::from_secs(s).saturating_sub(TOKEN_EXPIRY_MARGIN))
            .map_or(self.oauth2.refresh, |d| d.min(self.oauth2.refresh));
        *current = Some((answer.access_token.clone(), Instant::now() + lifetime));
        Ok(answer.access_token)
    }
}
