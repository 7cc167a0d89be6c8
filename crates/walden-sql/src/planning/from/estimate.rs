//! Row estimates of a FROM clause: the distinct values of a column, the selectivity of a
//! condition, an equi-join's rows, and a planned source's rows (`Source::estimate`).

use crate::expr::{CmpOp, Expr};

use super::{Builder, Conj, LateralBody, Source, Unit};

impl Builder<'_, '_> {
    /// The distinct values ANALYZE estimated for a column of the FROM clause's rows,
    /// at most `rows` (the rows of the unit it is in); None when unknown.
    fn column_distinct(&self, e: &Expr, rows: f64) -> Option<f64> {
        let Expr::Column(i, _) = e else {
            return None;
        };
        let rel = self
            .rels
            .iter()
            .find(|r| (r.at..r.at + r.columns.len()).contains(i))?;
        let d = *rel.distinct.get(i - rel.at)?;
        (d > 0.0).then(|| d.min(rows.max(1.0)))
    }

    /// The share of a table's rows a condition on it keeps: for `column = constant`,
    /// one over the column's distinct values when ANALYZE estimated them (as
    /// PostgreSQL's eqsel without a most-common-values list); else a fixed guess.
    pub(super) fn selectivity_on(&self, e: &Expr) -> f64 {
        match e {
            Expr::Cmp(CmpOp::Eq, a, b) => {
                let col = match (a.columns().is_empty(), b.columns().is_empty()) {
                    (false, true) => a,
                    (true, false) => b,
                    _ => return selectivity(e),
                };
                match self.column_distinct(col, f64::MAX) {
                    Some(d) => 1.0 / d,
                    None => selectivity(e),
                }
            }
            Expr::And(a, b) => self.selectivity_on(a) * self.selectivity_on(b),
            _ => selectivity(e),
        }
    }

    /// The rows an inner join on equal keys gives: each key pair divides the product of
    /// the sides' rows by the larger of its columns' distinct values (PostgreSQL's
    /// eqjoinsel without statistics of common values); the larger side's rows when no
    /// key's distinct values are known.
    pub(super) fn equi_join_rows(
        &self,
        left: &Unit,
        right: &Unit,
        keys: &[(Expr, Expr, Conj)],
    ) -> f64 {
        let mut rows = left.rows * right.rows;
        let mut known = false;
        for (l, r, _) in keys {
            let nd = match (
                self.column_distinct(l, left.rows),
                self.column_distinct(r, right.rows),
            ) {
                (Some(a), Some(b)) => a.max(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => continue,
            };
            rows /= nd.max(1.0);
            known = true;
        }
        if known {
            rows.max(1.0)
        } else {
            left.rows.max(right.rows)
        }
    }
}

/// A rough share of rows AND-ed conditions keep.
pub(super) fn selectivity_of(conds: &[Conj]) -> f64 {
    conds.iter().map(|c| selectivity(&c.expr)).product()
}

/// A rough share of rows a condition keeps.
fn selectivity(e: &Expr) -> f64 {
    match e {
        Expr::Cmp(CmpOp::Eq, a, b) if a.columns().is_empty() || b.columns().is_empty() => 0.05,
        Expr::Cmp(CmpOp::Eq, ..) => 0.2,
        Expr::Cmp(..) => 0.33,
        Expr::InList(_, l, false) => (0.05 * l.len() as f64).min(0.5),
        Expr::And(a, b) => selectivity(a) * selectivity(b),
        _ => 0.5,
    }
}

impl Source {
    /// The planner's estimate of the rows this source gives (EXPLAIN's `rows=`).
    pub(crate) fn estimate(&self) -> f64 {
        match self {
            // At least 1, as every estimate (EXPLAIN shows `Source::Empty`'s as 0).
            Source::Nothing | Source::Empty => 1.0,
            Source::Series {
                start,
                stop,
                step,
                interval: None,
                ..
            } if *step != 0 => {
                (((*stop as f64 - *start as f64) / *step as f64).floor() + 1.0).max(1.0)
            }
            Source::Series { .. } | Source::SeriesOf { .. } => 1000.0,
            // PostgreSQL's guess for a set-returning function.
            Source::JsonRows { .. } => 100.0,
            Source::Table(t) => t.est,
            Source::Values { rows, .. } => rows.len() as f64,
            Source::Settings => crate::settings::DEFS.len() as f64,
            Source::Cursors | Source::Locks => 1000.0,
            Source::Derived { plan, .. } => plan.estimate(),
            Source::Padded { inner, .. } => inner.estimate(),
            Source::Filter { est, .. } => *est,
            Source::Join(j) => j.rows,
            Source::Lateral { body, .. } => match body {
                LateralBody::Query(plan) => plan.estimate(),
                LateralBody::Series(s) => s.estimate(),
            },
            // Fixed guesses: a recursive query's rounds are not known before it runs.
            Source::Recursive { .. } => 1000.0,
            Source::WorkTable { .. } => 100.0,
        }
        .max(1.0)
    }
}
