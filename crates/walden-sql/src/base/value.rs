//! Operations on values with PostgreSQL's semantics: arithmetic with overflow checks,
//! three-valued comparison, casts, and the text forms of values.

use std::cmp::Ordering;

use walden::calendar::{DATE_INFINITY, DATE_NEG_INFINITY, MICROS_PER_DAY};
use walden::numeric::NumericError;
use walden::{Numeric, Value};

use crate::datetime;
use crate::error::{clip, code, SqlError, SqlResult};
use crate::types::{DeclaredType, SqlType};

pub fn type_of(v: &Value) -> SqlType {
    match v {
        Value::Null => SqlType::Null,
        Value::Int2(_) => SqlType::Int2,
        Value::Int4(_) => SqlType::Int4,
        Value::Int8(_) => SqlType::Int8,
        Value::Float8(_) => SqlType::Float8,
        Value::Bool(_) => SqlType::Bool,
        Value::Text(_) => SqlType::Text,
        Value::Uuid(_) => SqlType::Uuid,
        Value::Date(_) => SqlType::Date,
        Value::Timestamp(_) => SqlType::Timestamp,
        Value::Timestamptz(_) => SqlType::Timestamptz,
        Value::Interval(_) => SqlType::Interval,
        Value::Bytea(_) => SqlType::Bytea,
        Value::Numeric(_) => SqlType::Numeric,
        Value::Jsonb(_) => SqlType::Jsonb,
    }
}

/// A date, timestamp or timestamptz as microseconds since 2000-01-01 (a date at its
/// midnight; the infinities beyond every finite value), for comparing across the three.
pub fn instant_micros(v: &Value) -> Option<i128> {
    Some(match v {
        Value::Date(DATE_INFINITY) => i128::MAX,
        Value::Date(DATE_NEG_INFINITY) => i128::MIN,
        Value::Date(d) => *d as i128 * MICROS_PER_DAY as i128,
        Value::Timestamp(i64::MAX) | Value::Timestamptz(i64::MAX) => i128::MAX,
        Value::Timestamp(i64::MIN) | Value::Timestamptz(i64::MIN) => i128::MIN,
        Value::Timestamp(t) | Value::Timestamptz(t) => *t as i128,
        _ => return None,
    })
}

pub fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Int2(x) => Some(*x as i64),
        Value::Int4(x) => Some(*x as i64),
        Value::Int8(x) => Some(*x),
        _ => None,
    }
}

pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Float8(x) => Some(*x),
        Value::Numeric(n) => Some(n.to_f64()),
        _ => as_i64(v).map(|x| x as f64),
    }
}

/// An integer or numeric as a numeric.
pub fn as_numeric(v: &Value) -> Option<Numeric> {
    match v {
        Value::Numeric(n) => Some(*n),
        _ => as_i64(v).map(Numeric::from_i64),
    }
}

/// PostgreSQL's error for a numeric operation that gave no value.
pub fn numeric_error(e: NumericError) -> SqlError {
    match e {
        NumericError::DivisionByZero => SqlError::division_by_zero(),
        NumericError::Overflow => {
            SqlError::new(code::NUMERIC_OUT_OF_RANGE, "value overflows numeric format")
        }
        NumericError::Invalid => SqlError::new(code::INVALID_TEXT, "invalid numeric value"),
        NumericError::NotFinite => {
            SqlError::unsupported("numeric NaN and infinity (only finite numerics are held)")
        }
    }
}

/// An integer as a value of an integer type, or "out of range".
pub fn int_value(x: i64, ty: SqlType) -> SqlResult<Value> {
    match ty {
        SqlType::Int2 => i16::try_from(x)
            .map(Value::Int2)
            .map_err(|_| SqlError::out_of_range("smallint")),
        SqlType::Int4 => i32::try_from(x)
            .map(Value::Int4)
            .map_err(|_| SqlError::out_of_range("integer")),
        SqlType::Float8 => Ok(Value::Float8(x as f64)),
        SqlType::Numeric => Ok(Value::Numeric(Numeric::from_i64(x))),
        _ => Ok(Value::Int8(x)),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl ArithOp {
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Mod => "%",
        }
    }
}

