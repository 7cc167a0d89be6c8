//! Sorts and groupings larger than `work_mem`: they write what does not fit to
//! temporary files (an external merge sort, a grouping's partitions) instead of
//! failing. What could go wrong is another order or other groups than the same query
//! gives in memory and PostgreSQL gives (ties, NULLs, DESC, DISTINCT ON, OFFSET and
//! LIMIT across runs), a temporary file left behind, or a full disk while spilling that
//! loses data or leaves the session unusable instead of failing the statement.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use walden::vfs::{FaultKind, SimVfs, Vfs};
use walden::Database;
use walden_sql::Session;

mod support;
use support::{options, outcome, q};

const ROWS: u32 = 30_000;

/// A table of `ROWS` rows: ties on `k` (1,000 values), NULLs in `n`, md5 text in `b`.
fn setup(s: &mut Session) -> String {
    let sql = format!(
        "create table t (a int, k int, n int, b text, f float8);
         insert into t select g, (g * 7919) % 1000,
             case when g % 7 = 0 then null else g % 113 end,
             md5(g::text), ((g * 31) % 997) / 7.0
           from generate_series(1, {ROWS}) g"
    );
    s.execute(&sql).unwrap();
    sql
}

/// Queries whose order is total (PostgreSQL's order is then the only right one), and
/// groupings, each ordered at the end so that results compare line by line.
const QUERIES: &[&str] = &[
    "select a, b from t order by b",
    "select a, k from t order by k desc, a",
    "select n, a from t order by n nulls first, a desc",
    "select n, a from t order by n desc nulls last, a",
    "select f, a, b from t order by f, b desc",
    "select a, b from t order by b limit 5 offset 20000",
    "select a from t order by b desc offset 29990",
    "select distinct on (k) k, a, b from t order by k, b desc",
    "select k, count(*), sum(a), min(b), max(n) from t group by k order by k",
    "select b, count(*) from t group by b order by b limit 10",
    "select count(*) from (select b, a % 3 from t group by b, a % 3) s",
    "select n, count(distinct k), string_agg(b, ',' order by b) from t where a < 3000 group by n order by n nulls first",
    "select k, avg(f) from t group by k having count(*) > 30 order by k",
    "select a % 5000 as m, count(*) from t group by 1 order by count(*) desc, m limit 7",
    "select x, count(*) from (select a, k as x from t order by b) s group by x order by x limit 4",
];

/// Temporary files left in the database "db".
fn temp_files(vfs: &SimVfs) -> Vec<String> {
    vfs.list_dir(Path::new("db/tmp")).unwrap_or_default()
}

#[test]
fn sorts_and_groupings_past_work_mem_give_the_rows_memory_gives() {
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    setup(&mut s);
    for sql in QUERIES {
        s.execute("set work_mem = '64MB'").unwrap();
        let before = db.stats();
        let in_memory = q(&mut s, sql);
        assert_eq!(db.stats().since(&before).temp_bytes, 0, "{sql}");
        s.execute("set work_mem = '64kB'").unwrap();
        let before = db.stats();
        let spilled = q(&mut s, sql);
        let temp = db.stats().since(&before);
        assert!(temp.temp_bytes > 0, "{sql} wrote no temporary file");
        assert_eq!(spilled, in_memory, "{sql}");
        assert!(
            temp_files(&vfs).is_empty(),
            "{sql} left {:?}",
            temp_files(&vfs)
        );
    }
}

/// Equal keys keep the order rows came in across runs, as the in-memory stable sort
/// keeps them (PostgreSQL promises no order for ties; Walden gives the same either way).
#[test]
fn ties_keep_their_order_across_runs() {
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    setup(&mut s);
    let sql = "select k, a from (select k, a from t order by a) s order by k";
    let in_memory = q(&mut s, sql);
    s.execute("set work_mem = '64kB'").unwrap();
    assert_eq!(q(&mut s, sql), in_memory);
    for w in in_memory.lines().collect::<Vec<_>>().windows(2) {
        let key = |l: &str| -> (i64, i64) {
            let (k, a) = l.split_once('|').unwrap();
            (k.parse().unwrap(), a.parse().unwrap())
        };
        assert!(key(w[0]) < key(w[1]), "{w:?}");
    }
}

