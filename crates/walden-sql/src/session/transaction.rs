//! Transaction blocks: BEGIN, COMMIT and ROLLBACK, a statement's transaction (the
//! block's, or one of its own in autocommit), isolation levels and statement snapshots.

use sqlparser::ast::{self, Statement};
use walden::{Transaction, Value};

use super::dispatch::unsupported_statement;
use super::{aborted, Session, TxnState};

/// 25P01: a statement that needs a transaction block, outside one.
fn no_block_for(what: &str) -> SqlError {
    SqlError::new(
        code::NO_ACTIVE_SQL_TRANSACTION,
        format!("{what} can only be used in transaction blocks"),
    )
}
use crate::catalog::ident_name;
use crate::ddl;
use crate::dml;
use crate::error::{code, SqlError, SqlResult};
use crate::isolation::{self, IsolationLevel};
use crate::statement::{Output, RowSink};

impl Session {
    /// A transaction of the session's default level, outside a block.
    fn begin_auto(&self) -> Transaction {
        self.new_transaction(self.settings.now().default_isolation)
    }

    /// A transaction of the session's backend at `level`, committing as the session's
    /// `synchronous_commit` says.
    fn new_transaction(&self, level: IsolationLevel) -> Transaction {
        let mut t = self
            .db
            .begin_for(level.engine(), self.backend, self.limits.clone());
        t.set_synchronous_commit(self.settings.now().synchronous_commit);
        t
    }

    /// A transaction block starts (BEGIN, AND CHAIN).
    fn start_block(&mut self, level: IsolationLevel, read_only: bool) {
        self.txn = TxnState::Block(Box::new(self.new_transaction(level)));
        self.settings.begin();
        self.block_isolation = level;
        self.block_read_only = read_only;
        self.block_snapshot_taken = false;
        self.savepoints.clear();
    }

    /// A statement that takes a snapshot starts (PostgreSQL's rule): in a block, a READ
    /// COMMITTED transaction reads it with a snapshot of its own, a REPEATABLE READ one
    /// with the one its first statement takes; outside a block the statement's own
    /// transaction has just taken one.
    pub(super) fn statement_starts(&mut self) -> SqlResult<()> {
        let TxnState::Block(t) = &mut self.txn else {
            return Ok(());
        };
        if t.isolation() == walden::Isolation::ReadCommitted || !self.block_snapshot_taken {
            t.new_statement_snapshot()?;
        }
        self.block_snapshot_taken = true;
        Ok(())
    }

    /// The transaction a COPY FROM holds over its calls, and whether it is the block's.
    /// A block's is taken out of the session, which is left with an aborted block until
    /// `release_transaction` gives it back: a COPY abandoned midway (its handle dropped)
    /// thus aborts the block, as an error would.
    pub(crate) fn hold_transaction(&mut self) -> (Box<Transaction>, bool) {
        match std::mem::replace(&mut self.txn, TxnState::Failed(None)) {
            TxnState::Block(t) => (t, true),
            other => {
                self.txn = other;
                (Box::new(self.begin_auto()), false)
            }
        }
    }

    /// Ends a COPY that succeeded: commits its own transaction, or gives the block's
    /// back.
    pub(crate) fn release_transaction(
        &mut self,
        t: Box<Transaction>,
        in_block: bool,
    ) -> SqlResult<()> {
        if !in_block {
            return Ok(t.commit()?);
        }
        if matches!(self.txn, TxnState::Failed(None)) {
            self.txn = TxnState::Block(t);
            return Ok(());
        }
        let _ = t.rollback();
        Err(SqlError::new(
            code::FAILED_TRANSACTION,
            "the transaction block ended while COPY ran",
        ))
    }

    /// A COPY FROM that held the block's transaction failed: a block with savepoints
    /// keeps it, aborted, for a ROLLBACK TO; one without rolls it back.
    pub(crate) fn copy_failed(&mut self, t: Box<Transaction>) {
        if matches!(self.txn, TxnState::Failed(None)) && !self.savepoints.is_empty() {
            self.txn = TxnState::Failed(Some(t));
        } else {
            let _ = t.rollback();
        }
    }

