//! The building blocks record owners encode their payloads with: slot numbers coded
//! against each other, runs of slots, lists of rows, page deltas, and counts that cannot
//! allocate more than the bytes could hold. What a payload means is the owner's; these
//! only keep every owner's encoding equally compact and equally careful.

use crate::codec::{put_bytes_v, put_varint, put_varint_signed, Reader};
use crate::wal::record::{put_record, RecordType};

/// Most slots one record may name when its lists are expanded (more than any page has).
pub const MAX_RECORD_SLOTS: usize = 1 << 16;

/// A record an owner can encode: its type and its payload.
pub trait Payload {
    fn record_type(&self) -> RecordType;
    /// Appends the payload (everything after the record header).
    fn encode_payload(&self, out: &mut Vec<u8>);
}

/// Appends a whole record (header and payload) to `out`; returns its length.
pub fn encode_record(out: &mut Vec<u8>, rec: &dyn Payload, xid: u64) -> u32 {
    let mut payload = Vec::new();
    rec.encode_payload(&mut payload);
    put_record(out, rec.record_type().code, xid, &[&payload])
}

/// Slot numbers of one record, each coded against the one before it: a signed varint
/// gap from (previous slot + 1), so ascending neighbours cost one zero byte.
#[derive(Default)]
pub struct SlotCoder {
    pub next: i64,
}

impl SlotCoder {
    pub fn new() -> SlotCoder {
        SlotCoder { next: 0 }
    }

    pub fn put(&mut self, out: &mut Vec<u8>, slot: u16) {
        put_varint_signed(out, slot as i64 - self.next);
        self.next = slot as i64 + 1;
    }

    pub fn get(&mut self, r: &mut Reader) -> Result<u16, String> {
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
pub fn put_slot_runs(out: &mut Vec<u8>, slots: &[u16]) {
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

pub fn get_slot_runs(r: &mut Reader) -> Result<Vec<u16>, String> {
    let runs = r.varint()?;
    let mut slots = Vec::new();
    let mut c = SlotCoder::new();
    for _ in 0..runs {
        let start = c.get(r)?;
        let len = r.varint()?.checked_add(1).ok_or("run length overflows")?;
        if (start as u64)
            .checked_add(len - 1)
            .is_none_or(|last| last > u16::MAX as u64)
        {
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
pub fn count(r: &mut Reader, min_item: usize) -> Result<usize, String> {
    let n = r.varint()?;
    if n > (r.remaining() / min_item.max(1)) as u64 {
        return Err(format!("{n} items cannot fit in {} bytes", r.remaining()));
    }
    Ok(n as usize)
}

/// Rows as `(slot, bytes)`: `count varint`, then per row a slot gap and the bytes.
pub fn put_rows(out: &mut Vec<u8>, rows: &[(u16, Vec<u8>)]) {
    put_varint(out, rows.len() as u64);
    let mut c = SlotCoder::new();
    for (slot, bytes) in rows {
        c.put(out, *slot);
        put_bytes_v(out, bytes);
    }
}

pub fn get_rows(r: &mut Reader) -> Result<Vec<(u16, Vec<u8>)>, String> {
    let n = count(r, 2)?;
    let mut rows = Vec::with_capacity(n);
    let mut c = SlotCoder::new();
    for _ in 0..n {
        let slot = c.get(r)?;
        rows.push((slot, r.bytes_v()?.to_vec()));
    }
    Ok(rows)
}

/// A page number coded as a delta from the one before it.
pub fn page_from_delta(prev: i64, delta: i64) -> Result<u64, String> {
    prev.checked_add(delta)
        .filter(|p| *p >= 0 && *p < u32::MAX as i64)
        .map(|p| p as u64)
        .ok_or_else(|| format!("page delta {delta} leaves the page range"))
}

/// Fails when a payload has bytes its decoder did not read.
pub fn finish(r: &Reader, t: RecordType) -> Result<(), String> {
    match r.remaining() {
        0 => Ok(()),
        n => Err(format!("{n} trailing bytes in a {} record", t.name)),
    }
}

/// Builds the payload of an insert record (`page varint | cid varint | rows`) row by
/// row, for callers that fill a page and log it once it is full.
#[derive(Default)]
pub struct InsertBuilder {
    rows: Vec<u8>,
    n: u64,
    coder: SlotCoder,
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

    /// The payload: the same bytes `put_insert` gives for these rows.
    pub fn finish(&self, page: u64, cid: u32, out: &mut Vec<u8>) {
        out.clear();
        put_varint(out, page);
        put_varint(out, cid as u64);
        put_varint(out, self.n);
        out.extend_from_slice(&self.rows);
    }
}

/// The page and rows of an insert payload (`page varint | cid varint | rows`).
pub fn get_insert(payload: &[u8]) -> Result<LoggedRows, String> {
    let mut r = Reader::new(payload, 0);
    let page = r.varint()?;
    r.varint32()?;
    let rows = get_rows(&mut r)?;
    match r.remaining() {
        0 => Ok(LoggedRows { page, rows }),
        n => Err(format!("{n} trailing bytes in an insert payload")),
    }
}

/// The rows one insert record put on its page (slot, row bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRows {
    pub page: u64,
    pub rows: Vec<(u16, Vec<u8>)>,
}

/// An insert payload: `page varint | cid varint | rows`.
pub fn put_insert(out: &mut Vec<u8>, page: u64, cid: u32, rows: &[(u16, Vec<u8>)]) {
    put_varint(out, page);
    put_varint(out, cid as u64);
    put_rows(out, rows);
}

/// The checks every owner's codec passes, for its unit tests: each sample round-trips at
/// several xids, every truncation is an error, and no flipped bit makes the decoder
/// panic or over-allocate.
#[cfg(test)]
pub(crate) fn check_codec<T>(samples: &[T], decode: impl Fn(RecordType, &[u8]) -> Result<T, String>)
where
    T: Payload + PartialEq + std::fmt::Debug,
{
    use crate::wal::record::{decode_header, peek_record_len, record_len};
    for rec in samples {
        for xid in [0u64, 42, 1 << 47] {
            let mut buf = Vec::new();
            let len = encode_record(&mut buf, rec, xid);
            assert_eq!(len as usize, buf.len());
            assert_eq!(peek_record_len(&buf), Some(buf.len()));
            let mut payload = Vec::new();
            rec.encode_payload(&mut payload);
            assert_eq!(record_len(xid, payload.len()), buf.len());
            let h = decode_header(&buf).expect("header decodes");
            assert_eq!((h.code, h.xid, h.len), (rec.record_type().code, xid, len));
            let got = decode(rec.record_type(), &buf[h.payload_at..]).expect("decodes");
            assert_eq!(&got, rec);
        }
        let mut buf = Vec::new();
        encode_record(&mut buf, rec, 1);
        let whole = |b: &[u8]| {
            decode_header(b)
                .and_then(|h| decode(rec.record_type(), &b[h.payload_at..h.len as usize]))
        };
        for cut in 0..buf.len() {
            assert!(whole(&buf[..cut]).is_err(), "{rec:?} cut {cut}");
        }
        let mut payload = Vec::new();
        rec.encode_payload(&mut payload);
        for i in 0..payload.len() {
            for bit in 0..8 {
                let mut b = payload.clone();
                b[i] ^= 1 << bit;
                // The frame's CRC rejects flipped bytes before records are decoded;
                // the decoder itself must still never panic or over-allocate.
                let _ = decode(rec.record_type(), &b);
            }
        }
    }
}
