//! Table locks as PostgreSQL 15 takes them: LOCK TABLE in each mode (only inside a
//! block; READ ONLY blocks too), `pg_locks` listing them; every
//! statement's own locks held to the end of its transaction, so a DROP waits for a
//! transaction that read the table, readers wait for an uncommitted ALTER, NOWAIT fails
//! at once and a cycle of table locks is a deadlock. The scripted outcomes are
//! PostgreSQL 15's, checked on PostgreSQL itself when it is installed.
#![allow(clippy::unwrap_used)]

use std::sync::mpsc;
use std::time::Duration;

use walden_sql::Session;

mod support;
use support::{check_on_both, outcome, q};

const CASES: &[(&str, &str)] = &[
    ("create table t (a int)", ""),
    ("create table u (a int)", ""),
    (
        "lock table t",
        "ERROR 25P01: LOCK TABLE can only be used in transaction blocks",
    ),
    ("begin", ""),
    ("lock table t in access share mode", ""),
    ("lock t, u in share row exclusive mode nowait", ""),
    (
        "select l.mode from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 't' order by l.mode",
        "AccessShareLock\nShareRowExclusiveLock",
    ),
    ("commit", ""),
    (
        "select count(*) from pg_locks l join pg_class c on c.oid = l.relation where c.relname in ('t', 'u')",
        "0",
    ),
    ("begin read only", ""),
    ("lock table t in access share mode", ""),
    ("lock table t in row exclusive mode", ""),
    // (PostgreSQL allows every mode in a READ ONLY transaction: it writes nothing.)
    ("lock table t in exclusive mode", ""),
    ("rollback", ""),
    ("begin", ""),
    (
        "lock table nosuch",
        "ERROR 42P01: relation \"nosuch\" does not exist",
    ),
    ("rollback", ""),
    ("begin", ""),
    ("insert into t values (1)", ""),
    (
        "select l.mode from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 't'",
        "RowExclusiveLock",
    ),
    ("commit", ""),
];

#[test]
fn lock_table_as_postgresql() {
    check_on_both("table_locks", CASES);
}

/// Runs `sql` on a new session of `db` in another thread; the receiver gets each
/// statement's outcome as it finishes.
fn other(db: &walden::Database, sql: &'static [&'static str]) -> mpsc::Receiver<String> {
    let (sent, got) = mpsc::channel();
    let db = db.clone();
    std::thread::spawn(move || {
        let mut s = Session::with_seed(&db, 9);
        for stmt in sql {
            if sent.send(outcome(&mut s, stmt)).is_err() {
                return;
            }
        }
    });
    got
}

fn waits(got: &mpsc::Receiver<String>) {
    assert!(
        got.recv_timeout(Duration::from_millis(300)).is_err(),
        "the other session did not wait"
    );
}

fn next(got: &mpsc::Receiver<String>) -> String {
    got.recv_timeout(Duration::from_secs(10)).unwrap()
}

#[test]
fn a_drop_waits_for_a_transaction_that_read_the_table() {
    let db = support::db();
    let mut a = Session::with_seed(&db, 1);
    q(&mut a, "create table t (a int)");
    q(&mut a, "insert into t values (1)");
    q(&mut a, "begin");
    assert_eq!(q(&mut a, "select a from t"), "1");
    let got = other(&db, &["drop table t"]);
    waits(&got);
    // The reader still reads the table it began with.
    assert_eq!(q(&mut a, "select a from t"), "1");
    q(&mut a, "commit");
    assert_eq!(next(&got), "");
    assert_eq!(
        outcome(&mut a, "select a from t"),
        "ERROR 42P01: relation \"t\" does not exist"
    );
}

#[test]
fn nowait_fails_at_once_and_a_cycle_is_a_deadlock() {
    let db = support::db();
    let mut a = Session::with_seed(&db, 1);
    q(&mut a, "create table t1 (a int); create table t2 (a int)");
    q(&mut a, "begin");
    q(&mut a, "lock table t1 in exclusive mode");
    let got = other(
        &db,
        &[
            "begin",
            "lock table t1 in share mode nowait",
            "rollback",
            "begin",
            "lock table t2 in exclusive mode",
            "lock table t1 in exclusive mode",
            "rollback",
        ],
    );
    assert_eq!(next(&got), "");
    assert_eq!(
        next(&got),
        "ERROR 55P03: could not obtain lock on relation \"t1\""
    );
    assert_eq!(next(&got), "");
    assert_eq!(next(&got), "");
    assert_eq!(next(&got), "");
    // The other session now waits for t1; waiting for its t2 closes the cycle.
    waits(&got);
    let mine = outcome(&mut a, "lock table t2 in exclusive mode");
    q(&mut a, "rollback");
    let theirs = next(&got);
    assert!(
        mine.starts_with("ERROR 40P01") || theirs.starts_with("ERROR 40P01"),
        "{mine} / {theirs}"
    );
    assert_eq!(next(&got), "");
}

#[test]
fn lock_timeout_ends_a_wait_for_a_table_lock() {
    let db = support::db();
    let mut a = Session::with_seed(&db, 1);
    q(&mut a, "create table t (a int)");
    q(&mut a, "begin");
    q(&mut a, "alter table t add column b int");
    let got = other(&db, &["set lock_timeout = '100ms'", "select * from t"]);
    assert_eq!(next(&got), "");
    assert_eq!(
        next(&got),
        "ERROR 55P03: canceling statement due to lock timeout"
    );
    q(&mut a, "rollback");
}

/// An ordinary role locks a table only with the privileges PostgreSQL asks for each
/// mode (SELECT for ACCESS SHARE; UPDATE, DELETE or TRUNCATE for EXCLUSIVE), and its DDL
/// inside a block (CREATE on the schema granted, as PostgreSQL 15 asks) is taken back
/// by the rollback as the superuser's is.
#[test]
fn an_ordinary_role_locks_with_its_privileges_and_rolls_back_its_ddl() {
    let db = support::db();
    let mut admin = Session::with_seed(&db, 9);
    q(
        &mut admin,
        "create role bob login; create table t (a int); create table hidden (a int); \
         grant select on t to bob; grant create on schema public to bob",
    );
    let mut b = Session::with_seed(&db, 1);
    q(&mut b, "set session authorization bob");
    q(&mut b, "begin");
    q(&mut b, "lock table t in access share mode");
    assert_eq!(
        outcome(&mut b, "lock table t in exclusive mode"),
        "ERROR 42501: permission denied for table t"
    );
    q(&mut b, "rollback");
    q(&mut b, "begin");
    assert_eq!(
        outcome(&mut b, "lock table hidden in access share mode"),
        "ERROR 42501: permission denied for table hidden"
    );
    q(&mut b, "rollback");
    q(
        &mut b,
        "begin; create table mine (a int); insert into mine values (1)",
    );
    assert_eq!(q(&mut b, "select a from mine"), "1");
    q(&mut b, "rollback");
    assert_eq!(
        q(
            &mut admin,
            "select count(*) from pg_class where relname = 'mine'"
        ),
        "0"
    );
}
