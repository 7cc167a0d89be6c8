//! Heap tables (the PostgreSQL-like kind): every insert, update and delete creates or
//! retires a row version; an update writes a new version and links the old one to it.
//! Visibility comes from the versions' xmin/xmax, the clog and the reader's snapshot.
//!
//! Tuple header (22 bytes, little-endian): `xmin u48 | xmax u48 | next_page u32 |
//! next_slot u16 | cid u30 + flags u2`, then the row encoding of `schema.rs`.
//! `next_page` is `u32::MAX` when the version has no successor.
//!
//! Heap-only versions (PostgreSQL's HOT): an update whose new version stays on its page
//! and changes no indexed column makes no index entry. The new version is flagged
//! `HEAP_ONLY`; index entries name its chain's *root*, the version on the page the chain
//! entered it by (an insert, or an update from another page or of a key). When vacuum
//! finds a root dead while later versions of its chain on the page live, the root
//! becomes a *redirect*: its header alone (`REDIRECT`), its link leading to the first
//! live version. Readers follow a redirect like an update link.

mod update;
pub mod wal_records;

pub use update::{update, update_rows};

use crate::access::slotted::{
    corrupt, get_u48, insert_rows, pin_table_page, prune_page, put_u48, remove_slots, withdraw,
    TupleFormat,
};
use crate::access::{
    Change, Ctx, InsertCursor, Latest, Own, PageRows, Progress, TableAccess, TxnView, Updated,
    Vacuumed, Writer,
};
use crate::buffer::Fetch;
use crate::catalog::Table;
use crate::clog::{Clog, XidStatus};
use crate::error::{Error, Result};
use crate::page::{PageMut, PageRef, PAGE_HEADER_BYTES, SLOT_BYTES};
use crate::stats::TxnStats;
use crate::wal::payload::Payload;
use crate::RowId;
use wal_records::{HeapRecord, HEAP_DELETE, HEAP_INSERT, HEAP_PRUNE_HOT};

pub const TUPLE_HEADER_BYTES: usize = 22;

/// The largest command id a heap tuple holds (its header keeps two bits for flags).
pub const MAX_CID: u32 = (1 << 30) - 1;
/// Header flag: the version has no index entries of its own (a heap-only update).
pub const HEAP_ONLY: u8 = 1;
/// Header flag: a dead chain root kept as a header, leading to its chain's live version.
pub const REDIRECT: u8 = 2;

pub(crate) const NO_NEXT: u32 = u32::MAX;

/// The fields of a tuple header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TupleHeader {
    pub xmin: u64,
    pub xmax: u64,
    pub next: Option<(u64, u16)>,
    pub cid: u32,
    /// `HEAP_ONLY`, `REDIRECT`.
    pub flags: u8,
}

impl TupleHeader {
    pub fn read(t: &[u8]) -> TupleHeader {
        let np = u32::from_le_bytes([t[12], t[13], t[14], t[15]]);
        let ns = u16::from_le_bytes([t[16], t[17]]);
        let cf = u32::from_le_bytes([t[18], t[19], t[20], t[21]]);
        TupleHeader {
            xmin: get_u48(t, 0),
            xmax: get_u48(t, 6),
            next: (np != NO_NEXT).then_some((np as u64, ns)),
            cid: cf & MAX_CID,
            flags: (cf >> 30) as u8,
        }
    }

    pub(crate) fn write_new(out: &mut Vec<u8>, xmin: u64, cid: u32, flags: u8) {
        let mut h = [0u8; TUPLE_HEADER_BYTES];
        put_u48(&mut h, 0, xmin);
        h[12..16].copy_from_slice(&NO_NEXT.to_le_bytes());
        set_cid(&mut h, cid, flags);
        out.extend_from_slice(&h);
    }

    pub fn heap_only(&self) -> bool {
        self.flags & HEAP_ONLY != 0
    }

    pub fn redirect(&self) -> bool {
        self.flags & REDIRECT != 0
    }
}

/// Writes a header's command id and flags (`HEAP_ONLY`, `REDIRECT`) into one field.
pub(crate) fn set_cid(t: &mut [u8], cid: u32, flags: u8) {
    let cf = (cid & MAX_CID) | (u32::from(flags & 3) << 30);
    t[18..22].copy_from_slice(&cf.to_le_bytes());
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
            TupleHeader::write_new(out, xid, cid, 0);
            out.extend_from_slice(row);
        },
        record: HEAP_INSERT,
        xid: view.xid,
    };
    match insert_rows(ctx, table, view, stats, cursor, &format, &mut |_, _, _| {}) {
        Ok(p) => Ok(p),
        Err(e) => {
            withdraw(ctx, &cursor.ids, view.xid, stats)?;
            Err(e)
        }
    }
}

