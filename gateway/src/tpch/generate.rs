//! Generating TPC-H tables (with `tpchgen`) straight into Iceberg tables.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use futures::TryStreamExt;
use iceberg::{Catalog, NamespaceIdent, TableCreation, TableIdent};
use sqe_iceberg::types::iceberg_schema_for;
use sqe_iceberg::write::IcebergWriteExec;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

use sqe_engine::error::{Error, ObjectKind, Result};

/// The eight TPC-H tables, in the order they are created.
pub const TABLES: [&str; 8] = [
    "region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

const BATCH_ROWS: usize = 8192;

fn dec() -> DataType {
    DataType::Decimal128(15, 2)
}

fn schema(columns: &[(&str, DataType)]) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, ty)| Field::new(*name, ty.clone(), false))
            .collect::<Vec<_>>(),
    ))
}

/// The Arrow schema of a TPC-H table (keys BIGINT, money DECIMAL(15,2), dates DATE).
pub fn table_schema(table: &str) -> Option<SchemaRef> {
    use DataType::{Date32, Int32, Int64, Utf8};
    Some(match table {
        "region" => schema(&[
            ("r_regionkey", Int64),
            ("r_name", Utf8),
            ("r_comment", Utf8),
        ]),
        "nation" => schema(&[
            ("n_nationkey", Int64),
            ("n_name", Utf8),
            ("n_regionkey", Int64),
            ("n_comment", Utf8),
        ]),
        "part" => schema(&[
            ("p_partkey", Int64),
            ("p_name", Utf8),
            ("p_mfgr", Utf8),
            ("p_brand", Utf8),
            ("p_type", Utf8),
            ("p_size", Int32),
            ("p_container", Utf8),
            ("p_retailprice", dec()),
            ("p_comment", Utf8),
        ]),
        "supplier" => schema(&[
            ("s_suppkey", Int64),
            ("s_name", Utf8),
            ("s_address", Utf8),
            ("s_nationkey", Int64),
            ("s_phone", Utf8),
            ("s_acctbal", dec()),
            ("s_comment", Utf8),
        ]),
        "partsupp" => schema(&[
            ("ps_partkey", Int64),
            ("ps_suppkey", Int64),
            ("ps_availqty", Int32),
            ("ps_supplycost", dec()),
            ("ps_comment", Utf8),
        ]),
        "customer" => schema(&[
            ("c_custkey", Int64),
            ("c_name", Utf8),
            ("c_address", Utf8),
            ("c_nationkey", Int64),
            ("c_phone", Utf8),
            ("c_acctbal", dec()),
            ("c_mktsegment", Utf8),
            ("c_comment", Utf8),
        ]),
        "orders" => schema(&[
            ("o_orderkey", Int64),
            ("o_custkey", Int64),
            ("o_orderstatus", Utf8),
            ("o_totalprice", dec()),
            ("o_orderdate", Date32),
            ("o_orderpriority", Utf8),
            ("o_clerk", Utf8),
            ("o_shippriority", Int32),
            ("o_comment", Utf8),
        ]),
        "lineitem" => schema(&[
            ("l_orderkey", Int64),
            ("l_partkey", Int64),
            ("l_suppkey", Int64),
            ("l_linenumber", Int32),
            ("l_quantity", dec()),
            ("l_extendedprice", dec()),
            ("l_discount", dec()),
            ("l_tax", dec()),
            ("l_returnflag", Utf8),
            ("l_linestatus", Utf8),
            ("l_shipdate", Date32),
            ("l_commitdate", Date32),
            ("l_receiptdate", Date32),
            ("l_shipinstruct", Utf8),
            ("l_shipmode", Utf8),
            ("l_comment", Utf8),
        ]),
        _ => return None,
    })
}

fn i64s<R>(rows: &[R], f: impl Fn(&R) -> i64) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(rows.iter().map(f)))
}

fn i32s<R>(rows: &[R], f: impl Fn(&R) -> i32) -> ArrayRef {
    Arc::new(Int32Array::from_iter_values(rows.iter().map(f)))
}

fn strs<R>(rows: &[R], f: impl Fn(&R) -> String) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
}

