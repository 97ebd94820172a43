//! Views as Iceberg keeps them (the view spec: a metadata file of versions, each a SQL text
//! with its dialect and the catalog and namespace its names resolve in, and the columns it
//! shows), stored in the catalog beside the tables: through the REST catalog's view endpoints,
//! or in the embedded catalog's own database as the JDBC catalog keeps them (a row of type
//! `VIEW`). SQE writes Trino's SQL (dialect `trino`) and reads it back.

mod rest;
mod sql;

use std::collections::HashMap;
use std::fmt;

use async_trait::async_trait;
use iceberg::spec::{Schema, ViewMetadata, ViewRepresentation, ViewRepresentations, ViewVersion};
use iceberg::{NamespaceIdent, TableIdent};

pub(super) use rest::RestViews;
pub(super) use sql::SqlViews;

use crate::error::{Error, Result};

/// The dialect SQE writes its views' SQL in, and reads first.
pub const TRINO_DIALECT: &str = "trino";
/// The view property Trino keeps a view's comment in.
const COMMENT_PROPERTY: &str = "comment";
/// Where Trino keeps a `SECURITY DEFINER` view's owner (absent: `SECURITY INVOKER`).
const RUN_AS_OWNER_PROPERTY: &str = "trino.run-as-owner";

/// Where a catalog keeps views. A catalog without views lists none and refuses to create one.
#[async_trait]
pub trait ViewCatalog: fmt::Debug + Send + Sync {
    /// The names of the views in `namespace`; none when the catalog keeps no views.
    async fn list_views(&self, namespace: &NamespaceIdent) -> Result<Vec<String>>;
    /// The view's metadata; `None` when there is no such view.
    async fn load_view(&self, view: &TableIdent) -> Result<Option<ViewMetadata>>;
    /// Creates the view; with `replace`, an existing view gets `definition` as its new current
    /// version instead (atomically: readers see the old or the new one). A table of that name
    /// is `TABLE_ALREADY_EXISTS`, and so is a view without `replace`.
    async fn create_view(
        &self,
        view: &TableIdent,
        definition: &ViewDefinition,
        replace: bool,
    ) -> Result<()>;
    /// Drops the view; `false` when there was none.
    async fn drop_view(&self, view: &TableIdent) -> Result<bool>;
}

/// What `CREATE VIEW` stores.
#[derive(Debug, Clone)]
pub struct ViewDefinition {
    /// The query, in Trino's SQL, as the statement wrote it.
    pub sql: String,
    /// The catalog and namespace its unqualified names resolve in.
    pub default_catalog: String,
    pub default_namespace: NamespaceIdent,
    /// The columns it shows (schema id 0).
    pub columns: Schema,
    pub comment: Option<String>,
    /// `SECURITY DEFINER`: the user who created it; `None`: `SECURITY INVOKER`.
    pub run_as_owner: Option<String>,
}

impl ViewDefinition {
    fn representations(&self) -> Result<ViewRepresentations> {
        // iceberg-rust builds representations only from their serialized form.
        serde_json::from_value(serde_json::json!([
            { "type": "sql", "sql": self.sql, "dialect": TRINO_DIALECT }
        ]))
        .map_err(|e| Error::Internal(format!("view representation: {e}")))
    }

    fn summary() -> HashMap<String, String> {
        HashMap::from([
            ("engine-name".to_string(), "sqe".to_string()),
            (
                "engine-version".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
        ])
    }

    fn properties(&self) -> HashMap<String, String> {
        [
            (COMMENT_PROPERTY, &self.comment),
            (RUN_AS_OWNER_PROPERTY, &self.run_as_owner),
        ]
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_string(), value.clone()?)))
        .collect()
    }

    /// The properties a replaced view drops: those this definition has no value for.
    fn unset_properties(&self) -> Vec<String> {
        [
            (COMMENT_PROPERTY, &self.comment),
            (RUN_AS_OWNER_PROPERTY, &self.run_as_owner),
        ]
        .into_iter()
        .filter(|(_, value)| value.is_none())
        .map(|(key, _)| key.to_string())
        .collect()
    }

    /// The definition as a view version (its id and schema id are set where it is added).
    fn version(&self) -> Result<ViewVersion> {
        Ok(ViewVersion::builder()
            .with_schema_id(self.columns.schema_id())
            .with_timestamp_ms(chrono::Utc::now().timestamp_millis())
            .with_summary(Self::summary())
            .with_representations(self.representations()?)
            .with_default_catalog(Some(self.default_catalog.clone()))
            .with_default_namespace(self.default_namespace.clone())
            .build())
    }
}

