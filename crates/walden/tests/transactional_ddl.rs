//! Catalog changes inside a transaction (docs/recovery.md rule 40): CREATE, ALTER and
//! DROP of tables, indexes and views are taken back by a rollback, by a rollback to a
//! savepoint and by a crash before the commit (also when a checkpoint came in
//! between), and kept by a commit; a dropped table's name is free inside its
//! transaction; other transactions wait for the one changing a table's definition.
#![allow(clippy::unwrap_used)]

use std::sync::mpsc;
use std::time::Duration;

use walden::vfs::{CrashMode, SimVfs};
use walden::*;

mod support;
use support::table_opts;

const KINDS: [TableKind; 2] = [TableKind::Heap, TableKind::Undo];

fn schema() -> Schema {
    Schema::new(vec![
        Column::not_null("id", ColumnType::Int4),
        Column::new("v", ColumnType::Text),
    ])
}

fn row(id: i32, v: &str) -> Row {
    vec![Value::Int4(id), Value::Text(v.into())]
}

fn pkey<'a>(name: &'a str, table: &'a str) -> IndexSpec<'a> {
    IndexSpec {
        name,
        table,
        columns: &["id"],
        unique: true,
        primary: true,
        ..IndexSpec::default()
    }
}

fn ids(db: &Database, table: &str) -> Vec<i32> {
    let mut tx = db.begin();
    let mut v: Vec<i32> = tx
        .scan(table)
        .unwrap()
        .into_iter()
        .map(|(_, r)| match r[0] {
            Value::Int4(a) => a,
            ref other => panic!("unexpected value {other:?}"),
        })
        .collect();
    v.sort();
    v
}

fn columns(db: &Database, table: &str) -> Vec<String> {
    db.schema(table)
        .unwrap()
        .columns
        .iter()
        .map(|c| c.name.clone())
        .collect()
}

fn open_db(vfs: &SimVfs, kind: TableKind) -> Database {
    let db = Database::create("db", table_opts(vfs, Protection::Cow, kind)).unwrap();
    db.create_table("kept", schema()).unwrap();
    db.create_index(&pkey("kept_pkey", "kept")).unwrap();
    let mut tx = db.begin();
    for i in 1..=3 {
        tx.insert("kept", &row(i, "k")).unwrap();
    }
    tx.commit().unwrap();
    db
}

#[test]
fn a_rollback_takes_back_creates_alters_and_drops() {
    for kind in KINDS {
        let vfs = SimVfs::new(7);
        let db = open_db(&vfs, kind);
        let mut tx = db.begin();
        tx.create_table_owning("fresh", schema(), kind, Vec::new(), None)
            .unwrap();
        tx.insert("fresh", &row(1, "f")).unwrap();
        tx.create_index(&pkey("fresh_pkey", "fresh")).unwrap();
        tx.alter_table(
            "kept",
            &AlterOp::AddColumn(Column::new("extra", ColumnType::Int4)),
        )
        .unwrap();
        tx.drop_index("kept_pkey").unwrap();
        // Inside the transaction the changes are there.
        assert_eq!(tx.scan("fresh").unwrap().len(), 1, "{kind:?}");
        tx.rollback().unwrap();
        assert!(db.schema("fresh").is_err(), "{kind:?}");
        assert!(!db.relation_exists("fresh_pkey"), "{kind:?}");
        assert_eq!(columns(&db, "kept"), ["id", "v"], "{kind:?}");
        assert_eq!(db.index("kept_pkey").unwrap().name, "kept_pkey");
        assert_eq!(ids(&db, "kept"), [1, 2, 3], "{kind:?}");
        // The unique index works as before.
        let mut tx = db.begin();
        assert!(tx.insert("kept", &row(2, "dup")).is_err(), "{kind:?}");
        drop(tx);
        // The names are free again.
        db.create_table("fresh", schema()).unwrap();
        let report = db.check().unwrap();
        assert!(report.is_clean(), "{kind:?}: {:?}", report.problems);
    }
}

