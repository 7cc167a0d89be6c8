//! Undo tables (the Oracle/zheap-like kind): a row is updated and deleted where it is;
//! the values it had go to the undo log, from which readers whose snapshot predates a
//! change rebuild the version they may see, and from which rollback restores the row.
//!
//! Tuple header (17 bytes, little-endian): `xid u48 | cid u32 | undo pointer u48 |
//! flags u8`: the transaction and command that last changed the row, where the undo
//! record of that change is (0: none, the row was inserted by `xid`, or the change is
//! older than any snapshot), and the flags below. The data area after the header holds
//! the row encoding of `schema.rs`, padded when the row shrank or is shorter than a link.
//!
//! WAL (docs/format.md): one `UNDO_CHANGE` record per page and command carries, for each
//! row, the old and the new bytes of the changed range of its data area: redo applies the
//! new bytes, crash recovery's rollback the old ones. The undo log itself is not logged:
//! it lives in memory, in segments appended serially, and is discarded as soon as no
//! snapshot and no running transaction needs it. A transaction's own rollback writes
//! compensation records (`UNDO_REVERT`) that redo replays and that tell crash recovery
//! what is already undone.

mod change;
mod record;
mod rollback;
#[cfg(test)]
mod tests;
mod txn_undo;
pub mod wal_records;

pub use change::change_rows;
pub use rollback::{rollback_to, CrashUndo};

use std::borrow::Cow;

use crate::access::slotted::{self, get_u48, put_u48, TupleFormat};
use crate::access::{
    Change, Ctx, InsertCursor, Latest, Own, PageRows, Progress, TableAccess, TxnView, Updated,
    Vacuumed, Writer,
};
use crate::buffer::Fetch;
use crate::catalog::Table;
use crate::clog::XidStatus;
use crate::error::{Error, Result};
use crate::page::{PageRef, PAGE_HEADER_BYTES, SLOT_BYTES};
use crate::stats::TxnStats;
use crate::RowId;
use wal_records::UNDO_TUPLE_HEADER_BYTES as HDR;

/// The row is deleted (by `xid`).
pub const FLAG_DELETED: u8 = 1;

/// The row moved to another page; the first 6 data bytes are the link (page u32, slot u16).
pub const FLAG_MOVED: u8 = 2;

/// The data area is one byte longer than the row.
pub const FLAG_PAD1: u8 = 4;

/// The data area is longer than the row by more; its last two bytes hold the row length.
pub const FLAG_PADDED: u8 = 8;

pub(crate) const PAD_MASK: u8 = FLAG_PAD1 | FLAG_PADDED;

pub(crate) const KNOWN_FLAGS: u8 = FLAG_DELETED | FLAG_MOVED | PAD_MASK;

/// Smallest data area: room for a link.
pub(crate) const MIN_AREA: usize = 6;

/// Largest row encoding that fits a page of an undo table.
pub fn max_row_bytes(page_size: usize) -> usize {
    page_size - PAGE_HEADER_BYTES - SLOT_BYTES - HDR
}

/// The fields of a tuple header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UndoHeader {
    pub xid: u64,
    pub cid: u32,
    pub ptr: u64,
    pub flags: u8,
}

impl UndoHeader {
    /// Header of a row restored by crash recovery: visible to everyone.
    const FROZEN: UndoHeader = UndoHeader {
        xid: 0,
        cid: 0,
        ptr: 0,
        flags: 0,
    };

    pub fn read(t: &[u8]) -> UndoHeader {
        UndoHeader {
            xid: get_u48(t, 0),
            cid: u32::from_le_bytes([t[6], t[7], t[8], t[9]]),
            ptr: get_u48(t, 10),
            flags: t[16],
        }
    }

    pub(crate) fn bytes(&self) -> [u8; HDR] {
        let mut h = [0u8; HDR];
        put_u48(&mut h, 0, self.xid);
        h[6..10].copy_from_slice(&self.cid.to_le_bytes());
        put_u48(&mut h, 10, self.ptr);
        h[16] = self.flags;
        h
    }

    pub(crate) fn with_flags(self, flags: u8) -> UndoHeader {
        UndoHeader { flags, ..self }
    }
}

