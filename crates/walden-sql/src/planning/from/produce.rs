//! Producing a FROM clause's rows (`Source::produce`): each source's rows pushed into a sink,
//! with EXPLAIN ANALYZE's measures of each node.

use walden::Value;

use crate::access_path::Access;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::guard::Guard;
use crate::run::{record, NodeKey};
use crate::select::read_index;
use crate::types::SqlType;
use crate::value::as_i64;

use super::series::SeriesIter;
use super::table::read_rows;
use super::{LateralBody, Sink, Source, TableRead};

impl Source {
    /// Produces the rows into `sink`; false when the sink stopped it.
    pub(crate) fn produce(&self, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
        let analysis = cx.run.and_then(|r| r.stats.as_ref());
        let Some(stats) = analysis.filter(|_| !matches!(self, Source::Padded { .. })) else {
            return crate::depth::recurse(|| self.produce_node(cx, sink));
        };
        // EXPLAIN ANALYZE: the rows given, and the time in this node less the time its
        // consumers took (rows are pushed up: the consumer runs inside this call).
        let start = std::time::Instant::now();
        let mut above = std::time::Duration::ZERO;
        let mut rows = 0u64;
        let r = crate::depth::recurse(|| {
            self.produce_node(cx, &mut |cx, row| {
                rows += 1;
                let t = std::time::Instant::now();
                let r = sink(cx, row);
                above += t.elapsed();
                r
            })
        });
        let nanos = start.elapsed().saturating_sub(above).as_nanos();
        record(stats, self.key(), rows, 1, nanos);
        r
    }

