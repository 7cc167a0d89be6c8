//! ORDER BY with LIMIT as a top-N heap (`TopN`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use walden::Value;

use crate::error::SqlResult;
use crate::guard::{row_bytes, Guard};
use crate::run::RunCx;
use crate::sort_key::compare_keys;

use super::SortKey;

/// A row kept by a top-N sort. Entries order by their sort keys and then by arrival, so
/// that the heap keeps of equal rows the ones that came first, as the stable full sort
/// puts them first.
pub(super) struct TopEntry<'p> {
    pub(super) keys: Vec<Value>,
    arrival: u64,
    pub(super) row: Vec<Value>,
    /// The bytes charged to the guard for this entry.
    bytes: u64,
    order: &'p [(SortKey, bool, bool)],
}

impl Ord for TopEntry<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_keys(self.order, &self.keys, &other.keys).then(self.arrival.cmp(&other.arrival))
    }
}

impl PartialOrd for TopEntry<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for TopEntry<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for TopEntry<'_> {}

/// ORDER BY with LIMIT: the first `keep` rows of the sorted output (OFFSET plus LIMIT),
/// in a max-heap whose top is the last of them, so memory holds `keep` rows however
/// many come in.
pub(super) struct TopN<'p> {
    order: &'p [(SortKey, bool, bool)],
    keep: usize,
    pub(super) heap: BinaryHeap<TopEntry<'p>>,
    arrivals: u64,
    /// The bytes charged for the rows held.
    pub(super) bytes: u64,
}

impl<'p> TopN<'p> {
    /// A top-N keeping the first `keep` rows in `order`.
    pub(super) fn new(order: &'p [(SortKey, bool, bool)], keep: usize) -> TopN<'p> {
        TopN {
            order,
            keep,
            heap: BinaryHeap::new(),
            arrivals: 0,
            bytes: 0,
        }
    }

    /// Whether `keep` rows are held already.
    pub(super) fn full(&self) -> bool {
        self.heap.len() >= self.keep
    }

    /// Whether a row with these sort keys would be kept: it sorts before the last one
    /// kept (an equal one arrives later, so it sorts after).
    pub(super) fn admits(&self, keys: &[Value]) -> bool {
        self.heap
            .peek()
            .is_none_or(|last| compare_keys(self.order, keys, &last.keys) == Ordering::Less)
    }

    /// Publishes the sort keys of the last row kept for the table read the top-N was
    /// pushed down to (`SelectPlan::push_top`).
    pub(super) fn publish(&self, id: u64, run: &RunCx) {
        let Some(last) = self.heap.peek() else { return };
        let mut bounds = run.top_bounds.borrow_mut();
        match bounds.iter_mut().find(|(i, _)| *i == id) {
            Some((_, b)) => b.clone_from(&last.keys),
            None => bounds.push((id, last.keys.clone())),
        }
    }

    /// Offers a row; true when it was kept.
    pub(super) fn offer(
        &mut self,
        row: Vec<Value>,
        keys: Vec<Value>,
        guard: &Guard,
    ) -> SqlResult<bool> {
        let entry = TopEntry {
            bytes: row_bytes(&row) + row_bytes(&keys) + std::mem::size_of::<TopEntry>() as u64,
            keys,
            arrival: self.arrivals,
            row,
            order: self.order,
        };
        self.arrivals += 1;
        if self.heap.len() < self.keep {
            guard.charge(entry.bytes)?;
            self.bytes += entry.bytes;
            self.heap.push(entry);
            return Ok(true);
        }
        // Later arrivals are larger, so a row equal to the last kept one stays out.
        if let Some(mut last) = self.heap.peek_mut() {
            if entry < *last {
                guard.release(last.bytes);
                guard.charge(entry.bytes)?;
                self.bytes = self.bytes - last.bytes + entry.bytes;
                *last = entry;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A top-N's rows in order. Entries are totally ordered (arrival breaks ties), so an
/// unstable sort of the heap's vector gives the heap's order, faster than the heap's
/// own sort (a heapsort) when it holds many rows.
pub(super) fn sorted_entries(heap: BinaryHeap<TopEntry<'_>>) -> Vec<TopEntry<'_>> {
    let mut v = heap.into_vec();
    v.sort_unstable();
    v
}
