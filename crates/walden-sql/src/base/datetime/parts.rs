//! Fields of dates, timestamps and intervals: `extract`/`date_part` and `date_trunc`.

use walden::calendar::{
    civil_from_days, days_from_civil, Interval, MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE,
    MICROS_PER_SECOND, UNIX_TO_POSTGRES_DAYS,
};

use super::{is_infinite_ts, pg_days};
use crate::error::{code, SqlError, SqlResult};

/// The fields of a timestamp: year, month, day, and microseconds of the day.
pub(super) fn fields(t: i64) -> (i64, u32, u32, i64) {
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
