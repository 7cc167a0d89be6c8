//! How joins are made: conditions placed where their columns meet (`restrict`), a table's
//! access chosen, inner joins ordered greedily and given a method (hash, index nested
//! loop, nested loop), outer joins.

use walden::{ColumnType, Value};

use crate::access_path::{self, Access, Wanted};
use crate::error::SqlResult;
use crate::expr::{CmpOp, Expr};
use crate::optimize::join_method::{self, Method};
use crate::optimize::pushdown;
use crate::optimize::simplify::is_constant_false;
use crate::types::{DeclaredType, SqlType};

use super::conjuncts::{add_filter, and_all, text_of};
use super::{Builder, Conj, Join, JoinKind, JoinMethod, Source, Unit};

impl Builder<'_, '_> {
    /// Puts conditions on one unit into it: into a table's read (where an index may
    /// serve them), or as a filter over it.
    pub(super) fn restrict(&mut self, u: &mut Unit, conds: Vec<Conj>) {
        let Some(r) = u.table else {
            add_filter(u, conds);
            return;
        };
        if conds.is_empty() {
            self.choose(u, r, None, None);
            return;
        }
        let at = self.rels[r].at;
        let text = text_of(&conds);
        let keep: f64 = conds.iter().map(|c| self.selectivity_on(&c.expr)).product();
        u.rows = (u.rows * keep).max(1.0);
        let narrow = and_all(
            conds
                .into_iter()
                .map(|c| c.expr.map_columns(&|i| i - at))
                .collect(),
        );
        self.choose(u, r, narrow, text);
    }

    /// Gives a table unit its filter and chooses how to read it.
    pub(super) fn choose(
        &mut self,
        u: &mut Unit,
        r: usize,
        filter: Option<Expr>,
        text: Option<String>,
    ) {
        let rel = &self.rels[r];
        let Source::Padded { inner, .. } = &mut u.source else {
            return;
        };
        let Source::Table(read) = inner.as_mut() else {
            return;
        };
        if !rel.indexes.is_empty() && filter.is_some() {
            read.access = access_path::choose(
                &rel.indexes,
                &rel.types,
                &Wanted {
                    filter: filter.as_ref(),
                    order: None,
                    nulls_dropped: false,
                    few: false,
                    stats: read.stats.as_deref(),
                },
            );
            if let Access::Index(ix) = &read.access {
                let unique_point = rel
                    .indexes
                    .iter()
                    .find(|i| i.name == ix.index)
                    .is_some_and(|i| i.unique && ix.ranges.iter().all(|(lo, hi)| lo == hi && matches!(lo, std::ops::Bound::Included(v) if v.len() == i.columns.len())));
                if unique_point {
                    u.rows = ix.ranges.len().max(1) as f64;
                }
            }
            // A plan cached with its parameters unknown: `id = $1` on a unique key is
            // still one row, whatever the run's value (the read is chosen per run).
            if self.cx.params.typed()
                && filter
                    .as_ref()
                    .is_some_and(|f| access_path::fixes_unique(&rel.indexes, f))
            {
                u.rows = 1.0;
            }
        }
        read.filter = filter;
        read.filter_text = text;
        read.est = u.rows;
    }

    pub(super) fn inner_join(&mut self, left: Unit, right: Unit, conds: Vec<Conj>) -> Unit {
        let mut keys = Vec::new();
        let mut residual = Vec::new();
        for c in conds {
            match equi_sides(&c, &left, &right) {
                Some((l, r)) => keys.push((l, r, c)),
                None => residual.push(c),
            }
        }
        let oriented = |swap: bool| -> Vec<(Expr, Expr)> {
            keys.iter()
                .map(|(l, r, _)| {
                    if swap {
                        (r.clone(), l.clone())
                    } else {
                        (l.clone(), r.clone())
                    }
                })
                .collect()
        };
        let method = join_method::inner_method(
            left.rows,
            right.rows,
            !keys.is_empty(),
            [
                self.index_for(&right, &oriented(false)),
                self.index_for(&left, &oriented(true)),
            ],
        );
        let rows = if keys.is_empty() {
            left.rows * right.rows * if residual.is_empty() { 1.0 } else { 0.3 }
        } else {
            self.equi_join_rows(&left, &right, &keys)
        };
        let turn = |swap: bool, l: Unit, r: Unit| if swap { (r, l) } else { (l, r) };
        match method {
            Method::NestedLoop { swap } => {
                let (l, r) = turn(swap, left, right);
                join_unit(
                    JoinKind::Inner,
                    l,
                    r,
                    JoinMethod::NestedLoop,
                    None,
                    residual,
                    rows,
                )
            }
            Method::Index {
                swap,
                index: (index, used),
            } => {
                let (outer, inner) = turn(swap, left, right);
                index_join(outer, inner, index, used, keys, residual, rows)
            }
            Method::Hash { swap } => {
                let (probe, build) = turn(swap, left, right);
                let keys = keys
                    .into_iter()
                    .map(|(l, r, c)| if swap { (r, l, c) } else { (l, r, c) });
                hash_join(JoinKind::Inner, probe, build, keys, residual, rows)
            }
        }
    }

