//! Values larger than a page, stored out of line (`engine/toast.rs`): they round-trip
//! through insert, an update of another column (which neither copies nor logs them
//! again), rollback, a crash and vacuum, on both table kinds. What could go wrong: a
//! value read back wrong or from another value's chunks, an update that logs the value
//! again, chunks freed while an old snapshot still reads them, or kept forever after
//! their row is gone.
#![allow(clippy::unwrap_used)]

use walden::vfs::{CrashMode, SimVfs};
use walden::*;

mod support;
use support::{table_opts, DIR};

const KINDS: [TableKind; 2] = [TableKind::Heap, TableKind::Undo];

fn options(vfs: &SimVfs, protection: Protection, kind: TableKind) -> Options {
    Options {
        page_size: 8192,
        buffer_pool_bytes: 8 << 20,
        ..table_opts(vfs, protection, kind)
    }
}

fn schema() -> Schema {
    Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::new("n", ColumnType::Int8),
        Column::new("body", ColumnType::Text),
    ])
}

/// A new database with table `t` (`schema`), on a simulated disk seeded `seed`.
fn new_db(seed: u64, protection: Protection, kind: TableKind) -> (SimVfs, Database) {
    let vfs = SimVfs::new(seed);
    let db = Database::create(DIR, options(&vfs, protection, kind)).unwrap();
    db.create_table("t", schema()).unwrap();
    (vfs, db)
}

/// The row (id, 0, body).
fn row(id: i64, body: &str) -> [Value; 3] {
    [
        Value::Int8(id),
        Value::Int8(0),
        Value::Text(body.to_string()),
    ]
}

/// Deletes every row of `t`, committed.
fn delete_all(db: &Database) {
    let mut tx = db.begin();
    tx.modify_with("t", |_, _| RowAction::Delete).unwrap();
    tx.commit().unwrap();
}

/// `len` bytes of text that zstd shrinks: words from a small vocabulary picked by
/// a seeded generator.
fn text(len: usize, seed: u64) -> String {
    let words = [
        "walden", "pond", "log", "only", "what", "changed", "page", "undo",
    ];
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(words[(x % 8) as usize]);
        s.push(char::from(b'a' + (x >> 40) as u8 % 26));
        s.push(' ');
    }
    s.truncate(len);
    s
}

/// The row with id `id`: (n, body).
fn read(db: &Database, id: i64) -> Option<(Value, Value)> {
    let mut tx = db.begin();
    let rows = tx.scan("t").unwrap();
    tx.commit().unwrap();
    rows.into_iter()
        .find(|(_, r)| r[0] == Value::Int8(id))
        .map(|(_, r)| (r[1].clone(), r[2].clone()))
}

fn set(db: &Database, id: i64, n: Option<i64>, body: Option<&str>) -> TxnStats {
    let mut tx = db.begin();
    tx.modify_with("t", |_, r| {
        if r[0] != Value::Int8(id) {
            return RowAction::Keep;
        }
        let mut r = r.clone();
        if let Some(n) = n {
            r[1] = Value::Int8(n);
        }
        if let Some(b) = body {
            r[2] = Value::Text(b.to_string());
        }
        RowAction::Update(r)
    })
    .unwrap();
    tx.commit_with_stats().unwrap()
}

fn assert_clean(db: &Database, what: &str) {
    let r = db.check().unwrap();
    assert!(r.is_clean(), "{what}: {:?}", r.problems);
}

fn body_is(db: &Database, id: i64, want: &str, what: &str) {
    match read(db, id) {
        Some((_, Value::Text(s))) => {
            assert!(
                s.len() == want.len() && s == want,
                "{what}: body of {id} differs ({} bytes)",
                s.len()
            )
        }
        other => panic!("{what}: row {id} reads {:?}", other.map(|(n, _)| n)),
    }
}

/// The whole life of a 10 MB value on each kind and torn-page mode.
#[test]
fn a_ten_megabyte_value_round_trips() {
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        for kind in KINDS {
            round_trip(protection, kind, 10 << 20);
        }
    }
}

/// The same with 100 MB, on the default mode.
#[test]
fn a_hundred_megabyte_value_round_trips() {
    for kind in KINDS {
        round_trip(Protection::Cow, kind, 100 << 20);
    }
}

