//! A transaction's catalog changes (docs/recovery.md rule 40): logged under its
//! innermost savepoint's xid and applied to the catalog at once, under the catalog's
//! write lock; kept as `DdlChange`s, which its commit finishes (relations it dropped
//! go, their pages freed) and its rollback, or a rollback to a savepoint, takes back.
//! Every table it uses is locked until it ends, in PostgreSQL's modes: ACCESS SHARE to
//! read, ROW EXCLUSIVE to change rows, ACCESS EXCLUSIVE to change the definition (so
//! others wait for an uncommitted ALTER, and a DROP waits for readers).

use std::sync::Arc;

use super::Transaction;
use crate::catalog::{DdlChange, Table};
use crate::error::Result;
use crate::txn::RelLockMode;
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

    /// Locks a table in `mode` until the transaction ends (PostgreSQL's table locks:
    /// `RelLockMode`), waiting for others that hold a conflicting mode; a mode this
    /// transaction holds already costs no shared lock. Returns whether it was taken now
    /// (false: held already).
    pub fn lock_table_of(&self, t: &Table, mode: RelLockMode, nowait: bool) -> Result<bool> {
        {
            let held = self.rel_held.lock().unwrap_or_else(|e| e.into_inner());
            if held
                .iter()
                .any(|&(id, bits)| id == t.id && bits & mode.bit() != 0)
            {
                return Ok(false);
            }
        }
        self.db
            .txns
            .lock_relation(self.snapshot.xid, t.id, mode, nowait, &t.name())?;
        let mut held = self.rel_held.lock().unwrap_or_else(|e| e.into_inner());
        match held.iter_mut().find(|(id, _)| *id == t.id) {
            Some((_, bits)) => *bits |= mode.bit(),
            None => held.push((t.id, mode.bit())),
        }
        Ok(true)
    }

    /// `LOCK TABLE name IN mode MODE [NOWAIT]`.
    pub fn lock_table(&self, name: &str, mode: RelLockMode, nowait: bool) -> Result<()> {
        self.check_open()?;
        self.table_locked(name, mode, nowait).map(|_| ())
    }

    /// A table by name, locked in `mode`. Found again when the lock was taken now (a
    /// wait may have let it be dropped or renamed); a table this transaction holds any
    /// lock on cannot be (ACCESS EXCLUSIVE conflicts with every mode).
    pub(super) fn table_locked(
        &self,
        name: &str,
        mode: RelLockMode,
        nowait: bool,
    ) -> Result<Arc<Table>> {
        loop {
            let t = self.db.table(name)?;
            if !self.lock_table_of(&t, mode, nowait)? {
                return Ok(t);
            }
            match self.db.table(name) {
                Ok(again) if Arc::ptr_eq(&again, &t) => return Ok(t),
                Ok(_) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// A table by name, to read (ACCESS SHARE).
    pub(super) fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.table_locked(name, RelLockMode::AccessShare, false)
    }

    /// A table by name, to change its rows (ROW EXCLUSIVE).
    pub(super) fn table_to_write(&self, name: &str) -> Result<Arc<Table>> {
        self.table_locked(name, RelLockMode::RowExclusive, false)
    }

    /// A table by name, to change its definition (ACCESS EXCLUSIVE).
    pub(super) fn table_to_alter(&self, name: &str) -> Result<Arc<Table>> {
        self.table_locked(name, RelLockMode::AccessExclusive, false)
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
        for (pages, held) in freed {
            self.db.release_dropped(&pages, held);
        }
    }

    /// After the commit record: what the transaction dropped goes. Returns the pages of
    /// what went, for `release_dropped` once the transaction has ended (with whether a
    /// statement still held each relation).
    pub(super) fn finish_ddl(&mut self) -> Vec<(Vec<u64>, bool)> {
        if self.ddl.is_empty() {
            return Vec::new();
        }
        let changes = std::mem::take(&mut self.ddl);
        let mut cat = self.db.catalog.write().unwrap_or_else(|e| e.into_inner());
        cat.finish_drops(&changes)
    }
}
