//! Undo tables: in-place update, row move, delete and space reuse, rollback (explicit, on
//! error, after a crash), snapshot reads across undo chains, undo discard and its bound.
#![allow(clippy::unwrap_used)]

use std::ops::Bound;
use walden::vfs::{CrashMode, FaultKind, SimVfs, Vfs};
use walden::*;

mod support;
use support::table_opts;

fn schema() -> Schema {
    Schema::new(vec![
        Column::not_null("a", ColumnType::Int4),
        Column::not_null("b", ColumnType::Int4),
        Column::new("c", ColumnType::Text),
    ])
}

fn row(a: i32, b: i32, c: &str) -> Row {
    vec![Value::Int4(a), Value::Int4(b), Value::Text(c.into())]
}

/// (a, b, c) of every visible row, sorted by a.
fn contents(db: &Database) -> Vec<(i32, i32, String)> {
    contents_in(&mut db.begin())
}

/// (a, b, c) of every row `tx` sees, sorted by a.
fn contents_in(tx: &mut Transaction) -> Vec<(i32, i32, String)> {
    let mut v: Vec<(i32, i32, String)> = tx
        .scan("t")
        .unwrap()
        .into_iter()
        .map(|(_, r)| match &r[..] {
            [Value::Int4(a), Value::Int4(b), Value::Text(c)] => (*a, *b, c.clone()),
            other => panic!("unexpected row {other:?}"),
        })
        .collect();
    v.sort();
    v
}

fn fill(db: &Database, n: i32) -> Vec<RowId> {
    db.create_table("t", schema()).unwrap();
    let mut tx = db.begin();
    let rows: Vec<Row> = (0..n).map(|i| row(i, i, &"x".repeat(100))).collect();
    let ids = tx.insert_many("t", &rows).unwrap();
    tx.commit().unwrap();
    ids
}

fn add_one_to_b(tx: &mut Transaction) -> u64 {
    tx.modify_with("t", |_, r| {
        let mut r = r.clone();
        if let Value::Int4(b) = r[1] {
            r[1] = Value::Int4(b + 1);
        }
        RowAction::Update(r)
    })
    .unwrap()
}

#[test]
fn update_in_place_keeps_the_table_size_and_logs_little() {
    for protection in [Protection::Cow, Protection::FullPage] {
        let vfs = SimVfs::new(1);
        let db = Database::create("db", table_opts(&vfs, protection, TableKind::Undo)).unwrap();
        let ids = fill(&db, 5000);
        assert_eq!(db.table_kind("t").unwrap(), TableKind::Undo);
        let size = db.table_bytes("t").unwrap();
        db.checkpoint().unwrap();
        let mut tx = db.begin();
        assert_eq!(add_one_to_b(&mut tx), 5000);
        let st = tx.commit_with_stats().unwrap();
        assert_eq!(db.table_bytes("t").unwrap(), size, "{protection:?}");
        let rows = contents(&db);
        assert!(rows.iter().all(|(a, b, _)| b == &(a + 1)));
        if protection == Protection::Cow {
            // One record per page: far below one record per row.
            assert!(st.wal_bytes() < 5000 * 16, "{} WAL bytes", st.wal_bytes());
            assert_eq!(st.page_images(), 0);
        }
        // Row ids are unchanged by an in-place update.
        let mut tx = db.begin();
        assert_eq!(tx.get("t", ids[7]).unwrap().unwrap()[1], Value::Int4(8));
        drop(tx);
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open("db", table_opts(&vfs, protection, TableKind::Undo)).unwrap();
        assert_eq!(contents(&db), rows, "{protection:?} after a crash");
    }
}

