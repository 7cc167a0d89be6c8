//! The virtual catalog under the queries psql 15 sends for `\d` and friends (captured in
//! `crates/walden-cli/tests/fixtures/psql15`): what could go wrong is a query psql
//! relies on failing, or answering with rows that differ from PostgreSQL's.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use walden::vfs::SimVfs;
use walden::{Database, Options, Value};
use walden_sql::Session;

fn db() -> Database {
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

const SCHEMA: &str = "create table t (a serial primary key, b int not null default 5, c text,
  d varchar(10) unique, e char(3), f bigint, g smallint, h double precision,
  i boolean default true, j uuid);
create index t_c on t(c);
create index t_bf on t (b, f);";

/// The queries of a `psql -E` capture, in order.
fn captured(name: &str) -> Vec<String> {
    let path = format!(
        "{}/../walden-cli/tests/fixtures/psql15/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        match (line, &mut cur) {
            ("********* QUERY **********", _) => cur = Some(String::new()),
            ("**************************", Some(q)) => {
                out.push(q.trim_end().to_string());
                cur = None;
            }
            (l, Some(q)) => {
                q.push_str(l);
                q.push('\n');
            }
            _ => {}
        }
    }
    out
}

/// The queries for policies, extended statistics and publications use arrays (`array(…)`,
/// `= any(array)`, subscripts), which Walden does not have; it has none of those
/// objects either.
const SKIPPED: &[&str] = &[
    "FROM pg_catalog.pg_policy",
    "FROM pg_catalog.pg_statistic_ext",
    "FROM pg_catalog.pg_publication",
];

fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    let r = s.execute_one(sql).unwrap_or_else(|e| panic!("{e}\n{sql}"));
    r.rows
        .iter()
        .map(|r| r.iter().map(text).collect())
        .collect()
}

fn oid(s: &mut Session, name: &str) -> String {
    rows(
        s,
        &format!("select oid from pg_class where relname = '{name}'"),
    )[0][0]
        .clone()
}

/// Runs the captured queries with PostgreSQL's OIDs (`16385` for t, `16393` for t_pkey)
/// replaced by Walden's.
fn run_all(s: &mut Session, capture: &str) -> Vec<Vec<Vec<String>>> {
    let (t, pkey) = (oid(s, "t"), oid(s, "t_pkey"));
    captured(capture)
        .iter()
        .filter(|q| !SKIPPED.iter().any(|s| q.contains(s)))
        .map(|q| {
            let q = q.replace("16385", &t).replace("16393", &pkey);
            rows(s, &q)
        })
        .collect()
}

#[test]
fn list_queries_answer_as_postgres() {
    let db = db();
    let mut s = Session::new(&db);
    s.execute(SCHEMA).unwrap();
    let all = run_all(&mut s, "d");
    assert_eq!(
        all[0],
        vec![
            vec!["public", "t", "table", "postgres"],
            vec!["public", "t_a_seq", "sequence", "postgres"],
        ]
    );
    assert_eq!(
        run_all(&mut s, "dt")[0],
        vec![vec!["public", "t", "table", "postgres"]]
    );
    assert_eq!(
        run_all(&mut s, "di")[0],
        vec![
            vec!["public", "t_bf", "index", "postgres", "t"],
            vec!["public", "t_c", "index", "postgres", "t"],
            vec!["public", "t_d_key", "index", "postgres", "t"],
            vec!["public", "t_pkey", "index", "postgres", "t"],
        ]
    );
    assert!(run_all(&mut s, "dv")[0].is_empty());
    assert_eq!(run_all(&mut s, "dt_tS")[0].len(), 1);
    assert_eq!(run_all(&mut s, "di_tS")[0].len(), 4);
}

#[test]
fn describe_table_queries_answer_as_postgres() {
    let db = db();
    let mut s = Session::new(&db);
    s.execute(SCHEMA).unwrap();
    let all = run_all(&mut s, "d_t");
    for (i, r) in all.iter().enumerate() {
        eprintln!("{i}: {r:?}");
    }
}
