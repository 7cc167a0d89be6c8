//! Binding window calls: OVER clauses, named windows, frames and their offsets, and
//! the arguments of each window function.

use sqlparser::ast::{self, OrderBySort, WindowFrameBound};
use walden::Value;

use super::{
    is_not_here, window_func, windowing, Bound, Frame, WindowCall, WindowFunc, WindowSpec,
    NOT_HERE, WINDOW_PLACEHOLDER,
};
use crate::bind::{agg_call, agg_func, coerce_literal, common_type, to_common, Binder};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::functions::Func;
use crate::infer::Params;
use crate::types::SqlType;
use crate::value::{as_f64, as_i64};

fn frame_of(params: Params, f: Option<&ast::WindowFrame>) -> SqlResult<Frame> {
    let Some(f) = f else {
        return Ok(Frame {
            rows: false,
            groups: false,
            range_offsets: (0.0, 0.0),
            start: Bound::UnboundedPreceding,
            end: Bound::CurrentRow,
        });
    };
    let (rows, groups) = match f.units {
        ast::WindowFrameUnits::Rows => (true, false),
        ast::WindowFrameUnits::Range => (false, false),
        ast::WindowFrameUnits::Groups => (false, true),
    };
    let range = !rows && !groups;
    let start = bound(params, &f.start_bound, "starting", range)?;
    let end = match &f.end_bound {
        Some(b) => bound(params, b, "ending", range)?,
        None => (Bound::CurrentRow, 0.0),
    };
    let range_offsets = (start.1, end.1);
    let (start, end) = (start.0, end.0);
    match (start, end) {
        (Bound::UnboundedFollowing, _) => {
            Err(windowing("frame start cannot be UNBOUNDED FOLLOWING"))
        }
        (_, Bound::UnboundedPreceding) => Err(windowing("frame end cannot be UNBOUNDED PRECEDING")),
        (Bound::CurrentRow, Bound::Preceding(_)) => Err(windowing(
            "frame starting from current row cannot have preceding rows",
        )),
        (Bound::Following(_), Bound::Preceding(_) | Bound::CurrentRow) => Err(windowing(
            "frame starting from following row cannot have preceding rows",
        )),
        _ => Ok(Frame {
            rows,
            groups,
            range_offsets,
            start,
            end,
        }),
    }
}

/// A frame bound; a RANGE frame's offset is returned beside it (its bound holds 0).
fn bound(
    params: Params,
    b: &WindowFrameBound,
    which: &str,
    range: bool,
) -> SqlResult<(Bound, f64)> {
    let range_offset = |e: &ast::Expr| -> SqlResult<f64> {
        let v = match crate::bind::fold(
            Binder::plain(&Default::default())
                .with_params(params)
                .bind(e)?,
        )? {
            Expr::Const(v) => v,
            // A numeric literal (1.5) is a float8 constant under a cast to numeric.
            Expr::Cast(inner, _) if matches!(*inner, Expr::Const(_)) => match *inner {
                Expr::Const(v) => v,
                _ => Value::Null,
            },
            _ => {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "a frame offset that is not a constant is not supported",
                ))
            }
        };
        match as_f64(&v) {
            Some(x) if x >= 0.0 && !matches!(v, Value::Bool(_)) => Ok(x),
            Some(_) => Err(SqlError::new(
                code::INVALID_FRAME_OFFSET,
                "invalid preceding or following size in window function",
            )),
            None if v == Value::Null => Err(SqlError::new(
                code::NOT_NULL_VIOLATION,
                format!("frame {which} offset must not be null"),
            )),
            None => Err(SqlError::unsupported(
                "RANGE frames with an offset that is not a number",
            )),
        }
    };
    if range {
        return Ok(match b {
            WindowFrameBound::CurrentRow => (Bound::CurrentRow, 0.0),
            WindowFrameBound::Preceding(None) => (Bound::UnboundedPreceding, 0.0),
            WindowFrameBound::Following(None) => (Bound::UnboundedFollowing, 0.0),
            WindowFrameBound::Preceding(Some(e)) => (Bound::Preceding(0), range_offset(e)?),
            WindowFrameBound::Following(Some(e)) => (Bound::Following(0), range_offset(e)?),
        });
    }
    let offset = |e: &ast::Expr| -> SqlResult<u64> {
        let v = match crate::bind::fold(
            Binder::plain(&Default::default())
                .with_params(params)
                .bind(e)?,
        )? {
            Expr::Const(v) => v,
            _ => {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "a frame offset that is not a constant is not supported",
                ))
            }
        };
        match as_i64(&v) {
            Some(n) if n >= 0 => Ok(n as u64),
            Some(_) => Err(SqlError::new(
                code::INVALID_FRAME_OFFSET,
                format!("frame {which} offset must not be negative"),
            )),
            None if v == Value::Null => Err(SqlError::new(
                code::NOT_NULL_VIOLATION,
                format!("frame {which} offset must not be null"),
            )),
            None => Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                "argument of ROWS must be type bigint",
            )),
        }
    };
    Ok((
        match b {
            WindowFrameBound::CurrentRow => Bound::CurrentRow,
            WindowFrameBound::Preceding(None) => Bound::UnboundedPreceding,
            WindowFrameBound::Following(None) => Bound::UnboundedFollowing,
            WindowFrameBound::Preceding(Some(e)) => Bound::Preceding(offset(e)?),
            WindowFrameBound::Following(Some(e)) => Bound::Following(offset(e)?),
        },
        0.0,
    ))
}

