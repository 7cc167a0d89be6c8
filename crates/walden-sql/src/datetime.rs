//! PostgreSQL's date, timestamp, timestamptz and interval: their text input, their
//! arithmetic, `extract`/`date_part` and `date_trunc`. The stored forms and the text
//! output live in the engine (`walden::calendar`); the session time zone is UTC.

use walden::calendar::{
    civil_from_days, days_from_civil, Interval, DATE_INFINITY, DATE_NEG_INFINITY, MICROS_PER_DAY,
    MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND, TIMESTAMP_INFINITY,
    TIMESTAMP_NEG_INFINITY, UNIX_TO_POSTGRES_DAYS,
};

use crate::error::{clip, code, SqlError, SqlResult};

const DATETIME_FORMAT: &str = "22007";
const DATETIME_OVERFLOW: &str = "22008";

fn bad_syntax(ty: &str, s: &str) -> SqlError {
    SqlError::new(
        DATETIME_FORMAT,
        format!("invalid input syntax for type {ty}: \"{}\"", clip(s)),
    )
}

fn field_overflow(s: &str) -> SqlError {
    SqlError::new(
        DATETIME_OVERFLOW,
        format!("date/time field value out of range: \"{}\"", clip(s)),
    )
}

pub fn timestamp_out_of_range() -> SqlError {
    SqlError::new(DATETIME_OVERFLOW, "timestamp out of range")
}

fn date_out_of_range() -> SqlError {
    SqlError::new(DATETIME_OVERFLOW, "date out of range")
}

pub fn interval_out_of_range() -> SqlError {
    // PostgreSQL reports it as 22008 (datetime_field_overflow), not 22015.
    SqlError::new(DATETIME_OVERFLOW, "interval out of range")
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 2000-01-01 of a calendar date.
fn pg_days(year: i64, month: u32, day: u32) -> i64 {
    days_from_civil(year, month, day) - UNIX_TO_POSTGRES_DAYS
}

/// PostgreSQL's date range: 4713 BC to 5874897 AD.
fn date_in_range(days: i64) -> bool {
    (pg_days(-4713, 11, 24)..=pg_days(5_874_897, 12, 31)).contains(&days)
}

/// PostgreSQL's timestamp range: 4713 BC to 294276 AD.
fn timestamp_in_range(micros: i64) -> bool {
    let lo = pg_days(-4713, 11, 24) * MICROS_PER_DAY;
    let hi = (pg_days(294_277, 1, 1)) * MICROS_PER_DAY;
    (lo..hi).contains(&micros)
}

/// A timestamp's microseconds, refusing what is beyond PostgreSQL's range.
pub fn checked_timestamp(micros: Option<i64>) -> SqlResult<i64> {
    match micros {
        Some(m) if timestamp_in_range(m) => Ok(m),
        _ => Err(timestamp_out_of_range()),
    }
}

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

/// A date as a timestamp at midnight (infinities kept).
pub fn date_to_timestamp(d: i32) -> SqlResult<i64> {
    Ok(match d {
        DATE_INFINITY => TIMESTAMP_INFINITY,
        DATE_NEG_INFINITY => TIMESTAMP_NEG_INFINITY,
        _ => checked_timestamp((d as i64).checked_mul(MICROS_PER_DAY))?,
    })
}

/// The date of a timestamp (infinities kept).
pub fn timestamp_to_date(t: i64) -> i32 {
    match t {
        TIMESTAMP_INFINITY => DATE_INFINITY,
        TIMESTAMP_NEG_INFINITY => DATE_NEG_INFINITY,
        _ => t.div_euclid(MICROS_PER_DAY) as i32,
    }
}

fn is_infinite_ts(t: i64) -> bool {
    t == TIMESTAMP_INFINITY || t == TIMESTAMP_NEG_INFINITY
}

/// `date + n days`.
pub fn date_add_days(d: i32, n: i64) -> SqlResult<i32> {
    if d == DATE_INFINITY || d == DATE_NEG_INFINITY {
        return Ok(d);
    }
    let r = (d as i64).checked_add(n).filter(|&x| date_in_range(x));
    r.map(|x| x as i32).ok_or_else(date_out_of_range)
}

/// `date - date`: days between.
pub fn date_diff(a: i32, b: i32) -> SqlResult<i32> {
    let inf = |d| d == DATE_INFINITY || d == DATE_NEG_INFINITY;
    if inf(a) || inf(b) {
        return Err(SqlError::new(
            DATETIME_OVERFLOW,
            "cannot subtract infinite dates",
        ));
    }
    Ok(a - b)
}

/// `timestamp + interval`, as PostgreSQL's timestamp_pl_interval: months first (the day
/// clamped to the month's last), then days, then microseconds.
pub fn timestamp_add(t: i64, iv: Interval) -> SqlResult<i64> {
    if is_infinite_ts(t) {
        return Ok(t);
    }
    let mut t = t;
    if iv.months != 0 {
        let (days, time) = (t.div_euclid(MICROS_PER_DAY), t.rem_euclid(MICROS_PER_DAY));
        let (y, m, d) = civil_from_days(days + UNIX_TO_POSTGRES_DAYS);
        let total = y * 12 + (m as i64 - 1) + iv.months as i64;
        let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
        let nd = d.min(days_in_month(ny, nm));
        let day = pg_days(ny, nm, nd);
        if !date_in_range(day) {
            return Err(timestamp_out_of_range());
        }
        t = day * MICROS_PER_DAY + time;
    }
    let step = (iv.days as i64)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|x| x.checked_add(iv.micros));
    checked_timestamp(step.and_then(|s| t.checked_add(s)))
}

