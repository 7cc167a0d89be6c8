//! The stored forms of PostgreSQL's date and time types, the calendar arithmetic that
//! maps them to years, months and days, and the text `Value`'s `Display` gives them
//! (PostgreSQL's DateStyle ISO, IntervalStyle postgres). The engine prints values in its
//! own messages ("Key (d)=(2024-01-31) already exists"), so the printing lives here with
//! the representation; parsing and arithmetic belong to the SQL layer.
//!
//! A date is days since 2000-01-01, a timestamp microseconds since 2000-01-01 00:00:00
//! (UTC for a timestamptz), as PostgreSQL stores them. The extreme values of each are
//! `-infinity` and `infinity`.

use std::fmt;

pub const MICROS_PER_SECOND: i64 = 1_000_000;
pub const MICROS_PER_MINUTE: i64 = 60 * MICROS_PER_SECOND;
pub const MICROS_PER_HOUR: i64 = 60 * MICROS_PER_MINUTE;
pub const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;
/// Days from 1970-01-01 (the Unix epoch) to 2000-01-01 (PostgreSQL's).
pub const UNIX_TO_POSTGRES_DAYS: i64 = 10_957;

pub const DATE_NEG_INFINITY: i32 = i32::MIN;
pub const DATE_INFINITY: i32 = i32::MAX;
pub const TIMESTAMP_NEG_INFINITY: i64 = i64::MIN;
pub const TIMESTAMP_INFINITY: i64 = i64::MAX;

/// An interval as PostgreSQL keeps it: months, days and microseconds, each with its own
/// sign (a month is not a fixed number of days, nor a day of hours across a DST change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    /// The span PostgreSQL compares intervals by: a month counted as 30 days, a day as
    /// 24 hours. Intervals with the same span are equal (`'1 mon' = '30 days'`).
    pub fn span_micros(self) -> i128 {
        (self.months as i128 * 30 + self.days as i128) * MICROS_PER_DAY as i128
            + self.micros as i128
    }

    /// An interval of `span` (from [`Interval::span_micros`]) in months of 30 days, days
    /// and microseconds (what does not fit in one field spills into the next); None
    /// when it does not fit at all.
    pub fn from_span(span: i128) -> Option<Interval> {
        let day = MICROS_PER_DAY as i128;
        let total_days = span / day;
        let months = (total_days / 30).clamp(i32::MIN as i128, i32::MAX as i128);
        let days = (total_days - months * 30).clamp(i32::MIN as i128, i32::MAX as i128);
        let micros = span - (months * 30 + days) * day;
        Some(Interval {
            months: months as i32,
            days: days as i32,
            micros: i64::try_from(micros).ok()?,
        })
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (year 0 is 1 BC). Howard
/// Hinnant's `days_from_civil`.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The year, month and day of a day count since 1970-01-01 (Hinnant's
/// `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The year, month and day of a PostgreSQL date (days since 2000-01-01).
pub fn ymd_of_date(date: i32) -> (i64, u32, u32) {
    civil_from_days(date as i64 + UNIX_TO_POSTGRES_DAYS)
}

fn write_ymd(f: &mut fmt::Formatter<'_>, (year, month, day): (i64, u32, u32)) -> fmt::Result {
    // Year 0 is 1 BC: PostgreSQL shows years before 1 as positive with " BC" after.
    let shown = if year <= 0 { 1 - year } else { year };
    write!(f, "{shown:04}-{month:02}-{day:02}")
}

fn bc(year: i64) -> &'static str {
    if year <= 0 {
        " BC"
    } else {
        ""
    }
}

/// `2024-01-31`, as PostgreSQL prints a date.
pub fn fmt_date(f: &mut fmt::Formatter<'_>, date: i32) -> fmt::Result {
    match date {
        DATE_NEG_INFINITY => write!(f, "-infinity"),
        DATE_INFINITY => write!(f, "infinity"),
        _ => {
            let ymd = ymd_of_date(date);
            write_ymd(f, ymd)?;
            write!(f, "{}", bc(ymd.0))
        }
    }
}

/// Seconds and their fraction, the fraction without trailing zeros (`05`, `05.25`).
fn write_seconds(f: &mut fmt::Formatter<'_>, micros: i64) -> fmt::Result {
    let (secs, frac) = (micros / MICROS_PER_SECOND, micros % MICROS_PER_SECOND);
    write!(f, "{secs:02}")?;
    if frac != 0 {
        let digits = format!("{frac:06}");
        write!(f, ".{}", digits.trim_end_matches('0'))?;
    }
    Ok(())
}