/// The rows of one page whose header `keep` accepts: (row id, row bytes). With `roots`,
/// the id is the one index entries name (the version's chain root).
fn page_rows(
    ctx: &Ctx,
    page_no: u64,
    out: &mut PageRows,
    roots: bool,
    keep: impl Fn(&TupleHeader) -> bool,
) -> Result<()> {
    let pinned = ctx.pool.fetch(page_no, Fetch::Read)?;
    let g = pinned.read();
    let p = PageRef(&g);
    let root = roots.then(|| chain_roots(&g));
    for slot in 0..p.slot_count() {
        let Some(t) = p.tuple(slot) else { continue };
        if t.len() < TUPLE_HEADER_BYTES {
            return Err(corrupt(
                ctx,
                page_no,
                format!("slot {slot} shorter than a tuple header"),
            ));
        }
        let h = TupleHeader::read(t);
        if !h.redirect() && keep(&h) {
            let slot = root
                .as_ref()
                .and_then(|r| r.get(slot as usize).copied())
                .unwrap_or(slot);
            out.push(
                RowId {
                    page: page_no,
                    slot,
                },
                &t[TUPLE_HEADER_BYTES..],
            );
        }
    }
    Ok(())
}

/// The link from `cur` to its successor when that is a heap-only version on the same
/// page: the successor's slot and header.
fn hot_successor(p: PageRef, cur: &TupleHeader) -> Option<(u16, TupleHeader)> {
    let (np, ns) = cur.next?;
    if np != p.page_no() {
        return None;
    }
    let t = p.tuple(ns).filter(|t| t.len() >= TUPLE_HEADER_BYTES)?;
    let h = TupleHeader::read(t);
    (h.heap_only() && !h.redirect() && h.xmin == cur.xmax).then_some((ns, h))
}

/// For each slot of a page, the root of its version's chain: the slot index entries name
/// (itself, except for a heap-only version). A heap-only version no root leads to (an
/// update that rolled back, or damage) is its own root.
pub(crate) fn chain_roots(page: &[u8]) -> Vec<u16> {
    let p = PageRef(page);
    let n = p.slot_count();
    let mut root: Vec<u16> = (0..n).collect();
    for slot in 0..n {
        let Some(t) = p.tuple(slot).filter(|t| t.len() >= TUPLE_HEADER_BYTES) else {
            continue;
        };
        let mut h = TupleHeader::read(t);
        if h.heap_only() {
            continue;
        }
        for _ in 0..n {
            let Some((s, next)) = hot_successor(p, &h) else {
                break;
            };
            root[s as usize] = slot;
            h = next;
        }
    }
    root
}

/// Visible rows of one page: (row id, row bytes).
pub fn scan_page(ctx: &Ctx, page_no: u64, view: &TxnView, out: &mut PageRows) -> Result<()> {
    page_rows(ctx, page_no, out, false, |h| sees(view, h, ctx.clog))
}