#[test]
fn readers_see_their_snapshot_through_undo_chains() {
    let vfs = SimVfs::new(2);
    let db = Database::create("db", table_opts(&vfs, Protection::Cow, TableKind::Undo)).unwrap();
    let ids = fill(&db, 300);
    let before = contents(&db);
    let mut reader = db.begin();
    // Three committed transactions change the same rows; the reader keeps its view.
    for k in 0..3 {
        let mut tx = db.begin();
        add_one_to_b(&mut tx);
        tx.delete("t", ids[10 + k]).unwrap();
        tx.update(
            "t",
            ids[20],
            &row(20, 1000 + k as i32, "grown ".repeat(40).as_str()),
        )
        .unwrap();
        tx.commit().unwrap();
    }
    let mut seen: Vec<(i32, i32, String)> = reader
        .scan("t")
        .unwrap()
        .into_iter()
        .map(|(_, r)| match &r[..] {
            [Value::Int4(a), Value::Int4(b), Value::Text(c)] => (*a, *b, c.clone()),
            _ => unreachable!(),
        })
        .collect();
    seen.sort();
    assert_eq!(seen, before);
    assert_eq!(
        reader.get("t", ids[10]).unwrap().unwrap(),
        row(10, 10, &"x".repeat(100))
    );
    assert!(db.undo_bytes() > 0);
    reader.commit().unwrap();
    // Nobody needs the undo any more.
    let _ = db.begin().commit();
    assert_eq!(db.undo_bytes(), 0);
    let now = contents(&db);
    assert_eq!(now.len(), 297);
    assert_eq!(now.iter().find(|r| r.0 == 20).unwrap().1, 1002);
}

#[test]
fn rollback_restores_rows_explicitly_on_drop_and_after_a_crash() {
    for protection in [Protection::Cow, Protection::FullPage] {
        let vfs = SimVfs::new(3);
        let db = Database::create("db", table_opts(&vfs, protection, TableKind::Undo)).unwrap();
        let ids = fill(&db, 2000);
        let before = contents(&db);
        let size = db.table_bytes("t").unwrap();
        let work = |tx: &mut Transaction| {
            add_one_to_b(tx);
            tx.delete("t", ids[3]).unwrap();
            tx.update("t", ids[4], &row(4, 4, &"long ".repeat(300)))
                .unwrap();
            tx.insert("t", &row(9999, 1, "new")).unwrap();
            add_one_to_b(tx);
        };
        let mut tx = db.begin();
        work(&mut tx);
        tx.rollback().unwrap();
        assert_eq!(contents(&db), before, "{protection:?} explicit");
        let mut tx = db.begin();
        work(&mut tx);
        drop(tx);
        assert_eq!(contents(&db), before, "{protection:?} drop");
        // A crash with the changes (and a checkpoint in the middle) on disk.
        let mut tx = db.begin();
        add_one_to_b(&mut tx);
        db.checkpoint().unwrap();
        work(&mut tx);
        db.flush_wal().unwrap();
        std::mem::forget(tx);
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open("db", table_opts(&vfs, protection, TableKind::Undo)).unwrap();
        assert_eq!(db.recovery_report().transactions_rolled_back, 1);
        assert_eq!(contents(&db), before, "{protection:?} crash");
        assert!(db.table_bytes("t").unwrap() <= size + 2 * 8192);
        // And again: recovery's own compensation records replay.
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open("db", table_opts(&vfs, protection, TableKind::Undo)).unwrap();
        assert_eq!(contents(&db), before, "{protection:?} second open");
    }
}

#[test]
fn crash_in_the_middle_of_a_long_update_leaves_the_table_as_before() {
    let vfs = SimVfs::new(4);
    let o = || Options {
        buffer_pool_bytes: 256 << 10,
        ..table_opts(&vfs, Protection::Cow, TableKind::Undo)
    };
    let db = Database::create("db", o()).unwrap();
    fill(&db, 20_000);
    let before = contents(&db);
    let mut tx = db.begin();
    let mut n = 0;
    tx.modify_with("t", |_, r| {
        n += 1;
        if n % 5000 == 0 {
            // Checkpoints move the redo point past the transaction's first records.
            db.checkpoint().unwrap();
        }
        if n == 15_000 {
            return RowAction::Stop;
        }
        let mut r = r.clone();
        r[1] = Value::Int4(-1);
        RowAction::Update(r)
    })
    .unwrap();
    db.flush_wal().unwrap();
    std::mem::forget(tx);
    drop(db);
    vfs.restart(CrashMode::TearUnsynced);
    let db = Database::open("db", o()).unwrap();
    assert_eq!(contents(&db), before);
}

