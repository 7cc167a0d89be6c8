//! A correlated EXISTS or scalar aggregate subquery read as a hash probe (`hashed`): its
//! plan by key (`SelectPlan::by_hash`), built once per statement.

use std::collections::HashMap;
use std::rc::Rc;

use walden::Value;

use crate::access_path::Access;
use crate::error::SqlResult;
use crate::expr::{EvalCtx, Expr, Subquery, SubqueryKind};
use crate::from::{Source, TableRead};
use crate::run::{Hashed, HashedBy};
use crate::sort_key::push_key;
use crate::types::SqlType;

use super::subquery::{plan_id, plan_of};
use super::{Distinct, QueryPlan, SelectPlan};

/// True if `e` reads a parameter of its subquery (an outer value) or calls a volatile
/// function (which must run per outer row).
fn outer_or_volatile(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        found |= match x {
            Expr::Outer(..) | Expr::Subquery(_) => true,
            Expr::Call(f, ..) => f.is_volatile(),
            _ => false,
        }
    });
    found
}

impl SelectPlan {
    /// The plan that reads a correlated subquery's rows by key, over one table without
    /// an index to look each outer row up with, when its only outer references are
    /// `column = outer value` conjuncts (of one type): EXISTS (`grouped` false) of any
    /// select list, or a scalar aggregate without GROUP BY (`grouped`), its keys then
    /// grouped. The plan (its key columns first), and the parameter each key column is
    /// compared with; None for any other shape.
    fn by_hash(&self, grouped: bool) -> Option<(SelectPlan, Vec<usize>)> {
        if !self.hashable(grouped) {
            return None;
        }
        let Source::Table(t) = &self.source else {
            return None;
        };
        if !matches!(t.access, Access::Scan) || t.row_id {
            return None;
        }
        let (keys, probe, rest) = self.key_conjuncts(t)?;
        // An index whose first column is a key column looks each outer row up (the
        // access chosen per run; one chosen once is not a scan, above): kept for that.
        if let Some(re) = &self.reaccess {
            let indexed = re.1.iter().any(|ix| {
                ix.columns.first().is_some_and(|c| {
                    keys.iter()
                        .any(|k| matches!(k, Expr::Column(col, _) if col == c))
                })
            });
            if indexed {
                return None;
            }
        }
        let mut read = t.clone();
        read.filter = None;
        read.filter_text = None;
        read.top = None;
        let filter = rest
            .into_iter()
            .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)));
        let n = keys.len();
        let mut columns: Vec<(String, SqlType)> =
            keys.iter().map(|k| ("key".to_string(), k.ty())).collect();
        let (grouping, outputs) = match &self.grouping {
            // Grouped by the keys: each group's row is its keys, then its aggregates.
            Some(g) => {
                let mut g = g.clone();
                g.keys = keys;
                let mut outputs: Vec<Expr> =
                    (0..n).map(|i| Expr::Column(i, columns[i].1)).collect();
                outputs.extend(
                    self.outputs
                        .iter()
                        .map(|e| e.clone().map_columns(&|i| i + n)),
                );
                columns.extend(self.columns.iter().cloned());
                (Some(g), outputs)
            }
            None => (None, keys),
        };
        let build = SelectPlan {
            filter,
            grouping,
            columns,
            outputs,
            ..SelectPlan::over(
                Source::Table(read),
                self.source_names.clone(),
                self.from_rows,
            )
        };
        Some((build, probe))
    }

    /// Whether the block has a shape a hash probe can stand for: no HAVING, windows,
    /// set-returning functions, LIMIT, OFFSET or outer values in its select list; for
    /// EXISTS no grouping, for a scalar aggregate (`grouped`) one output over aggregates
    /// without GROUP BY, DISTINCT or outer values in their parts.
    fn hashable(&self, grouped: bool) -> bool {
        if self.having.is_some()
            || !self.windows.is_empty()
            || !self.srfs.is_empty()
            || self.limit.is_some()
            || self.offset > 0
            || self.input_limit.is_some()
            || self.ties.is_some()
            || self.outputs.iter().any(outer_or_volatile)
        {
            return false;
        }
        match (&self.grouping, grouped) {
            (None, false) => true,
            (Some(g), true) => {
                g.keys.is_empty()
                    && self.outputs.len() == 1
                    && self.distinct == Distinct::None
                    && !g.aggs.iter().any(|a| {
                        let mut parts: Vec<&Expr> = Vec::new();
                        parts.extend(a.arg.iter());
                        parts.extend(a.extra.iter());
                        parts.extend(a.filter.iter());
                        parts.extend(a.order.iter().map(|(e, _, _)| e));
                        parts.into_iter().any(outer_or_volatile)
                    })
            }
            _ => false,
        }
    }

    /// The block's and its table read's conditions split: the key columns compared
    /// with an outer value (`column = outer`, of one type), the parameter each is
    /// compared with, and the rest; None if any of the rest reads an outer value or
    /// calls a volatile function, or no key is found.
    fn key_conjuncts(&self, t: &TableRead) -> Option<(Vec<Expr>, Vec<usize>, Vec<Expr>)> {
        let mut conjs = Vec::new();
        if let Some(f) = &self.filter {
            f.and_parts(&mut conjs);
        }
        if let Some(f) = &t.filter {
            f.and_parts(&mut conjs);
        }
        let (mut keys, mut probe, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for c in conjs {
            if let Expr::Cmp(crate::expr::CmpOp::Eq, a, b) = c {
                match (a.as_ref(), b.as_ref()) {
                    (Expr::Column(col, t1), Expr::Outer(j, t2))
                    | (Expr::Outer(j, t2), Expr::Column(col, t1))
                        if t1 == t2 =>
                    {
                        keys.push(Expr::Column(*col, *t1));
                        probe.push(*j);
                        continue;
                    }
                    _ => {}
                }
            }
            if outer_or_volatile(c) {
                return None;
            }
            rest.push(c.clone());
        }
        if keys.is_empty() {
            return None;
        }
        Some((keys, probe, rest))
    }
}

