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
//! WAL (docs/format.md): one `UndoChange` record per page and command carries, for each
//! row, the old and the new bytes of the changed range of its data area: redo applies the
//! new bytes, crash recovery's rollback the old ones. The undo log itself is not logged:
//! it lives in memory, in segments appended serially, and is discarded as soon as no
//! snapshot and no running transaction needs it. A transaction's own rollback writes
//! compensation records (`UndoRevert`) that redo replays and that tell crash recovery
//! what is already undone.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::buffer::{BufferPool, Fetch};
use crate::catalog::Table;
use crate::clog::XidStatus;
use crate::error::{Error, Result};
use crate::heap::{self, get_u48, put_u48, HeapCtx, TupleFormat, TxnView};
use crate::page::{PageMut, PageRef, PAGE_HEADER_BYTES, SLOT_BYTES};
use crate::stats::{Stats, TxnStats};
use crate::wal::record::{ChangeOp, RevertOp, UNDO_TUPLE_HEADER_BYTES as HDR};
use crate::wal::{Record, RecordKind, Wal};
use crate::RowId;

/// The row is deleted (by `xid`).
pub const FLAG_DELETED: u8 = 1;
/// The row moved to another page; the first 6 data bytes are the link (page u32, slot u16).
pub const FLAG_MOVED: u8 = 2;
/// The data area is one byte longer than the row.
pub const FLAG_PAD1: u8 = 4;
/// The data area is longer than the row by more; its last two bytes hold the row length.
pub const FLAG_PADDED: u8 = 8;
const PAD_MASK: u8 = FLAG_PAD1 | FLAG_PADDED;
const KNOWN_FLAGS: u8 = FLAG_DELETED | FLAG_MOVED | PAD_MASK;
/// Smallest data area: room for a link.
const MIN_AREA: usize = 6;

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

    fn bytes(&self) -> [u8; HDR] {
        let mut h = [0u8; HDR];
        put_u48(&mut h, 0, self.xid);
        h[6..10].copy_from_slice(&self.cid.to_le_bytes());
        put_u48(&mut h, 10, self.ptr);
        h[16] = self.flags;
        h
    }

    fn with_flags(self, flags: u8) -> UndoHeader {
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
fn fill_area(area: &mut [u8], row: &[u8]) -> u8 {
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

fn link_bytes(page: u64, slot: u16) -> [u8; 6] {
    let mut l = [0u8; 6];
    l[..4].copy_from_slice(&(page as u32).to_le_bytes());
    l[4..].copy_from_slice(&slot.to_le_bytes());
    l
}

fn link_of(area: &[u8]) -> RowId {
    RowId {
        page: u32::from_le_bytes([area[0], area[1], area[2], area[3]]) as u64,
        slot: u16::from_le_bytes([area[4], area[5]]),
    }
}

// ---------------------------------------------------------------------------------------
// The undo log

/// Undo record kinds (in memory only).
const UNDO_PATCH: u8 = 1;
const UNDO_WHOLE: u8 = 2;
/// `prev header (17) | kind u8 | off u16 | len u16`, then `len` bytes.
const UNDO_REC_HEADER: usize = HDR + 5;
const SEGMENT_BYTES: usize = 1 << 20;

/// An undo record: the header the row had before the change and what its data area
/// held (the bytes at `off`, or the whole area).
#[derive(Debug, Clone)]
pub struct UndoRecord {
    pub prev: UndoHeader,
    pub whole: bool,
    pub off: usize,
    pub bytes: Vec<u8>,
}

fn encode_undo(out: &mut Vec<u8>, prev: &UndoHeader, whole: bool, off: usize, bytes: &[u8]) {
    out.clear();
    out.extend_from_slice(&prev.bytes());
    out.push(if whole { UNDO_WHOLE } else { UNDO_PATCH });
    out.extend_from_slice(&(off as u16).to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    out.extend_from_slice(bytes);
}

struct Segment {
    /// Undo pointer of the first byte.
    start: u64,
    bytes: Vec<u8>,
    /// Largest xid with a record here.
    max_xid: u64,
}

struct StoreState {
    segments: VecDeque<Segment>,
    /// Undo pointer of the next record (0 means "no undo").
    next: u64,
    live_bytes: u64,
    /// Transactions whose rollback could not finish (the database refused writes): their
    /// rows still hold their changes, so readers need their undo until a reopen.
    unresolved: BTreeSet<u64>,
}

/// The undo log of a database: per-transaction chains of undo records, in segments
/// written serially, shared by all undo tables.
pub struct UndoStore {
    state: RwLock<StoreState>,
    limit: AtomicU64,
    stats: std::sync::Arc<Stats>,
}

impl UndoStore {
    pub fn new(limit: u64, stats: std::sync::Arc<Stats>) -> UndoStore {
        UndoStore {
            state: RwLock::new(StoreState {
                segments: VecDeque::new(),
                next: 1,
                live_bytes: 0,
                unresolved: BTreeSet::new(),
            }),
            limit: AtomicU64::new(limit),
            stats,
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, StoreState> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, StoreState> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    pub fn set_limit(&self, bytes: u64) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    /// Bytes of undo held now (segments not yet discarded).
    pub fn live_bytes(&self) -> u64 {
        self.read().live_bytes
    }

    /// Appends a record for `xid`; fails, appending nothing, past the limit.
    fn append(&self, xid: u64, rec: &[u8], stats: &mut TxnStats) -> Result<u64> {
        let mut st = self.write();
        let limit = self.limit();
        let need = rec.len() as u64;
        let fits_last = st
            .segments
            .back()
            .is_some_and(|s| s.bytes.len() + rec.len() <= SEGMENT_BYTES);
        let grow = if fits_last { 0 } else { SEGMENT_BYTES as u64 };
        if st.live_bytes + grow > limit.max(SEGMENT_BYTES as u64) || need > limit {
            return Err(Error::UndoFull {
                limit,
                live: st.live_bytes,
            });
        }
        let ptr = st.next;
        if !fits_last {
            st.segments.push_back(Segment {
                start: ptr,
                bytes: Vec::with_capacity(SEGMENT_BYTES),
                max_xid: 0,
            });
            st.live_bytes += SEGMENT_BYTES as u64;
        }
        let Some(seg) = st.segments.back_mut() else {
            return Err(Error::UndoFull {
                limit,
                live: st.live_bytes,
            });
        };
        seg.bytes.extend_from_slice(rec);
        seg.max_xid = seg.max_xid.max(xid);
        st.next += need;
        drop(st);
        self.stats.undo_records.fetch_add(1, Ordering::Relaxed);
        self.stats.undo_bytes.fetch_add(need, Ordering::Relaxed);
        stats.undo_records += 1;
        stats.undo_bytes += need;
        Ok(ptr)
    }

    /// The record at `ptr`, or an error if it was discarded (which would be a bug: only
    /// records no snapshot needs are discarded).
    pub fn get(&self, ptr: u64) -> std::result::Result<UndoRecord, String> {
        let st = self.read();
        let i = st.segments.partition_point(|s| s.start <= ptr);
        let seg = i
            .checked_sub(1)
            .and_then(|i| st.segments.get(i))
            .ok_or_else(|| format!("undo record {ptr} was discarded"))?;
        let at = (ptr - seg.start) as usize;
        let b = &seg.bytes;
        if at + UNDO_REC_HEADER > b.len() {
            return Err(format!("undo record {ptr} was discarded"));
        }
        let h = &b[at..at + UNDO_REC_HEADER];
        let prev = UndoHeader::read(h);
        let whole = h[HDR] == UNDO_WHOLE;
        let off = u16::from_le_bytes([h[HDR + 1], h[HDR + 2]]) as usize;
        let len = u16::from_le_bytes([h[HDR + 3], h[HDR + 4]]) as usize;
        let data = b
            .get(at + UNDO_REC_HEADER..at + UNDO_REC_HEADER + len)
            .ok_or_else(|| format!("undo record {ptr} is cut short"))?;
        Ok(UndoRecord {
            prev,
            whole,
            off,
            bytes: data.to_vec(),
        })
    }

    /// Drops segments that only hold records of transactions that ended before every
    /// running snapshot began (`horizon`: the oldest xid a snapshot may see as running;
    /// asked only when there is undo to drop, since it takes the transaction lock).
    pub fn discard(&self, horizon: impl FnOnce() -> u64) {
        let horizon = {
            let st = self.read();
            let Some(front) = st.segments.front() else {
                return;
            };
            let h = horizon();
            if front.max_xid >= h {
                return;
            }
            h
        };
        let mut st = self.write();
        while let Some(front) = st.segments.front() {
            let pinned = st.unresolved.range(..=front.max_xid).next().is_some();
            if front.max_xid >= horizon || pinned {
                break;
            }
            st.segments.pop_front();
            st.live_bytes -= SEGMENT_BYTES as u64;
        }
    }

    /// Keeps `xid`'s undo until the database is reopened (its rollback could not finish).
    pub fn keep_unresolved(&self, xid: u64) {
        self.write().unresolved.insert(xid);
    }
}

/// What a transaction changed in undo tables, in order: one entry per WAL record.
#[derive(Debug, Default)]
pub struct TxnUndo {
    pub entries: Vec<UndoEntry>,
}

#[derive(Debug)]
pub struct UndoEntry {
    /// LSN of the record (what a compensation record names).
    pub lsn: u64,
    pub page: u64,
    pub ops: Vec<EntryOp>,
}

#[derive(Debug, Clone, Copy)]
pub enum EntryOp {
    /// A row changed in place; its undo record.
    Change { slot: u16, ptr: u64 },
    /// A row inserted.
    Insert { slot: u16 },
}

/// What the undo-table functions need.
pub struct UndoCtx<'a> {
    pub heap: HeapCtx<'a>,
    pub store: &'a UndoStore,
}

fn corrupt(ctx: &UndoCtx, page: u64, reason: String) -> Error {
    heap::corrupt(&ctx.heap, page, reason)
}

// ---------------------------------------------------------------------------------------
// Reading

/// The version of a row a transaction may see: its flags and data area.
struct Version<'a> {
    flags: u8,
    area: Cow<'a, [u8]>,
}

/// Follows the undo chain of the tuple `t` back to the version `view` sees; None when the
/// row did not exist for it.
fn visible<'a>(
    ctx: &UndoCtx,
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
            view.snapshot.sees_committed(h.xid, ctx.heap.clog)
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
        let rec = ctx.store.get(h.ptr)?;
        if rec.whole {
            area = Cow::Owned(rec.bytes);
        } else {
            let a = area.to_mut();
            let end = rec.off + rec.bytes.len();
            if end > a.len() {
                return Err(format!(
                    "undo record {} patches bytes {}..{end} of a {}-byte row",
                    h.ptr,
                    rec.off,
                    a.len()
                ));
            }
            a[rec.off..end].copy_from_slice(&rec.bytes);
        }
        h = rec.prev;
    }
    Err("undo chain does not end".into())
}

/// Visible rows of one page: (row id, row bytes).
pub fn scan_page(
    ctx: &UndoCtx,
    page_no: u64,
    view: &TxnView,
    out: &mut Vec<(RowId, Vec<u8>)>,
) -> Result<()> {
    let pinned = ctx.heap.pool.fetch(page_no, Fetch::Read)?;
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
                out.push((
                    RowId {
                        page: page_no,
                        slot,
                    },
                    row.to_vec(),
                ));
            }
        }
    }
    Ok(())
}