/// The row bytes of a data area.
pub fn row_of(area: &[u8], flags: u8) -> std::result::Result<&[u8], String> {
    let len = if flags & FLAG_PAD1 != 0 {
        area.len().checked_sub(1).ok_or("empty padded area")?
    } else if flags & FLAG_PADDED != 0 {
        let n = area.len();
        if n < 2 {
            return Err("padded area shorter than its length field".into());
        }
        let len = u16::from_le_bytes([area[n - 2], area[n - 1]]) as usize;
        if len > n - 2 {
            return Err(format!("row length {len} beyond its {n}-byte area"));
        }
        len
    } else {
        area.len()
    };
    Ok(&area[..len])
}

/// Writes `row` into `area` (at least as long), padding the rest; returns the pad flags.
pub(crate) fn fill_area(area: &mut [u8], row: &[u8]) -> u8 {
    let n = area.len();
    area[..row.len()].copy_from_slice(row);
    area[row.len()..].fill(0);
    match n - row.len() {
        0 => 0,
        1 => FLAG_PAD1,
        _ => {
            area[n - 2..].copy_from_slice(&(row.len() as u16).to_le_bytes());
            FLAG_PADDED
        }
    }
}

/// Appends the tuple of a new row: header, then the row padded to `MIN_AREA`.
pub fn build_tuple(out: &mut Vec<u8>, xid: u64, cid: u32, row: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&[0u8; HDR]);
    let area_at = out.len();
    out.resize(area_at + row.len().max(MIN_AREA), 0);
    let flags = fill_area(&mut out[area_at..], row);
    let h = UndoHeader {
        xid,
        cid,
        ptr: 0,
        flags,
    };
    out[start..start + HDR].copy_from_slice(&h.bytes());
}

pub(crate) fn link_bytes(page: u64, slot: u16) -> [u8; 6] {
    let mut l = [0u8; 6];
    l[..4].copy_from_slice(&(page as u32).to_le_bytes());
    l[4..].copy_from_slice(&slot.to_le_bytes());
    l
}

pub(crate) fn link_of(area: &[u8]) -> RowId {
    RowId {
        page: u32::from_le_bytes([area[0], area[1], area[2], area[3]]) as u64,
        slot: u16::from_le_bytes([area[4], area[5]]),
    }
}

// ---------------------------------------------------------------------------------------
// The undo log

pub use txn_undo::TxnUndo;

#[derive(Debug)]
pub struct UndoEntry {
    /// LSN of the record (what a compensation record names).
    pub lsn: u64,
    pub page: u64,
    pub ops: Vec<EntryOp>,
}

/// One op of an entry, in 8 bytes (a transaction keeps one per row it changed: at 100
/// million rows, 16 bytes each held 1.6 GB). Bit 63 set: rows inserted at `count`
/// (bits 16..32) consecutive slots from `first` (bits 0..16), one op for a page an
/// insert filled; clear: a row changed in place, its slot (bits 0..16) and its undo
/// record's pointer (bits 16..63, below 2^47).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct EntryOp(u64);

/// An entry op as its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A row changed in place; its undo record.
    Change { slot: u16, ptr: u64 },
    /// Rows inserted at consecutive slots.
    Insert { first: u16, count: u16 },
}

const INSERT_BIT: u64 = 1 << 63;
/// Undo pointers an entry op holds are below this.
pub const MAX_ENTRY_PTR: u64 = 1 << 47;

impl EntryOp {
    /// A row changed in place; None when the pointer is past `MAX_ENTRY_PTR` (128 TiB
    /// of undo appended since the open).
    pub fn change(slot: u16, ptr: u64) -> Option<EntryOp> {
        (ptr < MAX_ENTRY_PTR).then_some(EntryOp((ptr << 16) | u64::from(slot)))
    }

    fn insert(first: u16, count: u16) -> EntryOp {
        EntryOp(INSERT_BIT | (u64::from(count) << 16) | u64::from(first))
    }

    pub fn op(self) -> Op {
        if self.0 & INSERT_BIT != 0 {
            Op::Insert {
                first: self.0 as u16,
                count: (self.0 >> 16) as u16,
            }
        } else {
            Op::Change {
                slot: self.0 as u16,
                ptr: self.0 >> 16,
            }
        }
    }

    /// The ops of rows inserted at `slots` (in the order inserted), consecutive ones
    /// as one.
    pub fn inserts(slots: &[u16]) -> Vec<EntryOp> {
        let mut ops: Vec<EntryOp> = Vec::new();
        for &slot in slots {
            if let Some(last) = ops.last_mut() {
                if let Op::Insert { first, count } = last.op() {
                    if u32::from(first) + u32::from(count) == u32::from(slot) && count < u16::MAX {
                        *last = EntryOp::insert(first, count + 1);
                        continue;
                    }
                }
            }
            ops.push(EntryOp::insert(slot, 1));
        }
        ops
    }
}

