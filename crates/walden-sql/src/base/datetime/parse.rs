//! Text input of date, timestamp, timestamptz and interval, with PostgreSQL's errors.

use walden::calendar::{
    Interval, DATE_INFINITY, DATE_NEG_INFINITY, MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE,
    MICROS_PER_SECOND, TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY,
};

use super::{
    bad_syntax, date_in_range, days_in_month, field_overflow, pg_days, timestamp_in_range,
    DATETIME_OVERFLOW,
};
use crate::error::{clip, SqlError, SqlResult};

/// The parts of a date/time text: a date, a time of day, a zone offset in seconds.
#[derive(Default)]
struct Parsed {
    date: Option<(i64, u32, u32)>,
    time_micros: Option<i64>,
    zone_secs: Option<i64>,
    special: Option<bool>,
}

/// Reads an unsigned decimal number of at least one digit.
fn digits(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 || end > 12 {
        return None;
    }
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// `HH:MM[:SS[.ffffff]]`: microseconds of the day (24:00:00 allowed, as PostgreSQL does),
/// Err(true) for a field out of range, Err(false) for bad syntax.
fn parse_time(s: &str) -> Result<(i64, &str), bool> {
    let (h, rest) = digits(s).ok_or(false)?;
    let rest = rest.strip_prefix(':').ok_or(false)?;
    let (m, mut rest) = digits(rest).ok_or(false)?;
    let mut micros = 0i64;
    if let Some(r) = rest.strip_prefix(':') {
        let (sec, r) = digits(r).ok_or(false)?;
        rest = r;
        if sec > 60 {
            return Err(true);
        }
        micros = sec as i64 * MICROS_PER_SECOND;
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            let frac = &r[..end];
            rest = &r[end..];
            // Rounded to microseconds, as PostgreSQL does.
            let x: f64 = format!("0.{frac}").parse().map_err(|_| false)?;
            micros += (x * 1e6).round() as i64;
        }
    }
    if h > 24 || m > 59 || (h == 24 && (m > 0 || micros > 0)) || micros > 60 * MICROS_PER_SECOND {
        return Err(true);
    }
    Ok((
        h as i64 * MICROS_PER_HOUR + m as i64 * MICROS_PER_MINUTE + micros,
        rest,
    ))
}

/// A zone: `Z`, `UTC`, `+HH`, `+HH:MM`, `+HHMM` (seconds east of UTC).
fn parse_zone(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("z") || s.eq_ignore_ascii_case("utc") || s.eq_ignore_ascii_case("gmt")
    {
        return Some(0);
    }
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    if !rest.bytes().all(|b| b.is_ascii_digit() || b == b':') {
        return None;
    }
    let (h, m) = if let Some((h, m)) = rest.split_once(':') {
        (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?)
    } else if rest.len() == 4 {
        (rest[..2].parse().ok()?, rest[2..].parse().ok()?)
    } else if (1..=2).contains(&rest.len()) {
        (rest.parse().ok()?, 0)
    } else {
        return None;
    };
    if h > 15 || m > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60))
}

/// Parses ISO 8601 text: `YYYY-MM-DD`, then optionally ` ` or `T` and a time, then
/// optionally a zone; or `infinity`, `-infinity`, `epoch`.
fn parse_parts(s: &str, ty: &str) -> SqlResult<Parsed> {
    let t = s.trim();
    let mut p = Parsed::default();
    match t.to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => {
            p.special = Some(true);
            return Ok(p);
        }
        "-infinity" => {
            p.special = Some(false);
            return Ok(p);
        }
        "epoch" => {
            p.date = Some((1970, 1, 1));
            return Ok(p);
        }
        _ => {}
    }
    let bad = || bad_syntax(ty, s);
    let (y, rest) = digits(t).ok_or_else(bad)?;
    let rest = rest.strip_prefix('-').ok_or_else(bad)?;
    let (m, rest) = digits(rest).ok_or_else(bad)?;
    let rest = rest.strip_prefix('-').ok_or_else(bad)?;
    let (d, mut rest) = digits(rest).ok_or_else(bad)?;
    let mut year = y as i64;
    // A trailing " BC" names a year before 1 (year 1 BC is year 0).
    let trimmed = rest.trim_end();
    let lower = trimmed.to_ascii_lowercase();
    if lower.ends_with(" bc") {
        year = 1 - year;
        rest = &trimmed[..trimmed.len() - 3];
    }
    if y == 0 {
        return Err(field_overflow(s));
    }
    // A month or day no calendar has may be the other written first: PostgreSQL's
    // hint (its DTERR_MD_FIELD_OVERFLOW); a day past its month's end gets none.
    if !(1..=12).contains(&m) || d == 0 || d > 31 {
        return Err(
            field_overflow(s).with_hint("Perhaps you need a different \"datestyle\" setting.")
        );
    }
    if d > days_in_month(year, m as u32) as u64 {
        return Err(field_overflow(s));
    }
    p.date = Some((year, m as u32, d as u32));
    let rest = rest.trim_start_matches([' ', 'T', 't']);
    if rest.is_empty() {
        return Ok(p);
    }
    // A zone straight after the date is midnight there, as PostgreSQL reads it
    // (pgjdbc's setDate sends `2000-02-29 +00`).
    if !rest.starts_with(|c: char| c.is_ascii_digit()) {
        p.zone_secs = Some(parse_zone(rest).ok_or_else(bad)?);
        return Ok(p);
    }
    let (micros, rest) =
        parse_time(rest).map_err(|range| if range { field_overflow(s) } else { bad() })?;
    p.time_micros = Some(micros);
    let rest = rest.trim();
    if !rest.is_empty() {
        p.zone_secs = Some(parse_zone(rest).ok_or_else(bad)?);
    }
    Ok(p)
}

