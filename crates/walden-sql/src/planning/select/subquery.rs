//! Subqueries evaluated (`eval_subquery`, reached through `Subqueries`, the planner's
//! `run::SubqueryRunner`): run per outer values, their results kept per statement.

use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

use walden::Value;

use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Subquery, SubqueryKind, SubqueryPlan};
use crate::run::{Hashed, HashedBy, SubResult, SubqueryRunner};
use crate::sort_key::{key_bytes, norm_key, push_key};
use crate::types::SqlType;
use crate::value;

use super::hashed::hashed;
use super::QueryPlan;

/// The most subquery results a statement keeps for reuse.
const SUBQUERY_CACHE: usize = 4096;

/// The planner's runner of the subqueries expressions hold, handed to every run it makes
/// (`RunCx::subqueries`): evaluation reaches the planner only through it.
pub(crate) struct Subqueries;

impl SubqueryRunner for Subqueries {
    fn eval_subquery(&self, s: &Subquery, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
        eval_subquery(s, row, cx)
    }
}

impl SubqueryPlan for QueryPlan {
    fn columns(&self) -> &[(String, SqlType)] {
        QueryPlan::columns(self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A subquery's plan as the planner made it (`PlanCx::plan_subquery`).
pub(super) fn plan_of(s: &Subquery) -> SqlResult<&QueryPlan> {
    s.plan
        .as_any()
        .downcast_ref::<QueryPlan>()
        .ok_or_else(|| SqlError::new(code::INTERNAL, "a subquery not planned as a query"))
}

/// A subquery's plan's address: what a run keeps its results by.
pub(super) fn plan_id(s: &Subquery) -> usize {
    Arc::as_ptr(&s.plan).cast::<()>() as usize
}

/// Evaluates a subquery expression on `row` of the query holding it.
fn eval_subquery(s: &Subquery, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
    let Some(run) = cx.run else {
        return Err(SqlError::unsupported("a subquery here"));
    };
    let mut params = Vec::with_capacity(s.params.len());
    for p in &s.params {
        params.push(p.eval(row, cx)?);
    }
    if matches!(s.kind, SubqueryKind::Exists | SubqueryKind::Scalar) {
        if let Some(h) = hashed(s, cx)? {
            return Ok(probe(&h, &params));
        }
    }
    let lhs = match &s.lhs {
        Some(e) => Some(e.eval(row, cx)?),
        None => None,
    };
    let mut key = Vec::new();
    key_bytes(&params, &mut key);
    let id = (plan_id(s), key);
    let cached = run.cache.borrow().get(&id).cloned();
    let result = match cached {
        Some(r) => r,
        None => {
            let rows = {
                let mut inner = cx.nested(&params);
                plan_of(s)?.run(&mut inner)?
            };
            let r = Rc::new(sub_result(s.kind, rows)?);
            let mut cache = run.cache.borrow_mut();
            if cache.len() < SUBQUERY_CACHE {
                cache.insert(id, r.clone());
            }
            r
        }
    };
    Ok(match &*result {
        SubResult::Scalar(v) => v.clone(),
        SubResult::Exists(b) => Value::Bool(*b),
        SubResult::Values {
            values,
            set,
            has_null,
        } => any_all(
            lhs.unwrap_or(Value::Null),
            values,
            set.as_ref(),
            *has_null,
            s.kind,
        )?,
    })
}

/// A hashed subquery's value for the outer values `params`: a NULL key finds nothing.
fn probe(h: &Hashed, params: &[Value]) -> Value {
    let mut key = Vec::new();
    let mut null = false;
    for &j in &h.probe {
        match params.get(j) {
            Some(Value::Null) | None => null = true,
            Some(v) => push_key(v, &mut key),
        }
    }
    match &h.by {
        HashedBy::Exists(set) => Value::Bool(!null && set.contains(&key)),
        HashedBy::Scalar { values, empty } => match values.get(&key).filter(|_| !null) {
            Some(v) => v.clone(),
            None => empty.clone(),
        },
    }
}

/// What a run of a subquery of `kind` gave, as a statement keeps it: a scalar (an
/// error past one row), whether there was a row, an ARRAY's text, or ANY/ALL's column
/// of values (for `= ANY`, also as a set of keys).
fn sub_result(kind: SubqueryKind, rows: Vec<Vec<Value>>) -> SqlResult<SubResult> {
    let first_column = |rows: Vec<Vec<Value>>| -> Vec<Value> {
        rows.into_iter()
            .map(|r| r.into_iter().next().unwrap_or(Value::Null))
            .collect()
    };
    Ok(match kind {
        SubqueryKind::Scalar => {
            if rows.len() > 1 {
                return Err(SqlError::new(
                    code::CARDINALITY_VIOLATION,
                    "more than one row returned by a subquery used as an expression",
                ));
            }
            SubResult::Scalar(
                rows.into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next())
                    .unwrap_or(Value::Null),
            )
        }
        SubqueryKind::Exists => SubResult::Exists(!rows.is_empty()),
        SubqueryKind::Array => {
            let values = first_column(rows);
            SubResult::Scalar(Value::Text(crate::array::array_text(&values)))
        }
        SubqueryKind::Any(op) | SubqueryKind::All(op) => {
            let values = first_column(rows);
            let has_null = values.iter().any(|v| matches!(v, Value::Null));
            let set = (op == crate::expr::CmpOp::Eq).then(|| {
                let mut buf = Vec::new();
                values
                    .iter()
                    .filter(|v| !matches!(v, Value::Null))
                    .map(|v| {
                        norm_key(v, &mut buf);
                        buf.clone()
                    })
                    .collect()
            });
            SubResult::Values {
                values,
                set,
                has_null,
            }
        }
    })
}

/// `x op ANY (…)` or `x op ALL (…)` over the subquery's `values`: true, false, or NULL
/// where a NULL leaves it open, as SQL has it.
fn any_all(
    x: Value,
    values: &[Value],
    set: Option<&HashSet<Vec<u8>>>,
    has_null: bool,
    kind: SubqueryKind,
) -> SqlResult<Value> {
    let (op, all) = match kind {
        SubqueryKind::All(op) => (op, true),
        SubqueryKind::Any(op) => (op, false),
        _ => {
            return Err(SqlError::new(
                code::INTERNAL,
                "a subquery of the wrong kind",
            ))
        }
    };
    if values.is_empty() {
        return Ok(Value::Bool(all));
    }
    if matches!(x, Value::Null) {
        return Ok(Value::Null);
    }
    if let (Some(set), false) = (set, all) {
        let mut buf = Vec::new();
        norm_key(&x, &mut buf);
        return Ok(if set.contains(&buf) {
            Value::Bool(true)
        } else if has_null {
            Value::Null
        } else {
            Value::Bool(false)
        });
    }
    let mut saw_null = false;
    for y in values {
        match value::compare(&x, y) {
            Some(o) => {
                let holds = op.holds(o);
                if holds && !all {
                    return Ok(Value::Bool(true));
                }
                if !holds && all {
                    return Ok(Value::Bool(false));
                }
            }
            None => saw_null = true,
        }
    }
    Ok(if saw_null {
        Value::Null
    } else {
        Value::Bool(all)
    })
}
