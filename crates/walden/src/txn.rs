//! Transactions: ids, the set of active transactions, snapshots, and waiting for another
//! transaction (with deadlock detection).
//!
//! A snapshot sees the transactions that committed before it was taken: one for a whole
//! REPEATABLE READ transaction (snapshot isolation), one per statement under READ
//! COMMITTED (`statement_snapshot`). A writer that finds a row changed by a transaction
//! still running waits for it; if that one commits, a REPEATABLE READ writer fails with a
//! serialization error (first updater wins) and a READ COMMITTED one goes on with the
//! row's newest version (`engine/transaction.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::clog::{Clog, XidStatus};
use crate::error::{Error, Result};
use crate::wal::{LogRecord, RecordOwner, RecordType, RedoCtx};

pub use crate::error::WaitStop;

/// What stops a transaction's waits for others (a SQL session's cancel request,
/// `statement_timeout` and `lock_timeout`), shared with the session: it sets the
/// deadlines as each statement starts, with atomic stores only. A wait looks at them
/// every 50 ms.
#[derive(Debug)]
pub struct WaitLimits {
    cancel: Arc<AtomicBool>,
    base: std::time::Instant,
    /// The statement's deadline in microseconds after `base` (0: none).
    deadline: AtomicU64,
    /// Most microseconds one wait may last (0: no limit).
    lock_timeout: AtomicU64,
}

impl WaitLimits {
    pub fn new(cancel: Arc<AtomicBool>) -> WaitLimits {
        WaitLimits {
            cancel,
            base: std::time::Instant::now(),
            deadline: AtomicU64::new(0),
            lock_timeout: AtomicU64::new(0),
        }
    }

    /// A statement starts with `statement_timeout` and `lock_timeout` (None: none).
    pub fn statement_starts(
        &self,
        statement_timeout: Option<std::time::Duration>,
        lock_timeout: Option<std::time::Duration>,
    ) {
        let micros =
            |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1);
        let deadline = statement_timeout
            .map(|t| micros(self.base.elapsed() + t))
            .unwrap_or(0);
        self.deadline.store(deadline, Ordering::Relaxed);
        self.lock_timeout
            .store(lock_timeout.map(micros).unwrap_or(0), Ordering::Relaxed);
    }

    /// Why a wait that began at `started` must stop now, if it must.
    fn stop(&self, started: std::time::Instant) -> Option<WaitStop> {
        if self.cancel.load(Ordering::Relaxed) {
            return Some(WaitStop::Canceled);
        }
        let now = self.base.elapsed().as_micros() as u64;
        let deadline = self.deadline.load(Ordering::Relaxed);
        if deadline != 0 && now >= deadline {
            return Some(WaitStop::StatementTimeout);
        }
        let limit = self.lock_timeout.load(Ordering::Relaxed);
        if limit != 0 && started.elapsed().as_micros() as u64 >= limit {
            return Some(WaitStop::LockTimeout);
        }
        None
    }
}

/// How often a waiter with limits looks at them.
const WAIT_LOOK: std::time::Duration = std::time::Duration::from_millis(50);

/// Transaction ids are stored in 48 bits in tuple headers.
pub const MAX_XID: u64 = 1 << 48;

/// What a transaction sees.
#[derive(Debug)]
pub struct Snapshot {
    /// The transaction's own id.
    pub xid: u64,
    /// Every xid below this that is not in `active` had finished when the snapshot was taken.
    pub xmin: u64,
    /// Xids at or above this had not started.
    pub xmax: u64,
    /// Transactions running when the snapshot was taken (sorted).
    pub active: Vec<u64>,
    /// The last xid this snapshot found committed in the clog (NO_XID: none). A
    /// commit is final, so the answer holds for good; a scan meets the same inserter
    /// row after row, and asks the clog (a lock) once.
    committed: AtomicU64,
}

/// No xid: `Snapshot::committed` before any answer.
const NO_XID: u64 = u64::MAX;

impl Clone for Snapshot {
    fn clone(&self) -> Snapshot {
        Snapshot {
            xid: self.xid,
            xmin: self.xmin,
            xmax: self.xmax,
            active: self.active.clone(),
            committed: AtomicU64::new(self.committed.load(Ordering::Relaxed)),
        }
    }
}

/// Snapshots are equal when they see the same transactions (the clog answer each
/// keeps is not part of what it sees).
impl PartialEq for Snapshot {
    fn eq(&self, other: &Snapshot) -> bool {
        (self.xid, self.xmin, self.xmax, &self.active)
            == (other.xid, other.xmin, other.xmax, &other.active)
    }
}

impl Eq for Snapshot {}

impl Snapshot {
    pub fn new(xid: u64, xmin: u64, xmax: u64, active: Vec<u64>) -> Snapshot {
        Snapshot {
            xid,
            xmin,
            xmax,
            active,
            committed: AtomicU64::new(NO_XID),
        }
    }

