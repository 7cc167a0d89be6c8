//! The end of a SELECT block's run (`Run::finish`): groups emitted pass by pass, window
//! functions computed, kept rows sorted (or merged from the runs a sort spilled), OFFSET
//! and LIMIT.

use std::cmp::Ordering;
use std::collections::HashSet;

use walden::Value;

use crate::aggregate::Acc;
use crate::error::SqlResult;
use crate::expr::EvalCtx;
use crate::guard::row_bytes;
use crate::sort_key::{compare_keys, key_bytes, sort_kept};
use crate::window as windowing;

use super::top_n::sorted_entries;
use super::{Distinct, Group, Kept, Measured, Run};

impl<'p, 'g> Run<'p, 'g> {
    /// The memory a sort or a grouping may use before it spills, and where to; None
    /// when the statement cannot spill.
    pub(super) fn spill_budget(&self) -> Option<(u64, &'g walden::TempSpace)> {
        self.guard.spilling().map(|s| (s.work_mem_bytes, &s.temp))
    }

    /// True when the kept rows are sorted at the end (ORDER BY or DISTINCT ON).
    pub(super) fn sorts(&self) -> bool {
        !self.plan.order.is_empty() || matches!(self.plan.distinct, Distinct::On(_))
    }

    /// Sorts the rows kept in memory and writes them as a run (each as its output
    /// values followed by its sort keys), giving their memory back.
    pub(super) fn spill_sorted(&mut self) -> SqlResult<()> {
        let Some((_, temp)) = self.spill_budget() else {
            return Ok(());
        };
        let Kept::All(rows) = &mut self.kept else {
            return Ok(());
        };
        let mut rows = std::mem::take(rows);
        let guard = self.guard;
        let plan = self.plan;
        let n = plan.order.len();
        sort_kept(&mut rows, &plan.order, n, guard);
        guard.check()?;
        let runs = self
            .runs
            .get_or_insert_with(|| crate::spill::Runs::new(temp));
        runs.write_parts(rows)?;
        // Past the fan-in, the oldest runs become one now, so that a sort holds at most
        // that many files open however large it is.
        runs.compact(&|a, b| plan.compare_run_rows(a, b), &|| guard.check())?;
        guard.release(self.kept_bytes);
        self.kept_bytes = 0;
        Ok(())
    }

    /// Moves a top-N's rows, past `work_mem`, to a sort that spills: they are the
    /// first rows, in order, of those come so far.
    pub(super) fn top_to_sort(&mut self) -> SqlResult<()> {
        let Kept::Top(top) = std::mem::replace(&mut self.kept, Kept::All(Vec::new())) else {
            return Ok(());
        };
        self.kept_bytes = top.bytes;
        self.kept = Kept::All(
            sorted_entries(top.heap)
                .into_iter()
                .map(|e| (e.row, e.keys))
                .collect(),
        );
        self.spill_sorted()
    }

    /// What the run measured, once finished.
    fn measured(&self) -> Measured {
        Measured {
            groups: self.groups_made,
            batches: self.batches,
            group_disk_bytes: self.group_disk_bytes,
            sort_disk_bytes: self.sort_disk_bytes,
        }
    }

    /// Ends the run: the groups emitted (pass by pass), the window functions computed,
    /// the kept rows sorted (or merged with the runs a sort wrote), OFFSET and LIMIT;
    /// the rows and what the run measured.
    pub(super) fn finish(mut self, cx: &mut EvalCtx) -> SqlResult<(Vec<Vec<Value>>, Measured)> {
        let plan = self.plan;
        if let Some(g) = &plan.grouping {
            // An aggregate over no rows without GROUP BY still gives one row.
            if self.groups.is_empty() && g.keys.is_empty() {
                self.groups.push(Group {
                    keys: Vec::new(),
                    accs: g.aggs.iter().map(Acc::new).collect(),
                    bytes: 0,
                });
            }
            self.emit_groups(cx)?;
        }
        if !plan.windows.is_empty() {
            let rows = std::mem::take(&mut self.pending);
            let rows = windowing::compute(rows, &plan.windows, cx, self.guard)?;
            for row in rows {
                if !self.emit(&row, cx)? {
                    break;
                }
            }
            self.guard.release(self.pending_bytes);
        }
        let skip = usize::try_from(plan.offset).unwrap_or(usize::MAX);
        let limit = plan
            .limit
            .or(plan.ties.filter(|&t| t == 0))
            .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        if self.runs.is_some() {
            return self.merge_runs(skip, limit);
        }
        let measured = self.measured();
        Ok((self.kept_rows(skip, limit)?, measured))
    }

    /// Emits the groups, pass after pass: the groups held, then each partition a pass
    /// wrote grouped in a pass of its own.
    fn emit_groups(&mut self, cx: &mut EvalCtx) -> SqlResult<()> {
        loop {
            self.index = None;
            // Partitions this pass wrote wait for passes of their own.
            for mut part in std::mem::take(&mut self.parts).into_iter().flatten() {
                part.flush()?;
                self.group_disk_bytes += part.bytes();
                self.waiting.push((self.pass + 1, part));
            }
            if !self.emit_pass_groups(cx)? {
                break;
            }
            // The next partition: its rows grouped as they first came.
            let Some((pass, part)) = self.waiting.pop() else {
                break;
            };
            self.group_pass(pass, part, cx)?;
        }
        self.waiting.clear();
        Ok(())
    }

