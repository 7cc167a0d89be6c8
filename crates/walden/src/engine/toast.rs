//! Values stored out of line, as PostgreSQL's TOAST: a row longer than a quarter of a
//! page has its longest text, bytea and jsonb values (outside every index) moved, zstd
//! compressed when that makes them shorter, into the table's toast relation, a heap of
//! chunk rows (`catalog::toast_schema`) made the first time one is needed
//! (`create_toast`). The row keeps a pointer (`schema::External`): the first chunk's
//! row id, the lengths, the method and the CRC-32C of the value. Chunks are inserted
//! last first, each naming the next, so a pointer needs one row id.
//!
//! A chunk lives while a row version points at it, which is what makes it safe to read
//! without judging its visibility (`heap::chunk_row`): the change that stops pointing
//! at a value (an update that replaces it, a delete) deletes its chunks in the same
//! transaction, so they are dead exactly when no snapshot can read a version that
//! points at them, and VACUUM of the table vacuums its toast relation too. An update
//! that keeps a value keeps its pointer: nothing is copied or logged again (an undo
//! table's row keeps it in place; a heap table's new version points at the same
//! chunks). Rolling back needs nothing of its own: the chunks' inserts and deletes are
//! the transaction's, and so undone with it. docs/format.md, "Values stored out of
//! line".

use std::sync::Arc;

use super::transaction::Transaction;
use super::Inner;
use crate::access::slotted::corrupt;
use crate::access::{heap, Change, InsertCursor, Progress};
use crate::catalog::{toast_schema, CatalogRecord, Table};
use crate::error::{Error, Result};
use crate::schema::{ColumnType, External, Schema, Value, VarForm, EXTERNAL, EXTERNAL_BYTES};
use crate::RowId;

/// Values shorter than this stay in their row however long the row is.
const MIN_OUT_OF_LINE: usize = 64;

/// Rows longer than this have values moved out of line: a quarter of a page, as
/// PostgreSQL's `TOAST_TUPLE_THRESHOLD` (four rows fit a page).
pub(super) fn threshold(inner: &Inner) -> usize {
    inner.control.page_size as usize / 4
}

/// Whether values of a column of this type may be stored out of line.
pub(super) fn toastable(ty: ColumnType) -> bool {
    matches!(ty, ColumnType::Text | ColumnType::Bytea | ColumnType::Jsonb)
}

/// Bytes of chunk data in one chunk row: a chunk fills a heap page.
fn chunk_bytes(inner: &Inner) -> usize {
    heap::max_row_bytes(inner.control.page_size as usize) - 32
}

/// A chunk row as stored (`catalog::toast_schema`).
fn chunk_row(seq: i32, next: Option<RowId>, data: &[u8], out: &mut Vec<u8>) {
    let row = [
        Value::Int4(seq),
        next.map_or(Value::Null, |n| Value::Int8(n.page as i64)),
        next.map_or(Value::Null, |n| Value::Int4(n.slot as i32)),
        Value::Bytea(data.to_vec()),
    ];
    out.clear();
    toast_schema().encode_row(&row, out);
}

/// A chunk row read back: its number, the next chunk, its data.
fn read_chunk(
    schema: &Schema,
    row: &[u8],
) -> std::result::Result<(i32, Option<RowId>, Vec<u8>), String> {
    let mut v = schema.decode_row(row)?.into_iter();
    let (Some(seq), Some(page), Some(slot), Some(data)) = (v.next(), v.next(), v.next(), v.next())
    else {
        return Err("a toast chunk of fewer than four columns".into());
    };
    let next = match (page, slot) {
        (Value::Int8(p), Value::Int4(s)) if p >= 0 && (0..=u16::MAX as i32).contains(&s) => {
            Some(RowId {
                page: p as u64,
                slot: s as u16,
            })
        }
        (Value::Null, Value::Null) => None,
        _ => return Err("a toast chunk's link is not a row id".into()),
    };
    match (seq, data) {
        (Value::Int4(seq), Value::Bytea(data)) if !data.is_empty() => Ok((seq, next, data)),
        _ => Err("a toast chunk without a number or data".into()),
    }
}

