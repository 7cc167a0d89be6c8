//! B-tree indexes against a model: random inserts, updates and deletes through a unique
//! and a non-unique index, on both table kinds and in every protection mode, with clean
//! reopens and crashes (power lost, unsynced writes dropped, kept or torn) between
//! transactions; then the lookups, the full index scans and the rows must agree with a
//! `BTreeMap`. Small pages and a 16-page pool make the tree split often and evict dirty
//! index pages, so that recovery replays splits whose pages reached disk in any order
//! the write rules allow.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use support::*;
use walden::vfs::{CrashMode, SimVfs};
use walden::{
    Column, ColumnType, Database, Error, IndexSpec, Protection, Schema, TableKind, Value,
};

const DIR: &str = "/db";
const TABLE: &str = "t";

fn schema() -> Schema {
    Schema::new(vec![
        Column::not_null("k", ColumnType::Int8),
        Column::new("pad", ColumnType::Text),
    ])
}

#[derive(Debug, Clone)]
enum Op {
    /// Insert key `k` with a pad of `len` bytes (a unique violation if it is there).
    Insert {
        k: i64,
        len: usize,
    },
    /// Change the pad of key `k`, if there.
    Update {
        k: i64,
        len: usize,
    },
    /// Delete key `k`, if there.
    Delete {
        k: i64,
    },
    /// Update key `k` to the values it has (no indexed column changes: heap tables
    /// make a heap-only version), if there.
    Touch {
        k: i64,
    },
    /// Commit the transaction so far; begin another.
    Commit,
    /// Roll the transaction back.
    Rollback,
    /// Commit, then vacuum the table (and its indexes).
    Vacuum,
    Reopen,
    Crash {
        fate: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0..400i64, 0..300usize).prop_map(|(k, len)| Op::Insert { k, len }),
        4 => (0..400i64, 0..300usize).prop_map(|(k, len)| Op::Update { k, len }),
        3 => (0..400i64).prop_map(|k| Op::Delete { k }),
        4 => (0..400i64).prop_map(|k| Op::Touch { k }),
        3 => Just(Op::Commit),
        1 => Just(Op::Rollback),
        1 => Just(Op::Vacuum),
        1 => Just(Op::Reopen),
        1 => (0..8u8).prop_map(|fate| Op::Crash { fate }),
    ]
}

/// The pad of key `k` at version `v`: its bytes sort differently from `k`'s order, so
/// the pad index splits elsewhere than the key index.
fn pad(k: i64, len: usize, v: u32) -> String {
    let c = (b'a' + ((k * 7 + v as i64) % 26) as u8) as char;
    let mut s = String::with_capacity(len + 12);
    s.push(c);
    s.push_str(&format!("{k:06}-{v}"));
    while s.len() < len {
        s.push(c);
    }
    s
}

fn opts_for(vfs: &SimVfs, protection: Protection, kind: TableKind) -> walden::Options {
    small_pool(table_opts(vfs, protection, kind))
}

fn create(vfs: &SimVfs, protection: Protection, kind: TableKind) -> Database {
    let db = Database::create(DIR, opts_for(vfs, protection, kind)).unwrap();
    db.create_table(TABLE, schema()).unwrap();
    let spec = |name, columns: &'static [&'static str], unique| IndexSpec {
        name,
        table: TABLE,
        columns,
        unique,
        ..IndexSpec::default()
    };
    assert!(db.create_index(&spec("t_k", &["k"], true)).unwrap());
    assert!(db
        .create_index(&spec("t_pad", &["pad", "k"], false))
        .unwrap());
    db
}

/// The primary key `t_pkey` on `k` of the test table.
fn add_primary_key(db: &Database) {
    db.create_index(&IndexSpec {
        name: "t_pkey",
        table: TABLE,
        columns: &["k"],
        primary: true,
        ..IndexSpec::default()
    })
    .unwrap();
}

fn key_of(row: &[Value]) -> i64 {
    match row[0] {
        Value::Int8(k) => k,
        ref v => panic!("key {v:?}"),
    }
}

/// Every committed row, through the table and through both indexes.
fn check(db: &Database, model: &BTreeMap<i64, String>, when: &str) {
    let mut tx = db.begin();
    let mut table: Vec<(i64, String)> = tx
        .scan(TABLE)
        .unwrap()
        .into_iter()
        .map(|(_, r)| (key_of(&r), r[1].to_string()))
        .collect();
    table.sort();
    let want: Vec<(i64, String)> = model.iter().map(|(k, p)| (*k, p.clone())).collect();
    assert_eq!(table, want, "table {when}");
    let mut by_k = Vec::new();
    tx.read(
        walden::Rows::index("t_k", Bound::Unbounded, Bound::Unbounded),
        walden::RowShape::default(),
        |_, r| {
            by_k.push((key_of(&r), r[1].to_string()));
            Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
        },
    )
    .unwrap();
    assert_eq!(by_k, want, "index t_k {when}");
    let mut by_pad = Vec::new();
    tx.read(
        walden::Rows::index("t_pad", Bound::Unbounded, Bound::Unbounded),
        walden::RowShape::default(),
        |_, r| {
            by_pad.push((r[1].to_string(), key_of(&r)));
            Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
        },
    )
    .unwrap();
    let mut want_pad: Vec<(String, i64)> = model.iter().map(|(k, p)| (p.clone(), *k)).collect();
    want_pad.sort();
    assert_eq!(by_pad, want_pad, "index t_pad {when}");
    // Point lookups and a range.
    for k in [0i64, 1, 57, 200, 399] {
        let got: Vec<i64> = tx
            .index_get("t_k", &[Value::Int8(k)])
            .unwrap()
            .into_iter()
            .map(|(_, r)| key_of(&r))
            .collect();
        let want: Vec<i64> = model.get(&k).map(|_| k).into_iter().collect();
        assert_eq!(got, want, "lookup {k} {when}");
    }
    let mut range = Vec::new();
    let (lo, hi) = ([Value::Int8(100)], [Value::Int8(150)]);
    tx.read(
        walden::Rows::index("t_k", Bound::Excluded(&lo), Bound::Included(&hi)),
        walden::RowShape::default(),
        |_, r| {
            range.push(key_of(&r));
            Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
        },
    )
    .unwrap();
    let want: Vec<i64> = model.range(101..=150).map(|(k, _)| *k).collect();
    assert_eq!(range, want, "range {when}");
    // The whole-database check agrees.
    let report = db.check().unwrap();
    assert!(report.is_clean(), "check {when}: {:?}", report.problems);
    assert_eq!(report.tables[0].rows, model.len() as u64, "check {when}");
    for ix in &report.indexes {
        assert!(ix.entries >= model.len() as u64, "check {when}: {ix:?}");
    }
    // Backward: the whole index, and ranges with each kind of bound.
    let mut back = Vec::new();
    tx.read(
        walden::Rows::index("t_pad", Bound::Unbounded, Bound::Unbounded).backward(true),
        walden::RowShape::default(),
        |_, r| {
            back.push((r[1].to_string(), key_of(&r)));
            Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
        },
    )
    .unwrap();
    want_pad.reverse();
    assert_eq!(back, want_pad, "index t_pad backward {when}");
    for (lo, hi) in [
        (Bound::Excluded(100i64), Bound::Included(150i64)),
        (Bound::Included(37), Bound::Excluded(300)),
        (Bound::Unbounded, Bound::Included(60)),
        (Bound::Included(333), Bound::Unbounded),
    ] {
        let v = |b: Bound<i64>| b.map(|k| [Value::Int8(k)]);
        let (l, h) = (v(lo), v(hi));
        let mut got = Vec::new();
        let rows = walden::Rows::index(
            "t_k",
            l.as_ref().map(|a| &a[..]),
            h.as_ref().map(|a| &a[..]),
        );
        tx.read(rows.backward(true), walden::RowShape::default(), |_, r| {
            got.push(key_of(&r));
            Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
        })
        .unwrap();
        let want: Vec<i64> = model.range((lo, hi)).rev().map(|(k, _)| *k).collect();
        assert_eq!(got, want, "backward range {lo:?}..{hi:?} {when}");
    }
    tx.commit().unwrap();
}

