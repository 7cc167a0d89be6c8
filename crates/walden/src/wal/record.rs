//! WAL records: kinds, the record header, and the payload of each kind.
//!
//! Record layout (format version 1; docs/format.md): `len u32 | crc32c u32 | kind u8 |
//! xid u64 | payload`. `len` counts the whole record. The CRC covers the record's LSN (as 8
//! little-endian bytes, not stored) followed by every record byte after the CRC field, so a
//! stale record at the wrong place never passes.

use crate::codec::{put_string, Reader};
use crate::schema::Schema;

/// Bytes of the record header.
pub const RECORD_HEADER_BYTES: usize = 17;
/// Number of record kinds (array sizes of the accounting).
pub const RECORD_KINDS: usize = 16;

/// The kind of a WAL record (byte 8 of the record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordKind {
    HeapInit = 1,
    HeapInsert = 2,
    HeapDelete = 3,
    HeapUpdateOld = 4,
    HeapPrune = 5,
    Commit = 6,
    Abort = 7,
    CreateTable = 8,
    DropTable = 9,
    PageImage = 10,
    Checkpoint = 11,
    UndoInsert = 12,
    UndoChange = 13,
    UndoRevert = 14,
    UndoOnly = 15,
}

impl RecordKind {
    pub const ALL: [RecordKind; 15] = [
        RecordKind::HeapInit,
        RecordKind::HeapInsert,
        RecordKind::HeapDelete,
        RecordKind::HeapUpdateOld,
        RecordKind::HeapPrune,
        RecordKind::Commit,
        RecordKind::Abort,
        RecordKind::CreateTable,
        RecordKind::DropTable,
        RecordKind::PageImage,
        RecordKind::Checkpoint,
        RecordKind::UndoInsert,
        RecordKind::UndoChange,
        RecordKind::UndoRevert,
        RecordKind::UndoOnly,
    ];

    pub fn from_u8(v: u8) -> Option<RecordKind> {
        RecordKind::ALL.iter().copied().find(|k| *k as u8 == v)
    }

    pub fn name(self) -> &'static str {
        match self {
            RecordKind::HeapInit => "heap_init",
            RecordKind::HeapInsert => "heap_insert",
            RecordKind::HeapDelete => "heap_delete",
            RecordKind::HeapUpdateOld => "heap_update_old",
            RecordKind::HeapPrune => "heap_prune",
            RecordKind::Commit => "commit",
            RecordKind::Abort => "abort",
            RecordKind::CreateTable => "create_table",
            RecordKind::DropTable => "drop_table",
            RecordKind::PageImage => "page_image",
            RecordKind::Checkpoint => "checkpoint",
            RecordKind::UndoInsert => "undo_insert",
            RecordKind::UndoChange => "undo_change",
            RecordKind::UndoRevert => "undo_revert",
            RecordKind::UndoOnly => "undo_only",
        }
    }

    /// True for records that change one data page (their first payload field is the page).
    pub fn is_page_change(self) -> bool {
        matches!(
            self,
            RecordKind::HeapInit
                | RecordKind::HeapInsert
                | RecordKind::HeapDelete
                | RecordKind::HeapUpdateOld
                | RecordKind::HeapPrune
                | RecordKind::PageImage
                | RecordKind::UndoInsert
                | RecordKind::UndoChange
                | RecordKind::UndoRevert
        )
    }
}

const _: () = assert!(RecordKind::ALL.len() < RECORD_KINDS);

