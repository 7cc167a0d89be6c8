//! Prepared statements: the API's prepare, execute and describe, and SQL's PREPARE
//! and EXECUTE.

use std::time::Duration;

use sqlparser::ast::{self, Statement};
use walden::Value;

use super::{aborted, Session, StatementResult, TxnState};
use crate::catalog::{ident_name, object_name, Scope};
use crate::describe::Description;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::prepared::Prepared;
use crate::script::LineIndex;
use crate::statement::{Output, RowSink};
use crate::types::SqlType;

impl Session {
    /// Prepares one statement with parameters `$1`, `$2`, ... to run many times with
    /// [`Session::execute_prepared`].
    pub fn prepare(&self, sql: &str) -> SqlResult<Prepared> {
        Prepared::new(sql, Vec::new())
    }

    /// Runs a prepared statement with these parameter values. A value is converted to
    /// its parameter's declared type, if it has one. Values of the types
    /// [`Session::describe`] gives (NULLs included) give the result it describes; a
    /// value of another type, for a parameter of no declared type, is taken as a
    /// literal of its own type would be in the statement's text. The empty statement
    /// ([`Prepared::is_empty`]) gives a result with an empty tag.
    pub fn execute_prepared(
        &mut self,
        p: &Prepared,
        params: &[Value],
    ) -> SqlResult<StatementResult> {
        if p.is_empty() {
            return Ok(StatementResult {
                tag: String::new(),
                columns: Vec::new(),
                rows: Vec::new(),
                notices: Vec::new(),
                stats: None,
                elapsed: Duration::ZERO,
                copy_data: None,
                streamed: false,
                binary: false,
            });
        }
        let parsed = p.with_values(params, &self.db);
        self.run_parsed(p.text(), 0, None, parsed, None)
    }

    /// As [`Session::execute_prepared`], a query's rows going to `rows` as they are
    /// made ([`StatementResult::streamed`]).
    pub fn execute_prepared_to(
        &mut self,
        p: &Prepared,
        params: &[Value],
        rows: &mut dyn RowSink,
    ) -> SqlResult<StatementResult> {
        if p.is_empty() {
            return self.execute_prepared(p, params);
        }
        let parsed = p.with_values(params, &self.db);
        self.run_parsed(p.text(), 0, None, parsed, Some(rows))
    }

    /// Describes a prepared statement without running it, as PostgreSQL answers the
    /// wire protocol's Describe: the type of each parameter (the declared one, or the
    /// one inferred from where the statement uses it) and the names and types of the
    /// columns [`Session::execute_prepared`] will return with values of those types
    /// (none for a statement that returns no rows: RETURNING lists, SHOW's column and
    /// EXPLAIN's `QUERY PLAN` are columns). Nothing is read or written; the catalog is
    /// read as it stands.
    ///
    /// It reports the errors PostgreSQL reports when a statement is parsed (an unknown
    /// table, a type mismatch, 42P18 for a parameter whose type cannot be determined,
    /// 42P08 for one given two types), so a server calls it on Parse. As in
    /// PostgreSQL, an error aborts the transaction block, and in an aborted block only
    /// COMMIT, ROLLBACK and the empty statement are described (25P02 otherwise).
    pub fn describe(&mut self, p: &Prepared) -> SqlResult<Description> {
        if matches!(self.txn, TxnState::Failed(_)) && !p.ends_transaction() {
            return Err(aborted());
        }
        let described = (|| {
            let params = p.param_types(&self.db)?;
            let columns = match p.statement() {
                Some(Statement::ShowVariable { variable }) => self.show_columns(variable)?,
                Some(Statement::Execute {
                    name: Some(name), ..
                }) => self.described_execute(name)?,
                None => match p.cursor_statement() {
                    Some(c) => self.cursor_columns(&c),
                    None => p.columns(&self.db, &params)?,
                },
                _ => p.columns(&self.db, &params)?,
            };
            Ok(Description { params, columns })
        })();
        described.map_err(|mut e: SqlError| {
            if let Some(loc) = e.location.as_deref().filter(|l| l.line > 0) {
                e.position = Some(LineIndex::new(p.text()).offset(*loc) + 1);
            }
            self.fail(e)
        })
    }

    /// The columns of `EXECUTE name (...)`: those its prepared statement describes.
    fn described_execute(&self, name: &ast::ObjectName) -> SqlResult<Vec<(String, SqlType)>> {
        let n = object_name(name)?;
        let p = self.prepared.get(&n).ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_PSTATEMENT,
                format!("prepared statement \"{n}\" does not exist"),
            )
        })?;
        let params = p.param_types(&self.db)?;
        p.columns(&self.db, &params)
    }

    pub(super) fn sql_prepare(
        &mut self,
        name: &ast::Ident,
        types: &[ast::DataType],
        statement: &Statement,
    ) -> SqlResult<Output> {
        let n = ident_name(name);
        if self.prepared.contains_key(&n) {
            return Err(SqlError::new(
                code::DUPLICATE_PSTATEMENT,
                format!("prepared statement \"{n}\" already exists"),
            ));
        }
        for t in types {
            crate::types::declared_type(t, false)?;
        }
        let types = types.iter().cloned().map(Some).collect();
        let p = Prepared::new(&statement.to_string(), types)?;
        self.prepared.insert(n, p);
        Ok(Output::tag("PREPARE"))
    }

    pub(super) fn sql_execute(
        &mut self,
        name: &ast::ObjectName,
        args: &[ast::Expr],
    ) -> SqlResult<Output> {
        let n = object_name(name)?;
        let p = self.prepared.get(&n).cloned().ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_PSTATEMENT,
                format!("prepared statement \"{n}\" does not exist"),
            )
        })?;
        if self.executing {
            return Err(SqlError::unsupported("EXECUTE inside EXECUTE"));
        }
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            let e = crate::bind::Binder::plain(&Scope::default()).bind(a)?;
            values.push(e.eval(&[], &mut EvalCtx::of(&mut self.rng, &self.guard))?);
        }
        let p = p.with_values(&values, &self.db)?;
        self.executing = true;
        let r = crate::depth::with_stack(p.stack_bytes(), || self.execute_parsed(p, None));
        self.executing = false;
        // A location would be one in the prepared text, not in the EXECUTE statement.
        r.map_err(|mut e| {
            e.location = None;
            e
        })
    }
}
