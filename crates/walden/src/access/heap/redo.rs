//! Redo of heap records.

use super::*;
use crate::access::slotted::{insert_at_slots, redo_with, BuildTuple};
use crate::buffer::{BufferPool, Fetch};
use crate::error::{Error, Result};
use crate::page::{PageKind, PageMut, PageRef};
use crate::wal::record::DeltaRow;
use crate::wal::Record;

/// The old versions a `HeapUpdateNew` record reads from other pages, as they are now
/// (None where a slot holds no tuple).
pub(crate) fn delta_bases(
    pool: &BufferPool,
    page: u64,
    rows: &[DeltaRow],
) -> Result<Vec<Option<Vec<u8>>>> {
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
pub(crate) fn rebuild_row(base: Option<&[u8]>, d: &DeltaRow, out: &mut Vec<u8>) {
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
