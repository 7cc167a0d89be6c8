//! The B-tree's WAL records (owner `btree`): each names one page and is as small as the
//! change. A leaf insert logs the item (key and row id); a split logs which page split at
//! which position and the new page's number — in `cow` mode not the moved items: redo
//! rebuilds the new right page from the left page as it stood, which holds because the
//! left page never reaches disk before the right one (`PinnedPage::write_after`,
//! docs/recovery.md rule 28). `full-page` mode logs the new page as an image (the writer
//! does: its LSN is below the redo point), `none` mode as its contents (`btree_page`).

use super::key::{key_from_parts, push_row_id, KeyPart};
use crate::buffer::Fetch;
use crate::codec::{put_bytes_v, put_varint, Reader};
use crate::error::{Error, Result};
use crate::index_page::{IndexPage, IndexPageMut, FLAG_FREE, FLAG_META};
use crate::page::PageRef;
use crate::schema::ColumnType;
use crate::store::Protection;
use crate::wal::payload::{count, finish, Payload};
use crate::wal::record::{CHANGES_PAGE, NEW_PAGE, WILL_INIT};
use crate::wal::{LogRecord, RecordOwner, RecordType, RedoCtx};
use crate::RowId;

/// A whole index page: `page varint | index varint | level varint | flags u8 (1: meta, 2:
/// free) |
/// right varint (0: none, else page + 1) | high key (0: none, else length + 1, bytes) |
/// count varint | count × item bytes`. Redo writes the page whole.
pub const BTREE_PAGE: RecordType = RecordType::new(19, "btree_page", CHANGES_PAGE | WILL_INIT);
/// An item put on a page: `page varint | position varint | item bytes`.
pub const BTREE_INSERT: RecordType = RecordType::new(20, "btree_insert", CHANGES_PAGE);
/// Items removed from a page: `page varint | count varint | count × position varint`
/// (ascending).
pub const BTREE_DELETE: RecordType = RecordType::new(21, "btree_delete", CHANGES_PAGE);
/// The left half of a split: `page varint | at varint | right varint | high key bytes`:
/// items from `at` on went to `right`, which is the new sibling, and `high key` divides.
pub const BTREE_SPLIT_LEFT: RecordType = RecordType::new(22, "btree_split_left", CHANGES_PAGE);
/// The right half of a split (`cow` mode): `page varint | index varint | left varint |
/// from varint`: the page is the left page's items from `from` on, with its high key,
/// sibling and level.
pub const BTREE_SPLIT_RIGHT: RecordType =
    RecordType::new(23, "btree_split_right", CHANGES_PAGE | NEW_PAGE);
/// The meta page names a new root: `page varint | root varint | level varint`.
pub const BTREE_META: RecordType = RecordType::new(24, "btree_meta", CHANGES_PAGE);
/// A leaf item made from a row the transaction's latest insert record (`CARRIES_ROWS`)
/// logged, so that the key is not logged twice: `page varint | position varint | slot
/// varint | parts u8 | parts × (type u8 | offset varint)`. The row is the one at `slot`
/// in that record, on the record's page; each part is a key column's type code and the
/// offset of its value in the row (type 0: NULL, no offset). The type byte's high bits
/// carry the column's order (format 15): 0x40 a descending value, 0x80 a NULL that
/// sorts first (a NULL part is 0 or 0x80); a key of default-order columns has neither.
/// Redo builds the item from the row's bytes, without the catalog (docs/recovery.md
/// rule 31).
pub const BTREE_INSERT_ROW: RecordType = RecordType::new(26, "btree_insert_row", CHANGES_PAGE);
/// A page's new right sibling and high key: `page varint | right varint (0: none, else
/// page + 1) | high key bytes (the rest; none: plus infinity)`. A page takes over the key
/// range and sibling of an empty page it unlinks, or the meta page names the first free
/// page (its right-sibling field).
pub const BTREE_LINK: RecordType = RecordType::new(29, "btree_link", CHANGES_PAGE);

