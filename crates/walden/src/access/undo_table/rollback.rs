//! Taking undo-table changes back: a transaction's rollback, and crash recovery's
//! rollback of the transactions that did not end.

use std::collections::{HashMap, HashSet};

use super::record::*;
use super::wal_records::UNDO_TUPLE_HEADER_BYTES as HDR;
use super::wal_records::{ChangeOp, RevertOp, UndoTableRecord, UNDO_REVERT};
use super::*;
use crate::access::Ctx;
use crate::buffer::{BufferPool, Fetch};
use crate::error::{Error, Result};
use crate::page::{PageMut, PageRef};
use crate::stats::TxnStats;
use crate::txn::ends_transaction;
use crate::wal::payload::Payload;
use crate::wal::{LogRecord, Wal};

/// Applies a compensation record's ops to a latched page (rollback and its redo).
pub(crate) fn apply_revert(g: &mut [u8], ops: &[RevertOp]) -> std::result::Result<(), String> {
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

/// The op that puts back what the undo record `rec` saved, on the tuple `t` as it is now.
pub(crate) fn revert_from_undo(
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

pub(crate) fn log_revert(
    wal: &Wal,
    g: &mut [u8],
    page: u64,
    xid: u64,
    undone_lsn: u64,
    ops: Vec<RevertOp>,
    stats: Option<&mut TxnStats>,
) -> Result<()> {
    let mut payload = Vec::new();
    UndoTableRecord::Revert {
        page,
        undone_lsn,
        ops,
    }
    .encode_payload(&mut payload);
    wal.append_page_change(UNDO_REVERT, xid, &payload, g, stats)?;
    Ok(())
}

/// Takes back a transaction's changes to undo tables after its first `keep` entries,
/// newest first, logging a compensation record for each entry.
pub fn rollback_to(
    ctx: &Ctx,
    xid: u64,
    undo: &mut TxnUndo,
    keep: usize,
    stats: &mut TxnStats,
) -> Result<()> {
    while undo.len() > keep {
        let Some(e) = undo.last()? else { break };
        let pinned = ctx.pool.fetch(e.page, Fetch::Read)?;
        let mut g = pinned.write();
        let mut ops = Vec::with_capacity(e.ops.len());
        for op in e.ops.iter().rev() {
            // An insert op stands for a run of slots, taken back last first.
            let rows = match op.op() {
                Op::Insert { count, .. } => count,
                Op::Change { .. } => 1,
            };
            for i in (0..rows).rev() {
                let r = match op.op() {
                    Op::Insert { first, .. } => u16::try_from(u32::from(first) + u32::from(i))
                        .map(|slot| RevertOp::Remove { slot })
                        .map_err(|_| "an insert run past slot 65535".to_string()),
                    Op::Change { slot, ptr } => {
                        let t = PageRef(&g).tuple_ref(slot).unwrap_or(&[]);
                        read_undo(ctx.undo, ptr).and_then(|rec| revert_from_undo(t, slot, &rec))
                    }
                };
                let op = r.map_err(|r| corrupt(ctx, e.page, format!("rollback: {r}")))?;
                // Applied one by one: a later op of the entry sees the row as restored so
                // far.
                apply_revert(&mut g, std::slice::from_ref(&op))
                    .map_err(|r| corrupt(ctx, e.page, format!("rollback: {r}")))?;
                ops.push(op);
            }
        }
        log_revert(ctx.wal, &mut g, e.page, xid, e.lsn, ops, Some(stats))?;
        drop(g);
        undo.pop();
    }
    Ok(())
}

/// The undo information crash recovery collects from the WAL: for each transaction, its
/// undo-table records not yet compensated, oldest first.
#[derive(Default)]
pub struct CrashUndo {
    stacks: HashMap<u64, Vec<(u64, UndoTableRecord)>>,
}

impl CrashUndo {
    /// Notes a record read from the WAL: an undo-table change (itself or kept beside a
    /// page image), a compensation, or the end of a transaction. An error is a reason
    /// the record's payload is not valid.
    pub fn note(&mut self, rec: &LogRecord) -> std::result::Result<(), String> {
        let (lsn, xid) = (rec.lsn, rec.xid);
        if ends_transaction(rec.rtype) {
            self.stacks.remove(&xid);
            return Ok(());
        }
        match UndoTableRecord::of(rec)? {
            Some(r @ (UndoTableRecord::Insert { .. } | UndoTableRecord::Change { .. })) => {
                self.stacks.entry(xid).or_default().push((lsn, r));
            }
            Some(UndoTableRecord::Revert { undone_lsn, .. }) => {
                if let Some(s) = self.stacks.get_mut(&xid) {
                    while s.last().is_some_and(|(l, _)| *l >= undone_lsn) {
                        s.pop();
                    }
                }
            }
            None => {}
        }
        Ok(())
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
        let mut stacks: Vec<(u64, Vec<(u64, UndoTableRecord)>)> = self
            .stacks
            .into_iter()
            .filter(|(x, s)| !finished.contains(x) && !s.is_empty())
            .collect();
        stacks.sort_by_key(|(x, _)| *x);
        for (xid, stack) in stacks {
            for (lsn, rec) in stack.into_iter().rev() {
                let page = rec.page();
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
pub(crate) fn revert_record(
    g: &mut [u8],
    rec: &UndoTableRecord,
) -> std::result::Result<Vec<RevertOp>, String> {
    let mut out = Vec::new();
    match rec {
        UndoTableRecord::Insert { rows, .. } => {
            let ops: Vec<RevertOp> = rows
                .iter()
                .rev()
                .map(|(slot, _)| RevertOp::Remove { slot: *slot })
                .collect();
            apply_revert(g, &ops)?;
            out = ops;
        }
        UndoTableRecord::Change { ops, .. } => {
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
        UndoTableRecord::Revert { .. } => {
            return Err("a compensation record is not taken back".into())
        }
    }
    Ok(out)
}