/// `a op b` where the result type (the wider operand type) was fixed when binding.
pub fn arith(op: ArithOp, a: &Value, b: &Value, ty: SqlType) -> SqlResult<Value> {
    if matches!(a, Value::Null) || matches!(b, Value::Null) {
        return Ok(Value::Null);
    }
    let temporal = |v: &Value| {
        matches!(
            v,
            Value::Date(_) | Value::Timestamp(_) | Value::Timestamptz(_) | Value::Interval(_)
        )
    };
    if temporal(a) || temporal(b) {
        return datetime_arith(op, a, b);
    }
    if ty == SqlType::Numeric {
        return numeric_arith(op, a, b);
    }
    if ty.is_float() {
        let (x, y) = (num_f64(a)?, num_f64(b)?);
        let r = match op {
            ArithOp::Add => x + y,
            ArithOp::Sub => x - y,
            ArithOp::Mul => x * y,
            ArithOp::Div | ArithOp::Mod if y == 0.0 => return Err(SqlError::division_by_zero()),
            ArithOp::Div => x / y,
            ArithOp::Mod => x % y,
        };
        if r.is_infinite() && x.is_finite() && y.is_finite() {
            return Err(float_overflow());
        }
        // PostgreSQL's float8 multiplication and division refuse a result that
        // underflowed to zero from nonzero operands.
        let underflow = match op {
            ArithOp::Mul => x != 0.0 && y != 0.0,
            ArithOp::Div => x != 0.0 && y.is_finite(),
            _ => false,
        };
        if r == 0.0 && underflow {
            return Err(SqlError::new(
                code::NUMERIC_OUT_OF_RANGE,
                "value out of range: underflow",
            ));
        }
        return Ok(Value::Float8(r));
    }
    let (x, y) = (num_i64(a)?, num_i64(b)?);
    let r = match op {
        ArithOp::Add => x.checked_add(y),
        ArithOp::Sub => x.checked_sub(y),
        ArithOp::Mul => x.checked_mul(y),
        ArithOp::Div | ArithOp::Mod if y == 0 => return Err(SqlError::division_by_zero()),
        ArithOp::Div => x.checked_div(y),
        ArithOp::Mod => Some(x.checked_rem(y).unwrap_or(0)),
    };
    match r {
        Some(r) => int_value(r, ty),
        None => Err(SqlError::out_of_range(ty.name())),
    }
}

/// `a op b` on numerics (an integer operand taken as one), at PostgreSQL's result
/// scales: the larger for + − %, the sum for ×, [`Numeric::div_scale`] for ÷.
fn numeric_arith(op: ArithOp, a: &Value, b: &Value) -> SqlResult<Value> {
    let not_numeric = || {
        SqlError::new(
            code::INTERNAL,
            format!("{a} {} {b} is not numeric", op.symbol()),
        )
    };
    let (x, y) = (
        as_numeric(a).ok_or_else(not_numeric)?,
        as_numeric(b).ok_or_else(not_numeric)?,
    );
    let r = match op {
        ArithOp::Add => x.checked_add(y),
        ArithOp::Sub => x.checked_sub(y),
        ArithOp::Mul => x.checked_mul(y),
        ArithOp::Div => x.checked_div(y),
        ArithOp::Mod => x.checked_rem(y),
    };
    r.map(Value::Numeric).map_err(numeric_error)
}

/// The result type of `a op b` when an operand is a date, timestamp or interval (None:
/// no such operator). A NULL operand takes the type the operator needs.
pub fn datetime_arith_type(op: ArithOp, a: SqlType, b: SqlType) -> Option<SqlType> {
    use ArithOp::*;
    use SqlType as T;
    let num = |t: T| t.is_numeric() || t == T::Null;
    let int = |t: T| t.is_integer() || t == T::Null;
    Some(match (op, a, b) {
        (Add, T::Date, t) | (Add, t, T::Date) if int(t) => T::Date,
        (Sub, T::Date, t) if int(t) => T::Date,
        (Sub, T::Date, T::Date) => T::Int4,
        (Add, T::Date, T::Interval) | (Add, T::Interval, T::Date) | (Sub, T::Date, T::Interval) => {
            T::Timestamp
        }
        (Add, ts @ (T::Timestamp | T::Timestamptz), T::Interval | T::Null)
        | (Add, T::Interval | T::Null, ts @ (T::Timestamp | T::Timestamptz))
        | (Sub, ts @ (T::Timestamp | T::Timestamptz), T::Interval) => ts,
        (Sub, T::Timestamp, T::Timestamp) | (Sub, T::Timestamptz, T::Timestamptz) => T::Interval,
        // A date meeting a timestamp is taken as its midnight.
        (Sub, T::Date, T::Timestamp | T::Timestamptz)
        | (Sub, T::Timestamp | T::Timestamptz, T::Date) => T::Interval,
        (Add | Sub, T::Interval, T::Interval | T::Null) | (Add | Sub, T::Null, T::Interval) => {
            T::Interval
        }
        (Mul, T::Interval, t) | (Mul, t, T::Interval) | (Div, T::Interval, t) if num(t) => {
            T::Interval
        }
        _ => return None,
    })
}

