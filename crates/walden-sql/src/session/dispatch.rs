//! Running one statement: its guard started and settled, the statement dispatched to
//! what runs its kind, an error aborting the block.

use std::time::Instant;

use sqlparser::ast::{self, Statement};

use super::{aborted, no_block, Session, TxnState};
use crate::catalog::ident_name;
use crate::ddl;
use crate::error::{code, SqlError, SqlResult};
use crate::guard::Guard;
use crate::script::Parsed;
use crate::settings::StatementSettings;
use crate::statement::{Output, RowSink};

impl Session {
    /// Starts a statement that runs over several calls (a COPY): its checks and its
    /// now(); refused in an aborted transaction block.
    pub(crate) fn start_statement(&mut self) -> SqlResult<crate::copy::Started> {
        self.guard = self.start_guard();
        if matches!(self.txn, TxnState::Failed(_)) {
            return Err(aborted());
        }
        self.statement_starts().map_err(|e| self.fail(e))?;
        Ok(crate::copy::Started {
            at: Instant::now(),
            stats: Box::new(self.db.stats()),
        })
    }

    /// Takes back what the last statement's guard holds of the session's sequences, and
    /// makes the WAL durable to what its values need when no transaction block is open
    /// to wait for it at its end (docs/recovery.md rule 38): a statement's sequence
    /// values are durable before its result reaches the client, whatever became of the
    /// statement.
    pub(super) fn settle_sequences(&mut self) -> SqlResult<()> {
        let Some(s) = self.guard.take_sequences() else {
            return Ok(());
        };
        let (state, lsn) = s.finish();
        self.sequences = state;
        if lsn == 0 {
            return Ok(());
        }
        match &mut self.txn {
            TxnState::Block(t) => t.needs_durable(lsn),
            _ if self.settings.now().synchronous_commit => self.db.flush_wal_to(lsn)?,
            _ => {}
        }
        Ok(())
    }

    /// The checks, now() and settings of a statement starting.
    pub(super) fn start_guard(&mut self) -> Guard {
        // A statement run over several calls (a COPY) leaves its sequences here.
        if let Err(e) = self.settle_sequences() {
            // Only a failed flush: the database is fenced, and says so next.
            drop(e);
        }
        let settings = self.settings.now();
        // Lock waits stop at this statement's deadlines (a COPY's too, over its calls).
        self.limits.statement_starts(
            settings.client.statement_timeout,
            settings.client.lock_timeout,
        );
        let mut guard = Guard::start(&self.cancel, settings.statement_mem_bytes);
        guard.set_advisory(self.db.clone(), self.backend);
        guard.set_spilling(settings.work_mem_bytes, self.db.temp_space());
        let now = self.statement_now();
        guard.set_now_micros(now);
        guard.set_settings(
            StatementSettings::new(
                &self.settings,
                self.in_transaction_block(),
                self.isolation_now(),
                &self.db,
            )
            .with_read_only(self.read_only_now())
            .with_cursors(self.cursor_list()),
        );
        let auth = self.authority();
        let read_only = self.read_only_now();
        guard.set_sequences(
            crate::sequences::StatementSequences::new(
                &self.db,
                std::mem::take(&mut self.sequences),
                Some(auth),
            )
            .with_read_only(read_only),
        );
        guard
    }

    /// The error of a statement: inside a transaction block it aborts the block. Also
    /// for an error the session's caller found before handing a statement over (the
    /// server: a query that is not UTF-8).
    pub fn fail_statement(&mut self, e: SqlError) -> SqlError {
        self.fail(e)
    }

    /// Fails with 57014 if the running statement was asked to stop.
    pub(crate) fn check_cancel(&self) -> SqlResult<()> {
        self.guard.check()
    }

    /// 25006 for `command` in a READ ONLY transaction (it aborts the block).
    pub(crate) fn refuse_if_read_only(&mut self, command: &str) -> SqlResult<()> {
        if self.read_only_now() {
            let e = crate::isolation::read_only_refusal(command);
            return Err(self.fail(e));
        }
        Ok(())
    }