    /// True if `xid`'s work is visible to this snapshot (ignoring the own transaction).
    pub fn sees_committed(&self, xid: u64, clog: &Clog) -> bool {
        if !(xid < self.xmax && (xid < self.xmin || self.active.binary_search(&xid).is_err())) {
            return false;
        }
        if self.committed.load(Ordering::Relaxed) == xid {
            return true;
        }
        let committed = clog.get(xid) == XidStatus::Committed;
        if committed {
            self.committed.store(xid, Ordering::Relaxed);
        }
        committed
    }
}

struct State {
    next_xid: u64,
    /// Active transactions and the xmin of their snapshot.
    active: BTreeMap<u64, u64>,
    /// Running subtransactions (savepoints that wrote to a heap table) and the
    /// transaction each belongs to: PostgreSQL's pg_subtrans for the xids still
    /// running. A subtransaction is running until it is rolled back (`end_subs`) or its
    /// transaction ends (`end_family`); snapshots list them with the transactions.
    subs: BTreeMap<u64, u64>,
    /// Per transaction, how many times a rollback to a savepoint took back changes
    /// others may wait on (undo tables: the rows' own xid stays the transaction's):
    /// a waiter returns when it changes, to look at the row again.
    rolled_back: HashMap<u64, u64>,
    /// Who waits for whom (one edge per waiting transaction).
    waits_for: HashMap<u64, u64>,
    /// A condition per transaction someone waits for, signalled when it ends: only its
    /// waiters wake (one condition for all woke every waiter at every end, which with
    /// many sessions queued on a few hot rows cost more than the work).
    wakers: HashMap<u64, Arc<Condvar>>,
    /// Key locks by key, and the keys each transaction holds (released by `end`).
    key_locks: HashMap<Vec<u8>, KeyHolders>,
    keys_held: HashMap<u64, Vec<Vec<u8>>>,
    /// Table locks (PostgreSQL's eight modes) by table id: each holder's modes as bits;
    /// and the tables each transaction holds locks on (released by `end`).
    rel_locks: HashMap<u32, Vec<(u64, u8)>>,
    rels_held: HashMap<u64, Vec<u32>>,
    /// Advisory locks (PostgreSQL's `pg_advisory_lock` family) by key, with their
    /// holders; backends (a SQL session each) and the transaction each runs, so that
    /// a wait for a backend's lock is followed to what that backend waits for.
    advisory: HashMap<AdvisoryKey, Vec<AdvisoryHold>>,
    backend_xid: HashMap<u64, u64>,
    xid_backend: HashMap<u64, u64>,
    /// Who waits for an advisory lock of which backend (one edge per waiting
    /// transaction, as `waits_for`).
    waits_for_backend: HashMap<u64, u64>,
    /// Signalled whenever an advisory lock is released.
    advisory_released: Arc<Condvar>,
    /// Transactions holding transaction-level advisory locks (released at their end).
    xact_advisory: std::collections::HashSet<u64>,
    /// What stops the waits of each transaction that has limits (`begin_for`).
    limits: HashMap<u64, Arc<WaitLimits>>,
    next_backend: u64,
}

/// PostgreSQL's table lock modes (`LOCK TABLE … IN … MODE`), weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RelLockMode {
    AccessShare,
    RowShare,
    RowExclusive,
    ShareUpdateExclusive,
    Share,
    ShareRowExclusive,
    Exclusive,
    AccessExclusive,
}

impl RelLockMode {
    pub const ALL: [RelLockMode; 8] = [
        RelLockMode::AccessShare,
        RelLockMode::RowShare,
        RelLockMode::RowExclusive,
        RelLockMode::ShareUpdateExclusive,
        RelLockMode::Share,
        RelLockMode::ShareRowExclusive,
        RelLockMode::Exclusive,
        RelLockMode::AccessExclusive,
    ];

    pub fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The modes it conflicts with, as bits (PostgreSQL's table of conflicting lock
    /// modes).
    pub fn conflicts(self) -> u8 {
        use RelLockMode::*;
        let bits = |modes: &[RelLockMode]| modes.iter().fold(0u8, |b, m| b | m.bit());
        match self {
            AccessShare => bits(&[AccessExclusive]),
            RowShare => bits(&[Exclusive, AccessExclusive]),
            RowExclusive => bits(&[Share, ShareRowExclusive, Exclusive, AccessExclusive]),
            ShareUpdateExclusive => bits(&[
                ShareUpdateExclusive,
                Share,
                ShareRowExclusive,
                Exclusive,
                AccessExclusive,
            ]),
            Share => bits(&[
                RowExclusive,
                ShareUpdateExclusive,
                ShareRowExclusive,
                Exclusive,
                AccessExclusive,
            ]),
            ShareRowExclusive => bits(&[
                RowExclusive,
                ShareUpdateExclusive,
                Share,
                ShareRowExclusive,
                Exclusive,
                AccessExclusive,
            ]),
            Exclusive => !bits(&[AccessShare]),
            AccessExclusive => u8::MAX,
        }
    }

    /// The mode's name as `pg_locks.mode` shows it.
    pub fn name(self) -> &'static str {
        match self {
            RelLockMode::AccessShare => "AccessShareLock",
            RelLockMode::RowShare => "RowShareLock",
            RelLockMode::RowExclusive => "RowExclusiveLock",
            RelLockMode::ShareUpdateExclusive => "ShareUpdateExclusiveLock",
            RelLockMode::Share => "ShareLock",
            RelLockMode::ShareRowExclusive => "ShareRowExclusiveLock",
            RelLockMode::Exclusive => "ExclusiveLock",
            RelLockMode::AccessExclusive => "AccessExclusiveLock",
        }
    }
}

