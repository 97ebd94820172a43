//! Iceberg catalogs: opening them from configuration, and showing them to DataFusion.

mod addressed;
mod commit;
mod connect;
mod locations;
mod manifest_tables;
mod metadata_tables;
mod provider;
mod renewal;
mod rest_http;
mod settings;
mod vended;
mod views;

pub use addressed::{Addressed, MetadataTable};
pub use connect::{ConnectedCatalog, connect_catalog, default_warehouse_layout, table_locations};
pub use locations::{TableLocations, check_new_name};
pub(crate) use manifest_tables::live_files;
pub(crate) use metadata_tables::references;
pub use provider::{IcebergCatalogProvider, IcebergSchemaProvider, ViewProvider};
pub use settings::{CatalogKind, CatalogSettings, OAuth2Credentials};
pub use views::{NoViews, StoredView, TRINO_DIALECT, ViewCatalog, ViewDefinition};

/// The schema a session uses when its client names none.
pub const DEFAULT_SCHEMA: &str = "default";
