//! Transactions: ids, the set of active transactions, snapshots, and waiting for another
//! transaction (with deadlock detection).
//!
//! Snapshot isolation: a snapshot sees the transactions that committed before it was
//! taken. A writer that finds a row changed by a transaction still running waits for it;
//! if that one commits, the writer fails with a serialization error (first updater wins).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::clog::{Clog, XidStatus};
use crate::error::{Error, Result};
use crate::wal::{LogRecord, RecordOwner, RecordType, RedoCtx};

/// What a transaction sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The transaction's own id.
    pub xid: u64,
    /// Every xid below this that is not in `active` had finished when the snapshot was taken.
    pub xmin: u64,
    /// Xids at or above this had not started.
    pub xmax: u64,
    /// Transactions running when the snapshot was taken (sorted).
    pub active: Vec<u64>,
}

impl Snapshot {
    /// True if `xid`'s work is visible to this snapshot (ignoring the own transaction).
    pub fn sees_committed(&self, xid: u64, clog: &Clog) -> bool {
        xid < self.xmax
            && (xid < self.xmin || self.active.binary_search(&xid).is_err())
            && clog.get(xid) == XidStatus::Committed
    }
}

struct State {
    next_xid: u64,
    /// Active transactions and the xmin of their snapshot.
    active: BTreeMap<u64, u64>,
    /// Who waits for whom (one edge per waiting transaction).
    waits_for: HashMap<u64, u64>,
}

/// The transaction manager. All fields guarded by `state`.
pub struct TxnManager {
    state: Mutex<State>,
    ended: Condvar,
    /// Every transaction below this xid ended before the redo point of a completed
    /// checkpoint (0 until one completes in this process): none of its records is ever
    /// replayed again. See `heap::prune_plan` for why pruning needs it.
    checkpointed: AtomicU64,
}

impl TxnManager {
    pub fn new(next_xid: u64) -> TxnManager {
        TxnManager {
            state: Mutex::new(State {
                next_xid: next_xid.max(1),
                active: BTreeMap::new(),
                waits_for: HashMap::new(),
            }),
            ended: Condvar::new(),
            checkpointed: AtomicU64::new(0),
        }
    }

    /// See the field `checkpointed`.
    pub fn checkpointed_xid(&self) -> u64 {
        self.checkpointed.load(Ordering::Acquire)
    }

