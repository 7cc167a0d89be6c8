//! COPY: rows in and out in PostgreSQL's text and CSV formats, byte for byte as
//! PostgreSQL 15 reads and writes them.
//!
//! A server runs a COPY in steps, as the wire protocol does: [`Session::copy_start`]
//! parses and checks the statement and gives a [`CopyIn`] (the server answers
//! CopyInResponse, then hands each CopyData's bytes to [`CopyIn::data`], and CopyDone
//! to [`CopyIn::finish`] or CopyFail to [`CopyIn::fail`]) or a [`CopyOut`] (the server
//! answers CopyOutResponse, and [`CopyOut::run`] gives it each row's bytes to send as a
//! CopyData). A script run by [`Session::run_script`] takes a `COPY ... FROM STDIN`'s
//! data from the lines after it, up to a line `\.`, as psql does with a script file; a
//! `COPY ... TO STDOUT` there gives its output in [`StatementResult::copy_data`].
//!
//! The transaction rules are every statement's: outside a transaction block a COPY is a
//! transaction of its own, committed by `finish` and rolled back by an error or `fail`;
//! inside one it joins the block, and an error aborts the block. Rows go into the table
//! in batches through the engine's multi-row insert (`Transaction::insert_with`, as
//! INSERT's), so memory holds one batch of input whatever the input's size.
//!
//! Server-side files and programs (`COPY t FROM '/path'`) are refused: reading and
//! writing the server's files on a client's word is what PostgreSQL keeps to
//! superusers, and Walden has no roles.

mod csv;
mod from;
mod lines;
mod text;
mod to;

use std::time::Instant;

use sqlparser::tokenizer::Location;
use walden::StatsSnapshot;

use crate::error::{code, SqlError, SqlResult};
use crate::session::{Session, StatementResult};

pub(crate) use crate::script::copy as statement;
pub use crate::script::copy::CopyFormat;
pub use from::CopyIn;
pub use to::CopyOut;

use statement::{CopySource, CopyStatement, Endpoint, Named};

/// A COPY started by [`Session::copy_start`]: data to take from the client, or to give.
// One is made per COPY and matched at once: the handles' sizes cost nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum CopyStart {
    In(CopyIn),
    Out(CopyOut),
}

/// True if `sql` is a COPY statement (its first word is COPY): the statements a server
/// runs through [`Session::copy_start`] rather than as a query.
pub fn is_copy(sql: &str) -> bool {
    let mut rest = sql.trim_start();
    // Comments before the statement.
    loop {
        if let Some(r) = rest.strip_prefix("--") {
            rest = r
                .split_once('\n')
                .map_or("", |(_, after)| after)
                .trim_start();
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r
                .split_once("*/")
                .map_or("", |(_, after)| after)
                .trim_start();
        } else {
            break;
        }
    }
    rest.get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("copy"))
        && rest[4..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '$'))
}

/// The error for bytes that are not UTF-8 (or hold a NUL, which PostgreSQL's text
/// cannot): PostgreSQL's message, naming the bytes of the first bad character.
pub(crate) fn check_utf8(bytes: &[u8]) -> SqlResult<()> {
    let bad = match std::str::from_utf8(bytes) {
        Ok(s) => match s.find('\0') {
            Some(at) => at,
            None => return Ok(()),
        },
        Err(e) => {
            let at = e.valid_up_to();
            bytes[..at].iter().position(|&b| b == 0).unwrap_or(at)
        }
    };
    let first = bytes[bad];
    let len = match first {
        b if b & 0x80 == 0 => 1,
        b if b & 0xe0 == 0xc0 => 2,
        b if b & 0xf0 == 0xe0 => 3,
        b if b & 0xf8 == 0xf0 => 4,
        _ => 1,
    };
    let shown: Vec<String> = bytes[bad..]
        .iter()
        .take(len)
        .map(|b| format!("0x{b:02x}"))
        .collect();
    Err(SqlError::new(
        code::CHARACTER_NOT_IN_REPERTOIRE,
        format!(
            "invalid byte sequence for encoding \"UTF8\": {}",
            shown.join(" ")
        ),
    ))
}

