//! Generating a range of a table's parts as Arrow batches, only the columns asked for.

use std::fmt::{Display, Write};
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    RecordBatchOptions, StringBuilder,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result;
use tpchgen::generators::{
    Customer, CustomerGenerator, LineItem, LineItemGenerator, Nation, NationGenerator, Order,
    OrderGenerator, Part, PartGenerator, PartSupp, PartSuppGenerator, Region, RegionGenerator,
    Supplier, SupplierGenerator,
};

use crate::tables::{Money, Table, TableShape};

/// Rows per generated batch.
pub(crate) const BATCH_ROWS: usize = 8192;

/// What one scan partition generates.
#[derive(Debug, Clone)]
pub(crate) struct Share {
    pub(crate) shape: TableShape,
    pub(crate) scale_factor: f64,
    /// Zero-based parts of `part_count`.
    pub(crate) parts: Range<i32>,
    pub(crate) part_count: i32,
    /// Indices into the table's columns; `schema` is their schema.
    pub(crate) projection: Vec<usize>,
    pub(crate) schema: SchemaRef,
}

pub(crate) type Batches = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// The batches of `share`, generated as they are pulled.
pub(crate) fn batches(share: Share) -> Batches {
    let Share {
        shape,
        scale_factor: sf,
        parts,
        part_count: n,
        projection,
        schema,
    } = share;
    let out = Output {
        schema,
        projection,
        money: shape.money,
    };
    // Generators number parts from 1.
    match shape.table {
        Table::Region => out.chunks(
            parts.flat_map(move |p| RegionGenerator::new(sf, p + 1, n).into_iter()),
            region,
        ),
        Table::Nation => out.chunks(
            parts.flat_map(move |p| NationGenerator::new(sf, p + 1, n).into_iter()),
            nation,
        ),
        Table::Part => out.chunks(
            parts.flat_map(move |p| PartGenerator::new(sf, p + 1, n).into_iter()),
            part,
        ),
        Table::Supplier => out.chunks(
            parts.flat_map(move |p| SupplierGenerator::new(sf, p + 1, n).into_iter()),
            supplier,
        ),
        Table::PartSupp => out.chunks(
            parts.flat_map(move |p| PartSuppGenerator::new(sf, p + 1, n).into_iter()),
            partsupp,
        ),
        Table::Customer => out.chunks(
            parts.flat_map(move |p| CustomerGenerator::new(sf, p + 1, n).into_iter()),
            customer,
        ),
        Table::Orders => out.chunks(
            parts.flat_map(move |p| OrderGenerator::new(sf, p + 1, n).into_iter()),
            orders,
        ),
        Table::LineItem => out.chunks(
            parts.flat_map(move |p| LineItemGenerator::new(sf, p + 1, n).into_iter()),
            lineitem,
        ),
    }
}

struct Output {
    schema: SchemaRef,
    projection: Vec<usize>,
    money: Money,
}

type ColumnOf<R> = fn(&[R], usize, Money) -> Result<ArrayRef>;

impl Output {
    fn chunks<R: 'static>(
        self,
        mut rows: impl Iterator<Item = R> + Send + 'static,
        column: ColumnOf<R>,
    ) -> Batches {
        Box::new(std::iter::from_fn(move || {
            let chunk: Vec<R> = rows.by_ref().take(BATCH_ROWS).collect();
            if chunk.is_empty() {
                return None;
            }
            Some(self.batch(&chunk, column))
        }))
    }

    fn batch<R>(&self, rows: &[R], column: ColumnOf<R>) -> Result<RecordBatch> {
        let columns = self
            .projection
            .iter()
            .map(|&i| column(rows, i, self.money))
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &options,
        )?)
    }
}

fn keys<R>(rows: &[R], f: impl Fn(&R) -> i64) -> Result<ArrayRef> {
    Ok(Arc::new(Int64Array::from_iter_values(rows.iter().map(f))))
}

fn ints<R>(rows: &[R], f: impl Fn(&R) -> i32) -> Result<ArrayRef> {
    Ok(Arc::new(Int32Array::from_iter_values(rows.iter().map(f))))
}

/// Days since 1970-01-01.
fn dates<R>(rows: &[R], f: impl Fn(&R) -> i32) -> Result<ArrayRef> {
    Ok(Arc::new(Date32Array::from_iter_values(rows.iter().map(f))))
}

