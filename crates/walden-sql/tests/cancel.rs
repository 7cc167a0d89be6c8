//! Canceling a running statement from another thread through `Session::cancel_handle`:
//! what could go wrong is a long statement (a scan, a series, a sort, a write) that never
//! looks at the request, a canceled write that stays, a block that is not aborted as
//! PostgreSQL aborts it (25P02 until ROLLBACK), or a request that outlives its statement
//! and cancels the next one.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use walden_sql::{value, CancelHandle, Session, SqlError};

mod support;
use support::db;

fn count(s: &mut Session, table: &str) -> String {
    let r = s
        .execute_one(&format!("select count(*) from {table}"))
        .unwrap();
    value::display(&r.rows[0][0])
}

/// Runs `sql`, which would take minutes, while another thread cancels it. A request made
/// before the statement starts is dropped at its start, so the thread repeats it until
/// the statement has returned. Returns the statement's error.
fn run_canceled(s: &mut Session, sql: &str) -> SqlError {
    let handle: CancelHandle = s.cancel_handle();
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                handle.cancel();
            }
        });
        let r = s.execute(sql);
        done.store(true, Ordering::Relaxed);
        r.expect_err("the statement was canceled")
    })
}

fn assert_canceled(e: &SqlError, sql: &str) {
    assert_eq!(
        (e.code, e.message.as_str()),
        ("57014", "canceling statement due to user request"),
        "{sql}"
    );
}

#[test]
fn a_canceled_statement_fails_and_its_writes_are_rolled_back() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int, b text)").unwrap();
    s.execute("insert into t select g, 'x' || g from generate_series(1, 200000) g")
        .unwrap();
    for sql in [
        "select count(*) from generate_series(1, 300000000)",
        "select g from generate_series(1, 300000000) g order by g desc limit 1",
        "select a % 7, count(*) from generate_series(1, 300000000) a group by 1",
        "insert into t select g, 'y' from generate_series(1, 300000000) g",
        // Over the table: a scan and sort, writes row by row, and rows read, then written.
        "select a from t order by b desc",
        "update t set b = b || 'z'",
        "delete from t where a > 0",
        "truncate t",
        "insert into t select a, b from t",
    ] {
        let e = run_canceled(&mut s, sql);
        assert_canceled(&e, sql);
        assert!(!s.in_transaction_block());
        assert_eq!(count(&mut s, "t"), "200000", "{sql}");
    }
    // Every row is as the first insert wrote it.
    let r = s
        .execute_one("select count(*) from t where b = 'x' || a")
        .unwrap();
    assert_eq!(value::display(&r.rows[0][0]), "200000");
}

#[test]
fn a_canceled_statement_aborts_its_transaction_block() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int)").unwrap();
    s.execute("begin").unwrap();
    s.execute("insert into t values (1), (2)").unwrap();
    let sql = "select count(*) from generate_series(1, 300000000)";
    let e = run_canceled(&mut s, sql);
    assert_canceled(&e, sql);
    assert!(s.in_failed_block());
    let e = s.execute("select 1").unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "25P02",
            "current transaction is aborted, commands ignored until end of transaction block"
        )
    );
    assert_eq!(s.execute_one("rollback").unwrap().tag, "ROLLBACK");
    assert!(!s.in_transaction_block());
    assert_eq!(count(&mut s, "t"), "0");
}

#[test]
fn a_request_made_while_idle_is_dropped() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let handle = s.cancel_handle();
    handle.cancel();
    assert!(handle.is_requested());
    let r = s
        .execute_one("select count(*) from generate_series(1, 1000)")
        .unwrap();
    assert_eq!(value::display(&r.rows[0][0]), "1000");
    assert!(!handle.is_requested());
    // The flag a signal handler would set is the handle's own.
    handle.flag().store(true, Ordering::Relaxed);
    assert!(handle.is_requested());
}

/// A session owns its database handle and transaction: it moves to another thread
/// between statements, with its transaction block open.
#[test]
fn a_session_moves_between_threads_with_its_block_open() {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<Session>();
    let db = db();
    let mut s = Session::new(&db);
    s.execute("create table m (a int); begin; insert into m values (1)")
        .unwrap();
    let mut s = std::thread::spawn(move || {
        s.execute("insert into m values (2); commit").unwrap();
        s
    })
    .join()
    .unwrap();
    let r = s.execute_one("select count(*) from m").unwrap();
    assert_eq!(walden_sql::value::display(&r.rows[0][0]), "2");
}
