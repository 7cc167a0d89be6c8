//! Savepoints on both table kinds: a rollback to one takes back rows, updates, deletes
//! and unique keys made since (heap tables through subtransactions, undo tables through
//! their undo entries); released ones commit and abort with their transaction; a crash
//! keeps exactly what committed; a waiter for a row rolled back to a savepoint goes on
//! before the transaction ends.
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
        Column::not_null("v", ColumnType::Int4),
    ])
}

fn row(id: i32, v: i32) -> Row {
    vec![Value::Int4(id), Value::Int4(v)]
}

fn setup(vfs: &SimVfs, kind: TableKind) -> Database {
    let db = Database::create("db", table_opts(vfs, Protection::Cow, kind)).unwrap();
    db.create_table("t", schema()).unwrap();
    db.create_index(&IndexSpec {
        name: "t_pkey",
        table: "t",
        columns: &["id"],
        unique: true,
        primary: true,
        ..IndexSpec::default()
    })
    .unwrap();
    db
}

/// (id, v) of every row `tx` sees, sorted.
fn rows_in(tx: &mut Transaction) -> Vec<(i32, i32)> {
    let mut v: Vec<(i32, i32)> = tx
        .scan("t")
        .unwrap()
        .into_iter()
        .map(|(_, r)| match &r[..] {
            [Value::Int4(a), Value::Int4(b)] => (*a, *b),
            other => panic!("unexpected row {other:?}"),
        })
        .collect();
    v.sort();
    v
}

fn rows(db: &Database) -> Vec<(i32, i32)> {
    rows_in(&mut db.begin())
}

fn by_key(tx: &mut Transaction, id: i32) -> Vec<(i32, i32)> {
    tx.index_get("t_pkey", &[Value::Int4(id)])
        .unwrap()
        .into_iter()
        .map(|(_, r)| match &r[..] {
            [Value::Int4(a), Value::Int4(b)] => (*a, *b),
            other => panic!("unexpected row {other:?}"),
        })
        .collect()
}

fn set_v(tx: &mut Transaction, id: i32, v: i32) -> u64 {
    tx.modify_with("t", |_, r| match r[0] {
        Value::Int4(x) if x == id => RowAction::Update(row(id, v)),
        _ => RowAction::Keep,
    })
    .unwrap()
}

fn delete_id(tx: &mut Transaction, id: i32) -> u64 {
    tx.modify_with("t", |_, r| match r[0] {
        Value::Int4(x) if x == id => RowAction::Delete,
        _ => RowAction::Keep,
    })
    .unwrap()
}

#[test]
fn a_rollback_to_a_savepoint_takes_back_what_came_after_it() {
    for kind in KINDS {
        let vfs = SimVfs::new(1);
        let db = setup(&vfs, kind);
        let mut tx = db.begin();
        tx.insert("t", &row(1, 10)).unwrap();
        tx.insert("t", &row(2, 20)).unwrap();
        assert_eq!(tx.savepoint().unwrap(), 1);
        tx.insert("t", &row(3, 30)).unwrap();
        set_v(&mut tx, 1, 11);
        delete_id(&mut tx, 2);
        assert_eq!(rows_in(&mut tx), vec![(1, 11), (3, 30)], "{kind:?}");
        tx.rollback_to_savepoint(1).unwrap();
        assert_eq!(rows_in(&mut tx), vec![(1, 10), (2, 20)], "{kind:?}");
        assert_eq!(by_key(&mut tx, 3), vec![], "{kind:?}");
        // The savepoint stays: work again, and again take it back.
        set_v(&mut tx, 2, 21);
        tx.insert("t", &row(3, 31)).unwrap();
        assert_eq!(by_key(&mut tx, 3), vec![(3, 31)], "{kind:?}");
        tx.rollback_to_savepoint(1).unwrap();
        assert_eq!(rows_in(&mut tx), vec![(1, 10), (2, 20)], "{kind:?}");
        // The key taken back is free again.
        tx.insert("t", &row(3, 32)).unwrap();
        tx.commit().unwrap();
        assert_eq!(rows(&db), vec![(1, 10), (2, 20), (3, 32)], "{kind:?}");
        db.check().unwrap();
    }
}

