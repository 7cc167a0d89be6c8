//! What the SQL scenario tests share: a database on the simulated file layer, the last
//! statement's rows of a script as text, and (`pg`) a throwaway PostgreSQL 15 to compare with.
#![allow(dead_code, clippy::unwrap_used)]

pub mod pg;

use std::sync::Arc;

use walden::vfs::{CrashMode, SimVfs};
use walden::{Database, Options, TableKind};
use walden_sql::{value, Session};

/// A new database in memory (no background thread).
pub fn db() -> Database {
    Database::create(
        "db",
        Options {
            vfs: Arc::new(SimVfs::new(1)),
            background: false,
            ..Options::default()
        },
    )
    .unwrap()
}

/// A session whose tables are of `kind` unless a statement says otherwise.
pub fn session_of(db: &Database, kind: TableKind, seed: u64) -> Session {
    let mut s = Session::with_seed(db, seed);
    let k = match kind {
        TableKind::Heap => "heap",
        _ => "undo",
    };
    s.execute(&format!("set default_table_access_method = {k}"))
        .unwrap();
    s
}

/// At most 80 characters of a statement, for failure messages (some are megabytes).
pub fn short(sql: &str) -> String {
    match sql.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", &sql[..at]),
        None => sql.to_string(),
    }
}

/// Runs a script; returns the last statement's rows, as text, one line per row, columns
/// separated by `|`.
pub fn q(s: &mut Session, sql: &str) -> String {
    let r = s
        .execute(sql)
        .unwrap_or_else(|e| panic!("{}: {e}", short(sql)));
    r.last()
        .unwrap()
        .rows
        .iter()
        .map(|row| row.iter().map(value::display).collect::<Vec<_>>().join("|"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Options for a database named "db" on `vfs`, with no background thread (tests that
/// crash and reopen it).
pub fn options(vfs: &Arc<SimVfs>) -> Options {
    Options {
        vfs: vfs.clone(),
        background: false,
        ..Options::default()
    }
}

/// Crashes (every unsynced write lost) and opens the database "db" again.
pub fn crash(db: Database, vfs: &Arc<SimVfs>) -> Database {
    vfs.crash_now();
    drop(db);
    vfs.restart(CrashMode::DropUnsynced);
    Database::open("db", options(vfs)).unwrap()
}

/// A statement's last result's rows as text (values `|`-separated, rows on lines), or
/// `ERROR code: message`.
pub fn outcome(s: &mut Session, sql: &str) -> String {
    shown(s, sql, false)
}

/// As `outcome`, an error with its DETAIL: `ERROR code: message (detail)`.
pub fn outcome_with_detail(s: &mut Session, sql: &str) -> String {
    shown(s, sql, true)
}

fn shown(s: &mut Session, sql: &str, detail: bool) -> String {
    match s.execute(sql) {
        Ok(r) => r
            .last()
            .unwrap()
            .rows
            .iter()
            .map(|row| row.iter().map(value::display).collect::<Vec<_>>().join("|"))
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => match e.detail.clone().filter(|_| detail) {
            Some(d) => format!("ERROR {}: {} ({d})", e.code, e.message),
            None => format!("ERROR {}: {}", e.code, e.message),
        },
    }
}

/// Runs each (statement, what PostgreSQL 15 answered) and fails listing every one whose
/// outcome differs.
pub fn check_cases(s: &mut Session, cases: &[(&str, &str)]) {
    check_cases_by(s, cases, outcome)
}

/// As `check_cases`, each outcome written by `show`.
pub fn check_cases_by(
    s: &mut Session,
    cases: &[(&str, &str)],
    show: fn(&mut Session, &str) -> String,
) {
    let mut wrong = Vec::new();
    for (sql, want) in cases {
        let got = show(s, sql);
        if got != *want {
            wrong.push(format!("{sql}\n  want {want}\n  got  {got}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}

/// Runs `cases` in order on a new Walden session and, when PostgreSQL 15 is installed,
/// on a fresh PostgreSQL database `name`: each must give its outcome (as `outcome`
/// writes it) on both.
pub fn check_on_both(name: &str, cases: &[(&str, &str)]) {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    check_cases(&mut s, cases);
    let Some(cluster) = pg::cluster() else {
        eprintln!("{name}: {}", pg::SKIPPED);
        return;
    };
    let mut c = pg::fresh_database(&cluster, name);
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(sql, want)| {
            let got = pg::outcome(&mut c, sql);
            (got != *want).then(|| format!("{sql}\n  want {want}\n  PostgreSQL gave {got}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
