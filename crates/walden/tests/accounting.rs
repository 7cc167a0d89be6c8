//! Accounting: what could go wrong is a counter that drifts from what really happened —
//! WAL bytes counted that never reached the files (or the reverse), page images logged in
//! a mode that should not log them, checkpoints counted but not run — or a checkpoint
//! trigger (WAL volume, elapsed time) that does not fire, or fires when it should not.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use walden::access::heap::wal_records::{
    HeapRecord, UpdateLink, HEAP_DELETE, HEAP_INSERT, HEAP_UPDATE_NEW, HEAP_UPDATE_OLD,
};
use walden::access::slotted::{SlottedRecord, HEAP_INIT};
use walden::clock::ManualClock;
use walden::stats::StatsSnapshot;
use walden::txn::{ABORT, COMMIT};
use walden::vfs::{CrashMode, SimVfs};
use walden::wal::format::FRAME_HEADER_BYTES;
use walden::wal::payload::{encode_record, Payload};
use walden::wal::record::{record_len, RecordType, MAX_RECORD_HEADER_BYTES};
use walden::*;

mod support;
use support::{id_text_schema, table_opts, DIR, TABLE};

const PAGE_SIZE: usize = 8192;

/// The options of these tests: [`table_opts`] with 8 KiB pages, a 64 MiB pool and a
/// manual clock.
fn opts(vfs: &SimVfs, protection: Protection) -> Options {
    Options {
        page_size: PAGE_SIZE,
        buffer_pool_bytes: 64 << 20,
        clock: Arc::new(ManualClock::default()),
        // Heap tables: these tests count heap records byte for byte.
        ..table_opts(vfs, protection, TableKind::Heap)
    }
}

fn row(id: i64, pad: usize) -> Row {
    vec![Value::Int8(id), Value::Text("p".repeat(pad))]
}

fn encoded_len(r: &Row) -> u64 {
    let mut out = Vec::new();
    id_text_schema("payload").encode_row(r, &mut out);
    out.len() as u64
}

/// Bytes of a record. The tests' transaction ids, page and slot numbers are all small
/// (one varint byte), so any small values give the same length.
fn record_bytes(rec: &dyn Payload) -> u64 {
    encode_record(&mut Vec::new(), rec, 1) as u64
}

/// Bytes of a HeapInsert record holding the given rows (at neighbouring slots).
fn heap_insert_bytes(rows: &[&Row]) -> u64 {
    let rows = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut out = Vec::new();
            id_text_schema("payload").encode_row(r, &mut out);
            assert_eq!(out.len() as u64, encoded_len(r));
            (i as u16 + 1, out)
        })
        .collect();
    record_bytes(&HeapRecord::Insert {
        page: 1,
        cid: 0,
        rows,
    })
}

fn commit_bytes() -> u64 {
    record_len(1, 0) as u64
}

fn heap_init_bytes() -> u64 {
    record_bytes(&SlottedRecord::Init { page: 1, table: 1 })
}

fn heap_update_old_bytes() -> u64 {
    record_bytes(&HeapRecord::UpdateOld {
        page: 1,
        links: vec![UpdateLink {
            slot: 3,
            new_page: 1,
            new_slot: 20,
        }],
    })
}

/// (records, bytes) of one record kind.
fn kind(s: &StatsSnapshot, k: RecordType) -> (u64, u64) {
    let c = s.by_kind.iter().find(|c| c.code == k.code).unwrap();
    (c.records, c.bytes)
}

fn wal_on_disk(vfs: &SimVfs) -> u64 {
    vfs.bytes_written_with_prefix(Path::new("db/wal"))
}

/// Asserts that the WAL bytes the engine counted since `stats_before` equal the bytes
/// the file layer saw written under `db/wal` since `disk_before`.
fn assert_wal_bytes_match(
    db: &Database,
    vfs: &SimVfs,
    stats_before: u64,
    disk_before: u64,
    when: &str,
) {
    let counted = db.stats().wal_bytes_written - stats_before;
    let written = wal_on_disk(vfs) - disk_before;
    assert_eq!(
        counted, written,
        "{when}: engine counted {counted}, files got {written}"
    );
}