/// A decoded record body.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A fresh heap page joins a table.
    HeapInit {
        page: u64,
        table: u32,
    },
    /// Rows inserted into one page by one command: (slot, row bytes) each.
    HeapInsert {
        page: u64,
        cid: u32,
        rows: Vec<(u16, Vec<u8>)>,
    },
    /// A row version deleted (its xmax set to the record's transaction).
    HeapDelete {
        page: u64,
        slot: u16,
    },
    /// A row version replaced: xmax set and the pointer to its successor.
    HeapUpdateOld {
        page: u64,
        slot: u16,
        new_page: u64,
        new_slot: u16,
    },
    /// Dead row versions removed from a page, which is then compacted.
    HeapPrune {
        page: u64,
        slots: Vec<u16>,
    },
    Commit,
    Abort,
    CreateTable {
        table: u32,
        name: String,
        schema: Schema,
        /// 0 heap, 1 undo (absent in format-1 records: heap).
        kind: u8,
    },
    DropTable {
        table: u32,
    },
    /// A whole page, without the free hole between `lower` and `upper`.
    PageImage {
        page: u64,
        lower: u16,
        upper: u16,
        image: Vec<u8>,
    },
    Checkpoint {
        redo_lsn: u64,
        next_xid: u64,
    },
    /// Rows inserted into one page of an undo table by one command.
    UndoInsert {
        page: u64,
        cid: u32,
        rows: Vec<(u16, Vec<u8>)>,
    },
    /// Rows of one page of an undo table changed in place by one command: each op
    /// carries the old and the new bytes of what changed, for redo and for undo.
    UndoChange {
        page: u64,
        cid: u32,
        ops: Vec<ChangeOp>,
    },
    /// A compensation record: the changes of the record at `undone_lsn` (same
    /// transaction) taken back, as absolute page changes.
    UndoRevert {
        page: u64,
        undone_lsn: u64,
        ops: Vec<RevertOp>,
    },
    /// An undo-table record whose page change a page image already carries (full-page
    /// mode): kept for its undo information only, never redone.
    UndoOnly(Box<Record>),
}

/// Bytes of an undo-table tuple header (`xid u48 | cid u32 | undo pointer u48 | flags u8`).
pub const UNDO_TUPLE_HEADER_BYTES: usize = 17;

/// One row changed in place (see `Record::UndoChange`). Offsets are into the tuple's
/// data area (the bytes after its header).
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeOp {
    /// `old` replaced by `new` (same length) at `off`; `flags` (old, new) when the
    /// tuple flags changed too.
    Update {
        slot: u16,
        flags: Option<(u8, u8)>,
        off: u16,
        old: Vec<u8>,
        new: Vec<u8>,
    },
    /// The data area replaced by one of another length (the row grew).
    Resize {
        slot: u16,
        old_flags: u8,
        new_flags: u8,
        old_area: Vec<u8>,
        new_area: Vec<u8>,
    },
    /// The row moved to another page: its first 6 area bytes (`old`) now hold the link.
    Move {
        slot: u16,
        old_flags: u8,
        old: [u8; 6],
        next_page: u32,
        next_slot: u16,
    },
    /// The row marked deleted.
    Delete { slot: u16 },
}

