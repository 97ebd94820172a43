//! SQE's own optimistic commits, one per catalog kind (see `sqe_iceberg::commit`): the REST
//! catalog's `updateTable` with the spec's requirements and updates, and for the embedded SQL
//! catalog the compare-and-swap of its metadata pointer that iceberg-catalog-sql itself does.

use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use iceberg::spec::TableMetadata;
use iceberg::{
    Catalog, Error, ErrorKind, MetadataLocation, Result, TableIdent, TableRequirement, TableUpdate,
};
use reqwest::StatusCode;
use serde::Serialize;
use sqe_iceberg::commit::CommitUpdates;
use sqlx::sqlite::{SqlitePool, SqlitePoolOptions};

use super::rest_http::{RestEndpoint, error_message};
use super::settings::{CatalogSettings, OAuth2Credentials};

/// Commits to iceberg-catalog-sql's SQLite database: writes the next metadata file, then moves
/// the table's pointer to it only if it still points where the change was computed from.
pub(super) struct SqlCommitter {
    pool: SqlitePool,
    catalog_name: String,
    catalog: Arc<dyn Catalog>,
}

impl std::fmt::Debug for SqlCommitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlCommitter")
            .field("catalog_name", &self.catalog_name)
            .finish_non_exhaustive()
    }
}

impl SqlCommitter {
    /// For the SQL catalog `catalog` whose database `pool` reaches, named `catalog_name`.
    pub(super) fn new(pool: SqlitePool, catalog_name: &str, catalog: Arc<dyn Catalog>) -> Self {
        Self {
            pool,
            catalog_name: catalog_name.to_string(),
            catalog,
        }
    }
}

/// SQE's own connections to the SQL catalog's database (its commits and views), beside
/// iceberg-catalog-sql's.
pub(super) async fn sql_catalog_pool(uri: &str) -> crate::error::Result<SqlitePool> {
    SqlitePoolOptions::new()
        .max_connections(2)
        .connect(uri)
        .await
        .map_err(|e| crate::error::Error::Catalog(format!("cannot open SQL catalog at {uri}: {e}")))
}

#[async_trait]
impl CommitUpdates for SqlCommitter {
    async fn commit_updates(
        &self,
        table: &TableIdent,
        requirements: Vec<TableRequirement>,
        updates: Vec<TableUpdate>,
    ) -> Result<()> {
        let current = self.catalog.load_table(table).await?;
        let current_location = current.metadata_location_result()?.to_string();
        for requirement in &requirements {
            requirement.check(Some(current.metadata())).map_err(|e| {
                Error::new(
                    ErrorKind::CatalogCommitConflicts,
                    format!("{table} changed since the statement read it: {e}"),
                )
            })?;
        }
        let mut builder = current
            .metadata()
            .clone()
            .into_builder(Some(current_location.clone()));
        for update in updates {
            builder = update.apply(builder)?;
        }
        let metadata: TableMetadata = builder.build()?.metadata;
        let location = MetadataLocation::from_str(&current_location)?
            .with_next_version()
            .with_new_metadata(&metadata);
        metadata.write_to(current.file_io(), &location).await?;
        let location = location.to_string();
        let moved = sqlx::query(
            "UPDATE iceberg_tables
             SET metadata_location = ?, previous_metadata_location = ?
             WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?
               AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)
               AND metadata_location = ?",
        )
        .bind(&location)
        .bind(&current_location)
        .bind(&self.catalog_name)
        .bind(table.namespace().join("."))
        .bind(table.name())
        .bind(&current_location)
        .execute(&self.pool)
        .await;
        let conflict = match moved {
            Ok(done) if done.rows_affected() == 1 => return Ok(()),
            Ok(_) => Error::new(
                ErrorKind::CatalogCommitConflicts,
                format!("{table} was changed by another commit at the same time"),
            ),
            Err(e) => Error::new(
                ErrorKind::Unexpected,
                format!("the SQL catalog failed to commit {table}: {e}"),
            ),
        };
        if conflict.kind() == ErrorKind::CatalogCommitConflicts
            && let Err(e) = current.file_io().delete(&location).await
        {
            tracing::warn!(%location, error = %e, "could not delete an unused metadata file");
        }
        Err(conflict)
    }
}

/// Commits through a REST catalog's `updateTable`.
#[derive(Debug)]
pub(super) struct RestCommitter {
    endpoint: RestEndpoint,
}

impl RestCommitter {
    pub(super) fn new(config: &CatalogSettings, oauth2: Option<OAuth2Credentials>) -> Result<Self> {
        Ok(Self {
            endpoint: RestEndpoint::new(config, oauth2)?,
        })
    }
}

/// The spec's `CommitTableRequest`.
#[derive(Serialize)]
struct CommitTableRequest<'a> {
    identifier: Identifier<'a>,
    requirements: Vec<TableRequirement>,
    updates: Vec<TableUpdate>,
}

#[derive(Serialize)]
struct Identifier<'a> {
    namespace: &'a [String],
    name: &'a str,
}

