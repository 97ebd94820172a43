//! Trino's functions where DataFusion's differ in meaning or are missing, as DataFusion UDFs
//! with Trino's names. The coordinator plans with them and workers run them: both register
//! [`scalar_functions`] and [`aggregate_functions`] over DataFusion's defaults (a same-named function replaces the
//! default, with its aliases).
//!
//! Differences that are only a different spelling of a DataFusion function (`concat` of
//! arrays, `reverse` of an array, `date_trunc` of a date) are rewritten while planning, in the
//! engine's dialect, and need nothing here.

mod aggregates;
mod args;
mod array_reshaping;
mod array_sequences;
mod arrays;
mod bases;
mod bounded;
mod byte_encodings;
mod byte_length;
mod case_mapping;
mod checked;
mod checked_cast;
mod checksum;
mod cosine;
mod date_parse;
mod datetime;
mod decimal_range;
mod decimals;
mod digests;
mod error;
mod format;
mod human_readable;
mod identity;
mod interval_text;
mod iso8601;
mod java_format;
mod json;
mod json_constructors;
mod json_items;
mod json_path;
mod json_table;
mod json_values;
pub mod lambdas;
mod list_text;
mod listagg;
mod map_aggregates;
mod map_building;
mod map_constructor;
mod moments;
mod nested_equal;
mod precision;
mod real_text;
mod refusing;
mod refusing_aggregates;
mod regex;
mod sequences;
mod single_row;
mod sixteen_bytes;
mod small_functions;
mod split_to_map;
mod sql_json;
mod statistics;
mod strings;
mod subscript;
mod sums;
mod text_boolean;
mod time_arithmetic;
mod timestamp_text;
mod top_n;
pub mod types;
mod unixtime;
mod urls;
mod utf8_text;
mod wall_clock;
mod window_shift;
mod zones;

use std::sync::Arc;

use datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};

pub use args::{UnexpectedParameters, recording_refusals};
pub use bounded::{CAST_BOUNDED, TRINO_TYPE};
pub use checked::IntegerOperation;
pub use checked_cast::{CHECKED_CAST, can_fail};
pub use error::{FunctionMemoryLimit, JsonError, JsonErrorKind, ValueError, value_error};
pub use interval_text::{IntervalText, MixedInterval};
pub use json_constructors::json_constructor_layout;
pub use json_items::{ENCODED_TEXT, json_item_readable};
pub use json_table::{
    Behaviour as JsonTableBehaviour, JSON_TABLE, JsonTableColumn, JsonTablePath, JsonTableSpec,
    SiblingPlan,
};
pub use json_values::{CAST_TO_JSON, JSON_TO_TEXT, canonical_json, is_json, json_field};
pub use listagg::LISTAGG_OUTPUT;
pub use precision::{ROUND_FRACTION, lowered_digits, round_fraction};
pub use real_text::{REAL_DECIMAL, REAL_TEXT, double_text, real_text};
pub use single_row::{SCALAR_SUBQUERY, SubqueryMultipleRows};
pub use sixteen_bytes::SixteenBytes;
pub use subscript::SUBSCRIPT;
pub use time_arithmetic::TIME_PLUS;
pub use timestamp_text::TIMESTAMP_TEXT;
pub use wall_clock::WALL_CLOCK;

/// The scalar functions to register after DataFusion's defaults: DataFusion's others wrapped
/// to refuse arguments in Trino's words, then SQE's own (which keep every name and alias they
/// share with them).
pub fn scalar_functions() -> Vec<Arc<ScalarUDF>> {
    static WRAPPED: std::sync::LazyLock<Vec<Arc<ScalarUDF>>> = std::sync::LazyLock::new(|| {
        let replaced: std::collections::HashSet<String> = own_scalar_functions()
            .iter()
            .flat_map(|f| std::iter::once(f.name().to_string()).chain(f.aliases().iter().cloned()))
            .collect();
        udfs(refusing::refusing_defaults(&replaced)).collect()
    });
    let mut all = WRAPPED.clone();
    all.extend(own_scalar_functions());
    all
}