/// The chunks of a value, in order: (row id, data). Checks their numbers and lengths;
/// a break is a damaged page of the toast relation.
fn chunks(inner: &Inner, toast: &Table, p: &External) -> Result<Vec<(RowId, Vec<u8>)>> {
    let ctx = inner.access_ctx();
    let schema = toast_schema();
    let mut out = Vec::new();
    let mut stored = 0usize;
    let mut at = Some(RowId {
        page: p.page,
        slot: p.slot,
    });
    while let Some(id) = at {
        let row = heap::chunk_row(&ctx, toast, id)?;
        let bad = |reason: String| corrupt(&ctx, id.page, format!("slot {}: {reason}", id.slot));
        let (seq, next, data) = read_chunk(&schema, &row).map_err(bad)?;
        stored += data.len();
        if seq as usize != out.len() || stored > p.stored_len as usize {
            return Err(bad(format!(
                "toast chunk {} does not follow (number {seq}, {stored} of {} bytes)",
                out.len(),
                p.stored_len
            )));
        }
        out.push((id, data));
        at = next;
    }
    if stored != p.stored_len as usize {
        return Err(corrupt(
            &ctx,
            p.page,
            format!(
                "a value stored out of line has {stored} of its {} bytes",
                p.stored_len
            ),
        ));
    }
    Ok(out)
}

/// `t`'s toast relation, which a pointer into it says it has.
fn toast_for(inner: &Inner, t: &Table, p: &External) -> Result<Arc<Table>> {
    t.toast().ok_or_else(|| {
        corrupt(
            &inner.access_ctx(),
            p.page,
            format!(
                "a value of table {:?} stored out of line, and the table has no toast relation",
                t.name()
            ),
        )
    })
}

/// Reads a value stored out of line in `t`'s toast relation, checked against its
/// pointer (lengths, CRC-32C).
pub(super) fn fetch(
    inner: &Inner,
    t: &Table,
    p: &External,
) -> std::result::Result<Vec<u8>, String> {
    let toast = toast_for(inner, t, p).map_err(|e| e.to_string())?;
    let mut stored = Vec::with_capacity(p.stored_len as usize);
    for (_, data) in chunks(inner, &toast, p).map_err(|e| e.to_string())? {
        stored.extend_from_slice(&data);
    }
    let raw = match p.method {
        0 => stored,
        _ => zstd::bulk::decompress(&stored, p.raw_len as usize)
            .map_err(|e| format!("a compressed value stored out of line: {e}"))?,
    };
    if raw.len() != p.raw_len as usize || crc32c::crc32c(&raw) != p.crc {
        return Err(format!(
            "a value stored out of line reads back as {} bytes of another checksum ({p:?})",
            raw.len()
        ));
    }
    Ok(raw)
}

/// The pointers of a row's values stored out of line.
pub(super) fn externals(schema: &Schema, row: &[u8]) -> Vec<External> {
    let Ok(ranges) = schema.value_ranges(row) else {
        return Vec::new();
    };
    schema
        .columns
        .iter()
        .zip(ranges)
        .filter(|(c, _)| c.ty.fixed_width().is_none())
        .filter_map(|(_, r)| external_at(row, r?))
        .collect()
}

/// The pointer of the variable-length value at `range` of a row, if it is stored out
/// of line.
fn external_at(row: &[u8], range: std::ops::Range<usize>) -> Option<External> {
    if !matches!(VarForm::at(row, range.start), Ok(VarForm::External)) {
        return None;
    }
    External::decode(row.get(range.start + 2..range.end)?).ok()
}

/// The table's toast relation, made (and logged, committed at once) if it has none.
fn toast_of(tx: &mut Transaction, t: &Table) -> Result<Arc<Table>> {
    if let Some(x) = t.toast() {
        return Ok(x);
    }
    let inner = tx.db.clone();
    let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
    if let Some(x) = t.toast() {
        return Ok(x);
    }
    if !cat.by_id.get(&t.id).is_some_and(|x| std::ptr::eq(&**x, t)) {
        return Err(Error::NoSuchTable(t.name()));
    }
    let id = cat.next_table_id.max(1);
    let mut mini = Transaction::new(inner.clone(), super::Isolation::ReadCommitted);
    mini.log(&CatalogRecord::CreateToast {
        table: t.id,
        toast: id,
    })?;
    mini.commit_inner()?;
    cat.insert_toast(Table::new_toast(id, t.id, Vec::new()))
        .ok_or_else(|| Error::NoSuchTable(t.name()))
}

