//! The heap's WAL records (rows inserted, deleted, replaced, and their new versions as
//! deltas): their payloads, their description and their redo.

use super::*;
use crate::access::slotted::{insert_at_slots, BuildTuple};
use crate::buffer::{BufferPool, Fetch};
use crate::codec::{put_bytes_v, put_varint, put_varint_signed, Reader};
use crate::error::{Error, Result};
use crate::page::{PageMut, PageRef};
use crate::wal::payload::{
    count, finish, get_rows, get_slot_runs, page_from_delta, put_insert, put_slot_runs, Payload,
    SlotCoder,
};
use crate::wal::record::{CARRIES_ROWS, CHANGES_PAGE};
use crate::wal::{LogRecord, RecordOwner, RecordType, RedoCtx};

/// Rows inserted into one page by one command: `page | cid | rows`.
pub const HEAP_INSERT: RecordType = RecordType::new(2, "heap_insert", CHANGES_PAGE | CARRIES_ROWS);
/// Versions of one page deleted by one command (xmax set): `page | slot runs`.
pub const HEAP_DELETE: RecordType = RecordType::new(3, "heap_delete", CHANGES_PAGE);
/// Versions of one page replaced by one command: xmax set, and each one's successor.
pub const HEAP_UPDATE_OLD: RecordType = RecordType::new(4, "heap_update_old", CHANGES_PAGE);
/// New versions put on one page by one command, each a delta against its old version.
pub const HEAP_UPDATE_NEW: RecordType = RecordType::new(16, "heap_update_new", CHANGES_PAGE);
/// As `HEAP_UPDATE_NEW`, for heap-only versions (same page, no indexed column changed):
/// redo flags them `HEAP_ONLY`.
pub const HEAP_UPDATE_HOT: RecordType = RecordType::new(27, "heap_update_hot", CHANGES_PAGE);
/// Vacuum of a page with heap-only chains: dead chain roots that lead to a live version
/// become redirects, then dead versions are removed and the page compacted:
/// `page | n | n × (slot, target slot) | slot runs removed`.
pub const HEAP_PRUNE_HOT: RecordType = RecordType::new(28, "heap_prune_hot", CHANGES_PAGE);

/// A heap record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeapRecord {
    /// Rows inserted into one page by one command: (slot, row bytes) each.
    Insert {
        page: u64,
        cid: u32,
        rows: Vec<(u16, Vec<u8>)>,
    },
    /// Row versions of one page deleted by one command (xmax set to the record's
    /// transaction).
    Delete { page: u64, slots: Vec<u16> },
    /// Row versions of one page replaced by one command: xmax set and the pointer to
    /// each one's successor.
    UpdateOld { page: u64, links: Vec<UpdateLink> },
    /// New versions of rows, put on one page by one command, each written as a delta
    /// against its old version (which redo reads from its page).
    UpdateNew {
        page: u64,
        cid: u32,
        rows: Vec<DeltaRow>,
        /// Heap-only versions (`HEAP_UPDATE_HOT`).
        hot: bool,
    },
    /// Vacuum of a page with heap-only chains: each (slot, target) makes the dead root at
    /// `slot` a redirect to the version at `target`; then `removed` go and the page is
    /// compacted.
    PruneHot {
        page: u64,
        redirects: Vec<(u16, u16)>,
        removed: Vec<u16>,
    },
}

/// One replaced version (see `HeapRecord::UpdateOld`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateLink {
    pub slot: u16,
    pub new_page: u64,
    pub new_slot: u16,
}

/// A new row version as a delta against the old one (see `HeapRecord::UpdateNew`): the
/// new row is the old row's first `prefix` bytes, then `middle`, then its last `suffix`
/// bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaRow {
    pub slot: u16,
    pub old_page: u64,
    pub old_slot: u16,
    pub prefix: u16,
    pub suffix: u16,
    pub middle: Vec<u8>,
}

