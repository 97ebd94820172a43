//! Views through a REST catalog's view endpoints (`/namespaces/{ns}/views[/{view}]`): create,
//! load, list, drop, and a replace as the spec's view commit (a new schema and version made
//! current, only while the view has the UUID read: the spec has no requirement on a view's
//! version, so of two replaces at once the later wins, where the embedded catalog fails one).
//! A catalog without those endpoints lists no views.

use async_trait::async_trait;
use iceberg::spec::{Schema, ViewMetadata, ViewVersion};
use iceberg::{NamespaceIdent, TableIdent, ViewUpdate};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};

use super::super::rest_http::{RestEndpoint, error_message};
use super::super::settings::{CatalogSettings, OAuth2Credentials};
use super::{ViewCatalog, ViewDefinition};
use crate::error::{Error, ErrorCode, ObjectKind, Result};

#[derive(Debug)]
pub(in crate::catalog) struct RestViews {
    endpoint: RestEndpoint,
}

impl RestViews {
    pub(in crate::catalog) fn new(
        config: &CatalogSettings,
        oauth2: Option<OAuth2Credentials>,
    ) -> Result<Self> {
        Ok(Self {
            endpoint: RestEndpoint::new(config, oauth2)?,
        })
    }

    async fn refused(what: &str, response: reqwest::Response) -> Error {
        let status = response.status();
        let message = error_message(response).await;
        Error::Catalog(format!(
            "the catalog refused to {what}: HTTP {status}: {message}"
        ))
    }

    async fn post(&self, url: url::Url, body: Vec<u8>) -> Result<reqwest::Response> {
        Ok(self
            .endpoint
            .send(|http| {
                http.post(url.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone())
            })
            .await?)
    }
}

#[derive(Deserialize)]
struct ListViewsResponse {
    #[serde(default)]
    identifiers: Vec<Identifier>,
    #[serde(rename = "next-page-token")]
    next_page_token: Option<String>,
}

#[derive(Deserialize, Serialize)]
struct Identifier {
    namespace: Vec<String>,
    name: String,
}

#[derive(Deserialize)]
struct LoadViewResponse {
    metadata: ViewMetadata,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct CreateViewRequest<'a> {
    name: &'a str,
    schema: &'a Schema,
    view_version: ViewVersion,
    properties: std::collections::HashMap<String, String>,
}

#[derive(Serialize)]
struct CommitViewRequest {
    identifier: Identifier,
    requirements: Vec<serde_json::Value>,
    updates: Vec<ViewUpdate>,
}

/// What a catalog answers for a view or namespace it does not have, or when it keeps no views.
fn no_such_view(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::NOT_FOUND
            | StatusCode::BAD_REQUEST
            | StatusCode::METHOD_NOT_ALLOWED
            | StatusCode::NOT_IMPLEMENTED
    )
}

fn json(value: &impl Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::Internal(format!("view request: {e}")))
}