#[test]
fn nested_savepoints_released_and_rolled_back() {
    for kind in KINDS {
        let vfs = SimVfs::new(2);
        let db = setup(&vfs, kind);
        let mut tx = db.begin();
        tx.insert("t", &row(1, 1)).unwrap();
        tx.savepoint().unwrap();
        tx.insert("t", &row(2, 2)).unwrap();
        tx.savepoint().unwrap();
        tx.insert("t", &row(3, 3)).unwrap();
        tx.savepoint().unwrap();
        set_v(&mut tx, 1, 100);
        assert_eq!(tx.savepoints(), 3);
        // Released into the second: taken back with it.
        tx.release_savepoint(3).unwrap();
        assert_eq!(tx.savepoints(), 2);
        tx.rollback_to_savepoint(2).unwrap();
        assert_eq!(rows_in(&mut tx), vec![(1, 1), (2, 2)], "{kind:?}");
        // Released into the transaction: commits with it.
        tx.insert("t", &row(4, 4)).unwrap();
        tx.release_savepoint(1).unwrap();
        assert_eq!(tx.savepoints(), 0);
        assert!(tx.rollback_to_savepoint(1).is_err());
        tx.commit().unwrap();
        assert_eq!(rows(&db), vec![(1, 1), (2, 2), (4, 4)], "{kind:?}");
        // A released savepoint's work goes with its transaction's rollback.
        let mut tx = db.begin();
        tx.savepoint().unwrap();
        tx.insert("t", &row(5, 5)).unwrap();
        set_v(&mut tx, 1, 7);
        tx.release_savepoint(1).unwrap();
        tx.rollback().unwrap();
        assert_eq!(rows(&db), vec![(1, 1), (2, 2), (4, 4)], "{kind:?}");
        db.check().unwrap();
    }
}

#[test]
fn others_see_a_savepoints_work_only_when_its_transaction_commits() {
    for kind in KINDS {
        let vfs = SimVfs::new(3);
        let db = setup(&vfs, kind);
        let mut tx = db.begin();
        tx.insert("t", &row(1, 1)).unwrap();
        tx.commit().unwrap();
        let mut tx = db.begin();
        tx.savepoint().unwrap();
        tx.insert("t", &row(2, 2)).unwrap();
        set_v(&mut tx, 1, 9);
        tx.release_savepoint(1).unwrap();
        tx.savepoint().unwrap();
        tx.insert("t", &row(3, 3)).unwrap();
        // Before the commit: nothing of it.
        let mut early = db.begin();
        assert_eq!(rows_in(&mut early), vec![(1, 1)], "{kind:?}");
        tx.commit().unwrap();
        // A snapshot taken before the commit still sees nothing of it.
        assert_eq!(rows_in(&mut early), vec![(1, 1)], "{kind:?}");
        drop(early);
        assert_eq!(rows(&db), vec![(1, 9), (2, 2), (3, 3)], "{kind:?}");
    }
}

#[test]
fn a_crash_keeps_committed_savepoints_and_drops_the_rest() {
    for kind in KINDS {
        let vfs = SimVfs::new(4);
        let db = setup(&vfs, kind);
        let mut tx = db.begin();
        for i in 1..=5 {
            tx.insert("t", &row(i, i)).unwrap();
        }
        tx.commit().unwrap();
        db.checkpoint().unwrap();
        // Committed: a released savepoint and one rolled back to.
        let mut tx = db.begin();
        tx.savepoint().unwrap();
        tx.insert("t", &row(6, 6)).unwrap();
        set_v(&mut tx, 1, 10);
        tx.release_savepoint(1).unwrap();
        tx.savepoint().unwrap();
        tx.insert("t", &row(7, 7)).unwrap();
        delete_id(&mut tx, 2);
        set_v(&mut tx, 3, 30);
        tx.rollback_to_savepoint(1).unwrap();
        set_v(&mut tx, 4, 40);
        tx.commit().unwrap();
        let committed = vec![(1, 10), (2, 2), (3, 3), (4, 40), (5, 5), (6, 6)];
        assert_eq!(rows(&db), committed, "{kind:?}");
        // Running at the crash: a savepoint rolled back to, then more work.
        let mut tx = db.begin();
        tx.savepoint().unwrap();
        set_v(&mut tx, 5, 50);
        tx.rollback_to_savepoint(1).unwrap();
        tx.insert("t", &row(8, 8)).unwrap();
        delete_id(&mut tx, 6);
        db.flush_wal().unwrap();
        std::mem::forget(tx);
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let opts = table_opts(&vfs, Protection::Cow, kind);
        let db = Database::open("db", opts.clone()).unwrap();
        assert_eq!(rows(&db), committed, "{kind:?} after the crash");
        db.check().unwrap();
        let mut tx = db.begin();
        assert_eq!(by_key(&mut tx, 7), vec![], "{kind:?}");
        assert_eq!(by_key(&mut tx, 8), vec![], "{kind:?}");
        drop(tx);
        // Recovery's own records replay.
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open("db", opts).unwrap();
        assert_eq!(rows(&db), committed, "{kind:?} second open");
    }
}

