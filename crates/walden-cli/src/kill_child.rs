//! `walden kill-child DIR` (hidden): the victim of the process-kill test. It commits one row
//! per transaction forever and prints each key only after its commit returned, so every key
//! printed is a promise that the row survives a SIGKILL.

use std::convert::Infallible;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use walden::{Column, ColumnType, Database, Options, Schema, Value};

use crate::CliError;

const TABLE: &str = "acks";

/// Runs until killed; on any error prints it and exits with 2.
pub fn run(dir: &Path) -> ExitCode {
    match serve(dir) {
        Ok(never) => match never {},
        Err(e) => {
            let _ = writeln!(std::io::stderr().lock(), "walden: {e}");
            ExitCode::from(2)
        }
    }
}

fn serve(dir: &Path) -> Result<Infallible, CliError> {
    let db = Database::open_or_create(dir, Options::default())?;
    if !db.table_names().iter().any(|name| name == TABLE) {
        let schema = Schema::new(vec![
            Column::not_null("k", ColumnType::Int8),
            Column::new("v", ColumnType::Text),
        ]);
        db.create_table(TABLE, schema)?;
    }
    let mut k = max_key(&db)?;
    let mut out = std::io::stdout().lock();
    loop {
        k += 1;
        let mut tx = db.begin();
        tx.insert(TABLE, &[Value::Int8(k), Value::Text(format!("ack {k}"))])?;
        tx.commit()?;
        outln!(out, "{k}")?;
        out.flush()
            .map_err(|e| CliError::io("writing to standard output", e))?;
    }
}

/// The largest key in the table (0 when it is empty).
fn max_key(db: &Database) -> Result<i64, CliError> {
    let mut max = 0i64;
    let mut tx = db.begin();
    tx.scan_with(TABLE, |_, row| {
        if let Some(Value::Int8(k)) = row.first() {
            max = max.max(*k);
        }
        true
    })?;
    tx.commit()?;
    Ok(max)
}
