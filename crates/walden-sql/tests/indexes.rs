//! Indexes in SQL: the DDL (CREATE/DROP INDEX, UNIQUE and PRIMARY KEY constraints, ALTER
//! TABLE, REINDEX) with PostgreSQL's errors, and the planner's use of them, which EXPLAIN
//! shows. What could go wrong: a statement read through an index returning other rows
//! than a scan (the differential test checks that at random; here the shapes the planner
//! takes apart), or DDL that half-happens.
#![allow(clippy::unwrap_used)]

use walden_sql::Session;

mod support;
use support::{db, q};

fn err(s: &mut Session, sql: &str) -> (String, String) {
    let e = s.execute(sql).unwrap_err();
    (e.code.to_string(), e.message)
}

fn plan(s: &mut Session, sql: &str) -> String {
    q(s, &format!("explain {sql}"))
}

fn filled(s: &mut Session) {
    q(
        s,
        "create table t (id int primary key, v int, name text unique);
         insert into t select g, g % 10, 'n' || g from generate_series(1, 3000) g;
         insert into t values (5000, null, null);
         create index t_v on t (v, id);",
    );
}

#[test]
fn queries_read_through_indexes() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    filled(&mut s);
    let cases = [
        // (query, the plan's scan line, the rows)
        (
            "select * from t where id = 5",
            "Index Scan using t_pkey on t",
            "5|5|n5",
        ),
        (
            "select id from t where id in (7, 3, null, 3) order by id",
            "Index Scan using t_pkey on t",
            "3\n7",
        ),
        (
            "select id from t where id between 10 and 13 order by id desc",
            "Index Scan Backward using t_pkey on t",
            "13\n12\n11\n10",
        ),
        (
            "select id from t where v = 3 and id > 2980",
            "Index Scan using t_v on t",
            "2983\n2993",
        ),
        (
            "select id from t where v = 3 order by id desc limit 2",
            "Index Scan Backward using t_v on t",
            "2993\n2983",
        ),
        (
            "select id from t order by id desc limit 2",
            "Index Scan Backward using t_pkey on t",
            "5000\n3000",
        ),
        // NULLs sort last ascending, first descending, as ORDER BY's defaults.
        (
            "select id from t order by v desc, id desc limit 2",
            "Index Scan Backward using t_v on t",
            "5000\n2999",
        ),
        ("select min(id) from t", "Index Scan using t_pkey on t", "1"),
        (
            "select max(v) from t",
            "Index Scan Backward using t_v on t",
            "9",
        ),
        (
            "select id from t where name = 'n42'",
            "Index Scan using t_name_key on t",
            "42",
        ),
        (
            "select count(*) from t where id < 10.5",
            "Seq Scan on t",
            "10",
        ),
        (
            "select count(*) from t where v + 0 = 3",
            "Seq Scan on t",
            "300",
        ),
    ];
    for (sql, scan, rows) in cases {
        let p = plan(&mut s, sql);
        assert!(p.contains(scan), "{sql}: {p}");
        assert_eq!(q(&mut s, sql), rows, "{sql}");
    }
    // The conditions the index read uses, as PostgreSQL writes them.
    let conds = [
        ("select * from t where id = 5", "Index Cond: (id = 5)"),
        (
            "select id from t where id in (7, 3, null, 3)",
            "Index Cond: (id = ANY ('{3,7}'))",
        ),
        (
            "select id from t where v = 3 and id > 2980",
            "Index Cond: (v = 3) AND (id > 2980)",
        ),
        (
            "select id from t where name = 'n42'",
            "Index Cond: (name = 'n42'::text)",
        ),
        (
            "delete from t where id between 1 and 4",
            "Index Cond: (id >= 1) AND (id <= 4)",
        ),
    ];
    for (sql, cond) in conds {
        let p = plan(&mut s, sql);
        assert!(p.contains(cond), "{sql}: {p}");
    }
    // UPDATE and DELETE find their rows through the index too; a changed key moves
    // the row's entry.
    assert!(plan(&mut s, "update t set v = 1 where id = 7").contains("Index Scan using t_pkey"));
    assert!(plan(&mut s, "delete from t where name = 'n8'").contains("Index Scan using t_name_key"));
    q(&mut s, "update t set id = id + 10000 where id < 5");
    assert_eq!(
        q(&mut s, "select id from t where id > 9999 order by id"),
        "10001\n10002\n10003\n10004"
    );
    q(&mut s, "delete from t where name in ('n8', 'n9')");
    assert_eq!(q(&mut s, "select count(*) from t where id in (8, 9)"), "0");
    assert_eq!(q(&mut s, "select count(*) from t"), "2999");
}

