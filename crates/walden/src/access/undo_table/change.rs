//! In-place changes to undo-table rows: updates, deletes, moves.

use super::record::*;
use super::wal_records::UNDO_TUPLE_HEADER_BYTES as HDR;
use super::wal_records::{ChangeOp, UndoTableRecord, UNDO_INSERT};
use super::*;
use crate::access::slotted::{self};
use crate::access::{Change, Ctx, TxnView, Updated, Writer};
use crate::buffer::Fetch;
use crate::catalog::Table;
use crate::clog::XidStatus;
use crate::error::{Error, Result};
use crate::page::{PageMut, PageRef, SLOT_BYTES};
use crate::stats::TxnStats;
use crate::wal::payload::Payload;
use crate::RowId;

pub(crate) enum WriteCheck {
    Free(UndoHeader),
    Wait(u64),
    /// A transaction that committed after the view's snapshot changed, moved or
    /// deleted the row.
    Changed,
}

pub(crate) fn check_writable(ctx: &Ctx, view: &TxnView, t: &[u8], id: RowId) -> Result<WriteCheck> {
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
        match ctx.txns.status(h.xid, ctx.clog) {
            XidStatus::InProgress => return Ok(WriteCheck::Wait(h.xid)),
            // Rolled back but not undone: only after the database refused writes.
            XidStatus::Aborted => {
                ctx.wal.check_poison()?;
                return Err(Error::SerializationFailure);
            }
            XidStatus::Committed => {
                if !view.snapshot.sees_committed(h.xid, ctx.clog) {
                    // Inserted after the snapshot: the row does not exist for us.
                    if h.ptr == 0 && h.flags & FLAG_DELETED == 0 {
                        return Err(Error::NoSuchRow(id));
                    }
                    return Ok(WriteCheck::Changed);
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
pub(crate) fn apply_change(
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

/// The change that turns the tuple `t` (header `h`) into one holding `new`, with its
/// undo record; None when the row does not fit its page (it must move).
pub(crate) fn plan_update(
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
pub(crate) fn log_changes(
    ctx: &Ctx,
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
    let rec = UndoTableRecord::Change {
        page,
        cid: view.cid,
        ops: std::mem::take(ops),
    };
    rec.encode_payload(&mut payload);
    // `undo_change`, or `undo_update` for one plain update.
    let a = ctx.wal.append_page_change(
        rec.record_type(),
        view.snapshot.xid,
        &payload,
        g,
        Some(stats),
    )?;
    undo.push(UndoEntry {
        lsn: a.lsn,
        page,
        ops: std::mem::take(entry),
    });
    Ok(())
}

/// The error for an undo pointer a transaction's entries cannot hold (past 2^47: 128
/// TiB of undo appended since the database was opened).
fn pointer_too_far(ptr: u64) -> Error {
    Error::UndoFull {
        limit: super::MAX_ENTRY_PTR,
        live: ptr,
    }
}

/// What interrupted a page's batch.
pub(crate) enum Pending {
    Wait(u64),
    Move(usize),
}

/// Changes rows of one page (`changes`: slot and change, each row visible to the
/// writer's view), logging one record for all the rows changed in place. Rows that must
/// move, and waits for other writers, are handled in between; a row a transaction that
/// committed after the view's snapshot changed is left for `Writer::changed`. Pushes an
/// `Updated` for each updated row: its new place (the same id unless it moved), and
/// whether it needs new index entries (it moved, or `same_keys` does not hold). Stops at
/// the first error; what was changed before it stays changed (and logged).
pub fn change_rows(
    ctx: &Ctx,
    table: &Table,
    w: &mut Writer,
    page_no: u64,
    changes: &[(u16, Change)],
    updated: &mut Vec<Updated>,
) -> Result<()> {
    let (view, same_keys) = (w.view, w.same_keys);
    let xid = view.snapshot.xid;
    let max = max_row_bytes(ctx.pool.page_size());
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
    let flush_at = ctx.pool.page_size();
    let mut i = 0;
    let mut rec = Vec::with_capacity(64);
    while i < changes.len() {
        let first = RowId {
            page: page_no,
            slot: changes[i].0,
        };
        let pinned = slotted::pin_table_page(ctx, table, first)?;
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
                Ok(WriteCheck::Changed) if w.note_changed(id) => {
                    i += 1;
                    continue;
                }
                Ok(WriteCheck::Changed) => {
                    failed = Some(Error::SerializationFailure);
                    break;
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let reindex = match change {
                Change::Update(new) => !same_keys
                    .is_some_and(|same| row_of(&t[HDR..], h.flags).is_ok_and(|old| same(old, new))),
                Change::Delete => false,
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
            let ptr = match ctx.undo.append(xid, &rec, w.stats) {
                Ok(p) => p,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let Some(entry_op) = EntryOp::change(*slot, ptr) else {
                failed = Some(pointer_too_far(ptr));
                break;
            };
            apply_change(&mut g, &op, xid, view.cid, ptr).map_err(|r| corrupt(ctx, page_no, r))?;
            if matches!(change, Change::Update(_)) {
                updated.push(Updated {
                    old: id,
                    new: id,
                    reindex,
                });
            }
            bytes += rec.len() + 12;
            ops.push(op);
            entry.push(entry_op);
            i += 1;
            if bytes >= flush_at {
                break;
            }
        }
        log_changes(
            ctx, &mut g, page_no, view, &mut ops, &mut entry, w.undo, w.stats,
        )?;
        drop(g);
        drop(pinned);
        if let Some(e) = failed {
            return Err(e);
        }
        match pending {
            Some(Pending::Wait(other)) => ctx.txns.wait_for(xid, other)?,
            Some(Pending::Move(at)) => {
                if let (slot, Change::Update(new)) = &changes[at] {
                    let id = RowId {
                        page: page_no,
                        slot: *slot,
                    };
                    if let Some(to) = move_row(ctx, table, w, id, new)? {
                        updated.push(Updated {
                            old: id,
                            new: to,
                            reindex: true,
                        });
                    }
                }
                i = at + 1;
            }
            None => {}
        }
    }
    Ok(())
}

/// Moves a row that no longer fits its page: the new version goes to another page (as a
/// row inserted by this transaction) and the old place links to it. Returns the new
/// place, or None when the row was left for `Writer::changed`.
pub(crate) fn move_row(
    ctx: &Ctx,
    table: &Table,
    w: &mut Writer,
    id: RowId,
    new: &[u8],
) -> Result<Option<RowId>> {
    let view = w.view;
    let (stats, undo) = (&mut *w.stats, &mut *w.undo);
    let xid = view.snapshot.xid;
    let mut tuple = Vec::with_capacity(HDR + new.len());
    build_tuple(&mut tuple, xid, view.cid, new);
    let mut rec = Vec::with_capacity(64);
    loop {
        let need = tuple.len() + SLOT_BYTES;
        let target = slotted::target_page(ctx, table, need, id.page, xid, stats)?;
        let home_pin = slotted::pin_table_page(ctx, table, id)?;
        let new_pin = ctx.pool.fetch(target, Fetch::Read)?;
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
                ctx.txns.wait_for(xid, other)?;
                continue;
            }
            WriteCheck::Changed => {
                drop((gh, gn));
                drop((home_pin, new_pin));
                return match w.note_changed(id) {
                    true => Ok(None),
                    false => Err(Error::SerializationFailure),
                };
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
        UndoTableRecord::Insert {
            page: target,
            cid: view.cid,
            rows: vec![(slot, new.to_vec())],
        }
        .encode_payload(&mut payload);
        let a = ctx
            .wal
            .append_page_change(UNDO_INSERT, xid, &payload, &mut gn, Some(stats))?;
        undo.push(UndoEntry {
            lsn: a.lsn,
            page: target,
            ops: EntryOp::inserts(&[slot]),
        });
        let to = RowId { page: target, slot };
        encode_undo(&mut rec, &h, false, 0, &old6);
        let ptr = ctx.undo.append(xid, &rec, stats)?;
        let entry_op = EntryOp::change(id.slot, ptr).ok_or_else(|| pointer_too_far(ptr))?;
        let op = ChangeOp::Move {
            slot: id.slot,
            old_flags: h.flags,
            old: old6,
            next_page: target as u32,
            next_slot: slot,
        };
        apply_change(&mut gh, &op, xid, view.cid, ptr).map_err(|r| corrupt(ctx, id.page, r))?;
        let mut ops = vec![op];
        let mut entry = vec![entry_op];
        log_changes(
            ctx, &mut gh, id.page, view, &mut ops, &mut entry, undo, stats,
        )?;
        return Ok(Some(to));
    }
}

// ---------------------------------------------------------------------------------------
// Rollback
