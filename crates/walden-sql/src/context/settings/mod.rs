//! The settings a session reads and changes: what SET, RESET and SHOW name, what
//! `current_setting`, `set_config` and `pg_settings` see. One table ([`DEFS`]) lists
//! them all, with what `pg_settings` says of each.
//!
//! They are held in three places. A session's own ([`SessionSettings`]: the clients'
//! ones, `work_mem`, `synchronous_commit`, …, and custom settings such as
//! `myapp.user_id`) are scoped to transactions as PostgreSQL scopes them
//! ([`Scoped`]): SET lasts past COMMIT, SET LOCAL until the transaction ends, and
//! ROLLBACK undoes both. `transaction_isolation` is the running transaction's. The
//! database-wide ones (`undo_limit`, `wal_compression`, `page_size`, …) are the
//! engine's, changed at once for every session and never rolled back.

mod client;
mod scoped;
mod size;

use std::collections::BTreeMap;

use walden::{Database, TableKind};

use crate::error::{code, SqlError, SqlResult};
use crate::guard::size_text;
use crate::isolation::IsolationLevel;

pub use client::{version, ClientSettings, SERVER_VERSION, SERVER_VERSION_NUM};
pub use scoped::{Scoped, StatementSettings};
pub use size::{parse_size, DEFAULT_STATEMENT_MEM_BYTES, DEFAULT_WORK_MEM_BYTES};

/// Who may change a setting, as `pg_settings.context` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Any session, with SET (`user`).
    User,
    /// Fixed when the server starts (`postmaster`).
    Server,
    /// Never (`internal`): read-only, or chosen when the database was created.
    Internal,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::User => "user",
            Context::Server => "postmaster",
            Context::Internal => "internal",
        }
    }
}

/// Where a setting's value is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The session's, scoped to transactions ([`SessionSettings`]).
    Session,
    /// The running transaction's (`transaction_isolation`).
    Transaction,
    /// The database's, shared by every session.
    Database,
}

/// One setting: its canonical name (names are case-insensitive) and what
/// `pg_settings` says of it.
#[derive(Debug)]
pub struct Def {
    pub name: &'static str,
    pub scope: Scope,
    pub context: Context,
    /// `pg_settings.vartype`: bool, integer, real, string or enum.
    pub vartype: &'static str,
    /// `pg_settings.unit`: the unit of `pg_settings.setting` (which SHOW shows in
    /// the largest unit that divides it).
    pub unit: Option<&'static str>,
    pub description: &'static str,
}

const fn def(
    name: &'static str,
    scope: Scope,
    context: Context,
    vartype: &'static str,
    unit: Option<&'static str>,
    description: &'static str,
) -> Def {
    Def {
        name,
        scope,
        context,
        vartype,
        unit,
        description,
    }
}

use Context::{Internal, Server, User};
use Scope::{Database as Db, Session, Transaction};