#[test]
fn wal_bytes_counted_equal_bytes_that_reached_the_wal_files() {
    let modes = [Protection::Cow, Protection::FullPage, Protection::None];
    for (protection, codec) in modes
        .into_iter()
        .flat_map(|p| WalCompression::ALL.map(|c| (p, c)))
    {
        let vfs = SimVfs::new(1);
        let options = Options {
            wal_compression: codec,
            ..opts(&vfs, protection)
        };
        let db = Database::create(DIR, options).unwrap();
        // From creation on, the two agree absolutely (segment header included).
        assert_wal_bytes_match(&db, &vfs, 0, 0, "after create");
        db.create_table(TABLE, id_text_schema("payload")).unwrap();
        assert_wal_bytes_match(&db, &vfs, 0, 0, "after create_table");

        let s0 = db.stats().wal_bytes_written;
        let d0 = wal_on_disk(&vfs);
        // Some 3.5 MiB of WAL that no codec shrinks much: more than one 2 MiB segment, so
        // a switch frame and a new segment header are counted too.
        let mut ids = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for b in 0..100i64 {
            let mut tx = db.begin();
            let rows: Vec<Row> = (0..100)
                .map(|i| {
                    let text: String = (0..300)
                        .map(|_| {
                            seed ^= seed << 13;
                            seed ^= seed >> 7;
                            seed ^= seed << 17;
                            char::from(b'!' + (seed % 90) as u8)
                        })
                        .collect();
                    vec![Value::Int8(b * 100 + i), Value::Text(text)]
                })
                .collect();
            ids.extend(tx.insert_many(TABLE, &rows).unwrap());
            tx.commit().unwrap();
        }
        assert_wal_bytes_match(&db, &vfs, s0, d0, "after inserts");
        assert!(
            vfs.file_contents(Path::new("db/wal/0000000000000002"))
                .is_some(),
            "{protection:?} {codec}"
        );
        let d = db.stats();
        if codec == WalCompression::Off {
            // Uncompressed: every record byte written out is a byte in the files.
            assert!(d.wal_bytes_written > d.wal_frame_raw_bytes);
        } else {
            assert!(
                d.wal_bytes_written < d.wal_frame_raw_bytes,
                "{codec}: {d:?}"
            );
        }
        let mut tx = db.begin();
        for (i, id) in ids.iter().enumerate().take(500) {
            tx.update(TABLE, *id, &row(i as i64, 10)).unwrap();
        }
        tx.commit().unwrap();
        let mut tx = db.begin();
        for id in &ids[500..1000] {
            tx.delete(TABLE, *id).unwrap();
        }
        tx.commit().unwrap();
        assert_wal_bytes_match(&db, &vfs, s0, d0, "after updates and deletes");
        // A rollback appends an abort record that is only written out by a later flush.
        let mut tx = db.begin();
        tx.insert(TABLE, &row(-1, 5)).unwrap();
        tx.rollback().unwrap();
        assert_wal_bytes_match(&db, &vfs, s0, d0, "after rollback");
        db.checkpoint().unwrap();
        assert_wal_bytes_match(&db, &vfs, s0, d0, "after checkpoint");
        assert!(db.vacuum(TABLE).unwrap() >= 1000);
        db.flush_wal().unwrap();
        assert_wal_bytes_match(&db, &vfs, s0, d0, "after vacuum");
        // More segments, so that checkpointed ones are recycled under new names.
        for b in 0..100i64 {
            let mut tx = db.begin();
            let rows: Vec<Row> = (0..100).map(|i| row(20_000 + b * 100 + i, 300)).collect();
            tx.insert_many(TABLE, &rows).unwrap();
            tx.commit().unwrap();
            if b % 30 == 0 {
                db.checkpoint().unwrap();
            }
        }
        assert_wal_bytes_match(&db, &vfs, s0, d0, "after recycling");
        let counted = db.stats().wal_bytes_written;
        eprintln!(
            "{protection:?}: {counted} WAL bytes counted, {} written, {} record bytes, {} page images",
            wal_on_disk(&vfs),
            db.stats().wal_record_bytes,
            db.stats().page_images
        );
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        // After a reopen the counters start again from zero and count recovery's writes.
        let d1 = wal_on_disk(&vfs);
        let db = Database::open(DIR, opts(&vfs, protection)).unwrap();
        assert_wal_bytes_match(&db, &vfs, 0, d1, "after reopen");
        let mut tx = db.begin();
        tx.insert(TABLE, &row(-2, 5)).unwrap();
        tx.commit().unwrap();
        assert_wal_bytes_match(&db, &vfs, 0, d1, "after a commit on the reopened database");
    }
}

