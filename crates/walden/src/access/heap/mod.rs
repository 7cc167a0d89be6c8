//! Heap tables (the PostgreSQL-like kind): every insert, update and delete creates or
//! retires a row version; an update writes a new version and links the old one to it.
//! Visibility comes from the versions' xmin/xmax, the clog and the reader's snapshot.
//!
//! Tuple header (22 bytes, little-endian): `xmin u48 | xmax u48 | next_page u32 |
//! next_slot u16 | cid u32`, then the row encoding of `schema.rs`. `next_page` is
//! `u32::MAX` when the version has no successor.

mod update;
pub mod wal_records;

pub use update::{update, update_rows};

use crate::access::slotted::{
    corrupt, get_u48, insert_rows, pin_table_page, prune_page, put_u48, withdraw, TupleFormat,
};
use crate::access::{
    Change, Ctx, InsertCursor, Latest, Progress, TableAccess, TxnView, Vacuumed, Writer,
};
use crate::buffer::Fetch;
use crate::catalog::Table;
use crate::clog::{Clog, XidStatus};
use crate::error::{Error, Result};
use crate::page::{PageMut, PageRef, PAGE_HEADER_BYTES, SLOT_BYTES};
use crate::stats::TxnStats;
use crate::wal::payload::Payload;
use crate::RowId;
use wal_records::{HeapRecord, HEAP_DELETE, HEAP_INSERT};

pub const TUPLE_HEADER_BYTES: usize = 22;

pub(crate) const NO_NEXT: u32 = u32::MAX;

/// The fields of a tuple header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TupleHeader {
    pub xmin: u64,
    pub xmax: u64,
    pub next: Option<(u64, u16)>,
    pub cid: u32,
}

impl TupleHeader {
    pub fn read(t: &[u8]) -> TupleHeader {
        let np = u32::from_le_bytes([t[12], t[13], t[14], t[15]]);
        let ns = u16::from_le_bytes([t[16], t[17]]);
        TupleHeader {
            xmin: get_u48(t, 0),
            xmax: get_u48(t, 6),
            next: (np != NO_NEXT).then_some((np as u64, ns)),
            cid: u32::from_le_bytes([t[18], t[19], t[20], t[21]]),
        }
    }

    pub(crate) fn write_new(out: &mut Vec<u8>, xmin: u64, cid: u32) {
        let mut h = [0u8; TUPLE_HEADER_BYTES];
        put_u48(&mut h, 0, xmin);
        h[12..16].copy_from_slice(&NO_NEXT.to_le_bytes());
        h[18..22].copy_from_slice(&cid.to_le_bytes());
        out.extend_from_slice(&h);
    }
}

pub(crate) fn set_xmax(t: &mut [u8], xmax: u64, next: Option<(u64, u16)>) {
    put_u48(t, 6, xmax);
    let (np, ns) = next.map_or((NO_NEXT, 0), |(p, s)| (p as u32, s));
    t[12..16].copy_from_slice(&np.to_le_bytes());
    t[16..18].copy_from_slice(&ns.to_le_bytes());
}

/// Largest row encoding that fits a page.
pub fn max_row_bytes(page_size: usize) -> usize {
    page_size - PAGE_HEADER_BYTES - SLOT_BYTES - TUPLE_HEADER_BYTES
}

/// Inserts the cursor's rows. Rows that land on one page share one record. A call that
/// fails has no effect: the rows the cursor placed are removed again.
fn insert_many(
    ctx: &Ctx,
    table: &Table,
    view: &TxnView,
    stats: &mut TxnStats,
    cursor: &mut InsertCursor,
) -> Result<Progress> {
    let format = TupleFormat {
        header_bytes: TUPLE_HEADER_BYTES,
        build: &|out, xid, cid, row| {
            TupleHeader::write_new(out, xid, cid);
            out.extend_from_slice(row);
        },
        record: HEAP_INSERT,
    };
    match insert_rows(ctx, table, view, stats, cursor, &format, &mut |_, _, _| {}) {
        Ok(p) => Ok(p),
        Err(e) => {
            withdraw(ctx, &cursor.ids, view.snapshot.xid, stats)?;
            Err(e)
        }
    }
}

