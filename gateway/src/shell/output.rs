//! Writing results as they arrive: an aligned table, one line per column, CSV or JSON lines.

use std::io::Write;

use arrow::array::{Array, RecordBatch};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use arrow::util::pretty::pretty_format_batches_with_options;

use super::error::{Result, ShellError};

/// Rows buffered per table block: enough to align columns, bounded so that a large result
/// streams in blocks instead of sitting whole in memory.
pub const TABLE_BLOCK_ROWS: usize = 10_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned text table (blocks of up to 10,000 rows).
    Table,
    /// One `column | value` line per column, rows one after another (`\x`).
    Vertical,
    /// CSV with a header line.
    Csv,
    /// One JSON object per row (nulls kept).
    Json,
}

/// Writes one result to `out` batch by batch.
pub enum ResultWriter<W: Write> {
    Table {
        out: W,
        pending: Vec<RecordBatch>,
        pending_rows: usize,
        wrote_block: bool,
    },
    Vertical {
        out: W,
        rows: u64,
    },
    Csv(Box<arrow::csv::Writer<W>>),
    Json(arrow::json::LineDelimitedWriter<W>),
}

/// Values as the table and vertical formats show them: NULL spelled out, as Trino's CLI does.
fn display_options() -> FormatOptions<'static> {
    FormatOptions::default().with_null("NULL")
}

impl<W: Write> ResultWriter<W> {
    pub fn new(format: OutputFormat, out: W) -> Self {
        match format {
            OutputFormat::Table => ResultWriter::Table {
                out,
                pending: Vec::new(),
                pending_rows: 0,
                wrote_block: false,
            },
            OutputFormat::Vertical => ResultWriter::Vertical { out, rows: 0 },
            OutputFormat::Csv => ResultWriter::Csv(Box::new(
                arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(out),
            )),
            OutputFormat::Json => ResultWriter::Json(
                arrow::json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build::<_, arrow::json::writer::LineDelimited>(out),
            ),
        }
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            ResultWriter::Table {
                pending,
                pending_rows,
                ..
            } => {
                *pending_rows += batch.num_rows();
                pending.push(batch.clone());
                if *pending_rows >= TABLE_BLOCK_ROWS {
                    self.flush_block()?;
                }
                Ok(())
            }
            ResultWriter::Vertical { out, rows } => write_vertical(out, rows, batch),
            ResultWriter::Csv(writer) => {
                writer.write(&nested_as_text(batch)?).map_err(output_error)
            }
            ResultWriter::Json(writer) => writer.write(batch).map_err(output_error),
        }
    }

    /// Writes what is left and hands back where it went; an empty result still shows its
    /// header (table) or nothing (the other formats have no rows to write).
    pub fn finish(mut self, schema: &arrow::datatypes::SchemaRef) -> Result<W> {
        if let ResultWriter::Table {
            pending,
            wrote_block,
            ..
        } = &mut self
            && pending.is_empty()
            && !*wrote_block
        {
            pending.push(RecordBatch::new_empty(schema.clone()));
        }
        self.flush_block()?;
        let mut out = match self {
            ResultWriter::Table { out, .. } | ResultWriter::Vertical { out, .. } => out,
            ResultWriter::Csv(writer) => (*writer).into_inner(),
            ResultWriter::Json(mut writer) => {
                writer.finish().map_err(output_error)?;
                writer.into_inner()
            }
        };
        out.flush().map_err(io_error)?;
        Ok(out)
    }

    fn flush_block(&mut self) -> Result<()> {
        if let ResultWriter::Table {
            out,
            pending,
            pending_rows,
            wrote_block,
        } = self
        {
            if pending.is_empty() {
                return Ok(());
            }
            let table = pretty_format_batches_with_options(pending, &display_options())
                .map_err(output_error)?;
            writeln!(out, "{table}").map_err(io_error)?;
            pending.clear();
            *pending_rows = 0;
            *wrote_block = true;
        }
        Ok(())
    }
}

/// Rows as psql's expanded display writes them: a `-[ RECORD n ]-` rule, then one aligned
/// `column | value` line per column.
fn write_vertical<W: Write>(out: &mut W, rows: &mut u64, batch: &RecordBatch) -> Result<()> {
    let schema = batch.schema();
    let options = display_options();
    let formatters = batch
        .columns()
        .iter()
        .map(|column| ArrayFormatter::try_new(column.as_ref(), &options))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(output_error)?;
    let width = schema
        .fields()
        .iter()
        .map(|f| f.name().chars().count())
        .max()
        .unwrap_or(0);
    for row in 0..batch.num_rows() {
        *rows += 1;
        writeln!(
            out,
            "-[ RECORD {rows} ]{}",
            "-".repeat(width.saturating_sub(8) + 3)
        )
        .map_err(io_error)?;
        for (field, formatter) in schema.fields().iter().zip(&formatters) {
            writeln!(out, "{:<width$} | {}", field.name(), formatter.value(row))
                .map_err(io_error)?;
        }
    }
    Ok(())
}