    /// An error inside a transaction block aborts the block.
    ///
    /// A block with savepoints keeps its transaction, aborted, for a ROLLBACK TO; one
    /// without rolls back now.
    pub(super) fn fail(&mut self, e: SqlError) -> SqlError {
        match std::mem::replace(&mut self.txn, TxnState::Auto) {
            TxnState::Block(t) if !self.savepoints.is_empty() => {
                self.txn = TxnState::Failed(Some(t));
            }
            TxnState::Block(t) => {
                self.cursors_at_rollback();
                let _ = t.rollback();
                self.txn = TxnState::Failed(None);
                // The block's SETs are undone now, as PostgreSQL undoes them on abort.
                self.settings.rollback();
            }
            other => self.txn = other,
        }
        e
    }

    pub(super) fn execute_parsed(
        &mut self,
        p: Parsed,
        rows: Option<&mut dyn RowSink>,
    ) -> SqlResult<Output> {
        match p {
            Parsed::Checkpoint => {
                if matches!(self.txn, TxnState::Failed(_)) {
                    return Err(aborted());
                }
                self.db.checkpoint()?;
                Ok(Output::tag("CHECKPOINT"))
            }
            Parsed::Reindex { table, name } => {
                if matches!(self.txn, TxnState::Failed(_)) {
                    return Err(aborted());
                }
                self.refuse_if_read_only("REINDEX")?;
                if matches!(self.txn, TxnState::Block(_)) {
                    let e = no_block("REINDEX");
                    return Err(self.fail(e));
                }
                ddl::reindex(&mut self.ctx(), table, &name)
            }
            Parsed::Maintenance(m) => self.maintenance(&m),
            // (Copies are run by `run_parsed`, with their data.)
            Parsed::Copy(_) => Err(SqlError::new(code::INTERNAL, "a COPY run as a query")),
            Parsed::Role(stmt, notices) => {
                if matches!(self.txn, TxnState::Failed(_)) {
                    return Err(aborted());
                }
                self.refuse_if_read_only(crate::roles::command(&stmt))?;
                if matches!(self.txn, TxnState::Block(_)) {
                    let e = no_block(crate::roles::command(&stmt));
                    return Err(self.fail(e));
                }
                let user = self.current_user();
                crate::roles::run(&self.db, &user, stmt, notices)
            }
            Parsed::Grant(stmt) => {
                if matches!(self.txn, TxnState::Failed(_)) {
                    return Err(aborted());
                }
                self.refuse_if_read_only(crate::privileges::grant::command(&stmt))?;
                if matches!(self.txn, TxnState::Block(_)) {
                    let e = no_block(crate::privileges::grant::command(&stmt));
                    return Err(self.fail(e));
                }
                let auth = self.authority();
                let session_user = self.user();
                crate::privileges::grant::run(&self.db, &auth, &session_user, stmt)
            }
            Parsed::Sequence(stmt) => {
                if matches!(self.txn, TxnState::Failed(_)) {
                    return Err(aborted());
                }
                self.refuse_if_read_only(crate::ddl::sequence::command(&stmt))?;
                if matches!(self.txn, TxnState::Block(_)) {
                    let e = no_block(crate::ddl::sequence::command(&stmt));
                    return Err(self.fail(e));
                }
                let auth = self.authority();
                crate::ddl::sequence::run(&self.db, &auth, stmt)
            }
            Parsed::Statement { stmt, table_kind } => {
                self.execute_statement(&stmt, table_kind, rows)
            }
            Parsed::Cursor(c) => self.cursor_statement(c),
            Parsed::Prepared(run) => {
                let template = run.statement();
                self.prepared_run = Some(run);
                let r = self.execute_statement(template.statement(), template.table_kind(), rows);
                self.prepared_run = None;
                r
            }
        }
    }