impl Payload for HeapRecord {
    fn record_type(&self) -> RecordType {
        match self {
            HeapRecord::Insert { .. } => HEAP_INSERT,
            HeapRecord::Delete { .. } => HEAP_DELETE,
            HeapRecord::UpdateOld { .. } => HEAP_UPDATE_OLD,
            HeapRecord::UpdateNew { hot: false, .. } => HEAP_UPDATE_NEW,
            HeapRecord::UpdateNew { hot: true, .. } => HEAP_UPDATE_HOT,
            HeapRecord::PruneHot { .. } => HEAP_PRUNE_HOT,
        }
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            HeapRecord::Insert { page, cid, rows } => put_insert(out, *page, *cid, rows),
            HeapRecord::Delete { page, slots } => {
                put_varint(out, *page);
                put_slot_runs(out, slots);
            }
            HeapRecord::UpdateOld { page, links } => {
                put_varint(out, *page);
                put_varint(out, links.len() as u64);
                let mut c = SlotCoder::new();
                let mut new_c = SlotCoder::new();
                let mut prev_page = *page as i64;
                for l in links {
                    c.put(out, l.slot);
                    put_varint_signed(out, l.new_page as i64 - prev_page);
                    prev_page = l.new_page as i64;
                    new_c.put(out, l.new_slot);
                }
            }
            HeapRecord::PruneHot {
                page,
                redirects,
                removed,
            } => {
                put_varint(out, *page);
                put_varint(out, redirects.len() as u64);
                let mut c = SlotCoder::new();
                let mut tc = SlotCoder::new();
                for (slot, target) in redirects {
                    c.put(out, *slot);
                    tc.put(out, *target);
                }
                put_slot_runs(out, removed);
            }
            HeapRecord::UpdateNew {
                page, cid, rows, ..
            } => {
                put_varint(out, *page);
                put_varint(out, *cid as u64);
                put_varint(out, rows.len() as u64);
                let mut c = SlotCoder::new();
                let mut old_c = SlotCoder::new();
                let mut prev_page = *page as i64;
                for d in rows {
                    c.put(out, d.slot);
                    put_varint_signed(out, d.old_page as i64 - prev_page);
                    prev_page = d.old_page as i64;
                    old_c.put(out, d.old_slot);
                    put_varint(out, d.prefix as u64);
                    put_varint(out, d.suffix as u64);
                    put_bytes_v(out, &d.middle);
                }
            }
        }
    }
}

impl HeapRecord {
    /// Decodes a payload of type `t`. Every length is checked.
    pub fn decode(t: RecordType, payload: &[u8]) -> std::result::Result<HeapRecord, String> {
        let mut r = Reader::new(payload, 0);
        let page = r.varint()?;
        let rec = match t.code {
            c if c == HEAP_INSERT.code => HeapRecord::Insert {
                page,
                cid: r.varint32()?,
                rows: get_rows(&mut r)?,
            },
            c if c == HEAP_DELETE.code => HeapRecord::Delete {
                page,
                slots: get_slot_runs(&mut r)?,
            },
            c if c == HEAP_UPDATE_OLD.code => HeapRecord::UpdateOld {
                page,
                links: decode_links(&mut r, page)?,
            },
            c if c == HEAP_UPDATE_NEW.code || c == HEAP_UPDATE_HOT.code => HeapRecord::UpdateNew {
                page,
                cid: r.varint32()?,
                rows: decode_deltas(&mut r, page)?,
                hot: c == HEAP_UPDATE_HOT.code,
            },
            c if c == HEAP_PRUNE_HOT.code => {
                let n = count(&mut r, 2)?;
                let mut redirects = Vec::with_capacity(n);
                let mut c = SlotCoder::new();
                let mut tc = SlotCoder::new();
                for _ in 0..n {
                    redirects.push((c.get(&mut r)?, tc.get(&mut r)?));
                }
                HeapRecord::PruneHot {
                    page,
                    redirects,
                    removed: get_slot_runs(&mut r)?,
                }
            }
            c => return Err(format!("record code {c} is not the heap's")),
        };
        finish(&r, t)?;
        Ok(rec)
    }
}

fn decode_links(r: &mut Reader, page: u64) -> std::result::Result<Vec<UpdateLink>, String> {
    let n = count(r, 3)?;
    let mut links = Vec::with_capacity(n);
    let mut c = SlotCoder::new();
    let mut new_c = SlotCoder::new();
    let mut prev_page = page as i64;
    for _ in 0..n {
        let slot = c.get(r)?;
        let new_page = page_from_delta(prev_page, r.varint_signed()?)?;
        prev_page = new_page as i64;
        links.push(UpdateLink {
            slot,
            new_page,
            new_slot: new_c.get(r)?,
        });
    }
    Ok(links)
}

fn decode_deltas(r: &mut Reader, page: u64) -> std::result::Result<Vec<DeltaRow>, String> {
    let n = count(r, 6)?;
    let mut rows = Vec::with_capacity(n);
    let mut c = SlotCoder::new();
    let mut old_c = SlotCoder::new();
    let mut prev_page = page as i64;
    for _ in 0..n {
        let slot = c.get(r)?;
        let old_page = page_from_delta(prev_page, r.varint_signed()?)?;
        prev_page = old_page as i64;
        rows.push(DeltaRow {
            slot,
            old_page,
            old_slot: old_c.get(r)?,
            prefix: r.varint16()?,
            suffix: r.varint16()?,
            middle: r.bytes_v()?.to_vec(),
        });
    }
    Ok(rows)
}

