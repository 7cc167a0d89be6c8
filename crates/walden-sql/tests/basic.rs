//! End-to-end SQL on a simulated database: what could go wrong is any statement giving a
//! result PostgreSQL would not give.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use walden::vfs::SimVfs;
use walden::{Database, Options, TableKind};
use walden_sql::Session;

mod support;
use support::q;

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
        "7|3|-1|3.0||abcd"
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
            "create materialized view v as select 1",
            "0A000",
            "CREATE MATERIALIZED VIEW is not supported",
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
    let e = s
        .execute("select 1 where generate_series(1, 3) > 1")
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("0A000", "set-returning functions are not allowed in WHERE")
    );
    // A failed statement aborts the block.
    s.execute("begin; insert into t values (5, 'z')").unwrap();
    assert!(s.execute("select 1/0").is_err());
    assert_eq!(s.execute("select 1").unwrap_err().code, "25P02");
    assert_eq!(tag(&mut s, "commit"), "ROLLBACK");
    assert_eq!(q(&mut s, "select count(*) from t"), "1");
}

fn kind(db: &Database, table: &str) -> &'static str {
    db.table_kind(table).unwrap().name()
}

fn show(s: &mut Session, setting: &str) -> String {
    q(s, &format!("show {setting}"))
}

#[test]
fn using_names_the_table_kind() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(
        tag(&mut s, "create table h (a int) using heap"),
        "CREATE TABLE"
    );
    assert_eq!(
        tag(&mut s, "create table u (a int, b text) USING undo"),
        "CREATE TABLE"
    );
    assert_eq!(
        tag(&mut s, "create table z (a int) using zheap"),
        "CREATE TABLE"
    );
    assert_eq!(
        tag(&mut s, "create table za using zheap as select 1 a, 'x' b"),
        "SELECT 1"
    );
    assert_eq!(
        tag(&mut s, "create table ua using undo as select 1 a"),
        "SELECT 1"
    );
    assert_eq!(
        tag(&mut s, "create table ha using heap as select 1 a"),
        "SELECT 1"
    );
    assert_eq!(tag(&mut s, "create table d (a int)"), "CREATE TABLE");
    let kinds: Vec<(&str, &str)> = ["h", "u", "z", "za", "ua", "ha", "d"]
        .into_iter()
        .map(|t| (t, kind(&db, t)))
        .collect();
    assert_eq!(
        kinds,
        [
            ("h", "heap"),
            ("u", "undo"),
            ("z", "undo"),
            ("za", "undo"),
            ("ua", "undo"),
            ("ha", "heap"),
            ("d", "undo")
        ]
    );
    // IF NOT EXISTS on an existing table keeps it as it is.
    assert_eq!(
        tag(&mut s, "create table if not exists h (a int) using undo"),
        "CREATE TABLE"
    );
    assert_eq!(kind(&db, "h"), "heap");
    // Undo tables answer as heap tables do.
    s.execute("insert into u values (1, 'a'), (2, 'b'), (3, null)")
        .unwrap();
    assert_eq!(
        tag(&mut s, "update u set b = b || a where a >= 2"),
        "UPDATE 2"
    );
    assert_eq!(tag(&mut s, "delete from u where a = 1"), "DELETE 1");
    assert_eq!(q(&mut s, "select a, b from u order by a"), "2|b2\n3|");
    assert_eq!(q(&mut s, "select a, b from za"), "1|x");
}

#[test]
fn default_table_kind_decides_without_using() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(show(&mut s, "default_table_kind"), "undo");
    assert_eq!(tag(&mut s, "set default_table_kind = heap"), "SET");
    assert_eq!(show(&mut s, "default_table_kind"), "heap");
    assert_eq!(tag(&mut s, "set default_table_kind = undo"), "SET");
    assert_eq!(show(&mut s, "default_table_kind"), "undo");
    s.execute(
        "create table u (a int); create table ua as select 1 a; create table h (a int) using heap",
    )
    .unwrap();
    assert_eq!(
        (kind(&db, "u"), kind(&db, "ua"), kind(&db, "h")),
        ("undo", "undo", "heap")
    );
    assert_eq!(tag(&mut s, "set default_table_kind to 'heap'"), "SET");
    s.execute("create table h2 (a int)").unwrap();
    assert_eq!(kind(&db, "h2"), "heap");
    s.execute("set default_table_kind = zheap").unwrap();
    assert_eq!(show(&mut s, "default_table_kind"), "undo");
    let e = s.execute("set default_table_kind = btree").unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "22023",
            "invalid value for parameter \"default_table_kind\": \"btree\""
        )
    );
    assert_eq!(show(&mut s, "default_table_kind"), "undo");
    let all = q(&mut s, "show all");
    assert!(all.contains("\ndefault_table_kind|undo|"), "{all}");
    assert!(all.contains("\nundo_limit|-1|"), "{all}");
    assert!(all.contains("\nundo_memory|268435456|"), "{all}");
    // A new session starts from the database's default.
    let mut s2 = Session::with_seed(&db, 1);
    assert_eq!(show(&mut s2, "default_table_kind"), "undo");

    // A database whose default kind is heap.
    let heap_db = Database::create(
        "db",
        Options {
            vfs: Arc::new(SimVfs::new(2)),
            background: false,
            default_table_kind: TableKind::Heap,
            ..Options::default()
        },
    )
    .unwrap();
    let mut s = Session::with_seed(&heap_db, 1);
    assert_eq!(show(&mut s, "default_table_kind"), "heap");
    s.execute("create table t (a int)").unwrap();
    assert_eq!(kind(&heap_db, "t"), "heap");
}

