//! SAVEPOINT, ROLLBACK TO, RELEASE and AND CHAIN as PostgreSQL 15 runs them: what
//! could go wrong is a rollback to a savepoint that keeps a row, an update or a unique
//! key made after it (or loses one made before), an error inside a block that a ROLLBACK
//! TO cannot recover from, a name found at the wrong depth (names repeat: the newest
//! wins), settings or cursors of a rolled-back savepoint that stay, and the errors
//! outside a block. Every outcome is PostgreSQL 15's, checked on PostgreSQL itself
//! when it is installed, and run again on undo tables.
#![allow(clippy::unwrap_used)]

use walden::TableKind;

mod support;
use support::{check_cases, check_on_both, db, session_of};

/// (statement, PostgreSQL 15's rows or error), in order.
const CASES: &[(&str, &str)] = &[
    ("create table t (id int primary key, v int)", ""),
    ("insert into t values (1, 10), (2, 20)", ""),
    // Outside a block.
    (
        "savepoint a",
        "ERROR 25P01: SAVEPOINT can only be used in transaction blocks",
    ),
    (
        "rollback to savepoint a",
        "ERROR 25P01: ROLLBACK TO SAVEPOINT can only be used in transaction blocks",
    ),
    (
        "release savepoint a",
        "ERROR 25P01: RELEASE SAVEPOINT can only be used in transaction blocks",
    ),
    (
        "commit and chain",
        "ERROR 25P01: COMMIT AND CHAIN can only be used in transaction blocks",
    ),
    (
        "rollback and chain",
        "ERROR 25P01: ROLLBACK AND CHAIN can only be used in transaction blocks",
    ),
    // Rows, updates and deletes after a savepoint go; before it they stay.
    ("begin", ""),
    ("insert into t values (3, 30)", ""),
    ("savepoint a", ""),
    ("insert into t values (4, 40)", ""),
    ("update t set v = 11 where id = 1", ""),
    ("delete from t where id = 2", ""),
    ("select * from t order by id", "1|11\n3|30\n4|40"),
    ("rollback to savepoint a", ""),
    ("select * from t order by id", "1|10\n2|20\n3|30"),
    // An error inside a savepoint: the block is aborted until ROLLBACK TO.
    ("savepoint b", ""),
    ("update t set v = v + 1", ""),
    (
        "insert into t values (1, 0)",
        "ERROR 23505: duplicate key value violates unique constraint \"t_pkey\"",
    ),
    (
        "select 1",
        "ERROR 25P02: current transaction is aborted, commands ignored until end of transaction block",
    ),
    (
        "release savepoint b",
        "ERROR 25P02: current transaction is aborted, commands ignored until end of transaction block",
    ),
    (
        "savepoint c",
        "ERROR 25P02: current transaction is aborted, commands ignored until end of transaction block",
    ),
    ("rollback to b", ""),
    ("select * from t order by id", "1|10\n2|20\n3|30"),
    // An update that breaks a unique key, taken back: the block goes on.
    (
        "update t set id = 2 where id = 1",
        "ERROR 23505: duplicate key value violates unique constraint \"t_pkey\"",
    ),
    ("rollback to b", ""),
    ("update t set v = 12 where id = 1", ""),
    ("select * from t order by id", "1|12\n2|20\n3|30"),
    ("rollback to b", ""),
    // The key rolled back is free; a savepoint stays set after a rollback to it.
    ("insert into t values (4, 41)", ""),
    ("rollback to b", ""),
    ("insert into t values (4, 42)", ""),
    ("release b", ""),
    (
        "rollback to b",
        "ERROR 3B001: savepoint \"b\" does not exist",
    ),
    ("rollback to a", ""),
    ("select * from t order by id", "1|10\n2|20\n3|30"),
    ("commit", ""),
    ("select * from t order by id", "1|10\n2|20\n3|30"),
    // Names repeat: the newest of a name is found, and RELEASE uncovers the older.
    ("begin", ""),
    ("savepoint s", ""),
    ("insert into t values (5, 50)", ""),
    ("savepoint s", ""),
    ("insert into t values (6, 60)", ""),
    ("rollback to s", ""),
    ("select id from t where id > 3 order by id", "5"),
    ("release s", ""),
    ("rollback to s", ""),
    ("select id from t where id > 3 order by id", ""),
    ("savepoint x", ""),
    ("savepoint y", ""),
    ("insert into t values (7, 70)", ""),
    ("release x", ""),
    (
        "rollback to y",
        "ERROR 3B001: savepoint \"y\" does not exist",
    ),
    (
        "rollback to x",
        "ERROR 3B001: savepoint \"x\" does not exist",
    ),
    ("rollback to s", ""),
    ("select id from t where id > 3 order by id", ""),
    ("commit", ""),
    // A released savepoint's rows commit with the block.
    ("begin", ""),
    ("savepoint a", ""),
    ("insert into t values (8, 80)", ""),
    ("release savepoint a", ""),
    ("commit", ""),
    ("select id from t where id > 3 order by id", "8"),
    // COMMIT of a block aborted inside a savepoint rolls back.
    ("begin", ""),
    ("savepoint a", ""),
    ("insert into t values (9, 90)", ""),
    (
        "select 1 / 0",
        "ERROR 22012: division by zero",
    ),
    ("commit", ""),
    ("select id from t where id > 3 order by id", "8"),
    // An aborted block with no savepoint has none to go back to.
    ("begin", ""),
    ("select 1 / 0", "ERROR 22012: division by zero"),
    (
        "rollback to a",
        "ERROR 3B001: savepoint \"a\" does not exist",
    ),
    ("rollback", ""),
    // Settings: a rollback to a savepoint undoes SET and SET LOCAL made after it.
    ("set work_mem = '2MB'", ""),
    ("begin", ""),
    ("set work_mem = '3MB'", ""),
    ("savepoint a", ""),
    ("set work_mem = '4MB'", ""),
    ("set local statement_timeout = '7s'", ""),
    ("rollback to a", ""),
    ("show work_mem", "3MB"),
    ("show statement_timeout", "0"),
    ("savepoint b", ""),
    ("set work_mem = '5MB'", ""),
    ("release b", ""),
    ("show work_mem", "5MB"),
    ("commit", ""),
    ("show work_mem", "5MB"),
    ("reset work_mem", ""),
    // A cursor declared after the savepoint closes with the rollback to it.
    ("begin", ""),
    ("declare early cursor for select id from t order by id", ""),
    ("savepoint a", ""),
    ("declare late cursor for select id from t order by id", ""),
    ("fetch 1 from late", "1"),
    ("rollback to a", ""),
    (
        "fetch 1 from late",
        "ERROR 34000: cursor \"late\" does not exist",
    ),
    ("rollback to a", ""),
    ("fetch 1 from early", "1"),
    ("commit", ""),
    // AND CHAIN: a new block at once, with the same isolation level.
    ("begin isolation level repeatable read", ""),
    ("insert into t values (10, 100)", ""),
    ("commit and chain", ""),
    ("show transaction_isolation", "repeatable read"),
    ("insert into t values (11, 110)", ""),
    ("rollback and chain", ""),
    ("show transaction_isolation", "repeatable read"),
    ("select id from t where id > 8 order by id", "10"),
    ("commit", ""),
    ("show transaction_isolation", "read committed"),
];

