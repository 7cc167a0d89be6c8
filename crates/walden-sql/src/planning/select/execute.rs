//! Running a SELECT block (`SelectPlan::run`, with EXPLAIN ANALYZE's measures), what the
//! executor's stream takes of a streaming plan, and a statement's evaluation context
//! (`with_run`).

use std::cmp::Ordering;

use walden::{Reader, Value};

use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::guard::Guard;
use crate::run::{record, RunCx};
use crate::sort_key::compare_keys;

use super::subquery::Subqueries;
use super::{Distinct, Run, SelectPlan, StreamParts, Upper};

impl SelectPlan {
    /// True when rows can be produced one at a time, as they are read (no grouping,
    /// sort or DISTINCT): INSERT ... SELECT streams such a query into the table.
    pub fn is_streaming(&self) -> bool {
        self.grouping.is_none()
            && self.order.is_empty()
            && self.distinct == Distinct::None
            && self.windows.is_empty()
            && self.srfs.is_empty()
    }

    /// What the executor's stream (`exec::RowStream`) needs of a plan that streams (no
    /// grouping, sort, DISTINCT, window, set-returning function, or access chosen per
    /// run); None for another.
    pub(crate) fn stream_parts(&self) -> Option<StreamParts<'_>> {
        if !self.is_streaming() || self.reaccess.is_some() || self.input_limit.is_some() {
            return None;
        }
        Some(StreamParts {
            source: &self.source,
            filter: self.filter.as_ref(),
            outputs: &self.outputs,
            offset: self.offset,
            limit: self.limit,
        })
    }

    /// For a streaming plan: the output row for one input row, or None if filtered out.
    pub fn project_one(&self, input: &[Value], cx: &mut EvalCtx) -> SqlResult<Option<Vec<Value>>> {
        let mut out = Vec::with_capacity(self.outputs.len());
        Ok(self.project_into(input, cx, &mut out)?.then_some(out))
    }

    /// As `project_one`, into `out` (cleared first): false if the filter drops the row.
    pub fn project_into(
        &self,
        input: &[Value],
        cx: &mut EvalCtx,
        out: &mut Vec<Value>,
    ) -> SqlResult<bool> {
        out.clear();
        if let Some(f) = &self.filter {
            if !f.test(input, cx)? {
                return Ok(false);
            }
        }
        for e in &self.outputs {
            out.push(e.eval(input, cx)?);
        }
        Ok(true)
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// True if an expression of the plan holds a subquery (such a plan reads tables as
    /// it evaluates).
    pub fn has_subquery(&self) -> bool {
        let mut exprs: Vec<&Expr> = self.outputs.iter().collect();
        exprs.extend(self.filter.iter());
        exprs.extend(self.having.iter());
        exprs.extend(self.windows.iter().flat_map(|w| w.exprs()));
        exprs.extend(self.srfs.iter().flat_map(|c| &c.args));
        exprs.iter().any(|e| e.has_subquery())
    }

    /// How two rows of a sort's runs order: each is the output values followed by the
    /// sort keys (ORDER BY's, then DISTINCT ON's).
    pub(super) fn compare_run_rows(&self, a: &[Value], b: &[Value]) -> Ordering {
        let (w, n) = (self.outputs.len(), self.order.len());
        compare_keys(&self.order, &a[w..w + n], &b[w..w + n])
    }

    /// The first `limit` of sorted rows (with their sort keys), or under WITH TIES its
    /// count and the rows after that sort equal to the last of them.
    pub(super) fn take_rows(
        &self,
        rows: impl Iterator<Item = (Vec<Value>, Vec<Value>)>,
        limit: usize,
    ) -> Vec<Vec<Value>> {
        let Some(count) = self.ties else {
            return rows.take(limit).map(|(r, _)| r).collect();
        };
        let n = self.order.len();
        let mut out = Vec::new();
        let mut last: Option<Vec<Value>> = None;
        for (row, keys) in rows {
            if out.len() as u64 >= count {
                match &last {
                    Some(l) if compare_keys(&self.order, l, &keys[..n]) == Ordering::Equal => {}
                    _ => break,
                }
            }
            last = Some(keys[..n].to_vec());
            out.push(row);
        }
        out
    }

    /// True if the query computes aggregates.
    pub(crate) fn has_aggregates(&self) -> bool {
        self.grouping.as_ref().is_some_and(|g| !g.aggs.is_empty())
    }

    /// Runs the query and returns its rows; the guard is checked per row.
    pub(crate) fn run(&self, cx: &mut EvalCtx) -> SqlResult<Vec<Vec<Value>>> {
        if self.limit == Some(0) {
            return Ok(Vec::new());
        }
        if let Some(re) = &self.reaccess {
            let mut plan = self.filled(cx.outer, true)?;
            plan.choose_access(&re.0, &re.1);
            return plan.run(cx);
        }
        let guard = match cx.run {
            Some(r) => r.guard,
            None => return Err(SqlError::new(code::INTERNAL, "a query run without a guard")),
        };
        let stats = cx.run.and_then(|r| r.stats.as_ref());
        let started = stats.map(|_| std::time::Instant::now());
        let mut run = Run::new(self, guard);
        // A bound left by an earlier run of this plan (a correlated subquery's) is not
        // this run's; it is gone once the run ends.
        let top = self.top_id.zip(cx.run);
        if let Some((id, r)) = top {
            r.top_bounds.borrow_mut().retain(|(i, _)| *i != id);
        }
        let produced = self.source.produce(cx, &mut |cx, row| run.feed(&row, cx));
        if let Some((id, r)) = top {
            r.top_bounds.borrow_mut().retain(|(i, _)| *i != id);
        }
        produced?;
        let emitted = run.emitted;
        let (rows, measured) = run.finish(cx)?;
        let groups = measured.groups;
        if let (Some(stats), Some(t)) = (stats, started) {
            // Each node over the FROM clause: its rows, and the time of the whole
            // SELECT (these nodes' time includes everything below them).
            let nanos = t.elapsed().as_nanos();
            let me = self as *const SelectPlan as usize;
            let out = rows.len() as u64;
            let counts = [
                (Upper::Limit, out),
                (Upper::Distinct, emitted.max(out)),
                (Upper::Sort, (out + self.offset).min(emitted.max(out))),
                (Upper::Window, emitted.max(out)),
                (
                    Upper::Aggregate,
                    groups.max(u64::from(self.grouping.is_some())),
                ),
            ];
            for (node, n) in counts {
                record(stats, (me, node as u8), n, 1, nanos);
            }
            let mut s = stats.borrow_mut();
            for (node, bytes, batches) in [
                (Upper::Sort, measured.sort_disk_bytes, 0),
                (
                    Upper::Aggregate,
                    measured.group_disk_bytes,
                    measured.batches,
                ),
            ] {
                let e = s.entry((me, node as u8)).or_default();
                e.disk_bytes += bytes;
                e.batches += batches;
            }
        }
        Ok(rows)
    }
}

