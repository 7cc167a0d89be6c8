//! A SQL session on a database: transaction blocks (BEGIN/COMMIT/ROLLBACK, and the
//! aborted state after an error, as in PostgreSQL), settings, and per-statement
//! accounting of what each statement wrote.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sqlparser::ast::{self, Statement};
use walden::rng::SimRng;
use walden::{Database, StatsSnapshot, Transaction, Value};

use crate::catalog::{ident_name, object_name, Scope};
use crate::copy::CopyStart;
use crate::describe::Description;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::guard::{size_text, CancelHandle, Guard};
use crate::isolation::{self, IsolationLevel};
use crate::prepared::Prepared;
use crate::script::{parse_psql_script, parse_script, LineIndex, Parsed};
pub use crate::settings::{parse_size, DEFAULT_STATEMENT_MEM_BYTES, DEFAULT_WORK_MEM_BYTES};
use crate::settings::{Scoped, SessionSettings, StatementSettings};
pub use crate::statement::RowSink;
use crate::statement::{Ctx, Output};
use crate::types::SqlType;
use crate::{ddl, dml};

mod cursors;

/// The result of one statement.
#[derive(Debug, Clone)]
pub struct StatementResult {
    /// The command tag, as PostgreSQL sends it ("INSERT 0 5", "SELECT 1", "COMMIT").
    pub tag: String,
    /// Result columns (empty for statements that return no rows).
    pub columns: Vec<(String, SqlType)>,
    pub rows: Vec<Vec<Value>>,
    /// Warnings and notices ("there is no transaction in progress").
    pub notices: Vec<String>,
    /// What a `COPY ... TO STDOUT` run by [`Session::run_script`] or
    /// [`Session::execute`] wrote, every row's line (held whole, up to `statement_mem`; a
    /// server streams it through [`Session::copy_start`] instead). None for any other
    /// statement.
    pub copy_data: Option<String>,
    /// What the database wrote while the statement ran (all sessions and background
    /// work included), when the session measures it
    /// ([`Session::set_statement_stats`]; a COPY's always).
    pub stats: Option<StatsSnapshot>,
    pub elapsed: Duration,
    /// The rows went to the `RowSink` the caller gave, as they were made: `columns`
    /// names them, `rows` is empty.
    pub streamed: bool,
}

/// One statement's outcome in a script.
#[derive(Debug)]
pub struct Outcome {
    /// The statement's text (without the semicolon).
    pub text: String,
    pub result: Result<StatementResult, SqlError>,
}

enum TxnState {
    /// No transaction block: each statement commits on its own.
    Auto,
    Block(Box<Transaction>),
    /// An error happened in the block: only ROLLBACK (or COMMIT, which rolls back) ends it.
    Failed,
}

/// A SQL session: owns a handle on its database and its transaction, so it is `Send` and
/// can move to another thread (a server's connection task) between statements.
pub struct Session {
    db: Database,
    txn: TxnState,
    rng: SimRng,
    /// What the session knows of sequences (its cached values, `currval`, `lastval`);
    /// lent to each statement's guard (`start_guard`) and taken back after it
    /// (`settle_sequences`).
    sequences: crate::sequences::SessionSequences,
    /// Requests to stop the running statement (see [`Session::cancel_handle`]).
    cancel: CancelHandle,
    /// The checks of the statement running (or last run).
    guard: Guard,
    /// Statements prepared with SQL's PREPARE, by name.
    prepared: HashMap<String, Prepared>,
    /// What the session's statements read of the catalog's text, parsed once: the
    /// foreign keys per catalog generation, CHECK constraints bound per schema (lent to
    /// each statement in its `Ctx`).
    fkeys: crate::fkeys::KeyCache,
    checks: crate::checks::CheckCache,
    /// EXECUTE nesting (an EXECUTE runs its statement as a statement of its own).
    executing: bool,
    /// The prepared query running from its cached plan, if one is.
    prepared_run: Option<crate::prepared::PreparedRun>,
    /// The wall clock now() reads (microseconds since 2000-01-01 UTC); None: the system's.
    clock: Option<WallClock>,
    /// What now() gives in the transaction block running: its start.
    txn_now_micros: Option<i64>,
    /// The session's settings, scoped to its transactions.
    settings: Scoped,
    /// The level of the transaction block running (or aborted).
    block_isolation: IsolationLevel,
    /// The block has run a statement that takes a snapshot (anything but SET, SHOW and
    /// the transaction statements, as in PostgreSQL): its level can no longer change,
    /// and a REPEATABLE READ block reads with the snapshot that statement took.
    block_snapshot_taken: bool,
    /// The authority of the current user, while the roles and privileges it was made
    /// of hold (`authority`).
    auth: Option<std::sync::Arc<crate::privileges::Authority>>,
    /// Open cursors, by name (`session/cursors.rs`).
    cursors: std::collections::BTreeMap<String, crate::cursors::Cursor>,
    /// The text of the DECLARE running, as the client sent it (`pg_cursors`).
    statement_text: Option<String>,
    /// Each statement's result says what the database wrote while it ran
    /// ([`StatementResult::stats`]).
    statement_stats: bool,
}

