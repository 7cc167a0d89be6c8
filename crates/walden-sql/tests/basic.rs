//! End-to-end SQL on a simulated database: what could go wrong is any statement giving a
//! result PostgreSQL would not give.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use walden::vfs::SimVfs;
use walden::{Database, Options};
use walden_sql::{value, Session};

fn db() -> Database {
    let vfs = SimVfs::new(1);
    Database::create(
        "db",
        Options {
            vfs: Arc::new(vfs),
            background: false,
            ..Options::default()
        },
    )
    .unwrap()
}

/// Runs a script; returns the last statement's rows, as text, one line per row.
fn q(s: &mut Session, sql: &str) -> String {
    let r = s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let last = r.last().unwrap();
    last.rows
        .iter()
        .map(|row| row.iter().map(value::display).collect::<Vec<_>>().join("|"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn tag(s: &mut Session, sql: &str) -> String {
    s.execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .last()
        .unwrap()
        .tag
        .clone()
}

#[test]
fn seed_workload_small() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(tag(&mut s, "create table demo as select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(0,0);"), "SELECT 1");
    assert_eq!(tag(&mut s, "insert into demo select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(1,10000);"), "INSERT 0 10000");
    assert_eq!(
        q(
            &mut s,
            "select count(*), sum(a), sum(b), min(g) = lpad('x',100,'x') from demo"
        ),
        "10001|50005000|50005000|t"
    );
    assert_eq!(tag(&mut s, "update demo set b=b+1;"), "UPDATE 10001");
    assert_eq!(
        tag(&mut s, "update demo set b=b+1 where mod(a,10)=1;"),
        "UPDATE 1000"
    );
    assert_eq!(q(&mut s, "select sum(b) - sum(a) from demo"), "11001");
    assert_eq!(tag(&mut s, "delete from demo;"), "DELETE 10001");
    assert_eq!(tag(&mut s, "vacuum demo;"), "VACUUM");
    assert_eq!(tag(&mut s, "checkpoint;"), "CHECKPOINT");
    assert_eq!(q(&mut s, "select count(*) from demo"), "0");
}

#[test]
fn expressions_and_grouping() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(
        q(
            &mut s,
            "select 1+2*3, 7/2, -7%3, 1.5*2, 'a'||1||null, 'ab'||'cd'"
        ),
        "7|3|-1|3||abcd"
    );
    assert_eq!(q(&mut s, "select case when 1>2 then 'x' when 2>1 then 'y' end, coalesce(null, 3), abs(-4), upper('aé'), length('héllo')"), "y|3|4|AÉ|5");
    assert_eq!(q(&mut s, "select '12'::int + 1, cast(3.7 as int), 5::text || 'x', substr('hello', 2, 3), md5('a')"), "13|4|5x|ell|0cc175b9c0f1b6a831c399e269772661");
    s.execute("create table t (id serial primary key, k int, v text not null)")
        .unwrap();
    s.execute("insert into t (k, v) values (1, 'a'), (2, 'b'), (1, 'c'), (null, 'd')")
        .unwrap();
    assert_eq!(
        q(
            &mut s,
            "select k, count(*), min(v), max(id) from t group by k order by k"
        ),
        "1|2|a|3\n2|1|b|2\n|1|d|4"
    );
    assert_eq!(
        q(
            &mut s,
            "select k, count(*) c from t group by k having count(*) > 1"
        ),
        "1|2"
    );
    assert_eq!(
        q(&mut s, "select v from t order by id desc limit 2 offset 1"),
        "c\nb"
    );
    assert_eq!(
        q(&mut s, "select avg(k), sum(k) from t"),
        "1.3333333333333333|4"
    );
    assert_eq!(
        q(&mut s, "select count(*) from t where k is null or k in (2)"),
        "2"
    );
    assert_eq!(
        q(
            &mut s,
            "select generate_series from generate_series(1,3) order by 1 desc"
        ),
        "3\n2\n1"
    );
}

#[test]
fn errors_are_postgres_like_and_change_nothing() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int not null, b varchar(3))")
        .unwrap();
    s.execute("insert into t values (1, 'x')").unwrap();
    let cases = [
        ("selec 1", "42601", "syntax error at or near \"selec\""),
        (
            "select nope from t",
            "42703",
            "column \"nope\" does not exist",
        ),
        (
            "select * from nope",
            "42P01",
            "relation \"nope\" does not exist",
        ),
        ("select 1/0", "22012", "division by zero"),
        (
            "insert into t values (null, 'y')",
            "23502",
            "null value in column \"a\" of relation \"t\" violates not-null constraint",
        ),
        (
            "insert into t values (2, 'long')",
            "22001",
            "value too long for type character varying(3)",
        ),
        (
            "insert into t values ('x', 'y')",
            "22P02",
            "invalid input syntax for type integer: \"x\"",
        ),
        (
            "select a + b from t",
            "42883",
            "operator does not exist: integer + text",
        ),
        (
            "create trigger x after insert on t for each row execute function f()",
            "0A000",
            "CREATE TRIGGER is not supported",
        ),
        (
            "create index i on t (a)",
            "0A000",
            "CREATE INDEX is not supported",
        ),
        ("update t set a = a / 0", "22012", "division by zero"),
    ];
    for (sql, code, msg) in cases {
        let e = s.execute(sql).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (code, msg), "{sql}");
    }
    assert_eq!(q(&mut s, "select a, b from t"), "1|x");
    let e = s.execute("select 1 from t where nope = 1").unwrap_err();
    assert_eq!(e.position, Some(23));
    // Runtime errors have no position; a statement cut short points at its end.
    assert_eq!(s.execute("select 1/0").unwrap_err().position, None);
    let e = s.execute("select 1 +").unwrap_err();
    assert_eq!(
        (e.message.as_str(), e.position),
        ("syntax error at end of input", Some(11))
    );
    let e = s.execute("select generate_series(1, 3)").unwrap_err();
    assert_eq!(e.code, "0A000");
    // A failed statement aborts the block.
    s.execute("begin; insert into t values (5, 'z')").unwrap();
    assert!(s.execute("select 1/0").is_err());
    assert_eq!(s.execute("select 1").unwrap_err().code, "25P02");
    assert_eq!(tag(&mut s, "commit"), "ROLLBACK");
    assert_eq!(q(&mut s, "select count(*) from t"), "1");
}