    /// An index of `inner`'s table whose first columns the keys' inner sides are; the
    /// index and, per index column used, the key (over the outer row).
    fn index_for(
        &self,
        inner: &Unit,
        keys: &[(Expr, Expr)],
    ) -> Option<(String, Vec<(Expr, ColumnType)>)> {
        let r = inner.table?;
        let rel = &self.rels[r];
        let mut best: Option<(String, Vec<(Expr, ColumnType)>)> = None;
        for ix in &rel.indexes {
            let mut used = Vec::new();
            for &c in &ix.columns {
                let found = keys
                    .iter()
                    .find(|(_, i)| matches!(i, Expr::Column(x, _) if *x == rel.at + c));
                match found {
                    Some((o, _)) => used.push((o.clone(), rel.types[c])),
                    None => break,
                }
            }
            if !used.is_empty() && best.as_ref().is_none_or(|(_, b)| used.len() > b.len()) {
                best = Some((ix.name.clone(), used));
            }
        }
        best
    }

    /// A left or full join of two units planned on their own.
    pub(super) fn outer_join(
        &mut self,
        kind: JoinKind,
        left: Unit,
        mut right: Unit,
        conds: Vec<Conj>,
    ) -> SqlResult<Unit> {
        let refusable = left.source.refusable() || right.source.refusable();
        let empty = |u: &Unit| matches!(u.source, Source::Empty);
        if empty(&left) && (kind == JoinKind::Left || empty(&right)) && !refusable {
            // No row on the side every row of the join comes from: none at all.
            let mut cols = left.cols;
            cols.extend(right.cols);
            return Ok(Unit::empty(cols));
        }
        if kind == JoinKind::Left && conds.iter().any(|c| is_constant_false(&c.expr)) && !refusable
        {
            // ON is the constant false: no right row matches, so none is read, and each
            // left row is given with NULLs (PostgreSQL's plan: the constant its Join
            // Filter, its right side a Result with a One-Time Filter).
            let never = Conj {
                expr: Expr::Const(Value::Bool(false)),
                cols: Vec::new(),
                text: "false".into(),
            };
            let (rows, right) = (left.rows, Unit::empty(right.cols));
            return Ok(join_unit(
                kind,
                left,
                right,
                JoinMethod::NestedLoop,
                None,
                vec![never],
                rows,
            ));
        }
        let mut keys = Vec::new();
        let mut residual = Vec::new();
        let mut right_only = Vec::new();
        for c in conds {
            if kind == JoinKind::Left && pushdown::narrows_inner_side(&c.cols, &right.cols) {
                // An ON condition on the right side alone narrows that side.
                right_only.push(c);
                continue;
            }
            match equi_sides(&c, &left, &right) {
                Some((l, r)) => keys.push((l, r, c)),
                None => residual.push(c),
            }
        }
        self.restrict(&mut right, right_only);
        let rows = left.rows.max(right.rows);
        if keys.is_empty() {
            return Ok(join_unit(
                kind,
                left,
                right,
                JoinMethod::NestedLoop,
                None,
                residual,
                rows,
            ));
        }
        Ok(hash_join(kind, left, right, keys, residual, rows))
    }
}

