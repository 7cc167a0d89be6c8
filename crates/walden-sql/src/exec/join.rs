//! Joins that stream their left side: the right side is read once and kept (a hash
//! table on its keys, or all its rows for a nested loop), or looked up through an index
//! for each left row; each left row pulled gives its joined rows.

use std::collections::VecDeque;

use walden::Value;

use super::Node;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::from::{hash_key, index_key, passes, Join, JoinKind, JoinMethod, RightRows};
use crate::keytable::KeyTable;

/// A hash or nested-loop join (inner, left or full) streaming its left side.
pub(super) struct BuildJoin {
    join: Join,
    left: Node,
    /// The right side, read at the first row.
    built: Option<(RightRows, Option<KeyTable>)>,
    /// A full join's right rows that matched.
    matched: Vec<bool>,
    /// Joined rows of the last left row, not yet given.
    pending: VecDeque<Vec<Value>>,
    left_done: bool,
    /// A full join's next right row to look at once the left side is done.
    unmatched_at: usize,
    found: Vec<usize>,
    buf: Vec<u8>,
}

/// An index nested-loop join: each left row's keys looked up in the right table.
pub(super) struct IndexJoin {
    join: Join,
    left: Node,
    pending: VecDeque<Vec<Value>>,
}

impl BuildJoin {
    pub(super) fn new(join: &Join, left: Node) -> BuildJoin {
        BuildJoin {
            join: join.clone(),
            left,
            built: None,
            matched: Vec::new(),
            pending: VecDeque::new(),
            left_done: false,
            unmatched_at: 0,
            found: Vec::new(),
            buf: Vec::new(),
        }
    }

    fn keys(&self) -> (Option<&Vec<Expr>>, Option<&Vec<Expr>>) {
        match &self.join.method {
            JoinMethod::Hash {
                left_keys,
                right_keys,
            } => (Some(left_keys), Some(right_keys)),
            _ => (None, None),
        }
    }

    pub(super) fn next(&mut self, cx: &mut EvalCtx) -> SqlResult<Option<Vec<Value>>> {
        if self.built.is_none() {
            let (_, right_keys) = self.keys();
            let built =
                RightRows::collect(&self.join.right, right_keys, &self.join.right_cols, cx)?;
            if self.join.kind == JoinKind::Full {
                self.matched = vec![false; built.0.len()];
            }
            self.built = Some(built);
        }
        loop {
            if let Some(row) = self.pending.pop_front() {
                return Ok(Some(row));
            }
            if self.left_done {
                return Ok(self.next_unmatched());
            }
            match self.left.next(cx)? {
                None => self.left_done = true,
                Some(l) => self.join_one(l, cx)?,
            }
        }
    }

    /// The joined rows of one left row, into `pending`.
    fn join_one(&mut self, l: Vec<Value>, cx: &mut EvalCtx) -> SqlResult<()> {
        let Some((rights, table)) = self.built.as_ref() else {
            return Ok(());
        };
        let (left_keys, _) = match &self.join.method {
            JoinMethod::Hash { left_keys, .. } => (Some(left_keys), ()),
            _ => (None, ()),
        };
        let candidates: Vec<usize> = match (left_keys, table) {
            (Some(keys), Some(table)) => {
                if hash_key(keys, &l, cx, &mut self.buf)? {
                    table.find(&self.buf, &mut self.found);
                } else {
                    self.found.clear();
                }
                std::mem::take(&mut self.found)
            }
            _ => (0..rights.len()).collect(),
        };
        let mut any = false;
        for &i in &candidates {
            let mut row = l.clone();
            rights.fill(i, &mut row, &self.join.right_cols);
            if !passes(&self.join.cond, &row, cx)? {
                continue;
            }
            any = true;
            if let Some(m) = self.matched.get_mut(i) {
                *m = true;
            }
            self.pending.push_back(row);
        }
        if left_keys.is_some() {
            self.found = candidates;
        }
        if !any && self.join.kind != JoinKind::Inner {
            self.pending.push_back(l);
        }
        Ok(())
    }

    /// A full join's right rows that matched nothing, after the left side.
    fn next_unmatched(&mut self) -> Option<Vec<Value>> {
        let (rights, _) = self.built.as_ref()?;
        while self.unmatched_at < self.matched.len() {
            let i = self.unmatched_at;
            self.unmatched_at += 1;
            if !self.matched[i] {
                return Some(rights.padded(i, &self.join.right_cols));
            }
        }
        None
    }
}

impl IndexJoin {
    pub(super) fn new(join: &Join, left: Node) -> IndexJoin {
        IndexJoin {
            join: join.clone(),
            left,
            pending: VecDeque::new(),
        }
    }

    pub(super) fn next(&mut self, cx: &mut EvalCtx) -> SqlResult<Option<Vec<Value>>> {
        loop {
            if let Some(row) = self.pending.pop_front() {
                return Ok(Some(row));
            }
            let Some(l) = self.left.next(cx)? else {
                return Ok(None);
            };
            self.join_one(l, cx)?;
        }
    }

    fn join_one(&mut self, l: Vec<Value>, cx: &mut EvalCtx) -> SqlResult<()> {
        let JoinMethod::Index { index, keys } = &self.join.method else {
            return Err(SqlError::new(
                code::INTERNAL,
                "an index join without its index",
            ));
        };
        let probe = self.join.index_probe(cx, index)?;
        let mut any = false;
        if let Some(key) = index_key(keys, &l, cx)? {
            let pending = &mut self.pending;
            probe.matches(cx, &key, &l, &mut 0, &mut |_, row| {
                any = true;
                pending.push_back(row);
                Ok(true)
            })?;
        }
        if !any && self.join.kind != JoinKind::Inner {
            self.pending.push_back(l);
        }
        Ok(())
    }
}