/// The version of the row at `id` visible to `view`, following a move.
pub fn fetch(
    ctx: &UndoCtx,
    table: &Table,
    id: RowId,
    view: &TxnView,
) -> Result<Option<(RowId, Vec<u8>)>> {
    let mut cur = id;
    for _ in 0..10_000 {
        let pinned = match heap::pin_table_page(&ctx.heap, table, cur) {
            Ok(p) => p,
            Err(Error::NoSuchRow(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let g = pinned.read();
        let Some(t) = PageRef(&g).tuple_ref(cur.slot) else {
            return Ok(None);
        };
        let bad = |r: String| corrupt(ctx, cur.page, format!("slot {}: {r}", cur.slot));
        let Some(v) = visible(ctx, view, t).map_err(bad)? else {
            return Ok(None);
        };
        if v.flags & FLAG_DELETED != 0 {
            return Ok(None);
        }
        if v.flags & FLAG_MOVED != 0 {
            if v.area.len() < MIN_AREA {
                return Err(bad("moved row without a link".into()));
            }
            cur = link_of(&v.area);
            continue;
        }
        let row = row_of(&v.area, v.flags).map_err(bad)?;
        return Ok(Some((cur, row.to_vec())));
    }
    Ok(None)
}

// ---------------------------------------------------------------------------------------
// Writing

/// Inserts rows (see `heap::insert_many`); each page's record becomes an undo entry. On
/// failure the rows stay inserted and logged: the caller rolls them back.
pub fn insert_many(
    ctx: &UndoCtx,
    table: &Table,
    view: &TxnView,
    stats: &mut TxnStats,
    undo: &mut TxnUndo,
    next_row: &mut dyn FnMut(&mut Vec<u8>) -> Result<bool>,
) -> Result<Vec<RowId>> {
    let mut ids = Vec::new();
    let format = TupleFormat {
        header_bytes: HDR,
        build: &build_tuple,
        kind: RecordKind::UndoInsert,
    };
    heap::insert_rows(
        &ctx.heap,
        table,
        view,
        stats,
        next_row,
        &mut ids,
        &format,
        &mut |lsn, page, slots| {
            undo.entries.push(UndoEntry {
                lsn,
                page,
                ops: slots.iter().map(|&slot| EntryOp::Insert { slot }).collect(),
            })
        },
    )?;
    Ok(ids)
}

/// A change a command makes to one row (of either table kind: `modify_with` gathers
/// them per page).
pub enum Change {
    Update(Vec<u8>),
    Delete,
}

enum WriteCheck {
    Free(UndoHeader),
    Wait(u64),
}

fn check_writable(ctx: &UndoCtx, view: &TxnView, t: &[u8], id: RowId) -> Result<WriteCheck> {
    if t.len() < HDR + MIN_AREA {
        return Err(corrupt(
            ctx,
            id.page,
            format!("slot {} shorter than a tuple", id.slot),
        ));
    }
    let h = UndoHeader::read(t);
    let me = view.snapshot.xid;
    if h.xid != 0 && h.xid != me {
        match ctx.heap.txns.status(h.xid, ctx.heap.clog) {
            XidStatus::InProgress => return Ok(WriteCheck::Wait(h.xid)),
            // Rolled back but not undone: only after the database refused writes.
            XidStatus::Aborted => {
                ctx.heap.wal.check_poison()?;
                return Err(Error::SerializationFailure);
            }
            XidStatus::Committed => {
                if !view.snapshot.sees_committed(h.xid, ctx.heap.clog) {
                    // Inserted after the snapshot: the row does not exist for us.
                    if h.ptr == 0 && h.flags & FLAG_DELETED == 0 {
                        return Err(Error::NoSuchRow(id));
                    }
                    return Err(Error::SerializationFailure);
                }
            }
        }
    }
    if h.flags & (FLAG_DELETED | FLAG_MOVED) != 0 {
        return Err(Error::NoSuchRow(id));
    }
    Ok(WriteCheck::Free(h))
}

/// Applies a forward change to a latched page: the same code for the change itself and
/// for its redo, so that replay rebuilds the same bytes (up to the undo pointer, which
/// redo leaves 0: after a crash no snapshot needs the old versions).
fn apply_change(
    g: &mut [u8],
    op: &ChangeOp,
    xid: u64,
    cid: u32,
    ptr: u64,
) -> std::result::Result<(), String> {
    let slot = op.slot();
    if let ChangeOp::Resize {
        new_flags,
        new_area,
        ..
    } = op
    {
        if PageRef(g).tuple(slot).is_none() {
            return Err(format!("no tuple at slot {slot}"));
        }
        let h = UndoHeader {
            xid,
            cid,
            ptr,
            flags: *new_flags,
        };
        let mut tuple = Vec::with_capacity(HDR + new_area.len());
        tuple.extend_from_slice(&h.bytes());
        tuple.extend_from_slice(new_area);
        if !PageMut(g).replace_at(slot, &tuple) {
            return Err(format!("cannot grow slot {slot} to {} bytes", tuple.len()));
        }
        return Ok(());
    }
    let t = PageMut(g)
        .into_tuple_mut(slot)
        .filter(|t| t.len() >= HDR + MIN_AREA)
        .ok_or_else(|| format!("no tuple at slot {slot}"))?;
    let old = UndoHeader::read(t);
    let flags = match op {
        ChangeOp::Update {
            flags, off, xor, ..
        } => {
            let (off, end) = (HDR + *off as usize, HDR + *off as usize + xor.len());
            if end > t.len() {
                return Err(format!("update of bytes beyond slot {slot}"));
            }
            t[off..end].iter_mut().zip(xor).for_each(|(b, x)| *b ^= x);
            flags.map_or(old.flags, |(_, n)| n)
        }
        ChangeOp::Move {
            old_flags,
            next_page,
            next_slot,
            ..
        } => {
            t[HDR..HDR + 6].copy_from_slice(&link_bytes(*next_page as u64, *next_slot));
            old_flags | FLAG_MOVED
        }
        ChangeOp::Delete { .. } => old.flags | FLAG_DELETED,
        ChangeOp::Resize { .. } => old.flags,
    };
    let h = UndoHeader {
        xid,
        cid,
        ptr,
        flags,
    };
    t[..HDR].copy_from_slice(&h.bytes());
    Ok(())
}

/// Applies a compensation record's ops to a latched page (rollback and its redo).
fn apply_revert(g: &mut [u8], ops: &[RevertOp]) -> std::result::Result<(), String> {
    let mut removed = Vec::new();
    for op in ops {
        match op {
            RevertOp::Patch {
                slot,
                header,
                off,
                bytes,
            } => {
                let t = PageMut(g)
                    .into_tuple_mut(*slot)
                    .filter(|t| t.len() >= HDR)
                    .ok_or_else(|| format!("no tuple at slot {slot}"))?;
                let (off, end) = (HDR + *off as usize, HDR + *off as usize + bytes.len());
                if end > t.len() {
                    return Err(format!("restore of bytes beyond slot {slot}"));
                }
                t[off..end].copy_from_slice(bytes);
                t[..HDR].copy_from_slice(header);
            }
            RevertOp::Rewrite { slot, header, area } => {
                let len = PageRef(g)
                    .tuple(*slot)
                    .map(|t| t.len())
                    .ok_or_else(|| format!("no tuple at slot {slot}"))?;
                if len == HDR + area.len() {
                    if let Some(t) = PageMut(g).into_tuple_mut(*slot) {
                        t[HDR..].copy_from_slice(area);
                        t[..HDR].copy_from_slice(header);
                    }
                } else {
                    // The row grew in place: it gets its old, smaller area back.
                    let mut tuple = Vec::with_capacity(HDR + area.len());
                    tuple.extend_from_slice(header);
                    tuple.extend_from_slice(area);
                    if !PageMut(g).replace_at(*slot, &tuple) {
                        return Err(format!(
                            "cannot restore {} bytes at slot {slot}",
                            tuple.len()
                        ));
                    }
                }
            }
            RevertOp::Remove { slot } => {
                if PageRef(g).tuple(*slot).is_none() {
                    return Err(format!("no tuple at slot {slot} to remove"));
                }
                removed.push(*slot);
            }
        }
    }
    if !removed.is_empty() {
        PageMut(g).remove_and_compact(&removed);
    }
    Ok(())
}

/// The change that turns the tuple `t` (header `h`) into one holding `new`, with its
/// undo record; None when the row does not fit its page (it must move).
fn plan_update(
    t: &[u8],
    h: &UndoHeader,
    new: &[u8],
    page_free: usize,
    slot: u16,
    undo_rec: &mut Vec<u8>,
) -> Option<ChangeOp> {
    let area = &t[HDR..];
    if new.len() <= area.len() {
        let mut new_area = vec![0u8; area.len()];
        let new_flags = (h.flags & !PAD_MASK) | fill_area(&mut new_area, new);
        let first = area.iter().zip(&new_area).position(|(a, b)| a != b);
        let (off, end) = match first {
            Some(f) => {
                let last = area
                    .iter()
                    .zip(&new_area)
                    .rposition(|(a, b)| a != b)
                    .unwrap_or(f);
                (f, last + 1)
            }
            None => (0, 0),
        };
        encode_undo(undo_rec, h, false, off, &area[off..end]);
        Some(ChangeOp::Update {
            slot,
            flags: (new_flags != h.flags).then_some((h.flags, new_flags)),
            off: off as u16,
            xor: area[off..end]
                .iter()
                .zip(&new_area[off..end])
                .map(|(a, b)| a ^ b)
                .collect(),
        })
    } else if page_free + t.len() >= HDR + new.len() {
        encode_undo(undo_rec, h, true, 0, area);
        Some(ChangeOp::Resize {
            slot,
            old_flags: h.flags,
            new_flags: h.flags & !PAD_MASK,
            old_area: area.to_vec(),
            new_area: new.to_vec(),
        })
    } else {
        None
    }
}

/// Logs the ops gathered for one page as one record and remembers it for rollback.
#[allow(clippy::too_many_arguments)]
fn log_changes(
    ctx: &UndoCtx,
    g: &mut [u8],
    page: u64,
    view: &TxnView,
    ops: &mut Vec<ChangeOp>,
    entry: &mut Vec<EntryOp>,
    undo: &mut TxnUndo,
    stats: &mut TxnStats,
) -> Result<()> {
    if ops.is_empty() {
        return Ok(());
    }
    let mut payload = Vec::with_capacity(64 + ops.len() * 12);
    Record::UndoChange {
        page,
        cid: view.cid,
        ops: std::mem::take(ops),
    }
    .encode_payload(&mut payload);
    let a = ctx.heap.wal.append_undoable_change(
        RecordKind::UndoChange,
        view.snapshot.xid,
        &payload,
        g,
        Some(stats),
    )?;
    undo.entries.push(UndoEntry {
        lsn: a.lsn,
        page,
        ops: std::mem::take(entry),
    });
    Ok(())
}

/// What interrupted a page's batch.
enum Pending {
    Wait(u64),
    Move(usize),
}

/// Changes rows of one page (`changes`: slot and change, each row visible to `view`),
/// logging one record for all the rows changed in place. Rows that must move, and
/// waits for other writers, are handled in between. Pushes the id of each updated row's
/// new place to `moved_to` (the same id unless it moved). Stops at the first error;
/// what was changed before it stays changed (and logged).
#[allow(clippy::too_many_arguments)]
pub fn change_rows(
    ctx: &UndoCtx,
    table: &Table,
    view: &TxnView,
    stats: &mut TxnStats,
    undo: &mut TxnUndo,
    page_no: u64,
    changes: &[(u16, Change)],
    moved_to: &mut Vec<RowId>,
) -> Result<()> {
    let xid = view.snapshot.xid;
    let max = max_row_bytes(ctx.heap.pool.page_size());
    for (_, c) in changes {
        if let Change::Update(new) = c {
            if new.len() > max {
                return Err(Error::RowTooLarge {
                    size: new.len(),
                    max,
                });
            }
        }
    }
    let flush_at = ctx.heap.pool.page_size();
    let mut i = 0;
    let mut rec = Vec::with_capacity(64);
    while i < changes.len() {
        let first = RowId {
            page: page_no,
            slot: changes[i].0,
        };
        let pinned = heap::pin_table_page(&ctx.heap, table, first)?;
        let mut g = pinned.write();
        let mut ops = Vec::new();
        let mut entry = Vec::new();
        let mut bytes = 0usize;
        let mut pending = None;
        let mut failed = None;
        while i < changes.len() {
            let (slot, change) = &changes[i];
            let id = RowId {
                page: page_no,
                slot: *slot,
            };
            let free = PageRef(&g).free_space();
            let Some(t) = PageRef(&g).tuple_ref(*slot) else {
                failed = Some(Error::NoSuchRow(id));
                break;
            };
            let h = match check_writable(ctx, view, t, id) {
                Ok(WriteCheck::Free(h)) => h,
                Ok(WriteCheck::Wait(other)) => {
                    pending = Some(Pending::Wait(other));
                    break;
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let op = match change {
                Change::Delete => {
                    encode_undo(&mut rec, &h, false, 0, &[]);
                    ChangeOp::Delete { slot: *slot }
                }
                Change::Update(new) => match plan_update(t, &h, new, free, *slot, &mut rec) {
                    Some(op) => op,
                    None => {
                        pending = Some(Pending::Move(i));
                        break;
                    }
                },
            };
            let ptr = match ctx.store.append(xid, &rec, stats) {
                Ok(p) => p,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            apply_change(&mut g, &op, xid, view.cid, ptr).map_err(|r| corrupt(ctx, page_no, r))?;
            if matches!(change, Change::Update(_)) {
                moved_to.push(id);
            }
            bytes += rec.len() + 12;
            ops.push(op);
            entry.push(EntryOp::Change { slot: *slot, ptr });
            i += 1;
            if bytes >= flush_at {
                break;
            }
        }
        log_changes(
            ctx, &mut g, page_no, view, &mut ops, &mut entry, undo, stats,
        )?;
        drop(g);
        drop(pinned);
        if let Some(e) = failed {
            return Err(e);
        }
        match pending {
            Some(Pending::Wait(other)) => ctx.heap.txns.wait_for(xid, other)?,
            Some(Pending::Move(at)) => {
                if let (slot, Change::Update(new)) = &changes[at] {
                    let id = RowId {
                        page: page_no,
                        slot: *slot,
                    };
                    moved_to.push(move_row(ctx, table, view, stats, undo, id, new)?);
                }
                i = at + 1;
            }
            None => {}
        }
        ctx.heap.hook.between_pages();
    }
    Ok(())
}

/// Moves a row that no longer fits its page: the new version goes to another page (as a
/// row inserted by this transaction) and the old place links to it.
fn move_row(
    ctx: &UndoCtx,
    table: &Table,
    view: &TxnView,
    stats: &mut TxnStats,
    undo: &mut TxnUndo,
    id: RowId,
    new: &[u8],
) -> Result<RowId> {
    let xid = view.snapshot.xid;
    let mut tuple = Vec::with_capacity(HDR + new.len());
    build_tuple(&mut tuple, xid, view.cid, new);
    let mut rec = Vec::with_capacity(64);
    loop {
        let need = tuple.len() + SLOT_BYTES;
        let target = heap::target_page(&ctx.heap, table, need, id.page, xid, stats)?;
        let home_pin = heap::pin_table_page(&ctx.heap, table, id)?;
        let new_pin = ctx.heap.pool.fetch(target, Fetch::Read)?;
        let (mut gh, mut gn) = if id.page < target {
            let a = home_pin.write();
            (a, new_pin.write())
        } else {
            let b = new_pin.write();
            (home_pin.write(), b)
        };
        let Some(t) = PageRef(&gh).tuple_ref(id.slot) else {
            return Err(Error::NoSuchRow(id));
        };
        let h = match check_writable(ctx, view, t, id)? {
            WriteCheck::Free(h) => h,
            WriteCheck::Wait(other) => {
                drop((gh, gn));
                drop((home_pin, new_pin));
                ctx.heap.txns.wait_for(xid, other)?;
                continue;
            }
        };
        let mut old6 = [0u8; 6];
        old6.copy_from_slice(&t[HDR..HDR + 6]);
        let slot = PageMut(&mut gn).next_slot();
        if !PageMut(&mut gn).insert_at(slot, &tuple) {
            table.set_free(target, 0);
            continue;
        }
        let mut payload = Vec::with_capacity(new.len() + 20);
        Record::UndoInsert {
            page: target,
            cid: view.cid,
            rows: vec![(slot, new.to_vec())],
        }
        .encode_payload(&mut payload);
        let a = ctx.heap.wal.append_undoable_change(
            RecordKind::UndoInsert,
            xid,
            &payload,
            &mut gn,
            Some(stats),
        )?;
        undo.entries.push(UndoEntry {
            lsn: a.lsn,
            page: target,
            ops: vec![EntryOp::Insert { slot }],
        });
        let to = RowId { page: target, slot };
        encode_undo(&mut rec, &h, false, 0, &old6);
        let ptr = ctx.store.append(xid, &rec, stats)?;
        let op = ChangeOp::Move {
            slot: id.slot,
            old_flags: h.flags,
            old: old6,
            next_page: target as u32,
            next_slot: slot,
        };
        apply_change(&mut gh, &op, xid, view.cid, ptr).map_err(|r| corrupt(ctx, id.page, r))?;
        let mut ops = vec![op];
        let mut entry = vec![EntryOp::Change { slot: id.slot, ptr }];
        log_changes(
            ctx, &mut gh, id.page, view, &mut ops, &mut entry, undo, stats,
        )?;
        return Ok(to);
    }
}

// ---------------------------------------------------------------------------------------
// Rollback

/// The op that puts back what the undo record `rec` saved, on the tuple `t` as it is now.
fn revert_from_undo(
    t: &[u8],
    slot: u16,
    rec: &UndoRecord,
) -> std::result::Result<RevertOp, String> {
    if t.len() < HDR {
        return Err(format!("no tuple at slot {slot}"));
    }
    if rec.whole {
        Ok(RevertOp::Rewrite {
            slot,
            header: rec.prev.bytes(),
            area: rec.bytes.clone(),
        })
    } else {
        Ok(RevertOp::Patch {
            slot,
            header: rec.prev.bytes(),
            off: rec.off as u16,
            bytes: rec.bytes.clone(),
        })
    }
}

fn log_revert(
    wal: &Wal,
    g: &mut [u8],
    page: u64,
    xid: u64,
    undone_lsn: u64,
    ops: Vec<RevertOp>,
    stats: Option<&mut TxnStats>,
) -> Result<()> {
    let mut payload = Vec::new();
    Record::UndoRevert {
        page,
        undone_lsn,
        ops,
    }
    .encode_payload(&mut payload);
    wal.append_undoable_change(RecordKind::UndoRevert, xid, &payload, g, stats)?;
    Ok(())
}

/// Takes back a transaction's changes to undo tables after its first `keep` entries,
/// newest first, logging a compensation record for each entry.
pub fn rollback_to(
    ctx: &UndoCtx,
    xid: u64,
    undo: &mut TxnUndo,
    keep: usize,
    stats: &mut TxnStats,
) -> Result<()> {
    while undo.entries.len() > keep {
        let Some(e) = undo.entries.last() else { break };
        let pinned = ctx.heap.pool.fetch(e.page, Fetch::Read)?;
        let mut g = pinned.write();
        let mut ops = Vec::with_capacity(e.ops.len());
        for op in e.ops.iter().rev() {
            let r = match *op {
                EntryOp::Insert { slot } => Ok(RevertOp::Remove { slot }),
                EntryOp::Change { slot, ptr } => {
                    let t = PageRef(&g).tuple_ref(slot).unwrap_or(&[]);
                    ctx.store
                        .get(ptr)
                        .and_then(|rec| revert_from_undo(t, slot, &rec))
                }
            };
            let op = r.map_err(|r| corrupt(ctx, e.page, format!("rollback: {r}")))?;
            // Applied one by one: a later op of the entry sees the row as restored so far.
            apply_revert(&mut g, std::slice::from_ref(&op))
                .map_err(|r| corrupt(ctx, e.page, format!("rollback: {r}")))?;
            ops.push(op);
        }
        log_revert(ctx.heap.wal, &mut g, e.page, xid, e.lsn, ops, Some(stats))?;
        drop(g);
        undo.entries.pop();
    }
    Ok(())
}

/// The undo information crash recovery collects from the WAL: for each transaction, its
/// undo-table records not yet compensated, oldest first.
#[derive(Default)]
pub struct CrashUndo {
    stacks: HashMap<u64, Vec<(u64, Record)>>,
}

impl CrashUndo {
    /// Notes a record read from the WAL (at `lsn`, of transaction `xid`).
    pub fn note(&mut self, lsn: u64, xid: u64, rec: &Record) {
        match rec {
            Record::UndoInsert { .. } | Record::UndoChange { .. } => {
                self.stacks.entry(xid).or_default().push((lsn, rec.clone()));
            }
            Record::UndoRevert { undone_lsn, .. } => {
                if let Some(s) = self.stacks.get_mut(&xid) {
                    while s.last().is_some_and(|(l, _)| *l >= *undone_lsn) {
                        s.pop();
                    }
                }
            }
            Record::UndoOnly(inner) => self.note(lsn, xid, inner),
            Record::Commit | Record::Abort => {
                self.stacks.remove(&xid);
            }
            _ => {}
        }
    }

    /// Transactions with changes still to take back.
    pub fn pending(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .stacks
            .iter()
            .filter(|(_, s)| !s.is_empty())
            .map(|(x, _)| *x)
            .collect();
        v.sort_unstable();
        v
    }

    /// Rolls back the transactions that were running at the crash (not in `finished`),
    /// logging compensation records. Rows get a header visible to everyone: after a
    /// crash no snapshot needs older versions.
    pub fn roll_back(self, pool: &BufferPool, wal: &Wal, finished: &HashSet<u64>) -> Result<()> {
        let mut stacks: Vec<(u64, Vec<(u64, Record)>)> = self
            .stacks
            .into_iter()
            .filter(|(x, s)| !finished.contains(x) && !s.is_empty())
            .collect();
        stacks.sort_by_key(|(x, _)| *x);
        for (xid, stack) in stacks {
            for (lsn, rec) in stack.into_iter().rev() {
                let Some(page) = rec.page() else { continue };
                let bad = |reason: String| Error::CorruptPage {
                    path: pool.store().path().to_path_buf(),
                    page,
                    location: page,
                    reason: format!("rolling back the record at LSN {lsn}: {reason}"),
                };
                let pinned = pool.fetch(page, Fetch::Read)?;
                let mut g = pinned.write();
                let ops = revert_record(&mut g, &rec).map_err(bad)?;
                log_revert(wal, &mut g, page, xid, lsn, ops, None)?;
            }
        }
        Ok(())
    }
}

/// Takes back a forward record on its latched page, op by op, newest first; returns the
/// ops applied (the compensation record).
fn revert_record(g: &mut [u8], rec: &Record) -> std::result::Result<Vec<RevertOp>, String> {
    let mut out = Vec::new();
    match rec {
        Record::UndoInsert { rows, .. } => {
            let ops: Vec<RevertOp> = rows
                .iter()
                .rev()
                .map(|(slot, _)| RevertOp::Remove { slot: *slot })
                .collect();
            apply_revert(g, &ops)?;
            out = ops;
        }
        Record::UndoChange { ops, .. } => {
            for op in ops.iter().rev() {
                let slot = op.slot();
                let t = PageRef(g)
                    .tuple_ref(slot)
                    .filter(|t| t.len() >= HDR)
                    .ok_or_else(|| format!("no tuple at slot {slot}"))?;
                let cur = UndoHeader::read(t).flags;
                let frozen = |flags: u8| UndoHeader::FROZEN.with_flags(flags).bytes();
                let r = match op {
                    ChangeOp::Update {
                        flags, off, xor, ..
                    } => {
                        // The page holds what this record wrote (later changes of the
                        // transaction are already taken back): XOR gives the old bytes.
                        let at = HDR + *off as usize;
                        let now = t
                            .get(at..at + xor.len())
                            .ok_or_else(|| format!("undo of bytes beyond slot {slot}"))?;
                        RevertOp::Patch {
                            slot,
                            header: frozen(
                                flags.map_or(cur & !(FLAG_DELETED | FLAG_MOVED), |f| f.0),
                            ),
                            off: *off,
                            bytes: now.iter().zip(xor).map(|(a, b)| a ^ b).collect(),
                        }
                    }
                    ChangeOp::Resize {
                        old_flags,
                        old_area,
                        ..
                    } => RevertOp::Rewrite {
                        slot,
                        header: frozen(*old_flags),
                        area: old_area.clone(),
                    },
                    ChangeOp::Move { old_flags, old, .. } => RevertOp::Patch {
                        slot,
                        header: frozen(*old_flags),
                        off: 0,
                        bytes: old.to_vec(),
                    },
                    ChangeOp::Delete { .. } => RevertOp::Patch {
                        slot,
                        header: frozen(cur & !FLAG_DELETED),
                        off: 0,
                        bytes: Vec::new(),
                    },
                };
                apply_revert(g, std::slice::from_ref(&r))?;
                out.push(r);
            }
        }
        _ => return Err(format!("{:?} is not an undo-table change", rec.kind())),
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Redo and vacuum

/// Applies an undo-table record during recovery unless the page already holds it.
pub fn redo(pool: &BufferPool, rec: &Record, xid: u64, end_lsn: u64) -> Result<()> {
    heap::redo_with(pool, rec, Fetch::Read, end_lsn, |g, _| match rec {
        Record::UndoInsert { cid, rows, .. } => {
            heap::insert_at_slots(g, rows, xid, *cid, &build_tuple)
        }
        Record::UndoChange { cid, ops, .. } => ops
            .iter()
            .try_for_each(|op| apply_change(g, op, xid, *cid, 0)),
        Record::UndoRevert { ops, .. } => apply_revert(g, ops),
        _ => Ok(()),
    })
}

/// Slots of a page holding rows deleted or moved away by transactions every snapshot
/// sees: their space can be reused.
pub fn dead_slots(ctx: &HeapCtx, page: &[u8], horizon: u64) -> Vec<u16> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_round_trips() {
        for cap in 6..12usize {
            for len in 0..=cap {
                let row: Vec<u8> = (0..len as u8).map(|b| b + 1).collect();
                let mut area = vec![0xAA; cap];
                let flags = fill_area(&mut area, &row);
                assert_eq!(
                    row_of(&area, flags).unwrap(),
                    &row[..],
                    "cap {cap} len {len}"
                );
            }
        }
        let mut t = Vec::new();
        build_tuple(&mut t, 7, 3, b"ab");
        let h = UndoHeader::read(&t);
        assert_eq!((h.xid, h.cid, h.ptr), (7, 3, 0));
        assert_eq!(t.len(), HDR + MIN_AREA);
        assert_eq!(row_of(&t[HDR..], h.flags).unwrap(), b"ab");
    }

    /// Every undo-table change, applied as redo applies it and taken back as crash
    /// rollback takes it back (through an encode/decode of its record): the page's rows
    /// are the old ones again.
    #[test]
    fn change_then_revert_is_identity() {
        use crate::page::PageKind;
        let mut g = vec![0u8; 4096];
        PageMut(&mut g).init(PageKind::Heap, 3, 1);
        let rows: [&[u8]; 4] = [
            b"alpha-row-0001",
            b"beta-row-00002",
            b"gamma",
            b"delta-row-0004",
        ];
        for (i, r) in rows.iter().enumerate() {
            let mut t = Vec::new();
            build_tuple(&mut t, 0, 0, r);
            assert!(PageMut(&mut g).insert_at(i as u16, &t));
        }
        let before: Vec<Vec<u8>> = (0..4)
            .map(|s| PageRef(&g).tuple(s).unwrap()[HDR..].to_vec())
            .collect();
        let t0 = PageRef(&g).tuple(0).unwrap().to_vec();
        let mut undo_rec = Vec::new();
        let upd = plan_update(
            &t0,
            &UndoHeader::read(&t0),
            b"alpha-row-9991",
            4000,
            0,
            &mut undo_rec,
        )
        .unwrap();
        assert!(
            matches!(&upd, ChangeOp::Update { xor, .. } if xor.len() == 3),
            "{upd:?}"
        );
        let t2 = PageRef(&g).tuple(2).unwrap().to_vec();
        let grow = plan_update(
            &t2,
            &UndoHeader::read(&t2),
            b"gamma-grown-longer",
            4000,
            2,
            &mut undo_rec,
        )
        .unwrap();
        assert!(matches!(grow, ChangeOp::Resize { .. }));
        let ops = vec![
            upd,
            ChangeOp::Delete { slot: 1 },
            grow,
            ChangeOp::Move {
                slot: 3,
                old_flags: UndoHeader::read(PageRef(&g).tuple(3).unwrap()).flags,
                old: before[3][..6].try_into().unwrap(),
                next_page: 9,
                next_slot: 4,
            },
        ];
        let rec = Record::UndoChange {
            page: 3,
            cid: 1,
            ops,
        };
        let mut bytes = Vec::new();
        crate::wal::record::encode_record(&mut bytes, &rec, 5, 0);
        let rec = crate::wal::record::decode_record(&bytes, 0).unwrap().record;
        let Record::UndoChange { ops, cid, .. } = &rec else {
            panic!()
        };
        for op in ops {
            apply_change(&mut g, op, 5, *cid, 0).unwrap();
        }
        assert_ne!(PageRef(&g).tuple(0).unwrap()[HDR..], before[0][..]);
        revert_record(&mut g, &rec).unwrap();
        for (s, b) in before.iter().enumerate() {
            let t = PageRef(&g).tuple_ref(s as u16).unwrap();
            assert_eq!(&t[HDR..], &b[..], "slot {s}");
            let h = UndoHeader::read(t);
            assert_eq!(h.flags & (FLAG_DELETED | FLAG_MOVED), 0, "slot {s}");
            assert_eq!(row_of(&t[HDR..], h.flags).unwrap(), rows[s]);
        }
    }

    #[test]
    fn header_round_trips() {
        let h = UndoHeader {
            xid: (1 << 47) + 5,
            cid: 9,
            ptr: 123_456_789,
            flags: FLAG_DELETED | FLAG_PADDED,
        };
        assert_eq!(UndoHeader::read(&h.bytes()), h);
    }

    #[test]
    fn store_appends_reads_discards_and_bounds() {
        let stats = std::sync::Arc::new(Stats::default());
        let store = UndoStore::new(4 << 20, stats);
        let mut ts = TxnStats::default();
        let mut rec = Vec::new();
        let prev = UndoHeader {
            xid: 3,
            cid: 1,
            ptr: 0,
            flags: 0,
        };
        encode_undo(&mut rec, &prev, false, 2, &[9, 8]);
        let p1 = store.append(10, &rec, &mut ts).unwrap();
        let r = store.get(p1).unwrap();
        assert_eq!(
            (r.prev, r.off, r.bytes.clone(), r.whole),
            (prev, 2, vec![9, 8], false)
        );
        // Fill past the limit: the append that would exceed it fails.
        let big = vec![0u8; 60_000];
        let mut n = 0;
        let err = loop {
            encode_undo(&mut rec, &prev, true, 0, &big[..60_000]);
            match store.append(11, &rec, &mut ts) {
                Ok(_) => n += 1,
                Err(e) => break e,
            }
        };
        assert!(matches!(err, Error::UndoFull { .. }), "{err}");
        assert!(n > 0 && store.live_bytes() <= 4 << 20);
        // Horizon below the writers: nothing goes. Above: everything.
        store.discard(|| 10);
        assert!(store.get(p1).is_ok());
        store.keep_unresolved(11);
        store.discard(|| 100);
        assert!(
            store.get(p1).is_ok(),
            "unresolved transaction pins its undo"
        );
        let store = UndoStore::new(4 << 20, std::sync::Arc::new(Stats::default()));
        let p = store.append(10, &rec, &mut ts).unwrap();
        store.discard(|| 11);
        assert!(store.get(p).is_err());
        assert_eq!(store.live_bytes(), 0);
    }
}
