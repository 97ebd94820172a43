//! Views in the embedded catalog's database, as the JDBC catalog keeps them: a row of
//! `iceberg_tables` with `iceberg_type = 'VIEW'` pointing at the view's metadata file, which
//! iceberg-catalog-sql's own table calls pass over. A new version is a new metadata file and a
//! compare-and-swap of the pointer.

use std::str::FromStr;

use async_trait::async_trait;
use iceberg::io::FileIO;
use iceberg::spec::{ViewFormatVersion, ViewMetadata, ViewMetadataBuilder};
use iceberg::{MetadataLocation, NamespaceIdent, TableIdent};
use sqlx::Row;
use sqlx::sqlite::SqlitePool;

use super::{ViewCatalog, ViewDefinition};
use crate::error::{Error, ObjectKind, Result};

pub(in crate::catalog) struct SqlViews {
    pool: SqlitePool,
    catalog_name: String,
    warehouse: String,
    file_io: FileIO,
}

impl std::fmt::Debug for SqlViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlViews")
            .field("catalog_name", &self.catalog_name)
            .field("warehouse", &self.warehouse)
            .finish_non_exhaustive()
    }
}

fn catalog_error(e: sqlx::Error) -> Error {
    Error::Catalog(format!("the SQL catalog failed: {e}"))
}

impl SqlViews {
    pub(in crate::catalog) fn new(
        pool: SqlitePool,
        catalog_name: &str,
        warehouse: &str,
        file_io: FileIO,
    ) -> Self {
        Self {
            pool,
            catalog_name: catalog_name.to_string(),
            warehouse: warehouse.trim_end_matches('/').to_string(),
            file_io,
        }
    }

    /// The view's metadata location, and whether the name is a view (else a table).
    async fn entry(&self, view: &TableIdent) -> Result<Option<(Option<String>, bool)>> {
        let row = sqlx::query(
            "SELECT metadata_location, iceberg_type FROM iceberg_tables
             WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
        )
        .bind(&self.catalog_name)
        .bind(view.namespace().join("."))
        .bind(view.name())
        .fetch_optional(&self.pool)
        .await
        .map_err(catalog_error)?;
        Ok(row.map(|row| {
            let location: Option<String> = row.get(0);
            let kind: Option<String> = row.get(1);
            (location, kind.as_deref() == Some("VIEW"))
        }))
    }

    async fn read(&self, location: &str) -> Result<ViewMetadata> {
        let bytes = self.file_io.new_input(location)?.read().await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            Error::invalid(
                crate::error::ErrorCode::InvalidView,
                format!("unreadable view metadata {location}: {e}"),
            )
        })
    }

    async fn write(&self, location: &MetadataLocation, metadata: &ViewMetadata) -> Result<String> {
        let json = serde_json::to_vec(metadata)
            .map_err(|e| Error::Internal(format!("view metadata: {e}")))?;
        let location = location.to_string();
        self.file_io
            .new_output(&location)?
            .write(json.into())
            .await?;
        Ok(location)
    }
}

#[async_trait]
impl ViewCatalog for SqlViews {
    async fn list_views(&self, namespace: &NamespaceIdent) -> Result<Vec<String>> {
        let rows = sqlx::query(
            "SELECT table_name FROM iceberg_tables
             WHERE catalog_name = ? AND table_namespace = ? AND iceberg_type = 'VIEW'",
        )
        .bind(&self.catalog_name)
        .bind(namespace.join("."))
        .fetch_all(&self.pool)
        .await
        .map_err(catalog_error)?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    async fn load_view(&self, view: &TableIdent) -> Result<Option<ViewMetadata>> {
        match self.entry(view).await? {
            Some((Some(location), true)) => Ok(Some(self.read(&location).await?)),
            _ => Ok(None),
        }
    }

    async fn create_view(
        &self,
        view: &TableIdent,
        definition: &ViewDefinition,
        replace: bool,
    ) -> Result<()> {
        let namespace = view.namespace().join(".");
        let current = match self.entry(view).await? {
            None => None,
            Some((Some(location), true)) if replace => Some(location),
            Some(_) => return Err(Error::already_exists(ObjectKind::Table, view.to_string())),
        };
        let Some(current) = current else {
            let location = format!(
                "{}/{}/{}",
                self.warehouse,
                view.namespace()
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("/"),
                view.name()
            );
            let metadata = ViewMetadataBuilder::new(
                location.clone(),
                definition.columns.clone(),
                definition.version()?,
                ViewFormatVersion::V1,
                definition.properties(),
            )?
            .build()?
            .metadata;
            let file = MetadataLocation::from_str(&format!(
                "{location}/metadata/00000-{}.metadata.json",
                uuid::Uuid::now_v7()
            ))?;
            let file = self.write(&file, &metadata).await?;
            let inserted = sqlx::query(
                "INSERT INTO iceberg_tables
                 (catalog_name, table_namespace, table_name, metadata_location, iceberg_type)
                 VALUES (?, ?, ?, ?, 'VIEW')",
            )
            .bind(&self.catalog_name)
            .bind(&namespace)
            .bind(view.name())
            .bind(&file)
            .execute(&self.pool)
            .await;
            return match inserted {
                Ok(_) => Ok(()),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                    let _ = self.file_io.delete(&file).await;
                    Err(Error::already_exists(ObjectKind::Table, view.to_string()))
                }
                Err(e) => Err(catalog_error(e)),
            };
        };
        let previous = self.read(&current).await?;
        let mut builder = previous
            .into_builder()
            .set_current_version(definition.version()?, definition.columns.clone())?;
        builder = builder
            .set_properties(definition.properties())?
            .remove_properties(&definition.unset_properties());
        let metadata = builder.build()?.metadata;
        let file = MetadataLocation::from_str(&current)?.with_next_version();
        let file = self.write(&file, &metadata).await?;
        let moved = sqlx::query(
            "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?
             WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?
               AND iceberg_type = 'VIEW' AND metadata_location = ?",
        )
        .bind(&file)
        .bind(&current)
        .bind(&self.catalog_name)
        .bind(&namespace)
        .bind(view.name())
        .bind(&current)
        .execute(&self.pool)
        .await
        .map_err(catalog_error)?;
        if moved.rows_affected() == 1 {
            return Ok(());
        }
        let _ = self.file_io.delete(&file).await;
        Err(Error::invalid(
            crate::error::ErrorCode::IcebergCommitError,
            format!("view {view} was changed by another statement at the same time; run it again"),
        ))
    }

    async fn drop_view(&self, view: &TableIdent) -> Result<bool> {
        let dropped = sqlx::query(
            "DELETE FROM iceberg_tables
             WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?
               AND iceberg_type = 'VIEW'",
        )
        .bind(&self.catalog_name)
        .bind(view.namespace().join("."))
        .bind(view.name())
        .execute(&self.pool)
        .await
        .map_err(catalog_error)?;
        Ok(dropped.rows_affected() == 1)
    }
}