/// Every setting, in the order SHOW ALL lists them: Walden's own first, then the
/// clients'.
pub const DEFS: &[Def] = &[
    def("synchronous_commit", Session, User, "enum", None, "Wait for the commit's WAL to be durable (session; settable)"),
    def("default_table_kind", Session, User, "enum", None, "Kind of a table created without USING: heap or undo (session; settable)"),
    def("work_mem", Session, User, "integer", Some("kB"), "Memory each sort and each grouping of a statement may use before it writes to temporary files (session; settable, e.g. '256MB')"),
    def("statement_mem", Session, User, "integer", Some("kB"), "Most memory one statement may keep in all (returned rows, joined sides, window partitions, sorts and groupings in memory); past it the statement fails (session; settable, e.g. '2GB')"),
    def("undo_limit", Db, User, "integer", Some("B"), "Most bytes of undo the undo log may hold at once, in memory and in files; -1: no bound (database; settable, e.g. '1GB')"),
    def("undo_memory", Db, User, "integer", Some("B"), "Undo kept in memory; older undo goes to files in the database's undo directory (database; settable, e.g. '256MB')"),
    def("wal_compression", Db, User, "enum", None, "Codec of the WAL frames written: off, lz4 or zstd (database; settable)"),
    def("transaction_isolation", Transaction, User, "enum", None, "Isolation level of the current transaction: read committed or repeatable read (snapshot isolation); read uncommitted runs as read committed; serializable is not supported (settable before the block's first query)"),
    def("default_transaction_isolation", Session, User, "enum", None, "Isolation level of each new transaction (session; settable)"),
    def("transaction_read_only", Transaction, User, "bool", None, "Whether the current transaction is READ ONLY: its writes fail with 25006 (settable in a block; read write only before its first query)"),
    def("default_transaction_read_only", Session, User, "bool", None, "Whether each new transaction is READ ONLY (session; settable)"),
    def("protection", Db, Internal, "enum", None, "Torn-page protection: cow, full-page or none (chosen at creation)"),
    def("page_size", Db, Internal, "integer", None, "Page size in bytes (chosen at creation)"),
    def("buffer_pool_size", Db, Internal, "integer", Some("B"), "Size of the buffer pool (chosen when the database is opened: walden serve/sql --buffer-pool, default a quarter of the machine's RAM)"),
    def("block_size", Db, Internal, "integer", None, "Page size in bytes, as PostgreSQL names it (read only)"),
    def("max_index_keys", Db, Internal, "integer", None, "Most columns an index may have (read only)"),
    def("max_connections", Session, Server, "integer", None, "Most connections the server takes at once (walden serve --max-connections)"),
    def("application_name", Session, User, "string", None, "Sets the application name to be reported in statistics and logs (session; settable)"),
    def("client_encoding", Session, User, "string", None, "The client's character set: UTF8 (SQL_ASCII is taken as UTF8)"),
    def("DateStyle", Session, User, "string", None, "Display format for dates: ISO (the order part is accepted)"),
    def("IntervalStyle", Session, User, "enum", None, "Display format for intervals: postgres"),
    def("TimeZone", Session, User, "string", None, "Time zone for timestamps with time zone: UTC"),
    def("extra_float_digits", Session, User, "integer", None, "Accepted for clients (-15 to 3); floats are always shown with the fewest digits that read back exactly"),
    def("search_path", Session, User, "string", None, "Accepted for clients; every table is in schema public"),
    def("statement_timeout", Session, User, "integer", Some("ms"), "Fails a statement running longer than this (57014); 0 is no limit (session; settable)"),
    def("lock_timeout", Session, User, "integer", Some("ms"), "Fails a statement whose wait for a lock (a row, a key, an advisory lock) lasts longer than this (55P03); 0 is no limit (session; settable)"),
    def("client_min_messages", Session, User, "enum", None, "Accepted for clients: notices and warnings are sent"),
    def("standard_conforming_strings", Session, User, "bool", None, "Backslashes are ordinary characters in '...' strings: on"),
    def("bytea_output", Session, User, "enum", None, "Output format of bytea: hex"),
    def("server_version", Session, Internal, "string", None, "PostgreSQL version whose protocol and catalog Walden speaks (read only)"),
    def("server_version_num", Session, Internal, "integer", None, "server_version as a number (read only)"),
    def("server_encoding", Session, Internal, "string", None, "The database's character set (read only)"),
    def("integer_datetimes", Session, Internal, "bool", None, "Timestamps are 64-bit integers (read only)"),
    def("max_identifier_length", Session, Internal, "integer", None, "Longest identifier (read only)"),
    def("is_superuser", Session, Internal, "bool", None, "Whether the user is a superuser (read only)"),
    def("session_authorization", Session, Internal, "string", None, "The role the session logged in as (read only)"),
    def("role", Session, Internal, "string", None, "The role statements run as, SET ROLE's: none for the session user"),
];

