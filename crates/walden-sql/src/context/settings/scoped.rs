//! A session's settings scoped to its transactions as PostgreSQL scopes them
//! ([`Scoped`]), and what one statement sees and changes of them
//! ([`StatementSettings`]: `current_setting`, `set_config`, `pg_settings`).
//!
//! A transaction keeps what its end restores: COMMIT leaves its SETs and undoes its
//! SET LOCALs, ROLLBACK (or an error in a block) undoes both. A statement outside a
//! block is a transaction of its own, so `set_config(name, value, true)` there lasts
//! until the statement ends.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use walden::Database;

use super::{def_of, is_custom_name, read_only, unknown, Env, Scope, SessionSettings, Shown};
use crate::error::{code, SqlError, SqlResult};
use crate::isolation::IsolationLevel;

/// The session's settings and the values the end of its transaction restores. Outside
/// a transaction, `at_commit` and `at_rollback` are `now` (the same `Arc`); the
/// copies are made only when a transaction changes something.
#[derive(Debug, Clone)]
pub struct Scoped {
    now: Arc<SessionSettings>,
    /// What COMMIT leaves: the transaction's start with its SETs (not its SET LOCALs).
    at_commit: Arc<SessionSettings>,
    /// What ROLLBACK leaves: the transaction's start.
    at_rollback: Arc<SessionSettings>,
    /// What RESET goes back to: the session's start, with the client's startup
    /// parameters.
    at_reset: Arc<SessionSettings>,
    /// Per savepoint of the running transaction (oldest first), the settings in force
    /// and what COMMIT would leave when it was set: what a rollback to it restores.
    marks: Vec<(Arc<SessionSettings>, Arc<SessionSettings>)>,
}

impl Scoped {
    pub fn new(settings: SessionSettings) -> Scoped {
        let s = Arc::new(settings);
        Scoped {
            now: s.clone(),
            at_commit: s.clone(),
            at_rollback: s.clone(),
            at_reset: s,
            marks: Vec::new(),
        }
    }

    /// The settings in force.
    pub fn now(&self) -> &SessionSettings {
        &self.now
    }

    /// What RESET gives back.
    pub fn at_reset(&self) -> &SessionSettings {
        &self.at_reset
    }

    /// A transaction starts: its end restores the settings as they are now.
    pub fn begin(&mut self) {
        self.at_commit = self.now.clone();
        self.at_rollback = self.now.clone();
        self.marks.clear();
    }

    /// A savepoint is set: a rollback to it restores the settings as they are now.
    pub fn savepoint(&mut self) {
        self.marks.push((self.now.clone(), self.at_commit.clone()));
    }

    /// A rollback to the savepoint at `depth` (1 the oldest), which stays set: SETs and
    /// SET LOCALs since it end.
    pub fn rollback_to(&mut self, depth: usize) {
        self.marks.truncate(depth);
        if let Some((now, at_commit)) = self.marks.last() {
            self.now = now.clone();
            self.at_commit = at_commit.clone();
        }
    }

    /// The savepoint at `depth` and those inside it are released: what they set stays.
    pub fn release(&mut self, depth: usize) {
        self.marks.truncate(depth.saturating_sub(1));
    }

    /// The transaction commits: its SET LOCALs end.
    pub fn commit(&mut self) {
        let kept = self.at_commit.clone();
        self.restore(kept);
    }

    /// The transaction rolls back: its SETs end too.
    pub fn rollback(&mut self) {
        let kept = self.at_rollback.clone();
        self.restore(kept);
    }

    /// Puts `to` in force outside any transaction. A custom setting made since is
    /// kept, empty, as PostgreSQL keeps a placeholder once made.
    fn restore(&mut self, mut to: Arc<SessionSettings>) {
        let made: Vec<String> = self
            .now
            .custom
            .keys()
            .filter(|k| !to.custom.contains_key(*k))
            .cloned()
            .collect();
        if !made.is_empty() {
            let t = Arc::make_mut(&mut to);
            for k in made {
                t.custom.insert(k, String::new());
            }
        }
        self.now = to.clone();
        self.at_commit = to.clone();
        self.at_rollback = to;
        self.marks.clear();
    }