#[test]
fn a_waiter_goes_on_when_the_row_is_rolled_back_to_a_savepoint() {
    for kind in KINDS {
        let vfs = SimVfs::new(5);
        let db = setup(&vfs, kind);
        let mut tx = db.begin();
        tx.insert("t", &row(1, 1)).unwrap();
        tx.commit().unwrap();
        let mut holder = db.begin();
        holder.savepoint().unwrap();
        set_v(&mut holder, 1, 2);
        let (done_tx, done) = mpsc::channel();
        let db2 = db.clone();
        let waiter = std::thread::spawn(move || {
            let mut tx = db2.begin();
            let n = set_v(&mut tx, 1, 3);
            done_tx.send(()).unwrap();
            tx.commit().unwrap();
            n
        });
        // It waits while the change stands...
        assert!(
            done.recv_timeout(Duration::from_millis(200)).is_err(),
            "{kind:?}"
        );
        // ...and goes on once it is taken back, the holder still running.
        holder.rollback_to_savepoint(1).unwrap();
        done.recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{kind:?}: the waiter still waits"));
        assert_eq!(waiter.join().unwrap(), 1);
        holder.commit().unwrap();
        assert_eq!(rows(&db), vec![(1, 3)], "{kind:?}");
    }
}

#[test]
fn a_savepoint_that_wrote_nothing_costs_no_running_xid() {
    let vfs = SimVfs::new(6);
    let db = setup(&vfs, TableKind::Heap);
    let mut tx = db.begin();
    for _ in 0..1000 {
        tx.savepoint().unwrap();
        tx.release_savepoint(1).unwrap();
    }
    tx.insert("t", &row(1, 1)).unwrap();
    // Each released savepoint that wrote nothing ended with its release: the commit
    // record lists none.
    let stats = tx.commit_with_stats().unwrap();
    let commit_bytes = stats.bytes[6];
    assert!(commit_bytes < 16, "commit record of {commit_bytes} bytes");
    assert_eq!(rows(&db), vec![(1, 1)]);
}

/// Values stored out of line: a rollback to a savepoint keeps the old value of a row
/// whose long value it replaced, and leaves no long value of a row it took back.
#[test]
fn long_values_follow_their_rows_back() {
    for kind in KINDS {
        let vfs = SimVfs::new(7);
        let db = Database::create("db", table_opts(&vfs, Protection::Cow, kind)).unwrap();
        let schema = Schema::new(vec![
            Column::not_null("id", ColumnType::Int4),
            Column::new("doc", ColumnType::Text),
        ]);
        db.create_table("d", schema).unwrap();
        // Long and varied enough that it goes out of line even compressed.
        let long = |seed: u64| -> String {
            let mut rng = walden::rng::SimRng::new(seed);
            (0..20_000)
                .map(|_| char::from(b'a' + rng.below(26) as u8))
                .collect()
        };
        let doc = |tx: &mut Transaction| -> Vec<(i32, String)> {
            let mut v: Vec<(i32, String)> = tx
                .scan("d")
                .unwrap()
                .into_iter()
                .map(|(_, r)| match &r[..] {
                    [Value::Int4(i), Value::Text(t)] => (*i, t.clone()),
                    other => panic!("unexpected row {other:?}"),
                })
                .collect();
            v.sort();
            v
        };
        let mut tx = db.begin();
        let id = tx
            .insert("d", &[Value::Int4(1), Value::Text(long(1))])
            .unwrap();
        tx.commit().unwrap();
        let mut tx = db.begin();
        tx.savepoint().unwrap();
        tx.update("d", id, &[Value::Int4(1), Value::Text(long(2))])
            .unwrap();
        tx.insert("d", &[Value::Int4(2), Value::Text(long(3))])
            .unwrap();
        assert_eq!(doc(&mut tx).len(), 2, "{kind:?}");
        tx.rollback_to_savepoint(1).unwrap();
        assert_eq!(doc(&mut tx), vec![(1, long(1))], "{kind:?}");
        tx.commit().unwrap();
        assert_eq!(doc(&mut db.begin()), vec![(1, long(1))], "{kind:?}");
        db.check().unwrap();
        // And again after a crash.
        db.flush_wal().unwrap();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open("db", table_opts(&vfs, Protection::Cow, kind)).unwrap();
        assert_eq!(
            doc(&mut db.begin()),
            vec![(1, long(1))],
            "{kind:?} after a crash"
        );
        db.check().unwrap();
    }
}