/// The most columns an index may have (the engine's limit, PostgreSQL's too).
pub const MAX_INDEX_KEYS: usize = 32;

/// What `max_connections` says when no server has told the session its own.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 100;

/// Other names of settings: PostgreSQL's name of Walden's `default_table_kind`.
const ALIASES: &[(&str, &str)] = &[("default_table_access_method", "default_table_kind")];

/// The setting of that name (any case), if there is one; custom settings are not here.
pub fn def_of(name: &str) -> Option<&'static Def> {
    let name = ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
        .map_or(name, |(_, n)| n);
    DEFS.iter().find(|d| d.name.eq_ignore_ascii_case(name))
}

/// Whether `name` is a custom setting's (PostgreSQL's placeholder variables): two or
/// more simple identifiers joined by dots, as PostgreSQL 15's
/// `valid_custom_variable_name` takes them.
pub fn is_custom_name(name: &str) -> bool {
    let mut saw_dot = false;
    let mut part_start = true;
    for c in name.chars() {
        if c == '.' {
            if part_start {
                return false;
            }
            saw_dot = true;
            part_start = true;
        } else if c.is_ascii_alphabetic() || c == '_' || !c.is_ascii() {
            part_start = false;
        } else if !part_start && (c.is_ascii_digit() || c == '$') {
        } else {
            return false;
        }
    }
    saw_dot && !part_start
}

/// The error for a name that is no setting: 42602 for a name with a dot that no
/// custom setting could have, else 42704.
pub fn unknown(name: &str) -> SqlError {
    if name.contains('.') && !is_custom_name(name) {
        return SqlError::new(
            code::INVALID_NAME,
            format!("invalid configuration parameter name \"{name}\""),
        )
        .with_detail(
            "Custom parameter names must be two or more simple identifiers separated by dots.",
        );
    }
    SqlError::new(
        code::UNDEFINED_OBJECT,
        format!("unrecognized configuration parameter \"{name}\""),
    )
    .with_hint("SHOW ALL lists Walden's settings.")
}

/// 55P02 for a read-only setting (or one fixed when the database was created, or by
/// the server).
pub fn read_only(def: &Def) -> SqlError {
    if def.context == Context::Server {
        return SqlError::new(
            "55P02",
            format!(
                "parameter \"{}\" cannot be changed without restarting the server",
                def.name
            ),
        );
    }
    let e = SqlError::new(
        "55P02",
        format!("parameter \"{}\" cannot be changed", def.name),
    );
    match def.name {
        "protection" | "page_size" => e.with_hint("It is chosen when the database is created."),
        _ => e,
    }
}

pub(crate) fn invalid_value(name: &str, value: &str) -> SqlError {
    SqlError::new(
        code::INVALID_PARAMETER,
        format!(
            "invalid value for parameter \"{name}\": \"{}\"",
            crate::error::clip(value)
        ),
    )
}

/// The settings a session holds, scoped to its transactions ([`Scoped`]). Cloned
/// when a transaction block first changes one, so kept small.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    pub client: ClientSettings,
    pub synchronous_commit: bool,
    /// The kind of a table created without `USING`.
    pub default_table_kind: TableKind,
    /// What each sort and grouping may keep in memory before it spills to files.
    pub work_mem_bytes: u64,
    /// The memory budget of one statement: past it, it fails (53200).
    pub statement_mem_bytes: u64,
    /// The level of transactions begun without one.
    pub default_isolation: IsolationLevel,
    /// Transactions begun without an access mode are READ ONLY.
    pub default_read_only: bool,
    /// What the server says it takes (read only).
    pub max_connections: u32,
    /// The role the session logged in as (`session_authorization`, `session_user`,
    /// `current_user`), and whether it is a superuser (`is_superuser`): the bootstrap
    /// superuser unless a server says who logged in.
    pub session_user: String,
    pub user_is_superuser: bool,
    /// SET ROLE's role (None: `none`, statements run as the session user).
    pub role: Option<String>,
    /// Whether SET ROLE's role is a superuser (`is_superuser` then says so of it).
    pub role_is_superuser: bool,
    /// The role that logged in: what SET SESSION AUTHORIZATION checks (a superuser's
    /// only), whichever session user it set.
    pub login_user: String,
    pub login_is_superuser: bool,
    /// Custom settings by name (lower case), as PostgreSQL's placeholder variables:
    /// any text, made by the first SET.
    pub custom: BTreeMap<String, String>,
}

