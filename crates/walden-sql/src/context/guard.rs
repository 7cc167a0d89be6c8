//! What stops a running statement early: a cancel request made from outside (Ctrl-C in
//! the shell, a CancelRequest on the wire) and the statement's memory budget, the
//! `statement_mem` setting; and where its sorts and groupings spill past `work_mem`.
//! The guard also carries what every part of a running statement may read: now(), and
//! the session's settings (`current_setting`, `set_config`).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use walden::Value;

use crate::error::{code, SqlError, SqlResult};

/// Asks a session's running statement to stop; it then fails with SQLSTATE 57014, as
/// PostgreSQL's canceled statements do (inside a transaction block the block is aborted).
/// Clones share one flag and may be used from any thread.
///
/// A request made while no statement runs is dropped when the next statement starts, as
/// PostgreSQL ignores a cancel request that reaches an idle session.
#[derive(Clone, Debug, Default)]
pub struct CancelHandle {
    requested: Arc<AtomicBool>,
}

impl CancelHandle {
    /// Requests that the running statement stop.
    pub fn cancel(&self) {
        self.requested.store(true, Ordering::Relaxed);
    }

    /// The flag itself, for a signal handler: storing `true` in it is all `cancel`
    /// does, and an atomic store is async-signal-safe (e.g.
    /// `signal_hook::flag::register(SIGINT, handle.flag())`).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.requested)
    }

    /// True if a request is pending (made and not yet honoured or dropped).
    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::Relaxed)
    }
}

/// One statement's checks, made as it runs: for a cancel request (per row read, written
/// or sorted) and against the memory budget (per row or group kept).
///
/// Memory is counted approximately: each kept row is charged an estimate of what it
/// holds (the `Value`s, their text, the vector around them, see [`row_bytes`]), not what
/// the allocator really hands out; a vector's spare capacity while it grows is not
/// counted, so the real peak may be up to about twice the charge.
#[derive(Debug)]
pub(crate) struct Guard {
    cancel: CancelHandle,
    /// The statement's budget (`statement_mem`).
    budget_bytes: u64,
    /// Bytes charged so far (a `Cell`: the checks are made from closures that share the
    /// guard).
    used_bytes: Cell<u64>,
    /// What now() gives in this statement: its transaction's start, in microseconds
    /// since 2000-01-01 UTC (set by the session after `start`).
    now_micros: i64,
    /// When the statement must stop (the `statement_timeout` setting), if ever.
    deadline: Option<std::time::Instant>,
    /// Checks since the clock was last read: it is read once per `CLOCK_EVERY` checks.
    checks: Cell<u32>,
    /// The settings the statement reads and changes (none for a guard that no
    /// statement of a session runs under).
    settings: Option<crate::settings::StatementSettings>,
    /// None: sorts and groupings keep everything in memory (within the budget).
    spilling: Option<Spilling>,
    /// The session's sequence state, lent to the statement (`nextval`, `currval`, …);
    /// none for a guard that no statement of a session runs under.
    sequences: Option<crate::sequences::StatementSequences>,
    /// The session's advisory locks: its database, its backend id, and the transaction
    /// the statement runs in (0 until it has one).
    advisory: Option<AdvisoryCx>,
    xid: Cell<u64>,
}

/// The session's database and backend id (advisory locks).
struct AdvisoryCx {
    db: walden::Database,
    backend: u64,
}

impl std::fmt::Debug for AdvisoryCx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AdvisoryCx {{ backend: {} }}", self.backend)
    }
}

/// Where a statement's sorts and groupings spill: their memory each (`work_mem`) and
/// the database's temporary files.
#[derive(Debug, Clone)]
pub(crate) struct Spilling {
    pub work_mem_bytes: u64,
    pub temp: walden::TempSpace,
}

/// The clock is read once per this many checks (a check per row: a few microseconds
/// of rows between two readings).
const CLOCK_EVERY: u32 = 256;