/// Arithmetic on dates, timestamps and intervals (the operand types were checked when
/// binding, by [`datetime_arith_type`]).
fn datetime_arith(op: ArithOp, a: &Value, b: &Value) -> SqlResult<Value> {
    use ArithOp::*;
    use Value as V;
    Ok(match (op, a, b) {
        (Add, V::Date(d), n) | (Add, n, V::Date(d)) if as_i64(n).is_some() => {
            V::Date(datetime::date_add_days(*d, as_i64(n).unwrap_or(0))?)
        }
        (Sub, V::Date(d), n) if as_i64(n).is_some() => V::Date(datetime::date_add_days(
            *d,
            as_i64(n).unwrap_or(0).checked_neg().unwrap_or(i64::MAX),
        )?),
        (Sub, V::Date(x), V::Date(y)) => V::Int4(datetime::date_diff(*x, *y)?),
        (Add, V::Date(d), V::Interval(iv)) | (Add, V::Interval(iv), V::Date(d)) => V::Timestamp(
            datetime::timestamp_add(datetime::date_to_timestamp(*d)?, *iv)?,
        ),
        (Sub, V::Date(d), V::Interval(iv)) => V::Timestamp(datetime::timestamp_add(
            datetime::date_to_timestamp(*d)?,
            datetime::negate_interval(*iv)?,
        )?),
        (Add, V::Timestamp(t), V::Interval(iv)) | (Add, V::Interval(iv), V::Timestamp(t)) => {
            V::Timestamp(datetime::timestamp_add(*t, *iv)?)
        }
        (Add, V::Timestamptz(t), V::Interval(iv)) | (Add, V::Interval(iv), V::Timestamptz(t)) => {
            V::Timestamptz(datetime::timestamp_add(*t, *iv)?)
        }
        (Sub, V::Timestamp(t), V::Interval(iv)) => V::Timestamp(datetime::timestamp_add(
            *t,
            datetime::negate_interval(*iv)?,
        )?),
        (Sub, V::Timestamptz(t), V::Interval(iv)) => V::Timestamptz(datetime::timestamp_add(
            *t,
            datetime::negate_interval(*iv)?,
        )?),
        (Sub, V::Timestamp(x), V::Timestamp(y)) | (Sub, V::Timestamptz(x), V::Timestamptz(y)) => {
            V::Interval(datetime::timestamp_diff(*x, *y)?)
        }
        (Sub, V::Date(d), V::Timestamp(t) | V::Timestamptz(t)) => V::Interval(
            datetime::timestamp_diff(datetime::date_to_timestamp(*d)?, *t)?,
        ),
        (Sub, V::Timestamp(t) | V::Timestamptz(t), V::Date(d)) => V::Interval(
            datetime::timestamp_diff(*t, datetime::date_to_timestamp(*d)?)?,
        ),
        (Add, V::Interval(x), V::Interval(y)) => V::Interval(datetime::interval_add(*x, *y)?),
        (Sub, V::Interval(x), V::Interval(y)) => {
            V::Interval(datetime::interval_add(*x, datetime::negate_interval(*y)?)?)
        }
        (Mul, V::Interval(iv), n) | (Mul, n, V::Interval(iv)) if as_f64(n).is_some() => {
            V::Interval(datetime::interval_mul(*iv, as_f64(n).unwrap_or(0.0))?)
        }
        (Div, V::Interval(iv), n) if as_f64(n).is_some() => {
            V::Interval(datetime::interval_div(*iv, as_f64(n).unwrap_or(0.0))?)
        }
        _ => {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {} {}",
                    type_of(a).name(),
                    op.symbol(),
                    type_of(b).name()
                ),
            ))
        }
    })
}