impl SessionSettings {
    /// A new session's: the database's defaults and the clients'.
    pub fn new(db: &Database) -> SessionSettings {
        SessionSettings {
            client: ClientSettings::default(),
            synchronous_commit: db.synchronous_commit(),
            default_table_kind: db.default_table_kind(),
            work_mem_bytes: DEFAULT_WORK_MEM_BYTES,
            statement_mem_bytes: DEFAULT_STATEMENT_MEM_BYTES,
            default_isolation: IsolationLevel::ReadCommitted,
            default_read_only: false,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            session_user: crate::catalog::BOOTSTRAP.to_string(),
            user_is_superuser: true,
            role: None,
            role_is_superuser: false,
            login_user: crate::catalog::BOOTSTRAP.to_string(),
            login_is_superuser: true,
            custom: BTreeMap::new(),
        }
    }

    /// The role statements run as: SET ROLE's, else the session user.
    pub fn current_user(&self) -> &str {
        self.role.as_deref().unwrap_or(&self.session_user)
    }

    /// A session-scoped setting's value as SHOW gives it (`name` canonical, or a
    /// custom setting's); None for any other name.
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "synchronous_commit" => on_off(self.synchronous_commit),
            "default_table_kind" => self.default_table_kind.name().to_string(),
            "work_mem" => size_text(self.work_mem_bytes),
            "statement_mem" => size_text(self.statement_mem_bytes),
            "default_transaction_isolation" => self.default_isolation.name().to_string(),
            "default_transaction_read_only" => on_off(self.default_read_only),
            "max_connections" => self.max_connections.to_string(),
            "session_authorization" => self.session_user.clone(),
            "role" => self.role.clone().unwrap_or_else(|| "none".to_string()),
            "is_superuser" => on_off(match self.role {
                Some(_) => self.role_is_superuser,
                None => self.user_is_superuser,
            }),
            _ => match self.client.get(name) {
                Some(v) => v,
                None => self.custom.get(&name.to_ascii_lowercase())?.clone(),
            },
        })
    }

    /// Sets a session-scoped setting (`name` canonical, or a custom setting's) to
    /// `raw`, the value as written (sizes' units are case-sensitive). Nothing changes
    /// when it fails.
    pub fn set(&mut self, name: &str, raw: &str) -> SqlResult<()> {
        let lower = raw.trim().to_ascii_lowercase();
        match name {
            "synchronous_commit" => {
                self.synchronous_commit = match lower.as_str() {
                    "on" | "true" | "1" | "yes" | "local" | "remote_write" | "remote_apply" => true,
                    "off" | "false" | "0" | "no" => false,
                    _ => return Err(invalid_value(name, &lower)),
                };
            }
            "default_table_kind" => {
                self.default_table_kind =
                    crate::catalog::table_kind_named(&lower).ok_or_else(|| {
                        invalid_value(name, raw).with_hint(crate::catalog::TABLE_KINDS_HINT)
                    })?;
            }
            "work_mem" | "statement_mem" => {
                let bytes = parse_work_mem(raw).ok_or_else(|| {
                    invalid_value(name, raw).with_hint(
                        "Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\" (a bare number is kB); the least is 64kB.",
                    )
                })?;
                if name == "work_mem" {
                    self.work_mem_bytes = bytes;
                } else {
                    self.statement_mem_bytes = bytes;
                }
            }
            "default_transaction_isolation" => {
                self.default_isolation = IsolationLevel::parse_setting(name, raw)?;
            }
            "default_transaction_read_only" => {
                self.default_read_only = parse_bool(name, raw)?;
            }
            _ if is_custom_name(name) => {
                self.custom
                    .insert(name.to_ascii_lowercase(), raw.to_string());
            }
            _ => match self.client.set(name, raw) {
                Some(result) => result?,
                None => return Err(unknown(name)),
            },
        }
        Ok(())
    }
}

fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

/// A boolean setting's value as PostgreSQL reads one (`on`, `off`, `true`, `yes`, `1`,
/// and their prefixes PostgreSQL takes are not all taken here).
pub fn parse_bool(name: &str, raw: &str) -> SqlResult<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" | "t" | "y" => Ok(true),
        "off" | "false" | "no" | "0" | "f" | "n" => Ok(false),
        _ => Err(SqlError::new(
            code::INVALID_PARAMETER,
            format!("parameter \"{name}\" requires a Boolean value"),
        )),
    }
}

/// What a setting's value is read from besides the session's settings.
pub struct Env<'a> {
    pub db: &'a Database,
    /// The running (or next) transaction's level.
    pub isolation: IsolationLevel,
    /// The running (or next) transaction is READ ONLY.
    pub read_only: bool,
}

/// One setting's value as SHOW, `current_setting` and `pg_settings` give it.
#[derive(Debug, Clone)]
pub struct Shown {
    pub name: String,
    /// As SHOW shows it.
    pub value: String,
    /// `pg_settings.setting`: in the unit `def.unit` names, where it has one.
    pub setting: String,
    /// What RESET would give it (`pg_settings.reset_val`).
    pub reset: String,
    pub def: &'static Def,
}

impl From<Shown> for crate::pg_catalog::SettingRow {
    fn from(s: Shown) -> Self {
        crate::pg_catalog::SettingRow {
            name: s.name,
            setting: s.setting,
            unit: s.def.unit,
            description: s.def.description,
            context: s.def.context.name(),
            vartype: s.def.vartype,
            reset: s.reset,
        }
    }
}

/// The value of the setting of that name (any case), as SHOW gives it; None when there
/// is none.
pub fn value_of(name: &str, now: &SessionSettings, env: &Env) -> Option<String> {
    match def_of(name) {
        Some(d) => Some(value(d, now, env)),
        None if is_custom_name(name) => now.get(name),
        None => None,
    }
}

fn value(d: &Def, now: &SessionSettings, env: &Env) -> String {
    match d.scope {
        Scope::Session => now.get(d.name).unwrap_or_default(),
        Scope::Transaction if d.name == "transaction_read_only" => on_off(env.read_only),
        Scope::Transaction => env.isolation.name().to_string(),
        Scope::Database => match d.name {
            "undo_limit" => match env.db.undo_limit() {
                u64::MAX => "-1".to_string(),
                n => n.to_string(),
            },
            "undo_memory" => env.db.undo_memory().to_string(),
            "wal_compression" => env.db.wal_compression().name().to_string(),
            "protection" => env.db.protection().name().to_string(),
            "page_size" | "block_size" => env.db.page_size().to_string(),
            "buffer_pool_size" => env.db.buffer_pool_bytes().to_string(),
            "max_index_keys" => MAX_INDEX_KEYS.to_string(),
            // Every database setting of DEFS has an arm above (a unit test reads them all).
            _ => String::new(),
        },
    }
}

/// `pg_settings.setting`: the value in the setting's unit.
fn in_unit(d: &Def, now: &SessionSettings, shown: String) -> String {
    match d.name {
        "work_mem" => (now.work_mem_bytes / 1024).to_string(),
        "statement_mem" => (now.statement_mem_bytes / 1024).to_string(),
        "statement_timeout" => now
            .client
            .statement_timeout
            .map_or(0, |t| t.as_millis())
            .to_string(),
        "lock_timeout" => now
            .client
            .lock_timeout
            .map_or(0, |t| t.as_millis())
            .to_string(),
        _ => shown,
    }
}

