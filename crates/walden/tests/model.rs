//! Model test: what could go wrong is any divergence between the engine and a plain
//! in-memory map under random sequences of inserts, updates, deletes, commits, rollbacks,
//! vacuums, checkpoints and crashes — a lost or resurrected row, a wrong value, a row id
//! that moved, an uncommitted change that shows, or vacuum removing the wrong versions.
//! Heap and undo tables, 64 cases per protection mode and table kind; PROPTEST_CASES sets
//! another number.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use walden::vfs::{CrashMode, SimVfs};
use walden::*;

mod support;
use support::{small_pool, table_opts, DIR};

const TABLE: &str = "kv";

#[derive(Debug, Clone)]
enum Op {
    Insert {
        value: i64,
        pad: u16,
    },
    Update {
        pick: usize,
        value: i64,
        pad: u16,
    },
    Delete {
        pick: usize,
    },
    Commit,
    Rollback,
    Vacuum,
    Checkpoint,
    /// Power loss, then reopen with recovery. Unsynced writes are dropped, or (by `fate`)
    /// kept or torn; `none` mode, which detects torn pages but cannot repair them, only
    /// gets drop and keep.
    Crash {
        fate: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let pad = 0u16..400;
    prop_oneof![
        6 => (any::<i64>(), pad.clone()).prop_map(|(value, pad)| Op::Insert { value, pad }),
        4 => (any::<usize>(), any::<i64>(), pad).prop_map(|(pick, value, pad)| Op::Update { pick, value, pad }),
        2 => any::<usize>().prop_map(|pick| Op::Delete { pick }),
        3 => Just(Op::Commit),
        1 => Just(Op::Rollback),
        1 => Just(Op::Vacuum),
        1 => Just(Op::Checkpoint),
        1 => (0u8..8).prop_map(|fate| Op::Crash { fate }),
    ]
}

fn schema() -> Schema {
    Schema::new(vec![
        Column::not_null("k", ColumnType::Int8),
        Column::not_null("v", ColumnType::Int8),
        Column::new("pad", ColumnType::Text),
    ])
}

/// What a row holds besides its key, and where the visible version is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    id: RowId,
    value: i64,
    pad: u16,
}

type Rows = BTreeMap<i64, Version>;

fn encode(key: i64, value: i64, pad: u16) -> Row {
    vec![
        Value::Int8(key),
        Value::Int8(value),
        Value::Text("x".repeat(pad as usize)),
    ]
}

/// The open transaction of the model.
#[derive(Debug, Default)]
struct TxModel {
    rows: Rows,
    /// What vacuum may find once it ends. Heap tables: the versions it created (inserts
    /// and updates) and retired (updates and deletes). Undo tables: rollback takes every
    /// change back, so `created` stays 0; `retired` counts deleted rows and the links left
    /// where a row moved to another page.
    created: u64,
    retired: u64,
}

/// The committed state plus what vacuum should find.
#[derive(Debug, Default)]
struct Model {
    kind: TableKind,
    committed: Rows,
    next_key: i64,
    /// Dead versions left by committed transactions: certainly there until vacuumed.
    dead_committed: u64,
    /// Dead versions left by transactions that rolled back: a crash may make some of them
    /// vanish (never logged, never written), so only a range is known.
    dead_aborted_min: u64,
    dead_aborted_max: u64,
    /// Versions updates pruned on the fly (heap pages they found full) since the last
    /// vacuum, in runs of the database before the latest crash.
    pruned_early: u64,
}

/// Every visible row, as a map, checking that each decodes to the model's shape.
fn rows_of(tx: &mut Transaction) -> Rows {
    let mut out = Rows::new();
    for (id, r) in tx.scan(TABLE).unwrap() {
        let (Value::Int8(k), Value::Int8(v), Value::Text(pad)) = (&r[0], &r[1], &r[2]) else {
            panic!("row of unexpected shape {r:?}");
        };
        assert!(pad.bytes().all(|b| b == b'x'), "{r:?}");
        let version = Version {
            id,
            value: *v,
            pad: pad.len() as u16,
        };
        assert!(out.insert(*k, version).is_none(), "key {k} visible twice");
    }
    out
}

/// Compares a fresh transaction's view with the committed model, by scan and by get.
fn check_committed(db: &Database, model: &Model, when: &str) {
    let mut tx = db.begin();
    let found = rows_of(&mut tx);
    assert_eq!(found, model.committed, "{when}");
    for (k, v) in &model.committed {
        assert_eq!(
            tx.get(TABLE, v.id).unwrap(),
            Some(encode(*k, v.value, v.pad)),
            "{when}: get {k}"
        );
    }
}

