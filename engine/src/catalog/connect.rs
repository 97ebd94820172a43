//! Opening the configured Iceberg catalog.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use iceberg::{Catalog, CatalogBuilder};
use iceberg_catalog_rest::{RestCatalog, RestCatalogBuilder};
use iceberg_catalog_sql::{SqlBindStyle, SqlCatalogBuilder};
use sqe_iceberg::storage::ObjectStoreStorageFactory;

use sqe_iceberg::commit::CommitUpdates;

use super::commit::{RestCommitter, SqlCommitter, sql_catalog_pool};
use super::locations::TableLocations;
use super::renewal::RenewOnUnauthorized;
use super::settings::{CatalogKind, CatalogSettings, OAuth2Credentials};
use super::vended::{CredentialVendor, VendedCredentialsCatalog};
use super::views::{RestViews, SqlViews, ViewCatalog};
use crate::error::{Error, Result};

/// How long start-up waits for a catalog to answer before reporting it unreachable.
const CATALOG_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The embedded default under a data directory: `catalog.db` (SQLite) and `warehouse/`.
pub fn default_warehouse_layout(data_dir: &Path) -> (String, String) {
    let uri = format!("sqlite://{}/catalog.db?mode=rwc", data_dir.display());
    let warehouse = format!("file://{}/warehouse", data_dir.display());
    (uri, warehouse)
}

/// An opened catalog, and how SQE commits its own metadata changes to it.
#[derive(Debug, Clone)]
pub struct ConnectedCatalog {
    pub catalog: Arc<dyn Catalog>,
    pub committer: Arc<dyn CommitUpdates>,
    pub views: Arc<dyn ViewCatalog>,
}

/// Opens the catalog and checks that it answers, so a wrong URL or a stopped server is a
/// start-up error naming the catalog rather than a failure of the first query.
pub async fn connect_catalog(
    config: &CatalogSettings,
    storage_props: &HashMap<String, String>,
) -> Result<ConnectedCatalog> {
    let (catalog, committer, views): (
        Arc<dyn Catalog>,
        Arc<dyn CommitUpdates>,
        Arc<dyn ViewCatalog>,
    ) = match config.kind {
        CatalogKind::Sql => {
            let uri = config
                .uri
                .clone()
                .ok_or_else(|| Error::Catalog("catalog type \"sql\" needs catalog.uri".into()))?;
            let uri = sqlite_url(&uri)?;
            let warehouse = config
                .warehouse
                .as_deref()
                .map(location_url)
                .transpose()?
                .ok_or_else(|| {
                    Error::Catalog("catalog type \"sql\" needs catalog.warehouse".into())
                })?;
            let catalog = SqlCatalogBuilder::default()
                .uri(uri.clone())
                .warehouse_location(warehouse.clone())
                .sql_bind_style(SqlBindStyle::QMark)
                .props(storage_props.clone())
                .with_storage_factory(Arc::new(ObjectStoreStorageFactory))
                .load(config.name.clone(), HashMap::new())
                .await
                .map_err(|e| Error::Catalog(format!("cannot open SQL catalog at {uri}: {e}")))?;
            let catalog: Arc<dyn Catalog> = Arc::new(catalog);
            let pool = sql_catalog_pool(&uri).await?;
            let committer = SqlCommitter::new(pool.clone(), &config.name, Arc::clone(&catalog));
            let views = SqlViews::new(
                pool,
                &config.name,
                &warehouse,
                sqe_iceberg::storage::file_io_with_props(storage_props.clone()),
            );
            (catalog, Arc::new(committer), Arc::new(views))
        }
        CatalogKind::Rest => {
            let url = config.catalog_url.clone().ok_or_else(|| {
                Error::Catalog("catalog type \"rest\" needs catalog.catalog_url".into())
            })?;
            let mut props = storage_props.clone();
            props.insert(
                iceberg_catalog_rest::REST_CATALOG_PROP_URI.into(),
                url.clone(),
            );
            if let Some(w) = &config.warehouse {
                props.insert(
                    iceberg_catalog_rest::REST_CATALOG_PROP_WAREHOUSE.into(),
                    w.clone(),
                );
            }
            if let Some(token) = &config.token {
                props.insert("token".into(), token.clone());
            }
            let oauth2 = config.oauth2.clone();
            if let Some(oauth2) = &oauth2 {
                props.extend(oauth2_props(oauth2));
            }
            for (name, value) in &config.headers {
                props.insert(format!("header.{name}"), value.clone());
            }
            let load = RestCatalogBuilder::default()
                .with_storage_factory(Arc::new(ObjectStoreStorageFactory))
                .load(config.name.clone(), props);
            let catalog = tokio::time::timeout(CATALOG_PROBE_TIMEOUT, load)
                .await
                .map_err(|_| {
                    Error::Catalog(format!(
                        "REST catalog at {url} did not answer within {CATALOG_PROBE_TIMEOUT:?}"
                    ))
                })?
                .map_err(|e| {
                    Error::Catalog(format!("REST catalog at {url} is unreachable: {e}"))
                })?;
            let committer = RestCommitter::new(config, oauth2.clone())
                .map_err(|e| Error::Catalog(format!("REST catalog at {url}: {e}")))?;
            let views = RestViews::new(config, oauth2.clone())?;
            let rest = Arc::new(catalog);
            let catalog: Arc<dyn Catalog> = match &oauth2 {
                Some(oauth2) => {
                    keep_token_fresh(&rest, oauth2.refresh);
                    Arc::new(RenewOnUnauthorized::new(rest))
                }
                None => rest,
            };
            let catalog: Arc<dyn Catalog> = if config.vended_credentials {
                let vendor = CredentialVendor::new(config, oauth2)
                    .map_err(|e| Error::Catalog(format!("REST catalog at {url}: {e}")))?;
                Arc::new(VendedCredentialsCatalog::new(catalog, vendor))
            } else {
                catalog
            };
            (catalog, Arc::new(committer), Arc::new(views))
        }
    };
    match tokio::time::timeout(CATALOG_PROBE_TIMEOUT, catalog.list_namespaces(None)).await {
        Ok(Ok(_)) => Ok(ConnectedCatalog {
            catalog,
            committer,
            views,
        }),
        Ok(Err(e)) => Err(Error::Catalog(format!(
            "catalog '{}' is unreachable: {e}",
            config.name
        ))),
        Err(_) => Err(Error::Catalog(format!(
            "catalog '{}' did not answer within {CATALOG_PROBE_TIMEOUT:?}",
            config.name
        ))),
    }
}