/// A slot list: the slot itself when there is one, else how many.
fn slot_list(slots: &[u16]) -> String {
    match slots {
        [s] => format!("slot {s}"),
        _ => format!("slots {}", slots.len()),
    }
}

/// The owner of the heap records.
pub struct HeapOwner;

impl RecordOwner for HeapOwner {
    fn name(&self) -> &'static str {
        "heap"
    }

    fn types(&self) -> &'static [RecordType] {
        &[
            HEAP_INSERT,
            HEAP_DELETE,
            HEAP_UPDATE_OLD,
            HEAP_UPDATE_NEW,
            HEAP_UPDATE_HOT,
            HEAP_PRUNE_HOT,
        ]
    }

    fn check(&self, rec: &LogRecord) -> std::result::Result<(), String> {
        HeapRecord::decode(rec.rtype, &rec.payload).map(|_| ())
    }

    fn describe(&self, rec: &LogRecord) -> std::result::Result<String, String> {
        Ok(match HeapRecord::decode(rec.rtype, &rec.payload)? {
            HeapRecord::Insert { page, cid, rows } => {
                let bytes: usize = rows.iter().map(|(_, r)| r.len()).sum();
                format!("page {page} cid {cid} rows {} ({bytes} bytes)", rows.len())
            }
            HeapRecord::Delete { page, slots } => format!("page {page} {}", slot_list(&slots)),
            HeapRecord::UpdateOld { page, links } => match links.as_slice() {
                [l] => format!(
                    "page {page} slot {} -> page {} slot {}",
                    l.slot, l.new_page, l.new_slot
                ),
                _ => format!("page {page} rows {}", links.len()),
            },
            HeapRecord::UpdateNew {
                page,
                cid,
                rows,
                hot,
            } => {
                let bytes: usize = rows.iter().map(|d| d.middle.len()).sum();
                format!(
                    "page {page} cid {cid} rows {} as deltas ({bytes} bytes changed){}",
                    rows.len(),
                    if hot { ", heap-only" } else { "" }
                )
            }
            HeapRecord::PruneHot {
                page,
                redirects,
                removed,
            } => format!(
                "page {page} redirects {} removed {}",
                redirects.len(),
                removed.len()
            ),
        })
    }

    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> Result<()> {
        let decoded =
            HeapRecord::decode(rec.rtype, &rec.payload).map_err(|r| ctx.corrupt(rec, r))?;
        redo(ctx, rec, &decoded)
    }
}

/// The old versions a `HEAP_UPDATE_NEW` record reads from other pages, as they are now
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

/// Makes the tuple at `slot` (a dead chain root) a redirect to the version at `target`
/// on the same page: its header alone, flagged `REDIRECT`, its xmax the target's xmin
/// (so that readers accept the link) and its link the target. Used by vacuum and redo.
pub(crate) fn make_redirect(
    g: &mut [u8],
    slot: u16,
    target: u16,
) -> std::result::Result<(), String> {
    let page_no = PageRef(g).page_no();
    let xmin = PageRef(g)
        .tuple(target)
        .filter(|t| t.len() >= TUPLE_HEADER_BYTES)
        .map(|t| TupleHeader::read(t).xmin)
        .ok_or_else(|| {
            format!("redirect from slot {slot} to slot {target}, which holds no tuple")
        })?;
    let t = header_mut(g, slot)?;
    let cid = TupleHeader::read(t).cid;
    set_xmax(t, xmin, Some((page_no, target)));
    set_cid(t, cid, REDIRECT);
    if !PageMut(g).truncate_tuple(slot, TUPLE_HEADER_BYTES) {
        return Err(format!("cannot shorten slot {slot}"));
    }
    Ok(())
}