#[test]
fn the_order_is_postgres_order() {
    let Some(cluster) = support::pg::cluster() else {
        eprintln!("{}", support::pg::SKIPPED);
        return;
    };
    let mut pg = support::pg::fresh_database(&cluster, "spill");
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    let create = setup(&mut s);
    pg.batch_execute(&create).unwrap();
    pg.batch_execute("set work_mem = '64kB'").unwrap();
    s.execute("set work_mem = '64kB'").unwrap();
    let mut differ = Vec::new();
    for sql in QUERIES {
        let ours = q(&mut s, sql);
        let theirs = support::pg::outcome(&mut pg, sql);
        // Averages print with PostgreSQL's 16 digits and Walden's 17 significant ones
        // alike; floats are compared as numbers.
        if !same_lines(&ours, &theirs) {
            differ.push(format!(
                "{sql}\n  walden:     {}\n  postgresql: {}",
                ours.lines().take(3).collect::<Vec<_>>().join(" / "),
                theirs.lines().take(3).collect::<Vec<_>>().join(" / ")
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Lines equal, each value as text or, when both parse as floats, within 1e-12.
fn same_lines(a: &str, b: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            let (x, y): (Vec<&str>, Vec<&str>) = (x.split('|').collect(), y.split('|').collect());
            x.len() == y.len()
                && x.iter().zip(&y).all(|(u, v)| {
                    u == v
                        || matches!((u.parse::<f64>(), v.parse::<f64>()),
                            (Ok(p), Ok(q)) if (p - q).abs() <= 1e-12 * p.abs().max(1.0))
                })
        })
}

#[test]
fn a_full_disk_while_spilling_fails_the_statement_and_loses_nothing() {
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    setup(&mut s);
    let expected = q(&mut s, "select k, count(*) from t group by k order by k");
    s.execute("set work_mem = '64kB'").unwrap();
    for (n, sql) in [
        (1, "select a, b from t order by b"),
        (3, "select a, b from t order by b"),
        (2, "select b, count(*) from t group by b"),
    ] {
        vfs.fail_nth_write_under(Path::new("db/tmp"), n, FaultKind::Enospc);
        let e = s.execute(sql).unwrap_err();
        assert_eq!(e.code, "53100", "{sql}: {e}");
        assert!(
            e.message
                .starts_with("could not write temporary file db/tmp/"),
            "{e}"
        );
        assert!(temp_files(&vfs).is_empty(), "{:?}", temp_files(&vfs));
    }
    // In a block, the failure aborts the block; what it wrote goes at ROLLBACK.
    s.execute("begin").unwrap();
    s.execute("insert into t values (-1, 0, 0, 'x', 0)")
        .unwrap();
    vfs.fail_nth_write_under(Path::new("db/tmp"), 1, FaultKind::Eio);
    let e = s.execute("select a from t order by b").unwrap_err();
    assert_eq!(e.code, "58030", "{e}");
    assert_eq!(s.execute("select 1").unwrap_err().code, "25P02");
    s.execute("rollback").unwrap();
    // The database writes on, the data is whole, the same query now spills and runs.
    s.execute("insert into t values (0, 0, 0, 'x', 0)").unwrap();
    s.execute("delete from t where a = 0").unwrap();
    assert_eq!(
        q(&mut s, "select k, count(*) from t group by k order by k"),
        expected
    );
    assert_eq!(
        outcome(
            &mut s,
            "select count(*) from (select a from t order by b) s"
        ),
        ROWS.to_string()
    );
    db.check().unwrap();
}

/// `work_mem` bounds each sort and grouping; `statement_mem` bounds the statement,
/// whose returned rows stay in memory: a result larger than it fails with 53200.
#[test]
fn the_statement_budget_still_bounds_what_is_returned() {
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    setup(&mut s);
    s.execute("set work_mem = '64kB'").unwrap();
    s.execute("set statement_mem = '1MB'").unwrap();
    // Few rows returned: runs.
    assert_eq!(
        q(&mut s, "select a from t order by b limit 2"),
        q(&mut s, "select a from t order by b offset 0 limit 2")
    );
    assert_eq!(
        q(
            &mut s,
            "select b, count(*) from t group by b having count(*) > 1"
        ),
        ""
    );
    let e = s.execute("select a, b from t order by b").unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "53200",
            "out of memory: query needs more than statement_mem (1MB)"
        )
    );
    assert!(temp_files(&vfs).is_empty());
}

/// EXPLAIN ANALYZE says when a sort or a grouping went to disk, in PostgreSQL's words.
#[test]
fn explain_analyze_shows_what_went_to_disk() {
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    setup(&mut s);
    let plan = |s: &mut Session, sql: &str| q(s, &format!("explain (analyze, costs off) {sql}"));
    let sort = "select a from t order by b offset 29999";
    let group = "select b, count(*) from t group by b having count(*) > 1";
    for sql in [sort, group] {
        let p = plan(&mut s, sql);
        assert!(!p.contains("Disk"), "{p}");
    }
    s.execute("set work_mem = '64kB'").unwrap();
    let p = plan(&mut s, sort);
    let line = p
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("Sort Method: external merge  Disk: ")
        })
        .unwrap_or_else(|| panic!("{p}"));
    let kb: u64 = line
        .trim()
        .trim_start_matches("Sort Method: external merge  Disk: ")
        .trim_end_matches("kB")
        .parse()
        .unwrap();
    // 30,000 rows of a 32-character text and two integers, as written.
    assert!((1_000..4_000).contains(&kb), "{line}");
    let p = plan(&mut s, group);
    let line = p
        .lines()
        .find(|l| l.trim_start().starts_with("Batches: "))
        .unwrap_or_else(|| panic!("{p}"));
    assert!(line.contains("  Disk Usage: "), "{line}");
    let agg = p
        .lines()
        .find(|l| l.contains("HashAggregate  (actual time="))
        .unwrap_or_else(|| panic!("{p}"));
    assert!(
        agg.ends_with(" rows=30000 loops=1)"),
        "groups of every pass counted: {agg}"
    );
}

