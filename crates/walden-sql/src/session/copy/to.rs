//! COPY TO STDOUT: a table's rows (read as they are written out, so a table of any
//! size goes through bounded memory) or a query's, each written as one line of text
//! or CSV with the type's output text, as PostgreSQL writes them.

use std::io::Write;

use sqlparser::ast;
use walden::{Transaction, Value};

use super::csv;
use super::statement::{CopyFormat, CopyOptions, CopySource, CopyStatement, ForceQuote, Header};
use super::{result, Started};
use crate::error::{code, SqlError, SqlResult};
use crate::select::QueryPlan;
use crate::session::{Session, StatementResult};

/// A COPY TO STDOUT ready to run: [`CopyOut::run`] gives its bytes, one row per call of
/// the sink (as PostgreSQL sends one CopyData per row).
pub struct CopyOut {
    source: Source,
    options: CopyOptions,
    /// The columns' names (for HEADER) and whether each is FORCE_QUOTE'd.
    names: Vec<String>,
    force_quote: Vec<bool>,
    started: Started,
}

enum Source {
    /// A table, read row by row: these of its columns.
    Table { name: String, positions: Vec<usize> },
    /// A query, planned when the COPY starts (its errors come before any data).
    Query(Box<QueryPlan>, usize),
}

pub(super) fn start(
    session: &mut Session,
    stmt: CopyStatement,
    started: Started,
) -> SqlResult<CopyOut> {
    let (source, names, all_names, table) = match &stmt.source {
        CopySource::Table { name, columns, .. }
            if session.database().schema(name).is_err()
                && session.database().view(name).is_none()
                && crate::pg_catalog::is_pg_catalog_name(name) =>
        {
            // A relation of the virtual catalog: read as the query of it.
            let list = if columns.is_empty() {
                "*".to_string()
            } else {
                let quoted: Vec<String> = columns.iter().map(|(c, _)| format!("\"{c}\"")).collect();
                quoted.join(", ")
            };
            let sql = format!("select {list} from pg_catalog.\"{name}\"");
            let (plan, stack) = plan_text(session, &sql)?;
            let names: Vec<String> = plan.columns().iter().map(|(n, _)| n.clone()).collect();
            (
                Source::Query(plan, stack),
                names.clone(),
                names,
                Some(name.clone()),
            )
        }
        CopySource::Table { columns, .. } => {
            let name = super::table_of(session, &stmt.source, false)?;
            let schema = session.database().schema(&name)?;
            let positions = super::column_positions(&name, &schema, columns)?;
            let names = positions
                .iter()
                .map(|&i| schema.columns[i].name.clone())
                .collect();
            let all = schema.columns.iter().map(|c| c.name.clone()).collect();
            (
                Source::Table {
                    name: name.clone(),
                    positions,
                },
                names,
                all,
                Some(name),
            )
        }
        CopySource::Query(q) => {
            let ast::Statement::Query(query) = &**q else {
                return Err(SqlError::new(code::INTERNAL, "COPY of a statement"));
            };
            let stack = q.stack_bytes();
            let plan = crate::depth::with_stack(stack, || {
                QueryPlan::plan(query, &crate::view::catalog_of(session.database()))
            })?;
            let names: Vec<String> = plan.columns().iter().map(|(n, _)| n.clone()).collect();
            (
                Source::Query(Box::new(plan), stack),
                names.clone(),
                names,
                None,
            )
        }
    };
    let force_quote = match &stmt.options.force_quote {
        ForceQuote::None => vec![false; names.len()],
        ForceQuote::All => vec![true; names.len()],
        ForceQuote::Columns(list) => {
            let t = table
                .as_deref()
                .filter(|_| matches!(source, Source::Table { .. }));
            super::forced("FORCE_QUOTE", list, &names, &all_names, t)?
        }
    };
    Ok(CopyOut {
        source,
        options: stmt.options,
        names,
        force_quote,
        started,
    })
}

/// Plans a query Walden writes itself (of a catalog relation).
fn plan_text(session: &Session, sql: &str) -> SqlResult<(Box<QueryPlan>, usize)> {
    let parsed = crate::script::parse_script(sql)?
        .pop()
        .ok_or_else(|| SqlError::new(code::INTERNAL, "no query"))?
        .parsed?;
    let crate::script::Parsed::Statement { stmt, .. } = parsed else {
        return Err(SqlError::new(code::INTERNAL, "not a query"));
    };
    let ast::Statement::Query(query) = &*stmt else {
        return Err(SqlError::new(code::INTERNAL, "not a query"));
    };
    let plan = QueryPlan::plan(query, &crate::view::catalog_of(session.database()))?;
    Ok((Box::new(plan), stmt.stack_bytes()))
}

