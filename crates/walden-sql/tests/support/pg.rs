//! A throwaway PostgreSQL 15 cluster for the tests that check Walden against PostgreSQL
//! itself, and clients connected to fresh databases of it. Without PostgreSQL 15 installed
//! those tests say "skipped: PostgreSQL 15 not found" and pass.

use walden_pgcluster::{find_major, Cluster};

/// The version whose behaviour Walden follows.
pub const MAJOR: u32 = 15;

/// The message a test prints when it cannot run its PostgreSQL side.
pub const SKIPPED: &str = "skipped: PostgreSQL 15 not found";

/// Settings for speed. The cluster's data is thrown away, so nothing needs to reach disk.
/// The least planning effort for the genetic join planner: sqllogictest's select5 joins
/// up to 64 tables, and at the default effort planning them takes half a minute (a plan
/// changes how rows are found, never which).
const SETTINGS: [(&str, &str); 5] = [
    ("geqo_effort", "1"),
    ("fsync", "off"),
    ("synchronous_commit", "off"),
    ("full_page_writes", "off"),
    ("shared_buffers", "64MB"),
];

/// A started cluster, or None when PostgreSQL 15 is not installed. A server that is
/// installed but does not start is a failure, not a skip.
pub fn cluster() -> Option<Cluster> {
    let bindir = find_major(MAJOR)?;
    match Cluster::start(&bindir, &SETTINGS) {
        Ok(cluster) => Some(cluster),
        Err(e) => panic!(
            "PostgreSQL {MAJOR} in {} did not start: {e}",
            bindir.display()
        ),
    }
}

/// Creates database `name` (dropping one of that name first) and connects to it.
pub fn fresh_database(cluster: &Cluster, name: &str) -> postgres::Client {
    let mut admin = connect(cluster, "postgres");
    // One statement per call: a query string of several runs them in one transaction
    // block, where CREATE DATABASE is refused.
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin
            .batch_execute(&sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    connect(cluster, name)
}

/// A client of database `name` over the cluster's socket.
pub fn connect(cluster: &Cluster, name: &str) -> postgres::Client {
    postgres::Client::connect(&cluster.connection_string(name), postgres::NoTls)
        .unwrap_or_else(|e| panic!("connecting to {name}: {e}"))
}

/// A statement's outcome on PostgreSQL, as `support::outcome` gives Walden's: its rows
/// (`|` between values, a line per row; none for a command), or `ERROR code: message`.
pub fn outcome(c: &mut postgres::Client, sql: &str) -> String {
    match c.simple_query(sql) {
        Err(e) => {
            let e = e.as_db_error().unwrap();
            format!("ERROR {}: {}", e.code().code(), e.message())
        }
        Ok(messages) => row_lines(&messages).join("\n"),
    }
}

/// The rows among a simple query's messages, a line each with `|` between values (NULL
/// as the empty string).
pub fn row_lines(messages: &[postgres::SimpleQueryMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("").to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect()
}
