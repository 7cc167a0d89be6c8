//! Sequences shared by many sessions, through rollbacks, checkpoints and power losses.
//! What could go wrong: a value handed out twice (to two threads at once, or again
//! after a crash because the batch logged ahead was lost), a sequence's definition or
//! counter lost or brought back by redo, or a table's sequence outliving its table.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use walden::vfs::{CrashMode, SimVfs};
use walden::{
    AlterOp, Column, ColumnType, Database, Error, Identity, Protection, Schema, SeqState, SeqType,
    SequenceDef,
};

mod support;
use support::{opts, DIR};

fn crash(db: Database, vfs: &SimVfs, mode: CrashMode) -> Database {
    vfs.crash_now();
    drop(db);
    vfs.restart(mode);
    Database::open(DIR, opts(vfs, Protection::Cow)).unwrap()
}

/// A small deterministic generator for the test's choices.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// Random nextvals in transactions that commit or roll back, values taken outside any
/// transaction, checkpoints and power losses of every kind: after each crash, the next
/// value is past every value a transaction that ended had (committed or rolled back),
/// and no value is ever handed out twice to such transactions.
#[test]
fn a_value_a_transaction_saw_is_never_handed_out_again() {
    let seeds = support::env_u64("WALDEN_SEQUENCE_SEEDS", 12);
    let mut crashes = 0;
    for seed in 0..seeds {
        let vfs = SimVfs::new(seed);
        let mut db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
        let mut def = SequenceDef::new("s", SeqType::Int8);
        def.cache = 1 + (seed % 3) as i64;
        db.create_sequence(def).unwrap();
        let mut rng = seed.wrapping_add(99);
        let mut seen = HashSet::new();
        let mut max_seen = 0;
        for _ in 0..60 {
            match next(&mut rng) % 8 {
                0..=3 => {
                    let mut tx = db.begin();
                    let n = 1 + next(&mut rng) % 40;
                    let mut got = Vec::new();
                    for _ in 0..n {
                        got.push(tx.nextval("s").unwrap());
                    }
                    if next(&mut rng).is_multiple_of(2) {
                        tx.commit().unwrap();
                    } else {
                        tx.rollback().unwrap();
                    }
                    for v in got {
                        assert!(seen.insert(v), "seed {seed}: {v} handed out twice");
                        max_seen = max_seen.max(v);
                    }
                }
                4 => {
                    // Taken with no transaction to wait for its log: may be lost by a
                    // crash (no one used it), never given out twice before one.
                    let id = db.sequence("s").unwrap().def.id;
                    let v = db.nextval(id).unwrap();
                    assert!(v.first > max_seen, "seed {seed}");
                }
                5 => db.checkpoint().unwrap(),
                _ => {
                    let mode = match next(&mut rng) % 3 {
                        0 => CrashMode::DropUnsynced,
                        1 => CrashMode::TearUnsynced,
                        _ => CrashMode::Random,
                    };
                    db = crash(db, &vfs, mode);
                    crashes += 1;
                    let info = db.sequence("s").unwrap();
                    assert!(
                        info.state.last_value >= max_seen,
                        "seed {seed}: after a crash the sequence stands at {} below {max_seen}",
                        info.state.last_value
                    );
                }
            }
        }
        db.close().unwrap();
    }
    assert!(crashes > seeds, "only {crashes} crashes were simulated");
}

/// Eight threads taking values at once get every value once, with no gap (no crash,
/// cache 1).
#[test]
fn concurrent_transactions_share_one_counter() {
    let vfs = SimVfs::new(7);
    let db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
    db.create_sequence(SequenceDef::new("s", SeqType::Int4))
        .unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                for _ in 0..1000 {
                    let mut tx = db.begin();
                    got.push(tx.nextval("s").unwrap());
                    tx.commit().unwrap();
                }
                got
            })
        })
        .collect();
    let mut all: Vec<i64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (1..=8000).collect::<Vec<i64>>());
}

fn owned_table(db: &Database) -> u32 {
    let schema = Schema::new(vec![
        Column::not_null("id", ColumnType::Int4),
        Column::new("v", ColumnType::Text),
    ]);
    db.create_table("t", schema).unwrap();
    db.table_id("t").unwrap()
}

