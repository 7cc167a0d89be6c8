//! The record header, record types, and the WAL's own records (page images, checkpoints,
//! payloads kept beside a page image).
//!
//! Record layout (unchanged since WAL format 2; docs/format.md): `len varint | code u8 | xid varint |
//! payload`, where `len` counts the bytes after itself. The code names the record type;
//! each type belongs to one owner (`wal::owner`), which alone knows its payload. A record
//! has no checksum of its own: it lives in a frame whose CRC covers it.

use crate::codec::{put_varint, varint_len, Reader};
use crate::stats::RECORD_CODES;
use crate::wal::payload::{finish, Payload};

/// Most bytes a record header takes (`len` 5, code 1, xid 10).
pub const MAX_RECORD_HEADER_BYTES: usize = 16;

/// The record's payload begins with the number of the one data page it changes.
pub const CHANGES_PAGE: u8 = 1;
/// Redo writes the page whole (it needs no page image before it, and its page may be
/// new).
pub const WILL_INIT: u8 = 2;
/// Recovery needs the payload even when a page image replaces the record (full-page
/// mode): it is then kept in an `UNDO_ONLY` record after the image.
pub const KEEP_WITH_IMAGE: u8 = 4;
/// The record makes its page anew from other pages (a B-tree split's right page): like
/// `WILL_INIT` it may name a page not yet allocated, but redo reads the page first (it
/// skips a page that is newer) and full-page mode logs an image in its place.
pub const NEW_PAGE: u8 = 8;
/// The payload is an insert payload (`page varint | cid varint | rows`, the table kinds'
/// shared layout): recovery keeps the rows of each transaction's latest such record, for
/// the `btree_insert_row` records after it that take their key from one of those rows
/// (docs/recovery.md rule 31).
pub const CARRIES_ROWS: u8 = 16;

/// A record type: the code byte after the length (global, stable on disk), a name, and
/// the flags the WAL core acts on. Two types are the same when their codes are (no code
/// belongs to two types: `wal::Owners`), so comparing them is one byte compare.
#[derive(Debug, Clone, Copy)]
pub struct RecordType {
    pub code: u8,
    pub name: &'static str,
    pub flags: u8,
}

impl PartialEq for RecordType {
    fn eq(&self, other: &RecordType) -> bool {
        self.code == other.code
    }
}

impl Eq for RecordType {}

impl std::hash::Hash for RecordType {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.code.hash(state);
    }
}

impl RecordType {
    pub const fn new(code: u8, name: &'static str, flags: u8) -> RecordType {
        assert!((code as usize) < RECORD_CODES && code != 0);
        RecordType { code, name, flags }
    }

    pub fn changes_page(self) -> bool {
        self.flags & CHANGES_PAGE != 0
    }

    pub fn will_init(self) -> bool {
        self.flags & WILL_INIT != 0
    }

    pub fn keep_with_image(self) -> bool {
        self.flags & KEEP_WITH_IMAGE != 0
    }

    pub fn carries_rows(self) -> bool {
        self.flags & CARRIES_ROWS != 0
    }

    /// Its page may be one past those allocated when the log was read from (`WILL_INIT`
    /// or `NEW_PAGE`).
    pub fn may_allocate(self) -> bool {
        self.flags & (WILL_INIT | NEW_PAGE) != 0
    }
}

/// A whole page, without its free hole.
pub const PAGE_IMAGE: RecordType = RecordType::new(10, "page_image", CHANGES_PAGE | WILL_INIT);
/// A checkpoint began: its redo point and the next transaction id.
pub const CHECKPOINT: RecordType = RecordType::new(11, "checkpoint", 0);
/// The payload of a `KEEP_WITH_IMAGE` record whose page change the page image before it
/// carries: `code u8 | payload`. Never redone; read for undo.
pub const UNDO_ONLY: RecordType = RecordType::new(15, "undo_only", 0);

/// A record read from the log, with its position; the payload is the owner's to decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub lsn: u64,
    pub len: u32,
    pub rtype: RecordType,
    pub xid: u64,
    pub payload: Vec<u8>,
}

impl LogRecord {
    /// The LSN just past the record (what a page it changed holds once it is applied).
    pub fn end_lsn(&self) -> u64 {
        self.lsn + self.len as u64
    }

    /// The data page the record changes, when its type changes one.
    pub fn page(&self) -> Option<u64> {
        if !self.rtype.changes_page() {
            return None;
        }
        Reader::new(&self.payload, 0).varint().ok()
    }
}

/// The header fields of a record and where its payload lies in the bytes decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Length of the whole record.
    pub len: u32,
    pub code: u8,
    pub xid: u64,
    /// The payload is `bytes[payload_at..len]`.
    pub payload_at: usize,
}

/// Decodes the header of the record at the start of `bytes`, checking that the whole
/// record is there.
pub fn decode_header(bytes: &[u8]) -> Result<Header, String> {
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
    let code = r.u8()?;
    let xid = r.varint()?;
    Ok(Header {
        len: len as u32,
        code,
        xid,
        payload_at: r.pos(),
    })
}

