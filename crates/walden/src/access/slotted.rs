//! The slotted-page base both table kinds share: page choice, the insert loop, pruning,
//! and the records of page creation and pruning, which it owns. It knows tuples only as
//! bytes with a header of a size the table kind gives (`TupleFormat`).

use crate::access::{Ctx, TxnView};
use crate::access::{InsertCursor, LastInsert, Progress};
use crate::buffer::Fetch;
use crate::catalog::Table;
use crate::codec::{put_varint, Reader};
use crate::error::{Error, Result};
use crate::page::{PageKind, PageMut, PageRef, PAGE_HEADER_BYTES, SLOT_BYTES};
use crate::stats::TxnStats;
use crate::store::SpacePressure;
use crate::wal::payload::{finish, get_slot_runs, put_slot_runs, InsertBuilder, Payload};
use crate::wal::record::{CHANGES_PAGE, WILL_INIT};
use crate::wal::{LogRecord, RecordOwner, RecordType, RedoCtx};
use crate::RowId;

const XID_MASK: u64 = (1 << 48) - 1;
/// Page numbers are stored in 32 bits in tuple links (u32::MAX means "no link"), so a
/// table page's number stays below it.
const PAGE_LIMIT: u64 = u32::MAX as u64;

/// Reads a 48-bit little-endian number (tuple headers keep xids and undo pointers so).
pub(crate) fn get_u48(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a[..6].copy_from_slice(&b[at..at + 6]);
    u64::from_le_bytes(a)
}

/// Writes the low 48 bits of `v`, little-endian.
pub(crate) fn put_u48(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 6].copy_from_slice(&(v & XID_MASK).to_le_bytes()[..6]);
}

pub(crate) fn corrupt(ctx: &Ctx, page: u64, reason: String) -> Error {
    Error::CorruptPage {
        path: ctx.pool.store().path().to_path_buf(),
        page,
        location: page,
        reason,
    }
}

/// Pins a page of `table`; a page that is not the table's is `NoSuchRow`.
pub(crate) fn pin_table_page<'p>(
    ctx: &Ctx<'p>,
    table: &Table,
    id: RowId,
) -> Result<crate::buffer::PinnedPage<'p>> {
    if id.page >= ctx.pool.store().next_page_no() {
        return Err(Error::NoSuchRow(id));
    }
    let pinned = ctx.pool.fetch(id.page, Fetch::Read)?;
    let owner_ok = owned_by(PageRef(&pinned.read()), table);
    if owner_ok {
        Ok(pinned)
    } else {
        Err(Error::NoSuchRow(id))
    }
}

/// Whether a page is one of `table`'s pages of rows.
pub(crate) fn owned_by(p: PageRef, table: &Table) -> bool {
    p.kind_byte() == PageKind::Heap as u8 && p.owner() == table.id
}

/// Whether a page of rows holds no tuple at all (VACUUM may then give it back).
pub(crate) fn is_empty(ctx: &Ctx, page: u64) -> Result<bool> {
    let pinned = ctx.pool.fetch(page, Fetch::Read)?;
    let empty = holds_no_tuple(PageRef(&pinned.read()));
    Ok(empty)
}

fn holds_no_tuple(p: PageRef) -> bool {
    (0..p.slot_count()).all(|slot| p.tuple(slot).is_none())
}

/// What `prune_page` did: versions removed, and whether the page then holds no tuple.
pub(crate) struct Pruned {
    pub removed: u64,
    pub empty: bool,
}

/// Adds a fresh page to a table and logs it.
pub(crate) fn new_page(ctx: &Ctx, table: &Table, xid: u64, stats: &mut TxnStats) -> Result<u64> {
    // Room on disk first (a bulk insert makes many pages in one command).
    ctx.pool.ensure_room(true)?;
    ctx.wal.prepare_next()?;
    let page_no = ctx.pool.store().allocate_page_no();
    if page_no >= PAGE_LIMIT {
        return Err(Error::DatabaseFull { pages: PAGE_LIMIT });
    }
    let pinned = ctx.pool.fetch(page_no, Fetch::Overwrite)?;
    let mut g = pinned.write();
    PageMut(&mut g).init(PageKind::Heap, page_no, table.id);
    let mut payload = Vec::with_capacity(12);
    SlottedRecord::Init {
        page: page_no,
        table: table.id,
    }
    .encode_payload(&mut payload);
    ctx.wal
        .append_page_change(HEAP_INIT, xid, &payload, &mut g, Some(stats))?;
    table.add_page(page_no);
    Ok(page_no)
}

/// Chooses a page for a new row of `need` bytes (tuple plus slot): the last page if it
/// seems to fit, then a page vacuum freed space on, then a new page.
pub(crate) fn target_page(
    ctx: &Ctx,
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

/// Appends the tuple for a row to `out`: (out, xid, cid, row).
pub(crate) type BuildTuple = dyn Fn(&mut Vec<u8>, u64, u32, &[u8]);

/// How a table kind builds the tuple of a new row and logs inserts.
pub(crate) struct TupleFormat<'a> {
    /// Tuple bytes beyond the row's own (at least; rows may be padded).
    pub header_bytes: usize,
    /// Appends the tuple for a row to `out`: (out, xid, cid, row).
    pub build: &'a BuildTuple,
    /// The table kind's insert record (`HEAP_INSERT`, `UNDO_INSERT`).
    pub record: RecordType,
    /// The xid the rows carry and their records are logged with (`TxnView::xid` for a
    /// heap table, the transaction's own for an undo table).
    pub xid: u64,
}