fn own_scalar_functions() -> Vec<Arc<ScalarUDF>> {
    let mut functions = vec![
        substr(),
        Arc::new(ScalarUDF::new_from_impl(strings::SplitPart::new())),
        Arc::new(ScalarUDF::new_from_impl(strings::Pad::left())),
        Arc::new(ScalarUDF::new_from_impl(strings::Pad::right())),
        Arc::new(ScalarUDF::new_from_impl(strings::StrposInstance::new())),
        Arc::new(ScalarUDF::new_from_impl(strings::Normalize::new())),
        Arc::new(ScalarUDF::new_from_impl(bases::BaseFunction::bit_count())),
        Arc::new(ScalarUDF::new_from_impl(bases::BaseFunction::to_base())),
        Arc::new(ScalarUDF::new_from_impl(bases::BaseFunction::from_base())),
        // The session's zone replaces UTC here where a session is made.
        from_unixtime_function("UTC"),
        from_iso8601_timestamp_function("UTC"),
        parse_datetime_function("UTC"),
        from_unixtime_nanos_function("UTC"),
        Arc::new(ScalarUDF::new_from_impl(iso8601::Iso8601::from_date())),
        Arc::new(ScalarUDF::new_from_impl(iso8601::Iso8601::to())),
        at_timezone_function("UTC"),
        timezone_hour_function(),
        timezone_minute_function(),
        with_timezone_function("UTC"),
        Arc::new(ScalarUDF::new_from_impl(strings::Split::new())),
        Arc::new(ScalarUDF::new_from_impl(split_to_map::SplitToMap::new())),
        Arc::new(ScalarUDF::new_from_impl(
            split_to_map::SplitToMap::multimap(),
        )),
        Arc::new(ScalarUDF::new_from_impl(strings::HammingDistance::new())),
        Arc::new(ScalarUDF::new_from_impl(java_format::Format::new())),
        Arc::new(ScalarUDF::new_from_impl(regex::RegexpExtract::first())),
        Arc::new(ScalarUDF::new_from_impl(regex::RegexpExtract::all())),
        Arc::new(ScalarUDF::new_from_impl(regex::RegexpSplit::new())),
        Arc::new(ScalarUDF::new_from_impl(regex::RegexpReplace::replace())),
        Arc::new(ScalarUDF::new_from_impl(regex::RegexpReplace::count())),
        Arc::new(ScalarUDF::new_from_impl(regex::RegexpLike::new())),
        Arc::new(ScalarUDF::new_from_impl(regex::RegexpPosition::new())),
        Arc::new(ScalarUDF::new_from_impl(
            map_constructor::MapConstructor::new(),
        )),
        Arc::new(ScalarUDF::new_from_impl(arrays::Ngrams::new())),
        Arc::new(ScalarUDF::new_from_impl(arrays::Cardinality::new())),
        Arc::new(ScalarUDF::new_from_impl(arrays::Slice::new())),
        Arc::new(ScalarUDF::new_from_impl(sequences::Sequence::new())),
        Arc::new(ScalarUDF::new_from_impl(datetime::DateAdd::new())),
        Arc::new(ScalarUDF::new_from_impl(bounded::CastBounded::new())),
        real_text_function(),
        real_decimal_function(),
        timestamp_text_function(),
        wall_clock_function(),
        time_plus_function(),
        Arc::new(ScalarUDF::new_from_impl(datetime::DateDiff::new())),
        round_fraction_function(),
        subscript_function(),
        decimal_divide_function(),
        text_boolean_function(),
        byte_length_function(),
        interval_text_function(),
        checked_cast_function(),
        list_text_function(),
        nested_equal_function(),
        decimal_in_range_function(),
        Arc::new(ScalarUDF::new_from_impl(nested_equal::Contains::element())),
        Arc::new(ScalarUDF::new_from_impl(
            nested_equal::Contains::arrays_overlap(),
        )),
        checked_arithmetic_function(IntegerOperation::Add),
        checked_arithmetic_function(IntegerOperation::Subtract),
        checked_arithmetic_function(IntegerOperation::Multiply),
        checked_arithmetic_function(IntegerOperation::Negate),
        checked_arithmetic_function(IntegerOperation::Abs),
        integer_round_function(),
        Arc::new(ScalarUDF::new_from_impl(format::DateTimeText::date_format())),
        Arc::new(ScalarUDF::new_from_impl(date_parse::DateParse::new(
            date_parse::Reading::DateParse,
        ))),
        Arc::new(ScalarUDF::new_from_impl(date_parse::DateParse::new(
            date_parse::Reading::ToDate,
        ))),
        Arc::new(ScalarUDF::new_from_impl(date_parse::DateParse::new(
            date_parse::Reading::ToTimestamp,
        ))),
        Arc::new(ScalarUDF::new_from_impl(format::DateTimeText::to_char())),
        Arc::new(ScalarUDF::new_from_impl(
            format::DateTimeText::format_datetime(),
        )),
    ];
    functions.extend(udfs(
        [case_mapping::Case::Upper, case_mapping::Case::Lower]
            .map(case_mapping::CaseMapping::new)
            .into(),
    ));
    functions.extend(udfs(
        digests::Hash::ALL.map(digests::HashFunction::new).into(),
    ));
    functions.extend(udfs(
        small_functions::Small::ALL
            .map(small_functions::SmallFunction::new)
            .into(),
    ));
    functions.push(Arc::new(ScalarUDF::new_from_impl(
        utf8_text::FromUtf8::new(),
    )));
    functions.extend(udfs(array_reshaping::reshaping_functions()));
    functions.push(Arc::new(ScalarUDF::new_from_impl(
        array_sequences::ContainsSequence::new(),
    )));
    functions.extend(udfs(map_building::map_building_functions()));
    functions.extend(udfs(human_readable::human_readable_functions()));
    functions.extend(udfs(byte_encodings::byte_encoding_functions()));
    functions.extend(udfs(statistics::statistic_functions()));
    functions.extend(udfs(urls::url_functions()));
    functions.extend(udfs(json::json_functions()));
    functions.extend(udfs(sql_json::sql_json_functions()));
    functions.extend(udfs(json_constructors::json_constructors()));
    functions.push(Arc::new(ScalarUDF::new_from_impl(
        json_table::JsonTableFunction::new(),
    )));
    functions.push(Arc::new(ScalarUDF::new_from_impl(
        listagg::ListaggOutput::new(),
    )));
    functions.push(Arc::new(ScalarUDF::new_from_impl(
        json_items::EncodedText::new(),
    )));
    functions.push(Arc::new(ScalarUDF::new_from_impl(
        cosine::CosineSimilarity::new(),
    )));
    functions.extend(udfs(sixteen_bytes::sixteen_byte_functions()));
    functions.extend(udfs(json_values::json_value_functions()));
    functions
}

