//! Heap tables (the PostgreSQL-like kind): every insert, update and delete creates or
//! retires a row version; an update writes a new version and links the old one to it.
//! Visibility comes from the versions' xmin/xmax, the clog and the reader's snapshot.
//!
//! Tuple header (22 bytes, little-endian): `xmin u48 | xmax u48 | next_page u32 |
//! next_slot u16 | cid u32`, then the row encoding of `schema.rs`. `next_page` is
//! `u32::MAX` when the version has no successor.

use crate::buffer::{BufferPool, Fetch};
use crate::catalog::Table;
use crate::clog::{Clog, XidStatus};
use crate::error::{Error, Result};
use crate::page::{PageKind, PageMut, PageRef, PAGE_HEADER_BYTES, SLOT_BYTES};
use crate::stats::TxnStats;
use crate::txn::{Snapshot, TxnManager};
use crate::wal::{Record, RecordKind, Wal};
use crate::RowId;

pub const TUPLE_HEADER_BYTES: usize = 22;
const NO_NEXT: u32 = u32::MAX;
const XID_MASK: u64 = (1 << 48) - 1;

/// The fields of a tuple header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TupleHeader {
    pub xmin: u64,
    pub xmax: u64,
    pub next: Option<(u64, u16)>,
    pub cid: u32,
}

pub(crate) fn get_u48(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a[..6].copy_from_slice(&b[at..at + 6]);
    u64::from_le_bytes(a)
}

pub(crate) fn put_u48(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 6].copy_from_slice(&(v & XID_MASK).to_le_bytes()[..6]);
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

    fn write_new(out: &mut Vec<u8>, xmin: u64, cid: u32) {
        let mut h = [0u8; TUPLE_HEADER_BYTES];
        put_u48(&mut h, 0, xmin);
        h[12..16].copy_from_slice(&NO_NEXT.to_le_bytes());
        h[18..22].copy_from_slice(&cid.to_le_bytes());
        out.extend_from_slice(&h);
    }
}

fn set_xmax(t: &mut [u8], xmax: u64, next: Option<(u64, u16)>) {
    put_u48(t, 6, xmax);
    let (np, ns) = next.map_or((NO_NEXT, 0), |(p, s)| (p as u32, s));
    t[12..16].copy_from_slice(&np.to_le_bytes());
    t[16..18].copy_from_slice(&ns.to_le_bytes());
}

/// What a reader or writer needs from the layers below.
pub struct HeapCtx<'a> {
    pub pool: &'a BufferPool,
    pub wal: &'a Wal,
    pub clog: &'a Clog,
    pub txns: &'a TxnManager,
    /// Called between page changes, with no latch held.
    pub hook: &'a dyn BetweenPages,
}

/// Lets the engine act between page changes of a long statement (for example reclaim
/// copy-on-write space) without the heap knowing about checkpoints.
pub trait BetweenPages {
    fn between_pages(&self);
}

/// A transaction's view while it runs a command.
pub struct TxnView<'a> {
    pub snapshot: &'a Snapshot,
    /// Own versions created by commands before this one are visible.
    pub cid: u32,
}

impl TxnView<'_> {
    /// Is a tuple with this header visible?
    pub fn sees(&self, h: &TupleHeader, clog: &Clog) -> bool {
        let me = self.snapshot.xid;
        let created = if h.xmin == me {
            h.cid < self.cid
        } else {
            self.snapshot.sees_committed(h.xmin, clog)
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
        !self.snapshot.sees_committed(h.xmax, clog)
    }
}

/// Largest row encoding that fits a page.
pub fn max_row_bytes(page_size: usize) -> usize {
    page_size - PAGE_HEADER_BYTES - SLOT_BYTES - TUPLE_HEADER_BYTES
}

pub(crate) fn corrupt(ctx: &HeapCtx, page: u64, reason: String) -> Error {
    Error::CorruptPage {
        path: ctx.pool.store().path().to_path_buf(),
        page,
        location: page,
        reason,
    }
}

/// Pins a page of `table`; a page that is not the table's is `NoSuchRow`.
pub(crate) fn pin_table_page<'p>(
    ctx: &HeapCtx<'p>,
    table: &Table,
    id: RowId,
) -> Result<crate::buffer::PinnedPage<'p>> {
    if id.page >= ctx.pool.store().next_page_no() {
        return Err(Error::NoSuchRow(id));
    }
    let pinned = ctx.pool.fetch(id.page, Fetch::Read)?;
    let owner_ok = {
        let g = pinned.read();
        let p = PageRef(&g);
        p.kind_byte() == PageKind::Heap as u8 && p.owner() == table.id
    };
    if owner_ok {
        Ok(pinned)
    } else {
        Err(Error::NoSuchRow(id))
    }
}

