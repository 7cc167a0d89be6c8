//! Running joins (`Join::produce`): hash joins over their right side's rows (`RightRows`),
//! nested loops, LATERAL loops and index nested-loop joins (`IndexProbe`).

use std::ops::Range;

use walden::{ColumnType, Value};

use crate::access_path;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::guard::row_bytes;
use crate::keytable::KeyTable;
use crate::run::record;
use crate::sort_key::push_key;

use super::produce::{no_reader, passes};
use super::table::read_rows;
use super::{IndexProbe, Join, JoinKind, JoinMethod, RightRows, Sink, Source};

fn merge(left: &[Value], right: &[Value], cols: &[Range<usize>]) -> Vec<Value> {
    let mut out = left.to_vec();
    fill(&mut out, right, cols);
    out
}

/// Copies the right side's columns into a left row.
pub(super) fn fill(out: &mut [Value], right: &[Value], cols: &[Range<usize>]) {
    for r in cols {
        if r.end <= out.len() && r.end <= right.len() {
            out[r.clone()].clone_from_slice(&right[r.clone()]);
        }
    }
}

impl RightRows {
    /// Reads a join's right side: each row's key into the hash table (for a hash
    /// join, `keys`), its columns `cols` into the rows kept; the memory they take is
    /// charged to the guard.
    pub(crate) fn collect(
        right: &Source,
        keys: Option<&Vec<Expr>>,
        cols: &[Range<usize>],
        cx: &mut EvalCtx,
    ) -> SqlResult<(RightRows, Option<KeyTable>)> {
        let guard = cx.run.map(|r| r.guard);
        let stride: usize = cols.iter().map(|r| r.len()).sum();
        // Room for the rows the planner expects, so that the table and the rows are
        // not grown and copied again and again; but an estimate is no promise: at most
        // a million rows, and at most half of what statement_mem has left (reserved, not
        // charged: rows and table are charged as they are used).
        let row_room = (stride * std::mem::size_of::<Value>() + 64) as u64;
        let affordable = guard.map_or(u64::MAX, |g| g.remaining() / 2 / row_room);
        let expected = (right.estimate().clamp(16.0, 1_000_000.0) as u64).min(affordable) as usize;
        let mut values = Vec::new();
        // Without the room (no memory for it) the vector grows as rows come.
        let _ = values.try_reserve(expected.saturating_mul(stride));
        let mut rows = RightRows {
            values,
            stride,
            width: 0,
            rows: 0,
        };
        let mut table = keys.map(|_| KeyTable::for_build(expected.max(16)));
        let mut buf = Vec::new();
        right.produce(cx, &mut |cx, mut row| {
            if let (Some(keys), Some(table)) = (keys, table.as_mut()) {
                if hash_key(keys, &row, cx, &mut buf)? {
                    table.insert(&buf, rows.rows);
                }
            }
            rows.width = row.len();
            let start = rows.values.len();
            for r in cols {
                match row.get_mut(r.clone()) {
                    Some(vals) => rows
                        .values
                        .extend(vals.iter_mut().map(|v| std::mem::replace(v, Value::Null))),
                    None => rows.values.extend((0..r.len()).map(|_| Value::Null)),
                }
            }
            rows.rows += 1;
            if let Some(g) = guard {
                g.charge(row_bytes(&rows.values[start..]))?;
            }
            Ok(true)
        })?;
        if let Some(t) = table.as_mut() {
            t.seal();
        }
        if let (Some(g), Some(t)) = (guard, &table) {
            g.charge(t.bytes())?;
        }
        Ok((rows, table))
    }

    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// Copies right row `i`'s columns into a joined row.
    pub(crate) fn fill(&self, i: usize, out: &mut [Value], cols: &[Range<usize>]) {
        let Some(mut vals) = self.values.get(i * self.stride..(i + 1) * self.stride) else {
            return;
        };
        for r in cols {
            let (these, rest) = vals.split_at(r.len().min(vals.len()));
            vals = rest;
            if let Some(slots) = out.get_mut(r.clone()) {
                slots.clone_from_slice(these);
            }
        }
    }

