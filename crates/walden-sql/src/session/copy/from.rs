//! COPY FROM STDIN: the data taken in chunks as the client sends them, split into
//! records (`lines.rs`), each record into fields (`text.rs`, `csv.rs`), each field read
//! by its column type's input function (a cast from text, as assignment: `varchar(3)`
//! refuses a longer value), and the rows inserted in batches through the engine's
//! multi-row insert, with the defaults, serial values and constraints INSERT gives
//! them. Errors carry PostgreSQL's CONTEXT: `COPY t, line 3, column b: "x"`.

use std::ops::Range;

use walden::{Column, Row, Schema, Transaction, Value};

use super::csv;
use super::lines::{Record, Splitter};
use super::statement::{CopyFormat, CopyOptions, CopyStatement, Header};
use super::{result, shown, Started};
use crate::dml::RowBuilder;
use crate::error::{code, SqlError, SqlResult};
use crate::session::{Session, StatementResult};
use crate::types::{DeclaredType, SqlType};

/// Input is taken into the splitter this many bytes at a time, so one large chunk does
/// not sit whole in memory next to its records.
const PIECE_BYTES: usize = 64 << 10;

/// Complete records are inserted once they hold this many bytes (and at the end): the
/// batch the engine's multi-row insert gets, and about what COPY keeps in memory.
const BATCH_BYTES: usize = 256 << 10;

/// A COPY FROM STDIN under way. Hand it the data with [`CopyIn::data`], then end it
/// with [`CopyIn::finish`] (the client's CopyDone) or [`CopyIn::fail`] (CopyFail).
///
/// After an error from `data`, the COPY has ended (rolled back, or the transaction
/// block aborted): the handle only repeats that error. A handle dropped before it ends
/// rolls back what it inserted; inside a transaction block the block is then aborted.
pub struct CopyIn {
    table: String,
    schema: Schema,
    /// The columns the data's fields go to, in order, and how each is read.
    targets: Vec<usize>,
    declared: Vec<DeclaredType>,
    options: CopyOptions,
    /// Per target: CSV's FORCE_NOT_NULL and FORCE_NULL.
    force_not_null: Vec<bool>,
    force_null: Vec<bool>,
    splitter: Splitter,
    /// The header line still to be read (or checked).
    header: Header,
    rows: u64,
    /// The transaction the rows go into, and whether it is the session's block's.
    txn: Option<Box<Transaction>>,
    in_block: bool,
    /// Rows inserted, kept for the table's foreign keys (checked at the end, as
    /// PostgreSQL checks them after the statement).
    foreign_key_rows: Option<Vec<Row>>,
    failed: Option<SqlError>,
    started: Started,
    fields: Fields,
    /// The role may not read the whole table: constraint errors leave out the row.
    hide_details: bool,
}

/// Buffers for one record's fields, reused.
#[derive(Default)]
struct Fields {
    decoded: Vec<u8>,
    text: Vec<Option<Range<usize>>>,
    csv: Vec<csv::Field>,
}

/// Checks a COPY FROM's table and columns and takes its transaction.
pub(super) fn start(
    session: &mut Session,
    stmt: CopyStatement,
    started: Started,
) -> SqlResult<CopyIn> {
    let table = super::table_of(session, &stmt.source, true)?;
    let schema = session.database().schema(&table)?;
    let super::statement::CopySource::Table { columns, .. } = &stmt.source else {
        return Err(SqlError::new(code::INTERNAL, "COPY FROM a query"));
    };
    let targets = super::column_positions(&table, &schema, columns)?;
    let names: Vec<String> = targets
        .iter()
        .map(|&i| schema.columns[i].name.clone())
        .collect();
    let all: Vec<String> = schema.columns.iter().map(|c| c.name.clone()).collect();
    let o = &stmt.options;
    let t = Some(table.as_str());
    let force_not_null = super::forced("FORCE_NOT_NULL", &o.force_not_null, &names, &all, t)?;
    let force_null = super::forced("FORCE_NULL", &o.force_null, &names, &all, t)?;
    let declared = targets
        .iter()
        .map(|&i| DeclaredType::of_column(&schema.columns[i]))
        .collect();
    let (txn, in_block) = session.hold_transaction();
    let auth = session.authority();
    let hide_details = !auth.superuser
        && crate::privileges::rel_kind(session.database(), &table)
            .is_some_and(|k| auth.relation_mask(&table, k, walden::privilege::bits::SELECT) == 0);
    Ok(CopyIn {
        hide_details,
        splitter: Splitter::new(o.format == CopyFormat::Csv, o.quote, o.escape),
        header: o.header,
        options: stmt.options,
        table,
        schema,
        targets,
        declared,
        force_not_null,
        force_null,
        rows: 0,
        txn: Some(txn),
        in_block,
        foreign_key_rows: None,
        failed: None,
        started,
        fields: Fields::default(),
    })
}