impl std::fmt::Debug for EntryOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.op().fmt(f)
    }
}

pub(crate) fn corrupt(ctx: &Ctx, page: u64, reason: String) -> Error {
    slotted::corrupt(ctx, page, reason)
}

// ---------------------------------------------------------------------------------------
// Reading

/// The undo pointer of the header `h`, when it names a record of this open's undo log.
/// The log starts empty at every open, its pointers at 1 again (docs/recovery.md rule
/// 22a), while rows keep the pointers earlier opens put in their headers (on pages
/// written before a crash or a close, and in the headers `undo_revert` records put
/// back): such a pointer would name an unrelated record of this open. A header's pointer
/// is always a record its own xid wrote, so one whose xid is below the open's first
/// (`TxnManager::first_xid`) is void, and nothing lies behind it that a snapshot of this
/// open may need: that xid committed before the open (every snapshot sees it) or was
/// rolled back.
pub(crate) fn undo_ptr(ctx: &Ctx, h: &UndoHeader) -> Option<u64> {
    (h.ptr != 0 && h.xid >= ctx.txns.first_xid()).then_some(h.ptr)
}

/// The version of a row a transaction may see: its flags and data area.
pub(crate) struct Version<'a> {
    flags: u8,
    area: Cow<'a, [u8]>,
}

/// Follows the undo chain of the tuple `t` back to the version `view` sees; None when the
/// row did not exist for it.
pub(crate) fn visible<'a>(
    ctx: &Ctx,
    view: &TxnView,
    t: &'a [u8],
) -> std::result::Result<Option<Version<'a>>, String> {
    if t.len() < HDR {
        return Err("tuple shorter than its header".into());
    }
    let mut h = UndoHeader::read(t);
    let mut area: Cow<[u8]> = Cow::Borrowed(&t[HDR..]);
    let me = view.snapshot.xid;
    for _ in 0..1_000_000 {
        let sees = if h.xid == 0 {
            true
        } else if h.xid == me {
            h.cid < view.cid
        } else {
            view.snapshot.sees_committed(h.xid, ctx.clog)
        };
        if sees {
            return Ok(Some(Version {
                flags: h.flags,
                area,
            }));
        }
        if h.ptr == 0 {
            return Ok(None);
        }
        let Some(ptr) = undo_ptr(ctx, &h) else {
            // Only a transaction that neither committed nor was rolled back leaves
            // a row this open does not see with a pointer of an earlier open.
            return Err(format!(
                "xid {} of an earlier open is not seen, and its undo pointer {} is void",
                h.xid, h.ptr
            ));
        };
        let rec = record::read_undo(ctx.undo, ptr)?;
        h = step_back(&mut area, rec, ptr)?;
    }
    Err("undo chain does not end".into())
}

/// Turns a row's data area into the version before it, from the undo record `rec`
/// (read at `ptr`); returns that version's header.
fn step_back(
    area: &mut Cow<[u8]>,
    rec: record::UndoRecord,
    ptr: u64,
) -> std::result::Result<UndoHeader, String> {
    if rec.whole {
        *area = Cow::Owned(rec.bytes);
    } else {
        let a = area.to_mut();
        let end = rec.off + rec.bytes.len();
        if end > a.len() {
            return Err(format!(
                "undo record {ptr} patches bytes {}..{end} of a {}-byte row",
                rec.off,
                a.len()
            ));
        }
        a[rec.off..end].copy_from_slice(&rec.bytes);
    }
    Ok(rec.prev)
}

/// Visible rows of one page: (row id, row bytes).
pub fn scan_page(ctx: &Ctx, page_no: u64, view: &TxnView, out: &mut PageRows) -> Result<()> {
    let pinned = ctx.pool.fetch(page_no, Fetch::Read)?;
    let g = pinned.read();
    let p = PageRef(&g);
    for slot in 0..p.slot_count() {
        let Some(t) = p.tuple(slot) else { continue };
        let v = visible(ctx, view, t)
            .map_err(|r| corrupt(ctx, page_no, format!("slot {slot}: {r}")))?;
        if let Some(v) = v {
            if v.flags & (FLAG_DELETED | FLAG_MOVED) == 0 {
                let row = row_of(&v.area, v.flags)
                    .map_err(|r| corrupt(ctx, page_no, format!("slot {slot}: {r}")))?;
                out.push(
                    RowId {
                        page: page_no,
                        slot,
                    },
                    row,
                );
            }
        }
    }
    Ok(())
}