/// A B-tree record.
#[derive(Debug, Clone, PartialEq)]
pub enum BTreeRecord {
    Page {
        page: u64,
        index: u32,
        level: u16,
        /// `FLAG_META`, `FLAG_FREE` or neither.
        flags: u16,
        right: Option<u64>,
        high_key: Option<Vec<u8>>,
        items: Vec<Vec<u8>>,
    },
    Insert {
        page: u64,
        pos: u16,
        item: Vec<u8>,
    },
    Delete {
        page: u64,
        positions: Vec<u16>,
    },
    SplitLeft {
        page: u64,
        at: u16,
        right: u64,
        high_key: Vec<u8>,
    },
    SplitRight {
        page: u64,
        index: u32,
        left: u64,
        from: u16,
    },
    Meta {
        page: u64,
        root: u64,
        level: u16,
    },
    InsertRow {
        page: u64,
        pos: u16,
        slot: u16,
        key: Vec<KeyPart>,
    },
    Link {
        page: u64,
        right: Option<u64>,
        high_key: Option<Vec<u8>>,
    },
}

/// Appends the payload of the `btree_page` record of a page as it stands, read from the
/// page itself: what `BTreeRecord::of_page(page).encode_payload` appends, without a
/// vector per item (an index build logs every page it writes).
pub fn put_page(out: &mut Vec<u8>, page: &[u8]) {
    let p = IndexPage(page);
    put_page_parts(
        out,
        (p.page_no(), p.owner(), p.level(), p.flags(), p.right()),
        p.high_key(),
        (0..p.count()).map(|i| p.item(i)),
    );
}

/// The `btree_page` payload: `(page, index, level, flags, right)`, the high key, the
/// items.
fn put_page_parts<'i>(
    out: &mut Vec<u8>,
    (page, index, level, flags, right): (u64, u32, u16, u16, Option<u64>),
    high_key: Option<&[u8]>,
    items: impl ExactSizeIterator<Item = &'i [u8]>,
) {
    put_varint(out, page);
    put_varint(out, index as u64);
    put_varint(out, level as u64);
    out.push(flags as u8);
    put_varint(out, right.map_or(0, |r| r + 1));
    match high_key {
        None => put_varint(out, 0),
        Some(h) => {
            put_varint(out, h.len() as u64 + 1);
            out.extend_from_slice(h);
        }
    }
    put_varint(out, items.len() as u64);
    for it in items {
        put_bytes_v(out, it);
    }
}

impl BTreeRecord {
    /// The record of a page as it stands (`btree_page`).
    pub fn of_page(page: &[u8]) -> BTreeRecord {
        let p = IndexPage(page);
        BTreeRecord::Page {
            page: p.page_no(),
            index: p.owner(),
            level: p.level(),
            flags: p.flags(),
            right: p.right(),
            high_key: p.high_key().map(|h| h.to_vec()),
            items: (0..p.count()).map(|i| p.item(i).to_vec()).collect(),
        }
    }
}

impl Payload for BTreeRecord {
    fn record_type(&self) -> RecordType {
        match self {
            BTreeRecord::Page { .. } => BTREE_PAGE,
            BTreeRecord::Insert { .. } => BTREE_INSERT,
            BTreeRecord::Delete { .. } => BTREE_DELETE,
            BTreeRecord::SplitLeft { .. } => BTREE_SPLIT_LEFT,
            BTreeRecord::SplitRight { .. } => BTREE_SPLIT_RIGHT,
            BTreeRecord::Meta { .. } => BTREE_META,
            BTreeRecord::InsertRow { .. } => BTREE_INSERT_ROW,
            BTreeRecord::Link { .. } => BTREE_LINK,
        }
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            BTreeRecord::Page {
                page,
                index,
                level,
                flags,
                right,
                high_key,
                items,
            } => put_page_parts(
                out,
                (*page, *index, *level, *flags, *right),
                high_key.as_deref(),
                items.iter().map(|i| i.as_slice()),
            ),
            BTreeRecord::Insert { page, pos, item } => put_insert(out, *page, *pos, item),
            BTreeRecord::Delete { page, positions } => {
                put_varint(out, *page);
                put_varint(out, positions.len() as u64);
                for p in positions {
                    put_varint(out, *p as u64);
                }
            }
            BTreeRecord::SplitLeft {
                page,
                at,
                right,
                high_key,
            } => {
                put_varint(out, *page);
                put_varint(out, *at as u64);
                put_varint(out, *right);
                out.extend_from_slice(high_key);
            }
            BTreeRecord::SplitRight {
                page,
                index,
                left,
                from,
            } => {
                put_varint(out, *page);
                put_varint(out, *index as u64);
                put_varint(out, *left);
                put_varint(out, *from as u64);
            }
            BTreeRecord::Meta { page, root, level } => {
                put_varint(out, *page);
                put_varint(out, *root);
                put_varint(out, *level as u64);
            }
            BTreeRecord::InsertRow {
                page,
                pos,
                slot,
                key,
            } => put_insert_row(out, *page, *pos, *slot, key),
            BTreeRecord::Link {
                page,
                right,
                high_key,
            } => {
                put_varint(out, *page);
                put_varint(out, right.map_or(0, |r| r + 1));
                if let Some(h) = high_key {
                    out.extend_from_slice(h);
                }
            }
        }
    }
}

