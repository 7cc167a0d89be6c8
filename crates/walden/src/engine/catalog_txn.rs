//! A transaction's catalog changes (docs/recovery.md rule 40): logged under its
//! innermost savepoint's xid and applied to the catalog at once, under the catalog's
//! write lock; kept as `DdlChange`s, which its commit finishes (relations it dropped
//! go, their pages freed) and its rollback, or a rollback to a savepoint, takes back.
//! Every table it uses is locked until it ends, in PostgreSQL's modes: ACCESS SHARE to
//! read, ROW EXCLUSIVE to change rows, ACCESS EXCLUSIVE to change the definition (so
//! others wait for an uncommitted ALTER, and a DROP waits for readers).

use std::sync::Arc;

use super::Transaction;
use crate::catalog::{Catalog, DdlChange, Table};
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
        // The change as the log has it (what recovery reads back, decoded alike).
        if let Ok(Some(change)) = DdlChange::decode(rec.record_type(), &payload) {
            self.ddl.push(change);
        }
        Ok(())
    }

    /// Locks a table in `mode` until the transaction ends (PostgreSQL's table locks:
    /// `RelLockMode`), waiting for others that hold a conflicting mode; a mode this
    /// transaction holds already costs no shared lock. Returns whether it was taken now
    /// (false: held already).
    pub(super) fn lock_table_of(&self, t: &Table, mode: RelLockMode, nowait: bool) -> Result<bool> {
        {
            let held = self.rel_held.lock().unwrap_or_else(|e| e.into_inner());
            if held
                .iter()
                .any(|&(id, bits)| id == t.id && bits & mode.bit() != 0)
            {
                return Ok(false);
            }
        }
        // (The table's name is read only for the error: no allocation per lock.)
        let xid = self.snapshot.xid;
        if !self.db.txns.lock_relation(xid, t.id, mode, nowait)? {
            return Err(crate::error::Error::LockNotAvailable(t.name()));
        }
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

    /// Gives back the pages of relations a commit dropped or a rollback took away
    /// (kept as they are where a statement still held the relation).
    pub(super) fn release_pages(&self, freed: Vec<(Vec<u64>, bool)>) {
        for (pages, held) in freed {
            self.db.release_dropped(&pages, held);
        }
    }
}

/// The catalog's write lock, when a transaction has catalog changes to finish or take
/// back (`pending`): taken before the commit fence (the lock order: catalog, then
/// fence, as DDL committed at once under the catalog lock takes them). Free functions
/// over the transaction's fields, so that its commit takes no extra handle.
pub(super) fn ddl_catalog(
    db: &super::Inner,
    pending: bool,
) -> Option<std::sync::RwLockWriteGuard<'_, Catalog>> {
    pending.then(|| db.catalog.write().unwrap_or_else(|e| e.into_inner()))
}

/// The catalog changes made since `mark` (a savepoint's), taken back in `cat`. Called
/// before the abort record that ends them is logged, under the commit fence. Returns
/// the pages of what went, for `Transaction::release_pages`.
pub(super) fn revert_ddl(
    ddl: &mut Vec<DdlChange>,
    cat: Option<&mut Catalog>,
    mark: usize,
) -> Vec<(Vec<u64>, bool)> {
    match cat {
        Some(cat) if ddl.len() > mark => cat.revert(&ddl.split_off(mark)),
        _ => Vec::new(),
    }
}

/// After the commit record, under the commit fence: what the transaction dropped goes
/// from `cat`. Returns the pages of what went, for `Transaction::release_pages` once the
/// transaction has ended.
pub(super) fn finish_ddl(
    ddl: &mut Vec<DdlChange>,
    cat: Option<&mut Catalog>,
) -> Vec<(Vec<u64>, bool)> {
    match cat {
        Some(cat) => cat.finish_drops(&std::mem::take(ddl)),
        None => Vec::new(),
    }
}