#[test]
fn single_insert_transaction_counts_exactly() {
    let vfs = SimVfs::new(2);
    let db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
    db.create_table(TABLE, id_text_schema("payload")).unwrap();

    // The first insert into an empty table also adds its first page.
    let first = row(1, 3);
    let before = db.stats();
    let mut tx = db.begin();
    tx.insert(TABLE, &first).unwrap();
    let t = tx.stats().clone();
    assert_eq!(t.records[HEAP_INIT.code as usize], 1);
    assert_eq!(t.bytes[HEAP_INIT.code as usize], heap_init_bytes());
    assert_eq!(t.records[HEAP_INSERT.code as usize], 1);
    assert_eq!(
        t.bytes[HEAP_INSERT.code as usize],
        heap_insert_bytes(&[&first])
    );
    assert_eq!(t.wal_records(), 2);
    assert_eq!(t.page_images(), 0);
    tx.commit().unwrap();
    let d = db.stats().since(&before);
    assert_eq!(kind(&d, HEAP_INIT), (1, heap_init_bytes()));
    assert_eq!(kind(&d, COMMIT), (1, commit_bytes()));
    assert_eq!(d.commits, 1);

    // A single-row insert into the existing page: one HeapInsert, one Commit, one frame,
    // one fsync.
    let second = row(2, 40);
    let before = db.stats();
    let mut tx = db.begin();
    tx.insert(TABLE, &second).unwrap();
    let t = tx.stats().clone();
    let insert_bytes = heap_insert_bytes(&[&second]);
    assert_eq!(t.records[HEAP_INSERT.code as usize], 1);
    assert_eq!(t.bytes[HEAP_INSERT.code as usize], insert_bytes);
    assert_eq!((t.wal_records(), t.wal_bytes()), (1, insert_bytes));
    tx.commit().unwrap();
    let d = db.stats().since(&before);
    assert_eq!(kind(&d, HEAP_INSERT), (1, insert_bytes));
    assert_eq!(kind(&d, COMMIT), (1, commit_bytes()));
    assert_eq!(d.wal_records, 2);
    assert_eq!(d.wal_record_bytes, insert_bytes + commit_bytes());
    // The frame, and the end marker written after its sync (overwritten by the next).
    assert_eq!(
        d.wal_bytes_written,
        2 * FRAME_HEADER_BYTES + insert_bytes + commit_bytes()
    );
    assert_eq!((d.commits, d.aborts), (1, 0));
    assert_eq!(d.wal_fsyncs, 1);
    assert_eq!(
        (d.data_pages_written, d.data_fsyncs, d.checkpoints),
        (0, 0, 0)
    );

    // insert_many puts rows that share a page into one record.
    let rows = [row(3, 1), row(4, 2), row(5, 3)];
    let before = db.stats();
    let mut tx = db.begin();
    tx.insert_many(TABLE, &rows).unwrap();
    let expected = heap_insert_bytes(&rows.iter().collect::<Vec<_>>());
    assert_eq!(tx.stats().records[HEAP_INSERT.code as usize], 1);
    assert_eq!(tx.stats().bytes[HEAP_INSERT.code as usize], expected);
    tx.commit().unwrap();
    assert_eq!(kind(&db.stats().since(&before), HEAP_INSERT), (1, expected));

    // A read-only commit writes nothing and is not counted; a rollback is counted as an
    // abort and logs one abort record.
    let before = db.stats();
    let mut tx = db.begin();
    assert_eq!(tx.scan(TABLE).unwrap().len(), 5);
    tx.commit().unwrap();
    assert_eq!(db.stats().since(&before).wal_records, 0);
    assert_eq!(db.stats().since(&before).commits, 0);
    let mut tx = db.begin();
    tx.insert(TABLE, &row(6, 1)).unwrap();
    tx.rollback().unwrap();
    let d = db.stats().since(&before);
    assert_eq!((d.commits, d.aborts), (0, 1));
    assert_eq!(kind(&d, ABORT), (1, commit_bytes()));
}

