//! How a SELECT block's table is read: the access path chosen (an index for the WHERE
//! clause, ORDER BY with LIMIT, or min/max), ORDER BY … LIMIT pushed down to a join's
//! table read, column pruning, and reads through an index.

use std::ops::{Bound, ControlFlow};

use walden::{Reader, Rows, Value};

use crate::access_path::{self, Access, Wanted};
use crate::bind::AggFunc;
use crate::catalog::{IndexMeta, Scope};
use crate::error::{SqlError, SqlResult};
use crate::expr::Expr;
use crate::from::Source;
use crate::types::SqlType;

use super::{Distinct, SelectPlan, SortKey};

impl SelectPlan {
    /// Picks an index to read the table through, if one serves the WHERE clause, the
    /// ORDER BY with a LIMIT, or a min or max.
    pub(super) fn choose_access(&mut self, scope: &Scope, indexes: &[IndexMeta]) {
        let types: Vec<walden::ColumnType> =
            scope.columns.iter().map(|(_, t)| t.column_type()).collect();
        let stats = match &self.source {
            Source::Table(t) => t.stats.clone(),
            _ => None,
        };
        // min(col) or max(col), alone (possibly several times) over the whole input.
        let extreme = self.grouping.as_ref().and_then(|g| {
            if !g.keys.is_empty() || g.aggs.is_empty() {
                return None;
            }
            let first = g.aggs.first()?;
            let max = match first.func {
                AggFunc::Min => false,
                AggFunc::Max => true,
                _ => return None,
            };
            let Some(Expr::Column(c, _)) = &first.arg else {
                return None;
            };
            g.aggs.iter().all(|a| a == first).then_some((*c, max))
        });
        // Windows see every row and sort them again: the index may only serve the filter.
        let extreme = extreme.filter(|_| self.windows.is_empty());
        // Set-returning functions make rows after the read: it can only serve the filter.
        let order: Option<Vec<(usize, bool, bool)>> =
            if !self.windows.is_empty() || !self.srfs.is_empty() {
                None
            } else if let Some((c, max)) = extreme {
                Some(vec![(c, max, max)])
            } else if self.grouping.is_some() {
                None
            } else {
                self.order
                    .iter()
                    .map(|(k, desc, nulls_first)| {
                        let e = match k {
                            SortKey::Output(i) => self.outputs.get(*i)?,
                            SortKey::Expr(e) => e,
                        };
                        match e {
                            Expr::Column(c, _) => Some((*c, *desc, *nulls_first)),
                            _ => None,
                        }
                    })
                    .collect()
            };
        let wanted = Wanted {
            filter: self.filter.as_ref(),
            order,
            nulls_dropped: extreme.is_some(),
            few: extreme.is_some()
                || (self.limit.is_some()
                    && self.grouping.is_none()
                    && self.windows.is_empty()
                    && self.srfs.is_empty()),
            stats: stats.as_deref(),
        };
        let access = access_path::choose(indexes, &types, &wanted);
        if let Access::Index(read) = &access {
            if read.ordered {
                if let Some((c, _)) = extreme {
                    // The first row with a value is the answer.
                    let not_null =
                        Expr::IsNull(Box::new(Expr::Column(c, types_sql(scope, c))), true);
                    self.filter = Some(match self.filter.take() {
                        Some(f) => Expr::And(Box::new(f), Box::new(not_null)),
                        None => not_null,
                    });
                    self.input_limit = Some(1);
                } else {
                    // Rows come in ORDER BY order.
                    self.order.clear();
                }
            }
        }
        if let Source::Table(t) = &mut self.source {
            t.access = access;
        }
    }

    /// ORDER BY … LIMIT over a join whose sort keys are all columns of one table read
    /// (as `ORDER BY o.amount DESC, o.id LIMIT 10` over orders joined to customers):
    /// the read drops the rows that sort after the last row the top-N keeps, before
    /// the join probes or copies them (`TopFilter`). Only where a row's sort keys are
    /// known as it is read and a dropped row can only drop rows made from it: no
    /// grouping, DISTINCT or window functions, and the table reached through inner
    /// joins or the kept side of outer joins (`Source::top_target`).
    pub(super) fn push_top(&mut self) {
        if self.limit.is_none()
            || self.order.is_empty()
            || self.grouping.is_some()
            || self.distinct != Distinct::None
            || !self.windows.is_empty()
            || !self.srfs.is_empty()
            || !matches!(self.source, Source::Join(_))
        {
            return;
        }
        let mut cols = Vec::with_capacity(self.order.len());
        for (key, desc, nulls_first) in &self.order {
            let e = match key {
                SortKey::Output(i) => &self.outputs[*i],
                SortKey::Expr(e) => e,
            };
            let Expr::Column(c, _) = e else { return };
            cols.push((*c, *desc, *nulls_first));
        }
        let only: Vec<usize> = cols.iter().map(|c| c.0).collect();
        let Some((read, at)) = self.source.top_target(&only, 0) else {
            return;
        };
        static NEXT_TOP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT_TOP.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        read.top = Some(Box::new(crate::from::TopFilter {
            id,
            keys: cols.iter().map(|&(c, d, n)| (c - at, d, n)).collect(),
        }));
        self.top_id = Some(id);
    }