/// Runs `f` with an evaluation context for a statement's reads: `reader`'s (none for
/// rows made before), `guard`'s checks, now() and settings.
pub(crate) fn with_run<R>(
    reader: Option<Reader<'_>>,
    rng: &mut walden::rng::SimRng,
    guard: &Guard,
    f: impl FnOnce(&mut EvalCtx) -> R,
) -> R {
    with_run_params(reader, &[], rng, guard, f)
}

/// As `with_run`, for a generic plan run with a prepared statement's values.
pub(crate) fn with_run_params<R>(
    reader: Option<Reader<'_>>,
    params: &[Value],
    rng: &mut walden::rng::SimRng,
    guard: &Guard,
    f: impl FnOnce(&mut EvalCtx) -> R,
) -> R {
    let mut rc = RunCx::new(reader, guard, &Subqueries);
    rc.params = params;
    with_run_cx(&rc, rng, guard, f)
}

/// As `with_run`, with a run context made by the caller (EXPLAIN ANALYZE's measures).
pub(super) fn with_run_cx<R>(
    rc: &RunCx,
    rng: &mut walden::rng::SimRng,
    guard: &Guard,
    f: impl FnOnce(&mut EvalCtx) -> R,
) -> R {
    let mut cx = EvalCtx {
        rng,
        outer: &[],
        run: Some(rc),
        now_micros: guard.now_micros(),
        settings: guard.settings(),
        sequences: guard.sequences(),
        guard: Some(guard),
        folding: false,
    };
    f(&mut cx)
}
