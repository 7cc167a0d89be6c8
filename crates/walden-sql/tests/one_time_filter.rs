//! A WHERE, ON or HAVING condition that is the constant false or NULL once simplified:
//! what could go wrong is a query that still reads its tables (and EXPLAIN that shows the
//! scan with the condition as written, where PostgreSQL shows a `Result` with `One-Time
//! Filter: false`), rows where there are none, no row for an aggregate over nothing
//! (`count(*)` is 0), a LEFT JOIN that drops its left rows, an UPDATE or DELETE that
//! changes a row, or an error of a condition that does not bind lost. Every outcome is
//! PostgreSQL 15's, and is checked on PostgreSQL itself when it is installed.
#![allow(clippy::unwrap_used)]

use walden_sql::Session;

mod support;
use support::{check_on_both, db, q};

const SETUP: &[(&str, &str)] = &[
    ("create table t (a int, b text)", ""),
    ("create table u (a int, c int)", ""),
    ("insert into t values (1, 'x'), (2, 'y'), (5, 'z')", ""),
    ("insert into u values (1, 10), (5, 50)", ""),
];

/// Nothing read: PostgreSQL's plan of a relation whose condition is constant false.
const NOTHING: &str = "Result\n  One-Time Filter: false";

/// (statement, PostgreSQL 15's plan or rows).
const CASES: &[(&str, &str)] = &[
    // One table: the whole plan is a Result that reads nothing.
    ("explain (costs off) select * from t where false", NOTHING),
    (
        "explain (costs off) select * from t where 1 = 0 and a > 3",
        NOTHING,
    ),
    (
        "explain (costs off) select * from t where a > 3 and false",
        NOTHING,
    ),
    ("explain (costs off) select * from t where null", NOTHING),
    (
        "explain (costs off) select * from t where null::boolean",
        NOTHING,
    ),
    ("explain (costs off) select * from t where a = null", NOTHING),
    (
        "explain (costs off) select * from t where not (a = 1 or true)",
        NOTHING,
    ),
    ("explain (costs off) select 1 where false", NOTHING),
    (
        "explain (costs off) select * from generate_series(1, 3) g where false",
        NOTHING,
    ),
    // An aggregate over nothing.
    (
        "explain (costs off) select count(*) from t where null",
        "Aggregate\n  ->  Result\n        One-Time Filter: false",
    ),
    (
        "explain (costs off) select count(*) from t having false",
        "Aggregate\n  Filter: false\n  ->  Result\n        One-Time Filter: false",
    ),
    // Joins: WHERE or an inner join's ON constant false, nothing is read.
    (
        "explain (costs off) select * from t join u on t.a = u.a where false",
        NOTHING,
    ),
    ("explain (costs off) select * from t join u on false", NOTHING),
    ("explain (costs off) select * from t, u where false", NOTHING),
    (
        "explain (costs off) select * from t join u on t.a = u.a and false",
        NOTHING,
    ),
    (
        "explain (costs off) select * from t left join u on t.a = u.a where false",
        NOTHING,
    ),
    (
        "explain (costs off) select * from t left join u on t.a = u.a where t.a > 1 and null",
        NOTHING,
    ),
    // A LEFT JOIN's ON constant false: its left rows, its right side not read.
    (
        "explain (costs off) select * from t left join u on false",
        "Nested Loop Left Join\n  Join Filter: false\n  ->  Seq Scan on t\n  ->  Result\n        One-Time Filter: false",
    ),
    (
        "explain (costs off) select * from t left join u on t.a = u.a and false",
        "Nested Loop Left Join\n  Join Filter: false\n  ->  Seq Scan on t\n  ->  Result\n        One-Time Filter: false",
    ),
    (
        "explain (costs off) select * from t right join u on false",
        "Nested Loop Left Join\n  Join Filter: false\n  ->  Seq Scan on u\n  ->  Result\n        One-Time Filter: false",
    ),
    (
        "explain (costs off) select * from t, lateral (select u.c from u where u.a = t.a) s where false",
        NOTHING,
    ),
    (
        "explain (costs off) select * from t where a > 1 and (false or null)",
        NOTHING,
    ),
    (
        "explain (costs off) insert into t select 9, 'n' where false",
        "Insert on t\n  ->  Result\n        One-Time Filter: false",
    ),
    // UPDATE and DELETE read no row.
    (
        "explain (costs off) update t set b = 'q' where false",
        "Update on t\n  ->  Result\n        One-Time Filter: false",
    ),
    (
        "explain (costs off) delete from t where a = 1 and null",
        "Delete on t\n  ->  Result\n        One-Time Filter: false",
    ),
    // Prepared statements, the constant beside a parameter (PostgreSQL's EXPLAIN
    // EXECUTE shows the plans above; Walden has no EXPLAIN EXECUTE).
    (
        "prepare p(int) as select * from t where a = $1 and false",
        "",
    ),
    ("execute p(1)", ""),
    (
        "prepare r(int) as select count(*) from t where false and a > $1",
        "",
    ),
    ("execute r(1)", "0"),
    // Rows: none, and the one row of an aggregate over none.
    ("select * from t where false", ""),
    ("select count(*) from t where false", "0"),
    ("select count(*), sum(a), max(b) from t where null", "0||"),
    ("select a, count(*) from t where false group by a", ""),
    ("select count(*) from t having false", ""),
    ("select a, count(*) from t group by a having false", ""),
    ("select a from t where false order by a limit 1", ""),
    ("select 1 where null", ""),
    ("select count(*) from generate_series(1, 3) g where false", "0"),
    (
        "select count(*), sum(u.c) from t join u on t.a = u.a where false",
        "0|",
    ),
    ("select count(*) from t, u where 1 = 0", "0"),
    (
        "select t.a, u.c from t left join u on false order by t.a",
        "1|\n2|\n5|",
    ),
    (
        "select t.a, u.c from t left join u on t.a = u.a and false order by t.a",
        "1|\n2|\n5|",
    ),
    (
        "select t.a, u.c from t right join u on false order by u.c",
        "|10\n|50",
    ),
    (
        "select count(*) from (t join u on false) left join u v on v.a = t.a",
        "0",
    ),
    (
        "select count(*) from t where a in (select a from u where false)",
        "0",
    ),
    ("select a, row_number() over () from t where false", ""),
    ("select count(*) from t where a > 1 and (false or null)", "0"),
    // What is not read is not run: this subquery divides by zero on its first row.
    ("select * from (select 1 / (a - 1) from t) s", "ERROR 22012: division by zero"),
    ("select * from (select 1 / (a - 1) from t) s where false", ""),
    (
        "select count(*) from t left join (select 1 / (a - 1) as x, a from t) s on false",
        "3",
    ),
    // A cursor over nothing.
    ("begin", ""),
    ("declare c cursor for select * from t where false", ""),
    ("fetch 2 from c", ""),
    ("commit", ""),
    // UPDATE and DELETE change nothing.
    ("update t set b = 'q' where false returning a", ""),
    ("delete from t where null returning a", ""),
    ("delete from t using u where t.a = u.a and false", ""),
    ("update t set b = 'q' from u where false", ""),
    ("insert into t select 9, 'n' where false", ""),
    ("select count(*), count(*) filter (where b = 'q') from t", "3|0"),
    ("explain (costs off) update t set b = 'q' from u where false", "Update on t\n  ->  Result\n        One-Time Filter: false"),
    // A relation only superusers read is refused, whatever the condition.
    ("create role r1", ""),
    ("set role r1", ""),
    (
        "select * from pg_authid where false",
        "ERROR 42501: permission denied for table pg_authid",
    ),
    (
        "select count(*) from (select * from pg_authid) s where false",
        "ERROR 42501: permission denied for table pg_authid",
    ),
    (
        "select count(*) from pg_roles join pg_shadow on false",
        "ERROR 42501: permission denied for view pg_shadow",
    ),
    ("reset role", ""),
    // A condition that does not bind still fails, constant false beside it or not.
    (
        "select * from t where nope and false",
        "ERROR 42703: column \"nope\" does not exist",
    ),
    (
        "select * from t where a = 'x' and false",
        "ERROR 22P02: invalid input syntax for type integer: \"x\"",
    ),
    (
        "select * from t where 1 and false",
        "ERROR 42804: argument of AND must be type boolean, not type integer",
    ),
    (
        "update t set b = 'q' where nope and false",
        "ERROR 42703: column \"nope\" does not exist",
    ),
];