/// What runs a COPY to or from the client for [`Session::run_script_with_copy`]: given
/// the COPY started, it exchanges the data and returns the COPY's result.
pub type CopyClient<'a> = dyn FnMut(&mut Session, CopyStart) -> SqlResult<StatementResult> + 'a;

/// A wall clock for now(): microseconds since 2000-01-01 00:00:00 UTC.
pub type WallClock = std::sync::Arc<dyn Fn() -> i64 + Send + Sync>;

impl Session {
    /// A session whose random() is seeded from the clock.
    pub fn new(db: &Database) -> Session {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Session::with_seed(db, seed)
    }

    /// A session whose random() and gen_random_uuid() replay from `seed`.
    pub fn with_seed(db: &Database, seed: u64) -> Session {
        // Serial columns of a database made before sequences get theirs. A failure
        // (a fenced database) leaves them for the next session; meanwhile inserts that
        // leave such a column out fail on its NOT NULL.
        if let Err(e) = crate::sequences::owned::upgrade_legacy_serials(db) {
            drop(e);
        }
        let cancel = CancelHandle::default();
        Session {
            guard: Guard::start(&cancel, DEFAULT_STATEMENT_MEM_BYTES),
            cancel,
            db: db.clone(),
            txn: TxnState::Auto,
            rng: SimRng::new(seed),
            sequences: Default::default(),
            prepared: HashMap::new(),
            fkeys: Default::default(),
            checks: Default::default(),
            executing: false,
            prepared_run: None,
            clock: None,
            txn_now_micros: None,
            settings: Scoped::new(SessionSettings::new(db)),
            block_isolation: IsolationLevel::ReadCommitted,
            block_snapshot_taken: false,
            auth: None,
            cursors: Default::default(),
            statement_text: None,
            statement_stats: false,
        }
    }

    /// A transaction of the session's default level, outside a block.
    fn begin_auto(&self) -> Transaction {
        let now = self.settings.now();
        let mut t = self.db.begin_with(now.default_isolation.engine());
        t.set_synchronous_commit(now.synchronous_commit);
        t
    }

    /// A statement that takes a snapshot starts (PostgreSQL's rule): in a block, a READ
    /// COMMITTED transaction reads it with a snapshot of its own, a REPEATABLE READ one
    /// with the one its first statement takes; outside a block the statement's own
    /// transaction has just taken one.
    fn statement_starts(&mut self) -> SqlResult<()> {
        let TxnState::Block(t) = &mut self.txn else {
            return Ok(());
        };
        if t.isolation() == walden::Isolation::ReadCommitted || !self.block_snapshot_taken {
            t.new_statement_snapshot()?;
        }
        self.block_snapshot_taken = true;
        Ok(())
    }

    /// The settings clients set and read.
    pub fn client_settings(&self) -> &crate::settings::ClientSettings {
        &self.settings.now().client
    }

    /// Sets one of the session's settings as `SET name = value` would, and makes it
    /// the value RESET goes back to (a server applies a client's startup parameters
    /// through it).
    pub fn set_setting(&mut self, name: &str, value: &str) -> SqlResult<()> {
        if crate::settings::def_of(name).is_none_or(|d| {
            d.scope == crate::settings::Scope::Session
                && d.context == crate::settings::Context::User
        }) {
            return self.settings.set_default(name, value);
        }
        let sql = format!(
            "set {} = '{}'",
            crate::pg_catalog::quote_ident(name),
            value.replace('\'', "''")
        );
        self.execute_one(&sql).map(|_| ())
    }

    /// Tells the session how many connections its server takes (what `max_connections`
    /// shows).
    pub fn set_max_connections(&mut self, n: u32) {
        self.settings.set_max_connections(n);
    }