/// PostgreSQL's error for float8 arithmetic that overflowed to an infinity.
pub fn float_overflow() -> SqlError {
    SqlError::new(code::NUMERIC_OUT_OF_RANGE, "value out of range: overflow")
}

fn num_i64(v: &Value) -> SqlResult<i64> {
    as_i64(v).ok_or_else(|| SqlError::new(code::INTERNAL, format!("{v} is not an integer")))
}

fn num_f64(v: &Value) -> SqlResult<f64> {
    as_f64(v).ok_or_else(|| SqlError::new(code::INTERNAL, format!("{v} is not a number")))
}

pub fn negate(v: &Value) -> SqlResult<Value> {
    Ok(match v {
        Value::Null => Value::Null,
        Value::Int2(x) => Value::Int2(x.checked_neg().ok_or(SqlError::out_of_range("smallint"))?),
        Value::Int4(x) => Value::Int4(x.checked_neg().ok_or(SqlError::out_of_range("integer"))?),
        Value::Int8(x) => Value::Int8(x.checked_neg().ok_or(SqlError::out_of_range("bigint"))?),
        Value::Float8(x) => Value::Float8(-x),
        Value::Numeric(n) => Value::Numeric(n.negated()),
        Value::Interval(iv) => Value::Interval(datetime::negate_interval(*iv)?),
        other => {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("operator does not exist: - {}", type_of(other).name()),
            ))
        }
    })
}

/// Compares two non-null values of comparable types; None if either is NULL.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Text(x), Value::Text(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Uuid(x), Value::Uuid(y)) => Some(x.cmp(y)),
        (Value::Bytea(x), Value::Bytea(y)) => Some(x.cmp(y)),
        (Value::Jsonb(x), Value::Jsonb(y)) => Some(walden::jsonb::compare(x, y)),
        (Value::Interval(x), Value::Interval(y)) => Some(x.span_micros().cmp(&y.span_micros())),
        (Value::Date(_) | Value::Timestamp(_) | Value::Timestamptz(_), _) => {
            Some(instant_micros(a)?.cmp(&instant_micros(b)?))
        }
        (Value::Float8(_), _) | (_, Value::Float8(_)) => {
            let (x, y) = (as_f64(a)?, as_f64(b)?);
            // PostgreSQL orders NaN above every other value and equal to itself.
            Some(match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            })
        }
        (Value::Numeric(_), _) | (_, Value::Numeric(_)) => {
            Some(as_numeric(a)?.cmp(&as_numeric(b)?))
        }
        _ => Some(as_i64(a)?.cmp(&as_i64(b)?)),
    }
}

/// A total order for ORDER BY: NULL sorts after every value (as PostgreSQL's default
/// for ascending order).
pub fn sort_cmp(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Greater,
        (_, Value::Null) => Ordering::Less,
        _ => compare(a, b).unwrap_or(Ordering::Equal),
    }
}

/// PostgreSQL's text output of a float8 (shortest exact digits; exponent form below 1e-4
/// and from 1e15).
pub fn float_text(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..15).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{x}")
    }
}

/// The text form of a value, as `::text` gives it.
pub fn to_text(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        Value::Float8(x) => float_text(*x),
        Value::Text(s) => s.clone(),
        other => other.to_string(),
    })
}

/// The text a result cell shows (psql's display: booleans as t/f, NULL as empty).
pub fn display(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => if *b { "t" } else { "f" }.into(),
        Value::Float8(x) => float_text(*x),
        other => other.to_string(),
    }
}

fn invalid(ty: SqlType, s: &str) -> SqlError {
    SqlError::new(
        code::INVALID_TEXT,
        format!(
            "invalid input syntax for type {}: \"{}\"",
            ty.name(),
            clip(s)
        ),
    )
}

