//! The eight TPC-H tables: their columns, types and sizes.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use serde::{Deserialize, Serialize};
use tpchgen::generators::{
    CustomerGenerator, OrderGenerator, PartGenerator, PartSuppGenerator, SupplierGenerator,
};

/// A TPC-H table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Table {
    Region,
    Nation,
    Part,
    Supplier,
    PartSupp,
    Customer,
    Orders,
    LineItem,
}

/// How columns are named: the specification's `l_orderkey`, or Trino's default without the
/// table's prefix (`orderkey`; Trino's `tpch.column-naming=SIMPLIFIED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Naming {
    Standard,
    Simplified,
}

/// The type of money columns (prices, balances, discounts, quantities): Trino's connector
/// defaults to `double`; SQE's Iceberg sample tables use `decimal(15,2)`, the type the
/// specification describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Money {
    Double,
    Decimal,
}

/// What a column holds, as Trino's connector types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Keys: `bigint`.
    Identifier,
    Integer,
    Date,
    Money,
    Varchar(u32),
}

pub(crate) struct Column {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column { name, kind }
}

use Kind::{Date, Identifier, Integer, Money as Cash, Varchar};

const REGION: &[Column] = &[
    col("r_regionkey", Identifier),
    col("r_name", Varchar(25)),
    col("r_comment", Varchar(152)),
];
const NATION: &[Column] = &[
    col("n_nationkey", Identifier),
    col("n_name", Varchar(25)),
    col("n_regionkey", Identifier),
    col("n_comment", Varchar(152)),
];
const PART: &[Column] = &[
    col("p_partkey", Identifier),
    col("p_name", Varchar(55)),
    col("p_mfgr", Varchar(25)),
    col("p_brand", Varchar(10)),
    col("p_type", Varchar(25)),
    col("p_size", Integer),
    col("p_container", Varchar(10)),
    col("p_retailprice", Cash),
    col("p_comment", Varchar(23)),
];
const SUPPLIER: &[Column] = &[
    col("s_suppkey", Identifier),
    col("s_name", Varchar(25)),
    col("s_address", Varchar(40)),
    col("s_nationkey", Identifier),
    col("s_phone", Varchar(15)),
    col("s_acctbal", Cash),
    col("s_comment", Varchar(101)),
];
const PARTSUPP: &[Column] = &[
    col("ps_partkey", Identifier),
    col("ps_suppkey", Identifier),
    col("ps_availqty", Integer),
    col("ps_supplycost", Cash),
    col("ps_comment", Varchar(199)),
];
const CUSTOMER: &[Column] = &[
    col("c_custkey", Identifier),
    col("c_name", Varchar(25)),
    col("c_address", Varchar(40)),
    col("c_nationkey", Identifier),
    col("c_phone", Varchar(15)),
    col("c_acctbal", Cash),
    col("c_mktsegment", Varchar(10)),
    col("c_comment", Varchar(117)),
];
const ORDERS: &[Column] = &[
    col("o_orderkey", Identifier),
    col("o_custkey", Identifier),
    col("o_orderstatus", Varchar(1)),
    col("o_totalprice", Cash),
    col("o_orderdate", Date),
    col("o_orderpriority", Varchar(15)),
    col("o_clerk", Varchar(15)),
    col("o_shippriority", Integer),
    col("o_comment", Varchar(79)),
];
const LINEITEM: &[Column] = &[
    col("l_orderkey", Identifier),
    col("l_partkey", Identifier),
    col("l_suppkey", Identifier),
    col("l_linenumber", Integer),
    col("l_quantity", Cash),
    col("l_extendedprice", Cash),
    col("l_discount", Cash),
    col("l_tax", Cash),
    col("l_returnflag", Varchar(1)),
    col("l_linestatus", Varchar(1)),
    col("l_shipdate", Date),
    col("l_commitdate", Date),
    col("l_receiptdate", Date),
    col("l_shipinstruct", Varchar(25)),
    col("l_shipmode", Varchar(10)),
    col("l_comment", Varchar(44)),
];

/// `partsupp` rows per part.
const SUPPLIERS_PER_PART: i64 = 4;

/// About how many rows one part of a table holds: the unit a scan partition generates.
const ROWS_PER_PART: i64 = 128 * 1024;

/// The Trino type name a field carries when Arrow's type says less (`varchar(25)`).
fn trino_type_metadata(kind: Kind) -> HashMap<String, String> {
    match kind {
        Varchar(n) => HashMap::from([(
            sqe_functions::TRINO_TYPE.to_string(),
            format!("varchar({n})"),
        )]),
        _ => HashMap::new(),
    }
}

