//! A full disk through SQL: the statement that does not fit fails with 53100 (not an
//! I/O error that fences the database), the session's next statements and reads go on,
//! a new session starts, and once space is freed inserts go on. What could go wrong: a
//! full disk that takes the whole database down, or an acknowledged row lost.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use walden::vfs::SimVfs;
use walden::Database;
use walden_sql::Session;

mod support;

#[test]
fn a_full_disk_fails_the_statement_and_nothing_else() {
    let vfs = Arc::new(SimVfs::new(9));
    let db = Database::create("db", support::options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (id int primary key, v text); checkpoint")
        .unwrap();
    vfs.set_capacity(Some(vfs.bytes_used() + (6 << 20)));
    let mut rows = 0i64;
    let err = loop {
        let sql = format!(
            "insert into t select g, repeat('x', 300) from generate_series({}, {}) g",
            rows + 1,
            rows + 100
        );
        match s.execute(&sql) {
            Ok(_) => rows += 100,
            Err(e) => break e,
        }
        assert!(rows < 1_000_000, "the disk never filled");
    };
    assert_eq!(err.code, "53100", "{}", err.message);
    assert!(!db.is_poisoned());
    assert!(rows > 0);
    // The session goes on: reads, and statements that write nothing new.
    assert_eq!(
        support::q(&mut s, "select count(*) from t"),
        rows.to_string()
    );
    assert_eq!(
        support::q(&mut s, "select count(*) from t where id = 1"),
        "1"
    );
    // A new session starts and reads.
    let mut other = Session::with_seed(&db, 2);
    assert_eq!(
        support::q(&mut other, "select max(id) from t"),
        rows.to_string()
    );
    // Space is freed: inserts go on.
    vfs.set_capacity(None);
    s.execute("insert into t values (-1, 'after')").unwrap();
    assert_eq!(
        support::q(&mut other, "select count(*) from t"),
        (rows + 1).to_string()
    );
}
