//! The per-statement memory budget (`statement_mem`, and `work_mem` past which sorts and
//! groupings spill): what could go wrong is a statement that materializes more than the
//! budget (sorted rows, groups, a returned result) and takes the process down instead
//! of failing with 53200, a
//! failure that leaves its writes behind or the session unusable, or a setting that does
//! not parse as PostgreSQL's.
#![allow(clippy::unwrap_used)]

use walden_sql::{value, Session};

mod support;
use support::db;

fn show(s: &mut Session, name: &str) -> String {
    let r = s.execute_one(&format!("show {name}")).unwrap();
    value::display(&r.rows[0][0])
}

fn count(s: &mut Session, table: &str) -> String {
    let r = s
        .execute_one(&format!("select count(*) from {table}"))
        .unwrap();
    value::display(&r.rows[0][0])
}

fn out_of_memory(s: &mut Session, sql: &str, budget: &str) {
    let e = s.execute(sql).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "53200",
            format!("out of memory: query needs more than statement_mem ({budget})").as_str()
        ),
        "{sql}"
    );
    assert_eq!(
        e.hint.as_deref(),
        Some(
            "Walden keeps returned rows, joined sides and window partitions in memory (sorts and \
             groupings past work_mem go to temporary files); add a LIMIT or a more selective \
             WHERE, or raise statement_mem (SET statement_mem = '2GB')."
        )
    );
}

#[test]
fn work_mem_set_show() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(show(&mut s, "work_mem"), "64MB");
    assert_eq!(show(&mut s, "statement_mem"), "1GB");
    for (value, shown) in [
        ("'64MB'", "64MB"),
        ("'1.5GB'", "1536MB"),
        // A bare number counts kB, as in PostgreSQL.
        ("4096", "4MB"),
        ("'100'", "100kB"),
        ("'65537B'", "65537B"),
        ("'2TB'", "2TB"),
    ] {
        s.execute(&format!("set work_mem = {value}")).unwrap();
        assert_eq!(show(&mut s, "work_mem"), shown, "{value}");
    }
    for value in ["'64mb'", "'lots'", "'63kB'", "0", "''"] {
        let e = s.execute(&format!("set work_mem = {value}")).unwrap_err();
        assert_eq!(e.code, "22023", "{value}");
        assert!(
            e.message
                .starts_with("invalid value for parameter \"work_mem\": "),
            "{value}: {e}"
        );
    }
    assert_eq!(show(&mut s, "work_mem"), "2TB");
    let all = s.execute_one("show all").unwrap();
    let names: Vec<String> = all.rows.iter().map(|r| value::display(&r[0])).collect();
    assert!(names.contains(&"work_mem".to_string()), "{names:?}");
    assert!(names.contains(&"statement_mem".to_string()), "{names:?}");
    s.execute("set statement_mem = '3GB'").unwrap();
    assert_eq!(show(&mut s, "statement_mem"), "3GB");
    let e = s.execute("set statement_mem = '1kB'").unwrap_err();
    assert_eq!(e.code, "22023");
}

