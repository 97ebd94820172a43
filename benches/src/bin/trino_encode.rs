//! The Trino JSON encoder: TPC-H lineitem (decimal money, dates, text) encoded as result pages
//! are, column-wise (what SQE's pages use) and value by value (the type looked up per value),
//! beside serde_json writing the same values already held as JSON values (the baseline: a
//! generic writer with no conversion to do).
//!
//! Usage: trino_encode [scale factor, default 0.1] [runs, default 5]

#![allow(clippy::print_stdout)] // a harness prints its table

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Date32Type, Decimal128Type, Int32Type, Int64Type};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::execute_stream;
use futures::TryStreamExt;
use sqe_gateway::trino_json::{write_rows, write_rows_per_value};
use sqe_tpch::{Money, Naming, Table, TableShape, TpchScanExec};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The same rows as JSON values, in Trino's encoding (decimals and dates as strings).
fn as_json_values(batches: &[RecordBatch]) -> Result<Vec<Vec<serde_json::Value>>, Error> {
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let mut values = Vec::with_capacity(batch.num_columns());
            for column in batch.columns() {
                values.push(match column.data_type() {
                    DataType::Int64 => column.as_primitive::<Int64Type>().value(row).into(),
                    DataType::Int32 => column.as_primitive::<Int32Type>().value(row).into(),
                    DataType::Decimal128(..) => column
                        .as_primitive::<Decimal128Type>()
                        .value_as_string(row)
                        .into(),
                    DataType::Date32 => column
                        .as_primitive::<Date32Type>()
                        .value_as_date(row)
                        .ok_or("date out of range")?
                        .to_string()
                        .into(),
                    DataType::Utf8 => column.as_string::<i32>().value(row).into(),
                    other => return Err(format!("unexpected column type {other}").into()),
                });
            }
            rows.push(values);
        }
    }
    Ok(rows)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (scale_factor, runs) = sqe_benches::scale_and_runs(0.1, 5)?;
    let shape = TableShape {
        table: Table::LineItem,
        naming: Naming::Standard,
        money: Money::Decimal,
    };
    let generate = Arc::new(TpchScanExec::part_per_partition(shape, scale_factor, 1)?);
    let batches: Vec<RecordBatch> = execute_stream(generate, Arc::new(TaskContext::default()))?
        .try_collect()
        .await?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let values = as_json_values(&batches)?;
    println!(
        "lineitem at SF {scale_factor}: {rows} rows, {} columns, {} batches; median of {runs}",
        batches.first().map_or(0, |b| b.num_columns()),
        batches.len()
    );

    type Encode = fn(&mut Vec<u8>, &RecordBatch) -> sqe_engine::error::Result<()>;
    let encoders: [(&str, Encode); 2] = [
        ("SQE column-wise (result pages)", write_rows),
        ("SQE value by value", write_rows_per_value),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); encoders.len() + 1];
    let mut bytes = vec![0usize; encoders.len() + 1];
    let mut out = Vec::with_capacity(256 * 1024 * 1024);
    for _ in 0..runs {
        for (i, (_, encode)) in encoders.iter().enumerate() {
            out.clear();
            let started = Instant::now();
            for batch in &batches {
                encode(&mut out, batch)?;
            }
            times[i].push(started.elapsed());
            bytes[i] = out.len();
        }
        out.clear();
        let started = Instant::now();
        serde_json::to_writer(&mut out, &values)?;
        times[encoders.len()].push(started.elapsed());
        bytes[encoders.len()] = out.len();
    }

    println!("| encoder | M rows/s | MB/s written | bytes |");
    println!("|---|---:|---:|---:|");
    let names = encoders
        .iter()
        .map(|(name, _)| *name)
        .chain(["serde_json, values already JSON (baseline)"]);
    for ((name, times), bytes) in names.zip(times).zip(bytes) {
        let seconds = median(times).as_secs_f64();
        println!(
            "| {name} | {:.2} | {:.0} | {bytes} |",
            rows as f64 / seconds / 1e6,
            bytes as f64 / seconds / 1e6
        );
    }
    Ok(())
}
