//! Isolation levels as PostgreSQL has them: what a transaction's statements see, and what
//! an update or delete does with a row a transaction that committed after the snapshot
//! changed.
//!
//! REPEATABLE READ is snapshot isolation: one snapshot for the whole transaction, and
//! such a row fails the write with `SerializationFailure` (first updater wins).
//!
//! READ COMMITTED takes a snapshot per statement (`Transaction::new_statement_snapshot`,
//! which the SQL layer calls as each statement starts), and a write that meets such a
//! row goes on without failing, as PostgreSQL's EvalPlanQual does: the table kind leaves
//! the row as it is and names it (`Writer::changed`, once any running writer of the row
//! has ended); the caller reads its newest version (`newest`: following a heap table's
//! update chain, or an undo table's row where it is or moved to), judges that again —
//! its WHERE condition, its new values computed from it — and has the verdict applied to
//! exactly that version (`modify_newest`), which goes round again if yet another
//! transaction changed it meanwhile. The engine never judges a row itself: the verdict
//! comes from its caller (`modify_with`'s closure, or the SQL layer between calls), so
//! no lower layer calls up. Nothing of this is logged: the changes are the ordinary
//! ones, and a crash forgets snapshots.

use super::transaction::{decode_latest, key_columns, Apply};
use crate::access;
use crate::error::Result;
use crate::schema::Row;
use crate::txn::Snapshot;
use crate::{Reader, RowAction, RowId, Transaction};

/// How a transaction sees other transactions' work (PostgreSQL's isolation levels; READ
/// UNCOMMITTED is READ COMMITTED there too, and SERIALIZABLE has no counterpart here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// A snapshot per statement; a row changed by a transaction that committed after it
    /// is judged again in its newest version.
    ReadCommitted,
    /// Snapshot isolation: one snapshot; such a row fails with `SerializationFailure`.
    RepeatableRead,
}

/// What a set-oriented update or delete did (`Transaction::modify_rows`,
/// `modify`, `modify_newest`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use = "under READ COMMITTED the rows in `changed` are left for the caller to judge again"]
pub struct Modified {
    /// Rows updated or deleted.
    pub count: u64,
    /// READ COMMITTED only: rows left as they were because a transaction that committed
    /// after the snapshot changed or deleted them. Their caller judges each one's newest
    /// version again (`Transaction::newest`, `Transaction::modify_newest`).
    pub changed: Vec<RowId>,
}

/// The newest version of a row that a READ COMMITTED write left (`Transaction::newest`),
/// with the snapshot it was read with: `modify_newest` changes exactly this version, or
/// leaves it again if a transaction changed it since.
#[derive(Debug, Clone)]
pub struct Newest {
    /// Where the version is (a heap update's new version, or an undo row's new place).
    pub id: RowId,
    pub row: Row,
    snapshot: Snapshot,
}

impl Transaction {
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Sets the isolation level of the rest of the transaction. PostgreSQL allows it
    /// only before the first statement (SQL's `SET TRANSACTION`, which the SQL layer
    /// checks); the engine applies it to the writes that follow.
    pub fn set_isolation(&mut self, isolation: Isolation) {
        self.isolation = isolation;
    }

    /// Takes a new snapshot for the statement starting: its reads see every transaction
    /// committed by now, and this transaction's own changes (by command, as always). A
    /// READ COMMITTED transaction takes one per statement; PostgreSQL's REPEATABLE READ
    /// takes its only one at the first statement, not at BEGIN, which this gives too.
    /// No reader of the snapshot it replaces may be running (none can: a `Reader`
    /// borrows the transaction).
    pub fn new_statement_snapshot(&mut self) -> Result<()> {
        self.check_open()?;
        let floor = self.held_xmins.iter().copied().min();
        self.snapshot = self.db.txns.statement_snapshot(self.snapshot.xid, floor);
        Ok(())
    }

    /// The newest version of a row a READ COMMITTED write left (`Modified::changed`),
    /// read with a snapshot taken now by the command that left it (so not the versions
    /// that command wrote itself); None when the row is gone (deleted, or changed by
    /// this very command). Starts no command.
    pub fn newest(&self, table: &str, id: RowId) -> Result<Option<Newest>> {
        self.check_open()?;
        let t = self.table(table)?;
        let snapshot = self.db.txns.snapshot_now(self.snapshot.xid);
        let view = self.view_with(&snapshot);
        let Some((at, bytes)) = access::of(t.kind).fetch(&self.db.access_ctx(), &t, id, &view)?
        else {
            return Ok(None);
        };
        let mut schema = t.schema();
        let row = decode_latest(&self.db, &t, &mut schema, at, &bytes)?;
        Ok(Some(Newest {
            id: at,
            row: schema.to_visible(row),
            snapshot,
        }))
    }

    /// A reader of the command running (started by the last `reader` or write call):
    /// it sees what that command's reads see, not the versions the command wrote. A
    /// READ COMMITTED caller judging newest versions again reads the other tables a
    /// judgement needs (subqueries) with it, as the command's first judgements did.
    pub fn command_reader(&self) -> Result<Reader<'_>> {
        self.check_open()?;
        Ok(Reader {
            txn: self,
            snapshot: &self.snapshot,
            cid: self.cid,
        })
    }

    /// Applies verdicts on newest versions (`newest`) in the command that read them:
    /// each to its version, waiting for a running writer of it. A version a transaction
    /// that committed after it was read changed is left and listed in
    /// `Modified::changed` (its id), to be read and judged again.
    pub fn modify_newest(
        &mut self,
        table: &str,
        verdicts: Vec<(Newest, RowAction)>,
    ) -> Result<Modified> {
        self.check_open()?;
        let t = self.table_to_write(table)?;
        let _ddl = t.ddl.read();
        let indexes = t.index_list();
        let cols = key_columns(&indexes);
        let schema = t.schema();
        let mut done = Modified::default();
        for (newest, action) in verdicts {
            let Some(change) = Self::change_of(&t, &schema, action)? else {
                continue;
            };
            let before = done.changed.len();
            let apply = Apply {
                snapshot: Some(&newest.snapshot),
                changed: Some(&mut done.changed),
            };
            let at = newest.id;
            let changes = [(at.slot, change)];
            self.change_page_rows(&t, at.page, &changes, &indexes, cols.as_deref(), apply)?;
            if done.changed.len() == before {
                done.count += 1;
            }
            self.db.relieve_space();
        }
        Ok(done)
    }

    /// Judges again, with `f`, the rows a READ COMMITTED write left (`first.changed`)
    /// until none is left, applying the verdicts; returns the rows changed in all,
    /// `first.count` included. `RowAction::Stop` ends it there.
    pub(super) fn judge_again(
        &mut self,
        table: &str,
        first: Modified,
        mut f: impl FnMut(RowId, &Row) -> RowAction,
    ) -> Result<u64> {
        let mut count = first.count;
        let mut left = first.changed;
        while !left.is_empty() {
            let mut verdicts = Vec::new();
            let mut stop = false;
            for id in std::mem::take(&mut left) {
                let Some(newest) = self.newest(table, id)? else {
                    continue;
                };
                match f(newest.id, &newest.row) {
                    RowAction::Keep => {}
                    RowAction::Stop => {
                        stop = true;
                        break;
                    }
                    action => verdicts.push((newest, action)),
                }
            }
            let done = self.modify_newest(table, verdicts)?;
            count += done.count;
            if stop {
                break;
            }
            left = done.changed;
        }
        Ok(count)
    }
}