/// One row restored by a compensation record.
#[derive(Debug, Clone, PartialEq)]
pub enum RevertOp {
    /// Set the tuple header and write `bytes` at `off` of the data area.
    Patch {
        slot: u16,
        header: [u8; UNDO_TUPLE_HEADER_BYTES],
        off: u16,
        bytes: Vec<u8>,
    },
    /// Set the tuple header and the whole data area (the tuple shrinks back to it when
    /// the row had grown in place).
    Rewrite {
        slot: u16,
        header: [u8; UNDO_TUPLE_HEADER_BYTES],
        area: Vec<u8>,
    },
    /// Remove the tuple (an insert taken back).
    Remove { slot: u16 },
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes16(out: &mut Vec<u8>, b: &[u8]) {
    put_u16(out, b.len() as u16);
    out.extend_from_slice(b);
}

impl ChangeOp {
    pub fn slot(&self) -> u16 {
        match self {
            ChangeOp::Update { slot, .. }
            | ChangeOp::Resize { slot, .. }
            | ChangeOp::Move { slot, .. }
            | ChangeOp::Delete { slot } => *slot,
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            ChangeOp::Update {
                slot,
                flags,
                off,
                old,
                new,
            } => {
                match flags {
                    None => out.push(1),
                    Some(_) => out.push(4),
                }
                put_u16(out, *slot);
                if let Some((o, n)) = flags {
                    out.push(*o);
                    out.push(*n);
                }
                put_u16(out, *off);
                put_u16(out, old.len() as u16);
                out.extend_from_slice(old);
                out.extend_from_slice(new);
            }
            ChangeOp::Move {
                slot,
                old_flags,
                old,
                next_page,
                next_slot,
            } => {
                out.push(2);
                put_u16(out, *slot);
                out.push(*old_flags);
                out.extend_from_slice(old);
                out.extend_from_slice(&next_page.to_le_bytes());
                put_u16(out, *next_slot);
            }
            ChangeOp::Resize {
                slot,
                old_flags,
                new_flags,
                old_area,
                new_area,
            } => {
                out.push(3);
                put_u16(out, *slot);
                out.push(*old_flags);
                out.push(*new_flags);
                put_bytes16(out, old_area);
                put_bytes16(out, new_area);
            }
            ChangeOp::Delete { slot } => {
                out.push(5);
                put_u16(out, *slot);
            }
        }
    }

    fn decode(r: &mut Reader) -> Result<ChangeOp, String> {
        let tag = r.u8()?;
        let slot = r.u16()?;
        Ok(match tag {
            1 | 4 => {
                let flags = if tag == 4 {
                    Some((r.u8()?, r.u8()?))
                } else {
                    None
                };
                let off = r.u16()?;
                let len = r.u16()? as usize;
                ChangeOp::Update {
                    slot,
                    flags,
                    off,
                    old: r.take(len)?.to_vec(),
                    new: r.take(len)?.to_vec(),
                }
            }
            2 => ChangeOp::Move {
                slot,
                old_flags: r.u8()?,
                old: r.array()?,
                next_page: r.u32()?,
                next_slot: r.u16()?,
            },
            3 => {
                let old_flags = r.u8()?;
                let new_flags = r.u8()?;
                let n = r.u16()? as usize;
                let old_area = r.take(n)?.to_vec();
                let n = r.u16()? as usize;
                ChangeOp::Resize {
                    slot,
                    old_flags,
                    new_flags,
                    old_area,
                    new_area: r.take(n)?.to_vec(),
                }
            }
            5 => ChangeOp::Delete { slot },
            t => return Err(format!("unknown undo change op {t}")),
        })
    }
}

impl RevertOp {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            RevertOp::Patch {
                slot,
                header,
                off,
                bytes,
            } => {
                out.push(1);
                put_u16(out, *slot);
                out.extend_from_slice(header);
                put_u16(out, *off);
                put_bytes16(out, bytes);
            }
            RevertOp::Rewrite { slot, header, area } => {
                out.push(2);
                put_u16(out, *slot);
                out.extend_from_slice(header);
                put_bytes16(out, area);
            }
            RevertOp::Remove { slot } => {
                out.push(3);
                put_u16(out, *slot);
            }
        }
    }

    fn decode(r: &mut Reader) -> Result<RevertOp, String> {
        let tag = r.u8()?;
        let slot = r.u16()?;
        Ok(match tag {
            1 => {
                let header = r.array()?;
                let off = r.u16()?;
                let n = r.u16()? as usize;
                RevertOp::Patch {
                    slot,
                    header,
                    off,
                    bytes: r.take(n)?.to_vec(),
                }
            }
            2 => {
                let header = r.array()?;
                let n = r.u16()? as usize;
                RevertOp::Rewrite {
                    slot,
                    header,
                    area: r.take(n)?.to_vec(),
                }
            }
            3 => RevertOp::Remove { slot },
            t => return Err(format!("unknown undo revert op {t}")),
        })
    }
}