#[test]
fn every_kind_of_materialization_is_held_to_the_budget() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int, b text)").unwrap();
    s.execute("insert into t select g, 'row ' || g from generate_series(1, 20000) g")
        .unwrap();
    s.execute("set statement_mem = '256kB'").unwrap();
    // Under the budget, all of these run.
    for sql in [
        "select count(*) from t",
        "select a from t order by a desc limit 5",
        "select a % 10, count(*) from t group by 1",
        "select a from t where a < 100",
    ] {
        s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    for sql in [
        // A full sort.
        "select a, b from t order by b",
        // A returned result.
        "select * from t",
        "select g from generate_series(1, 1000000) g",
        // Groups.
        "select a, count(*) from t group by a",
        "select b, max(a) from t group by b having max(a) < 0",
        // Rows an INSERT ... SELECT sorts before writing.
        "insert into t select a, b from t order by a",
    ] {
        out_of_memory(&mut s, sql, "256kB");
    }
    // The failed insert wrote nothing, and the session goes on.
    assert_eq!(count(&mut s, "t"), "20000");
    // Past work_mem a sort or a grouping goes to temporary files, so one that returns
    // few rows runs within the statement's budget.
    s.execute("set work_mem = '64kB'").unwrap();
    for (sql, rows) in [
        ("select b, max(a) from t group by b having max(a) < 0", 0),
        ("select a from t order by b limit 3 offset 19000", 3),
        ("select b, a from t group by b, a having a < 0", 0),
    ] {
        let r = s.execute_one(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(r.rows.len(), rows, "{sql}");
    }
    out_of_memory(&mut s, "select a, b from t order by b", "256kB");
    s.execute("reset work_mem").unwrap();
    // A primary key is checked through its index, which holds no keys in memory.
    s.execute("set statement_mem = '1GB'").unwrap();
    s.execute("create table k (id int primary key)").unwrap();
    s.execute("insert into k select g from generate_series(1, 20000) g")
        .unwrap();
    s.execute("set statement_mem = '64kB'").unwrap();
    s.execute("insert into k values (0)").unwrap();
    let e = s.execute("insert into k values (20000)").unwrap_err();
    assert_eq!(e.code, "23505");
    assert_eq!(count(&mut s, "k"), "20001");
}

/// A join's side kept in memory is sized by the planner's estimate, which is no
/// promise: an estimate far above the rows that come must not be charged (a join of
/// nothing failing with 53200), and a side far wider than statement_mem must fail with 53200,
/// not take the process down reserving room for the rows it expected.
#[test]
fn a_joined_side_is_charged_for_its_rows_not_its_estimate() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    for t in ["b", "b2"] {
        s.execute(&format!("create table {t} (pad int, v text)"))
            .unwrap();
        s.execute(&format!(
            "insert into {t} select g % 1000, 'v' || g from generate_series(1, 20000) g"
        ))
        .unwrap();
    }
    s.execute("analyze").unwrap();
    s.execute("set statement_mem = '64kB'").unwrap();
    // Both sides estimated at thousands of rows; none pass.
    let r = s
        .execute_one(
            "select count(*) from b2 join b on b.pad = b2.pad where b.v > 'zzz' and b2.v > 'zzz'",
        )
        .unwrap();
    assert_eq!(value::display(&r.rows[0][0]), "0");
    // 400 columns a side: a cross join of two of them is a million rows 800 columns
    // wide to keep (25 GB); the statement fails, the session goes on.
    s.execute("set statement_mem = '4MB'").unwrap();
    let columns: Vec<String> = (0..400).map(|i| format!("c{i} int")).collect();
    for t in ["w1", "w2", "w3"] {
        s.execute(&format!("create table {t} ({})", columns.join(", ")))
            .unwrap();
        s.execute(&format!(
            "insert into {t} (c0) select g from generate_series(1, 1000) g"
        ))
        .unwrap();
    }
    s.execute("analyze").unwrap();
    out_of_memory(
        &mut s,
        "select count(*) from w1 left join (w2 cross join w3) on true",
        "4MB",
    );
    assert_eq!(count(&mut s, "w1"), "1000");
}

#[test]
fn out_of_memory_in_a_block_aborts_it() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int)").unwrap();
    s.execute("set statement_mem = '64kB'").unwrap();
    s.execute("begin").unwrap();
    s.execute("insert into t values (1)").unwrap();
    out_of_memory(
        &mut s,
        "select g from generate_series(1, 100000) g order by g",
        "64kB",
    );
    let e = s.execute("select 1").unwrap_err();
    assert_eq!(e.code, "25P02");
    assert_eq!(s.execute_one("rollback").unwrap().tag, "ROLLBACK");
    assert_eq!(count(&mut s, "t"), "0");
}