fn run_case(protection: Protection, kind: TableKind, seed: u64, ops: &[Op]) {
    let vfs = SimVfs::new(seed);
    let mut db = create(&vfs, protection, kind);
    let mut committed: BTreeMap<i64, String> = BTreeMap::new();
    let mut model = committed.clone();
    let mut version = 0u32;
    let mut tx = Some(db.begin());
    for (i, op) in ops.iter().enumerate() {
        version += 1;
        let t = tx.as_mut().unwrap();
        match *op {
            Op::Insert { k, len } => {
                let p = pad(k, len, version);
                match t.insert(TABLE, &[Value::Int8(k), Value::Text(p.clone())]) {
                    Ok(_) => {
                        assert!(!model.contains_key(&k), "op {i}: duplicate {k} inserted");
                        model.insert(k, p);
                    }
                    Err(Error::UniqueViolation { index, .. }) => {
                        assert!(model.contains_key(&k), "op {i}: {k} refused");
                        assert_eq!(index, "t_k");
                    }
                    Err(e) => panic!("op {i}: {e}"),
                }
            }
            Op::Update { k, len } => {
                let found = t.index_get("t_k", &[Value::Int8(k)]).unwrap();
                assert_eq!(found.len(), model.contains_key(&k) as usize, "op {i}");
                if let Some((id, _)) = found.first() {
                    let p = pad(k, len, version);
                    t.update(TABLE, *id, &[Value::Int8(k), Value::Text(p.clone())])
                        .unwrap();
                    model.insert(k, p);
                }
            }
            Op::Delete { k } => {
                let found = t.index_get("t_k", &[Value::Int8(k)]).unwrap();
                if let Some((id, _)) = found.first() {
                    t.delete(TABLE, *id).unwrap();
                    model.remove(&k);
                }
            }
            Op::Touch { k } => {
                let found = t.index_get("t_k", &[Value::Int8(k)]).unwrap();
                assert_eq!(found.len(), model.contains_key(&k) as usize, "op {i}");
                if let Some((id, row)) = found.first() {
                    t.update(TABLE, *id, row).unwrap();
                }
            }
            Op::Commit => {
                tx.take().unwrap().commit().unwrap();
                committed = model.clone();
                tx = Some(db.begin());
            }
            Op::Rollback => {
                tx.take().unwrap().rollback().unwrap();
                model = committed.clone();
                tx = Some(db.begin());
            }
            Op::Vacuum => {
                tx.take().unwrap().commit().unwrap();
                committed = model.clone();
                db.vacuum(TABLE).unwrap();
                let report = db.check().unwrap();
                assert!(report.is_clean(), "op {i}: {:?}", report.problems);
                if kind == TableKind::Heap {
                    // No snapshot is left that could read an old version: every entry
                    // left has its row.
                    for ix in &report.indexes {
                        assert_eq!(ix.stale, 0, "op {i}: {ix:?}");
                    }
                }
                check(&db, &committed, &format!("after vacuum at op {i}"));
                tx = Some(db.begin());
            }
            Op::Reopen => {
                tx.take().unwrap().commit().unwrap();
                committed = model.clone();
                db.close().unwrap();
                vfs.restart(CrashMode::DropUnsynced);
                db = Database::open(DIR, opts_for(&vfs, protection, kind)).unwrap();
                check(&db, &committed, &format!("after reopen at op {i}"));
                tx = Some(db.begin());
            }
            Op::Crash { fate } => {
                tx.take().unwrap().commit().unwrap();
                committed = model.clone();
                vfs.crash_now();
                drop(db);
                let mode = match (fate, protection) {
                    (0..=3, _) => CrashMode::DropUnsynced,
                    (4..=5, _) | (_, Protection::None) => CrashMode::KeepUnsynced,
                    (6, _) => CrashMode::TearUnsynced,
                    _ => CrashMode::Random,
                };
                vfs.restart(mode);
                db = Database::open(DIR, opts_for(&vfs, protection, kind)).unwrap();
                check(&db, &committed, &format!("after crash at op {i}"));
                tx = Some(db.begin());
            }
        }
    }
    tx.take().unwrap().commit().unwrap();
    check(&db, &model, "at the end");
    db.close().unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, opts_for(&vfs, protection, kind)).unwrap();
    check(&db, &model, "after the last reopen");
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