    /// Runs `f` in the session's transaction: the block's (an error aborts the block),
    /// or one of its own that commits when `f` succeeds and rolls back when it fails.
    pub(crate) fn transactional<R>(
        &mut self,
        f: impl FnOnce(&mut Session, &mut Transaction) -> SqlResult<R>,
    ) -> SqlResult<R> {
        match std::mem::replace(&mut self.txn, TxnState::Auto) {
            TxnState::Block(mut t) => {
                self.guard.set_xid(t.xid());
                let r = f(self, &mut t);
                self.txn = TxnState::Block(t);
                r.map_err(|e| self.fail(e))
            }
            TxnState::Auto => {
                let mut t = self.begin_auto();
                self.guard.set_xid(t.xid());
                match f(self, &mut t) {
                    Ok(o) => {
                        t.commit()?;
                        Ok(o)
                    }
                    Err(e) => {
                        let _ = t.rollback();
                        Err(e)
                    }
                }
            }
            failed @ TxnState::Failed(_) => {
                self.txn = failed;
                Err(aborted())
            }
        }
    }

    pub(super) fn in_transaction(
        &mut self,
        t: &mut Transaction,
        stmt: &Statement,
        rows: Option<&mut dyn RowSink>,
    ) -> SqlResult<Output> {
        let mut cx = self.ctx();
        cx.rows = rows.map(|r| r as &mut dyn RowSink);
        match stmt {
            Statement::Query(q) => dml::select(&mut cx, t, q),
            Statement::Insert(ins) => dml::insert(&mut cx, t, ins),
            Statement::Update(u) => dml::update(&mut cx, t, u),
            Statement::Delete(d) => dml::delete(&mut cx, t, d),
            Statement::Truncate(tr) => dml::truncate(&mut cx, t, tr),
            Statement::Explain {
                statement,
                analyze,
                options,
                ..
            } => {
                let analyze = *analyze
                    || options.as_ref().is_some_and(|o| {
                        o.iter().any(|u| {
                            ident_name(&u.name) == "analyze"
                                && u.arg.as_ref().is_none_or(|a| {
                                    !matches!(
                                        a.to_string().to_lowercase().as_str(),
                                        "false" | "off" | "0"
                                    )
                                })
                        })
                    });
                // COSTS OFF leaves out the estimated rows, as PostgreSQL's costs.
                let costs = !options.as_ref().is_some_and(|o| {
                    o.iter().any(|u| {
                        ident_name(&u.name) == "costs"
                            && u.arg.as_ref().is_some_and(|a| {
                                matches!(
                                    a.to_string().to_lowercase().as_str(),
                                    "false" | "off" | "0"
                                )
                            })
                    })
                });
                // FORMAT TEXT (the default) or JSON.
                let mut json = false;
                for u in options.iter().flatten() {
                    if ident_name(&u.name) != "format" {
                        continue;
                    }
                    let format = u.arg.as_ref().map(|a| a.to_string().to_lowercase());
                    match format.as_deref() {
                        Some("text") => json = false,
                        Some("json") => json = true,
                        Some(other) => {
                            return Err(SqlError::new(
                                code::FEATURE_NOT_SUPPORTED,
                                format!("EXPLAIN format \"{other}\" is not supported"),
                            )
                            .with_hint("Walden's EXPLAIN writes TEXT and JSON."))
                        }
                        None => {
                            return Err(SqlError::new(
                                code::SYNTAX_ERROR,
                                "EXPLAIN option \"format\" requires a value",
                            ))
                        }
                    }
                }
                let mut out = dml::explain(&mut cx, t, statement, analyze, costs)?;
                if json {
                    let lines: Vec<String> = out
                        .rows
                        .iter()
                        .map(|r| match r.first() {
                            Some(Value::Text(l)) => l.clone(),
                            _ => String::new(),
                        })
                        .collect();
                    out.rows = vec![vec![Value::Text(crate::explain_json::to_json(&lines))]];
                }
                Ok(out)
            }
            other => Err(unsupported_statement(other)),
        }
    }

    /// A catalog change (CREATE, ALTER, DROP of tables, indexes and views) in the
    /// session's transaction: inside a block, ROLLBACK takes it back
    /// (docs/recovery.md rule 40).
    pub(super) fn ddl_in(
        &mut self,
        t: &mut Transaction,
        stmt: &Statement,
        table_kind: Option<(String, sqlparser::tokenizer::Location)>,
    ) -> SqlResult<Output> {
        let default_kind = self.settings.now().default_table_kind;
        let mut cx = self.ctx();
        match stmt {
            Statement::CreateTable(ct) => {
                ddl::create_table(&mut cx, t, ct, table_kind, default_kind)
            }
            Statement::Drop {
                object_type: ast::ObjectType::View,
                if_exists,
                names,
                cascade,
                ..
            } => crate::ddl::view::drop_views(&mut cx, t, *if_exists, names, *cascade),
            Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => ddl::drop(&mut cx, t, *object_type, *if_exists, names, *cascade),
            Statement::CreateView(cv) => crate::ddl::view::create_view(&mut cx, t, cv),
            Statement::CreateIndex(ci) => ddl::create_index(&mut cx, t, ci),
            Statement::AlterTable(at) => crate::alter::alter_table(&mut cx, t, at),
            other => Err(unsupported_statement(other)),
        }
    }