pub fn negate_interval(iv: Interval) -> SqlResult<Interval> {
    Ok(Interval {
        months: iv.months.checked_neg().ok_or_else(interval_out_of_range)?,
        days: iv.days.checked_neg().ok_or_else(interval_out_of_range)?,
        micros: iv.micros.checked_neg().ok_or_else(interval_out_of_range)?,
    })
}

pub fn interval_add(a: Interval, b: Interval) -> SqlResult<Interval> {
    Ok(Interval {
        months: a
            .months
            .checked_add(b.months)
            .ok_or_else(interval_out_of_range)?,
        days: a
            .days
            .checked_add(b.days)
            .ok_or_else(interval_out_of_range)?,
        micros: a
            .micros
            .checked_add(b.micros)
            .ok_or_else(interval_out_of_range)?,
    })
}

/// `timestamp - timestamp`: days and time, the hours beyond a day made days (PostgreSQL's
/// timestamp_mi, which justifies hours).
pub fn timestamp_diff(a: i64, b: i64) -> SqlResult<Interval> {
    if is_infinite_ts(a) || is_infinite_ts(b) {
        return Err(SqlError::new(
            DATETIME_OVERFLOW,
            "cannot subtract infinite timestamps",
        ));
    }
    let d = a.checked_sub(b).ok_or_else(interval_out_of_range)?;
    Ok(Interval {
        months: 0,
        days: (d / MICROS_PER_DAY) as i32,
        micros: d % MICROS_PER_DAY,
    })
}

/// `interval * factor`.
pub fn interval_mul(iv: Interval, factor: f64) -> SqlResult<Interval> {
    if factor.is_nan() {
        return Err(interval_out_of_range());
    }
    interval_scale(iv, |x| x * factor)
}

/// `interval / divisor`.
pub fn interval_div(iv: Interval, divisor: f64) -> SqlResult<Interval> {
    if divisor == 0.0 {
        return Err(SqlError::division_by_zero());
    }
    if divisor.is_nan() {
        return Err(interval_out_of_range());
    }
    interval_scale(iv, |x| x / divisor)
}

/// Rounds seconds to microseconds (PostgreSQL's TSROUND).
fn ts_round(x: f64) -> f64 {
    (x * 1e6).round_ties_even() / 1e6
}