/// The most bytes of a line or value a CONTEXT quotes (PostgreSQL's
/// `MAX_COPY_DATA_DISPLAY`), cut at a character and followed by `...`.
const SHOWN_BYTES: usize = 100;

pub(crate) fn shown(text: &str) -> String {
    if text.len() <= SHOWN_BYTES {
        return text.to_string();
    }
    let mut end = SHOWN_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// When and from what a COPY's statement started: its result's accounting. (The
/// snapshot is boxed: it is large, and the handles that hold it move around.)
pub(crate) struct Started {
    pub at: Instant,
    pub stats: Box<StatsSnapshot>,
}

/// Starts a parsed COPY in the session: its table or query checked, its transaction
/// taken (errors abort a transaction block, as any statement's do).
pub(crate) fn start(session: &mut Session, stmt: CopyStatement) -> SqlResult<CopyStart> {
    let started = session.start_statement()?;
    match stmt.endpoint {
        Endpoint::Client => {}
        Endpoint::File(_) | Endpoint::Program(_) => {
            let what = if matches!(stmt.endpoint, Endpoint::File(_)) {
                "a file"
            } else {
                "a program"
            };
            let e = SqlError::unsupported(format!("COPY to or from {what} on the server"))
                .with_hint(
                    "Walden's COPY reads data from the client (FROM STDIN) and writes it to \
                     the client (TO STDOUT); psql's \\copy reads and writes files on the \
                     client's side.",
                );
            return Err(session.fail_statement(e));
        }
    }
    // COPY FROM inserts (INSERT on the table), COPY TO reads (SELECT, or what its
    // query reads).
    let auth = session.authority();
    if !auth.superuser {
        let db = session.database().clone();
        let checked = match &stmt.source {
            statement::CopySource::Table { name, columns, .. } => {
                match crate::privileges::rel_kind(&db, name) {
                    Some(kind) => {
                        use walden::privilege::bits;
                        let need = if stmt.from {
                            bits::INSERT
                        } else {
                            bits::SELECT
                        };
                        auth.require(name, kind, need).or_else(|e| {
                            if !auth.has_column_grants(name) {
                                return Err(e);
                            }
                            // Through the columns it names (every one when none).
                            let mut named: std::collections::BTreeSet<String> =
                                columns.iter().map(|(n, _)| n.clone()).collect();
                            if named.is_empty() {
                                named = db
                                    .schema(name)
                                    .map(|s| s.columns.into_iter().map(|c| c.name).collect())
                                    .unwrap_or_default();
                            }
                            let mut uses = crate::privileges::columns::Uses::default();
                            if stmt.from {
                                uses.insert = named;
                            } else {
                                uses.select = named;
                            }
                            crate::privileges::check::require_columns(
                                &db,
                                &auth,
                                name,
                                kind,
                                need,
                                Some(&uses),
                            )
                        })
                    }
                    None => Ok(()),
                }
            }
            statement::CopySource::Query(q) => {
                crate::privileges::check::check_statement(&db, &auth, q).map(|_| ())
            }
        };
        if let Err(e) = checked {
            return Err(session.fail_statement(e));
        }
    }
    if stmt.from {
        session.refuse_if_read_only("COPY FROM")?;
    }
    let r = if stmt.from {
        from::start(session, stmt, started).map(CopyStart::In)
    } else {
        to::start(session, stmt, started).map(CopyStart::Out)
    };
    r.map_err(|e| session.fail_statement(e))
}

/// The positions of the columns a COPY names in `schema` (every column when it names
/// none), with PostgreSQL's errors for an unknown or repeated one.
fn column_positions(
    table: &str,
    schema: &walden::Schema,
    columns: &[Named],
) -> SqlResult<Vec<usize>> {
    if columns.is_empty() {
        return Ok((0..schema.columns.len()).collect());
    }
    let mut out = Vec::new();
    for (name, at) in columns {
        let Some(i) = schema.columns.iter().position(|c| c.name == *name) else {
            return Err(no_column(name, Some(table), *at));
        };
        if out.contains(&i) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{name}\" specified more than once"),
            )
            .at(*at));
        }
        out.push(i);
    }
    Ok(out)
}

