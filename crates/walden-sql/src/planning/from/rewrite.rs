//! A planned FROM clause changed after planning: column pruning (`Source::prune`), the
//! top-N pushed to a table read (`top_target`), parameters filled in and access chosen
//! again per run of a prepared statement (`filled_params`, `choose_access`).

use std::ops::Range;

use walden::Value;

use crate::access_path::{self, Wanted};
use crate::error::SqlResult;
use crate::expr::Expr;

use super::{Join, JoinKind, JoinMethod, Source, TableIndexes, TableRead};

/// The columns of `cols` that `used` names, as runs of neighbouring columns in order.
fn kept_cols(cols: &[Range<usize>], used: &[usize]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for c in cols.iter().flat_map(|r| r.clone()) {
        if !used.contains(&c) {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.end == c => last.end = c + 1,
            _ => out.push(c..c + 1),
        }
    }
    out
}

impl Source {
    /// Columns of the FROM clause's rows that this source's own joins and filters read
    /// (a table read's own filter is over its own columns, and counted by `prune`).
    /// False when a part of it cannot say (a subquery in a condition).
    fn read_columns(&self, out: &mut Vec<usize>) -> bool {
        let mut add = |e: &Expr| {
            out.extend(e.columns());
            !e.has_subquery()
        };
        match self {
            Source::Nothing
            | Source::Series { .. }
            | Source::Values { .. }
            | Source::Settings
            | Source::Cursors
            | Source::Derived { .. } => true,
            Source::SeriesOf { args, .. } => args.iter().all(add),
            Source::JsonRows { arg, .. } => add(arg),
            Source::Lateral { params, .. } => params.iter().all(add),
            Source::Recursive { .. } | Source::WorkTable { .. } => true,
            Source::Table(t) => !t.row_id && t.filter.as_ref().is_none_or(|f| !f.has_subquery()),
            Source::Padded { inner, .. } => inner.read_columns(out),
            Source::Filter { inner, cond, .. } => add(cond) && inner.read_columns(out),
            Source::Join(j) => {
                let mut ok = j.cond.as_ref().is_none_or(&mut add);
                match &j.method {
                    JoinMethod::NestedLoop | JoinMethod::Lateral => {}
                    JoinMethod::Hash {
                        left_keys,
                        right_keys,
                    } => ok &= left_keys.iter().chain(right_keys).all(&mut add),
                    JoinMethod::Index { keys, .. } => ok &= keys.iter().all(|(e, _)| add(e)),
                }
                ok && j.left.read_columns(out) && j.right.read_columns(out)
            }
        }
    }

    /// Column pruning: given the columns of the FROM clause's rows read above this
    /// source (`used`, by column number), marks in each table read the columns nobody
    /// reads, which are then made NULL as rows are read instead of being copied through
    /// the joins. Nothing is pruned when a condition holds a subquery.
    pub(crate) fn prune(&mut self, used: &[usize]) {
        let mut all = used.to_vec();
        if !self.read_columns(&mut all) {
            return;
        }
        self.mark(&all, 0);
        self.keep_right_cols(used);
    }

    /// Column pruning in joins: a hash or nested-loop join keeps in memory, and copies
    /// into each joined row, only the right side's columns read above it (`above`, by
    /// column number) or by its own condition. A column only its keys read (hashed
    /// before the row is kept) or no one reads takes neither room nor a copy per joined
    /// row: in `walden bench queries`' GROUP BY, the customers' id (read as the key
    /// only) and name (NULL, 32 bytes still) tripled the rows kept, and the probe's
    /// copy of a row found, a cache miss, took a quarter of the query's time.
    fn keep_right_cols(&mut self, above: &[usize]) {
        // What this source and everything below it read, beside what is read above:
        // each side of a join keeps that (a superset of what it needs).
        let mut below = above.to_vec();
        if !self.read_columns(&mut below) {
            return;
        }
        match self {
            Source::Filter { inner, .. } => inner.keep_right_cols(&below),
            Source::Join(j) => {
                let mut here = above.to_vec();
                if let Some(c) = &j.cond {
                    here.extend(c.columns());
                }
                if matches!(j.method, JoinMethod::Hash { .. } | JoinMethod::NestedLoop) {
                    j.right_cols = kept_cols(&j.right_cols, &here);
                }
                j.left.keep_right_cols(&below);
                j.right.keep_right_cols(&below);
            }
            // A relation's rows (`Padded`) are numbered from its own first column, and
            // hold no join of this FROM clause.
            _ => {}
        }
    }

    /// Whether a prepared statement may keep this FROM clause's plan and fill in its
    /// parameters at each run (`filled_params`): tables, joins by any method, and
    /// filters over them (subqueries, set-returning functions and views are bound with
    /// the values written in instead).
    pub(crate) fn cacheable(&self) -> bool {
        match self {
            Source::Table(_) => true,
            Source::Padded { inner, .. } | Source::Filter { inner, .. } => inner.cacheable(),
            Source::Join(j) => {
                !matches!(j.method, JoinMethod::Lateral)
                    && j.left.cacheable()
                    && j.right.cacheable()
            }
            _ => false,
        }
    }

    /// The tables this FROM clause reads, into `out`.
    pub(crate) fn table_names(&self, out: &mut Vec<String>) {
        match self {
            Source::Table(t) => out.push(t.name.clone()),
            Source::Padded { inner, .. } | Source::Filter { inner, .. } => inner.table_names(out),
            Source::Join(j) => {
                j.left.table_names(out);
                j.right.table_names(out);
            }
            _ => {}
        }
    }