fn round_trip(protection: Protection, kind: TableKind, len: usize) {
    let what = format!("{protection:?} {kind:?} {len}");
    let (vfs, db) = new_db(31, protection, kind);
    let big = text(len, 1);
    let small = text(100, 2);
    let mut tx = db.begin();
    tx.insert("t", &row(1, &big)).unwrap();
    tx.insert("t", &row(2, &small)).unwrap();
    let stats = tx.commit_with_stats().unwrap();
    // Stored compressed: the WAL carries about what zstd made of it, not the value.
    assert!(
        stats.wal_bytes() < len as u64 * 3 / 4,
        "{what}: the insert logged {} bytes",
        stats.wal_bytes()
    );
    body_is(&db, 1, &big, &what);
    body_is(&db, 2, &small, &what);

    // An update of another column neither copies nor logs the value.
    db.checkpoint().unwrap();
    let before = db.data_file_bytes().unwrap();
    let stats = set(&db, 1, Some(7), None);
    assert!(
        stats.wal_bytes() < 1024,
        "{what}: the other column's update logged {} bytes",
        stats.wal_bytes()
    );
    assert_eq!(read(&db, 1).unwrap().0, Value::Int8(7), "{what}");
    body_is(&db, 1, &big, &what);

    // An old snapshot keeps reading the value a later update replaced, vacuum or not.
    let mut reader = db.begin();
    let other = text(len / 2, 3);
    set(&db, 1, None, Some(&other));
    body_is(&db, 1, &other, &what);
    db.vacuum("t").unwrap();
    let rows = reader.scan("t").unwrap();
    let old = rows.iter().find(|(_, r)| r[0] == Value::Int8(1)).unwrap();
    assert!(
        old.1[2] == Value::Text(big.clone()),
        "{what}: the old snapshot's value"
    );
    reader.commit().unwrap();

    // Rolled back, an update of the value leaves the one before.
    let mut tx = db.begin();
    tx.modify_with("t", |_, r| {
        let mut r = r.clone();
        r[2] = Value::Text(text(len, 4));
        RowAction::Update(r)
    })
    .unwrap();
    tx.rollback().unwrap();
    body_is(&db, 1, &other, &what);
    body_is(&db, 2, &small, &what);
    assert_clean(&db, &what);

    // A crash loses nothing committed, and the uncommitted value is gone.
    let mut tx = db.begin();
    tx.modify_with("t", |_, r| {
        let mut r = r.clone();
        r[2] = Value::Text(text(len / 4, 5));
        RowAction::Update(r)
    })
    .unwrap();
    db.flush_wal().unwrap();
    std::mem::forget(tx);
    std::mem::forget(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, options(&vfs, protection, kind)).unwrap();
    body_is(&db, 1, &other, &what);
    body_is(&db, 2, &small, &what);
    assert_clean(&db, &what);

    // Deleted and vacuumed, the values' space is given back.
    delete_all(&db);
    let r = db.vacuum_report("t").unwrap();
    assert_eq!(r.pages_left, 0, "{what}: {r:?}");
    assert!(read(&db, 1).is_none(), "{what}");
    assert_clean(&db, &what);
    let after = db.data_file_bytes().unwrap();
    assert!(
        // (cow mode keeps a few hundred free locations rather than move pages down)
        after * 2 < before,
        "{what}: the data file holds {after} bytes after delete and vacuum, {before} with the value"
    );
    db.close().unwrap();
    let db = Database::open(DIR, options(&vfs, protection, kind)).unwrap();
    assert_clean(&db, &what);
    assert!(read(&db, 1).is_none(), "{what}");
}

/// A dropped column's value stored out of line is never read (the row reads without
/// it); the next change of the row lets it go, and vacuum gives its pages back.
#[test]
fn a_dropped_columns_value_goes_with_the_next_change() {
    for kind in KINDS {
        let what = format!("{kind:?}");
        let (_vfs, db) = new_db(32, Protection::Cow, kind);
        let mut tx = db.begin();
        for id in 0..3 {
            tx.insert("t", &row(id, &text(200_000, id as u64))).unwrap();
        }
        tx.commit().unwrap();
        db.alter_table("t", &AlterOp::DropColumn("body".into()))
            .unwrap();
        let mut tx = db.begin();
        let rows = tx.scan("t").unwrap();
        tx.commit().unwrap();
        assert_eq!(rows.len(), 3, "{what}");
        assert!(rows.iter().all(|(_, r)| r.len() == 2), "{what}");
        let stats = set(&db, 1, Some(5), None);
        assert!(
            stats.wal_bytes() < 1024,
            "{what}: {} bytes",
            stats.wal_bytes()
        );
        delete_all(&db);
        assert!(db.toast_bytes("t").unwrap() > 0, "{what}");
        let r = db.vacuum_report("t").unwrap();
        assert_eq!(r.pages_left, 0, "{what}: {r:?}");
        assert_eq!(db.toast_bytes("t").unwrap(), 0, "{what}");
        assert_clean(&db, &what);
    }
}

