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
use crate::wal::record::{DeltaRow, InsertBuilder, UpdateLink};
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
        return Err(Error::DatabaseFull {
            pages: NO_NEXT as u64,
        });
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
    let mut builder = InsertBuilder::default();
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
        builder.clear();
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
            builder.push(slot, &row);
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
        builder.finish(page_no, view.cid, &mut payload);
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
    delete_rows(ctx, table, id.page, &[id.slot], view, stats)
}

/// What stopped a page's batch before its end.
enum Stop {
    Wait(u64),
    Fail(Error),
}

/// Deletes versions of one page (each visible to `view`), logging one record for the
/// rows deleted together. Waits for other writers in between. Stops at the first error;
/// what was deleted before it stays deleted (and logged).
pub fn delete_rows(
    ctx: &HeapCtx,
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
            Record::HeapDelete { page, slots: done }.encode_payload(&mut payload);
            ctx.wal.append_page_change(
                RecordKind::HeapDelete,
                xid,
                &payload,
                &mut g,
                Some(stats),
            )?;
        }
        drop(g);
        drop(pinned);
        resolve(ctx, xid, stop)?;
    }
    Ok(())
}

/// What stops a batch at the row `id` of a latched page: None when the row may be
/// written now.
fn blocker(ctx: &HeapCtx, g: &mut [u8], view: &TxnView, id: RowId) -> Option<Stop> {
    match tuple_of(ctx, g, id).and_then(|t| check_writable(ctx, t, view, id)) {
        Ok(WriteCheck::Free) => None,
        Ok(WriteCheck::Wait(other)) => Some(Stop::Wait(other)),
        Err(e) => Some(Stop::Fail(e)),
    }
}

/// After a batch that stopped, with no latch and no pin held (waiters must not fill the
/// pool): fails, or waits for the other writer.
fn resolve(ctx: &HeapCtx, xid: u64, stop: Option<Stop>) -> Result<()> {
    match stop {
        None => Ok(()),
        Some(Stop::Fail(e)) => Err(e),
        Some(Stop::Wait(other)) => ctx.txns.wait_for(xid, other),
    }
}

/// The delta that turns `old` into `new`: common prefix and suffix lengths and the new
/// bytes between them.
fn row_delta(old: &[u8], new: &[u8]) -> (u16, u16, std::ops::Range<usize>) {
    let max = old.len().min(new.len()).min(u16::MAX as usize);
    let prefix = old
        .iter()
        .zip(new)
        .take(max)
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take(max - prefix)
        .take_while(|(a, b)| a == b)
        .count();
    (prefix as u16, suffix as u16, prefix..new.len() - suffix)
}

/// The delta of `new` against `old` as logged: prefix and suffix lengths, and the middle
/// bytes XORed with the old row's middle where the two overlap (the rest as they are), so
/// that a changed number costs the bits that changed, as in an undo table's update.
fn delta_middle(old: &[u8], new: &[u8]) -> (u16, u16, Vec<u8>) {
    let (prefix, suffix, range) = row_delta(old, new);
    let old_mid = &old[prefix as usize..old.len() - suffix as usize];
    let mut middle = new[range].to_vec();
    middle.iter_mut().zip(old_mid).for_each(|(b, o)| *b ^= o);
    (prefix, suffix, middle)
}

/// The new version of a row, put on a latched page: returns its slot, or None when the
/// page has no room. The tuple is built in `tuple`.
fn put_version(g: &mut [u8], tuple: &[u8]) -> Option<u16> {
    let mut p = PageMut(g);
    if !p.fits(tuple.len()) {
        return None;
    }
    let slot = p.next_slot();
    p.insert_at(slot, tuple).then_some(slot)
}

/// One page's worth of updates: the new versions (as deltas) and the links of the old.
#[derive(Default)]
struct UpdateBatch {
    news: Vec<DeltaRow>,
    links: Vec<UpdateLink>,
}

