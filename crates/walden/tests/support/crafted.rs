//! Crafted WAL: a frame appended after the last one of a test database's log, as the
//! writer would have written it (valid CRCs, LSNs and generation), for tests of what
//! recovery makes of records the engine's API cannot produce on its own.

use walden::vfs::{OpenMode, SimVfs, Vfs};
use walden::wal::format::{build_frame, FrameHeader, FRAME_HEADER_BYTES, SEGMENT_HEADER_BYTES};
use walden::wal::payload::{encode_record, Payload};

use super::wal_segment;

/// Appends one frame holding `records` (each with its xid) after the last frame of
/// segment 1, continuing its LSNs and generation, as the writer would have.
pub fn append_frame(vfs: &SimVfs, records: &[(&dyn Payload, u64)]) {
    let path = wal_segment(1);
    let bytes = vfs.file_contents(&path).unwrap();
    let mut at = SEGMENT_HEADER_BYTES as usize;
    let mut last = None;
    while let Some(h) = FrameHeader::decode(&bytes[at..at + FRAME_HEADER_BYTES as usize]) {
        last = Some(h);
        at += FRAME_HEADER_BYTES as usize + h.payload_len as usize;
    }
    let last = last.unwrap();
    let start_lsn = last.lsn_start + last.payload_len as u64;
    let mut payload = Vec::new();
    for (rec, xid) in records {
        encode_record(&mut payload, *rec, *xid);
    }
    let header = FrameHeader {
        crc: 0,
        payload_len: 0,
        flags: 0,
        lsn_start: start_lsn,
        durable_lsn: start_lsn,
        generation: last.generation,
    };
    let mut frame = Vec::new();
    build_frame(&mut frame, 1, at as u64, header, &payload);
    let f = vfs.open(&path, OpenMode::Existing).unwrap();
    f.write_all_at(&frame, at as u64).unwrap();
    f.sync_data().unwrap();
}