#[async_trait]
impl ViewCatalog for RestViews {
    async fn list_views(&self, namespace: &NamespaceIdent) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let mut page: Option<String> = None;
        loop {
            let mut url = self.endpoint.namespace_url(namespace, &["views"]).await?;
            if let Some(token) = &page {
                url.query_pairs_mut().append_pair("pageToken", token);
            }
            let response = self.endpoint.send(|http| http.get(url.clone())).await?;
            match response.status() {
                s if s.is_success() => {}
                s if no_such_view(s) => return Ok(names),
                _ => return Err(Self::refused("list views", response).await),
            }
            let listed: ListViewsResponse = response
                .json()
                .await
                .map_err(|e| Error::Catalog(format!("unreadable list of views: {e}")))?;
            names.extend(listed.identifiers.into_iter().map(|i| i.name));
            match listed.next_page_token {
                Some(token) if !token.is_empty() => page = Some(token),
                _ => return Ok(names),
            }
        }
    }

    async fn load_view(&self, view: &TableIdent) -> Result<Option<ViewMetadata>> {
        let url = self
            .endpoint
            .namespace_url(view.namespace(), &["views", view.name()])
            .await?;
        let response = self.endpoint.send(|http| http.get(url.clone())).await?;
        match response.status() {
            s if s.is_success() => {}
            s if no_such_view(s) => return Ok(None),
            _ => return Err(Self::refused(&format!("load view {view}"), response).await),
        }
        let loaded: LoadViewResponse = response.json().await.map_err(|e| {
            Error::invalid(
                ErrorCode::InvalidView,
                format!("unreadable metadata of view {view}: {e}"),
            )
        })?;
        Ok(Some(loaded.metadata))
    }

    async fn create_view(
        &self,
        view: &TableIdent,
        definition: &ViewDefinition,
        replace: bool,
    ) -> Result<()> {
        if replace && let Some(current) = self.load_view(view).await? {
            let version_id = current
                .versions()
                .map(|v| v.version_id())
                .max()
                .unwrap_or(0)
                + 1;
            let schema_id = current
                .schemas_iter()
                .map(|s| s.schema_id())
                .max()
                .unwrap_or(0)
                + 1;
            let schema = definition
                .columns
                .clone()
                .into_builder()
                .with_schema_id(schema_id)
                .build()?;
            let version = definition
                .version()?
                .with_version_id(version_id)
                .with_schema_id(-1);
            let mut updates = vec![
                ViewUpdate::AddSchema {
                    last_column_id: Some(schema.highest_field_id()),
                    schema,
                },
                ViewUpdate::AddViewVersion {
                    view_version: version,
                },
                ViewUpdate::SetCurrentViewVersion {
                    view_version_id: -1,
                },
            ];
            updates.push(ViewUpdate::SetProperties {
                updates: definition.properties(),
            });
            updates.push(ViewUpdate::RemoveProperties {
                removals: definition.unset_properties(),
            });
            let body = json(&CommitViewRequest {
                identifier: Identifier {
                    namespace: view.namespace().iter().cloned().collect(),
                    name: view.name().to_string(),
                },
                requirements: vec![serde_json::json!({
                    "type": "assert-view-uuid",
                    "uuid": current.uuid(),
                })],
                updates,
            })?;
            let url = self
                .endpoint
                .namespace_url(view.namespace(), &["views", view.name()])
                .await?;
            let response = self.post(url, body).await?;
            return match response.status() {
                s if s.is_success() => Ok(()),
                StatusCode::CONFLICT => Err(Error::invalid(
                    ErrorCode::IcebergCommitError,
                    format!(
                        "view {view} was changed by another statement at the same time; run it again"
                    ),
                )),
                _ => Err(Self::refused(&format!("replace view {view}"), response).await),
            };
        }
        let body = json(&CreateViewRequest {
            name: view.name(),
            schema: &definition.columns,
            view_version: definition.version()?,
            properties: definition.properties(),
        })?;
        let url = self
            .endpoint
            .namespace_url(view.namespace(), &["views"])
            .await?;
        let response = self.post(url, body).await?;
        match response.status() {
            s if s.is_success() => Ok(()),
            StatusCode::CONFLICT => Err(Error::already_exists(ObjectKind::Table, view.to_string())),
            StatusCode::NOT_FOUND => Err(Error::not_found(
                ObjectKind::Schema,
                view.namespace().join("."),
            )),
            _ => Err(Self::refused(&format!("create view {view}"), response).await),
        }
    }

    async fn drop_view(&self, view: &TableIdent) -> Result<bool> {
        let url = self
            .endpoint
            .namespace_url(view.namespace(), &["views", view.name()])
            .await?;
        let response = self.endpoint.send(|http| http.delete(url.clone())).await?;
        match response.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(Self::refused(&format!("drop view {view}"), response).await),
        }
    }
}
