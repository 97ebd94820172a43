//! Trino's URL functions: `url_extract_protocol/host/port/path/query/fragment/parameter`,
//! `url_encode` and `url_decode`. A URL is read as a URI reference (RFC 3986's decomposition:
//! `[scheme:][//authority][path][?query][#fragment]`); text that is not one is NULL, a part it
//! lacks is `''` (the port: NULL). Path, query and fragment are percent-decoded, a parameter's
//! value form-decoded (`+` is a space), as Trino's `java.net.URI` reading gives them.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Builder, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{all_text, arrays, result, strings};
use crate::error::invalid_argument;

/// The parts of a URI reference, as written (not decoded).
#[derive(Debug, Default, PartialEq, Eq)]
struct Parts<'a> {
    scheme: Option<&'a str>,
    host: Option<&'a str>,
    port: Option<i64>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

/// Characters a URI may not hold unescaped.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || c.is_whitespace()
        || matches!(c, '"' | '<' | '>' | '\\' | '^' | '`' | '{' | '|' | '}')
}

fn parse(url: &str) -> Option<Parts<'_>> {
    if url.chars().any(is_unsafe) || !escapes_are_valid(url) {
        return None;
    }
    let (rest, fragment) = match url.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (url, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    // A scheme is letters first, then letters, digits, `+`, `-`, `.`, before any `/`.
    let (scheme, rest) = match rest.find(':') {
        Some(at)
            if at > 0
                && !rest[..at].contains('/')
                && rest[..at].starts_with(|c: char| c.is_ascii_alphabetic())
                && rest[..at]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            (Some(&rest[..at]), &rest[at + 1..])
        }
        _ => (None, rest),
    };
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            (Some(&after[..end]), &after[end..])
        }
        None => (None, rest),
    };
    let (host, port) = match authority {
        Some(authority) => host_and_port(authority)?,
        None => (None, None),
    };
    Some(Parts {
        scheme,
        host,
        port,
        path,
        query,
        fragment,
    })
}

/// `[userinfo@]host[:port]`; an IPv6 host in brackets keeps them, as Java's URI does.
fn host_and_port(authority: &str) -> Option<(Option<&str>, Option<i64>)> {
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let (host, port) = if host_port.starts_with('[') {
        let end = host_port.find(']')?;
        let (host, rest) = host_port.split_at(end + 1);
        (host, rest.strip_prefix(':'))
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => Some(digits.parse().ok()?),
        Some(_) => return None,
    };
    Some(((!host.is_empty()).then_some(host), port))
}

fn escapes_are_valid(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

/// `%XX` escapes decoded (and `+` as a space when `form`); invalid escapes or UTF-8 are
/// errors.
fn decode(text: &str, form: bool) -> Result<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let byte = text
                    .get(i + 1..i + 3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                    .ok_or_else(|| invalid_argument(format!("invalid escape in '{text}'")))?;
                out.push(byte);
                i += 3;
            }
            b'+' if form => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
        .map_err(|_| invalid_argument(format!("'{text}' decodes to invalid UTF-8")))
}

/// Form encoding: letters, digits and `-_.*` as they are, a space as `+`, every other byte
/// of the UTF-8 as `%XX`.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// The first value of query parameter `name`: `''` when it has none, `None` when absent.
fn parameter(query: &str, name: &str) -> Result<Option<String>> {
    for pair in query.split('&') {
        let (key, value) = pair
            .split_once('=')
            .map_or((pair, None), |(k, v)| (k, Some(v)));
        if key == name {
            return value.map_or(Ok(Some(String::new())), |v| decode(v, true).map(Some));
        }
    }
    Ok(None)
}

/// Which function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Part {
    Protocol,
    Host,
    Port,
    Path,
    Query,
    Fragment,
    Parameter,
    Encode,
    Decode,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Protocol => "url_extract_protocol",
            Part::Host => "url_extract_host",
            Part::Port => "url_extract_port",
            Part::Path => "url_extract_path",
            Part::Query => "url_extract_query",
            Part::Fragment => "url_extract_fragment",
            Part::Parameter => "url_extract_parameter",
            Part::Encode => "url_encode",
            Part::Decode => "url_decode",
        }
    }

    fn arguments(self) -> usize {
        if self == Part::Parameter { 2 } else { 1 }
    }
}

/// One of Trino's URL functions.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct UrlFunction {
    part: Part,
    signature: Signature,
}

/// Every URL function.
pub(crate) fn url_functions() -> Vec<UrlFunction> {
    [
        Part::Protocol,
        Part::Host,
        Part::Port,
        Part::Path,
        Part::Query,
        Part::Fragment,
        Part::Parameter,
        Part::Encode,
        Part::Decode,
    ]
    .into_iter()
    .map(|part| UrlFunction {
        part,
        signature: Signature::any(part.arguments(), Volatility::Immutable),
    })
    .collect()
}