#[test]
fn unknown_access_method_is_an_error() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    for (sql, name, position) in [
        ("create table x (a int) using btree", "btree", 30),
        (
            "create table x using columnar as select 1 a",
            "columnar",
            22,
        ),
        // A quoted name keeps its case, and kinds are lower case.
        ("create table x (a int) using \"UNDO\"", "UNDO", 30),
    ] {
        let e = s.execute(sql).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                "42704",
                format!("access method \"{name}\" does not exist").as_str()
            ),
            "{sql}"
        );
        assert_eq!(e.position, Some(position), "{sql}");
        assert_eq!(
            e.hint.as_deref(),
            Some("Walden's table kinds: heap, undo (zheap is an alias of undo)."),
            "{sql}"
        );
    }
    assert!(db.table_names().is_empty());
}

#[test]
fn undo_limit_set_show() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    // No bound by default (undo past undo_memory goes to files).
    assert_eq!(show(&mut s, "undo_limit"), "-1");
    assert_eq!(db.undo_limit(), u64::MAX);
    for (value, bytes) in [
        ("'64MB'", 64u64 << 20),
        ("'1GB'", 1 << 30),
        ("'2TB'", 2 << 40),
        ("'512kB'", 512 << 10),
        ("'1.5kB'", 1536),
        ("' 10 MB '", 10 << 20),
        ("'100B'", 100),
        ("1048576", 1 << 20),
        ("'4096'", 4096),
    ] {
        assert_eq!(tag(&mut s, &format!("set undo_limit = {value}")), "SET");
        assert_eq!(show(&mut s, "undo_limit"), bytes.to_string(), "{value}");
        assert_eq!(db.undo_limit(), bytes, "{value}");
    }
    // As in PostgreSQL, units are case-sensitive.
    for value in [
        "'64mb'",
        "'1 GiB'",
        "'lots'",
        "''",
        "'MB'",
        "'99999999999TB'",
    ] {
        let e = s.execute(&format!("set undo_limit = {value}")).unwrap_err();
        assert_eq!(e.code, "22023", "{value}");
        assert!(
            e.message
                .starts_with("invalid value for parameter \"undo_limit\""),
            "{value}: {e}"
        );
    }
    assert_eq!(show(&mut s, "undo_limit"), "4096");
    s.execute("set undo_limit to '1GB'").unwrap();
    assert_eq!(db.undo_limit(), 1 << 30);
    s.execute("set undo_limit = -1").unwrap();
    assert_eq!(db.undo_limit(), u64::MAX);
    // The memory budget: bytes, and no "-1" (it is not a bound one can lift).
    assert_eq!(show(&mut s, "undo_memory"), "268435456");
    s.execute("set undo_memory = '64MB'").unwrap();
    assert_eq!(
        (db.undo_memory(), show(&mut s, "undo_memory")),
        (64 << 20, "67108864".to_string())
    );
    assert_eq!(s.execute("set undo_memory = -1").unwrap_err().code, "22023");
    // The buffer pool is chosen at open: shown, not changed.
    assert_eq!(
        show(&mut s, "buffer_pool_size"),
        db.buffer_pool_bytes().to_string()
    );
    assert!(db.buffer_pool_bytes() > 0);
    let e = s.execute("set buffer_pool_size = '1GB'").unwrap_err();
    assert_eq!(
        e.message, "parameter \"buffer_pool_size\" cannot be changed",
        "{e}"
    );
}