    /// Whether each statement's result carries what the database wrote while it ran
    /// ([`StatementResult::stats`]: two copies of the database's counters per
    /// statement, off by default; `walden sql` turns it on to show each statement's WAL).
    pub fn set_statement_stats(&mut self, on: bool) {
        self.statement_stats = on;
    }

    /// Makes the session's user the role `name` (a server, once the client logged in
    /// as it): `current_user`, `session_user`, and what role statements may do.
    pub fn set_user(&mut self, name: &str) {
        let superuser = crate::roles::find(&self.db, name).is_some_and(|r| r.superuser);
        self.settings.set_user(name, superuser);
    }

    /// The role the session logged in as.
    pub fn user(&self) -> String {
        self.settings.now().session_user.clone()
    }

    /// The role statements run as (`current_user`): SET ROLE's, else the session user.
    pub fn current_user(&self) -> String {
        self.settings.now().current_user().to_string()
    }

    /// What the current user may do, as the roles and privileges are now (remade only
    /// when they or the current user changed).
    pub(crate) fn authority(&mut self) -> std::sync::Arc<crate::privileges::Authority> {
        let generation = self.db.auth_generation();
        let now = self.settings.now();
        let user = now.current_user();
        if let Some(a) = &self.auth {
            if a.generation == generation && a.user == user {
                return a.clone();
            }
        }
        let a = std::sync::Arc::new(crate::privileges::Authority::of(&self.db, user));
        self.auth = Some(a.clone());
        a
    }

    /// Makes now(), current_timestamp and current_date read `clock` instead of the
    /// system's time (tests replay with a clock of their own).
    pub fn set_clock(&mut self, clock: WallClock) {
        self.clock = Some(clock);
    }