/// Money in cents as DECIMAL(15,2).
fn cents<R>(rows: &[R], f: impl Fn(&R) -> i64) -> Result<ArrayRef> {
    let array = Decimal128Array::from_iter_values(rows.iter().map(|r| i128::from(f(r))))
        .with_precision_and_scale(15, 2)
        .map_err(|e| Error::Internal(e.to_string()))?;
    Ok(Arc::new(array))
}

fn dates<R>(rows: &[R], f: impl Fn(&R) -> i32) -> ArrayRef {
    Arc::new(Date32Array::from_iter_values(rows.iter().map(f)))
}

/// Collects an iterator into batches of [`BATCH_ROWS`] rows built by `build`.
fn batches<R>(
    rows: impl Iterator<Item = R>,
    schema: &SchemaRef,
    build: impl Fn(&[R]) -> Result<Vec<ArrayRef>>,
) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    let mut chunk = Vec::with_capacity(BATCH_ROWS);
    let mut flush = |chunk: &mut Vec<R>| -> Result<()> {
        if !chunk.is_empty() {
            let batch = RecordBatch::try_new(Arc::clone(schema), build(chunk)?)
                .map_err(|e| Error::Internal(e.to_string()))?;
            out.push(batch);
            chunk.clear();
        }
        Ok(())
    };
    for row in rows {
        chunk.push(row);
        if chunk.len() == BATCH_ROWS {
            flush(&mut chunk)?;
        }
    }
    flush(&mut chunk)?;
    Ok(out)
}