macro_rules! model_test {
    ($name:ident, $protection:expr, $kind:expr) => {
        proptest! {
            #![proptest_config(config())]
            #[test]
            fn $name(seed in any::<u64>(), ops in proptest::collection::vec(op(), 200..600)) {
                run_case($protection, $kind, seed, &ops);
            }
        }
    };
}

model_test!(cow_heap, Protection::Cow, TableKind::Heap);
model_test!(cow_undo, Protection::Cow, TableKind::Undo);
model_test!(full_page_heap, Protection::FullPage, TableKind::Heap);
model_test!(full_page_undo, Protection::FullPage, TableKind::Undo);
model_test!(none_heap, Protection::None, TableKind::Heap);
model_test!(none_undo, Protection::None, TableKind::Undo);

/// A row's key reaches the log once: after a checkpoint, the leaf inserts of
/// single-row inserts name the row of their insert record (`btree_insert_row`, code 26)
/// instead of logging the key, except where the insert record was replaced by a page
/// image (`full-page` mode); recovery rebuilds every entry from those rows.
#[test]
fn inserted_keys_are_logged_once() {
    const INSERT_ROW: u8 = 26;
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        for kind in [TableKind::Heap, TableKind::Undo] {
            let vfs = SimVfs::new(11);
            let db = create(&vfs, protection, kind);
            db.checkpoint().unwrap();
            let before = db.stats();
            let mut model = BTreeMap::new();
            let mut tx = db.begin();
            for n in 0..300i64 {
                let k = n * 7919 % 1000;
                let p = pad(k, (n % 60) as usize, 1);
                tx.insert(TABLE, &[Value::Int8(k), Value::Text(p.clone())])
                    .unwrap();
                model.insert(k, p);
            }
            tx.commit().unwrap();
            let logged = db.stats().since(&before);
            let named = logged
                .by_kind
                .iter()
                .find(|c| c.code == INSERT_ROW)
                .map_or(0, |c| c.records);
            let when = format!("{protection:?} {kind}");
            // Two leaf inserts per row.
            match protection {
                Protection::FullPage => assert!(named > 0 && named < 600, "{when}: {named}"),
                _ => assert_eq!(named, 600, "{when}"),
            }
            vfs.crash_now();
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            let db = Database::open(DIR, opts_for(&vfs, protection, kind)).unwrap();
            check(&db, &model, &format!("{when}: after the crash"));
            let report = db.check().unwrap();
            assert!(report.is_clean(), "{when}: {:?}", report.problems);
        }
    }
}

/// Eight threads insert overlapping keys into a table with a primary key, each key in
/// its own transaction, some committing and some rolling back: each key ends up exactly
/// once, and every refused insert is a unique violation — or, rarely, a deadlock: a
/// rolled-back insert leaves its index entry behind on a slot the next insert may take,
/// and when two inserters of one key each take a slot whose stale entry has that key,
/// each finds the other's row behind such an entry and waits for it (known; see
/// `a_stale_entry_on_a_reused_slot_does_not_wait` for the case of different keys, which
/// no longer waits).
#[test]
fn concurrent_inserts_of_one_key() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let dir = TempDir::new("btree-concurrent");
        let db =
            Database::create(&dir.0, test_opts(std::sync::Arc::new(walden::vfs::RealVfs))).unwrap();
        db.create_table_with(TABLE, schema(), kind).unwrap();
        add_primary_key(&db);
        let refused = std::sync::atomic::AtomicU64::new(0);
        let deadlocks = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for th in 0..8i64 {
                let db = db.clone();
                let (refused, deadlocks) = (&refused, &deadlocks);
                s.spawn(move || {
                    for i in 0..300i64 {
                        let k = (i * 7 + th * 13) % 200;
                        let mut tx = db.begin();
                        match tx.insert(TABLE, &[Value::Int8(k), Value::Text(format!("{th}"))]) {
                            Ok(_) if (i + th) % 5 == 0 => tx.rollback().unwrap(),
                            Ok(_) => tx.commit().unwrap(),
                            Err(Error::UniqueViolation { index, values, .. }) => {
                                assert_eq!(index, "t_pkey");
                                assert_eq!(values, k.to_string());
                                refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(Error::Deadlock) => {
                                deadlocks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(e) => panic!("{kind}: {e}"),
                        }
                    }
                });
            }
        });
        let mut tx = db.begin();
        let mut keys: Vec<i64> = tx
            .scan(TABLE)
            .unwrap()
            .iter()
            .map(|(_, r)| key_of(r))
            .collect();
        keys.sort();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "{kind}: a key inserted twice");
        assert!(refused.into_inner() > 0, "{kind}: no insert was refused");
        let deadlocks = deadlocks.into_inner();
        assert!(
            deadlocks <= 24,
            "{kind}: {deadlocks} of 2,400 inserts met a deadlock"
        );
        for k in keys {
            assert_eq!(tx.index_get("t_pkey", &[Value::Int8(k)]).unwrap().len(), 1);
        }
        tx.commit().unwrap();
    }
}

/// An index entry left by a rolled-back insert points at a slot a later insert took for
/// another key. A uniqueness check that meets it while that later insert is still running
/// does not wait for it (its row does not hold the key): waiting there made two such
/// inserters wait for each other, a deadlock error where there is none.
#[test]
fn a_stale_entry_on_a_reused_slot_does_not_wait() {
    let vfs = SimVfs::new(12);
    let db = Database::create(DIR, sim_opts(&vfs)).unwrap();
    db.create_table_with(TABLE, schema(), TableKind::Undo)
        .unwrap();
    add_primary_key(&db);
    let row = |k: i64| [Value::Int8(k), Value::Text("p".into())];
    let mut c = db.begin();
    let slot = c.insert(TABLE, &row(1)).unwrap();
    c.rollback().unwrap();
    // Another key in the same slot, not committed yet.
    let mut d = db.begin();
    assert_eq!(
        d.insert(TABLE, &row(2)).unwrap(),
        slot,
        "the freed slot is reused"
    );
    // Key 1 again: the entry 1 -> slot is stale, and the row there holds 2.
    let (done, finished) = std::sync::mpsc::channel();
    let db2 = db.clone();
    let a = std::thread::spawn(move || {
        let mut a = db2.begin();
        let r = a.insert(TABLE, &row(1)).map(|_| ());
        let _ = done.send(());
        r.and_then(|()| a.commit())
    });
    let waited = finished
        .recv_timeout(std::time::Duration::from_secs(20))
        .is_err();
    d.commit().unwrap();
    a.join().unwrap().unwrap();
    assert!(
        !waited,
        "the insert of key 1 waited for the transaction that inserted key 2"
    );
    let mut tx = db.begin();
    let mut keys: Vec<i64> = tx
        .scan(TABLE)
        .unwrap()
        .iter()
        .map(|(_, r)| key_of(r))
        .collect();
    keys.sort();
    assert_eq!(keys, [1, 2]);
    for k in [1, 2] {
        assert_eq!(tx.index_get("t_pkey", &[Value::Int8(k)]).unwrap().len(), 1);
    }
}

