//! `Transaction`: rows inserted, read, changed and deleted through the table kinds, and
//! commit and rollback.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::catalog_txn::{ddl_catalog, finish_ddl, revert_ddl};
use super::isolation::{Isolation, Modified};
use super::Inner;
use crate::access::undo_table::TxnUndo;
use crate::access::{self, Change, InsertCursor, Progress, TableAccess, TxnView, Writer};
use crate::catalog::{Index, Table};
use crate::clog::XidStatus;
use crate::error::{Error, Result};
use crate::schema::Schema;
use crate::schema::{Row, RowShape, Value};
use crate::stats::TxnStats;
use crate::txn::Snapshot;
use crate::txn::{ABORT, COMMIT};
use crate::wal::payload::Payload;
use crate::RowId;

/// What `Transaction::modify_with` does with one row.
#[derive(Debug, Clone, PartialEq)]
pub enum RowAction {
    /// Leave the row as it is.
    Keep,
    /// Replace the row with these values.
    Update(Row),
    /// Delete the row.
    Delete,
    /// Stop the scan here; rows changed so far stay changed.
    Stop,
}

/// A transaction. Dropping it without `commit` rolls it back.
pub struct Transaction {
    /// The database it runs in: owned, so a transaction can move to another thread or
    /// outlive the handle that began it.
    pub(super) db: Arc<Inner>,
    pub(super) snapshot: Snapshot,
    pub(super) cid: u32,
    pub(super) stats: TxnStats,
    pub(super) wrote: bool,
    pub(super) finished: bool,
    /// The xmins of snapshots held past their statement (`hold_snapshot`): a new
    /// statement's snapshot never lets the transaction's horizon pass them.
    pub(super) held_xmins: Vec<u64>,
    /// Wait for the commit record to be durable before `commit` returns.
    synchronous_commit: bool,
    /// Changes to undo tables, for rollback.
    pub(super) undo: TxnUndo,
    /// Registered as an undo-table writer (see `Inner::register_undo_writer`).
    pub(super) undo_registered: bool,
    /// A row change whose index entries failed stays applied: the transaction may then
    /// only roll back (what failed).
    pub(super) doomed: Option<String>,
    /// What a row changed by a transaction that committed after the snapshot does to a
    /// write (`engine/isolation.rs`).
    pub(super) isolation: Isolation,
    /// The log must be durable up to here before the transaction ends, committed or
    /// not: it used values of a sequence logged there (docs/recovery.md rule 38).
    durable_lsn_needed: u64,
    /// The savepoints set and not released, oldest first (`engine/savepoint.rs`).
    pub(super) levels: Vec<super::savepoint::Level>,
    /// The running subtransactions (ascending): those of `levels` and those released
    /// into the transaction itself. They commit or abort with it.
    pub(super) subs: Vec<u64>,
    /// The xid heap versions made now carry: the innermost savepoint's
    /// subtransaction, or the transaction's own.
    pub(super) writer: u64,
    /// Its catalog changes, oldest first (`engine/catalog_txn.rs`).
    pub(super) ddl: Vec<crate::catalog::DdlChange>,
    /// The table locks it holds, by table id (modes as `RelLockMode` bits): a mode
    /// held already is not asked for again.
    pub(super) rel_held: std::sync::Mutex<Vec<(u32, u8)>>,
}

/// How a change is applied: the snapshot whose rows it may change (None: the
/// transaction's), and where rows changed since that snapshot go (READ COMMITTED; None:
/// they fail the change with `SerializationFailure`).
#[derive(Default)]
pub(super) struct Apply<'a> {
    pub snapshot: Option<&'a Snapshot>,
    pub changed: Option<&'a mut Vec<RowId>>,
}

impl Transaction {
    pub(super) fn new(db: Arc<Inner>, isolation: Isolation) -> Transaction {
        Transaction::new_for(db, isolation, None)
    }

    /// As `new`, bound to a backend and its wait limits (`Database::begin_for`).
    pub(super) fn new_for(
        db: Arc<Inner>,
        isolation: Isolation,
        backend: Option<(u64, Arc<crate::txn::WaitLimits>)>,
    ) -> Transaction {
        let snapshot = db.txns.begin_for(backend);
        Transaction {
            isolation,
            writer: snapshot.xid,
            levels: Vec::new(),
            subs: Vec::new(),
            snapshot,
            cid: 0,
            stats: TxnStats::default(),
            wrote: false,
            finished: false,
            synchronous_commit: db.synchronous_commit,
            undo: TxnUndo::new(db.temp.clone(), db.txn_undo_memory_bytes),
            undo_registered: false,
            doomed: None,
            durable_lsn_needed: 0,
            held_xmins: Vec::new(),
            ddl: Vec::new(),
            rel_held: std::sync::Mutex::new(Vec::new()),
            db,
        }
    }

    pub fn xid(&self) -> u64 {
        self.snapshot.xid
    }

    /// Chooses, for this transaction only, whether `commit` waits for the WAL to be
    /// durable. Off, a crash may lose the transaction but never leaves it half applied.
    pub fn set_synchronous_commit(&mut self, on: bool) {
        self.synchronous_commit = on;
    }

    /// The transaction used something logged up to `lsn` outside it (a sequence's
    /// values, `Database::nextval`): its end, commit or rollback, waits until the log is
    /// durable there (under synchronous commit), so that no value it saw is handed out
    /// again after a crash.
    pub fn needs_durable(&mut self, lsn: u64) {
        self.durable_lsn_needed = self.durable_lsn_needed.max(lsn);
    }

