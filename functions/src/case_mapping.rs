//! `upper` and `lower` as Trino's: each code point mapped alone to one code point (Java's
//! `Character.toUpperCase(int)`, Unicode's simple case mapping), so the text keeps its length:
//! `upper('straße')` is `STRAßE` and `lower('İ')` is `i`. DataFusion's apply Unicode's full
//! mappings (`STRASSE`, `i̇`: a different string) and the final-sigma rule of `lower`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_string, result, unexpected_parameters};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Case {
    Upper,
    Lower,
}

impl Case {
    /// `c` mapped alone, to the one code point Unicode's simple mapping gives.
    fn map(self, c: char) -> char {
        let mut full = match self {
            Case::Upper => Mapped::Upper(c.to_uppercase()),
            Case::Lower => Mapped::Lower(c.to_lowercase()),
        };
        match (full.next(), full.next()) {
            (Some(one), None) => one,
            // Full mappings of more than one code point (SpecialCasing.txt); the simple
            // mapping of these is the character itself except for the few below.
            _ => simple_of_special(self, c).unwrap_or(c),
        }
    }

    fn text(self, s: &str, out: &mut String) {
        out.clear();
        if s.is_ascii() {
            out.push_str(s);
            match self {
                Case::Upper => out.make_ascii_uppercase(),
                Case::Lower => out.make_ascii_lowercase(),
            }
            return;
        }
        out.extend(s.chars().map(|c| self.map(c)));
    }
}

enum Mapped {
    Upper(std::char::ToUppercase),
    Lower(std::char::ToLowercase),
}

impl Iterator for Mapped {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        match self {
            Mapped::Upper(chars) => chars.next(),
            Mapped::Lower(chars) => chars.next(),
        }
    }
}

/// The simple mapping (UnicodeData.txt) of a character whose full mapping is several code
/// points, where it is not the character itself.
fn simple_of_special(case: Case, c: char) -> Option<char> {
    let code = u32::from(c);
    let mapped = match (case, code) {
        (Case::Lower, 0x130) => 0x69,
        // Greek with ypogegrammeni: to the same letter with prosgegrammeni.
        (Case::Upper, 0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7) => code + 8,
        (Case::Upper, 0x1FB3) => 0x1FBC,
        (Case::Upper, 0x1FC3) => 0x1FCC,
        (Case::Upper, 0x1FF3) => 0x1FFC,
        _ => return None,
    };
    char::from_u32(mapped)
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct CaseMapping {
    case: Case,
    signature: Signature,
}

impl CaseMapping {
    pub(crate) fn new(case: Case) -> Self {
        Self {
            case,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for CaseMapping {
    fn name(&self) -> &str {
        match self.case {
            Case::Upper => "upper",
            Case::Lower => "lower",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] if is_string(t) => Ok(vec![DataType::Utf8]),
            _ => Err(unexpected_parameters(self.name(), arg_types, "(varchar)")),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(text) = columns.first() else {
            return exec_err!("{} takes a varchar", self.name());
        };
        let text = cast(text, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(text.len(), text.value_data().len());
        let mut mapped = String::new();
        for i in 0..text.len() {
            if text.is_null(i) {
                out.append_null();
            } else {
                self.case.text(text.value(i), &mut mapped);
                out.append_value(&mapped);
            }
        }
        let mapped: ArrayRef = Arc::new(out.finish());
        result(&args, mapped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(case: Case, s: &str) -> String {
        let mut out = String::new();
        case.text(s, &mut out);
        out
    }

    #[test]
    fn each_code_point_maps_to_one() {
        assert_eq!(mapped(Case::Upper, "straße"), "STRAßE");
        assert_eq!(mapped(Case::Lower, "İSTANBUL"), "istanbul");
        // No final sigma: Java maps each Σ alone.
        assert_eq!(mapped(Case::Lower, "ΟΔΟΣ"), "οδοσ");
        assert_eq!(mapped(Case::Upper, "ﬁx"), "ﬁX");
        assert_eq!(mapped(Case::Upper, "ᾳ"), "ᾼ");
        assert_eq!(mapped(Case::Upper, "Ἀᾀ"), "Ἀᾈ");
        assert_eq!(mapped(Case::Upper, "hello, wörld"), "HELLO, WÖRLD");
        assert_eq!(mapped(Case::Lower, "ÀÉÎ ABC"), "àéî abc");
    }
}