    /// Right row `i` alone, NULL elsewhere (a full join's row that matched nothing).
    pub(crate) fn padded(&self, i: usize, cols: &[Range<usize>]) -> Vec<Value> {
        let mut row = Vec::with_capacity(self.width);
        row.resize_with(self.width, || Value::Null);
        self.fill(i, &mut row, cols);
        row
    }
}

/// The key of a row for a hash join; None if a key is NULL (it matches nothing).
pub(crate) fn hash_key(
    keys: &[Expr],
    row: &[Value],
    cx: &mut EvalCtx,
    buf: &mut Vec<u8>,
) -> SqlResult<bool> {
    buf.clear();
    for k in keys {
        let v = match k {
            // A column needs no copy.
            Expr::Column(i, _) => match row.get(*i) {
                Some(v) => {
                    if matches!(v, Value::Null) {
                        return Ok(false);
                    }
                    push_key(v, buf);
                    continue;
                }
                None => k.eval(row, cx)?,
            },
            _ => k.eval(row, cx)?,
        };
        if matches!(v, Value::Null) {
            return Ok(false);
        }
        push_key(&v, buf);
    }
    Ok(true)
}

impl IndexProbe<'_> {
    /// The joined rows of left row `l`: the right table's rows `key` finds through the
    /// index that pass the table's own conditions (counted in `found`), each placed in a
    /// copy of `l`, to `f` if it passes the join's conditions. False when `f` stopped it.
    pub(crate) fn matches(
        &self,
        cx: &mut EvalCtx,
        key: &[Value],
        l: &[Value],
        found: &mut u64,
        f: &mut Sink,
    ) -> SqlResult<bool> {
        let bound = std::ops::Bound::Included(key);
        let (read, reader) = (self.read, &self.reader);
        read_rows(
            cx,
            read,
            |g| {
                let rows = walden::Rows::index(self.index, bound, bound);
                reader.read(rows, walden::RowShape::default(), g)
            },
            &mut |cx, r| {
                if let Some(c) = &read.filter {
                    if !c.test(&r, cx)? {
                        return Ok(true);
                    }
                }
                *found += 1;
                let mut row = l.to_vec();
                row.resize_with(self.width, || Value::Null);
                for (slot, v) in row[self.at..].iter_mut().zip(r) {
                    *slot = v;
                }
                if !passes(self.cond, &row, cx)? {
                    return Ok(true);
                }
                f(cx, row)
            },
        )
    }
}

/// An index join's key for the left row `l`: each key expression's value as the index
/// column's type; None when one is NULL, or a value no key equals (1.5 for an integer):
/// it matches nothing.
pub(crate) fn index_key(
    keys: &[(Expr, ColumnType)],
    l: &[Value],
    cx: &mut EvalCtx,
) -> SqlResult<Option<Vec<Value>>> {
    let mut key = Vec::with_capacity(keys.len());
    for (e, ty) in keys {
        match access_path::key_value(&e.eval(l, cx)?, *ty) {
            Some(k) => key.push(k),
            None => return Ok(None),
        }
    }
    Ok(Some(key))
}

