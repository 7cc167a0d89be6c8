//! `walden kill-child DIR [--kind heap|undo]` (hidden): the victim of the process-kill test.
//! It commits one row per transaction forever and prints each key only after its commit
//! returned, so every key printed is a promise that the row survives a SIGKILL. On undo
//! tables each transaction also sets, in place, the one row of a second table (`counter`)
//! to its key: after recovery that row must hold the largest key, so a kill between the
//! two changes, or before the commit, leaves nothing half done. Each transaction first
//! writes a row of key `-k` (and, on undo tables, the counter set to `-k`) under a
//! savepoint it rolls back to, then its real changes under that savepoint, released: no
//! negative key and no negative counter may ever come back.

use std::convert::Infallible;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use walden::{Column, ColumnType, Database, Options, RowId, Schema, TableKind, Value};

use crate::CliError;

const TABLE: &str = "acks";
const COUNTER: &str = "counter";

/// Runs until killed; on any error prints it and exits with 2.
pub fn run(dir: &Path, kind: TableKind) -> ExitCode {
    match serve(dir, kind) {
        Ok(never) => match never {},
        Err(e) => {
            let _ = writeln!(std::io::stderr().lock(), "walden: {e}");
            ExitCode::from(2)
        }
    }
}

fn serve(dir: &Path, kind: TableKind) -> Result<Infallible, CliError> {
    let db = Database::open_or_create(dir, Options::default())?;
    if !db.table_names().iter().any(|name| name == TABLE) {
        let schema = Schema::new(vec![
            Column::not_null("k", ColumnType::Int8),
            Column::new("v", ColumnType::Text),
        ]);
        db.create_table_with(TABLE, schema, kind)?;
    }
    let mut counter = match kind {
        TableKind::Heap => None,
        TableKind::Undo => Some(counter_row(&db)?),
    };
    let mut k = max_key(&db)?;
    let mut out = std::io::stdout().lock();
    loop {
        k += 1;
        let mut tx = db.begin();
        tx.savepoint()?;
        tx.insert(
            TABLE,
            &[Value::Int8(-k), Value::Text(format!("taken back {k}"))],
        )?;
        if let Some(id) = counter {
            tx.update(COUNTER, id, &[Value::Int8(-k)])?;
        }
        // The row, and the counter in its old place, as they were.
        tx.rollback_to_savepoint(1)?;
        tx.insert(TABLE, &[Value::Int8(k), Value::Text(format!("ack {k}"))])?;
        if let Some(id) = counter.as_mut() {
            *id = tx.update(COUNTER, *id, &[Value::Int8(k)])?;
        }
        tx.release_savepoint(1)?;
        tx.commit()?;
        outln!(out, "{k}")?;
        out.flush()
            .map_err(|e| CliError::io("writing to standard output", e))?;
    }
}

/// The row id of the counter row, creating the table (undo kind, one row) if missing.
fn counter_row(db: &Database) -> Result<RowId, CliError> {
    if !db.table_names().iter().any(|name| name == COUNTER) {
        let schema = Schema::new(vec![Column::not_null("n", ColumnType::Int8)]);
        db.create_table_with(COUNTER, schema, TableKind::Undo)?;
    }
    let mut tx = db.begin();
    let rows = tx.scan(COUNTER)?;
    let id = match rows.first() {
        Some((id, _)) => *id,
        // Created but its row not committed yet: 0 is the largest key of an empty table.
        None => tx.insert(COUNTER, &[Value::Int8(0)])?,
    };
    tx.commit()?;
    Ok(id)
}

/// The largest key in the table (0 when it is empty).
fn max_key(db: &Database) -> Result<i64, CliError> {
    let mut max = 0i64;
    let mut tx = db.begin();
    tx.read(
        walden::Rows::Table(TABLE),
        walden::RowShape::default(),
        |_, row| {
            if let Some(Value::Int8(k)) = row.first() {
                max = max.max(*k);
            }
            Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
        },
    )?;
    tx.commit()?;
    Ok(max)
}