impl CopyIn {
    /// How many columns each row of the data has (CopyInResponse's column count).
    pub fn columns(&self) -> usize {
        self.targets.len()
    }

    /// The data's format (both are sent as the protocol's text format, 0).
    pub fn format(&self) -> CopyFormat {
        self.options.format
    }

    /// Takes the next bytes of data: any amount, ending anywhere (inside a row, a
    /// field or an escape). Rows are inserted as batches fill.
    pub fn data(&mut self, session: &mut Session, bytes: &[u8]) -> SqlResult<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let r = self.take_data(session, bytes);
        r.map_err(|e| self.abort(session, e))
    }

    /// The end of the data (the client's CopyDone): the last rows are inserted, the
    /// foreign keys checked, and outside a transaction block the COPY commits. Its
    /// tag is `COPY n`.
    pub fn finish(mut self, session: &mut Session) -> SqlResult<StatementResult> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        match self.finish_inner(session) {
            Ok(()) => Ok(result(session, self.rows, &self.started)),
            Err(e) => Err(self.abort(session, e)),
        }
    }

    /// The client gave up (CopyFail): everything is rolled back (inside a transaction
    /// block, the block is aborted) and the error PostgreSQL reports is returned.
    pub fn fail(mut self, session: &mut Session, message: &str) -> SqlError {
        if let Some(e) = self.failed.take() {
            return e;
        }
        let line = self.splitter.line();
        let e = SqlError::new(
            code::QUERY_CANCELED,
            format!("COPY from stdin failed: {message}"),
        )
        .with_context(format!("COPY {}, line {line}", self.table));
        self.abort(session, e)
    }

    /// Ends the COPY after an error: its transaction rolls back (a block's was left
    /// aborted in the session when the COPY took it), or, a block's with savepoints,
    /// goes back to the session aborted, for a ROLLBACK TO.
    fn abort(&mut self, session: &mut Session, e: SqlError) -> SqlError {
        if let Some(t) = self.txn.take() {
            if self.in_block {
                session.copy_failed(t);
            } else {
                let _ = t.rollback();
            }
        }
        let e = if self.hide_details {
            crate::error::without_row_details(e)
        } else {
            e
        };
        self.failed = Some(e.clone());
        e
    }

    fn take_data(&mut self, session: &mut Session, bytes: &[u8]) -> SqlResult<()> {
        for piece in bytes.chunks(PIECE_BYTES) {
            session.check_cancel()?;
            if let Err(e) = self.splitter.push(piece) {
                let line = self.splitter.line();
                return Err(e.with_context(format!("COPY {}, line {line}", self.table)));
            }
            if self.splitter.complete_bytes() >= BATCH_BYTES {
                self.flush(session)?;
            }
        }
        Ok(())
    }

    fn finish_inner(&mut self, session: &mut Session) -> SqlResult<()> {
        // A cancel request made since the last batch (Ctrl-C at the shell's prompt).
        session.check_cancel()?;
        if let Err(e) = self.splitter.finish() {
            let line = self.splitter.line();
            return Err(e.with_context(format!("COPY {}, line {line}", self.table)));
        }
        self.flush(session)?;
        let Some(mut t) = self.txn.take() else {
            return Err(SqlError::new(code::INTERNAL, "COPY ended twice"));
        };
        if let Some(rows) = self.foreign_key_rows.take() {
            let mut cx = session.ctx();
            if let Err(e) = crate::dml::check_inserted_keys(&mut cx, &mut t, &self.table, rows) {
                // `abort` ends it.
                self.txn = Some(t);
                return Err(e);
            }
        }
        session.release_transaction(t, self.in_block)
    }

    /// Inserts the complete records held, as one batch.
    fn flush(&mut self, session: &mut Session) -> SqlResult<()> {
        let Some(t) = self.txn.as_deref_mut() else {
            return Err(SqlError::new(code::INTERNAL, "COPY ended"));
        };
        let mut cx = session.ctx();
        let reading = Reading {
            table: &self.table,
            schema: &self.schema,
            targets: &self.targets,
            declared: &self.declared,
            options: &self.options,
            force_not_null: &self.force_not_null,
            force_null: &self.force_null,
        };
        let mut builder =
            RowBuilder::filled_by_caller(&mut cx, &self.table, &self.schema, &self.targets)?;
        let splitter = &mut self.splitter;
        let fields = &mut self.fields;
        let header = &mut self.header;
        let mut batch: Vec<Record> = Vec::new();
        let inserted = t.insert_with(&self.table, |row| loop {
            let Some(rec) = splitter.take() else {
                return Ok(false);
            };
            cx.guard.check().map_err(Failed::Row)?;
            if *header != Header::No {
                let h = std::mem::replace(header, Header::No);
                reading
                    .header(splitter.bytes(), rec, fields, h)
                    .map_err(Failed::Row)?;
                continue;
            }
            batch.push(rec);
            reading
                .fill(splitter.bytes(), rec, fields, row)
                .map_err(Failed::Row)?;
            builder.complete(&mut cx, row).map_err(|e| {
                Failed::Row(e.with_context(reading.line_context(splitter.bytes(), rec)))
            })?;
            return Ok(true);
        });
        let kept = builder.take_kept();
        drop(builder);
        let n = match inserted {
            Ok(n) => n,
            Err(Failed::Row(e)) => return Err(e),
            Err(Failed::Engine(e)) => return Err(self.locate(session, e, &batch)),
        };
        self.rows += n;
        if let Some(kept) = kept {
            self.foreign_key_rows
                .get_or_insert_with(Vec::new)
                .extend(kept);
        }
        self.splitter.consume();
        Ok(())
    }

    /// An engine error in inserting a batch, with the line PostgreSQL would name: an
    /// index's (a duplicate key), found only once the batch's rows were in, is found
    /// again by inserting the batch's rows one at a time (the batch was taken back, and
    /// the COPY fails whatever happens); any other concerns the last row given.
    fn locate(&mut self, session: &mut Session, e: walden::Error, batch: &[Record]) -> SqlError {
        let index_error = matches!(
            e,
            walden::Error::UniqueViolation { .. }
                | walden::Error::KeyTooLarge { .. }
                | walden::Error::NotNullViolation { .. }
        );
        let context = |line: u64| format!("COPY {}, line {line}", self.table);
        let last = batch.last().map_or(self.splitter.line(), |r| r.line);
        if !index_error {
            return SqlError::from(e).with_context(context(last));
        }
        let Some(t) = self.txn.as_deref_mut() else {
            return SqlError::from(e);
        };
        let mut cx = session.ctx();
        let reading = Reading {
            table: &self.table,
            schema: &self.schema,
            targets: &self.targets,
            declared: &self.declared,
            options: &self.options,
            force_not_null: &self.force_not_null,
            force_null: &self.force_null,
        };
        let Ok(builder) =
            RowBuilder::filled_by_caller(&mut cx, &self.table, &self.schema, &self.targets)
        else {
            return SqlError::from(e);
        };
        for rec in batch {
            let mut once = Some(*rec);
            let bytes = self.splitter.bytes();
            let r = t.insert_with(&self.table, |row| {
                let Some(rec) = once.take() else {
                    return Ok(false);
                };
                reading
                    .fill(bytes, rec, &mut self.fields, row)
                    .and_then(|()| builder.complete(&mut cx, row))
                    .map_err(Failed::Row)?;
                Ok(true)
            });
            match r {
                Err(Failed::Engine(again)) => {
                    return SqlError::from(again).with_context(context(rec.line))
                }
                Err(Failed::Row(other)) => return other,
                Ok(_) => {}
            }
        }
        SqlError::from(e).with_context(context(last))
    }
}

