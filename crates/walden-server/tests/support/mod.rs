//! What the server's client tests share: a server on a free loopback port, and psql
//! from the installed PostgreSQL 15 (None without it).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use walden::Database;
use walden_server::{Server, ServerConfig};

/// A server for `db` on 127.0.0.1 at a free port, with the default settings (TCP
/// clients authenticate); the port is `server.local_addr()`'s.
pub fn loopback_server(db: &Database) -> Server {
    Server::start(
        db.clone(),
        ServerConfig {
            listen: Some("127.0.0.1:0".parse().expect("address")),
            ..ServerConfig::default()
        },
    )
    .expect("server starts")
}

/// PostgreSQL 15's psql, if installed (scripts/install-postgres.sh).
pub fn psql() -> Option<PathBuf> {
    let p = Path::new("/usr/lib/postgresql/15/bin/psql");
    p.exists().then(|| p.to_path_buf())
}

/// Runs psql (unaligned, no headers, no psqlrc, `options` before the connection) with
/// `sql` as its command: whether it succeeded, and its stdout then stderr.
pub fn run_psql(psql: &Path, options: &[&str], conninfo: &str, sql: &str) -> (bool, String) {
    let out = Command::new(psql)
        .args(["-X", "-A", "-t"])
        .args(options)
        .args([conninfo, "-c", sql])
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("psql runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}