#[test]
fn index_ddl_behaves_as_in_postgresql() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    filled(&mut s);
    // A unique index over repeated values is refused and leaves nothing behind.
    let (code, msg) = err(&mut s, "create unique index t_v_u on t (v)");
    assert_eq!(code, "23505", "{msg}");
    q(&mut s, "create unique index t_v_u on t (id, v)");
    let (code, _) = err(&mut s, "create index t_v_u on t (v)");
    assert_eq!(code, "42P07");
    let r = s
        .execute_one("create index if not exists t_v_u on t (v)")
        .unwrap();
    assert!(r.notices[0].contains("already exists, skipping"), "{r:?}");
    q(&mut s, "drop index t_v_u");
    let r = s.execute_one("drop index if exists t_v_u").unwrap();
    assert!(r.notices[0].contains("does not exist, skipping"), "{r:?}");
    assert_eq!(err(&mut s, "drop index t_v_u").0, "42704");
    // The primary key's index goes with its constraint only.
    assert_eq!(err(&mut s, "drop index t_pkey").0, "2BP01");
    assert_eq!(err(&mut s, "alter table t add primary key (v)").0, "42P16");
    q(&mut s, "alter table t drop constraint t_pkey");
    // A primary key holds no NULL (the row with v NULL refuses it).
    assert_eq!(
        err(&mut s, "alter table t add primary key (v, id)").0,
        "23502"
    );
    q(&mut s, "alter table t add primary key (id)");
    assert_eq!(
        err(&mut s, "insert into t values (null, 1, 'x')").0,
        "23502"
    );
    assert_eq!(err(&mut s, "insert into t values (1, 1, 'x')").0, "23505");
    // UNIQUE constraints: named as PostgreSQL names them, enforced.
    q(
        &mut s,
        "create table u (a int unique, b text, c int, constraint u_bc unique (b, c))",
    );
    q(
        &mut s,
        "insert into u values (1, 'x', 1), (2, 'x', 2), (null, 'y', null), (null, 'y', null)",
    );
    let (code, msg) = err(&mut s, "insert into u values (1, 'z', 5)");
    assert_eq!(
        (code.as_str(), msg.as_str()),
        (
            "23505",
            "duplicate key value violates unique constraint \"u_a_key\""
        )
    );
    assert_eq!(err(&mut s, "insert into u values (3, 'x', 2)").0, "23505");
    // A CREATE TABLE whose constraint cannot be made leaves no table.
    assert_eq!(
        err(&mut s, "create table w (a int unique, b int unique (a))").0,
        "42601"
    );
    assert_eq!(err(&mut s, "create table w (a int, unique (z))").0, "42703");
    assert_eq!(err(&mut s, "select * from w").0, "42P01");
    // DDL does not run inside a transaction block.
    q(&mut s, "begin");
    assert_eq!(err(&mut s, "create index u_c on u (c)").0, "25001");
    q(&mut s, "rollback");
    // REINDEX rebuilds, and queries read the same rows through the new tree.
    q(&mut s, "reindex table t; reindex index u_a_key");
    assert_eq!(q(&mut s, "select count(*) from t where v = 3"), "300");
    assert_eq!(q(&mut s, "select b, c from u where a = 2"), "x|2");
    assert_eq!(err(&mut s, "reindex index nope").0, "42704");
    assert_eq!(err(&mut s, "reindex database x").0, "0A000");
    // Index kinds and options Walden lacks are named.
    assert_eq!(err(&mut s, "create index on t using hash (v)").0, "42704");
    assert_eq!(err(&mut s, "create index on t (v desc)").0, "0A000");
    assert_eq!(err(&mut s, "create index on t ((v + 1))").0, "0A000");
    assert_eq!(err(&mut s, "create index on t (nope)").0, "42703");
}

#[test]
fn indexes_survive_reopening() {
    use std::sync::Arc;
    let vfs = Arc::new(walden::vfs::SimVfs::new(1));
    let opts = || walden::Options {
        vfs: vfs.clone(),
        background: false,
        ..walden::Options::default()
    };
    {
        let db = walden::Database::create("db", opts()).unwrap();
        let mut s = Session::with_seed(&db, 1);
        filled(&mut s);
        q(&mut s, "reindex index t_v");
        drop(s);
        db.close().unwrap();
    }
    let db = walden::Database::open("db", opts()).unwrap();
    let mut s = Session::with_seed(&db, 1);
    assert!(plan(&mut s, "select * from t where v = 2").contains("t_v"));
    assert_eq!(q(&mut s, "select count(*) from t where v = 2"), "300");
    assert_eq!(err(&mut s, "insert into t values (3, 1, 'q')").0, "23505");
}