impl UpdateBatch {
    /// Puts the new version of the row at `old` (a tuple of `go`, already checked
    /// writable) on `gn` (the same page when `gn` is None). Returns its slot, or None
    /// when it does not fit.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        go: &mut [u8],
        gn: Option<&mut [u8]>,
        old: RowId,
        new_page: u64,
        row: &[u8],
        view: &TxnView,
        tuple: &mut Vec<u8>,
    ) -> Option<u16> {
        let xid = view.snapshot.xid;
        tuple.clear();
        TupleHeader::write_new(tuple, xid, view.cid);
        tuple.extend_from_slice(row);
        let t = PageRef(go).tuple_ref(old.slot)?;
        let middle = delta_middle(&t[TUPLE_HEADER_BYTES..], row);
        let slot = match gn {
            Some(gn) => put_version(gn, tuple)?,
            None => put_version(go, tuple)?,
        };
        if let Some(t) = PageMut(go).into_tuple_mut(old.slot) {
            set_xmax(t, xid, Some((new_page, slot)));
        }
        self.news.push(DeltaRow {
            slot,
            old_page: old.page,
            old_slot: old.slot,
            prefix: middle.0,
            suffix: middle.1,
            middle: middle.2,
        });
        self.links.push(UpdateLink {
            slot: old.slot,
            new_page,
            new_slot: slot,
        });
        Some(slot)
    }

    /// Logs the links of the old versions and the new versions. On two pages, the links
    /// (old page) go first: redo of the new versions then reads old versions from a page
    /// already made whole, since in full-page mode the old page's first change after the
    /// redo point is its image (docs/recovery.md rule 26). On one page, the new versions
    /// go first: a page image taken for the first record holds both changes, and the
    /// links' redo (setting xmax) is the same again.
    #[allow(clippy::too_many_arguments)]
    fn log(
        &mut self,
        ctx: &HeapCtx,
        go: &mut [u8],
        gn: Option<&mut [u8]>,
        old_page: u64,
        new_page: u64,
        view: &TxnView,
        stats: &mut TxnStats,
    ) -> Result<()> {
        if self.news.is_empty() {
            return Ok(());
        }
        let xid = view.snapshot.xid;
        let mut old_rec = Vec::with_capacity(16 + self.links.len() * 4);
        Record::HeapUpdateOld {
            page: old_page,
            links: std::mem::take(&mut self.links),
        }
        .encode_payload(&mut old_rec);
        let mut new_rec = Vec::with_capacity(64 + self.news.len() * 16);
        Record::HeapUpdateNew {
            page: new_page,
            cid: view.cid,
            rows: std::mem::take(&mut self.news),
        }
        .encode_payload(&mut new_rec);
        let (old_kind, new_kind) = (RecordKind::HeapUpdateOld, RecordKind::HeapUpdateNew);
        match gn {
            Some(gn) => {
                ctx.wal
                    .append_page_change(old_kind, xid, &old_rec, go, Some(&mut *stats))?;
                ctx.wal
                    .append_page_change(new_kind, xid, &new_rec, gn, Some(stats))?;
            }
            None => {
                ctx.wal
                    .append_page_change(new_kind, xid, &new_rec, go, Some(&mut *stats))?;
                ctx.wal
                    .append_page_change(old_kind, xid, &old_rec, go, Some(stats))?;
            }
        }
        Ok(())
    }
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
    let mut ids = Vec::with_capacity(1);
    update_rows(
        ctx,
        table,
        id.page,
        &[(id.slot, row)],
        view,
        stats,
        &mut ids,
    )?;
    ids.first().copied().ok_or(Error::NoSuchRow(id))
}