fn int_out_of_range(ty: SqlType, s: &str) -> SqlError {
    SqlError::new(
        code::NUMERIC_OUT_OF_RANGE,
        format!(
            "value \"{}\" is out of range for type {}",
            clip(s),
            ty.name()
        ),
    )
}

/// Refuses, as PostgreSQL's float8 input does, a number `text` that a float8 cannot
/// hold: beyond its range (parsed as an infinity), or so small that it became 0.
pub fn check_float_range(x: f64, text: &str) -> SqlResult<()> {
    let mantissa = text.split(['e', 'E']).next().unwrap_or("");
    let underflow = x == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    if x.is_infinite() || underflow {
        return Err(SqlError::new(
            code::NUMERIC_OUT_OF_RANGE,
            format!(
                "\"{}\" is out of range for type double precision",
                clip(text.trim())
            ),
        ));
    }
    Ok(())
}

/// Parses text into a value of `ty`, as PostgreSQL's input functions do.
pub fn parse_text(s: &str, ty: SqlType) -> SqlResult<Value> {
    let t = s.trim();
    match ty {
        SqlType::Record(_) => Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            "input of anonymous composite types is not implemented",
        )),
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => {
            let x: i64 = t.parse().map_err(|_| {
                if !t.is_empty()
                    && t.bytes()
                        .all(|b| b.is_ascii_digit() || b == b'-' || b == b'+')
                {
                    int_out_of_range(ty, s)
                } else {
                    invalid(ty, s)
                }
            })?;
            int_value(x, ty).map_err(|_| int_out_of_range(ty, s))
        }
        SqlType::Numeric => Numeric::parse(t).map(Value::Numeric).map_err(|e| match e {
            NumericError::Invalid => invalid(ty, s),
            other => numeric_error(other),
        }),
        SqlType::Float8 => {
            let lower = t.to_ascii_lowercase();
            let x = match lower.as_str() {
                "nan" => f64::NAN,
                "infinity" | "+infinity" | "inf" => f64::INFINITY,
                "-infinity" | "-inf" => f64::NEG_INFINITY,
                _ if lower.contains("inf") || lower.contains("nan") => return Err(invalid(ty, s)),
                _ => {
                    let x = t.parse().map_err(|_| invalid(ty, s))?;
                    check_float_range(x, t)?;
                    x
                }
            };
            Ok(Value::Float8(x))
        }
        SqlType::Bool => match t.to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => Ok(Value::Bool(true)),
            "f" | "false" | "n" | "no" | "off" | "0" => Ok(Value::Bool(false)),
            _ => Err(invalid(ty, s)),
        },
        SqlType::Uuid => parse_uuid(t).ok_or_else(|| invalid(ty, s)),
        SqlType::Date => Ok(Value::Date(datetime::parse_date(s)?)),
        SqlType::Timestamp => Ok(Value::Timestamp(datetime::parse_timestamp(s, false)?)),
        SqlType::Timestamptz => Ok(Value::Timestamptz(datetime::parse_timestamp(s, true)?)),
        SqlType::Interval => Ok(Value::Interval(datetime::parse_interval(s)?)),
        SqlType::Bytea => Ok(Value::Bytea(crate::bytea::parse(s)?)),
        SqlType::Jsonb => Ok(crate::jsonb::value(crate::jsonb::parse(s)?)),
        SqlType::Text | SqlType::Bpchar | SqlType::Null => Ok(Value::Text(s.to_string())),
    }
}

