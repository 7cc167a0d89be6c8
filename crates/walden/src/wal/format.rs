//! The WAL's on-disk framing: segment headers and frames.
//!
//! A segment file (`wal/<16 hex digits>`) is preallocated to the segment size and starts
//! with a 40-byte header: `magic "WALDNSEG" | version u32 | crc32c u32 (of the header with
//! this field zero) | segment_no u64 | segment_size u64 | database_id u64`. A segment is
//! made whole under a temporary name (`<name>.tmp`) and renamed into place, so a segment
//! under its own name always has a valid header.
//! Frames follow. A frame is what one write of the WAL buffer puts on disk: a 40-byte
//! header and whole records. `magic u32 | crc32c u32 | payload_len u32 | flags u32 |
//! lsn_start u64 | durable_lsn u64 | generation u64`. The CRC covers the segment number
//! and the frame's offset (as 8 bytes each, not stored), then the header from byte 8 on,
//! then the payload, so that a stale frame in a recycled segment never validates.
//! `durable_lsn` is how far the log was durable when the frame was written: recovery uses
//! it to tell a torn tail (never synced) from corruption of synced WAL. A compressed
//! frame (flag lz4 or zstd) stores `raw_len u32 | compressed records`; the CRC covers the
//! stored bytes, and LSNs count the uncompressed ones.

use crate::codec::Reader;

pub const SEGMENT_MAGIC: &[u8; 8] = b"WALDNSEG";
pub const SEGMENT_HEADER_BYTES: u64 = 40;
pub const FRAME_MAGIC: u32 = 0x4D52_4657; // "WFRM" little-endian
pub const FRAME_HEADER_BYTES: u64 = 40;
/// Frame flag: the writer moved to the next segment; nothing follows in this one.
pub const FLAG_SWITCH: u32 = 1;
/// Frame flag: an end marker, written (not synced) after each sync at the end of the
/// log and overwritten by the next frame. Its `durable_lsn` tells recovery, after a
/// process crash, that the frames before it were durable, so that damage to the last
/// record frame is found rather than taken for a torn tail. No payload.
pub const FLAG_END_MARKER: u32 = 8;
/// Frame flag: the payload is `raw_len u32 | lz4 block` (see `compress.rs`).
pub const FLAG_LZ4: u32 = 2;
/// Frame flag: the payload is `raw_len u32 | zstd frame`.
pub const FLAG_ZSTD: u32 = 4;
/// Largest frame payload; the WAL buffer is cut at record boundaries to fit.
pub const MAX_FRAME_PAYLOAD_BYTES: u64 = 1 << 20;
/// Smallest segment size accepted at creation.
pub const MIN_SEGMENT_BYTES: u64 = 1 << 21;
/// The WAL format version (see docs/format.md).
pub const WAL_FORMAT_VERSION: u32 = 3;

/// File name of a segment.
pub fn segment_name(no: u64) -> String {
    format!("{no:016x}")
}

/// Parses a segment file name.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    if name.len() == 16 {
        u64::from_str_radix(name, 16).ok()
    } else {
        None
    }
}

/// Who a segment belongs to and how large segments are: what its header must state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentIdentity {
    pub segment_size: u64,
    pub database_id: u64,
}

pub fn encode_segment_header(no: u64, id: SegmentIdentity) -> [u8; SEGMENT_HEADER_BYTES as usize] {
    encode_segment_header_of_version(no, id, WAL_FORMAT_VERSION)
}