/// PostgreSQL's interval_mul and interval_div: each field scaled, the fraction of a
/// month carried into days (30 to a month) and of a day into time, rounded to
/// microseconds at each step as PostgreSQL does.
fn interval_scale(iv: Interval, scale: impl Fn(f64) -> f64) -> SqlResult<Interval> {
    let month_f = scale(iv.months as f64);
    let day_f = scale(iv.days as f64);
    let in_i32 = |x: f64| x.is_finite() && (i32::MIN as f64..=i32::MAX as f64).contains(&x);
    if !in_i32(month_f) || !in_i32(day_f) {
        return Err(interval_out_of_range());
    }
    let months = month_f.trunc() as i32;
    let mut days = day_f.trunc() as i32;
    let month_remainder_days = ts_round((month_f - months as f64) * 30.0);
    let mut sec_remainder =
        (day_f - days as f64 + month_remainder_days - month_remainder_days.trunc()) * 86_400.0;
    sec_remainder = ts_round(sec_remainder);
    if sec_remainder.abs() >= 86_400.0 {
        days += (sec_remainder / 86_400.0).trunc() as i32;
        sec_remainder -= (sec_remainder / 86_400.0).trunc() * 86_400.0;
    }
    days = days
        .checked_add(month_remainder_days.trunc() as i32)
        .ok_or_else(interval_out_of_range)?;
    let micros = (scale(iv.micros as f64) + sec_remainder * 1e6).round_ties_even();
    if !micros.is_finite() || micros.abs() >= 9.2e18 {
        return Err(interval_out_of_range());
    }
    Ok(Interval {
        months,
        days,
        micros: micros as i64,
    })
}

/// The fields of a timestamp: year, month, day, and microseconds of the day.
fn fields(t: i64) -> (i64, u32, u32, i64) {
    let (days, time) = (t.div_euclid(MICROS_PER_DAY), t.rem_euclid(MICROS_PER_DAY));
    let (y, m, d) = civil_from_days(days + UNIX_TO_POSTGRES_DAYS);
    (y, m, d, time)
}

fn unit_error(unit: &str, ty: &str) -> SqlError {
    SqlError::new(
        code::FEATURE_NOT_SUPPORTED,
        format!("unit \"{unit}\" not supported for type {ty}"),
    )
}

fn unknown_unit(unit: &str, ty: &str) -> SqlError {
    SqlError::new(
        code::INVALID_PARAMETER,
        format!("unit \"{unit}\" not recognized for type {ty}"),
    )
}

/// Normalizes a field name as PostgreSQL's units table does (plural and short forms).
fn canonical_unit(unit: &str) -> Option<&'static str> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" => "microseconds",
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => "milliseconds",
        "second" | "seconds" | "s" | "sec" | "secs" => "second",
        "minute" | "minutes" | "m" | "min" | "mins" => "minute",
        "hour" | "hours" | "h" | "hr" | "hrs" => "hour",
        "day" | "days" | "d" => "day",
        "week" | "weeks" | "w" => "week",
        "month" | "months" | "mon" | "mons" => "month",
        "quarter" | "qtr" => "quarter",
        "year" | "years" | "y" | "yr" | "yrs" => "year",
        "decade" | "decades" | "dec" | "decs" => "decade",
        "century" | "centuries" | "c" | "cent" => "century",
        "millennium" | "millennia" | "mil" | "mils" => "millennium",
        "dow" => "dow",
        "isodow" => "isodow",
        "doy" => "doy",
        "epoch" => "epoch",
        "isoyear" => "isoyear",
        "julian" => "julian",
        "timezone" => "timezone",
        "timezone_hour" => "timezone_hour",
        "timezone_minute" => "timezone_minute",
        _ => return None,
    })
}

/// ISO 8601 week-numbering year and week of a day count since 1970-01-01.
pub(crate) fn iso_week(days: i64) -> (i64, i64) {
    let (y, _, _) = civil_from_days(days);
    let week_start = |year: i64| {
        // The Monday of the week holding January 4th.
        let jan4 = days_from_civil(year, 1, 4);
        jan4 - (jan4 + 3).rem_euclid(7)
    };
    let mut year = y;
    if days < week_start(y) {
        year -= 1;
    } else if days >= week_start(y + 1) {
        year += 1;
    }
    (year, (days - week_start(year)) / 7 + 1)
}

/// A timestamp type's name in messages: with the zone (timestamptz) or without.
fn timestamp_type(zone: bool) -> &'static str {
    if zone {
        "timestamp with time zone"
    } else {
        "timestamp without time zone"
    }
}

