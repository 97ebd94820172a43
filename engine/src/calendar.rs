//! Dates as Trino keeps them: any day an `i32` count of days from 1970-01-01 reaches
//! (-5877641-06-23 to 5881580-07-11), in the proleptic Gregorian calendar, written with the year
//! as a plain number (`10000-01-01`, `-0001-01-01`). chrono stops at ±262143 and writes years
//! past 9999 with a `+`, so neither Trino's literals nor its output fit it.

const DAYS_PER_ERA: i64 = 146_097;

/// Days from 1970-01-01 to `year-month-day`, if that day exists.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> Option<i64> {
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    // Years counted from March, so the leap day ends a year (Howard Hinnant's algorithm).
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * DAYS_PER_ERA + day_of_era - 719_468)
}

/// The year, month and day `days` after 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let days = days + 719_468;
    let era = days.div_euclid(DAYS_PER_ERA);
    let day_of_era = days.rem_euclid(DAYS_PER_ERA);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    // Both are in range by construction: 1..=12 and 1..=31.
    (year, month as u32, day as u32)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year.rem_euclid(4) == 0
            && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0) =>
        {
            29
        }
        2 => 28,
        _ => 31,
    }
}

/// `[+-]YYYY-M-D` as Trino reads a date: a year of any number of digits, a sign allowed,
/// month and day of one or two digits; the day must exist and fit a `date`.
pub fn parse_date(text: &str) -> Option<i32> {
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let mut parts = unsigned.split('-');
    let (year, month, day) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || year.is_empty() || year.len() > 7 {
        return None;
    }
    let digits = |part: &str, most: usize| {
        (!part.is_empty() && part.len() <= most && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse::<u32>().ok())
            .flatten()
    };
    let year = i64::from(digits(year, 7)?);
    let year = if negative { -year } else { year };
    let days = days_from_civil(year, digits(month, 2)?, digits(day, 2)?)?;
    i32::try_from(days).ok()
}

/// `days` after 1970-01-01 as Trino writes a date: at least four digits of year, `-` before a
/// year before 0 (`-0001-01-01`), none before one past 9999 (`10000-01-01`).
#[derive(Debug, Clone, Copy)]
pub struct DisplayDate(pub i32);

impl std::fmt::Display for DisplayDate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (year, month, day) = civil_from_days(i64::from(self.0));
        if year < 0 {
            write!(f, "-{:04}-{month:02}-{day:02}", -year)
        } else {
            write!(f, "{year:04}-{month:02}-{day:02}")
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Datelike, NaiveDate};
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Where chrono reaches, the two agree, both ways.
        #[test]
        fn agrees_with_chrono(days in -90_000_000i64..90_000_000) {
            let (year, month, day) = civil_from_days(days);
            let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).ok_or_else(|| TestCaseError::fail("epoch"))?;
            let chrono = epoch + chrono::TimeDelta::days(days);
            prop_assert_eq!((year, month, day), (i64::from(chrono.year()), chrono.month(), chrono.day()));
            prop_assert_eq!(days_from_civil(year, month, day), Some(days));
        }

        /// Any date survives being written and read back.
        #[test]
        fn writing_and_reading_round_trip(days in i32::MIN..=i32::MAX) {
            let text = DisplayDate(days).to_string();
            prop_assert_eq!(parse_date(&text), Some(days), "{}", text);
        }
    }

    #[test]
    fn reads_dates_as_trino_does() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("1970-1-2"), Some(1));
        assert_eq!(parse_date("1-01-01"), Some(-719_162));
        assert_eq!(parse_date("10000-01-01"), Some(2_932_897));
        assert_eq!(parse_date("+10000-01-01"), Some(2_932_897));
        assert_eq!(parse_date("-0001-01-01"), Some(-719_893));
        assert_eq!(parse_date("5881580-07-11"), Some(i32::MAX));
        assert_eq!(parse_date("-5877641-06-23"), Some(i32::MIN));
        for not_a_date in [
            "5881580-07-12",
            "-5877641-06-22",
            "2021-02-29",
            "2000-13-01",
            "2000-00-01",
            "2000-01-00",
            "2000-01-001",
            "2000-01",
            "2000-01-01-01",
            "--2000-01-01",
            "2000/01/01",
            "２０００-01-01",
            "",
            "-",
        ] {
            assert_eq!(parse_date(not_a_date), None, "{not_a_date}");
        }
        assert_eq!(parse_date("2000-02-29"), Some(11_016));
        assert_eq!(parse_date("1900-02-29"), None);
    }

    #[test]
    fn writes_dates_as_trino_does() {
        let written = |days| DisplayDate(days).to_string();
        assert_eq!(written(0), "1970-01-01");
        assert_eq!(written(2_932_897), "10000-01-01");
        assert_eq!(written(-719_893), "-0001-01-01");
        assert_eq!(written(-719_162), "0001-01-01");
        assert_eq!(written(i32::MAX), "5881580-07-11");
        assert_eq!(written(i32::MIN), "-5877641-06-23");
    }
}