/// Runs ops on `db` until a crash op or the end; returns the number of ops consumed
/// (the crash op not included). The open transaction is left to the caller's crash.
fn run_until_crash(db: &Database, ops: &[Op], model: &mut Model, vfs: &SimVfs) -> usize {
    let mut tx: Option<(Transaction, TxModel)> = None;
    let pruned = || db.stats().versions_pruned;
    let mut base = pruned();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Crash { .. } => {
                model.pruned_early += pruned() - base;
                vfs.crash_now();
                if let Some((_, t)) = tx.take() {
                    // Its versions may have reached the disk through eviction; recovery
                    // then rolls it back and they become dead.
                    model.dead_aborted_max += t.created;
                }
                // Versions of earlier rollbacks may never have been logged at all.
                model.dead_aborted_min = 0;
                return i;
            }
            Op::Insert { value, pad } => {
                let (t, m) = tx.get_or_insert_with(|| {
                    (
                        db.begin(),
                        TxModel {
                            rows: model.committed.clone(),
                            ..TxModel::default()
                        },
                    )
                });
                let key = model.next_key;
                model.next_key += 1;
                let id = t.insert(TABLE, &encode(key, *value, *pad)).unwrap();
                m.rows.insert(
                    key,
                    Version {
                        id,
                        value: *value,
                        pad: *pad,
                    },
                );
                m.created += u64::from(model.kind == TableKind::Heap);
            }
            Op::Update { pick, value, pad } => {
                let (t, m) = tx.get_or_insert_with(|| {
                    (
                        db.begin(),
                        TxModel {
                            rows: model.committed.clone(),
                            ..TxModel::default()
                        },
                    )
                });
                let Some((key, old)) = m
                    .rows
                    .iter()
                    .nth(pick % m.rows.len().max(1))
                    .map(|(k, v)| (*k, *v))
                else {
                    continue;
                };
                let id = t.update(TABLE, old.id, &encode(key, *value, *pad)).unwrap();
                m.rows.insert(
                    key,
                    Version {
                        id,
                        value: *value,
                        pad: *pad,
                    },
                );
                match model.kind {
                    TableKind::Heap => {
                        m.created += 1;
                        m.retired += 1;
                    }
                    // In place, unless the row moved: then its old place holds a link.
                    TableKind::Undo => m.retired += u64::from(id != old.id),
                }
            }
            Op::Delete { pick } => {
                let (t, m) = tx.get_or_insert_with(|| {
                    (
                        db.begin(),
                        TxModel {
                            rows: model.committed.clone(),
                            ..TxModel::default()
                        },
                    )
                });
                let Some((key, old)) = m
                    .rows
                    .iter()
                    .nth(pick % m.rows.len().max(1))
                    .map(|(k, v)| (*k, *v))
                else {
                    continue;
                };
                t.delete(TABLE, old.id).unwrap();
                m.rows.remove(&key);
                m.retired += 1;
            }
            Op::Commit => {
                if let Some((t, m)) = tx.take() {
                    t.commit().unwrap();
                    model.committed = m.rows;
                    model.dead_committed += m.retired;
                    check_committed(db, model, &format!("after commit at op {i}"));
                }
            }
            Op::Rollback => {
                if let Some((t, m)) = tx.take() {
                    t.rollback().unwrap();
                    model.dead_aborted_min += m.created;
                    model.dead_aborted_max += m.created;
                    check_committed(db, model, &format!("after rollback at op {i}"));
                }
            }
            Op::Vacuum => {
                let n = db.vacuum(TABLE).unwrap();
                let min = model.dead_committed + model.dead_aborted_min;
                let max = model.dead_committed + model.dead_aborted_max;
                // Updates may have pruned some on the fly (a prune lost in a crash
                // leaves its versions for vacuum: then they count twice).
                let total = pruned() - base + model.pruned_early;
                assert!(
                    n <= max && total >= min,
                    "op {i}: vacuum removed {n} versions ({total} since the last), expected {min}..={max}"
                );
                base = pruned();
                model.pruned_early = 0;
                model.dead_committed = 0;
                model.dead_aborted_min = 0;
                model.dead_aborted_max = 0;
                check_committed(db, model, &format!("after vacuum at op {i}"));
            }
            Op::Checkpoint => db.checkpoint().unwrap(),
        }
        // The open transaction sees exactly its own view (read-your-writes, and nothing
        // of anyone else).
        if let Some((t, m)) = tx.as_mut() {
            assert_eq!(
                rows_of(t),
                m.rows,
                "inside the transaction after op {i} {op:?}"
            );
        }
    }
    ops.len()
}

