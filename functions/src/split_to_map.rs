//! Trino's `split_to_map(text, entry_delimiter, key_value_delimiter)`: a `map(varchar,
//! varchar)` of the text's entries. An entry without the key-value delimiter exactly once, or
//! a key seen twice, is INVALID_FUNCTION_ARGUMENT; an empty text is an empty map, and a
//! trailing entry delimiter ends the last entry. `split_to_multimap` is the same with each
//! key's values as an array, in order (a key may repeat).

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, ListBuilder, MapBuilder, MapFieldNames, StringBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{all_text, arrays, result};
use crate::error::invalid_argument;

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SplitToMap {
    /// `split_to_multimap`: each key's values as an array.
    multi: bool,
    signature: Signature,
}

impl SplitToMap {
    pub(crate) fn new() -> Self {
        Self::with(false)
    }

    pub(crate) fn multimap() -> Self {
        Self::with(true)
    }

    fn with(multi: bool) -> Self {
        Self {
            multi,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    fn value_type(&self) -> DataType {
        if self.multi {
            DataType::new_list(DataType::Utf8, true)
        } else {
            DataType::Utf8
        }
    }
}

/// The map type DataFusion's `map` builds: entries of a non-null key and a value.
fn map_type(value: DataType) -> DataType {
    let entries = Fields::from(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", value, true),
    ]);
    DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries), false)),
        false,
    )
}

/// The entries of `text`, in order; a key twice is refused unless `repeated_keys`.
fn entries<'a>(
    text: &'a str,
    entry_delimiter: &str,
    key_value_delimiter: &str,
    repeated_keys: bool,
) -> Result<Vec<(&'a str, &'a str)>> {
    if entry_delimiter.is_empty() {
        return Err(invalid_argument("entryDelimiter is empty"));
    }
    if key_value_delimiter.is_empty() {
        return Err(invalid_argument("keyValueDelimiter is empty"));
    }
    if entry_delimiter == key_value_delimiter {
        return Err(invalid_argument(
            "entryDelimiter and keyValueDelimiter must not be the same",
        ));
    }
    let text = text.strip_suffix(entry_delimiter).unwrap_or(text);
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for entry in text.split(entry_delimiter) {
        let mut parts = entry.split(key_value_delimiter);
        let (Some(key), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(invalid_argument(format!(
                "Key-value delimiter must appear exactly once in each entry. Bad input: '{entry}'"
            )));
        };
        if !seen.insert(key) && !repeated_keys {
            return Err(invalid_argument(format!(
                "Duplicate keys ({key}) are not allowed"
            )));
        }
        out.push((key, value));
    }
    Ok(out)
}