#[test]
fn a_row_that_outgrows_its_page_moves_and_its_id_still_finds_it() {
    let vfs = SimVfs::new(5);
    let db = Database::create("db", table_opts(&vfs, Protection::Cow, TableKind::Undo)).unwrap();
    let ids = fill(&db, 200);
    // An index on b: its range reads keep a heap page pinned from row to row
    // (`fetch_held`), and must follow a moved row off that page.
    db.create_index(&walden::IndexSpec {
        name: "t_b",
        table: "t",
        columns: &["b"],
        ..Default::default()
    })
    .unwrap();
    let by_index = |tx: &mut walden::Transaction| -> Vec<Row> {
        let mut rows = Vec::new();
        tx.read(
            walden::Rows::index("t_b", Bound::Unbounded, Bound::Unbounded),
            walden::RowShape::default(),
            |_, r| {
                rows.push(r);
                Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
            },
        )
        .unwrap();
        rows
    };
    let pages = db.table_bytes("t").unwrap();
    let mut reader = db.begin();
    // Longer than the rows' pages have room for, short of a quarter page (a longer
    // row would have it stored out of line).
    let big = "z".repeat(1800);
    let mut tx = db.begin();
    let mut moved = Vec::new();
    for &id in &ids[..6] {
        let i = id.slot as i32 + 1000;
        moved.push(tx.update("t", id, &row(i, 0, &big)).unwrap());
    }
    assert!(
        moved.iter().zip(&ids).any(|(m, i)| m.page != i.page),
        "some row moved"
    );
    tx.commit().unwrap();
    assert!(db.table_bytes("t").unwrap() > pages);
    let mut tx = db.begin();
    for (m, &id) in moved.iter().zip(&ids) {
        let via_old = tx.get("t", id).unwrap().unwrap();
        assert_eq!(via_old, tx.get("t", *m).unwrap().unwrap());
        assert_eq!(via_old[2], Value::Text(big.clone()));
    }
    assert_eq!(tx.scan("t").unwrap().len(), 200);
    // Through the index, in key order: every row once, the moved ones with their new
    // values.
    let mut scanned: Vec<Row> = tx.scan("t").unwrap().into_iter().map(|(_, r)| r).collect();
    scanned.sort_by_key(|r| format!("{:?}", r[1]));
    let mut indexed = by_index(&mut tx);
    assert_eq!(indexed.len(), 200);
    assert_eq!(
        indexed
            .iter()
            .filter(|r| r[2] == Value::Text(big.clone()))
            .count(),
        6
    );
    indexed.sort_by_key(|r| format!("{:?}", r[1]));
    assert_eq!(indexed, scanned);
    drop(tx);
    // The old snapshot still sees the old rows, once each, through the index too.
    let old_indexed = by_index(&mut reader);
    assert_eq!(old_indexed.len(), 200);
    assert!(old_indexed
        .iter()
        .all(|r| r[2] == Value::Text("x".repeat(100))));
    let old = reader.scan("t").unwrap();
    assert_eq!(old.len(), 200);
    assert!(old
        .iter()
        .all(|(_, r)| r[2] == Value::Text("x".repeat(100))));
    reader.commit().unwrap();
    // Updating a moved row again, and deleting one, then a crash.
    let mut tx = db.begin();
    tx.update("t", moved[0], &row(1, 2, "short again")).unwrap();
    tx.delete("t", ids[1]).unwrap();
    tx.commit().unwrap();
    let after = contents(&db);
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open("db", table_opts(&vfs, Protection::Cow, TableKind::Undo)).unwrap();
    assert_eq!(contents(&db), after);
    assert_eq!(after.len(), 199);
}

#[test]
fn deleted_rows_keep_their_space_until_no_snapshot_sees_them() {
    let vfs = SimVfs::new(6);
    let db = Database::create("db", table_opts(&vfs, Protection::Cow, TableKind::Undo)).unwrap();
    fill(&db, 1000);
    let size = db.table_bytes("t").unwrap();
    let mut reader = db.begin();
    let mut tx = db.begin();
    let n = tx.modify_with("t", |_, _| RowAction::Delete).unwrap();
    assert_eq!(n, 1000);
    let st = tx.commit_with_stats().unwrap();
    // A delete logs a few bytes per row, not the row.
    assert!(st.wal_bytes() < 1000 * 6, "{} WAL bytes", st.wal_bytes());
    assert_eq!(reader.scan("t").unwrap().len(), 1000);
    assert_eq!(db.vacuum("t").unwrap(), 0, "the reader still sees them");
    reader.commit().unwrap();
    let before = db.stats();
    assert_eq!(db.vacuum("t").unwrap(), 1000);
    assert_eq!(db.vacuum("t").unwrap(), 0);
    // Nothing left to do: the second vacuum wrote only its commit record. (The first
    // pruned each page, then gave the emptied pages back: one `free_table_pages` and
    // the records of the checkpoints that let them go.)
    let d = db.stats().since(&before);
    assert!(d.wal_records <= d.commits + d.checkpoints + (size / 8192) + 3);
    assert_eq!(db.table_bytes("t").unwrap(), 0);
    // Their space is reused: inserting as many rows again does not grow the table.
    let mut tx = db.begin();
    let rows: Vec<Row> = (0..1000).map(|i| row(i, i, &"x".repeat(100))).collect();
    tx.insert_many("t", &rows).unwrap();
    tx.commit().unwrap();
    assert!(db.table_bytes("t").unwrap() <= size + 8192);
}

