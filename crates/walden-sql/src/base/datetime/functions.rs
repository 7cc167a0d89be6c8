//! The date/time functions that compute new values: `age`, `justify_*`,
//! `to_timestamp`, `make_date`.

use walden::calendar::{
    Interval, MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE, MICROS_PER_SECOND,
    TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, UNIX_TO_POSTGRES_DAYS,
};

use super::parts::fields;
use super::{
    date_in_range, date_out_of_range, days_in_month, interval_out_of_range, is_infinite_ts,
    pg_days, timestamp_in_range, DATETIME_OVERFLOW,
};
use crate::error::{SqlError, SqlResult};

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