/// Every setting with its value. Custom settings are not listed, as PostgreSQL lists
/// no placeholder variable in SHOW ALL or `pg_settings`.
pub fn all(now: &SessionSettings, reset: &SessionSettings, env: &Env) -> Vec<Shown> {
    DEFS.iter()
        .map(|d| {
            let shown = value(d, now, env);
            Shown {
                name: d.name.to_string(),
                setting: in_unit(d, now, shown.clone()),
                value: shown,
                reset: match d.scope {
                    Scope::Session => in_unit(d, reset, value(d, reset, env)),
                    _ => in_unit(d, now, value(d, now, env)),
                },
                def: d,
            }
        })
        .collect()
}

/// Sets a database-wide setting for every session, at once and for good (it is not
/// rolled back).
pub fn set_database(db: &Database, def: &Def, raw: &str) -> SqlResult<()> {
    match def.name {
        "undo_limit" | "undo_memory" => {
            let bytes = match raw.trim() {
                "-1" if def.name == "undo_limit" => Some(u64::MAX),
                raw => parse_size(raw),
            };
            let bytes = bytes.ok_or_else(|| {
                invalid_value(def.name, raw).with_hint(
                    "Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".",
                )
            })?;
            if def.name == "undo_limit" {
                db.set_undo_limit(bytes);
            } else {
                db.set_undo_memory(bytes);
            }
            Ok(())
        }
        "wal_compression" => {
            // PostgreSQL's spellings too: on (its default codec, pglz: here zstd).
            let codec = match raw.trim().to_ascii_lowercase().as_str() {
                "on" | "true" | "1" | "yes" => Some(walden::WalCompression::Zstd),
                "false" | "0" | "no" => Some(walden::WalCompression::Off),
                v => walden::WalCompression::parse(v),
            };
            let codec = codec.ok_or_else(|| {
                invalid_value(def.name, raw).with_hint("Available values: off, lz4, zstd.")
            })?;
            db.set_wal_compression(codec).map_err(SqlError::from)
        }
        _ => Err(read_only(def)),
    }
}

/// `work_mem` (and `statement_mem`) as PostgreSQL takes it: a size, where a bare number counts kB; at least
/// 64kB.
fn parse_work_mem(text: &str) -> Option<u64> {
    let bare = text.trim().chars().all(|c| c.is_ascii_digit() || c == '.');
    let bytes = if bare {
        parse_size(&format!("{}kB", text.trim()))?
    } else {
        parse_size(text)?
    };
    (bytes >= MIN_WORK_MEM_BYTES).then_some(bytes)
}

/// The least `work_mem` accepts, PostgreSQL's minimum.
const MIN_WORK_MEM_BYTES: u64 = 64 << 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_names_are_dotted_identifiers() {
        for good in ["a.b", "myapp.user_id", "a.b.c", "x1.y$", "_a._b"] {
            assert!(is_custom_name(good), "{good}");
        }
        for bad in ["ab", "a..b", ".a", "a.", "1a.b", "a.b c", "a.$b", ""] {
            assert!(!is_custom_name(bad), "{bad}");
        }
        assert_eq!(unknown("a..b").code, code::INVALID_NAME);
        assert_eq!(unknown("nope").code, code::UNDEFINED_OBJECT);
        assert_eq!(unknown("a.b").code, code::UNDEFINED_OBJECT);
    }

    #[test]
    fn every_setting_is_listed_once() {
        let mut names: Vec<String> = DEFS.iter().map(|d| d.name.to_lowercase()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), DEFS.len());
        for n in client::NAMES {
            assert!(def_of(n).is_some_and(|d| d.scope == Scope::Session), "{n}");
        }
    }
}