/// An advisory lock's key: PostgreSQL's one 64-bit key (`pg_advisory_lock(bigint)`,
/// kind 1) and pair of 32-bit keys (`pg_advisory_lock(int, int)`, kind 2) are apart.
pub type AdvisoryKey = (u8, i64);

/// One backend's hold of an advisory lock: at session level (`xact` None: until
/// unlocked or the backend ends) or for a transaction (until it ends), shared or
/// exclusive, taken `count` times.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AdvisoryHold {
    backend: u64,
    xact: Option<u64>,
    shared: bool,
    count: u32,
}

impl State {
    /// Whether `xid` is a running transaction or subtransaction.
    fn running(&self, xid: u64) -> bool {
        self.active.contains_key(&xid) || self.subs.contains_key(&xid)
    }

    /// The transaction `xid` belongs to (itself, unless it is a running
    /// subtransaction).
    fn top_of(&self, xid: u64) -> u64 {
        self.subs.get(&xid).copied().unwrap_or(xid)
    }

    /// Removes the advisory holds `gone` picks, waking the waiters if any went.
    fn release_advisory(&mut self, gone: impl Fn(&AdvisoryHold) -> bool) {
        let mut any = false;
        self.advisory.retain(|_, holds| {
            let before = holds.len();
            holds.retain(|h| !gone(h));
            any |= holds.len() != before;
            !holds.is_empty()
        });
        if any {
            self.advisory_released.notify_all();
        }
    }

    /// Whether the waits from transaction `from` (a top xid) lead back to `me`: through
    /// the transactions each waits for, and through the backends whose advisory locks
    /// each waits for, to the transaction that backend runs.
    fn leads_to(&self, from: u64, me: u64) -> bool {
        let mut cur = from;
        let limit = self.waits_for.len() + self.waits_for_backend.len() + 1;
        for _ in 0..=limit {
            if cur == me {
                return true;
            }
            let next = match (self.waits_for.get(&cur), self.waits_for_backend.get(&cur)) {
                (Some(&x), _) => self.top_of(x),
                (None, Some(b)) => match self.backend_xid.get(b) {
                    Some(&x) => x,
                    None => return false,
                },
                (None, None) => return false,
            };
            cur = next;
        }
        // A longer chain than there are edges: a cycle not through `me`, already
        // reported to one of its own.
        false
    }

    /// The running transactions and subtransactions, sorted, leaving out `me` and its
    /// own subtransactions (a snapshot's `active`).
    fn running_except(&self, me: Option<u64>) -> Vec<u64> {
        let mine = |x: &u64| Some(*x) == me;
        let tops = self.active.keys().copied().filter(|x| !mine(x));
        if self.subs.is_empty() {
            return tops.collect();
        }
        let mut all: Vec<u64> = tops
            .chain(
                self.subs
                    .iter()
                    .filter(|(_, top)| !mine(top))
                    .map(|(x, _)| *x),
            )
            .collect();
        all.sort_unstable();
        all
    }
}

/// How a key lock is held: shared by transactions that need the key to stay (a child
/// row that references it), exclusive by one that removes or changes it (the referenced
/// row's delete or key update). See docs/ARCHITECTURE.md, "Foreign keys".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLockMode {
    Share,
    Exclusive,
}

/// The holders of one key lock: any number of sharers, or one exclusive holder (who may
/// also be among the sharers: a transaction upgrades its own lock).
#[derive(Debug, Default)]
struct KeyHolders {
    shared: Vec<u64>,
    exclusive: Option<u64>,
}

/// The transaction manager. All fields guarded by `state`.
pub struct TxnManager {
    state: Mutex<State>,
    /// Every transaction below this xid ended before the redo point of a completed
    /// checkpoint (0 until one completes in this process): none of its records is ever
    /// replayed again. See `heap::prune_plan` for why pruning needs it.
    checkpointed: AtomicU64,
    /// The first xid of this open (see `first_xid`).
    first_xid: u64,
}

