//! Table access: the two table kinds (`heap`, `undo_table`) behind one interface, and the
//! slotted-page base they share (`slotted`).

pub mod btree;
pub mod heap;
pub mod slotted;
pub mod undo_table;

use crate::buffer::BufferPool;
use crate::catalog::{Table, TableKind};
use crate::clog::Clog;
use crate::error::Result;
use crate::stats::TxnStats;
use crate::txn::{Snapshot, TxnManager};
use crate::undo_log::UndoLog;
use crate::wal::Wal;
use crate::RowId;
use undo_table::TxnUndo;

/// What a table kind needs from the layers below.
pub struct Ctx<'a> {
    pub pool: &'a BufferPool,
    pub wal: &'a Wal,
    pub clog: &'a Clog,
    pub txns: &'a TxnManager,
    /// The undo log (undo tables keep their old values there).
    pub undo: &'a dyn UndoLog,
}

/// A transaction's view while it runs a command.
pub struct TxnView<'a> {
    pub snapshot: &'a Snapshot,
    /// Own versions created by commands before this one are visible.
    pub cid: u32,
    /// The xid a heap version made now carries: the innermost savepoint's
    /// subtransaction, or the transaction's own (`snapshot.xid`). Undo tables always
    /// stamp the transaction's own: a rollback to a savepoint puts their rows back.
    pub xid: u64,
    /// The transaction's running subtransactions (ascending): their versions are its
    /// own, as `snapshot.xid`'s are.
    pub subs: &'a [u64],
}

impl TxnView<'_> {
    /// A view of the transaction's own xid, with no savepoint.
    pub fn plain(snapshot: &Snapshot, cid: u32) -> TxnView<'_> {
        TxnView {
            snapshot,
            cid,
            xid: snapshot.xid,
            subs: &[],
        }
    }

    /// Whether `xid` is the viewing transaction or one of its running
    /// subtransactions (PostgreSQL's `TransactionIdIsCurrentTransactionId`).
    #[inline]
    pub fn is_own(&self, xid: u64) -> bool {
        self.own().contains(xid)
    }

    pub fn own(&self) -> Own<'_> {
        Own {
            xid: self.snapshot.xid,
            subs: self.subs,
        }
    }
}

/// A transaction's own xids: its own, and its running subtransactions' (ascending).
#[derive(Debug, Clone, Copy)]
pub struct Own<'a> {
    pub xid: u64,
    pub subs: &'a [u64],
}

impl Own<'_> {
    /// A transaction with no savepoint.
    pub fn only(xid: u64) -> Own<'static> {
        Own { xid, subs: &[] }
    }

    #[inline]
    pub fn contains(&self, x: u64) -> bool {
        x == self.xid || (!self.subs.is_empty() && self.subs.binary_search(&x).is_ok())
    }
}

/// A change a command makes to one row (of either table kind: `modify_with` gathers
/// them per page).
pub enum Change {
    Update(Vec<u8>),
    Delete,
}

/// Whether a call finished its work or stopped part way so that the caller can relieve
/// copy-on-write space pressure (the table kinds never call up into the engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Done,
    /// Call again with the same cursor.
    Paused,
}

/// Where an insert stands between calls: the rows still to come, a row read but not yet
/// placed, and the ids of the rows placed so far.
pub struct InsertCursor<'a> {
    /// Encodes the next row into the buffer; false when there are no more.
    pub(crate) next_row: &'a mut dyn FnMut(&mut Vec<u8>) -> Result<bool>,
    pub(crate) row: Vec<u8>,
    /// `row` holds a row a paused call read and did not place.
    pub(crate) pending: bool,
    /// Ids of the rows inserted, in order (while `keep_ids`).
    pub ids: Vec<RowId>,
    /// Whether `ids` is kept: a caller that needs no ids (an INSERT of many rows into
    /// an undo table without indexes, which gives back only a count) is spared 16 bytes
    /// a row, 1.6 GB for 100 million rows.
    pub keep_ids: bool,
    /// How many rows were inserted.
    pub count: u64,
    /// Length of the transaction's undo entries when the insert began (undo tables: what
    /// a failed insert rolls back to).
    pub(crate) undo_mark: usize,
    /// The insert record logged last, when it was logged as itself (not replaced by a
    /// page image): the B-tree may name its rows instead of logging their keys.
    pub last_logged: Option<LastInsert>,
}

/// An insert record as logged: its LSN, page and the slots of its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastInsert {
    pub lsn: u64,
    pub page: u64,
    pub slots: Vec<u16>,
}