/// `date_part(unit, timestamp)` (also `extract`): the field as a float8. `zone` says
/// the value is a timestamptz (its zone fields are 0: the session is in UTC).
pub fn timestamp_part(unit: &str, t: i64, zone: bool) -> SqlResult<Option<f64>> {
    let u = canonical_unit(unit).ok_or_else(|| unknown_unit(unit, timestamp_type(zone)))?;
    if is_infinite_ts(t) {
        let sign = if t > 0 { 1.0 } else { -1.0 };
        return Ok(match u {
            "epoch" | "year" | "decade" | "century" | "millennium" | "isoyear" | "julian" => {
                Some(sign * f64::INFINITY)
            }
            _ => None,
        });
    }
    let (y, m, d, time) = fields(t);
    let days = t.div_euclid(MICROS_PER_DAY) + UNIX_TO_POSTGRES_DAYS;
    let sec_micros = time % MICROS_PER_MINUTE;
    Ok(Some(match u {
        "microseconds" => sec_micros as f64,
        "milliseconds" => sec_micros as f64 / 1000.0,
        "second" => sec_micros as f64 / 1e6,
        "minute" => (time / MICROS_PER_MINUTE % 60) as f64,
        "hour" => (time / MICROS_PER_HOUR) as f64,
        "day" => d as f64,
        "month" => m as f64,
        "quarter" => ((m - 1) / 3 + 1) as f64,
        "week" => iso_week(days).1 as f64,
        "year" => (if y <= 0 { y - 1 } else { y }) as f64,
        "decade" => y.div_euclid(10) as f64,
        "century" => {
            (if y > 0 {
                (y + 99) / 100
            } else {
                -((99 - (y - 1)) / 100)
            }) as f64
        }
        "millennium" => {
            (if y > 0 {
                (y + 999) / 1000
            } else {
                -((999 - (y - 1)) / 1000)
            }) as f64
        }
        "dow" => (days + 4).rem_euclid(7) as f64,
        "isodow" => ((days + 3).rem_euclid(7) + 1) as f64,
        "doy" => (days - days_from_civil(y, 1, 1) + 1) as f64,
        "isoyear" => iso_week(days).0 as f64,
        "julian" => (days + 2_440_588) as f64 + time as f64 / MICROS_PER_DAY as f64,
        "epoch" => (t as f64) / 1e6 + (UNIX_TO_POSTGRES_DAYS * 86_400) as f64,
        "timezone" | "timezone_hour" | "timezone_minute" if zone => 0.0,
        _ => return Err(unit_error(unit, timestamp_type(zone))),
    }))
}

/// `date_part(unit, interval)`.
pub fn interval_part(unit: &str, iv: Interval) -> SqlResult<f64> {
    let u = canonical_unit(unit).ok_or_else(|| unknown_unit(unit, "interval"))?;
    let time = iv.micros;
    Ok(match u {
        "microseconds" => (time % MICROS_PER_MINUTE) as f64,
        "milliseconds" => (time % MICROS_PER_MINUTE) as f64 / 1000.0,
        "second" => (time % MICROS_PER_MINUTE) as f64 / 1e6,
        "minute" => (time / MICROS_PER_MINUTE % 60) as f64,
        "hour" => (time / MICROS_PER_HOUR) as f64,
        "day" => iv.days as f64,
        "month" => (iv.months % 12) as f64,
        "quarter" => ((iv.months % 12) / 3 + 1) as f64,
        "year" => (iv.months / 12) as f64,
        "decade" => (iv.months / 120) as f64,
        "century" => (iv.months / 1200) as f64,
        "millennium" => (iv.months / 12000) as f64,
        "epoch" => {
            let days_per_year = 365.25;
            (iv.months / 12) as f64 * days_per_year * 86_400.0
                + (iv.months % 12) as f64 * 30.0 * 86_400.0
                + iv.days as f64 * 86_400.0
                + time as f64 / 1e6
        }
        _ => return Err(unit_error(unit, "interval")),
    })
}

