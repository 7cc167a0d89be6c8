//! Heap updates: new versions written as deltas against the old ones.

use super::wal_records::{DeltaRow, HeapRecord, UpdateLink, HEAP_UPDATE_OLD};
use super::*;
use crate::access::slotted::{pin_table_page, target_page};
use crate::access::{Ctx, SameKeys, TxnView, Updated, Writer};
use crate::buffer::Fetch;
use crate::catalog::Table;
use crate::error::{Error, Result};
use crate::page::{PageMut, PageRef, SLOT_BYTES};
use crate::stats::TxnStats;
use crate::wal::payload::Payload;
use crate::RowId;

/// The delta that turns `old` into `new`: common prefix and suffix lengths and the new
/// bytes between them.
pub(crate) fn row_delta(old: &[u8], new: &[u8]) -> (u16, u16, std::ops::Range<usize>) {
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
pub(crate) fn delta_middle(old: &[u8], new: &[u8]) -> (u16, u16, Vec<u8>) {
    let (prefix, suffix, range) = row_delta(old, new);
    let old_mid = &old[prefix as usize..old.len() - suffix as usize];
    let mut middle = new[range].to_vec();
    middle.iter_mut().zip(old_mid).for_each(|(b, o)| *b ^= o);
    (prefix, suffix, middle)
}

/// The new version of a row, put on a latched page: returns its slot, or None when the
/// page has no room. The tuple is built in `tuple`.
pub(crate) fn put_version(g: &mut [u8], tuple: &[u8]) -> Option<u16> {
    let mut p = PageMut(g);
    if !p.fits(tuple.len()) {
        return None;
    }
    let slot = p.next_slot();
    p.insert_at(slot, tuple).then_some(slot)
}

/// One page's worth of updates: the new versions (as deltas) and the links of the old.
#[derive(Default)]
pub(crate) struct UpdateBatch {
    news: Vec<DeltaRow>,
    /// New versions that are heap-only (logged as `HEAP_UPDATE_HOT`).
    hot_news: Vec<DeltaRow>,
    links: Vec<UpdateLink>,
}

impl UpdateBatch {
    /// Puts the new version of the row at `old` (a tuple of `go`, already checked
    /// writable) on `gn` (the same page when `gn` is None). Returns its slot and whether
    /// it is heap-only (same page, and `same_keys` holds), or None when it does not fit.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
        &mut self,
        go: &mut [u8],
        gn: Option<&mut [u8]>,
        old: RowId,
        new_page: u64,
        row: &[u8],
        view: &TxnView,
        same_keys: SameKeys<'_>,
        tuple: &mut Vec<u8>,
    ) -> Option<(u16, bool)> {
        let xid = view.xid;
        let t = PageRef(go).tuple_ref(old.slot)?;
        let old_row = &t[TUPLE_HEADER_BYTES..];
        let hot = gn.is_none() && same_keys.is_some_and(|same| same(old_row, row));
        tuple.clear();
        TupleHeader::write_new(tuple, xid, view.cid, if hot { HEAP_ONLY } else { 0 });
        tuple.extend_from_slice(row);
        let middle = delta_middle(old_row, row);
        let slot = match gn {
            Some(gn) => put_version(gn, tuple)?,
            None => put_version(go, tuple)?,
        };
        if let Some(t) = PageMut(go).into_tuple_mut(old.slot) {
            set_xmax(t, xid, Some((new_page, slot)));
        }
        let d = DeltaRow {
            slot,
            old_page: old.page,
            old_slot: old.slot,
            prefix: middle.0,
            suffix: middle.1,
            middle: middle.2,
        };
        if hot {
            self.hot_news.push(d);
        } else {
            self.news.push(d);
        }
        self.links.push(UpdateLink {
            slot: old.slot,
            new_page,
            new_slot: slot,
        });
        Some((slot, hot))
    }

    /// Logs the links of the old versions and the new versions. On two pages, the links
    /// (old page) go first: redo of the new versions then reads old versions from a page
    /// already made whole, since in full-page mode the old page's first change after the
    /// redo point is its image (docs/recovery.md rule 26). On one page, the new versions
    /// go first: a page image taken for the first record holds both changes, and the
    /// links' redo (setting xmax) is the same again.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn log(
        &mut self,
        ctx: &Ctx,
        go: &mut [u8],
        gn: Option<&mut [u8]>,
        old_page: u64,
        new_page: u64,
        view: &TxnView,
        stats: &mut TxnStats,
    ) -> Result<()> {
        if self.links.is_empty() {
            return Ok(());
        }
        let xid = view.xid;
        let mut old_rec = Vec::with_capacity(16 + self.links.len() * 4);
        HeapRecord::UpdateOld {
            page: old_page,
            links: std::mem::take(&mut self.links),
        }
        .encode_payload(&mut old_rec);
        let mut new_recs = Vec::with_capacity(2);
        for (rows, hot) in [
            (std::mem::take(&mut self.news), false),
            (std::mem::take(&mut self.hot_news), true),
        ] {
            if rows.is_empty() {
                continue;
            }
            let mut rec = Vec::with_capacity(64 + rows.len() * 16);
            let r = HeapRecord::UpdateNew {
                page: new_page,
                cid: view.cid,
                rows,
                hot,
            };
            r.encode_payload(&mut rec);
            new_recs.push((r.record_type(), rec));
        }
        match gn {
            Some(gn) => {
                ctx.wal.append_page_change(
                    HEAP_UPDATE_OLD,
                    xid,
                    &old_rec,
                    go,
                    Some(&mut *stats),
                )?;
                for (kind, rec) in &new_recs {
                    ctx.wal
                        .append_page_change(*kind, xid, rec, gn, Some(&mut *stats))?;
                }
            }
            None => {
                for (kind, rec) in &new_recs {
                    ctx.wal
                        .append_page_change(*kind, xid, rec, go, Some(&mut *stats))?;
                }
                ctx.wal
                    .append_page_change(HEAP_UPDATE_OLD, xid, &old_rec, go, Some(stats))?;
            }
        }
        Ok(())
    }
}

