//! SQLite's sqllogictest corpus (`../shared/sqllogictest/select1.test` … `select5.test`,
//! read in place, never copied) run with the `sqllogictest` crate, as the engine
//! `postgresql` for `skipif` / `onlyif`, over Walden's SQL session on both table kinds,
//! and over a throwaway PostgreSQL 15 (the `postgres` client; each file in a database of
//! its own) with the same record handling and the same value formatting.
//!
//! What could go wrong is a query Walden answers differently from the corpus where
//! PostgreSQL agrees with the corpus. So Walden may fail only the records listed in
//! `SHARED_FAILURES` (PostgreSQL 15 fails them too) and, until they are fixed, those in
//! `WALDEN_ONLY_FAILURES`; each listed record must still fail (the reason's text given),
//! so a fix shortens the list. PostgreSQL must fail exactly the records of
//! `POSTGRES_FAILURES`: that keeps the shared list honest and the harness working. The
//! `FLOORS` ratchet stays as a lower bound on Walden's passes per file and table kind.
//! Run with `--nocapture` to see the counts per file and engine, and the failures.
//!
//! Without the corpus (a checkout on its own, without `../shared`; or set
//! `WALDEN_SQLLOGICTEST_DIR`) the tests say so and pass; without PostgreSQL 15 the
//! PostgreSQL side says "skipped: PostgreSQL 15 not found" and passes.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use postgres::types::Type;
use postgres::SimpleQueryMessage;
use sqllogictest::{
    AsyncDB, Condition, DBOutput, DefaultColumnType, MakeConnection, Record, Runner,
};
use walden::vfs::SimVfs;
use walden::{Database, Options, TableKind, Value};
use walden_sql::{value, Session, SqlError, SqlType};

/// (file, records passed at least: heap, undo). Records are statements and queries; the
/// ones `skipif postgresql` (or `onlyif` another engine) leaves out are not counted.
const FLOORS: &[(&str, usize, usize)] = &[
    ("select1.test", 1031, 1031),
    ("select2.test", 1031, 1031),
    ("select3.test", 3351, 3351),
    ("select4.test", 3857, 3857),
    ("select5.test", 1436, 1436),
];

/// A record of the corpus that fails: (file, line of the record, text its failure must
/// contain). The comment above each entry says why it fails.
type Listed = (&'static str, u32, &'static str);

/// Records both Walden and PostgreSQL 15 fail: Walden may fail these.
const SHARED_FAILURES: &[Listed] = &[];

/// Records only Walden fails, each to be fixed in Walden (then removed from this list).
const WALDEN_ONLY_FAILURES: &[Listed] = &[];

/// Records PostgreSQL 15 fails (with this harness: the `postgres` client, text results
/// formatted as below).
const POSTGRES_FAILURES: &[Listed] = &[];

/// `$WALDEN_SQLLOGICTEST_DIR`, or `../shared/sqllogictest` beside the checkout.
fn corpus() -> Option<PathBuf> {
    let dir = match std::env::var_os("WALDEN_SQLLOGICTEST_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/sqllogictest"),
    };
    dir.join("select1.test").exists().then_some(dir)
}

