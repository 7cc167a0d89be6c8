//! Aggregate accumulators (`Acc`): count, sum, avg, min/max, string_agg, bool_and/or,
//! jsonb_agg and jsonb_object_agg, with DISTINCT and ORDER BY inside the call.

use std::cmp::Ordering;
use std::collections::HashSet;

use walden::{Numeric, Value};

use crate::bind::{AggCall, AggFunc};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::guard::row_bytes;
use crate::sort_key::{compare_keys, norm_key};
use crate::types::SqlType;
use crate::value::{self, as_f64, as_i64, sort_cmp};

#[derive(Clone)]
pub(crate) enum Acc {
    Count(i64),
    /// A sum of integers so far; true: the result is a numeric (sum of bigint).
    SumInt(Option<i128>, bool),
    SumFloat(Option<f64>),
    SumNumeric(Option<Numeric>),
    MinMax(Option<Value>, bool),
    /// avg: the sum so far (float8 for a float8 argument, else exact) and the count.
    AvgFloat(f64, i64),
    AvgNumeric(Numeric, i64),
    /// sum (false) or avg (true) of intervals: the sum so far and the count.
    Interval(Option<walden::Interval>, bool, i64),
    Text(Option<String>),
    /// bool_and (true) or bool_or (false) so far.
    Bool(Option<bool>, bool),
    /// jsonb_agg: the elements so far.
    JsonArray(Vec<walden::Json>),
    /// jsonb_object_agg: the pairs so far, in input order.
    JsonObject(Vec<(String, walden::Json)>),
    /// DISTINCT: the values seen, and the aggregate of the first of each.
    Distinct(HashSet<Vec<u8>>, Box<Acc>),
    /// ORDER BY inside the call: each value with its sort keys and delimiter, taken
    /// into the (empty) aggregate in order when the result is asked for.
    Ordered(Vec<OrderedValue>, Box<Acc>, Vec<((), bool, bool)>),
}

/// A value kept for an aggregate with ORDER BY: its sort keys, the value, the delimiter.
type OrderedValue = (Vec<Value>, Value, Option<Value>);

impl Acc {
    pub(crate) fn new(a: &AggCall) -> Acc {
        let acc = match (a.func, a.ty) {
            (AggFunc::Count | AggFunc::CountStar, _) => Acc::Count(0),
            (AggFunc::Sum, SqlType::Float8) => Acc::SumFloat(None),
            (AggFunc::Sum, SqlType::Numeric) if arg_is_integer(a) => Acc::SumInt(None, true),
            (AggFunc::Sum, SqlType::Numeric) => Acc::SumNumeric(None),
            (AggFunc::Sum | AggFunc::Avg, SqlType::Interval) => {
                Acc::Interval(None, a.func == AggFunc::Avg, 0)
            }
            (AggFunc::Sum, _) => Acc::SumInt(None, false),
            (AggFunc::Min, _) => Acc::MinMax(None, false),
            (AggFunc::Max, _) => Acc::MinMax(None, true),
            (AggFunc::Avg, SqlType::Float8) => Acc::AvgFloat(0.0, 0),
            (AggFunc::Avg, _) => Acc::AvgNumeric(Numeric::ZERO, 0),
            (AggFunc::StringAgg, _) => Acc::Text(None),
            (AggFunc::BoolAnd, _) => Acc::Bool(None, true),
            (AggFunc::BoolOr, _) => Acc::Bool(None, false),
            (AggFunc::JsonbAgg, _) => Acc::JsonArray(Vec::new()),
            (AggFunc::JsonbObjectAgg, _) => Acc::JsonObject(Vec::new()),
        };
        let acc = if a.distinct {
            Acc::Distinct(HashSet::new(), Box::new(acc))
        } else {
            acc
        };
        if a.order.is_empty() {
            acc
        } else {
            let dirs = a.order.iter().map(|(_, d, n)| ((), *d, *n)).collect();
            Acc::Ordered(Vec::new(), Box::new(acc), dirs)
        }
    }