/// Adds a fresh page to a table and logs it.
fn new_page(ctx: &HeapCtx, table: &Table, xid: u64, stats: &mut TxnStats) -> Result<u64> {
    let page_no = ctx.pool.store().allocate_page_no();
    if page_no >= NO_NEXT as u64 {
        return Err(Error::InvalidOption("database is full: 2^32 pages".into()));
    }
    let pinned = ctx.pool.fetch(page_no, Fetch::Overwrite)?;
    let mut g = pinned.write();
    PageMut(&mut g).init(PageKind::Heap, page_no, table.id);
    let mut payload = Vec::with_capacity(12);
    Record::HeapInit {
        page: page_no,
        table: table.id,
    }
    .encode_payload(&mut payload);
    ctx.wal
        .append_page_change(RecordKind::HeapInit, xid, &payload, &mut g, Some(stats))?;
    table.add_page(page_no);
    Ok(page_no)
}

/// Chooses a page for a new row of `need` bytes (tuple plus slot): the last page if it
/// seems to fit, then a page vacuum freed space on, then a new page.
pub(crate) fn target_page(
    ctx: &HeapCtx,
    table: &Table,
    need: usize,
    exclude: u64,
    xid: u64,
    stats: &mut TxnStats,
) -> Result<u64> {
    if let Some(last) = table.last_page() {
        if last != exclude {
            let pinned = ctx.pool.fetch(last, Fetch::Read)?;
            let g = pinned.read();
            if PageRef(&g).free_space() >= need {
                return Ok(last);
            }
        }
    }
    if let Some(p) = table.page_with_space(need, exclude) {
        return Ok(p);
    }
    new_page(ctx, table, xid, stats)
}

/// Inserts rows produced by `next_row` (which encodes the next row into the buffer and
/// returns false when there are no more). Rows that land on one page share one record.
/// A call that fails has no effect: the rows it had inserted are removed again.
pub fn insert_many(
    ctx: &HeapCtx,
    table: &Table,
    view: &TxnView,
    stats: &mut TxnStats,
    next_row: &mut dyn FnMut(&mut Vec<u8>) -> Result<bool>,
) -> Result<Vec<RowId>> {
    let mut ids = Vec::new();
    let format = TupleFormat {
        header_bytes: TUPLE_HEADER_BYTES,
        build: &|out, xid, cid, row| {
            TupleHeader::write_new(out, xid, cid);
            out.extend_from_slice(row);
        },
        kind: RecordKind::HeapInsert,
    };
    match insert_rows(
        ctx,
        table,
        view,
        stats,
        next_row,
        &mut ids,
        &format,
        &mut |_, _, _| {},
    ) {
        Ok(()) => Ok(ids),
        Err(e) => {
            withdraw(ctx, &ids, view.snapshot.xid, stats)?;
            Err(e)
        }
    }
}

/// Appends the tuple for a row to `out`: (out, xid, cid, row).
pub(crate) type BuildTuple = dyn Fn(&mut Vec<u8>, u64, u32, &[u8]);

/// How a table kind builds the tuple of a new row and logs inserts.
pub(crate) struct TupleFormat<'a> {
    /// Tuple bytes beyond the row's own (at least; rows may be padded).
    pub header_bytes: usize,
    /// Appends the tuple for a row to `out`: (out, xid, cid, row).
    pub build: &'a BuildTuple,
    /// `HeapInsert` or `UndoInsert`.
    pub kind: RecordKind,
}

/// Removes rows this transaction inserted in a command that failed. Nobody else can see
/// them (uncommitted) or knows their ids, so they go at once, logged as a prune.
fn withdraw(ctx: &HeapCtx, ids: &[RowId], xid: u64, stats: &mut TxnStats) -> Result<()> {
    let mut start = 0;
    while start < ids.len() {
        let page_no = ids[start].page;
        let end = start
            + ids[start..]
                .iter()
                .take_while(|id| id.page == page_no)
                .count();
        let slots: Vec<u16> = ids[start..end].iter().map(|id| id.slot).collect();
        let pinned = ctx.pool.fetch(page_no, Fetch::Read)?;
        let mut g = pinned.write();
        PageMut(&mut g).remove_and_compact(&slots);
        let mut payload = Vec::with_capacity(10 + 2 * slots.len());
        Record::HeapPrune {
            page: page_no,
            slots,
        }
        .encode_payload(&mut payload);
        ctx.wal
            .append_page_change(RecordKind::HeapPrune, xid, &payload, &mut g, Some(stats))?;
        start = end;
    }
    Ok(())
}