impl CopyOut {
    /// How many columns each row has (CopyOutResponse's column count).
    pub fn columns(&self) -> usize {
        self.names.len()
    }

    /// The data's format (both are sent as the protocol's text format, 0).
    pub fn format(&self) -> CopyFormat {
        self.options.format
    }

    /// Writes the rows: `sink` gets the header line, if asked for, then each row's line
    /// (ending in a newline), one call each; an error from it stops the COPY. Outside a
    /// transaction block the COPY reads in a transaction of its own; an error inside
    /// one aborts the block. The tag is `COPY n`.
    pub fn run(
        self,
        session: &mut Session,
        sink: &mut dyn FnMut(&[u8]) -> SqlResult<()>,
    ) -> SqlResult<StatementResult> {
        let rows = session.transactional(|s, t| self.write_rows(s, t, sink))?;
        Ok(result(session, rows, &self.started))
    }

    fn write_rows(
        &self,
        session: &mut Session,
        t: &mut Transaction,
        sink: &mut dyn FnMut(&[u8]) -> SqlResult<()>,
    ) -> SqlResult<u64> {
        let mut line = Vec::new();
        if self.options.header == Header::Yes {
            let names: Vec<Value> = self.names.iter().map(|n| Value::Text(n.clone())).collect();
            self.line(&mut line, names.iter(), false);
            sink(&line)?;
        }
        let mut rows = 0u64;
        match &self.source {
            Source::Table { name, positions } => {
                let cx = session.ctx();
                let shape = walden::RowShape::default();
                t.reader()?
                    .read(walden::Rows::Table(name), shape, |_, row| {
                        cx.guard.check()?;
                        self.line(&mut line, positions.iter().map(|&i| &row[i]), true);
                        sink(&line)?;
                        rows += 1;
                        Ok::<_, SqlError>(std::ops::ControlFlow::Continue(()))
                    })?;
            }
            Source::Query(plan, stack) => {
                // The rows are written as the executor's stream makes them.
                let cx = session.ctx();
                let reader = t.reader()?;
                rows = crate::depth::with_stack(*stack, || {
                    crate::exec::with_run(Some(reader), cx.rng, cx.guard, |ecx| {
                        let mut stream = crate::exec::RowStream::open(plan, ecx)?;
                        let mut n = 0u64;
                        while let Some(row) = stream.next(ecx)? {
                            self.line(&mut line, row.iter(), true);
                            sink(&line)?;
                            n += 1;
                        }
                        Ok::<u64, crate::error::SqlError>(n)
                    })
                })?;
            }
        }
        Ok(rows)
    }

    /// One line: the values in the format, NULL as the NULL option, and a newline.
    /// `quoting` applies FORCE_QUOTE (not to the header).
    fn line<'v>(&self, out: &mut Vec<u8>, values: impl Iterator<Item = &'v Value>, quoting: bool) {
        out.clear();
        let o = &self.options;
        let form = csv::Csv {
            delimiter: o.delimiter,
            quote: o.quote,
            escape: o.escape,
            null: o.null.as_bytes(),
        };
        let one_column = self.names.len() == 1;
        for (k, v) in values.enumerate() {
            if k > 0 {
                out.push(o.delimiter);
            }
            // Text is written from where it lies; other values through their text.
            let shown;
            let text = match v {
                Value::Null => {
                    out.extend_from_slice(o.null.as_bytes());
                    continue;
                }
                Value::Text(s) => s.as_str(),
                Value::Int4(x) if o.format == CopyFormat::Text => {
                    let _ = write!(out, "{x}");
                    continue;
                }
                Value::Int8(x) if o.format == CopyFormat::Text => {
                    let _ = write!(out, "{x}");
                    continue;
                }
                other => {
                    shown = crate::value::display(other);
                    shown.as_str()
                }
            };
            match o.format {
                CopyFormat::Text => super::text::write(out, text, o.delimiter),
                CopyFormat::Csv => {
                    let force = quoting && self.force_quote.get(k).copied().unwrap_or(false);
                    csv::write(out, text, form, force, one_column)
                }
            }
        }
        out.push(b'\n');
    }
}
