//! DDL inside transaction blocks as PostgreSQL 15 runs it: CREATE, ALTER and DROP of
//! tables, indexes and views taken back by ROLLBACK and by ROLLBACK TO SAVEPOINT, kept
//! by COMMIT; a dropped table's name used again in its block; an error inside the block
//! leaving nothing behind; a crash before the commit taking the changes back; another
//! session waiting for a block that altered a table. The scripted outcomes are
//! PostgreSQL 15's, checked on PostgreSQL itself when it is installed.
#![allow(clippy::unwrap_used)]

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use walden::vfs::SimVfs;
use walden::Database;
use walden_sql::Session;

mod support;
use support::{check_cases, check_on_both, crash, options, outcome, q};

const CASES: &[(&str, &str)] = &[
    ("create table kept (id int primary key, v text)", ""),
    ("insert into kept values (1, 'a'), (2, 'b')", ""),
    // Made, filled, altered, then rolled back: nothing stays.
    ("begin", ""),
    (
        "create table t (id serial primary key, name text not null)",
        "",
    ),
    ("insert into t (name) values ('x'), ('y')", ""),
    ("select id, name from t order by id", "1|x\n2|y"),
    ("alter table kept add column n int default 7", ""),
    ("create index kept_v on kept (v)", ""),
    ("create view vv as select id, n from kept", ""),
    ("select id, n from vv order by id", "1|7\n2|7"),
    ("rollback", ""),
    (
        "select count(*) from pg_class where relname in ('t', 't_pkey', 't_id_seq', 'kept_v', 'vv')",
        "0",
    ),
    ("select * from kept order by id", "1|a\n2|b"),
    (
        "select n from kept",
        "ERROR 42703: column \"n\" does not exist",
    ),
    // Dropped and made anew under the same name, committed.
    ("begin", ""),
    ("drop table kept", ""),
    ("create table kept (id int primary key, w int)", ""),
    ("insert into kept values (5, 50)", ""),
    ("commit", ""),
    ("select * from kept", "5|50"),
    ("insert into kept values (5, 1)", "ERROR 23505: duplicate key value violates unique constraint \"kept_pkey\""),
    // A savepoint takes back what came after it.
    ("begin", ""),
    ("create table a (x int)", ""),
    ("savepoint s", ""),
    ("create table b (x int)", ""),
    ("alter table a rename to a2", ""),
    ("drop table kept", ""),
    ("rollback to s", ""),
    ("insert into a values (1)", ""),
    ("commit", ""),
    ("select x from a", "1"),
    (
        "select count(*) from pg_class where relname in ('b', 'a2')",
        "0",
    ),
    ("select count(*) from kept", "1"),
    // An error inside the block: the block's changes go with the rollback.
    ("begin", ""),
    ("create table c (x int)", ""),
    (
        "create table c (x int)",
        "ERROR 42P07: relation \"c\" already exists",
    ),
    (
        "select 1",
        "ERROR 25P02: current transaction is aborted, commands ignored until end of transaction block",
    ),
    ("rollback", ""),
    ("select count(*) from pg_class where relname = 'c'", "0"),
    // CREATE TABLE AS and foreign keys inside a block.
    ("begin", ""),
    ("create table d as select 1 as x", ""),
    ("create table p (id int primary key)", ""),
    ("create table ch (id int references p)", ""),
    ("insert into p values (1)", ""),
    ("insert into ch values (1)", ""),
    (
        "insert into ch values (2)",
        "ERROR 23503: insert or update on table \"ch\" violates foreign key constraint \"ch_id_fkey\"",
    ),
    ("rollback", ""),
    (
        "select count(*) from pg_class where relname in ('d', 'p', 'ch')",
        "0",
    ),
    // DROP INDEX and DROP VIEW taken back.
    ("create table e (id int, v int)", ""),
    ("create unique index e_v on e (v)", ""),
    ("create view ev as select v from e", ""),
    ("begin", ""),
    ("drop view ev", ""),
    ("drop index e_v", ""),
    ("insert into e values (1, 1), (2, 1)", ""),
    ("rollback", ""),
    ("insert into e values (1, 1)", ""),
    (
        "insert into e values (2, 1)",
        "ERROR 23505: duplicate key value violates unique constraint \"e_v\"",
    ),
    ("select v from ev", "1"),
];

#[test]
fn ddl_in_transaction_blocks_as_postgresql() {
    check_on_both("transactional_ddl", CASES);
}

/// A crash before COMMIT takes the block's DDL back; a committed block's stays.
#[test]
fn a_crash_takes_back_an_uncommitted_blocks_ddl() {
    let vfs = Arc::new(SimVfs::new(3));
    let db = Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    check_cases(
        &mut s,
        &[
            ("create table kept (id int primary key)", ""),
            ("insert into kept values (1)", ""),
            ("begin", ""),
            ("create table done (x int)", ""),
            ("insert into done values (7)", ""),
            ("commit", ""),
            ("begin", ""),
            ("create table lost (x serial, y text)", ""),
            ("insert into lost (y) values ('z')", ""),
            ("drop table kept", ""),
            ("alter table done add column z int", ""),
            ("checkpoint", ""),
            ("create index lost_y on lost (y)", ""),
        ],
    );
    db.flush_wal().unwrap();
    std::mem::forget(s);
    let db = crash(db, &vfs);
    let mut s = Session::with_seed(&db, 2);
    check_cases(
        &mut s,
        &[
            ("select * from kept", "1"),
            ("select * from done", "7"),
            (
                "select count(*) from pg_class where relname in ('lost', 'lost_y', 'lost_x_seq')",
                "0",
            ),
            ("create table lost (x int)", ""),
        ],
    );
    assert_eq!(db.check().unwrap().problems, Vec::<String>::new());
}

/// Another session waits for a block that altered a table, then sees the committed
/// definition.
#[test]
fn another_session_waits_for_an_uncommitted_alter() {
    let db = support::db();
    let mut a = Session::with_seed(&db, 1);
    q(&mut a, "create table t (id int primary key)");
    q(&mut a, "insert into t values (1)");
    q(&mut a, "begin");
    q(&mut a, "alter table t add column extra int default 5");
    let (sent, got) = mpsc::channel();
    let other = db.clone();
    let reader = std::thread::spawn(move || {
        let mut b = Session::with_seed(&other, 2);
        sent.send(outcome(&mut b, "insert into t (id) values (2)"))
            .unwrap();
        sent.send(outcome(&mut b, "select id, extra from t order by id"))
            .unwrap();
    });
    assert!(
        got.recv_timeout(Duration::from_millis(300)).is_err(),
        "the other session did not wait"
    );
    q(&mut a, "commit");
    assert_eq!(got.recv_timeout(Duration::from_secs(10)).unwrap(), "");
    assert_eq!(
        got.recv_timeout(Duration::from_secs(10)).unwrap(),
        "1|5\n2|5"
    );
    reader.join().unwrap();
}
