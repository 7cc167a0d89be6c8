//! A planned FROM clause changed after planning: the top-N pushed to a table read
//! (`top_target`), parameters filled in and access chosen again per run of a prepared
//! statement (`filled_params`, `choose_access`). (Column pruning is an optimizer rule:
//! `optimize::projection`.)

use walden::Value;

use crate::access_path::{self, Wanted};
use crate::error::SqlResult;
use crate::expr::Expr;

use super::{Join, JoinKind, JoinMethod, Source, TableIndexes, TableRead};

impl Source {
    /// Whether a prepared statement may keep this FROM clause's plan and fill in its
    /// parameters at each run (`filled_params`): tables, joins by any method, and
    /// filters over them (subqueries, set-returning functions and views are bound with
    /// the values written in instead).
    pub(crate) fn cacheable(&self) -> bool {
        match self {
            Source::Table(_) | Source::Empty => true,
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
                        stats: read.stats.as_deref(),
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
}