/// CSV has no arrays, maps or rows: those columns are written as the table shows them
/// (`[1, 2]`, `{a: 1}`), one quoted field each.
fn nested_as_text(batch: &RecordBatch) -> Result<RecordBatch> {
    if !batch.columns().iter().any(|c| c.data_type().is_nested()) {
        return Ok(batch.clone());
    }
    let options = display_options();
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if !column.data_type().is_nested() {
            fields.push(field.clone());
            columns.push(column.clone());
            continue;
        }
        let formatter = ArrayFormatter::try_new(column.as_ref(), &options).map_err(output_error)?;
        let text: arrow::array::StringArray = (0..column.len())
            .map(|row| (!column.is_null(row)).then(|| formatter.value(row).to_string()))
            .collect();
        fields.push(std::sync::Arc::new(arrow::datatypes::Field::new(
            field.name(),
            arrow::datatypes::DataType::Utf8,
            true,
        )));
        columns.push(std::sync::Arc::new(text));
    }
    RecordBatch::try_new(
        std::sync::Arc::new(arrow::datatypes::Schema::new(fields)),
        columns,
    )
    .map_err(output_error)
}

fn output_error(e: arrow::error::ArrowError) -> ShellError {
    match e {
        arrow::error::ArrowError::IoError(_, source) => io_error(source),
        other => ShellError::Format(other.to_string()),
    }
}

fn io_error(e: std::io::Error) -> ShellError {
    ShellError::Output(e)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch(ids: Vec<i64>, names: Vec<Option<&str>>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .expect("valid batch")
    }

    fn render(format: OutputFormat, batches: &[RecordBatch]) -> String {
        let mut out = Vec::new();
        let mut writer = ResultWriter::new(format, &mut out);
        for b in batches {
            writer.write(b).expect("write");
        }
        writer.finish(&batches[0].schema()).expect("finish");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn csv_has_one_header_and_quotes_where_needed() {
        let out = render(
            OutputFormat::Csv,
            &[
                batch(vec![1], vec![Some("a,b")]),
                batch(vec![2], vec![None]),
            ],
        );
        assert_eq!(out, "id,name\n1,\"a,b\"\n2,\n");
    }

    #[test]
    fn json_lines_keep_nulls() {
        let out = render(
            OutputFormat::Json,
            &[batch(vec![1, 2], vec![Some("x"), None])],
        );
        assert_eq!(out, "{\"id\":1,\"name\":\"x\"}\n{\"id\":2,\"name\":null}\n");
    }

    #[test]
    fn table_of_an_empty_result_shows_the_header() {
        let out = render(OutputFormat::Table, &[batch(vec![], vec![])]);
        assert!(out.contains("| id | name |"), "{out}");
    }

    #[test]
    fn a_large_table_is_written_in_blocks_as_it_arrives() {
        let mut out = Vec::new();
        let mut writer = ResultWriter::new(OutputFormat::Table, &mut out);
        let rows: Vec<i64> = (0..TABLE_BLOCK_ROWS as i64).collect();
        writer
            .write(&batch(rows.clone(), vec![Some("r"); rows.len()]))
            .expect("write");
        writer.write(&batch(vec![-1], vec![None])).expect("write");
        drop(writer);
        let written = String::from_utf8(out).expect("utf-8");
        assert!(written.contains(&format!("| {} ", TABLE_BLOCK_ROWS - 1)));
        assert!(
            !written.contains("| -1 "),
            "the next block waits for more rows"
        );
    }

    #[test]
    fn vertical_rows_are_one_line_per_column_with_null_spelled_out() {
        let out = render(
            OutputFormat::Vertical,
            &[batch(vec![1], vec![Some("x")]), batch(vec![2], vec![None])],
        );
        assert_eq!(
            out,
            "-[ RECORD 1 ]---\nid   | 1\nname | x\n-[ RECORD 2 ]---\nid   | 2\nname | NULL\n"
        );
        let table = render(OutputFormat::Table, &[batch(vec![2], vec![None])]);
        assert!(table.contains("| 2  | NULL |"), "{table}");
    }

    #[test]
    fn csv_writes_arrays_as_text() {
        let list = arrow::array::ListArray::from_iter_primitive::<arrow::datatypes::Int32Type, _, _>(
            vec![Some(vec![Some(1), Some(2)]), None],
        );
        let schema = Arc::new(Schema::new(vec![Field::new(
            "xs",
            list.data_type().clone(),
            true,
        )]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(list)]).expect("valid batch");
        let out = render(OutputFormat::Csv, &[batch]);
        assert_eq!(out, "xs\n\"[1, 2]\"\n\"\"\n");
    }
}