    /// Emits the groups this pass made, each as a row of its keys and aggregates that
    /// HAVING lets through; false when no more rows are needed.
    fn emit_pass_groups(&mut self, cx: &mut EvalCtx) -> SqlResult<bool> {
        let plan = self.plan;
        for group in std::mem::take(&mut self.groups) {
            self.guard.check()?;
            // The group becomes an output row, charged in its turn.
            self.guard.release(group.bytes);
            let mut row = group.keys;
            for acc in &group.accs {
                row.push(acc.result()?);
            }
            if let Some(h) = &plan.having {
                if !h.test(&row, cx)? {
                    continue;
                }
            }
            if !self.stage(&row, cx)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Groups the rows of a partition, in pass `pass`.
    fn group_pass(
        &mut self,
        pass: u32,
        part: crate::spill::Spool,
        cx: &mut EvalCtx,
    ) -> SqlResult<()> {
        self.pass = pass;
        self.batches += 1;
        self.group_bytes = 0;
        self.index = None;
        self.pass_rows_left = Some(part.rows());
        let mut rows = part.into_reader()?;
        let n = self.plan.grouping.as_ref().map_or(0, |g| g.keys.len());
        while let Some(row) = rows.next_row()? {
            self.guard.check()?;
            if let Some(left) = &mut self.pass_rows_left {
                *left = left.saturating_sub(1);
            }
            // The row as it came, then its keys' values.
            let (input, keys) = row.split_at(row.len().saturating_sub(n));
            self.take_keyed(input, Some(keys), cx)?;
        }
        Ok(())
    }

    /// The rows kept in memory, in order (sorted, DISTINCT ON applied), past OFFSET
    /// and within LIMIT (`limit`; WITH TIES' count and its ties).
    fn kept_rows(self, skip: usize, limit: usize) -> SqlResult<Vec<Vec<Value>>> {
        let plan = self.plan;
        Ok(match self.kept {
            Kept::Top(top) => {
                // Ascending: the heap's order is the output order.
                let sorted = sorted_entries(top.heap);
                sorted.into_iter().skip(skip).map(|e| e.row).collect()
            }
            Kept::All(mut rows) if matches!(plan.distinct, Distinct::On(_)) => {
                let guard = self.guard;
                let n = plan.order.len();
                sort_kept(&mut rows, &plan.order, n, guard);
                guard.check()?;
                let mut seen = HashSet::new();
                let mut buf = Vec::new();
                let kept = rows
                    .into_iter()
                    .filter(|(_, keys)| {
                        key_bytes(&keys[n..], &mut buf);
                        seen.insert(buf.clone())
                    })
                    .skip(skip);
                plan.take_rows(kept, limit)
            }
            Kept::All(mut rows) if !plan.order.is_empty() => {
                let guard = self.guard;
                // A cancel request makes the rest of the comparisons cheap; it is
                // reported once the sort is over.
                sort_kept(&mut rows, &plan.order, plan.order.len(), guard);
                guard.check()?;
                plan.take_rows(rows.into_iter().skip(skip), limit)
            }
            // Without ORDER BY, OFFSET was applied as rows came; grouped emission may
            // have passed LIMIT.
            Kept::All(rows) => rows.into_iter().take(limit).map(|(r, _)| r).collect(),
        })
    }

    /// The end of a sort that wrote runs: the rows still in memory sorted, merged with
    /// the runs, DISTINCT ON, OFFSET and LIMIT applied as they come out. The rows
    /// returned are charged as they come; the sort's own memory goes at the end.
    fn merge_runs(mut self, skip: usize, limit: usize) -> SqlResult<(Vec<Vec<Value>>, Measured)> {
        let plan = self.plan;
        let guard = self.guard;
        let width = plan.outputs.len();
        let n = plan.order.len();
        let Some(runs) = self.runs.take() else {
            return Ok((Vec::new(), self.measured()));
        };
        let mut memory = match std::mem::replace(&mut self.kept, Kept::All(Vec::new())) {
            Kept::All(rows) => rows,
            Kept::Top(_) => Vec::new(),
        };
        sort_kept(&mut memory, &plan.order, n, guard);
        guard.check()?;
        let memory: Vec<Vec<Value>> = memory
            .into_iter()
            .map(|(mut out, keys)| {
                out.extend(keys);
                out
            })
            .collect();
        let cmp = |a: &[Value], b: &[Value]| plan.compare_run_rows(a, b);
        let check = || guard.check();
        let (mut merged, disk_bytes) = runs.merge(memory, &cmp, &check)?;
        self.sort_disk_bytes = disk_bytes;
        let mut seen = HashSet::new();
        let mut buf = Vec::new();
        let (mut skipped, mut out) = (0, Vec::new());
        // WITH TIES: the sort keys of the last row of the count, once it is reached.
        let mut tie: Option<Vec<Value>> = None;
        while out.len() < limit {
            let Some(mut row) = merged.next_row()? else {
                break;
            };
            guard.check()?;
            if let Some(t) = &tie {
                if compare_keys(&plan.order, t, &row[width..width + n]) != Ordering::Equal {
                    break;
                }
            }
            if matches!(plan.distinct, Distinct::On(_)) {
                key_bytes(&row[width + n..], &mut buf);
                if !seen.insert(buf.clone()) {
                    continue;
                }
                guard.charge(buf.len() as u64 + 48)?;
            }
            if skipped < skip {
                skipped += 1;
                continue;
            }
            if tie.is_none() && plan.ties.is_some_and(|t| out.len() as u64 + 1 >= t) {
                tie = Some(row[width..width + n].to_vec());
            }
            row.truncate(width);
            guard.charge(row_bytes(&row) + 24)?;
            out.push(row);
        }
        guard.release(self.kept_bytes);
        Ok((out, self.measured()))
    }
}
