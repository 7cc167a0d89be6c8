//! A transaction's catalog changes (docs/recovery.md rule 40): logged under its
//! innermost savepoint's xid and applied to the catalog at once, under the catalog's
//! write lock; kept as `DdlChange`s, which its commit finishes (relations it dropped
//! go, their pages freed) and its rollback, or a rollback to a savepoint, takes back.
//! Each table whose definition it changed carries its xid (`Table::ddl_xid`) until it
//! ends: other transactions wait for it before they use the table.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Transaction;
use crate::catalog::{DdlChange, Table};
use crate::error::Result;
use crate::wal::payload::Payload;

impl Transaction {
    /// Logs a catalog record of this transaction and keeps the change it makes. The
    /// caller holds the catalog's write lock and applies the change after (so a
    /// checkpoint's copy of the catalog has it exactly when its redo point is past the
    /// record).
    pub(super) fn log_ddl(&mut self, rec: &dyn Payload) -> Result<()> {
        self.check_open()?;
        if !self.undo_registered {
            // Recovery reads the log back to here to take the change back (or finish
            // it) if the transaction ends after a checkpoint's redo point or not at all.
            self.db.register_undo_writer(self.snapshot.xid);
            self.undo_registered = true;
        }
        let mut payload = Vec::new();
        rec.encode_payload(&mut payload);
        self.db.wal.append(
            rec.record_type(),
            self.writer,
            &payload,
            Some(&mut self.stats),
        )?;
        self.wrote = true;
        if let Some(change) = DdlChange::of_payload(rec) {
            self.ddl.push(change);
        }
        Ok(())
    }

    /// Marks a table as having its definition changed by this transaction: others
    /// wait for it to end before they use the table.
    pub(super) fn lock_definition(&mut self, t: &Arc<Table>) {
        let xid = self.snapshot.xid;
        if t.ddl_xid.swap(xid, Ordering::AcqRel) != xid {
            self.ddl_locked.push(t.clone());
        }
    }

    /// Waits while another running transaction has changed the table's definition
    /// (and not ended). Returns whether it waited (the caller looks the table up
    /// again: it may be gone or changed).
    pub(super) fn wait_definition(&self, t: &Table) -> Result<bool> {
        let other = t.ddl_xid.load(Ordering::Acquire);
        if other == 0 || other == self.snapshot.xid || !self.db.txns.is_active(other) {
            return Ok(false);
        }
        self.db.txns.wait_for(self.snapshot.xid, other)?;
        Ok(true)
    }

    /// A table by name, once no other running transaction is changing its definition.
    pub(super) fn table(&self, name: &str) -> Result<Arc<Table>> {
        loop {
            let t = self.db.table(name)?;
            if !self.wait_definition(&t)? {
                return Ok(t);
            }
        }
    }

    /// The catalog changes made since `mark` (a savepoint's), taken back. Called
    /// before the abort record that ends them is logged.
    pub(super) fn revert_ddl(&mut self, mark: usize) {
        if self.ddl.len() <= mark {
            return;
        }
        let gone = self.ddl.split_off(mark);
        let freed = {
            let mut cat = self.db.catalog.write().unwrap_or_else(|e| e.into_inner());
            cat.revert(&gone)
        };
        self.db.release_dropped(&freed, false);
    }

    /// After the commit record: what the transaction dropped goes, and its tables are
    /// free for others. Returns the pages of what went, for `release_dropped` once the
    /// transaction has ended (with whether a statement still held each relation).
    pub(super) fn finish_ddl(&mut self) -> Vec<(Vec<u64>, bool)> {
        self.unlock_definitions();
        if self.ddl.is_empty() {
            return Vec::new();
        }
        let changes = std::mem::take(&mut self.ddl);
        let mut cat = self.db.catalog.write().unwrap_or_else(|e| e.into_inner());
        cat.finish_drops(&changes)
    }

    /// The transaction's tables are free for others.
    pub(super) fn unlock_definitions(&mut self) {
        let xid = self.snapshot.xid;
        for t in self.ddl_locked.drain(..) {
            let _ = t
                .ddl_xid
                .compare_exchange(xid, 0, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}