impl TxnManager {
    pub fn new(next_xid: u64) -> TxnManager {
        TxnManager {
            state: Mutex::new(State {
                next_xid: next_xid.max(1),
                active: BTreeMap::new(),
                subs: BTreeMap::new(),
                rolled_back: HashMap::new(),
                waits_for: HashMap::new(),
                wakers: HashMap::new(),
                key_locks: HashMap::new(),
                keys_held: HashMap::new(),
                rel_locks: HashMap::new(),
                rels_held: HashMap::new(),
                advisory: HashMap::new(),
                backend_xid: HashMap::new(),
                xid_backend: HashMap::new(),
                waits_for_backend: HashMap::new(),
                advisory_released: Arc::new(Condvar::new()),
                xact_advisory: std::collections::HashSet::new(),
                limits: HashMap::new(),
                next_backend: 1,
            }),
            checkpointed: AtomicU64::new(0),
            first_xid: next_xid.max(1),
        }
    }

    /// The first xid handed out since the database was opened (the `next_xid` recovery
    /// found). Every xid below it ended before the open: it committed, and every
    /// snapshot of this open sees it, or recovery rolled it back (docs/recovery.md rules
    /// 17 and 24). Undo pointers in rows whose xid is below it were made by an earlier
    /// open and name nothing in this one's undo log (rule 22a).
    pub fn first_xid(&self) -> u64 {
        self.first_xid
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
        self.begin_for(None)
    }

    /// As `begin`, for backend `backend` whose waits stop as `limits` say
    /// (under the same lock).
    pub fn begin_for(&self, backend: Option<(u64, Arc<WaitLimits>)>) -> Snapshot {
        let mut st = self.lock();
        let xid = st.next_xid;
        st.next_xid += 1;
        let active = st.running_except(None);
        let xmin = active.first().copied().unwrap_or(xid);
        st.active.insert(xid, xmin);
        if let Some((b, limits)) = backend {
            st.backend_xid.insert(b, xid);
            st.xid_backend.insert(xid, b);
            st.limits.insert(xid, limits);
        }
        Snapshot::new(xid, xmin, xid, active)
    }

    /// A new subtransaction of the running transaction `top` (a savepoint's, at its
    /// first change to a heap table): an xid of its own, running until `end_subs` or
    /// `end_family`.
    pub fn begin_sub(&self, top: u64) -> u64 {
        let mut st = self.lock();
        let xid = st.next_xid;
        st.next_xid += 1;
        st.subs.insert(xid, top);
        xid
    }

    /// Ends subtransactions rolled back to their savepoint (after their status is in
    /// the clog): waiters for them wake.
    pub fn end_subs(&self, subs: &[u64]) {
        let mut st = self.lock();
        let mut wake = Vec::new();
        for x in subs {
            st.subs.remove(x);
            wake.extend(st.wakers.remove(x));
        }
        drop(st);
        for w in wake {
            w.notify_all();
        }
    }

    /// Wakes the waiters for the running transaction `top` to look again at what they
    /// wait on: a rollback to a savepoint took back changes of its that keep its own
    /// xid (undo tables).
    pub fn wake_rolled_back(&self, top: u64) {
        let mut st = self.lock();
        if let Some(w) = st.wakers.get(&top).cloned() {
            *st.rolled_back.entry(top).or_default() += 1;
            drop(st);
            w.notify_all();
        }
    }

    /// Ends a transaction (after its status is in the clog).
    pub fn end(&self, xid: u64) {
        self.end_family(xid, &[]);
    }

    /// Ends a transaction and its running subtransactions `subs` (after their status is
    /// in the clog), under one lock: no snapshot sees one ended and another not.
    pub fn end_family(&self, xid: u64, subs: &[u64]) {
        let mut st = self.lock();
        st.active.remove(&xid);
        st.waits_for.remove(&xid);
        st.rolled_back.remove(&xid);
        st.limits.remove(&xid);
        if let Some(b) = st.xid_backend.remove(&xid) {
            if st.backend_xid.get(&b) == Some(&xid) {
                st.backend_xid.remove(&b);
            }
        }
        if st.xact_advisory.remove(&xid) {
            st.release_advisory(|h| h.xact == Some(xid));
        }
        let mut sub_waiters = Vec::new();
        for x in subs {
            st.subs.remove(x);
            sub_waiters.extend(st.wakers.remove(x));
        }
        // Key locks go with the transaction, under the lock that ends it: a waiter woken
        // by this end finds them gone.
        if let Some(keys) = st.keys_held.remove(&xid) {
            for k in keys {
                let empty = st.key_locks.get_mut(&k).is_some_and(|h| {
                    h.shared.retain(|&x| x != xid);
                    if h.exclusive == Some(xid) {
                        h.exclusive = None;
                    }
                    h.shared.is_empty() && h.exclusive.is_none()
                });
                if empty {
                    st.key_locks.remove(&k);
                }
            }
        }
        if let Some(rels) = st.rels_held.remove(&xid) {
            for r in rels {
                let empty = st.rel_locks.get_mut(&r).is_some_and(|h| {
                    h.retain(|&(x, _)| x != xid);
                    h.is_empty()
                });
                if empty {
                    st.rel_locks.remove(&r);
                }
            }
        }
        // A waiter puts its condition in `wakers` before it waits, under this lock: with
        // none there, no one needs waking (and most ends make no system call).
        let waiters = st.wakers.remove(&xid);
        drop(st);
        if let Some(w) = waiters {
            w.notify_all();
        }
        for w in sub_waiters {
            w.notify_all();
        }
    }

