//! What opening a catalog needs, checked and with its secrets read (the coordinator's
//! `[catalog]` and `[auth]` sections).

use std::collections::HashMap;

/// Which kind of Iceberg catalog.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CatalogKind {
    /// Embedded SQL catalog in a SQLite file.
    #[default]
    Sql,
    /// An Iceberg REST catalog (Polaris, Nessie, Lakekeeper, ...).
    Rest,
}

/// How to reach the catalog.
#[derive(Clone)]
pub struct CatalogSettings {
    pub kind: CatalogKind,
    /// The catalog's name in SQL (`SELECT * FROM iceberg.tpch.nation`).
    pub name: String,
    /// SQL catalog: a SQLite URL (`sqlite:///path/catalog.db`) or path.
    pub uri: Option<String>,
    /// REST catalog: base URL of the Iceberg REST API.
    pub catalog_url: Option<String>,
    /// A location (`file:///...`, `s3://bucket/prefix`) for SQL, a name or location for REST.
    pub warehouse: Option<String>,
    /// The storage root under which `CREATE TABLE ... WITH (location = ...)` may put a table
    /// (default: the warehouse, when it is a location).
    pub location_root: Option<String>,
    /// REST: a static bearer token.
    pub token: Option<String>,
    /// REST: extra HTTP headers on every catalog request.
    pub headers: HashMap<String, String>,
    /// REST: read each table with the storage credentials the catalog vends for it.
    pub vended_credentials: bool,
    /// REST: log in with OAuth2 client credentials.
    pub oauth2: Option<OAuth2Credentials>,
}

impl Default for CatalogSettings {
    fn default() -> Self {
        Self {
            kind: CatalogKind::Sql,
            name: "iceberg".into(),
            uri: None,
            catalog_url: None,
            warehouse: None,
            location_root: None,
            token: None,
            headers: HashMap::new(),
            vended_credentials: true,
            oauth2: None,
        }
    }
}

/// A REST catalog's OAuth2 client credentials, checked.
#[derive(Clone)]
pub struct OAuth2Credentials {
    pub client_id: String,
    pub client_secret: String,
    pub token_endpoint: Option<String>,
    pub scope: Option<String>,
    pub refresh: std::time::Duration,
}

/// Whether a secret is set, never what it is.
fn redacted(secret: Option<&String>) -> Option<&'static str> {
    secret.map(|_| "[REDACTED]")
}

impl std::fmt::Debug for CatalogSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogSettings")
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("uri", &self.uri)
            .field("catalog_url", &self.catalog_url)
            .field("warehouse", &self.warehouse)
            .field("location_root", &self.location_root)
            .field("token", &redacted(self.token.as_ref()))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("vended_credentials", &self.vended_credentials)
            .field("oauth2", &self.oauth2)
            .finish()
    }
}

impl std::fmt::Debug for OAuth2Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth2Credentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(Some(&self.client_secret)))
            .field("token_endpoint", &self.token_endpoint)
            .field("scope", &self.scope)
            .field("refresh", &self.refresh)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_shows_no_secret() {
        let settings = CatalogSettings {
            token: Some("hidden-token".into()),
            headers: HashMap::from([("X-Api-Key".to_string(), "hidden-header".to_string())]),
            oauth2: Some(OAuth2Credentials {
                client_id: "sqe".into(),
                client_secret: "hidden-client-secret".into(),
                token_endpoint: None,
                scope: None,
                refresh: std::time::Duration::from_secs(60),
            }),
            ..CatalogSettings::default()
        };
        let shown = format!("{settings:?}");
        assert!(!shown.contains("hidden"), "{shown}");
        assert!(shown.contains("X-Api-Key"), "{shown}");
    }
}