impl<'a> InsertCursor<'a> {
    pub fn new(
        next_row: &'a mut dyn FnMut(&mut Vec<u8>) -> Result<bool>,
        undo: &TxnUndo,
    ) -> InsertCursor<'a> {
        InsertCursor {
            next_row,
            row: Vec::with_capacity(256),
            pending: false,
            ids: Vec::new(),
            keep_ids: true,
            count: 0,
            undo_mark: undo.len(),
            last_logged: None,
        }
    }
}

/// What a transaction brings to a table-kind call: its view, its WAL accounting and its
/// undo entries (used by undo tables only).
pub struct Writer<'a, 'v> {
    pub view: &'a TxnView<'v>,
    pub stats: &'a mut TxnStats,
    pub undo: &'a mut TxnUndo,
    /// For a table with indexes: whether two row encodings (old, new) hold the same
    /// values in every indexed column. An update for which it holds, and whose new
    /// version stays where index entries already lead, needs no new entry.
    pub same_keys: SameKeys<'a>,
    /// READ COMMITTED: a row a transaction that committed after the view's snapshot
    /// changed or deleted (once any running writer of it has ended) is left as it is and
    /// its id pushed here, for the engine's caller to judge its newest version again.
    /// None (REPEATABLE READ): such a row fails the call with `SerializationFailure`.
    pub changed: Option<&'a mut Vec<RowId>>,
}

impl Writer<'_, '_> {
    /// What a call does at a row that a transaction committed after the view's snapshot
    /// changed: pushes its id to `changed` (true: skip the row and go on), or says the
    /// call must fail (false).
    pub(crate) fn note_changed(&mut self, id: RowId) -> bool {
        match self.changed.as_mut() {
            Some(ids) => {
                ids.push(id);
                true
            }
            None => false,
        }
    }
}

/// `Writer::same_keys`: whether two row encodings (old, new) hold the same values in
/// every indexed column; None for a table without indexes.
pub type SameKeys<'a> = Option<&'a dyn Fn(&[u8], &[u8]) -> bool>;

/// An updated row: where the version changed was, where the new one is (the same id
/// when it changed in place), and whether the new one needs index entries of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Updated {
    pub old: RowId,
    pub new: RowId,
    pub reindex: bool,
}

/// The newest state of a row, for a uniqueness check: what committed transactions, this
/// transaction and running ones have made of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Latest {
    /// No version that counts: never committed, deleted, or the slot holds nothing.
    Gone,
    /// Committed (or this transaction's own) and not deleted: `id` is where its newest
    /// version is.
    Live { id: RowId, row: Vec<u8> },
    /// A running transaction inserted, changed or deleted it: its outcome decides.
    /// `only` is the one version the row can have whatever that outcome, when there is
    /// one: a row the running transaction inserted (gone if it rolls back), or a
    /// committed version it is deleting or replacing with a heap-only version (which
    /// keeps every indexed column). A uniqueness check need not wait when that version
    /// does not hold its key: the index entry is stale (a slot reused since).
    Pending {
        xid: u64,
        only: Option<(RowId, Vec<u8>)>,
    },
}

/// What vacuuming one page did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Vacuumed {
    pub removed: u64,
    /// Dead versions kept because a checkpoint has yet to pass the update that replaced
    /// them (heap tables: docs/recovery.md rule 26); vacuum again after a checkpoint.
    pub waiting: u64,
    /// The page holds no tuple after it (VACUUM may give it back).
    pub empty: bool,
}

/// Rows read from one page: each one's id and bytes, the bytes of all of them in one
/// buffer reused page after page (a scan allocated, and freed, a vector per row).
#[derive(Debug, Default)]
pub struct PageRows {
    rows: Vec<(RowId, usize, usize)>,
    bytes: Vec<u8>,
}

impl PageRows {
    pub fn clear(&mut self) {
        self.rows.clear();
        self.bytes.clear();
    }

    pub fn push(&mut self, id: RowId, row: &[u8]) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(row);
        self.rows.push((id, at, row.len()));
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The `i`-th row pushed.
    pub fn get(&self, i: usize) -> Option<(RowId, &[u8])> {
        let &(id, at, len) = self.rows.get(i)?;
        Some((id, &self.bytes[at..at + len]))
    }

    /// The rows in the order pushed.
    pub fn iter(&self) -> impl Iterator<Item = (RowId, &[u8])> + '_ {
        self.rows
            .iter()
            .map(|&(id, at, len)| (id, &self.bytes[at..at + len]))
    }
}

/// The operations every table kind provides. Row bytes are the row encoding of
/// `schema.rs`; the kind adds its own tuple header and visibility rules.
pub trait TableAccess: Sync {
    /// True when the kind keeps old values in the undo log (the engine then tracks the
    /// transaction as an undo writer: docs/recovery.md rule 22).
    fn uses_undo(&self) -> bool;

