//! Advisory locks (PostgreSQL's `pg_advisory_lock` family): locks on numbers that mean
//! what the application says, held by a backend (a SQL session) at session level or
//! for one transaction. The lock table and its waits live with the transaction
//! manager's (`txn.rs`), so that a cycle through advisory locks and row waits is found
//! as a deadlock.

use super::{Database, Transaction};
use crate::error::Result;
pub use crate::txn::AdvisoryKey;

/// How an advisory lock is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AdvisoryMode {
    /// Shared (`_shared`): conflicts only with exclusive holds of other backends.
    pub shared: bool,
    /// For the transaction (`_xact_`): released when it ends; else at session level.
    pub xact: bool,
    /// Wait for a conflicting hold to go (else `try`: false at once).
    pub wait: bool,
}

impl Database {
    /// As `begin_with`, a transaction of backend `backend` whose waits for others (rows,
    /// keys, advisory locks) stop as `limits` say, with `Error::WaitStopped`; one lock
    /// of the transaction manager, as `begin_with`.
    pub fn begin_for(
        &self,
        isolation: super::Isolation,
        backend: u64,
        limits: std::sync::Arc<crate::txn::WaitLimits>,
    ) -> Transaction {
        Transaction::new_for(
            self.handle.inner.clone(),
            isolation,
            Some((backend, limits)),
        )
    }

    /// A new backend id: one per SQL session, whose advisory locks it names.
    pub fn new_backend(&self) -> u64 {
        self.handle.inner.txns.new_backend()
    }

    /// Releases one session-level hold of the lock by `backend`; false when it held
    /// none in that mode.
    pub fn advisory_unlock(&self, backend: u64, key: AdvisoryKey, shared: bool) -> bool {
        self.handle.inner.txns.advisory_unlock(backend, key, shared)
    }

    /// Releases every session-level advisory lock of `backend`.
    pub fn advisory_unlock_all(&self, backend: u64) {
        self.handle.inner.txns.advisory_unlock_all(backend)
    }

    /// The advisory locks held: (key, backend, held for a transaction, shared), sorted.
    pub fn advisory_locks(&self) -> Vec<(AdvisoryKey, u64, bool, bool)> {
        self.handle.inner.txns.advisory_locks()
    }

    /// The table locks held: (table id, the holder's backend if it has one, the
    /// holder's xid, the mode), one per mode held, sorted.
    pub fn relation_locks(&self) -> Vec<(u32, Option<u64>, u64, crate::txn::RelLockMode)> {
        let txns = &self.handle.inner.txns;
        let mut v = Vec::new();
        for (table, xid, bits) in txns.relation_locks() {
            let backend = txns.backend_of(xid);
            for mode in crate::txn::RelLockMode::ALL {
                if bits & mode.bit() != 0 {
                    v.push((table, backend, xid, mode));
                }
            }
        }
        v
    }
}

impl Database {
    /// Takes an advisory lock for `backend`, whose running transaction is `xid` (a SQL
    /// statement's, which holds no `Transaction` handle while it evaluates): true when
    /// taken, false when a `try` found it held, `Error::Deadlock` when waiting would
    /// close a cycle; a wait gives up with None when `stop` says so (asked every 50 ms).
    pub fn advisory_lock(
        &self,
        xid: u64,
        backend: u64,
        key: AdvisoryKey,
        mode: AdvisoryMode,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<bool>> {
        self.handle.inner.txns.advisory_lock(
            xid,
            backend,
            key,
            (mode.shared, mode.xact, mode.wait),
            stop,
        )
    }
}