#[test]
fn undo_full_fails_the_statement_and_changes_nothing() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t using undo as select generate_series a, generate_series b, lpad('x',100,'x') g from generate_series(1,20000)").unwrap();
    let before = "20000|200010000|t";
    let check = "select count(*), sum(b), min(g) = max(g) and min(g) = lpad('x',100,'x') from t";
    assert_eq!(q(&mut s, check), before);
    // The old values of 20,000 rows of about 120 bytes do not fit in 1 MB of undo.
    s.execute("set undo_limit = '1MB'").unwrap();
    let update = "update t set g = lpad('y',100,'y'), b = b + 1";
    let e = s.execute(update).unwrap_err();
    assert_eq!(e.code, "53400", "{e}");
    assert!(e.message.starts_with("undo log full: "), "{e}");
    assert!(e.message.contains("1048576"), "{e}");
    assert_eq!(q(&mut s, check), before);
    // In a transaction block it aborts the block, and the block's earlier changes go too.
    s.execute("begin; update t set b = 0 where a = 1").unwrap();
    assert_eq!(s.execute(update).unwrap_err().code, "53400");
    assert_eq!(s.execute("select 1").unwrap_err().code, "25P02");
    assert_eq!(tag(&mut s, "commit"), "ROLLBACK");
    assert_eq!(q(&mut s, check), before);
    // Nothing is held once the failed transactions are gone; a higher limit lets it run.
    assert_eq!(db.undo_bytes(), 0);
    s.execute("set undo_limit = '64MB'").unwrap();
    assert_eq!(tag(&mut s, update), "UPDATE 20000");
    s.set_statement_stats(true);
    let r = s.execute_one(update).unwrap();
    let stats = r.stats.unwrap();
    // The second time only b changes: the undo holds the changed column, not the rows.
    assert_eq!(stats.undo_records, 20_000);
    assert!(
        (20_000 * 4..20_000 * 100).contains(&stats.undo_bytes),
        "{}",
        stats.undo_bytes
    );
    assert_eq!(
        q(
            &mut s,
            "select count(*), sum(b), min(g) = max(g) and min(g) = lpad('y',100,'y') from t"
        ),
        "20000|200050000|t"
    );
}

#[test]
fn seed_workload_small_on_an_undo_table() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(tag(&mut s, "create table demoz using zheap as select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(0,0);"), "SELECT 1");
    assert_eq!(tag(&mut s, "insert into demoz select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(1,10000);"), "INSERT 0 10000");
    assert_eq!(kind(&db, "demoz"), "undo");
    assert_eq!(tag(&mut s, "update demoz set b=b+1;"), "UPDATE 10001");
    s.set_statement_stats(true);
    let r = s
        .execute_one("update demoz set b=b+1 where mod(a,10)=1;")
        .unwrap();
    assert_eq!(r.tag, "UPDATE 1000");
    let stats = r.stats.unwrap();
    assert!(stats.undo_bytes > 0 && stats.undo_records > 0, "{stats:?}");
    assert_eq!(
        q(
            &mut s,
            "select count(*), sum(b) - sum(a), min(g) = lpad('x',100,'x') from demoz"
        ),
        "10001|11001|t"
    );
    assert_eq!(tag(&mut s, "delete from demoz;"), "DELETE 10001");
    assert_eq!(tag(&mut s, "vacuum demoz;"), "VACUUM");
    assert_eq!(tag(&mut s, "checkpoint;"), "CHECKPOINT");
    assert_eq!(q(&mut s, "select count(*) from demoz"), "0");
}

/// A text longer than a page (10 MB) is stored out of line: inserted, read, kept by an
/// update of another column, replaced, rolled back, deleted; on both table kinds. An
/// index on it is refused with PostgreSQL's error, and the table is unchanged.
#[test]
fn values_longer_than_a_page() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut s = Session::with_seed(&db, 1);
        let using = match kind {
            TableKind::Heap => "heap",
            TableKind::Undo => "undo",
        };
        s.execute(&format!(
            "create table docs (id int primary key, n int, body text, raw bytea) using {using}"
        ))
        .unwrap();
        tag(
            &mut s,
            "insert into docs values (1, 0, repeat('walden ', 1500000), decode(repeat('00ff', 300000), 'hex')), (2, 0, 'short', null)",
        );
        assert_eq!(
            q(&mut s, "select id, length(body), length(raw), body = repeat('walden ', 1500000) from docs order by id"),
            "1|10500000|600000|t\n2|5||f"
        );
        assert_eq!(tag(&mut s, "update docs set n = n + 1"), "UPDATE 2");
        assert_eq!(
            q(
                &mut s,
                "select n, length(body), substr(body, 10499994) from docs where id = 1"
            ),
            "1|10500000|walden "
        );
        s.execute("begin").unwrap();
        tag(&mut s, "update docs set body = body || 'more' where id = 1");
        assert_eq!(
            q(&mut s, "select length(body) from docs where id = 1"),
            "10500004"
        );
        s.execute("rollback").unwrap();
        assert_eq!(
            q(&mut s, "select length(body) from docs where id = 1"),
            "10500000"
        );
        let e = s
            .execute("create index docs_body on docs (body)")
            .unwrap_err();
        assert_eq!(e.code, "54000", "{e}");
        assert_eq!(q(&mut s, "select count(*) from docs"), "2");
        assert_eq!(tag(&mut s, "delete from docs where id = 1"), "DELETE 1");
        tag(&mut s, "vacuum docs");
        assert_eq!(q(&mut s, "select id, body from docs"), "2|short");
        let report = db.check().unwrap();
        assert!(report.is_clean(), "{using}: {:?}", report.problems);
    }
}