/// `date_trunc(unit, timestamp)`.
pub fn timestamp_trunc(unit: &str, t: i64, zone: bool) -> SqlResult<i64> {
    let u = canonical_unit(unit).ok_or_else(|| unknown_unit(unit, timestamp_type(zone)))?;
    if is_infinite_ts(t) {
        return Ok(t);
    }
    let (y, m, _, time) = fields(t);
    let day_start = t - time;
    let at = |y: i64, m: u32| pg_days(y, m, 1) * MICROS_PER_DAY;
    Ok(match u {
        "microseconds" => t,
        "milliseconds" => t - t.rem_euclid(1000),
        "second" => t - t.rem_euclid(MICROS_PER_SECOND),
        "minute" => t - t.rem_euclid(MICROS_PER_MINUTE),
        "hour" => t - t.rem_euclid(MICROS_PER_HOUR),
        "day" => day_start,
        "week" => {
            let days = t.div_euclid(MICROS_PER_DAY) + UNIX_TO_POSTGRES_DAYS;
            let monday = days - (days + 3).rem_euclid(7);
            (monday - UNIX_TO_POSTGRES_DAYS) * MICROS_PER_DAY
        }
        "month" => at(y, m),
        "quarter" => at(y, (m - 1) / 3 * 3 + 1),
        "year" => at(y, 1),
        "decade" => at(y.div_euclid(10) * 10, 1),
        "century" => {
            let c = if y > 0 {
                (y - 1) / 100 * 100 + 1
            } else {
                -((-y) / 100 * 100) - 99
            };
            at(c, 1)
        }
        "millennium" => {
            let c = if y > 0 {
                (y - 1) / 1000 * 1000 + 1
            } else {
                -((-y) / 1000 * 1000) - 999
            };
            at(c, 1)
        }
        _ => return Err(unit_error(unit, timestamp_type(zone))),
    })
}

/// `date_trunc(unit, interval)`.
pub fn interval_trunc(unit: &str, iv: Interval) -> SqlResult<Interval> {
    let u = canonical_unit(unit).ok_or_else(|| unknown_unit(unit, "interval"))?;
    let t = iv.micros;
    let keep_time = |step: i64| Interval {
        micros: t - t % step,
        ..iv
    };
    let whole_months = |step: i32| Interval {
        months: iv.months / step * step,
        days: 0,
        micros: 0,
    };
    Ok(match u {
        "microseconds" => iv,
        "milliseconds" => keep_time(1000),
        "second" => keep_time(MICROS_PER_SECOND),
        "minute" => keep_time(MICROS_PER_MINUTE),
        "hour" => keep_time(MICROS_PER_HOUR),
        "day" => Interval { micros: 0, ..iv },
        "month" => whole_months(1),
        "quarter" => whole_months(3),
        "year" => whole_months(12),
        "decade" => whole_months(120),
        "century" => whole_months(1200),
        "millennium" => whole_months(12000),
        _ => return Err(unit_error(unit, "interval")),
    })
}

/// The wall clock as a timestamptz: microseconds since 2000-01-01 UTC.
pub fn system_now_micros() -> i64 {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    unix - UNIX_TO_POSTGRES_DAYS * MICROS_PER_DAY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_postgres() {
        assert_eq!(parse_date("2000-01-02"), Ok(1));
        assert_eq!(parse_date("2024-02-30").unwrap_err().code, "22008");
        assert_eq!(parse_date("2024-x").unwrap_err().code, "22007");
        // A zone after a date without a time: ignored by date, midnight there for
        // timestamptz (pgjdbc's setDate sends its text so).
        assert_eq!(parse_date("2000-01-02 +00"), Ok(1));
        assert_eq!(parse_date("2000-01-02 -05:30"), Ok(1));
        assert_eq!(parse_date("2000-01-02 UTC"), Ok(1));
        assert_eq!(parse_date("2000-01-02 +x").unwrap_err().code, "22007");
        assert_eq!(parse_timestamp("2000-01-01 +02", false), Ok(0));
        assert_eq!(
            parse_timestamp("2000-01-01 +02", true),
            Ok(-2 * MICROS_PER_HOUR)
        );
        assert_eq!(
            parse_timestamp("2000-01-01T00:00:01.5", false),
            Ok(1_500_000)
        );
        assert_eq!(parse_timestamp("2000-01-01 02:00:00+02", true), Ok(0));
        assert_eq!(
            parse_timestamp("2000-01-01 02:00:00+02", false),
            Ok(2 * MICROS_PER_HOUR)
        );
        let iv = |s| parse_interval(s).unwrap();
        assert_eq!(
            iv("1 year 2 mons 3 days 04:05:06"),
            Interval {
                months: 14,
                days: 3,
                micros: 14_706_000_000
            }
        );
        assert_eq!(iv("-1 day").days, -1);
        assert_eq!(iv("1.5 months").days, 15);
        assert_eq!(iv("@ 2 hours ago").micros, -2 * MICROS_PER_HOUR);
        assert!(parse_interval("abc").is_err());
    }

    #[test]
    fn month_arithmetic_clamps_the_day() {
        let jan31 = parse_timestamp("2024-01-31", false).unwrap();
        let one_month = Interval {
            months: 1,
            days: 0,
            micros: 0,
        };
        let feb29 = parse_timestamp("2024-02-29", false).unwrap();
        assert_eq!(timestamp_add(jan31, one_month), Ok(feb29));
    }
}