/// PostgreSQL's date input.
pub fn parse_date(s: &str) -> SqlResult<i32> {
    let p = parse_parts(s, "date")?;
    match p.special {
        Some(true) => return Ok(DATE_INFINITY),
        Some(false) => return Ok(DATE_NEG_INFINITY),
        None => {}
    }
    let (y, m, d) = p.date.ok_or_else(|| bad_syntax("date", s))?;
    let days = pg_days(y, m, d);
    if !date_in_range(days) {
        return Err(date_out_of_range_for(s));
    }
    Ok(days as i32)
}

fn date_out_of_range_for(s: &str) -> SqlError {
    SqlError::new(
        DATETIME_OVERFLOW,
        format!("date out of range: \"{}\"", clip(s)),
    )
}

/// PostgreSQL's timestamp (`zone` false: an offset is ignored) and timestamptz input.
pub fn parse_timestamp(s: &str, zone: bool) -> SqlResult<i64> {
    let ty = if zone {
        "timestamp with time zone"
    } else {
        "timestamp"
    };
    let p = parse_parts(s, ty)?;
    match p.special {
        Some(true) => return Ok(TIMESTAMP_INFINITY),
        Some(false) => return Ok(TIMESTAMP_NEG_INFINITY),
        None => {}
    }
    let (y, m, d) = p.date.ok_or_else(|| bad_syntax(ty, s))?;
    let mut micros = pg_days(y, m, d)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|x| x.checked_add(p.time_micros.unwrap_or(0)));
    if zone {
        micros = micros.and_then(|x| x.checked_sub(p.zone_secs.unwrap_or(0) * MICROS_PER_SECOND));
    }
    match micros {
        Some(x) if timestamp_in_range(x) => Ok(x),
        _ => Err(SqlError::new(
            DATETIME_OVERFLOW,
            format!("timestamp out of range: \"{}\"", clip(s)),
        )),
    }
}

/// Units of interval input, and how many months, days or microseconds each is.
enum Unit {
    Months(f64),
    Days(f64),
    Micros(f64),
}

fn interval_unit(word: &str) -> Option<Unit> {
    Some(match word {
        "millennium" | "millennia" | "millenniums" | "mil" | "mils" => Unit::Months(12000.0),
        "century" | "centuries" | "cent" | "c" => Unit::Months(1200.0),
        "decade" | "decades" | "dec" | "decs" => Unit::Months(120.0),
        "year" | "years" | "y" | "yr" | "yrs" => Unit::Months(12.0),
        "month" | "months" | "mon" | "mons" => Unit::Months(1.0),
        "week" | "weeks" | "w" => Unit::Days(7.0),
        "day" | "days" | "d" => Unit::Days(1.0),
        "hour" | "hours" | "h" | "hr" | "hrs" => Unit::Micros(MICROS_PER_HOUR as f64),
        "minute" | "minutes" | "m" | "min" | "mins" => Unit::Micros(MICROS_PER_MINUTE as f64),
        "second" | "seconds" | "s" | "sec" | "secs" => Unit::Micros(MICROS_PER_SECOND as f64),
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => Unit::Micros(1000.0),
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" => Unit::Micros(1.0),
        _ => return None,
    })
}

