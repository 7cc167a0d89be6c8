//! Bad input: what could go wrong is a damaged file, a wrong directory or a wrong row
//! being accepted, or reported as the wrong thing — each must come back as its own typed
//! error carrying the evidence, and leave the data as it was.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use walden::access::heap::max_row_bytes;
use walden::control::{CheckpointData, Control, FORMAT_VERSION};
use walden::page::compute_checksum;
use walden::vfs::{CrashMode, OpenMode, RealVfs, SimVfs, Vfs};
use walden::wal::format::{
    FrameHeader, FLAG_END_MARKER, FLAG_LZ4, FLAG_ZSTD, FRAME_HEADER_BYTES, SEGMENT_HEADER_BYTES,
};
use walden::*;

mod support;
use support::{
    default_opts, id_text_schema, labelled_row, table_opts, wal_segment, DIR, SEGMENT_BYTES, TABLE,
};

// Heap tables (`TableKind::Heap` in every test's options): these tests count heap records
// and sizes (undo tables, the default, have tests of their own).

/// Commits `n` transactions of three rows each, starting at id `first`; returns the rows.
fn commit_batches(db: &Database, first: i64, n: i64) -> Vec<Row> {
    let mut all = Vec::new();
    for b in 0..n {
        let rows: Vec<Row> = (0..3).map(|i| labelled_row(first + 3 * b + i)).collect();
        let mut tx = db.begin();
        tx.insert_many(TABLE, &rows).unwrap();
        tx.commit().unwrap();
        all.extend(rows);
    }
    all
}

/// Every visible row of the table, sorted by id.
fn contents(db: &Database) -> Vec<Row> {
    let mut rows: Vec<Row> = db
        .begin()
        .scan(TABLE)
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    rows.sort_by_key(|r| match r[0] {
        Value::Int8(id) => id,
        _ => panic!("unexpected row {r:?}"),
    });
    rows
}

/// Overwrites (or creates) a file with `bytes` through the file layer.
fn write_file(vfs: &SimVfs, path: &Path, bytes: &[u8]) {
    let f = vfs.open(path, OpenMode::CreateOrOpen).unwrap();
    f.write_all_at(bytes, 0).unwrap();
    f.sync_data().unwrap();
}

/// (offset, header) of each frame in a segment, walking from the first one until a
/// header does not decode (the preallocated zeros after the last frame); the end marker
/// (a placeholder after the last sync) is left out.
fn frames(vfs: &SimVfs, segment: &Path) -> Vec<(u64, FrameHeader)> {
    frames_and_marker(vfs, segment)
        .into_iter()
        .filter(|(_, h)| h.flags & FLAG_END_MARKER == 0)
        .collect()
}

fn frames_and_marker(vfs: &SimVfs, segment: &Path) -> Vec<(u64, FrameHeader)> {
    let bytes = vfs.file_contents(segment).unwrap();
    let mut out = Vec::new();
    let mut at = SEGMENT_HEADER_BYTES as usize;
    while at + FRAME_HEADER_BYTES as usize <= bytes.len() {
        let Some(h) = FrameHeader::decode(&bytes[at..at + FRAME_HEADER_BYTES as usize]) else {
            break;
        };
        out.push((at as u64, h));
        at += FRAME_HEADER_BYTES as usize + h.payload_len as usize;
    }
    out
}

/// The redo position of the last complete checkpoint, read from the files themselves.
fn redo_point(vfs: &SimVfs) -> walden::wal::WalPosition {
    let arc: Arc<dyn Vfs> = Arc::new(vfs.clone());
    let control = Control::read(&arc, Path::new(DIR)).unwrap();
    CheckpointData::read(&arc, Path::new(DIR), control.checkpoint_seq)
        .unwrap()
        .redo
}

/// A new cow database holding the empty test table.
fn cow_db_with_table(vfs: &SimVfs) -> Database {
    let db = Database::create(DIR, table_opts(vfs, Protection::Cow, TableKind::Heap)).unwrap();
    db.create_table(TABLE, id_text_schema("name")).unwrap();
    db
}

/// Asserts that an insert was refused for not matching the test table's schema.
fn expect_schema_mismatch<T: std::fmt::Debug>(r: Result<T>) {
    match r {
        Err(Error::SchemaMismatch { table, .. }) => assert_eq!(table, TABLE),
        other => panic!("expected SchemaMismatch, got {other:?}"),
    }
}