/// The payload of a `btree_insert` (what `BTreeRecord::Insert` encodes), from borrowed
/// bytes: the insert path logs without copying the item into a record first.
pub(crate) fn put_insert(out: &mut Vec<u8>, page: u64, pos: u16, item: &[u8]) {
    put_varint(out, page);
    put_varint(out, pos as u64);
    out.extend_from_slice(item);
}

/// The payload of a `btree_insert_row` (what `BTreeRecord::InsertRow` encodes), from
/// borrowed key parts.
pub(crate) fn put_insert_row(out: &mut Vec<u8>, page: u64, pos: u16, slot: u16, key: &[KeyPart]) {
    put_varint(out, page);
    put_varint(out, pos as u64);
    put_varint(out, slot as u64);
    out.push(key.len() as u8);
    for part in key {
        match part {
            KeyPart::Null { nulls_first } => {
                out.push(if *nulls_first { PART_NULLS_FIRST } else { 0 })
            }
            KeyPart::At { ty, offset, desc } => {
                out.push(ty.code() | if *desc { PART_DESC } else { 0 });
                put_varint(out, *offset as u64);
            }
        }
    }
}

/// The bit of a `btree_insert_row` part's type byte for a descending column's value.
const PART_DESC: u8 = 0x40;
/// The bit of a NULL part (type 0) that sorts first.
const PART_NULLS_FIRST: u8 = 0x80;
const _: () = assert!(ColumnType::Jsonb.code() < PART_DESC);

/// One key part of a `btree_insert_row`.
fn read_part(r: &mut Reader) -> std::result::Result<KeyPart, String> {
    let b = r.u8()?;
    let code = b & !(PART_DESC | PART_NULLS_FIRST);
    if code == 0 {
        if b & PART_DESC != 0 {
            return Err(format!("a NULL key part with a descending bit ({b:#04x})"));
        }
        return Ok(KeyPart::Null {
            nulls_first: b & PART_NULLS_FIRST != 0,
        });
    }
    if b & PART_NULLS_FIRST != 0 {
        return Err(format!(
            "a key value part with a NULLs-first bit ({b:#04x})"
        ));
    }
    Ok(KeyPart::At {
        ty: ColumnType::from_code(code).ok_or_else(|| format!("unknown column type {code}"))?,
        offset: r.varint32()?,
        desc: b & PART_DESC != 0,
    })
}

/// The rest of the payload as bytes that must not be empty.
fn rest<'a>(r: &mut Reader<'a>, what: &str) -> std::result::Result<&'a [u8], String> {
    let b = r.take(r.remaining())?;
    if b.is_empty() {
        return Err(format!("empty {what}"));
    }
    Ok(b)
}