/// Why a batch's insert stopped: a record's own error (a field, a constraint the row
/// builder checks), or the engine's, which `locate` finds the line of.
enum Failed {
    Row(SqlError),
    Engine(walden::Error),
}

impl From<walden::Error> for Failed {
    fn from(e: walden::Error) -> Failed {
        Failed::Engine(e)
    }
}

/// What reading a record needs of the COPY, borrowed apart from its buffers.
struct Reading<'a> {
    table: &'a str,
    schema: &'a Schema,
    targets: &'a [usize],
    declared: &'a [DeclaredType],
    options: &'a CopyOptions,
    force_not_null: &'a [bool],
    force_null: &'a [bool],
}

impl Reading<'_> {
    /// The CONTEXT of an error about a whole record: its line and text.
    fn line_context(&self, bytes: &[u8], rec: Record) -> String {
        let text = String::from_utf8_lossy(&bytes[rec.start..rec.end]);
        format!(
            "COPY {}, line {}: \"{}\"",
            self.table,
            rec.line,
            shown(&text)
        )
    }

    /// Splits a record into `fields`. Its bytes are checked as each field is read
    /// (`field`), and whole only when something is wrong, for PostgreSQL's order of
    /// errors: bytes that are not UTF-8 first (`raw_error`).
    fn split(&self, bytes: &[u8], rec: Record, fields: &mut Fields) -> SqlResult<()> {
        let raw = &bytes[rec.start..rec.end];
        let o = self.options;
        let r = match o.format {
            CopyFormat::Text => super::text::split(
                raw,
                o.delimiter,
                o.null.as_bytes(),
                &mut fields.decoded,
                &mut fields.text,
            ),
            CopyFormat::Csv => csv::split(
                raw,
                csv::Csv {
                    delimiter: o.delimiter,
                    quote: o.quote,
                    escape: o.escape,
                    null: o.null.as_bytes(),
                },
                &mut fields.decoded,
                &mut fields.csv,
            ),
        };
        r.map_err(|e| {
            self.raw_error(bytes, rec)
                .unwrap_or_else(|| e.with_context(self.line_context(bytes, rec)))
        })
    }

    /// The error for a record whose bytes are not UTF-8 (or hold a NUL), if they are
    /// not: PostgreSQL finds it in the input before any field (its CONTEXT has no line
    /// text).
    fn raw_error(&self, bytes: &[u8], rec: Record) -> Option<SqlError> {
        super::check_utf8(&bytes[rec.start..rec.end])
            .err()
            .map(|e| e.with_context(format!("COPY {}, line {}", self.table, rec.line)))
    }

    /// The number of fields the record split into.
    fn count(&self, fields: &Fields) -> usize {
        match self.options.format {
            CopyFormat::Text => fields.text.len(),
            CopyFormat::Csv => fields.csv.len(),
        }
    }

    /// Field `k`: its text, or None for NULL (CSV's FORCE_NOT_NULL and FORCE_NULL
    /// applied for target `k`).
    fn field<'f>(
        &self,
        bytes: &[u8],
        rec: Record,
        fields: &'f Fields,
        k: usize,
    ) -> SqlResult<Option<&'f str>> {
        let range = match self.options.format {
            CopyFormat::Text => fields.text[k].clone(),
            CopyFormat::Csv => {
                let f = &fields.csv[k];
                let not_null = self.force_not_null.get(k).copied().unwrap_or(false);
                let to_null = self.force_null.get(k).copied().unwrap_or(false);
                let bytes = &fields.decoded[f.bytes.clone()];
                // FORCE_NOT_NULL reads an unquoted NULL string as the string; FORCE_NULL
                // reads a quoted one as NULL.
                let null = if f.null {
                    !not_null
                } else {
                    to_null && bytes == self.options.null.as_bytes()
                };
                (!null).then(|| f.bytes.clone())
            }
        };
        let Some(r) = range else {
            return Ok(None);
        };
        let field = &fields.decoded[r];
        match std::str::from_utf8(field) {
            Ok(text) if !field.contains(&0) => Ok(Some(text)),
            // Only the record's own bytes can be bad here (an escape's were checked).
            _ => Err(self
                .raw_error(bytes, rec)
                .unwrap_or_else(|| SqlError::new(code::INTERNAL, "a COPY field is not UTF-8"))),
        }
    }

    /// Reads a record into `row`: each target column from its field (as PostgreSQL
    /// does: too many fields is an error first, then column by column a missing field
    /// or a value its type does not take).
    fn fill(&self, bytes: &[u8], rec: Record, fields: &mut Fields, row: &mut Row) -> SqlResult<()> {
        self.split(bytes, rec, fields)?;
        let count = self.count(fields);
        if count > self.targets.len() {
            return Err(self.raw_error(bytes, rec).unwrap_or_else(|| {
                SqlError::new(
                    code::BAD_COPY_FILE_FORMAT,
                    "extra data after last expected column",
                )
                .with_context(self.line_context(bytes, rec))
            }));
        }
        row.clear();
        row.resize(self.schema.columns.len(), Value::Null);
        for (k, &i) in self.targets.iter().enumerate() {
            let col = &self.schema.columns[i];
            if k >= count {
                return Err(self.raw_error(bytes, rec).unwrap_or_else(|| {
                    SqlError::new(
                        code::BAD_COPY_FILE_FORMAT,
                        format!("missing data for column \"{}\"", col.name),
                    )
                    .with_context(self.line_context(bytes, rec))
                }));
            }
            if let Some(text) = self.field(bytes, rec, fields, k)? {
                row[i] = input(text, col, &self.declared[k]).map_err(|e| {
                    e.with_context(format!(
                        "COPY {}, line {}, column {}: \"{}\"",
                        self.table,
                        rec.line,
                        col.name,
                        shown(text)
                    ))
                })?;
            }
        }
        Ok(())
    }

    /// The header line: skipped, or with HEADER MATCH checked against the columns'
    /// names (PostgreSQL 15's messages).
    fn header(
        &self,
        bytes: &[u8],
        rec: Record,
        fields: &mut Fields,
        header: Header,
    ) -> SqlResult<()> {
        if header != Header::Match {
            return Ok(());
        }
        self.split(bytes, rec, fields)?;
        let count = self.count(fields);
        if let Some(e) = self.raw_error(bytes, rec) {
            return Err(e);
        }
        let context = self.line_context(bytes, rec);
        if count != self.targets.len() {
            return Err(SqlError::new(
                code::BAD_COPY_FILE_FORMAT,
                format!(
                    "wrong number of fields in header line: got {count}, expected {}",
                    self.targets.len()
                ),
            )
            .with_context(context));
        }
        for (k, &i) in self.targets.iter().enumerate() {
            let expected = &self.schema.columns[i].name;
            let message = match self.field(bytes, rec, fields, k)? {
                None => format!(
                    "column name mismatch in header line field {}: got null value (\"{}\"), expected \"{expected}\"",
                    k + 1,
                    self.options.null
                ),
                Some(name) if name == expected => continue,
                Some(name) => format!(
                    "column name mismatch in header line field {}: got \"{name}\", expected \"{expected}\"",
                    k + 1
                ),
            };
            return Err(SqlError::new(code::BAD_COPY_FILE_FORMAT, message).with_context(context));
        }
        Ok(())
    }
}

/// A field's text read as a value of its column, as a cast from text on assignment:
/// the type's input function, then `char(n)`'s padding, `varchar(n)`'s and
/// `numeric(p,s)`'s limits.
fn input(text: &str, col: &Column, declared: &DeclaredType) -> SqlResult<Value> {
    if declared.ty.is_text() {
        return crate::dml::assign_from(Value::Text(text.to_owned()), SqlType::Text, col);
    }
    let v = crate::value::parse_text(text, declared.ty)?;
    crate::value::fit_numeric(v, declared)
}