/// The rows of one page whose header `keep` accepts: (row id, row bytes).
fn page_rows(
    ctx: &Ctx,
    page_no: u64,
    out: &mut Vec<(RowId, Vec<u8>)>,
    keep: impl Fn(&TupleHeader) -> bool,
) -> Result<()> {
    let pinned = ctx.pool.fetch(page_no, Fetch::Read)?;
    let g = pinned.read();
    let p = PageRef(&g);
    for slot in 0..p.slot_count() {
        let Some(t) = p.tuple(slot) else { continue };
        if t.len() < TUPLE_HEADER_BYTES {
            return Err(corrupt(
                ctx,
                page_no,
                format!("slot {slot} shorter than a tuple header"),
            ));
        }
        if keep(&TupleHeader::read(t)) {
            out.push((
                RowId {
                    page: page_no,
                    slot,
                },
                t[TUPLE_HEADER_BYTES..].to_vec(),
            ));
        }
    }
    Ok(())
}

/// Visible rows of one page: (row id, row bytes).
pub fn scan_page(
    ctx: &Ctx,
    page_no: u64,
    view: &TxnView,
    out: &mut Vec<(RowId, Vec<u8>)>,
) -> Result<()> {
    page_rows(ctx, page_no, out, |h| sees(view, h, ctx.clog))
}

/// Every version on a page whose inserter did not abort.
fn versions_of_page(ctx: &Ctx, page_no: u64, out: &mut Vec<(RowId, Vec<u8>)>) -> Result<()> {
    page_rows(ctx, page_no, out, |h| {
        ctx.txns.status(h.xmin, ctx.clog) != XidStatus::Aborted
    })
}

/// What a walk along a row's update links does at one version.
enum Step<R> {
    Found(R),
    /// Go on to the version's successor (the walk ends if it has none).
    Follow,
    Stop,
}