    fn execute_statement(
        &mut self,
        stmt: &Statement,
        table_kind: Option<(String, sqlparser::tokenizer::Location)>,
        rows: Option<&mut dyn RowSink>,
    ) -> SqlResult<Output> {
        match stmt {
            Statement::StartTransaction { modes, .. } => return self.begin(modes),
            Statement::Commit { chain, .. } => return self.commit(*chain),
            Statement::Rollback {
                chain,
                savepoint: None,
            } => return self.rollback(*chain),
            Statement::Rollback {
                chain: false,
                savepoint: Some(name),
            } => return self.rollback_to_savepoint(name),
            Statement::Savepoint { name } => return self.savepoint(name),
            Statement::ReleaseSavepoint { name } => return self.release_savepoint(name),
            _ => {}
        }
        if matches!(self.txn, TxnState::Failed(_)) {
            return Err(aborted());
        }
        if !matches!(
            stmt,
            Statement::Set(_) | Statement::Reset(_) | Statement::ShowVariable { .. }
        ) {
            self.statement_starts().map_err(|e| self.fail(e))?;
        }
        match stmt {
            Statement::Prepare {
                name,
                data_types,
                statement,
            } => {
                return self
                    .sql_prepare(name, data_types, statement)
                    .map_err(|e| self.fail(e))
            }
            Statement::Execute {
                name: Some(name),
                parameters,
                immediate: false,
                into,
                using,
                ..
            } if into.is_empty() && using.is_empty() => {
                return self.sql_execute(name, parameters).map_err(|e| self.fail(e))
            }
            Statement::Deallocate { name, .. } => {
                let n = ident_name(name);
                if n == "all" && name.quote_style.is_none() {
                    self.prepared.clear();
                } else if self.prepared.remove(&n).is_none() {
                    let e = SqlError::new(
                        code::UNDEFINED_PSTATEMENT,
                        format!("prepared statement \"{n}\" does not exist"),
                    );
                    return Err(self.fail(e));
                }
                return Ok(Output::tag("DEALLOCATE"));
            }
            Statement::Declare { .. } => return self.declare(stmt),
            Statement::Set(set) => return self.set(set).map_err(|e| self.fail(e)),
            Statement::Reset(r) => return self.reset(r).map_err(|e| self.fail(e)),
            Statement::ShowVariable { variable } => {
                return self.show(variable).map_err(|e| self.fail(e))
            }
            _ => {}
        }
        if self.read_only_now() {
            if let Some(command) = writing_command(stmt) {
                let e = crate::isolation::read_only_refusal(command);
                return Err(self.fail(e));
            }
        }
        // What the statement reads and writes, checked for the current user before it
        // runs (each run of a prepared statement too: privileges may have changed).
        let auth = self.authority();
        if !auth.superuser {
            // A prepared statement that passed for this role with roles, privileges
            // and the catalog as they are passes again (the generation is read before
            // the check: a change meanwhile makes the next run check again).
            let template = self.prepared_run.as_ref().map(|r| r.statement());
            let catalog = self.db.catalog_generation();
            let memo = template
                .as_ref()
                .and_then(|t| t.checked_for(&auth.user, auth.generation, catalog));
            let checked = match memo {
                Some(unreadable) => Ok(unreadable),
                None => crate::privileges::check::check_statement(&self.db, &auth, stmt),
            };
            if let (Some(t), Ok(unreadable), None) = (&template, &checked, memo) {
                t.remember_check(&auth.user, auth.generation, catalog, *unreadable);
            }
            match checked {
                Err(e) => return Err(self.fail(e)),
                Ok(true) => {
                    return self
                        .run_checked(stmt, table_kind, rows)
                        .map_err(crate::error::without_row_details)
                }
                Ok(false) => {}
            }
        }
        self.run_checked(stmt, table_kind, rows)
    }