impl BTreeRecord {
    pub fn decode(t: RecordType, payload: &[u8]) -> std::result::Result<BTreeRecord, String> {
        let mut r = Reader::new(payload, 0);
        let page = r.varint()?;
        let rec = if t == BTREE_PAGE {
            let index = r.varint32()?;
            let level = r.varint16()?;
            let flags = r.u8()? as u16;
            if flags > FLAG_FREE {
                return Err(format!("unknown flags {flags}"));
            }
            let right = r.varint()?.checked_sub(1);
            let high_key = match r.varint()? {
                0 => None,
                n => Some(r.take((n - 1) as usize)?.to_vec()),
            };
            let n = count(&mut r, 1)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(r.bytes_v()?.to_vec());
            }
            BTreeRecord::Page {
                page,
                index,
                level,
                flags,
                right,
                high_key,
                items,
            }
        } else if t == BTREE_INSERT {
            let pos = r.varint16()?;
            let item = rest(&mut r, "item")?.to_vec();
            BTreeRecord::Insert { page, pos, item }
        } else if t == BTREE_DELETE {
            let n = count(&mut r, 1)?;
            let mut positions = Vec::with_capacity(n);
            for _ in 0..n {
                let p = r.varint16()?;
                if positions.last().is_some_and(|&l| l >= p) {
                    return Err("positions not ascending".into());
                }
                positions.push(p);
            }
            BTreeRecord::Delete { page, positions }
        } else if t == BTREE_SPLIT_LEFT {
            let at = r.varint16()?;
            let right = r.varint()?;
            let high_key = rest(&mut r, "high key")?.to_vec();
            BTreeRecord::SplitLeft {
                page,
                at,
                right,
                high_key,
            }
        } else if t == BTREE_SPLIT_RIGHT {
            BTreeRecord::SplitRight {
                page,
                index: r.varint32()?,
                left: r.varint()?,
                from: r.varint16()?,
            }
        } else if t == BTREE_META {
            BTreeRecord::Meta {
                page,
                root: r.varint()?,
                level: r.varint16()?,
            }
        } else if t == BTREE_INSERT_ROW {
            let pos = r.varint16()?;
            let slot = r.varint16()?;
            let n = r.u8()? as usize;
            if n == 0 {
                return Err("a key of no columns".into());
            }
            let mut key = Vec::with_capacity(n);
            for _ in 0..n {
                key.push(read_part(&mut r)?);
            }
            BTreeRecord::InsertRow {
                page,
                pos,
                slot,
                key,
            }
        } else if t == BTREE_LINK {
            let right = r.varint()?.checked_sub(1);
            let h = r.take(r.remaining())?;
            BTreeRecord::Link {
                page,
                right,
                high_key: (!h.is_empty()).then(|| h.to_vec()),
            }
        } else {
            return Err(format!("record code {} is not the btree's", t.code));
        };
        finish(&r, t)?;
        Ok(rec)
    }
}

/// Fills a formatted page from a `btree_page` record. A reason when it cannot hold them.
pub(crate) fn apply_page(g: &mut [u8], rec: &BTreeRecord) -> std::result::Result<(), String> {
    let BTreeRecord::Page {
        page,
        index,
        level,
        flags,
        right,
        high_key,
        items,
    } = rec
    else {
        return Err("not a page record".into());
    };
    let mut p = IndexPageMut(g);
    p.init(*page, *index, *level);
    p.set_flags(*flags);
    if !p.fill(
        items.iter().map(|i| i.as_slice()),
        high_key.as_deref(),
        *right,
    ) {
        return Err(format!("{} items do not fit in the page", items.len()));
    }
    IndexPage(g).validate()
}

/// Applies `f` to a page that must be an index page, and checks the page after it.
fn on_index_page(
    g: &mut [u8],
    f: impl FnOnce(&mut IndexPageMut) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    if g[4] != crate::page::PageKind::Index as u8 {
        return Err(format!("a B-tree record names a page of kind {}", g[4]));
    }
    f(&mut IndexPageMut(g))?;
    IndexPage(g).validate()
}

/// The owner of the B-tree records.
pub struct BTreeOwner;

