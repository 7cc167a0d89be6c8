//! Integrity at the edges (issue 11): what could go wrong is a second opener sharing the
//! directory, a database made over a damaged one or over a user's files, a missing or
//! damaged transaction-status file read as "nothing committed", a log that lost a
//! segment taken for one that ended, a full disk leaving a half-made segment that blocks
//! every later open, and a database setting forgotten at reopen. Each ends in a typed
//! error naming the file, or in exactly the acknowledged data.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use walden::vfs::{CrashMode, FaultKind, FaultOps, RealVfs, SimVfs, Vfs};
use walden::*;

mod support;
use support::{
    default_opts, id_text_schema, padded_row, sim_opts, sorted_ids, wal_segment, DIR, TABLE,
};

/// The options of these tests: [`sim_opts`] with a 4 MiB buffer pool and uncompressed WAL.
fn opts(vfs: &SimVfs) -> Options {
    Options {
        buffer_pool_bytes: 4 << 20,
        wal_compression: WalCompression::Off,
        ..sim_opts(vfs)
    }
}

/// Commits batches of 100 rows from id `first` until the log reaches segment
/// `segments`; returns the ids committed.
fn fill_to_segment(db: &Database, vfs: &SimVfs, first: i64, segments: u64) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut next = first;
    while last_segment(vfs) < segments {
        let rows: Vec<Row> = (next..next + 100).map(|id| padded_row(id, 300)).collect();
        let mut tx = db.begin();
        tx.insert_many(TABLE, &rows).unwrap();
        tx.commit().unwrap();
        ids.extend(next..next + 100);
        next += 100;
    }
    ids
}

fn last_segment(vfs: &SimVfs) -> u64 {
    vfs.list_dir(&Path::new(DIR).join("wal"))
        .unwrap()
        .iter()
        .filter_map(|n| walden::wal::format::parse_segment_name(n))
        .max()
        .unwrap_or(0)
}

/// Writes `bytes` over the start of the file at `path`, durably.
fn overwrite(vfs: &SimVfs, path: &Path, bytes: &[u8]) {
    let f = vfs.open(path, walden::vfs::OpenMode::Existing).unwrap();
    f.write_all_at(bytes, 0).unwrap();
    f.sync_data().unwrap();
}

/// A crashed database whose log after the redo point spans segments 1 to 3; returns the
/// acknowledged ids.
fn crashed_over_three_segments(vfs: &SimVfs) -> Vec<i64> {
    let db = Database::create(DIR, opts(vfs)).unwrap();
    db.create_table(TABLE, id_text_schema("pad")).unwrap();
    let acked = fill_to_segment(&db, vfs, 0, 3);
    drop(db);
    vfs.restart(CrashMode::KeepUnsynced);
    acked
}

#[test]
fn a_second_open_in_the_same_process_is_refused() {
    let vfs = SimVfs::new(1);
    let db = Database::create(DIR, opts(&vfs)).unwrap();
    match Database::open(DIR, opts(&vfs)) {
        Err(Error::Locked { dir, lock, holder }) => {
            assert_eq!(dir, Path::new(DIR));
            assert_eq!(lock, Path::new(DIR).join("lock"));
            assert!(holder.contains("this process"), "{holder}");
        }
        other => panic!("expected Locked, got {:?}", other.err()),
    }
    match Database::open_or_create(DIR, opts(&vfs)) {
        Err(Error::Locked { .. }) => {}
        other => panic!("expected Locked, got {:?}", other.err()),
    }
    drop(db);
    Database::open(DIR, opts(&vfs)).unwrap();
}