/// A checkpoint whose free pages name one never handed out (or one a table uses) is
/// refused as corrupt: handing such a page out would give it to two relations.
#[test]
fn a_checkpoint_listing_a_bad_free_page_is_refused() {
    for bad in ["past", "used"] {
        let vfs = SimVfs::new(31);
        let db = cow_db_with_table(&vfs);
        commit_batches(&db, 0, 3);
        db.close().unwrap();
        let arc: Arc<dyn Vfs> = Arc::new(vfs.clone());
        let control = Control::read(&arc, Path::new(DIR)).unwrap();
        let mut data = CheckpointData::read(&arc, Path::new(DIR), control.checkpoint_seq).unwrap();
        let used = data.catalog.by_name[TABLE].page_list()[0];
        data.catalog.free_pages = match bad {
            "past" => vec![data.next_page + 5],
            _ => vec![used],
        };
        let bytes = data.encode();
        let path = Path::new(DIR).join(format!("checkpoint.{:016x}", control.checkpoint_seq));
        let f = arc.open(&path, walden::vfs::OpenMode::Existing).unwrap();
        f.write_all_at(&bytes, 0).unwrap();
        f.sync_data().unwrap();
        match Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
            Err(Error::CorruptCheckpoint { reason, .. }) => assert!(
                reason.contains("never handed out") || reason.contains("listed free and used"),
                "{bad}: {reason}"
            ),
            other => panic!("{bad}: expected CorruptCheckpoint, got {:?}", other.err()),
        }
    }
}

#[test]
fn truncated_wal_segment_is_reported_with_its_length() {
    let vfs = SimVfs::new(1);
    let db = cow_db_with_table(&vfs);
    commit_batches(&db, 0, 10);
    drop(db);
    let seg = wal_segment(1);
    assert_eq!(
        vfs.file_contents(&seg).unwrap().len() as u64,
        SEGMENT_BYTES,
        "segments are preallocated to the segment size"
    );
    assert!(vfs.truncate_file(&seg, 1 << 20));
    match Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
        Err(Error::TruncatedWalSegment {
            path,
            len,
            expected,
        }) => {
            assert_eq!(path, seg);
            assert_eq!(len, 1 << 20);
            assert_eq!(expected, SEGMENT_BYTES);
        }
        other => panic!("expected TruncatedWalSegment, got {:?}", other.err()),
    }
}

#[test]
fn missing_redo_segment_is_reported() {
    let vfs = SimVfs::new(2);
    let db = cow_db_with_table(&vfs);
    commit_batches(&db, 0, 3);
    drop(db);
    let seg = wal_segment(1);
    vfs.remove(&seg).unwrap();
    match Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
        Err(Error::MissingWalSegment {
            path,
            segment,
            reason,
        }) => {
            assert_eq!(path, seg);
            assert_eq!(segment, 1);
            assert_eq!(reason, "recovery starts in it");
        }
        other => panic!("expected MissingWalSegment, got {:?}", other.err()),
    }
}

/// Builds a log of ten one-frame commits with a checkpoint after the fifth; returns the
/// frames of segment 1, the index of the first frame at or after the redo point, and the
/// rows committed.
fn log_with_checkpoint_in_the_middle(vfs: &SimVfs) -> (Vec<(u64, FrameHeader)>, usize, Vec<Row>) {
    let db = Database::create(DIR, table_opts(vfs, Protection::Cow, TableKind::Heap)).unwrap();
    db.create_table(TABLE, id_text_schema("name")).unwrap();
    let mut rows = commit_batches(&db, 0, 5);
    db.checkpoint().unwrap();
    rows.extend(commit_batches(&db, 15, 5));
    drop(db);
    vfs.restart(CrashMode::KeepUnsynced);
    let redo = redo_point(vfs);
    assert_eq!(redo.segment_no, 1);
    let frames = frames(vfs, &wal_segment(1));
    // The first checkpoint's record (flushed on its own at creation), the create-table
    // frame, five commits, the second checkpoint's record (at the redo point), five
    // commits.
    assert_eq!(frames.len(), 13, "{frames:?}");
    let first_after = frames
        .iter()
        .position(|(off, _)| *off == redo.offset)
        .unwrap();
    assert_eq!(first_after, 7);
    assert_eq!(frames[first_after].1.lsn_start, redo.lsn);
    (frames, first_after, rows)
}

#[test]
fn flipped_byte_in_a_durable_frame_after_the_redo_point_is_corrupt_wal() {
    // Positions inside the frame: magic, CRC, LSN field of the header, and the payload.
    for (what, delta) in [
        ("magic", 0u64),
        ("crc", 5),
        ("lsn", 17),
        ("payload", FRAME_HEADER_BYTES + 20),
    ] {
        // Frame +0 is the checkpoint's own record (too short for the payload offset);
        // +1 on are commits.
        for which in [1usize, 2, 4] {
            let vfs = SimVfs::new(3);
            let (frames, first_after, _) = log_with_checkpoint_in_the_middle(&vfs);
            let (offset, header) = frames[first_after + which];
            assert!(vfs.corrupt_byte(&wal_segment(1), offset + delta, 0x40));
            match Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
                Err(Error::CorruptWal { path, lsn, reason }) => {
                    assert_eq!(path, wal_segment(1), "{what} of frame +{which}");
                    assert_eq!(lsn, header.lsn_start, "{what} of frame +{which}: {reason}");
                }
                other => panic!(
                    "{what} of frame +{which}: expected CorruptWal, got {:?}",
                    other.err()
                ),
            }
        }
    }
}

