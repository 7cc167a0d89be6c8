//! READ COMMITTED in the engine: a snapshot per statement, and writes that meet a row a
//! concurrent transaction changed and committed going on with its newest version. What
//! could go wrong: a lost update (an increment applied to a stale version), a failure
//! where PostgreSQL goes on, a row changed that no longer matches, a deleted row brought
//! back or a moved one lost, a statement that misses rows committed before it or sees
//! its own changes wrongly, and REPEATABLE READ losing its serialization failure.
#![allow(clippy::unwrap_used)]

use std::ops::Bound;
use std::thread;
use std::time::Duration;

use walden::*;

mod support;
use support::{counters_db, int8_of};

const KINDS: [TableKind; 2] = [TableKind::Heap, TableKind::Undo];

/// (id, x, y) of every row, by id, as a new transaction sees them.
fn rows(db: &Database) -> Vec<(i64, i64, i64)> {
    let mut tx = db.begin();
    let mut out: Vec<(i64, i64, i64)> = tx
        .scan("t")
        .unwrap()
        .iter()
        .map(|(_, r)| (int8_of(&r[0]), int8_of(&r[1]), int8_of(&r[2])))
        .collect();
    out.sort_unstable();
    out
}

/// `row` with column `col` set to `v`.
fn with(row: &Row, col: usize, v: i64) -> Row {
    let mut new = row.clone();
    new[col] = Value::Int8(v);
    new
}

/// Adds one to y of row `id` in a READ COMMITTED transaction of its own, through the
/// scan (`modify_with`) or through the index and the explicit calls (`modify_rows`,
/// `newest`, `modify_newest`). Returns the rows changed.
fn increment(db: &Database, id: i64, through_index: bool) -> Result<u64> {
    let mut tx = db.begin_with(Isolation::ReadCommitted);
    let add = |row: &Row| RowAction::Update(with(row, 2, int8_of(&row[2]) + 1));
    let n = if through_index {
        let found = tx.index_get("t_pkey", &[Value::Int8(id)])?;
        let actions = found.iter().map(|(rid, row)| (*rid, add(row))).collect();
        let mut done = tx.modify_rows("t", actions)?;
        let mut n = done.count;
        while !done.changed.is_empty() {
            let mut verdicts = Vec::new();
            for rid in &done.changed {
                if let Some(newest) = tx.newest("t", *rid)? {
                    let action = add(&newest.row);
                    verdicts.push((newest, action));
                }
            }
            done = tx.modify_newest("t", verdicts)?;
            n += done.count;
        }
        n
    } else {
        tx.modify_with("t", |_, row| match int8_of(&row[0]) == id {
            true => add(row),
            false => RowAction::Keep,
        })?
    };
    tx.commit()?;
    Ok(n)
}