impl Join {
    pub(super) fn produce(&self, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
        let (left_keys, right_keys) = match &self.method {
            JoinMethod::Index { index, keys } => return self.index_loop(index, keys, cx, sink),
            JoinMethod::Lateral => return self.lateral_loop(cx, sink),
            JoinMethod::NestedLoop => (None, None),
            JoinMethod::Hash {
                left_keys,
                right_keys,
            } => (Some(left_keys), Some(right_keys)),
        };
        // The right side in memory (the columns it fills); for a hash join, its rows
        // by key.
        let (rights, table) = RightRows::collect(&self.right, right_keys, &self.right_cols, cx)?;
        let every: Vec<usize> = match right_keys {
            None => (0..rights.len()).collect(),
            Some(_) => Vec::new(),
        };
        let mut buf = Vec::new();
        let full = self.kind == JoinKind::Full;
        let mut matched = vec![false; if full { rights.len() } else { 0 }];
        let mut found = Vec::new();
        let more = self.left.produce(cx, &mut |cx, l| {
            let candidates: &[usize] = match (left_keys, &table) {
                (Some(keys), Some(table)) => {
                    if hash_key(keys, &l, cx, &mut buf)? {
                        table.find(&buf, &mut found);
                    } else {
                        found.clear();
                    }
                    &found
                }
                _ => &every,
            };
            let mut any = false;
            let mut left = Some(l);
            for (n, &i) in candidates.iter().enumerate() {
                let Some(l) = left.as_ref() else { break };
                // The last candidate takes the left row itself rather than a copy.
                let row = if n + 1 == candidates.len() && self.kind == JoinKind::Inner {
                    let mut row = left.take().unwrap_or_default();
                    rights.fill(i, &mut row, &self.right_cols);
                    row
                } else {
                    let mut row = l.clone();
                    rights.fill(i, &mut row, &self.right_cols);
                    row
                };
                if !passes(&self.cond, &row, cx)? {
                    continue;
                }
                any = true;
                if let Some(m) = matched.get_mut(i) {
                    *m = true;
                }
                if !sink(cx, row)? {
                    return Ok(false);
                }
            }
            if !any && self.kind != JoinKind::Inner {
                if let Some(l) = left {
                    return sink(cx, l);
                }
            }
            Ok(true)
        })?;
        if !more || !full {
            return Ok(more);
        }
        // A full join's right rows that matched nothing.
        for (i, m) in matched.into_iter().enumerate() {
            if !m && !sink(cx, rights.padded(i, &self.right_cols))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// An index nested-loop join: each left row's key looked up in the right table.
    /// A LATERAL join: the right side run for each left row, over that row.
    fn lateral_loop(&self, cx: &mut EvalCtx, sink: &mut Sink) -> SqlResult<bool> {
        self.left.produce(cx, &mut |cx, l| {
            let mut any = false;
            let more = self.right.produce_for(cx, &l, &mut |cx, r| {
                let row = merge(&l, &r, &self.right_cols);
                if !passes(&self.cond, &row, cx)? {
                    return Ok(true);
                }
                any = true;
                sink(cx, row)
            })?;
            if !more {
                return Ok(false);
            }
            if !any && self.kind == JoinKind::Left {
                return sink(cx, l);
            }
            Ok(true)
        })
    }

    /// What this index join reads its right table with, in `cx`'s command.
    pub(crate) fn index_probe<'a>(
        &'a self,
        cx: &EvalCtx<'a>,
        index: &'a str,
    ) -> SqlResult<IndexProbe<'a>> {
        let Some((read, at, width)) = self.right.padded_table() else {
            return Err(SqlError::new(code::INTERNAL, "an index join over no table"));
        };
        let reader = cx.run.and_then(|r| r.reader).ok_or_else(no_reader)?;
        Ok(IndexProbe {
            reader,
            index,
            read,
            at,
            width,
            cond: &self.cond,
        })
    }

    fn index_loop(
        &self,
        index: &str,
        keys: &[(Expr, ColumnType)],
        cx: &mut EvalCtx,
        sink: &mut Sink,
    ) -> SqlResult<bool> {
        let probe = self.index_probe(cx, index)?;
        let stats = cx.run.and_then(|r| r.stats.as_ref());
        let inner_key = self.right.key();
        self.left.produce(cx, &mut |cx, l| {
            let started = stats.map(|_| std::time::Instant::now());
            let mut found = 0u64;
            let key = index_key(keys, &l, cx)?;
            let mut any = false;
            if let Some(key) = key {
                let more = probe.matches(cx, &key, &l, &mut found, &mut |cx, row| {
                    any = true;
                    sink(cx, row)
                })?;
                if let (Some(stats), Some(t)) = (stats, started) {
                    // The lookup's time includes the rows' consumers: an estimate
                    // that errs high, as a pushed row's consumer runs inside it.
                    record(stats, inner_key, found, 1, t.elapsed().as_nanos());
                }
                if !more {
                    return Ok(false);
                }
            }
            if !any && self.kind != JoinKind::Inner {
                return sink(cx, l);
            }
            Ok(true)
        })
    }
}