/// The room vacuum finds is remembered across a restart (the checkpoint keeps the
/// free-space hints): rows inserted after a reopen fill it instead of growing the table.
#[test]
fn the_room_vacuum_found_is_reused_after_a_restart() {
    for kind in [TableKind::Undo, TableKind::Heap] {
        let vfs = SimVfs::new(11);
        let db = Database::create("db", table_opts(&vfs, Protection::Cow, kind)).unwrap();
        fill(&db, 3000);
        let size = db.table_bytes("t").unwrap();
        // Every other row goes: each page keeps half its rows and gains room.
        let mut tx = db.begin();
        let mut i = 0;
        tx.modify_with("t", |_, _| {
            i += 1;
            if i % 2 == 0 {
                RowAction::Delete
            } else {
                RowAction::Keep
            }
        })
        .unwrap();
        tx.commit().unwrap();
        assert_eq!(db.vacuum("t").unwrap(), 1500, "{kind:?}");
        db.close().unwrap();
        let db = Database::open("db", table_opts(&vfs, Protection::Cow, kind)).unwrap();
        let mut tx = db.begin();
        let rows: Vec<Row> = (0..1500).map(|i| row(i, i, &"y".repeat(100))).collect();
        tx.insert_many("t", &rows).unwrap();
        tx.commit().unwrap();
        let after = db.table_bytes("t").unwrap();
        assert!(
            after <= size + 8192,
            "{kind:?}: {size} bytes before, {after} after"
        );
        assert_eq!(contents(&db).len(), 3000);
    }
}

#[test]
fn the_undo_bound_fails_a_transaction_cleanly() {
    let vfs = SimVfs::new(7);
    let o = Options {
        undo_limit_bytes: 1 << 20,
        ..table_opts(&vfs, Protection::Cow, TableKind::Undo)
    };
    let db = Database::create("db", o).unwrap();
    fill(&db, 60_000);
    let before = contents(&db);
    let mut tx = db.begin();
    let r = tx.modify_with("t", |_, r| {
        let mut r = r.clone();
        r[1] = Value::Int4(7);
        RowAction::Update(r)
    });
    assert!(matches!(r, Err(Error::UndoFull { .. })), "{r:?}");
    tx.rollback().unwrap();
    assert_eq!(contents(&db), before);
    assert_eq!(db.undo_bytes(), 0);
    // Raising the bound lets the same statement through.
    db.set_undo_limit(64 << 20);
    let mut tx = db.begin();
    add_one_to_b(&mut tx);
    tx.commit().unwrap();
}

/// A database whose undo keeps 64 KiB in memory, with 20,000 rows in `t`, and its
/// options (to reopen it).
fn filled_with_64k_of_undo_memory(vfs: &SimVfs) -> (Database, Options) {
    let o = Options {
        undo_memory_bytes: 64 << 10,
        ..table_opts(vfs, Protection::Cow, TableKind::Undo)
    };
    let db = Database::create("db", o.clone()).unwrap();
    fill(&db, 20_000);
    (db, o)
}