/// Generates part `part` (1-based) of `parts` of a table.
pub fn generate_part(
    table: &str,
    scale_factor: f64,
    part: i32,
    parts: i32,
) -> Result<Vec<RecordBatch>> {
    let schema = table_schema(table)
        .ok_or_else(|| Error::not_found(ObjectKind::Table, format!("tpch.{table}")))?;
    let (sf, p, n) = (scale_factor, part, parts);
    match table {
        "region" => batches(RegionGenerator::new(sf, p, n).iter(), &schema, |r| {
            Ok(vec![
                i64s(r, |x| x.r_regionkey),
                strs(r, |x| x.r_name.to_string()),
                strs(r, |x| x.r_comment.to_string()),
            ])
        }),
        "nation" => batches(NationGenerator::new(sf, p, n).iter(), &schema, |r| {
            Ok(vec![
                i64s(r, |x| x.n_nationkey),
                strs(r, |x| x.n_name.to_string()),
                i64s(r, |x| x.n_regionkey),
                strs(r, |x| x.n_comment.to_string()),
            ])
        }),
        "part" => batches(PartGenerator::new(sf, p, n).iter(), &schema, |r| {
            Ok(vec![
                i64s(r, |x| x.p_partkey),
                strs(r, |x| x.p_name.to_string()),
                strs(r, |x| x.p_mfgr.to_string()),
                strs(r, |x| x.p_brand.to_string()),
                strs(r, |x| x.p_type.to_string()),
                i32s(r, |x| x.p_size),
                strs(r, |x| x.p_container.to_string()),
                cents(r, |x| x.p_retailprice.0)?,
                strs(r, |x| x.p_comment.to_string()),
            ])
        }),
        "supplier" => batches(SupplierGenerator::new(sf, p, n).iter(), &schema, |r| {
            Ok(vec![
                i64s(r, |x| x.s_suppkey),
                strs(r, |x| x.s_name.to_string()),
                strs(r, |x| x.s_address.to_string()),
                i64s(r, |x| x.s_nationkey),
                strs(r, |x| x.s_phone.to_string()),
                cents(r, |x| x.s_acctbal.0)?,
                strs(r, |x| x.s_comment.to_string()),
            ])
        }),
        "partsupp" => batches(PartSuppGenerator::new(sf, p, n).iter(), &schema, |r| {
            Ok(vec![
                i64s(r, |x| x.ps_partkey),
                i64s(r, |x| x.ps_suppkey),
                i32s(r, |x| x.ps_availqty),
                cents(r, |x| x.ps_supplycost.0)?,
                strs(r, |x| x.ps_comment.to_string()),
            ])
        }),
        "customer" => batches(CustomerGenerator::new(sf, p, n).iter(), &schema, |r| {
            Ok(vec![
                i64s(r, |x| x.c_custkey),
                strs(r, |x| x.c_name.to_string()),
                strs(r, |x| x.c_address.to_string()),
                i64s(r, |x| x.c_nationkey),
                strs(r, |x| x.c_phone.to_string()),
                cents(r, |x| x.c_acctbal.0)?,
                strs(r, |x| x.c_mktsegment.to_string()),
                strs(r, |x| x.c_comment.to_string()),
            ])
        }),
        "orders" => batches(OrderGenerator::new(sf, p, n).iter(), &schema, |r| {
            Ok(vec![
                i64s(r, |x| x.o_orderkey),
                i64s(r, |x| x.o_custkey),
                strs(r, |x| x.o_orderstatus.to_string()),
                cents(r, |x| x.o_totalprice.0)?,
                dates(r, |x| x.o_orderdate.to_unix_epoch()),
                strs(r, |x| x.o_orderpriority.to_string()),
                strs(r, |x| x.o_clerk.to_string()),
                i32s(r, |x| x.o_shippriority),
                strs(r, |x| x.o_comment.to_string()),
            ])
        }),
        "lineitem" => batches(LineItemGenerator::new(sf, p, n).iter(), &schema, |r| {
            Ok(vec![
                i64s(r, |x| x.l_orderkey),
                i64s(r, |x| x.l_partkey),
                i64s(r, |x| x.l_suppkey),
                i32s(r, |x| x.l_linenumber),
                cents(r, |x| x.l_quantity * 100)?,
                cents(r, |x| x.l_extendedprice.0)?,
                cents(r, |x| x.l_discount.0)?,
                cents(r, |x| x.l_tax.0)?,
                strs(r, |x| x.l_returnflag.to_string()),
                strs(r, |x| x.l_linestatus.to_string()),
                dates(r, |x| x.l_shipdate.to_unix_epoch()),
                dates(r, |x| x.l_commitdate.to_unix_epoch()),
                dates(r, |x| x.l_receiptdate.to_unix_epoch()),
                strs(r, |x| x.l_shipinstruct.to_string()),
                strs(r, |x| x.l_shipmode.to_string()),
                strs(r, |x| x.l_comment.to_string()),
            ])
        }),
        other => Err(Error::not_found(ObjectKind::Table, format!("tpch.{other}"))),
    }
}

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
    for table in TABLES {
        let ident = TableIdent::new(ns.clone(), table.to_string());
        if catalog.table_exists(&ident).await? {
            continue;
        }
        let started = std::time::Instant::now();
        let parts = if matches!(table, "region" | "nation") {
            1
        } else {
            parts.max(1)
        };
        let schema =
            table_schema(table).ok_or_else(|| Error::Internal(format!("no schema for {table}")))?;
        let generated = tokio::task::spawn_blocking({
            let table = table.to_string();
            move || {
                (1..=parts as i32)
                    .map(|part| generate_part(&table, scale_factor, part, parts as i32))
                    .collect::<Result<Vec<_>>>()
            }
        })
        .await
        .map_err(|e| Error::Internal(e.to_string()))??;
        let rows = write_new_table(catalog, &ident, schema, generated).await?;
        tracing::info!(table = %ident, rows, elapsed_ms = started.elapsed().as_millis() as u64, "generated TPC-H table");
        created = true;
    }
    Ok(created)
}

/// Creates `ident` and commits `partitions` (one data file set per partition) as one snapshot.
async fn write_new_table(
    catalog: &Arc<dyn Catalog>,
    ident: &TableIdent,
    schema: SchemaRef,
    partitions: Vec<Vec<RecordBatch>>,
) -> Result<u64> {
    let creation = TableCreation::builder()
        .name(ident.name().to_string())
        .schema(iceberg_schema_for(&schema, false)?)
        .build();
    let table = catalog.create_table(ident.namespace(), creation).await?;
    let input = MemorySourceConfig::try_new_exec(&partitions, schema, None)?;
    let write: Arc<dyn ExecutionPlan> = Arc::new(IcebergWriteExec::new(
        input,
        Arc::clone(catalog),
        table,
        None,
    ));
    let written = async {
        execute_stream(write, Arc::new(TaskContext::default()))?
            .try_collect::<Vec<_>>()
            .await
    };
    let written: Vec<RecordBatch> = match written.await {
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