/// Replaces versions of one page (each visible to `view`) with new ones: on the same
/// page while it has room, else on other pages, a few rows per latch. The new versions
/// put on one page are logged as one `HeapUpdateNew` of deltas against the old ones,
/// the old versions' links as one `HeapUpdateOld`. Pushes each new version's id to
/// `new_ids`. Stops at the first error; what was updated before it stays updated.
pub fn update_rows<R: AsRef<[u8]>>(
    ctx: &HeapCtx,
    table: &Table,
    page: u64,
    rows: &[(u16, R)],
    view: &TxnView,
    stats: &mut TxnStats,
    new_ids: &mut Vec<RowId>,
) -> Result<()> {
    let max = max_row_bytes(ctx.pool.page_size());
    if let Some((_, row)) = rows.iter().find(|(_, r)| r.as_ref().len() > max) {
        return Err(Error::RowTooLarge {
            size: row.as_ref().len(),
            max,
        });
    }
    let xid = view.snapshot.xid;
    let mut tuple = Vec::with_capacity(256);
    let mut batch = UpdateBatch::default();
    let mut at = 0;
    while at < rows.len() {
        // The same page first: the common case when it has room, and one latch.
        let mut stop = None;
        let mut full = false;
        {
            let first = RowId {
                page,
                slot: rows[at].0,
            };
            let pinned = pin_table_page(ctx, table, first)?;
            let mut g = pinned.write();
            while at < rows.len() {
                let id = RowId {
                    page,
                    slot: rows[at].0,
                };
                stop = blocker(ctx, &mut g, view, id);
                if stop.is_some() {
                    break;
                }
                let row = rows[at].1.as_ref();
                let Some(slot) = batch.add(&mut g, None, id, page, row, view, &mut tuple) else {
                    full = true;
                    break;
                };
                new_ids.push(RowId { page, slot });
                at += 1;
            }
            batch.log(ctx, &mut g, None, page, page, view, stats)?;
            if full {
                table.set_free(page, PageRef(&g).free_space());
            }
        }
        if stop.is_some() {
            resolve(ctx, xid, stop)?;
            continue;
        }
        if !full {
            break;
        }
        // Another page: latch both in page order so that two updaters cannot deadlock.
        let need = TUPLE_HEADER_BYTES + rows[at].1.as_ref().len() + SLOT_BYTES;
        let target = target_page(ctx, table, need, page, xid, stats)?;
        let old_pin = ctx.pool.fetch(page, Fetch::Read)?;
        let new_pin = ctx.pool.fetch(target, Fetch::Read)?;
        let (mut go, mut gn) = if page < target {
            let a = old_pin.write();
            (a, new_pin.write())
        } else {
            let b = new_pin.write();
            (old_pin.write(), b)
        };
        let mut placed = 0;
        while at < rows.len() {
            let id = RowId {
                page,
                slot: rows[at].0,
            };
            stop = blocker(ctx, &mut go, view, id);
            if stop.is_some() {
                break;
            }
            let row = rows[at].1.as_ref();
            let Some(slot) = batch.add(&mut go, Some(&mut gn), id, target, row, view, &mut tuple)
            else {
                break;
            };
            new_ids.push(RowId { page: target, slot });
            placed += 1;
            at += 1;
        }
        batch.log(ctx, &mut go, Some(&mut gn), page, target, view, stats)?;
        if placed == 0 && stop.is_none() {
            table.set_free(target, 0);
        }
        drop((go, gn));
        drop((old_pin, new_pin));
        resolve(ctx, xid, stop)?;
    }
    Ok(())
}