#[async_trait]
impl CommitUpdates for RestCommitter {
    async fn commit_updates(
        &self,
        table: &TableIdent,
        requirements: Vec<TableRequirement>,
        updates: Vec<TableUpdate>,
    ) -> Result<()> {
        let url = self.endpoint.table_url(table, None).await?;
        let body = serde_json::to_vec(&CommitTableRequest {
            identifier: Identifier {
                namespace: table.namespace().as_ref(),
                name: table.name(),
            },
            requirements,
            updates,
        })
        .map_err(|e| Error::new(ErrorKind::DataInvalid, format!("commit request: {e}")))?;
        let response = self
            .endpoint
            .send(|http| {
                http.post(url.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone())
            })
            .await?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let message = error_message(response).await;
        // The spec: 409 is a failed requirement, 404 a missing table, other 4xx a refusal;
        // 5xx (and 502/504 from a proxy) may have been applied.
        let kind = match status {
            StatusCode::CONFLICT => ErrorKind::CatalogCommitConflicts,
            StatusCode::NOT_FOUND => ErrorKind::TableNotFound,
            s if s.is_client_error() => ErrorKind::DataInvalid,
            _ => ErrorKind::Unexpected,
        };
        Err(Error::new(
            kind,
            format!("the catalog refused the commit to {table}: HTTP {status}: {message}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use axum::Json;
    use axum::extract::Path;
    use axum::http::StatusCode as Status;
    use axum::routing::{get, post};
    use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
    use iceberg::{NamespaceIdent, TableCreation};
    use serde_json::json;

    use super::*;
    use crate::catalog::{connect_catalog, default_warehouse_layout};

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn set_property(value: &str) -> TableUpdate {
        TableUpdate::SetProperties {
            updates: HashMap::from([("owner".to_string(), value.to_string())]),
        }
    }

    #[tokio::test]
    async fn the_sql_catalog_applies_a_commit_only_while_its_requirements_hold() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (uri, warehouse) = default_warehouse_layout(dir.path());
        let config = CatalogSettings {
            uri: Some(uri),
            warehouse: Some(warehouse),
            ..Default::default()
        };
        let connected = connect_catalog(&config, &HashMap::new()).await?;
        let namespace = NamespaceIdent::new("s".into());
        connected
            .catalog
            .create_namespace(&namespace, HashMap::new())
            .await?;
        let schema = Schema::builder()
            .with_fields([
                NestedField::optional(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            ])
            .build()?;
        let creation = TableCreation::builder()
            .name("t".into())
            .schema(schema)
            .build();
        let table = connected.catalog.create_table(&namespace, creation).await?;
        let ident = table.identifier().clone();
        let uuid = table.metadata().uuid();

        connected
            .committer
            .commit_updates(
                &ident,
                vec![TableRequirement::UuidMatch { uuid }],
                vec![set_property("a")],
            )
            .await?;
        let after = connected.catalog.load_table(&ident).await?;
        assert_eq!(
            after
                .metadata()
                .properties()
                .get("owner")
                .map(String::as_str),
            Some("a")
        );
        assert_ne!(after.metadata_location(), table.metadata_location());

        // A requirement that no longer holds (the table has no snapshot 42 on main): refused as
        // a conflict, and the table is as it was.
        let refused = connected
            .committer
            .commit_updates(
                &ident,
                vec![TableRequirement::RefSnapshotIdMatch {
                    r#ref: "main".into(),
                    snapshot_id: Some(42),
                }],
                vec![set_property("b")],
            )
            .await
            .err()
            .ok_or("a stale commit was applied")?;
        assert_eq!(
            refused.kind(),
            ErrorKind::CatalogCommitConflicts,
            "{refused}"
        );
        let unchanged = connected.catalog.load_table(&ident).await?;
        assert_eq!(unchanged.metadata_location(), after.metadata_location());
        assert_eq!(
            unchanged
                .metadata()
                .properties()
                .get("owner")
                .map(String::as_str),
            Some("a")
        );
        Ok(())
    }

    /// A REST catalog that answers every commit with `status`, keeping what it was sent.
    async fn rest_catalog(
        status: Status,
    ) -> std::io::Result<(String, Arc<parking_lot::Mutex<Vec<serde_json::Value>>>)> {
        let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        let app = axum::Router::new()
            .route("/v1/config", get(|| async { Json(json!({"overrides": {"prefix": "p"}})) }))
            .route(
                "/v1/p/namespaces/{ns}/tables/{table}",
                post(move |Path((ns, table)): Path<(String, String)>, Json(body): Json<serde_json::Value>| {
                    let kept = Arc::clone(&kept);
                    async move {
                        kept.lock().push(json!({"path": format!("{ns}/{table}"), "body": body}));
                        (status, Json(json!({"error": {"message": "requirement failed", "code": status.as_u16()}})))
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok((format!("http://{addr}"), seen))
    }

    #[tokio::test]
    async fn a_rest_commit_sends_the_specs_request_and_reads_its_answer() -> TestResult {
        let table = TableIdent::new(NamespaceIdent::new("s".into()), "t".into());
        for (status, kind) in [
            (Status::CONFLICT, Some(ErrorKind::CatalogCommitConflicts)),
            (Status::NOT_FOUND, Some(ErrorKind::TableNotFound)),
            (Status::BAD_GATEWAY, Some(ErrorKind::Unexpected)),
            (Status::OK, None),
        ] {
            let (url, seen) = rest_catalog(status).await?;
            let config = CatalogSettings {
                catalog_url: Some(url),
                ..Default::default()
            };
            let committer = RestCommitter::new(&config, None)?;
            let result = committer
                .commit_updates(
                    &table,
                    vec![TableRequirement::RefSnapshotIdMatch {
                        r#ref: "main".into(),
                        snapshot_id: Some(7),
                    }],
                    vec![set_property("a")],
                )
                .await;
            assert_eq!(result.err().map(|e| e.kind()), kind, "{status}");
            let sent = seen.lock().clone();
            assert_eq!(sent.len(), 1, "{status}");
            assert_eq!(sent[0]["path"], "s/t");
            let body = &sent[0]["body"];
            assert_eq!(body["identifier"], json!({"namespace": ["s"], "name": "t"}));
            assert_eq!(body["requirements"][0]["type"], "assert-ref-snapshot-id");
            assert_eq!(body["requirements"][0]["snapshot-id"], 7);
            assert_eq!(body["updates"][0]["action"], "set-properties");
        }
        Ok(())
    }
}