/// Removes rows this transaction inserted in a command that failed. Nobody else can see
/// them (uncommitted) or knows their ids, so they go at once, logged as a prune.
pub(crate) fn withdraw(ctx: &Ctx, ids: &[RowId], xid: u64, stats: &mut TxnStats) -> Result<()> {
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
        remove_slots(ctx, &mut pinned.write(), page_no, slots, xid, stats)?;
        start = end;
    }
    Ok(())
}

/// Inserts rows from `cursor`, counting each and pushing its id to `cursor.ids` (when it
/// keeps them) once the row is on its page; every row counted is logged before this
/// returns, error or not. `logged` hears of
/// each record: (its LSN, the page, the slots). Returns `Progress::Paused` after a page
/// when the page store is under space pressure (the caller relieves it and calls again
/// with the same cursor), `Progress::Done` when the rows ran out.
pub(crate) fn insert_rows(
    ctx: &Ctx,
    table: &Table,
    view: &TxnView,
    stats: &mut TxnStats,
    cursor: &mut InsertCursor,
    format: &TupleFormat,
    logged: &mut dyn FnMut(u64, u64, &[u16]),
) -> Result<Progress> {
    let xid = format.xid;
    let max = ctx.pool.page_size() - PAGE_HEADER_BYTES - SLOT_BYTES - format.header_bytes;
    let InsertCursor {
        next_row,
        row,
        pending,
        ids,
        keep_ids,
        count,
        last_logged,
        ..
    } = cursor;
    let mut tuple = Vec::with_capacity(256);
    let mut payload = Vec::with_capacity(ctx.pool.page_size() + 64);
    let mut builder = InsertBuilder::default();
    let mut slots = Vec::new();
    // A row read by the call that paused is placed first.
    let mut have = std::mem::take(pending) || next_row(row)?;
    let mut failed: Option<Error> = None;
    while have {
        if row.len() > max {
            return Err(Error::RowTooLarge {
                size: row.len(),
                max,
            });
        }
        tuple.clear();
        (format.build)(&mut tuple, xid, view.cid, row);
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
            (format.build)(&mut tuple, xid, view.cid, row);
            let mut p = PageMut(&mut g);
            if !p.fits(tuple.len()) || n == u16::MAX {
                break;
            }
            let slot = p.next_slot();
            if !p.insert_at(slot, &tuple) {
                break;
            }
            builder.push(slot, row);
            if *keep_ids {
                ids.push(RowId {
                    page: page_no,
                    slot,
                });
            }
            *count += 1;
            slots.push(slot);
            n += 1;
            // An error from the next row must not leave this page's rows unlogged:
            // log them first (the transaction is then aborted by the engine).
            match next_row(row) {
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
        let a = ctx
            .wal
            .append_page_change(format.record, xid, &payload, &mut g, Some(stats))?;
        logged(a.lsn, page_no, &slots);
        if a.rtype == format.record {
            *last_logged = Some(LastInsert {
                lsn: a.lsn,
                page: page_no,
                slots: slots.clone(),
            });
        }
        let free = PageRef(&g).free_space();
        drop(g);
        if Some(page_no) != table.last_page() {
            table.set_free(page_no, free);
        }
        if let Some(e) = failed.take() {
            return Err(e);
        }
        if have && ctx.pool.store().space_pressure() != SpacePressure::None {
            *pending = true;
            return Ok(Progress::Paused);
        }
    }
    Ok(Progress::Done)
}

/// Removes `slots` from a write-latched page, compacting it, and logs one prune record.
pub(crate) fn remove_slots(
    ctx: &Ctx,
    g: &mut [u8],
    page_no: u64,
    slots: Vec<u16>,
    xid: u64,
    stats: &mut TxnStats,
) -> Result<()> {
    PageMut(g).remove_and_compact(&slots);
    let mut payload = Vec::with_capacity(10 + 2 * slots.len());
    SlottedRecord::Prune {
        page: page_no,
        slots,
    }
    .encode_payload(&mut payload);
    ctx.wal
        .append_page_change(HEAP_PRUNE, xid, &payload, g, Some(stats))?;
    Ok(())
}

/// Vacuums one page of a table: `plan` reads the page and says what to prune (None:
/// nothing, and the page is not written); `apply` carries the plan out on the
/// write-latched page, logs it and returns how many versions went (counted in the
/// global `versions_pruned`). Then the page's free-space hint is refreshed (unless it is
/// `last`, the table's last page when the pass began, which inserts fill anyway), and
/// whether it is left empty is read while it is pinned.
pub(crate) fn prune_page<P>(
    ctx: &Ctx,
    table: &Table,
    page_no: u64,
    last: Option<u64>,
    mut plan: impl FnMut(&[u8]) -> Option<P>,
    apply: impl FnOnce(&mut [u8], P) -> Result<u64>,
) -> Result<Pruned> {
    let mut removed = 0u64;
    let pinned = ctx.pool.fetch(page_no, Fetch::Read)?;
    let found = plan(&pinned.read()).is_some();
    if found {
        let mut g = pinned.write();
        // Again under the write latch: nothing can revive a dead version, but the page
        // may have changed between the latches.
        if let Some(p) = plan(&g) {
            removed = apply(&mut g, p)?;
            ctx.wal
                .stats()
                .versions_pruned
                .fetch_add(removed, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let g = pinned.read();
    if Some(page_no) != last {
        table.set_free(page_no, PageRef(&g).free_space());
    }
    Ok(Pruned {
        removed,
        empty: holds_no_tuple(PageRef(&g)),
    })
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

// ---------------------------------------------------------------------------------------
// WAL records: a table's new page, and rows removed from a page.

/// A fresh page joins a table: `page varint | table varint`.
pub const HEAP_INIT: RecordType = RecordType::new(1, "heap_init", CHANGES_PAGE | WILL_INIT);
/// Tuples removed from a page, which is then compacted: `page varint | slot runs`.
pub const HEAP_PRUNE: RecordType = RecordType::new(5, "heap_prune", CHANGES_PAGE);

/// A record of the slotted base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlottedRecord {
    Init { page: u64, table: u32 },
    Prune { page: u64, slots: Vec<u16> },
}

impl Payload for SlottedRecord {
    fn record_type(&self) -> RecordType {
        match self {
            SlottedRecord::Init { .. } => HEAP_INIT,
            SlottedRecord::Prune { .. } => HEAP_PRUNE,
        }
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            SlottedRecord::Init { page, table } => {
                put_varint(out, *page);
                put_varint(out, *table as u64);
            }
            SlottedRecord::Prune { page, slots } => {
                put_varint(out, *page);
                put_slot_runs(out, slots);
            }
        }
    }
}

impl SlottedRecord {
    pub fn decode(t: RecordType, payload: &[u8]) -> std::result::Result<SlottedRecord, String> {
        let mut r = Reader::new(payload, 0);
        let rec = if t == HEAP_INIT {
            SlottedRecord::Init {
                page: r.varint()?,
                table: r.varint32()?,
            }
        } else if t == HEAP_PRUNE {
            SlottedRecord::Prune {
                page: r.varint()?,
                slots: get_slot_runs(&mut r)?,
            }
        } else {
            return Err(format!("record code {} is not the slotted base's", t.code));
        };
        finish(&r, t)?;
        Ok(rec)
    }
}

/// The owner of the slotted base's records.
pub struct SlottedOwner;

impl RecordOwner for SlottedOwner {
    fn name(&self) -> &'static str {
        "slotted"
    }

    fn types(&self) -> &'static [RecordType] {
        &[HEAP_INIT, HEAP_PRUNE]
    }

    fn check(&self, rec: &LogRecord) -> std::result::Result<(), String> {
        SlottedRecord::decode(rec.rtype, &rec.payload).map(|_| ())
    }

    fn describe(&self, rec: &LogRecord) -> std::result::Result<String, String> {
        Ok(match SlottedRecord::decode(rec.rtype, &rec.payload)? {
            SlottedRecord::Init { page, table } => format!("page {page} table {table}"),
            SlottedRecord::Prune { page, slots } => format!("page {page} slots {}", slots.len()),
        })
    }

    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> Result<()> {
        match SlottedRecord::decode(rec.rtype, &rec.payload).map_err(|r| ctx.corrupt(rec, r))? {
            SlottedRecord::Init { page, table } => {
                ctx.redo_page(rec, Fetch::Overwrite, |g, page_no| {
                    PageMut(g).init(PageKind::Heap, page_no, table);
                    Ok(())
                })?;
                if let Some(t) = ctx.catalog.by_id.get(&table) {
                    t.add_page(page);
                }
                Ok(())
            }
            SlottedRecord::Prune { slots, .. } => ctx.redo_page(rec, Fetch::Read, |g, _| {
                PageMut(g).remove_and_compact(&slots);
                Ok(())
            }),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wal::payload::check_codec;

    /// A record of each type (also the registry's fuzz samples).
    pub(crate) fn samples() -> Vec<SlottedRecord> {
        vec![
            SlottedRecord::Init { page: 9, table: 2 },
            SlottedRecord::Prune {
                page: 1,
                slots: vec![1, 3, 4, 5, 65535],
            },
        ]
    }

    #[test]
    fn slotted_records_round_trip() {
        check_codec(&samples(), SlottedRecord::decode);
    }

    #[test]
    fn too_many_slots_are_an_error_not_an_allocation() {
        let mut p = Vec::new();
        put_varint(&mut p, 1);
        put_varint(&mut p, 1000);
        for _ in 0..1000 {
            crate::codec::put_varint_signed(&mut p, -65536);
            put_varint(&mut p, 65535);
        }
        assert!(SlottedRecord::decode(HEAP_PRUNE, &p).is_err());
    }
}