/// Under READ COMMITTED, an update that meets a row another transaction changed since
/// its snapshot judges the newest version again: the value it stores replaces that
/// version's, whose chunks go; none of its own chunks are left behind.
#[test]
fn read_committed_updates_of_a_large_value_leave_no_chunks_behind() {
    for kind in KINDS {
        let what = format!("{kind:?}");
        let (_vfs, db) = new_db(33, Protection::Cow, kind);
        let mut tx = db.begin();
        tx.insert("t", &row(1, &text(300_000, 1))).unwrap();
        tx.commit().unwrap();
        let mut late = db.begin_with(Isolation::ReadCommitted);
        set(&db, 1, Some(1), Some(&text(300_000, 2)));
        let mine = text(300_000, 3);
        let n = late
            .modify_with("t", |_, r| {
                let mut r = r.clone();
                r[2] = Value::Text(mine.clone());
                RowAction::Update(r)
            })
            .unwrap();
        assert_eq!(n, 1, "{what}");
        late.commit().unwrap();
        body_is(&db, 1, &mine, &what);
        assert_eq!(read(&db, 1).unwrap().0, Value::Int8(1), "{what}");
        delete_all(&db);
        let r = db.vacuum_report("t").unwrap();
        assert_eq!(r.pages_left, 0, "{what}: {r:?}");
        assert_clean(&db, &what);
        // Nothing of the table is left: its toast relation has no page either.
        assert_eq!(db.toast_bytes("t").unwrap(), 0, "{what}");
    }
}

/// Random inserts, updates (of the value or not), deletes, rollbacks and vacuums with
/// an old snapshot open now and then: every row reads back its value, and the database
/// checks clean after each step.
#[test]
fn random_changes_keep_every_value() {
    for kind in KINDS {
        let (_vfs, db) = new_db(34, Protection::Cow, kind);
        let mut model: std::collections::BTreeMap<i64, String> = Default::default();
        let mut x: u64 = 88172645463325252;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut key = 0i64;
        for step in 0..300 {
            let what = format!("{kind:?} step {step}");
            let mut tx = db.begin();
            let mut view = model.clone();
            for _ in 0..1 + next() % 4 {
                let r = next() % 10;
                let len = [10, 3_000, 20_000, 3_000][(next() % 4) as usize];
                let body = text(len, next() % 3);
                if r < 4 || view.is_empty() {
                    key += 1;
                    tx.insert(
                        "t",
                        &[Value::Int8(key), Value::Int8(0), Value::Text(body.clone())],
                    )
                    .unwrap();
                    view.insert(key, body);
                } else {
                    let k = *view
                        .keys()
                        .nth((next() % view.len() as u64) as usize)
                        .unwrap();
                    let delete = r >= 8;
                    if r % 2 == 0 {
                        tx.modify_with("t", |_, row| {
                            if row[0] != Value::Int8(k) {
                                RowAction::Keep
                            } else if delete {
                                RowAction::Delete
                            } else {
                                let mut row = row.clone();
                                row[2] = Value::Text(body.clone());
                                RowAction::Update(row)
                            }
                        })
                        .unwrap();
                    } else {
                        let id = tx
                            .scan("t")
                            .unwrap()
                            .into_iter()
                            .find(|(_, row)| row[0] == Value::Int8(k))
                            .unwrap()
                            .0;
                        if delete {
                            tx.delete("t", id).unwrap();
                        } else {
                            let row = [Value::Int8(k), Value::Int8(1), Value::Text(body.clone())];
                            tx.update("t", id, &row).unwrap();
                        }
                    }
                    if delete {
                        view.remove(&k);
                    } else {
                        view.insert(k, body);
                    }
                }
            }
            if next() % 6 == 0 {
                tx.rollback().unwrap();
            } else {
                tx.commit().unwrap();
                model = view;
            }
            if next() % 10 == 0 {
                db.vacuum("t").unwrap();
            }
            if next() % 7 == 0 {
                db.checkpoint().unwrap();
            }
            let mut tx = db.begin();
            let got: std::collections::BTreeMap<i64, String> = tx
                .scan("t")
                .unwrap_or_else(|e| panic!("{what}: {e}"))
                .into_iter()
                .map(|(_, r)| match (&r[0], &r[2]) {
                    (Value::Int8(k), Value::Text(s)) => (*k, s.clone()),
                    _ => panic!("{what}: {r:?}"),
                })
                .collect();
            tx.commit().unwrap();
            assert!(got == model, "{what}: rows differ");
            assert_clean(&db, &what);
        }
    }
}
