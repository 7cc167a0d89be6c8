//! The undo table's WAL records (rows inserted, rows changed in place, compensation
//! records that take changes back): their payloads, their description and their redo.
//! These records also serve crash recovery's rollback, so in full-page mode the WAL keeps
//! their payload beside a page image (`KEEP_WITH_IMAGE`).

use super::change::apply_change;
use super::rollback::apply_revert;
use super::*;
use crate::access::slotted;
use crate::buffer::Fetch;
use crate::codec::{put_bytes_v, put_varint, Reader};
use crate::wal::payload::{
    count, finish, get_rows, put_insert, Payload, SlotCoder, MAX_RECORD_SLOTS,
};
use crate::wal::record::{CARRIES_ROWS, CHANGES_PAGE, KEEP_WITH_IMAGE};
use crate::wal::{LogRecord, RecordOwner, RecordType, RedoCtx};

const FLAGS: u8 = CHANGES_PAGE | KEEP_WITH_IMAGE;
/// Rows inserted into one page by one command: `page | cid | rows`.
pub const UNDO_INSERT: RecordType = RecordType::new(12, "undo_insert", FLAGS | CARRIES_ROWS);
/// Rows of one page changed in place by one command: `page | cid | ops`.
pub const UNDO_CHANGE: RecordType = RecordType::new(13, "undo_change", FLAGS);
/// A compensation record: `page | undone_lsn | ops`.
pub const UNDO_REVERT: RecordType = RecordType::new(14, "undo_revert", FLAGS);
/// One row of one page updated in place by one command, its tuple flags unchanged (the
/// commonest change: an `undo_change` of one plain update, three bytes shorter):
/// `page | cid | slot | off | xor` (the XOR is the rest of the payload).
pub const UNDO_UPDATE: RecordType = RecordType::new(40, "undo_update", FLAGS);

/// Every record type of the undo table.
const TYPES: [RecordType; 4] = [UNDO_INSERT, UNDO_CHANGE, UNDO_REVERT, UNDO_UPDATE];

/// Bytes of an undo-table tuple header (`xid u48 | cid u32 | undo pointer u48 | flags u8`).
pub const UNDO_TUPLE_HEADER_BYTES: usize = 17;

/// An undo-table record.
#[derive(Debug, Clone, PartialEq)]
pub enum UndoTableRecord {
    /// Rows inserted into one page by one command.
    Insert {
        page: u64,
        cid: u32,
        rows: Vec<(u16, Vec<u8>)>,
    },
    /// Rows of one page changed in place by one command: each op carries what redo and
    /// undo both need (for an update, one XOR delta).
    Change {
        page: u64,
        cid: u32,
        ops: Vec<ChangeOp>,
    },
    /// A compensation record: the changes of the record at `undone_lsn` (same
    /// transaction) taken back, as absolute page changes.
    Revert {
        page: u64,
        undone_lsn: u64,
        ops: Vec<RevertOp>,
    },
}

/// One row changed in place (see `UndoTableRecord::Change`). Offsets are into the tuple's
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