/// A segment header as a build writing format `version` writes it (tests of old logs).
pub fn encode_segment_header_of_version(
    no: u64,
    id: SegmentIdentity,
    version: u32,
) -> [u8; SEGMENT_HEADER_BYTES as usize] {
    let mut h = [0u8; SEGMENT_HEADER_BYTES as usize];
    h[0..8].copy_from_slice(SEGMENT_MAGIC);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    h[16..24].copy_from_slice(&no.to_le_bytes());
    h[24..32].copy_from_slice(&id.segment_size.to_le_bytes());
    h[32..40].copy_from_slice(&id.database_id.to_le_bytes());
    let crc = crc32c::crc32c(&h);
    h[12..16].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Checks a segment header; returns a reason when it is not the expected segment.
pub fn check_segment_header(h: &[u8], no: u64, id: SegmentIdentity) -> Result<(), String> {
    let mut r = Reader::new(h, 0);
    let magic: [u8; 8] = r.array()?;
    if &magic != SEGMENT_MAGIC {
        return Err("bad segment magic".into());
    }
    let version = r.u32()?;
    let crc = r.u32()?;
    let mut copy = h[..SEGMENT_HEADER_BYTES as usize].to_vec();
    copy[12..16].fill(0);
    if crc32c::crc32c(&copy) != crc {
        return Err("segment header checksum mismatch".into());
    }
    if version != WAL_FORMAT_VERSION {
        return Err(format!(
            "segment format version {version}, expected {WAL_FORMAT_VERSION}"
        ));
    }
    let found_no = r.u64()?;
    let found_size = r.u64()?;
    let found_id = r.u64()?;
    if found_id != id.database_id {
        return Err(format!(
            "segment of another database (id {found_id:016x}, this one is {:016x})",
            id.database_id
        ));
    }
    if found_no != no {
        return Err(format!(
            "the header names segment {found_no} (a file copied or renamed into place)"
        ));
    }
    if found_size != id.segment_size {
        return Err(format!(
            "segment size {found_size} in the header, the database's is {}",
            id.segment_size
        ));
    }
    Ok(())
}

/// The version a segment header states, when its magic and checksum are valid (a segment
/// written by another build), else None.
pub fn segment_header_version(h: &[u8]) -> Option<u32> {
    if h.len() < SEGMENT_HEADER_BYTES as usize || &h[..8] != SEGMENT_MAGIC {
        return None;
    }
    let mut copy = h[..SEGMENT_HEADER_BYTES as usize].to_vec();
    let crc = u32::from_le_bytes([copy[12], copy[13], copy[14], copy[15]]);
    copy[12..16].fill(0);
    (crc32c::crc32c(&copy) == crc).then(|| u32::from_le_bytes([h[8], h[9], h[10], h[11]]))
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub crc: u32,
    pub payload_len: u32,
    pub flags: u32,
    pub lsn_start: u64,
    pub durable_lsn: u64,
    pub generation: u64,
}

impl FrameHeader {
    pub fn encode(&self) -> [u8; FRAME_HEADER_BYTES as usize] {
        let mut h = [0u8; FRAME_HEADER_BYTES as usize];
        h[0..4].copy_from_slice(&FRAME_MAGIC.to_le_bytes());
        h[4..8].copy_from_slice(&self.crc.to_le_bytes());
        h[8..12].copy_from_slice(&self.payload_len.to_le_bytes());
        h[12..16].copy_from_slice(&self.flags.to_le_bytes());
        h[16..24].copy_from_slice(&self.lsn_start.to_le_bytes());
        h[24..32].copy_from_slice(&self.durable_lsn.to_le_bytes());
        h[32..40].copy_from_slice(&self.generation.to_le_bytes());
        h
    }

    /// Parses a header; None when the magic is wrong.
    pub fn decode(h: &[u8]) -> Option<FrameHeader> {
        let mut r = Reader::new(h, 0);
        if r.u32().ok()? != FRAME_MAGIC {
            return None;
        }
        Some(FrameHeader {
            crc: r.u32().ok()?,
            payload_len: r.u32().ok()?,
            flags: r.u32().ok()?,
            lsn_start: r.u64().ok()?,
            durable_lsn: r.u64().ok()?,
            generation: r.u64().ok()?,
        })
    }
}

/// The CRC of a frame at (segment, offset) with the given header bytes and payload.
pub fn frame_crc(segment_no: u64, offset: u64, header: &[u8], payload: &[u8]) -> u32 {
    let mut c = crc32c::crc32c(&segment_no.to_le_bytes());
    c = crc32c::crc32c_append(c, &offset.to_le_bytes());
    c = crc32c::crc32c_append(c, &header[8..FRAME_HEADER_BYTES as usize]);
    crc32c::crc32c_append(c, payload)
}

/// Builds a complete frame (header then payload) into `out`.
pub fn build_frame(
    out: &mut Vec<u8>,
    segment_no: u64,
    offset: u64,
    mut header: FrameHeader,
    payload: &[u8],
) {
    header.payload_len = payload.len() as u32;
    header.crc = 0;
    let h = header.encode();
    header.crc = frame_crc(segment_no, offset, &h, payload);
    out.clear();
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(payload);
}
