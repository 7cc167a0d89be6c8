//! PostgreSQL's date, timestamp, timestamptz and interval: their text input, their
//! arithmetic, `extract`/`date_part` and `date_trunc`. The stored forms and the text
//! output live in the engine (`walden::calendar`); the session time zone is UTC.

mod functions;
mod parse;
mod parts;

use walden::calendar::{
    civil_from_days, days_from_civil, Interval, DATE_INFINITY, DATE_NEG_INFINITY, MICROS_PER_DAY,
    TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, UNIX_TO_POSTGRES_DAYS,
};

use crate::error::{clip, SqlError, SqlResult};

pub use functions::{age, justify_days, justify_hours, justify_interval, make_date, to_timestamp};
pub use parse::{parse_date, parse_interval, parse_timestamp};
pub(crate) use parts::iso_week;
pub use parts::{interval_part, interval_trunc, timestamp_part, timestamp_trunc};

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

/// The wall clock as a timestamptz: microseconds since 2000-01-01 UTC.
pub fn system_now_micros() -> i64 {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    unix - UNIX_TO_POSTGRES_DAYS * MICROS_PER_DAY
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod hostile_input;