    /// Adds a row's value; returns the bytes the accumulator grew by.
    pub(crate) fn add(&mut self, a: &AggCall, row: &[Value], cx: &mut EvalCtx) -> SqlResult<u64> {
        // count(*), and count and sum of an integer column, read the row where it lies.
        if a.filter.is_none() && a.extra.is_none() {
            let col = match &a.arg {
                Some(Expr::Column(i, _)) => row.get(*i),
                _ => None,
            };
            match (&mut *self, &a.arg, col) {
                (Acc::Count(n), None, _) => {
                    *n += 1;
                    return Ok(0);
                }
                (Acc::Count(n), Some(_), Some(v)) => {
                    *n += i64::from(!matches!(v, Value::Null));
                    return Ok(0);
                }
                (Acc::SumInt(s, _), Some(_), Some(v)) => {
                    if let Some(x) = as_i64(v) {
                        *s = Some(s.unwrap_or(0) + x as i128);
                    }
                    return Ok(0);
                }
                _ => {}
            }
        }
        if let Some(f) = &a.filter {
            if !f.test(row, cx)? {
                return Ok(0);
            }
        }
        let v = match &a.arg {
            Some(e) => e.eval(row, cx)?,
            None => Value::Bool(true),
        };
        // jsonb_agg and jsonb_object_agg keep NULLs (as JSON nulls); the rest skip them.
        let keeps_null = matches!(a.func, AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg);
        if matches!(v, Value::Null) && !keeps_null {
            return Ok(0);
        }
        let sep = match &a.extra {
            Some(e) => Some(e.eval(row, cx)?),
            None => None,
        };
        if let Acc::Ordered(kept, ..) = self {
            let mut keys = Vec::with_capacity(a.order.len());
            for (k, _, _) in &a.order {
                keys.push(k.eval(row, cx)?);
            }
            let grew = row_bytes(&keys) + row_bytes(std::slice::from_ref(&v)) + 16;
            kept.push((keys, v, sep));
            // The order is kept with the values: sorted when the result is asked for.
            return Ok(grew);
        }
        self.take(v, sep)
    }

    /// Takes a value (with string_agg's delimiter, jsonb_object_agg's value) into the
    /// aggregate; returns the bytes the accumulator grew by.
    fn take(&mut self, v: Value, sep: Option<Value>) -> SqlResult<u64> {
        match self {
            Acc::Count(n) => *n += 1,
            Acc::SumInt(s, _) => *s = Some(s.unwrap_or(0) + as_i64(&v).unwrap_or(0) as i128),
            Acc::SumFloat(s) => *s = Some(float_sum(s.unwrap_or(0.0), as_f64(&v).unwrap_or(0.0))?),
            Acc::SumNumeric(s) => *s = Some(numeric_sum(s.unwrap_or(Numeric::ZERO), &v)?),
            Acc::Interval(sum, _, n) => {
                if let Value::Interval(iv) = v {
                    *sum = Some(match sum {
                        Some(s) => crate::datetime::interval_add(*s, iv)?,
                        None => iv,
                    });
                    *n += 1;
                }
            }
            Acc::MinMax(cur, max) => {
                if replaces(&v, cur.as_ref(), *max) {
                    *cur = Some(v);
                }
            }
            Acc::AvgFloat(sum, n) => {
                *n += 1;
                *sum = float_sum(*sum, as_f64(&v).unwrap_or(0.0))?;
            }
            Acc::AvgNumeric(sum, n) => {
                *n += 1;
                *sum = numeric_sum(*sum, &v)?;
            }
            Acc::Text(cur) => {
                let Value::Text(t) = v else { return Ok(0) };
                return append_text(cur, t, sep.as_ref());
            }
            Acc::Bool(cur, and) => {
                let b = matches!(v, Value::Bool(true));
                *cur = Some(match cur {
                    None => b,
                    Some(c) if *and => *c && b,
                    Some(c) => *c || b,
                });
            }
            Acc::Ordered(kept, ..) => kept.push((Vec::new(), v, sep)),
            Acc::JsonArray(items) => {
                let j = crate::jsonb::from_value(&v)?;
                let grew = j.to_bytes().len() as u64 + 32;
                items.push(j);
                return Ok(grew);
            }
            Acc::JsonObject(pairs) => return add_pair(pairs, v, sep),
            Acc::Distinct(seen, inner) => {
                let mut key = Vec::new();
                norm_key(&v, &mut key);
                if seen.contains(&key) {
                    return Ok(0);
                }
                let grew = key.len() as u64 + 32;
                seen.insert(key);
                return Ok(grew + inner.take(v, sep)?);
            }
        }
        Ok(0)
    }