    /// What now() gives in the statement starting: the start of its transaction, as
    /// PostgreSQL's now() (one value for every statement of a transaction block).
    fn statement_now(&mut self) -> i64 {
        if matches!(self.txn, TxnState::Auto) {
            self.txn_now_micros = None;
        }
        let clock = self.clock.clone();
        *self.txn_now_micros.get_or_insert_with(|| match clock {
            Some(c) => c(),
            None => crate::datetime::system_now_micros(),
        })
    }

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
        if matches!(self.txn, TxnState::Failed) && !p.ends_transaction() {
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

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// A handle that stops this session's running statement from another thread (or a
    /// signal handler): the statement fails with 57014, as a canceled statement does in
    /// PostgreSQL. Outside a transaction block its work is rolled back; inside one the
    /// block is aborted (25P02 until ROLLBACK). The running statement checks it per row
    /// it reads, writes, groups or sorts; an engine call that waits (for a row lock, a
    /// commit's fsync, a checkpoint or VACUUM) finishes before the check.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// True inside BEGIN ... COMMIT (including a block aborted by an error).
    pub fn in_transaction_block(&self) -> bool {
        !matches!(self.txn, TxnState::Auto)
    }

    /// True if an error aborted the current transaction block.
    pub fn in_failed_block(&self) -> bool {
        matches!(self.txn, TxnState::Failed)
    }

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
    fn run_parsed(
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
                stats: before.map(|b| self.db.stats().since(&b)),
                elapsed: started.elapsed(),
            }),
            Err(e) => Err(locate(e, text, start_char, index)),
        }
    }

    /// Starts a statement that runs over several calls (a COPY): its checks and its
    /// now(); refused in an aborted transaction block.
    pub(crate) fn start_statement(&mut self) -> SqlResult<crate::copy::Started> {
        self.guard = self.start_guard();
        if matches!(self.txn, TxnState::Failed) {
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
    fn settle_sequences(&mut self) -> SqlResult<()> {
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
    fn start_guard(&mut self) -> Guard {
        // A statement run over several calls (a COPY) leaves its sequences here.
        if let Err(e) = self.settle_sequences() {
            // Only a failed flush: the database is fenced, and says so next.
            drop(e);
        }
        let settings = self.settings.now();
        let mut guard = Guard::start(&self.cancel, settings.statement_mem_bytes);
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
            .with_cursors(self.cursor_list()),
        );
        let auth = self.authority();
        guard.set_sequences(crate::sequences::StatementSequences::new(
            &self.db,
            std::mem::take(&mut self.sequences),
            Some(auth),
        ));
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

    /// The transaction a COPY FROM holds over its calls, and whether it is the block's.
    /// A block's is taken out of the session, which is left with an aborted block until
    /// `release_transaction` gives it back: a COPY abandoned midway (its handle dropped)
    /// thus aborts the block, as an error would.
    pub(crate) fn hold_transaction(&mut self) -> (Box<Transaction>, bool) {
        match std::mem::replace(&mut self.txn, TxnState::Failed) {
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
        if matches!(self.txn, TxnState::Failed) {
            self.txn = TxnState::Block(t);
            return Ok(());
        }
        let _ = t.rollback();
        Err(SqlError::new(
            code::FAILED_TRANSACTION,
            "the transaction block ended while COPY ran",
        ))
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

    /// An error inside a transaction block aborts the block.
    fn fail(&mut self, e: SqlError) -> SqlError {
        if let TxnState::Block(t) = std::mem::replace(&mut self.txn, TxnState::Auto) {
            self.cursors_at_rollback();
            let _ = t.rollback();
            self.txn = TxnState::Failed;
            // The block's SETs are undone now, as PostgreSQL undoes them on abort.
            self.settings.rollback();
        }
        e
    }

    fn execute_parsed(&mut self, p: Parsed, rows: Option<&mut dyn RowSink>) -> SqlResult<Output> {
        match p {
            Parsed::Checkpoint => {
                if matches!(self.txn, TxnState::Failed) {
                    return Err(aborted());
                }
                self.db.checkpoint()?;
                Ok(Output::tag("CHECKPOINT"))
            }
            Parsed::Reindex { table, name } => {
                if matches!(self.txn, TxnState::Failed) {
                    return Err(aborted());
                }
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
                if matches!(self.txn, TxnState::Failed) {
                    return Err(aborted());
                }
                if matches!(self.txn, TxnState::Block(_)) {
                    let e = no_block(crate::roles::command(&stmt));
                    return Err(self.fail(e));
                }
                let user = self.current_user();
                crate::roles::run(&self.db, &user, stmt, notices)
            }
            Parsed::Grant(stmt) => {
                if matches!(self.txn, TxnState::Failed) {
                    return Err(aborted());
                }
                if matches!(self.txn, TxnState::Block(_)) {
                    let e = no_block(crate::privileges::grant::command(&stmt));
                    return Err(self.fail(e));
                }
                let auth = self.authority();
                let session_user = self.user();
                crate::privileges::grant::run(&self.db, &auth, &session_user, stmt)
            }
            Parsed::Sequence(stmt) => {
                if matches!(self.txn, TxnState::Failed) {
                    return Err(aborted());
                }
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
            Statement::Rollback { chain, savepoint } => return self.rollback(*chain, savepoint),
            _ => {}
        }
        if matches!(self.txn, TxnState::Failed) {
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
        let needs_no_block = match stmt {
            Statement::CreateTable(_) => Some("CREATE TABLE"),
            Statement::CreateIndex(_) => Some("CREATE INDEX"),
            Statement::AlterTable(_) => Some("ALTER TABLE"),
            Statement::Drop {
                object_type: ast::ObjectType::Index,
                ..
            } => Some("DROP INDEX"),
            Statement::Drop {
                object_type: ast::ObjectType::View,
                ..
            } => Some("DROP VIEW"),
            Statement::Drop { .. } => Some("DROP TABLE"),
            Statement::CreateView(_) => Some("CREATE VIEW"),
            _ => None,
        };
        if let Some(what) = needs_no_block {
            if matches!(self.txn, TxnState::Block(_)) {
                let e = no_block(what);
                return Err(self.fail(e));
            }
            return self.without_transaction(stmt, table_kind);
        }
        self.transactional(|s, t| s.in_transaction(t, stmt, rows))
    }

    /// Runs `f` in the session's transaction: the block's (an error aborts the block),
    /// or one of its own that commits when `f` succeeds and rolls back when it fails.
    pub(crate) fn transactional<R>(
        &mut self,
        f: impl FnOnce(&mut Session, &mut Transaction) -> SqlResult<R>,
    ) -> SqlResult<R> {
        match std::mem::replace(&mut self.txn, TxnState::Auto) {
            TxnState::Block(mut t) => {
                let r = f(self, &mut t);
                self.txn = TxnState::Block(t);
                r.map_err(|e| self.fail(e))
            }
            TxnState::Auto => {
                let mut t = self.begin_auto();
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
            TxnState::Failed => {
                self.txn = TxnState::Failed;
                Err(aborted())
            }
        }
    }

    /// VACUUM (outside a transaction block), then the ANALYZE it asks for in a
    /// transaction of its own; ANALYZE alone in the session's transaction.
    fn maintenance(&mut self, m: &crate::vacuum::Maintenance) -> SqlResult<Output> {
        if matches!(self.txn, TxnState::Failed) {
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

    fn sql_prepare(
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

    fn sql_execute(&mut self, name: &ast::ObjectName, args: &[ast::Expr]) -> SqlResult<Output> {
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

    pub(crate) fn ctx(&mut self) -> Ctx<'_, '_> {
        let auth = self.authority();
        Ctx {
            db: &self.db,
            rng: &mut self.rng,
            guard: &self.guard,
            prepared: self.prepared_run.as_ref(),
            auth,
            rows: None,
            fkeys: &self.fkeys,
            checks: &self.checks,
        }
    }

    fn in_transaction(
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

    fn without_transaction(
        &mut self,
        stmt: &Statement,
        table_kind: Option<(String, sqlparser::tokenizer::Location)>,
    ) -> SqlResult<Output> {
        let sync = self.settings.now().synchronous_commit;
        let default_kind = self.settings.now().default_table_kind;
        let mut cx = self.ctx();
        match stmt {
            Statement::CreateTable(ct) => {
                ddl::create_table(&mut cx, ct, table_kind, default_kind, sync)
            }
            Statement::Drop {
                object_type: ast::ObjectType::View,
                if_exists,
                names,
                cascade,
                ..
            } => crate::ddl::view::drop_views(&mut cx, *if_exists, names, *cascade),
            Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => ddl::drop(&mut cx, *object_type, *if_exists, names, *cascade),
            Statement::CreateView(cv) => crate::ddl::view::create_view(&mut cx, cv),
            Statement::CreateIndex(ci) => ddl::create_index(&mut cx, ci),
            Statement::AlterTable(at) => crate::alter::alter_table(&mut cx, at),
            other => Err(unsupported_statement(other)),
        }
    }

    fn begin(&mut self, modes: &[ast::TransactionMode]) -> SqlResult<Output> {
        let level =
            isolation::level_of_modes(modes)?.unwrap_or(self.settings.now().default_isolation);
        let mut out = Output::tag("BEGIN");
        match self.txn {
            TxnState::Auto => {
                let mut t = self.db.begin_with(level.engine());
                t.set_synchronous_commit(self.settings.now().synchronous_commit);
                self.txn = TxnState::Block(Box::new(t));
                self.settings.begin();
                self.block_isolation = level;
                self.block_snapshot_taken = false;
            }
            _ => out
                .notices
                .push("WARNING:  there is already a transaction in progress".into()),
        }
        Ok(out)
    }

    fn commit(&mut self, chain: bool) -> SqlResult<Output> {
        if chain {
            return Err(SqlError::unsupported("COMMIT AND CHAIN"));
        }
        match std::mem::replace(&mut self.txn, TxnState::Auto) {
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
                Ok(Output::tag("COMMIT"))
            }
            TxnState::Failed => {
                // Already undone when the block failed, unless it failed while a COPY
                // held its transaction (then this is the first time).
                self.settings.rollback();
                Ok(Output::tag("ROLLBACK"))
            }
            TxnState::Auto => {
                let mut out = Output::tag("COMMIT");
                out.notices
                    .push("WARNING:  there is no transaction in progress".into());
                Ok(out)
            }
        }
    }

    fn rollback(&mut self, chain: bool, savepoint: &Option<ast::Ident>) -> SqlResult<Output> {
        if chain || savepoint.is_some() {
            return Err(SqlError::unsupported("savepoints and ROLLBACK AND CHAIN"));
        }
        match std::mem::replace(&mut self.txn, TxnState::Auto) {
            TxnState::Block(t) => {
                self.settings.rollback();
                self.cursors_at_rollback();
                t.rollback()?;
                Ok(Output::tag("ROLLBACK"))
            }
            TxnState::Failed => {
                self.settings.rollback();
                Ok(Output::tag("ROLLBACK"))
            }
            TxnState::Auto => {
                let mut out = Output::tag("ROLLBACK");
                out.notices
                    .push("WARNING:  there is no transaction in progress".into());
                Ok(out)
            }
        }
    }

    /// Every setting with its value, as SHOW ALL lists them.
    pub fn settings(&self) -> Vec<crate::settings::Shown> {
        crate::settings::all(
            self.settings.now(),
            self.settings.at_reset(),
            &self.settings_env(),
        )
    }

    fn settings_env(&self) -> crate::settings::Env<'_> {
        crate::settings::Env {
            db: &self.db,
            isolation: self.isolation_now(),
        }
    }

    fn set(&mut self, set: &ast::Set) -> SqlResult<Output> {
        let (name, values, local) = match set {
            ast::Set::SingleAssignment {
                variable,
                values,
                scope,
                ..
            } => (
                setting_name(variable)?,
                values.as_slice(),
                matches!(scope, Some(ast::ContextModifier::Local)),
            ),
            ast::Set::SetRole {
                context_modifier,
                role_name,
            } => {
                let local = matches!(context_modifier, Some(ast::ContextModifier::Local));
                let role = role_name.as_ref().map(ident_name);
                return self.set_role(role.as_deref(), local);
            }
            ast::Set::SetSessionAuthorization(param) => {
                let local = matches!(param.scope, ast::ContextModifier::Local);
                let user = match &param.kind {
                    ast::SetSessionAuthorizationParamKind::Default => None,
                    ast::SetSessionAuthorizationParamKind::User(u) => Some(ident_name(u)),
                };
                return self.set_session_authorization(user.as_deref(), local);
            }
            ast::Set::SetTimeZone { value, local } => {
                ("timezone".to_string(), std::slice::from_ref(value), *local)
            }
            ast::Set::SetTransaction {
                modes,
                snapshot,
                session,
            } => {
                if snapshot.is_some() {
                    return Err(SqlError::unsupported("SET TRANSACTION SNAPSHOT"));
                }
                let level = isolation::level_of_modes(modes)?;
                if *session {
                    // SET SESSION CHARACTERISTICS AS TRANSACTION …
                    if let Some(level) = level {
                        self.set_in_session(
                            "default_transaction_isolation",
                            Some(level.name()),
                            false,
                        )?;
                    }
                    return Ok(Output::tag("SET"));
                }
                let mut out = Output::tag("SET");
                if !self.in_transaction_block() {
                    out.notices.push(
                        "WARNING:  SET TRANSACTION can only be used in transaction blocks".into(),
                    );
                }
                if let Some(level) = level {
                    self.set_block_isolation(level)?;
                }
                return Ok(out);
            }
            _ => {
                return Err(SqlError::unsupported(format!(
                    "{}",
                    crate::error::clip(&set.to_string())
                )))
            }
        };
        let raw = set_value(&name, values)?;
        self.set_named(&name, raw.as_deref(), local)
    }

    /// `SET [LOCAL] name = raw` (`raw` None: `= DEFAULT`, RESET).
    fn set_named(&mut self, name: &str, raw: Option<&str>, local: bool) -> SqlResult<Output> {
        // `SET role = …` and `SET session_authorization = …` are SET ROLE's and SET
        // SESSION AUTHORIZATION's other spellings.
        if name.eq_ignore_ascii_case("role") {
            return self.set_role(raw, local);
        }
        if name.eq_ignore_ascii_case("session_authorization") {
            return self.set_session_authorization(raw, local);
        }
        let def = crate::settings::def_of(name);
        let mut out = Output::tag("SET");
        match def {
            Some(d) if d.context != crate::settings::Context::User => {
                return Err(crate::settings::read_only(d))
            }
            Some(d) if d.scope == crate::settings::Scope::Database => {
                let (Some(raw), false) = (raw, local) else {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        format!(
                            "{} is a database-wide setting: only SET (not SET LOCAL or RESET) changes it",
                            d.name
                        ),
                    ));
                };
                crate::settings::set_database(&self.db, d, raw)?;
            }
            Some(d) if d.scope == crate::settings::Scope::Transaction => {
                // Outside a block it would set the level of the SET's own transaction.
                let level = match raw {
                    Some(raw) => IsolationLevel::parse_setting(d.name, raw)?,
                    None => self.settings.now().default_isolation,
                };
                self.set_block_isolation(level)?;
            }
            _ => {
                if local && !self.in_transaction_block() {
                    out.notices
                        .push("WARNING:  SET LOCAL can only be used in transaction blocks".into());
                }
                let name = def.map_or(name, |d| d.name);
                self.set_in_session(name, raw, local)?;
            }
        }
        Ok(out)
    }

    /// SET [LOCAL] ROLE name | NONE (`role` None), PostgreSQL's: the session user must
    /// be a member of the role (a superuser may take any), checked against the role that
    /// logged in… as the session user is now (SET SESSION AUTHORIZATION changes it).
    fn set_role(&mut self, role: Option<&str>, local: bool) -> SqlResult<Output> {
        let mut out = Output::tag("SET");
        let session_user = self.user();
        let role = match role {
            None | Some("none") => None,
            Some(name) => {
                let Some(def) = crate::roles::find(&self.db, name) else {
                    return Err(SqlError::new(
                        code::UNDEFINED_OBJECT,
                        format!("role \"{name}\" does not exist"),
                    ));
                };
                let me = crate::privileges::Authority::of(&self.db, &session_user);
                if !me.is_member(name) {
                    return Err(SqlError::new(
                        code::INSUFFICIENT_PRIVILEGE,
                        format!("permission denied to set role \"{name}\""),
                    ));
                }
                Some((name.to_string(), def.superuser))
            }
        };
        if local && !self.in_transaction_block() {
            out.notices
                .push("WARNING:  SET LOCAL can only be used in transaction blocks".into());
        }
        let in_block = self.in_transaction_block();
        if !in_block {
            self.settings.begin();
        }
        self.settings.set_identity(local, |s| {
            s.role = role.as_ref().map(|(n, _)| n.clone());
            s.role_is_superuser = role.as_ref().is_some_and(|(_, su)| *su);
        });
        if !in_block {
            self.settings.commit();
        }
        Ok(out)
    }

    /// SET [LOCAL] SESSION AUTHORIZATION name | DEFAULT (`user` None): only a role that
    /// logged in as a superuser may (PostgreSQL's rule); SET ROLE is reset.
    fn set_session_authorization(&mut self, user: Option<&str>, local: bool) -> SqlResult<Output> {
        let out = Output::tag("SET");
        let (login, login_super) = {
            let now = self.settings.now();
            (now.login_user.clone(), now.login_is_superuser)
        };
        let target = user.unwrap_or(&login).to_string();
        let Some(def) = crate::roles::find(&self.db, &target) else {
            return Err(SqlError::new(
                code::UNDEFINED_OBJECT,
                format!("role \"{target}\" does not exist"),
            ));
        };
        if target != login && !login_super {
            return Err(SqlError::new(
                code::INSUFFICIENT_PRIVILEGE,
                "permission denied to set session authorization",
            ));
        }
        let in_block = self.in_transaction_block();
        if !in_block {
            self.settings.begin();
        }
        self.settings.set_identity(local, |s| {
            s.session_user = target.clone();
            s.user_is_superuser = def.superuser;
            s.role = None;
            s.role_is_superuser = false;
        });
        if !in_block {
            self.settings.commit();
        }
        Ok(out)
    }

    /// SET or SET LOCAL (`raw` None: RESET) of a session-scoped or custom setting: in
    /// the block running, or outside one as a transaction of its own.
    fn set_in_session(&mut self, name: &str, raw: Option<&str>, local: bool) -> SqlResult<()> {
        if self.in_transaction_block() {
            return self.settings.set(name, raw, local);
        }
        self.settings.begin();
        let r = self.settings.set(name, raw, local);
        self.settings.commit();
        r
    }

    /// RESET name, RESET ALL.
    fn reset(&mut self, r: &ast::ResetStatement) -> SqlResult<Output> {
        match &r.reset {
            ast::Reset::ALL => {
                let in_block = self.in_transaction_block();
                if !in_block {
                    self.settings.begin();
                }
                self.settings.reset_all();
                if !in_block {
                    self.settings.commit();
                }
                Ok(Output::tag("RESET"))
            }
            ast::Reset::ConfigurationParameter(name) => {
                let name = setting_name(name)?;
                let mut out = self.set_named(&name, None, false)?;
                out.tag = "RESET".into();
                Ok(out)
            }
            ast::Reset::SessionAuthorization => {
                let mut out = self.set_session_authorization(None, false)?;
                out.tag = "RESET".into();
                Ok(out)
            }
        }
    }

    /// Sets the isolation level of the transaction block running, which PostgreSQL
    /// allows until its first statement that takes a snapshot (25001 after, unless the
    /// level stays). Outside a block there is nothing to set.
    fn set_block_isolation(&mut self, level: IsolationLevel) -> SqlResult<()> {
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
    fn isolation_now(&self) -> IsolationLevel {
        match self.txn {
            TxnState::Auto => self.settings.now().default_isolation,
            _ => self.block_isolation,
        }
    }

    fn show(&mut self, variable: &[ast::Ident]) -> SqlResult<Output> {
        let mut out = Output::tag("SHOW");
        out.columns = self.show_columns(variable)?;
        let name = show_name(variable);
        if name == "all" {
            for s in self.settings() {
                out.rows.push(vec![
                    Value::Text(s.name),
                    Value::Text(s.value),
                    Value::Text(s.def.description.into()),
                ]);
            }
        } else {
            let value = crate::settings::value_of(&name, self.settings.now(), &self.settings_env());
            out.rows.push(vec![Value::Text(value.unwrap_or_default())]);
        }
        Ok(out)
    }

    /// SHOW's columns: the setting's one, named for it, or SHOW ALL's three.
    fn show_columns(&self, variable: &[ast::Ident]) -> SqlResult<Vec<(String, SqlType)>> {
        let name = show_name(variable);
        if name == "all" {
            return Ok(vec![
                ("name".into(), SqlType::Text),
                ("setting".into(), SqlType::Text),
                ("description".into(), SqlType::Text),
            ]);
        }
        if crate::settings::value_of(&name, self.settings.now(), &self.settings_env()).is_none() {
            return Err(crate::settings::unknown(&name));
        }
        let column = crate::settings::def_of(&name).map_or(name.clone(), |d| d.name.to_string());
        Ok(vec![(column, SqlType::Text)])
    }
}

/// The setting SHOW names: one name, PostgreSQL's `TRANSACTION ISOLATION LEVEL` or
/// `TIME ZONE`, or a custom setting's `a.b`.
fn show_name(variable: &[ast::Ident]) -> String {
    let words: Vec<String> = variable.iter().map(ident_name).collect();
    match words.join(" ").as_str() {
        "transaction isolation level" => "transaction_isolation".into(),
        "time zone" => "timezone".into(),
        one if words.len() == 1 => one.to_string(),
        _ => words.join("."),
    }
}

/// The setting SET or RESET names: one name, or a custom setting's `a.b`.
fn setting_name(name: &ast::ObjectName) -> SqlResult<String> {
    let parts: Option<Vec<String>> = name
        .0
        .iter()
        .map(|p| p.as_ident().map(ident_name))
        .collect();
    parts
        .map(|p| p.join("."))
        .ok_or_else(|| SqlError::syntax(format!("syntax error at or near \"{name}\"")))
}

/// The value SET gives, as written (sizes' units are case-sensitive); None for
/// DEFAULT.
fn set_value(name: &str, values: &[ast::Expr]) -> SqlResult<Option<String>> {
    let one = |e: &ast::Expr| match e {
        ast::Expr::Identifier(id) => Some(ident_name(id)),
        ast::Expr::Value(v) => Some(match &v.value {
            ast::Value::SingleQuotedString(s) => s.clone(),
            ast::Value::Boolean(b) => b.to_string(),
            ast::Value::Number(n, _) => n.clone(),
            other => other.to_string(),
        }),
        // `SET extra_float_digits = -3`
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => Some(format!("-{n}")),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    };
    if let [ast::Expr::Identifier(id)] = values {
        if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default") {
            return Ok(None);
        }
    }
    let raw = match values {
        [v] => one(v),
        // A list (`SET search_path = "$user", public`): its items as written.
        many if many.len() > 1 && name.eq_ignore_ascii_case("search_path") => many
            .iter()
            .map(|v| match v {
                ast::Expr::Identifier(id) if id.quote_style.is_some() => {
                    Some(format!("\"{}\"", id.value))
                }
                v => one(v),
            })
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(", ")),
        _ => None,
    };
    match raw {
        Some(raw) => Ok(Some(raw)),
        None => Err(SqlError::syntax(format!("SET {name} takes one value"))),
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

fn no_block(what: &str) -> SqlError {
    SqlError::new(
        code::ACTIVE_TRANSACTION,
        format!("{what} cannot run inside a transaction block"),
    )
    .with_hint("Walden's DDL and VACUUM commit on their own; run them outside BEGIN ... COMMIT.")
}

fn aborted() -> SqlError {
    SqlError::new(
        code::FAILED_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

fn unsupported_statement(stmt: &Statement) -> SqlError {
    let text = stmt.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    SqlError::unsupported(words.join(" ").to_uppercase())
}
