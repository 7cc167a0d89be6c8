//! The in-memory undo log.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::UndoLog;
use crate::error::{Error, Result};
use crate::stats::{Stats, TxnStats};

const SEGMENT_BYTES: usize = 1 << 20;

struct Segment {
    /// Undo pointer of the first byte.
    start: u64,
    /// The records, back to back.
    bytes: Vec<u8>,
    /// Where each record starts in `bytes` (a record ends where the next starts). Kept
    /// apart from the bytes so that a pointer is the record's offset in the log.
    starts: Vec<u32>,
    /// Largest xid with a record here.
    max_xid: u64,
}

struct StoreState {
    segments: VecDeque<Segment>,
    /// Undo pointer of the next record (0 means "no undo").
    next: u64,
    live_bytes: u64,
    /// Transactions whose rollback could not finish (the database refused writes): their
    /// rows still hold their changes, so readers need their undo until a reopen.
    unresolved: BTreeSet<u64>,
}

/// The undo log of a database, in memory: records in segments written serially, shared
/// by all undo tables.
pub struct MemoryUndoLog {
    state: RwLock<StoreState>,
    limit: AtomicU64,
    stats: std::sync::Arc<Stats>,
}

impl MemoryUndoLog {
    pub fn new(limit: u64, stats: Arc<Stats>) -> MemoryUndoLog {
        MemoryUndoLog {
            state: RwLock::new(StoreState {
                segments: VecDeque::new(),
                next: 1,
                live_bytes: 0,
                unresolved: BTreeSet::new(),
            }),
            limit: AtomicU64::new(limit),
            stats,
        }
    }