/// Stores a value in `t`'s toast relation, compressed if that is shorter; returns its
/// pointer.
fn store(tx: &mut Transaction, t: &Table, value: &[u8]) -> Result<External> {
    let toast = toast_of(tx, t)?;
    let crc = crc32c::crc32c(value);
    // zstd's fastest level: text, hex and JSON shrink by its entropy coder too (LZ4
    // leaves hex digits as they are), at hundreds of MB/s.
    let packed = zstd::bulk::compress(value, 1)
        .map_err(|e| Error::InvalidOption(format!("compressing a value: {e}")))?;
    let (method, stored): (u8, &[u8]) = if packed.len() < value.len() {
        (1, &packed)
    } else {
        (0, value)
    };
    let size = chunk_bytes(&tx.db);
    let mut next: Option<RowId> = None;
    let mut row = Vec::with_capacity(size + 64);
    for (seq, part) in stored.chunks(size).enumerate().rev() {
        chunk_row(seq as i32, next, part, &mut row);
        next = Some(insert_one(tx, &toast, &mut row)?);
    }
    let first =
        next.ok_or_else(|| Error::InvalidOption("an empty value stored out of line".into()))?;
    Ok(External {
        page: first.page,
        slot: first.slot,
        raw_len: value.len() as u32,
        stored_len: stored.len() as u32,
        method,
        crc,
    })
}

/// Inserts one chunk row into a toast relation.
fn insert_one(tx: &mut Transaction, toast: &Table, row: &mut Vec<u8>) -> Result<RowId> {
    let mut once = Some(std::mem::take(row));
    let mut next = |out: &mut Vec<u8>| -> Result<bool> {
        Ok(match once.take() {
            Some(r) => {
                *out = r;
                true
            }
            None => false,
        })
    };
    let ids = tx.write(toast, |access, db, w| {
        let ctx = db.access_ctx();
        let mut cursor = InsertCursor::new(&mut next, w.undo);
        loop {
            match access.insert(&ctx, toast, w, &mut cursor)? {
                Progress::Done => return Ok(cursor.ids),
                Progress::Paused => db.relieve_space(),
            }
        }
    })?;
    ids.first()
        .copied()
        .ok_or_else(|| Error::InvalidOption("a toast chunk was not inserted".into()))
}

/// Deletes a value's chunks (the transaction's row change stopped pointing at it).
pub(super) fn delete(tx: &mut Transaction, t: &Table, p: &External) -> Result<()> {
    let toast = toast_for(&tx.db, t, p)?;
    let mut ids: Vec<RowId> = chunks(&tx.db, &toast, p)?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    // One delete record per page: the chunks sorted by page, each page's slots together.
    ids.sort_unstable_by_key(|id| (id.page, id.slot));
    // As the row change that stopped pointing at them: a savepoint rolled back to
    // keeps them.
    let xid = tx.writer;
    tx.wrote = true;
    let ctx = tx.db.access_ctx();
    for run in ids.chunk_by(|a, b| a.page == b.page) {
        let slots: Vec<u16> = run.iter().map(|id| id.slot).collect();
        heap::delete_chunks(&ctx, &toast, run[0].page, &slots, xid, &mut tx.stats)?;
        tx.db.relieve_space();
    }
    Ok(())
}