/// The torn-tail rules on compressed frames: a damaged compressed frame that a later
/// frame (or the end marker after the last sync) proves durable is corrupt WAL, named by
/// its LSN; a damaged last frame with no marker after it (it was never synced) is a torn
/// tail, and the log before it comes back whole.
#[test]
fn damaged_compressed_frames_follow_the_torn_tail_rules() {
    for codec in [WalCompression::Zstd, WalCompression::Lz4] {
        for (last, keep_marker) in [(false, true), (true, true), (true, false)] {
            let vfs = SimVfs::new(21);
            let options = Options {
                wal_compression: codec,
                ..table_opts(&vfs, Protection::Cow, TableKind::Heap)
            };
            let db = Database::create(DIR, options.clone()).unwrap();
            db.create_table(TABLE, id_text_schema("name")).unwrap();
            db.checkpoint().unwrap();
            let mut batches = Vec::new();
            for b in 0..4i64 {
                let rows: Vec<Row> = (0..200).map(|i| labelled_row(b * 1000 + i)).collect();
                let mut tx = db.begin();
                tx.insert_many(TABLE, &rows).unwrap();
                tx.commit().unwrap();
                batches.push(rows);
            }
            drop(db);
            vfs.restart(CrashMode::KeepUnsynced);
            let redo = redo_point(&vfs);
            let frames: Vec<(u64, FrameHeader)> = frames(&vfs, &wal_segment(redo.segment_no))
                .into_iter()
                .filter(|(off, _)| *off >= redo.offset)
                .collect();
            let flag = match codec {
                WalCompression::Lz4 => FLAG_LZ4,
                _ => FLAG_ZSTD,
            };
            let compressed: Vec<&(u64, FrameHeader)> =
                frames.iter().filter(|(_, h)| h.flags & flag != 0).collect();
            assert!(compressed.len() >= 4, "{codec}: {frames:?}");
            let (offset, header) = if last {
                **compressed.last().unwrap()
            } else {
                *compressed[1]
            };
            assert!(vfs.corrupt_byte(
                &wal_segment(redo.segment_no),
                offset + FRAME_HEADER_BYTES + header.payload_len as u64 / 2,
                0x10
            ));
            let marker = frames_and_marker(&vfs, &wal_segment(redo.segment_no))
                .into_iter()
                .find(|(_, h)| h.flags & FLAG_END_MARKER != 0);
            let (marker_offset, _) = marker.expect("an end marker after the last sync");
            if !keep_marker {
                assert!(vfs.corrupt_byte(&wal_segment(redo.segment_no), marker_offset, 0xff));
            }
            match Database::open(DIR, options) {
                Ok(db) if last && !keep_marker => {
                    // The last commit's frame is gone with its tail; the rest is whole.
                    let got = contents(&db);
                    let expected: Vec<Row> = batches[..3].concat();
                    assert_eq!(got, expected, "{codec}");
                }
                Err(Error::CorruptWal { lsn, .. }) if keep_marker => {
                    assert_eq!(lsn, header.lsn_start, "{codec}");
                }
                other => panic!(
                    "{codec} last={last} marker={keep_marker}: got {:?}",
                    other.map(|_| ())
                ),
            }
        }
    }
}

#[test]
fn flipped_byte_before_the_redo_point_is_never_read() {
    let vfs = SimVfs::new(4);
    let (frames, first_after, rows) = log_with_checkpoint_in_the_middle(&vfs);
    let (offset, header) = frames[first_after - 3];
    assert!(vfs.corrupt_byte(
        &wal_segment(1),
        offset + FRAME_HEADER_BYTES + header.payload_len as u64 / 2,
        0x01
    ));
    let db = Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    assert_eq!(contents(&db), rows);
}

/// A none-mode database whose table lives on page 0, checkpointed, with `after` more
/// rows committed after the checkpoint. Returns the rows.
fn none_mode_db(vfs: &SimVfs, after: i64) -> Vec<Row> {
    let db = Database::create(DIR, table_opts(vfs, Protection::None, TableKind::Heap)).unwrap();
    db.create_table(TABLE, id_text_schema("name")).unwrap();
    let mut tx = db.begin();
    let rows: Vec<Row> = (0..10).map(labelled_row).collect();
    let ids = tx.insert_many(TABLE, &rows).unwrap();
    tx.commit().unwrap();
    assert!(ids.iter().all(|id| id.page == 0), "{ids:?}");
    db.checkpoint().unwrap();
    let mut all = rows;
    for id in 10..10 + after {
        let mut tx = db.begin();
        assert_eq!(tx.insert(TABLE, &labelled_row(id)).unwrap().page, 0);
        tx.commit().unwrap();
        all.push(labelled_row(id));
    }
    drop(db);
    all
}