impl Binder<'_> {
    /// Binds a part of a window call (argument, PARTITION BY or ORDER BY key) over the
    /// rows windows are computed on: the grouped rows in a grouped query. Window calls
    /// may not nest.
    fn window_part(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        let mut b = Binder {
            scope: self.scope,
            grouping: self.grouping.as_deref_mut(),
            cx: self.cx,
            windows: None,
            set_returning: None,
            params: self.params,
        };
        let bound = if b.grouping.is_some() {
            b.bind_grouped(e)
        } else {
            b.bind(e)
        };
        bound.map_err(|e| {
            if is_not_here(&e) {
                windowing("window function calls cannot be nested")
            } else {
                e
            }
        })
    }

    /// A call with OVER: bound, kept in the block's window calls, and stood in for by
    /// a placeholder column.
    pub(crate) fn window(&mut self, f: &ast::Function, name: &str) -> SqlResult<Expr> {
        let (Some(over), Some(windows)) = (&f.over, self.windows.as_deref()) else {
            return Err(windowing(NOT_HERE));
        };
        if f.null_treatment.is_some() || !f.within_group.is_empty() {
            return Err(SqlError::unsupported(format!(
                "IGNORE NULLS or WITHIN GROUP on the window function {name}"
            )));
        }
        if f.filter.is_some() && agg_func(name).is_none() {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "FILTER is not implemented for non-aggregate window functions",
            ));
        }
        let spec = windows.resolve(over)?;
        let mut partition = Vec::with_capacity(spec.partition_by.len());
        for e in &spec.partition_by {
            partition.push(self.window_part(e)?);
        }
        let mut order = Vec::with_capacity(spec.order_by.len());
        for o in &spec.order_by {
            let desc = match &o.options.sort {
                None | Some(OrderBySort::Asc) => false,
                Some(OrderBySort::Desc) => true,
                Some(OrderBySort::Using(_)) => return Err(SqlError::unsupported("ORDER BY USING")),
            };
            order.push((
                self.window_part(&o.expr)?,
                desc,
                o.options.nulls_first.unwrap_or(desc),
            ));
        }
        let frame = frame_of(self.params, spec.window_frame.as_ref())?;
        if frame.groups && order.is_empty() {
            return Err(windowing("GROUPS mode requires an ORDER BY clause"));
        }
        if frame.range_offset() {
            if order.len() != 1 {
                return Err(windowing(
                    "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
                ));
            }
            let ty = order[0].0.ty();
            if ty.is_datetime() {
                return Err(SqlError::unsupported(
                    "RANGE frames with an offset over a date or time",
                ));
            }
            if !ty.is_numeric() && ty != SqlType::Null {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!(
                        "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}",
                        ty.name()
                    ),
                ));
            }
        }
        let (func, args, ty) = self.window_function(f, name)?;
        let call = WindowCall {
            func,
            args,
            spec: WindowSpec { partition, order },
            frame,
            ty,
        };
        let Some(windows) = self.windows.as_deref_mut() else {
            return Err(windowing(NOT_HERE));
        };
        // The same call twice is computed once.
        let k = match windows.calls.iter().position(|c| *c == call) {
            Some(k) => k,
            None => {
                windows.calls.push(call);
                windows.calls.len() - 1
            }
        };
        Ok(Expr::Column(WINDOW_PLACEHOLDER + k, ty))
    }

    /// The function of a window call, its bound arguments and its type.
    fn window_function(
        &mut self,
        f: &ast::Function,
        name: &str,
    ) -> SqlResult<(WindowFunc, Vec<Expr>, SqlType)> {
        if let Some(agg) = agg_func(name) {
            if !crate::bind::order_clause(f).is_empty() {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    "aggregate ORDER BY is not implemented for window functions",
                ));
            }
            let call = agg_call(self.params, agg, name, f, &mut |e| self.window_part(e))?;
            if call.distinct {
                return Err(SqlError::unsupported(
                    "DISTINCT is not implemented for window functions",
                ));
            }
            let ty = call.ty;
            return Ok((WindowFunc::Agg(Box::new(call)), Vec::new(), ty));
        }
        let raw = crate::bind::plain_args(f, name)?;
        let mut args = Vec::with_capacity(raw.len());
        for a in raw {
            args.push(self.window_part(a)?);
        }
        let func = match window_func(name) {
            Some(f) => f,
            None if Func::lookup(name).is_some() || name == "coalesce" => {
                return Err(SqlError::new(
                    code::WRONG_OBJECT_TYPE,
                    format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                ),
                ))
            }
            None => return Err(no_such_function(name, &args)),
        };
        let arity_ok = match func {
            WindowFunc::RowNumber
            | WindowFunc::Rank
            | WindowFunc::DenseRank
            | WindowFunc::PercentRank
            | WindowFunc::CumeDist => args.is_empty(),
            WindowFunc::Ntile | WindowFunc::FirstValue | WindowFunc::LastValue => args.len() == 1,
            WindowFunc::Lag | WindowFunc::Lead => (1..=3).contains(&args.len()),
            WindowFunc::NthValue => args.len() == 2,
            WindowFunc::Agg(_) => true,
        };
        if !arity_ok {
            return Err(no_such_function(name, &args));
        }
        let ty = match func {
            WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank => SqlType::Int8,
            WindowFunc::PercentRank | WindowFunc::CumeDist => SqlType::Float8,
            WindowFunc::Ntile => {
                args[0] = integer_arg(self.params, args[0].clone(), name, &args)?;
                SqlType::Int4
            }
            WindowFunc::NthValue => {
                args[1] = integer_arg(self.params, args[1].clone(), name, &args)?;
                args[0].ty()
            }
            WindowFunc::Lag | WindowFunc::Lead => {
                if args.len() > 1 {
                    args[1] = integer_arg(self.params, args[1].clone(), name, &args)?;
                }
                if args.len() == 3 {
                    let ty = common_type(self.params, &[&args[0], &args[2]], name)?;
                    let default = args.remove(2);
                    let value = args.remove(0);
                    args.insert(0, to_common(self.params, value, ty)?);
                    args.push(to_common(self.params, default, ty)?);
                    ty
                } else {
                    args[0].ty()
                }
            }
            _ => args[0].ty(),
        };
        Ok((func, args, ty))
    }
}

fn no_such_function(name: &str, args: &[Expr]) -> SqlError {
    let types: Vec<&str> = args.iter().map(|e| e.ty().name()).collect();
    SqlError::new(
        code::UNDEFINED_FUNCTION,
        format!("function {name}({}) does not exist", types.join(", ")),
    )
}

/// An integer argument (a literal is taken as one).
fn integer_arg(params: Params, e: Expr, name: &str, args: &[Expr]) -> SqlResult<Expr> {
    let e = coerce_literal(params, e, SqlType::Int4)?;
    if e.ty().is_integer() || e.ty() == SqlType::Null {
        Ok(e)
    } else {
        Err(no_such_function(name, args))
    }
}