/// A hash join building on `right`: each key pair (over the left row, over the right
/// row, and its condition for EXPLAIN) made one type on both sides (`hash_pair`).
fn hash_join(
    kind: JoinKind,
    left: Unit,
    right: Unit,
    keys: impl IntoIterator<Item = (Expr, Expr, Conj)>,
    residual: Vec<Conj>,
    rows: f64,
) -> Unit {
    let (mut lk, mut rk, mut key_conds) = (Vec::new(), Vec::new(), Vec::new());
    for (l, r, c) in keys {
        let (l, r) = hash_pair(l, r);
        lk.push(l);
        rk.push(r);
        key_conds.push(c);
    }
    join_unit(
        kind,
        left,
        right,
        JoinMethod::Hash {
            left_keys: lk,
            right_keys: rk,
        },
        text_of(&key_conds),
        residual,
        rows,
    )
}

/// An inner index nested-loop join: `inner`'s table looked up through `index` on the
/// values of `used` (over the outer row).
fn index_join(
    outer: Unit,
    inner: Unit,
    index: String,
    used: Vec<(Expr, ColumnType)>,
    keys: Vec<(Expr, Expr, Conj)>,
    residual: Vec<Conj>,
    rows: f64,
) -> Unit {
    // Every key condition is checked again on the joined row (the index finds the rows
    // equal in key order; the condition decides in SQL).
    let mut conds: Vec<Conj> = keys.into_iter().map(|(_, _, c)| c).collect();
    let key_text = text_of(&conds);
    conds.extend(residual);
    join_unit(
        JoinKind::Inner,
        outer,
        inner,
        JoinMethod::Index { index, keys: used },
        key_text,
        conds,
        rows,
    )
}

pub(super) fn join_unit(
    kind: JoinKind,
    left: Unit,
    right: Unit,
    method: JoinMethod,
    key_text: Option<String>,
    residual: Vec<Conj>,
    rows: f64,
) -> Unit {
    let mut cols = left.cols.clone();
    cols.extend(right.cols.iter().cloned());
    let cond_text = text_of(&residual);
    let cond = and_all(residual.into_iter().map(|c| c.expr).collect());
    Unit {
        source: Source::Join(Box::new(Join {
            kind,
            left: left.source,
            right: right.source,
            method,
            cond,
            cond_text,
            key_text,
            right_cols: right.cols,
            rows,
        })),
        cols,
        rows,
        table: None,
    }
}

/// The sides of `a = b` when it could key a join: both read columns, neither holds a
/// subquery or is an untyped NULL.
pub(super) fn equi_operands(c: &Conj) -> Option<(&Expr, &Expr)> {
    let Expr::Cmp(CmpOp::Eq, a, b) = &c.expr else {
        return None;
    };
    if a.has_subquery() || b.has_subquery() {
        return None;
    }
    if a.columns().is_empty()
        || b.columns().is_empty()
        || a.ty() == SqlType::Null
        || b.ty() == SqlType::Null
    {
        return None;
    }
    Some((a, b))
}

/// For `a = b` with one side over `l`'s columns and the other over `r`'s: the sides,
/// `l`'s first.
pub(super) fn equi_sides(c: &Conj, l: &Unit, r: &Unit) -> Option<(Expr, Expr)> {
    let (a, b) = equi_operands(c)?;
    let (ca, cb) = (a.columns(), b.columns());
    if l.covers(&ca) && r.covers(&cb) {
        Some((a.clone(), b.clone()))
    } else if l.covers(&cb) && r.covers(&ca) {
        Some((b.clone(), a.clone()))
    } else {
        None
    }
}

/// Hash keys of one type on both sides: numbers of two types compare as the wider (an
/// integer against a numeric as a numeric, anything against a float8 as a float8).
fn hash_pair(l: Expr, r: Expr) -> (Expr, Expr) {
    let (lt, rt) = (l.ty(), r.ty());
    if lt != rt && lt.is_numeric() && rt.is_numeric() && (!lt.is_integer() || !rt.is_integer()) {
        let to = SqlType::wider(lt, rt);
        let f = |e: Expr| Expr::Cast(Box::new(e), DeclaredType::plain(to));
        return (f(l), f(r));
    }
    (l, r)
}