/// Many threads add to one counter row at once: under READ COMMITTED none fails and
/// none is lost, through the scan and through the index alike.
#[test]
fn concurrent_increments_of_one_row_lose_nothing_and_never_fail() {
    const THREADS: u64 = 8;
    const EACH: u64 = 150;
    for kind in KINDS {
        let db = counters_db(1, kind, 20, 40);
        let handles: Vec<_> = (0..THREADS)
            .map(|n| {
                let db = db.clone();
                thread::spawn(move || {
                    for i in 0..EACH {
                        let through = (n + i) % 2 == 0;
                        assert_eq!(increment(&db, 7, through).unwrap(), 1, "{kind:?} {through}");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let after = rows(&db);
        assert_eq!(after.len(), 20);
        for (id, x, y) in after {
            let expected = if id == 7 { (THREADS * EACH) as i64 } else { 0 };
            assert_eq!((x, y), (1, expected), "{kind:?}: row {id}");
        }
        assert_eq!(db.check().unwrap().problems, Vec::<String>::new());
    }
}

/// Runs `second` (a READ COMMITTED transaction begun before `first` changed the row and
/// committed) on its own thread while `first` holds its change, then commits `first`;
/// returns what `second` returned, after committing it.
fn race(
    db: &Database,
    first: impl FnOnce(&mut Transaction),
    second: impl FnOnce(&mut Transaction) -> Result<u64> + Send + 'static,
) -> Result<u64> {
    let mut t2 = db.begin_with(Isolation::ReadCommitted);
    let mut t1 = db.begin();
    first(&mut t1);
    let h = thread::spawn(move || {
        let r = second(&mut t2);
        t2.commit().map(|()| r)
    });
    // Let the second meet the first's change and wait (the outcome is the same if it
    // gets there only after the commit: its snapshot is older).
    thread::sleep(Duration::from_millis(100));
    t1.commit().unwrap();
    h.join().unwrap().unwrap()
}

fn set_x(t: &mut Transaction, id: i64, x: i64) {
    let n = t
        .modify_with("t", |_, row| match int8_of(&row[0]) == id {
            true => RowAction::Update(with(row, 1, x)),
            false => RowAction::Keep,
        })
        .unwrap();
    assert_eq!(n, 1);
}

/// PostgreSQL's classic race: `UPDATE … SET y = y + 1 WHERE x = 1` waits for a
/// transaction that sets x = 2, then finds the row no longer matches and skips it.
#[test]
fn a_row_that_stops_matching_is_skipped() {
    for kind in KINDS {
        let db = counters_db(2, kind, 3, 10);
        let n = race(
            &db,
            |t1| set_x(t1, 1, 2),
            |t2| {
                t2.modify_with("t", |_, row| match int8_of(&row[1]) == 1 {
                    true => RowAction::Update(with(row, 2, int8_of(&row[2]) + 1)),
                    false => RowAction::Keep,
                })
            },
        )
        .unwrap();
        assert_eq!(n, 2, "{kind:?}: rows 0 and 2 only");
        assert_eq!(rows(&db), vec![(0, 1, 1), (1, 2, 0), (2, 1, 1)], "{kind:?}");
    }
}

/// An update that meets a row a concurrent transaction deleted skips it; a delete that
/// meets a row a concurrent transaction updated deletes its newest version.
#[test]
fn delete_and_update_race_as_in_postgresql() {
    for kind in KINDS {
        let db = counters_db(3, kind, 3, 10);
        let deleted = race(
            &db,
            |t1| {
                let n = t1
                    .modify_with("t", |_, row| match int8_of(&row[0]) == 1 {
                        true => RowAction::Delete,
                        false => RowAction::Keep,
                    })
                    .unwrap();
                assert_eq!(n, 1);
            },
            |t2| {
                t2.modify_with("t", |_, row| {
                    RowAction::Update(with(row, 2, int8_of(&row[2]) + 10))
                })
            },
        )
        .unwrap();
        assert_eq!(deleted, 2, "{kind:?}: the deleted row is not brought back");
        assert_eq!(rows(&db), vec![(0, 1, 10), (2, 1, 10)], "{kind:?}");

        let n = race(
            &db,
            |t1| set_x(t1, 2, 5),
            |t2| {
                t2.modify_with("t", |_, row| match int8_of(&row[0]) == 2 {
                    true => RowAction::Delete,
                    false => RowAction::Keep,
                })
            },
        )
        .unwrap();
        assert_eq!(n, 1, "{kind:?}");
        assert_eq!(rows(&db), vec![(0, 1, 10)], "{kind:?}");
        assert_eq!(db.check().unwrap().problems, Vec::<String>::new());
    }
}

/// A concurrent update that moves the row to another page (a heap version that does not
/// fit its page, an undo row that outgrew its place): the newest version is found there.
#[test]
fn a_moved_row_is_followed_to_its_new_place() {
    for kind in KINDS {
        // Rows of 1000 bytes fill the first page; the one that grows must leave it.
        let db = counters_db(4, kind, 12, 1000);
        let n = race(
            &db,
            |t1| {
                let n = t1
                    .modify_with("t", |_, row| match int8_of(&row[0]) == 0 {
                        true => {
                            let mut new = with(row, 1, 3);
                            new[3] = Value::Text("q".repeat(3000));
                            RowAction::Update(new)
                        }
                        false => RowAction::Keep,
                    })
                    .unwrap();
                assert_eq!(n, 1);
            },
            |t2| {
                t2.modify_with("t", |_, row| match int8_of(&row[0]) == 0 {
                    true => RowAction::Update(with(row, 2, int8_of(&row[2]) + 1)),
                    false => RowAction::Keep,
                })
            },
        )
        .unwrap();
        assert_eq!(n, 1, "{kind:?}");
        let mut tx = db.begin();
        let found = tx.index_get("t_pkey", &[Value::Int8(0)]).unwrap();
        assert_eq!(found.len(), 1, "{kind:?}");
        let row = &found[0].1;
        assert_eq!((int8_of(&row[1]), int8_of(&row[2])), (3, 1), "{kind:?}");
        assert_eq!(row[3], Value::Text("q".repeat(3000)), "{kind:?}");
        assert_eq!(db.check().unwrap().problems, Vec::<String>::new());
    }
}

/// REPEATABLE READ keeps snapshot isolation: the same race fails with 40001.
#[test]
fn repeatable_read_still_fails_with_a_serialization_failure() {
    for kind in KINDS {
        let db = counters_db(5, kind, 3, 10);
        let mut t2 = db.begin_with(Isolation::RepeatableRead);
        let mut t1 = db.begin_with(Isolation::ReadCommitted);
        set_x(&mut t1, 1, 2);
        t1.commit().unwrap();
        let err = t2
            .modify_with("t", |_, row| RowAction::Update(with(row, 2, 9)))
            .unwrap_err();
        assert!(
            matches!(err, Error::SerializationFailure),
            "{kind:?}: {err:?}"
        );
        t2.rollback().unwrap();
        let mut t3 = db.begin_with(Isolation::RepeatableRead);
        let mut t1 = db.begin();
        set_x(&mut t1, 2, 7);
        t1.commit().unwrap();
        let found = t3.index_get("t_pkey", &[Value::Int8(2)]).unwrap();
        let actions = vec![(found[0].0, RowAction::Delete)];
        let err = t3.modify_rows("t", actions).unwrap_err();
        assert!(
            matches!(err, Error::SerializationFailure),
            "{kind:?}: {err:?}"
        );
    }
}

/// Each statement of a READ COMMITTED transaction sees what committed before it began,
/// and the transaction's own earlier changes; one snapshot of a REPEATABLE READ
/// transaction sees neither later commits nor loses its own changes.
#[test]
fn statements_see_what_committed_before_them() {
    for kind in KINDS {
        let db = counters_db(6, kind, 2, 10);
        let mut rc = db.begin_with(Isolation::ReadCommitted);
        let mut rr = db.begin_with(Isolation::RepeatableRead);
        rc.new_statement_snapshot().unwrap();
        rr.new_statement_snapshot().unwrap();
        assert_eq!(rc.scan("t").unwrap().len(), 2);
        assert_eq!(rr.scan("t").unwrap().len(), 2);
        rc.insert(
            "t",
            &[
                Value::Int8(10),
                Value::Int8(1),
                Value::Int8(0),
                Value::Text("".into()),
            ],
        )
        .unwrap();
        let mut other = db.begin();
        other
            .insert(
                "t",
                &[
                    Value::Int8(20),
                    Value::Int8(1),
                    Value::Int8(0),
                    Value::Text("".into()),
                ],
            )
            .unwrap();
        other.commit().unwrap();
        // Within a statement the snapshot stays.
        assert_eq!(rc.scan("t").unwrap().len(), 3);
        rc.new_statement_snapshot().unwrap();
        let ids: Vec<i64> = rc
            .scan("t")
            .unwrap()
            .iter()
            .map(|(_, r)| int8_of(&r[0]))
            .collect();
        assert_eq!(sorted(ids), vec![0, 1, 10, 20], "{kind:?}");
        assert_eq!(rr.scan("t").unwrap().len(), 2, "{kind:?}");
        let mut seen = 0;
        rc.read(
            walden::Rows::index("t_pkey", Bound::Unbounded, Bound::Unbounded),
            walden::RowShape::default(),
            |_, _| {
                seen += 1;
                Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
            },
        )
        .unwrap();
        assert_eq!(seen, 4, "{kind:?}");
        rc.commit().unwrap();
        rr.commit().unwrap();
    }
}

fn sorted(mut v: Vec<i64>) -> Vec<i64> {
    v.sort_unstable();
    v
}

/// Two READ COMMITTED transactions insert one key: the second waits for the first, and
/// fails with a unique violation once the first commits (as PostgreSQL's 23505).
#[test]
fn a_concurrent_insert_of_one_key_waits_then_violates() {
    for kind in KINDS {
        let db = counters_db(7, kind, 1, 10);
        let row = vec![
            Value::Int8(5),
            Value::Int8(1),
            Value::Int8(0),
            Value::Text("".into()),
        ];
        let mut t1 = db.begin_with(Isolation::ReadCommitted);
        t1.insert("t", &row).unwrap();
        let db2 = db.clone();
        let row2 = row.clone();
        let h = thread::spawn(move || {
            let mut t2 = db2.begin_with(Isolation::ReadCommitted);
            t2.insert("t", &row2).map(|_| ())
        });
        thread::sleep(Duration::from_millis(100));
        t1.commit().unwrap();
        let err = h.join().unwrap().unwrap_err();
        assert!(
            matches!(err, Error::UniqueViolation { .. }),
            "{kind:?}: {err:?}"
        );
    }
}

/// A READ COMMITTED statement's snapshot releases what the transaction's first one held
/// back: vacuum removes versions an older transaction replaced and committed before the
/// newest statement began.
#[test]
fn a_new_statement_snapshot_lets_vacuum_go_on() {
    let db = counters_db(8, TableKind::Heap, 50, 10);
    let mut older = db.begin();
    let mut long = db.begin_with(Isolation::ReadCommitted);
    assert_eq!(long.scan("t").unwrap().len(), 50);
    older
        .modify_with("t", |_, row| RowAction::Update(with(row, 2, 1)))
        .unwrap();
    older.commit().unwrap();
    assert_eq!(
        db.vacuum("t").unwrap(),
        0,
        "the long one's snapshot needs them"
    );
    long.new_statement_snapshot().unwrap();
    assert_eq!(db.vacuum("t").unwrap(), 50);
    let ys: Vec<i64> = long
        .scan("t")
        .unwrap()
        .iter()
        .map(|(_, r)| int8_of(&r[2]))
        .collect();
    assert_eq!(ys, vec![1; 50]);
    long.commit().unwrap();
}
