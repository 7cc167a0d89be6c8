//! Basic life cycle: what could go wrong is anything at all — create, write, reopen, read.
#![allow(clippy::unwrap_used)]

use walden::vfs::{CrashMode, SimVfs};
use walden::*;

mod support;
use support::{id_text_schema, labelled_row, table_opts};

// Heap tables (`TableKind::Heap` in every test's options): these tests count heap records
// and sizes (undo tables, the default, have tests of their own).

#[test]
fn create_insert_reopen_update_delete() {
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        let vfs = SimVfs::new(1);
        let db = Database::create("db", table_opts(&vfs, protection, TableKind::Heap)).unwrap();
        db.create_table("t", id_text_schema("name")).unwrap();
        let mut tx = db.begin();
        let rows: Vec<Row> = (0..1000).map(labelled_row).collect();
        let ids = tx.insert_many("t", &rows).unwrap();
        tx.commit().unwrap();
        let mut tx = db.begin();
        let new = tx
            .update("t", ids[5], &[Value::Int8(5), Value::Text("five".into())])
            .unwrap();
        tx.delete("t", ids[6]).unwrap();
        tx.commit().unwrap();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open("db", table_opts(&vfs, protection, TableKind::Heap)).unwrap();
        let mut tx = db.begin();
        let all = tx.scan("t").unwrap();
        assert_eq!(all.len(), 999, "{protection:?}");
        assert_eq!(
            tx.get("t", new).unwrap().unwrap()[1],
            Value::Text("five".into())
        );
        assert_eq!(
            tx.get("t", ids[5]).unwrap().unwrap()[1],
            Value::Text("five".into())
        );
        assert_eq!(tx.get("t", ids[6]).unwrap(), None);
        drop(tx);
        assert_eq!(db.vacuum("t").unwrap(), 2);
        db.checkpoint().unwrap();
        drop(db);
        vfs.restart(CrashMode::TearUnsynced);
        let db = Database::open("db", table_opts(&vfs, protection, TableKind::Heap)).unwrap();
        assert_eq!(db.begin().scan("t").unwrap().len(), 999);
    }
}

#[test]
fn every_page_size_round_trips() {
    for page_size in [4096, 8192, 16384, 32768] {
        let vfs = SimVfs::new(2);
        let o = || Options {
            page_size,
            ..table_opts(&vfs, Protection::Cow, TableKind::Heap)
        };
        let db = Database::create("db", o()).unwrap();
        db.create_table("t", id_text_schema("name")).unwrap();
        let mut tx = db.begin();
        let big = "y".repeat(page_size / 3);
        for i in 0..50 {
            tx.insert("t", &[Value::Int8(i), Value::Text(big.clone())])
                .unwrap();
        }
        tx.commit().unwrap();
        drop(db);
        vfs.restart(CrashMode::TearUnsynced);
        let db = Database::open("db", o()).unwrap();
        assert_eq!(db.page_size(), page_size);
        let rows = db.begin().scan("t").unwrap();
        assert_eq!(rows.len(), 50);
        assert!(rows.iter().all(|(_, r)| r[1] == Value::Text(big.clone())));
    }
}

#[test]
fn snapshot_does_not_see_later_commits_and_own_writes_are_visible() {
    let vfs = SimVfs::new(3);
    let db = Database::create("db", table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    db.create_table("t", id_text_schema("name")).unwrap();
    let mut reader = db.begin();
    let mut writer = db.begin();
    let id = writer.insert("t", &[Value::Int8(1), Value::Null]).unwrap();
    assert_eq!(writer.scan("t").unwrap().len(), 1, "own insert visible");
    assert_eq!(reader.scan("t").unwrap().len(), 0, "uncommitted invisible");
    writer.commit().unwrap();
    assert_eq!(
        reader.scan("t").unwrap().len(),
        0,
        "committed after the snapshot"
    );
    assert_eq!(reader.get("t", id).unwrap(), None);
    assert_eq!(db.begin().scan("t").unwrap().len(), 1);
}

#[test]
fn second_writer_waits_then_fails_with_serialization_error() {
    let vfs = SimVfs::new(4);
    let db = Database::create("db", table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    db.create_table("t", id_text_schema("name")).unwrap();
    let mut tx = db.begin();
    let id = tx.insert("t", &[Value::Int8(1), Value::Null]).unwrap();
    tx.commit().unwrap();
    let mut first = db.begin();
    let mut second = db.begin();
    first
        .update("t", id, &[Value::Int8(1), Value::Text("first".into())])
        .unwrap();
    std::thread::scope(|s| {
        let h = s
            .spawn(move || second.update("t", id, &[Value::Int8(1), Value::Text("second".into())]));
        std::thread::sleep(std::time::Duration::from_millis(50));
        first.commit().unwrap();
        let r = h.join().unwrap();
        assert!(matches!(r, Err(Error::SerializationFailure)), "{r:?}");
    });
    // When the first rolls back instead, the second proceeds.
    let mut first = db.begin();
    let mut second = db.begin();
    let cur = db.begin().scan("t").unwrap()[0].0;
    first.delete("t", cur).unwrap();
    std::thread::scope(|s| {
        let h = s.spawn(move || {
            let r = second.update("t", cur, &[Value::Int8(1), Value::Text("third".into())]);
            (r.map(|_| ()), second.commit())
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        first.rollback().unwrap();
        let (r, c) = h.join().unwrap();
        assert!(r.is_ok() && c.is_ok(), "{r:?} {c:?}");
    });
    let rows = db.begin().scan("t").unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].1[1], Value::Text("third".into()));
}

#[test]
fn commit_with_stats_counts_the_commit_record() {
    let vfs = SimVfs::new(5);
    let db = Database::create("db", table_opts(&vfs, Protection::Cow, TableKind::Heap)).unwrap();
    db.create_table("t", id_text_schema("name")).unwrap();
    let mut tx = db.begin();
    tx.insert("t", &[Value::Int8(1), Value::Null]).unwrap();
    let before = tx.stats().clone();
    assert_eq!(before.records[walden::txn::COMMIT.code as usize], 0);
    let after = tx.commit_with_stats().unwrap();
    assert_eq!(after.records[walden::txn::COMMIT.code as usize], 1);
    assert_eq!(after.wal_records(), before.wal_records() + 1);
    // A commit record: its length, its kind and the transaction id, one byte each here.
    let mut commit = Vec::new();
    let n = walden::wal::record::put_record(&mut commit, walden::txn::COMMIT.code, 1, &[]);
    assert_eq!(n, 3);
    assert_eq!(after.wal_bytes(), before.wal_bytes() + 3);
}