#[test]
fn page_images_only_in_full_page_mode_after_a_checkpoint() {
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        let vfs = SimVfs::new(3);
        let db = Database::create(DIR, opts(&vfs, protection)).unwrap();
        db.create_table(TABLE, id_text_schema("payload")).unwrap();
        let mut tx = db.begin();
        let rows: Vec<Row> = (0..20).map(|i| row(i, 20)).collect();
        let ids = tx.insert_many(TABLE, &rows).unwrap();
        tx.commit().unwrap();
        assert_eq!(db.stats().page_images, 0, "{protection:?}");
        db.checkpoint().unwrap();
        let images = |n: u64| {
            if protection == Protection::FullPage {
                n
            } else {
                0
            }
        };

        // The first update after the checkpoint: its new version goes to the same page,
        // whose first change logs the page instead of the insert.
        let before = db.stats();
        let mut tx = db.begin();
        let new = tx.update(TABLE, ids[3], &row(3, 21)).unwrap();
        assert_eq!(new.page, ids[3].page);
        assert_eq!(tx.stats().page_images(), images(1), "{protection:?}");
        tx.commit().unwrap();
        let d = db.stats().since(&before);
        assert_eq!(d.page_images, images(1), "{protection:?}");
        // On one page the new version (a delta against the old) is logged first: it
        // takes the page image, and the old version's link follows as a record.
        assert_eq!(kind(&d, HEAP_INSERT).0, 0, "{protection:?}");
        assert_eq!(kind(&d, HEAP_UPDATE_NEW).0, 1 - images(1), "{protection:?}");
        assert_eq!(
            kind(&d, HEAP_UPDATE_OLD),
            (1, heap_update_old_bytes()),
            "{protection:?}"
        );
        if protection == Protection::FullPage {
            let header = MAX_RECORD_HEADER_BYTES as u64 + 10 + 3 + 3;
            assert!(
                d.page_image_bytes > header && d.page_image_bytes <= header + PAGE_SIZE as u64,
                "{}",
                d.page_image_bytes
            );
        } else {
            assert_eq!(d.page_image_bytes, 0);
        }

        // The second change to the page before the next checkpoint logs no image.
        let before = db.stats();
        let mut tx = db.begin();
        tx.update(TABLE, ids[4], &row(4, 21)).unwrap();
        tx.delete(TABLE, ids[5]).unwrap();
        tx.commit().unwrap();
        assert_eq!(db.stats().since(&before).page_images, 0, "{protection:?}");

        // After the next checkpoint, the first change logs an image again.
        db.checkpoint().unwrap();
        let before = db.stats();
        let mut tx = db.begin();
        tx.delete(TABLE, ids[6]).unwrap();
        tx.commit().unwrap();
        let d = db.stats().since(&before);
        assert_eq!(d.page_images, images(1), "{protection:?}");
        assert_eq!(kind(&d, HEAP_DELETE).0, 1 - images(1), "{protection:?}");
    }
}