/// Text written straight into the array's buffer (most TPC-H strings are built on the fly).
fn text<R, D: Display + ?Sized>(rows: &[R], f: impl Fn(&R) -> &D) -> Result<ArrayRef> {
    let mut builder = StringBuilder::with_capacity(rows.len(), rows.len() * 16);
    for row in rows {
        // Writing into a growable buffer cannot fail.
        let _ = write!(builder, "{}", f(row));
        builder.append_value("");
    }
    Ok(Arc::new(builder.finish()))
}

/// Money held in cents: `double` as Trino's connector gives it (cents / 100), or
/// `decimal(15,2)`.
fn money<R>(rows: &[R], money: Money, cents: impl Fn(&R) -> i64) -> Result<ArrayRef> {
    Ok(match money {
        Money::Double => Arc::new(Float64Array::from_iter_values(
            rows.iter().map(|r| cents(r) as f64 / 100.0),
        )),
        Money::Decimal => Arc::new(
            Decimal128Array::from_iter_values(rows.iter().map(|r| i128::from(cents(r))))
                .with_precision_and_scale(15, 2)?,
        ),
    })
}

fn unknown_column(index: usize) -> Result<ArrayRef> {
    datafusion::common::internal_err!("TPC-H column {index} does not exist")
}

fn region(r: &[Region<'_>], i: usize, _: Money) -> Result<ArrayRef> {
    match i {
        0 => keys(r, |x| x.r_regionkey),
        1 => text(r, |x| x.r_name),
        2 => text(r, |x| x.r_comment),
        _ => unknown_column(i),
    }
}

fn nation(r: &[Nation<'_>], i: usize, _: Money) -> Result<ArrayRef> {
    match i {
        0 => keys(r, |x| x.n_nationkey),
        1 => text(r, |x| x.n_name),
        2 => keys(r, |x| x.n_regionkey),
        3 => text(r, |x| x.n_comment),
        _ => unknown_column(i),
    }
}

fn part(r: &[Part<'_>], i: usize, m: Money) -> Result<ArrayRef> {
    match i {
        0 => keys(r, |x| x.p_partkey),
        1 => text(r, |x| &x.p_name),
        2 => text(r, |x| &x.p_mfgr),
        3 => text(r, |x| &x.p_brand),
        4 => text(r, |x| x.p_type),
        5 => ints(r, |x| x.p_size),
        6 => text(r, |x| x.p_container),
        7 => money(r, m, |x| x.p_retailprice.0),
        8 => text(r, |x| x.p_comment),
        _ => unknown_column(i),
    }
}

fn supplier(r: &[Supplier], i: usize, m: Money) -> Result<ArrayRef> {
    match i {
        0 => keys(r, |x| x.s_suppkey),
        1 => text(r, |x| &x.s_name),
        2 => text(r, |x| &x.s_address),
        3 => keys(r, |x| x.s_nationkey),
        4 => text(r, |x| &x.s_phone),
        5 => money(r, m, |x| x.s_acctbal.0),
        6 => text(r, |x| &x.s_comment),
        _ => unknown_column(i),
    }
}

fn partsupp(r: &[PartSupp<'_>], i: usize, m: Money) -> Result<ArrayRef> {
    match i {
        0 => keys(r, |x| x.ps_partkey),
        1 => keys(r, |x| x.ps_suppkey),
        2 => ints(r, |x| x.ps_availqty),
        3 => money(r, m, |x| x.ps_supplycost.0),
        4 => text(r, |x| x.ps_comment),
        _ => unknown_column(i),
    }
}

fn customer(r: &[Customer<'_>], i: usize, m: Money) -> Result<ArrayRef> {
    match i {
        0 => keys(r, |x| x.c_custkey),
        1 => text(r, |x| &x.c_name),
        2 => text(r, |x| &x.c_address),
        3 => keys(r, |x| x.c_nationkey),
        4 => text(r, |x| &x.c_phone),
        5 => money(r, m, |x| x.c_acctbal.0),
        6 => text(r, |x| x.c_mktsegment),
        7 => text(r, |x| x.c_comment),
        _ => unknown_column(i),
    }
}

fn orders(r: &[Order<'_>], i: usize, m: Money) -> Result<ArrayRef> {
    match i {
        0 => keys(r, |x| x.o_orderkey),
        1 => keys(r, |x| x.o_custkey),
        2 => text(r, |x| &x.o_orderstatus),
        3 => money(r, m, |x| x.o_totalprice.0),
        4 => dates(r, |x| x.o_orderdate.to_unix_epoch()),
        5 => text(r, |x| x.o_orderpriority),
        6 => text(r, |x| &x.o_clerk),
        7 => ints(r, |x| x.o_shippriority),
        8 => text(r, |x| x.o_comment),
        _ => unknown_column(i),
    }
}

fn lineitem(r: &[LineItem<'_>], i: usize, m: Money) -> Result<ArrayRef> {
    match i {
        0 => keys(r, |x| x.l_orderkey),
        1 => keys(r, |x| x.l_partkey),
        2 => keys(r, |x| x.l_suppkey),
        3 => ints(r, |x| x.l_linenumber),
        4 => money(r, m, |x| x.l_quantity * 100),
        5 => money(r, m, |x| x.l_extendedprice.0),
        6 => money(r, m, |x| x.l_discount.0),
        7 => money(r, m, |x| x.l_tax.0),
        8 => text(r, |x| x.l_returnflag),
        9 => text(r, |x| x.l_linestatus),
        10 => dates(r, |x| x.l_shipdate.to_unix_epoch()),
        11 => dates(r, |x| x.l_commitdate.to_unix_epoch()),
        12 => dates(r, |x| x.l_receiptdate.to_unix_epoch()),
        13 => text(r, |x| x.l_shipinstruct),
        14 => text(r, |x| x.l_shipmode),
        15 => text(r, |x| x.l_comment),
        _ => unknown_column(i),
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::Float64Type;

    use super::*;
    use crate::tables::Naming;

    fn share(table: Table, parts: Range<i32>, part_count: i32, projection: Vec<usize>) -> Share {
        let shape = TableShape {
            table,
            naming: Naming::Simplified,
            money: Money::Double,
        };
        let schema = Arc::new(
            shape
                .schema()
                .project(&projection)
                .expect("projection within the table"),
        );
        Share {
            shape,
            scale_factor: 0.01,
            parts,
            part_count,
            projection,
            schema,
        }
    }

    fn rows(share: Share) -> usize {
        batches(share).map(|b| b.expect("batch").num_rows()).sum()
    }

    #[test]
    fn parts_together_are_the_whole_table_and_each_row_once() {
        // tpch.tiny.orders has 15 000 rows in Trino.
        assert_eq!(rows(share(Table::Orders, 0..1, 1, vec![0])), 15_000);
        let mut keys = Vec::new();
        for p in 0..3 {
            for batch in batches(share(Table::Orders, p..p + 1, 3, vec![0])) {
                let batch = batch.expect("batch");
                let column = batch
                    .column(0)
                    .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
                keys.extend(column.values().iter().copied());
            }
        }
        let total = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!((total, keys.len()), (15_000, 15_000));
    }

    #[test]
    fn the_row_counts_planning_trusts_are_the_rows_generated() {
        // An exact count answers `count(*)` without a scan, so it must be the true one.
        for table in Table::ALL {
            let (counted, exact) = table.row_count(0.01);
            let generated = rows(share(table, 0..1, 1, vec![])) as i64;
            if exact {
                assert_eq!(counted, generated, "{}", table.name());
            } else {
                let off = (counted - generated).abs() as f64 / generated as f64;
                assert!(
                    off < 0.01,
                    "{}: {counted} estimated, {generated} generated",
                    table.name()
                );
            }
        }
    }

    #[test]
    fn only_the_columns_asked_for_are_built_and_money_is_a_double() {
        let share = share(Table::LineItem, 0..1, 1, vec![4]);
        let first = batches(share).next().expect("a batch").expect("generated");
        assert_eq!(first.num_columns(), 1);
        let quantity = first.column(0).as_primitive::<Float64Type>();
        assert!(
            !quantity.values().is_empty()
                && quantity.values().iter().all(|q| (1.0..=50.0).contains(q))
        );
        // A count needs rows, not columns.
        assert_eq!(rows(self::share(Table::LineItem, 0..1, 1, vec![])), 60_175);
    }
}