/// A record read from the log, with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    pub lsn: u64,
    pub len: u32,
    pub kind: RecordKind,
    pub xid: u64,
    pub record: Record,
}

/// The CRC of a record at `lsn` whose bytes are `rec` (the CRC field itself excluded).
pub fn record_crc(lsn: u64, rec: &[u8]) -> u32 {
    let c = crc32c::crc32c(&lsn.to_le_bytes());
    crc32c::crc32c_append(c, &rec[8..])
}

/// Starts a record in `out`: reserves the header. Finish with [`finish_record`].
pub fn begin_record(out: &mut Vec<u8>, kind: RecordKind, xid: u64) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0u8; 8]);
    out.push(kind as u8);
    out.extend_from_slice(&xid.to_le_bytes());
    start
}

/// Fills in the length and CRC of the record that begins at `start` and sits at `lsn`.
pub fn finish_record(out: &mut [u8], start: usize, lsn: u64) -> u32 {
    let len = (out.len() - start) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    let crc = record_crc(lsn, &out[start..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    len
}

impl Record {
    pub fn kind(&self) -> RecordKind {
        match self {
            Record::HeapInit { .. } => RecordKind::HeapInit,
            Record::HeapInsert { .. } => RecordKind::HeapInsert,
            Record::HeapDelete { .. } => RecordKind::HeapDelete,
            Record::HeapUpdateOld { .. } => RecordKind::HeapUpdateOld,
            Record::HeapPrune { .. } => RecordKind::HeapPrune,
            Record::Commit => RecordKind::Commit,
            Record::Abort => RecordKind::Abort,
            Record::CreateTable { .. } => RecordKind::CreateTable,
            Record::DropTable { .. } => RecordKind::DropTable,
            Record::PageImage { .. } => RecordKind::PageImage,
            Record::Checkpoint { .. } => RecordKind::Checkpoint,
            Record::UndoInsert { .. } => RecordKind::UndoInsert,
            Record::UndoChange { .. } => RecordKind::UndoChange,
            Record::UndoRevert { .. } => RecordKind::UndoRevert,
            Record::UndoOnly(_) => RecordKind::UndoOnly,
        }
    }

    /// The data page this record changes, if any.
    pub fn page(&self) -> Option<u64> {
        match self {
            Record::HeapInit { page, .. }
            | Record::HeapInsert { page, .. }
            | Record::HeapDelete { page, .. }
            | Record::HeapUpdateOld { page, .. }
            | Record::HeapPrune { page, .. }
            | Record::PageImage { page, .. }
            | Record::UndoInsert { page, .. }
            | Record::UndoChange { page, .. }
            | Record::UndoRevert { page, .. } => Some(*page),
            _ => None,
        }
    }

    /// Appends the payload (everything after the header).
    pub fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Record::HeapInit { page, table } => {
                out.extend_from_slice(&page.to_le_bytes());
                out.extend_from_slice(&table.to_le_bytes());
            }
            Record::HeapInsert { page, cid, rows } | Record::UndoInsert { page, cid, rows } => {
                out.extend_from_slice(&page.to_le_bytes());
                out.extend_from_slice(&cid.to_le_bytes());
                out.extend_from_slice(&(rows.len() as u16).to_le_bytes());
                for (slot, bytes) in rows {
                    out.extend_from_slice(&slot.to_le_bytes());
                    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
                    out.extend_from_slice(bytes);
                }
            }
            Record::HeapDelete { page, slot } => {
                out.extend_from_slice(&page.to_le_bytes());
                out.extend_from_slice(&slot.to_le_bytes());
            }
            Record::HeapUpdateOld {
                page,
                slot,
                new_page,
                new_slot,
            } => {
                out.extend_from_slice(&page.to_le_bytes());
                out.extend_from_slice(&slot.to_le_bytes());
                out.extend_from_slice(&new_page.to_le_bytes());
                out.extend_from_slice(&new_slot.to_le_bytes());
            }
            Record::HeapPrune { page, slots } => {
                out.extend_from_slice(&page.to_le_bytes());
                out.extend_from_slice(&(slots.len() as u16).to_le_bytes());
                for s in slots {
                    out.extend_from_slice(&s.to_le_bytes());
                }
            }
            Record::Commit | Record::Abort => {}
            Record::CreateTable {
                table,
                name,
                schema,
                kind,
            } => {
                out.extend_from_slice(&table.to_le_bytes());
                put_string(out, name);
                schema.encode(out);
                out.push(*kind);
            }
            Record::DropTable { table } => out.extend_from_slice(&table.to_le_bytes()),
            Record::PageImage {
                page,
                lower,
                upper,
                image,
            } => {
                out.extend_from_slice(&page.to_le_bytes());
                out.extend_from_slice(&lower.to_le_bytes());
                out.extend_from_slice(&upper.to_le_bytes());
                out.extend_from_slice(image);
            }
            Record::Checkpoint { redo_lsn, next_xid } => {
                out.extend_from_slice(&redo_lsn.to_le_bytes());
                out.extend_from_slice(&next_xid.to_le_bytes());
            }
            Record::UndoChange { page, cid, ops } => {
                out.extend_from_slice(&page.to_le_bytes());
                out.extend_from_slice(&cid.to_le_bytes());
                put_u16(out, ops.len() as u16);
                for op in ops {
                    op.encode(out);
                }
            }
            Record::UndoRevert {
                page,
                undone_lsn,
                ops,
            } => {
                out.extend_from_slice(&page.to_le_bytes());
                out.extend_from_slice(&undone_lsn.to_le_bytes());
                put_u16(out, ops.len() as u16);
                for op in ops {
                    op.encode(out);
                }
            }
            Record::UndoOnly(inner) => {
                out.push(inner.kind() as u8);
                inner.encode_payload(out);
            }
        }
    }

    /// Decodes a payload of the given kind. Every length is checked.
    pub fn decode_payload(kind: RecordKind, payload: &[u8]) -> Result<Record, String> {
        let mut r = Reader::new(payload, 0);
        let rec = match kind {
            RecordKind::HeapInit => Record::HeapInit {
                page: r.u64()?,
                table: r.u32()?,
            },
            RecordKind::HeapInsert | RecordKind::UndoInsert => {
                let page = r.u64()?;
                let cid = r.u32()?;
                let n = r.u16()? as usize;
                let mut rows = Vec::with_capacity(n.min(payload.len() / 4));
                for _ in 0..n {
                    let slot = r.u16()?;
                    let len = r.u16()? as usize;
                    rows.push((slot, r.take(len)?.to_vec()));
                }
                if kind == RecordKind::HeapInsert {
                    Record::HeapInsert { page, cid, rows }
                } else {
                    Record::UndoInsert { page, cid, rows }
                }
            }
            RecordKind::HeapDelete => Record::HeapDelete {
                page: r.u64()?,
                slot: r.u16()?,
            },
            RecordKind::HeapUpdateOld => Record::HeapUpdateOld {
                page: r.u64()?,
                slot: r.u16()?,
                new_page: r.u64()?,
                new_slot: r.u16()?,
            },
            RecordKind::HeapPrune => {
                let page = r.u64()?;
                let n = r.u16()? as usize;
                let mut slots = Vec::with_capacity(n.min(payload.len() / 2));
                for _ in 0..n {
                    slots.push(r.u16()?);
                }
                Record::HeapPrune { page, slots }
            }
            RecordKind::Commit => Record::Commit,
            RecordKind::Abort => Record::Abort,
            RecordKind::CreateTable => {
                let table = r.u32()?;
                let name = r.string()?;
                let mut at = r.pos();
                let schema = Schema::decode(payload, &mut at)?;
                r = Reader::new(payload, at);
                let kind = if r.remaining() > 0 { r.u8()? } else { 0 };
                if kind > 1 {
                    return Err(format!("unknown table kind {kind}"));
                }
                Record::CreateTable {
                    table,
                    name,
                    schema,
                    kind,
                }
            }
            RecordKind::DropTable => Record::DropTable { table: r.u32()? },
            RecordKind::PageImage => {
                let page = r.u64()?;
                let lower = r.u16()?;
                let upper = r.u16()?;
                if lower > upper {
                    return Err(format!("page image hole {lower}..{upper} is inverted"));
                }
                let image = r.take(r.remaining())?.to_vec();
                Record::PageImage {
                    page,
                    lower,
                    upper,
                    image,
                }
            }
            RecordKind::Checkpoint => Record::Checkpoint {
                redo_lsn: r.u64()?,
                next_xid: r.u64()?,
            },
            RecordKind::UndoChange => {
                let page = r.u64()?;
                let cid = r.u32()?;
                let n = r.u16()? as usize;
                let mut ops = Vec::with_capacity(n.min(payload.len() / 3));
                for _ in 0..n {
                    ops.push(ChangeOp::decode(&mut r)?);
                }
                Record::UndoChange { page, cid, ops }
            }
            RecordKind::UndoRevert => {
                let page = r.u64()?;
                let undone_lsn = r.u64()?;
                let n = r.u16()? as usize;
                let mut ops = Vec::with_capacity(n.min(payload.len() / 3));
                for _ in 0..n {
                    ops.push(RevertOp::decode(&mut r)?);
                }
                Record::UndoRevert {
                    page,
                    undone_lsn,
                    ops,
                }
            }
            RecordKind::UndoOnly => {
                let inner_kind = r.u8()?;
                let inner = match RecordKind::from_u8(inner_kind) {
                    Some(
                        k @ (RecordKind::UndoInsert
                        | RecordKind::UndoChange
                        | RecordKind::UndoRevert),
                    ) => Record::decode_payload(k, r.take(r.remaining())?)?,
                    _ => return Err(format!("undo_only record wraps kind {inner_kind}")),
                };
                Record::UndoOnly(Box::new(inner))
            }
        };
        if r.remaining() != 0 {
            return Err(format!(
                "{} trailing bytes in a {} record",
                r.remaining(),
                kind.name()
            ));
        }
        Ok(rec)
    }
}