/// Inserts rows, pushing each id once the row is on its page; every id pushed is logged
/// before this returns, error or not. `logged` hears of each record: (its LSN, the page,
/// the slots).
#[allow(clippy::too_many_arguments)]
pub(crate) fn insert_rows(
    ctx: &HeapCtx,
    table: &Table,
    view: &TxnView,
    stats: &mut TxnStats,
    next_row: &mut dyn FnMut(&mut Vec<u8>) -> Result<bool>,
    ids: &mut Vec<RowId>,
    format: &TupleFormat,
    logged: &mut dyn FnMut(u64, u64, &[u16]),
) -> Result<()> {
    let xid = view.snapshot.xid;
    let max = ctx.pool.page_size() - PAGE_HEADER_BYTES - SLOT_BYTES - format.header_bytes;
    let mut row = Vec::with_capacity(256);
    let mut tuple = Vec::with_capacity(256);
    let mut payload = Vec::with_capacity(ctx.pool.page_size() + 64);
    let mut slots = Vec::new();
    let mut have = next_row(&mut row)?;
    let mut failed: Option<Error> = None;
    while have {
        if row.len() > max {
            return Err(Error::RowTooLarge {
                size: row.len(),
                max,
            });
        }
        tuple.clear();
        (format.build)(&mut tuple, xid, view.cid, &row);
        let page_no = target_page(ctx, table, tuple.len() + SLOT_BYTES, u64::MAX, xid, stats)?;
        let pinned = ctx.pool.fetch(page_no, Fetch::Read)?;
        let mut g = pinned.write();
        payload.clear();
        payload.extend_from_slice(&page_no.to_le_bytes());
        payload.extend_from_slice(&view.cid.to_le_bytes());
        payload.extend_from_slice(&0u16.to_le_bytes());
        slots.clear();
        let mut n: u16 = 0;
        while have {
            if row.len() > max {
                break;
            }
            tuple.clear();
            (format.build)(&mut tuple, xid, view.cid, &row);
            let mut p = PageMut(&mut g);
            if !p.fits(tuple.len()) || n == u16::MAX {
                break;
            }
            let slot = p.next_slot();
            if !p.insert_at(slot, &tuple) {
                break;
            }
            payload.extend_from_slice(&slot.to_le_bytes());
            payload.extend_from_slice(&(row.len() as u16).to_le_bytes());
            payload.extend_from_slice(&row);
            ids.push(RowId {
                page: page_no,
                slot,
            });
            slots.push(slot);
            n += 1;
            // An error from the next row must not leave this page's rows unlogged:
            // log them first (the transaction is then aborted by the engine).
            match next_row(&mut row) {
                Ok(h) => have = h,
                Err(e) => {
                    have = false;
                    failed = Some(e);
                }
            }
        }
        if n == 0 {
            // Someone filled the page first; the next round picks another.
            table.set_free(page_no, 0);
            continue;
        }
        payload[12..14].copy_from_slice(&n.to_le_bytes());
        let a = if format.kind == RecordKind::HeapInsert {
            ctx.wal
                .append_page_change(format.kind, xid, &payload, &mut g, Some(stats))?
        } else {
            ctx.wal
                .append_undoable_change(format.kind, xid, &payload, &mut g, Some(stats))?
        };
        logged(a.lsn, page_no, &slots);
        let free = PageRef(&g).free_space();
        drop(g);
        if Some(page_no) != table.last_page() {
            table.set_free(page_no, free);
        }
        ctx.hook.between_pages();
        if let Some(e) = failed.take() {
            return Err(e);
        }
    }
    Ok(())
}