/// Appends a whole record (header and payload parts) to `out`; returns its length.
pub fn put_record(out: &mut Vec<u8>, code: u8, xid: u64, parts: &[&[u8]]) -> u32 {
    let payload: usize = parts.iter().map(|p| p.len()).sum();
    let body = 1 + varint_len(xid) + payload;
    let start = out.len();
    put_varint(out, body as u64);
    out.push(code);
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

/// A page image (`PAGE_IMAGE`): `page varint | lower varint | upper varint |
/// page[..lower] | page[upper..]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageImage {
    pub page: u64,
    pub lower: u16,
    pub upper: u16,
    pub image: Vec<u8>,
}

impl PageImage {
    pub fn decode(payload: &[u8]) -> Result<PageImage, String> {
        let (page, lower, upper, at) = PageImage::head(payload)?;
        Ok(PageImage {
            page,
            lower,
            upper,
            image: payload[at..].to_vec(),
        })
    }

    /// The page, the hole and where the image bytes start: all a check of the payload
    /// needs (the image itself is any bytes), without copying the image.
    pub fn head(payload: &[u8]) -> Result<(u64, u16, u16, usize), String> {
        let mut r = Reader::new(payload, 0);
        let page = r.varint()?;
        let lower = r.varint16()?;
        let upper = r.varint16()?;
        if lower > upper {
            return Err(format!("page image hole {lower}..{upper} is inverted"));
        }
        Ok((page, lower, upper, r.pos()))
    }

    /// Puts the image into `g`, a page buffer, checking that it fits.
    pub fn apply(&self, g: &mut [u8]) -> Result<(), String> {
        let (lower, upper) = (self.lower as usize, self.upper as usize);
        let size = g.len();
        if upper > size || lower > upper || self.image.len() != size - (upper - lower) {
            return Err(format!(
                "page image of {} bytes with hole {lower}..{upper}",
                self.image.len()
            ));
        }
        g[..lower].copy_from_slice(&self.image[..lower]);
        g[lower..upper].fill(0);
        g[upper..].copy_from_slice(&self.image[lower..]);
        Ok(())
    }
}

impl Payload for PageImage {
    fn record_type(&self) -> RecordType {
        PAGE_IMAGE
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        put_varint(out, self.page);
        put_varint(out, self.lower as u64);
        put_varint(out, self.upper as u64);
        out.extend_from_slice(&self.image);
    }
}

/// A checkpoint record (`CHECKPOINT`): `redo_lsn varint | next_xid varint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointRecord {
    pub redo_lsn: u64,
    pub next_xid: u64,
}

impl CheckpointRecord {
    pub fn decode(payload: &[u8]) -> Result<CheckpointRecord, String> {
        let mut r = Reader::new(payload, 0);
        let rec = CheckpointRecord {
            redo_lsn: r.varint()?,
            next_xid: r.varint()?,
        };
        finish(&r, CHECKPOINT)?;
        Ok(rec)
    }
}

impl Payload for CheckpointRecord {
    fn record_type(&self) -> RecordType {
        CHECKPOINT
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        put_varint(out, self.redo_lsn);
        put_varint(out, self.next_xid);
    }
}

/// The record an `UNDO_ONLY` payload keeps: its code and its payload.
pub fn split_kept(payload: &[u8]) -> Result<(u8, &[u8]), String> {
    match payload.split_first() {
        Some((code, rest)) => Ok((*code, rest)),
        None => Err("empty undo_only record".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::payload::{check_codec, encode_record};

    #[derive(Debug, PartialEq)]
    enum Own {
        Image(PageImage),
        Checkpoint(CheckpointRecord),
    }

    impl Payload for Own {
        fn record_type(&self) -> RecordType {
            match self {
                Own::Image(r) => r.record_type(),
                Own::Checkpoint(r) => r.record_type(),
            }
        }

        fn encode_payload(&self, out: &mut Vec<u8>) {
            match self {
                Own::Image(r) => r.encode_payload(out),
                Own::Checkpoint(r) => r.encode_payload(out),
            }
        }
    }

    #[test]
    fn the_wal_records_round_trip() {
        let samples = [
            Own::Image(PageImage {
                page: 2,
                lower: 40,
                upper: 8000,
                image: vec![7; 232],
            }),
            Own::Checkpoint(CheckpointRecord {
                redo_lsn: 77,
                next_xid: 5,
            }),
        ];
        check_codec(&samples, |t, p| match t.code {
            10 => PageImage::decode(p).map(Own::Image),
            11 => CheckpointRecord::decode(p).map(Own::Checkpoint),
            c => Err(format!("code {c}")),
        });
    }

    #[test]
    fn an_inverted_hole_is_an_error() {
        let mut p = Vec::new();
        put_varint(&mut p, 1);
        put_varint(&mut p, 9);
        put_varint(&mut p, 8);
        assert!(PageImage::decode(&p).is_err());
    }

    #[test]
    fn a_header_is_three_fields() {
        let mut b = Vec::new();
        let n = encode_record(
            &mut b,
            &CheckpointRecord {
                redo_lsn: 1,
                next_xid: 2,
            },
            300,
        );
        // length, code, xid (2 bytes), payload (2 bytes).
        assert_eq!(n, 6);
        let h = decode_header(&b).unwrap();
        assert_eq!((h.len, h.code, h.xid, h.payload_at), (6, 11, 300, 4));
        assert!(decode_header(&b[..5]).is_err());
        assert_eq!(peek_record_len(&b[..1]), Some(6));
    }
}