fn parse_uuid(s: &str) -> Option<Value> {
    let inner = s
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .unwrap_or(s);
    let hex: Vec<u8> = inner.bytes().filter(|&b| b != b'-').collect();
    if hex.len() != 32 || inner.starts_with('-') || inner.ends_with('-') {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(Value::Uuid(out))
}

/// Converts a value to a type. `explicit` is a CAST or `::` (which may truncate strings
/// to `varchar(n)`); otherwise it is an assignment to a column (which may not).
pub fn cast(v: Value, to: &DeclaredType, explicit: bool) -> SqlResult<Value> {
    let from = type_of(&v);
    cast_from(v, from, to, explicit)
}

/// [`cast`] of a value of SQL type `from` (the type of its representation, or NULL's
/// type).
pub fn cast_from(v: Value, from: SqlType, to: &DeclaredType, explicit: bool) -> SqlResult<Value> {
    let out = match (v, to.ty) {
        (Value::Null, _) => return Ok(Value::Null),
        // A bpchar loses its trailing blanks where it becomes text, as PostgreSQL's
        // rtrim cast does; text (and a bpchar) becomes bpchar as it is, padded below.
        (Value::Text(s), SqlType::Text) if from == SqlType::Bpchar => {
            Value::Text(s.trim_end_matches(' ').to_string())
        }
        (v @ Value::Text(_), SqlType::Bpchar) => v,
        (v, SqlType::Bpchar) => Value::Text(to_text(&v).unwrap_or_default()),
        (v, t) if type_of(&v) == t => v,
        (v, SqlType::Text) => Value::Text(to_text(&v).unwrap_or_default()),
        (Value::Text(s), t) => parse_text(&s, t)?,
        (Value::Jsonb(j), t) => crate::jsonb::cast_to(&j, t)?,
        (v, t) if type_of(&v).is_integer() && t.is_numeric() => {
            int_value(as_i64(&v).unwrap_or(0), t)?
        }
        (Value::Float8(x), SqlType::Numeric) => {
            Value::Numeric(Numeric::from_f64(x).map_err(numeric_error)?)
        }
        // PostgreSQL rounds a numeric's halves away from zero.
        (Value::Numeric(n), t) if t.is_integer() => {
            let x = n.to_i64().ok_or_else(|| SqlError::out_of_range(t.name()))?;
            int_value(x, t)?
        }
        (Value::Numeric(n), SqlType::Float8) => Value::Float8(n.to_f64()),
        (Value::Float8(x), t) if t.is_integer() => {
            // A float8's halves round to even.
            let r = x.round_ties_even();
            if !r.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
                return Err(SqlError::out_of_range(t.name()));
            }
            int_value(r as i64, t)?
        }
        (Value::Date(d), SqlType::Timestamp) => Value::Timestamp(datetime::date_to_timestamp(d)?),
        (Value::Date(d), SqlType::Timestamptz) => {
            Value::Timestamptz(datetime::date_to_timestamp(d)?)
        }
        (Value::Timestamp(t) | Value::Timestamptz(t), SqlType::Date) => {
            Value::Date(datetime::timestamp_to_date(t))
        }
        // The session's time zone is UTC: the same microseconds either way.
        (Value::Timestamp(t), SqlType::Timestamptz) => Value::Timestamptz(t),
        (Value::Timestamptz(t), SqlType::Timestamp) => Value::Timestamp(t),
        (Value::Int4(x), SqlType::Bool) => Value::Bool(x != 0),
        (Value::Bool(b), SqlType::Int4) => Value::Int4(b as i32),
        (_, t) => {
            // An explicit cast that does not exist is PostgreSQL's cannot_coerce; an
            // assignment of the wrong type stays a datatype mismatch.
            let code = if explicit {
                code::CANNOT_COERCE
            } else {
                code::DATATYPE_MISMATCH
            };
            return Err(SqlError::new(
                code,
                format!("cannot cast type {} to {}", from.name(), t.name()),
            ));
        }
    };
    fit_numeric(fit_chars(out, to, explicit)?, to)
}

/// Applies `numeric(p,s)`: the value rounded to the scale, which must leave it below
/// 10^(p-s) (22003 with PostgreSQL's message and detail otherwise).
pub fn fit_numeric(v: Value, to: &DeclaredType) -> SqlResult<Value> {
    let (Value::Numeric(n), Some((precision, scale))) = (&v, to.numeric_precision_scale()) else {
        return Ok(v);
    };
    match n.fit(precision, scale) {
        Ok(fitted) => Ok(Value::Numeric(fitted)),
        Err(NumericError::Overflow) if n.round(scale).is_ok() => {
            let max = precision - scale;
            let bound = if max == 0 {
                "1".to_string()
            } else {
                format!("10^{max}")
            };
            Err(SqlError::new(code::NUMERIC_OUT_OF_RANGE, "numeric field overflow").with_detail(
                format!(
                    "A field with precision {precision}, scale {scale} must round to an absolute value less than {bound}."
                ),
            ))
        }
        Err(e) => Err(numeric_error(e)),
    }
}