#[test]
fn checkpoint_writes_the_dirty_pages_and_is_counted() {
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        let vfs = SimVfs::new(4);
        let db = Database::create(DIR, opts(&vfs, protection)).unwrap();
        assert_eq!(db.stats().checkpoints, 1, "the creating checkpoint");
        db.create_table(TABLE, id_text_schema("payload")).unwrap();
        let before = db.stats();
        let mut tx = db.begin();
        let rows: Vec<Row> = (0..200).map(|i| row(i, 200)).collect();
        let ids = tx.insert_many(TABLE, &rows).unwrap();
        tx.commit().unwrap();
        let pages: std::collections::BTreeSet<u64> = ids.iter().map(|id| id.page).collect();
        assert!(pages.len() >= 5, "{pages:?}");
        // Nothing reaches the data file before the checkpoint (the pool holds it all).
        let d = db.stats().since(&before);
        assert_eq!(
            (d.data_pages_written, d.checkpoints),
            (0, 0),
            "{protection:?}"
        );

        db.checkpoint().unwrap();
        let d = db.stats().since(&before);
        // Copy-on-write also writes the one chunk of the page map that changed.
        let map_pages = u64::from(protection == Protection::Cow);
        assert_eq!(
            d.data_pages_written,
            pages.len() as u64 + map_pages,
            "{protection:?}"
        );
        assert_eq!(
            d.data_bytes_written,
            d.data_pages_written * PAGE_SIZE as u64
        );
        assert_eq!(d.checkpoints, 1);
        assert_eq!(d.data_fsyncs, 1);
        eprintln!(
            "{protection:?}: checkpoint wrote {} pages, {} fsyncs ({} WAL, {} data, {} other)",
            d.data_pages_written,
            d.fsyncs(),
            d.wal_fsyncs,
            d.data_fsyncs,
            d.other_fsyncs
        );

        // A checkpoint with nothing dirty writes no pages but still counts.
        let before = db.stats();
        db.checkpoint().unwrap();
        let d = db.stats().since(&before);
        assert_eq!(
            (d.data_pages_written, d.checkpoints),
            (0, 1),
            "{protection:?}"
        );

        // One changed page: one page written (plus the map chunk in cow mode).
        let mut tx = db.begin();
        tx.delete(TABLE, ids[0]).unwrap();
        tx.commit().unwrap();
        let before = db.stats();
        db.checkpoint().unwrap();
        let d = db.stats().since(&before);
        assert_eq!(d.data_pages_written, 1 + map_pages, "{protection:?}");
        assert_eq!(d.checkpoints, 1);
    }
}

/// Makes table `name` of `kind` with a unique index on `id`, inserts 300 rows of 200
/// bytes, and returns the pages they went to.
fn fill_indexed(db: &Database, name: &str, kind: TableKind) -> std::collections::BTreeSet<u64> {
    db.create_table_with(name, id_text_schema("payload"), kind)
        .unwrap();
    db.create_index(&IndexSpec {
        name: &format!("{name}_id"),
        table: name,
        columns: &["id"],
        unique: true,
        ..IndexSpec::default()
    })
    .unwrap();
    let mut tx = db.begin();
    let rows: Vec<Row> = (0..300).map(|i| row(i, 200)).collect();
    let ids = tx.insert_many(name, &rows).unwrap();
    tx.commit().unwrap();
    ids.iter().map(|id| id.page).collect()
}

/// A dropped table's pages are never read again, so its dirty frames (and its index's)
/// are freed without being written — unless a transaction that began before the drop
/// is still running (it may roll back changes to the table). Recovery after a crash
/// that follows such a drop brings the database back whole.
#[test]
fn a_dropped_tables_pages_are_not_written() {
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        for kind in [TableKind::Heap, TableKind::Undo] {
            let what = format!("{protection:?} {kind:?}");
            let vfs = SimVfs::new(5);
            let db = Database::create(DIR, opts(&vfs, protection)).unwrap();
            let fill = |name: &str| {
                let pages = fill_indexed(&db, name, kind);
                assert!(pages.len() >= 5, "{what}: {pages:?}");
                pages.len() as u64
            };
            db.checkpoint().unwrap();

            // A transaction running across the drop: the pages are written as before.
            let pages = fill("kept");
            let other = db.begin();
            db.drop_table("kept").unwrap();
            other.commit().unwrap();
            let before = db.stats();
            db.checkpoint().unwrap();
            let written = db.stats().since(&before).data_pages_written;
            assert!(
                written > pages,
                "{what}: {written} pages written, table had {pages}"
            );

            // Nothing running: nothing of the dropped table reaches the data file. (In
            // cow mode the map chunk goes: "kept"'s pages became free at the checkpoint
            // before, and the map forgot their locations.)
            fill("gone");
            db.drop_table("gone").unwrap();
            let before = db.stats();
            db.checkpoint().unwrap();
            let d = db.stats().since(&before);
            let map_chunks = u64::from(protection == Protection::Cow);
            assert_eq!(
                (d.data_pages_written, d.checkpoints),
                (map_chunks, 1),
                "{what}"
            );

            // Dropped without a checkpoint after it, then a crash: recovery replays the
            // table's records onto pages that were never written, then the drop.
            fill("gone");
            db.drop_table("gone").unwrap();
            fill("gone");
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            let db = Database::open(DIR, opts(&vfs, protection)).unwrap();
            assert_eq!(db.table_names(), vec!["gone".to_string()], "{what}");
            let ids = support::sorted_ids(&db, "gone");
            assert_eq!(ids, (0..300).collect::<Vec<i64>>(), "{what}");
            let report = db.check().unwrap();
            assert!(report.is_clean(), "{what}: {:?}", report.problems);
        }
    }
}