/// A unique index over rows that repeat a key is refused and leaves nothing behind; an
/// over-long key is refused at build and at insert; the same index without the repeat
/// builds and finds every row.
#[test]
fn building_on_filled_tables() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let vfs = SimVfs::new(7);
        let db =
            Database::create(DIR, small_pool(table_opts(&vfs, Protection::Cow, kind))).unwrap();
        db.create_table(TABLE, schema()).unwrap();
        let mut tx = db.begin();
        for k in 0..2000i64 {
            tx.insert(TABLE, &[Value::Int8(k % 1500), Value::Text(pad(k, 40, 0))])
                .unwrap();
        }
        tx.commit().unwrap();
        let unique = IndexSpec {
            name: "t_k",
            table: TABLE,
            columns: &["k"],
            unique: true,
            ..IndexSpec::default()
        };
        match db.create_index(&unique) {
            Err(Error::UniqueViolation { values, .. }) => {
                assert!(values.parse::<i64>().unwrap() < 500)
            }
            r => panic!("{kind}: {r:?}"),
        }
        assert!(db.indexes(TABLE).unwrap().is_empty());
        // Delete the repeats (keys 1500..2000 took 0..500 again), then it builds.
        let mut tx = db.begin();
        let ids: Vec<_> = tx
            .scan(TABLE)
            .unwrap()
            .into_iter()
            .filter(
                |(_, r)| matches!(&r[1], Value::Text(t) if t[1..7].parse::<i64>().unwrap() >= 1500),
            )
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids.len(), 500);
        for id in ids {
            tx.delete(TABLE, id).unwrap();
        }
        tx.commit().unwrap();
        assert!(db.create_index(&unique).unwrap());
        assert!(!db
            .create_index(&IndexSpec {
                if_not_exists: true,
                ..unique.clone()
            })
            .unwrap());
        let mut tx = db.begin();
        for k in [0i64, 499, 500, 1499] {
            let got = tx.index_get("t_k", &[Value::Int8(k)]).unwrap();
            assert_eq!(got.len(), 1, "{kind}: key {k}");
        }
        assert!(tx
            .index_get("t_k", &[Value::Int8(1500)])
            .unwrap()
            .is_empty());
        // Over-long keys: at insert, nothing changed.
        let long = "x".repeat(2000);
        db.create_index(&IndexSpec {
            name: "t_pad",
            table: TABLE,
            columns: &["pad"],
            ..IndexSpec::default()
        })
        .unwrap();
        let before = tx.scan(TABLE).unwrap().len();
        match tx.insert(TABLE, &[Value::Int8(9999), Value::Text(long.clone())]) {
            Err(Error::KeyTooLarge { index, .. }) => assert_eq!(index, "t_pad"),
            r => panic!("{kind}: {r:?}"),
        }
        assert_eq!(tx.scan(TABLE).unwrap().len(), before);
        assert!(tx
            .index_get("t_k", &[Value::Int8(9999)])
            .unwrap()
            .is_empty());
        tx.commit().unwrap();
    }
}

/// A damaged index page is an error naming the index and the page, never a panic or a
/// wrong answer; the table itself still reads.
#[test]
fn a_damaged_index_page_is_named() {
    let dir = TempDir::new("btree-damage");
    let opts = || {
        opts_on(
            std::sync::Arc::new(walden::vfs::RealVfs),
            Protection::FullPage,
        )
    };
    let db = Database::create(&dir.0, opts()).unwrap();
    db.create_table(TABLE, schema()).unwrap();
    add_primary_key(&db);
    let mut tx = db.begin();
    for k in 0..2000i64 {
        tx.insert(TABLE, &[Value::Int8(k), Value::Text(pad(k, 20, 0))])
            .unwrap();
    }
    tx.commit().unwrap();
    let page_size = db.page_size();
    db.close().unwrap();
    // Flip a byte in the middle of every index page (kind 4): fixed places in full-page
    // mode, so page n is at n × page size.
    let path = dir.0.join("data");
    let mut bytes = std::fs::read(&path).unwrap();
    let mut damaged = 0;
    for page in bytes.chunks_mut(page_size) {
        if page[4] == 4 {
            page[page_size / 2] ^= 0x5a;
            damaged += 1;
        }
    }
    assert!(damaged > 1, "no index pages found");
    std::fs::write(&path, &bytes).unwrap();
    let db = Database::open(&dir.0, opts()).unwrap();
    let mut tx = db.begin();
    match tx.index_get("t_pkey", &[Value::Int8(7)]) {
        Err(Error::CorruptIndex { index, page, .. }) => {
            assert_eq!(index, "t_pkey");
            assert_eq!(
                bytes[page as usize * page_size + 4],
                4,
                "page {page} is no index page"
            );
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(tx.scan(TABLE).unwrap().len(), 2000);
    tx.commit().unwrap();
    // The check reports it too, naming the index.
    let report = db.check().unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains("t_pkey")),
        "{report:?}"
    );
    assert_eq!(report.tables[0].rows, 2000);
}

