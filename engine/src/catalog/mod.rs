//! Iceberg catalogs: opening them from configuration, and showing them to DataFusion.

mod connect;
mod provider;
mod renewal;
mod settings;
mod vended;

pub use connect::{connect_catalog, default_warehouse_layout};
pub use provider::{IcebergCatalogProvider, IcebergSchemaProvider};
pub use settings::{CatalogKind, CatalogSettings, OAuth2Credentials};