#[cfg(test)]
mod hostile_input {
    use super::*;

    /// Text from users: any bytes, never a panic.
    #[test]
    fn odd_text_is_an_error_not_a_panic() {
        for s in [
            "",
            " ",
            "-",
            "2024-01-01 10:00+é1",
            "2024-01-01 10:00+éé",
            "2024-01-01T",
            "9999999999999-01-01",
            "2024-01-01 10:00:00.",
            "é",
            "1 é",
            "@",
            "ago",
            "1 ago ago",
            "--1 day",
            "1:2:3:4",
            "+",
            "1.2.3 days",
            "2024-01-01 bc",
            "0000-01-01",
            "2024-01-01 10:00:00+99",
        ] {
            let _ = parse_date(s);
            let _ = parse_timestamp(s, true);
            let _ = parse_timestamp(s, false);
            let _ = parse_interval(s);
            let _ = crate::bytea::parse(s);
            let _ = crate::bytea::parse(&format!("\\x{s}"));
        }
    }
}

/// The fields of a timestamp: year, month, day, hour, minute, second, microsecond.
fn tm(t: i64) -> [i64; 7] {
    let (y, m, d, time) = fields(t);
    [
        y,
        m as i64,
        d as i64,
        time / MICROS_PER_HOUR,
        time / MICROS_PER_MINUTE % 60,
        time / MICROS_PER_SECOND % 60,
        time % MICROS_PER_SECOND,
    ]
}

/// `age(a, b)`: PostgreSQL's symbolic difference, field by field (years, months, days,
/// time), borrowing from the next field up — days by the length of the earlier
/// timestamp's month.
pub fn age(a: i64, b: i64) -> SqlResult<Interval> {
    if is_infinite_ts(a) || is_infinite_ts(b) {
        return Err(interval_out_of_range());
    }
    let (t1, t2) = (tm(a), tm(b));
    let mut f: [i64; 7] = std::array::from_fn(|i| t1[i] - t2[i]);
    let flip = a < b;
    if flip {
        f.iter_mut().for_each(|x| *x = -*x);
    }
    // Index: 0 year, 1 month, 2 day, 3 hour, 4 minute, 5 second, 6 microsecond.
    let carry = |f: &mut [i64; 7], i: usize, span: i64| {
        while f[i] < 0 {
            f[i] += span;
            f[i - 1] -= 1;
        }
    };
    carry(&mut f, 6, MICROS_PER_SECOND);
    carry(&mut f, 5, 60);
    carry(&mut f, 4, 60);
    carry(&mut f, 3, 24);
    let month_of = if flip { t1 } else { t2 };
    while f[2] < 0 {
        f[2] += days_in_month(month_of[0], month_of[1] as u32) as i64;
        f[1] -= 1;
    }
    carry(&mut f, 1, 12);
    if flip {
        f.iter_mut().for_each(|x| *x = -*x);
    }
    let months = i32::try_from(f[0] * 12 + f[1]).map_err(|_| interval_out_of_range())?;
    Ok(Interval {
        months,
        days: f[2] as i32,
        micros: ((f[3] * 60 + f[4]) * 60 + f[5]) * MICROS_PER_SECOND + f[6],
    })
}