impl RecordOwner for BTreeOwner {
    fn name(&self) -> &'static str {
        "btree"
    }

    fn types(&self) -> &'static [RecordType] {
        &[
            BTREE_PAGE,
            BTREE_INSERT,
            BTREE_DELETE,
            BTREE_SPLIT_LEFT,
            BTREE_SPLIT_RIGHT,
            BTREE_META,
            BTREE_INSERT_ROW,
            BTREE_LINK,
        ]
    }

    fn check(&self, rec: &LogRecord) -> std::result::Result<(), String> {
        BTreeRecord::decode(rec.rtype, &rec.payload).map(|_| ())
    }

    fn describe(&self, rec: &LogRecord) -> std::result::Result<String, String> {
        Ok(match BTreeRecord::decode(rec.rtype, &rec.payload)? {
            BTreeRecord::Page {
                page,
                index,
                level,
                flags,
                right,
                items,
                ..
            } => format!(
                "page {page} index {index} level {level}{} right {} items {}",
                match flags {
                    FLAG_META => " meta",
                    FLAG_FREE => " free",
                    _ => "",
                },
                right.map_or("none".to_string(), |r| r.to_string()),
                items.len()
            ),
            BTreeRecord::Insert { page, pos, item } => {
                format!("page {page} pos {pos} item {} bytes", item.len())
            }
            BTreeRecord::Delete { page, positions } => {
                format!("page {page} items {}", positions.len())
            }
            BTreeRecord::SplitLeft {
                page,
                at,
                right,
                high_key,
            } => format!(
                "page {page} at {at} right {right} high key {} bytes",
                high_key.len()
            ),
            BTreeRecord::SplitRight {
                page,
                index,
                left,
                from,
            } => format!("page {page} index {index} from page {left} at {from}"),
            BTreeRecord::Meta { page, root, level } => {
                format!("page {page} root {root} level {level}")
            }
            BTreeRecord::InsertRow {
                page,
                pos,
                slot,
                key,
            } => format!(
                "page {page} pos {pos} key of {} columns from the row at slot {slot}",
                key.len()
            ),
            BTreeRecord::Link {
                page,
                right,
                high_key,
            } => format!(
                "page {page} right {} high key {}",
                right.map_or("none".to_string(), |r| r.to_string()),
                high_key.map_or("none".to_string(), |h| format!("{} bytes", h.len()))
            ),
        })
    }

    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> Result<()> {
        let decoded =
            BTreeRecord::decode(rec.rtype, &rec.payload).map_err(|r| ctx.corrupt(rec, r))?;
        match &decoded {
            BTreeRecord::Page { page, index, .. } => {
                ctx.redo_page(rec, Fetch::Overwrite, |g, _| apply_page(g, &decoded))?;
                if let Some(ix) = ctx.catalog.indexes.get(index) {
                    ix.add_page(*page);
                }
                Ok(())
            }
            BTreeRecord::Insert { pos, item, .. } => redo_insert(ctx, rec, *pos, item),
            BTreeRecord::InsertRow { pos, slot, key, .. } => {
                let logged = ctx.rows.get(&rec.xid).ok_or_else(|| {
                    ctx.corrupt(rec, "no insert record of its transaction before it".into())
                })?;
                let row = logged
                    .rows
                    .iter()
                    .find(|(s, _)| s == slot)
                    .map(|(_, row)| row)
                    .ok_or_else(|| {
                        let reason = format!(
                            "the transaction's latest insert record has no row at slot {slot}"
                        );
                        ctx.corrupt(rec, reason)
                    })?;
                let mut item = Vec::with_capacity(32);
                key_from_parts(row, key, &mut item).map_err(|r| ctx.corrupt(rec, r))?;
                push_row_id(
                    &mut item,
                    RowId {
                        page: logged.page,
                        slot: *slot,
                    },
                );
                redo_insert(ctx, rec, *pos, &item)
            }
            BTreeRecord::Delete { positions, .. } => ctx.redo_page(rec, Fetch::Read, |g, _| {
                on_index_page(g, |p| {
                    if positions.last().is_some_and(|&l| l as usize >= p.count()) {
                        return Err(format!("a position beyond {} items", p.count()));
                    }
                    let pos: Vec<usize> = positions.iter().map(|&p| p as usize).collect();
                    p.remove(&pos);
                    Ok(())
                })
            }),
            BTreeRecord::SplitLeft {
                page,
                at,
                right,
                high_key,
            } => {
                ctx.redo_page(rec, Fetch::Read, |g, _| {
                    on_index_page(g, |p| {
                        if *at as usize > p.count() {
                            return Err(format!("split at {at} beyond {} items", p.count()));
                        }
                        if !p.truncate(*at as usize, high_key, *right) {
                            return Err("the high key does not fit".into());
                        }
                        Ok(())
                    })
                })?;
                // As at the split: only a right page above the left one is rebuilt
                // from it (rule 28).
                if ctx.pool.store().protection() == Protection::Cow && *right > *page {
                    ctx.pool.fetch(*page, Fetch::Read)?.write_after(*right);
                }
                Ok(())
            }
            BTreeRecord::SplitRight {
                page,
                index,
                left,
                from,
            } => {
                redo_split_right(ctx, rec, *page, *left, *from)?;
                if let Some(ix) = ctx.catalog.indexes.get(index) {
                    ix.add_page(*page);
                }
                Ok(())
            }
            BTreeRecord::Link {
                right, high_key, ..
            } => ctx.redo_page(rec, Fetch::Read, |g, _| {
                on_index_page(g, |p| {
                    if p.is_free() {
                        return Err("a free page".into());
                    }
                    if !p.set_link(high_key.as_deref(), *right) {
                        return Err("the high key does not fit".into());
                    }
                    Ok(())
                })
            }),
            BTreeRecord::Meta { root, level, .. } => ctx.redo_page(rec, Fetch::Read, |g, _| {
                on_index_page(g, |p| {
                    if !p.is_meta() {
                        return Err("not a meta page".into());
                    }
                    p.set_meta(*root, *level);
                    Ok(())
                })
            }),
        }
    }
}