#[test]
fn a_second_open_is_refused_on_the_real_file_system() {
    let dir = std::env::temp_dir().join(format!("walden-integrity-lock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let real = || default_opts(Arc::new(RealVfs));
    let db = Database::create(&dir, real()).unwrap();
    let second = Database::open(&dir, real());
    let pid = std::fs::read_to_string(dir.join("lock")).unwrap();
    drop(db);
    let third = Database::open(&dir, real()).map(|_| ());
    std::fs::remove_dir_all(&dir).unwrap();
    match second {
        Err(Error::Locked { holder, .. }) => {
            assert_eq!(pid.trim(), std::process::id().to_string());
            assert!(holder.contains(pid.trim()), "{holder}");
        }
        other => panic!("expected Locked, got {:?}", other.err()),
    }
    third.unwrap();
}

#[test]
fn a_missing_control_file_is_an_error_and_nothing_is_written() {
    let vfs = SimVfs::new(2);
    let db = Database::create(DIR, opts(&vfs)).unwrap();
    db.create_table(TABLE, id_text_schema("pad")).unwrap();
    let mut tx = db.begin();
    tx.insert(TABLE, &padded_row(1, 300)).unwrap();
    tx.commit().unwrap();
    db.close().unwrap();
    vfs.remove(&Path::new(DIR).join("control")).unwrap();
    let before: Vec<(String, Option<Vec<u8>>)> = vfs
        .list_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .map(|n| {
            let c = vfs.file_contents(&Path::new(DIR).join(&n));
            (n, c)
        })
        .collect();
    for r in [
        Database::open(DIR, opts(&vfs)),
        Database::open_or_create(DIR, opts(&vfs)),
    ] {
        match r {
            Err(Error::MissingControlFile { dir, found }) => {
                assert_eq!(dir, Path::new(DIR));
                assert!(found.contains("data") && found.contains("wal/"), "{found}");
            }
            other => panic!("expected MissingControlFile, got {:?}", other.err()),
        }
    }
    let after: Vec<(String, Option<Vec<u8>>)> = vfs
        .list_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .map(|n| {
            let c = vfs.file_contents(&Path::new(DIR).join(&n));
            (n, c)
        })
        .collect();
    assert_eq!(before, after, "the damaged database was changed");
}

/// A creation interrupted before its control file was durable (its `creating` marker
/// still there) left no database and acknowledged nothing: opening says there is no
/// database, and creating there again clears what it left and makes a new one.
#[test]
fn an_interrupted_creation_is_no_database_and_can_be_created_again() {
    let vfs = SimVfs::new(4);
    let db = Database::create(DIR, opts(&vfs)).unwrap();
    assert!(
        !vfs.exists(&Path::new(DIR).join("creating")).unwrap(),
        "the marker outlived the creation"
    );
    db.create_table(TABLE, id_text_schema("pad")).unwrap();
    db.close().unwrap();
    // The state a kill between the marker and the control file leaves.
    vfs.remove(&Path::new(DIR).join("control")).unwrap();
    drop(
        vfs.open(
            &Path::new(DIR).join("creating"),
            walden::vfs::OpenMode::CreateNew,
        )
        .unwrap(),
    );
    match Database::open(DIR, opts(&vfs)) {
        Err(Error::NotADatabase { path }) => assert_eq!(path, Path::new(DIR)),
        other => panic!("expected NotADatabase, got {:?}", other.err()),
    }
    let db = Database::open_or_create(DIR, opts(&vfs)).unwrap();
    assert!(db.table_names().is_empty(), "{:?}", db.table_names());
    assert!(db.check().unwrap().is_clean());
    db.close().unwrap();
    assert!(!vfs.exists(&Path::new(DIR).join("creating")).unwrap());
    drop(Database::open(DIR, opts(&vfs)).unwrap());
}

/// A creation that crashed after its control file was durable (the marker left beside
/// it) made a database: it opens, the marker goes, and a control file lost afterwards
/// is damage again, never an interrupted creation whose files could be cleared.
#[test]
fn a_marker_left_beside_a_control_file_is_removed_on_open() {
    let vfs = SimVfs::new(5);
    let db = Database::create(DIR, opts(&vfs)).unwrap();
    db.create_table(TABLE, id_text_schema("pad")).unwrap();
    let mut tx = db.begin();
    tx.insert(TABLE, &padded_row(1, 30)).unwrap();
    tx.commit().unwrap();
    db.close().unwrap();
    let marker = Path::new(DIR).join("creating");
    drop(vfs.open(&marker, walden::vfs::OpenMode::CreateNew).unwrap());
    let db = Database::open(DIR, opts(&vfs)).unwrap();
    assert!(
        !vfs.exists(&marker).unwrap(),
        "the marker outlived the open"
    );
    assert_eq!(db.begin().scan(TABLE).unwrap().len(), 1);
    db.close().unwrap();
    vfs.remove(&Path::new(DIR).join("control")).unwrap();
    match Database::open_or_create(DIR, opts(&vfs)) {
        Err(Error::MissingControlFile { .. }) => {}
        other => panic!("expected MissingControlFile, got {:?}", other.err()),
    }
}

#[test]
fn no_database_is_made_in_a_directory_with_other_files() {
    let vfs = SimVfs::new(3);
    vfs.create_dir_all(Path::new(DIR)).unwrap();
    let user_file = Path::new(DIR).join("data");
    let f = vfs
        .open(&user_file, walden::vfs::OpenMode::CreateNew)
        .unwrap();
    f.write_all_at(b"my thesis", 0).unwrap();
    drop(f);
    for r in [
        Database::create(DIR, opts(&vfs)),
        Database::open_or_create(DIR, opts(&vfs)),
    ] {
        match r {
            Err(Error::DirectoryNotEmpty { .. } | Error::MissingControlFile { .. }) => {}
            other => panic!("expected a refusal, got {:?}", other.err()),
        }
    }
    assert_eq!(vfs.file_contents(&user_file).unwrap(), b"my thesis");
    // Some other file: DirectoryNotEmpty names it.
    vfs.create_dir_all(Path::new("other")).unwrap();
    let f = vfs
        .open(
            &Path::new("other").join("notes.txt"),
            walden::vfs::OpenMode::CreateNew,
        )
        .unwrap();
    f.write_all_at(b"x", 0).unwrap();
    match Database::open_or_create("other", opts(&vfs)) {
        Err(Error::DirectoryNotEmpty { dir, entries }) => {
            assert_eq!(dir, Path::new("other"));
            assert_eq!(entries, "notes.txt");
        }
        other => panic!("expected DirectoryNotEmpty, got {:?}", other.err()),
    }
}

#[test]
fn a_missing_or_damaged_xact_file_is_an_error() {
    let xact = Path::new(DIR).join("xact");
    type Damage = fn(&SimVfs, &Path);
    let cases: [(&str, Damage, &str); 4] = [
        ("missing", |v, p| v.remove(p).unwrap(), "is missing"),
        (
            "truncated",
            |v, p| {
                let len = v.file_contents(p).unwrap().len() as u64;
                assert!(v.truncate_file(p, len - 1));
            },
            "truncated or extended",
        ),
        (
            "flipped status byte",
            |v, p| assert!(v.corrupt_byte(p, 45, 0x01)),
            "checksum mismatch in block 0",
        ),
        (
            "zeroed header",
            |v, p| assert!(v.corrupt_byte(p, 0, b'W')),
            "bad magic",
        ),
    ];
    for (what, damage, expected) in cases {
        let vfs = SimVfs::new(4);
        let db = Database::create(DIR, opts(&vfs)).unwrap();
        db.create_table(TABLE, id_text_schema("pad")).unwrap();
        for id in 0..10 {
            let mut tx = db.begin();
            tx.insert(TABLE, &padded_row(id, 300)).unwrap();
            if id % 3 == 0 {
                tx.rollback().unwrap();
            } else {
                tx.commit().unwrap();
            }
        }
        db.close().unwrap();
        damage(&vfs, &xact);
        match Database::open(DIR, opts(&vfs)) {
            Err(e @ (Error::MissingFile { .. } | Error::CorruptFile { .. })) => {
                let msg = e.to_string();
                assert!(msg.contains("db/xact"), "{what}: {msg}");
                assert!(msg.contains(expected), "{what}: {msg}");
            }
            other => panic!("{what}: expected an xact error, got {:?}", other.err()),
        }
    }
}

#[test]
fn an_older_copy_of_xact_is_refused() {
    let vfs = SimVfs::new(5);
    let xact = Path::new(DIR).join("xact");
    let db = Database::create(DIR, opts(&vfs)).unwrap();
    db.create_table(TABLE, id_text_schema("pad")).unwrap();
    db.checkpoint().unwrap();
    let old = vfs.file_contents(&xact).unwrap();
    let mut tx = db.begin();
    tx.insert(TABLE, &padded_row(1, 300)).unwrap();
    tx.commit().unwrap();
    db.close().unwrap();
    overwrite(&vfs, &xact, &old);
    match Database::open(DIR, opts(&vfs)) {
        Err(Error::CorruptFile { path, reason }) => {
            assert_eq!(path, xact);
            assert!(reason.contains("older copy"), "{reason}");
        }
        other => panic!("expected CorruptFile, got {:?}", other.err()),
    }
}

#[test]
fn a_missing_second_segment_is_an_error_not_an_empty_log() {
    let vfs = SimVfs::new(6);
    crashed_over_three_segments(&vfs);
    vfs.remove(&wal_segment(2)).unwrap();
    match Database::open(DIR, opts(&vfs)) {
        Err(Error::MissingWalSegment {
            path,
            segment: 2,
            reason,
        }) => {
            assert_eq!(path, wal_segment(2));
            assert!(reason.contains("segment 1 ends with a switch"), "{reason}");
        }
        other => panic!("expected MissingWalSegment, got {:?}", other.err()),
    }
}

#[test]
fn a_segment_copied_over_the_next_is_an_error() {
    let vfs = SimVfs::new(7);
    crashed_over_three_segments(&vfs);
    overwrite(
        &vfs,
        &wal_segment(2),
        &vfs.file_contents(&wal_segment(1)).unwrap(),
    );
    match Database::open(DIR, opts(&vfs)) {
        Err(Error::CorruptWal { path, reason, .. }) => {
            assert_eq!(path, wal_segment(2));
            assert!(reason.contains("names segment 1"), "{reason}");
        }
        other => panic!("expected CorruptWal, got {:?}", other.err()),
    }
}

#[test]
fn a_damaged_frame_at_the_end_of_a_segment_is_an_error() {
    let vfs = SimVfs::new(8);
    crashed_over_three_segments(&vfs);
    // The last record frame of segment 1: later segments prove it was durable.
    let bytes = vfs.file_contents(&wal_segment(1)).unwrap();
    let frames = walden::wal::format::FRAME_HEADER_BYTES as usize;
    let mut at = walden::wal::format::SEGMENT_HEADER_BYTES as usize;
    let mut last = at;
    while let Some(h) = walden::wal::format::FrameHeader::decode(&bytes[at..at + frames]) {
        if h.flags & walden::wal::format::FLAG_SWITCH != 0 {
            break;
        }
        last = at;
        at += frames + h.payload_len as usize;
    }
    assert!(vfs.corrupt_byte(&wal_segment(1), (last + frames + 10) as u64, 0x04));
    match Database::open(DIR, opts(&vfs)) {
        Err(Error::CorruptWal { path, reason, .. }) => {
            assert_eq!(path, wal_segment(1));
            assert!(reason.contains("durable"), "{reason}");
        }
        other => panic!("expected CorruptWal, got {:?}", other.err()),
    }
}

/// A full disk while a segment is made (ahead of need, or at the switch): the change
/// fails (refused with `DiskFull`, or the database fenced), and the next open (no
/// half-made segment left under a segment's name, no temporary file) brings back every
/// acknowledged row.
#[test]
fn a_full_disk_while_a_segment_is_made_never_blocks_the_next_open() {
    let mut hit_segment_creation = 0;
    // A probe run finds how many writes after reaching segment 2 segment 3 is made;
    // the faults land on the writes around that point.
    let probe = SimVfs::new(9);
    let db = Database::create(DIR, opts(&probe)).unwrap();
    db.create_table(TABLE, id_text_schema("pad")).unwrap();
    fill_to_segment(&db, &probe, 0, 2);
    let w0 = probe.stats().writes;
    // Segment 3 is made ahead of need (`Wal::prepare_next`): its file appears under its
    // temporary name before the switch renames it.
    let mut next = 1_000_000;
    let three_made = || {
        probe
            .list_dir(&Path::new(DIR).join("wal"))
            .unwrap()
            .iter()
            .any(|n| n.starts_with(&format!("{:016x}", 3)))
    };
    while !three_made() {
        let rows: Vec<Row> = (next..next + 100).map(|id| padded_row(id, 300)).collect();
        let mut tx = db.begin();
        tx.insert_many(TABLE, &rows).unwrap();
        tx.commit().unwrap();
        next += 100;
    }
    let made_at = probe.stats().writes - w0;
    drop(db);
    for k in made_at.saturating_sub(12).max(1)..=made_at + 2 {
        let vfs = SimVfs::new(9);
        let db = Database::create(DIR, opts(&vfs)).unwrap();
        db.create_table(TABLE, id_text_schema("pad")).unwrap();
        let mut acked = fill_to_segment(&db, &vfs, 0, 2);
        // Fail the k-th write from here on with ENOSPC, while committing towards
        // segment 3.
        vfs.fail_nth(k, FaultOps::Write, FaultKind::Enospc);
        let mut next = 1_000_000;
        let failure = loop {
            let rows: Vec<Row> = (next..next + 100).map(|id| padded_row(id, 300)).collect();
            let mut tx = db.begin();
            let r = tx.insert_many(TABLE, &rows).and_then(|_| tx.commit());
            match r {
                Ok(()) => acked.extend(next..next + 100),
                Err(e) => break e,
            }
            next += 100;
            assert!(last_segment(&vfs) < 5, "k={k}: the fault never fired");
        };
        // A segment made at the switch fails with Io; one made ahead of need
        // (`Wal::prepare_next`) with DiskFull, which fences nothing.
        if let Error::Io { path, .. } | Error::DiskFull { path, .. } = &failure {
            if path.to_string_lossy().ends_with(".tmp") {
                hit_segment_creation += 1;
            }
        }
        drop(db);
        vfs.restart(CrashMode::KeepUnsynced);
        let db = Database::open(DIR, opts(&vfs)).unwrap();
        let got = sorted_ids(&db, TABLE);
        // The failing commit is in doubt: it may or may not have become durable.
        let doubt: Vec<i64> = (next..next + 100).collect();
        let without_doubt: Vec<i64> = got.iter().copied().filter(|i| !doubt.contains(i)).collect();
        acked.sort_unstable();
        assert_eq!(without_doubt, acked, "k={k}: {failure}");
        let leftovers: Vec<String> = vfs
            .list_dir(&Path::new(DIR).join("wal"))
            .unwrap()
            .into_iter()
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "k={k}: {leftovers:?}");
    }
    assert!(
        hit_segment_creation > 0,
        "no fault landed in a segment's creation"
    );
}

#[test]
fn wal_compression_set_on_a_database_survives_a_reopen() {
    let vfs = SimVfs::new(10);
    let db = Database::create(DIR, opts(&vfs)).unwrap();
    assert_eq!(db.wal_compression(), WalCompression::Off);
    db.set_wal_compression(WalCompression::Lz4).unwrap();
    drop(db);
    vfs.restart(CrashMode::KeepUnsynced);
    // The options name zstd; the database's own setting wins.
    let o = Options {
        wal_compression: WalCompression::Zstd,
        ..opts(&vfs)
    };
    let db = Database::open(DIR, o).unwrap();
    assert_eq!(db.wal_compression(), WalCompression::Lz4);
}

/// The operator's way out: after a refused open, `accept_data_loss` opens what can be
/// read, says what it dropped (in the report and in `data-loss.log`), sets later
/// segments aside, and the database then opens normally with the same contents.
#[test]
fn accept_data_loss_opens_what_can_be_read_and_says_what_was_dropped() {
    let vfs = SimVfs::new(11);
    let acked = crashed_over_three_segments(&vfs);
    vfs.remove(&wal_segment(2)).unwrap();
    assert!(matches!(
        Database::open(DIR, opts(&vfs)),
        Err(Error::MissingWalSegment { .. })
    ));
    let o = Options {
        accept_data_loss: true,
        ..opts(&vfs)
    };
    let db = Database::open(DIR, o).unwrap();
    let report = db.recovery_report().clone();
    let got = sorted_ids(&db, TABLE);
    assert!(!got.is_empty() && got.len() < acked.len(), "{}", got.len());
    // What survives is a prefix of the acknowledged commits (whole transactions).
    assert_eq!(got[..], acked[..got.len()]);
    assert_eq!(got.len() % 100, 0);
    let text = report.data_loss.join("\n");
    assert!(
        text.contains("was dropped") && text.contains("segment 2"),
        "{text}"
    );
    assert!(text.contains("0000000000000003.lost"), "{text}");
    let log = vfs
        .file_contents(&Path::new(DIR).join("data-loss.log"))
        .unwrap();
    assert!(String::from_utf8(log).unwrap().contains("segment 2"));
    db.close().unwrap();
    let db = Database::open(DIR, opts(&vfs)).unwrap();
    assert_eq!(sorted_ids(&db, TABLE), got);
    assert!(db.recovery_report().data_loss.is_empty());
}

#[test]
fn accept_data_loss_with_a_missing_xact_counts_old_transactions_as_not_committed() {
    let vfs = SimVfs::new(12);
    let db = Database::create(DIR, opts(&vfs)).unwrap();
    db.create_table(TABLE, id_text_schema("pad")).unwrap();
    let mut tx = db.begin();
    tx.insert(TABLE, &padded_row(1, 300)).unwrap();
    tx.commit().unwrap();
    db.close().unwrap();
    vfs.remove(&Path::new(DIR).join("xact")).unwrap();
    let o = Options {
        accept_data_loss: true,
        ..opts(&vfs)
    };
    let db = Database::open(DIR, o).unwrap();
    let text = db.recovery_report().data_loss.join("\n");
    assert!(text.contains("db/xact is missing"), "{text}");
    assert!(text.contains("is lost"), "{text}");
    // The row's transaction ended before the checkpoint: its status is gone with the
    // file, so it counts as not committed.
    assert_eq!(sorted_ids(&db, TABLE), Vec::<i64>::new());
}