    pub(crate) fn result(&self) -> SqlResult<Value> {
        Ok(match self {
            Acc::Count(n) => Value::Int8(*n),
            Acc::SumInt(None, _) | Acc::SumFloat(None) | Acc::SumNumeric(None) => Value::Null,
            Acc::SumInt(Some(s), false) => {
                Value::Int8(i64::try_from(*s).map_err(|_| SqlError::out_of_range("bigint"))?)
            }
            Acc::SumInt(Some(s), true) => {
                Value::Numeric(Numeric::new(*s, 0).map_err(value::numeric_error)?)
            }
            Acc::SumFloat(Some(s)) => Value::Float8(*s),
            Acc::SumNumeric(Some(s)) => Value::Numeric(*s),
            Acc::MinMax(v, _) => v.clone().unwrap_or(Value::Null),
            Acc::JsonArray(items) if items.is_empty() => Value::Null,
            Acc::JsonArray(items) => crate::jsonb::value(walden::Json::Array(items.clone())),
            Acc::JsonObject(pairs) if pairs.is_empty() => Value::Null,
            Acc::JsonObject(pairs) => crate::jsonb::value(walden::Json::object(pairs.clone())),
            Acc::Interval(None, _, _) => Value::Null,
            Acc::Interval(Some(s), false, _) => Value::Interval(*s),
            // PostgreSQL's interval_avg: the sum divided by the count.
            Acc::Interval(Some(s), true, n) => {
                Value::Interval(crate::datetime::interval_div(*s, *n as f64)?)
            }
            Acc::AvgFloat(_, 0) | Acc::AvgNumeric(_, 0) => Value::Null,
            Acc::AvgFloat(sum, n) => Value::Float8(sum / *n as f64),
            // PostgreSQL's numeric_avg: the sum divided by the count, at the scale of
            // numeric division.
            Acc::AvgNumeric(sum, n) => Value::Numeric(
                sum.checked_div(Numeric::from_i64(*n))
                    .map_err(value::numeric_error)?,
            ),
            Acc::Text(s) => s.clone().map_or(Value::Null, Value::Text),
            Acc::Bool(b, _) => b.map_or(Value::Null, Value::Bool),
            Acc::Distinct(_, inner) => inner.result()?,
            Acc::Ordered(kept, inner, dirs) => {
                let mut sorted: Vec<&OrderedValue> = kept.iter().collect();
                sorted.sort_by(|x, y| compare_keys(dirs, &x.0, &y.0));
                let mut acc = (**inner).clone();
                for (_, v, sep) in sorted {
                    acc.take(v.clone(), sep.clone())?;
                }
                acc.result()?
            }
        })
    }
}

/// Whether an aggregate's argument is an integer (sum(bigint) adds in an i128).
fn arg_is_integer(a: &AggCall) -> bool {
    a.arg.as_ref().is_some_and(|e| e.ty().is_integer())
}

/// A numeric sum with one more integer or numeric value.
fn numeric_sum(sum: Numeric, v: &Value) -> SqlResult<Numeric> {
    let x = value::as_numeric(v).unwrap_or(Numeric::ZERO);
    sum.checked_add(x).map_err(value::numeric_error)
}

/// A float8 sum as PostgreSQL adds: overflowing to an infinity is an error.
fn float_sum(sum: f64, x: f64) -> SqlResult<f64> {
    let r = sum + x;
    if r.is_infinite() && sum.is_finite() && x.is_finite() {
        return Err(value::float_overflow());
    }
    Ok(r)
}

/// Whether min (`max` false) or max replaces its value so far, `cur`, with `v`.
fn replaces(v: &Value, cur: Option<&Value>, max: bool) -> bool {
    match cur {
        None => true,
        Some(c) => {
            let o = sort_cmp(v, c);
            // Of equal intervals ('1 mon', '30 days'), PostgreSQL's
            // interval_larger and interval_smaller keep the later one.
            (o == Ordering::Equal && matches!(v, Value::Interval(_)))
                || if max {
                    o == Ordering::Greater
                } else {
                    o == Ordering::Less
                }
        }
    }
}

/// string_agg: `t` appended to the text so far, after the delimiter `sep` (none before
/// the first); past the largest value, PostgreSQL's out-of-memory error. The bytes grown.
fn append_text(cur: &mut Option<String>, t: String, sep: Option<&Value>) -> SqlResult<u64> {
    let grew = t.len() as u64;
    let had = cur.as_ref().map_or(0, |s| s.len());
    let more = t.len()
        + match (sep, cur.is_some()) {
            (Some(Value::Text(d)), true) => d.len(),
            _ => 0,
        };
    if had + more > walden::schema::MAX_VALUE_BYTES {
        return Err(
            SqlError::new(code::PROGRAM_LIMIT, "out of memory").with_detail(format!(
                "Cannot enlarge string buffer containing {had} bytes by {more} more bytes."
            )),
        );
    }
    match cur {
        None => *cur = Some(t),
        Some(s) => {
            if let Some(Value::Text(d)) = sep {
                s.push_str(d);
            }
            s.push_str(&t);
        }
    }
    Ok(grew)
}

/// jsonb_object_agg: the pair of key `v` (not NULL) and value `sep`. The bytes grown.
fn add_pair(
    pairs: &mut Vec<(String, walden::Json)>,
    v: Value,
    sep: Option<Value>,
) -> SqlResult<u64> {
    let key = match v {
        Value::Null => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                "field name must not be null",
            ))
        }
        Value::Text(s) => s,
        other => value::to_text(&other).unwrap_or_default(),
    };
    let j = crate::jsonb::from_value(&sep.unwrap_or(Value::Null))?;
    let grew = (key.len() + j.to_bytes().len()) as u64 + 32;
    pairs.push((key, j));
    Ok(grew)
}
