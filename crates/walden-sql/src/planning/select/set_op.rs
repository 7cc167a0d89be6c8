//! UNION, INTERSECT, EXCEPT and VALUES (`Combined`): their columns' types, their rows made,
//! cast and combined, and their EXPLAIN.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use walden::Value;

use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::from::Explain;
use crate::guard::{row_bytes, Guard};
use crate::sort_key::{compare_keys, key_bytes};
use crate::types::{DeclaredType, SqlType};
use crate::value;

use super::{limited, Body, Combined, SetOp};

/// The type of a column of a set operation whose sides have types `a` and `b`.
pub(crate) fn union_type(a: SqlType, b: SqlType, name: &str) -> SqlResult<SqlType> {
    Ok(match (a, b) {
        (x, y) if x == y => x,
        (SqlType::Null, y) => y,
        (x, SqlType::Null) => x,
        (x, y) if x.is_numeric() && y.is_numeric() => SqlType::wider(x, y),
        (x, y) if x.is_datetime() && y.is_datetime() => SqlType::wider(x, y),
        // bpchar and text convert to each other implicitly, and PostgreSQL then keeps
        // the first one's type.
        (x, y) if x.is_text() && y.is_text() => x,
        (x, y) => {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "{name} types {} and {} cannot be matched",
                    x.name(),
                    y.name()
                ),
            ))
        }
    })
}

impl Body {
    pub(super) fn columns(&self) -> Cow<'_, [(String, SqlType)]> {
        match self {
            Body::Query(q) => Cow::Borrowed(q.columns()),
            Body::SetOp {
                left, left_casts, ..
            } => Cow::Owned(
                left.columns()
                    .iter()
                    .zip(left_casts)
                    .map(|((n, t), c)| (n.clone(), c.unwrap_or(*t)))
                    .collect(),
            ),
            Body::Values(rows) => {
                let n = rows.first().map_or(0, Vec::len);
                Cow::Owned(
                    (0..n)
                        .map(|i| {
                            let ty = rows.iter().map(|r| r[i].ty()).fold(SqlType::Null, |a, b| {
                                match (a, b) {
                                    (SqlType::Null, b) => b,
                                    (a, b) if a.is_numeric() && b.is_numeric() => {
                                        SqlType::wider(a, b)
                                    }
                                    (a, _) => a,
                                }
                            });
                            (format!("column{}", i + 1), ty)
                        })
                        .collect(),
                )
            }
        }
    }

    /// Whether running it may be refused (`QueryPlan::refusable`).
    pub(super) fn refusable(&self) -> bool {
        match self {
            Body::Query(q) => q.refusable(),
            Body::SetOp { left, right, .. } => left.refusable() || right.refusable(),
            Body::Values(_) => false,
        }
    }
}

impl Combined {
    pub(super) fn run(&self, cx: &mut EvalCtx) -> SqlResult<Vec<Vec<Value>>> {
        let guard = cx.run.map(|r| r.guard);
        let mut rows = match &self.body {
            Body::Query(q) => q.run(cx)?,
            Body::Values(list) => {
                let mut rows = Vec::with_capacity(list.len());
                for r in list {
                    let mut out = Vec::with_capacity(r.len());
                    for (e, (_, ty)) in r.iter().zip(&self.columns) {
                        let v = e.eval(&[], cx)?;
                        out.push(convert(v, e.ty(), *ty)?);
                    }
                    rows.push(out);
                }
                rows
            }
            Body::SetOp {
                op,
                all,
                left,
                right,
                left_casts,
                right_casts,
            } => {
                let l = cast_rows(left.run(cx)?, left.columns(), left_casts)?;
                let r = cast_rows(right.run(cx)?, right.columns(), right_casts)?;
                set_operation(*op, *all, l, r, guard)?
            }
        };
        if !self.order.is_empty() {
            let mut keyed = Vec::with_capacity(rows.len());
            for row in rows {
                let mut keys = Vec::with_capacity(self.order.len());
                for (e, _, _) in &self.order {
                    keys.push(e.eval(&row, cx)?);
                }
                keyed.push((row, keys));
            }
            keyed.sort_by(|a, b| compare_keys(&self.order, &a.1, &b.1));
            rows = keyed.into_iter().map(|(r, _)| r).collect();
        }
        let skip = usize::try_from(self.offset).unwrap_or(usize::MAX);
        let take = self
            .limit
            .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        if skip > 0 || take < rows.len() {
            rows = rows.into_iter().skip(skip).take(take).collect();
        }
        Ok(rows)
    }

    /// The planner's estimate of the rows the query gives.
    pub(crate) fn estimate(&self) -> f64 {
        limited(self.body_estimate(), self.limit, self.offset)
    }