/// Each of a module's function implementations as a function to register.
fn udfs<F: datafusion::logical_expr::ScalarUDFImpl + 'static>(
    functions: Vec<F>,
) -> impl Iterator<Item = Arc<ScalarUDF>> {
    functions
        .into_iter()
        .map(|f| Arc::new(ScalarUDF::new_from_impl(f)))
}

/// The aggregate functions to register after DataFusion's defaults: DataFusion's others
/// wrapped to refuse arguments in Trino's words, then SQE's own.
pub fn aggregate_functions() -> Vec<Arc<AggregateUDF>> {
    static WRAPPED: std::sync::LazyLock<Vec<Arc<AggregateUDF>>> = std::sync::LazyLock::new(|| {
        let replaced: std::collections::HashSet<String> = own_aggregate_functions()
            .iter()
            .flat_map(|f| std::iter::once(f.name().to_string()).chain(f.aliases().iter().cloned()))
            .collect();
        refusing_aggregates::refusing_default_aggregates(&replaced)
            .into_iter()
            .map(|f| Arc::new(AggregateUDF::new_from_impl(f)))
            .collect()
    });
    let mut all = WRAPPED.clone();
    all.extend(own_aggregate_functions());
    all
}

/// The window functions to register after DataFusion's defaults (each replaces the default
/// of its name).
pub fn window_functions() -> Vec<Arc<WindowUDF>> {
    vec![
        Arc::new(WindowUDF::new_from_impl(window_shift::WindowShift::lag())),
        Arc::new(WindowUDF::new_from_impl(window_shift::WindowShift::lead())),
    ]
}