    /// Makes the log durable to what `needs_durable` asked (a transaction that wrote
    /// nothing of its own).
    fn settle_durable(&self) -> Result<()> {
        if self.synchronous_commit && self.durable_lsn_needed > 0 {
            self.db.wal.flush(self.durable_lsn_needed, true)?;
        }
        Ok(())
    }

    /// WAL this transaction has written so far, by record kind.
    pub fn stats(&self) -> &TxnStats {
        &self.stats
    }

    pub(super) fn check_open(&self) -> Result<()> {
        if self.finished {
            return Err(Error::TransactionFinished);
        }
        if let Some(cause) = &self.doomed {
            return Err(Error::MustRollBack {
                cause: cause.clone(),
            });
        }
        Ok(())
    }

    /// Index entries of changed rows; a failure dooms the transaction (the change
    /// itself stays applied, so it must not commit).
    fn index_changed(
        &mut self,
        t: &Table,
        indexes: &[Arc<Index>],
        rows: &[(RowId, Vec<u8>)],
    ) -> Result<()> {
        let r = self.index_rows(t, indexes, rows, None, &mut Vec::new());
        if let Err(e) = &r {
            self.doomed = Some(e.to_string());
        }
        r
    }

    /// Starts a new command: versions created by earlier commands become visible.
    pub(super) fn next_command(&mut self) -> Result<u32> {
        self.check_open()?;
        // Heap tuples keep two bits of their command id for flags.
        let max = crate::access::heap::MAX_CID;
        self.cid = self
            .cid
            .checked_add(1)
            .filter(|&c| c <= max)
            .ok_or(Error::TooManyCommands {
                max: u64::from(max),
            })?;
        Ok(self.cid)
    }