/// An interval being built from its input's fields, with fractions carried down as
/// PostgreSQL does (`1.5 months` is 1 mon 15 days).
#[derive(Default)]
struct IntervalAcc {
    months: f64,
    days: f64,
    micros: f64,
}

impl IntervalAcc {
    fn add(&mut self, n: f64, unit: Unit) {
        match unit {
            Unit::Months(k) => {
                let total = n * k;
                let whole = total.trunc();
                self.months += whole;
                let days = (total - whole) * 30.0;
                self.days += days.trunc();
                self.micros += (days - days.trunc()) * MICROS_PER_DAY as f64;
            }
            Unit::Days(k) => {
                let total = n * k;
                let whole = total.trunc();
                self.days += whole;
                self.micros += (total - whole) * MICROS_PER_DAY as f64;
            }
            Unit::Micros(k) => self.micros += n * k,
        }
    }

    fn finish(self, negate: bool) -> Option<Interval> {
        let sign = if negate { -1.0 } else { 1.0 };
        let fits = |x: f64, lo: f64, hi: f64| (lo..=hi).contains(&x);
        let (months, days, micros) = (
            (self.months * sign).round(),
            (self.days * sign).round(),
            (self.micros * sign).round(),
        );
        if !fits(months, i32::MIN as f64, i32::MAX as f64)
            || !fits(days, i32::MIN as f64, i32::MAX as f64)
            || !fits(micros, -9.2e18, 9.2e18)
        {
            return None;
        }
        Some(Interval {
            months: months as i32,
            days: days as i32,
            micros: micros as i64,
        })
    }
}

/// PostgreSQL's interval input (its `postgres` style and the unit names it knows):
/// `1 day`, `2 hours 30 minutes`, `1 year 2 mons`, `01:02:03`, `3 days 04:05:06`,
/// `-1 day`, `@ 1 day ago`.
pub fn parse_interval(s: &str) -> SqlResult<Interval> {
    let bad = || bad_syntax("interval", s);
    let lower = s.trim().to_ascii_lowercase();
    let mut rest = lower.strip_prefix('@').unwrap_or(&lower).trim_start();
    let mut acc = IntervalAcc::default();
    let mut negate = false;
    let mut any = false;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("ago") {
            if !r.trim().is_empty() || !any {
                return Err(bad());
            }
            negate = true;
            break;
        }
        // A signed number, or a time of day `[-]HH:MM[:SS.ffffff]`.
        let end = rest
            .char_indices()
            .find(|&(i, c)| {
                !(c.is_ascii_digit() || c == '.' || c == ':' || ((c == '-' || c == '+') && i == 0))
            })
            .map_or(rest.len(), |(i, _)| i);
        let number = &rest[..end];
        rest = rest[end..].trim_start();
        if number.is_empty() || number == "-" || number == "+" {
            return Err(bad());
        }
        any = true;
        if number.contains(':') {
            let (sign, body) = match number.as_bytes()[0] {
                b'-' => (-1.0, &number[1..]),
                b'+' => (1.0, &number[1..]),
                _ => (1.0, number),
            };
            let mut parts = body.split(':');
            let h: f64 = parts.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
            let m: f64 = parts.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
            let sec: f64 = match parts.next() {
                Some(x) => x.parse().map_err(|_| bad())?,
                None => 0.0,
            };
            if parts.next().is_some() || m >= 60.0 || sec >= 60.0 {
                return Err(if parts.next().is_some() {
                    bad()
                } else {
                    field_overflow(s)
                });
            }
            acc.micros += sign
                * (h * MICROS_PER_HOUR as f64
                    + m * MICROS_PER_MINUTE as f64
                    + sec * MICROS_PER_SECOND as f64);
            continue;
        }
        let n: f64 = number.parse().map_err(|_| bad())?;
        let word_end = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let word = &rest[..word_end];
        if word.is_empty() || word == "ago" {
            // A bare number is seconds.
            acc.add(n, Unit::Micros(MICROS_PER_SECOND as f64));
            continue;
        }
        rest = rest[word_end..].trim_start();
        acc.add(n, interval_unit(word).ok_or_else(bad)?);
    }
    if !any {
        return Err(bad());
    }
    acc.finish(negate).ok_or_else(interval_out_of_range_for(s))
}

fn interval_out_of_range_for(s: &str) -> impl Fn() -> SqlError + '_ {
    move || {
        SqlError::new(
            DATETIME_OVERFLOW,
            format!("interval field value out of range: \"{}\"", clip(s)),
        )
    }
}