/// iceberg-catalog-rest's properties for client credentials.
fn oauth2_props(oauth2: &OAuth2Credentials) -> Vec<(String, String)> {
    let mut props = vec![(
        "credential".to_string(),
        format!("{}:{}", oauth2.client_id, oauth2.client_secret),
    )];
    if let Some(endpoint) = &oauth2.token_endpoint {
        props.push(("oauth2-server-uri".into(), endpoint.clone()));
    }
    if let Some(scope) = &oauth2.scope {
        props.push(("scope".into(), scope.clone()));
    }
    props
}

/// Fetches a new token every `every`, before the current one expires (iceberg-catalog-rest
/// fetches one when it first needs it and keeps it). A failed renewal keeps the old token and
/// is tried again next time. Stops when the catalog is dropped.
fn keep_token_fresh(catalog: &Arc<RestCatalog>, every: Duration) {
    let catalog = Arc::downgrade(catalog);
    sqe_layers::task::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            let Some(catalog) = catalog.upgrade() else {
                break;
            };
            match catalog.regenerate_token().await {
                Ok(()) => tracing::debug!("catalog token renewed"),
                Err(e) => {
                    tracing::warn!(error = %e, "could not renew the catalog token; keeping the current one")
                }
            }
        }
    });
}

/// Accepts a bare path (relative to the working directory) as shorthand for a SQLite file,
/// created with its directory if missing.
fn sqlite_url(uri: &str) -> Result<String> {
    if uri.contains("://") || uri.starts_with("sqlite:") {
        return Ok(uri.to_string());
    }
    let path = absolute(uri)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::Catalog(format!("cannot create {}: {e}", parent.display())))?;
    }
    Ok(format!("sqlite://{}?mode=rwc", path.display()))
}

/// Where tables with an explicit location may go: `[catalog] location_root`, else the
/// warehouse when it is a location (a REST warehouse may be a name).
pub fn table_locations(config: &CatalogSettings) -> Result<TableLocations> {
    let root = match (&config.location_root, &config.warehouse, config.kind) {
        (Some(root), _, _) => Some(location_url(root)?),
        (None, Some(w), CatalogKind::Sql) => Some(location_url(w)?),
        (None, Some(w), CatalogKind::Rest) if w.contains("://") => Some(location_url(w)?),
        _ => None,
    };
    TableLocations::under(root.as_deref())
}

/// Accepts a bare path (relative to the working directory) for a local warehouse.
fn location_url(location: &str) -> Result<String> {
    if location.contains("://") {
        return Ok(location.trim_end_matches('/').to_string());
    }
    Ok(format!("file://{}", absolute(location)?.display()))
}

fn absolute(path: &str) -> Result<std::path::PathBuf> {
    std::path::absolute(path).map_err(|e| Error::Catalog(format!("invalid path {path}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unreachable_rest_catalog_is_a_clear_error() {
        let config = CatalogSettings {
            kind: CatalogKind::Rest,
            catalog_url: Some("http://127.0.0.1:9".into()),
            ..Default::default()
        };
        let err = connect_catalog(&config, &HashMap::new())
            .await
            .err()
            .map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.starts_with("catalog: "), "{err}");
        assert!(err.contains("127.0.0.1:9"), "{err}");
        assert!(err.contains("unreachable"), "{err}");
    }

    #[tokio::test]
    async fn sql_catalog_opens_in_a_fresh_directory() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Internal(e.to_string()))?;
        let (uri, warehouse) = default_warehouse_layout(dir.path());
        let config = CatalogSettings {
            uri: Some(uri),
            warehouse: Some(warehouse),
            ..Default::default()
        };
        let catalog = connect_catalog(&config, &HashMap::new()).await?.catalog;
        assert!(catalog.list_namespaces(None).await?.is_empty());
        Ok(())
    }
}