/// A stored view, as a query reads it.
#[derive(Debug, Clone)]
pub struct StoredView {
    pub sql: String,
    pub dialect: String,
    /// `None`: the catalog the view is in.
    pub default_catalog: Option<String>,
    pub default_namespace: NamespaceIdent,
    pub columns: Schema,
    pub comment: Option<String>,
    /// `SECURITY DEFINER`'s owner; `None`: `SECURITY INVOKER`.
    pub run_as_owner: Option<String>,
}

impl StoredView {
    /// The current version of `metadata`: its Trino SQL, else the first SQL it has.
    pub fn from_metadata(metadata: &ViewMetadata) -> Result<Self> {
        let version = metadata.current_version();
        let sql = version
            .representations()
            .iter()
            .map(|ViewRepresentation::Sql(sql)| sql)
            .min_by_key(|sql| !sql.dialect.eq_ignore_ascii_case(TRINO_DIALECT))
            .ok_or_else(|| {
                Error::invalid(
                    crate::error::ErrorCode::InvalidView,
                    "the view has no SQL representation",
                )
            })?;
        let columns = version
            .schema(metadata)
            .map_err(|e| Error::invalid(crate::error::ErrorCode::InvalidView, e.to_string()))?;
        Ok(Self {
            sql: sql.sql.clone(),
            dialect: sql.dialect.clone(),
            default_catalog: version.default_catalog().cloned(),
            default_namespace: version.default_namespace().clone(),
            columns: (*columns).clone(),
            comment: metadata.properties().get(COMMENT_PROPERTY).cloned(),
            run_as_owner: metadata.properties().get(RUN_AS_OWNER_PROPERTY).cloned(),
        })
    }
}

/// For catalogs that keep no views (in-memory ones in unit tests).
#[derive(Debug, Default)]
pub struct NoViews;

#[async_trait]
impl ViewCatalog for NoViews {
    async fn list_views(&self, _namespace: &NamespaceIdent) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    async fn load_view(&self, _view: &TableIdent) -> Result<Option<ViewMetadata>> {
        Ok(None)
    }

    async fn create_view(
        &self,
        view: &TableIdent,
        _definition: &ViewDefinition,
        _replace: bool,
    ) -> Result<()> {
        Err(Error::NotSupported(format!(
            "CREATE VIEW {view}: this catalog keeps no views"
        )))
    }

    async fn drop_view(&self, _view: &TableIdent) -> Result<bool> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::spec::{NestedField, PrimitiveType, Type, ViewMetadataBuilder};

    fn definition(sql: &str) -> Result<ViewDefinition> {
        Ok(ViewDefinition {
            sql: sql.to_string(),
            default_catalog: "iceberg".into(),
            default_namespace: NamespaceIdent::new("s".into()),
            columns: Schema::builder()
                .with_fields(vec![
                    NestedField::optional(1, "n", Type::Primitive(PrimitiveType::Long)).into(),
                ])
                .build()?,
            comment: Some("counts".into()),
            run_as_owner: Some("ann".into()),
        })
    }

    #[test]
    fn a_definition_reads_back_from_its_metadata() -> Result<()> {
        let view = definition("SELECT count(*) AS n FROM t")?;
        let metadata = ViewMetadataBuilder::new(
            "file:///w/s/v".into(),
            view.columns.clone(),
            view.version()?,
            iceberg::spec::ViewFormatVersion::V1,
            view.properties(),
        )?
        .build()?
        .metadata;
        let stored = StoredView::from_metadata(&metadata)?;
        assert_eq!(stored.sql, "SELECT count(*) AS n FROM t");
        assert_eq!(stored.dialect, "trino");
        assert_eq!(stored.default_catalog.as_deref(), Some("iceberg"));
        assert_eq!(stored.default_namespace, NamespaceIdent::new("s".into()));
        assert_eq!(stored.comment.as_deref(), Some("counts"));
        assert_eq!(stored.columns.as_struct().fields()[0].name, "n");
        // Written and read as the spec's JSON.
        let json = serde_json::to_string(&metadata).map_err(|e| Error::Internal(e.to_string()))?;
        let read: ViewMetadata =
            serde_json::from_str(&json).map_err(|e| Error::Internal(e.to_string()))?;
        assert_eq!(StoredView::from_metadata(&read)?.sql, stored.sql);
        Ok(())
    }
}