    pub(super) fn begin(&mut self, modes: &[ast::TransactionMode]) -> SqlResult<Output> {
        let (level, read_only) = isolation::modes_of(modes)?;
        let level = level.unwrap_or(self.settings.now().default_isolation);
        let read_only = read_only.unwrap_or(self.settings.now().default_read_only);
        let mut out = Output::tag("BEGIN");
        match self.txn {
            TxnState::Auto => self.start_block(level, read_only),
            _ => out
                .notices
                .push("WARNING:  there is already a transaction in progress".into()),
        }
        Ok(out)
    }

    pub(super) fn commit(&mut self, chain: bool) -> SqlResult<Output> {
        let level = (self.block_isolation, self.block_read_only);
        self.savepoints.clear();
        let out = match std::mem::replace(&mut self.txn, TxnState::Auto) {
            TxnState::Block(mut t) => {
                // WITH HOLD cursors read their rest first: a failure rolls back.
                if let Err(e) = self.cursors_at_commit(&t) {
                    self.settings.rollback();
                    self.cursors_at_rollback();
                    let _ = t.rollback();
                    return Err(e);
                }
                // synchronous_commit as the transaction leaves it (SET LOCAL included).
                t.set_synchronous_commit(self.settings.now().synchronous_commit);
                let committed = t.commit();
                match committed {
                    Ok(()) => self.settings.commit(),
                    Err(_) => self.settings.rollback(),
                }
                committed?;
                Output::tag("COMMIT")
            }
            TxnState::Failed(held) => {
                // Already undone when the block failed, unless it had savepoints or
                // failed while a COPY held its transaction (then this is the first
                // time).
                self.settings.rollback();
                self.cursors_at_rollback();
                if let Some(t) = held {
                    t.rollback()?;
                }
                Output::tag("ROLLBACK")
            }
            TxnState::Auto if chain => return Err(no_block_for("COMMIT AND CHAIN")),
            TxnState::Auto => {
                let mut out = Output::tag("COMMIT");
                out.notices
                    .push("WARNING:  there is no transaction in progress".into());
                out
            }
        };
        if chain {
            self.chain(level);
        }
        Ok(out)
    }

    pub(super) fn rollback(&mut self, chain: bool) -> SqlResult<Output> {
        let level = (self.block_isolation, self.block_read_only);
        self.savepoints.clear();
        match std::mem::replace(&mut self.txn, TxnState::Auto) {
            TxnState::Block(t) | TxnState::Failed(Some(t)) => {
                self.settings.rollback();
                self.cursors_at_rollback();
                t.rollback()?;
            }
            TxnState::Failed(None) => self.settings.rollback(),
            TxnState::Auto if chain => return Err(no_block_for("ROLLBACK AND CHAIN")),
            TxnState::Auto => {
                let mut out = Output::tag("ROLLBACK");
                out.notices
                    .push("WARNING:  there is no transaction in progress".into());
                return Ok(out);
            }
        }
        if chain {
            self.chain(level);
        }
        Ok(Output::tag("ROLLBACK"))
    }

    /// AND CHAIN: a new block starts at once with the level and access mode of the one
    /// that ended.
    fn chain(&mut self, (level, read_only): (IsolationLevel, bool)) {
        self.start_block(level, read_only);
        // Its now() is its own start, not the ended block's.
        self.txn_now_micros = None;
    }

    /// Whether the transaction running or about to run is READ ONLY.
    pub(crate) fn read_only_now(&self) -> bool {
        match self.txn {
            TxnState::Auto => self.settings.now().default_read_only,
            _ => self.block_read_only,
        }
    }

