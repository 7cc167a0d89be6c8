//! Set-returning functions in FROM: generate_series (`series`, over integers or timestamps;
//! its values, `SeriesIter`) and the jsonb functions' rows (`json_rows`).

use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, Spanned};
use walden::Value;

use crate::bind::Binder;
use crate::catalog::Scope;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::infer::Params;
use crate::select::PlanCx;
use crate::types::SqlType;
use crate::value::{self, as_i64};

use super::Source;

/// A set-returning jsonb function's source: its one argument bound (a string literal
/// read as a jsonb) and checked to be a jsonb.
pub(super) fn json_rows(
    func: crate::jsonb::JsonRows,
    args: &ast::TableFunctionArgs,
    cx: &PlanCx,
) -> SqlResult<Source> {
    let empty = Scope::default();
    let mut bound = Vec::new();
    for a in &args.args {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
            return Err(SqlError::unsupported(format!(
                "this {} argument",
                func.name()
            )));
        };
        // As for generate_series: a column of another FROM item would need LATERAL.
        let b = Binder::in_query(&empty, cx).bind(e).map_err(|err| {
            if err.code == code::UNDEFINED_COLUMN || err.code == code::UNDEFINED_TABLE {
                SqlError::unsupported(format!(
                    "{} over a column of another FROM item (LATERAL)",
                    func.name()
                ))
                .at(e.span().start)
            } else {
                err
            }
        })?;
        bound.push(crate::bind::coerce_literal(cx.params, b, SqlType::Jsonb)?);
    }
    match bound.pop() {
        Some(arg) if bound.is_empty() && matches!(arg.ty(), SqlType::Jsonb | SqlType::Null) => {
            Ok(Source::JsonRows { func, arg })
        }
        other => {
            let mut types: Vec<&str> = bound.iter().map(|b| b.ty().name()).collect();
            types.extend(other.iter().map(|b| b.ty().name()));
            Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "function {}({}) does not exist",
                    func.name(),
                    types.join(", ")
                ),
            ))
        }
    }
}

pub(super) fn series(
    table: &str,
    name: &ast::ObjectName,
    args: &ast::TableFunctionArgs,
    cx: &PlanCx,
) -> SqlResult<(Source, SqlType)> {
    if table != "generate_series" {
        return Err(SqlError::new(
            code::UNDEFINED_FUNCTION,
            format!("function {table} does not exist"),
        )
        .at(name.span().start));
    }
    let bound = series_args(args, cx)?;
    if let [_, _, (Expr::Const(Value::Interval(iv)), _)] = bound.as_slice() {
        return timestamp_series(cx.params, &bound[0].0, &bound[1].0, *iv);
    }
    // Bounds that read the enclosing query's row are taken when the series runs.
    let constant = bound.iter().all(|(b, _)| matches!(b, Expr::Const(_)));
    if !constant && matches!(bound.len(), 2 | 3) {
        if let Some((_, e)) = bound
            .iter()
            .find(|(b, _)| !b.ty().is_integer() && b.ty() != SqlType::Null)
        {
            return Err(
                SqlError::unsupported("generate_series over anything but integers")
                    .at(e.span().start),
            );
        }
        let ty = bound
            .iter()
            .map(|(b, _)| b.ty())
            .fold(SqlType::Int4, SqlType::wider);
        let args = bound.into_iter().map(|(b, _)| b).collect();
        return Ok((Source::SeriesOf { args, ty }, ty));
    }
    constant_series(bound)
}

/// generate_series's arguments bound, with the expression each was bound from; bounds
/// of unknown type (string literals, parameters) take the integer type of the others,
/// as PostgreSQL picks generate_series(int4, int4) beside an int4.
fn series_args<'e>(
    args: &'e ast::TableFunctionArgs,
    cx: &PlanCx,
) -> SqlResult<Vec<(Expr, &'e ast::Expr)>> {
    let mut bound = Vec::new();
    let empty = Scope::default();
    for a in &args.args {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
            return Err(SqlError::unsupported("this generate_series argument"));
        };
        let b = Binder::in_query(&empty, cx).bind(e)?;
        bound.push((b, e));
    }
    let known = bound
        .iter()
        .map(|(b, _)| b.ty())
        .filter(|t| t.is_integer())
        .reduce(SqlType::wider);
    if let Some(ty) = known {
        for (b, _) in &mut bound {
            if crate::bind::is_unknown(cx.params, b) {
                let e = std::mem::replace(b, Expr::Const(Value::Null));
                *b = crate::bind::coerce_literal(cx.params, e, ty)?;
            }
        }
    }
    Ok(bound)
}