impl UrlFunction {
    /// The function's answer for one URL (and parameter name).
    fn answer(&self, url: &str, name: Option<&str>) -> Result<Option<String>> {
        let part = self.part;
        match part {
            Part::Encode => return Ok(Some(encode(url))),
            Part::Decode => return decode(url, true).map(Some),
            _ => {}
        }
        let Some(parts) = parse(url) else {
            return Ok(None);
        };
        let text = |s: Option<&str>| s.unwrap_or_default().to_string();
        Ok(Some(match part {
            Part::Protocol => text(parts.scheme),
            Part::Host => text(parts.host),
            Part::Path => decode(parts.path, false)?,
            Part::Query => decode(parts.query.unwrap_or_default(), false)?,
            Part::Fragment => decode(parts.fragment.unwrap_or_default(), false)?,
            Part::Parameter => {
                let (Some(query), Some(name)) = (parts.query, name) else {
                    return Ok(None);
                };
                return parameter(query, name);
            }
            Part::Port | Part::Encode | Part::Decode => return Ok(None),
        }))
    }
}

impl ScalarUDFImpl for UrlFunction {
    fn name(&self) -> &str {
        self.part.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        all_text(self.name(), arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(if self.part == Part::Port {
            DataType::Int64
        } else {
            DataType::Utf8
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(urls) = columns.first() else {
            return exec_err!("{} takes a URL", self.name());
        };
        let urls = strings(urls)?;
        let urls = urls.as_string::<i32>();
        let names = match columns.get(1) {
            Some(names) => Some(strings(names)?),
            None => None,
        };
        let names = names.as_ref().map(|n| n.as_string::<i32>());
        let name_of = |row: usize| names.and_then(|n| (!n.is_null(row)).then(|| n.value(row)));
        let array: ArrayRef = if self.part == Part::Port {
            let mut out = Int64Builder::with_capacity(urls.len());
            for row in 0..urls.len() {
                out.append_option(
                    (!urls.is_null(row))
                        .then(|| parse(urls.value(row)).and_then(|p| p.port))
                        .flatten(),
                );
            }
            Arc::new(out.finish())
        } else {
            let mut out = StringBuilder::with_capacity(urls.len(), urls.len() * 16);
            for row in 0..urls.len() {
                let absent_name = self.part == Part::Parameter && name_of(row).is_none();
                if urls.is_null(row) || absent_name {
                    out.append_null();
                    continue;
                }
                out.append_option(self.answer(urls.value(row), name_of(row))?);
            }
            Arc::new(out.finish())
        };
        result(&args, array)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(part: Part, url: &str, name: Option<&str>) -> Option<String> {
        let function = UrlFunction {
            part,
            signature: Signature::any(part.arguments(), Volatility::Immutable),
        };
        function.answer(url, name).expect("an answer")
    }

    const URL: &str = "https://user@www.example.com:8443/a%20b/c?x=1&y=caf%C3%A9+au+lait&z#frag%21";

    #[test]
    fn parts_of_a_url() {
        let parts = parse(URL).expect("a URL");
        assert_eq!(parts.scheme, Some("https"));
        assert_eq!(parts.host, Some("www.example.com"));
        assert_eq!(parts.port, Some(8443));
        assert_eq!(answer(Part::Path, URL, None).as_deref(), Some("/a b/c"));
        assert_eq!(answer(Part::Fragment, URL, None).as_deref(), Some("frag!"));
        assert_eq!(
            answer(Part::Parameter, URL, Some("y")).as_deref(),
            Some("café au lait")
        );
        assert_eq!(answer(Part::Parameter, URL, Some("z")).as_deref(), Some(""));
        assert_eq!(answer(Part::Parameter, URL, Some("w")), None);
        // A relative reference has a path only; missing parts are empty.
        assert_eq!(
            answer(Part::Host, "/just/a/path?q", None).as_deref(),
            Some("")
        );
        assert_eq!(
            parse("http://[::1]:80/").map(|p| (p.host, p.port)),
            Some((Some("[::1]"), Some(80)))
        );
        // Not URIs: NULL.
        for bad in ["http://a b/", "http://host:port/", "100%"] {
            assert_eq!(answer(Part::Host, bad, None), None, "{bad}");
        }
    }

    #[test]
    fn form_encoding_round_trips() -> Result<()> {
        assert_eq!(encode("a b/é*-_."), "a+b%2F%C3%A9*-_.");
        assert_eq!(decode("a+b%2F%C3%A9", true)?, "a b/é");
        assert!(decode("%zz", true).is_err());
        assert!(decode("%FF", true).is_err());
        Ok(())
    }
}