/// Flips a byte near the end of page 0 (row data) in `db/data`; returns the checksum the
/// page stores and the one its bytes now have.
fn corrupt_page_zero(vfs: &SimVfs) -> (u32, u32) {
    let data = Path::new(DIR).join("data");
    let page_size = 8192;
    assert!(vfs.corrupt_byte(&data, page_size - 5, 0x10));
    let bytes = vfs.file_contents(&data).unwrap();
    let page = &bytes[..page_size as usize];
    let stored = u32::from_le_bytes(page[0..4].try_into().unwrap());
    let arc: Arc<dyn Vfs> = Arc::new(vfs.clone());
    let database_id = Control::read(&arc, Path::new(DIR)).unwrap().database_id;
    let computed = compute_checksum(page, database_id);
    assert_ne!(stored, computed);
    (stored, computed)
}

#[test]
fn bad_page_checksum_in_none_mode_is_reported_by_a_read() {
    let vfs = SimVfs::new(5);
    let rows = none_mode_db(&vfs, 0);
    vfs.restart(CrashMode::DropUnsynced);
    let (stored, computed) = corrupt_page_zero(&vfs);
    // Nothing after the checkpoint touches page 0, so recovery does not read it.
    let db = Database::open(DIR, table_opts(&vfs, Protection::None, TableKind::Heap)).unwrap();
    let mut tx = db.begin();
    match tx.scan(TABLE) {
        Err(Error::ChecksumMismatch {
            path,
            page,
            location,
            expected,
            actual,
        }) => {
            assert_eq!(path, Path::new(DIR).join("data"));
            assert_eq!((page, location), (0, 0));
            assert_eq!((expected, actual), (stored, computed));
        }
        other => panic!("expected ChecksumMismatch, got {other:?}"),
    }
    drop(tx);
    // A failed read is not a failed write: the database still accepts writes elsewhere.
    assert!(!db.is_poisoned());
    assert_eq!(rows.len(), 10);
}

#[test]
fn bad_page_checksum_in_none_mode_stops_recovery_that_needs_the_page() {
    let vfs = SimVfs::new(6);
    none_mode_db(&vfs, 2);
    vfs.restart(CrashMode::DropUnsynced);
    let (stored, computed) = corrupt_page_zero(&vfs);
    match Database::open(DIR, table_opts(&vfs, Protection::None, TableKind::Heap)) {
        Err(Error::ChecksumMismatch {
            path,
            page,
            location,
            expected,
            actual,
        }) => {
            assert_eq!(path, Path::new(DIR).join("data"));
            assert_eq!((page, location), (0, 0));
            assert_eq!((expected, actual), (stored, computed));
        }
        other => panic!("expected ChecksumMismatch, got {:?}", other.err()),
    }
}

#[test]
fn control_file_with_unknown_format_version() {
    let vfs = SimVfs::new(7);
    drop(Database::create(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap());
    let control = Path::new(DIR).join("control");
    assert!(vfs.corrupt_byte(&control, 8, FORMAT_VERSION as u8 ^ 99));
    assert_eq!(vfs.file_contents(&control).unwrap()[8..12], [99, 0, 0, 0]);
    match Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
        Err(Error::UnsupportedVersion {
            path,
            found,
            supported,
        }) => {
            assert_eq!(path, control);
            assert_eq!(found, 99);
            assert_eq!(supported, FORMAT_VERSION);
        }
        other => panic!("expected UnsupportedVersion, got {:?}", other.err()),
    }
}

/// A database of the previous formats (24, before transactional DDL; 23, before subtransactions; 22, before column privileges; 21, before privileges; 20, before sequences; 19, before values stored out of line; 18, before VACUUM gave pages back; 17, before free-space hints in checkpoints; 16, before `undo_update`; 15, before roles; 14, before index column
/// orders; 13, before table statistics; 11, before the jsonb column type; 10, before
/// the numeric column type; 9, before the date/time and bytea types) opens and its rows
/// read back: this build reads every format from 5 on.
#[test]
fn previous_format_opens() {
    assert_eq!(FORMAT_VERSION, 25);
    for old in [9u32, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24] {
        opens_as_format(old);
    }
}

