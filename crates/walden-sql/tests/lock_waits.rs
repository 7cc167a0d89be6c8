//! Waits for locks (a row another transaction changed, an advisory lock) end as
//! PostgreSQL's do: at `lock_timeout` (55P03), at `statement_timeout` and at a cancel
//! request (57014), leaving the block aborted and the holder's lock as it was. What
//! could go wrong is a wait nothing can stop, which holds a connection for as long as
//! another client keeps its transaction open.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use walden_sql::Session;

mod support;
use support::{db, q};

fn holder(db: &walden::Database) -> Session {
    let mut setup = Session::with_seed(db, 9);
    setup
        .execute("create table t (id int primary key, v int); insert into t values (1, 0)")
        .unwrap();
    let mut a = Session::with_seed(db, 1);
    a.execute("begin; update t set v = 1 where id = 1; select pg_advisory_lock(7)")
        .unwrap();
    a
}

#[test]
fn lock_timeout_ends_a_row_wait_and_an_advisory_wait() {
    let db = db();
    let mut a = holder(&db);
    let mut b = Session::with_seed(&db, 2);
    b.execute("set lock_timeout = '150ms'").unwrap();
    assert_eq!(q(&mut b, "show lock_timeout"), "150ms");
    for sql in [
        "update t set v = 2 where id = 1",
        "delete from t where id = 1",
        "select pg_advisory_lock(7)",
    ] {
        let started = Instant::now();
        let e = b.execute(sql).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("55P03", "canceling statement due to lock timeout"),
            "{sql}"
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{sql}");
    }
    // In a block: aborted; the holder's changes and lock stand.
    b.execute("begin").unwrap();
    assert_eq!(
        b.execute("update t set v = 3 where id = 1")
            .unwrap_err()
            .code,
        "55P03"
    );
    assert_eq!(b.execute("select 1").unwrap_err().code, "25P02");
    b.execute("rollback").unwrap();
    a.execute("commit").unwrap();
    assert_eq!(q(&mut b, "select v from t"), "1");
    assert_eq!(q(&mut b, "select pg_try_advisory_lock(7)"), "f");
}

#[test]
fn statement_timeout_and_cancel_end_a_row_wait() {
    let db = db();
    let mut a = holder(&db);
    let mut b = Session::with_seed(&db, 2);
    b.execute("set statement_timeout = '150ms'").unwrap();
    let e = b.execute("update t set v = 2 where id = 1").unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("57014", "canceling statement due to statement timeout")
    );
    b.execute("reset statement_timeout").unwrap();
    let cancel = b.cancel_handle();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        cancel.cancel();
    });
    let e = b.execute("update t set v = 2 where id = 1").unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("57014", "canceling statement due to user request")
    );
    canceller.join().unwrap();
    // The next statement runs (the request was for the one it stopped).
    a.execute("rollback").unwrap();
    b.execute("update t set v = 4 where id = 1").unwrap();
    assert_eq!(q(&mut b, "select v from t"), "4");
}