/// Every version on a page whose inserter did not abort (or, with a view, that the view
/// sees), with the id its index entries name (its chain's root).
fn versions_of_page(
    ctx: &Ctx,
    page_no: u64,
    view: Option<&TxnView>,
    out: &mut PageRows,
) -> Result<()> {
    page_rows(ctx, page_no, out, true, |h| match view {
        Some(view) => sees(view, h, ctx.clog),
        None => ctx.txns.status(h.xmin, ctx.clog) != XidStatus::Aborted,
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
///
/// The links within one page are followed under one read latch: pruning (which takes
/// the write latch) removes the dead versions at the head of a chain, and a walk that let
/// go of the page between two of them could find the next one gone, and with it the
/// live version the chain leads to. A link to another page leads to a chain root, which
/// pruning keeps (as a redirect) while any version after it lives.
fn walk<R>(
    ctx: &Ctx,
    table: &Table,
    id: RowId,
    mut at: impl FnMut(RowId, &TupleHeader, &[u8]) -> Step<R>,
) -> Result<Option<R>> {
    let mut cur = id;
    let mut prev_xmax: Option<u64> = None;
    let mut steps = 0;
    while steps < 10_000 {
        let pinned = match pin_table_page(ctx, table, cur) {
            Ok(p) => p,
            Err(Error::NoSuchRow(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let g = pinned.read();
        let page = cur.page;
        while cur.page == page {
            steps += 1;
            if steps > 10_000 {
                return Ok(None);
            }
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
            if !h.redirect() {
                match at(cur, &h, &t[TUPLE_HEADER_BYTES..]) {
                    Step::Found(r) => return Ok(Some(r)),
                    Step::Stop => return Ok(None),
                    Step::Follow => {}
                }
            }
            let Some((page, slot)) = h.next else {
                return Ok(None);
            };
            prev_xmax = Some(h.xmax);
            cur = RowId { page, slot };
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
pub fn latest(ctx: &Ctx, table: &Table, id: RowId, own: Own) -> Result<Latest> {
    let status = |x: u64| {
        if own.contains(x) {
            XidStatus::Committed
        } else {
            ctx.txns.status(x, ctx.clog)
        }
    };
    let found = walk(ctx, table, id, |cur, h, row| {
        match status(h.xmin) {
            XidStatus::Aborted => return Step::Stop,
            XidStatus::InProgress => {
                // The entry's own tuple, made by the running transaction: that version or
                // nothing. (Past the entry's tuple the chain is another's to judge.)
                let only = (cur == id).then(|| (cur, row.to_vec()));
                return Step::Found(Latest::Pending { xid: h.xmin, only });
            }
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
            // Deleted or updated by a running transaction: this version stays if it rolls
            // back; a heap-only successor keeps its indexed columns, and any other
            // successor has index entries of its own.
            XidStatus::InProgress => Step::Found(Latest::Pending {
                xid: h.xmax,
                only: Some((cur, row.to_vec())),
            }),
            XidStatus::Committed => Step::Follow,
        }
    })?;
    Ok(found.unwrap_or(Latest::Gone))
}

/// Can this transaction change the version? Caller holds the page latch.
pub(crate) enum WriteCheck {
    Free,
    Wait(u64),
    /// A transaction that committed after the view's snapshot changed or deleted it.
    Changed,
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
        XidStatus::Committed => Ok(WriteCheck::Changed),
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

/// Deletes the version at `id` (visible to the writer's view).
pub fn delete(ctx: &Ctx, table: &Table, id: RowId, w: &mut Writer) -> Result<()> {
    delete_rows(ctx, table, id.page, &[id.slot], w)
}

/// The row bytes of the tuple at `id` of `table`, whatever its visibility: a chunk of a
/// toast relation, which lives as long as a row version that points at it (readers find
/// it through that version, never by scanning).
pub fn chunk_row(ctx: &Ctx, table: &Table, id: RowId) -> Result<Vec<u8>> {
    let missing = || corrupt(ctx, id.page, format!("no toast chunk at slot {}", id.slot));
    let pinned = match pin_table_page(ctx, table, id) {
        Ok(p) => p,
        Err(Error::NoSuchRow(_)) => return Err(missing()),
        Err(e) => return Err(e),
    };
    let g = pinned.read();
    let t = PageRef(&g).tuple_ref(id.slot).ok_or_else(missing)?;
    if t.len() < TUPLE_HEADER_BYTES || TupleHeader::read(t).redirect() {
        return Err(missing());
    }
    Ok(t[TUPLE_HEADER_BYTES..].to_vec())
}

/// Deletes tuples of one page of `table` (toast chunks) as `xid`, without the checks of
/// a row's delete: a chunk is deleted only by the transaction whose row change stopped
/// pointing at it, once that change is made. Logged as a delete.
pub fn delete_chunks(
    ctx: &Ctx,
    table: &Table,
    page: u64,
    slots: &[u16],
    xid: u64,
    stats: &mut TxnStats,
) -> Result<()> {
    let Some(&first) = slots.first() else {
        return Ok(());
    };
    let pinned = pin_table_page(ctx, table, RowId { page, slot: first })?;
    let mut g = pinned.write();
    for &slot in slots {
        let t = tuple_of(ctx, &mut g, RowId { page, slot })?;
        let h = TupleHeader::read(t);
        if h.redirect()
            || (h.xmax != 0
                && h.xmax != xid
                && ctx.txns.status(h.xmax, ctx.clog) != XidStatus::Aborted)
        {
            return Err(corrupt(
                ctx,
                page,
                format!(
                    "toast chunk at slot {slot} is deleted by transaction {} already",
                    h.xmax
                ),
            ));
        }
        set_xmax(t, xid, None);
    }
    let mut payload = Vec::with_capacity(16);
    HeapRecord::Delete {
        page,
        slots: slots.to_vec(),
    }
    .encode_payload(&mut payload);
    ctx.wal
        .append_page_change(HEAP_DELETE, xid, &payload, &mut g, Some(stats))?;
    Ok(())
}

/// What stopped a page's batch before its end.
pub(crate) enum Stop {
    Wait(u64),
    Fail(Error),
}

/// Deletes versions of one page (each visible to the writer's view), logging one record
/// for the rows deleted together. Waits for other writers in between; a row a
/// transaction that committed after the view's snapshot changed is left for
/// `Writer::changed`. Stops at the first error; what was deleted before it stays
/// deleted (and logged).
pub fn delete_rows(
    ctx: &Ctx,
    table: &Table,
    page: u64,
    slots: &[u16],
    w: &mut Writer,
) -> Result<()> {
    let view = w.view;
    let xid = view.xid;
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
            match blocker(ctx, &mut g, w, id) {
                Next::Write => {}
                Next::Skip => {
                    at += 1;
                    continue;
                }
                Next::Stop(s) => {
                    stop = Some(s);
                    break;
                }
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
                .append_page_change(HEAP_DELETE, xid, &payload, &mut g, Some(w.stats))?;
        }
        drop(g);
        drop(pinned);
        resolve(ctx, xid, stop)?;
    }
    Ok(())
}

/// What a batch does at one row of a latched page.
pub(crate) enum Next {
    /// Change it now.
    Write,
    /// Go on without it: a transaction that committed after the view's snapshot changed
    /// it, and the writer takes such rows (`Writer::changed`, which now holds it).
    Skip,
    Stop(Stop),
}

/// What a batch does at the row `id` of a latched page.
pub(crate) fn blocker(ctx: &Ctx, g: &mut [u8], w: &mut Writer, id: RowId) -> Next {
    match tuple_of(ctx, g, id).and_then(|t| check_writable(ctx, t, w.view, id)) {
        Ok(WriteCheck::Free) => Next::Write,
        Ok(WriteCheck::Wait(other)) => Next::Stop(Stop::Wait(other)),
        Ok(WriteCheck::Changed) if w.note_changed(id) => Next::Skip,
        Ok(WriteCheck::Changed) => Next::Stop(Stop::Fail(Error::SerializationFailure)),
        Err(e) => Next::Stop(Stop::Fail(e)),
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

/// What pruning finds of one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Some snapshot may still read it, or redo still needs it (waiting).
    Kept,
    /// Replaced by a transaction that committed before the horizon (or a redirect).
    Replaced,
    /// Its inserter aborted.
    Aborted,
}

/// What pruning does to one heap-only chain, from its versions' fates (the root first):
/// None when the whole chain goes; else the first version that stays, which the root
/// leads to when it is not the root itself, and the versions after the root that go:
/// those before it (every one before the last `Replaced`, whatever its own fate: see
/// `prune_plan`) and a last one an update that rolled back left.
fn chain_plan(fates: &[Fate]) -> Option<(usize, Vec<usize>)> {
    let start = fates
        .iter()
        .rposition(|f| *f == Fate::Replaced)
        .map_or(0, |last| last + 1);
    let first = start + fates.get(start..)?.iter().position(|f| *f == Fate::Kept)?;
    let remove = (1..fates.len())
        .filter(|&i| i < first || fates[i] != Fate::Kept)
        .collect();
    Some((first, remove))
}

/// What vacuum does to one page: dead chain roots that become redirects (slot, target),
/// the slots removed, and how many dead versions must wait.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PrunePlan {
    pub redirects: Vec<(u16, u16)>,
    pub remove: Vec<u16>,
    pub waiting: u64,
}

impl PrunePlan {
    fn is_empty(&self) -> bool {
        self.redirects.is_empty() && self.remove.is_empty()
    }
}

/// Plans the vacuum of a page. A version is dead when its inserter aborted, or when a
/// transaction that committed before `horizon` replaced it. A replaced version is the
/// base of its successor's delta (`HeapUpdateNew`), which redo reads from this page: it
/// may go only once its updater ended before the redo point of a completed checkpoint,
/// so that the delta is never replayed again (docs/recovery.md rule 26); until then it
/// is counted as waiting. (Deltas of updates that rolled back may outlive their base:
/// redo then fills their bytes in as zeros, in a version nobody sees.) A successor on
/// this same page never needs the wait: once this prune is on disk, the page's LSN is
/// past the successor's record.
///
/// Heap-only chains (module documentation): index entries name a chain's root, so a
/// dead root whose chain still has a version that stays becomes a redirect to the first
/// such version instead of going (docs/recovery.md rule 32). Every version of a chain
/// before one replaced before `horizon` is dead too, whatever its own updater's xid:
/// along a chain each updater committed before the next one did (it waited for it, or
/// saw its commit), so every snapshot that sees the later replacement sees the earlier
/// ones. Xids need not grow along a chain — under READ COMMITTED an old transaction
/// replaces the newest version — so the test of each version alone can keep a version
/// (its updater's xid at or past the horizon) before one it finds dead; removing only
/// the later one would cut the chain, and the live versions after it would be lost to
/// readers that come through the root. PostgreSQL's `heap_prune_chain` goes past such
/// "recently dead" versions to the last dead one in the same way.
pub(crate) fn prune_plan(ctx: &Ctx, page: &[u8], horizon: u64) -> PrunePlan {
    let p = PageRef(page);
    let n = p.slot_count() as usize;
    let checkpointed = ctx.txns.checkpointed_xid();
    let page_no = p.page_no();
    let mut plan = PrunePlan::default();
    // Each slot's header and whether it may go.
    let mut state: Vec<Option<(TupleHeader, Fate)>> = Vec::with_capacity(n);
    for slot in 0..n as u16 {
        let Some(t) = p.tuple(slot).filter(|t| t.len() >= TUPLE_HEADER_BYTES) else {
            state.push(None);
            continue;
        };
        let h = TupleHeader::read(t);
        let fate = if h.redirect() {
            Fate::Replaced
        } else {
            match ctx.txns.status(h.xmin, ctx.clog) {
                XidStatus::Aborted => Fate::Aborted,
                XidStatus::InProgress => Fate::Kept,
                XidStatus::Committed => {
                    let replaced = h.xmax != 0
                        && h.xmax < horizon
                        && ctx.txns.status(h.xmax, ctx.clog) == XidStatus::Committed;
                    let elsewhere = h.next.is_some_and(|(np, _)| np != page_no);
                    if replaced && elsewhere && h.xmax >= checkpointed {
                        plan.waiting += 1;
                        Fate::Kept
                    } else if replaced {
                        Fate::Replaced
                    } else {
                        Fate::Kept
                    }
                }
            }
        };
        state.push(Some((h, fate)));
    }
    let fate = |s: u16| state[s as usize].map(|(_, f)| f);
    let dead = |s: u16| fate(s).is_some_and(|f| f != Fate::Kept);
    let mut chained = vec![false; n];
    for slot in 0..n as u16 {
        let Some((h, _)) = state[slot as usize] else {
            continue;
        };
        if h.heap_only() {
            continue;
        }
        let mut chain = vec![slot];
        chained[slot as usize] = true;
        let mut cur = h;
        while let Some((s, next)) = hot_successor(p, &cur) {
            if chained[s as usize] {
                break;
            }
            chained[s as usize] = true;
            chain.push(s);
            cur = next;
        }
        let fates: Vec<Fate> = chain
            .iter()
            .map(|&s| fate(s).unwrap_or(Fate::Kept))
            .collect();
        match chain_plan(&fates) {
            // The whole chain is dead (or goes on to another page, where the versions
            // have entries of their own).
            None => plan.remove.extend(&chain),
            Some((first, remove)) => {
                if first > 0 {
                    let target = chain[first];
                    if !(h.redirect() && h.next == Some((page_no, target))) {
                        plan.redirects.push((slot, target));
                    }
                }
                plan.remove.extend(remove.iter().map(|&i| chain[i]));
            }
        }
    }
    // Heap-only versions no root leads to (left by updates that rolled back).
    for slot in 0..n as u16 {
        if !chained[slot as usize] && dead(slot) {
            plan.remove.push(slot);
        }
    }
    plan.remove.sort_unstable();
    plan
}

/// Carries out and logs a prune plan on a write-latched page; returns how many
/// versions went (a root made a redirect counts; a redirect removed does not).
pub(crate) fn apply_prune(
    ctx: &Ctx,
    g: &mut [u8],
    page_no: u64,
    plan: PrunePlan,
    xid: u64,
    stats: &mut TxnStats,
) -> Result<u64> {
    if plan.is_empty() {
        return Ok(0);
    }
    // Versions that go: removed tuples and roots made redirects, not redirects already.
    let is_version = |slot: u16| {
        PageRef(g)
            .tuple(slot)
            .filter(|t| t.len() >= TUPLE_HEADER_BYTES)
            .is_some_and(|t| !TupleHeader::read(t).redirect())
    };
    let removed = plan
        .remove
        .iter()
        .chain(plan.redirects.iter().map(|(slot, _)| slot))
        .filter(|&&s| is_version(s))
        .count() as u64;
    if plan.redirects.is_empty() {
        remove_slots(ctx, g, page_no, plan.remove, xid, stats)?;
        return Ok(removed);
    }
    for &(slot, target) in &plan.redirects {
        wal_records::make_redirect(g, slot, target).map_err(|r| corrupt(ctx, page_no, r))?;
    }
    PageMut(g).remove_and_compact(&plan.remove);
    let mut payload = Vec::with_capacity(16 + 2 * plan.remove.len());
    HeapRecord::PruneHot {
        page: page_no,
        redirects: plan.redirects,
        removed: plan.remove,
    }
    .encode_payload(&mut payload);
    ctx.wal
        .append_page_change(HEAP_PRUNE_HOT, xid, &payload, g, Some(stats))?;
    Ok(removed)
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
    let created = if view.is_own(h.xmin) {
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
    if view.is_own(h.xmax) {
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
        versions_of_page(ctx, page, view, out)
    }

    fn withdraw(&self, ctx: &Ctx, w: &mut Writer, ids: &[RowId], _undo_mark: usize) -> Result<()> {
        withdraw(ctx, ids, w.view.xid, w.stats)
    }

    fn scan_page(&self, ctx: &Ctx, page: u64, view: &TxnView, out: &mut PageRows) -> Result<()> {
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
        updated: &mut Vec<Updated>,
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
            delete_rows(ctx, table, page, &deletes, w)?;
        }
        if !updates.is_empty() {
            update_rows(ctx, table, page, &updates, w, updated)?;
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
    ) -> Result<Option<Updated>> {
        match change {
            Change::Update(bytes) => update(ctx, table, id, &bytes, w),
            Change::Delete => delete(ctx, table, id, w).map(|()| None),
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
        let pruned = prune_page(
            ctx,
            table,
            page,
            last,
            |p| {
                let plan = prune_plan(ctx, p, horizon);
                waiting = plan.waiting;
                Some(plan).filter(|plan| !plan.is_empty())
            },
            |g, plan| apply_prune(ctx, g, page, plan, xid, stats),
        )?;
        Ok(Vacuumed {
            removed: pruned.removed,
            waiting,
            empty: pruned.empty,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{chain_plan, Fate};
    use Fate::{Aborted, Kept, Replaced};

    /// The chain a READ COMMITTED run left (found by
    /// `tests/read_committed.rs`'s counter): the root's updater has a newer xid than the
    /// horizon, the next version's an older one. Keeping the root and removing only the
    /// second cut the chain and lost the live version after it.
    #[test]
    fn versions_before_the_last_replaced_one_go_with_it() {
        assert_eq!(chain_plan(&[Kept, Replaced, Kept]), Some((2, vec![1])));
        assert_eq!(
            chain_plan(&[Replaced, Kept, Replaced, Kept, Kept]),
            Some((3, vec![1, 2]))
        );
    }

    #[test]
    fn chains_without_such_a_version_keep_from_the_first_kept_one() {
        assert_eq!(chain_plan(&[Kept, Kept]), Some((0, vec![])));
        assert_eq!(chain_plan(&[Replaced, Kept]), Some((1, vec![])));
        // A last version an update that rolled back left goes; the root stays.
        assert_eq!(chain_plan(&[Kept, Aborted]), Some((0, vec![1])));
        assert_eq!(chain_plan(&[Replaced, Kept, Aborted]), Some((1, vec![2])));
        // Nothing stays: the whole chain goes.
        assert_eq!(chain_plan(&[Replaced, Replaced]), None);
        assert_eq!(chain_plan(&[Kept, Replaced]), None);
        assert_eq!(chain_plan(&[Aborted]), None);
        assert_eq!(chain_plan(&[Replaced, Aborted]), None);
    }
}