    /// As `estimate`, before LIMIT and OFFSET.
    fn body_estimate(&self) -> f64 {
        match &self.body {
            Body::Query(q) => q.estimate(),
            Body::Values(rows) => rows.len() as f64,
            Body::SetOp {
                op, left, right, ..
            } => {
                let (l, r) = (left.estimate(), right.estimate());
                match op {
                    SetOp::Union => l + r,
                    SetOp::Intersect => l.min(r),
                    SetOp::Except => l,
                }
            }
        }
    }

    pub(super) fn explain_into(&self, out: &mut Explain, mut depth: usize) {
        if self.limit.is_some() || self.offset > 0 {
            out.est(self.estimate());
            out.node(depth, "Limit");
            depth += 1;
        }
        if !self.order.is_empty() {
            out.est(self.body_estimate());
            out.node(depth, "Sort");
            depth += 1;
        }
        if let Body::SetOp { .. } = &self.body {
            out.est(self.body_estimate());
        }
        match &self.body {
            Body::Query(q) => q.explain_into(out, depth),
            Body::Values(rows) => out.node(
                depth,
                &format!("Values Scan on \"*VALUES*\"  (rows={})", rows.len()),
            ),
            Body::SetOp {
                op,
                all,
                left,
                right,
                ..
            } => {
                let text = match (op, all) {
                    (SetOp::Union, true) => "Append",
                    (SetOp::Union, false) => "HashAggregate (Union)",
                    (SetOp::Intersect, true) => "HashSetOp Intersect All",
                    (SetOp::Intersect, false) => "HashSetOp Intersect",
                    (SetOp::Except, true) => "HashSetOp Except All",
                    (SetOp::Except, false) => "HashSetOp Except",
                };
                out.node(depth, text);
                left.explain_into(out, depth + 1);
                right.explain_into(out, depth + 1);
            }
        }
    }
}

fn convert(v: Value, from: SqlType, to: SqlType) -> SqlResult<Value> {
    if from == to || matches!(v, Value::Null) || from == SqlType::Null {
        return Ok(v);
    }
    value::cast_from(v, from, &DeclaredType::plain(to), false)
}

pub(crate) fn cast_rows(
    mut rows: Vec<Vec<Value>>,
    columns: &[(String, SqlType)],
    casts: &[Option<SqlType>],
) -> SqlResult<Vec<Vec<Value>>> {
    if casts.iter().all(Option::is_none) {
        return Ok(rows);
    }
    for row in &mut rows {
        for (i, c) in casts.iter().enumerate() {
            if let (Some(to), Some(v)) = (c, row.get_mut(i)) {
                let from = columns.get(i).map_or(SqlType::Null, |c| c.1);
                *v = convert(std::mem::replace(v, Value::Null), from, *to)?;
            }
        }
    }
    Ok(rows)
}

/// UNION, INTERSECT or EXCEPT of two row lists, with or without ALL; rows equal as
/// DISTINCT sees them (NULLs equal) are the same row.
fn set_operation(
    op: SetOp,
    all: bool,
    left: Vec<Vec<Value>>,
    right: Vec<Vec<Value>>,
    guard: Option<&Guard>,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut buf = Vec::new();
    let charge = |row: &[Value]| -> SqlResult<()> {
        match guard {
            Some(g) => g.charge(row_bytes(row) + 48),
            None => Ok(()),
        }
    };
    match (op, all) {
        (SetOp::Union, true) => {
            let mut out = left;
            out.extend(right);
            Ok(out)
        }
        (SetOp::Union, false) => {
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for row in left.into_iter().chain(right) {
                key_bytes(&row, &mut buf);
                if seen.insert(buf.clone()) {
                    charge(&row)?;
                    out.push(row);
                }
            }
            Ok(out)
        }
        (SetOp::Intersect | SetOp::Except, _) => {
            let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
            for row in &right {
                key_bytes(row, &mut buf);
                charge(row)?;
                *counts.entry(buf.clone()).or_default() += 1;
            }
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for row in left {
                key_bytes(&row, &mut buf);
                let c = counts.get_mut(&buf);
                let keep = match (op, all, c) {
                    (SetOp::Intersect, true, Some(n)) if *n > 0 => {
                        *n -= 1;
                        true
                    }
                    (SetOp::Intersect, false, Some(_)) => seen.insert(buf.clone()),
                    (SetOp::Intersect, _, _) => false,
                    (SetOp::Except, true, Some(n)) if *n > 0 => {
                        *n -= 1;
                        false
                    }
                    (SetOp::Except, true, _) => true,
                    (SetOp::Except, false, Some(_)) => false,
                    (SetOp::Except, false, None) => seen.insert(buf.clone()),
                    (SetOp::Union, ..) => true,
                };
                if keep {
                    out.push(row);
                }
            }
            Ok(out)
        }
    }
}
