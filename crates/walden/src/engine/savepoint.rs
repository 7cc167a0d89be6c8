//! Savepoints: a transaction's changes since a mark taken back while the transaction
//! goes on (`ROLLBACK TO SAVEPOINT`), or the mark given up (`RELEASE`).
//!
//! The two table kinds take changes back their own way (docs/recovery.md rule 39):
//! - **Heap tables** take nothing back. Each savepoint has a subtransaction, an xid of
//!   its own that the versions made under it carry (PostgreSQL's subtransactions).
//!   Rolling back to the savepoint marks that xid aborted, and its versions are then
//!   invisible like any aborted transaction's; released, it commits or aborts with its
//!   transaction, whose commit or abort record lists it.
//! - **Undo tables** put their rows back from the transaction's undo entries after the
//!   savepoint's mark, logging a compensation record for each (as a whole rollback
//!   does). Their rows keep the transaction's own xid, so crash recovery takes a
//!   transaction's undo-table changes back in one order.
//!
//! Index entries made under a rolled-back savepoint stay and lead to versions no one
//! sees, as a rolled-back transaction's do, until vacuum removes them.

use super::catalog_txn::{ddl_catalog, revert_ddl};
use super::Transaction;
use crate::access;
use crate::clog::XidStatus;
use crate::error::{Error, Result};
use crate::txn::{encode_subs, ABORT};

/// One savepoint of a transaction.
#[derive(Debug)]
pub(crate) struct Level {
    /// Its subtransaction, and those of savepoints inside it that were released into
    /// it (ascending): a rollback to it aborts them all.
    subs: Vec<u64>,
    /// The transaction's undo entries when it was set.
    undo_mark: usize,
    /// WAL records the transaction had written when it was set: none since means
    /// nothing of its subtransactions is anywhere.
    records: u64,
    /// Whether the transaction was doomed (it may only roll back) before it was set: a
    /// rollback to it clears a doom that came later.
    doomed_before: bool,
    /// The transaction's catalog changes when it was set.
    ddl_mark: usize,
}

impl Transaction {
    /// Sets a savepoint inside the ones already set; returns how many are set now (its
    /// depth, what `rollback_to_savepoint` and `release_savepoint` take).
    pub fn savepoint(&mut self) -> Result<usize> {
        self.check_open()?;
        let level = self.new_level();
        self.levels.push(level);
        Ok(self.levels.len())
    }

    /// Savepoints set and not released.
    pub fn savepoints(&self) -> usize {
        self.levels.len()
    }

    /// Takes back every change made since the savepoint at `depth` was set (the
    /// savepoints inside it are gone; it stays set). Works on a doomed transaction
    /// when the doom came after the savepoint, which it then lifts.
    pub fn rollback_to_savepoint(&mut self, depth: usize) -> Result<()> {
        if self.finished {
            return Err(Error::TransactionFinished);
        }
        self.check_depth(depth)?;
        let gone = self.levels.split_off(depth - 1);
        let first = &gone[0];
        let (mark, doomed_before, ddl_mark) =
            (first.undo_mark, first.doomed_before, first.ddl_mark);
        let mut subs: Vec<u64> = gone.iter().flat_map(|l| l.subs.iter().copied()).collect();
        subs.sort_unstable();
        let wrote = self.record_count() > first.records;
        let xid = self.snapshot.xid;
        let r = self.abort_subs(&subs, (mark, ddl_mark), wrote);
        if r.is_err() {
            // Some undo-table rows may keep changes of the savepoint: the transaction
            // can only roll back as a whole now.
            self.doomed = Some("a rollback to a savepoint failed".into());
            self.db.undo.keep_unresolved(xid);
            return r;
        }
        if !doomed_before {
            self.doomed = None;
        }
        let level = self.new_level();
        self.levels.push(level);
        Ok(())
    }

    /// Gives up the savepoint at `depth` and those inside it: their changes become
    /// the enclosing savepoint's (or the transaction's).
    pub fn release_savepoint(&mut self, depth: usize) -> Result<()> {
        self.check_open()?;
        self.check_depth(depth)?;
        let gone = self.levels.split_off(depth - 1);
        let mut subs: Vec<u64> = gone.iter().flat_map(|l| l.subs.iter().copied()).collect();
        subs.sort_unstable();
        if self.record_count() == gone[0].records {
            // Nothing was written under them: their xids are on no version and in no
            // record, and need not run until the transaction ends.
            self.subs.retain(|x| subs.binary_search(x).is_err());
            self.db.txns.end_subs(&subs);
        } else if let Some(parent) = self.levels.last_mut() {
            parent.subs.extend(subs);
            parent.subs.sort_unstable();
        }
        self.writer = self.innermost_xid();
        Ok(())
    }

    /// A new innermost savepoint with a subtransaction of its own, which becomes the
    /// writer.
    fn new_level(&mut self) -> Level {
        let sub = self.db.txns.begin_sub(self.snapshot.xid);
        // Xids only grow: the list stays ascending.
        self.subs.push(sub);
        self.writer = sub;
        Level {
            subs: vec![sub],
            undo_mark: self.undo.len(),
            records: self.record_count(),
            doomed_before: self.doomed.is_some(),
            ddl_mark: self.ddl.len(),
        }
    }

    /// Aborts subtransactions rolled back to their savepoint: undo-table rows put back
    /// to `mark`, an abort record when anything was written under them, their status,
    /// and their end (their waiters wake).
    fn abort_subs(&mut self, subs: &[u64], marks: (usize, usize), wrote: bool) -> Result<()> {
        let (mark, ddl_mark) = marks;
        let xid = self.snapshot.xid;
        let undone = self.undo.len() > mark;
        if undone {
            self.db.poison.check()?;
            access::roll_back(
                &self.db.access_ctx(),
                xid,
                &mut self.undo,
                mark,
                &mut self.stats,
            )?;
        }
        // Catalog changes under them are taken back before their abort record (rule
        // 40), which no checkpoint's redo point separates from it.
        let mut cat = ddl_catalog(&self.db, self.ddl.len() > ddl_mark);
        let fence = cat.is_some().then(|| {
            self.db
                .commit_fence
                .read()
                .unwrap_or_else(|e| e.into_inner())
        });
        let freed = revert_ddl(&mut self.ddl, cat.as_deref_mut(), ddl_mark);
        if let (true, Some((&first, rest))) = (wrote, subs.split_first()) {
            self.db.poison.check()?;
            let payload = encode_subs(first, rest);
            self.db
                .wal
                .append(ABORT, first, &payload, Some(&mut self.stats))?;
        }
        drop(fence);
        drop(cat);
        self.release_pages(freed);
        for &x in subs {
            self.db.clog.set(x, XidStatus::Aborted);
        }
        self.subs.retain(|x| subs.binary_search(x).is_err());
        self.db.txns.end_subs(subs);
        if undone {
            // Waiters for rows put back wait on the transaction's own xid.
            self.db.txns.wake_rolled_back(xid);
        }
        Ok(())
    }

    fn check_depth(&self, depth: usize) -> Result<()> {
        if depth == 0 || depth > self.levels.len() {
            return Err(Error::InvalidOption(format!(
                "no savepoint at depth {depth} ({} set)",
                self.levels.len()
            )));
        }
        Ok(())
    }

    /// The xid heap versions made now carry.
    fn innermost_xid(&self) -> u64 {
        self.levels
            .last()
            .and_then(|l| l.subs.first().copied())
            .unwrap_or(self.snapshot.xid)
    }

    fn record_count(&self) -> u64 {
        self.stats.records.iter().sum()
    }
}