/// Visible rows of one page: (row id, row bytes).
pub fn scan_page(
    ctx: &HeapCtx,
    page_no: u64,
    view: &TxnView,
    out: &mut Vec<(RowId, Vec<u8>)>,
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
        if view.sees(&TupleHeader::read(t), ctx.clog) {
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

/// The version of the row at `id` visible to `view`, following update links forward.
pub fn fetch(
    ctx: &HeapCtx,
    table: &Table,
    id: RowId,
    view: &TxnView,
) -> Result<Option<(RowId, Vec<u8>)>> {
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
        // A link is only followed to the version its updater created (the slot may have
        // been vacuumed and reused).
        if prev_xmax.is_some_and(|x| x != h.xmin) {
            return Ok(None);
        }
        if view.sees(&h, ctx.clog) {
            return Ok(Some((cur, t[TUPLE_HEADER_BYTES..].to_vec())));
        }
        match h.next {
            Some((page, slot)) if h.xmax != 0 => {
                prev_xmax = Some(h.xmax);
                cur = RowId { page, slot };
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// Can this transaction change the version? Caller holds the page latch.
enum WriteCheck {
    Free,
    Wait(u64),
}

fn check_writable(ctx: &HeapCtx, t: &[u8], view: &TxnView, id: RowId) -> Result<WriteCheck> {
    let h = TupleHeader::read(t);
    if !view.sees(&h, ctx.clog) {
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

fn tuple_of<'g>(ctx: &HeapCtx, g: &'g mut [u8], id: RowId) -> Result<&'g mut [u8]> {
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
    ctx: &HeapCtx,
    table: &Table,
    id: RowId,
    view: &TxnView,
    stats: &mut TxnStats,
) -> Result<()> {
    let xid = view.snapshot.xid;
    loop {
        let pinned = pin_table_page(ctx, table, id)?;
        let mut g = pinned.write();
        let t = tuple_of(ctx, &mut g, id)?;
        match check_writable(ctx, t, view, id)? {
            WriteCheck::Wait(other) => {
                drop(g);
                drop(pinned);
                ctx.txns.wait_for(xid, other)?;
                continue;
            }
            WriteCheck::Free => {
                set_xmax(t, xid, None);
                let mut payload = Vec::with_capacity(10);
                Record::HeapDelete {
                    page: id.page,
                    slot: id.slot,
                }
                .encode_payload(&mut payload);
                ctx.wal.append_page_change(
                    RecordKind::HeapDelete,
                    xid,
                    &payload,
                    &mut g,
                    Some(stats),
                )?;
                return Ok(());
            }
        }
    }
}

/// Inserts one tuple into a latched page and logs it. Returns the slot.
fn insert_one(
    ctx: &HeapCtx,
    g: &mut [u8],
    page_no: u64,
    view: &TxnView,
    row: &[u8],
    stats: &mut TxnStats,
) -> Result<Option<u16>> {
    let xid = view.snapshot.xid;
    let mut tuple = Vec::with_capacity(TUPLE_HEADER_BYTES + row.len());
    TupleHeader::write_new(&mut tuple, xid, view.cid);
    tuple.extend_from_slice(row);
    let mut p = PageMut(g);
    if !p.fits(tuple.len()) {
        return Ok(None);
    }
    let slot = p.next_slot();
    if !p.insert_at(slot, &tuple) {
        return Ok(None);
    }
    let mut payload = Vec::with_capacity(row.len() + 20);
    payload.extend_from_slice(&page_no.to_le_bytes());
    payload.extend_from_slice(&view.cid.to_le_bytes());
    payload.extend_from_slice(&1u16.to_le_bytes());
    payload.extend_from_slice(&slot.to_le_bytes());
    payload.extend_from_slice(&(row.len() as u16).to_le_bytes());
    payload.extend_from_slice(row);
    ctx.wal
        .append_page_change(RecordKind::HeapInsert, xid, &payload, g, Some(stats))?;
    Ok(Some(slot))
}

/// Links the old version to its successor and logs it. Caller holds the old page latch.
fn retire(
    ctx: &HeapCtx,
    g: &mut [u8],
    id: RowId,
    new: RowId,
    xid: u64,
    stats: &mut TxnStats,
) -> Result<()> {
    let t = tuple_of(ctx, g, id)?;
    set_xmax(t, xid, Some((new.page, new.slot)));
    let mut payload = Vec::with_capacity(20);
    Record::HeapUpdateOld {
        page: id.page,
        slot: id.slot,
        new_page: new.page,
        new_slot: new.slot,
    }
    .encode_payload(&mut payload);
    ctx.wal
        .append_page_change(RecordKind::HeapUpdateOld, xid, &payload, g, Some(stats))?;
    Ok(())
}

/// Replaces the version at `id` with a new one holding `row`. Returns the new row id.
pub fn update(
    ctx: &HeapCtx,
    table: &Table,
    id: RowId,
    row: &[u8],
    view: &TxnView,
    stats: &mut TxnStats,
) -> Result<RowId> {
    let max = max_row_bytes(ctx.pool.page_size());
    if row.len() > max {
        return Err(Error::RowTooLarge {
            size: row.len(),
            max,
        });
    }
    let xid = view.snapshot.xid;
    loop {
        // First try the same page: the common case, and one latch.
        {
            let pinned = pin_table_page(ctx, table, id)?;
            let mut g = pinned.write();
            let t = tuple_of(ctx, &mut g, id)?;
            if let WriteCheck::Wait(other) = check_writable(ctx, t, view, id)? {
                drop(g);
                drop(pinned);
                ctx.txns.wait_for(xid, other)?;
                continue;
            }
            if let Some(slot) = insert_one(ctx, &mut g, id.page, view, row, stats)? {
                let new = RowId {
                    page: id.page,
                    slot,
                };
                retire(ctx, &mut g, id, new, xid, stats)?;
                return Ok(new);
            }
            table.set_free(id.page, PageRef(&g).free_space());
        }
        // Another page: latch both in page order so that two updaters cannot deadlock.
        let need = TUPLE_HEADER_BYTES + row.len() + SLOT_BYTES;
        let target = target_page(ctx, table, need, id.page, xid, stats)?;
        let old_pin = ctx.pool.fetch(id.page, Fetch::Read)?;
        let new_pin = ctx.pool.fetch(target, Fetch::Read)?;
        let (mut go, mut gn) = if id.page < target {
            let a = old_pin.write();
            (a, new_pin.write())
        } else {
            let b = new_pin.write();
            (old_pin.write(), b)
        };
        let t = tuple_of(ctx, &mut go, id)?;
        if let WriteCheck::Wait(other) = check_writable(ctx, t, view, id)? {
            // Wait with no latch and no pin held: waiters must not fill the pool.
            drop((go, gn));
            drop((old_pin, new_pin));
            ctx.txns.wait_for(xid, other)?;
            continue;
        }
        match insert_one(ctx, &mut gn, target, view, row, stats)? {
            Some(slot) => {
                let new = RowId { page: target, slot };
                retire(ctx, &mut go, id, new, xid, stats)?;
                return Ok(new);
            }
            None => table.set_free(target, 0),
        }
    }
}

/// Removes versions no snapshot can see from every page of a table. Returns the number
/// of versions removed.
pub fn vacuum(
    ctx: &HeapCtx,
    table: &Table,
    horizon: u64,
    xid: u64,
    stats: &mut TxnStats,
) -> Result<u64> {
    prune_pages(ctx, table, xid, stats, &|page| {
        dead_slots(ctx, page, horizon)
    })
}

/// Removes the slots `dead` names on each page of a table (a page with none is not
/// written), logging one prune record per page, and refreshes the free-space hints.
pub(crate) fn prune_pages(
    ctx: &HeapCtx,
    table: &Table,
    xid: u64,
    stats: &mut TxnStats,
    dead: &dyn Fn(&[u8]) -> Vec<u16>,
) -> Result<u64> {
    let mut removed = 0u64;
    let last = table.last_page();
    for page_no in table.page_list() {
        let pinned = ctx.pool.fetch(page_no, Fetch::Read)?;
        let found = {
            let g = pinned.read();
            dead(&g)
        };
        if !found.is_empty() {
            let mut g = pinned.write();
            // Re-check under the write latch: nothing can revive a dead version, but the
            // page may have changed between the latches.
            let found = dead(&g);
            if !found.is_empty() {
                PageMut(&mut g).remove_and_compact(&found);
                let mut payload = Vec::with_capacity(10 + 2 * found.len());
                removed += found.len() as u64;
                Record::HeapPrune {
                    page: page_no,
                    slots: found,
                }
                .encode_payload(&mut payload);
                ctx.wal.append_page_change(
                    RecordKind::HeapPrune,
                    xid,
                    &payload,
                    &mut g,
                    Some(stats),
                )?;
            }
        }
        if Some(page_no) != last {
            let free = PageRef(&pinned.read()).free_space();
            table.set_free(page_no, free);
        }
        drop(pinned);
        ctx.hook.between_pages();
    }
    Ok(removed)
}

fn dead_slots(ctx: &HeapCtx, page: &[u8], horizon: u64) -> Vec<u16> {
    let p = PageRef(page);
    let mut dead = Vec::new();
    for slot in 0..p.slot_count() {
        let Some(t) = p.tuple(slot) else { continue };
        if t.len() < TUPLE_HEADER_BYTES {
            continue;
        }
        let h = TupleHeader::read(t);
        let is_dead = match ctx.txns.status(h.xmin, ctx.clog) {
            XidStatus::Aborted => true,
            XidStatus::InProgress => false,
            XidStatus::Committed => {
                h.xmax != 0
                    && h.xmax < horizon
                    && ctx.txns.status(h.xmax, ctx.clog) == XidStatus::Committed
            }
        };
        if is_dead {
            dead.push(slot);
        }
    }
    dead
}

/// Applies a heap record during recovery unless the page already holds it.
pub fn redo(pool: &BufferPool, rec: &Record, xid: u64, end_lsn: u64) -> Result<()> {
    let how = match rec {
        Record::HeapInit { .. } | Record::PageImage { .. } => Fetch::Overwrite,
        _ => Fetch::Read,
    };
    redo_with(pool, rec, how, end_lsn, |g, page_no| {
        match rec {
            Record::HeapInit { table, .. } => PageMut(g).init(PageKind::Heap, page_no, *table),
            Record::PageImage {
                lower,
                upper,
                image,
                ..
            } => {
                let (lower, upper) = (*lower as usize, *upper as usize);
                let size = g.len();
                if upper > size || lower > upper || image.len() != size - (upper - lower) {
                    return Err(format!(
                        "page image of {} bytes with hole {lower}..{upper}",
                        image.len()
                    ));
                }
                g[..lower].copy_from_slice(&image[..lower]);
                g[lower..upper].fill(0);
                g[upper..].copy_from_slice(&image[lower..]);
                PageRef(g).validate()?;
            }
            Record::HeapInsert { cid, rows, .. } => {
                let build: &BuildTuple = &|out, xid, cid, row| {
                    TupleHeader::write_new(out, xid, cid);
                    out.extend_from_slice(row);
                };
                insert_at_slots(g, rows, xid, *cid, build)?;
            }
            Record::HeapDelete { slot, .. } => {
                let t = PageMut(g)
                    .into_tuple_mut(*slot)
                    .filter(|t| t.len() >= TUPLE_HEADER_BYTES)
                    .ok_or_else(|| format!("no tuple at slot {slot}"))?;
                set_xmax(t, xid, None);
            }
            Record::HeapUpdateOld {
                slot,
                new_page,
                new_slot,
                ..
            } => {
                let t = PageMut(g)
                    .into_tuple_mut(*slot)
                    .filter(|t| t.len() >= TUPLE_HEADER_BYTES)
                    .ok_or_else(|| format!("no tuple at slot {slot}"))?;
                set_xmax(t, xid, Some((*new_page, *new_slot)));
            }
            Record::HeapPrune { slots, .. } => PageMut(g).remove_and_compact(slots),
            _ => {}
        }
        Ok(())
    })
}

/// The frame of every redo: pins the record's page (`how`), skips it when the page LSN
/// shows the record is already there, applies `apply` (page bytes, page number), and sets
/// the page LSN. A reason from `apply` becomes a corrupt-page error naming the record.
pub(crate) fn redo_with(
    pool: &BufferPool,
    rec: &Record,
    how: Fetch,
    end_lsn: u64,
    apply: impl FnOnce(&mut [u8], u64) -> std::result::Result<(), String>,
) -> Result<()> {
    let Some(page_no) = rec.page() else {
        return Ok(());
    };
    let pinned = pool.fetch(page_no, how)?;
    let mut g = pinned.write();
    if how == Fetch::Read && PageRef(&g).lsn() >= end_lsn {
        return Ok(());
    }
    apply(&mut g, page_no).map_err(|reason| Error::CorruptPage {
        path: pool.store().path().to_path_buf(),
        page: page_no,
        location: page_no,
        reason: format!("redo of the record ending at LSN {end_lsn}: {reason}"),
    })?;
    PageMut(&mut g).set_lsn(end_lsn);
    Ok(())
}

/// Redo of an insert record: puts each row's tuple (built by `build`) at its slot.
pub(crate) fn insert_at_slots(
    g: &mut [u8],
    rows: &[(u16, Vec<u8>)],
    xid: u64,
    cid: u32,
    build: &BuildTuple,
) -> std::result::Result<(), String> {
    let mut tuple = Vec::new();
    for (slot, row) in rows {
        tuple.clear();
        build(&mut tuple, xid, cid, row);
        if !PageMut(g).insert_at(*slot, &tuple) {
            return Err(format!(
                "cannot insert {} bytes at slot {slot}",
                tuple.len()
            ));
        }
    }
    Ok(())
}
