//! The date and time functions: now, date_part/extract, date_trunc, age, justify_*,
//! to_timestamp, make_date, to_char.

use walden::Value;

use super::text::text_arg;
use super::Func;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::value::{self, as_i64};

/// The date and time functions (strict: the caller has answered a NULL argument).
pub(super) fn call(f: Func, args: &[Value], cx: &mut EvalCtx) -> SqlResult<Option<Value>> {
    let int = |i: usize| as_i64(&args[i]).unwrap_or(0);
    Ok(Some(match f {
        Func::Now => Value::Timestamptz(cx.now_micros),
        Func::LocalTimestamp => Value::Timestamp(cx.now_micros),
        Func::CurrentDate => Value::Date(crate::datetime::timestamp_to_date(cx.now_micros)),
        Func::DatePart | Func::Extract => {
            date_part(text_arg(&args[0]), &args[1], f == Func::Extract)?
        }
        Func::DateTrunc => date_trunc(text_arg(&args[0]), &args[1])?,
        Func::Age => match (&args[0], &args[1]) {
            (
                Value::Timestamp(a) | Value::Timestamptz(a),
                Value::Timestamp(b) | Value::Timestamptz(b),
            ) => Value::Interval(crate::datetime::age(*a, *b)?),
            _ => Value::Null,
        },
        Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval => match &args[0] {
            Value::Interval(iv) => Value::Interval(match f {
                Func::JustifyHours => crate::datetime::justify_hours(*iv)?,
                Func::JustifyDays => crate::datetime::justify_days(*iv)?,
                _ => crate::datetime::justify_interval(*iv)?,
            }),
            _ => Value::Null,
        },
        Func::ToTimestamp => Value::Timestamptz(crate::datetime::to_timestamp(
            value::as_f64(&args[0]).unwrap_or(0.0),
        )?),
        Func::MakeDate => Value::Date(crate::datetime::make_date(int(0), int(1), int(2))?),
        Func::ToChar => {
            let (t, zone) = match &args[0] {
                Value::Date(d) => (crate::datetime::date_to_timestamp(*d)?, false),
                Value::Timestamp(t) => (*t, false),
                Value::Timestamptz(t) => (*t, true),
                _ => return Ok(Some(Value::Null)),
            };
            crate::to_char::to_char(t, text_arg(&args[1]), zone).map_or(Value::Null, Value::Text)
        }
        _ => return Ok(None),
    }))
}

/// date_part / extract of a date (as its midnight), timestamp, timestamptz or interval.
fn date_part(unit: &str, v: &Value, extract: bool) -> SqlResult<Value> {
    use crate::datetime as dt;
    let x = match v {
        Value::Date(d) => {
            let u = unit.to_ascii_lowercase();
            // A date has no time of day: PostgreSQL's extract refuses its time fields
            // (date_part takes the date as a timestamp).
            if extract
                && matches!(
                    u.as_str(),
                    "hour" | "minute" | "second" | "milliseconds" | "microseconds" | "timezone"
                )
            {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    format!("unit \"{unit}\" not supported for type date"),
                ));
            }
            dt::timestamp_part(unit, dt::date_to_timestamp(*d)?, false)?
        }
        Value::Timestamp(t) => dt::timestamp_part(unit, *t, false)?,
        Value::Timestamptz(t) => dt::timestamp_part(unit, *t, true)?,
        Value::Interval(iv) => Some(dt::interval_part(unit, *iv)?),
        _ => None,
    };
    Ok(x.map_or(Value::Null, Value::Float8))
}

fn date_trunc(unit: &str, v: &Value) -> SqlResult<Value> {
    use crate::datetime as dt;
    Ok(match v {
        Value::Date(d) => {
            Value::Timestamptz(dt::timestamp_trunc(unit, dt::date_to_timestamp(*d)?, true)?)
        }
        Value::Timestamp(t) => Value::Timestamp(dt::timestamp_trunc(unit, *t, false)?),
        Value::Timestamptz(t) => Value::Timestamptz(dt::timestamp_trunc(unit, *t, true)?),
        Value::Interval(iv) => Value::Interval(dt::interval_trunc(unit, *iv)?),
        _ => Value::Null,
    })
}