/// Definitions created, altered (renamed, restarted), set and dropped, with a
/// checkpoint at each point, then a power loss: the same sequences come back, each
/// counter where the log last had it.
#[test]
fn definitions_and_counters_survive_redo_and_checkpoints() {
    for checkpoint_at in 0..6 {
        let vfs = SimVfs::new(checkpoint_at);
        let db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
        let table = owned_table(&db);
        for step in 0..6 {
            if step == checkpoint_at {
                db.checkpoint().unwrap();
            }
            match step {
                0 => {
                    let mut a = SequenceDef::new("a", SeqType::Int2);
                    a.increment = -2;
                    a.min_value = -100;
                    a.max_value = -1;
                    a.start = -1;
                    a.cycle = true;
                    db.create_sequence(a).unwrap();
                    let mut b = SequenceDef::new("t_id_seq", SeqType::Int4);
                    b.owned_by = Some((table, 0));
                    b.identity = Identity::ByDefault;
                    db.create_sequence(b).unwrap();
                    db.create_sequence(SequenceDef::new("gone", SeqType::Int8))
                        .unwrap();
                }
                1 => {
                    let id = db.sequence("a").unwrap().def.id;
                    for _ in 0..3 {
                        db.nextval(id).unwrap();
                    }
                }
                2 => {
                    db.alter_sequence::<Error>("a", |def, _| {
                        let mut d = def.clone();
                        d.name = "renamed".into();
                        d.cache = 5;
                        Ok((d, None))
                    })
                    .unwrap();
                }
                3 => {
                    let id = db.sequence("t_id_seq").unwrap().def.id;
                    db.setval(id, 500, true).unwrap();
                }
                4 => db.drop_sequence("gone").unwrap(),
                _ => {
                    db.alter_sequence::<Error>("t_id_seq", |def, _| {
                        Ok((def.clone(), Some(SeqState::at(42))))
                    })
                    .unwrap();
                }
            }
        }
        db.flush_wal().unwrap();
        let want = db.sequences();
        let db = crash(db, &vfs, CrashMode::DropUnsynced);
        let got = db.sequences();
        assert_eq!(got.len(), 2, "checkpoint at {checkpoint_at}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.def, w.def, "checkpoint at {checkpoint_at}");
        }
        // "renamed" took three values (-1, -3, -5) and logged ahead from there;
        // t_id_seq was restarted at 42, not called.
        let renamed = db.sequence("renamed").unwrap();
        assert!(renamed.state.last_value <= -5, "{renamed:?}");
        let t = db.sequence("t_id_seq").unwrap();
        assert_eq!(t.state, SeqState::at(42));
        let v = db.nextval(t.def.id).unwrap();
        assert_eq!(v.first, 42);
        assert!(db.sequence("gone").is_none());
        db.close().unwrap();
    }
}

/// A table's sequences go with it, and a column's with the column, also at redo.
#[test]
fn owned_sequences_go_with_their_table_or_column() {
    let vfs = SimVfs::new(3);
    let db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
    let table = owned_table(&db);
    let mut id_seq = SequenceDef::new("t_id_seq", SeqType::Int4);
    id_seq.owned_by = Some((table, 0));
    db.create_sequence(id_seq).unwrap();
    let mut v_seq = SequenceDef::new("t_v_seq", SeqType::Int4);
    v_seq.owned_by = Some((table, 1));
    db.create_sequence(v_seq).unwrap();
    db.checkpoint().unwrap();
    db.alter_table("t", &AlterOp::DropColumn("v".into()))
        .unwrap();
    assert!(db.sequence("t_v_seq").is_none());
    assert!(db.sequence("t_id_seq").is_some());
    // The name is free again, and a relation's name is one namespace.
    assert!(matches!(
        db.create_table(
            "t_id_seq",
            Schema::new(vec![Column::new("a", ColumnType::Int4)])
        ),
        Err(Error::TableExists(_))
    ));
    db.drop_table("t").unwrap();
    assert!(db.sequences().is_empty());
    let db = crash(db, &vfs, CrashMode::DropUnsynced);
    assert!(db.sequences().is_empty());
    // A sequence cannot be owned by a column that is not there.
    let mut bad = SequenceDef::new("x", SeqType::Int4);
    bad.owned_by = Some((table, 0));
    assert!(matches!(
        db.create_sequence(bad),
        Err(Error::InvalidOption(_))
    ));
}

#[test]
fn a_sequence_ends_at_its_bound_and_setval_stays_within_it() {
    let vfs = SimVfs::new(5);
    let db = Database::create(DIR, opts(&vfs, Protection::Cow)).unwrap();
    let mut def = SequenceDef::new("s", SeqType::Int2);
    def.max_value = 3;
    let id = db.create_sequence(def).unwrap();
    for want in 1..=3 {
        assert_eq!(db.nextval(id).unwrap().first, want);
    }
    match db.nextval(id) {
        Err(Error::SequenceExhausted {
            name,
            maximum: true,
            limit: 3,
        }) => assert_eq!(name, "s"),
        other => panic!("{other:?}"),
    }
    match db.setval(id, 4, true) {
        Err(Error::SequenceOutOfBounds {
            value: 4,
            min: 1,
            max: 3,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    db.setval(id, 1, false).unwrap();
    assert_eq!(db.nextval(id).unwrap().first, 1);
    // ALTER refuses bounds that leave the counter outside them.
    let e = db
        .alter_sequence::<Error>("s", |def, _| {
            let mut d = def.clone();
            d.min_value = 2;
            d.start = 2;
            Ok((d, None))
        })
        .unwrap_err();
    assert!(matches!(e, Error::InvalidOption(_)), "{e}");
}