/// A dropped relation's page numbers go to relations made after a checkpoint has passed
/// the drop and every transaction running at the drop has ended — never before, so
/// that no redo or crash rollback replays the old relation's records onto them — and
/// survive a restart and a crash. `walden check` finds no page used twice.
#[test]
fn a_dropped_tables_pages_are_reused_once_a_checkpoint_allows() {
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        for kind in [TableKind::Heap, TableKind::Undo] {
            let what = format!("{protection:?} {kind:?}");
            let vfs = SimVfs::new(6);
            let db = Database::create(DIR, opts(&vfs, protection)).unwrap();
            let fill = |db: &Database, name: &str| fill_indexed(db, name, kind);
            let clean = |db: &Database| {
                let r = db.check().unwrap();
                assert!(r.is_clean(), "{what}: {:?}", r.problems);
            };
            let a = fill(&db, "a");
            db.drop_table("a").unwrap();
            // No checkpoint since the drop: new pages.
            let b = fill(&db, "b");
            assert!(a.is_disjoint(&b), "{what}: reused before a checkpoint");
            db.checkpoint().unwrap();
            let c = fill(&db, "c");
            assert!(
                !a.is_disjoint(&c),
                "{what}: a's pages not reused: {a:?} {c:?}"
            );
            clean(&db);
            // A transaction running across the drop holds the pages back.
            let t = db.begin();
            db.drop_table("b").unwrap();
            db.checkpoint().unwrap();
            let d = fill(&db, "d");
            assert!(
                b.is_disjoint(&d),
                "{what}: reused under a running transaction"
            );
            t.commit().unwrap();
            db.checkpoint().unwrap();
            let e = fill(&db, "e");
            assert!(!b.is_disjoint(&e), "{what}: b's pages not reused");
            clean(&db);
            // Free pages survive a clean restart (the checkpoint lists them) ...
            db.drop_table("e").unwrap();
            db.close().unwrap();
            let db = Database::open(DIR, opts(&vfs, protection)).unwrap();
            let f = fill(&db, "f");
            assert!(!e.is_disjoint(&f), "{what}: e's pages lost at the restart");
            clean(&db);
            // ... and a crash after the drop (redo frees them again).
            db.checkpoint().unwrap();
            db.drop_table("f").unwrap();
            db.flush_wal().unwrap();
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            let db = Database::open(DIR, opts(&vfs, protection)).unwrap();
            assert_eq!(db.table_names(), ["c", "d"], "{what}");
            clean(&db);
            let g = fill(&db, "g");
            assert!(!f.is_disjoint(&g), "{what}: f's pages lost at the crash");
            clean(&db);
            for name in ["c", "d", "g"] {
                assert_eq!(
                    support::sorted_ids(&db, name),
                    (0..300).collect::<Vec<i64>>(),
                    "{what} {name}"
                );
            }
        }
    }
}

/// Polls `cond` every 10 ms for up to `limit`; true once it holds.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