/// Replaces the version at `id` with a new one holding `row`. Returns where the new
/// version is, and whether it needs index entries of its own (it is not heap-only);
/// None when the row was left for `Writer::changed`.
pub fn update(
    ctx: &Ctx,
    table: &Table,
    id: RowId,
    row: &[u8],
    w: &mut Writer,
) -> Result<Option<Updated>> {
    let mut updated = Vec::with_capacity(1);
    update_rows(ctx, table, id.page, &[(id.slot, row)], w, &mut updated)?;
    Ok(updated.first().copied())
}

/// Replaces versions of one page (each visible to `view`) with new ones: on the same
/// page while it has room, else on other pages, a few rows per latch. The new versions
/// put on one page are logged as one `HeapUpdateNew` of deltas against the old ones,
/// the old versions' links as one `HeapUpdateOld` (heap-only ones, same page with
/// `same_keys` holding, as a `HeapUpdateHot`). Pushes an `Updated` for each row
/// updated: where its new version is, and whether it needs index entries (it is not
/// heap-only). A row a transaction that committed after the view's snapshot changed is
/// left for `Writer::changed`. Stops at the first error; what was updated before it
/// stays updated.
pub fn update_rows<R: AsRef<[u8]>>(
    ctx: &Ctx,
    table: &Table,
    page: u64,
    rows: &[(u16, R)],
    w: &mut Writer,
    updated: &mut Vec<Updated>,
) -> Result<()> {
    let view = w.view;
    let same_keys = w.same_keys;
    let max = max_row_bytes(ctx.pool.page_size());
    if let Some((_, row)) = rows.iter().find(|(_, r)| r.as_ref().len() > max) {
        return Err(Error::RowTooLarge {
            size: row.as_ref().len(),
            max,
        });
    }
    let xid = view.xid;
    let mut tuple = Vec::with_capacity(256);
    let mut batch = UpdateBatch::default();
    let mut pruned = false;
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
                let row = rows[at].1.as_ref();
                let Some((slot, hot)) =
                    batch.add(&mut g, None, id, page, row, view, same_keys, &mut tuple)
                else {
                    // A full page is pruned once (PostgreSQL prunes on the fly too), so
                    // that new versions, heap-only ones above all, stay on it.
                    if !pruned {
                        pruned = true;
                        batch.log(ctx, &mut g, None, page, page, view, w.stats)?;
                        let plan = prune_plan(ctx, &g, ctx.txns.horizon());
                        if !plan.is_empty() {
                            let n = apply_prune(ctx, &mut g, page, plan, xid, w.stats)?;
                            ctx.wal
                                .stats()
                                .versions_pruned
                                .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                            continue;
                        }
                    }
                    full = true;
                    break;
                };
                updated.push(Updated {
                    old: id,
                    new: RowId { page, slot },
                    reindex: !hot,
                });
                at += 1;
            }
            batch.log(ctx, &mut g, None, page, page, view, w.stats)?;
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
        let target = target_page(ctx, table, need, page, xid, w.stats)?;
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
            match blocker(ctx, &mut go, w, id) {
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
            let row = rows[at].1.as_ref();
            let Some((slot, _)) = batch.add(
                &mut go,
                Some(&mut gn),
                id,
                target,
                row,
                view,
                None,
                &mut tuple,
            ) else {
                break;
            };
            updated.push(Updated {
                old: id,
                new: RowId { page: target, slot },
                reindex: true,
            });
            placed += 1;
            at += 1;
        }
        batch.log(ctx, &mut go, Some(&mut gn), page, target, view, w.stats)?;
        // Nothing fitted the page chosen (not: every row left was skipped).
        if placed == 0 && stop.is_none() && at < rows.len() {
            table.set_free(target, 0);
        }
        drop((go, gn));
        drop((old_pin, new_pin));
        resolve(ctx, xid, stop)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::wal_records::rebuild_row;
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
        TupleHeader::write_new(&mut t, 9, 1, 0);
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