/// Removes versions no snapshot can see from every page of a table. Returns the number
/// of versions removed, and a number that is not zero when dead versions were kept
/// because a checkpoint has yet to pass the update that replaced them (`dead_slots`).
pub fn vacuum(
    ctx: &HeapCtx,
    table: &Table,
    horizon: u64,
    xid: u64,
    stats: &mut TxnStats,
) -> Result<(u64, u64)> {
    let waiting = std::cell::Cell::new(0u64);
    let removed = prune_pages(ctx, table, xid, stats, &|page| {
        let (dead, w) = dead_slots(ctx, page, horizon);
        waiting.set(waiting.get().max(w));
        dead
    })?;
    Ok((removed, waiting.get()))
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

/// The dead versions of a page, and how many more are dead but must wait: a version
/// replaced by an update is the base of its successor's delta (`HeapUpdateNew`), which
/// redo reads from this page. It may go only once its updater ended before the redo
/// point of a completed checkpoint, so that the delta is never replayed again
/// (docs/recovery.md rule 26). (Deltas of updates that rolled back may outlive their
/// base: redo then fills their bytes in as zeros, in a version nobody sees.)
fn dead_slots(ctx: &HeapCtx, page: &[u8], horizon: u64) -> (Vec<u16>, u64) {
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

/// The old versions a `HeapUpdateNew` record reads from other pages, as they are now
/// (None where a slot holds no tuple).
fn delta_bases(pool: &BufferPool, page: u64, rows: &[DeltaRow]) -> Result<Vec<Option<Vec<u8>>>> {
    let mut out = Vec::with_capacity(rows.len());
    let mut cur: Option<(u64, crate::buffer::PinnedPage)> = None;
    for d in rows {
        if d.old_page == page {
            out.push(None);
            continue;
        }
        if cur.as_ref().map(|(p, _)| *p) != Some(d.old_page) {
            if d.old_page >= pool.store().next_page_no() {
                return Err(Error::CorruptPage {
                    path: pool.store().path().to_path_buf(),
                    page,
                    location: page,
                    reason: format!("a delta reads page {}, past the end", d.old_page),
                });
            }
            cur = Some((d.old_page, pool.fetch(d.old_page, Fetch::Read)?));
        }
        let base = cur.as_ref().and_then(|(_, pin)| {
            let g = pin.read();
            PageRef(&g).tuple(d.old_slot).map(|t| t.to_vec())
        });
        out.push(base);
    }
    Ok(out)
}

/// A new row from its delta (`delta_middle`) and the old tuple (header included). Without the old tuple
/// (an update that rolled back and whose base was pruned since: rule 26), the old bytes
/// are zeros: the version is dead, only its length matters to the page.
fn rebuild_row(base: Option<&[u8]>, d: &DeltaRow, out: &mut Vec<u8>) {
    let (prefix, suffix) = (d.prefix as usize, d.suffix as usize);
    let old = base
        .filter(|t| t.len() >= TUPLE_HEADER_BYTES + prefix + suffix)
        .map(|t| &t[TUPLE_HEADER_BYTES..]);
    match old {
        Some(old) => {
            out.extend_from_slice(&old[..prefix]);
            let old_mid = &old[prefix..old.len() - suffix];
            out.extend(
                d.middle
                    .iter()
                    .enumerate()
                    .map(|(i, b)| b ^ old_mid.get(i).copied().unwrap_or(0)),
            );
            out.extend_from_slice(&old[old.len() - suffix..]);
        }
        None => {
            out.resize(out.len() + prefix, 0);
            out.extend_from_slice(&d.middle);
            out.resize(out.len() + suffix, 0);
        }
    }
}

/// Applies a heap record during recovery unless the page already holds it.
pub fn redo(pool: &BufferPool, rec: &Record, xid: u64, end_lsn: u64) -> Result<()> {
    let bases = match rec {
        Record::HeapUpdateNew { page, rows, .. } => {
            // Read the old versions only for a record the page does not hold yet.
            let pinned = pool.fetch(*page, Fetch::Read)?;
            let done = PageRef(&pinned.read()).lsn() >= end_lsn;
            drop(pinned);
            if done {
                return Ok(());
            }
            delta_bases(pool, *page, rows)?
        }
        _ => Vec::new(),
    };
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
            Record::HeapDelete { slots, .. } => {
                for slot in slots {
                    set_xmax(header_mut(g, *slot)?, xid, None);
                }
            }
            Record::HeapUpdateOld { links, .. } => {
                for l in links {
                    set_xmax(header_mut(g, l.slot)?, xid, Some((l.new_page, l.new_slot)));
                }
            }
            Record::HeapPrune { slots, .. } => PageMut(g).remove_and_compact(slots),
            Record::HeapUpdateNew { cid, rows, .. } => {
                let mut tuple = Vec::new();
                for (d, base) in rows.iter().zip(&bases) {
                    let same_page;
                    let base = if d.old_page == page_no {
                        same_page = PageRef(g).tuple(d.old_slot).map(|t| t.to_vec());
                        same_page.as_deref()
                    } else {
                        base.as_deref()
                    };
                    tuple.clear();
                    TupleHeader::write_new(&mut tuple, xid, *cid);
                    rebuild_row(base, d, &mut tuple);
                    if !PageMut(g).insert_at(d.slot, &tuple) {
                        return Err(format!(
                            "cannot insert {} bytes at slot {}",
                            tuple.len(),
                            d.slot
                        ));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    })
}

/// The tuple at `slot` of a page being redone, at least a header long.
fn header_mut(g: &mut [u8], slot: u16) -> std::result::Result<&mut [u8], String> {
    PageMut(g)
        .into_tuple_mut(slot)
        .filter(|t| t.len() >= TUPLE_HEADER_BYTES)
        .ok_or_else(|| format!("no tuple at slot {slot}"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn delta_of(old: &[u8], new: &[u8]) -> DeltaRow {
        let (prefix, suffix, middle) = delta_middle(old, new);
        DeltaRow {
            slot: 0,
            old_page: 0,
            old_slot: 0,
            prefix,
            suffix,
            middle,
        }
    }

    fn tuple(row: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        TupleHeader::write_new(&mut t, 9, 1);
        t.extend_from_slice(row);
        t
    }

    #[test]
    fn a_one_column_change_logs_only_the_changed_bytes() {
        let old: Vec<u8> = (0..130u8).collect();
        let mut new = old.clone();
        new[5] = 99;
        let d = delta_of(&old, &new);
        assert_eq!(
            (d.prefix, d.suffix, d.middle.clone()),
            (5, 124, vec![5 ^ 99])
        );
        let mut out = Vec::new();
        rebuild_row(Some(&tuple(&old)), &d, &mut out);
        assert_eq!(out, new);
        // The base gone (rule 26): zeros of the right length.
        let mut out = Vec::new();
        rebuild_row(None, &d, &mut out);
        assert_eq!(out.len(), new.len());
    }

    proptest! {
        #[test]
        fn delta_then_rebuild_gives_the_new_row(
            old in proptest::collection::vec(0u8..4, 0..200),
            new in proptest::collection::vec(0u8..4, 0..200),
        ) {
            let d = delta_of(&old, &new);
            prop_assert!(d.prefix as usize + d.suffix as usize <= old.len().min(new.len()));
            let mut out = Vec::new();
            rebuild_row(Some(&tuple(&old)), &d, &mut out);
            prop_assert_eq!(out, new);
        }
    }
}
