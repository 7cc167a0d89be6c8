//! ANALYZE: row counts and distinct values kept by the engine (across a crash, from the
//! WAL or a checkpoint), and the planner's choices that follow from them.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use support::{crash, options, q, session_of};
use walden::vfs::SimVfs;
use walden::{Database, TableKind};

/// `big` has 20,000 rows and an index on `k` (10 values); `small` has 2,000 rows whose
/// `v` is always 1. Without statistics `v = 1` is guessed to keep 5% of `small` (100
/// rows), few enough to look each up in `big`'s index; ANALYZE finds it keeps all
/// 2,000, and a hash join is cheaper.
const SETUP: &str = "create table big (id int primary key, k int, pad text);
     insert into big select g, g % 10, 'padding ' || g from generate_series(1, 20000) g;
     create index big_k on big (k);
     create table small (id int primary key, k int, v int);
     insert into small select g, g % 10, 1 from generate_series(1, 2000) g;";

const JOIN: &str = "select count(*) from small join big on big.k = small.k where small.v = 1";

fn plan(s: &mut walden_sql::Session) -> String {
    q(s, &format!("explain {JOIN}"))
}

#[test]
fn analyze_counts_rows_and_distinct_values() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let vfs = Arc::new(SimVfs::new(5));
        let db = Database::create("db", options(&vfs)).unwrap();
        let mut s = session_of(&db, kind, 1);
        q(&mut s, SETUP);
        assert_eq!(db.table_estimate("big"), None, "{kind:?}");
        q(&mut s, "delete from big where id > 19000; analyze big");
        let (rows, distinct) = db.table_estimate("big").unwrap();
        assert_eq!(rows, 19000.0, "{kind:?}");
        // id is unique (kept as a share of the rows), k has 10 values, pad is unique.
        assert_eq!(distinct, vec![19000.0, 10.0, 19000.0], "{kind:?}");
        assert_eq!(db.table_estimate("small"), None, "{kind:?}");
        // ANALYZE without a table analyzes every table.
        q(&mut s, "analyze");
        assert_eq!(
            db.table_estimate("small").unwrap(),
            (2000.0, vec![2000.0, 10.0, 1.0]),
            "{kind:?}"
        );
        let e = s.execute("analyze nosuch").unwrap_err();
        assert_eq!(
            (e.code.to_string(), e.message.clone()),
            ("42P01".into(), "relation \"nosuch\" does not exist".into())
        );
    }
}

#[test]
fn the_planner_follows_analyze_and_its_statistics_survive_a_crash() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        for checkpoint in [false, true] {
            let vfs = Arc::new(SimVfs::new(7));
            let db = Database::create("db", options(&vfs)).unwrap();
            let mut s = session_of(&db, kind, 1);
            q(&mut s, SETUP);
            let before = plan(&mut s);
            assert!(
                before.contains("Index Scan using big_k on big"),
                "{kind:?}: {before}"
            );
            let count = q(&mut s, JOIN);
            assert_eq!(count, "4000000");
            q(&mut s, "analyze");
            if checkpoint {
                q(&mut s, "checkpoint");
            }
            let after = plan(&mut s);
            // The estimates are exact now: 20,000 × 2,000 rows / 10 values of k.
            assert_eq!(
                after,
                "Aggregate  (rows=1)\n\
                 \x20 ->  Hash Join  (rows=4000000)\n\
                 \x20       Hash Cond: (big.k = small.k)\n\
                 \x20       ->  Seq Scan on big  (rows=20000)\n\
                 \x20       ->  Hash  (rows=2000)\n\
                 \x20             ->  Seq Scan on small  (rows=2000)\n\
                 \x20                   Filter: (small.v = 1)",
                "{kind:?}"
            );
            assert_eq!(q(&mut s, JOIN), count);
            drop(s);
            let db = crash(db, &vfs);
            assert_eq!(
                db.table_estimate("small").unwrap(),
                (2000.0, vec![2000.0, 10.0, 1.0]),
                "{kind:?} checkpoint {checkpoint}"
            );
            let mut s = session_of(&db, kind, 1);
            assert_eq!(plan(&mut s), after, "{kind:?} checkpoint {checkpoint}");
            assert!(db.check().unwrap().is_clean());
        }
    }
}

/// A table that grew since ANALYZE is estimated at the counted rows scaled by its
/// pages, as PostgreSQL scales reltuples by relpages.
#[test]
fn estimates_scale_with_the_table_pages() {
    let vfs = Arc::new(SimVfs::new(9));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = session_of(&db, TableKind::Undo, 1);
    q(
        &mut s,
        "create table t (id int, v int); insert into t select g, g % 7 from generate_series(1, 5000) g; analyze t",
    );
    let (rows, distinct) = db.table_estimate("t").unwrap();
    assert_eq!((rows, distinct[1]), (5000.0, 7.0));
    q(
        &mut s,
        "insert into t select g, g % 7 from generate_series(1, 5000) g",
    );
    let (rows, distinct) = db.table_estimate("t").unwrap();
    assert!((9000.0..=11000.0).contains(&rows), "{rows}");
    // v's count is absolute (7 values), id's a share of the rows.
    assert_eq!(distinct[1], 7.0);
    assert_eq!(distinct[0], rows);
}

/// After ANALYZE, an index read of an equality that finds a large share of the table
/// gives way to a scan (`optimize::index_cost`), as PostgreSQL's costs choose a
/// sequential scan; a selective one keeps its index, and without statistics every
/// usable index is read. The rows are the same either way.
#[test]
fn an_index_that_finds_much_of_the_table_gives_way_to_a_scan_after_analyze() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let vfs = Arc::new(SimVfs::new(11));
        let db = Database::create("db", options(&vfs)).unwrap();
        let mut s = session_of(&db, kind, 1);
        q(
            &mut s,
            "create table t (id int primary key, status int, k int);
             insert into t select g, g % 3, g % 1000 from generate_series(1, 6000) g;
             create index t_status on t (status); create index t_k on t (k);",
        );
        let plans = |s: &mut walden_sql::Session| {
            [
                "select count(*) from t where status = 1",
                "select count(*) from t where status in (0, 1)",
                "select count(*) from t where k = 7",
                "select count(*) from t where status = 1 and k = 7",
                "select count(*) from t where status > 1",
            ]
            .map(|sql| {
                let plan = q(s, &format!("explain (costs off) {sql}"));
                (plan, q(s, sql))
            })
        };
        let before = plans(&mut s);
        for (plan, _) in &before[..4] {
            assert!(plan.contains("Index Scan"), "{kind:?}: {plan}");
        }
        q(&mut s, "analyze t");
        let after = plans(&mut s);
        // A third of the table, and two thirds: a scan.
        assert_eq!(
            after[0].0, "Aggregate\n  ->  Seq Scan on t\n        Filter: (status = 1)",
            "{kind:?}"
        );
        assert!(
            after[1].0.contains("Seq Scan on t"),
            "{kind:?}: {}",
            after[1].0
        );
        // Six rows of 6,000: the index.
        assert!(
            after[2].0.contains("Index Scan using t_k on t"),
            "{kind:?}: {}",
            after[2].0
        );
        assert!(
            after[3].0.contains("Index Scan using t_k on t"),
            "{kind:?}: {}",
            after[3].0
        );
        // A range: no histogram to estimate it with, so the choice is as before.
        assert_eq!(after[4].0, before[4].0, "{kind:?}");
        for (b, a) in before.iter().zip(&after) {
            assert_eq!(b.1, a.1, "{kind:?}: the same rows");
        }
        assert_eq!(after[0].1, "2000");
    }
}