#[test]
fn savepoints_as_postgresql() {
    check_on_both("savepoints", CASES);
}

#[test]
fn savepoints_on_undo_tables() {
    let db = db();
    let mut s = session_of(&db, TableKind::Undo, 1);
    check_cases(&mut s, CASES);
}

fn copy_in(s: &mut walden_sql::Session, sql: &str) -> walden_sql::CopyIn {
    match s.copy_start(sql) {
        Ok(walden_sql::CopyStart::In(c)) => c,
        Ok(walden_sql::CopyStart::Out(_)) => panic!("{sql}: a COPY TO"),
        Err(e) => panic!("{sql}: {e}"),
    }
}

/// A COPY FROM that fails inside a savepoint (bad data, or the client's CopyFail)
/// leaves the block aborted, and a rollback to the savepoint goes on with the rows from
/// before it, as in PostgreSQL.
#[test]
fn a_failed_copy_inside_a_savepoint_is_taken_back_by_rollback_to() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut s = session_of(&db, kind, 1);
        s.execute("create table t (a int primary key, b text); begin; insert into t values (1, 'one'); savepoint s")
            .unwrap();
        let mut c = copy_in(&mut s, "copy t from stdin");
        c.data(&mut s, b"2\ttwo\n3\tthree\n").unwrap();
        c.data(&mut s, b"x\tbad\n").unwrap();
        assert_eq!(c.finish(&mut s).unwrap_err().code, "22P02", "{kind:?}");
        assert_eq!(s.execute("select 1").unwrap_err().code, "25P02", "{kind:?}");
        s.execute("rollback to s").unwrap();
        let mut c = copy_in(&mut s, "copy t from stdin");
        c.data(&mut s, b"4\tfour\n").unwrap();
        let e = c.fail(&mut s, "client gave up");
        assert_eq!(e.code, "57014", "{kind:?}");
        s.execute("rollback to s").unwrap();
        let mut c = copy_in(&mut s, "copy t from stdin");
        c.data(&mut s, b"5\tfive\n").unwrap();
        assert_eq!(c.finish(&mut s).unwrap().tag, "COPY 1", "{kind:?}");
        s.execute("commit").unwrap();
        assert_eq!(
            support::q(&mut s, "select string_agg(b, ',' order by a) from t"),
            "one,five",
            "{kind:?}"
        );
    }
}

/// The transaction statements prepared (as drivers send them over the extended
/// protocol: SQLAlchemy's `begin_nested`): described with no columns, and run.
#[test]
fn savepoint_statements_prepare_describe_and_run() {
    let db = db();
    let mut s = walden_sql::Session::with_seed(&db, 1);
    s.execute("create table t (a int); begin").unwrap();
    for sql in [
        "savepoint sa_savepoint_1",
        "insert into t values (1)",
        "rollback to savepoint sa_savepoint_1",
        "savepoint sa_savepoint_2",
        "insert into t values (2)",
        "release savepoint sa_savepoint_2",
        "commit",
    ] {
        let p = s.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let d = s.describe(&p).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert!(d.columns.is_empty(), "{sql}");
        s.execute_prepared(&p, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(support::q(&mut s, "select a from t"), "2");
}