fn no_column(name: &str, table: Option<&str>, at: Location) -> SqlError {
    let message = match table {
        Some(t) => format!("column \"{name}\" of relation \"{t}\" does not exist"),
        None => format!("column \"{name}\" does not exist"),
    };
    SqlError::new(code::UNDEFINED_COLUMN, message).at(at)
}

/// Which of the COPY's columns (named `names`, in order) a FORCE_QUOTE, FORCE_NOT_NULL
/// or FORCE_NULL list names: each must be a column of the relation (`all_names`, with
/// `table` for the error) and one the COPY reads or writes.
fn forced(
    option: &str,
    list: &[Named],
    names: &[String],
    all_names: &[String],
    table: Option<&str>,
) -> SqlResult<Vec<bool>> {
    let mut out = vec![false; names.len()];
    for (name, at) in list {
        if !all_names.contains(name) {
            return Err(no_column(name, table, *at));
        }
        let Some(k) = names.iter().position(|n| n == name) else {
            return Err(SqlError::new(
                code::INVALID_COLUMN_REFERENCE,
                format!("{option} column \"{name}\" not referenced by COPY"),
            ));
        };
        out[k] = true;
    }
    Ok(out)
}

/// A COPY's source table: its name, checked to be a table (PostgreSQL's errors for a
/// view, whose hint depends on the direction).
fn table_of(session: &Session, source: &CopySource, from: bool) -> SqlResult<String> {
    let CopySource::Table { name, at, .. } = source else {
        return Err(SqlError::new(code::INTERNAL, "COPY of a query as a table"));
    };
    let db = session.database();
    if db.view(name).is_some() {
        let e = if from {
            SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("cannot copy to view \"{name}\""),
            )
            .with_hint("To enable copying to a view, provide an INSTEAD OF INSERT trigger.")
        } else {
            SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("cannot copy from view \"{name}\""),
            )
            .with_hint("Try the COPY (SELECT ...) TO variant.")
        };
        return Err(e.at(*at));
    }
    db.schema(name).map_err(|e| SqlError::from(e).at(*at))?;
    Ok(name.clone())
}

/// The result a COPY gives: `COPY n`, with what the database wrote meanwhile.
fn result(session: &Session, rows: u64, started: &Started) -> StatementResult {
    StatementResult {
        tag: format!("COPY {rows}"),
        columns: Vec::new(),
        rows: Vec::new(),
        notices: Vec::new(),
        copy_data: None,
        stats: Some(session.database().stats().since(&started.stats)),
        elapsed: started.at.elapsed(),
        streamed: false,
        binary: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_statements_are_recognized_by_their_first_word() {
        assert!(is_copy("COPY t FROM STDIN"));
        assert!(is_copy("  copy(select 1) to stdout"));
        assert!(is_copy("-- load\n/* x */ Copy t from stdin"));
        assert!(!is_copy("copyx from y"));
        assert!(!is_copy("select 'copy'"));
        assert!(!is_copy("cop"));
    }

    #[test]
    fn bad_bytes_are_named_as_postgres_names_them() {
        let message = |b: &[u8]| check_utf8(b).unwrap_err().message.clone();
        assert_eq!(
            message(b"ab\0c"),
            "invalid byte sequence for encoding \"UTF8\": 0x00"
        );
        assert_eq!(
            message(b"a\xff"),
            "invalid byte sequence for encoding \"UTF8\": 0xff"
        );
        assert_eq!(
            message(b"\xe2\x82"),
            "invalid byte sequence for encoding \"UTF8\": 0xe2 0x82"
        );
        assert_eq!(check_utf8("é€".as_bytes()), Ok(()));
    }

    #[test]
    fn long_context_text_is_cut_at_a_character() {
        assert_eq!(shown("short"), "short");
        let long = "é".repeat(60);
        let s = shown(&long);
        assert_eq!(s, format!("{}...", "é".repeat(50)));
    }
}
