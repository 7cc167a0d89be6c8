//! The exact numeric type: literals, arithmetic at PostgreSQL's result scales,
//! `numeric(p,s)` rounding and overflow, casts, aggregates, grouping of equal values of
//! different scales, storage through both table kinds, index lookups and range scans,
//! a crash and reopen, prepared parameters. Each expected answer was taken from
//! PostgreSQL 15. What could go wrong: a float8 slipping in (0.1 + 0.2 ≠ 0.3), a
//! division scale or a rounding off by one digit, 1.0 and 1.00 grouped apart, an index
//! key whose byte order is not numeric order across scales.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use walden::vfs::{CrashMode, SimVfs};
use walden::{Database, Numeric, TableKind, Value};
use walden_sql::Session;

mod support;
use support::{check_cases, db, options, outcome, q, session_of};

/// (statement, what PostgreSQL 15 answered: its output, or its SQLSTATE and message).
const CASES: &[(&str, &str)] = &[
    (r#"select 2.5"#, r#"2.5"#),
    (r#"select 1e3"#, r#"1000"#),
    (r#"select 1.5e-3"#, r#"0.0015"#),
    (r#"select 12345678901234567890"#, r#"12345678901234567890"#),
    (r#"select 1.50 + 2.250"#, r#"3.750"#),
    (r#"select 1.50 * 2.0"#, r#"3.000"#),
    (r#"select 1 / 3.0"#, r#"0.33333333333333333333"#),
    (r#"select 10 / 4.0"#, r#"2.5000000000000000"#),
    (r#"select 2 / 3::numeric"#, r#"0.66666666666666666667"#),
    (r#"select 1234567 / 0.003"#, r#"411522333.33333333"#),
    (r#"select 0.0001 / 3"#, r#"0.000033333333333333333333"#),
    (r#"select 7.5 % 2"#, r#"1.5"#),
    (r#"select -7.5 % 2"#, r#"-1.5"#),
    (r#"select mod(7.5, 2)"#, r#"1.5"#),
    (r#"select 1.0 / 0"#, r#"ERROR 22012: division by zero"#),
    (r#"select 1.5 % 0"#, r#"ERROR 22012: division by zero"#),
    (r#"select -(2.50)"#, r#"-2.50"#),
    (r#"select 1 + 2.5"#, r#"3.5"#),
    (r#"select 2.5 + 1.5::float8"#, r#"4"#),
    (r#"select 1.0 = 1.00"#, r#"t"#),
    (r#"select 1.0 = 1"#, r#"t"#),
    (r#"select 2.5 > 2"#, r#"t"#),
    (r#"select 0.1 + 0.2 = 0.3"#, r#"t"#),
    (r#"select 0.1::float8 + 0.2::float8 = 0.3"#, r#"f"#),
    (r#"select 2.5::numeric(10,2)"#, r#"2.50"#),
    (r#"select 123.456::numeric(5,2)"#, r#"123.46"#),
    (
        r#"select 999.995::numeric(5,2)"#,
        r#"ERROR 22003: numeric field overflow"#,
    ),
    (r#"select 12345::numeric(3,-2)"#, r#"12300"#),
    (r#"select 0.0001::numeric(2,5)"#, r#"0.00010"#),
    (
        r#"select 0.001::numeric(2,5)"#,
        r#"ERROR 22003: numeric field overflow"#,
    ),
    (r#"select 1.5::numeric(1)"#, r#"2"#),
    (
        r#"select 9.5::numeric(1)"#,
        r#"ERROR 22003: numeric field overflow"#,
    ),
    (r#"select '  1.50  '::numeric"#, r#"1.50"#),
    (
        r#"select 'abc'::numeric"#,
        r#"ERROR 22P02: invalid input syntax for type numeric: "abc""#,
    ),
    (
        r#"select '1.2.3'::numeric"#,
        r#"ERROR 22P02: invalid input syntax for type numeric: "1.2.3""#,
    ),
    (
        r#"select ''::numeric"#,
        r#"ERROR 22P02: invalid input syntax for type numeric: """#,
    ),
    (
        r#"select '1e'::numeric"#,
        r#"ERROR 22P02: invalid input syntax for type numeric: "1e""#,
    ),
    (r#"select 2.5::int"#, r#"3"#),
    (r#"select -2.5::int"#, r#"-3"#),
    (r#"select (-2.5)::int"#, r#"-3"#),
    (r#"select 3.5::bigint"#, r#"4"#),
    (r#"select 2.5::smallint"#, r#"3"#),
    (
        r#"select 99999999999.5::int"#,
        r#"ERROR 22003: integer out of range"#,
    ),
    (
        r#"select 1e20::bigint"#,
        r#"ERROR 22003: bigint out of range"#,
    ),
    (
        r#"select 70000.4::smallint"#,
        r#"ERROR 22003: smallint out of range"#,
    ),
    (r#"select 2.5::float8"#, r#"2.5"#),
    (r#"select 0.1::float8::numeric"#, r#"0.1"#),
    (r#"select (1.0/3)::float8"#, r#"0.3333333333333333"#),
    (
        r#"select 1e20::float8::numeric"#,
        r#"100000000000000000000"#,
    ),
    (r#"select 123::numeric"#, r#"123"#),
    (r#"select 123::numeric(5,2)"#, r#"123.00"#),
    (
        r#"select 1234::numeric(5,2)"#,
        r#"ERROR 22003: numeric field overflow"#,
    ),
    (r#"select 2.50::text"#, r#"2.50"#),
    (r#"select '0.000'::numeric"#, r#"0.000"#),
    (r#"select -0.0"#, r#"0.0"#),
    (r#"select 1.10::numeric(10,1) * 2"#, r#"2.2"#),
    (r#"select abs(-1.50)"#, r#"1.50"#),
    (r#"select round(2.5)"#, r#"3"#),
    (r#"select round(-2.5)"#, r#"-3"#),
    (r#"select round(2.567, 2)"#, r#"2.57"#),
    (r#"select round(2.567, 5)"#, r#"2.56700"#),
    (r#"select round(1234.5, -2)"#, r#"1200"#),
    (r#"select round(5, 2)"#, r#"5.00"#),
    (r#"select round(2.5::float8)"#, r#"2"#),
    (r#"select round(3.5::float8)"#, r#"4"#),
    (r#"select trunc(-2.56, 1)"#, r#"-2.5"#),
    (r#"select trunc(2.99)"#, r#"2"#),
    (r#"select ceil(-1.5)"#, r#"-1"#),
    (r#"select ceiling(1.01)"#, r#"2"#),
    (r#"select floor(-1.5)"#, r#"-2"#),
    (r#"select floor(2.50)"#, r#"2"#),
    (r#"select sign(-2.50)"#, r#"-1"#),
    (r#"select sign(0.0)"#, r#"0"#),
    (r#"select sign(3::float8)"#, r#"1"#),
    (
        r#"select sum(x) from (values (1.5), (2.25), (null)) v(x)"#,
        r#"3.75"#,
    ),
    (
        r#"select avg(x) from (values (1.5), (2.25), (3)) v(x)"#,
        r#"2.2500000000000000"#,
    ),
    (
        r#"select avg(x) from (values (1), (2)) v(x)"#,
        r#"1.5000000000000000"#,
    ),
    (
        r#"select avg(x) from (values (1), (2), (2)) v(x)"#,
        r#"1.6666666666666667"#,
    ),
    (
        r#"select sum(x) from (values (9223372036854775807::bigint), (1::bigint)) v(x)"#,
        r#"9223372036854775808"#,
    ),
    (
        r#"select avg(x) from (values (1::bigint), (2::bigint), (4::bigint)) v(x)"#,
        r#"2.3333333333333333"#,
    ),
    (
        r#"select min(x), max(x) from (values (1.50), (1.5), (-2), (10.001)) v(x)"#,
        r#"-2|10.001"#,
    ),
    (
        r#"select count(distinct x) from (values (1.0), (1.00), (1), (2)) v(x)"#,
        r#"2"#,
    ),
    (
        r#"select x, count(*) from (values (1.0), (1.00), (2.5)) v(x) group by x order by x"#,
        r#"1.0|2
2.5|1"#,
    ),
    (
        r#"select distinct x from (values (1.0), (1.00)) v(x)"#,
        r#"1.0"#,
    ),
    (r#"select 1.00 in (1, 2)"#, r#"t"#),
    (r#"select 1.5 between 1 and 2"#, r#"t"#),
    (r#"select 1.5 < 1.5::float8"#, r#"f"#),
    (
        r#"select 100000000000000000000.0 / 3"#,
        r#"33333333333333333333.3"#,
    ),
    (r#"select 5.0 / 0.3"#, r#"16.6666666666666667"#),
    (r#"select 0.5 * 0.5"#, r#"0.25"#),
    (r#"select (0.1 + 0.2)::numeric(3,2)"#, r#"0.30"#),
    (r#"select 1.005::numeric(10,2)"#, r#"1.01"#),
    (r#"select -1.005::numeric(10,2)"#, r#"-1.01"#),
    (r#"select 1.50::numeric(10,2)::text || 'x'"#, r#"1.50x"#),
    (r#"select coalesce(null, 1.5)"#, r#"1.5"#),
    (r#"select case when true then 1 else 2.5 end"#, r#"1"#),
    (r#"select 10::numeric / 3"#, r#"3.3333333333333333"#),
    (r#"select 1::numeric / 7"#, r#"0.14285714285714285714"#),
    (
        r#"select 22.0 / 7.000000000000000000"#,
        r#"3.142857142857142857"#,
    ),
    (r#"select 3 * 1.10"#, r#"3.30"#),
];

#[test]
fn values_operators_and_errors_match_postgres() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    check_cases(&mut s, CASES);
}

/// The types PostgreSQL gives expressions, seen through a table made from them:
/// a literal with a point, integer + numeric, avg of integers and sum of bigint are
/// numeric; sum of int4 is bigint; round(int) and numeric × float8 are float8.
#[test]
fn result_types_match_postgres() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(
        &mut s,
        "create table tt as select 2.5 as a, 1 + 2.5 as b, (select avg(x) from (values (1), (2)) v(x)) as c, (select sum(x) from (values (1::bigint)) v(x)) as d, (select sum(x) from (values (1)) v(x)) as e, round(5) as f, 2.5 * 2::float8 as g, 12345678901234567890 as h",
    );
    assert_eq!(
        q(
            &mut s,
            "select format_type(atttypid, atttypmod) from pg_attribute where attrelid = 'tt'::regclass and attnum > 0 order by attnum"
        )
        .replace('\n', ","),
        "numeric,numeric,numeric,numeric,bigint,double precision,double precision,numeric"
    );
}

/// `numeric(p,s)` overflow carries PostgreSQL's detail; and what this build refuses
/// where PostgreSQL would not (NaN, more than 38 digits) is refused with an error,
/// never a wrong value.
#[test]
fn overflow_details_and_limits() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    for (sql, detail) in [
        (
            "select 999.995::numeric(5,2)",
            "A field with precision 5, scale 2 must round to an absolute value less than 10^3.",
        ),
        (
            "select 0.001::numeric(2,5)",
            "A field with precision 2, scale 5 must round to an absolute value less than 10^-3.",
        ),
        (
            "select 1::numeric(2,2)",
            "A field with precision 2, scale 2 must round to an absolute value less than 1.",
        ),
    ] {
        let e = s.execute(sql).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str(), e.detail.as_deref()),
            ("22003", "numeric field overflow", Some(detail)),
            "{sql}"
        );
    }
    for (sql, code, message) in [
        (
            "create table bad (a numeric(0))",
            "22023",
            "NUMERIC precision 0 must be between 1 and 1000",
        ),
        (
            "create table bad (a numeric(10, 1001))",
            "22023",
            "NUMERIC scale 1001 must be between -1000 and 1000",
        ),
        (
            "select 99999999999999999999999999999999999999 + 1",
            "22003",
            "value overflows numeric format",
        ),
        (
            "select 1234567890123456789012345678901234567.8 * 100",
            "22003",
            "value overflows numeric format",
        ),
    ] {
        let e = s.execute(sql).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (code, message), "{sql}");
    }
    let e = s.execute("select 'NaN'::numeric").unwrap_err();
    assert_eq!(e.code, "0A000");
    let e = s.execute("select 'infinity'::float8::numeric").unwrap_err();
    assert_eq!(e.code, "0A000");
    // A literal of more digits is taken as a float8 (PostgreSQL: an exact numeric).
    assert_eq!(q(&mut s, "select 1e300 * 2"), "2e+300");
    // 38 digits are held exactly.
    assert_eq!(
        q(&mut s, "select 99999999999999999999999999999999999998 + 1"),
        "99999999999999999999999999999999999999"
    );
}

/// A table with numeric columns of three kinds: `numeric(10,2)` (rounded on store),
/// unconstrained (scales kept, 1.0 and 1.00 both stored), `numeric(5,-1)` (rounded to
/// tens).
const SETUP: &str = "create table nv (id int primary key, a numeric(10,2), b numeric, c numeric(5,-1)); insert into nv values (1, 1.005, 1.0, 12344), (2, -2.5, 1.00, 15), (3, 12345678.999, -0.001, null), (4, null, 100, -4), (5, 0, 2.50, 0), (6, 99.994, 1e-3, 99999);";

/// (query over `nv`, PostgreSQL 15's rows).
const TABLE_CASES: &[(&str, &str)] = &[
    (
        r#"select * from nv order by id"#,
        r#"1|1.01|1.0|12340
2|-2.50|1.00|20
3|12345679.00|-0.001|
4||100|0
5|0.00|2.50|0
6|99.99|0.001|100000"#,
    ),
    (
        r#"select id from nv order by a, id"#,
        r#"2
5
1
6
3
4"#,
    ),
    (
        r#"select id from nv order by b desc, id"#,
        r#"4
5
1
2
6
3"#,
    ),
    (
        r#"select b, count(*) from nv group by b order by b"#,
        r#"-0.001|1
0.001|1
1.0|2
2.50|1
100|1"#,
    ),
    (r#"select count(distinct b) from nv"#, r#"5"#),
    (
        r#"select sum(a), avg(a), min(a), max(a), sum(b), avg(b), sum(c), avg(c) from nv"#,
        r#"12345777.50|2469155.500000000000|-2.50|12345679.00|104.500|17.4166666666666667|112360|22472.000000000000"#,
    ),
    (
        r#"select id, a * 2, a / 3, b + a, -b from nv where id in (1, 2, 5) order by id"#,
        r#"1|2.02|0.33666666666666666667|2.01|-1.0
2|-5.00|-0.83333333333333333333|-1.50|-1.00
5|0.00|0.00000000000000000000|2.50|-2.50"#,
    ),
    (
        r#"select id from nv where b = 1 order by id"#,
        r#"1
2"#,
    ),
    (
        r#"select id from nv where b = 1.000 order by id"#,
        r#"1
2"#,
    ),
    (
        r#"select id from nv where a between -3 and 1.01 order by id"#,
        r#"1
2
5"#,
    ),
    (r#"select id from nv where a > 99.99 order by a"#, r#"3"#),
    (
        r#"select id from nv where b < 0.01 order by b"#,
        r#"3
6"#,
    ),
    (
        r#"select x.id, y.id from nv x join nv y on x.b = y.b where x.id < y.id order by 1, 2"#,
        r#"1|2"#,
    ),
    (
        r#"select x.id, y.id from nv x join nv y on x.b = y.c where x.id <> y.id order by 1, 2"#,
        r#""#,
    ),
    (
        r#"select id from nv where b in (1, 2.5) order by id"#,
        r#"1
2
5"#,
    ),
    (r#"select id from nv where a = 1.01"#, r#"1"#),
    (
        r#"select round(avg(b), 3), sum(b * a) from nv"#,
        r#"17.417|-12347.06901"#,
    ),
];

fn check_table(s: &mut Session, when: &str) {
    for (sql, want) in TABLE_CASES {
        assert_eq!(outcome(s, sql), *want, "{when}: {sql}");
    }
}

fn plan(s: &mut Session, sql: &str) -> String {
    q(s, &format!("explain {sql}"))
}

/// Rows stored in both table kinds read back, order, group, aggregate and join as in
/// PostgreSQL; then again through an index on each numeric column, whose lookups and
/// range scans the planner takes; a write that overflows a column is refused.
#[test]
fn stored_grouped_and_indexed_in_both_table_kinds() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut s = session_of(&db, kind, 1);
        q(&mut s, SETUP);
        check_table(&mut s, &format!("{kind:?}"));
        q(
            &mut s,
            "create index nv_a on nv (a); create index nv_b on nv (b); create index nv_c on nv (c)",
        );
        for (sql, index) in [
            ("select id from nv where b = 1 order by id", "nv_b"),
            ("select id from nv where b = 1.000 order by id", "nv_b"),
            ("select id from nv where a > 99.99 order by a", "nv_a"),
            ("select id from nv where b < 0.01 order by b", "nv_b"),
            ("select id from nv where a = 1.01", "nv_a"),
            ("select id from nv where c >= 20 and c < 100000", "nv_c"),
        ] {
            let p = plan(&mut s, sql);
            assert!(
                p.contains(index),
                "{kind:?}: {sql} does not use {index}:\n{p}"
            );
        }
        check_table(&mut s, &format!("{kind:?}, indexed"));
        assert_eq!(
            q(
                &mut s,
                "select id from nv where c >= 20 and c < 100000 order by c"
            ),
            "2\n1"
        );
        // Writes past a column's precision are refused with PostgreSQL's error.
        for sql in [
            "insert into nv values (7, 123456789.5, 0, 0)",
            "update nv set a = a * 10000000 where id = 6",
            "insert into nv values (8, 1, 1, 1e6)",
        ] {
            let e = s.execute(sql).unwrap_err();
            assert_eq!(
                (e.code, e.message.as_str()),
                ("22003", "numeric field overflow"),
                "{sql}"
            );
        }
        let e = s
            .execute("insert into nv values (9, 'x', 1, 1)")
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22P02", "invalid input syntax for type numeric: \"x\"")
        );
        // An update moves the row within the index; a text literal takes the column's
        // type and scale.
        q(&mut s, "update nv set a = '99.999' where id = 6");
        assert_eq!(
            q(&mut s, "select id, a from nv where a >= 100 and a < 101"),
            "6|100.00"
        );
        check_unique(&mut s);
    }
}

/// A unique index on an unconstrained numeric holds 1.0 and 1.00 as one key.
fn check_unique(s: &mut Session) {
    q(s, "create table u (n numeric unique)");
    q(s, "insert into u values (1.0)");
    let e = s.execute("insert into u values (1.00)").unwrap_err();
    assert_eq!(e.code, "23505");
    q(s, "insert into u values (1.001), (-1)");
    assert_eq!(q(s, "select n from u order by n"), "-1\n1.0\n1.001");
}

/// Committed numeric rows survive a power loss (unsynced writes torn or dropped at
/// random) and read back the same, through their indexes too.
#[test]
fn rows_survive_a_crash_and_reopen() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let vfs = Arc::new(SimVfs::new(3));
        {
            let db = Database::create("db", options(&vfs)).unwrap();
            let mut s = session_of(&db, kind, 1);
            q(&mut s, SETUP);
            q(&mut s, "create index nv_b on nv (b)");
            vfs.crash_now();
        }
        vfs.restart(CrashMode::Random);
        let db = Database::open("db", options(&vfs)).unwrap();
        let mut s = Session::with_seed(&db, 1);
        check_table(&mut s, &format!("{kind:?}, after a crash"));
        assert!(plan(&mut s, "select id from nv where b = 1 order by id").contains("nv_b"));
    }
}

/// Numerics passed as a prepared statement's parameters are stored rounded to the
/// column, and found by value whatever their scale.
#[test]
fn prepared_parameters() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(&mut s, "create table p (a numeric(6,2), b numeric)");
    let ins = s.prepare("insert into p values ($1, $2)").unwrap();
    let n = |m: i128, scale: u16| Value::Numeric(Numeric::new(m, scale).unwrap());
    for row in [[n(12345, 3), n(-5, 1)], [n(-1, 0), n(123_456_789, 9)]] {
        s.execute_prepared(&ins, &row).unwrap();
    }
    let e = s
        .execute_prepared(&ins, &[n(10_000, 0), n(0, 0)])
        .unwrap_err();
    assert_eq!(e.code, "22003");
    assert_eq!(
        q(&mut s, "select * from p order by a"),
        "-1.00|0.123456789\n12.35|-0.5"
    );
    let get = s.prepare("select a from p where b = $1").unwrap();
    let r = s.execute_prepared(&get, &[n(-50, 2)]).unwrap();
    assert_eq!(r.rows, vec![vec![n(1235, 2)]]);
    let r = s.execute_prepared(&get, &[Value::Int4(0)]).unwrap();
    assert!(r.rows.is_empty());
}