/// A grouping key is evaluated once, when its row first comes: a row written to a
/// partition keeps its key's value, so a volatile key (random()) makes each group once.
#[test]
fn a_volatile_key_makes_each_group_once_across_passes() {
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    s.execute("set work_mem = '64kB'").unwrap();
    let before = db.stats();
    let r = q(
        &mut s,
        "select count(*) = count(distinct g), sum(c) from
           (select (random() * 3000)::int g, count(*) c from generate_series(1, 60000) x
            group by 1) s",
    );
    assert_eq!(r, "t|60000");
    assert!(db.stats().since(&before).temp_bytes > 0);
}

/// ORDER BY … LIMIT keeps its bounded heap once it holds its rows, whatever their
/// size: rows larger than work_mem each are not written out one file per row.
#[test]
fn a_full_top_n_stays_in_memory() {
    let vfs = Arc::new(SimVfs::new(1));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    s.execute(
        "create table d (a int, b text);
         insert into d select g, repeat(md5(g::text), 2200) from generate_series(1, 200) g",
    )
    .unwrap();
    s.execute("set work_mem = '64kB'").unwrap();
    let before = db.stats();
    let first = q(&mut s, "select a from d order by b limit 1");
    assert_eq!(db.stats().since(&before).temp_bytes, 0);
    s.execute("set work_mem = '64MB'").unwrap();
    assert_eq!(q(&mut s, "select a from d order by b limit 1"), first);
    // A larger LIMIT that fills past work_mem while filling still spills, and agrees.
    let all = q(&mut s, "select a from d order by b limit 150 offset 20");
    s.execute("set work_mem = '64kB'").unwrap();
    let before = db.stats();
    assert_eq!(
        q(&mut s, "select a from d order by b limit 150 offset 20"),
        all
    );
    assert!(db.stats().since(&before).temp_bytes > 0);
    assert!(temp_files(&vfs).is_empty());
}