impl Guard {
    /// A guard for a statement that starts now: a cancel request pending from before is
    /// dropped.
    pub fn start(cancel: &CancelHandle, budget_bytes: u64) -> Guard {
        cancel.requested.store(false, Ordering::Relaxed);
        Guard {
            cancel: cancel.clone(),
            budget_bytes,
            used_bytes: Cell::new(0),
            now_micros: 0,
            deadline: None,
            checks: Cell::new(0),
            settings: None,
            spilling: None,
            sequences: None,
            advisory: None,
            xid: Cell::new(0),
        }
    }

    /// The session's database and backend id, for its advisory locks.
    pub fn set_advisory(&mut self, db: walden::Database, backend: u64) {
        self.advisory = Some(AdvisoryCx { db, backend });
    }

    /// The statement runs in transaction `xid`.
    pub fn set_xid(&self, xid: u64) {
        self.xid.set(xid);
    }

    /// (database, backend, the statement's transaction) for the advisory lock
    /// functions; None outside a session.
    pub fn advisory(&self) -> Option<(&walden::Database, u64, u64)> {
        self.advisory
            .as_ref()
            .map(|a| (&a.db, a.backend, self.xid.get()))
    }

    /// Lets the statement's sorts and groupings spill past `work_mem_bytes` each, to
    /// temporary files made in `temp`.
    pub fn set_spilling(&mut self, work_mem_bytes: u64, temp: walden::TempSpace) {
        self.spilling = Some(Spilling {
            work_mem_bytes,
            temp,
        });
    }

    pub(crate) fn spilling(&self) -> Option<&Spilling> {
        self.spilling.as_ref()
    }

    pub fn set_settings(&mut self, settings: crate::settings::StatementSettings) {
        self.settings = Some(settings);
    }

    pub fn settings(&self) -> Option<&crate::settings::StatementSettings> {
        self.settings.as_ref()
    }

    pub fn set_sequences(&mut self, sequences: crate::sequences::StatementSequences) {
        self.sequences = Some(sequences);
    }

    pub fn sequences(&self) -> Option<&crate::sequences::StatementSequences> {
        self.sequences.as_ref()
    }

    /// The session's sequence state as the statement leaves it.
    pub fn take_sequences(&mut self) -> Option<crate::sequences::StatementSequences> {
        self.sequences.take()
    }

    /// The settings as the statement leaves them (see `StatementSettings::changed`).
    pub fn take_settings(&mut self) -> Option<crate::settings::StatementSettings> {
        self.settings.take()
    }

    /// Sets what now() gives in this statement.
    pub fn set_now_micros(&mut self, micros: i64) {
        self.now_micros = micros;
    }

    pub fn now_micros(&self) -> i64 {
        self.now_micros
    }

    /// Makes the statement fail with 57014 once `timeout` has passed from now.
    pub fn set_timeout(&mut self, timeout: Option<std::time::Duration>) {
        self.deadline = timeout.map(|t| std::time::Instant::now() + t);
    }

    /// Fails with 57014 if the statement was asked to stop.
    pub fn check(&self) -> SqlResult<()> {
        if self.cancel.is_requested() {
            // Honoured: the request is used up.
            self.cancel.requested.store(false, Ordering::Relaxed);
            return Err(canceled());
        }
        if self.past_deadline() {
            return Err(timed_out());
        }
        Ok(())
    }

    /// As `check`, reading the clock now (a wait for a lock, which asks seldom).
    pub fn check_waiting(&self) -> SqlResult<()> {
        if self.deadline.is_some() {
            self.checks.set(CLOCK_EVERY - 1);
        }
        self.check()
    }

    /// True if the statement was asked to stop (for loops that cannot return an error;
    /// not inside a sort's comparisons, which must stay a total order).
    pub fn cancelled(&self) -> bool {
        self.cancel.is_requested() || self.past_deadline()
    }

    /// True once the statement's timeout has passed (looked at on one call in
    /// `CLOCK_EVERY`).
    fn past_deadline(&self) -> bool {
        let Some(deadline) = self.deadline else {
            return false;
        };
        let n = self.checks.get().wrapping_add(1);
        self.checks.set(n);
        if n.is_multiple_of(CLOCK_EVERY) && std::time::Instant::now() >= deadline {
            // The next look reads the clock again (and finds the same).
            self.checks.set(CLOCK_EVERY - 1);
            return true;
        }
        false
    }

