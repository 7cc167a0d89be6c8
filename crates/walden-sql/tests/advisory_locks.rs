//! Advisory locks (`pg_advisory_lock` and its family) across sessions: what could go
//! wrong is a lock two sessions both hold, a session blocked by its own lock, a
//! transaction-level lock that outlives its transaction or a session-level one that
//! dies with it, the two key spaces (one bigint, two ints) mixed up, a lock left behind
//! by a session that ended, and a cycle through an advisory lock and a row lock that
//! waits forever instead of failing with 40P01, as PostgreSQL's does.
#![allow(clippy::unwrap_used)]

use std::sync::mpsc;
use std::time::Duration;

use walden_sql::Session;

mod support;
use support::{check_on_both, db, q};

/// One session's advisory locks as PostgreSQL 15 answers them (checked on PostgreSQL
/// itself when it is installed).
#[test]
fn one_session_as_postgresql() {
    check_on_both(
        "advisory",
        &[
            ("select pg_advisory_lock(4294967301)", ""),
            ("select pg_advisory_lock_shared(-1, 2)", ""),
            ("select pg_try_advisory_lock(4294967301)", "t"),
            (
                "select locktype, classid, objid, objsubid, mode, granted from pg_locks \
                 where locktype = 'advisory' order by objsubid",
                "advisory|1|5|1|ExclusiveLock|t\nadvisory|4294967295|2|2|ShareLock|t",
            ),
            ("select pg_advisory_unlock(4294967301)", "t"),
            ("select pg_advisory_unlock(4294967301)", "t"),
            ("select pg_advisory_unlock(4294967301)", "f"),
            ("select pg_advisory_unlock(-1, 2)", "f"),
            ("select pg_advisory_unlock_shared(-1, 2)", "t"),
            ("begin", ""),
            ("select pg_advisory_xact_lock(9)", ""),
            ("select pg_try_advisory_xact_lock_shared(9)", "t"),
            (
                "select count(*) from pg_locks where locktype = 'advisory'",
                "2",
            ),
            ("commit", ""),
            (
                "select count(*) from pg_locks where locktype = 'advisory'",
                "0",
            ),
            ("select pg_advisory_lock(1, 1)", ""),
            ("select pg_advisory_unlock_all()", ""),
            (
                "select count(*) from pg_locks where locktype = 'advisory'",
                "0",
            ),
        ],
    );
}

#[test]
fn sessions_exclude_and_share_as_postgresql() {
    let db = db();
    let (mut a, mut b) = (Session::with_seed(&db, 1), Session::with_seed(&db, 2));
    assert_eq!(q(&mut a, "select pg_advisory_lock(1)"), "");
    assert_eq!(q(&mut b, "select pg_try_advisory_lock(1)"), "f");
    // A session never blocks itself; its holds are counted.
    assert_eq!(q(&mut a, "select pg_try_advisory_lock(1)"), "t");
    assert_eq!(q(&mut a, "select pg_advisory_unlock(1)"), "t");
    assert_eq!(q(&mut b, "select pg_try_advisory_lock(1)"), "f");
    assert_eq!(q(&mut a, "select pg_advisory_unlock(1)"), "t");
    assert_eq!(q(&mut a, "select pg_advisory_unlock(1)"), "f");
    // A session-level lock outlives the transaction that took it.
    assert_eq!(q(&mut b, "begin; select pg_try_advisory_lock(1)"), "t");
    q(&mut b, "rollback");
    assert_eq!(q(&mut a, "select pg_try_advisory_lock(1)"), "f");
    // The two key spaces are apart.
    assert_eq!(q(&mut a, "select pg_try_advisory_lock(0, 1)"), "t");
    // Shared holds share; an exclusive one waits for them.
    assert_eq!(q(&mut a, "select pg_try_advisory_lock_shared(7)"), "t");
    assert_eq!(q(&mut b, "select pg_try_advisory_lock_shared(7)"), "t");
    assert_eq!(q(&mut b, "select pg_try_advisory_lock(7)"), "f");
    assert_eq!(q(&mut a, "select pg_advisory_unlock_shared(7)"), "t");
    assert_eq!(q(&mut b, "select pg_try_advisory_lock(7)"), "t");
    // A transaction-level lock goes with its transaction, commit or rollback.
    q(&mut a, "begin; select pg_advisory_xact_lock(5)");
    assert_eq!(q(&mut b, "select pg_try_advisory_xact_lock(5)"), "f");
    assert_eq!(q(&mut a, "select pg_advisory_unlock(5)"), "f");
    q(&mut a, "commit");
    assert_eq!(
        q(&mut b, "begin; select pg_try_advisory_xact_lock_shared(5)"),
        "t"
    );
    assert_eq!(q(&mut a, "select pg_try_advisory_lock(5)"), "f");
    q(&mut b, "rollback");
    assert_eq!(q(&mut a, "select pg_try_advisory_lock(5)"), "t");
    // A session's end releases its locks; unlock_all too.
    drop(b);
    let mut c = Session::with_seed(&db, 3);
    assert_eq!(q(&mut c, "select pg_try_advisory_lock(1)"), "t");
    assert_eq!(q(&mut a, "select pg_advisory_unlock_all()"), "");
    assert_eq!(q(&mut c, "select pg_try_advisory_lock(5)"), "t");
    assert_eq!(q(&mut c, "select pg_try_advisory_lock(0, 1)"), "t");
}

