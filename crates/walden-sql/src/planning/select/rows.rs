//! A SELECT block's run taking its rows (`Run`): the filter, grouping into groups (spilling
//! the rows of groups past `work_mem` to partitions), projection, DISTINCT, and rows kept
//! for ORDER BY or a top-N.

use std::collections::HashSet;

use walden::Value;

use crate::aggregate::Acc;
use crate::bind::Grouping;
use crate::error::SqlResult;
use crate::expr::{EvalCtx, Expr};
use crate::guard::{row_bytes, Guard};
use crate::sort_key::{key_bytes, push_key};

use super::top_n::TopN;
use super::{Distinct, Group, Kept, Run, SelectPlan, SortKey};

/// Partitions a grouping past `work_mem` writes the rows of groups it has no room for
/// to, per pass (each is grouped in a pass of its own afterwards): at most this many,
/// and in the first pass, whose input's size is not known, this many.
const GROUP_PARTITIONS: usize = 32;
/// Passes after which a grouping keeps every group in memory (within
/// `statement_mem`): each pass splits its rows 32 ways, so this is reached only by
/// groups that never fit.
const MAX_GROUP_PASSES: u32 = 8;

/// Fewest rows a sort writes as a run (rows larger than `work_mem` each are written
/// this many at a time, not one per file).
const MIN_RUN_ROWS: usize = 16;

/// The partition of a group's key bytes in a pass: a different split in each pass.
fn group_partition(key: &[u8], pass: u32, partitions: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    pass.hash(&mut h);
    key.hash(&mut h);
    (h.finish() % partitions.max(1) as u64) as usize
}

impl<'p, 'g> Run<'p, 'g> {
    pub(super) fn new(plan: &'p SelectPlan, guard: &'g Guard) -> Run<'p, 'g> {
        let kept = match plan.limit {
            Some(limit) if !plan.order.is_empty() && !matches!(plan.distinct, Distinct::On(_)) => {
                let keep = usize::try_from(limit.saturating_add(plan.offset)).unwrap_or(usize::MAX);
                Kept::Top(TopN::new(&plan.order, keep))
            }
            _ => Kept::All(Vec::new()),
        };
        Run {
            plan,
            guard,
            kept,
            emitted: 0,
            skipped: 0,
            fed: 0,
            groups: Vec::new(),
            index: None,
            key_buf: Vec::new(),
            seen: HashSet::new(),
            pending: Vec::new(),
            pending_bytes: 0,
            runs: None,
            kept_bytes: 0,
            group_bytes: 0,
            parts: Vec::new(),
            waiting: Vec::new(),
            pass: 0,
            pass_rows_left: None,
            groups_made: 0,
            batches: 0,
            group_disk_bytes: 0,
            sort_disk_bytes: 0,
        }
    }

    /// Takes one input row; false when no more rows are needed.
    pub(super) fn feed(&mut self, input: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        if let Some(f) = &self.plan.filter {
            if !f.test(input, cx)? {
                return Ok(true);
            }
        }
        self.fed += 1;
        if self.plan.input_limit.is_some_and(|l| self.fed >= l) {
            self.take(input, cx)?;
            return Ok(false);
        }
        self.take(input, cx)
    }

    /// Groups or emits a row that passed the filter.
    pub(super) fn take(&mut self, input: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        self.take_keyed(input, None, cx)
    }

    /// As `take`, the grouping keys' values `given` (a row read back from a partition:
    /// its keys were evaluated once, when it first came, as a volatile key must be).
    pub(super) fn take_keyed(
        &mut self,
        input: &[Value],
        given: Option<&[Value]>,
        cx: &mut EvalCtx,
    ) -> SqlResult<bool> {
        let plan = self.plan;
        let Some(g) = &plan.grouping else {
            return self.stage(input, cx);
        };
        let evaluated = self.group_key(g, input, given, cx)?;
        // Without GROUP BY there is one group.
        let found = if g.keys.is_empty() {
            (!self.groups.is_empty()).then_some(0)
        } else {
            self.index.as_ref().and_then(|t| t.first(&self.key_buf))
        };
        // No room for another group: the row waits in its key's partition.
        if let Some(temp) = self.spill_target(found, g) {
            let keys = key_values(g, input, given.is_some(), evaluated);
            self.spill_row(temp, input, &keys)?;
            return Ok(true);
        }
        let i = match found {
            Some(i) => i,
            None => {
                let keys = key_values(g, input, given.is_some(), evaluated);
                self.new_group(g, keys)?
            }
        };
        let group = &mut self.groups[i];
        let mut grew = 0;
        for (acc, call) in group.accs.iter_mut().zip(&g.aggs) {
            grew += acc.add(call, input, cx)?;
        }
        if grew > 0 {
            group.bytes += grew;
            self.group_bytes += grew;
            self.guard.charge(grew)?;
        }
        Ok(true)
    }