#[test]
fn a_dropped_tables_name_is_free_inside_its_transaction() {
    for kind in KINDS {
        let vfs = SimVfs::new(8);
        let db = open_db(&vfs, kind);
        // Dropped and made anew, then rolled back: the old table is back whole.
        let mut tx = db.begin();
        tx.drop_table("kept").unwrap();
        assert!(tx.scan("kept").is_err(), "{kind:?}");
        tx.create_table_owning("kept", schema(), kind, Vec::new(), None)
            .unwrap();
        tx.create_index(&pkey("kept_pkey", "kept")).unwrap();
        tx.insert("kept", &row(9, "new")).unwrap();
        assert!(!db.table_names().iter().any(|n| n.contains('\0')));
        tx.rollback().unwrap();
        assert_eq!(ids(&db, "kept"), [1, 2, 3], "{kind:?}");
        let mut tx = db.begin();
        assert!(tx.insert("kept", &row(1, "dup")).is_err(), "{kind:?}");
        drop(tx);
        // The same, committed: the new table replaces it.
        let mut tx = db.begin();
        tx.drop_table("kept").unwrap();
        tx.create_table_owning("kept", schema(), kind, Vec::new(), None)
            .unwrap();
        tx.create_index(&pkey("kept_pkey", "kept")).unwrap();
        tx.insert("kept", &row(9, "new")).unwrap();
        tx.commit().unwrap();
        assert_eq!(ids(&db, "kept"), [9], "{kind:?}");
        assert_eq!(db.table_names(), ["kept"], "{kind:?}");
        let report = db.check().unwrap();
        assert!(report.is_clean(), "{kind:?}: {:?}", report.problems);
        // And it survives a restart and a crash.
        db.checkpoint().unwrap();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open("db", table_opts(&vfs, Protection::Cow, kind)).unwrap();
        assert_eq!(ids(&db, "kept"), [9], "{kind:?}");
        let report = db.check().unwrap();
        assert!(report.is_clean(), "{kind:?}: {:?}", report.problems);
    }
}

#[test]
fn a_rollback_to_a_savepoint_takes_back_the_catalog_changes_after_it() {
    for kind in KINDS {
        let vfs = SimVfs::new(9);
        let db = open_db(&vfs, kind);
        let mut tx = db.begin();
        tx.create_table_owning("a", schema(), kind, Vec::new(), None)
            .unwrap();
        tx.insert("a", &row(1, "a")).unwrap();
        tx.savepoint().unwrap();
        tx.create_table_owning("b", schema(), kind, Vec::new(), None)
            .unwrap();
        tx.drop_table("kept").unwrap();
        tx.alter_table("a", &AlterOp::Rename("a2".into())).unwrap();
        tx.rollback_to_savepoint(1).unwrap();
        tx.insert("a", &row(2, "a")).unwrap();
        tx.commit().unwrap();
        assert_eq!(ids(&db, "a"), [1, 2], "{kind:?}");
        assert!(db.schema("b").is_err(), "{kind:?}");
        assert_eq!(ids(&db, "kept"), [1, 2, 3], "{kind:?}");
        // After a crash, the same.
        db.flush_wal().unwrap();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open("db", table_opts(&vfs, Protection::Cow, kind)).unwrap();
        assert_eq!(ids(&db, "a"), [1, 2], "{kind:?}");
        assert!(db.schema("b").is_err(), "{kind:?}");
        assert!(db.schema("a2").is_err(), "{kind:?}");
        assert_eq!(ids(&db, "kept"), [1, 2, 3], "{kind:?}");
        let report = db.check().unwrap();
        assert!(report.is_clean(), "{kind:?}: {:?}", report.problems);
    }
}

/// A crash before the commit takes every change back, also those logged before a
/// checkpoint that came while the transaction ran; a commit before the crash keeps
/// them.
#[test]
fn a_crash_keeps_committed_catalog_changes_and_takes_back_the_rest() {
    for kind in KINDS {
        for checkpoint_between in [false, true] {
            let what = format!("{kind:?} checkpoint between: {checkpoint_between}");
            let vfs = SimVfs::new(10);
            let db = open_db(&vfs, kind);
            db.create_table("other", schema()).unwrap();
            db.create_view(
                ViewDef {
                    name: "v".into(),
                    columns: vec!["id".into()],
                    query: "SELECT id FROM kept".into(),
                },
                false,
                None,
            )
            .unwrap();
            db.checkpoint().unwrap();
            let mut tx = db.begin();
            tx.create_table_owning("fresh", schema(), kind, Vec::new(), None)
                .unwrap();
            for i in 1..=200 {
                tx.insert("fresh", &row(i, &"x".repeat(50))).unwrap();
            }
            tx.drop_table("kept").unwrap();
            tx.alter_table(
                "other",
                &AlterOp::AddColumn(Column::new("extra", ColumnType::Int4)),
            )
            .unwrap();
            tx.drop_view("v").unwrap();
            if checkpoint_between {
                db.checkpoint().unwrap();
            }
            tx.create_index(&pkey("fresh_pkey", "fresh")).unwrap();
            db.flush_wal().unwrap();
            std::mem::forget(tx);
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            let opts = table_opts(&vfs, Protection::Cow, kind);
            let db = Database::open("db", opts.clone()).unwrap();
            assert!(db.schema("fresh").is_err(), "{what}");
            assert!(!db.relation_exists("fresh_pkey"), "{what}");
            assert_eq!(ids(&db, "kept"), [1, 2, 3], "{what}");
            assert_eq!(columns(&db, "other"), ["id", "v"], "{what}");
            assert!(db.view("v").is_some(), "{what}");
            assert_eq!(db.table_names(), ["kept", "other"], "{what}");
            let report = db.check().unwrap();
            assert!(report.is_clean(), "{kind:?}: {:?}", report.problems);

            // Now committed, with a checkpoint in between, then a crash.
            let mut tx = db.begin();
            tx.create_table_owning("fresh", schema(), kind, Vec::new(), None)
                .unwrap();
            tx.insert("fresh", &row(1, "f")).unwrap();
            tx.drop_table("kept").unwrap();
            if checkpoint_between {
                db.checkpoint().unwrap();
            }
            tx.alter_table(
                "other",
                &AlterOp::AddColumn(Column::new("extra", ColumnType::Int4)),
            )
            .unwrap();
            tx.commit().unwrap();
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            let db = Database::open("db", opts).unwrap();
            assert_eq!(ids(&db, "fresh"), [1], "{what}");
            assert!(db.schema("kept").is_err(), "{what}");
            assert!(!db.relation_exists("kept_pkey"), "{what}");
            assert_eq!(columns(&db, "other"), ["id", "v", "extra"], "{what}");
            assert_eq!(db.table_names(), ["fresh", "other"], "{what}");
            let report = db.check().unwrap();
            assert!(report.is_clean(), "{kind:?}: {:?}", report.problems);
        }
    }
}