fn crash_mode(protection: Protection, fate: u8) -> CrashMode {
    match (fate, protection) {
        (0..=3, _) => CrashMode::DropUnsynced,
        (4..=5, _) | (_, Protection::None) => CrashMode::KeepUnsynced,
        (6, _) => CrashMode::TearUnsynced,
        _ => CrashMode::Random,
    }
}

fn run_case(protection: Protection, kind: TableKind, seed: u64, ops: &[Op]) {
    let vfs = SimVfs::new(seed);
    // Small pages and a 16-page pool, so that the table spans many pages and dirty pages
    // (with uncommitted versions) are evicted to disk between checkpoints.
    let mut db = Database::create(DIR, small_pool(table_opts(&vfs, protection, kind))).unwrap();
    db.create_table(TABLE, schema()).unwrap();
    assert_eq!(db.table_kind(TABLE).unwrap(), kind);
    let mut model = Model {
        kind,
        ..Model::default()
    };
    let mut at = 0;
    loop {
        at += run_until_crash(&db, &ops[at..], &mut model, &vfs);
        if at >= ops.len() {
            break;
        }
        // The crash op: power is already lost; drop everything and recover.
        drop(db);
        let Op::Crash { fate } = ops[at] else {
            unreachable!("run_until_crash stops only at a crash")
        };
        vfs.restart(crash_mode(protection, fate));
        db = Database::open(DIR, small_pool(table_opts(&vfs, protection, kind))).unwrap();
        check_committed(&db, &model, &format!("after recovery at op {at}"));
        at += 1;
    }
    // A clean close and reopen changes nothing either.
    db.close().unwrap();
    vfs.restart(CrashMode::DropUnsynced);
    let db = Database::open(DIR, small_pool(table_opts(&vfs, protection, kind))).unwrap();
    check_committed(&db, &model, "after close and reopen");
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn model_cow(seed in any::<u64>(), ops in prop::collection::vec(op(), 1..120)) {
        run_case(Protection::Cow, TableKind::Heap, seed, &ops);
    }

    #[test]
    fn model_full_page(seed in any::<u64>(), ops in prop::collection::vec(op(), 1..120)) {
        run_case(Protection::FullPage, TableKind::Heap, seed, &ops);
    }

    #[test]
    fn model_none(seed in any::<u64>(), ops in prop::collection::vec(op(), 1..120)) {
        run_case(Protection::None, TableKind::Heap, seed, &ops);
    }

    #[test]
    fn model_cow_undo(seed in any::<u64>(), ops in prop::collection::vec(op(), 1..120)) {
        run_case(Protection::Cow, TableKind::Undo, seed, &ops);
    }

    #[test]
    fn model_full_page_undo(seed in any::<u64>(), ops in prop::collection::vec(op(), 1..120)) {
        run_case(Protection::FullPage, TableKind::Undo, seed, &ops);
    }

    #[test]
    fn model_none_undo(seed in any::<u64>(), ops in prop::collection::vec(op(), 1..120)) {
        run_case(Protection::None, TableKind::Undo, seed, &ops);
    }
}

/// A long fixed sequence per mode and table kind, so that every run covers many pages, evictions and
/// several crashes even when the random cases happen to be short.
#[test]
fn long_fixed_sequence() {
    let mut ops = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..1500 {
        let r = next();
        let op = match r % 20 {
            0..=7 => Op::Insert {
                value: next() as i64,
                pad: (next() % 400) as u16,
            },
            8..=11 => Op::Update {
                pick: next() as usize,
                value: next() as i64,
                pad: (next() % 400) as u16,
            },
            12..=13 => Op::Delete {
                pick: next() as usize,
            },
            14..=16 => Op::Commit,
            17 => Op::Rollback,
            18 => match next() % 3 {
                0 => Op::Vacuum,
                1 => Op::Checkpoint,
                _ => Op::Crash {
                    fate: (next() % 8) as u8,
                },
            },
            _ => Op::Commit,
        };
        ops.push(op);
    }
    for kind in [TableKind::Heap, TableKind::Undo] {
        for protection in [Protection::Cow, Protection::FullPage, Protection::None] {
            run_case(protection, kind, 42, &ops);
        }
    }
}