/// Heap-only updates: an update of a heap table that changes no indexed column and
/// stays on its page makes no index entry (`heap_update_hot`), in every mode; the rows
/// are found through the index before and after vacuum turns dead chain roots into
/// redirects (`heap_prune_hot`), and after a crash. An update of a key makes entries.
#[test]
fn heap_only_updates_touch_no_index() {
    const UPDATE_HOT: u8 = 27;
    const PRUNE_HOT: u8 = 28;
    let count = |s: &walden::StatsSnapshot, codes: &[u8]| -> u64 {
        s.by_kind
            .iter()
            .filter(|c| codes.contains(&c.code))
            .map(|c| c.records)
            .sum()
    };
    let btree_codes: Vec<u8> = (19..=26).filter(|&c| c != 25).collect();
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        let when = format!("{protection:?}");
        let vfs = SimVfs::new(5);
        let db = create(&vfs, protection, TableKind::Heap);
        let mut model = BTreeMap::new();
        let mut tx = db.begin();
        for k in 0..120i64 {
            let p = pad(k, 20, 0);
            tx.insert(TABLE, &[Value::Int8(k), Value::Text(p.clone())])
                .unwrap();
            model.insert(k, p);
        }
        tx.commit().unwrap();
        // Room on every page: two rows in three go.
        let mut tx = db.begin();
        tx.modify_with(TABLE, |_, row| match key_of(row) % 3 {
            0 => walden::RowAction::Keep,
            _ => walden::RowAction::Delete,
        })
        .unwrap();
        tx.commit().unwrap();
        model.retain(|k, _| k % 3 == 0);
        db.vacuum(TABLE).unwrap();
        db.checkpoint().unwrap();
        let before = db.stats();
        // Forty rounds of touching every row: far more versions than a page holds, so
        // updates prune their pages on the fly and chains go through redirects.
        for round in 0..40 {
            let mut tx = db.begin();
            let n = tx
                .modify_with(TABLE, |_, row| walden::RowAction::Update(row.clone()))
                .unwrap();
            assert_eq!(n, 40, "{when} round {round}");
            tx.commit().unwrap();
        }
        let logged = db.stats().since(&before);
        // Without heap-only versions: 1,600 updates, two entries each. With them, only a
        // row that finds its page full moves and gets entries.
        let index_records = count(&logged, &btree_codes);
        assert!(index_records * 100 <= 3200, "{when}: {:?}", logged.by_kind);
        assert!(count(&logged, &[UPDATE_HOT]) > 0, "{when}");
        assert!(count(&logged, &[PRUNE_HOT]) > 0, "{when}");
        check(&db, &model, &format!("{when}: after heap-only updates"));
        db.vacuum(TABLE).unwrap();
        check(&db, &model, &format!("{when}: after vacuum"));
        // A key change makes entries; the other rows stay heap-only.
        let before = db.stats();
        let mut tx = db.begin();
        for k in [3i64, 18, 42] {
            let (id, _) = tx.index_get("t_k", &[Value::Int8(k)]).unwrap().remove(0);
            let p = pad(k, 30, 9);
            tx.update(TABLE, id, &[Value::Int8(k), Value::Text(p.clone())])
                .unwrap();
            model.insert(k, p);
        }
        tx.commit().unwrap();
        assert!(
            count(&db.stats().since(&before), &btree_codes) >= 3,
            "{when}"
        );
        vfs.crash_now();
        drop(db);
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open(DIR, opts_for(&vfs, protection, TableKind::Heap)).unwrap();
        check(&db, &model, &format!("{when}: after the crash"));
        db.vacuum(TABLE).unwrap();
        check(&db, &model, &format!("{when}: after the last vacuum"));
        let report = db.check().unwrap();
        for ix in &report.indexes {
            assert_eq!(ix.stale, 0, "{when}: {ix:?}");
        }
    }
}

/// The pages of index `name` as the check walked them: (leaves, free pages, unreachable).
fn shape_of(db: &Database, name: &str) -> (u64, u64, u64) {
    let report = db.check().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    let ix = report.indexes.iter().find(|i| i.name == name).unwrap();
    (ix.pages[0], ix.free_pages, ix.unreachable)
}

/// A pad of 700 bytes that sorts as `k` does and shares its first 690 bytes with every
/// other: separators are long, so a page of the pad index holds few items and the tree
/// has several parents at each level.
fn long_pad(k: i64, v: u32) -> String {
    format!("{}{k:06}-{v}", "p".repeat(690))
}

/// Rows `keys` with pads `pad_of(k)`, committed.
fn insert_keys(
    db: &Database,
    keys: impl Iterator<Item = i64>,
    pad_of: impl Fn(i64) -> String,
    model: &mut BTreeMap<i64, String>,
) {
    let mut tx = db.begin();
    for k in keys {
        let p = pad_of(k);
        tx.insert(TABLE, &[Value::Int8(k), Value::Text(p.clone())])
            .unwrap();
        model.insert(k, p);
    }
    tx.commit().unwrap();
}

fn delete_keys(db: &Database, keep: impl Fn(i64) -> bool, model: &mut BTreeMap<i64, String>) {
    let mut tx = db.begin();
    tx.modify_with(TABLE, |_, row| match keep(key_of(row)) {
        true => walden::RowAction::Keep,
        false => walden::RowAction::Delete,
    })
    .unwrap();
    tx.commit().unwrap();
    model.retain(|k, _| keep(*k));
}

/// VACUUM gives empty index leaves back: after most keys go, the leaves they filled are
/// unlinked (rule 33) and put on the index's free list, the tree stays consistent and
/// finds every row, the free list survives a crash, and the splits of later inserts take
/// its pages before the file grows. In every mode, on both table kinds.
#[test]
fn empty_leaves_are_reclaimed_and_reused() {
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        for kind in [TableKind::Heap, TableKind::Undo] {
            for long in [false, true] {
                reclaim_case(protection, kind, long);
            }
        }
    }
}