/// SQE's own aggregates (which keep every name and alias they share with DataFusion's).
fn own_aggregate_functions() -> Vec<Arc<AggregateUDF>> {
    vec![
        Arc::new(AggregateUDF::new_from_impl(
            aggregates::ApproxPercentile::new(),
        )),
        Arc::new(AggregateUDF::new_from_impl(aggregates::Average::new())),
        Arc::new(AggregateUDF::new_from_impl(sums::Sum::new())),
        Arc::new(AggregateUDF::new_from_impl(top_n::TopN::largest())),
        Arc::new(AggregateUDF::new_from_impl(top_n::TopN::smallest())),
        Arc::new(AggregateUDF::new_from_impl(checksum::Checksum::new())),
        Arc::new(AggregateUDF::new_from_impl(moments::ShapeAggregate::new(
            moments::Shape::Skewness,
        ))),
        Arc::new(AggregateUDF::new_from_impl(moments::ShapeAggregate::new(
            moments::Shape::Kurtosis,
        ))),
        Arc::new(AggregateUDF::new_from_impl(top_n::TopN::largest_by())),
        Arc::new(AggregateUDF::new_from_impl(top_n::TopN::smallest_by())),
        Arc::new(AggregateUDF::new_from_impl(
            map_aggregates::MapAggregate::map_agg(),
        )),
        Arc::new(AggregateUDF::new_from_impl(
            map_aggregates::MapAggregate::histogram(),
        )),
        Arc::new(AggregateUDF::new_from_impl(
            map_aggregates::MapAggregate::map_union(),
        )),
        Arc::new(AggregateUDF::new_from_impl(
            map_aggregates::MapAggregate::multimap_agg(),
        )),
        scalar_subquery_function(),
    ]
}

/// What the dialect puts over a scalar subquery: its one value, NULL for no row, an error for
/// more ([`SubqueryMultipleRows`]).
pub fn scalar_subquery_function() -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::new_from_impl(
        single_row::ScalarSubquery::new(),
    ))
}

/// What the dialect calls for `+`, `-` or `*` of two integers, or `-x` or `abs(x)` of one (an
/// error on overflow).
pub fn checked_arithmetic_function(operation: IntegerOperation) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(checked::CheckedArithmetic::new(
        operation,
    )))
}

/// Trino's `from_unixtime`, whose one-argument form answers in `session_zone`. Workers need
/// no session: the zone is in the answer's type, fixed when the plan was made.
pub fn from_unixtime_function(session_zone: &str) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(unixtime::FromUnixtime::new(
        session_zone,
    )))
}

/// Trino's `from_unixtime_nanos`, answered in `session_zone`.
pub fn from_unixtime_nanos_function(session_zone: &str) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(unixtime::FromUnixtimeNanos::new(
        session_zone,
    )))
}

/// Trino's `from_iso8601_timestamp`, whose text without an offset is read in `session_zone`.
pub fn from_iso8601_timestamp_function(session_zone: &str) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(iso8601::Iso8601::from_timestamp(
        session_zone,
    )))
}

/// Trino's `parse_datetime`, whose answer is a wall-clock time in `session_zone`.
pub fn parse_datetime_function(session_zone: &str) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(date_parse::ParseDatetime::new(
        session_zone,
    )))
}

/// Trino's `at_timezone`; a zone-less timestamp is read in `session_zone`.
pub fn at_timezone_function(session_zone: &str) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(zones::ZonePlacing::at_timezone(
        session_zone,
    )))
}

/// Trino's `timezone_hour(ts)` (also `EXTRACT(TIMEZONE_HOUR FROM ts)`).
pub fn timezone_hour_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(zones::ZoneOffsetField::hours()))
}

/// Trino's `timezone_minute(ts)` (also `EXTRACT(TIMEZONE_MINUTE FROM ts)`).
pub fn timezone_minute_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(zones::ZoneOffsetField::minutes()))
}

/// Trino's `with_timezone`.
pub fn with_timezone_function(session_zone: &str) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(zones::ZonePlacing::with_timezone(
        session_zone,
    )))
}

/// What the dialect calls for `round(x, d)` of an integer (in its own type).
pub fn integer_round_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(checked::IntegerRound::new()))
}

/// [`REAL_TEXT`]: what the dialect calls for a cast of a real number to `varchar`.
pub fn real_text_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(real_text::RealText::new()))
}

/// [`SUBSCRIPT`]: what the dialect calls for `a[i]`, `m[k]` and `element_at`.
pub fn subscript_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(subscript::Subscript::new()))
}

