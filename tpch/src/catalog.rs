//! The `tpch` catalog as Trino's connector has it: a schema per scale factor, eight tables
//! in each, read-only.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{CatalogProvider, SchemaProvider, Session, TableProvider};
use datafusion::common::Statistics;
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use crate::exec::{TpchScanExec, row_statistics};
use crate::tables::{Money, Naming, Table, TableShape};

/// The catalog's name, as in Trino.
pub const TPCH_CATALOG: &str = "tpch";

/// What `SHOW SCHEMAS FROM tpch` lists: Trino's list, and `sf10`. Any `sf<N>` answers.
const LISTED_SCHEMAS: [&str; 10] = [
    "tiny", "sf1", "sf10", "sf100", "sf300", "sf1000", "sf3000", "sf10000", "sf30000", "sf100000",
];

/// Trino's `tiny` schema.
const TINY_SCALE_FACTOR: f64 = 0.01;

/// The largest scale factor a schema name may ask for: the largest Trino lists, and within
/// what the generator's 64-bit keys and 32-bit part numbers hold.
const MAX_SCALE_FACTOR: f64 = 100_000.0;

pub(crate) fn valid_scale_factor(scale_factor: f64) -> bool {
    scale_factor.is_finite() && scale_factor > 0.0 && scale_factor <= MAX_SCALE_FACTOR
}

/// The scale factor a schema name stands for: `tiny` is 0.01, `sf<N>` is N.
pub fn scale_factor_of(schema: &str) -> Option<f64> {
    let scale_factor = if schema == "tiny" {
        TINY_SCALE_FACTOR
    } else {
        let digits = schema.strip_prefix("sf")?;
        // `f64::from_str` also takes `inf`, `nan` and `1e3`; a scale factor is written in digits.
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return None;
        }
        digits.parse().ok()?
    };
    valid_scale_factor(scale_factor).then_some(scale_factor)
}

/// Trino's `tpch` catalog: the TPC-H tables at any scale factor, generated where they are
/// scanned.
#[derive(Debug, Clone, Copy)]
pub struct TpchCatalog {
    naming: Naming,
    money: Money,
}

impl TpchCatalog {
    /// As Trino's connector is by default: columns without their prefix, money as `double`.
    pub fn trino() -> Self {
        Self {
            naming: Naming::Simplified,
            money: Money::Double,
        }
    }
}

impl CatalogProvider for TpchCatalog {
    fn schema_names(&self) -> Vec<String> {
        LISTED_SCHEMAS.iter().map(|s| s.to_string()).collect()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let scale_factor = scale_factor_of(name)?;
        Some(Arc::new(TpchSchema {
            catalog: *self,
            scale_factor,
        }))
    }
}

#[derive(Debug)]
struct TpchSchema {
    catalog: TpchCatalog,
    scale_factor: f64,
}

#[async_trait]
impl SchemaProvider for TpchSchema {
    fn table_names(&self) -> Vec<String> {
        Table::ALL.iter().map(|t| t.name().to_string()).collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        Ok(Table::from_name(name).map(|table| {
            Arc::new(TpchTable {
                shape: TableShape {
                    table,
                    naming: self.catalog.naming,
                    money: self.catalog.money,
                },
                scale_factor: self.scale_factor,
            }) as Arc<dyn TableProvider>
        }))
    }

    fn table_exist(&self, name: &str) -> bool {
        Table::from_name(name).is_some()
    }
}

/// One generated table.
#[derive(Debug)]
struct TpchTable {
    shape: TableShape,
    scale_factor: f64,
}

#[async_trait]
impl TableProvider for TpchTable {
    fn schema(&self) -> SchemaRef {
        self.shape.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn statistics(&self) -> Option<Statistics> {
        let parts = self.shape.table.part_count(self.scale_factor);
        Some(row_statistics(
            self.shape.table,
            self.scale_factor,
            &self.schema(),
            i64::from(parts),
            parts,
        ))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let partitions = state.config().target_partitions();
        Ok(Arc::new(TpchScanExec::new(
            self.shape,
            self.scale_factor,
            projection.map(Vec::as_slice),
            partitions,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    use super::*;

    #[test]
    fn schema_names_are_scale_factors_as_trino_reads_them() {
        assert_eq!(scale_factor_of("tiny"), Some(0.01));
        assert_eq!(scale_factor_of("sf1"), Some(1.0));
        assert_eq!(scale_factor_of("sf0.5"), Some(0.5));
        for refused in [
            "sf", "sf0", "sf-1", "sfinf", "sfnan", "sf1e3", "sf100001", "default", "SF1",
        ] {
            assert_eq!(scale_factor_of(refused), None, "{refused}");
        }
        let listed = TpchCatalog::trino().schema_names();
        assert!(
            listed.iter().all(|s| scale_factor_of(s).is_some()),
            "{listed:?}"
        );
    }

    #[tokio::test]
    async fn tiny_answers_as_trinos_connector_does() -> Result<()> {
        let ctx = SessionContext::new();
        ctx.register_catalog(TPCH_CATALOG, Arc::new(TpchCatalog::trino()));
        let batches = ctx
            .sql(
                "SELECT (SELECT count(*) FROM tpch.tiny.lineitem) AS l, \
                        (SELECT count(*) FROM tpch.tiny.orders) AS o, \
                        (SELECT count(*) FROM tpch.sf1.nation) AS n, \
                        (SELECT max(length(comment)) <= 44 FROM tpch.tiny.lineitem) AS c",
            )
            .await?
            .collect()
            .await?;
        let shown = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
        // Trino's counts of tpch.tiny.lineitem, tpch.tiny.orders and nation.
        assert!(shown.contains("| 60175 | 15000 | 25 | true |"), "{shown}");
        Ok(())
    }
}