fn opens_as_format(old: u32) {
    let vfs = SimVfs::new(19);
    {
        let db = Database::create(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
        let schema = Schema::new(vec![Column::new("a", ColumnType::Int4)]);
        db.create_table("t", schema).unwrap();
        // An index of the default order is written as an older build wrote it.
        db.create_index(&walden::IndexSpec {
            name: "t_a",
            table: "t",
            columns: &["a"],
            ..Default::default()
        })
        .unwrap();
        let mut t = db.begin();
        t.insert("t", &[Value::Int4(7)]).unwrap();
        t.commit().unwrap();
        db.close().unwrap();
    }
    // Rewrite the version in the control file (with its checksum) and in the checkpoint
    // files (outside their checksummed body) to what an older build wrote.
    let control = Path::new(DIR).join("control");
    let old_bytes = vfs.file_contents(&control).unwrap();
    let mut new = old_bytes.clone();
    new[8..12].copy_from_slice(&old.to_le_bytes());
    new[12..16].fill(0);
    let crc = crc32c::crc32c(&new);
    new[12..16].copy_from_slice(&crc.to_le_bytes());
    for (i, (a, b)) in old_bytes.iter().zip(&new).enumerate() {
        if a != b {
            assert!(vfs.corrupt_byte(&control, i as u64, a ^ b));
        }
    }
    let checkpoints: Vec<String> = vfs
        .list_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("checkpoint."))
        .collect();
    assert!(!checkpoints.is_empty());
    for name in checkpoints {
        assert!(vfs.corrupt_byte(
            &Path::new(DIR).join(name),
            8,
            FORMAT_VERSION as u8 ^ old as u8
        ));
    }
    let db = Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    let rows: Vec<Vec<Value>> = db
        .begin()
        .scan("t")
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    assert_eq!(rows, vec![vec![Value::Int4(7)]], "format {old}");
    let found = db.begin().index_get("t_a", &[Value::Int4(7)]).unwrap();
    assert_eq!(found.len(), 1, "format {old}");
    assert!(db.roles().is_empty(), "format {old}");
    let info = db.index("t_a").unwrap();
    assert_eq!(
        info.order,
        vec![walden::KeyOrder::default()],
        "format {old}"
    );
}

/// A database written by a build of format 2 (before compact WAL records) is refused
/// with a clear error, and so is a WAL segment of WAL format 1; nothing is changed.
#[test]
fn older_formats_are_refused_and_left_alone() {
    let vfs = SimVfs::new(17);
    drop(Database::create(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap());
    let control = Path::new(DIR).join("control");
    assert!(vfs.corrupt_byte(&control, 8, FORMAT_VERSION as u8 ^ 2));
    let before = vfs.file_contents(&control).unwrap();
    match Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
        Err(Error::UnsupportedVersion { found: 2, .. }) => {}
        other => panic!("expected UnsupportedVersion, got {:?}", other.err()),
    }
    assert_eq!(vfs.file_contents(&control).unwrap(), before);
    assert!(vfs.corrupt_byte(&control, 8, FORMAT_VERSION as u8 ^ 2));

    // The control file is current, the first WAL segment is of WAL format 1.
    let wal_dir = Path::new(DIR).join("wal");
    let no = vfs
        .list_dir(&wal_dir)
        .unwrap()
        .iter()
        .filter_map(|n| walden::wal::format::parse_segment_name(n))
        .min()
        .unwrap();
    let segment = wal_dir.join(walden::wal::format::segment_name(no));
    let contents = vfs.file_contents(&segment).unwrap();
    let control_now =
        Control::read(&(Arc::new(vfs.clone()) as Arc<dyn Vfs>), Path::new(DIR)).unwrap();
    let old = walden::wal::format::encode_segment_header_of_version(
        no,
        control_now.segment_identity(),
        1,
    );
    for (i, b) in old.iter().enumerate() {
        let mask = contents[i] ^ b;
        if mask != 0 {
            assert!(vfs.corrupt_byte(&segment, i as u64, mask));
        }
    }
    match Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
        Err(Error::UnsupportedVersion {
            path,
            found: 1,
            supported: 3,
        }) => assert_eq!(path, segment),
        other => panic!(
            "expected UnsupportedVersion of the segment, got {:?}",
            other.err()
        ),
    }
}