/// Decodes one record at the start of `bytes` (which sits at `lsn`). Returns the record
/// and its length, or a reason when the bytes are not a valid record.
pub fn decode_record(bytes: &[u8], lsn: u64) -> Result<LogRecord, String> {
    if bytes.len() < RECORD_HEADER_BYTES {
        return Err(format!("{} bytes cannot hold a record header", bytes.len()));
    }
    let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if (len as usize) < RECORD_HEADER_BYTES || len as usize > bytes.len() {
        return Err(format!(
            "record length {len} out of range ({} bytes left)",
            bytes.len()
        ));
    }
    let rec = &bytes[..len as usize];
    let stored = u32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]);
    let computed = record_crc(lsn, rec);
    if stored != computed {
        return Err(format!(
            "record checksum {stored:#010x}, computed {computed:#010x}"
        ));
    }
    let kind = RecordKind::from_u8(rec[8]).ok_or(format!("unknown record kind {}", rec[8]))?;
    let xid = u64::from_le_bytes(rec[9..17].try_into().map_err(|_| "short header")?);
    let record = Record::decode_payload(kind, &rec[RECORD_HEADER_BYTES..])?;
    Ok(LogRecord {
        lsn,
        len,
        kind,
        xid,
        record,
    })
}

/// Encodes a whole record at `lsn` (used by tests and by callers that build a `Record`).
pub fn encode_record(out: &mut Vec<u8>, rec: &Record, xid: u64, lsn: u64) -> u32 {
    let start = begin_record(out, rec.kind(), xid);
    rec.encode_payload(out);
    finish_record(out, start, lsn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Column, ColumnType};

    fn samples() -> Vec<Record> {
        vec![
            Record::HeapInit { page: 9, table: 2 },
            Record::HeapInsert {
                page: 3,
                cid: 1,
                rows: vec![(0, vec![1, 2, 3]), (5, vec![9; 40])],
            },
            Record::HeapDelete { page: 1, slot: 4 },
            Record::HeapUpdateOld {
                page: 1,
                slot: 4,
                new_page: 8,
                new_slot: 2,
            },
            Record::HeapPrune {
                page: 1,
                slots: vec![1, 3],
            },
            Record::Commit,
            Record::Abort,
            Record::CreateTable {
                table: 4,
                name: "t".into(),
                schema: Schema::new(vec![Column::new("a", ColumnType::Int4)]),
                kind: 1,
            },
            Record::DropTable { table: 4 },
            Record::PageImage {
                page: 2,
                lower: 40,
                upper: 8000,
                image: vec![7; 232],
            },
            Record::Checkpoint {
                redo_lsn: 77,
                next_xid: 5,
            },
            Record::UndoInsert {
                page: 3,
                cid: 2,
                rows: vec![(1, vec![5; 9])],
            },
            Record::UndoChange {
                page: 4,
                cid: 7,
                ops: vec![
                    ChangeOp::Update {
                        slot: 1,
                        flags: None,
                        off: 3,
                        old: vec![1],
                        new: vec![2],
                    },
                    ChangeOp::Update {
                        slot: 2,
                        flags: Some((0, 8)),
                        off: 0,
                        old: vec![1, 2],
                        new: vec![3, 4],
                    },
                    ChangeOp::Resize {
                        slot: 3,
                        old_flags: 0,
                        new_flags: 4,
                        old_area: vec![1; 6],
                        new_area: vec![2; 9],
                    },
                    ChangeOp::Move {
                        slot: 4,
                        old_flags: 0,
                        old: [9; 6],
                        next_page: 12,
                        next_slot: 3,
                    },
                    ChangeOp::Delete { slot: 5 },
                ],
            },
            Record::UndoRevert {
                page: 4,
                undone_lsn: 999,
                ops: vec![
                    RevertOp::Patch {
                        slot: 1,
                        header: [3; UNDO_TUPLE_HEADER_BYTES],
                        off: 3,
                        bytes: vec![1],
                    },
                    RevertOp::Rewrite {
                        slot: 3,
                        header: [0; UNDO_TUPLE_HEADER_BYTES],
                        area: vec![1; 9],
                    },
                    RevertOp::Remove { slot: 6 },
                ],
            },
            Record::UndoOnly(Box::new(Record::UndoChange {
                page: 4,
                cid: 7,
                ops: vec![ChangeOp::Delete { slot: 5 }],
            })),
        ]
    }

    #[test]
    fn every_kind_round_trips() {
        for (i, rec) in samples().into_iter().enumerate() {
            let mut buf = Vec::new();
            let lsn = 1000 + i as u64;
            let len = encode_record(&mut buf, &rec, 42, lsn);
            let got = decode_record(&buf, lsn).expect("decodes");
            assert_eq!(got.record, rec);
            assert_eq!(got.xid, 42);
            assert_eq!(got.len, len);
            assert!(
                decode_record(&buf, lsn + 1).is_err(),
                "LSN is part of the CRC"
            );
        }
    }

    #[test]
    fn truncated_and_flipped_records_are_errors() {
        for rec in samples() {
            let mut buf = Vec::new();
            encode_record(&mut buf, &rec, 1, 0);
            for cut in 0..buf.len() {
                assert!(decode_record(&buf[..cut], 0).is_err());
            }
            for i in 0..buf.len() {
                let mut b = buf.clone();
                b[i] ^= 0x10;
                assert!(
                    decode_record(&b, 0).is_err(),
                    "flip at {i} of {:?}",
                    rec.kind()
                );
            }
        }
    }
}