#[test]
fn a_waiter_goes_on_when_the_lock_is_released() {
    let db = db();
    let mut a = Session::with_seed(&db, 1);
    q(&mut a, "select pg_advisory_lock(3)");
    let (done_tx, done) = mpsc::channel();
    let db2 = db.clone();
    let waiter = std::thread::spawn(move || {
        let mut b = Session::with_seed(&db2, 2);
        q(&mut b, "select pg_advisory_lock(3)");
        done_tx.send(()).unwrap();
        q(&mut b, "select pg_advisory_unlock(3)")
    });
    assert!(done.recv_timeout(Duration::from_millis(200)).is_err());
    q(&mut a, "select pg_advisory_unlock(3)");
    done.recv_timeout(Duration::from_secs(20))
        .expect("the waiter took the lock");
    assert_eq!(waiter.join().unwrap(), "t");
}

/// A holds a row (an uncommitted update), B holds an advisory lock and waits for A's
/// row; A then asks for B's advisory lock: a cycle, which fails A with 40P01 (as in
/// PostgreSQL, whoever closes it), and B goes on once A's block rolls back.
#[test]
fn a_cycle_through_an_advisory_lock_and_a_row_is_a_deadlock() {
    let db = db();
    let mut setup = Session::with_seed(&db, 9);
    setup
        .execute("create table t (id int primary key, v int); insert into t values (1, 0)")
        .unwrap();
    let mut a = Session::with_seed(&db, 1);
    a.execute("begin; update t set v = 1 where id = 1").unwrap();
    let (locked_tx, locked) = mpsc::channel();
    let db2 = db.clone();
    let b = std::thread::spawn(move || {
        let mut b = Session::with_seed(&db2, 2);
        b.execute("begin; select pg_advisory_lock(42)").unwrap();
        locked_tx.send(()).unwrap();
        // Waits for A's row.
        let r = b.execute("update t set v = 2 where id = 1");
        let _ = b.execute("commit");
        r.map(|_| ()).map_err(|e| e.code)
    });
    locked.recv_timeout(Duration::from_secs(20)).unwrap();
    // Time for B to start waiting on the row.
    std::thread::sleep(Duration::from_millis(300));
    let e = a.execute("select pg_advisory_lock(42)").unwrap_err();
    assert_eq!((e.code, e.message.as_str()), ("40P01", "deadlock detected"));
    a.execute("rollback").unwrap();
    assert_eq!(b.join().unwrap(), Ok(()));
    assert_eq!(q(&mut setup, "select v from t"), "2");
}

