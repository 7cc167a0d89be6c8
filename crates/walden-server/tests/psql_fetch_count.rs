//! psql's `FETCH_COUNT`: psql reads a query's result through a cursor (BEGIN; DECLARE
//! _psql_cursor NO SCROLL CURSOR FOR …; FETCH FORWARD n …; CLOSE; COMMIT) a batch at a
//! time. Before Walden had cursors psql failed at its DECLARE. Also an error in the
//! middle of the result: psql prints the batches before it, then the error, and the
//! session goes on. Needs psql (skipped with a message without it).

use std::path::Path;

use walden::{Database, Options};

mod support;
use support::{loopback_server, psql};

/// psql's output (stdout, then stderr) for `script`, reading results 1,000 rows at a
/// time.
fn run_psql(psql: &Path, conninfo: &str, script: &str) -> String {
    support::run_psql(psql, &["-v", "FETCH_COUNT=1000"], conninfo, script).1
}

#[test]
fn psql_reads_in_batches_with_fetch_count() {
    let Some(psql) = psql() else {
        eprintln!("SKIPPED: needs psql (scripts/install-postgres.sh)");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open_or_create(dir.path().join("db"), Options::default()).expect("db");
    walden_sql::Session::new(&db)
        .execute(
            "create role fetcher login password 'batches'; \
             create table big (id int primary key, note text); \
             insert into big select g, 'row ' || g from generate_series(1, 5000) g; \
             grant select on big to fetcher",
        )
        .expect("setup");
    let server = loopback_server(&db);
    let port = server.local_addr().expect("tcp").port();
    let conninfo =
        format!("host=127.0.0.1 port={port} user=fetcher password=batches dbname=walden");
    // 5,000 rows in five batches, every one in order.
    let out = run_psql(&psql, &conninfo, "select id, note from big order by id");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5000, "{}", &out[..out.len().min(500)]);
    assert_eq!(lines[0], "1|row 1");
    assert_eq!(lines[4999], "5000|row 5000");
    // An error in the third batch: the first two are printed, then the error; the
    // session reads on.
    let out = run_psql(&psql, &conninfo, "select 1 / (id - 2500) from big");
    assert!(
        out.contains("ERROR:  division by zero"),
        "{}",
        &out[out.len().saturating_sub(500)..]
    );
    assert!(out.lines().count() >= 2000, "{}", out.lines().count());
    let out = run_psql(&psql, &conninfo, "select count(*) from big where id > 4000");
    assert_eq!(out.trim(), "1000");
    // Nothing is left open.
    let mut s = walden_sql::Session::new(&db);
    let r = s
        .execute("select count(*) from pg_cursors")
        .expect("pg_cursors");
    assert_eq!(
        walden_sql::value::display(&r[0].rows[0][0]),
        "0",
        "cursors left open"
    );
    server.shutdown();
    db.close().expect("close");
}
