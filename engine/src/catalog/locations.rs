//! Where a statement may put files: a table's location lies under its catalog's warehouse,
//! and the names that become path segments (schemas, tables) cannot climb out of it.
//!
//! Locations are checked as written, not normalised: a `..` or a percent-escape is refused
//! rather than resolved, so what is checked is what the catalog and the store will see.

use url::Url;

use crate::error::{Error, ErrorCode, Result};

/// The storage root under which tables may be created with an explicit `location`.
#[derive(Debug, Clone, Default)]
pub struct TableLocations {
    root: Option<Location>,
}

/// A checked location: scheme, bucket or host, and its path segments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Location {
    scheme: String,
    authority: String,
    segments: Vec<String>,
}

impl TableLocations {
    /// Tables under `root` (a URL such as `s3://bucket/prefix` or `file:///data/warehouse`);
    /// `None` refuses every explicit location.
    pub fn under(root: Option<&str>) -> Result<Self> {
        let root = root
            .map(|r| {
                parse(r).map_err(|reason| {
                    Error::Catalog(format!(
                        "the warehouse location '{r}' is not usable: {reason}"
                    ))
                })
            })
            .transpose()?;
        Ok(Self { root })
    }

    /// The directory local files must stay in ([`sqe_iceberg::storage::LOCAL_ROOT_PROP`]): the
    /// root when it is local, else empty (this catalog keeps no local files).
    pub fn local_root(&self) -> String {
        match &self.root {
            Some(root) if root.scheme == "file" => format!("/{}", root.segments.join("/")),
            _ => String::new(),
        }
    }

    /// `location` as given, once it is checked to lie strictly below the root.
    pub fn check(&self, location: &str) -> Result<String> {
        let refused = |reason: String| {
            Error::invalid(
                ErrorCode::InvalidTableProperty,
                format!("Table location '{location}' is refused: {reason}"),
            )
        };
        let Some(root) = &self.root else {
            return Err(refused(
                "this catalog's warehouse is not a storage location, so no table location can be \
                 checked against it; set [catalog] location_root"
                    .into(),
            ));
        };
        let wanted = parse(location).map_err(refused)?;
        let below = wanted.scheme == root.scheme
            && wanted.authority == root.authority
            && wanted.segments.len() > root.segments.len()
            && wanted.segments.starts_with(&root.segments);
        if !below {
            return Err(refused(format!(
                "it is not under the warehouse {}",
                root.display()
            )));
        }
        Ok(location.trim_end_matches('/').to_string())
    }
}

impl Location {
    fn display(&self) -> String {
        format!(
            "{}://{}/{}",
            self.scheme,
            self.authority,
            self.segments.join("/")
        )
    }
}

/// Splits a storage URL into its parts, refusing anything that could mean another place than it
/// spells: dot segments, empty segments, escapes, backslashes, control characters.
fn parse(location: &str) -> std::result::Result<Location, String> {
    if let Some(c) = location
        .chars()
        .find(|c| c.is_control() || *c == '\\' || *c == '%')
    {
        return Err(format!("it contains the character {c:?}"));
    }
    let (scheme, rest) = location.split_once("://").ok_or_else(|| {
        "a location is a URL such as s3://bucket/path or file:///path".to_string()
    })?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "s3" | "s3a" => "s3",
        "file" => "file",
        other => {
            return Err(format!(
                "the scheme '{other}' is not a storage SQE writes to"
            ));
        }
    };
    // Checked by the URL parser too, so that a location it would read differently is refused.
    Url::parse(location).map_err(|e| format!("not a URL: {e}"))?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    if scheme == "s3" && authority.is_empty() {
        return Err("it names no bucket".into());
    }
    if scheme == "file" && !authority.is_empty() && authority != "localhost" {
        return Err(format!("a file location on another host ({authority})"));
    }
    let mut segments: Vec<String> = path.split('/').map(str::to_string).collect();
    if segments.last().is_some_and(String::is_empty) {
        segments.pop();
    }
    if segments
        .iter()
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err("its path has an empty, '.' or '..' segment".into());
    }
    Ok(Location {
        scheme: scheme.to_string(),
        authority: if scheme == "file" {
            String::new()
        } else {
            authority.to_string()
        },
        segments,
    })
}

/// Refuses a schema or table name that would not stay one path segment of its location.
pub fn check_new_name(what: &str, name: &str) -> Result<()> {
    let bad = if name.is_empty() {
        Some("it is empty".to_string())
    } else if name == "." || name == ".." || name.contains("..") {
        Some("it contains '..'".to_string())
    } else {
        name.chars()
            .find(|c| c.is_control() || matches!(c, '/' | '\\'))
            .map(|c| format!("it contains the character {c:?}"))
    };
    match bad {
        Some(reason) => Err(Error::invalid(
            ErrorCode::NotSupported,
            format!("Invalid {what} name '{}': {reason}", name.escape_debug()),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(locations: &TableLocations, location: &str) -> bool {
        locations.check(location).is_err()
    }

    #[test]
    fn locations_must_lie_below_the_warehouse() -> Result<()> {
        let s3 = TableLocations::under(Some("s3://warehouse/tables/"))?;
        assert_eq!(
            s3.check("s3://warehouse/tables/sales/orders/")?,
            "s3://warehouse/tables/sales/orders"
        );
        assert_eq!(
            s3.check("s3a://warehouse/tables/t")?,
            "s3a://warehouse/tables/t"
        );
        for outside in [
            "s3://warehouse/tables",
            "s3://warehouse/tablesx/t",
            "s3://other-bucket/tables/t",
            "s3://warehouse/tables/../secrets/t",
            "s3://warehouse/tables/./t",
            "s3://warehouse/tables//t",
            "s3://warehouse/tables/%2e%2e/t",
            "s3://warehouse/tables/a\\..\\b",
            "s3://warehouse/tables/t\n",
            "file:///etc/passwd",
            "/warehouse/tables/t",
            "http://warehouse/tables/t",
        ] {
            assert!(refused(&s3, outside), "{outside} was accepted");
        }
        let local = TableLocations::under(Some("file:///data/warehouse"))?;
        assert!(local.check("file:///data/warehouse/s/t").is_ok());
        assert!(local.check("file://localhost/data/warehouse/s/t").is_ok());
        for outside in [
            "file:///data/warehouse/../../etc",
            "file:///tmp/t",
            "file://evil/data/warehouse/t",
            "s3://data/warehouse/t",
        ] {
            assert!(refused(&local, outside), "{outside} was accepted");
        }
        Ok(())
    }

    #[test]
    fn without_a_storage_root_no_location_is_accepted() -> Result<()> {
        let none = TableLocations::under(None)?;
        let err = none.check("s3://warehouse/t").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("location_root")));
        assert!(TableLocations::under(Some("quickstart")).is_err());
        Ok(())
    }

    #[test]
    fn names_stay_one_path_segment() {
        for good in ["orders", "Order Lines", "t_1", "a.b", "ünïcode"] {
            assert!(check_new_name("table", good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", "../etc", "a/b", "a\\b", "x..y", "t\0", "t\n"] {
            assert!(check_new_name("table", bad).is_err(), "{bad:?}");
        }
    }
}