impl Table {
    /// In the order `sqe local` creates them (small dimension tables first).
    pub const ALL: [Table; 8] = [
        Table::Region,
        Table::Nation,
        Table::Part,
        Table::Supplier,
        Table::PartSupp,
        Table::Customer,
        Table::Orders,
        Table::LineItem,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Region => "region",
            Table::Nation => "nation",
            Table::Part => "part",
            Table::Supplier => "supplier",
            Table::PartSupp => "partsupp",
            Table::Customer => "customer",
            Table::Orders => "orders",
            Table::LineItem => "lineitem",
        }
    }

    pub fn from_name(name: &str) -> Option<Table> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    pub(crate) fn columns(self) -> &'static [Column] {
        match self {
            Table::Region => REGION,
            Table::Nation => NATION,
            Table::Part => PART,
            Table::Supplier => SUPPLIER,
            Table::PartSupp => PARTSUPP,
            Table::Customer => CUSTOMER,
            Table::Orders => ORDERS,
            Table::LineItem => LINEITEM,
        }
    }

    /// The rows the table has at `scale_factor`; for `lineitem` (one to seven lines per order)
    /// an estimate of four per order.
    pub fn row_count(self, scale_factor: f64) -> (i64, bool) {
        let exact = |rows: i64| (rows, true);
        match self {
            Table::Region => exact(5),
            Table::Nation => exact(25),
            Table::Part => exact(PartGenerator::calculate_row_count(scale_factor, 1, 1)),
            Table::Supplier => exact(SupplierGenerator::calculate_row_count(scale_factor, 1, 1)),
            // The generator counts parts; each has four suppliers (TPC-H 4.2.5.1).
            Table::PartSupp => exact(
                PartSuppGenerator::calculate_row_count(scale_factor, 1, 1)
                    .saturating_mul(SUPPLIERS_PER_PART),
            ),
            Table::Customer => exact(CustomerGenerator::calculate_row_count(scale_factor, 1, 1)),
            Table::Orders => exact(OrderGenerator::calculate_row_count(scale_factor, 1, 1)),
            Table::LineItem => (
                OrderGenerator::calculate_row_count(scale_factor, 1, 1).saturating_mul(4),
                false,
            ),
        }
    }

    /// Region and nation are one part: their generators make every row whatever part they
    /// are asked for.
    pub(crate) fn is_one_part(self) -> bool {
        matches!(self, Table::Region | Table::Nation)
    }

    /// Whether the generator can cut the table into `parts` parts.
    pub(crate) fn can_split_into(self, parts: i32) -> bool {
        parts == 1 || (parts > 1 && !self.is_one_part())
    }

    /// How many parts a scan cuts the table into at `scale_factor`.
    pub fn part_count(self, scale_factor: f64) -> i32 {
        if self.is_one_part() {
            return 1;
        }
        let (rows, _) = self.row_count(scale_factor);
        i32::try_from(((rows + ROWS_PER_PART - 1) / ROWS_PER_PART).max(1)).unwrap_or(i32::MAX)
    }
}

/// A table's columns as a particular catalog shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TableShape {
    pub table: Table,
    pub naming: Naming,
    pub money: Money,
}

impl TableShape {
    pub(crate) fn column_name(&self, column: &Column) -> &'static str {
        match self.naming {
            Naming::Standard => column.name,
            Naming::Simplified => column
                .name
                .split_once('_')
                .map_or(column.name, |(_, rest)| rest),
        }
    }

    pub(crate) fn data_type(&self, kind: Kind) -> DataType {
        match kind {
            Identifier => DataType::Int64,
            Integer => DataType::Int32,
            Date => DataType::Date32,
            Varchar(_) => DataType::Utf8,
            Cash => match self.money {
                Money::Double => DataType::Float64,
                Money::Decimal => DataType::Decimal128(15, 2),
            },
        }
    }

    /// The Arrow schema of every column (TPC-H has no NULLs).
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.table
                .columns()
                .iter()
                .map(|c| {
                    Field::new(self.column_name(c), self.data_type(c.kind), false)
                        .with_metadata(trino_type_metadata(c.kind))
                })
                .collect::<Vec<_>>(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trino_names_drop_the_prefix_and_keep_varchar_lengths() {
        let shape = TableShape {
            table: Table::PartSupp,
            naming: Naming::Simplified,
            money: Money::Double,
        };
        let schema = shape.schema();
        let names: Vec<_> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(
            names,
            ["partkey", "suppkey", "availqty", "supplycost", "comment"]
        );
        assert_eq!(schema.field(3).data_type(), &DataType::Float64);
        assert_eq!(
            schema
                .field(4)
                .metadata()
                .get(sqe_functions::TRINO_TYPE)
                .map(String::as_str),
            Some("varchar(199)")
        );
        let standard = TableShape {
            naming: Naming::Standard,
            money: Money::Decimal,
            ..shape
        }
        .schema();
        assert_eq!(standard.field(0).name(), "ps_partkey");
        assert_eq!(standard.field(3).data_type(), &DataType::Decimal128(15, 2));
    }

    #[test]
    fn parts_follow_the_row_count_and_small_tables_are_one_part() {
        assert_eq!(Table::Nation.part_count(1000.0), 1);
        assert_eq!(Table::Customer.part_count(0.01), 1);
        // 1.5 M orders at SF 1 in parts of 128 Ki rows.
        assert_eq!(Table::Orders.part_count(1.0), 12);
        assert_eq!(Table::Orders.row_count(0.01), (15_000, true));
    }
}