impl ScalarUDFImpl for SplitToMap {
    fn name(&self) -> &str {
        if self.multi {
            "split_to_multimap"
        } else {
            "split_to_map"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 3 {
            return Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                "(varchar, varchar, varchar)",
            ));
        }
        all_text(self.name(), arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(map_type(self.value_type()))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [text, entry_delimiters, key_value_delimiters] = columns.as_slice() else {
            return exec_err!("split_to_map takes three arguments");
        };
        let (text, entry_delimiters, key_value_delimiters) = (
            cast(text, &DataType::Utf8)?,
            cast(entry_delimiters, &DataType::Utf8)?,
            cast(key_value_delimiters, &DataType::Utf8)?,
        );
        let (text, entry_delimiters, key_value_delimiters) = (
            text.as_string::<i32>(),
            entry_delimiters.as_string::<i32>(),
            key_value_delimiters.as_string::<i32>(),
        );
        let names = MapFieldNames {
            entry: "entries".into(),
            key: "key".into(),
            value: "value".into(),
        };
        let value_field = Arc::new(Field::new("value", self.value_type(), true));
        let rows = (0..text.len()).map(|i| -> Result<Option<Vec<(&str, &str)>>> {
            if text.is_null(i) || entry_delimiters.is_null(i) || key_value_delimiters.is_null(i) {
                return Ok(None);
            }
            entries(
                text.value(i),
                entry_delimiters.value(i),
                key_value_delimiters.value(i),
                self.multi,
            )
            .map(Some)
        });
        let maps: ArrayRef = if self.multi {
            let mut maps = MapBuilder::new(
                Some(names),
                StringBuilder::new(),
                ListBuilder::new(StringBuilder::new()),
            )
            .with_values_field(value_field);
            for row in rows {
                let Some(found) = row? else {
                    maps.append(false)?;
                    continue;
                };
                // Each key once, where it first appears, with all its values.
                let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
                let mut places: std::collections::HashMap<&str, usize> =
                    std::collections::HashMap::new();
                for (key, value) in found {
                    let place = *places.entry(key).or_insert_with(|| {
                        groups.push((key, Vec::new()));
                        groups.len() - 1
                    });
                    groups[place].1.push(value);
                }
                for (key, values) in groups {
                    maps.keys().append_value(key);
                    for value in values {
                        maps.values().values().append_value(value);
                    }
                    maps.values().append(true);
                }
                maps.append(true)?;
            }
            Arc::new(maps.finish())
        } else {
            let mut maps = MapBuilder::new(Some(names), StringBuilder::new(), StringBuilder::new())
                .with_values_field(value_field);
            for row in rows {
                let Some(found) = row? else {
                    maps.append(false)?;
                    continue;
                };
                for (key, value) in found {
                    maps.keys().append_value(key);
                    maps.values().append_value(value);
                }
                maps.append(true)?;
            }
            Arc::new(maps.finish())
        };
        result(&args, maps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_split_as_trinos() -> Result<()> {
        assert_eq!(
            entries("a=1,b=2", ",", "=", false)?,
            [("a", "1"), ("b", "2")]
        );
        assert_eq!(entries("a=1,", ",", "=", false)?, [("a", "1")]);
        assert_eq!(entries("", ",", "=", false)?, []);
        assert_eq!(entries("a=", ",", "=", false)?, [("a", "")]);
        assert!(entries("a=1,a=2", ",", "=", false).is_err(), "a key twice");
        assert_eq!(
            entries("a=1,a=2", ",", "=", true)?,
            [("a", "1"), ("a", "2")]
        );
        assert!(
            entries("a=1=2", ",", "=", false).is_err(),
            "the delimiter twice"
        );
        assert!(entries("a", ",", "=", false).is_err(), "no delimiter");
        assert!(
            entries("a=1", ",", ",", false).is_err(),
            "the same delimiters"
        );
        Ok(())
    }

    #[test]
    fn the_map_has_datafusions_map_type() -> Result<()> {
        let text: ArrayRef = Arc::new(datafusion::arrow::array::StringArray::from(vec![
            Some("a=1"),
            None,
        ]));
        let comma: ArrayRef = Arc::new(datafusion::arrow::array::StringArray::from(vec![","; 2]));
        let equals: ArrayRef = Arc::new(datafusion::arrow::array::StringArray::from(vec!["="; 2]));
        let args = ScalarFunctionArgs {
            args: vec![
                ColumnarValue::Array(text),
                ColumnarValue::Array(comma),
                ColumnarValue::Array(equals),
            ],
            arg_fields: (0..3)
                .map(|_| Arc::new(Field::new("t", DataType::Utf8, true)))
                .collect(),
            number_rows: 2,
            return_field: Arc::new(Field::new("m", map_type(DataType::Utf8), true)),
            config_options: Arc::new(datafusion::common::config::ConfigOptions::default()),
        };
        let ColumnarValue::Array(maps) = SplitToMap::new().invoke_with_args(args)? else {
            return exec_err!("an array");
        };
        assert_eq!(maps.data_type(), &map_type(DataType::Utf8));
        assert!(maps.is_valid(0) && maps.is_null(1));
        assert_eq!(maps.as_map().value(0).len(), 1);
        Ok(())
    }
}
