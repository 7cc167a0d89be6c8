//! The differential test's statements on PostgreSQL: Walden's text run through the
//! `postgres` client, results read as the harness's cells and errors as SQLSTATEs.

use postgres::types::Type;
use postgres::{Client, SimpleQueryMessage};

use super::{Cell, Failure};

/// Starts a case: ends any transaction a failed case left open and makes the tables
/// again, empty.
pub fn reset(client: &mut Client, create_tables: &str) {
    // A case that failed part-way may have left a block open (or aborted).
    client.batch_execute("ROLLBACK").unwrap();
    client
        .batch_execute(&format!("DROP TABLE IF EXISTS t, u; {create_tables}"))
        .unwrap();
}

/// Runs a statement that returns no rows (a write, BEGIN, COMMIT, ROLLBACK) and returns
/// the rows it changed (0 for those that change none).
pub fn execute(client: &mut Client, sql: &str) -> Result<u64, Failure> {
    let messages = client.simple_query(sql).map_err(failure)?;
    Ok(messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .next_back()
        .unwrap_or(0))
}

/// Runs a query and returns its rows. The statement is prepared first, which names the
/// result columns' types; it then runs through the simple protocol, whose values come as
/// PostgreSQL's text, read by type (booleans as 1 and 0, as the harness compares them).
pub fn rows(client: &mut Client, sql: &str) -> Result<Vec<Vec<Cell>>, Failure> {
    let statement = client.prepare(sql).map_err(failure)?;
    let types: Vec<Type> = statement
        .columns()
        .iter()
        .map(|c| c.type_().clone())
        .collect();
    let mut out = Vec::new();
    for message in client.simple_query(sql).map_err(failure)? {
        if let SimpleQueryMessage::Row(row) = message {
            let cells = types
                .iter()
                .enumerate()
                .map(|(i, ty)| cell(row.get(i), ty))
                .collect();
            out.push(cells);
        }
    }
    Ok(out)
}

fn cell(text: Option<&str>, ty: &Type) -> Cell {
    let Some(text) = text else {
        return Cell::Null;
    };
    let number = |what: &str| -> ! { panic!("PostgreSQL's {what} {text:?} is not a number") };
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 => {
            Cell::Int(text.parse().unwrap_or_else(|_| number("integer")))
        }
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => {
            Cell::Real(text.parse().unwrap_or_else(|_| number("number")))
        }
        Type::BOOL => Cell::Int((text == "t") as i64),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::UNKNOWN => Cell::Text(text.into()),
        _ => panic!("PostgreSQL returned a {ty} value {text:?}, which the harness does not read"),
    }
}

/// PostgreSQL's error with its SQLSTATE. An error without one (the connection broke) is
/// the harness's, not a difference: it panics, and the case reports it.
fn failure(e: postgres::Error) -> Failure {
    match e.as_db_error() {
        Some(db) => Failure {
            code: Some(db.code().code().to_string()),
            message: db.message().to_string(),
        },
        None => panic!("PostgreSQL's connection failed: {e}"),
    }
}