/// Applies `varchar(n)` / `char(n)`: too long is an error on assignment (unless the excess
/// is spaces) and a truncation on an explicit cast; `char(n)` is padded with spaces.
pub fn fit_chars(v: Value, to: &DeclaredType, explicit: bool) -> SqlResult<Value> {
    let (Value::Text(s), Some(max)) = (&v, to.max_chars) else {
        return Ok(v);
    };
    let max = max as usize;
    let count = s.chars().count();
    if count > max {
        let cut: String = s.chars().take(max).collect();
        let rest_is_spaces = s.chars().skip(max).all(|c| c == ' ');
        if !explicit && !rest_is_spaces {
            let name = if to.blank_padded {
                "character"
            } else {
                "character varying"
            };
            return Err(SqlError::new(
                code::STRING_TOO_LONG,
                format!("value too long for type {name}({max})"),
            ));
        }
        return Ok(Value::Text(cut));
    }
    if to.blank_padded && count < max {
        let Value::Text(mut padded) = v else {
            return Ok(v);
        };
        // Spaces a run at a time (a char(84) filler is padded for each of millions of
        // rows that pgbench -i sends).
        const SPACES: &str = "                                                                ";
        let mut left = max - count;
        padded.reserve(left);
        while left > 0 {
            let n = left.min(SPACES.len());
            padded.push_str(&SPACES[..n]);
            left -= n;
        }
        return Ok(Value::Text(padded));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_text_matches_postgres() {
        assert_eq!(float_text(1.5), "1.5");
        assert_eq!(float_text(0.1), "0.1");
        assert_eq!(float_text(1e15), "1e+15");
        assert_eq!(float_text(123456789012345.0), "123456789012345");
        assert_eq!(float_text(0.0001), "0.0001");
        assert_eq!(float_text(0.00001), "1e-05");
        assert_eq!(float_text(-2.0), "-2");
    }

    #[test]
    fn integer_overflow_and_division() {
        let e = arith(
            ArithOp::Add,
            &Value::Int4(i32::MAX),
            &Value::Int4(1),
            SqlType::Int4,
        );
        assert_eq!(e.unwrap_err().message, "integer out of range");
        let e = arith(
            ArithOp::Div,
            &Value::Int4(1),
            &Value::Int4(0),
            SqlType::Int4,
        );
        assert_eq!(e.unwrap_err().code, code::DIVISION_BY_ZERO);
        assert_eq!(
            arith(
                ArithOp::Div,
                &Value::Int4(-7),
                &Value::Int4(2),
                SqlType::Int4
            ),
            Ok(Value::Int4(-3))
        );
        assert_eq!(
            arith(
                ArithOp::Mod,
                &Value::Int4(-7),
                &Value::Int4(2),
                SqlType::Int4
            ),
            Ok(Value::Int4(-1))
        );
    }

    #[test]
    fn casts() {
        let int = DeclaredType::plain(SqlType::Int4);
        assert_eq!(
            cast(Value::Text(" 42 ".into()), &int, true),
            Ok(Value::Int4(42))
        );
        assert_eq!(
            cast(Value::Text("4x".into()), &int, true)
                .unwrap_err()
                .message,
            "invalid input syntax for type integer: \"4x\""
        );
        assert_eq!(cast(Value::Float8(2.5), &int, true), Ok(Value::Int4(2)));
        let vc = DeclaredType {
            max_chars: Some(3),
            ..DeclaredType::plain(SqlType::Text)
        };
        assert_eq!(
            cast(Value::Text("abcd".into()), &vc, true),
            Ok(Value::Text("abc".into()))
        );
        assert_eq!(
            cast(Value::Text("abcd".into()), &vc, false)
                .unwrap_err()
                .code,
            code::STRING_TOO_LONG
        );
        let ch = DeclaredType {
            blank_padded: true,
            ..vc
        };
        assert_eq!(
            cast(Value::Text("a".into()), &ch, false),
            Ok(Value::Text("a  ".into()))
        );
        let uuid = DeclaredType::plain(SqlType::Uuid);
        let u = cast(
            Value::Text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".into()),
            &uuid,
            true,
        )
        .unwrap();
        assert_eq!(u.to_string(), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    }
}