/// A row as encoded (values longer than a u16 length in their `LONG` form) made ready
/// for a page: while it is longer than `threshold`, its longest values outside every
/// index go out of line (every `LONG` one must), each reusing the pointer `old` (the
/// version it replaces) has for that column when it holds the same value. Pointers
/// made are pushed to `made`.
pub(super) fn toast_row(
    tx: &mut Transaction,
    t: &Table,
    schema: &Schema,
    row: Vec<u8>,
    old: Option<&[u8]>,
    made: &mut Vec<External>,
) -> Result<Vec<u8>> {
    let limit = threshold(&tx.db);
    if row.len() <= limit {
        return Ok(row);
    }
    let mismatch = |reason: String| Error::SchemaMismatch {
        table: t.name(),
        reason,
    };
    let ranges = schema.value_ranges(&row).map_err(mismatch)?;
    let indexed: Vec<u16> = t
        .index_list()
        .iter()
        .flat_map(|ix| ix.columns.clone())
        .collect();
    // (column, range, form) of each value that may go, longest first.
    let mut movable = Vec::new();
    for (i, (c, r)) in schema.columns.iter().zip(&ranges).enumerate() {
        let Some(r) = r else { continue };
        if !toastable(c.ty) {
            continue;
        }
        let form = VarForm::at(&row, r.start).map_err(mismatch)?;
        let len = match form {
            VarForm::Inline(n) | VarForm::Long(n) => n,
            VarForm::External => continue,
        };
        let long = matches!(form, VarForm::Long(_));
        if long && indexed.contains(&(i as u16)) {
            return Err(Error::RowTooLarge {
                size: row.len(),
                max: heap::max_row_bytes(tx.db.control.page_size as usize),
            });
        }
        if len >= MIN_OUT_OF_LINE && !indexed.contains(&(i as u16)) {
            movable.push((i, r.clone(), form, len, long));
        }
    }
    movable.sort_by_key(|m| std::cmp::Reverse(m.3));
    let mut size = row.len();
    let mut chosen = Vec::new();
    for m in movable {
        if size <= limit && !m.4 {
            break;
        }
        size = size - m.2.encoded_len() + 2 + EXTERNAL_BYTES;
        chosen.push(m);
    }
    if chosen.is_empty() {
        return Ok(row);
    }
    chosen.sort_by_key(|m| m.1.start);
    let old_ranges = old.and_then(|o| schema.value_ranges(o).ok());
    let mut out = Vec::with_capacity(size);
    let mut at = 0;
    for (col, r, form, _, _) in chosen {
        let value = &row[r.start + form.header_len().unwrap_or(2)..r.end];
        let kept = match (old, &old_ranges) {
            (Some(o), Some(or)) => same_value(tx, t, o, or.get(col).cloned().flatten(), value),
            _ => None,
        };
        let p = match kept {
            Some(p) => p,
            None => {
                let p = store(tx, t, value)?;
                made.push(p);
                p
            }
        };
        out.extend_from_slice(&row[at..r.start]);
        out.extend_from_slice(&EXTERNAL.to_le_bytes());
        p.encode(&mut out);
        at = r.end;
    }
    out.extend_from_slice(&row[at..]);
    Ok(out)
}

/// The pointer the old version's value at `range` is, when it is stored out of line
/// and holds `value`.
fn same_value(
    tx: &Transaction,
    t: &Table,
    old: &[u8],
    range: Option<std::ops::Range<usize>>,
    value: &[u8],
) -> Option<External> {
    let p = external_at(old, range?)?;
    if p.raw_len as usize != value.len() || p.crc != crc32c::crc32c(value) {
        return None;
    }
    // The checksum agrees: compare the bytes themselves.
    (fetch(&tx.db, t, &p).ok()? == value).then_some(p)
}

/// What `Transaction::toast_changes` made of a page's changes, by slot: the changes
/// as they are applied when it rewrote one (values moved out of line; None: as given),
/// the values a change lets go once it is applied (its row's pointers the new row does
/// not keep), and those it stored for a change (to let go when the change is not
/// applied).
#[derive(Default)]
pub(super) struct Plan {
    pub changes: Option<Vec<(u16, Change)>>,
    pub gone: Vec<(u16, Vec<External>)>,
    pub made: Vec<(u16, Vec<External>)>,
}

impl Plan {
    /// Every value stored for the changes.
    pub fn made_values(&self) -> Vec<External> {
        self.made
            .iter()
            .flat_map(|(_, m)| m.iter().copied())
            .collect()
    }
}

/// Whether any value of the table may be stored out of line, so that a change must read
/// the row it replaces (its pointers).
pub(super) fn has_toast(t: &Table) -> bool {
    t.toast().is_some_and(|x| x.page_count() > 0)
}