/// The version of the row at `id` visible to `view`, following a move.
pub fn fetch(
    ctx: &Ctx,
    table: &Table,
    id: RowId,
    view: &TxnView,
) -> Result<Option<(RowId, Vec<u8>)>> {
    let mut cur = id;
    for _ in 0..10_000 {
        let pinned = match slotted::pin_table_page(ctx, table, cur) {
            Ok(p) => p,
            Err(Error::NoSuchRow(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let g = pinned.read();
        match version_at(ctx, view, PageRef(&g), cur)? {
            Seen::Gone => return Ok(None),
            Seen::Moved(link) => cur = link,
            Seen::Row(row) => return Ok(Some((cur, row))),
        }
    }
    Ok(None)
}

/// What `view` sees of the row at `id` on its page.
enum Seen {
    Gone,
    /// The row moved there.
    Moved(RowId),
    Row(Vec<u8>),
}

/// The version of the row at `id` (on page `p`) visible to `view`.
fn version_at(ctx: &Ctx, view: &TxnView, p: PageRef, id: RowId) -> Result<Seen> {
    let Some(t) = p.tuple_ref(id.slot) else {
        return Ok(Seen::Gone);
    };
    let bad = |r: String| corrupt(ctx, id.page, format!("slot {}: {r}", id.slot));
    let Some(v) = visible(ctx, view, t).map_err(bad)? else {
        return Ok(Seen::Gone);
    };
    if v.flags & FLAG_DELETED != 0 {
        return Ok(Seen::Gone);
    }
    if v.flags & FLAG_MOVED != 0 {
        if v.area.len() < MIN_AREA {
            return Err(bad("moved row without a link".into()));
        }
        return Ok(Seen::Moved(link_of(&v.area)));
    }
    Ok(Seen::Row(row_of(&v.area, v.flags).map_err(bad)?.to_vec()))
}

/// As `fetch`, reading the page pinned in `held` when the row lies there, and leaving
/// the page read pinned there (`TableAccess::fetch_held`). The page's owner is checked
/// under the latch each time: the pin outlives the check that made it. A moved row is
/// followed by `fetch`.
pub fn fetch_held<'p>(
    ctx: &Ctx<'p>,
    table: &Table,
    id: RowId,
    view: &TxnView,
    held: &mut Option<crate::buffer::PinnedPage<'p>>,
) -> Result<Option<(RowId, Vec<u8>)>> {
    if held.as_ref().is_none_or(|p| p.page_no() != id.page) {
        *held = None;
        match slotted::pin_table_page(ctx, table, id) {
            Ok(p) => *held = Some(p),
            Err(Error::NoSuchRow(_)) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    let Some(pinned) = held.as_ref() else {
        return Ok(None);
    };
    let found = {
        let g = pinned.read();
        let p = PageRef(&g);
        if !slotted::owned_by(p, table) {
            return Ok(None);
        }
        version_at(ctx, view, p, id)?
    };
    match found {
        Seen::Gone => Ok(None),
        Seen::Moved(link) => fetch(ctx, table, link, view),
        Seen::Row(row) => Ok(Some((id, row))),
    }
}

/// The newest state of the row at `id` for a uniqueness check by `me` (following a
/// move).
pub fn latest(ctx: &Ctx, table: &Table, id: RowId, own: Own) -> Result<Latest> {
    // Undo-table rows carry the transaction's own xid, never a subtransaction's.
    let me = own.xid;
    let mut cur = id;
    for _ in 0..10_000 {
        let pinned = match slotted::pin_table_page(ctx, table, cur) {
            Ok(p) => p,
            Err(Error::NoSuchRow(_)) => return Ok(Latest::Gone),
            Err(e) => return Err(e),
        };
        let g = pinned.read();
        let Some(t) = PageRef(&g).tuple_ref(cur.slot) else {
            return Ok(Latest::Gone);
        };
        let bad = |r: String| corrupt(ctx, cur.page, format!("slot {}: {r}", cur.slot));
        if t.len() < HDR {
            return Err(bad("tuple shorter than its header".into()));
        }
        let h = UndoHeader::read(t);
        if h.xid != 0 && h.xid != me {
            let running = match ctx.txns.status(h.xid, ctx.clog) {
                XidStatus::Committed => false,
                // Aborted and still rolling back, or running.
                _ if ctx.txns.is_active(h.xid) => true,
                XidStatus::InProgress => true,
                XidStatus::Aborted => false,
            };
            if running {
                // A row the running transaction inserted (no older version) and has not
                // deleted or moved: that row, or nothing.
                let fresh = h.ptr == 0 && h.flags & (FLAG_DELETED | FLAG_MOVED) == 0;
                let only = match fresh {
                    true => Some((cur, row_of(&t[HDR..], h.flags).map_err(bad)?.to_vec())),
                    false => None,
                };
                return Ok(Latest::Pending { xid: h.xid, only });
            }
        }
        if h.flags & FLAG_DELETED != 0 {
            return Ok(Latest::Gone);
        }
        let area = &t[HDR..];
        if h.flags & FLAG_MOVED != 0 {
            if area.len() < MIN_AREA {
                return Err(bad("moved row without a link".into()));
            }
            cur = link_of(area);
            continue;
        }
        let row = row_of(area, h.flags).map_err(bad)?;
        return Ok(Latest::Live {
            id: cur,
            row: row.to_vec(),
        });
    }
    Ok(Latest::Gone)
}

/// Every version of the rows of a page some snapshot may read: the current row and the
/// older ones its undo chain rebuilds (a chain whose records were discarded ends there:
/// no snapshot needs what lies beyond).
fn versions_of_page(ctx: &Ctx, page_no: u64, out: &mut PageRows) -> Result<()> {
    let pinned = ctx.pool.fetch(page_no, Fetch::Read)?;
    let g = pinned.read();
    let p = PageRef(&g);
    for slot in 0..p.slot_count() {
        let Some(t) = p.tuple(slot) else { continue };
        let bad = |r: String| corrupt(ctx, page_no, format!("slot {slot}: {r}"));
        if t.len() < HDR {
            return Err(bad("tuple shorter than its header".into()));
        }
        let id = RowId {
            page: page_no,
            slot,
        };
        let mut h = UndoHeader::read(t);
        let mut area: Cow<[u8]> = Cow::Borrowed(&t[HDR..]);
        for _ in 0..1_000_000 {
            if h.flags & (FLAG_DELETED | FLAG_MOVED) == 0 {
                out.push(id, row_of(&area, h.flags).map_err(bad)?);
            }
            // A pointer of an earlier open ends the chain, as a discarded record does.
            let Some(ptr) = undo_ptr(ctx, &h) else {
                break;
            };
            let Ok(rec) = record::read_undo(ctx.undo, ptr) else {
                break;
            };
            h = step_back(&mut area, rec, ptr).map_err(bad)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Writing

/// Inserts the cursor's rows (see `slotted::insert_rows`); each page's record becomes an
/// undo entry. On failure the rows stay inserted and logged: the caller rolls them back.
fn insert_many(
    ctx: &Ctx,
    table: &Table,
    view: &TxnView,
    stats: &mut TxnStats,
    undo: &mut TxnUndo,
    cursor: &mut InsertCursor,
) -> Result<Progress> {
    let format = TupleFormat {
        header_bytes: HDR,
        build: &build_tuple,
        record: wal_records::UNDO_INSERT,
        xid: view.snapshot.xid,
    };
    slotted::insert_rows(
        ctx,
        table,
        view,
        stats,
        cursor,
        &format,
        &mut |lsn, page, slots| {
            undo.push(UndoEntry {
                lsn,
                page,
                ops: EntryOp::inserts(slots),
            })
        },
    )
}

/// Slots of a page holding rows deleted or moved away by transactions every snapshot
/// sees: their space can be reused.
pub fn dead_slots(ctx: &Ctx, page: &[u8], horizon: u64) -> Vec<u16> {
    let p = PageRef(page);
    let mut dead = Vec::new();
    for slot in 0..p.slot_count() {
        let Some(t) = p.tuple(slot) else { continue };
        if t.len() < HDR {
            continue;
        }
        let h = UndoHeader::read(t);
        if h.flags & (FLAG_DELETED | FLAG_MOVED) == 0 || h.flags & !KNOWN_FLAGS != 0 {
            continue;
        }
        if h.xid == 0
            || (h.xid < horizon && ctx.txns.status(h.xid, ctx.clog) == XidStatus::Committed)
        {
            dead.push(slot);
        }
    }
    dead
}

/// The undo table kind.
pub struct UndoTable;

impl TableAccess for UndoTable {
    fn uses_undo(&self) -> bool {
        true
    }

    fn insert(
        &self,
        ctx: &Ctx,
        table: &Table,
        w: &mut Writer,
        cursor: &mut InsertCursor,
    ) -> Result<Progress> {
        match insert_many(ctx, table, w.view, w.stats, w.undo, cursor) {
            Ok(p) => Ok(p),
            Err(e) => {
                // A failed call has no effect: take back the rows it inserted.
                let xid = w.view.snapshot.xid;
                rollback_to(ctx, xid, w.undo, cursor.undo_mark, w.stats)?;
                Err(e)
            }
        }
    }

    fn latest(&self, ctx: &Ctx, table: &Table, id: RowId, own: Own) -> Result<Latest> {
        latest(ctx, table, id, own)
    }

    fn versions_of_page(
        &self,
        ctx: &Ctx,
        page: u64,
        view: Option<&TxnView>,
        out: &mut PageRows,
    ) -> Result<()> {
        match view {
            Some(view) => scan_page(ctx, page, view, out),
            None => versions_of_page(ctx, page, out),
        }
    }

    fn withdraw(&self, ctx: &Ctx, w: &mut Writer, _ids: &[RowId], undo_mark: usize) -> Result<()> {
        rollback_to(ctx, w.view.snapshot.xid, w.undo, undo_mark, w.stats)
    }

    fn fetch(
        &self,
        ctx: &Ctx,
        table: &Table,
        id: RowId,
        view: &TxnView,
    ) -> Result<Option<(RowId, Vec<u8>)>> {
        fetch(ctx, table, id, view)
    }

    fn fetch_held<'p>(
        &self,
        ctx: &Ctx<'p>,
        table: &Table,
        id: RowId,
        view: &TxnView,
        held: &mut Option<crate::buffer::PinnedPage<'p>>,
    ) -> Result<Option<(RowId, Vec<u8>)>> {
        fetch_held(ctx, table, id, view, held)
    }

    fn scan_page(&self, ctx: &Ctx, page: u64, view: &TxnView, out: &mut PageRows) -> Result<()> {
        scan_page(ctx, page, view, out)
    }

    fn change_rows(
        &self,
        ctx: &Ctx,
        table: &Table,
        w: &mut Writer,
        page: u64,
        changes: &[(u16, Change)],
        updated: &mut Vec<Updated>,
    ) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        change_rows(ctx, table, w, page, changes, updated)
    }

    /// A row that moved is found through the link its old place keeps (looked up only
    /// then: the common case touches the page once).
    fn change_row(
        &self,
        ctx: &Ctx,
        table: &Table,
        w: &mut Writer,
        id: RowId,
        change: Change,
    ) -> Result<Option<Updated>> {
        let changes = [(id.slot, change)];
        let mut updated = Vec::new();
        match self.change_rows(ctx, table, w, id.page, &changes, &mut updated) {
            Err(Error::NoSuchRow(_)) => {
                let at = fetch(ctx, table, id, w.view)?
                    .map(|(at, _)| at)
                    .filter(|at| *at != id)
                    .ok_or(Error::NoSuchRow(id))?;
                let [(_, change)] = changes;
                self.change_rows(ctx, table, w, at.page, &[(at.slot, change)], &mut updated)?;
                Ok(updated.first().copied())
            }
            r => r.map(|()| updated.first().copied()),
        }
    }

    fn vacuum_page(
        &self,
        ctx: &Ctx,
        table: &Table,
        page: u64,
        last: Option<u64>,
        horizon: u64,
        xid: u64,
        stats: &mut TxnStats,
    ) -> Result<Vacuumed> {
        let pruned = slotted::prune_page(
            ctx,
            table,
            page,
            last,
            |p| Some(dead_slots(ctx, p, horizon)).filter(|d| !d.is_empty()),
            |g, dead| {
                let n = dead.len() as u64;
                slotted::remove_slots(ctx, g, page, dead, xid, stats).map(|()| n)
            },
        )?;
        Ok(Vacuumed {
            removed: pruned.removed,
            waiting: 0,
            empty: pruned.empty,
        })
    }

    fn roll_back(
        &self,
        ctx: &Ctx,
        xid: u64,
        undo: &mut TxnUndo,
        mark: usize,
        stats: &mut TxnStats,
    ) -> Result<()> {
        rollback_to(ctx, xid, undo, mark, stats)
    }
}