    /// SET (`local` false) or SET LOCAL of a session-scoped or custom setting in the
    /// running transaction; `value` None is RESET (the value at the session's start).
    /// Nothing changes when it fails.
    pub fn set(&mut self, name: &str, value: Option<&str>, local: bool) -> SqlResult<()> {
        let name = session_name(name)?;
        let raw = match value {
            Some(v) => v.to_string(),
            None => self.at_reset.get(&name).unwrap_or_default(),
        };
        let mut now = (*self.now).clone();
        now.set(&name, &raw)?;
        if !local {
            Arc::make_mut(&mut self.at_commit).set(&name, &raw)?;
        }
        self.now = Arc::new(now);
        Ok(())
    }

    /// RESET ALL in the running transaction: every session-scoped setting back to its
    /// value at the session's start (custom ones to empty).
    pub fn reset_all(&mut self) {
        let mut to = (*self.at_reset).clone();
        for k in self.now.custom.keys() {
            to.custom.entry(k.clone()).or_default();
        }
        let to = Arc::new(to);
        self.now = to.clone();
        self.at_commit = to;
    }

    /// Sets a value outside any transaction and makes it the one RESET goes back to (a
    /// client's startup parameters).
    pub fn set_default(&mut self, name: &str, raw: &str) -> SqlResult<()> {
        let name = session_name(name)?;
        let mut s = (*self.now).clone();
        s.set(&name, raw)?;
        let mut reset = (*self.at_reset).clone();
        reset.set(&name, raw)?;
        self.at_reset = Arc::new(reset);
        self.restore(Arc::new(s));
        Ok(())
    }

    /// Tells the session which role logged in (read only to SQL).
    pub fn set_user(&mut self, name: &str, superuser: bool) {
        for s in [
            &mut self.now,
            &mut self.at_commit,
            &mut self.at_rollback,
            &mut self.at_reset,
        ] {
            let s = Arc::make_mut(s);
            s.session_user = name.to_string();
            s.user_is_superuser = superuser;
            s.login_user = name.to_string();
            s.login_is_superuser = superuser;
            s.role = None;
        }
    }

    /// SET [LOCAL] ROLE or SET [LOCAL] SESSION AUTHORIZATION (checked by the caller):
    /// `change` applied as a SET of the running transaction is.
    pub fn set_identity(&mut self, local: bool, change: impl Fn(&mut SessionSettings)) {
        change(Arc::make_mut(&mut self.now));
        if !local {
            change(Arc::make_mut(&mut self.at_commit));
        }
    }

    /// Tells the session the server's `max_connections` (read only to SQL).
    pub fn set_max_connections(&mut self, n: u32) {
        for s in [
            &mut self.now,
            &mut self.at_commit,
            &mut self.at_rollback,
            &mut self.at_reset,
        ] {
            Arc::make_mut(s).max_connections = n;
        }
    }
}

/// The canonical name of a setting SET may change in a session (custom ones in lower
/// case): 55P02 for a read-only one, 42704 (or 42602) for none.
fn session_name(name: &str) -> SqlResult<String> {
    match def_of(name) {
        Some(d) if d.context != super::Context::User => Err(read_only(d)),
        Some(d) if d.scope == Scope::Session => Ok(d.name.to_string()),
        Some(d) => Err(SqlError::new(
            code::INTERNAL,
            format!("{} is not a session's setting", d.name),
        )),
        None if is_custom_name(name) => Ok(name.to_ascii_lowercase()),
        None => Err(unknown(name)),
    }
}

