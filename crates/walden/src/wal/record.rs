//! WAL records: kinds, the record header, and the payload of each kind.
//!
//! Record layout (WAL format 2; docs/format.md): `len varint | kind u8 | xid varint |
//! payload`, where `len` counts the bytes after itself. Numbers are LEB128 varints;
//! lists of slots are runs; a row update carries one delta that serves redo and undo. A
//! record has no checksum of its own: it lives in a frame whose CRC covers it.

use crate::codec::{put_bytes_v, put_string, put_varint, put_varint_signed, varint_len, Reader};
use crate::schema::Schema;

/// Most bytes a record header takes (`len` 5, kind 1, xid 10).
pub const MAX_RECORD_HEADER_BYTES: usize = 16;
/// Number of record kinds (array sizes of the accounting).
pub const RECORD_KINDS: usize = 24;
/// Most slots one record may name when its lists are expanded (more than any page has).
pub const MAX_RECORD_SLOTS: usize = 1 << 16;

/// The kind of a WAL record (the byte after the length).
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
    HeapUpdateNew = 16,
}

impl RecordKind {
    pub const ALL: [RecordKind; 16] = [
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
        RecordKind::HeapUpdateNew,
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
            RecordKind::HeapUpdateNew => "heap_update_new",
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
                | RecordKind::HeapUpdateNew
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
    /// Row versions of one page deleted by one command (xmax set to the record's
    /// transaction).
    HeapDelete {
        page: u64,
        slots: Vec<u16>,
    },
    /// Row versions of one page replaced by one command: xmax set and the pointer to
    /// each one's successor.
    HeapUpdateOld {
        page: u64,
        links: Vec<UpdateLink>,
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
        /// 0 heap, 1 undo.
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
    /// carries what redo and undo both need (for an update, one XOR delta).
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
    /// New versions of heap rows, put on one page by one command, each written as a
    /// delta against its old version (which redo reads from its page).
    HeapUpdateNew {
        page: u64,
        cid: u32,
        rows: Vec<DeltaRow>,
    },
}

/// One replaced version (see `Record::HeapUpdateOld`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateLink {
    pub slot: u16,
    pub new_page: u64,
    pub new_slot: u16,
}

/// A new row version as a delta against the old one (see `Record::HeapUpdateNew`): the
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

/// Bytes of an undo-table tuple header (`xid u48 | cid u32 | undo pointer u48 | flags u8`).
pub const UNDO_TUPLE_HEADER_BYTES: usize = 17;

/// One row changed in place (see `Record::UndoChange`). Offsets are into the tuple's
/// data area (the bytes after its header).
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeOp {
    /// The bytes at `off` XORed with `xor`: redo turns the old bytes into the new ones,
    /// undo the new into the old, each on the page state the record was logged against.
    /// `flags` (old, new) when the tuple flags changed too.
    Update {
        slot: u16,
        flags: Option<(u8, u8)>,
        off: u16,
        xor: Vec<u8>,
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

/// Slot numbers of one record, each coded against the one before it: a signed varint
/// gap from (previous slot + 1), so ascending neighbours cost one zero byte.
struct SlotCoder {
    next: i64,
}

impl SlotCoder {
    fn new() -> SlotCoder {
        SlotCoder { next: 0 }
    }

    fn put(&mut self, out: &mut Vec<u8>, slot: u16) {
        put_varint_signed(out, slot as i64 - self.next);
        self.next = slot as i64 + 1;
    }

    fn get(&mut self, r: &mut Reader) -> Result<u16, String> {
        let gap = r.varint_signed()?;
        let slot = self
            .next
            .checked_add(gap)
            .filter(|s| (0..=u16::MAX as i64).contains(s))
            .ok_or_else(|| format!("slot gap {gap} leaves the slot range"))?;
        self.next = slot + 1;
        Ok(slot as u16)
    }
}

/// A list of slots as runs: `runs varint`, then per run `gap` (as `SlotCoder`) and
/// `length - 1 varint`.
fn put_slot_runs(out: &mut Vec<u8>, slots: &[u16]) {
    let mut runs: Vec<(u16, u64)> = Vec::new();
    for &s in slots {
        match runs.last_mut() {
            Some((start, len)) if *start as u64 + *len == s as u64 => *len += 1,
            _ => runs.push((s, 1)),
        }
    }
    put_varint(out, runs.len() as u64);
    let mut c = SlotCoder::new();
    for (start, len) in runs {
        c.put(out, start);
        put_varint(out, len - 1);
        c.next = start as i64 + len as i64;
    }
}

fn get_slot_runs(r: &mut Reader) -> Result<Vec<u16>, String> {
    let runs = r.varint()?;
    let mut slots = Vec::new();
    let mut c = SlotCoder::new();
    for _ in 0..runs {
        let start = c.get(r)?;
        let len = r.varint()?.checked_add(1).ok_or("run length overflows")?;
        if start as u64 + len - 1 > u16::MAX as u64 {
            return Err(format!("slot run {start}+{len} leaves the slot range"));
        }
        if slots.len() as u64 + len > MAX_RECORD_SLOTS as u64 {
            return Err("more slots than a page can hold".into());
        }
        slots.extend((0..len).map(|i| start + i as u16));
        c.next = start as i64 + len as i64;
    }
    Ok(slots)
}

/// A count read from a record, checked against what the remaining bytes can hold
/// (each item takes at least `min_item` bytes), so that a bad count cannot allocate.
fn count(r: &mut Reader, min_item: usize) -> Result<usize, String> {
    let n = r.varint()?;
    if n > (r.remaining() / min_item.max(1)) as u64 {
        return Err(format!("{n} items cannot fit in {} bytes", r.remaining()));
    }
    Ok(n as usize)
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
}

/// Ops of an undo change: `entries varint`, then each `tag u8 | slot gap | fields`.
/// Tags: 1 update, 4 update with flags, 2 move, 3 resize, 5 a run of deletes.
fn put_change_ops(out: &mut Vec<u8>, ops: &[ChangeOp]) {
    let mut entries = Vec::with_capacity(16 + ops.len() * 6);
    let mut n = 0u64;
    let mut c = SlotCoder::new();
    let mut i = 0;
    while i < ops.len() {
        n += 1;
        match &ops[i] {
            ChangeOp::Update {
                slot,
                flags,
                off,
                xor,
            } => {
                entries.push(if flags.is_some() { 4 } else { 1 });
                c.put(&mut entries, *slot);
                if let Some((o, n)) = flags {
                    entries.push(*o);
                    entries.push(*n);
                }
                put_varint(&mut entries, *off as u64);
                put_bytes_v(&mut entries, xor);
            }
            ChangeOp::Move {
                slot,
                old_flags,
                old,
                next_page,
                next_slot,
            } => {
                entries.push(2);
                c.put(&mut entries, *slot);
                entries.push(*old_flags);
                entries.extend_from_slice(old);
                put_varint(&mut entries, *next_page as u64);
                put_varint(&mut entries, *next_slot as u64);
            }
            ChangeOp::Resize {
                slot,
                old_flags,
                new_flags,
                old_area,
                new_area,
            } => {
                entries.push(3);
                c.put(&mut entries, *slot);
                entries.push(*old_flags);
                entries.push(*new_flags);
                put_bytes_v(&mut entries, old_area);
                put_bytes_v(&mut entries, new_area);
            }
            ChangeOp::Delete { slot } => {
                let mut len = 1usize;
                while let Some(ChangeOp::Delete { slot: s }) = ops.get(i + len) {
                    if *s as usize != *slot as usize + len {
                        break;
                    }
                    len += 1;
                }
                entries.push(5);
                c.put(&mut entries, *slot);
                put_varint(&mut entries, len as u64 - 1);
                c.next = *slot as i64 + len as i64;
                i += len;
                continue;
            }
        }
        i += 1;
    }
    put_varint(out, n);
    out.extend_from_slice(&entries);
}

fn get_change_ops(r: &mut Reader) -> Result<Vec<ChangeOp>, String> {
    let n = count(r, 3)?;
    let mut ops = Vec::with_capacity(n);
    let mut c = SlotCoder::new();
    for _ in 0..n {
        let tag = r.u8()?;
        let slot = c.get(r)?;
        match tag {
            1 | 4 => {
                let flags = if tag == 4 {
                    Some((r.u8()?, r.u8()?))
                } else {
                    None
                };
                ops.push(ChangeOp::Update {
                    slot,
                    flags,
                    off: r.varint16()?,
                    xor: r.bytes_v()?.to_vec(),
                });
            }
            2 => ops.push(ChangeOp::Move {
                slot,
                old_flags: r.u8()?,
                old: r.array()?,
                next_page: r.varint32()?,
                next_slot: r.varint16()?,
            }),
            3 => {
                let old_flags = r.u8()?;
                let new_flags = r.u8()?;
                let old_area = r.bytes_v()?.to_vec();
                ops.push(ChangeOp::Resize {
                    slot,
                    old_flags,
                    new_flags,
                    old_area,
                    new_area: r.bytes_v()?.to_vec(),
                });
            }
            5 => {
                let len = r.varint()?.checked_add(1).ok_or("run length overflows")?;
                if slot as u64 + len - 1 > u16::MAX as u64 {
                    return Err(format!("delete run {slot}+{len} leaves the slot range"));
                }
                if ops.len() as u64 + len > MAX_RECORD_SLOTS as u64 {
                    return Err("more ops than a page can hold".into());
                }
                ops.extend((0..len).map(|i| ChangeOp::Delete {
                    slot: slot + i as u16,
                }));
                c.next = slot as i64 + len as i64;
            }
            t => return Err(format!("unknown undo change op {t}")),
        }
    }
    Ok(ops)
}

impl RevertOp {
    fn encode(&self, out: &mut Vec<u8>, c: &mut SlotCoder) {
        match self {
            RevertOp::Patch {
                slot,
                header,
                off,
                bytes,
            } => {
                out.push(1);
                c.put(out, *slot);
                out.extend_from_slice(header);
                put_varint(out, *off as u64);
                put_bytes_v(out, bytes);
            }
            RevertOp::Rewrite { slot, header, area } => {
                out.push(2);
                c.put(out, *slot);
                out.extend_from_slice(header);
                put_bytes_v(out, area);
            }
            RevertOp::Remove { slot } => {
                out.push(3);
                c.put(out, *slot);
            }
        }
    }

    fn decode(r: &mut Reader, c: &mut SlotCoder) -> Result<RevertOp, String> {
        let tag = r.u8()?;
        let slot = c.get(r)?;
        Ok(match tag {
            1 => RevertOp::Patch {
                slot,
                header: r.array()?,
                off: r.varint16()?,
                bytes: r.bytes_v()?.to_vec(),
            },
            2 => RevertOp::Rewrite {
                slot,
                header: r.array()?,
                area: r.bytes_v()?.to_vec(),
            },
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

/// Appends a whole record (header and payload parts) to `out`; returns its length.
pub fn put_record(out: &mut Vec<u8>, kind: RecordKind, xid: u64, parts: &[&[u8]]) -> u32 {
    let payload: usize = parts.iter().map(|p| p.len()).sum();
    let body = 1 + varint_len(xid) + payload;
    let start = out.len();
    put_varint(out, body as u64);
    out.push(kind as u8);
    put_varint(out, xid);
    for p in parts {
        out.extend_from_slice(p);
    }
    (out.len() - start) as u32
}

/// Bytes a record with `payload` bytes of payload takes.
pub fn record_len(xid: u64, payload: usize) -> usize {
    let body = 1 + varint_len(xid) + payload;
    varint_len(body as u64) + body
}

/// The length of the record at the start of `bytes`, if its length field is complete.
pub fn peek_record_len(bytes: &[u8]) -> Option<usize> {
    let mut r = Reader::new(bytes, 0);
    let body = r.varint().ok()?;
    usize::try_from(body).ok()?.checked_add(r.pos())
}

/// Builds the payload of an insert record (`HeapInsert`, `UndoInsert`) row by row, for
/// callers that fill a page and log it once it is full.
pub struct InsertBuilder {
    rows: Vec<u8>,
    n: u64,
    coder: SlotCoder,
}

impl Default for InsertBuilder {
    fn default() -> Self {
        InsertBuilder {
            rows: Vec::new(),
            n: 0,
            coder: SlotCoder::new(),
        }
    }
}

impl InsertBuilder {
    pub fn clear(&mut self) {
        self.rows.clear();
        self.n = 0;
        self.coder = SlotCoder::new();
    }

    pub fn push(&mut self, slot: u16, row: &[u8]) {
        self.coder.put(&mut self.rows, slot);
        put_bytes_v(&mut self.rows, row);
        self.n += 1;
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The payload: the same bytes `Record::encode_payload` gives for these rows.
    pub fn finish(&self, page: u64, cid: u32, out: &mut Vec<u8>) {
        out.clear();
        put_varint(out, page);
        put_varint(out, cid as u64);
        put_varint(out, self.n);
        out.extend_from_slice(&self.rows);
    }
}

fn put_rows(out: &mut Vec<u8>, rows: &[(u16, Vec<u8>)]) {
    put_varint(out, rows.len() as u64);
    let mut c = SlotCoder::new();
    for (slot, bytes) in rows {
        c.put(out, *slot);
        put_bytes_v(out, bytes);
    }
}

fn get_rows(r: &mut Reader) -> Result<Vec<(u16, Vec<u8>)>, String> {
    let n = count(r, 2)?;
    let mut rows = Vec::with_capacity(n);
    let mut c = SlotCoder::new();
    for _ in 0..n {
        let slot = c.get(r)?;
        rows.push((slot, r.bytes_v()?.to_vec()));
    }
    Ok(rows)
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
            Record::HeapUpdateNew { .. } => RecordKind::HeapUpdateNew,
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
            | Record::UndoRevert { page, .. }
            | Record::HeapUpdateNew { page, .. } => Some(*page),
            _ => None,
        }
    }

    /// Appends the payload (everything after the header).
    pub fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Record::HeapInit { page, table } => {
                put_varint(out, *page);
                put_varint(out, *table as u64);
            }
            Record::HeapInsert { page, cid, rows } | Record::UndoInsert { page, cid, rows } => {
                put_varint(out, *page);
                put_varint(out, *cid as u64);
                put_rows(out, rows);
            }
            Record::HeapDelete { page, slots } | Record::HeapPrune { page, slots } => {
                put_varint(out, *page);
                put_slot_runs(out, slots);
            }
            Record::HeapUpdateOld { page, links } => {
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
            Record::Commit | Record::Abort => {}
            Record::CreateTable {
                table,
                name,
                schema,
                kind,
            } => {
                put_varint(out, *table as u64);
                put_string(out, name);
                schema.encode(out);
                out.push(*kind);
            }
            Record::DropTable { table } => put_varint(out, *table as u64),
            Record::PageImage {
                page,
                lower,
                upper,
                image,
            } => {
                put_varint(out, *page);
                put_varint(out, *lower as u64);
                put_varint(out, *upper as u64);
                out.extend_from_slice(image);
            }
            Record::Checkpoint { redo_lsn, next_xid } => {
                put_varint(out, *redo_lsn);
                put_varint(out, *next_xid);
            }
            Record::UndoChange { page, cid, ops } => {
                put_varint(out, *page);
                put_varint(out, *cid as u64);
                put_change_ops(out, ops);
            }
            Record::UndoRevert {
                page,
                undone_lsn,
                ops,
            } => {
                put_varint(out, *page);
                put_varint(out, *undone_lsn);
                put_varint(out, ops.len() as u64);
                let mut c = SlotCoder::new();
                for op in ops {
                    op.encode(out, &mut c);
                }
            }
            Record::UndoOnly(inner) => {
                out.push(inner.kind() as u8);
                inner.encode_payload(out);
            }
            Record::HeapUpdateNew { page, cid, rows } => {
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

    /// Decodes a payload of the given kind. Every length is checked.
    pub fn decode_payload(kind: RecordKind, payload: &[u8]) -> Result<Record, String> {
        let mut r = Reader::new(payload, 0);
        let rec = match kind {
            RecordKind::HeapInit => Record::HeapInit {
                page: r.varint()?,
                table: r.varint32()?,
            },
            RecordKind::HeapInsert | RecordKind::UndoInsert => {
                let page = r.varint()?;
                let cid = r.varint32()?;
                let rows = get_rows(&mut r)?;
                if kind == RecordKind::HeapInsert {
                    Record::HeapInsert { page, cid, rows }
                } else {
                    Record::UndoInsert { page, cid, rows }
                }
            }
            RecordKind::HeapDelete => Record::HeapDelete {
                page: r.varint()?,
                slots: get_slot_runs(&mut r)?,
            },
            RecordKind::HeapPrune => Record::HeapPrune {
                page: r.varint()?,
                slots: get_slot_runs(&mut r)?,
            },
            RecordKind::HeapUpdateOld => {
                let page = r.varint()?;
                let n = count(&mut r, 3)?;
                let mut links = Vec::with_capacity(n);
                let mut c = SlotCoder::new();
                let mut new_c = SlotCoder::new();
                let mut prev_page = page as i64;
                for _ in 0..n {
                    let slot = c.get(&mut r)?;
                    let new_page = page_from_delta(prev_page, r.varint_signed()?)?;
                    prev_page = new_page as i64;
                    links.push(UpdateLink {
                        slot,
                        new_page,
                        new_slot: new_c.get(&mut r)?,
                    });
                }
                Record::HeapUpdateOld { page, links }
            }
            RecordKind::Commit => Record::Commit,
            RecordKind::Abort => Record::Abort,
            RecordKind::CreateTable => {
                let table = r.varint32()?;
                let name = r.string()?;
                let mut at = r.pos();
                let schema = Schema::decode(payload, &mut at)?;
                r = Reader::new(payload, at);
                let kind = r.u8()?;
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
            RecordKind::DropTable => Record::DropTable {
                table: r.varint32()?,
            },
            RecordKind::PageImage => {
                let page = r.varint()?;
                let lower = r.varint16()?;
                let upper = r.varint16()?;
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
                redo_lsn: r.varint()?,
                next_xid: r.varint()?,
            },
            RecordKind::UndoChange => Record::UndoChange {
                page: r.varint()?,
                cid: r.varint32()?,
                ops: get_change_ops(&mut r)?,
            },
            RecordKind::UndoRevert => {
                let page = r.varint()?;
                let undone_lsn = r.varint()?;
                let n = count(&mut r, 2)?;
                let mut ops = Vec::with_capacity(n);
                let mut c = SlotCoder::new();
                for _ in 0..n {
                    ops.push(RevertOp::decode(&mut r, &mut c)?);
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
            RecordKind::HeapUpdateNew => {
                let page = r.varint()?;
                let cid = r.varint32()?;
                let n = count(&mut r, 6)?;
                let mut rows = Vec::with_capacity(n);
                let mut c = SlotCoder::new();
                let mut old_c = SlotCoder::new();
                let mut prev_page = page as i64;
                for _ in 0..n {
                    let slot = c.get(&mut r)?;
                    let old_page = page_from_delta(prev_page, r.varint_signed()?)?;
                    prev_page = old_page as i64;
                    rows.push(DeltaRow {
                        slot,
                        old_page,
                        old_slot: old_c.get(&mut r)?,
                        prefix: r.varint16()?,
                        suffix: r.varint16()?,
                        middle: r.bytes_v()?.to_vec(),
                    });
                }
                Record::HeapUpdateNew { page, cid, rows }
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

fn page_from_delta(prev: i64, delta: i64) -> Result<u64, String> {
    prev.checked_add(delta)
        .filter(|p| *p >= 0 && *p < u32::MAX as i64)
        .map(|p| p as u64)
        .ok_or_else(|| format!("page delta {delta} leaves the page range"))
}

/// Decodes one record at the start of `bytes` (which sits at `lsn`). Returns the record
/// and its length, or a reason when the bytes are not a valid record.
pub fn decode_record(bytes: &[u8], lsn: u64) -> Result<LogRecord, String> {
    let mut r = Reader::new(bytes, 0);
    let body = r.varint().map_err(|e| format!("record length: {e}"))?;
    if body < 2 || body > r.remaining() as u64 {
        return Err(format!(
            "record length {body} out of range ({} bytes left)",
            r.remaining()
        ));
    }
    let len = r.pos() + body as usize;
    let mut r = Reader::new(&bytes[..len], r.pos());
    let k = r.u8()?;
    let kind = RecordKind::from_u8(k).ok_or(format!("unknown record kind {k}"))?;
    let xid = r.varint()?;
    let record = Record::decode_payload(kind, &bytes[r.pos()..len])?;
    Ok(LogRecord {
        lsn,
        len: len as u32,
        kind,
        xid,
        record,
    })
}

/// Encodes a whole record (used by tests and by callers that build a `Record`). The
/// `lsn` is where it goes; the encoding does not depend on it.
pub fn encode_record(out: &mut Vec<u8>, rec: &Record, xid: u64, lsn: u64) -> u32 {
    let _ = lsn;
    let mut payload = Vec::new();
    rec.encode_payload(&mut payload);
    put_record(out, rec.kind(), xid, &[&payload])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Column, ColumnType};

    pub(crate) fn samples() -> Vec<Record> {
        vec![
            Record::HeapInit { page: 9, table: 2 },
            Record::HeapInsert {
                page: 3,
                cid: 1,
                rows: vec![(0, vec![1, 2, 3]), (5, vec![9; 40]), (2, vec![])],
            },
            Record::HeapDelete {
                page: 1,
                slots: vec![4, 5, 6, 9, 2, 65535],
            },
            Record::HeapUpdateOld {
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
                        xor: vec![1],
                    },
                    ChangeOp::Update {
                        slot: 2,
                        flags: Some((0, 8)),
                        off: 0,
                        xor: vec![3, 4],
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
                    ChangeOp::Delete { slot: 6 },
                    ChangeOp::Delete { slot: 7 },
                    ChangeOp::Delete { slot: 1 },
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
            Record::HeapUpdateNew {
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
            },
        ]
    }

    #[test]
    fn every_kind_round_trips() {
        let kinds: std::collections::HashSet<RecordKind> =
            samples().iter().map(|r| r.kind()).collect();
        assert_eq!(kinds.len(), RecordKind::ALL.len(), "a sample of every kind");
        for (i, rec) in samples().into_iter().enumerate() {
            for xid in [0u64, 42, 1 << 47] {
                let mut buf = Vec::new();
                let lsn = 1000 + i as u64;
                let len = encode_record(&mut buf, &rec, xid, lsn);
                assert_eq!(len as usize, buf.len());
                assert_eq!(peek_record_len(&buf), Some(buf.len()));
                let mut payload = Vec::new();
                rec.encode_payload(&mut payload);
                assert_eq!(record_len(xid, payload.len()), buf.len());
                let got = decode_record(&buf, lsn).expect("decodes");
                assert_eq!(got.record, rec);
                assert_eq!(got.xid, xid);
                assert_eq!(got.len, len);
                assert_eq!(got.lsn, lsn);
            }
        }
    }

    #[test]
    fn truncated_records_are_errors_and_flipped_ones_never_panic() {
        for rec in samples() {
            let mut buf = Vec::new();
            encode_record(&mut buf, &rec, 1, 0);
            for cut in 0..buf.len() {
                assert!(
                    decode_record(&buf[..cut], 0).is_err(),
                    "{:?} cut {cut}",
                    rec.kind()
                );
            }
            for i in 0..buf.len() {
                for bit in 0..8 {
                    let mut b = buf.clone();
                    b[i] ^= 1 << bit;
                    // The frame's CRC rejects flipped bytes before records are decoded;
                    // the decoder itself must still never panic or over-allocate.
                    let _ = decode_record(&b, 0);
                }
            }
        }
    }

    #[test]
    fn insert_builder_matches_the_record_encoding() {
        let rows = vec![(3u16, vec![1u8; 30]), (4, vec![2; 300]), (9, vec![])];
        let mut b = InsertBuilder::default();
        for (slot, row) in &rows {
            b.push(*slot, row);
        }
        let mut built = Vec::new();
        b.finish(70000, 5, &mut built);
        let mut encoded = Vec::new();
        Record::HeapInsert {
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
    fn compact_encoding_sizes() {
        // A commit: length, kind, xid.
        let mut b = Vec::new();
        assert_eq!(encode_record(&mut b, &Record::Commit, 300, 0), 4);
        // 60 deletes on one page: one run.
        let rec = Record::HeapDelete {
            page: 5000,
            slots: (0..60).collect(),
        };
        let mut b = Vec::new();
        assert!(encode_record(&mut b, &rec, 300, 0) <= 10, "{}", b.len());
        let rec = Record::UndoChange {
            page: 5000,
            cid: 1,
            ops: (0..60).map(|slot| ChangeOp::Delete { slot }).collect(),
        };
        let mut b = Vec::new();
        assert!(encode_record(&mut b, &rec, 300, 0) <= 12, "{}", b.len());
        // An update of one byte of each of 60 rows: 4 bytes a row.
        let rec = Record::UndoChange {
            page: 5000,
            cid: 1,
            ops: (0..60)
                .map(|slot| ChangeOp::Update {
                    slot,
                    flags: None,
                    off: 4,
                    xor: vec![1],
                })
                .collect(),
        };
        let mut b = Vec::new();
        assert!(
            encode_record(&mut b, &rec, 300, 0) <= 60 * 5 + 10,
            "{}",
            b.len()
        );
    }

    #[test]
    fn a_count_larger_than_the_bytes_is_an_error_not_an_allocation() {
        let mut p = Vec::new();
        put_varint(&mut p, 1);
        put_varint(&mut p, 1);
        put_varint(&mut p, u32::MAX as u64);
        assert!(Record::decode_payload(RecordKind::HeapInsert, &p).is_err());
        let mut p = Vec::new();
        put_varint(&mut p, 1);
        put_varint(&mut p, 1 << 40);
        assert!(Record::decode_payload(RecordKind::HeapDelete, &p).is_err());
        // Runs that together name more slots than a page has.
        let mut p = Vec::new();
        put_varint(&mut p, 1);
        put_varint(&mut p, 1000);
        for _ in 0..1000 {
            put_varint_signed(&mut p, -65536);
            put_varint(&mut p, 65535);
        }
        assert!(Record::decode_payload(RecordKind::HeapPrune, &p).is_err());
    }

    mod fuzz {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(crate::testing::proptest_cases()))]

            /// Random bytes: an error or a record, never a panic; a record decoded from
            /// them encodes to a record that decodes the same.
            #[test]
            fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
                if let Ok(rec) = decode_record(&bytes, 0) {
                    prop_assert!(rec.len as usize <= bytes.len());
                    let mut again = Vec::new();
                    encode_record(&mut again, &rec.record, rec.xid, 0);
                    let back = decode_record(&again, 0).expect("re-encoded record decodes");
                    prop_assert_eq!(back.record, rec.record);
                }
                for kind in RecordKind::ALL {
                    let _ = Record::decode_payload(kind, &bytes);
                }
            }

            /// A valid record with random damage: never a panic.
            #[test]
            fn damaged_records_never_panic(
                which in 0usize..16,
                at in any::<prop::sample::Index>(),
                byte in any::<u8>(),
                cut in any::<prop::sample::Index>(),
            ) {
                let samples = super::samples();
                let rec = &samples[which % samples.len()];
                let mut buf = Vec::new();
                encode_record(&mut buf, rec, 7, 0);
                let i = at.index(buf.len());
                buf[i] = byte;
                let _ = decode_record(&buf, 0);
                let _ = decode_record(&buf[..cut.index(buf.len())], 0);
            }
        }
    }
}