    /// Counts `bytes` more kept by the statement; fails with 53200 past `statement_mem`.
    pub fn charge(&self, bytes: u64) -> SqlResult<()> {
        let used = self.used_bytes.get().saturating_add(bytes);
        self.used_bytes.set(used);
        if used > self.budget_bytes {
            return Err(out_of_memory(self.budget_bytes));
        }
        Ok(())
    }

    /// Fails with 53200 unless `bytes` more would stay within `statement_mem` (for a
    /// value about to be made, which is not kept: nothing is charged).
    pub fn room(&self, bytes: u64) -> SqlResult<()> {
        if bytes > self.remaining() {
            return Err(out_of_memory(self.budget_bytes));
        }
        Ok(())
    }

    /// The bytes the statement may still charge before `statement_mem` is passed.
    pub fn remaining(&self) -> u64 {
        self.budget_bytes.saturating_sub(self.used_bytes.get())
    }

    /// Gives back bytes charged for something the statement no longer keeps.
    pub fn release(&self, bytes: u64) {
        self.used_bytes
            .set(self.used_bytes.get().saturating_sub(bytes));
    }
}

/// The estimated bytes a kept row holds: its vector, its values, and their text.
pub(crate) fn row_bytes(row: &[Value]) -> u64 {
    let text: usize = row
        .iter()
        .map(|v| match v {
            Value::Text(s) => s.len(),
            _ => 0,
        })
        .sum();
    (std::mem::size_of::<Vec<Value>>() + std::mem::size_of_val(row) + text) as u64
}

pub(crate) fn canceled() -> SqlError {
    SqlError::new(
        code::QUERY_CANCELED,
        "canceling statement due to user request",
    )
}

fn timed_out() -> SqlError {
    SqlError::new(
        code::QUERY_CANCELED,
        "canceling statement due to statement timeout",
    )
}

fn out_of_memory(budget_bytes: u64) -> SqlError {
    SqlError::new(
        code::OUT_OF_MEMORY,
        format!(
            "out of memory: query needs more than statement_mem ({})",
            size_text(budget_bytes)
        ),
    )
    .with_hint(
        "Walden keeps returned rows, joined sides and window partitions in memory (sorts and \
         groupings past work_mem go to temporary files); add a LIMIT or a more selective \
         WHERE, or raise statement_mem (SET statement_mem = '2GB').",
    )
}

/// A size as PostgreSQL shows its memory settings: in the largest of kB, MB, GB and TB
/// that holds it exactly (`1GB`, `1536MB`), else in bytes (`1000B`).
pub fn size_text(bytes: u64) -> String {
    for (unit, shift) in [("TB", 40), ("GB", 30), ("MB", 20), ("kB", 10)] {
        if bytes != 0 && bytes.trailing_zeros() >= shift {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_in_their_largest_exact_unit() {
        assert_eq!(size_text(1 << 30), "1GB");
        assert_eq!(size_text(3 << 29), "1536MB");
        assert_eq!(size_text(64 << 10), "64kB");
        assert_eq!(size_text(1000), "1000B");
        assert_eq!(size_text(0), "0B");
    }

    #[test]
    fn a_charge_past_the_budget_fails_and_a_release_makes_room() {
        let cancel = CancelHandle::default();
        let guard = Guard::start(&cancel, 100);
        guard.charge(60).expect("within the budget");
        let e = guard.charge(41).expect_err("past the budget");
        assert_eq!(e.code, "53200");
        assert_eq!(
            e.message,
            "out of memory: query needs more than statement_mem (100B)"
        );
        guard.release(41);
        guard.release(10);
        guard.charge(50).expect("room again after the release");
    }

    #[test]
    fn a_request_stops_the_statement_once_and_an_old_one_is_dropped() {
        let cancel = CancelHandle::default();
        cancel.cancel();
        let guard = Guard::start(&cancel, 100);
        assert!(guard.check().is_ok(), "a request from before the start");
        cancel.flag().store(true, Ordering::Relaxed);
        let e = guard.check().expect_err("requested");
        assert_eq!(
            (e.code, e.message.as_str()),
            ("57014", "canceling statement due to user request")
        );
        assert!(guard.check().is_ok(), "the request was used up");
        assert!(!cancel.is_requested());
    }
}