/// `long`: the pads are `long_pad`s (a pad index of several parents per level, whose
/// every leaf the deletes empty in the middle of the range).
fn reclaim_case(protection: Protection, kind: TableKind, long: bool) {
    let when = format!("{protection:?} {kind:?} long pads {long}");
    let mk = |len: usize, v: u32| {
        move |k: i64| match long {
            true => long_pad(k, v),
            false => pad(k, len, v),
        }
    };
    let vfs = SimVfs::new(21);
    let db = create(&vfs, protection, kind);
    let mut model = BTreeMap::new();
    insert_keys(&db, 0..1500, mk(60, 0), &mut model);
    let (full_leaves, free, _) = shape_of(&db, "t_k");
    assert_eq!(free, 0, "{when}");
    assert!(full_leaves >= 6, "{when}: {full_leaves} leaves");
    let pages_before = db.index("t_k").unwrap().pages;
    // The middle of the key range goes: its leaves in t_k empty out.
    delete_keys(&db, |k| !(200..1300).contains(&k), &mut model);
    let before = db.stats();
    db.vacuum(TABLE).unwrap();
    let freed = db.stats().since(&before).index_pages_freed;
    let (leaves, free, unreachable) = shape_of(&db, "t_k");
    assert!(
        freed >= free && free > 0,
        "{when}: freed {freed}, free {free}"
    );
    assert_eq!(unreachable, 0, "{when}");
    assert!(
        leaves + free == full_leaves && leaves < full_leaves,
        "{when}: {leaves} leaves and {free} free of {full_leaves}"
    );
    if long {
        let report = db.check().unwrap();
        let ix = report.indexes.iter().find(|i| i.name == "t_pad").unwrap();
        assert!(ix.pages[1] >= 3 && ix.free_pages >= 100, "{when}: {ix:?}");
    }
    check(&db, &model, &format!("{when}: after the vacuum"));
    // The free list is durable.
    vfs.crash_now();
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, opts_for(&vfs, protection, kind)).unwrap();
    check(&db, &model, &format!("{when}: after a crash"));
    assert_eq!(shape_of(&db, "t_k").1, free, "{when}");
    // The keys come back: splits take the free pages, and t_k grows by none.
    insert_keys(&db, 200..1300, mk(60, 1), &mut model);
    let (_, free_after, _) = shape_of(&db, "t_k");
    assert!(
        free_after < free,
        "{when}: {free_after} of {free} free pages left"
    );
    let pages_after = db.index("t_k").unwrap().pages;
    assert!(
        pages_after <= pages_before + 1,
        "{when}: {pages_after} pages, {pages_before} before"
    );
    check(&db, &model, &format!("{when}: after reinserting"));
    // Pages reused by splits wait for no page that waits for them (rule 33): every
    // dirty page can be written.
    db.checkpoint().unwrap();
    // Everything goes: each parent keeps one leaf; then everything comes back.
    delete_keys(&db, |_| false, &mut model);
    db.vacuum(TABLE).unwrap();
    let (leaves, _, _) = shape_of(&db, "t_k");
    let report = db.check().unwrap();
    let parents = report
        .indexes
        .iter()
        .find(|i| i.name == "t_k")
        .unwrap()
        .pages[1];
    assert_eq!(leaves, parents, "{when}: one leaf per parent");
    check(&db, &model, &format!("{when}: after deleting everything"));
    insert_keys(&db, (0..1500).rev(), mk(40, 2), &mut model);
    check(&db, &model, &format!("{when}: after filling again"));
    db.close().unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, opts_for(&vfs, protection, kind)).unwrap();
    check(&db, &model, &format!("{when}: after the last reopen"));
}

/// A crash in the middle of VACUUM's page removal (at every write of the vacuum in turn;
/// records up to that point durable, the rest lost, kept or torn) leaves an index that
/// finds every row and passes the check; inserts into the half-removed range work, and
/// the next VACUUM finishes the removal and frees any page the crash left unreachable.
#[test]
fn a_crash_during_reclaim_leaves_a_valid_index() {
    let setup = |vfs: &SimVfs, protection, kind| {
        let db = create(vfs, protection, kind);
        let mut model = BTreeMap::new();
        insert_keys(&db, 0..300, |k| long_pad(k, 0), &mut model);
        db.checkpoint().unwrap();
        delete_keys(&db, |k| !(30..250).contains(&k), &mut model);
        (db, model)
    };
    let free_of = |db: &Database| -> Vec<(u64, u64, u64)> {
        db.check()
            .unwrap()
            .indexes
            .iter()
            .map(|i| (i.free_pages, i.unreachable, i.missing_downlinks))
            .collect()
    };
    let mut partial = 0;
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        for kind in [TableKind::Heap, TableKind::Undo] {
            let vfs = SimVfs::new(33);
            let (db, _) = setup(&vfs, protection, kind);
            let start = vfs.ops_count();
            db.vacuum(TABLE).unwrap();
            let span = vfs.ops_count() - start;
            let done = free_of(&db);
            drop(db);
            for n in 1..span {
                let when = format!("{protection:?} {kind:?} crash at write {n} of {span}");
                let vfs = SimVfs::new(33);
                let (db, mut model) = setup(&vfs, protection, kind);
                vfs.crash_after_ops(n);
                let _ = db.vacuum(TABLE);
                vfs.crash_now();
                drop(db);
                // `none` mode does not survive torn pages: it is not asked to.
                vfs.restart(match (n % 4, protection) {
                    (0, _) => CrashMode::DropUnsynced,
                    (_, Protection::None) => CrashMode::KeepUnsynced,
                    (1, _) => CrashMode::TearUnsynced,
                    (2, _) => CrashMode::Random,
                    _ => CrashMode::KeepUnsynced,
                });
                let db = Database::open(DIR, opts_for(&vfs, protection, kind))
                    .unwrap_or_else(|e| panic!("{when}: {e}"));
                check(&db, &model, &format!("{when}: after the crash"));
                // A state between none of an index's pages freed and all of them.
                let now = free_of(&db);
                if now
                    .iter()
                    .zip(&done)
                    .any(|(a, b)| (a.0 > 0 && a.0 < b.0) || a.1 > 0 || a.2 > 0)
                {
                    partial += 1;
                }
                insert_keys(
                    &db,
                    (30..250).filter(|k| k % 10 == 5),
                    |k| long_pad(k, 1),
                    &mut model,
                );
                check(&db, &model, &format!("{when}: after inserts"));
                db.vacuum(TABLE).unwrap();
                check(&db, &model, &format!("{when}: after the next vacuum"));
                for ix in &db.check().unwrap().indexes {
                    assert_eq!(ix.unreachable, 0, "{when}: {ix:?}");
                }
            }
        }
    }
    assert!(partial > 0, "no crash landed inside a removal");
}