/// What the dialect calls for a cast of a 16-byte type ([`SixteenBytes`]) to `varchar`.
pub fn sixteen_bytes_text_function(of: SixteenBytes) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(sixteen_bytes::to_text(of)))
}

/// [`JSON_TO_TEXT`]: what the dialect calls for a cast of `json` to a scalar type.
pub fn json_to_text_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(json_values::json_to_text()))
}

/// [`TIMESTAMP_TEXT`]: what the dialect calls for a cast of a timestamp to `varchar`.
pub fn timestamp_text_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(
        timestamp_text::TimestampText::new(),
    ))
}

/// [`WALL_CLOCK`]: what the dialect calls for a cast of a timestamp with time zone to one
/// without.
pub fn wall_clock_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(wall_clock::WallClock::new()))
}

/// [`TIME_PLUS`]: what the dialect calls for `time ± interval`.
pub fn time_plus_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(time_arithmetic::TimePlus::new()))
}

/// [`REAL_DECIMAL`]: what the dialect calls for a cast of a real number to a decimal.
pub fn real_decimal_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(real_text::RealDecimal::new()))
}

/// What the dialect gives `array_join` for an array of real numbers or timestamps: the array
/// of their text as Trino writes it.
pub fn list_text_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(list_text::ListText::new()))
}

/// What the dialect calls for `=` of arrays, rows or maps (and `<>`, negated): NULL where a
/// NULL inside decides nothing, as in Trino.
pub fn nested_equal_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(nested_equal::NestedEqual::new()))
}

/// What the dialect puts around a decimal `+` or `-` whose type is capped at 38 digits: the
/// value, or NUMERIC_VALUE_OUT_OF_RANGE past the type's digits.
pub fn decimal_in_range_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(
        decimal_range::DecimalInRange::new(),
    ))
}

/// What the dialect calls for `length` of a varbinary: its bytes, as a `bigint`.
pub fn byte_length_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(byte_length::ByteLength::new()))
}

/// What the dialect calls for a `CAST` that can fail on a value ([`can_fail`]).
pub fn checked_cast_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(checked_cast::CheckedCast::new()))
}

/// What the dialect calls for a cast of an interval to varchar (`1-2`, `3 00:00:00.000`).
pub fn interval_text_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(
        interval_text::IntervalToText::new(),
    ))
}

/// What the dialect calls for `CAST(varchar AS boolean)` (Trino's spellings only):
/// `sqe_text_boolean(text, fallible)`.
pub fn text_boolean_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(text_boolean::TextBoolean::new()))
}

/// What the dialect calls for a division of two decimals (Trino's quotient type and rounding).
pub fn decimal_divide_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(decimals::DecimalDivide::new()))
}

/// [`ROUND_FRACTION`]: what the dialect puts before a cast that lowers a timestamp's or a
/// time's precision.
pub fn round_fraction_function() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(precision::RoundFraction::new()))
}

/// Trino's `substr` (also the planner's `SUBSTRING(s FROM a FOR b)`).
pub fn substr() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(strings::Substr::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Workers find a plan's functions by name in what they register: every function the
    /// dialect puts into plans must be there.
    #[test]
    fn what_the_dialect_calls_is_registered_for_the_workers() {
        let scalars: Vec<String> = scalar_functions()
            .iter()
            .map(|f| f.name().to_string())
            .collect();
        let called = [
            real_text_function(),
            real_decimal_function(),
            timestamp_text_function(),
            wall_clock_function(),
            time_plus_function(),
            round_fraction_function(),
            subscript_function(),
            decimal_divide_function(),
            integer_round_function(),
            text_boolean_function(),
            byte_length_function(),
            list_text_function(),
            interval_text_function(),
            checked_cast_function(),
            nested_equal_function(),
            decimal_in_range_function(),
            json_to_text_function(),
            timezone_hour_function(),
            timezone_minute_function(),
        ];
        for function in called {
            assert!(
                scalars.iter().any(|n| n == function.name()),
                "{} is not registered",
                function.name()
            );
        }
        let aggregates: Vec<String> = aggregate_functions()
            .iter()
            .map(|f| f.name().to_string())
            .collect();
        assert!(aggregates.iter().any(|n| n == SCALAR_SUBQUERY));
    }
}