    fn state(&self) -> RwLockReadGuard<'_, StoreState> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn state_mut(&self) -> RwLockWriteGuard<'_, StoreState> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl UndoLog for MemoryUndoLog {
    fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    fn set_limit(&self, bytes: u64) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    fn live_bytes(&self) -> u64 {
        self.state().live_bytes
    }

    fn append(&self, xid: u64, rec: &[u8], stats: &mut TxnStats) -> Result<u64> {
        let mut st = self.state_mut();
        let limit = self.limit();
        let need = rec.len() as u64;
        let fits_last = st
            .segments
            .back()
            .is_some_and(|s| s.bytes.len() + rec.len() <= SEGMENT_BYTES);
        let grow = if fits_last { 0 } else { SEGMENT_BYTES as u64 };
        if st.live_bytes + grow > limit.max(SEGMENT_BYTES as u64) || need > limit {
            return Err(Error::UndoFull {
                limit,
                live: st.live_bytes,
            });
        }
        let ptr = st.next;
        if !fits_last {
            st.segments.push_back(Segment {
                start: ptr,
                bytes: Vec::with_capacity(SEGMENT_BYTES),
                starts: Vec::new(),
                max_xid: 0,
            });
            st.live_bytes += SEGMENT_BYTES as u64;
        }
        let Some(seg) = st.segments.back_mut() else {
            return Err(Error::UndoFull {
                limit,
                live: st.live_bytes,
            });
        };
        seg.starts.push(seg.bytes.len() as u32);
        seg.bytes.extend_from_slice(rec);
        seg.max_xid = seg.max_xid.max(xid);
        st.next += need;
        drop(st);
        self.stats.undo_records.fetch_add(1, Ordering::Relaxed);
        self.stats.undo_bytes.fetch_add(need, Ordering::Relaxed);
        stats.undo_records += 1;
        stats.undo_bytes += need;
        Ok(ptr)
    }

    /// An error for a discarded record would be a bug: only records no snapshot needs
    /// are discarded.
    fn read(&self, ptr: u64) -> std::result::Result<Vec<u8>, String> {
        let st = self.state();
        let i = st.segments.partition_point(|s| s.start <= ptr);
        let seg = i
            .checked_sub(1)
            .and_then(|i| st.segments.get(i))
            .ok_or_else(|| format!("undo record {ptr} was discarded"))?;
        let not_a_start = || format!("undo pointer {ptr} is not the start of a record");
        let at = u32::try_from(ptr - seg.start).map_err(|_| not_a_start())?;
        let i = seg.starts.binary_search(&at).map_err(|_| not_a_start())?;
        let at = at as usize;
        let end = seg
            .starts
            .get(i + 1)
            .map_or(seg.bytes.len(), |&e| e as usize);
        let record = seg
            .bytes
            .get(at..end)
            .ok_or_else(|| format!("undo record {ptr} is cut short"))?;
        Ok(record.to_vec())
    }

    fn discard(&self, horizon: &mut dyn FnMut() -> u64) {
        let horizon = {
            let st = self.state();
            let Some(front) = st.segments.front() else {
                return;
            };
            let h = horizon();
            if front.max_xid >= h {
                return;
            }
            h
        };
        let mut st = self.state_mut();
        while let Some(front) = st.segments.front() {
            let pinned = st.unresolved.range(..=front.max_xid).next().is_some();
            if front.max_xid >= horizon || pinned {
                break;
            }
            st.segments.pop_front();
            st.live_bytes -= SEGMENT_BYTES as u64;
        }
    }

    fn keep_unresolved(&self, xid: u64) {
        self.state_mut().unresolved.insert(xid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_appends_reads_discards_and_bounds() {
        let stats = Arc::new(Stats::default());
        let store = MemoryUndoLog::new(4 << 20, stats.clone());
        let mut ts = TxnStats::default();
        let rec = vec![3u8, 1, 4, 1, 5];
        let p1 = store.append(10, &rec, &mut ts).unwrap();
        assert_ne!(p1, 0, "0 means no undo");
        assert_eq!(store.read(p1).unwrap(), rec);
        // Accounting counts the record's bytes, not the framing.
        assert_eq!((ts.undo_records, ts.undo_bytes), (1, 5));
        let p2 = store.append(10, &[], &mut ts).unwrap();
        assert_eq!(store.read(p2).unwrap(), Vec::<u8>::new());
        // Fill past the limit: the append that would exceed it fails.
        let big = vec![7u8; 60_000];
        let mut n = 0;
        let err = loop {
            match store.append(11, &big, &mut ts) {
                Ok(p) => {
                    assert_eq!(store.read(p).unwrap(), big);
                    n += 1
                }
                Err(e) => break e,
            }
        };
        assert!(matches!(err, Error::UndoFull { .. }), "{err}");
        assert!(n > 0 && store.live_bytes() <= 4 << 20);
        // Horizon below the writers: nothing goes. Above: everything.
        store.discard(&mut || 10);
        assert!(store.read(p1).is_ok());
        store.keep_unresolved(11);
        store.discard(&mut || 100);
        assert!(
            store.read(p1).is_ok(),
            "unresolved transaction pins its undo"
        );
        let store = MemoryUndoLog::new(4 << 20, Arc::new(Stats::default()));
        let p = store.append(10, &rec, &mut ts).unwrap();
        store.discard(&mut || 11);
        assert!(store.read(p).is_err());
        assert_eq!(store.live_bytes(), 0);
        // A pointer that is not a record's start, or past the end, is an error, not a
        // panic.
        let store = MemoryUndoLog::new(4 << 20, Arc::new(Stats::default()));
        let p = store.append(1, &big, &mut ts).unwrap();
        let q = store.append(1, &rec, &mut ts).unwrap();
        assert_eq!(q, p + big.len() as u64, "pointers are offsets in the log");
        assert!(store.read(p + 1).is_err());
        assert!(store.read(q + 100_000).is_err());
        assert!(
            store.read(q + (1 << 32)).is_err(),
            "offsets past u32 do not wrap"
        );
        assert_eq!(store.read(q).unwrap(), rec);
    }
}