/// `justify_hours`: whole days of the time made days, signs made to agree.
pub fn justify_hours(iv: Interval) -> SqlResult<Interval> {
    let mut r = iv;
    r.days = r
        .days
        .checked_add((r.micros / MICROS_PER_DAY) as i32)
        .ok_or_else(interval_out_of_range)?;
    r.micros %= MICROS_PER_DAY;
    if r.days > 0 && r.micros < 0 {
        r.micros += MICROS_PER_DAY;
        r.days -= 1;
    } else if r.days < 0 && r.micros > 0 {
        r.micros -= MICROS_PER_DAY;
        r.days += 1;
    }
    Ok(r)
}

/// `justify_days`: whole 30-day months of the days made months, signs made to agree.
pub fn justify_days(iv: Interval) -> SqlResult<Interval> {
    let mut r = iv;
    r.months = r
        .months
        .checked_add(r.days / 30)
        .ok_or_else(interval_out_of_range)?;
    r.days %= 30;
    if r.days > 0 && r.months < 0 {
        r.days -= 30;
        r.months += 1;
    } else if r.days < 0 && r.months > 0 {
        r.days += 30;
        r.months -= 1;
    }
    Ok(r)
}

/// `justify_interval`: both justifications, the signs of all three fields made to agree
/// (PostgreSQL's interval_justify_interval).
pub fn justify_interval(iv: Interval) -> SqlResult<Interval> {
    let overflow = interval_out_of_range;
    let (mut month, mut day, mut time) = (iv.months as i64, iv.days as i64, iv.micros);
    if (day > 0 && time > 0) || (day < 0 && time < 0) {
        month += day / 30;
        day %= 30;
    }
    day += time / MICROS_PER_DAY;
    time %= MICROS_PER_DAY;
    month += day / 30;
    day %= 30;
    if month > 0 && (day < 0 || (day == 0 && time < 0)) {
        day += 30;
        month -= 1;
    } else if month < 0 && (day > 0 || (day == 0 && time > 0)) {
        day -= 30;
        month += 1;
    }
    if day > 0 && time < 0 {
        time += MICROS_PER_DAY;
        day -= 1;
    } else if day < 0 && time > 0 {
        time -= MICROS_PER_DAY;
        day += 1;
    }
    Ok(Interval {
        months: i32::try_from(month).map_err(|_| overflow())?,
        days: i32::try_from(day).map_err(|_| overflow())?,
        micros: time,
    })
}

/// `to_timestamp(seconds since 1970-01-01 UTC)`.
pub fn to_timestamp(seconds: f64) -> SqlResult<i64> {
    if seconds.is_nan() {
        return Err(SqlError::new(DATETIME_OVERFLOW, "timestamp cannot be NaN"));
    }
    if seconds.is_infinite() {
        return Ok(if seconds > 0.0 {
            TIMESTAMP_INFINITY
        } else {
            TIMESTAMP_NEG_INFINITY
        });
    }
    let micros = ((seconds - (UNIX_TO_POSTGRES_DAYS * 86_400) as f64) * 1e6).round_ties_even();
    if !(-9.2e18..9.2e18).contains(&micros) || !timestamp_in_range(micros as i64) {
        return Err(SqlError::new(
            DATETIME_OVERFLOW,
            format!(
                "timestamp out of range: \"{}\"",
                crate::value::float_text(seconds)
            ),
        ));
    }
    Ok(micros as i64)
}

/// `make_date(year, month, day)` (a negative year is BC).
pub fn make_date(year: i64, month: i64, day: i64) -> SqlResult<i32> {
    let bad = || {
        SqlError::new(
            DATETIME_OVERFLOW,
            format!("date field value out of range: {year}-{month:02}-{day:02}"),
        )
    };
    if year == 0 || !(1..=12).contains(&month) || day < 1 {
        return Err(bad());
    }
    let y = if year < 0 { year + 1 } else { year };
    if day > days_in_month(y, month as u32) as i64 {
        return Err(bad());
    }
    let days = pg_days(y, month as u32, day as u32);
    if !date_in_range(days) {
        return Err(date_out_of_range());
    }
    Ok(days as i32)
}