/// Undo past `undo_memory` goes to files and is read back: an old snapshot reads the
/// versions whose undo was spilled, a transaction whose undo was spilled rolls back
/// whole, and the files go once no snapshot needs them (and at the next open).
#[test]
fn undo_past_its_memory_budget_spills_to_files_and_reads_back() {
    let vfs = SimVfs::new(9);
    let (db, o) = filled_with_64k_of_undo_memory(&vfs);
    let before = contents(&db);
    let undo_files = || {
        vfs.list_dir(std::path::Path::new("db/undo"))
            .unwrap_or_default()
    };
    // A snapshot taken before two committed updates of every row.
    let mut old = db.begin();
    let old_b = |tx: &mut Transaction| -> Vec<i32> {
        let mut v: Vec<i32> = contents_in(tx).into_iter().map(|r| r.1).collect();
        v.sort();
        v
    };
    let s0 = db.stats();
    for _ in 0..2 {
        let mut tx = db.begin();
        assert_eq!(add_one_to_b(&mut tx), 20_000);
        tx.commit().unwrap();
    }
    let spilled = db.stats().since(&s0).undo_bytes_spilled;
    assert!(spilled > 100_000, "{spilled} bytes spilled");
    assert!(db.undo_spilled_bytes() > 0 && !undo_files().is_empty());
    assert!(db.undo_bytes() - db.undo_spilled_bytes() <= (64 << 10) + (16 << 10));
    // The old snapshot still sees b = a.
    let want: Vec<i32> = before.iter().map(|r| r.1).collect();
    assert_eq!(old_b(&mut old), want);
    assert!(db.stats().since(&s0).undo_bytes_read_back > 0);
    // A third update, rolled back after its undo spilled: every row as before it.
    let after_two = contents(&db);
    let mut tx = db.begin();
    add_one_to_b(&mut tx);
    tx.rollback().unwrap();
    assert_eq!(contents(&db), after_two);
    assert_eq!(old_b(&mut old), want);
    drop(old);
    // Nothing needs the undo now: the next change lets it go, files and all.
    let mut tx = db.begin();
    let mut first = true;
    tx.modify_with("t", |_, r| {
        if !std::mem::take(&mut first) {
            return RowAction::Stop;
        }
        let mut r = r.clone();
        r[2] = Value::Text("z".into());
        RowAction::Update(r)
    })
    .unwrap();
    tx.commit().unwrap();
    assert!(undo_files().len() <= 1, "{:?}", undo_files());
    // A crash with spilled undo of a running transaction: recovery rolls it back from
    // the WAL, and the files a previous run left are gone after the open.
    let mut tx = db.begin();
    add_one_to_b(&mut tx);
    assert!(!undo_files().is_empty());
    let committed = contents(&db);
    db.flush_wal().unwrap();
    std::mem::forget(tx);
    drop(db);
    vfs.restart(CrashMode::KeepUnsynced);
    let db = Database::open("db", o).unwrap();
    assert_eq!(contents(&db), committed);
    assert!(undo_files().is_empty(), "{:?}", undo_files());
}

/// A full disk while undo goes to its files fails the change that needed the room,
/// with a clear error: the transaction rolls back whole, nothing committed is lost, and
/// the database goes on taking writes (undo files are not durable state).
#[test]
fn a_full_disk_while_spilling_undo_fails_the_change_and_loses_nothing() {
    let vfs = SimVfs::new(10);
    let (db, o) = filled_with_64k_of_undo_memory(&vfs);
    let before = contents(&db);
    vfs.fail_nth_write_under(std::path::Path::new("db/undo"), 3, FaultKind::Enospc);
    let mut tx = db.begin();
    let r = tx.modify_with("t", |_, r| {
        let mut r = r.clone();
        r[1] = Value::Int4(-5);
        RowAction::Update(r)
    });
    let e = r.unwrap_err();
    assert!(matches!(e, Error::UndoSpill { .. }), "{e}");
    assert!(e.to_string().contains("could not write undo"), "{e}");
    assert_eq!(vfs.faults_injected(), 1);
    tx.rollback().unwrap();
    assert_eq!(contents(&db), before);
    // Still writable, and the next spill works.
    let mut tx = db.begin();
    assert_eq!(add_one_to_b(&mut tx), 20_000);
    tx.commit().unwrap();
    let after: Vec<(i32, i32, String)> = before
        .iter()
        .map(|(a, b, c)| (*a, b + 1, c.clone()))
        .collect();
    assert_eq!(contents(&db), after);
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open("db", o).unwrap();
    assert_eq!(contents(&db), after);
}

