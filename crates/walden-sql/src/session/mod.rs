//! A SQL session on a database: transaction blocks (BEGIN/COMMIT/ROLLBACK, and the
//! aborted state after an error, as in PostgreSQL), settings, and per-statement
//! accounting of what each statement wrote.

pub mod copy;

use std::collections::HashMap;
use std::time::Duration;

use walden::rng::SimRng;
use walden::{Database, StatsSnapshot, Transaction, Value};

use crate::copy::CopyStart;
use crate::error::{code, SqlError, SqlResult};
use crate::guard::{CancelHandle, Guard};
use crate::isolation::IsolationLevel;
use crate::prepared::Prepared;
pub use crate::settings::{parse_size, DEFAULT_STATEMENT_MEM_BYTES, DEFAULT_WORK_MEM_BYTES};
use crate::settings::{Scoped, SessionSettings};
pub use crate::statement::RowSink;
use crate::statement::{Ctx, Output};
use crate::types::SqlType;

mod cursors;
mod dispatch;
mod prepare;
mod scripts;
mod set_show;
mod transaction;

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
    /// The rows are a FETCH's from a cursor declared BINARY: a server answering a
    /// simple Query sends them in binary (format 1), as PostgreSQL's exec_simple_query
    /// does; an extended query's Bind chooses its formats itself.
    pub binary: bool,
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
    /// An error happened in the block: only ROLLBACK (or COMMIT, which rolls back) ends
    /// it, or a ROLLBACK TO one of its savepoints, which goes on with its transaction
    /// (kept here while the block has savepoints; rolled back at the error otherwise).
    Failed(Option<Box<Transaction>>),
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
    /// The transaction block running (or aborted) is READ ONLY.
    block_read_only: bool,
    /// This session's backend id: the holder of its advisory locks.
    backend: u64,
    /// What stops its transactions' waits for locks (its cancel flag, statement_timeout,
    /// lock_timeout), set as each statement starts.
    limits: std::sync::Arc<walden::WaitLimits>,
    /// The names of the block's savepoints, oldest first (a name may repeat: the
    /// newest of a name is the one ROLLBACK TO and RELEASE find).
    savepoints: Vec<String>,
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
        let limits = std::sync::Arc::new(walden::WaitLimits::new(cancel.flag()));
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
            savepoints: Vec::new(),
            block_read_only: false,
            backend: db.new_backend(),
            limits,
            auth: None,
            cursors: Default::default(),
            statement_text: None,
            statement_stats: false,
        }
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
        matches!(self.txn, TxnState::Failed(_))
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
}

/// A session's end releases its session-level advisory locks (its transaction, if one
/// is open, rolls back as it drops, and its transaction-level ones go with it).
impl Drop for Session {
    fn drop(&mut self) {
        self.db.advisory_unlock_all(self.backend);
    }
}

fn no_block(what: &str) -> SqlError {
    SqlError::new(
        code::ACTIVE_TRANSACTION,
        format!("{what} cannot run inside a transaction block"),
    )
    .with_hint("In Walden this command commits on its own; run it outside BEGIN ... COMMIT.")
}

fn aborted() -> SqlError {
    SqlError::new(
        code::FAILED_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}