    /// Runs a statement whose privileges were checked.
    fn run_checked(
        &mut self,
        stmt: &Statement,
        table_kind: Option<(String, sqlparser::tokenizer::Location)>,
        rows: Option<&mut dyn RowSink>,
    ) -> SqlResult<Output> {
        let ddl = matches!(
            stmt,
            Statement::CreateTable(_)
                | Statement::CreateIndex(_)
                | Statement::AlterTable(_)
                | Statement::Drop { .. }
                | Statement::CreateView(_)
        );
        if ddl {
            return self.transactional(|s, t| s.ddl_in(t, stmt, table_kind));
        }
        if let Statement::Lock(l) = stmt {
            if matches!(self.txn, TxnState::Auto) {
                return Err(crate::lock::outside_block());
            }
            return self.transactional(|s, t| crate::lock::lock_tables(&mut s.ctx(), t, l));
        }
        self.transactional(|s, t| s.in_transaction(t, stmt, rows))
    }

    /// VACUUM (outside a transaction block), then the ANALYZE it asks for in a
    /// transaction of its own; ANALYZE alone in the session's transaction.
    fn maintenance(&mut self, m: &crate::vacuum::Maintenance) -> SqlResult<Output> {
        if matches!(self.txn, TxnState::Failed(_)) {
            return Err(aborted());
        }
        self.statement_starts().map_err(|e| self.fail(e))?;
        if !m.vacuum {
            return self.transactional(|s, t| crate::vacuum::analyze(&mut s.ctx(), t, m));
        }
        if matches!(self.txn, TxnState::Block(_)) {
            let e = no_block("VACUUM");
            return Err(self.fail(e));
        }
        let mut notices = Vec::new();
        let analyze = crate::vacuum::vacuum(&mut self.ctx(), m, &mut notices)?;
        if !analyze.is_empty() {
            self.transactional(|s, t| {
                let mut cx = s.ctx();
                for table in &analyze {
                    crate::analyze::analyze_table(&mut cx, t, table)?;
                }
                Ok(())
            })?;
        }
        let mut out = Output::tag("VACUUM");
        out.notices = notices;
        Ok(out)
    }
}

/// The command a READ ONLY transaction refuses, named as PostgreSQL names it in its
/// 25006 error, if `stmt` writes (a table, the catalog, or a row lock).
fn writing_command(stmt: &Statement) -> Option<&'static str> {
    Some(match stmt {
        Statement::Insert(_) => "INSERT",
        Statement::Update(_) => "UPDATE",
        Statement::Delete(_) => "DELETE",
        Statement::Truncate(_) => "TRUNCATE TABLE",
        Statement::CreateTable(_) => "CREATE TABLE",
        Statement::CreateIndex(_) => "CREATE INDEX",
        Statement::CreateView(_) => "CREATE VIEW",
        Statement::AlterTable(_) => "ALTER TABLE",
        Statement::Drop { object_type, .. } => match object_type {
            ast::ObjectType::Table => "DROP TABLE",
            ast::ObjectType::Index => "DROP INDEX",
            ast::ObjectType::View => "DROP VIEW",
            ast::ObjectType::Sequence => "DROP SEQUENCE",
            _ => "DROP",
        },
        Statement::Explain {
            statement,
            analyze: true,
            ..
        } => return writing_command(statement),
        Statement::Query(q) => {
            for cte in q.with.iter().flat_map(|w| &w.cte_tables) {
                if let Some(c) = writing_command(&Statement::Query(cte.query.clone())) {
                    return Some(c);
                }
            }
            match q.body.as_ref() {
                ast::SetExpr::Insert(_) => "INSERT",
                ast::SetExpr::Update(_) => "UPDATE",
                ast::SetExpr::Delete(_) => "DELETE",
                _ => match q.locks.first().map(|l| l.lock_type) {
                    Some(ast::LockType::Update) => "SELECT FOR UPDATE",
                    Some(ast::LockType::Share) => "SELECT FOR SHARE",
                    None => return None,
                },
            }
        }
        _ => return None,
    })
}

pub(super) fn unsupported_statement(stmt: &Statement) -> SqlError {
    let text = stmt.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    SqlError::unsupported(words.join(" ").to_uppercase())
}