    /// Produces the rows of a LATERAL item (placed among other relations' columns,
    /// perhaps filtered) for the row `left` of the items before it.
    pub(crate) fn produce_for(
        &self,
        cx: &mut EvalCtx,
        left: &[Value],
        sink: &mut Sink,
    ) -> SqlResult<bool> {
        match self {
            Source::Padded { inner, at, width } => {
                let (at, width) = (*at, *width);
                inner.produce_for(cx, left, &mut |cx, row| sink(cx, pad_row(row, at, width)))
            }
            Source::Filter { inner, cond, .. } => inner.produce_for(cx, left, &mut |cx, row| {
                if cond.test(&row, cx)? {
                    sink(cx, row)
                } else {
                    Ok(true)
                }
            }),
            Source::Lateral { body, params, .. } => {
                let mut values = Vec::with_capacity(params.len());
                for p in params {
                    values.push(p.eval(left, cx)?);
                }
                let rows = {
                    let mut inner = cx.nested(&values);
                    match body {
                        LateralBody::Query(plan) => plan.run(&mut inner)?,
                        LateralBody::Series(series) => {
                            let mut rows = Vec::new();
                            series.produce(&mut inner, &mut |_, row| {
                                rows.push(row);
                                Ok(true)
                            })?;
                            rows
                        }
                    }
                };
                for row in rows {
                    if !sink(cx, row)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            other => other.produce(cx, sink),
        }
    }

    /// This node's key in EXPLAIN ANALYZE's measurements (a table placed among other
    /// relations' columns is its table read).
    pub(crate) fn key(&self) -> NodeKey {
        match self {
            Source::Padded { inner, .. } => inner.key(),
            other => (other as *const Source as usize, 0),
        }
    }

    fn produce_node(&self, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
        match self {
            Source::Nothing => sink(cx, Vec::new()),
            Source::Empty => Ok(true),
            Source::Series { .. } => {
                let guard = cx.run.map(|r| r.guard);
                let rows = SeriesIter::new(self).map(|v| vec![v]);
                push_rows(rows, guard, cx, sink)
            }
            Source::Table(t) => produce_table(t, cx, sink),
            Source::JsonRows { func, arg } => {
                let Value::Jsonb(doc) = arg.eval(&[], cx)? else {
                    // A NULL document gives no rows.
                    return Ok(true);
                };
                let guard = cx.run.map(|r| r.guard);
                push_rows(func.rows(&doc)?, guard, cx, sink)
            }
            Source::SeriesOf { args, ty } => produce_series_of(args, *ty, cx, sink),
            Source::Settings => {
                let settings = cx.settings.ok_or_else(|| {
                    SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "pg_settings is not supported here (it reads the session's settings)",
                    )
                })?;
                let rows = crate::pg_catalog::settings_rows(settings.all());
                push_rows(rows, None, cx, sink)
            }
            Source::Locks => {
                let rows = cx
                    .run
                    .and_then(|r| r.guard.advisory())
                    .map(|(db, _, _)| {
                        crate::pg_catalog::lock_rows(&db.relation_locks(), &db.advisory_locks())
                    })
                    .unwrap_or_default();
                push_rows(rows, None, cx, sink)
            }
            Source::Cursors => {
                let rows = cx
                    .settings
                    .map(|s| crate::pg_catalog::cursor_rows(s.cursors()))
                    .unwrap_or_default();
                push_rows(rows, None, cx, sink)
            }
            Source::Values {
                rows,
                superuser_only,
                ..
            } => {
                if let (Some(what), Some(settings)) = (superuser_only, cx.settings) {
                    if settings.current("is_superuser", false)?.as_deref() != Some("on") {
                        return Err(SqlError::new(
                            code::INSUFFICIENT_PRIVILEGE,
                            format!("permission denied for {what}"),
                        ));
                    }
                }
                let guard = cx.run.map(|r| r.guard);
                push_rows(rows.iter().cloned(), guard, cx, sink)
            }
            Source::Derived { plan, .. } => push_rows(plan.run(cx)?, None, cx, sink),
            Source::Padded { inner, at, width } => {
                let (at, width) = (*at, *width);
                inner.produce(cx, &mut |cx, row| sink(cx, pad_row(row, at, width)))
            }
            Source::Filter { inner, cond, .. } => inner.produce(cx, &mut |cx, row| {
                if cond.test(&row, cx)? {
                    sink(cx, row)
                } else {
                    Ok(true)
                }
            }),
            Source::Join(j) => j.produce(cx, sink),
            Source::Recursive { plan, .. } => plan.produce(cx, sink),
            // First in FROM, a LATERAL subquery has nothing before it to read.
            Source::Lateral { .. } => self.produce_for(cx, &[], sink),
            Source::WorkTable { id, .. } => crate::recursive::produce_work_table(*id, cx, sink),
        }
    }

    /// Whether reading this source may be refused: it reads a relation only superusers
    /// may read (`Source::Values::superuser_only`), itself or through a subquery in
    /// FROM. Such a source is read even under a constant false condition rather than
    /// made `Source::Empty`, so that the refusal stays. (A subquery in an expression,
    /// or a WITH RECURSIVE query, over such a relation is not looked into.)
    pub(crate) fn refusable(&self) -> bool {
        match self {
            Source::Values { superuser_only, .. } => superuser_only.is_some(),
            Source::Padded { inner, .. } | Source::Filter { inner, .. } => inner.refusable(),
            Source::Join(j) => j.left.refusable() || j.right.refusable(),
            Source::Derived { plan, .. } => plan.refusable(),
            Source::Lateral { body, .. } => match body {
                LateralBody::Query(plan) => plan.refusable(),
                LateralBody::Series(series) => series.refusable(),
            },
            _ => false,
        }
    }

    /// A table read placed among other relations' columns: the read, where its columns
    /// start, and the row width.
    pub(crate) fn padded_table(&self) -> Option<(&TableRead, usize, usize)> {
        match self {
            Source::Padded { inner, at, width } => match inner.as_ref() {
                Source::Table(t) => Some((t, *at, *width)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A relation's row placed at columns `at..` of a row `width` wide, NULL elsewhere (at
/// 0 in place: the row's own vector, grown).
pub(crate) fn pad_row(mut row: Vec<Value>, at: usize, width: usize) -> Vec<Value> {
    if at == 0 {
        row.resize_with(width, || Value::Null);
        return row;
    }
    let mut out = Vec::with_capacity(width);
    out.resize_with(at, || Value::Null);
    out.extend(row);
    out.resize_with(width, || Value::Null);
    out
}

pub(super) fn no_reader() -> SqlError {
    SqlError::new(code::INTERNAL, "no transaction to read a table with")
}

pub(crate) fn passes(cond: &Option<Expr>, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
    match cond {
        Some(c) => c.test(row, cx),
        None => Ok(true),
    }
}

/// Pushes `rows` into `sink`, checking `guard` (if given) before each; false when the
/// sink wants no more.
fn push_rows(
    rows: impl IntoIterator<Item = Vec<Value>>,
    guard: Option<&Guard>,
    cx: &mut EvalCtx,
    sink: &mut Sink,
) -> SqlResult<bool> {
    for row in rows {
        if let Some(g) = guard {
            g.check()?;
        }
        if !sink(cx, row)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A table's rows, read as its access says (a scan or an index), those its
/// conditions and pushed-down top-N let through.
fn produce_table(t: &TableRead, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
    let run = cx.run.ok_or_else(no_reader)?;
    let reader = run.reader.ok_or_else(no_reader)?;
    let guard = run.guard;
    let mut f = |cx: &mut EvalCtx, row: Vec<Value>| -> SqlResult<bool> {
        guard.check()?;
        if let Some(f) = &t.filter {
            if !f.test(&row, cx)? {
                return Ok(true);
            }
        }
        if let Some(top) = &t.top {
            if !top.admits(&row, cx) {
                return Ok(true);
            }
        }
        sink(cx, row)
    };
    match &t.access {
        Access::Scan => read_rows(
            cx,
            t,
            |g| {
                let shape = walden::RowShape {
                    needed: t.needed.as_deref(),
                    capacity: t.width,
                };
                reader.read(walden::Rows::Table(&t.name), shape, g)
            },
            &mut f,
        ),
        Access::Index(r) => {
            let keys = (run.params, cx.outer);
            read_rows(cx, t, |g| read_index(&reader, r, t.width, keys, g), &mut f)
        }
    }
}

/// generate_series over bounds known only as the statement runs (a LATERAL call's):
/// evaluated, then produced as a series; a NULL bound gives no rows.
fn produce_series_of(
    args: &[Expr],
    ty: SqlType,
    cx: &mut EvalCtx,
    sink: &mut Sink,
) -> SqlResult<bool> {
    let mut bounds = Vec::with_capacity(3);
    for a in args {
        match as_i64(&a.eval(&[], cx)?) {
            Some(x) => bounds.push(x),
            // A NULL bound gives no rows, as in PostgreSQL.
            None => return Ok(true),
        }
    }
    let step = bounds.get(2).copied().unwrap_or(1);
    if step == 0 {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            "step size cannot equal zero",
        ));
    }
    let series = Source::Series {
        start: bounds[0],
        stop: bounds[1],
        step,
        ty,
        interval: None,
    };
    series.produce_node(cx, sink)
}
