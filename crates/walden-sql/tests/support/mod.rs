//! What the SQL scenario tests share: a database on the simulated file layer, the last
//! statement's rows of a script as text, and (`pg`) a throwaway PostgreSQL 15 to compare with.
#![allow(dead_code, clippy::unwrap_used)]

pub mod pg;

use std::sync::Arc;

use walden::vfs::SimVfs;
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