fn get_change_ops(r: &mut Reader) -> std::result::Result<Vec<ChangeOp>, String> {
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
                if (slot as u64)
                    .checked_add(len - 1)
                    .is_none_or(|last| last > u16::MAX as u64)
                {
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

    fn decode(r: &mut Reader, c: &mut SlotCoder) -> std::result::Result<RevertOp, String> {
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

/// The one op of `ops` when it is a plain update (flags unchanged): what `undo_update`
/// carries.
fn one_plain_update(ops: &[ChangeOp]) -> Option<(u16, u16, &[u8])> {
    match ops {
        [ChangeOp::Update {
            slot,
            flags: None,
            off,
            xor,
        }] => Some((*slot, *off, xor)),
        _ => None,
    }
}

impl Payload for UndoTableRecord {
    fn record_type(&self) -> RecordType {
        match self {
            UndoTableRecord::Insert { .. } => UNDO_INSERT,
            UndoTableRecord::Change { ops, .. } if one_plain_update(ops).is_some() => UNDO_UPDATE,
            UndoTableRecord::Change { .. } => UNDO_CHANGE,
            UndoTableRecord::Revert { .. } => UNDO_REVERT,
        }
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            UndoTableRecord::Insert { page, cid, rows } => put_insert(out, *page, *cid, rows),
            UndoTableRecord::Change { page, cid, ops } => {
                put_varint(out, *page);
                put_varint(out, *cid as u64);
                match one_plain_update(ops) {
                    Some((slot, off, xor)) => {
                        put_varint(out, slot as u64);
                        put_varint(out, off as u64);
                        out.extend_from_slice(xor);
                    }
                    None => put_change_ops(out, ops),
                }
            }
            UndoTableRecord::Revert {
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
        }
    }
}

impl UndoTableRecord {
    /// Decodes a payload of type `t`. Every length is checked.
    pub fn decode(t: RecordType, payload: &[u8]) -> std::result::Result<UndoTableRecord, String> {
        let mut r = Reader::new(payload, 0);
        let page = r.varint()?;
        let rec = match t.code {
            c if c == UNDO_INSERT.code => UndoTableRecord::Insert {
                page,
                cid: r.varint32()?,
                rows: get_rows(&mut r)?,
            },
            c if c == UNDO_CHANGE.code => UndoTableRecord::Change {
                page,
                cid: r.varint32()?,
                ops: get_change_ops(&mut r)?,
            },
            c if c == UNDO_UPDATE.code => {
                let cid = r.varint32()?;
                let slot = r.varint16()?;
                let off = r.varint16()?;
                let xor = r.take(r.remaining())?.to_vec();
                UndoTableRecord::Change {
                    page,
                    cid,
                    ops: vec![ChangeOp::Update {
                        slot,
                        flags: None,
                        off,
                        xor,
                    }],
                }
            }
            c if c == UNDO_REVERT.code => {
                let undone_lsn = r.varint()?;
                let n = count(&mut r, 2)?;
                let mut ops = Vec::with_capacity(n);
                let mut c = SlotCoder::new();
                for _ in 0..n {
                    ops.push(RevertOp::decode(&mut r, &mut c)?);
                }
                UndoTableRecord::Revert {
                    page,
                    undone_lsn,
                    ops,
                }
            }
            c => return Err(format!("record code {c} is not the undo table's")),
        };
        finish(&r, t)?;
        Ok(rec)
    }

    /// The page the record changes.
    pub fn page(&self) -> u64 {
        match self {
            UndoTableRecord::Insert { page, .. }
            | UndoTableRecord::Change { page, .. }
            | UndoTableRecord::Revert { page, .. } => *page,
        }
    }

    /// The undo-table record `rec` carries, itself or kept in an `UNDO_ONLY` record;
    /// None for any other record.
    pub fn of(rec: &LogRecord) -> std::result::Result<Option<UndoTableRecord>, String> {
        let (t, payload) = if rec.rtype == crate::wal::record::UNDO_ONLY {
            let (code, payload) = crate::wal::record::split_kept(&rec.payload)?;
            match TYPES.into_iter().find(|t| t.code == code) {
                Some(t) => (t, payload),
                None => return Ok(None),
            }
        } else if TYPES.contains(&rec.rtype) {
            (rec.rtype, &rec.payload[..])
        } else {
            return Ok(None);
        };
        UndoTableRecord::decode(t, payload).map(Some)
    }
}

/// The owner of the undo-table records.
pub struct UndoTableOwner;

impl RecordOwner for UndoTableOwner {
    fn name(&self) -> &'static str {
        "undo_table"
    }

    fn types(&self) -> &'static [RecordType] {
        &TYPES
    }

    fn check(&self, rec: &LogRecord) -> std::result::Result<(), String> {
        UndoTableRecord::decode(rec.rtype, &rec.payload).map(|_| ())
    }

    fn describe(&self, rec: &LogRecord) -> std::result::Result<String, String> {
        Ok(match UndoTableRecord::decode(rec.rtype, &rec.payload)? {
            UndoTableRecord::Insert { page, cid, rows } => {
                let bytes: usize = rows.iter().map(|(_, r)| r.len()).sum();
                format!("page {page} cid {cid} rows {} ({bytes} bytes)", rows.len())
            }
            UndoTableRecord::Change { page, cid, ops } => {
                let mut n = [0usize; 4];
                for op in ops {
                    n[match op {
                        ChangeOp::Update { .. } => 0,
                        ChangeOp::Resize { .. } => 1,
                        ChangeOp::Move { .. } => 2,
                        ChangeOp::Delete { .. } => 3,
                    }] += 1;
                }
                format!(
                    "page {page} cid {cid} updated {} resized {} moved {} deleted {}",
                    n[0], n[1], n[2], n[3]
                )
            }
            UndoTableRecord::Revert {
                page,
                undone_lsn,
                ops,
            } => format!("page {page} undoes lsn {undone_lsn} rows {}", ops.len()),
        })
    }

    /// Applies an undo-table record during recovery unless the page already holds it.
    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> Result<()> {
        let decoded =
            UndoTableRecord::decode(rec.rtype, &rec.payload).map_err(|r| ctx.corrupt(rec, r))?;
        let xid = rec.xid;
        ctx.redo_page(rec, Fetch::Read, |g, _| match &decoded {
            UndoTableRecord::Insert { cid, rows, .. } => {
                slotted::insert_at_slots(g, rows, xid, *cid, &build_tuple)
            }
            UndoTableRecord::Change { cid, ops, .. } => ops
                .iter()
                .try_for_each(|op| apply_change(g, op, xid, *cid, 0)),
            UndoTableRecord::Revert { ops, .. } => apply_revert(g, ops),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wal::payload::{check_codec, encode_record};

    /// A record of each type (also the registry's fuzz samples).
    pub(crate) fn samples() -> Vec<UndoTableRecord> {
        vec![
            UndoTableRecord::Insert {
                page: 3,
                cid: 2,
                rows: vec![(1, vec![5; 9])],
            },
            UndoTableRecord::Change {
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
            // One plain update: written as `undo_update`.
            UndoTableRecord::Change {
                page: 70_000,
                cid: 3,
                ops: vec![ChangeOp::Update {
                    slot: 200,
                    flags: None,
                    off: 9,
                    xor: vec![0x80, 0, 7],
                }],
            },
            UndoTableRecord::Revert {
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
        ]
    }

    #[test]
    fn undo_table_records_round_trip() {
        check_codec(&samples(), UndoTableRecord::decode);
    }

    /// One plain update is an `undo_update`, three bytes shorter than the same change as
    /// an `undo_change`, and decodes to the same record; an update that changes the
    /// tuple's flags, or two updates, stay `undo_change`.
    #[test]
    fn one_plain_update_is_written_shorter() {
        let one = &samples()[2];
        assert_eq!(one.record_type(), UNDO_UPDATE);
        let mut short = Vec::new();
        one.encode_payload(&mut short);
        let UndoTableRecord::Change { page, cid, ops } = one else {
            panic!("{one:?}")
        };
        let mut long = Vec::new();
        put_varint(&mut long, *page);
        put_varint(&mut long, *cid as u64);
        put_change_ops(&mut long, ops);
        assert_eq!(long.len(), short.len() + 3);
        assert_eq!(&UndoTableRecord::decode(UNDO_CHANGE, &long).unwrap(), one);
        assert_eq!(&UndoTableRecord::decode(UNDO_UPDATE, &short).unwrap(), one);
        // An empty XOR is the rest of the payload, empty.
        let empty = UndoTableRecord::Change {
            page: 1,
            cid: 0,
            ops: vec![ChangeOp::Update {
                slot: 0,
                flags: None,
                off: 0,
                xor: vec![],
            }],
        };
        let mut b = Vec::new();
        empty.encode_payload(&mut b);
        assert_eq!(UndoTableRecord::decode(UNDO_UPDATE, &b).unwrap(), empty);
        assert_eq!(samples()[1].record_type(), UNDO_CHANGE);
        let flagged = UndoTableRecord::Change {
            page: 1,
            cid: 0,
            ops: vec![ChangeOp::Update {
                slot: 0,
                flags: Some((0, 8)),
                off: 0,
                xor: vec![1],
            }],
        };
        assert_eq!(flagged.record_type(), UNDO_CHANGE);
        // Truncated: the slot or offset missing is an error, never a panic.
        for cut in 0..short.len().min(5) {
            let _ = UndoTableRecord::decode(UNDO_UPDATE, &short[..cut]);
        }
        assert!(UndoTableRecord::decode(UNDO_UPDATE, &short[..2]).is_err());
    }

    #[test]
    fn a_kept_record_is_found_inside_undo_only() {
        let rec = &samples()[1];
        let mut payload = vec![UNDO_CHANGE.code];
        rec.encode_payload(&mut payload);
        let log = LogRecord {
            lsn: 5,
            len: 0,
            rtype: crate::wal::record::UNDO_ONLY,
            xid: 3,
            payload,
        };
        assert_eq!(UndoTableRecord::of(&log).unwrap().as_ref(), Some(rec));
        let other = LogRecord {
            payload: vec![crate::txn::COMMIT.code],
            ..log
        };
        assert_eq!(UndoTableRecord::of(&other).unwrap(), None);
    }

    #[test]
    fn compact_encoding_sizes() {
        let rec = UndoTableRecord::Change {
            page: 5000,
            cid: 1,
            ops: (0..60).map(|slot| ChangeOp::Delete { slot }).collect(),
        };
        let mut b = Vec::new();
        assert!(encode_record(&mut b, &rec, 300) <= 12, "{}", b.len());
        // An update of one byte of each of 60 rows: 4 bytes a row.
        let rec = UndoTableRecord::Change {
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
            encode_record(&mut b, &rec, 300) <= 60 * 5 + 10,
            "{}",
            b.len()
        );
    }
}