/// Redo of a leaf or internal insert: `item` at `pos`.
fn redo_insert(ctx: &RedoCtx, rec: &LogRecord, pos: u16, item: &[u8]) -> Result<()> {
    ctx.redo_page(rec, Fetch::Read, |g, _| {
        on_index_page(g, |p| {
            if (pos as usize) > p.count() {
                return Err(format!("position {pos} beyond {} items", p.count()));
            }
            if !p.insert(pos as usize, item) {
                return Err("the item does not fit".into());
            }
            Ok(())
        })
    })
}

/// Rebuilds a split's right page from its left page, which (rule 28) stands as it did
/// before the split whenever the right page needs this record.
fn redo_split_right(ctx: &RedoCtx, rec: &LogRecord, page: u64, left: u64, from: u16) -> Result<()> {
    let end_lsn = rec.end_lsn();
    let pinned = ctx.pool.fetch(page, Fetch::ReadOrNew)?;
    let mut g = pinned.write_any_order();
    if PageRef(&g).lsn() >= end_lsn {
        return Ok(());
    }
    let corrupt = |page: u64, reason: String| Error::CorruptPage {
        path: ctx.pool.store().path().to_path_buf(),
        page,
        location: page,
        reason: format!("redo of the record ending at LSN {end_lsn}: {reason}"),
    };
    let lp = ctx.pool.fetch(left, Fetch::Read)?;
    let lg = lp.read();
    let l = IndexPage(&lg);
    if PageRef(&lg).kind_byte() != crate::page::PageKind::Index as u8 {
        return Err(corrupt(
            left,
            "the left page of a split is not an index page".into(),
        ));
    }
    if PageRef(&lg).lsn() > rec.lsn {
        return Err(corrupt(
            left,
            format!(
                "the left page of a split is newer (LSN {}) than the split, but its right page is not",
                PageRef(&lg).lsn()
            ),
        ));
    }
    if from as usize > l.count() {
        return Err(corrupt(
            left,
            format!("split from {from} beyond {} items", l.count()),
        ));
    }
    let mut r = IndexPageMut(&mut g);
    r.init(page, l.owner(), l.level());
    let items = (from as usize..l.count()).map(|i| l.item(i));
    if !r.fill(items, l.high_key(), l.right()) {
        return Err(corrupt(page, "the right half does not fit".into()));
    }
    drop(lg);
    crate::page::PageMut(&mut g).set_lsn(end_lsn);
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wal::payload::check_codec;

    /// `put_page` encodes exactly what `of_page` and the record's own encoding do, for
    /// pages with and without a high key and right sibling, empty and full.
    #[test]
    fn put_page_matches_the_page_record() {
        for (count, high, right) in [
            (0usize, None, None),
            (3, Some(b"\x01m".as_slice()), Some(42u64)),
            (400, None, Some(7)),
            (2000, Some(b"\x01zz".as_slice()), None),
        ] {
            let mut buf = vec![0u8; 8192];
            let mut p = IndexPageMut(&mut buf);
            p.init(11, 5, 0);
            let items: Vec<Vec<u8>> = (0..count as u32)
                .map(|i| [b"\x01k".as_slice(), &i.to_be_bytes(), &[0, 0, 0, 1, 0, 2]].concat())
                .collect();
            let fits = p.fill(items.iter().map(|i| i.as_slice()), high, right);
            if !fits {
                continue;
            }
            let mut want = Vec::new();
            BTreeRecord::of_page(&buf).encode_payload(&mut want);
            let mut got = Vec::new();
            put_page(&mut got, &buf);
            assert_eq!(got, want, "{count} items");
        }
    }

    /// A record of each type (also the registry's fuzz samples).
    pub(crate) fn samples() -> Vec<BTreeRecord> {
        vec![
            BTreeRecord::Page {
                page: 7,
                index: 3,
                level: 1,
                flags: 0,
                right: Some(9),
                high_key: Some(b"\x01abc".to_vec()),
                items: vec![vec![0, 0, 0, 4], b"\x01a\x00\x00\x00\x05".to_vec()],
            },
            BTreeRecord::Page {
                page: 6,
                index: 3,
                level: 0,
                flags: FLAG_META,
                right: None,
                high_key: None,
                items: vec![vec![7, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
            },
            BTreeRecord::Insert {
                page: 7,
                pos: 3,
                item: b"\x01key\x00\x00\x00\x00\x00\x01\x00\x02".to_vec(),
            },
            BTreeRecord::Delete {
                page: 7,
                positions: vec![0, 4, 5],
            },
            BTreeRecord::SplitLeft {
                page: 7,
                at: 100,
                right: 12,
                high_key: b"\x01k".to_vec(),
            },
            BTreeRecord::SplitRight {
                page: 12,
                index: 3,
                left: 7,
                from: 100,
            },
            BTreeRecord::Meta {
                page: 6,
                root: 13,
                level: 2,
            },
            BTreeRecord::InsertRow {
                page: 7,
                pos: 4,
                slot: 300,
                key: vec![
                    KeyPart::At {
                        ty: ColumnType::Uuid,
                        offset: 1,
                        desc: false,
                    },
                    KeyPart::Null { nulls_first: false },
                    KeyPart::At {
                        ty: ColumnType::Text,
                        offset: 70_000,
                        desc: false,
                    },
                ],
            },
            BTreeRecord::InsertRow {
                page: 7,
                pos: 5,
                slot: 2,
                key: vec![
                    KeyPart::At {
                        ty: ColumnType::Jsonb,
                        offset: 3,
                        desc: true,
                    },
                    KeyPart::Null { nulls_first: true },
                    KeyPart::At {
                        ty: ColumnType::Int4,
                        offset: 9,
                        desc: false,
                    },
                ],
            },
            BTreeRecord::Page {
                page: 15,
                index: 3,
                level: 0,
                flags: FLAG_FREE,
                right: Some(11),
                high_key: None,
                items: vec![],
            },
            BTreeRecord::Link {
                page: 7,
                right: Some(12),
                high_key: Some(b"\x01k".to_vec()),
            },
            BTreeRecord::Link {
                page: 6,
                right: None,
                high_key: None,
            },
        ]
    }

    #[test]
    fn btree_records_round_trip() {
        check_codec(&samples(), BTreeRecord::decode);
    }

    /// A key of default-order columns is logged as before format 15 (type codes
    /// alone); a descending value and a NULL that sorts first set the high bits, and a
    /// bit that means nothing for its part is refused.
    #[test]
    fn insert_row_parts_carry_their_order() {
        let payload = |key: &[KeyPart]| {
            let mut out = Vec::new();
            put_insert_row(&mut out, 7, 4, 2, key);
            out
        };
        let int4 = |desc| KeyPart::At {
            ty: ColumnType::Int4,
            offset: 9,
            desc,
        };
        let plain = payload(&[int4(false), KeyPart::Null { nulls_first: false }]);
        assert_eq!(plain, [7, 4, 2, 2, 2, 9, 0]);
        let ordered = payload(&[int4(true), KeyPart::Null { nulls_first: true }]);
        assert_eq!(ordered, [7, 4, 2, 2, 0x42, 9, 0x80]);
        for (bad, reason) in [
            (
                vec![7, 4, 2, 1, 0x40],
                "a NULL key part with a descending bit (0x40)",
            ),
            (
                vec![7, 4, 2, 1, 0x82, 9],
                "a key value part with a NULLs-first bit (0x82)",
            ),
            (vec![7, 4, 2, 1, 0x3f, 9], "unknown column type 63"),
        ] {
            assert_eq!(
                BTreeRecord::decode(BTREE_INSERT_ROW, &bad),
                Err(reason.to_string())
            );
        }
    }
}