    /// A new backend id (a SQL session's, for its advisory locks).
    pub fn new_backend(&self) -> u64 {
        let mut st = self.lock();
        let b = st.next_backend;
        st.next_backend += 1;
        b
    }

    /// Takes an advisory lock for `backend`, whose running transaction is `me`: at
    /// session level, or for `me` (`xact`), shared or exclusive. Locks of one backend
    /// never conflict with each other; a lock taken again is counted. Without `wait`,
    /// returns false at once when another backend holds the lock in a conflicting mode;
    /// with it, waits (40P01 `Deadlock` when the wait would close a cycle, through
    /// advisory locks and row waits alike). A wait asks `stop` every 50 ms and gives
    /// up, with None, when it says so (the caller's cancel or statement timeout).
    pub fn advisory_lock(
        &self,
        me: u64,
        backend: u64,
        key: AdvisoryKey,
        (shared, xact, wait): (bool, bool, bool),
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<bool>> {
        let mut st = self.lock();
        let me = st.top_of(me);
        let xact = xact.then_some(me);
        let started = std::time::Instant::now();
        loop {
            let holds = st.advisory.entry(key).or_default();
            let blocker = holds
                .iter()
                .find(|h| h.backend != backend && !(shared && h.shared))
                .map(|h| h.backend);
            let Some(other) = blocker else {
                match holds
                    .iter_mut()
                    .find(|h| h.backend == backend && h.xact == xact && h.shared == shared)
                {
                    Some(h) => h.count += 1,
                    None => holds.push(AdvisoryHold {
                        backend,
                        xact,
                        shared,
                        count: 1,
                    }),
                }
                if xact.is_some() {
                    st.xact_advisory.insert(me);
                }
                return Ok(Some(true));
            };
            if !wait {
                return Ok(Some(false));
            }
            if stop() {
                return Ok(None);
            }
            if let Some(why) = st.limits.get(&me).and_then(|l| l.stop(started)) {
                return Err(Error::WaitStopped(why));
            }
            if let Some(&x) = st.backend_xid.get(&other) {
                if st.leads_to(x, me) {
                    return Err(Error::Deadlock);
                }
            }
            st.waits_for_backend.insert(me, other);
            let w = Arc::clone(&st.advisory_released);
            st = match w.wait_timeout(st, WAIT_LOOK) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
            st.waits_for_backend.remove(&me);
        }
    }

    /// Releases one session-level hold of `backend` on the lock; false when it holds
    /// none in that mode.
    pub fn advisory_unlock(&self, backend: u64, key: AdvisoryKey, shared: bool) -> bool {
        let mut st = self.lock();
        let Some(holds) = st.advisory.get_mut(&key) else {
            return false;
        };
        let Some(at) = holds
            .iter()
            .position(|h| h.backend == backend && h.xact.is_none() && h.shared == shared)
        else {
            return false;
        };
        holds[at].count -= 1;
        if holds[at].count == 0 {
            holds.remove(at);
            if holds.is_empty() {
                st.advisory.remove(&key);
            }
            st.advisory_released.notify_all();
        }
        true
    }

    /// Releases every session-level advisory lock of `backend` (`pg_advisory_unlock_all`,
    /// or the backend ending).
    pub fn advisory_unlock_all(&self, backend: u64) {
        self.lock()
            .release_advisory(|h| h.backend == backend && h.xact.is_none());
    }

    /// The advisory locks held: (key, backend, held for a transaction, shared).
    pub fn advisory_locks(&self) -> Vec<(AdvisoryKey, u64, bool, bool)> {
        let st = self.lock();
        let mut v: Vec<_> = st
            .advisory
            .iter()
            .flat_map(|(k, holds)| {
                holds
                    .iter()
                    .map(move |h| (*k, h.backend, h.xact.is_some(), h.shared))
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Whether no transaction is running.
    pub fn none_active(&self) -> bool {
        self.lock().active.is_empty()
    }

    /// Whether `xid` is running: a transaction, or a subtransaction neither rolled
    /// back nor ended with its transaction.
    pub fn is_active(&self, xid: u64) -> bool {
        self.lock().running(xid)
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
    ///
    /// Either may be a subtransaction: the wait is for `other` itself (a
    /// subtransaction rolled back to its savepoint ends the wait), the cycle is looked
    /// for between the transactions they belong to. The wait also ends, early, when
    /// `other`'s transaction rolls back to a savepoint changes that keep its own xid
    /// (`wake_rolled_back`): the caller looks again at what it waits on, as after any
    /// wait.
    pub fn wait_for(&self, me: u64, other: u64) -> Result<()> {
        let mut st = self.lock();
        let me = st.top_of(me);
        if st.leads_to(st.top_of(other), me) {
            return Err(Error::Deadlock);
        }
        st.waits_for.insert(me, other);
        let generation = st.rolled_back.get(&other).copied();
        let limits = st.limits.get(&me).cloned();
        let started = std::time::Instant::now();
        while st.running(other) && st.rolled_back.get(&other).copied() == generation {
            // Taken again after each wake-up: `end` removes it as it signals.
            let w = Arc::clone(st.wakers.entry(other).or_default());
            let Some(l) = &limits else {
                st = w.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            st = match w.wait_timeout(st, WAIT_LOOK) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
            if let Some(why) = l.stop(started) {
                st.waits_for.remove(&me);
                return Err(Error::WaitStopped(why));
            }
        }
        st.waits_for.remove(&me);
        Ok(())
    }

    /// Takes a key lock for `me` until it ends, first waiting for every other holder
    /// whose hold conflicts (share conflicts with exclusive; exclusive with both).
    /// Fails with `Deadlock` when the wait would close a cycle. The key is opaque bytes
    /// the caller makes (the engine's `Transaction::lock_key` names table, columns and
    /// values in them).
    pub fn lock_key(&self, me: u64, key: &[u8], mode: KeyLockMode) -> Result<()> {
        loop {
            let mut st = self.lock();
            let h = st.key_locks.entry(key.to_vec()).or_default();
            let other = match mode {
                KeyLockMode::Share => h.exclusive.filter(|&x| x != me),
                KeyLockMode::Exclusive => h
                    .exclusive
                    .filter(|&x| x != me)
                    .or_else(|| h.shared.iter().copied().find(|&x| x != me)),
            };
            let Some(other) = other else {
                let new = match mode {
                    KeyLockMode::Share if !h.shared.contains(&me) && h.exclusive != Some(me) => {
                        h.shared.push(me);
                        true
                    }
                    KeyLockMode::Exclusive if h.exclusive != Some(me) => {
                        h.exclusive = Some(me);
                        true
                    }
                    _ => false,
                };
                if new {
                    st.keys_held.entry(me).or_default().push(key.to_vec());
                }
                return Ok(());
            };
            drop(st);
            self.wait_for(me, other)?;
        }
    }

    /// Takes a table lock for `me` until it ends, first waiting for every other holder
    /// of a conflicting mode (PostgreSQL's table, `RelLockMode::conflicts`); with
    /// `nowait`, a conflict returns false at once instead. Fails with `Deadlock` when
    /// the wait would close a cycle.
    pub fn lock_relation(
        &self,
        me: u64,
        rel: u32,
        mode: RelLockMode,
        nowait: bool,
    ) -> Result<bool> {
        loop {
            let mut st = self.lock();
            let holders = st.rel_locks.entry(rel).or_default();
            let other = holders
                .iter()
                .find(|&&(x, bits)| x != me && bits & mode.conflicts() != 0)
                .map(|&(x, _)| x);
            let Some(other) = other else {
                match holders.iter_mut().find(|(x, _)| *x == me) {
                    Some((_, bits)) => *bits |= mode.bit(),
                    None => {
                        holders.push((me, mode.bit()));
                        st.rels_held.entry(me).or_default().push(rel);
                    }
                }
                return Ok(true);
            };
            drop(st);
            if nowait {
                return Ok(false);
            }
            self.wait_for(me, other)?;
        }
    }

    /// The table locks held: (table id, holder xid, modes as `RelLockMode` bits).
    pub fn relation_locks(&self) -> Vec<(u32, u64, u8)> {
        let st = self.lock();
        let mut v: Vec<_> = st
            .rel_locks
            .iter()
            .flat_map(|(&r, h)| h.iter().map(move |&(x, bits)| (r, x, bits)))
            .collect();
        v.sort_unstable();
        v
    }

    /// The backend a running transaction belongs to, if it has one.
    pub fn backend_of(&self, xid: u64) -> Option<u64> {
        self.lock().xid_backend.get(&xid).copied()
    }

    /// A snapshot taken now for the running transaction `me`: it sees every transaction
    /// committed so far (and `me`'s own work, as any snapshot of `me` does). Foreign-key
    /// checks read with it, so that they see a concurrent commit the transaction's own
    /// snapshot misses.
    pub fn snapshot_now(&self, me: u64) -> Snapshot {
        let st = self.lock();
        let active = st.running_except(Some(me));
        Snapshot::new(
            me,
            active.first().copied().unwrap_or(st.next_xid).min(me),
            st.next_xid,
            active,
        )
    }

    /// A snapshot taken now for the running transaction `me` to read its next statement
    /// with (READ COMMITTED), which replaces the one it read with until now: as
    /// `snapshot_now`, and `me`'s xmin in the active set moves up to the new snapshot's
    /// (or to `floor`, the xmin of an older snapshot `me` still reads with, if that is
    /// lower), so that vacuum and the undo log's discard are no longer held back by what
    /// the replaced snapshot could see. The caller must no longer read with an older
    /// snapshot of `me` whose xmin is below `floor`.
    pub fn statement_snapshot(&self, me: u64, floor: Option<u64>) -> Snapshot {
        let mut st = self.lock();
        let active = st.running_except(Some(me));
        let xmin = active.first().copied().unwrap_or(st.next_xid).min(me);
        let xmax = st.next_xid;
        if let Some(held) = st.active.get_mut(&me) {
            // Never down: an xmin only rises, and a horizon read before stays valid. Nor
            // past `floor`, the oldest snapshot the transaction still reads with (a
            // cursor's).
            *held = (*held).max(xmin.min(floor.unwrap_or(u64::MAX)));
        }
        Snapshot::new(me, xmin, xmax, active)
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

/// A transaction committed. Payload: its subtransactions that commit with it (empty
/// when it had none; see `encode_subs`).
pub const COMMIT: RecordType = RecordType::new(6, "commit", 0);
/// A transaction aborted, or a subtransaction rolled back to its savepoint. Payload:
/// the subtransactions that abort with it, as `COMMIT`'s.
pub const ABORT: RecordType = RecordType::new(7, "abort", 0);

/// The payload of a commit or abort record: the subtransactions (each above the
/// record's xid, ascending) that end with it. None: an empty payload. Otherwise
/// `count varint`, then each xid as a `varint` step up from the one before (the first
/// from the record's xid).
pub fn encode_subs(xid: u64, subs: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    if subs.is_empty() {
        return out;
    }
    crate::codec::put_varint(&mut out, subs.len() as u64);
    let mut prev = xid;
    for &x in subs {
        crate::codec::put_varint(&mut out, x.saturating_sub(prev));
        prev = x;
    }
    out
}

/// The subtransactions a commit or abort record ends with its transaction, checked:
/// each above the one before, below `MAX_XID`.
pub fn decode_subs(rec: &LogRecord) -> std::result::Result<Vec<u64>, String> {
    if rec.payload.is_empty() {
        return Ok(Vec::new());
    }
    let mut r = crate::codec::Reader::new(&rec.payload, 0);
    let n = r.varint()?;
    if n == 0 || n > r.remaining() as u64 {
        return Err(format!("{n} subtransactions in {} bytes", r.remaining()));
    }
    let mut subs = Vec::with_capacity(n as usize);
    let mut prev = rec.xid;
    for _ in 0..n {
        let step = r.varint()?;
        let x = prev
            .checked_add(step)
            .filter(|&x| step > 0 && x < MAX_XID)
            .ok_or_else(|| format!("subtransaction {prev} + {step} out of order or range"))?;
        subs.push(x);
        prev = x;
    }
    if r.remaining() > 0 {
        return Err(format!(
            "{} trailing bytes in a {} record",
            r.remaining(),
            rec.rtype.name
        ));
    }
    Ok(subs)
}

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
        let subs = decode_subs(rec)?;
        if subs.is_empty() {
            return Ok(String::new());
        }
        let list: Vec<String> = subs.iter().map(|x| x.to_string()).collect();
        Ok(format!("subtransactions {}", list.join(", ")))
    }

    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> Result<()> {
        let status = if rec.rtype == COMMIT {
            XidStatus::Committed
        } else {
            XidStatus::Aborted
        };
        // Checked by the reader before redo (`check`): an error here cannot happen.
        for x in decode_subs(rec).unwrap_or_default() {
            ctx.clog.set(x, status);
        }
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

    /// PostgreSQL's table of conflicting lock modes is symmetric, ACCESS SHARE meets
    /// only ACCESS EXCLUSIVE, and a NOWAIT request for a conflicting mode returns at
    /// once while a compatible one is granted.
    #[test]
    fn table_lock_modes_conflict_as_postgresql() {
        for a in RelLockMode::ALL {
            for b in RelLockMode::ALL {
                let ab = a.conflicts() & b.bit() != 0;
                let ba = b.conflicts() & a.bit() != 0;
                assert_eq!(ab, ba, "{a:?} / {b:?}");
            }
        }
        let meets = |m: RelLockMode| {
            RelLockMode::ALL
                .into_iter()
                .filter(|o| m.conflicts() & o.bit() != 0)
                .count()
        };
        assert_eq!(meets(RelLockMode::AccessShare), 1);
        assert_eq!(meets(RelLockMode::RowExclusive), 4);
        assert_eq!(meets(RelLockMode::AccessExclusive), 8);
        let tm = TxnManager::new(1);
        let (a, b) = (tm.begin().xid, tm.begin().xid);
        assert!(tm
            .lock_relation(a, 7, RelLockMode::RowExclusive, true)
            .unwrap());
        assert!(tm
            .lock_relation(b, 7, RelLockMode::RowExclusive, true)
            .unwrap());
        assert!(!tm.lock_relation(b, 7, RelLockMode::Share, true).unwrap());
        assert_eq!(tm.relation_locks().len(), 2);
        tm.end(a);
        tm.end(b);
        assert!(tm.relation_locks().is_empty());
    }

    /// A commit or abort record's list of subtransactions as it was written reads
    /// back; bytes from a damaged log (steps of 0, a count beyond the bytes, xids past
    /// 48 bits, trailing bytes) are refused with a reason, never a panic.
    #[test]
    fn subtransaction_lists_read_back_and_damage_is_refused() {
        let rec = |xid: u64, payload: Vec<u8>| LogRecord {
            lsn: 0,
            len: 0,
            rtype: COMMIT,
            xid,
            payload,
        };
        assert_eq!(decode_subs(&rec(5, encode_subs(5, &[]))), Ok(vec![]));
        let subs = [6, 9, 1 << 40];
        assert_eq!(
            decode_subs(&rec(5, encode_subs(5, &subs))),
            Ok(subs.to_vec())
        );
        assert!(XactOwner.check(&rec(5, encode_subs(5, &subs))).is_ok());
        for bad in [
            vec![0],                                                 // a count of none
            vec![3, 1],                                              // fewer steps than the count
            vec![2, 1, 0], // a step of 0: not above the one before
            vec![1, 1, 7], // trailing bytes
            vec![1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // past 48 bits
            vec![1, 0x80], // a varint cut short
        ] {
            assert!(decode_subs(&rec(5, bad.clone())).is_err(), "{bad:?}");
            assert!(XactOwner.check(&rec(5, bad.clone())).is_err(), "{bad:?}");
        }
    }

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

    /// A snapshot keeps the last commit it found in the clog: what could go wrong is
    /// that answer given for another xid, or for one the snapshot must not see.
    #[test]
    fn a_kept_commit_answers_only_for_its_own_xid() {
        let clog = Clog::create(std::path::Path::new("unused"));
        clog.set(3, XidStatus::Committed);
        clog.set(4, XidStatus::Aborted);
        clog.set(7, XidStatus::Committed);
        let snap = Snapshot::new(9, 5, 9, vec![5, 7]);
        for _ in 0..2 {
            assert!(snap.sees_committed(3, &clog));
            assert!(!snap.sees_committed(4, &clog));
            // Committed, but running when the snapshot was taken.
            assert!(!snap.sees_committed(7, &clog));
            // Not started when it was taken.
            assert!(!snap.sees_committed(10, &clog));
            // Finished before, its status not known: not seen, and not kept.
            assert!(!snap.sees_committed(6, &clog));
        }
        clog.set(6, XidStatus::Committed);
        assert!(snap.sees_committed(6, &clog));
        assert!(snap.sees_committed(3, &clog));
        let copy = snap.clone();
        assert_eq!(copy, snap);
        assert!(copy.sees_committed(6, &clog) && !copy.sees_committed(4, &clog));
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

    #[test]
    fn key_locks_share_exclude_and_go_with_their_transaction() {
        let tm = std::sync::Arc::new(TxnManager::new(1));
        let (a, b, c) = (tm.begin().xid, tm.begin().xid, tm.begin().xid);
        tm.lock_key(a, b"k", KeyLockMode::Share).unwrap();
        tm.lock_key(b, b"k", KeyLockMode::Share).unwrap();
        // a upgrades only once b is gone; c's exclusive waits for both.
        let tm2 = tm.clone();
        let h = std::thread::spawn(move || tm2.lock_key(c, b"k", KeyLockMode::Exclusive));
        while !tm.lock().waits_for.contains_key(&c) {
            std::thread::yield_now();
        }
        assert!(!h.is_finished());
        tm.end(a);
        tm.end(b);
        assert!(h.join().is_ok_and(|r| r.is_ok()));
        assert_eq!(tm.lock().key_locks[&b"k".to_vec()].exclusive, Some(c));
        tm.end(c);
        assert!(tm.lock().key_locks.is_empty());
        assert!(tm.lock().keys_held.is_empty());
    }

    /// A statement's snapshot replaces the transaction's: its xmin in the active set
    /// moves up (not past the transaction's own xid, which the horizon must stay at or
    /// below while it runs), and the horizon with it.
    #[test]
    fn a_statement_snapshot_moves_the_horizon_up() {
        let tm = TxnManager::new(1);
        let old = tm.begin().xid;
        let me = tm.begin();
        let later = tm.begin().xid;
        assert_eq!(me.xmin, old);
        assert_eq!(tm.horizon(), old);
        tm.end(old);
        tm.end(later);
        assert_eq!(tm.horizon(), old, "the first snapshot still counts");
        let now = tm.statement_snapshot(me.xid, None);
        assert_eq!((now.xmin, now.active.clone()), (me.xid, vec![]));
        assert!(now.xmax > later);
        assert_eq!(tm.horizon(), me.xid);
    }

    #[test]
    fn a_snapshot_taken_now_sees_later_commits() {
        let tm = TxnManager::new(1);
        let a = tm.begin();
        let b = tm.begin().xid;
        let later = tm.begin().xid;
        tm.end(later);
        let now = tm.snapshot_now(a.xid);
        assert_eq!(now.active, vec![b]);
        assert!(now.xmax > later && a.xmax <= later);
    }
}
