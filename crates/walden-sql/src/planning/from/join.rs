//! Joins of a FROM clause bound (`Builder::join`: ON, USING, NATURAL), and a group of inner
//! joins collected and planned as one (`plan_group`).

use sqlparser::ast::{self, JoinConstraint, JoinOperator};

use std::ops::Range;

use crate::bind::Binder;
use crate::catalog::{object_name, Scope, USING_ALIAS_MARK};

use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::{CmpOp, Expr};
use crate::optimize::simplify::is_constant_false;

use super::conjuncts::{add_filter, bind_conjuncts};
use super::join_plan::{equi_operands, join_unit};
use super::{Builder, Conj, Item, JoinKind, JoinMethod, Kind, Source, Unit};
use crate::optimize::{join_order, pushdown};

impl Builder<'_, '_> {
    pub(super) fn join(&mut self, left: Item, right: Item, op: &JoinOperator) -> SqlResult<Item> {
        use JoinOperator as J;
        let (kind, constraint) = match op {
            J::Join(c) | J::Inner(c) => (Kind::Inner, Some(c)),
            J::Left(c) | J::LeftOuter(c) => (Kind::Left, Some(c)),
            J::Right(c) | J::RightOuter(c) => (Kind::Right, Some(c)),
            J::FullOuter(c) => (Kind::Full, Some(c)),
            J::CrossJoin(c) => (Kind::Inner, Some(c)),
            other => {
                return Err(SqlError::unsupported(format!(
                    "this kind of join ({})",
                    clip(&format!("{other:?}"))
                )))
            }
        };
        let kind = match (kind, self.is_lateral(&right)) {
            (k, false) => k,
            (Kind::Inner, true) => Kind::LateralInner,
            (Kind::Left, true) => Kind::LateralLeft,
            (_, true) => return Err(SqlError::unsupported("LATERAL in a RIGHT or FULL join")),
        };
        let mut on = None;
        let mut using = Vec::new();
        let mut alias_of_using = None;
        match constraint {
            Some(JoinConstraint::On(e)) => on = Some(Box::new(e.clone())),
            Some(JoinConstraint::Using(names)) => {
                let lcols = self.item_columns(&left);
                let rcols = self.item_columns(&right);
                for n in names {
                    let name = object_name(n)?;
                    if let Some(alias) = name.strip_prefix(USING_ALIAS_MARK) {
                        alias_of_using = Some(alias.to_string());
                        continue;
                    }
                    let l = self.find_in(&lcols, &name)?;
                    let r = self.find_in(&rcols, &name).map_err(|e| {
                        SqlError::new(e.code, e.message.replace("left table", "right table"))
                    })?;
                    using.push((l, r));
                }
            }
            Some(JoinConstraint::Natural) => {
                let lcols = self.item_columns(&left);
                let rcols = self.item_columns(&right);
                for &l in &lcols {
                    let name = self.columns[l].0.clone();
                    if self.hidden.contains(&l) {
                        continue;
                    }
                    if let Ok(r) = self.find_in(&rcols, &name) {
                        using.push((l, r));
                    }
                }
            }
            Some(JoinConstraint::None) | None => {
                if !matches!(op, J::CrossJoin(_)) {
                    return Err(SqlError::syntax("a join needs ON or USING"));
                }
            }
        }
        if let Some(alias) = alias_of_using {
            self.using_alias(alias, &using, kind)?;
        }
        for (l, r) in &using {
            let (lt, rt) = (self.columns[*l].1, self.columns[*r].1);
            if lt != rt && !(lt.is_numeric() && rt.is_numeric()) {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("operator does not exist: {} = {}", lt.name(), rt.name()),
                ));
            }
            // The merged column is the left one; a RIGHT join's is the right one.
            self.hidden.push(if kind == Kind::Right { *l } else { *r });
            if kind == Kind::Full {
                self.merged.push((*l, *r));
            }
        }
        Ok(Item::Join {
            kind,
            left: Box::new(left),
            right: Box::new(right),
            on,
            using,
        })
    }

    /// `JOIN … USING (…) AS alias`: the alias names the join's merged columns (the
    /// left ones; a RIGHT join's right ones). Its name may be no relation's of the
    /// clause, nor another such alias.
    fn using_alias(
        &mut self,
        alias: String,
        using: &[(usize, usize)],
        kind: Kind,
    ) -> SqlResult<()> {
        let taken = self.relations.iter().any(|(n, _)| *n == alias)
            || self
                .rels
                .iter()
                .any(|r| r.name.as_deref() == Some(alias.as_str()))
            || self.join_aliases.iter().any(|(n, _)| *n == alias);
        if taken {
            return Err(SqlError::new(
                code::DUPLICATE_ALIAS,
                format!("table name \"{alias}\" specified more than once"),
            ));
        }
        let cols = using
            .iter()
            .map(|(l, r)| if kind == Kind::Right { *r } else { *l })
            .collect();
        self.join_aliases.push((alias, cols));
        Ok(())
    }

    /// The conditions of a join: its ON clause and USING columns.
    fn join_conds(
        &self,
        on: Option<&ast::Expr>,
        using: &[(usize, usize)],
        scope: &Scope,
        cols: &[usize],
    ) -> SqlResult<Vec<Conj>> {
        let mut out = Vec::new();
        if let Some(e) = on {
            let conjs = bind_conjuncts(&mut Binder::in_query(scope, self.cx), e, "JOIN/ON")?;
            for c in &conjs {
                if let Some(bad) = c.cols.iter().find(|x| !cols.contains(x)) {
                    let rel = self
                        .relations
                        .iter()
                        .find(|(_, r)| r.contains(bad))
                        .map(|(n, _)| n.clone())
                        .unwrap_or_default();
                    return Err(SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("invalid reference to FROM-clause entry for table \"{rel}\""),
                    )
                    .with_hint("There is an entry for this table, but it cannot be referenced from this part of the query."));
                }
            }
            out.extend(conjs);
        }
        for (l, r) in using {
            let (lt, rt) = (self.columns[*l].1, self.columns[*r].1);
            out.push(Conj {
                expr: Expr::Cmp(
                    CmpOp::Eq,
                    Box::new(Expr::Column(*l, lt)),
                    Box::new(Expr::Column(*r, rt)),
                ),
                cols: vec![(*l).min(*r), (*l).max(*r)],
                text: format!("{} = {}", self.qualified(*l), self.qualified(*r)),
            });
        }
        Ok(out)
    }

    /// Adds the units of an inner-join group (relations and outer joins, each planned
    /// on its own) and the group's join conditions.
    pub(super) fn collect_group(
        &mut self,
        item: Item,
        scope: &Scope,
        width: usize,
        units: &mut Vec<Unit>,
        conjs: &mut Vec<Conj>,
    ) -> SqlResult<()> {
        match item {
            Item::Rel(r) => {
                units.push(self.rel_unit(r, width));
                Ok(())
            }
            Item::Join {
                kind: kind @ (Kind::LateralInner | Kind::LateralLeft),
                left,
                right,
                on,
                using,
            } => {
                let cols = self.pair_columns(&left, &right);
                let conds = self.join_conds(on.as_deref(), &using, scope, &cols)?;
                let kind = match kind {
                    Kind::LateralLeft => JoinKind::Left,
                    _ => JoinKind::Inner,
                };
                let l = self.item_unit(*left, scope, width)?;
                let r = self.item_unit(*right, scope, width)?;
                // The right side runs once per left row: its estimate is per run.
                let rows = l.rows * r.source.estimate();
                units.push(join_unit(
                    kind,
                    l,
                    r,
                    JoinMethod::Lateral,
                    None,
                    conds,
                    rows,
                ));
                Ok(())
            }
            Item::Join {
                kind: Kind::Inner,
                left,
                right,
                on,
                using,
            } => {
                let cols = self.pair_columns(&left, &right);
                conjs.extend(self.join_conds(on.as_deref(), &using, scope, &cols)?);
                self.collect_group(*left, scope, width, units, conjs)?;
                self.collect_group(*right, scope, width, units, conjs)
            }
            Item::Join {
                kind,
                left,
                right,
                on,
                using,
            } => {
                let cols = self.pair_columns(&left, &right);
                let conds = self.join_conds(on.as_deref(), &using, scope, &cols)?;
                // A right join is a left join the other way round (rows are as wide as
                // FROM whichever side they start on).
                let (kind, left, right) = match kind {
                    Kind::Right => (JoinKind::Left, right, left),
                    Kind::Left => (JoinKind::Left, left, right),
                    _ => (JoinKind::Full, left, right),
                };
                let l = self.item_unit(*left, scope, width)?;
                let r = self.item_unit(*right, scope, width)?;
                units.push(self.outer_join(kind, l, r, conds)?);
                Ok(())
            }
        }
    }

    /// An item planned alone (one side of an outer join).
    fn item_unit(&mut self, item: Item, scope: &Scope, width: usize) -> SqlResult<Unit> {
        let mut units = Vec::new();
        let mut conjs = Vec::new();
        self.collect_group(item, scope, width, &mut units, &mut conjs)?;
        let (mut unit, rest) = self.plan_group(units, conjs)?;
        add_filter(&mut unit, rest);
        Ok(unit)
    }

    fn rel_unit(&mut self, r: usize, width: usize) -> Unit {
        let rel = &mut self.rels[r];
        let mut source = std::mem::replace(&mut rel.source, Source::Nothing);
        if let Source::Table(t) = &mut source {
            t.width = width;
        }
        let n = rel.columns.len();
        let is_table = matches!(source, Source::Table(_));
        Unit {
            source: Source::Padded {
                inner: Box::new(source),
                at: rel.at,
                width,
            },
            cols: std::iter::once(rel.at..rel.at + n).collect(),
            rows: rel.rows,
            table: is_table.then_some(r),
        }
    }

    /// Joins the units of an inner-join group: each condition placed as low as its
    /// columns allow (`optimize::pushdown`), the units joined in the order
    /// `optimize::join_order` chooses from their row estimates, each condition that
    /// waits for a join checked at the first join where its columns all are. Returns
    /// the conditions on no column (checked once joined).
    pub(super) fn plan_group(
        &mut self,
        mut units: Vec<Unit>,
        conjs: Vec<Conj>,
    ) -> SqlResult<(Unit, Vec<Conj>)> {
        if let Some(empty) = empty_group(&units, &conjs) {
            return Ok((empty, Vec::new()));
        }
        let placed = {
            let cols: Vec<&[usize]> = conjs.iter().map(|c| c.cols.as_slice()).collect();
            let fills: Vec<&[Range<usize>]> = units.iter().map(|u| u.cols.as_slice()).collect();
            pushdown::place(&cols, &fills)
        };
        let mut conjs: Vec<Option<Conj>> = conjs.into_iter().map(Some).collect();
        let mut take =
            |is: &[usize]| -> Vec<Conj> { is.iter().filter_map(|i| conjs[*i].take()).collect() };
        let rest = take(&placed.above);
        let mut pending = take(&placed.at_joins);
        for (u, is) in units.iter_mut().zip(&placed.on_unit) {
            let conds = take(is);
            self.restrict(u, conds);
        }
        if units.is_empty() {
            return Ok((
                Unit {
                    source: Source::Nothing,
                    cols: Vec::new(),
                    rows: 1.0,
                    table: None,
                },
                rest,
            ));
        }
        let order = {
            let edges = self.equi_edges(&units, &pending);
            let rows: Vec<f64> = units.iter().map(|u| u.rows).collect();
            join_order::join_order(&rows, &edges)
        };
        let mut units: Vec<Option<Unit>> = units.into_iter().map(Some).collect();
        let mut order = order.into_iter().filter_map(|i| units[i].take());
        let Some(mut current) = order.next() else {
            return Err(SqlError::new(
                code::INTERNAL,
                "a join group's order lost its units",
            ));
        };
        for next in order {
            let mut cols = current.cols.clone();
            cols.extend(next.cols.iter().cloned());
            let (now, later): (Vec<Conj>, Vec<Conj>) = pending
                .into_iter()
                .partition(|c| pushdown::due_at(&c.cols, &cols));
            pending = later;
            current = self.inner_join(current, next, now);
        }
        // Conditions whose columns never all met (cannot happen: every column is in
        // some unit) are checked at the end.
        let mut rest = rest;
        rest.extend(pending);
        Ok((current, rest))
    }

    /// The group's equalities between units, for choosing the join order: for each
    /// condition `a = b` that could key a join, the units each side reads.
    fn equi_edges(&self, units: &[Unit], conds: &[Conj]) -> Vec<join_order::EquiEdge> {
        let units_of = |e: &Expr| -> Vec<usize> {
            let cols = e.columns();
            (0..units.len())
                .filter(|u| {
                    cols.iter()
                        .any(|c| units[*u].cols.iter().any(|r| r.contains(c)))
                })
                .collect()
        };
        conds
            .iter()
            .filter_map(|c| {
                let (a, b) = equi_operands(c)?;
                Some(join_order::EquiEdge {
                    a: units_of(a),
                    b: units_of(b),
                })
            })
            .collect()
    }
}

/// The unit an inner-join group is when it gives no rows: one of its conditions is the
/// constant false or NULL, or one of its units gives no rows (`Source::Empty`). It
/// covers the group's columns and reads nothing. None when the group may give rows, or
/// when reading one of its units may be refused (`Source::refusable`).
fn empty_group(units: &[Unit], conjs: &[Conj]) -> Option<Unit> {
    let none = conjs.iter().any(|c| is_constant_false(&c.expr))
        || units.iter().any(|u| matches!(u.source, Source::Empty));
    if !none || units.iter().any(|u| u.source.refusable()) {
        return None;
    }
    Some(Unit::empty(
        units.iter().flat_map(|u| u.cols.clone()).collect(),
    ))
}
