//! Scripts: statements split and run one after another with their outcomes, the
//! `execute` API, and a script's COPY (data from the script, or a client's handler).

use std::time::Instant;

use sqlparser::ast::Statement;

use super::{CopyClient, Outcome, Session, StatementResult};
use crate::copy::CopyStart;
use crate::error::{code, SqlError, SqlResult};
use crate::guard::size_text;
use crate::script::{parse_psql_script, parse_script, LineIndex, Parsed};
use crate::statement::RowSink;

impl Session {
    /// Runs every statement of a script, calling `on` after each; stops when `on`
    /// returns false. A script that cannot be split (an unterminated quote) is one error.
    ///
    /// A `COPY ... FROM STDIN` takes its data from the script, as psql does with a
    /// script file: the lines after the one the statement ends on, up to a line `\.`
    /// (none at the script's end: no rows). A `COPY ... TO STDOUT` gives its output in
    /// [`StatementResult::copy_data`].
    pub fn run_script(&mut self, script: &str, on: &mut dyn FnMut(Outcome) -> bool) {
        self.run_statements(script, None, None, on)
    }

    /// As [`Session::run_script`], each query's rows going to `rows` as they are made
    /// ([`StatementResult::streamed`]).
    pub fn run_script_to(
        &mut self,
        script: &str,
        rows: &mut dyn RowSink,
        on: &mut dyn FnMut(Outcome) -> bool,
    ) {
        self.run_statements(script, None, Some(rows), on)
    }

    /// Runs every statement of a script as [`Session::run_script`] does, but a COPY
    /// to or from the client (`FROM STDIN`, `TO STDOUT`) is handed, started, to `copy`,
    /// which exchanges its data with the client and returns its result (a server's
    /// CopyIn/CopyOut); the script holds no COPY data.
    pub fn run_script_with_copy(
        &mut self,
        script: &str,
        copy: &mut CopyClient<'_>,
        on: &mut dyn FnMut(Outcome) -> bool,
    ) {
        self.run_statements(script, Some(copy), None, on)
    }

    fn run_statements(
        &mut self,
        script: &str,
        mut copy: Option<&mut CopyClient<'_>>,
        mut rows: Option<&mut dyn RowSink>,
        on: &mut dyn FnMut(Outcome) -> bool,
    ) {
        let split = if copy.is_some() {
            parse_script(script)
        } else {
            parse_psql_script(script)
        };
        let statements = match split {
            Ok(s) => s,
            Err(mut e) => {
                let index = LineIndex::new(script);
                e.position = e
                    .location
                    .as_deref()
                    .filter(|l| l.line > 0)
                    .map(|l| index.offset(*l) + 1);
                on(Outcome {
                    text: script.to_string(),
                    result: Err(e),
                });
                return;
            }
        };
        let index = LineIndex::new(script);
        for s in statements {
            let result = match s.parsed {
                Ok(Parsed::Copy(c)) => {
                    let r = match copy.as_deref_mut() {
                        Some(client) => {
                            crate::copy::start(self, *c).and_then(|started| client(self, started))
                        }
                        None => {
                            let data = s
                                .copy_data
                                .clone()
                                .map_or(&[][..], |r| &script.as_bytes()[r]);
                            self.copy_with_data(*c, data)
                        }
                    };
                    r.map_err(|e| locate(e, &s.text, s.start_char, Some(&index)))
                }
                parsed => self.run_parsed(
                    &s.text,
                    s.start_char,
                    Some(&index),
                    parsed,
                    rows.as_deref_mut().map(|r| r as &mut dyn RowSink),
                ),
            };
            if !on(Outcome {
                text: s.text,
                result,
            }) {
                return;
            }
        }
    }

