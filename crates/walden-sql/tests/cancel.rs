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

#[test]
fn statement_timeout_stops_long_statements_and_only_them() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int)").unwrap();
    s.execute("set statement_timeout = '200ms'").unwrap();
    assert_eq!(
        value::display(&s.execute_one("show statement_timeout").unwrap().rows[0][0]),
        "200ms"
    );
    for sql in [
        "select count(*) from generate_series(1, 300000000)",
        "select g from generate_series(1, 300000000) g order by g desc limit 1",
        "insert into t select g from generate_series(1, 300000000) g",
    ] {
        let started = std::time::Instant::now();
        let e = s.execute(sql).expect_err("timed out");
        assert_eq!(
            (e.code, e.message.as_str()),
            ("57014", "canceling statement due to statement timeout"),
            "{sql}"
        );
        assert!(started.elapsed() < Duration::from_secs(30), "{sql}");
    }
    // The timed-out insert left nothing, and short statements run.
    assert_eq!(count(&mut s, "t"), "0");
    s.execute("set statement_timeout = 0").unwrap();
    s.execute("insert into t select g from generate_series(1, 1000) g")
        .unwrap();
    assert_eq!(count(&mut s, "t"), "1000");
}

#[test]
fn client_settings_are_set_shown_or_refused() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let show = |s: &mut Session, name: &str| {
        let r = s.execute_one(&format!("show {name}")).unwrap();
        (r.columns[0].0.clone(), value::display(&r.rows[0][0]))
    };
    s.execute(
        "set application_name = 'psql'; set extra_float_digits = 3; set datestyle = 'ISO, DMY'",
    )
    .unwrap();
    s.execute(
        "set search_path = \"$user\", public; set time zone 'UTC'; set client_encoding to 'UTF8'",
    )
    .unwrap();
    assert_eq!(show(&mut s, "application_name").1, "psql");
    assert_eq!(
        show(&mut s, "datestyle"),
        ("DateStyle".into(), "ISO, DMY".into())
    );
    assert_eq!(show(&mut s, "search_path").1, "\"$user\", public");
    assert_eq!(show(&mut s, "server_version").1, "15.0");
    assert_eq!(show(&mut s, "TimeZone").1, "UTC");
    for (sql, code) in [
        ("set datestyle = 'German'", "0A000"),
        ("set time zone 'Europe/Paris'", "0A000"),
        ("set client_encoding = 'LATIN1'", "0A000"),
        ("set extra_float_digits = 9", "22023"),
        ("set server_version = '16'", "55P02"),
        ("set no_such_setting = 1", "42704"),
    ] {
        assert_eq!(s.execute(sql).unwrap_err().code, code, "{sql}");
    }
    let v = s.execute_one("select version()").unwrap();
    assert!(value::display(&v.rows[0][0]).starts_with("PostgreSQL 15.0 (Walden "));
}