#[test]
fn a_constant_false_condition_reads_nothing() {
    let cases: Vec<(&str, &str)> = SETUP.iter().chain(CASES).copied().collect();
    check_on_both("one_time_filter", &cases);
}

/// What Walden shows beyond the plans PostgreSQL's text gives alike: the estimate of
/// the Result (PostgreSQL's `rows=0`), EXPLAIN ANALYZE's rows of it, and FORMAT JSON's
/// key for the one-time filter.
#[test]
fn explain_shows_the_result_that_reads_nothing() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    for (sql, _) in SETUP {
        s.execute(sql).unwrap();
    }
    assert_eq!(
        q(&mut s, "explain select * from t where false"),
        "Result  (rows=0)\n  One-Time Filter: false"
    );
    assert_eq!(
        q(&mut s, "explain select count(*) from t where false"),
        "Aggregate  (rows=1)\n  ->  Result  (rows=0)\n        One-Time Filter: false"
    );
    let analyzed = q(
        &mut s,
        "explain (analyze, costs off) select count(*) from t where false",
    );
    let lines: Vec<&str> = analyzed.lines().collect();
    assert!(
        lines[0].starts_with("Aggregate  (actual time=") && lines[0].ends_with(" rows=1 loops=1)"),
        "{analyzed}"
    );
    assert!(
        lines[1].starts_with("  ->  Result  (actual time=")
            && lines[1].ends_with(" rows=0 loops=1)"),
        "{analyzed}"
    );
    assert_eq!(lines[2], "        One-Time Filter: false", "{analyzed}");
    assert_eq!(
        q(
            &mut s,
            "explain (format json, costs off) select * from t where false"
        ),
        "[\n  {\n    \"Plan\": {\n      \"Node Type\": \"Result\",\n      \"One-Time Filter\": \"false\"\n    }\n  }\n]"
    );
    // A condition that may pass keeps its scan and filter.
    assert_eq!(
        q(&mut s, "explain (costs off) select * from t where a > 1"),
        "Seq Scan on t\n  Filter: (a > 1)"
    );
}