    /// Starts a COPY to or from the client, `sql` being that one statement: for a
    /// server, which then exchanges the data with the client through the [`CopyIn`] or
    /// [`CopyOut`] it returns (see [`crate::copy`]). The statement is checked now (its
    /// table, columns and options): an error here comes before any data and, inside a
    /// transaction block, aborts it, as any statement's error does. Other statements
    /// are refused (run them with [`Session::run_script`]).
    ///
    /// [`CopyIn`]: crate::copy::CopyIn
    /// [`CopyOut`]: crate::copy::CopyOut
    pub fn copy_start(&mut self, sql: &str) -> SqlResult<CopyStart> {
        let mut statements = match parse_script(sql) {
            Ok(s) => s,
            Err(e) => return Err(locate(self.fail(e), sql, 0, None)),
        };
        let one = statements
            .pop()
            .filter(|_| statements.is_empty())
            .ok_or_else(|| SqlError::syntax("copy_start takes exactly one COPY statement"))?;
        match one.parsed {
            Ok(Parsed::Copy(c)) => {
                crate::copy::start(self, *c).map_err(|e| locate(e, &one.text, one.start_char, None))
            }
            Ok(_) => Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "copy_start takes a COPY statement; run other statements with run_script",
            )),
            Err(e) => Err(locate(self.fail(e), &one.text, one.start_char, None)),
        }
    }

    /// A COPY whose data is `data` (FROM STDIN) or whose output is kept in the result
    /// (TO STDOUT), up to `statement_mem`.
    fn copy_with_data(
        &mut self,
        stmt: crate::copy::statement::CopyStatement,
        data: &[u8],
    ) -> SqlResult<StatementResult> {
        match crate::copy::start(self, stmt)? {
            CopyStart::In(mut c) => {
                c.data(self, data)?;
                c.finish(self)
            }
            CopyStart::Out(c) => {
                let limit = self.settings.now().statement_mem_bytes;
                let mut out = Vec::new();
                let mut r = c.run(self, &mut |line| {
                    if (out.len() + line.len()) as u64 > limit {
                        return Err(SqlError::new(
                            code::OUT_OF_MEMORY,
                            format!(
                                "out of memory: COPY TO STDOUT's output is more than statement_mem ({})",
                                size_text(limit)
                            ),
                        ));
                    }
                    out.extend_from_slice(line);
                    Ok(())
                })?;
                r.copy_data = Some(
                    String::from_utf8(out)
                        .map_err(|_| SqlError::new(code::INTERNAL, "COPY output is not UTF-8"))?,
                );
                Ok(r)
            }
        }
    }

    /// Runs one parsed statement of a text, starting at character `start_char` of the
    /// script `index` maps (errors' locations are in the statement's own text when
    /// there is no index).
    pub(super) fn run_parsed(
        &mut self,
        text: &str,
        start_char: usize,
        index: Option<&LineIndex>,
        parsed: SqlResult<Parsed>,
        rows: Option<&mut dyn RowSink>,
    ) -> SqlResult<StatementResult> {
        if let Ok(Parsed::Copy(c)) = parsed {
            // Outside a script (a prepared COPY): no data to take.
            return self
                .copy_with_data(*c, &[])
                .map_err(|e| locate(e, text, start_char, index));
        }
        self.guard = self.start_guard();
        self.guard
            .set_timeout(self.settings.now().client.statement_timeout);
        let started = Instant::now();
        // Two copies of the database's counters per statement are not free: only
        // when asked for.
        let before = self.statement_stats.then(|| self.db.stats());
        // A DECLARE keeps its text as the client sent it (`pg_cursors.statement`).
        self.statement_text = match &parsed {
            Ok(Parsed::Statement { stmt, .. }) if matches!(**stmt, Statement::Declare { .. }) => {
                Some(text.to_string())
            }
            _ => None,
        };
        let result = match parsed {
            // Binding and running recurse as deep as the statement nests.
            Ok(p) => crate::depth::with_stack(p.stack_bytes(), || self.execute_parsed(p, rows)),
            Err(e) => Err(self.fail(e)),
        };
        let result = match (result, self.settle_sequences()) {
            (Ok(_), Err(e)) => Err(e),
            (r, _) => r,
        };
        if result.is_ok() {
            // What set_config changed.
            let in_block = self.in_transaction_block();
            if let Some(s) = self.guard.take_settings().and_then(|s| s.changed(in_block)) {
                self.settings = s;
            }
        }
        match result {
            Ok(out) => Ok(StatementResult {
                tag: out.tag,
                columns: out.columns,
                rows: out.rows,
                notices: out.notices,
                copy_data: None,
                streamed: out.streamed,
                binary: out.binary,
                stats: before.map(|b| self.db.stats().since(&b)),
                elapsed: started.elapsed(),
            }),
            Err(e) => Err(locate(e, text, start_char, index)),
        }
    }

    /// Runs a script and returns each statement's result; stops at the first error.
    pub fn execute(&mut self, script: &str) -> SqlResult<Vec<StatementResult>> {
        let mut results = Vec::new();
        let mut failure = None;
        self.run_script(script, &mut |o| match o.result {
            Ok(r) => {
                results.push(r);
                true
            }
            Err(e) => {
                failure = Some(e);
                false
            }
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(results),
        }
    }

    /// Runs one statement and returns its result (the last, if the text holds several).
    pub fn execute_one(&mut self, sql: &str) -> SqlResult<StatementResult> {
        self.execute(sql)?
            .pop()
            .ok_or_else(|| SqlError::syntax("empty statement"))
    }
}

/// Gives an error pointing into the script its position in the statement: `text`, which
/// starts at character `start_char` of the script `index` maps (the statement's own
/// text when there is no index).
fn locate(mut e: SqlError, text: &str, start_char: usize, index: Option<&LineIndex>) -> SqlError {
    if let Some(&loc) = e.location.as_deref().filter(|l| l.line > 0) {
        let at = match index {
            Some(index) => index.offset(loc),
            None => LineIndex::new(text).offset(loc),
        };
        e.position = Some(at.saturating_sub(start_char) + 1);
    }
    e
}