/// The hash probe of a correlated EXISTS or scalar aggregate subquery, made at its
/// first evaluation in the statement (None: the subquery is not of that shape, and
/// runs per outer values).
pub(super) fn hashed(s: &Subquery, cx: &mut EvalCtx) -> SqlResult<Option<Rc<Hashed>>> {
    let Some(run) = cx.run else {
        return Ok(None);
    };
    let id = plan_id(s);
    if let Some(h) = run.hashed.borrow().get(&id) {
        return Ok(h.clone());
    }
    let plan = plan_of(s)?;
    let shape = match (plan, s.kind, s.params.is_empty()) {
        (QueryPlan::Select(p), SubqueryKind::Exists, false) => p.by_hash(false),
        (QueryPlan::Select(p), SubqueryKind::Scalar, false) => p.by_hash(true),
        _ => None,
    };
    let made = match shape {
        None => None,
        Some((build, probe)) => {
            let mut inner = cx.nested(&[]);
            let rows = build.run(&mut inner)?;
            let n = probe.len();
            let mut buf = Vec::new();
            let mut key_of = |row: &[Value]| -> Option<Vec<u8>> {
                // A NULL key equals nothing.
                if row[..n].iter().any(|v| matches!(v, Value::Null)) {
                    return None;
                }
                buf.clear();
                for v in &row[..n] {
                    push_key(v, &mut buf);
                }
                Some(buf.clone())
            };
            let by = if s.kind == SubqueryKind::Exists {
                HashedBy::Exists(rows.iter().filter_map(|r| key_of(r)).collect())
            } else {
                let mut values = HashMap::with_capacity(rows.len());
                for row in rows {
                    if let Some(k) = key_of(&row) {
                        values.insert(k, row.into_iter().nth(n).unwrap_or(Value::Null));
                    }
                }
                // The aggregate over no rows: the subquery run with outer values no
                // key equals (NULLs).
                let nulls = vec![Value::Null; s.params.len()];
                inner.outer = &nulls;
                let empty = plan
                    .run(&mut inner)?
                    .into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next())
                    .unwrap_or(Value::Null);
                HashedBy::Scalar { values, empty }
            };
            Some(Rc::new(Hashed { probe, by }))
        }
    };
    run.hashed.borrow_mut().insert(id, made.clone());
    Ok(made)
}