    /// Column pruning (`Source::prune`): the FROM clause's columns this block reads —
    /// in WHERE, and in the outputs, ORDER BY and DISTINCT ON, or with GROUP BY in the
    /// keys and the aggregates' arguments (what comes after grouping reads the grouped
    /// row). Nothing is pruned with window functions or subqueries (they may read any
    /// column).
    pub(super) fn prune(&mut self) {
        if !self.windows.is_empty() || self.has_subquery() {
            return;
        }
        let mut exprs: Vec<&Expr> = self.filter.iter().collect();
        match &self.grouping {
            Some(g) => {
                exprs.extend(&g.keys);
                for a in &g.aggs {
                    let crate::bind::AggCall {
                        func: _,
                        arg,
                        ty: _,
                        distinct: _,
                        extra,
                        filter,
                        order,
                    } = a;
                    exprs.extend(arg.iter().chain(extra).chain(filter));
                    exprs.extend(order.iter().map(|(e, _, _)| e));
                }
            }
            None => {
                exprs.extend(&self.outputs);
                exprs.extend(self.srfs.iter().flat_map(|c| &c.args));
                exprs.extend(self.order.iter().filter_map(|(k, _, _)| match k {
                    SortKey::Expr(e) => Some(e),
                    SortKey::Output(_) => None,
                }));
                if let Distinct::On(keys) = &self.distinct {
                    exprs.extend(keys);
                }
            }
        }
        if exprs.iter().any(|e| e.has_subquery()) {
            return;
        }
        // Columns past the row's are the set-returning functions'.
        let width = self.source_names.len();
        let used: Vec<usize> = exprs
            .iter()
            .flat_map(|e| e.columns())
            .filter(|c| *c < width)
            .collect();
        self.source.prune(&used);
    }
}

fn types_sql(scope: &Scope, c: usize) -> SqlType {
    scope
        .columns
        .get(c)
        .map(|(_, t)| *t)
        .unwrap_or(SqlType::Null)
}

/// Reads a table through an index as `r` plans, each key range in turn (in key
/// order, or reversed), until `f` breaks or fails; each row in a vector with room for
/// `capacity` values (the joined width, when a join widens it; 0: its own).
pub(crate) fn read_index(
    reader: &Reader,
    r: &access_path::IndexRead,
    capacity: usize,
    (params, outer): (&[Value], &[Value]),
    f: &mut dyn FnMut(walden::RowId, walden::Row) -> SqlResult<ControlFlow<()>>,
) -> SqlResult<()> {
    let shape = walden::RowShape {
        needed: None,
        capacity,
    };
    if r.generic {
        // A generic read: the key the run's values make, if they make one.
        let Some(key) = r.key_of(params, outer) else {
            return Ok(());
        };
        return reader.read(Rows::index_key(&r.index, &key), shape, f);
    }
    let whole = [(Bound::Unbounded, Bound::Unbounded)];
    let ranges: &[access_path::KeyRange] = if r.ranges.is_empty() {
        &whole
    } else {
        &r.ranges
    };
    let order: Vec<&access_path::KeyRange> = if r.backward {
        ranges.iter().rev().collect()
    } else {
        ranges.iter().collect()
    };
    for (lo, hi) in order {
        let mut stopped = false;
        let rows = Rows::index(
            &r.index,
            lo.as_ref().map(|v| v.as_slice()),
            hi.as_ref().map(|v| v.as_slice()),
        );
        reader.read(rows.backward(r.backward), shape, |id, row| {
            let flow = f(id, row)?;
            stopped = flow.is_break();
            Ok::<_, SqlError>(flow)
        })?;
        if stopped {
            break;
        }
    }
    Ok(())
}