/// The settings as one statement sees them: the session's, which `set_config` changes
/// (the session takes them back when the statement succeeds), and the running
/// transaction's level and the database's, read when asked.
pub struct StatementSettings {
    scoped: RefCell<Scoped>,
    /// `set_config` changed something.
    changed: Cell<bool>,
    isolation: IsolationLevel,
    /// The statement's transaction is READ ONLY.
    read_only: bool,
    db: Database,
    /// The session's open cursors (`pg_cursors`).
    cursors: Vec<crate::pg_catalog::CursorInfo>,
}

impl std::fmt::Debug for StatementSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatementSettings")
            .field("scoped", &self.scoped)
            .field("changed", &self.changed)
            .field("isolation", &self.isolation)
            .finish_non_exhaustive()
    }
}

impl StatementSettings {
    /// What a statement starting now sees: the session's settings; outside a block
    /// (`in_block` false) the statement is a transaction of its own, which ends what
    /// `set_config(…, true)` does.
    pub fn new(
        scoped: &Scoped,
        in_block: bool,
        isolation: IsolationLevel,
        db: &Database,
    ) -> StatementSettings {
        let mut scoped = scoped.clone();
        if !in_block {
            scoped.begin();
        }
        StatementSettings {
            scoped: RefCell::new(scoped),
            changed: Cell::new(false),
            isolation,
            read_only: false,
            db: db.clone(),
            cursors: Vec::new(),
        }
    }

    /// The statement's transaction is READ ONLY (`transaction_read_only`).
    pub fn with_read_only(mut self, read_only: bool) -> StatementSettings {
        self.read_only = read_only;
        self
    }

    /// With the session's open cursors, as `pg_cursors` lists them.
    pub fn with_cursors(mut self, cursors: Vec<crate::pg_catalog::CursorInfo>) -> Self {
        self.cursors = cursors;
        self
    }

    /// The session's open cursors when the statement started.
    pub fn cursors(&self) -> &[crate::pg_catalog::CursorInfo] {
        &self.cursors
    }

    /// The session's settings after the statement, if `set_config` changed them: for
    /// a statement outside a block, as its own transaction's commit leaves them.
    pub fn changed(self, in_block: bool) -> Option<Scoped> {
        if !self.changed.get() {
            return None;
        }
        let mut s = self.scoped.into_inner();
        if !in_block {
            s.commit();
        }
        Some(s)
    }