#[test]
fn background_checkpoint_after_wal_volume() {
    let vfs = SimVfs::new(5);
    let db = Database::create(
        DIR,
        Options {
            background: true,
            checkpoint_wal_bytes: 1 << 20,
            checkpoint_interval_secs: 10,
            ..opts(&vfs, Protection::Cow)
        },
    )
    .unwrap();
    db.create_table(TABLE, id_text_schema("payload")).unwrap();
    let base = db.stats().checkpoints;
    // Under the threshold, and no time passes on the manual clock: no checkpoint.
    let mut tx = db.begin();
    tx.insert_many(TABLE, (0..100).map(|i| row(i, 100)))
        .unwrap();
    tx.commit().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(db.stats().checkpoints, base);
    // Rows that compress well: 4 MiB of records take far less than 1 MiB of WAL files,
    // and 4 MiB is under 8 × 1 MiB of records: no checkpoint.
    let start = db.wal_insert_lsn();
    let written = db.stats().wal_bytes_written;
    let mut id = 1000;
    while db.wal_insert_lsn() - start < 4 << 20 {
        let mut tx = db.begin();
        tx.insert_many(TABLE, (id..id + 100).map(|i| row(i, 300)))
            .unwrap();
        tx.commit().unwrap();
        id += 100;
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(db.stats().wal_bytes_written - written < 1 << 20);
    assert_eq!(
        db.stats().checkpoints,
        base,
        "compressed WAL under the threshold"
    );
    // Past 8 MiB of records: the records' bound fires.
    while db.wal_insert_lsn() - start < 9 << 20 {
        let mut tx = db.begin();
        tx.insert_many(TABLE, (id..id + 100).map(|i| row(i, 300)))
            .unwrap();
        tx.commit().unwrap();
        id += 100;
    }
    let fired = wait_for(Duration::from_secs(10), || db.stats().checkpoints > base);
    assert!(
        fired,
        "no checkpoint after 9 MiB of records, 8 × a 1 MiB threshold"
    );
    // Rows that do not compress: 3 MiB written to the WAL files fires it well before
    // 8 MiB of records.
    std::thread::sleep(Duration::from_millis(300));
    let base = db.stats().checkpoints;
    let start = db.wal_insert_lsn();
    let written = db.stats().wal_bytes_written;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    while db.stats().wal_bytes_written - written < 3 << 20 {
        let mut tx = db.begin();
        let rows: Vec<Row> = (id..id + 100)
            .map(|i| {
                let text: String = (0..40)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        format!("{:02x}", x as u8)
                    })
                    .collect();
                vec![Value::Int8(i), Value::Text(text)]
            })
            .collect();
        tx.insert_many(TABLE, &rows).unwrap();
        tx.commit().unwrap();
        id += 100;
    }
    let fired = wait_for(Duration::from_secs(10), || db.stats().checkpoints > base);
    eprintln!(
        "WAL volume trigger: {} checkpoints after {} bytes written to the WAL files, {} of records (threshold 1 MiB)",
        db.stats().checkpoints - base,
        db.stats().wal_bytes_written - written,
        db.wal_insert_lsn() - start
    );
    assert!(db.wal_insert_lsn() - start < 8 << 20);
    assert!(
        fired,
        "no checkpoint after 3 MiB written to the WAL files with a 1 MiB threshold"
    );
    // Once the background thread has caught up, the WAL since the last redo point is under
    // the threshold, so it stops checkpointing.
    std::thread::sleep(Duration::from_millis(300));
    let settled = db.stats().checkpoints;
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(db.stats().checkpoints, settled);
    db.close().unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, opts(&vfs, Protection::Cow)).unwrap();
    assert_eq!(
        db.begin().scan(TABLE).unwrap().len() as i64,
        100 + (id - 1000)
    );
}

#[test]
fn background_checkpoint_after_interval_on_a_manual_clock() {
    let vfs = SimVfs::new(6);
    let clock = Arc::new(ManualClock::default());
    let db = Database::create(
        DIR,
        Options {
            background: true,
            checkpoint_interval_secs: 10,
            clock: clock.clone(),
            ..opts(&vfs, Protection::Cow)
        },
    )
    .unwrap();
    db.create_table(TABLE, id_text_schema("payload")).unwrap();
    let base = db.stats().checkpoints;
    // Real time passes, the engine's clock does not: no checkpoint.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(db.stats().checkpoints, base);
    // Just under the interval: still none.
    clock.advance_millis(9_999);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(db.stats().checkpoints, base);
    // The interval reached: one checkpoint, and only one.
    clock.advance_millis(1);
    assert!(wait_for(Duration::from_secs(5), || db.stats().checkpoints > base));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(db.stats().checkpoints, base + 1);
    // Eleven more seconds: the next one.
    clock.advance_millis(11_000);
    assert!(wait_for(Duration::from_secs(5), || db.stats().checkpoints > base + 1));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(db.stats().checkpoints, base + 2);
    db.close().unwrap();
}