/// Applies a heap record during recovery unless the page already holds it.
fn redo(ctx: &RedoCtx, rec: &LogRecord, decoded: &HeapRecord) -> Result<()> {
    let xid = rec.xid;
    let bases = match decoded {
        HeapRecord::UpdateNew { page, rows, .. } => {
            // Read the old versions only for a record the page does not hold yet.
            let pinned = ctx.pool.fetch(*page, Fetch::Read)?;
            let done = PageRef(&pinned.read()).lsn() >= rec.end_lsn();
            drop(pinned);
            if done {
                return Ok(());
            }
            delta_bases(ctx.pool, *page, rows)?
        }
        _ => Vec::new(),
    };
    ctx.redo_page(rec, Fetch::Read, |g, page_no| {
        match decoded {
            HeapRecord::Insert { cid, rows, .. } => {
                let build: &BuildTuple = &|out, xid, cid, row| {
                    TupleHeader::write_new(out, xid, cid, 0);
                    out.extend_from_slice(row);
                };
                insert_at_slots(g, rows, xid, *cid, build)?;
            }
            HeapRecord::Delete { slots, .. } => {
                for slot in slots {
                    set_xmax(header_mut(g, *slot)?, xid, None);
                }
            }
            HeapRecord::UpdateOld { links, .. } => {
                for l in links {
                    set_xmax(header_mut(g, l.slot)?, xid, Some((l.new_page, l.new_slot)));
                }
            }
            HeapRecord::PruneHot {
                redirects, removed, ..
            } => {
                for &(slot, target) in redirects {
                    make_redirect(g, slot, target)?;
                }
                PageMut(g).remove_and_compact(removed);
            }
            HeapRecord::UpdateNew { cid, rows, hot, .. } => {
                let flags = if *hot { HEAP_ONLY } else { 0 };
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
                    TupleHeader::write_new(&mut tuple, xid, *cid, flags);
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
        }
        Ok(())
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wal::payload::{check_codec, encode_record};

    /// A record of each type (also the registry's fuzz samples).
    pub(crate) fn samples() -> Vec<HeapRecord> {
        vec![
            HeapRecord::Insert {
                page: 3,
                cid: 1,
                rows: vec![(0, vec![1, 2, 3]), (5, vec![9; 40]), (2, vec![])],
            },
            HeapRecord::Delete {
                page: 1,
                slots: vec![4, 5, 6, 9, 2, 65535],
            },
            HeapRecord::UpdateOld {
                page: 1,
                links: vec![
                    UpdateLink {
                        slot: 4,
                        new_page: 8,
                        new_slot: 2,
                    },
                    UpdateLink {
                        slot: 5,
                        new_page: 8,
                        new_slot: 3,
                    },
                    UpdateLink {
                        slot: 7,
                        new_page: 0,
                        new_slot: 0,
                    },
                ],
            },
            HeapRecord::UpdateNew {
                page: 8,
                cid: 3,
                rows: vec![
                    DeltaRow {
                        slot: 2,
                        old_page: 1,
                        old_slot: 4,
                        prefix: 10,
                        suffix: 90,
                        middle: vec![1, 2, 3, 4],
                    },
                    DeltaRow {
                        slot: 3,
                        old_page: 9,
                        old_slot: 0,
                        prefix: 0,
                        suffix: 0,
                        middle: vec![],
                    },
                ],
                hot: false,
            },
            HeapRecord::UpdateNew {
                page: 8,
                cid: 4,
                rows: vec![DeltaRow {
                    slot: 7,
                    old_page: 8,
                    old_slot: 2,
                    prefix: 3,
                    suffix: 1,
                    middle: vec![5],
                }],
                hot: true,
            },
            HeapRecord::PruneHot {
                page: 8,
                redirects: vec![(2, 7), (0, 65535)],
                removed: vec![3, 4, 1],
            },
            HeapRecord::PruneHot {
                page: 1,
                redirects: vec![],
                removed: vec![],
            },
        ]
    }

    #[test]
    fn heap_records_round_trip() {
        check_codec(&samples(), HeapRecord::decode);
    }

    #[test]
    fn the_insert_builder_matches_the_record_encoding() {
        let rows = vec![(3u16, vec![1u8; 30]), (4, vec![2; 300]), (9, vec![])];
        let mut b = crate::wal::payload::InsertBuilder::default();
        for (slot, row) in &rows {
            b.push(*slot, row);
        }
        let mut built = Vec::new();
        b.finish(70000, 5, &mut built);
        let mut encoded = Vec::new();
        HeapRecord::Insert {
            page: 70000,
            cid: 5,
            rows,
        }
        .encode_payload(&mut encoded);
        assert_eq!(built, encoded);
        assert_eq!(b.len(), 3);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn sixty_deletes_on_one_page_are_one_run() {
        let mut b = Vec::new();
        let rec = HeapRecord::Delete {
            page: 5000,
            slots: (0..60).collect(),
        };
        assert!(encode_record(&mut b, &rec, 300) <= 10, "{}", b.len());
    }

    #[test]
    fn a_count_larger_than_the_bytes_is_an_error_not_an_allocation() {
        let mut p = Vec::new();
        put_varint(&mut p, 1);
        put_varint(&mut p, 1);
        put_varint(&mut p, u32::MAX as u64);
        assert!(HeapRecord::decode(HEAP_INSERT, &p).is_err());
        let mut p = Vec::new();
        put_varint(&mut p, 1);
        put_varint(&mut p, 1 << 40);
        assert!(HeapRecord::decode(HEAP_DELETE, &p).is_err());
    }
}