    fn env(&self) -> Env<'_> {
        Env {
            db: &self.db,
            isolation: self.isolation,
            read_only: self.read_only,
        }
    }

    /// `current_setting(name, missing_ok)`: the value as SHOW gives it; for a setting
    /// that does not exist, 42704, or None when `missing_ok`.
    pub fn current(&self, name: &str, missing_ok: bool) -> SqlResult<Option<String>> {
        let scoped = self.scoped.borrow();
        match super::value_of(name, scoped.now(), &self.env()) {
            Some(v) => Ok(Some(v)),
            None if missing_ok => Ok(None),
            None => Err(unknown(name)),
        }
    }

    /// `set_config(name, value, is_local)`: SET, or SET LOCAL when `local`, of `value`
    /// (None: RESET); the new value as SHOW gives it.
    pub fn set_config(&self, name: &str, value: Option<&str>, local: bool) -> SqlResult<String> {
        match def_of(name) {
            Some(d) if d.scope == Scope::Database && d.context == super::Context::User => {
                let Some(value) = value.filter(|_| !local) else {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        format!(
                            "{} is a database-wide setting: only SET (not SET LOCAL or RESET) changes it",
                            d.name
                        ),
                    ));
                };
                super::set_database(&self.db, d, value)?;
            }
            Some(d) if d.name == "transaction_read_only" => {
                // The statement runs: the mode may only stay.
                let ro = match value {
                    Some(v) => super::parse_bool(d.name, v)?,
                    None => self.scoped.borrow().now().default_read_only,
                };
                if ro != self.read_only {
                    return Err(SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "set_config cannot change transaction_read_only: use SET TRANSACTION",
                    ));
                }
            }
            Some(d) if d.scope == Scope::Transaction => {
                // The statement has taken its snapshot: the level may only stay.
                let level = match value {
                    Some(v) => IsolationLevel::parse_setting(d.name, v)?,
                    None => self.scoped.borrow().now().default_isolation,
                };
                if level != self.isolation {
                    return Err(crate::isolation::too_late());
                }
            }
            Some(d) if d.context != super::Context::User => return Err(read_only(d)),
            _ => {
                self.scoped.borrow_mut().set(name, value, local)?;
                self.changed.set(true);
            }
        }
        Ok(self.current(name, false)?.unwrap_or_default())
    }

    /// Every setting with its value (`pg_settings`).
    pub fn all(&self) -> Vec<Shown> {
        let scoped = self.scoped.borrow();
        super::all(scoped.now(), scoped.at_reset(), &self.env())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Scoped {
        let mut s = SessionSettings {
            client: Default::default(),
            synchronous_commit: true,
            default_table_kind: walden::TableKind::Heap,
            work_mem_bytes: 4 << 20,
            statement_mem_bytes: 1 << 30,
            default_isolation: IsolationLevel::ReadCommitted,
            default_read_only: false,
            max_connections: 100,
            session_user: "postgres".into(),
            user_is_superuser: true,
            role: None,
            role_is_superuser: false,
            login_user: "postgres".into(),
            login_is_superuser: true,
            custom: Default::default(),
        };
        s.set("application_name", "start").expect("set");
        Scoped::new(s)
    }

    fn work_mem(s: &Scoped) -> String {
        s.now().get("work_mem").unwrap_or_default()
    }

    #[test]
    fn set_local_ends_with_its_transaction_and_rollback_undoes_set() {
        let mut s = settings();
        s.begin();
        s.set("work_mem", Some("1MB"), true).expect("set local");
        s.set("WORK_MEM", Some("2MB"), false).expect("set");
        s.set("work_mem", Some("3MB"), true).expect("set local");
        assert_eq!(work_mem(&s), "3MB");
        s.commit();
        assert_eq!(work_mem(&s), "2MB");

        s.begin();
        s.set("work_mem", Some("9MB"), false).expect("set");
        s.set("application_name", Some("x"), true)
            .expect("set local");
        s.rollback();
        assert_eq!(work_mem(&s), "2MB");
        assert_eq!(s.now().get("application_name").as_deref(), Some("start"));

        // RESET: the session's start.
        s.begin();
        s.set("work_mem", None, false).expect("reset");
        s.commit();
        assert_eq!(work_mem(&s), "4MB");
    }

    #[test]
    fn a_failed_set_changes_nothing() {
        let mut s = settings();
        s.begin();
        let e = s.set("work_mem", Some("lots"), false).expect_err("invalid");
        assert_eq!(e.code, code::INVALID_PARAMETER);
        let e = s
            .set("server_version", Some("1"), false)
            .expect_err("read only");
        assert_eq!(e.code, "55P02");
        let e = s.set("nope", Some("1"), false).expect_err("unknown");
        assert_eq!(e.code, code::UNDEFINED_OBJECT);
        s.commit();
        assert_eq!(work_mem(&s), "4MB");
    }

    #[test]
    fn custom_settings_stay_once_made() {
        let mut s = settings();
        s.begin();
        s.set("MyApp.User", Some("7"), true).expect("set local");
        assert_eq!(s.now().get("myapp.user").as_deref(), Some("7"));
        s.commit();
        // PostgreSQL keeps the placeholder, empty.
        assert_eq!(s.now().get("myapp.user").as_deref(), Some(""));
        s.begin();
        s.set("myapp.user", Some("8"), false).expect("set");
        s.reset_all();
        s.commit();
        assert_eq!(s.now().get("myapp.user").as_deref(), Some(""));
        assert_eq!(s.now().get("application_name").as_deref(), Some("start"));
    }
}