    /// Called once a checkpoint is complete, with `horizon()` as read before its redo
    /// point was fixed.
    pub fn set_checkpointed_xid(&self, xid: u64) {
        self.checkpointed.fetch_max(xid, Ordering::AcqRel);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a transaction: a new xid and its snapshot.
    pub fn begin(&self) -> Snapshot {
        let mut st = self.lock();
        let xid = st.next_xid;
        st.next_xid += 1;
        let active: Vec<u64> = st.active.keys().copied().collect();
        let xmin = active.first().copied().unwrap_or(xid);
        st.active.insert(xid, xmin);
        Snapshot {
            xid,
            xmin,
            xmax: xid,
            active,
        }
    }

    /// Ends a transaction (after its status is in the clog).
    pub fn end(&self, xid: u64) {
        let mut st = self.lock();
        st.active.remove(&xid);
        st.waits_for.remove(&xid);
        // A waiter enters `waits_for` before it waits, under this lock: with none there,
        // no one needs waking (and a read-only transaction's end makes no system call).
        let waiters = !st.waits_for.is_empty();
        drop(st);
        if waiters {
            self.ended.notify_all();
        }
    }

    pub fn is_active(&self, xid: u64) -> bool {
        self.lock().active.contains_key(&xid)
    }

    pub fn next_xid(&self) -> u64 {
        self.lock().next_xid
    }

    /// Oldest xid any running transaction may still need to see as running: versions
    /// deleted by transactions that committed below it are invisible to everyone.
    pub fn horizon(&self) -> u64 {
        let st = self.lock();
        st.active.values().copied().min().unwrap_or(st.next_xid)
    }

    /// Blocks until `other` ends. Fails with `Deadlock` if `other` (transitively) waits
    /// for `me`.
    pub fn wait_for(&self, me: u64, other: u64) -> Result<()> {
        let mut st = self.lock();
        let mut cur = other;
        let mut steps = 0;
        while let Some(&next) = st.waits_for.get(&cur) {
            if next == me || steps > st.waits_for.len() {
                return Err(Error::Deadlock);
            }
            cur = next;
            steps += 1;
        }
        if cur == me {
            return Err(Error::Deadlock);
        }
        st.waits_for.insert(me, other);
        while st.active.contains_key(&other) {
            st = self.ended.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.waits_for.remove(&me);
        Ok(())
    }

    /// The status of `xid` as a writer must treat it: committed, aborted (including
    /// crashed: not committed and no longer running), or in progress.
    pub fn status(&self, xid: u64, clog: &Clog) -> XidStatus {
        // Ask the active set first: a transaction sets its clog bit before it leaves the
        // set, so once it is gone its bit is final. (Reading the clog first raced with a
        // commit: an in-progress bit, then no longer active, read as aborted.)
        if self.is_active(xid) {
            return XidStatus::InProgress;
        }
        match clog.get(xid) {
            XidStatus::InProgress => XidStatus::Aborted,
            s => s,
        }
    }
}

/// A transaction committed (no payload).
pub const COMMIT: RecordType = RecordType::new(6, "commit", 0);
/// A transaction aborted (no payload).
pub const ABORT: RecordType = RecordType::new(7, "abort", 0);

/// The owner of the transaction records: their redo sets the transaction's status.
pub struct XactOwner;

impl RecordOwner for XactOwner {
    fn name(&self) -> &'static str {
        "xact"
    }

    fn types(&self) -> &'static [RecordType] {
        &[COMMIT, ABORT]
    }

    fn check(&self, rec: &LogRecord) -> std::result::Result<(), String> {
        self.describe(rec).map(|_| ())
    }

    fn describe(&self, rec: &LogRecord) -> std::result::Result<String, String> {
        match rec.payload.len() {
            0 => Ok(String::new()),
            n => Err(format!("{n} trailing bytes in a {} record", rec.rtype.name)),
        }
    }

    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> Result<()> {
        let status = if rec.rtype == COMMIT {
            XidStatus::Committed
        } else {
            XidStatus::Aborted
        };
        ctx.clog.set(rec.xid, status);
        Ok(())
    }
}

/// True for the records that end a transaction.
pub fn ends_transaction(t: RecordType) -> bool {
    t == COMMIT || t == ABORT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_see_only_earlier_commits() {
        let clog_dir = std::env::temp_dir();
        let _ = clog_dir;
        let tm = TxnManager::new(1);
        let a = tm.begin();
        let b = tm.begin();
        assert_eq!(a.xid, 1);
        assert_eq!(b.active, vec![1]);
        assert_eq!(b.xmin, 1);
        tm.end(1);
        let c = tm.begin();
        assert_eq!(c.active, vec![2]);
        assert_eq!(tm.horizon(), 1.max(b.xmin).min(c.xmin));
    }

    #[test]
    fn wait_cycle_is_a_deadlock() {
        let tm = std::sync::Arc::new(TxnManager::new(1));
        let a = tm.begin().xid;
        let b = tm.begin().xid;
        let tm2 = tm.clone();
        let h = std::thread::spawn(move || tm2.wait_for(a, b));
        // Wait until a's edge is registered.
        while !tm.lock().waits_for.contains_key(&a) {
            std::thread::yield_now();
        }
        assert!(matches!(tm.wait_for(b, a), Err(Error::Deadlock)));
        tm.end(b);
        assert!(h.join().is_ok_and(|r| r.is_ok()));
    }
}