    /// Inserts the cursor's rows (one command). A call that fails has no effect: the
    /// rows the cursor placed are taken back.
    fn insert(
        &self,
        ctx: &Ctx,
        table: &Table,
        w: &mut Writer,
        cursor: &mut InsertCursor,
    ) -> Result<Progress>;

    /// The version of the row at `id` visible to `view` (following updates and moves),
    /// with the id where it was found.
    fn fetch(
        &self,
        ctx: &Ctx,
        table: &Table,
        id: RowId,
        view: &TxnView,
    ) -> Result<Option<(RowId, Vec<u8>)>>;

    /// As `fetch`, keeping the page it read pinned in `held` for the next call, which
    /// reads that page without pinning it again when its row lies there (the rows an
    /// index range gives lie in runs on few pages). Between calls a pin is held, no
    /// latch: a pinned page is only kept from eviction. Kinds that do not reuse it
    /// fetch as `fetch` does.
    fn fetch_held<'p>(
        &self,
        ctx: &Ctx<'p>,
        table: &Table,
        id: RowId,
        view: &TxnView,
        held: &mut Option<crate::buffer::PinnedPage<'p>>,
    ) -> Result<Option<(RowId, Vec<u8>)>> {
        let _ = held;
        self.fetch(ctx, table, id, view)
    }

    /// The rows of one page visible to `view`.
    fn scan_page(&self, ctx: &Ctx, page: u64, view: &TxnView, out: &mut PageRows) -> Result<()>;

    /// Applies changes to rows of one page (each visible to the writer's view). Pushes
    /// an `Updated` for each updated row, in order (a row left for `Writer::changed` has
    /// none). Stops at the first error; what was changed before it stays changed.
    fn change_rows(
        &self,
        ctx: &Ctx,
        table: &Table,
        w: &mut Writer,
        page: u64,
        changes: &[(u16, Change)],
        updated: &mut Vec<Updated>,
    ) -> Result<()>;

    /// Changes the row at `id` (following a move); for an update, says where the new
    /// version is.
    fn change_row(
        &self,
        ctx: &Ctx,
        table: &Table,
        w: &mut Writer,
        id: RowId,
        change: Change,
    ) -> Result<Option<Updated>>;

    /// Removes from one page the versions no snapshot at or after `horizon` can see.
    #[allow(clippy::too_many_arguments)]
    fn vacuum_page(
        &self,
        ctx: &Ctx,
        table: &Table,
        page: u64,
        last: Option<u64>,
        horizon: u64,
        xid: u64,
        stats: &mut TxnStats,
    ) -> Result<Vacuumed>;

    /// The newest state of the row at `id` (following updates and moves), as seen by
    /// transaction `me` for a uniqueness check.
    fn latest(&self, ctx: &Ctx, table: &Table, id: RowId, own: Own) -> Result<Latest>;

    /// Every row version of one page some snapshot may still read (an index build
    /// indexes them all): current rows and, for undo tables, the older versions their
    /// undo chains rebuild; with a view, only the versions it sees. Each comes with the
    /// id its index entries name (heap tables: its chain's root, see `heap`).
    fn versions_of_page(
        &self,
        ctx: &Ctx,
        page: u64,
        view: Option<&TxnView>,
        out: &mut PageRows,
    ) -> Result<()>;

    /// Takes back rows this transaction inserted in the command that is running (a
    /// failure after the insert itself, such as a unique violation): `ids` are the rows,
    /// `undo_mark` the undo entries there were before the insert.
    fn withdraw(&self, ctx: &Ctx, w: &mut Writer, ids: &[RowId], undo_mark: usize) -> Result<()>;

    /// Takes back the transaction's changes recorded after `mark` undo entries. A kind
    /// that keeps no undo has nothing to take back: its versions are invisible once their
    /// transaction counts as aborted.
    fn roll_back(
        &self,
        ctx: &Ctx,
        xid: u64,
        undo: &mut TxnUndo,
        mark: usize,
        stats: &mut TxnStats,
    ) -> Result<()> {
        let _ = (ctx, xid, undo, mark, stats);
        Ok(())
    }
}

/// The one place a table's kind picks its code.
pub fn of(kind: TableKind) -> &'static dyn TableAccess {
    match kind {
        TableKind::Heap => &heap::HeapTable,
        TableKind::Undo => &undo_table::UndoTable,
    }
}

/// Takes back a transaction's changes recorded after `mark` undo entries, in every table
/// kind.
pub fn roll_back(
    ctx: &Ctx,
    xid: u64,
    undo: &mut TxnUndo,
    mark: usize,
    stats: &mut TxnStats,
) -> Result<()> {
    for kind in [TableKind::Heap, TableKind::Undo] {
        of(kind).roll_back(ctx, xid, undo, mark, stats)?;
    }
    Ok(())
}