#[test]
fn writers_wait_and_the_first_updater_wins() {
    let vfs = SimVfs::new(8);
    let db = Database::create("db", table_opts(&vfs, Protection::Cow, TableKind::Undo)).unwrap();
    let ids = fill(&db, 10);
    let mut a = db.begin();
    let mut b = db.begin();
    a.update("t", ids[0], &row(0, 100, "a")).unwrap();
    a.commit().unwrap();
    assert!(matches!(
        b.update("t", ids[0], &row(0, 200, "b")),
        Err(Error::SerializationFailure)
    ));
    drop(b);
    let mut c = db.begin();
    assert_eq!(c.get("t", ids[0]).unwrap().unwrap()[1], Value::Int4(100));
    // Own changes: later commands see earlier ones.
    c.update("t", ids[1], &row(1, 5, "c")).unwrap();
    assert_eq!(c.get("t", ids[1]).unwrap().unwrap()[1], Value::Int4(5));
    c.commit().unwrap();
}

#[test]
fn rolling_back_rows_that_grew_twice_restores_them() {
    for crash in [false, true] {
        let vfs = SimVfs::new(9);
        let db =
            Database::create("db", table_opts(&vfs, Protection::Cow, TableKind::Undo)).unwrap();
        let ids = fill(&db, 50);
        let mut tx = db.begin();
        let id = tx.insert("t", &row(100, 0, "BB")).unwrap();
        tx.commit().unwrap();
        let before = contents(&db);
        let mut tx = db.begin();
        for (k, text) in ["BBB", "BBBB", "BBBBBBBBBBBBBBBBBBBB", "B"]
            .iter()
            .enumerate()
        {
            tx.update("t", id, &row(100, k as i32, text)).unwrap();
            tx.update("t", ids[k], &row(k as i32, 0, &text.repeat(30)))
                .unwrap();
        }
        if crash {
            db.checkpoint().unwrap();
            db.flush_wal().unwrap();
            std::mem::forget(tx);
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            let db =
                Database::open("db", table_opts(&vfs, Protection::Cow, TableKind::Undo)).unwrap();
            assert_eq!(contents(&db), before, "after a crash");
        } else {
            tx.rollback().unwrap();
            assert_eq!(contents(&db), before);
        }
    }
}

/// Undo pointers belong to the open that made them: the undo log starts empty at every
/// open, its pointers at 1 again, while rows keep the headers an earlier open gave them
/// (docs/recovery.md rule 22a). VACUUM and CREATE INDEX walk every version of every row;
/// they must not take such a pointer for a record of the new log (here the first record
/// of each open is 1, and the new one patches 300 bytes into a row of a few).
#[test]
fn undo_pointers_made_before_a_reopen_are_not_followed() {
    for crash in [false, true] {
        let vfs = SimVfs::new(12);
        let o = || table_opts(&vfs, Protection::Cow, TableKind::Undo);
        let db = Database::create("db", o()).unwrap();
        db.create_table("t", schema()).unwrap();
        let index = |db: &Database, name, column| {
            db.create_index(&IndexSpec {
                name,
                table: "t",
                columns: &[column],
                ..IndexSpec::default()
            })
            .unwrap();
        };
        index(&db, "t_b", "b");
        let mut tx = db.begin();
        let long = |c: &str| c.repeat(300);
        let ids = tx
            .insert_many("t", &[row(1, 1, ""), row(2, 2, &long("x"))])
            .unwrap();
        tx.commit().unwrap();
        // The first change of this open: undo record 1, named by row 1's header.
        let mut tx = db.begin();
        tx.update("t", ids[0], &row(1, 10, "")).unwrap();
        tx.commit().unwrap();
        if crash {
            // The page goes to disk with the pointer; the update is before the redo
            // point, so recovery does not touch the header.
            db.checkpoint().unwrap();
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
        } else {
            db.close().unwrap();
        }
        let db = Database::open("db", o()).unwrap();
        // A snapshot keeps the new log's records.
        let mut old = db.begin();
        let before = vec![(1, 10, String::new()), (2, 2, long("x"))];
        assert_eq!(contents_in(&mut old), before, "crash {crash}");
        // The first change of this open: undo record 1 again, of row 2.
        let mut tx = db.begin();
        tx.update("t", ids[1], &row(2, 2, &long("y"))).unwrap();
        tx.commit().unwrap();
        db.vacuum("t").unwrap();
        index(&db, "t_c", "c");
        let after = vec![(1, 10, String::new()), (2, 2, long("y"))];
        assert_eq!(contents(&db), after, "crash {crash}");
        assert_eq!(contents_in(&mut old), before, "crash {crash}");
        let mut tx = db.begin();
        let mut by_b = Vec::new();
        tx.read(
            walden::Rows::index("t_b", Bound::Unbounded, Bound::Unbounded),
            walden::RowShape::default(),
            |_, r| {
                by_b.push(r[1].clone());
                Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
            },
        )
        .unwrap();
        assert_eq!(by_b, vec![Value::Int4(2), Value::Int4(10)], "crash {crash}");
        drop(tx);
        drop(old);
        let check = db.check().unwrap();
        assert!(
            check.problems.is_empty(),
            "crash {crash}: {:?}",
            check.problems
        );
    }
}