/// `2024-01-31 12:34:56.789`, as PostgreSQL prints a timestamp; with `zone` (a
/// timestamptz in the session's time zone, UTC) followed by `+00`.
pub fn fmt_timestamp(f: &mut fmt::Formatter<'_>, micros: i64, zone: bool) -> fmt::Result {
    match micros {
        TIMESTAMP_NEG_INFINITY => return write!(f, "-infinity"),
        TIMESTAMP_INFINITY => return write!(f, "infinity"),
        _ => {}
    }
    let (days, time) = (
        micros.div_euclid(MICROS_PER_DAY),
        micros.rem_euclid(MICROS_PER_DAY),
    );
    let ymd = civil_from_days(days + UNIX_TO_POSTGRES_DAYS);
    write_ymd(f, ymd)?;
    write!(
        f,
        " {:02}:{:02}:",
        time / MICROS_PER_HOUR,
        time % MICROS_PER_HOUR / MICROS_PER_MINUTE
    )?;
    write_seconds(f, time % MICROS_PER_MINUTE)?;
    if zone {
        write!(f, "+00")?;
    }
    write!(f, "{}", bc(ymd.0))
}

/// PostgreSQL's IntervalStyle `postgres`: `1 year 2 mons -3 days +04:05:06.5`.
pub fn fmt_interval(f: &mut fmt::Formatter<'_>, iv: Interval) -> fmt::Result {
    let mut is_zero = true;
    let mut is_before = false;
    let mut part = |f: &mut fmt::Formatter<'_>, value: i64, unit: &str| -> fmt::Result {
        if value == 0 {
            return Ok(());
        }
        write!(
            f,
            "{}{}{value} {unit}{}",
            if is_zero { "" } else { " " },
            if is_before && value > 0 { "+" } else { "" },
            if value != 1 { "s" } else { "" }
        )?;
        is_before = value < 0;
        is_zero = false;
        Ok(())
    };
    part(f, (iv.months / 12) as i64, "year")?;
    part(f, (iv.months % 12) as i64, "mon")?;
    part(f, iv.days as i64, "day")?;
    let t = iv.micros;
    if is_zero || t != 0 {
        let sign = if t < 0 {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        let a = t.unsigned_abs();
        let (hour, min) = (
            a / MICROS_PER_HOUR as u64,
            a % MICROS_PER_HOUR as u64 / MICROS_PER_MINUTE as u64,
        );
        write!(
            f,
            "{}{sign}{hour:02}:{min:02}:",
            if is_zero { "" } else { " " }
        )?;
        write_seconds(f, (a % MICROS_PER_MINUTE as u64) as i64)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct D<F: Fn(&mut fmt::Formatter<'_>) -> fmt::Result>(F);
    impl<F: Fn(&mut fmt::Formatter<'_>) -> fmt::Result> fmt::Display for D<F> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            (self.0)(f)
        }
    }

    #[test]
    fn civil_round_trips() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 1, 1), UNIX_TO_POSTGRES_DAYS);
        for d in (-800_000..800_000).step_by(997) {
            let (y, m, day) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, day), d);
        }
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
    }

    #[test]
    fn prints_as_postgres() {
        let date = |d| D(move |f: &mut fmt::Formatter<'_>| fmt_date(f, d)).to_string();
        assert_eq!(date(0), "2000-01-01");
        assert_eq!(date(-1), "1999-12-31");
        assert_eq!(date(-730_485), "0001-01-01 BC");
        assert_eq!(date(-730_120), "0001-12-31 BC");
        let ts = |m, z| D(move |f: &mut fmt::Formatter<'_>| fmt_timestamp(f, m, z)).to_string();
        assert_eq!(ts(1_500_000, false), "2000-01-01 00:00:01.5");
        assert_eq!(ts(-1, true), "1999-12-31 23:59:59.999999+00");
        let iv = |months, days, micros| {
            D(move |f: &mut fmt::Formatter<'_>| {
                fmt_interval(
                    f,
                    Interval {
                        months,
                        days,
                        micros,
                    },
                )
            })
            .to_string()
        };
        assert_eq!(iv(0, 0, 0), "00:00:00");
        assert_eq!(iv(14, 3, 14_706_000_000), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(iv(0, -1, 0), "-1 days");
        assert_eq!(iv(0, -1, 3_600_000_000), "-1 days +01:00:00");
        assert_eq!(iv(0, 1, -3_600_000_000), "1 day -01:00:00");
        assert_eq!(iv(0, 0, 1_500_000), "00:00:01.5");
    }
}