    /// SET TRANSACTION READ ONLY / READ WRITE (and `SET transaction_read_only`) in the
    /// block running: READ WRITE only before its first query, as PostgreSQL (25001).
    /// Outside a block there is nothing to set.
    pub(super) fn set_block_read_only(&mut self, read_only: bool) -> SqlResult<()> {
        if !matches!(self.txn, TxnState::Block(_)) || read_only == self.block_read_only {
            return Ok(());
        }
        if !read_only && self.block_snapshot_taken {
            return Err(SqlError::new(
                code::ACTIVE_TRANSACTION,
                "transaction read-write mode must be set before any query",
            ));
        }
        self.block_read_only = read_only;
        Ok(())
    }

    /// SAVEPOINT name.
    pub(super) fn savepoint(&mut self, name: &ast::Ident) -> SqlResult<Output> {
        let name = ident_name(name);
        match &mut self.txn {
            TxnState::Block(t) => {
                if let Err(e) = t.savepoint() {
                    return Err(self.fail(e.into()));
                }
                self.savepoints.push(name);
                self.settings.savepoint();
                Ok(Output::tag("SAVEPOINT"))
            }
            TxnState::Failed(_) => Err(aborted()),
            TxnState::Auto => Err(no_block_for("SAVEPOINT")),
        }
    }

    /// The depth of the newest savepoint of that name (1 the oldest).
    fn savepoint_depth(&self, name: &str) -> SqlResult<usize> {
        match self.savepoints.iter().rposition(|n| n == name) {
            Some(at) => Ok(at + 1),
            None => Err(SqlError::new(
                code::INVALID_SAVEPOINT,
                format!("savepoint \"{name}\" does not exist"),
            )),
        }
    }

    /// ROLLBACK TO [SAVEPOINT] name: also in an aborted block, which goes on.
    pub(super) fn rollback_to_savepoint(&mut self, name: &ast::Ident) -> SqlResult<Output> {
        let name = ident_name(name);
        if matches!(self.txn, TxnState::Auto) {
            return Err(no_block_for("ROLLBACK TO SAVEPOINT"));
        }
        let depth = match self.savepoint_depth(&name) {
            Ok(d) => d,
            Err(e) => return Err(self.fail(e)),
        };
        let mut t = match std::mem::replace(&mut self.txn, TxnState::Auto) {
            TxnState::Block(t) | TxnState::Failed(Some(t)) => t,
            other => {
                // (No savepoints without a transaction: not reached.)
                self.txn = other;
                return Err(aborted());
            }
        };
        if let Err(e) = t.rollback_to_savepoint(depth) {
            // The transaction may only roll back now.
            self.txn = TxnState::Failed(Some(t));
            return Err(e.into());
        }
        self.savepoints.truncate(depth);
        self.settings.rollback_to(depth);
        self.cursors_at_rollback_to(&mut t, depth);
        self.txn = TxnState::Block(t);
        Ok(Output::tag("ROLLBACK"))
    }

    /// RELEASE [SAVEPOINT] name.
    pub(super) fn release_savepoint(&mut self, name: &ast::Ident) -> SqlResult<Output> {
        let name = ident_name(name);
        match &self.txn {
            TxnState::Auto => return Err(no_block_for("RELEASE SAVEPOINT")),
            TxnState::Failed(_) => return Err(aborted()),
            TxnState::Block(_) => {}
        }
        let depth = match self.savepoint_depth(&name) {
            Ok(d) => d,
            Err(e) => return Err(self.fail(e)),
        };
        if let TxnState::Block(t) = &mut self.txn {
            if let Err(e) = t.release_savepoint(depth) {
                return Err(self.fail(e.into()));
            }
        }
        self.savepoints.truncate(depth - 1);
        self.settings.release(depth);
        self.cursors_at_release(depth);
        Ok(Output::tag("RELEASE"))
    }

    /// Sets the isolation level of the transaction block running, which PostgreSQL
    /// allows until its first statement that takes a snapshot (25001 after, unless the
    /// level stays). Outside a block there is nothing to set.
    pub(super) fn set_block_isolation(&mut self, level: IsolationLevel) -> SqlResult<()> {
        let TxnState::Block(t) = &mut self.txn else {
            return Ok(());
        };
        if level == self.block_isolation {
            return Ok(());
        }
        if self.block_snapshot_taken {
            return Err(isolation::too_late());
        }
        t.set_isolation(level.engine());
        self.block_isolation = level;
        Ok(())
    }

    /// The isolation level of the transaction running or about to run.
    pub(super) fn isolation_now(&self) -> IsolationLevel {
        match self.txn {
            TxnState::Auto => self.settings.now().default_isolation,
            _ => self.block_isolation,
        }
    }
}
