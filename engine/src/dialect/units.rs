//! Airlift's duration and data-size texts, which Trino clients and session properties use.

use std::time::Duration;

/// Airlift's duration text: `500ms`, `1s`, `1.50m`, `2h`, `1d`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.trim().parse().ok()?;
    let seconds = match unit {
        "ns" => value / 1e9,
        "us" => value / 1e6,
        "ms" => value / 1e3,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86_400.0,
        _ => return None,
    };
    // `try_`: a client's `1e300d` is an invalid duration, not a panic.
    Duration::try_from_secs_f64(seconds).ok()
}

/// Airlift's data size text: `16MB`, `1kB`, `512B` (powers of 1024, as airlift's).
pub fn parse_data_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.trim().parse().ok()?;
    let scale = match unit {
        "B" => 1.0,
        "kB" | "KB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = value * scale;
    (bytes.is_finite() && bytes >= 0.0).then_some(bytes as usize)
}

/// Uptime as airlift prints durations: `12.50m`.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.2}s")
    } else if s < 3600.0 {
        format!("{:.2}m", s / 60.0)
    } else if s < 86_400.0 {
        format!("{:.2}h", s / 3600.0)
    } else {
        format!("{:.2}d", s / 86_400.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_airlift_durations_and_sizes() {
        assert_eq!(parse_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.50m"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("abc"), None);
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_duration("5"), None);
        // Past what a Duration holds: invalid, not a panic.
        assert_eq!(parse_duration("1e300d"), None);
        assert_eq!(parse_duration("NaNs"), None);
        assert_eq!(parse_duration("infs"), None);
        assert_eq!(parse_data_size("16MB"), Some(16 * 1024 * 1024));
        assert_eq!(parse_data_size("1kB"), Some(1024));
        assert_eq!(parse_data_size("12XB"), None);
        assert_eq!(format_duration(Duration::from_secs(90)), "1.50m");
    }

    proptest::proptest! {
        /// Whatever a client sends as a duration or size, the answer is a value or `None`.
        #[test]
        fn any_text_parses_without_panicking(text in "\\PC{0,24}") {
            let _ = parse_duration(&text);
            let _ = parse_data_size(&text);
        }

        #[test]
        fn any_number_with_a_unit_is_a_duration_or_refused(
            n in proptest::num::f64::ANY,
            unit in proptest::sample::select(vec!["ns", "us", "ms", "s", "m", "h", "d"]),
        ) {
            let parsed = parse_duration(&format!("{n}{unit}"));
            if parsed.is_some() {
                proptest::prop_assert!(n >= 0.0);
            }
            if (0.0..1e9).contains(&n) {
                proptest::prop_assert!(parsed.is_some());
            }
        }

        #[test]
        fn durations_round_trip_through_airlift_text(millis in 0u64..10_000_000_000) {
            let d = Duration::from_millis(millis);
            let back = parse_duration(&format_duration(d));
            proptest::prop_assert!(back.is_some());
            let back = back.unwrap_or_default().as_secs_f64();
            // format_duration keeps two decimals of its unit.
            proptest::prop_assert!((back - d.as_secs_f64()).abs() <= d.as_secs_f64() * 0.01 + 0.01);
        }
    }
}