/// A split that reuses a free page in `cow` mode never makes two pages wait for each
/// other (rule 33): a leaf split off a page, emptied and freed while that page still
/// waits for it... then reused as the right page of that page's next split. Every page
/// can still be written: the checkpoint and the close finish, and the rows survive.
#[test]
fn reused_pages_never_wait_in_a_cycle() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let vfs = SimVfs::new(8);
        // A pool large enough that nothing is written before the checkpoint.
        let opts = table_opts(&vfs, Protection::Cow, kind);
        let db = Database::create(DIR, opts.clone()).unwrap();
        db.create_table(TABLE, schema()).unwrap();
        let spec = IndexSpec {
            name: "t_k",
            table: TABLE,
            columns: &["k"],
            unique: true,
            ..IndexSpec::default()
        };
        db.create_index(&spec).unwrap();
        db.checkpoint().unwrap();
        let mut model = BTreeMap::new();
        // Ascending keys: the first leaf fills, and each split's new page waits... the
        // page before it waits for it.
        insert_keys(&db, (0..1000).map(|k| k * 10), |k| pad(k, 8, 0), &mut model);
        // The first leaf's keys go; vacuum frees it while it waits for its sibling.
        delete_keys(&db, |k| k >= 5000, &mut model);
        db.vacuum(TABLE).unwrap();
        let report = db.check().unwrap();
        assert!(
            report.indexes.iter().any(|i| i.free_pages > 0),
            "{report:?}"
        );
        // Keys between the remaining ones: the next leaf splits into the freed page.
        insert_keys(
            &db,
            (5000..10000).filter(|k| k % 10 == 5),
            |k| pad(k, 8, 1),
            &mut model,
        );
        db.checkpoint().unwrap();
        db.close().unwrap();
        vfs.restart(CrashMode::DropUnsynced);
        let db = Database::open(DIR, opts).unwrap();
        let mut tx = db.begin();
        let mut got = Vec::new();
        tx.read(
            walden::Rows::index("t_k", Bound::Unbounded, Bound::Unbounded),
            walden::RowShape::default(),
            |_, r| {
                got.push(key_of(&r));
                Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
            },
        )
        .unwrap();
        tx.commit().unwrap();
        assert_eq!(got, model.keys().copied().collect::<Vec<_>>(), "{kind:?}");
        assert!(db.check().unwrap().is_clean());
    }
}

/// A row of the declared-order test: key `k`, then `v` and `t` with NULLs among them
/// (and a 0x00 byte inside each text).
fn ordered_row(n: i64) -> (i64, Option<i32>, Option<String>) {
    let v = (n % 11 != 0).then_some(((n * 37) % 50 - 25) as i32);
    let t = (n % 7 != 0).then(|| format!("{}\0{}", (n * 13) % 5, n % 3));
    (n, v, t)
}

/// The rows of an index on (v DESC NULLS FIRST, t ASC NULLS FIRST), as (v, t), in its
/// key order.
fn in_declared_order(rows: &[(i64, Option<i32>, Option<String>)]) -> Vec<(Value, Value)> {
    let mut sorted = rows.to_vec();
    // NULLs first in both columns (None sorts below Some); v descending.
    sorted.sort_by(|a, b| {
        let v = match (a.1, b.1) {
            (Some(x), Some(y)) => y.cmp(&x),
            (x, y) => x.cmp(&y),
        };
        v.then_with(|| {
            a.2.as_deref()
                .map(str::as_bytes)
                .cmp(&b.2.as_deref().map(str::as_bytes))
        })
    });
    sorted
        .into_iter()
        .map(|(_, v, t)| {
            (
                v.map_or(Value::Null, Value::Int4),
                t.map_or(Value::Null, Value::Text),
            )
        })
        .collect()
}