/// A wait for an advisory lock ends at statement_timeout (57014) and leaves the block
/// aborted; the lock stays with its holder.
#[test]
fn a_wait_ends_at_statement_timeout() {
    let db = db();
    let (mut a, mut b) = (Session::with_seed(&db, 1), Session::with_seed(&db, 2));
    q(&mut a, "select pg_advisory_lock(11)");
    b.execute("set statement_timeout = '200ms'; begin").unwrap();
    let e = b.execute("select pg_advisory_xact_lock(11)").unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("57014", "canceling statement due to statement timeout")
    );
    assert_eq!(b.execute("select 1").unwrap_err().code, "25P02");
    b.execute("rollback; reset statement_timeout").unwrap();
    assert_eq!(q(&mut b, "select pg_try_advisory_lock(11)"), "f");
}

/// `pg_locks` lists the advisory locks held, as PostgreSQL does: both key spaces, the
/// mode, and the holding session.
#[test]
fn pg_locks_lists_advisory_locks() {
    let db = db();
    let (mut a, mut b) = (Session::with_seed(&db, 1), Session::with_seed(&db, 2));
    q(&mut a, "select pg_advisory_lock(4294967301)");
    q(&mut b, "select pg_advisory_lock_shared(-1, 2)");
    let rows = q(
        &mut a,
        "select locktype, classid, objid, objsubid, mode, granted from pg_locks \
         where locktype = 'advisory' order by objsubid",
    );
    assert_eq!(
        rows,
        "advisory|1|5|1|ExclusiveLock|t\nadvisory|4294967295|2|2|ShareLock|t"
    );
    let pids = q(
        &mut a,
        "select count(distinct pid) from pg_locks where locktype = 'advisory'",
    );
    assert_eq!(pids, "2");
    q(&mut a, "select pg_advisory_unlock_all()");
    drop(b);
    assert_eq!(q(&mut a, "select count(*) from pg_locks"), "0");
}

/// An ordinary role (not a superuser) takes and releases advisory locks, sets and
/// rolls back to savepoints in tables it was granted, and meets the same READ ONLY
/// refusal, as in PostgreSQL, where none of these asks for a privilege of its own.
#[test]
fn an_ordinary_role_uses_savepoints_read_only_blocks_and_advisory_locks() {
    let db = db();
    let mut admin = Session::with_seed(&db, 9);
    admin
        .execute(
            "create role bob login; create table jobs (id int primary key, done bool); \
             insert into jobs values (1, false), (2, false); \
             grant select, update, insert on jobs to bob",
        )
        .unwrap();
    let (mut a, mut b) = (Session::with_seed(&db, 1), Session::with_seed(&db, 2));
    for s in [&mut a, &mut b] {
        s.execute("set session authorization bob").unwrap();
    }
    assert_eq!(q(&mut a, "select current_user"), "bob");
    assert_eq!(q(&mut a, "select pg_try_advisory_lock(1)"), "t");
    assert_eq!(q(&mut b, "select pg_try_advisory_lock(1)"), "f");
    a.execute("begin; update jobs set done = true where id = 1; savepoint s")
        .unwrap();
    a.execute("update jobs set done = true where id = 2")
        .unwrap();
    assert_eq!(a.execute("delete from jobs").unwrap_err().code, "42501");
    a.execute("rollback to s; commit").unwrap();
    assert_eq!(q(&mut b, "select id from jobs where done order by id"), "1");
    b.execute("begin read only").unwrap();
    assert_eq!(
        b.execute("insert into jobs values (3, false)")
            .unwrap_err()
            .code,
        "25006"
    );
    b.execute("rollback").unwrap();
    assert_eq!(q(&mut a, "select pg_advisory_unlock(1)"), "t");
    assert_eq!(q(&mut b, "select pg_try_advisory_lock(1)"), "t");
}