    /// The FROM clause of a cached plan with a run's parameter values in place of its
    /// parameters (in tables' conditions, join conditions and keys).
    pub(crate) fn filled_params(&self, values: &[Value]) -> SqlResult<Source> {
        let fill = |e: &Expr| e.clone().filled(values, false);
        Ok(match self {
            Source::Table(t) => Source::Table(TableRead {
                filter: t.filter.as_ref().map(fill).transpose()?,
                ..t.clone()
            }),
            Source::Padded { inner, at, width } => Source::Padded {
                inner: Box::new(inner.filled_params(values)?),
                at: *at,
                width: *width,
            },
            Source::Filter {
                inner,
                cond,
                text,
                est,
            } => Source::Filter {
                inner: Box::new(inner.filled_params(values)?),
                cond: fill(cond)?,
                text: text.clone(),
                est: *est,
            },
            Source::Join(j) => {
                let method = match &j.method {
                    JoinMethod::Hash {
                        left_keys,
                        right_keys,
                    } => JoinMethod::Hash {
                        left_keys: left_keys.iter().map(fill).collect::<SqlResult<_>>()?,
                        right_keys: right_keys.iter().map(fill).collect::<SqlResult<_>>()?,
                    },
                    JoinMethod::Index { index, keys } => JoinMethod::Index {
                        index: index.clone(),
                        keys: keys
                            .iter()
                            .map(|(e, ty)| Ok((fill(e)?, *ty)))
                            .collect::<SqlResult<_>>()?,
                    },
                    m => m.clone(),
                };
                Source::Join(Box::new(Join {
                    kind: j.kind,
                    left: j.left.filled_params(values)?,
                    right: j.right.filled_params(values)?,
                    method,
                    cond: j.cond.as_ref().map(fill).transpose()?,
                    cond_text: j.cond_text.clone(),
                    key_text: j.key_text.clone(),
                    right_cols: j.right_cols.clone(),
                    rows: j.rows,
                }))
            }
            other => other.clone(),
        })
    }

    /// Chooses again how each table of a cached plan's FROM clause is read, now that
    /// its conditions hold the run's values (`o.id = $1` became `o.id = 5`, which an
    /// index serves); `tables` gives each table's indexes and column types. A table
    /// an index join looks rows up in keeps its lookups.
    pub(crate) fn choose_access(&mut self, tables: &[TableIndexes]) {
        match self {
            Source::Table(read) => {
                let Some(filter) = &read.filter else { return };
                let Some((_, ixs, types)) = tables
                    .iter()
                    .find(|(n, ixs, _)| *n == read.name && !ixs.is_empty())
                else {
                    return;
                };
                read.access = access_path::choose(
                    ixs,
                    types,
                    &Wanted {
                        filter: Some(filter),
                        order: None,
                        few: false,
                        nulls_dropped: false,
                    },
                );
            }
            Source::Padded { inner, .. } | Source::Filter { inner, .. } => {
                inner.choose_access(tables)
            }
            Source::Join(j) => {
                j.left.choose_access(tables);
                if !matches!(j.method, JoinMethod::Index { .. }) {
                    j.right.choose_access(tables);
                }
            }
            _ => {}
        }
    }

    /// The table read whose columns hold every one of `cols` (numbered in this source's
    /// rows, which start at `at`), if dropping one of its rows can only drop the rows
    /// made from it: reached through inner joins, filters and the kept side of outer
    /// joins (a row dropped from the NULL-filled side could make another row appear).
    pub(crate) fn top_target(
        &mut self,
        cols: &[usize],
        at: usize,
    ) -> Option<(&mut TableRead, usize)> {
        match self {
            Source::Table(t) => {
                let inside = cols.iter().all(|&c| c >= at && c - at < t.names.len());
                inside.then_some((t, at))
            }
            Source::Padded { inner, at, .. } => inner.top_target(cols, *at),
            Source::Filter { inner, .. } => inner.top_target(cols, at),
            Source::Join(j) => match j.kind {
                JoinKind::Inner => {
                    if j.left.top_target(cols, at).is_some() {
                        j.left.top_target(cols, at)
                    } else {
                        j.right.top_target(cols, at)
                    }
                }
                JoinKind::Left => j.left.top_target(cols, at),
                JoinKind::Full => None,
            },
            _ => None,
        }
    }

    fn mark(&mut self, used: &[usize], at: usize) {
        match self {
            Source::Table(t) => {
                let mut needed = vec![false; t.names.len()];
                for &c in used {
                    if let Some(n) = c.checked_sub(at).and_then(|i| needed.get_mut(i)) {
                        *n = true;
                    }
                }
                for c in t.filter.iter().flat_map(|f| f.columns()) {
                    if let Some(n) = needed.get_mut(c) {
                        *n = true;
                    }
                }
                if needed.iter().any(|n| !n) {
                    t.needed = Some(needed.into());
                }
            }
            Source::Padded { inner, at, .. } => inner.mark(used, *at),
            Source::Filter { inner, .. } => inner.mark(used, at),
            Source::Join(j) => {
                j.left.mark(used, at);
                j.right.mark(used, at);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::kept_cols;

    /// A join's right columns are cut down to those read, in runs of neighbours.
    #[test]
    // One run of columns is what these say.
    #[allow(clippy::single_range_in_vec_init)]
    fn kept_cols_keeps_the_read_columns_in_runs() {
        assert_eq!(kept_cols(&[4..7], &[6, 0, 1]), vec![6..7]);
        assert_eq!(
            kept_cols(&[2..4, 5..9], &[3, 5, 6, 8]),
            vec![3..4, 5..7, 8..9]
        );
        assert_eq!(
            kept_cols(&[2..4], &[]),
            Vec::<std::ops::Range<usize>>::new()
        );
        assert_eq!(kept_cols(&[2..4, 4..6], &[3, 4]), vec![3..5]);
    }
}