/// generate_series over integer constants: its start, stop and step (2 or 3 of them,
/// the step not zero), of the widest of their types.
fn constant_series(bound: Vec<(Expr, &ast::Expr)>) -> SqlResult<(Source, SqlType)> {
    let mut vals = Vec::new();
    for (b, e) in bound {
        match b {
            Expr::Const(v) if as_i64(&v).is_some() => {
                vals.push((as_i64(&v).unwrap_or(0), value::type_of(&v)))
            }
            _ => {
                return Err(SqlError::unsupported(
                    "generate_series over anything but integer constants",
                )
                .at(e.span().start))
            }
        }
    }
    let (start, stop, step) = match vals.as_slice() {
        [a, b] => (a.0, b.0, 1),
        [a, b, c] => (a.0, b.0, c.0),
        _ => {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                "generate_series takes 2 or 3 arguments",
            ))
        }
    };
    if step == 0 {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            "step size cannot equal zero",
        ));
    }
    let ty = vals.iter().map(|v| v.1).fold(SqlType::Int4, SqlType::wider);
    Ok((
        Source::Series {
            start,
            stop,
            step,
            ty,
            interval: None,
        },
        ty,
    ))
}

/// `generate_series(start, stop, interval)` over timestamps: of timestamps if both ends
/// are, else of timestamptz (a date or a string literal converts to one, PostgreSQL's
/// choice).
fn timestamp_series(
    params: Params,
    start: &Expr,
    stop: &Expr,
    step: walden::Interval,
) -> SqlResult<(Source, SqlType)> {
    let both_plain = start.ty() == SqlType::Timestamp && stop.ty() == SqlType::Timestamp;
    let ty = if both_plain {
        SqlType::Timestamp
    } else {
        SqlType::Timestamptz
    };
    let micros = |e: &Expr| -> SqlResult<i64> {
        let e = crate::bind::coerce_literal(params, e.clone(), ty)?;
        let v = match e {
            Expr::Const(v) => value::cast(v, &crate::types::DeclaredType::plain(ty), true)?,
            _ => Value::Null,
        };
        match v {
            Value::Timestamp(t) | Value::Timestamptz(t) => Ok(t),
            _ => Err(SqlError::unsupported(
                "generate_series over anything but constants",
            )),
        }
    };
    let (start, stop) = (micros(start)?, micros(stop)?);
    let sign = step.span_micros().signum() as i64;
    if sign == 0 {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            "step size cannot equal zero",
        ));
    }
    Ok((
        Source::Series {
            start,
            stop,
            step: sign,
            ty,
            interval: Some(step),
        },
        ty,
    ))
}

/// The values of a generate_series source.
pub struct SeriesIter {
    next: i64,
    stop: i64,
    step: i64,
    ty: SqlType,
    /// A series of timestamps: the interval added to each to make the next.
    interval: Option<walden::Interval>,
    done: bool,
}

impl SeriesIter {
    pub fn new(source: &Source) -> SeriesIter {
        match source {
            Source::Series {
                start,
                stop,
                step,
                ty,
                interval,
            } => SeriesIter {
                next: *start,
                stop: *stop,
                step: *step,
                ty: *ty,
                interval: *interval,
                done: false,
            },
            _ => SeriesIter {
                next: 0,
                stop: 0,
                step: 1,
                ty: SqlType::Int4,
                interval: None,
                done: true,
            },
        }
    }
}

impl Iterator for SeriesIter {
    type Item = Value;
    fn next(&mut self) -> Option<Value> {
        if self.done
            || (self.step > 0 && self.next > self.stop)
            || (self.step < 0 && self.next < self.stop)
        {
            return None;
        }
        let v = self.next;
        if let Some(iv) = self.interval {
            // Past the end of the timestamp range the series ends.
            match crate::datetime::timestamp_add(v, iv) {
                Ok(n) if n != v => self.next = n,
                _ => self.done = true,
            }
            return Some(if self.ty == SqlType::Timestamp {
                Value::Timestamp(v)
            } else {
                Value::Timestamptz(v)
            });
        }
        match v.checked_add(self.step) {
            Some(n) => self.next = n,
            None => self.done = true,
        }
        value::int_value(v, self.ty).ok()
    }
}
