//! Generating TPC-H tables (with `sqe_tpch`'s generator) straight into Iceberg tables.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use futures::TryStreamExt;
use iceberg::{Catalog, NamespaceIdent, TableCreation, TableIdent};
use sqe_iceberg::types::iceberg_schema_for;
use sqe_iceberg::write::IcebergWriteExec;
use sqe_tpch::{Money, Naming, Table, TableShape, TpchScanExec};

use sqe_engine::error::Result;

/// Creates schema `namespace` with the eight TPC-H tables at `scale_factor`, each large table
/// written as `parts` data files in one snapshot. Returns false (and does nothing) when the
/// schema already has all eight tables.
pub async fn create_tpch(
    catalog: &Arc<dyn Catalog>,
    namespace: &str,
    scale_factor: f64,
    parts: usize,
) -> Result<bool> {
    let ns = NamespaceIdent::new(namespace.to_string());
    if !catalog.namespace_exists(&ns).await? {
        catalog.create_namespace(&ns, Default::default()).await?;
    }
    let mut created = false;
    for table in Table::ALL {
        let ident = TableIdent::new(ns.clone(), table.name().to_string());
        if catalog.table_exists(&ident).await? {
            continue;
        }
        let started = std::time::Instant::now();
        // The specification's names and decimal money, as SQE's sample tables always had.
        let shape = TableShape {
            table,
            naming: Naming::Standard,
            money: Money::Decimal,
        };
        let generate = Arc::new(TpchScanExec::part_per_partition(
            shape,
            scale_factor,
            parts,
        )?);
        let rows = write_new_table(catalog, &ident, shape.schema(), generate).await?;
        tracing::info!(table = %ident, rows, elapsed_ms = started.elapsed().as_millis() as u64, "generated TPC-H table");
        created = true;
    }
    Ok(created)
}

/// Creates `ident` and commits what `input` generates (data files per partition) as one
/// snapshot.
async fn write_new_table(
    catalog: &Arc<dyn Catalog>,
    ident: &TableIdent,
    schema: SchemaRef,
    input: Arc<dyn ExecutionPlan>,
) -> Result<u64> {
    let creation = TableCreation::builder()
        .name(ident.name().to_string())
        .schema(iceberg_schema_for(&schema, false)?)
        .build();
    let table = catalog.create_table(ident.namespace(), creation).await?;
    let write: Arc<dyn ExecutionPlan> = Arc::new(IcebergWriteExec::new(
        input,
        Arc::clone(catalog),
        table,
        None,
        // Run here, never shipped: no properties need to travel.
        HashMap::new(),
    ));
    let written = async {
        execute_stream(write, Arc::new(TaskContext::default()))?
            .try_collect::<Vec<_>>()
            .await
    };
    let written: Vec<datafusion::arrow::array::RecordBatch> = match written.await {
        Ok(batches) => batches,
        Err(e) => {
            // An empty table would make the next start believe generation had finished.
            if let Err(purge) = catalog.purge_table(ident).await {
                tracing::error!(table = %ident, error = %purge, "could not drop a half-generated table");
            }
            return Err(e.into());
        }
    };
    let rows = written
        .first()
        .and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::UInt64Array>()
                .map(|a| a.value(0))
        })
        .unwrap_or(0);
    Ok(rows)
}