    /// Puts the key's bytes in `key_buf`, from the row's columns where they lie; other
    /// keys are evaluated once (or taken from `given`) and returned, kept only if they
    /// make a new group.
    fn group_key(
        &mut self,
        g: &Grouping,
        input: &[Value],
        given: Option<&[Value]>,
        cx: &mut EvalCtx,
    ) -> SqlResult<Vec<Value>> {
        self.key_buf.clear();
        let mut evaluated = Vec::new();
        for (j, k) in g.keys.iter().enumerate() {
            match (given, k) {
                (Some(values), _) => {
                    let v = values.get(j).cloned().unwrap_or(Value::Null);
                    push_key(&v, &mut self.key_buf);
                    evaluated.push(v);
                }
                (None, Expr::Column(i, _)) if *i < input.len() => {
                    push_key(&input[*i], &mut self.key_buf)
                }
                (None, _) => {
                    let v = k.eval(input, cx)?;
                    push_key(&v, &mut self.key_buf);
                    evaluated.push(v);
                }
            }
        }
        Ok(evaluated)
    }

    /// Where a row of a group not `found` goes when the groups fill `work_mem` (and
    /// passes are left): a partition in `work_mem`'s temporary space. None: a new group.
    fn spill_target(&self, found: Option<usize>, g: &Grouping) -> Option<&'g walden::TempSpace> {
        match self.spill_budget() {
            Some((budget, temp))
                if found.is_none()
                    && !g.keys.is_empty()
                    && !self.groups.is_empty()
                    && self.pass < MAX_GROUP_PASSES
                    && self.group_bytes >= budget =>
            {
                Some(temp)
            }
            _ => None,
        }
    }

    /// Writes a row, with its keys' values, to the partition of its key (`key_buf`).
    fn spill_row(
        &mut self,
        temp: &'g walden::TempSpace,
        input: &[Value],
        keys: &[Value],
    ) -> SqlResult<()> {
        if self.parts.is_empty() {
            // As many partitions as the rows left would need if each made a
            // group, at as many groups per partition as this pass holds.
            let n = match self.pass_rows_left {
                Some(left) => usize::try_from((left + 1).div_ceil(self.groups.len() as u64))
                    .unwrap_or(GROUP_PARTITIONS)
                    .clamp(1, GROUP_PARTITIONS),
                None => GROUP_PARTITIONS,
            };
            self.parts.resize_with(n, || None);
        }
        let p = group_partition(&self.key_buf, self.pass, self.parts.len());
        self.parts[p]
            .get_or_insert_with(|| crate::spill::Spool::new(temp))
            .push_parts(input, keys)
    }

    /// Makes a group of these key values (its key bytes in `key_buf`): its number.
    fn new_group(&mut self, g: &Grouping, keys: Vec<Value>) -> SqlResult<usize> {
        // The group, its accumulators, and its key bytes in the index (with
        // the index's own slot).
        let bytes = row_bytes(&keys)
            + (std::mem::size_of::<Group>()
                + g.aggs.len() * std::mem::size_of::<Acc>()
                + self.key_buf.len()
                + std::mem::size_of::<(Vec<u8>, usize)>()
                + 1) as u64;
        self.guard.charge(bytes)?;
        self.group_bytes += bytes;
        self.groups_made += 1;
        self.groups.push(Group {
            keys,
            accs: g.aggs.iter().map(Acc::new).collect(),
            bytes,
        });
        self.index
            .get_or_insert_with(|| crate::keytable::KeyTable::with_capacity(16))
            .insert(&self.key_buf, self.groups.len() - 1);
        Ok(self.groups.len() - 1)
    }

    /// Hands a row after grouping and HAVING on: projected at once, or kept for the
    /// window functions.
    pub(super) fn stage(&mut self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        if self.plan.windows.is_empty() {
            return self.emit(row, cx);
        }
        let bytes = row_bytes(row) + std::mem::size_of::<Vec<Value>>() as u64;
        self.guard.charge(bytes)?;
        self.pending_bytes += bytes;
        self.pending.push(row.to_vec());
        Ok(true)
    }

    /// Projects a (possibly grouped) row and keeps it: each row its set-returning
    /// functions make, if it has any.
    pub(super) fn emit(&mut self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        let plan = self.plan;
        if plan.srfs.is_empty() {
            return self.emit_row(row, cx);
        }
        crate::srf::expand(&plan.srfs, row, cx, &mut |r, cx| self.emit_row(r, cx))
    }

    fn emit_row(&mut self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        let plan = self.plan;
        let immediate = plan.order.is_empty() && !matches!(plan.distinct, Distinct::On(_));
        if immediate && plan.distinct == Distinct::None && self.skipped < plan.offset {
            self.skipped += 1;
            return Ok(true);
        }
        // ORDER BY … LIMIT: a row that sorts after the last one kept is dropped before
        // it is projected (most rows, once the first `keep` are in).
        if let Kept::Top(top) = &self.kept {
            if plan.distinct == Distinct::None && top.full() {
                let mut keys = Vec::with_capacity(plan.order.len());
                for (k, _, _) in &plan.order {
                    keys.push(match k {
                        SortKey::Output(i) => plan.outputs[*i].eval(row, cx)?,
                        SortKey::Expr(e) => e.eval(row, cx)?,
                    });
                }
                if !top.admits(&keys) {
                    return Ok(true);
                }
            }
        }
        let mut out = Vec::with_capacity(plan.outputs.len());
        for e in &plan.outputs {
            out.push(e.eval(row, cx)?);
        }
        if plan.distinct == Distinct::All {
            key_bytes(&out, &mut self.key_buf);
            if self.seen.contains(&self.key_buf) {
                return Ok(true);
            }
            self.guard.charge(self.key_buf.len() as u64 + 48)?;
            self.seen.insert(self.key_buf.clone());
            if immediate && self.skipped < plan.offset {
                self.skipped += 1;
                return Ok(true);
            }
        }
        let mut keys = Vec::with_capacity(plan.order.len());
        for (k, _, _) in &plan.order {
            keys.push(match k {
                SortKey::Output(i) => out[*i].clone(),
                SortKey::Expr(e) => e.eval(row, cx)?,
            });
        }
        if let Distinct::On(on) = &plan.distinct {
            for e in on {
                keys.push(e.eval(row, cx)?);
            }
        }
        let budget = self.spill_budget().map(|(b, _)| b);
        match &mut self.kept {
            Kept::Top(top) => {
                if top.offer(out, keys, self.guard)? && top.full() {
                    if let (Some(id), Some(run)) = (plan.top_id, cx.run) {
                        top.publish(id, run);
                    }
                }
                // Only while it fills: a full heap holds just the rows it returns, as
                // PostgreSQL's bounded sort keeps its heap whatever its size.
                if budget.is_some_and(|b| top.bytes > b) && !top.full() {
                    self.top_to_sort()?;
                }
            }
            Kept::All(rows) => {
                let slot = std::mem::size_of::<(Vec<Value>, Vec<Value>)>() as u64;
                let bytes = row_bytes(&out) + row_bytes(&keys) + slot;
                self.guard.charge(bytes)?;
                rows.push((out, keys));
                self.kept_bytes += bytes;
                if budget.is_some_and(|b| self.kept_bytes > b)
                    && rows.len() >= MIN_RUN_ROWS
                    && self.sorts()
                {
                    self.spill_sorted()?;
                }
            }
        }
        self.emitted += 1;
        let full = immediate && plan.limit.is_some_and(|l| self.emitted >= l);
        Ok(!full)
    }
}

/// Every grouping key's value, from where it lies in `input` or as `evaluated` (all of
/// them when the keys were `given`).
fn key_values(g: &Grouping, input: &[Value], given: bool, evaluated: Vec<Value>) -> Vec<Value> {
    if given {
        return evaluated;
    }
    let mut evaluated = evaluated.into_iter();
    g.keys
        .iter()
        .map(|k| match k {
            Expr::Column(i, _) if *i < input.len() => input[*i].clone(),
            _ => evaluated.next().unwrap_or(Value::Null),
        })
        .collect()
}