/// Another transaction that uses a table waits for the transaction changing its
/// definition, and then sees the committed definition.
#[test]
fn others_wait_for_an_uncommitted_change_of_definition() {
    for kind in KINDS {
        let vfs = SimVfs::new(11);
        let db = open_db(&vfs, kind);
        let mut tx = db.begin();
        tx.alter_table(
            "kept",
            &AlterOp::AddColumn(Column::new("extra", ColumnType::Int4)),
        )
        .unwrap();
        let (sent, got) = mpsc::channel();
        let other = db.clone();
        let reader = std::thread::spawn(move || {
            let mut t = other.begin();
            let n = t.scan("kept").map(|r| r.len());
            sent.send(n.is_ok()).unwrap();
            t.commit().unwrap();
        });
        assert!(
            got.recv_timeout(Duration::from_millis(300)).is_err(),
            "{kind:?}: the reader did not wait"
        );
        tx.commit().unwrap();
        assert!(
            got.recv_timeout(Duration::from_secs(10)).unwrap(),
            "{kind:?}"
        );
        reader.join().unwrap();
        // Waiting on each other is a deadlock, reported to one of them.
        let mut a = db.begin();
        let mut b = db.begin();
        a.alter_table("kept", &AlterOp::Rename("k1".into()))
            .unwrap();
        b.create_table_owning("mine", schema(), kind, Vec::new(), None)
            .unwrap();
        let (sent, got) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let r = b.scan("k1").map(|_| ());
            sent.send(()).unwrap();
            (b, r)
        });
        std::thread::sleep(Duration::from_millis(100));
        let mine = a.scan("mine").map(|_| ());
        if mine.is_ok() {
            a.commit().unwrap();
        } else {
            drop(a);
        }
        got.recv_timeout(Duration::from_secs(10)).unwrap();
        let (b, theirs) = waiter.join().unwrap();
        drop(b);
        assert!(
            matches!(mine, Err(Error::Deadlock)) || matches!(theirs, Err(Error::Deadlock)),
            "{kind:?}: {mine:?} / {theirs:?}"
        );
    }
}

/// A name holding a NUL byte (what marks a relation being dropped) is refused with a
/// clear error, for a table, a column, an index and a view.
#[test]
fn names_with_a_nul_byte_are_refused() {
    let vfs = SimVfs::new(12);
    let db = open_db(&vfs, TableKind::Heap);
    let refused = |r: Result<()>| match r {
        Err(Error::InvalidOption(why)) => assert!(why.contains("NUL"), "{why}"),
        other => panic!("expected a refusal, got {other:?}"),
    };
    refused(db.create_table("bad\0name", schema()));
    refused(db.create_table(
        "t2",
        Schema::new(vec![Column::new("a\0b", ColumnType::Int4)]),
    ));
    refused(db.create_index(&pkey("ix\0", "kept")).map(|_| ()));
    refused(db.create_view(
        ViewDef {
            name: "v\0".into(),
            columns: vec!["id".into()],
            query: "SELECT id FROM kept".into(),
        },
        false,
        None,
    ));
    assert_eq!(db.table_names(), ["kept"]);
}