#[derive(Debug)]
struct Failure(String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failure {}

impl From<SqlError> for Failure {
    fn from(e: SqlError) -> Self {
        Failure(format!("{} ({})", e.message, e.code))
    }
}

/// PostgreSQL's error as Walden's is written: the message and the SQLSTATE.
impl From<postgres::Error> for Failure {
    fn from(e: postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => Failure(format!("{} ({})", db.message(), db.code().code())),
            None => Failure(e.to_string()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Values as sqllogictest writes them. Both engines go through these two functions, so a
// value of a given type prints the same whichever engine produced it.

/// The result types sqllogictest names: integers (I), floating point (R), text (T).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Integer,
    Float,
    Text,
    Other,
}

fn column_type(kind: Kind) -> DefaultColumnType {
    match kind {
        Kind::Integer => DefaultColumnType::Integer,
        Kind::Float => DefaultColumnType::FloatingPoint,
        Kind::Text => DefaultColumnType::Text,
        Kind::Other => DefaultColumnType::Any,
    }
}

/// A value's text as sqllogictest writes it: NULL, `(empty)` for an empty string,
/// floating point numbers with three decimals, integers, booleans (`t`/`f`) and text as
/// the engine prints them. `float`: the value is a floating point number (of a float8
/// or numeric column) whose text is `text`.
fn cell(text: Option<&str>, float: bool) -> String {
    match text {
        None => "NULL".into(),
        Some("") => "(empty)".into(),
        Some(t) if float => match t.parse::<f64>() {
            Ok(x) => format!("{x:.3}"),
            Err(_) => t.to_string(),
        },
        Some(t) => t.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// Walden.

/// Walden's session as the runner's database.
struct Walden {
    session: Session,
}

fn walden_kind(ty: SqlType) -> Kind {
    match ty {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => Kind::Integer,
        SqlType::Float8 | SqlType::Numeric => Kind::Float,
        SqlType::Text => Kind::Text,
        _ => Kind::Other,
    }
}

/// Walden's value as sqllogictest writes it. A float8 value of a float8 or numeric
/// column (Walden holds numeric as float8) is formatted from the number itself, so no
/// precision is lost in its text; any other value is printed as PostgreSQL prints it
/// (`value::display`).
fn walden_cell(v: &Value, ty: SqlType) -> String {
    match v {
        Value::Null => cell(None, false),
        Value::Float8(x) if walden_kind(ty) == Kind::Float => format!("{x:.3}"),
        other => cell(Some(&value::display(other)), false),
    }
}

impl sqllogictest::DB for Walden {
    type Error = Failure;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, Failure> {
        let r = self.session.execute_one(sql)?;
        if r.columns.is_empty() {
            let n = r
                .tag
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            return Ok(DBOutput::StatementComplete(n));
        }
        let types = r
            .columns
            .iter()
            .map(|(_, ty)| column_type(walden_kind(*ty)))
            .collect();
        let rows = r
            .rows
            .iter()
            .map(|row| {
                row.iter()
                    .zip(&r.columns)
                    .map(|(v, (_, ty))| walden_cell(v, *ty))
                    .collect()
            })
            .collect();
        Ok(DBOutput::Rows { types, rows })
    }

    fn engine_name(&self) -> &str {
        "postgresql"
    }
}

// ---------------------------------------------------------------------------------------
// PostgreSQL.

/// A client of a PostgreSQL database as the runner's database. A statement is prepared
/// first, which names its result columns' types; a query then runs through the simple
/// protocol, whose values come as PostgreSQL's text (what psql shows), and other
/// statements run prepared, which gives their row count.
struct Postgres {
    client: postgres::Client,
}

fn postgres_kind(ty: &Type) -> Kind {
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 => Kind::Integer,
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => Kind::Float,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => Kind::Text,
        _ => Kind::Other,
    }
}

impl sqllogictest::DB for Postgres {
    type Error = Failure;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, Failure> {
        let statement = self.client.prepare(sql)?;
        if statement.columns().is_empty() {
            let n = self.client.execute(&statement, &[])?;
            return Ok(DBOutput::StatementComplete(n));
        }
        let kinds: Vec<Kind> = statement
            .columns()
            .iter()
            .map(|c| postgres_kind(c.type_()))
            .collect();
        let mut rows = Vec::new();
        for message in self.client.simple_query(sql)? {
            if let SimpleQueryMessage::Row(row) = message {
                let cells = (0..row.len())
                    .map(|i| cell(row.get(i), kinds.get(i) == Some(&Kind::Float)))
                    .collect();
                rows.push(cells);
            }
        }
        let types = kinds.into_iter().map(column_type).collect();
        Ok(DBOutput::Rows { types, rows })
    }

    fn engine_name(&self) -> &str {
        "postgresql"
    }
}

// ---------------------------------------------------------------------------------------
// Running a file.

/// A record that failed.
#[derive(Debug, Clone)]
struct Failed {
    line: u32,
    sql: String,
    /// The first line of the runner's error: the engine's error (message and SQLSTATE),
    /// or what about the result was wrong.
    reason: String,
}

/// Counts of one file on one engine (and table kind).
#[derive(Debug, Default)]
struct Counts {
    passed: usize,
    failed: Vec<Failed>,
}

/// Runs one file's records with the runner options both engines share.
fn run_file<D, M>(path: &Path, make: M) -> Counts
where
    D: AsyncDB<ColumnType = DefaultColumnType>,
    M: MakeConnection<Conn = D>,
{
    let mut runner = Runner::new(make);
    runner.add_label("postgresql");
    // The corpus was made with results of more than 8 values hashed (its files that say
    // so say `hash-threshold 8`; the others expect it).
    runner.with_hash_threshold(8);
    runner.with_validator(values_per_line);
    let records = sqllogictest::parse_file::<DefaultColumnType>(path).unwrap();
    let mut counts = Counts::default();
    for record in records {
        let counted =
            matches!(record, Record::Statement { .. } | Record::Query { .. }) && !skipped(&record);
        let (line, sql) = match &record {
            Record::Statement { loc, sql, .. } | Record::Query { loc, sql, .. } => {
                (loc.line(), sql.clone())
            }
            _ => (0, String::new()),
        };
        match runner.run(record) {
            Ok(_) if counted => counts.passed += 1,
            Ok(_) => {}
            Err(e) => counts.failed.push(Failed {
                line,
                sql,
                reason: reason(&e.to_string()),
            }),
        }
    }
    counts
}

/// The first line of a runner error, without the "statement failed: " before an
/// engine's error.
fn reason(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    match first.split_once("failed: ") {
        Some((_, r)) => r.to_string(),
        None => first.trim_end_matches(':').to_string(),
    }
}

/// The corpus lists a result one value per line (SQLite's format), where the crate's
/// default expects a row per line: either matches.
fn values_per_line(
    normalizer: sqllogictest::Normalizer,
    actual: &[Vec<String>],
    expected: &[String],
) -> bool {
    let expected: Vec<String> = expected.iter().map(normalizer).collect();
    let values: Vec<String> = actual.iter().flatten().map(normalizer).collect();
    if values == expected {
        return true;
    }
    let rows: Vec<String> = actual
        .iter()
        .map(|r| r.iter().map(normalizer).collect::<Vec<_>>().join(" "))
        .collect();
    rows == expected
}

/// Whether the record's conditions leave it out for the engine `postgresql`.
fn skipped(record: &Record<DefaultColumnType>) -> bool {
    let conditions = match record {
        Record::Statement { conditions, .. } | Record::Query { conditions, .. } => conditions,
        _ => return false,
    };
    conditions.iter().any(|c| match c {
        Condition::OnlyIf { label } => label != "postgresql",
        Condition::SkipIf { label } => label == "postgresql",
    })
}

/// Prints a file's counts and its failures grouped by reason (with --nocapture).
fn report(engine: &str, file: &str, c: &Counts, seconds: f64) {
    eprintln!(
        "{file} {engine}: {} passed, {} failed ({seconds:.1} s)",
        c.passed,
        c.failed.len()
    );
    let mut reasons: BTreeMap<&str, Vec<&Failed>> = BTreeMap::new();
    for f in &c.failed {
        reasons.entry(&f.reason).or_default().push(f);
    }
    for (reason, failed) in reasons {
        let first = failed[0];
        eprintln!(
            "    {:4} × {reason}\n           e.g. {file}:{}: {}",
            failed.len(),
            first.line,
            first.sql.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }
}

/// Compares a file's failures with the listed ones: every failure must be listed (with
/// its reason's text) and every listed record of the file must fail. Returns the
/// complaints.
fn check_listed(engine: &str, file: &str, failed: &[Failed], listed: &[&[Listed]]) -> Vec<String> {
    let listed: Vec<&Listed> = listed
        .iter()
        .flat_map(|l| l.iter())
        .filter(|(f, _, _)| *f == file)
        .collect();
    let mut complaints = Vec::new();
    for f in failed {
        let known = listed
            .iter()
            .any(|(_, line, text)| *line == f.line && f.reason.contains(text));
        if !known {
            complaints.push(format!(
                "{engine}: {file}:{} fails, and is not listed with that reason: {} [SQL] {}",
                f.line, f.reason, f.sql
            ));
        }
    }
    for (_, line, text) in listed {
        if !failed.iter().any(|f| f.line == *line) {
            complaints.push(format!(
                "{engine}: {file}:{line} is listed as failing ({text}) but passes: take it off the list"
            ));
        }
    }
    complaints
}

#[test]
fn walden_fails_only_the_listed_records() {
    let Some(dir) = corpus() else {
        eprintln!("skipped: ../shared/sqllogictest is not beside this checkout");
        return;
    };
    let (mut below, mut complaints) = (Vec::new(), Vec::new());
    for &(file, heap_floor, undo_floor) in FLOORS {
        for (kind, floor) in [(TableKind::Heap, heap_floor), (TableKind::Undo, undo_floor)] {
            let started = Instant::now();
            let db = Database::create(
                "db",
                Options {
                    vfs: Arc::new(SimVfs::new(1)),
                    background: false,
                    default_table_kind: kind,
                    ..Options::default()
                },
            )
            .unwrap();
            let c = run_file(&dir.join(file), move || {
                let db = db.clone();
                async move {
                    Ok(Walden {
                        session: Session::with_seed(&db, 1),
                    })
                }
            });
            let engine = format!("Walden {kind:?} (floor {floor})");
            report(&engine, file, &c, started.elapsed().as_secs_f64());
            if c.passed < floor {
                below.push(format!("{file} {kind:?}: {} < {floor}", c.passed));
            }
            complaints.extend(check_listed(
                &format!("Walden {kind:?}"),
                file,
                &c.failed,
                &[SHARED_FAILURES, WALDEN_ONLY_FAILURES],
            ));
        }
    }
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
    assert!(
        below.is_empty(),
        "fewer records pass than before: {below:?}"
    );
}

#[test]
fn postgresql_fails_only_its_listed_records() {
    let Some(dir) = corpus() else {
        eprintln!("skipped: ../shared/sqllogictest is not beside this checkout");
        return;
    };
    let Some(cluster) = support::pg::cluster() else {
        eprintln!("{}", support::pg::SKIPPED);
        return;
    };
    let mut complaints = Vec::new();
    for &(file, _, _) in FLOORS {
        let started = Instant::now();
        // Each file in a database of its own: the files reuse table names.
        let name = file.trim_end_matches(".test");
        let mut client = Some(support::pg::fresh_database(&cluster, name));
        let connection = cluster.connection_string(name);
        let c = run_file(&dir.join(file), move || {
            // The runner makes one connection; a second would be a new client.
            let client = client.take().map(Ok).unwrap_or_else(|| {
                postgres::Client::connect(&connection, postgres::NoTls).map_err(Failure::from)
            });
            async move { client.map(|client| Postgres { client }) }
        });
        report("PostgreSQL 15", file, &c, started.elapsed().as_secs_f64());
        complaints.extend(check_listed(
            "PostgreSQL",
            file,
            &c.failed,
            &[POSTGRES_FAILURES],
        ));
    }
    cluster.stop().unwrap();
    assert!(complaints.is_empty(), "{}", complaints.join("\n"));
}

/// The lists agree with each other: a shared failure is one PostgreSQL fails, a
/// Walden-only one is not, and no record is listed twice.
#[test]
fn the_failure_lists_are_consistent() {
    let key = |(file, line, _): &Listed| (*file, *line);
    for shared in SHARED_FAILURES {
        assert!(
            POSTGRES_FAILURES.iter().any(|p| key(p) == key(shared)),
            "{shared:?} is shared but not among PostgreSQL's failures"
        );
    }
    for only in WALDEN_ONLY_FAILURES {
        assert!(
            !POSTGRES_FAILURES.iter().any(|p| key(p) == key(only)),
            "{only:?} is Walden-only but PostgreSQL fails it too: list it as shared"
        );
    }
    for list in [SHARED_FAILURES, WALDEN_ONLY_FAILURES, POSTGRES_FAILURES] {
        let mut keys: Vec<_> = list.iter().map(key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), list.len(), "a record is listed twice: {list:?}");
    }
}