    pub(super) fn view(&self) -> TxnView<'_> {
        self.view_with(&self.snapshot)
    }

    /// A view of this transaction's command reading with `snapshot` (its own, or one
    /// taken later).
    pub(super) fn view_with<'a>(&'a self, snapshot: &'a Snapshot) -> TxnView<'a> {
        TxnView {
            snapshot,
            cid: self.cid,
            xid: self.writer,
            subs: &self.subs,
        }
    }

    pub(super) fn log(&mut self, rec: &dyn Payload) -> Result<()> {
        let mut payload = Vec::new();
        rec.encode_payload(&mut payload);
        self.db.wal.append(
            rec.record_type(),
            self.snapshot.xid,
            &payload,
            Some(&mut self.stats),
        )?;
        self.wrote = true;
        Ok(())
    }

    /// Encodes a row as the API gives it (no dropped columns), checked against the
    /// table's schema as the command read it once (not per row: the schema sits behind a
    /// lock, and DDL cannot change it while a command writes).
    fn encode(table: &Table, schema: &Schema, row: &[Value], out: &mut Vec<u8>) -> Result<()> {
        let row = schema.to_stored(row);
        schema.check(&row).map_err(|reason| Error::SchemaMismatch {
            table: table.name(),
            reason,
        })?;
        out.clear();
        schema.encode_row(&row, out);
        Ok(())
    }

    /// Inserts one row.
    pub fn insert(&mut self, table: &str, row: &[Value]) -> Result<RowId> {
        let mut once = Some(row);
        let t = self.table_to_write(table)?;
        let schema = t.schema();
        let (_, ids) = self.insert_inner(
            &t,
            &mut |out| match once.take() {
                Some(r) => Self::encode(&t, &schema, r, out).map(|()| true),
                None => Ok(false),
            },
            true,
        )?;
        ids.into_iter().next().ok_or(Error::TransactionFinished)
    }

    /// Inserts many rows in one command: rows that land on one page share one WAL record.
    pub fn insert_many<R: AsRef<[Value]>>(
        &mut self,
        table: &str,
        rows: impl IntoIterator<Item = R>,
    ) -> Result<Vec<RowId>> {
        let t = self.table_to_write(table)?;
        let schema = t.schema();
        let mut it = rows.into_iter();
        let (_, ids) = self.insert_inner(
            &t,
            &mut |out| match it.next() {
                Some(r) => Self::encode(&t, &schema, r.as_ref(), out).map(|()| true),
                None => Ok(false),
            },
            true,
        )?;
        Ok(ids)
    }

    /// Inserts rows produced by `fill`, which sets the next row in place (reusing its
    /// values) and returns false when done. Returns the number of rows inserted. `fill`
    /// may fail with an error of its caller's type: the insert stops there (rows
    /// inserted before it stay, for the caller to roll back) and that error is returned
    /// as it was, kept aside while the table kind's insert unwinds.
    pub fn insert_with<E: From<Error>>(
        &mut self,
        table: &str,
        mut fill: impl FnMut(&mut Row) -> std::result::Result<bool, E>,
    ) -> std::result::Result<u64, E> {
        let t = self.table_to_write(table)?;
        let schema = t.schema();
        let mut row: Row = vec![Value::Null; schema.visible().columns.len()];
        let mut failed = None;
        let inserted = self.insert_inner(
            &t,
            &mut |out| match fill(&mut row) {
                Ok(true) => Self::encode(&t, &schema, &row, out).map(|()| true),
                Ok(false) => Ok(false),
                Err(e) => {
                    failed = Some(e);
                    Ok(false)
                }
            },
            false,
        );
        match failed {
            Some(e) => Err(e),
            None => Ok(inserted?.0),
        }
    }

    /// Before the first change to an undo table.
    fn note_undo_writer(&mut self) {
        if !self.undo_registered {
            self.db.register_undo_writer(self.snapshot.xid);
            self.undo_registered = true;
        }
    }

    /// Runs `f` with the table kind's code and this transaction as its writer: the
    /// transaction counts as having written, and as an undo writer first if the kind
    /// keeps undo.
    pub(super) fn write<R>(
        &mut self,
        t: &Table,
        f: impl FnOnce(&dyn TableAccess, &Inner, &mut Writer) -> Result<R>,
    ) -> Result<R> {
        self.write_keyed(t, None, Apply::default(), f)
    }

    /// As `write`, for changes to rows of a table with these indexed columns (see
    /// `Writer::same_keys`), applied as `apply` says.
    fn write_keyed<R>(
        &mut self,
        t: &Table,
        key_columns: Option<&[u16]>,
        apply: Apply<'_>,
        f: impl FnOnce(&dyn TableAccess, &Inner, &mut Writer) -> Result<R>,
    ) -> Result<R> {
        // Read once for the command, not per changed row (it sits behind a lock).
        let schema = t.schema();
        let same =
            |a: &[u8], b: &[u8]| key_columns.is_some_and(|cols| schema.same_values(a, b, cols));
        // Room on disk for what the change may dirty, before it changes anything: a
        // full disk refuses this command, not a page write later (rule 20).
        self.db.pool.ensure_room(false)?;
        self.db.wal.prepare_next()?;
        let access = access::of(t.kind);
        if access.uses_undo() {
            self.note_undo_writer();
        }
        self.wrote = true;
        let view = TxnView {
            snapshot: apply.snapshot.unwrap_or(&self.snapshot),
            cid: self.cid,
            xid: self.writer,
            subs: &self.subs,
        };
        let mut w = Writer {
            view: &view,
            stats: &mut self.stats,
            undo: &mut self.undo,
            same_keys: key_columns.map(|_| &same as &dyn Fn(&[u8], &[u8]) -> bool),
            changed: apply.changed,
        };
        f(access, &self.db, &mut w)
    }

    /// Inserts the rows `next` encodes; returns how many, and their ids when `want_ids`
    /// (else the ids only a table kind or the table's indexes need are kept, and given
    /// back empty).
    fn insert_inner(
        &mut self,
        t: &Table,
        next: &mut dyn FnMut(&mut Vec<u8>) -> Result<bool>,
        want_ids: bool,
    ) -> Result<(u64, Vec<RowId>)> {
        self.next_command()?;
        let _ddl = t.ddl.read();
        let indexes = t.index_list();
        let schema = t.schema();
        // A row longer than the toast threshold stops the table kind's insert (which
        // calls for rows with a page latched): its values go out of line with no latch
        // held, and the insert goes on with it (`toast.rs`).
        let limit = super::toast::threshold(&self.db);
        let may_toast = schema.columns.iter().any(|c| super::toast::toastable(c.ty));
        let held: std::cell::Cell<Option<Vec<u8>>> = std::cell::Cell::new(None);
        // With indexes: each row's bytes as stored, for its entries, made once the rows
        // are in; a failure there (a unique violation) takes the entries and rows back.
        let keep = !indexes.is_empty();
        let bytes: std::cell::RefCell<Vec<Vec<u8>>> = Default::default();
        let mut pull = |out: &mut Vec<u8>| -> Result<bool> {
            let more = next(out)?;
            if more && may_toast && out.len() > limit {
                held.set(Some(std::mem::take(out)));
                return Ok(false);
            }
            if more && keep {
                bytes.borrow_mut().push(out.clone());
            }
            Ok(more)
        };
        let mut made = Vec::new();
        let mut cursor = InsertCursor::new(&mut pull, &self.undo);
        // A heap table takes a failed insert's rows back by their ids (it has no undo);
        // indexes are filled from them.
        cursor.keep_ids = want_ids || keep || !access::of(t.kind).uses_undo();
        let undo_mark = cursor.undo_mark;
        let placed = loop {
            let p = self.write(t, |access, db, w| {
                access.insert(&db.access_ctx(), t, w, &mut cursor)
            });
            match p {
                Err(e) => break Err(e),
                // Copy-on-write space pressure: relieved between pages.
                Ok(Progress::Paused) => self.db.relieve_space(),
                Ok(Progress::Done) => {
                    let Some(row) = held.take() else {
                        break Ok(());
                    };
                    match super::toast::toast_row(self, t, &schema, row, None, &mut made) {
                        Ok(row) => {
                            if keep {
                                bytes.borrow_mut().push(row.clone());
                            }
                            cursor.row = row;
                            cursor.pending = true;
                        }
                        Err(e) => break Err(e),
                    }
                }
            }
        };
        let (count, ids, last_logged) = (
            cursor.count,
            std::mem::take(&mut cursor.ids),
            cursor.last_logged.take(),
        );
        drop(cursor);
        if let Err(e) = placed {
            self.drop_values(t, &made)?;
            return Err(e);
        }
        if !keep {
            return Ok((count, ids));
        }
        let rows: Vec<(RowId, Vec<u8>)> = ids.iter().copied().zip(bytes.take()).collect();
        let mut made_entries = Vec::new();
        let fresh = last_logged.as_ref();
        if let Err(e) = self.index_rows(t, &indexes, &rows, fresh, &mut made_entries) {
            self.unindex(t, &indexes, &made_entries)?;
            self.write(t, |access, db, w| {
                access.withdraw(&db.access_ctx(), w, &ids, undo_mark)
            })?;
            self.drop_values(t, &made)?;
            return Err(e);
        }
        Ok((count, ids))
    }

    /// Deletes values this command stored out of line for rows it did not keep.
    fn drop_values(&mut self, t: &Table, made: &[crate::schema::External]) -> Result<()> {
        for p in made {
            super::toast::delete(self, t, p)?;
        }
        Ok(())
    }

    /// Before a page's changes are applied (`change_page_rows`, `change_row`): for a
    /// table that stores values out of line, the pointers each change lets go (read
    /// from the row it replaces, as `snapshot` sees it, else the transaction's); rows too
    /// long for a page get their values out of line, an unchanged value keeping its
    /// pointer. None when neither applies (a table that stores nothing out of line pays
    /// for no read).
    fn toast_changes(
        &mut self,
        t: &Table,
        page: u64,
        changes: &[(u16, Change)],
        snapshot: Option<&Snapshot>,
    ) -> Result<Option<super::toast::Plan>> {
        let limit = super::toast::threshold(&self.db);
        let stored = super::toast::has_toast(t);
        let long = |c: &Change| matches!(c, Change::Update(b) if b.len() > limit);
        let any_long = changes.iter().any(|(_, c)| long(c));
        if !stored && !any_long {
            return Ok(None);
        }
        let schema = t.schema();
        let access = access::of(t.kind);
        let mut plan = super::toast::Plan::default();
        let mut rewritten = Vec::with_capacity(if any_long { changes.len() } else { 0 });
        for (slot, c) in changes {
            let old = if stored {
                let view = self.view_with(snapshot.unwrap_or(&self.snapshot));
                let id = RowId { page, slot: *slot };
                access
                    .fetch(&self.db.access_ctx(), t, id, &view)?
                    .map(|(_, b)| b)
            } else {
                None
            };
            let new = match c {
                Change::Update(b) if long(c) => {
                    let mut made = Vec::new();
                    let b = super::toast::toast_row(
                        self,
                        t,
                        &schema,
                        b.clone(),
                        old.as_deref(),
                        &mut made,
                    );
                    if !made.is_empty() {
                        plan.made.push((*slot, made));
                    }
                    match b {
                        Ok(b) => Some(b),
                        Err(e) => {
                            self.drop_values(t, &plan.made_values())?;
                            return Err(e);
                        }
                    }
                }
                _ => None,
            };
            if let Some(o) = &old {
                let kept = match (&new, c) {
                    (Some(b), _) | (None, Change::Update(b)) => super::toast::externals(&schema, b),
                    (None, Change::Delete) => Vec::new(),
                };
                let gone: Vec<_> = super::toast::externals(&schema, o)
                    .into_iter()
                    .filter(|p| !kept.contains(p))
                    .collect();
                if !gone.is_empty() {
                    plan.gone.push((*slot, gone));
                }
            }
            if any_long {
                rewritten.push((
                    *slot,
                    match (new, c) {
                        (Some(b), _) => Change::Update(b),
                        (None, Change::Update(b)) => Change::Update(b.clone()),
                        (None, Change::Delete) => Change::Delete,
                    },
                ));
            }
        }
        plan.changes = any_long.then_some(rewritten);
        Ok(Some(plan))
    }

    /// After a page's changes were applied: deletes the values the changed rows let go,
    /// and those stored for rows left unchanged (`left`: READ COMMITTED's rows changed
    /// since the snapshot).
    fn settle_values(&mut self, t: &Table, plan: &super::toast::Plan, left: &[u16]) -> Result<()> {
        let applied = |slot: &u16| !left.contains(slot);
        let gone: Vec<_> = plan
            .gone
            .iter()
            .filter(|(slot, _)| applied(slot))
            .chain(plan.made.iter().filter(|(slot, _)| !applied(slot)))
            .flat_map(|(_, ptrs)| ptrs.iter().copied())
            .collect();
        self.drop_values(t, &gone)
    }

    /// Changes rows of one page of a table as `apply` says (the caller relieves
    /// copy-on-write space pressure between pages, and holds the table's `ddl` lock
    /// shared), then gives the updated rows their index entries.
    pub(super) fn change_page_rows(
        &mut self,
        t: &Table,
        page: u64,
        changes: &[(u16, Change)],
        indexes: &[Arc<Index>],
        key_cols: Option<&[u16]>,
        mut apply: Apply<'_>,
    ) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let plan = self.toast_changes(t, page, changes, apply.snapshot)?;
        let changes = plan
            .as_ref()
            .and_then(|p| p.changes.as_deref())
            .unwrap_or(changes);
        let left_before = apply.changed.as_ref().map_or(0, |c| c.len());
        let mut updated = Vec::new();
        let reborrowed = Apply {
            snapshot: apply.snapshot,
            changed: apply.changed.as_deref_mut(),
        };
        self.write_keyed(t, key_cols, reborrowed, |access, db, w| {
            access.change_rows(&db.access_ctx(), t, w, page, changes, &mut updated)
        })?;
        if let Some(plan) = &plan {
            let left: Vec<u16> = apply
                .changed
                .as_ref()
                .map(|c| {
                    c[left_before..]
                        .iter()
                        .filter(|id| id.page == page)
                        .map(|id| id.slot)
                        .collect()
                })
                .unwrap_or_default();
            self.settle_values(t, plan, &left)?;
        }
        if indexes.is_empty() || updated.is_empty() {
            return Ok(());
        }
        // `updated` follows the updates' order, less the rows left aside (the
        // `change_rows` contract): each finds its bytes further on in `changes`.
        let mut updates = changes.iter().filter_map(|(slot, c)| match c {
            Change::Update(b) => Some((*slot, b)),
            Change::Delete => None,
        });
        let rows: Vec<(RowId, Vec<u8>)> = updated
            .iter()
            .filter_map(|u| {
                let (_, b) = updates.find(|(slot, _)| *slot == u.old.slot)?;
                u.reindex.then(|| (u.new, b.clone()))
            })
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        self.index_changed(t, indexes, &rows)
    }

    /// Changes one row (found through its id, following a move), then relieves
    /// copy-on-write space pressure if there is any, and gives an updated row its index
    /// entries. Returns the row's new id.
    fn change_row(&mut self, t: &Table, id: RowId, change: Change) -> Result<RowId> {
        let _ddl = t.ddl.read();
        let one = [(id.slot, change)];
        let mut plan = self.toast_changes(t, id.page, &one, None)?;
        let [(_, mut change)] = one;
        if let Some(rewritten) = plan.as_mut().and_then(|p| p.changes.take()) {
            change = rewritten.into_iter().next().map_or(change, |(_, c)| c);
        }
        let r = self.change_row_inner(t, id, change);
        if let Some(plan) = &plan {
            match &r {
                Ok(_) => self.settle_values(t, plan, &[])?,
                Err(_) => self.drop_values(t, &plan.made_values())?,
            }
        }
        r
    }

    fn change_row_inner(&mut self, t: &Table, id: RowId, change: Change) -> Result<RowId> {
        let indexes = t.index_list();
        let bytes = match &change {
            Change::Update(b) if !indexes.is_empty() => Some(b.clone()),
            _ => None,
        };
        let cols = key_columns(&indexes);
        let r = self.write_keyed(t, cols.as_deref(), Apply::default(), |access, db, w| {
            access.change_row(&db.access_ctx(), t, w, id, change)
        });
        self.db.relieve_space();
        let Some(u) = r? else {
            return Ok(id);
        };
        if let Some(b) = bytes.filter(|_| u.reindex) {
            self.index_changed(t, &indexes, &[(u.new, b)])?;
        }
        Ok(u.new)
    }

    /// The version of a row visible to this transaction (following updates).
    pub fn get(&mut self, table: &str, id: RowId) -> Result<Option<Row>> {
        self.reader()?.get(table, id)
    }

    /// A stored row as the API shows it (no dropped columns).
    pub(super) fn decode(&self, t: &Table, id: RowId, bytes: &[u8]) -> Result<Row> {
        let row = super::index::decode_row(&self.db, t, id, bytes)?;
        Ok(t.schema().to_visible(row))
    }

    /// Starts a read-only command and returns what reads it: every read through the
    /// reader sees the database as the command started (the transaction's snapshot and
    /// its own changes made before), however many reads there are and however they
    /// nest (a join reading one table inside another's scan, a subquery per row).
    pub fn reader(&mut self) -> Result<Reader<'_>> {
        let cid = self.next_command()?;
        Ok(Reader {
            txn: self,
            snapshot: &self.snapshot,
            cid,
        })
    }

    /// Starts a read-only command whose reads see every transaction committed by now,
    /// not only those the transaction's snapshot sees (and its own changes, as any read
    /// does), and runs `f` with it. Foreign-key checks read this way: a parent row
    /// deleted, or a child row inserted, by a transaction that committed after this one
    /// began must not go unseen (docs/ARCHITECTURE.md, "Foreign keys").
    pub fn with_latest_reader<R>(&mut self, f: impl FnOnce(Reader<'_>) -> R) -> Result<R> {
        let cid = self.next_command()?;
        let snapshot = self.db.txns.snapshot_now(self.snapshot.xid);
        Ok(f(Reader {
            txn: self,
            snapshot: &snapshot,
            cid,
        }))
    }

    /// Takes a key lock on values of columns of a table, held until the transaction
    /// ends: `Share` to keep a referenced key from going away, `Exclusive` to remove or
    /// change it. Waits for a conflicting holder to end; fails with `Deadlock` if that
    /// would close a cycle of waits. Equal keys must be given as equal values (of the
    /// columns' own types).
    pub fn lock_key(
        &mut self,
        table: &str,
        columns: &[u16],
        key: &[Value],
        mode: crate::txn::KeyLockMode,
    ) -> Result<()> {
        self.check_open()?;
        let t = self.table(table)?;
        let mut bytes = t.id.to_le_bytes().to_vec();
        bytes.push(columns.len() as u8);
        for c in columns {
            bytes.extend_from_slice(&c.to_le_bytes());
        }
        for v in key {
            match crate::schema::encode_value(v) {
                None => bytes.push(0),
                Some(b) => {
                    bytes.push(1);
                    bytes.extend_from_slice(&(b.len() as u32).to_le_bytes());
                    bytes.extend_from_slice(&b);
                }
            }
        }
        self.db.txns.lock_key(self.snapshot.xid, &bytes, mode)
    }

    fn scan_page(&self, t: &Table, page: u64, rows: &mut crate::access::PageRows) -> Result<()> {
        self.scan_page_in(&self.view(), t, page, rows)
    }

    pub(super) fn scan_page_in(
        &self,
        view: &TxnView,
        t: &Table,
        page: u64,
        rows: &mut crate::access::PageRows,
    ) -> Result<()> {
        access::of(t.kind).scan_page(&self.db.access_ctx(), page, view, rows)
    }

    /// Every visible row.
    pub fn scan(&mut self, table: &str) -> Result<Vec<(RowId, Row)>> {
        let mut out = Vec::new();
        self.read(super::Rows::Table(table), RowShape::default(), |id, row| {
            out.push((id, row));
            Ok::<_, Error>(std::ops::ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// Replaces a row; returns the id of the new version. If another transaction changed
    /// the row, waits for it; if it committed after this transaction's snapshot, fails
    /// with `SerializationFailure` — under READ COMMITTED too, since a row given whole
    /// cannot be judged again against the newest version (`modify_with` can).
    pub fn update(&mut self, table: &str, id: RowId, row: &[Value]) -> Result<RowId> {
        self.next_command()?;
        let t = self.table_to_write(table)?;
        let mut bytes = Vec::new();
        Self::encode(&t, &t.schema(), row, &mut bytes)?;
        self.change_row(&t, id, Change::Update(bytes))
    }

    /// Updates or deletes rows in one command. `f` sees every row visible at the start
    /// of the command, page by page, and says what to do with it. Versions the command
    /// writes are invisible to its own scan, so an update that moves rows forward never
    /// meets them again. Returns the number of rows updated or deleted.
    ///
    /// A row another transaction changed waits for it. If that one committed after the
    /// snapshot, a REPEATABLE READ transaction fails with `SerializationFailure`; under
    /// READ COMMITTED `f` is called again with the row's newest version (none: it was
    /// deleted) and what it says is done to that version, as PostgreSQL does — so `f`
    /// may see a row twice, the first verdict left undone.
    ///
    /// Unlike the single-row calls, a failure part-way (or `RowAction::Stop`) leaves the
    /// rows changed before it changed: a caller that wants all or nothing rolls back.
    pub fn modify_with(
        &mut self,
        table: &str,
        mut f: impl FnMut(RowId, &Row) -> RowAction,
    ) -> Result<u64> {
        let mut row = Vec::new();
        let first = self.modify(table, |id, decode| {
            decode(RowShape::default(), &mut row)?;
            Ok::<_, Error>(f(id, &row))
        })?;
        self.judge_again(table, first, f)
    }

    /// Updates or deletes rows in one command, as `modify_with` does, with `f` deciding
    /// from what it decodes of each row: `decode(shape, row)` puts in `row` the columns
    /// `shape` asks for (the others NULL), as often as `f` calls it (a vector `f` keeps
    /// is reused row after row), so a row `f` judges by a few columns, or does not look
    /// at (a DELETE of every row), is not decoded whole. `f` may fail with an error of
    /// its caller's type: that, or an engine error (converted), ends the command there
    /// (rows changed on earlier pages stay changed, as with `Stop`).
    ///
    /// Under READ COMMITTED the rows changed by transactions that committed after the
    /// snapshot are left as they are and listed in `Modified::changed`, for the caller
    /// to judge again (`newest`, `modify_newest`): one whose verdicts have effects of
    /// their own (rows returned, foreign keys noted) takes back those of the rows listed.
    pub fn modify<E: From<Error>>(
        &mut self,
        table: &str,
        mut f: impl FnMut(
            RowId,
            &mut dyn FnMut(RowShape, &mut Row) -> Result<()>,
        ) -> std::result::Result<RowAction, E>,
    ) -> std::result::Result<Modified, E> {
        self.next_command()?;
        let t = self.table_to_write(table)?;
        let _ddl = t.ddl.read();
        let indexes = t.index_list();
        let cols = key_columns(&indexes);
        // Each page's changes are applied together, so that they share WAL records: one
        // per page for an undo table's in-place changes and a heap table's deletes, one
        // per page for the new versions a heap update puts there.
        let mut rows = crate::access::PageRows::default();
        let mut changes = Vec::new();
        let mut done = Modified::default();
        // The DDL lock held keeps the schema as it is.
        let mut schema = t.schema();
        for page in t.page_list() {
            rows.clear();
            changes.clear();
            self.scan_page(&t, page, &mut rows)?;
            let mut stop = false;
            for (id, raw) in rows.iter() {
                let db = &self.db;
                let mut decode = |shape: RowShape, row: &mut Row| -> Result<()> {
                    decode_latest_columns_into(db, &t, &mut schema, id, raw, shape, row)?;
                    schema.to_visible_in_place(row);
                    Ok(())
                };
                match f(id, &mut decode)? {
                    RowAction::Keep => continue,
                    RowAction::Stop => {
                        stop = true;
                        break;
                    }
                    action => {
                        if let Some(c) = Self::change_of(&t, &schema, action)? {
                            changes.push((id.slot, c));
                        }
                    }
                }
            }
            self.apply_page(&t, page, &changes, &indexes, cols.as_deref(), &mut done)?;
            self.db.relieve_space();
            if stop {
                break;
            }
        }
        Ok(done)
    }

    /// Applies one page's changes with the transaction's snapshot, counting them in
    /// `done`; under READ COMMITTED rows changed since go to `done.changed`.
    fn apply_page(
        &mut self,
        t: &Table,
        page: u64,
        changes: &[(u16, Change)],
        indexes: &[Arc<Index>],
        key_cols: Option<&[u16]>,
        done: &mut Modified,
    ) -> Result<()> {
        let before = done.changed.len();
        let changed = match self.isolation {
            Isolation::ReadCommitted => Some(&mut done.changed),
            Isolation::RepeatableRead => None,
        };
        let apply = Apply {
            snapshot: None,
            changed,
        };
        self.change_page_rows(t, page, changes, indexes, key_cols, apply)?;
        done.count += (changes.len() - (done.changed.len() - before)) as u64;
        Ok(())
    }

    /// The change an action makes to its row (None: it keeps the row).
    pub(super) fn change_of(
        t: &Table,
        schema: &Schema,
        action: RowAction,
    ) -> Result<Option<Change>> {
        Ok(match action {
            RowAction::Keep | RowAction::Stop => None,
            RowAction::Update(new) => {
                let mut bytes = Vec::new();
                Self::encode(t, schema, &new, &mut bytes)?;
                Some(Change::Update(bytes))
            }
            RowAction::Delete => Some(Change::Delete),
        })
    }

    /// Applies actions to rows this command found (through an index, say: ids and rows
    /// as `index_scan` gave them, read since the last other call) as `modify_with`
    /// would: in one command, each page's changes together. Returns the number of rows
    /// updated or deleted and, under READ COMMITTED, the rows left because transactions
    /// that committed after the snapshot changed them (`Modified::changed`: the caller
    /// judges their newest versions again, `newest` and `modify_newest`).
    pub fn modify_rows(
        &mut self,
        table: &str,
        mut actions: Vec<(RowId, RowAction)>,
    ) -> Result<Modified> {
        self.check_open()?;
        let t = self.table_to_write(table)?;
        let _ddl = t.ddl.read();
        let indexes = t.index_list();
        let cols = key_columns(&indexes);
        actions.sort_by_key(|(id, _)| (id.page, id.slot));
        actions.dedup_by_key(|(id, _)| *id);
        let mut changes = Vec::new();
        let mut done = Modified::default();
        let schema = t.schema();
        let mut i = 0;
        while i < actions.len() {
            let page = actions[i].0.page;
            changes.clear();
            while i < actions.len() && actions[i].0.page == page {
                let id = actions[i].0;
                let action = std::mem::replace(&mut actions[i].1, RowAction::Keep);
                i += 1;
                if let Some(c) = Self::change_of(&t, &schema, action)? {
                    changes.push((id.slot, c));
                }
            }
            self.apply_page(&t, page, &changes, &indexes, cols.as_deref(), &mut done)?;
            self.db.relieve_space();
        }
        Ok(done)
    }

    /// Deletes a row (same waiting rules as `update`).
    pub fn delete(&mut self, table: &str, id: RowId) -> Result<()> {
        self.next_command()?;
        let t = self.table_to_write(table)?;
        self.change_row(&t, id, Change::Delete).map(|_| ())
    }

    /// Commits. Returns once the commit is durable (unless asynchronous commit is on).
    pub fn commit(mut self) -> Result<()> {
        self.check_open()?;
        self.commit_inner()
    }

    /// Commits, and returns what the whole transaction wrote to the WAL, the commit
    /// record included (which `stats()` cannot show before the commit).
    pub fn commit_with_stats(mut self) -> Result<TxnStats> {
        self.check_open()?;
        self.commit_inner()?;
        Ok(std::mem::take(&mut self.stats))
    }

    pub(super) fn commit_inner(&mut self) -> Result<()> {
        self.finished = true;
        let xid = self.snapshot.xid;
        let subs = std::mem::take(&mut self.subs);
        if !self.wrote {
            let r = self.settle_durable();
            self.db.txns.end_family(xid, &subs);
            self.db.undo_writer_ended(xid, self.undo_registered);
            return r;
        }
        // Held from the commit record until its clog bit is set, so that no checkpoint
        // takes its redo point in between (the bit would then be neither in the clog it
        // writes nor replayed after a crash: docs/recovery.md rule 4).
        let mut cat = ddl_catalog(&self.db, !self.ddl.is_empty());
        let fence = self
            .db
            .commit_fence
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let r = (|| {
            let payload = crate::txn::encode_subs(xid, &subs);
            let a = self
                .db
                .wal
                .append(COMMIT, xid, &payload, Some(&mut self.stats))?;
            if self.synchronous_commit {
                self.db.wal.flush(a.end_lsn, true)?;
            }
            Ok(())
        })();
        match r {
            Ok(()) => {
                // The subtransactions first: a reader that finds the transaction
                // committed finds them so too.
                for &x in &subs {
                    self.db.clog.set(x, XidStatus::Committed);
                }
                self.db.clog.set(xid, XidStatus::Committed);
                // What it dropped goes, before a checkpoint can take its redo point
                // past the commit record (docs/recovery.md rule 40).
                let dropped = finish_ddl(&mut self.ddl, cat.as_deref_mut());
                drop(fence);
                drop(cat);
                self.db.stats.commits.fetch_add(1, Ordering::Relaxed);
                self.db.txns.end_family(xid, &subs);
                self.db.undo_writer_ended(xid, self.undo_registered);
                // (After its end: no running transaction then keeps the frames.)
                self.release_pages(dropped);
                Ok(())
            }
            Err(e) => {
                let freed = revert_ddl(&mut self.ddl, cat.as_deref_mut(), 0);
                drop(fence);
                drop(cat);
                self.release_pages(freed);
                // Not acknowledged; whether the commit record reached the disk is
                // decided by recovery. Here it counts as aborted; its changes to undo
                // tables stay in place, so readers keep needing their undo.
                if !self.undo.is_empty() {
                    self.db.undo.keep_unresolved(xid);
                }
                for &x in &subs {
                    self.db.clog.set(x, XidStatus::Aborted);
                }
                self.db.clog.set(xid, XidStatus::Aborted);
                self.db.txns.end_family(xid, &subs);
                self.db.undo_writer_ended(xid, self.undo_registered);
                Err(e)
            }
        }
    }

    /// Rolls back: the transaction's versions become invisible (heap tables need no undo).
    pub fn rollback(mut self) -> Result<()> {
        if self.finished {
            return Err(Error::TransactionFinished);
        }
        self.rollback_inner()
    }

    fn rollback_inner(&mut self) -> Result<()> {
        self.finished = true;
        let xid = self.snapshot.xid;
        let subs = std::mem::take(&mut self.subs);
        // Undo tables: put the old values back first (heap tables need nothing).
        let undone = if self.undo.is_empty() {
            Ok(())
        } else {
            let r = self.db.poison.check().and_then(|()| {
                access::roll_back(
                    &self.db.access_ctx(),
                    xid,
                    &mut self.undo,
                    0,
                    &mut self.stats,
                )
            });
            if r.is_err() {
                // The rows keep (some of) the changes until recovery takes them back.
                self.db.undo.keep_unresolved(xid);
            }
            r
        };
        // Catalog changes are taken back before the abort record, which recovery
        // meets only after the checkpoint that has them taken back (rule 40).
        let mut cat = ddl_catalog(&self.db, !self.ddl.is_empty());
        let fence = cat.is_some().then(|| {
            self.db
                .commit_fence
                .read()
                .unwrap_or_else(|e| e.into_inner())
        });
        let freed = revert_ddl(&mut self.ddl, cat.as_deref_mut(), 0);
        let r = if undone.is_err() {
            undone
        } else if self.wrote && !self.db.poison.is_set() {
            let payload = crate::txn::encode_subs(xid, &subs);
            self.db
                .wal
                .append(ABORT, xid, &payload, Some(&mut self.stats))
                .map(|_| ())
        } else {
            Ok(())
        };
        // Sequence values it took are gone for good, rolled back or not: the log of
        // them must be durable too (a poisoned database hands out nothing more).
        let r = if self.db.poison.is_set() {
            r
        } else {
            r.and_then(|()| self.settle_durable())
        };
        drop(fence);
        drop(cat);
        self.release_pages(freed);
        for &x in &subs {
            self.db.clog.set(x, XidStatus::Aborted);
        }
        self.db.clog.set(xid, XidStatus::Aborted);
        self.db.stats.aborts.fetch_add(1, Ordering::Relaxed);
        self.db.txns.end_family(xid, &subs);
        self.db.undo_writer_ended(xid, self.undo_registered);
        r
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.rollback_inner();
        }
    }
}

/// The columns some index of the table keys on, each once; None without indexes.
pub(super) fn key_columns(indexes: &[Arc<Index>]) -> Option<Vec<u16>> {
    if indexes.is_empty() {
        return None;
    }
    let mut cols: Vec<u16> = indexes
        .iter()
        .flat_map(|ix| ix.columns.iter().copied())
        .collect();
    cols.sort_unstable();
    cols.dedup();
    Some(cols)
}

/// The reads of one command of a transaction (see [`Transaction::reader`]). Shared, so
/// reads may nest; it cannot write.
#[derive(Clone, Copy)]
pub struct Reader<'t> {
    pub(super) txn: &'t Transaction,
    /// The transaction's snapshot, or one taken later (`with_latest_reader`) or held
    /// (`held_reader`).
    pub(super) snapshot: &'t Snapshot,
    /// The command whose reads these are: it sees the transaction's changes of the
    /// commands before it.
    pub(super) cid: u32,
}

impl Reader<'_> {
    pub(super) fn view(&self) -> TxnView<'_> {
        TxnView {
            snapshot: self.snapshot,
            cid: self.cid,
            xid: self.txn.writer,
            subs: &self.txn.subs,
        }
    }

    /// The version of a row visible to this command (following updates).
    pub fn get(&self, table: &str, id: RowId) -> Result<Option<Row>> {
        let txn = self.txn;
        let t = txn.table(table)?;
        let found = access::of(t.kind).fetch(&txn.db.access_ctx(), &t, id, &self.view())?;
        match found {
            Some((_, bytes)) => Ok(Some(txn.decode(&t, id, &bytes)?)),
            None => Ok(None),
        }
    }
}