#[test]
fn directory_that_is_not_a_database() {
    let vfs = SimVfs::new(8);
    vfs.create_dir_all(Path::new("empty")).unwrap();
    match Database::open("empty", table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
        Err(Error::NotADatabase { path }) => assert_eq!(path, Path::new("empty")),
        other => panic!("expected NotADatabase, got {:?}", other.err()),
    }
    match Database::open(
        "nowhere",
        table_opts(&vfs, Protection::Cow, TableKind::Heap),
    ) {
        Err(Error::NotADatabase { path }) => assert_eq!(path, Path::new("nowhere")),
        other => panic!("expected NotADatabase, got {:?}", other.err()),
    }
    // A `control` file that is not ours (64 bytes of noise): bad magic.
    vfs.create_dir_all(Path::new("noise")).unwrap();
    let noise: Vec<u8> = (0..64u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    write_file(&vfs, &Path::new("noise").join("control"), &noise);
    match Database::open("noise", table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
        Err(Error::NotADatabase { path }) => assert_eq!(path, Path::new("noise")),
        other => panic!("expected NotADatabase, got {:?}", other.err()),
    }
    // Nothing was written into the foreign directory.
    assert_eq!(vfs.list_dir(Path::new("noise")).unwrap(), vec!["control"]);
    assert_eq!(
        vfs.file_contents(&Path::new("noise").join("control")),
        Some(noise)
    );
}

#[test]
fn directory_that_is_not_a_database_on_the_real_file_system() {
    let dir = std::env::temp_dir().join(format!("walden-bad-input-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let real = || default_opts(Arc::new(RealVfs));
    let r = Database::open(&dir, real());
    let control = dir.join("control");
    std::fs::write(
        &control,
        b"this is not a walden control file, just some text\n",
    )
    .unwrap();
    let r2 = Database::open(&dir, real());
    std::fs::write(&control, b"WALDN").unwrap();
    let r3 = Database::open(&dir, real());
    std::fs::remove_dir_all(&dir).unwrap();
    match r {
        Err(Error::NotADatabase { path }) => assert_eq!(path, dir),
        other => panic!("expected NotADatabase, got {:?}", other.err()),
    }
    match r2 {
        Err(Error::NotADatabase { path }) => assert_eq!(path, dir),
        other => panic!("expected NotADatabase, got {:?}", other.err()),
    }
    match r3 {
        Err(Error::CorruptControlFile { path, reason }) => {
            assert_eq!(path, control);
            assert_eq!(reason, "5 bytes, expected 64");
        }
        other => panic!("expected CorruptControlFile, got {:?}", other.err()),
    }
}

#[test]
fn control_file_with_right_magic_but_damaged_body() {
    let control = Path::new(DIR).join("control");
    // A flipped byte in each field after the version: page size, protection, segment
    // size, checkpoint number, generation, reserved.
    for offset in [16u64, 20, 24, 33, 40, 60] {
        let vfs = SimVfs::new(9);
        drop(Database::create(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap());
        assert!(vfs.corrupt_byte(&control, offset, 0x02));
        match Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
            Err(Error::CorruptControlFile { path, reason }) => {
                assert_eq!(path, control);
                assert_eq!(reason, "checksum mismatch", "byte {offset}");
            }
            other => panic!(
                "byte {offset}: expected CorruptControlFile, got {:?}",
                other.err()
            ),
        }
    }
    // The right magic and version, but too long.
    let vfs = SimVfs::new(10);
    drop(Database::create(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap());
    let mut long = vfs.file_contents(&control).unwrap();
    long.extend_from_slice(&[0; 36]);
    write_file(&vfs, &control, &long);
    match Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)) {
        Err(Error::CorruptControlFile { path, reason }) => {
            assert_eq!(path, control);
            assert_eq!(reason, "100 bytes, expected 64");
        }
        other => panic!("expected CorruptControlFile, got {:?}", other.err()),
    }
}

#[test]
fn creating_where_a_database_exists() {
    let vfs = SimVfs::new(11);
    let db = cow_db_with_table(&vfs);
    let rows = commit_batches(&db, 0, 2);
    drop(db);
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        match Database::create(DIR, table_opts(&vfs, protection, TableKind::Heap)) {
            Err(Error::AlreadyExists { path }) => assert_eq!(path, Path::new(DIR)),
            other => panic!("expected AlreadyExists, got {:?}", other.err()),
        }
    }
    let db = Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    assert_eq!(contents(&db), rows);
    assert_eq!(db.protection(), Protection::Cow);
}

#[test]
fn bad_options_are_rejected_before_anything_is_written() {
    let vfs = SimVfs::new(12);
    for page_size in [0usize, 1000, 4095, 65536] {
        let o = Options {
            page_size,
            ..table_opts(&vfs, Protection::Cow, TableKind::Heap)
        };
        match Database::create(DIR, o) {
            Err(Error::InvalidOption(msg)) => {
                assert!(msg.contains(&format!("page size {page_size}")), "{msg}")
            }
            other => panic!(
                "page size {page_size}: expected InvalidOption, got {:?}",
                other.err()
            ),
        }
    }
    for segment_size_bytes in [0u64, 1 << 20, (1 << 32) + 1] {
        let o = Options {
            segment_size_bytes,
            ..table_opts(&vfs, Protection::Cow, TableKind::Heap)
        };
        match Database::create(DIR, o) {
            Err(Error::InvalidOption(msg)) => {
                assert!(
                    msg.contains(&format!("segment size {segment_size_bytes}")),
                    "{msg}"
                )
            }
            other => panic!(
                "segment size {segment_size_bytes}: expected InvalidOption, got {:?}",
                other.err()
            ),
        }
    }
    assert_eq!(vfs.stats().writes, 0);
    assert!(!vfs.exists(Path::new(DIR)).unwrap());
    // The database can still be created there with good options.
    drop(Database::create(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap());
}

#[test]
fn schema_errors_leave_the_table_unchanged() {
    let vfs = SimVfs::new(13);
    let db = cow_db_with_table(&vfs);
    let rows = commit_batches(&db, 0, 3);
    let ids: Vec<RowId> = db
        .begin()
        .scan(TABLE)
        .unwrap()
        .iter()
        .map(|(id, _)| *id)
        .collect();

    let bad_rows: Vec<(&str, Row)> = vec![
        ("too few values", vec![Value::Int8(100)]),
        (
            "too many values",
            vec![Value::Int8(100), Value::Null, Value::Null],
        ),
        (
            "wrong type",
            vec![Value::Int4(100), Value::Text("x".into())],
        ),
        (
            "text into int8",
            vec![Value::Text("100".into()), Value::Text("x".into())],
        ),
        (
            "null into not null",
            vec![Value::Null, Value::Text("x".into())],
        ),
    ];
    for (what, bad) in &bad_rows {
        let mut tx = db.begin();
        match tx.insert(TABLE, bad) {
            Err(Error::SchemaMismatch { table, reason }) => {
                assert_eq!(table, TABLE, "{what}");
                assert!(!reason.is_empty(), "{what}");
            }
            other => panic!("{what}: insert: expected SchemaMismatch, got {other:?}"),
        }
        match tx.update(TABLE, ids[0], bad) {
            Err(Error::SchemaMismatch { table, .. }) => assert_eq!(table, TABLE, "{what}"),
            other => panic!("{what}: update: expected SchemaMismatch, got {other:?}"),
        }
        // The transaction is still usable and commits nothing from the failed calls.
        tx.commit().unwrap();
        assert_eq!(contents(&db), rows, "{what}");
    }
    // The reason names the problem.
    let mut tx = db.begin();
    match tx.insert(TABLE, &[Value::Null, Value::Null]) {
        Err(Error::SchemaMismatch { reason, .. }) => assert_eq!(
            reason,
            "null value in column \"id\" violates not-null constraint"
        ),
        other => panic!("expected SchemaMismatch, got {other:?}"),
    }
    match tx.insert(TABLE, &[Value::Int8(1)]) {
        Err(Error::SchemaMismatch { reason, .. }) => {
            assert_eq!(reason, "1 values for 2 columns")
        }
        other => panic!("expected SchemaMismatch, got {other:?}"),
    }
    drop(tx);
    assert_eq!(contents(&db), rows);
}

#[test]
fn failed_row_in_the_middle_of_a_transaction_does_not_undo_the_rest() {
    let vfs = SimVfs::new(14);
    let db = cow_db_with_table(&vfs);
    let mut rows = commit_batches(&db, 0, 1);
    let mut tx = db.begin();
    tx.insert(TABLE, &labelled_row(3)).unwrap();
    expect_schema_mismatch(tx.insert(TABLE, &[Value::Null, Value::Null]));
    tx.insert(TABLE, &labelled_row(4)).unwrap();
    tx.commit().unwrap();
    rows.push(labelled_row(3));
    rows.push(labelled_row(4));
    assert_eq!(contents(&db), rows);
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    assert_eq!(contents(&db), rows);
}

#[test]
fn failed_insert_many_inserts_nothing() {
    let vfs = SimVfs::new(15);
    let db = cow_db_with_table(&vfs);
    let rows = commit_batches(&db, 0, 1);
    let mut tx = db.begin();
    let batch = vec![
        labelled_row(10),
        labelled_row(11),
        vec![Value::Null, Value::Null],
        labelled_row(12),
    ];
    expect_schema_mismatch(tx.insert_many(TABLE, &batch));
    // The failed call must have had no effect: the transaction sees only the old rows,
    // and committing it changes nothing.
    assert_eq!(tx.scan(TABLE).unwrap().len(), rows.len());
    tx.commit().unwrap();
    assert_eq!(contents(&db), rows);
}

#[test]
fn failed_insert_many_never_changes_what_a_crash_brings_back() {
    let vfs = SimVfs::new(18);
    let db = cow_db_with_table(&vfs);
    commit_batches(&db, 0, 1);
    let mut tx = db.begin();
    let batch = vec![
        labelled_row(10),
        labelled_row(11),
        vec![Value::Null, Value::Null],
    ];
    expect_schema_mismatch(tx.insert_many(TABLE, &batch));
    tx.commit().unwrap();
    // What a committed transaction left visible must be what recovery brings back.
    let before = contents(&db);
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    assert_eq!(contents(&db), before);
}

#[test]
fn insert_many_with_a_row_too_large_inserts_nothing() {
    let vfs = SimVfs::new(19);
    let db = cow_db_with_table(&vfs);
    let rows = commit_batches(&db, 0, 1);
    // An indexed value is never stored out of line: a row with one longer than a page
    // is too large.
    db.create_index(&walden::IndexSpec {
        name: "t_name",
        table: TABLE,
        columns: &["name"],
        ..Default::default()
    })
    .unwrap();
    let mut tx = db.begin();
    let batch = vec![
        labelled_row(10),
        vec![Value::Int8(11), Value::Text("x".repeat(9000))],
    ];
    match tx.insert_many(TABLE, &batch) {
        Err(Error::RowTooLarge { size, .. }) => assert_eq!(size, 9012),
        other => panic!("expected RowTooLarge, got {other:?}"),
    }
    tx.commit().unwrap();
    assert_eq!(contents(&db), rows);
}

#[test]
fn unknown_and_duplicate_tables() {
    let vfs = SimVfs::new(16);
    let db = cow_db_with_table(&vfs);
    let rows = commit_batches(&db, 0, 2);
    let some_id = db.begin().scan(TABLE).unwrap()[0].0;

    let mut tx = db.begin();
    match tx.insert("nope", &labelled_row(1)) {
        Err(Error::NoSuchTable(name)) => assert_eq!(name, "nope"),
        other => panic!("insert: expected NoSuchTable, got {other:?}"),
    }
    match tx.scan("nope") {
        Err(Error::NoSuchTable(name)) => assert_eq!(name, "nope"),
        other => panic!("scan: expected NoSuchTable, got {other:?}"),
    }
    match tx.get("nope", some_id) {
        Err(Error::NoSuchTable(name)) => assert_eq!(name, "nope"),
        other => panic!("get: expected NoSuchTable, got {other:?}"),
    }
    match tx.update("nope", some_id, &labelled_row(1)) {
        Err(Error::NoSuchTable(name)) => assert_eq!(name, "nope"),
        other => panic!("update: expected NoSuchTable, got {other:?}"),
    }
    match tx.delete("nope", some_id) {
        Err(Error::NoSuchTable(name)) => assert_eq!(name, "nope"),
        other => panic!("delete: expected NoSuchTable, got {other:?}"),
    }
    tx.commit().unwrap();
    match db.vacuum("nope") {
        Err(Error::NoSuchTable(name)) => assert_eq!(name, "nope"),
        other => panic!("vacuum: expected NoSuchTable, got {other:?}"),
    }
    match db.drop_table("nope") {
        Err(Error::NoSuchTable(name)) => assert_eq!(name, "nope"),
        other => panic!("drop_table: expected NoSuchTable, got {other:?}"),
    }
    match db.schema("nope") {
        Err(Error::NoSuchTable(name)) => assert_eq!(name, "nope"),
        other => panic!("schema: expected NoSuchTable, got {other:?}"),
    }
    let other_schema = Schema::new(vec![Column::new("x", ColumnType::Bool)]);
    match db.create_table(TABLE, other_schema) {
        Err(Error::TableExists(name)) => assert_eq!(name, TABLE),
        other => panic!("create_table: expected TableExists, got {other:?}"),
    }
    assert_eq!(db.table_names(), vec![TABLE.to_string()]);
    assert_eq!(db.schema(TABLE).unwrap(), id_text_schema("name"));
    assert_eq!(contents(&db), rows);
    // The refusals survive a crash: the catalog is the same after recovery.
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    assert_eq!(db.table_names(), vec![TABLE.to_string()]);
    assert_eq!(db.schema(TABLE).unwrap(), id_text_schema("name"));
    assert_eq!(contents(&db), rows);
}

#[test]
fn row_too_large_for_a_page() {
    let vfs = SimVfs::new(17);
    let db = Database::create(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    assert_eq!(db.page_size(), 8192);
    db.create_table(TABLE, id_text_schema("name")).unwrap();
    // 1,100 int8 columns: nothing to store out of line.
    let wide = Schema::new(
        (0..1100)
            .map(|i| Column::new(&format!("c{i}"), ColumnType::Int8))
            .collect(),
    );
    db.create_table("wide", wide).unwrap();
    let rows = commit_batches(&db, 0, 2);
    let (some_id, some_row) = db.begin().scan(TABLE).unwrap()[0].clone();
    let mut tx = db.begin();
    let w = vec![Value::Int8(1); 1100];
    let wide_id = tx.insert("wide", &vec![Value::Null; 1100]).unwrap();
    // Column count (2 bytes), null bitmap (138), 1,100 int8s.
    let size = 2 + 138 + 8 * 1100;
    let max = max_row_bytes(8192);
    assert_eq!(max, 8192 - 32 - 4 - 22);
    match tx.insert("wide", &w) {
        Err(Error::RowTooLarge { size: s, max: m }) => assert_eq!((s, m), (size, max)),
        other => panic!("insert: expected RowTooLarge, got {other:?}"),
    }
    match tx.update("wide", wide_id, &w) {
        Err(Error::RowTooLarge { size: s, max: m }) => assert_eq!((s, m), (size, max)),
        other => panic!("update: expected RowTooLarge, got {other:?}"),
    }
    // A text longer than a page is stored out of line; so is the longest that would
    // fit in the row.
    let big = vec![Value::Int8(99), Value::Text("x".repeat(9000))];
    tx.insert(TABLE, &big).unwrap();
    let updated = vec![some_row[0].clone(), Value::Text("z".repeat(9000))];
    tx.update(TABLE, some_id, &updated).unwrap();
    let fits = vec![Value::Int8(98), Value::Text("y".repeat(max - 12))];
    tx.insert(TABLE, &fits).unwrap();
    tx.commit().unwrap();
    let mut expected: Vec<Row> = rows
        .into_iter()
        .map(|r| if r == some_row { updated.clone() } else { r })
        .collect();
    expected.push(fits);
    expected.push(big);
    assert_eq!(contents(&db), expected);
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    assert_eq!(contents(&db), expected);
}
