//! The undo records of undo tables: what the undo log holds for them (to the log they
//! are opaque bytes).

use super::wal_records::UNDO_TUPLE_HEADER_BYTES as HDR;
use super::*;
use crate::undo_log::UndoLog;

/// Undo record kinds (in memory only).
pub(crate) const UNDO_PATCH: u8 = 1;

pub(crate) const UNDO_WHOLE: u8 = 2;

/// `prev header (17) | kind u8 | off u16 | len u16`, then `len` bytes.
pub(crate) const UNDO_REC_HEADER: usize = HDR + 5;

/// An undo record: the header the row had before the change and what its data area
/// held (the bytes at `off`, or the whole area).
#[derive(Debug, Clone)]
pub struct UndoRecord {
    pub prev: UndoHeader,
    pub whole: bool,
    pub off: usize,
    pub bytes: Vec<u8>,
}

pub(crate) fn encode_undo(
    out: &mut Vec<u8>,
    prev: &UndoHeader,
    whole: bool,
    off: usize,
    bytes: &[u8],
) {
    out.clear();
    out.extend_from_slice(&prev.bytes());
    out.push(if whole { UNDO_WHOLE } else { UNDO_PATCH });
    out.extend_from_slice(&(off as u16).to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads and decodes the undo record at `ptr`.
pub(crate) fn read_undo(log: &dyn UndoLog, ptr: u64) -> std::result::Result<UndoRecord, String> {
    let mut b = log.read(ptr)?;
    if b.len() < UNDO_REC_HEADER {
        return Err(format!("undo record {ptr} is cut short"));
    }
    let h = &b[..UNDO_REC_HEADER];
    let prev = UndoHeader::read(h);
    let whole = h[HDR] == UNDO_WHOLE;
    let off = u16::from_le_bytes([h[HDR + 1], h[HDR + 2]]) as usize;
    let len = u16::from_le_bytes([h[HDR + 3], h[HDR + 4]]) as usize;
    if b.len() != UNDO_REC_HEADER + len {
        return Err(format!(
            "undo record {ptr} has {} bytes, not {len}",
            b.len() - UNDO_REC_HEADER
        ));
    }
    b.drain(..UNDO_REC_HEADER);
    Ok(UndoRecord {
        prev,
        whole,
        off,
        bytes: b,
    })
}