/// Walks the versions of the row at `id` forward along update links, calling `at` with
/// each version's id, header and row bytes. A link is only followed to the version its
/// updater created (the slot may have been vacuumed and reused). None when the walk ends
/// without a result.
fn walk<R>(
    ctx: &Ctx,
    table: &Table,
    id: RowId,
    mut at: impl FnMut(RowId, &TupleHeader, &[u8]) -> Step<R>,
) -> Result<Option<R>> {
    let mut cur = id;
    let mut prev_xmax: Option<u64> = None;
    for _ in 0..10_000 {
        let pinned = match pin_table_page(ctx, table, cur) {
            Ok(p) => p,
            Err(Error::NoSuchRow(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let g = pinned.read();
        let Some(t) = PageRef(&g).tuple_ref(cur.slot) else {
            return Ok(None);
        };
        if t.len() < TUPLE_HEADER_BYTES {
            return Err(corrupt(
                ctx,
                cur.page,
                format!("slot {} shorter than a tuple header", cur.slot),
            ));
        }
        let h = TupleHeader::read(t);
        if prev_xmax.is_some_and(|x| x != h.xmin) {
            return Ok(None);
        }
        match at(cur, &h, &t[TUPLE_HEADER_BYTES..]) {
            Step::Found(r) => return Ok(Some(r)),
            Step::Stop => return Ok(None),
            Step::Follow => match h.next {
                Some((page, slot)) => {
                    prev_xmax = Some(h.xmax);
                    cur = RowId { page, slot };
                }
                None => return Ok(None),
            },
        }
    }
    Ok(None)
}

/// The version of the row at `id` visible to `view`, following update links forward.
pub fn fetch(
    ctx: &Ctx,
    table: &Table,
    id: RowId,
    view: &TxnView,
) -> Result<Option<(RowId, Vec<u8>)>> {
    walk(ctx, table, id, |cur, h, row| {
        if sees(view, h, ctx.clog) {
            Step::Found((cur, row.to_vec()))
        } else if h.xmax != 0 {
            Step::Follow
        } else {
            Step::Stop
        }
    })
}

/// The newest version of the row at `id` for a uniqueness check by `me`: follows update
/// links through committed (and own) updates.
pub fn latest(ctx: &Ctx, table: &Table, id: RowId, me: u64) -> Result<Latest> {
    let status = |x: u64| {
        if x == me {
            XidStatus::Committed
        } else {
            ctx.txns.status(x, ctx.clog)
        }
    };
    let found = walk(ctx, table, id, |cur, h, row| {
        match status(h.xmin) {
            XidStatus::Aborted => return Step::Stop,
            XidStatus::InProgress => return Step::Found(Latest::Pending { xid: h.xmin }),
            XidStatus::Committed => {}
        }
        let live = || Latest::Live {
            id: cur,
            row: row.to_vec(),
        };
        if h.xmax == 0 {
            return Step::Found(live());
        }
        match status(h.xmax) {
            XidStatus::Aborted => Step::Found(live()),
            XidStatus::InProgress => Step::Found(Latest::Pending { xid: h.xmax }),
            XidStatus::Committed => Step::Follow,
        }
    })?;
    Ok(found.unwrap_or(Latest::Gone))
}

/// Can this transaction change the version? Caller holds the page latch.
pub(crate) enum WriteCheck {
    Free,
    Wait(u64),
}

pub(crate) fn check_writable(ctx: &Ctx, t: &[u8], view: &TxnView, id: RowId) -> Result<WriteCheck> {
    let h = TupleHeader::read(t);
    if !sees(view, &h, ctx.clog) {
        return Err(Error::NoSuchRow(id));
    }
    if h.xmax == 0 {
        return Ok(WriteCheck::Free);
    }
    match ctx.txns.status(h.xmax, ctx.clog) {
        XidStatus::Aborted => Ok(WriteCheck::Free),
        XidStatus::InProgress => Ok(WriteCheck::Wait(h.xmax)),
        XidStatus::Committed => Err(Error::SerializationFailure),
    }
}

pub(crate) fn tuple_of<'g>(ctx: &Ctx, g: &'g mut [u8], id: RowId) -> Result<&'g mut [u8]> {
    let page = id.page;
    match PageMut(g).into_tuple_mut(id.slot) {
        Some(t) if t.len() >= TUPLE_HEADER_BYTES => Ok(t),
        Some(_) => Err(corrupt(
            ctx,
            page,
            format!("slot {} shorter than a tuple header", id.slot),
        )),
        None => Err(Error::NoSuchRow(id)),
    }
}

/// Deletes the version at `id` (visible to `view`).
pub fn delete(
    ctx: &Ctx,
    table: &Table,
    id: RowId,
    view: &TxnView,
    stats: &mut TxnStats,
) -> Result<()> {
    delete_rows(ctx, table, id.page, &[id.slot], view, stats)
}

/// What stopped a page's batch before its end.
pub(crate) enum Stop {
    Wait(u64),
    Fail(Error),
}

/// Deletes versions of one page (each visible to `view`), logging one record for the
/// rows deleted together. Waits for other writers in between. Stops at the first error;
/// what was deleted before it stays deleted (and logged).
pub fn delete_rows(
    ctx: &Ctx,
    table: &Table,
    page: u64,
    slots: &[u16],
    view: &TxnView,
    stats: &mut TxnStats,
) -> Result<()> {
    let xid = view.snapshot.xid;
    let mut at = 0;
    while at < slots.len() {
        let pinned = pin_table_page(
            ctx,
            table,
            RowId {
                page,
                slot: slots[at],
            },
        )?;
        let mut g = pinned.write();
        let mut done = Vec::new();
        let mut stop = None;
        while at < slots.len() {
            let id = RowId {
                page,
                slot: slots[at],
            };
            stop = blocker(ctx, &mut g, view, id);
            if stop.is_some() {
                break;
            }
            if let Ok(t) = tuple_of(ctx, &mut g, id) {
                set_xmax(t, xid, None);
            }
            done.push(id.slot);
            at += 1;
        }
        if !done.is_empty() {
            let mut payload = Vec::with_capacity(16);
            HeapRecord::Delete { page, slots: done }.encode_payload(&mut payload);
            ctx.wal
                .append_page_change(HEAP_DELETE, xid, &payload, &mut g, Some(stats))?;
        }
        drop(g);
        drop(pinned);
        resolve(ctx, xid, stop)?;
    }
    Ok(())
}

/// What stops a batch at the row `id` of a latched page: None when the row may be
/// written now.
pub(crate) fn blocker(ctx: &Ctx, g: &mut [u8], view: &TxnView, id: RowId) -> Option<Stop> {
    match tuple_of(ctx, g, id).and_then(|t| check_writable(ctx, t, view, id)) {
        Ok(WriteCheck::Free) => None,
        Ok(WriteCheck::Wait(other)) => Some(Stop::Wait(other)),
        Err(e) => Some(Stop::Fail(e)),
    }
}

/// After a batch that stopped, with no latch and no pin held (waiters must not fill the
/// pool): fails, or waits for the other writer.
pub(crate) fn resolve(ctx: &Ctx, xid: u64, stop: Option<Stop>) -> Result<()> {
    match stop {
        None => Ok(()),
        Some(Stop::Fail(e)) => Err(e),
        Some(Stop::Wait(other)) => ctx.txns.wait_for(xid, other),
    }
}

/// The dead versions of a page, and how many more are dead but must wait: a version
/// replaced by an update is the base of its successor's delta (`HeapUpdateNew`), which
/// redo reads from this page. It may go only once its updater ended before the redo
/// point of a completed checkpoint, so that the delta is never replayed again
/// (docs/recovery.md rule 26). (Deltas of updates that rolled back may outlive their
/// base: redo then fills their bytes in as zeros, in a version nobody sees.)
pub(crate) fn dead_slots(ctx: &Ctx, page: &[u8], horizon: u64) -> (Vec<u16>, u64) {
    let p = PageRef(page);
    let mut dead = Vec::new();
    let mut waiting = 0u64;
    let checkpointed = ctx.txns.checkpointed_xid();
    let page_no = p.page_no();
    for slot in 0..p.slot_count() {
        let Some(t) = p.tuple(slot) else { continue };
        if t.len() < TUPLE_HEADER_BYTES {
            continue;
        }
        let h = TupleHeader::read(t);
        match ctx.txns.status(h.xmin, ctx.clog) {
            XidStatus::Aborted => dead.push(slot),
            XidStatus::InProgress => {}
            XidStatus::Committed => {
                let replaced = h.xmax != 0
                    && h.xmax < horizon
                    && ctx.txns.status(h.xmax, ctx.clog) == XidStatus::Committed;
                if !replaced {
                    continue;
                }
                // A successor on this same page never needs the wait: once this prune
                // is on disk, the page's LSN is past the successor's record.
                let elsewhere = h.next.is_some_and(|(np, _)| np != page_no);
                if elsewhere && h.xmax >= checkpointed {
                    waiting += 1;
                } else {
                    dead.push(slot);
                }
            }
        }
    }
    (dead, waiting)
}

/// The tuple at `slot` of a page being redone, at least a header long.
pub(crate) fn header_mut(g: &mut [u8], slot: u16) -> std::result::Result<&mut [u8], String> {
    PageMut(g)
        .into_tuple_mut(slot)
        .filter(|t| t.len() >= TUPLE_HEADER_BYTES)
        .ok_or_else(|| format!("no tuple at slot {slot}"))
}

/// Is a heap tuple with this header visible to `view`?
pub(crate) fn sees(view: &TxnView, h: &TupleHeader, clog: &Clog) -> bool {
    let me = view.snapshot.xid;
    let created = if h.xmin == me {
        h.cid < view.cid
    } else {
        view.snapshot.sees_committed(h.xmin, clog)
    };
    if !created {
        return false;
    }
    if h.xmax == 0 {
        return true;
    }
    if h.xmax == me {
        return false;
    }
    !view.snapshot.sees_committed(h.xmax, clog)
}

/// The heap table kind.
pub struct HeapTable;

impl TableAccess for HeapTable {
    fn uses_undo(&self) -> bool {
        false
    }

    fn insert(
        &self,
        ctx: &Ctx,
        table: &Table,
        w: &mut Writer,
        cursor: &mut InsertCursor,
    ) -> Result<Progress> {
        insert_many(ctx, table, w.view, w.stats, cursor)
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

    fn latest(&self, ctx: &Ctx, table: &Table, id: RowId, me: u64) -> Result<Latest> {
        latest(ctx, table, id, me)
    }

    fn versions_of_page(
        &self,
        ctx: &Ctx,
        page: u64,
        out: &mut Vec<(RowId, Vec<u8>)>,
    ) -> Result<()> {
        versions_of_page(ctx, page, out)
    }

    fn withdraw(&self, ctx: &Ctx, w: &mut Writer, ids: &[RowId], _undo_mark: usize) -> Result<()> {
        withdraw(ctx, ids, w.view.snapshot.xid, w.stats)
    }

    fn scan_page(
        &self,
        ctx: &Ctx,
        page: u64,
        view: &TxnView,
        out: &mut Vec<(RowId, Vec<u8>)>,
    ) -> Result<()> {
        scan_page(ctx, page, view, out)
    }

    /// Deletes first (one record per page), then the updates' new versions.
    fn change_rows(
        &self,
        ctx: &Ctx,
        table: &Table,
        w: &mut Writer,
        page: u64,
        changes: &[(u16, Change)],
        updated: &mut Vec<(RowId, RowId)>,
    ) -> Result<()> {
        let deletes: Vec<u16> = changes
            .iter()
            .filter(|(_, c)| matches!(c, Change::Delete))
            .map(|(slot, _)| *slot)
            .collect();
        let updates: Vec<(u16, &[u8])> = changes
            .iter()
            .filter_map(|(slot, c)| match c {
                Change::Update(bytes) => Some((*slot, &bytes[..])),
                Change::Delete => None,
            })
            .collect();
        if !deletes.is_empty() {
            delete_rows(ctx, table, page, &deletes, w.view, w.stats)?;
        }
        if !updates.is_empty() {
            let mut new_ids = Vec::with_capacity(updates.len());
            let r = update_rows(ctx, table, page, &updates, w.view, w.stats, &mut new_ids);
            let old = updates.iter().map(|(slot, _)| RowId { page, slot: *slot });
            updated.extend(old.zip(new_ids));
            r?;
        }
        Ok(())
    }

    fn change_row(
        &self,
        ctx: &Ctx,
        table: &Table,
        w: &mut Writer,
        id: RowId,
        change: Change,
    ) -> Result<RowId> {
        match change {
            Change::Update(bytes) => update(ctx, table, id, &bytes, w.view, w.stats),
            Change::Delete => delete(ctx, table, id, w.view, w.stats).map(|()| id),
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
        let mut waiting = 0;
        let removed = prune_page(ctx, table, page, last, xid, stats, &mut |p| {
            let (dead, w) = dead_slots(ctx, p, horizon);
            waiting = waiting.max(w);
            dead
        })?;
        Ok(Vacuumed { removed, waiting })
    }
}