/// Indexes whose columns declare their order — (v DESC, t ASC NULLS FIRST), and a
/// unique one on k DESC NULLS LAST — hold their keys in that order: built from rows
/// already there, kept up by single-row inserts after a checkpoint (`btree_insert_row`
/// parts carrying the order bits) and rebuilt by redo after a crash that drops what was
/// not synced. Scans forward, backward and between bounds (in key order: the descending
/// column's lower bound is the larger value) agree with a sorted model, a repeated key
/// of the unique index is refused naming its value, and the check finds nothing wrong.
#[test]
fn declared_orders_survive_a_crash() {
    use walden::KeyOrder;
    const INSERT_ROW: u8 = 26;
    let schema = || {
        Schema::new(vec![
            Column::not_null("k", ColumnType::Int8),
            Column::new("v", ColumnType::Int4),
            Column::new("t", ColumnType::Text),
        ])
    };
    let values = |(k, v, t): &(i64, Option<i32>, Option<String>)| {
        vec![
            Value::Int8(*k),
            v.map_or(Value::Null, Value::Int4),
            t.clone().map_or(Value::Null, Value::Text),
        ]
    };
    for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
        for kind in [TableKind::Heap, TableKind::Undo] {
            let when = format!("{protection:?} {kind}");
            let vfs = SimVfs::new(23);
            let db = Database::create(DIR, opts_for(&vfs, protection, kind)).unwrap();
            db.create_table(TABLE, schema()).unwrap();
            let rows: Vec<_> = (0..500).map(ordered_row).collect();
            let mut tx = db.begin();
            for r in &rows[..100] {
                tx.insert(TABLE, &values(r)).unwrap();
            }
            tx.commit().unwrap();
            let vt = IndexSpec {
                name: "t_vt",
                table: TABLE,
                columns: &["v", "t"],
                order: &[
                    KeyOrder::DESC,
                    KeyOrder {
                        desc: false,
                        nulls_first: true,
                    },
                ],
                ..IndexSpec::default()
            };
            assert!(db.create_index(&vt).unwrap());
            let k_desc = [KeyOrder {
                desc: true,
                nulls_first: false,
            }];
            assert!(db
                .create_index(&IndexSpec {
                    name: "t_k",
                    table: TABLE,
                    columns: &["k"],
                    order: &k_desc,
                    unique: true,
                    ..IndexSpec::default()
                })
                .unwrap());
            match db.create_index(&IndexSpec {
                name: "t_bad",
                order: &k_desc,
                ..vt.clone()
            }) {
                Err(Error::InvalidOption(m)) => {
                    assert_eq!(m, "index \"t_bad\" has 2 columns but 1 column orders")
                }
                other => panic!("{when}: expected InvalidOption, got {other:?}"),
            }
            db.checkpoint().unwrap();
            let before = db.stats();
            let mut tx = db.begin();
            for r in &rows[100..] {
                tx.insert(TABLE, &values(r)).unwrap();
            }
            tx.commit().unwrap();
            let named = db
                .stats()
                .since(&before)
                .by_kind
                .iter()
                .find(|c| c.code == INSERT_ROW)
                .map_or(0, |c| c.records);
            assert!(named > 0, "{when}: no btree_insert_row");
            vfs.crash_now();
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            let db = Database::open(DIR, opts_for(&vfs, protection, kind)).unwrap();
            assert_eq!(db.index("t_vt").unwrap().order, vt.order, "{when}");

            let mut tx = db.begin();
            let scan = |tx: &mut walden::Transaction, lo: Bound<&[Value]>, hi, back| {
                let mut got = Vec::new();
                tx.read(
                    walden::Rows::index("t_vt", lo, hi).backward(back),
                    walden::RowShape::default(),
                    |_, r| {
                        got.push((r[1].clone(), r[2].clone()));
                        Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
                    },
                )
                .unwrap();
                got
            };
            let want = in_declared_order(&rows);
            assert_eq!(
                scan(&mut tx, Bound::Unbounded, Bound::Unbounded, false),
                want,
                "{when}"
            );
            let mut back = want.clone();
            back.reverse();
            assert_eq!(
                scan(&mut tx, Bound::Unbounded, Bound::Unbounded, true),
                back,
                "{when}"
            );
            // Keys from v = 10 down to just above v = -5: 10 is the lower key.
            let (lo, hi) = ([Value::Int4(10)], [Value::Int4(-5)]);
            let inside: Vec<(Value, Value)> = want
                .iter()
                .filter(|(v, _)| matches!(v, Value::Int4(x) if *x <= 10 && *x > -5))
                .cloned()
                .collect();
            assert!(inside.len() > 50, "{when}: {}", inside.len());
            let got = scan(&mut tx, Bound::Included(&lo), Bound::Excluded(&hi), false);
            assert_eq!(got, inside, "{when}: forward range");
            let got = scan(&mut tx, Bound::Included(&lo), Bound::Excluded(&hi), true);
            assert_eq!(
                got,
                inside.iter().rev().cloned().collect::<Vec<_>>(),
                "{when}: backward range"
            );
            // NULLs of v come first, and a prefix bound of NULL finds them.
            let nulls = scan(
                &mut tx,
                Bound::Included(&[Value::Null]),
                Bound::Included(&[Value::Null]),
                false,
            );
            assert_eq!(
                nulls.len(),
                rows.iter().filter(|r| r.1.is_none()).count(),
                "{when}"
            );
            assert_eq!(nulls[..], want[..nulls.len()], "{when}");
            // The unique index on k DESC: descending keys, a repeat refused by value.
            let mut ks = Vec::new();
            tx.read(
                walden::Rows::index("t_k", Bound::Unbounded, Bound::Unbounded),
                walden::RowShape::default(),
                |_, r| {
                    ks.push(key_of(&r));
                    Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
                },
            )
            .unwrap();
            assert_eq!(ks, (0..500).rev().collect::<Vec<i64>>(), "{when}");
            match tx.insert(TABLE, &values(&ordered_row(77))) {
                Err(Error::UniqueViolation { index, values, .. }) => {
                    assert_eq!((index.as_str(), values.as_str()), ("t_k", "77"), "{when}")
                }
                other => panic!("{when}: expected UniqueViolation, got {other:?}"),
            }
            tx.rollback().unwrap();
            let report = db.check().unwrap();
            assert!(report.is_clean(), "{when}: {:?}", report.problems);
            // A rebuild (REINDEX) keeps the declared order.
            db.reindex("t_vt").unwrap();
            let mut tx = db.begin();
            assert_eq!(
                scan(&mut tx, Bound::Unbounded, Bound::Unbounded, false),
                want,
                "{when}: reindexed"
            );
            tx.commit().unwrap();
        }
    }
}

/// A build over a table of hundreds of pages reads it with two threads (with background
/// work allowed): the index holds every row exactly once, in key order, and a key two
/// rows share across the halves still refuses a unique build.
#[test]
fn a_build_read_by_two_threads_holds_every_row() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let vfs = SimVfs::new(11);
        let opts = walden::Options {
            background: true,
            ..with_pool(table_opts(&vfs, Protection::Cow, kind), 4096, 64)
        };
        let db = Database::create(DIR, opts).unwrap();
        db.create_table(TABLE, schema()).unwrap();
        let rows = 20_000i64;
        let mut tx = db.begin();
        for k in 0..rows {
            // Keys in a scattered order; the last row repeats the first one's key.
            let key = if k == rows - 1 { 0 } else { (k * 7919) % rows };
            tx.insert(TABLE, &[Value::Int8(key), Value::Text(pad(k, 40, 0))])
                .unwrap();
        }
        tx.commit().unwrap();
        assert!(
            db.table_bytes(TABLE).unwrap() >= 300 * 4096,
            "{kind}: pages"
        );
        let spec = |name, unique| IndexSpec {
            name,
            table: TABLE,
            columns: &["k"],
            unique,
            ..IndexSpec::default()
        };
        match db.create_index(&spec("t_u", true)) {
            Err(Error::UniqueViolation { values, .. }) => assert_eq!(values, "0", "{kind}"),
            r => panic!("{kind}: {r:?}"),
        }
        assert!(db.create_index(&spec("t_k", false)).unwrap());
        let mut tx = db.begin();
        let mut expected: Vec<(i64, walden::RowId)> = tx
            .scan(TABLE)
            .unwrap()
            .into_iter()
            .map(|(id, r)| (key_of(&r), id))
            .collect();
        expected.sort();
        let mut got = Vec::new();
        tx.read(
            walden::Rows::index("t_k", Bound::Unbounded, Bound::Unbounded),
            walden::RowShape::default(),
            |id, r| {
                got.push((key_of(&r), id));
                Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
            },
        )
        .unwrap();
        assert_eq!(got.len(), rows as usize, "{kind}");
        assert_eq!(got, expected, "{kind}");
        tx.commit().unwrap();
        db.check().unwrap();
    }
}