/// A stored row decoded (every column) with `schema`, a copy of the table's schema read
/// before: when the row does not decode with it and the table's schema changed since
/// (an ALTER TABLE), `schema` is read again and the row decoded with that.
pub(super) fn decode_latest(
    inner: &Inner,
    t: &Table,
    schema: &mut Arc<Schema>,
    id: RowId,
    bytes: &[u8],
) -> Result<Row> {
    decode_latest_columns(inner, t, schema, id, bytes, RowShape::default())
}

/// As `decode_latest_columns`, into `row` (its values replaced).
pub(super) fn decode_latest_columns_into(
    inner: &Inner,
    t: &Table,
    schema: &mut Arc<Schema>,
    id: RowId,
    bytes: &[u8],
    shape: RowShape,
    row: &mut Row,
) -> Result<()> {
    match super::index::decode_columns_into(inner, t, schema, id, bytes, shape, row) {
        Ok(()) => Ok(()),
        Err(e) => {
            let now = t.schema();
            if Arc::ptr_eq(&now, schema) {
                return Err(e);
            }
            *schema = now;
            super::index::decode_columns_into(inner, t, schema, id, bytes, shape, row)
        }
    }
}

/// As `decode_latest`, decoding what `shape` asks for (`Schema::decode_shaped`).
pub(super) fn decode_latest_columns(
    inner: &Inner,
    t: &Table,
    schema: &mut Arc<Schema>,
    id: RowId,
    bytes: &[u8],
    shape: RowShape,
) -> Result<Row> {
    let mut row = Vec::new();
    decode_latest_columns_into(inner, t, schema, id, bytes, shape, &mut row)?;
    Ok(row)
}