/// A transaction's list of the rows it changed, past `txn_undo_memory_bytes`, goes to a
/// temporary file: a rollback reads it back newest first and restores every row, an
/// insert that fails part way takes back its own rows only (its mark lies in the
/// spilled part), and the file goes with the transaction.
#[test]
fn a_long_change_list_spills_and_rollback_reads_it_back() {
    let vfs = SimVfs::new(11);
    let o = Options {
        txn_undo_memory_bytes: 1024,
        ..table_opts(&vfs, Protection::Cow, TableKind::Undo)
    };
    let db = Database::create("db", o).unwrap();
    fill(&db, 20_000);
    db.create_index(&IndexSpec {
        name: "t_a",
        table: "t",
        columns: &["a"],
        unique: true,
        ..IndexSpec::default()
    })
    .unwrap();
    let before = contents(&db);
    let temp_files = || {
        vfs.list_dir(std::path::Path::new("db/tmp"))
            .unwrap_or_default()
    };
    let s0 = db.stats();
    let mut tx = db.begin();
    assert_eq!(add_one_to_b(&mut tx), 20_000);
    let spilled = db.stats().since(&s0).temp_bytes;
    assert!(
        spilled > 100_000,
        "{spilled} bytes of the change list written"
    );
    assert_eq!(temp_files().len(), 1);
    // 5,000 new rows, then a batch whose last row repeats a key: the batch goes, the
    // update and the 5,000 stay.
    let more: Vec<Row> = (20_000..25_000).map(|i| row(i, i, "new")).collect();
    tx.insert_many("t", &more).unwrap();
    let mut bad: Vec<Row> = (25_000..26_000).map(|i| row(i, i, "bad")).collect();
    bad.push(row(7, 7, "dup"));
    assert!(matches!(
        tx.insert_many("t", &bad),
        Err(Error::UniqueViolation { .. })
    ));
    let seen = contents_in(&mut tx);
    assert_eq!(seen.len(), 25_000);
    assert!(seen.iter().all(|r| r.2 != "bad" && r.2 != "dup"));
    assert!(seen[..20_000].iter().all(|r| r.1 == r.0 + 1));
    tx.rollback().unwrap();
    assert_eq!(contents(&db), before);
    assert!(temp_files().is_empty(), "{:?}", temp_files());
    db.check().unwrap();
    // Committed, the same work stays, and leaves no file either.
    let mut tx = db.begin();
    add_one_to_b(&mut tx);
    tx.commit().unwrap();
    assert!(contents(&db).iter().all(|r| r.1 == r.0 + 1));
    assert!(temp_files().is_empty());
    // A crash with a spilled list: recovery rolls back from the WAL, without it, and
    // leaves no file in tmp/.
    let committed = contents(&db);
    let mut tx = db.begin();
    add_one_to_b(&mut tx);
    db.flush_wal().unwrap();
    assert_eq!(temp_files().len(), 1);
    std::mem::forget(tx);
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let o = Options {
        txn_undo_memory_bytes: 1024,
        ..table_opts(&vfs, Protection::Cow, TableKind::Undo)
    };
    let db = Database::open("db", o).unwrap();
    assert_eq!(db.recovery_report().transactions_rolled_back, 1);
    assert_eq!(contents(&db), committed);
    assert!(temp_files().is_empty(), "{:?}", temp_files());
    db.check().unwrap();
}
