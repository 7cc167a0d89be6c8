//! The session's cursors: DECLARE opens one (its query's stream, read with the
//! DECLARE's held snapshot), FETCH and MOVE read or skip its rows, CLOSE and the end of
//! the transaction close it; COMMIT first reads the rest of a WITH HOLD cursor's rows.

use sqlparser::ast::Statement;

use super::{aborted, Output, Session, TxnState};
use crate::catalog::ident_name;
use crate::cursors::{Cursor, CursorStatement, Direction, Scroll};
use crate::error::{code, SqlError, SqlResult};
use crate::exec::{with_run, RowStream};
use crate::select::QueryPlan;

/// Runs `f` over a cursor's reads: with its held snapshot, in its transaction `t`; with
/// none for rows it read before.
fn cursor_run<R>(
    held: Option<&walden::HeldSnapshot>,
    t: Option<&walden::Transaction>,
    rng: &mut walden::rng::SimRng,
    guard: &crate::guard::Guard,
    f: impl FnOnce(&mut crate::expr::EvalCtx) -> SqlResult<R>,
) -> SqlResult<R> {
    match (held, t) {
        (None, _) => with_run(None, rng, guard, f),
        (Some(h), Some(t)) => with_run(Some(t.held_reader(h)?), rng, guard, f),
        (Some(_), None) => Err(SqlError::new(
            code::INTERNAL,
            "a cursor read outside the transaction that declared it",
        )),
    }
}

fn no_cursor(name: &str) -> SqlError {
    SqlError::new(
        code::INVALID_CURSOR_NAME,
        format!("cursor \"{name}\" does not exist"),
    )
}

impl Session {
    /// DECLARE name [BINARY] [INSENSITIVE] [[NO] SCROLL] CURSOR [WITH[OUT] HOLD] FOR query.
    pub(super) fn declare(&mut self, stmt: &Statement) -> SqlResult<Output> {
        let Statement::Declare { stmts } = stmt else {
            return Err(SqlError::new(code::INTERNAL, "not a DECLARE"));
        };
        let [d] = stmts.as_slice() else {
            return Err(SqlError::unsupported("DECLARE of several cursors"));
        };
        let (Some(query), [name]) = (&d.for_query, d.names.as_slice()) else {
            return Err(SqlError::unsupported("DECLARE of a variable"));
        };
        let name = ident_name(name);
        if self.cursors.contains_key(&name) {
            return Err(self.fail(SqlError::new(
                code::DUPLICATE_CURSOR,
                format!("cursor \"{name}\" already exists"),
            )));
        }
        let hold = d.hold == Some(true);
        let in_block = matches!(self.txn, TxnState::Block(_));
        if !hold && !in_block {
            return Err(SqlError::new(
                code::NO_ACTIVE_SQL_TRANSACTION,
                "DECLARE CURSOR can only be used in transaction blocks",
            ));
        }
        let scroll = match d.scroll {
            Some(true) => Scroll::Yes,
            Some(false) => Scroll::No,
            None => Scroll::Default,
        };
        let select = Statement::Query(query.clone());
        let auth = self.authority();
        if !auth.superuser {
            crate::privileges::check::check_statement(&self.db, &auth, &select)
                .map_err(|e| self.fail(e))?;
        }
        let created = self.wall_now();
        let text = match self.statement_text.take() {
            Some(t) => t,
            None => stmt.to_string(),
        };
        let mut cursor = self.transactional(|s, t| {
            let plan = QueryPlan::plan(query, &crate::view::catalog_of(&s.db))?;
            s.open_cursor(t, &plan, text, scroll, hold, created, in_block)
        })?;
        cursor.new = in_block;
        cursor.savepoints = self.savepoints.len();
        cursor.binary = d.binary == Some(true);
        self.cursors.insert(name, cursor);
        Ok(Output::tag("DECLARE CURSOR"))
    }

    /// A cursor over `plan`'s rows, read with a snapshot held from now: inside a
    /// block (`in_block`) it keeps the snapshot for its later reads; outside one (WITH
    /// HOLD) it reads its rows now, as its transaction commits.
    #[allow(clippy::too_many_arguments)]
    fn open_cursor(
        &mut self,
        t: &mut walden::Transaction,
        plan: &QueryPlan,
        text: String,
        scroll: Scroll,
        hold: bool,
        created: i64,
        in_block: bool,
    ) -> SqlResult<Cursor> {
        let keep = self.keep_limit(Scroll::Yes);
        let held = t.hold_snapshot()?;
        let reader = t.held_reader(&held)?;
        let (rng, guard) = (&mut self.rng, &self.guard);
        let mut cursor = with_run(Some(reader), rng, guard, |cx| -> SqlResult<Cursor> {
            let stream = RowStream::open(plan, cx)?;
            let mut c = Cursor::new(
                text,
                plan.columns().to_vec(),
                stream,
                None,
                scroll,
                hold,
                false,
                created,
            );
            if !in_block {
                // WITH HOLD outside a block: its transaction commits now.
                c.materialize(cx, keep)?;
            }
            Ok(c)
        })?;
        if cursor.stream_is_materialized() || !in_block {
            t.release_snapshot(held);
        } else {
            cursor.held = Some(held);
        }
        Ok(cursor)
    }

    /// The wall clock now (pg_cursors.creation_time), not the transaction's start.
    fn wall_now(&self) -> i64 {
        match &self.clock {
            Some(c) => c(),
            None => crate::datetime::system_now_micros(),
        }
    }

    /// The most a cursor keeps to move back over: a SCROLL cursor (and a WITH HOLD
    /// cursor's rows at COMMIT) up to `statement_mem`, a default one up to `work_mem`.
    fn keep_limit(&self, scroll: Scroll) -> u64 {
        let now = self.settings.now();
        match scroll {
            Scroll::Yes => now.statement_mem_bytes,
            Scroll::Default => now.work_mem_bytes,
            Scroll::No => 0,
        }
    }

    /// FETCH, MOVE or CLOSE.
    pub(super) fn cursor_statement(&mut self, c: CursorStatement) -> SqlResult<Output> {
        if matches!(self.txn, TxnState::Failed(_)) {
            return Err(aborted());
        }
        match c {
            CursorStatement::Close(None) => {
                for (_, c) in std::mem::take(&mut self.cursors) {
                    self.release(c);
                }
                Ok(Output::tag("CLOSE CURSOR ALL"))
            }
            CursorStatement::Close(Some(name)) => match self.cursors.remove(&name) {
                Some(c) => {
                    self.release(c);
                    Ok(Output::tag("CLOSE CURSOR"))
                }
                None => Err(self.fail(no_cursor(&name))),
            },
            CursorStatement::Fetch {
                name,
                direction,
                moving,
            } => {
                let mut rows = Vec::new();
                let binary = self.cursors.get(&name).is_some_and(|c| c.binary);
                let n = self.fetch_rows(&name, direction, &mut rows)?;
                if moving {
                    return Ok(Output::tag(format!("MOVE {n}")));
                }
                let mut out = Output::tag(format!("FETCH {n}"));
                out.binary = binary;
                // A cursor whose read succeeded is still open.
                out.columns = self.cursor_description(&name).unwrap_or_default();
                out.rows = rows;
                Ok(out)
            }
        }
    }

    /// Moves a cursor, its rows into `rows`; returns the count its tag shows. An error
    /// closes the cursor (PostgreSQL drops a failed portal) and fails the block.
    fn fetch_rows(
        &mut self,
        name: &str,
        direction: Direction,
        rows: &mut Vec<Vec<walden::Value>>,
    ) -> SqlResult<u64> {
        let Some(mut cursor) = self.cursors.remove(name) else {
            return Err(self.fail(no_cursor(name)));
        };
        let limit = self.keep_limit(cursor.scroll);
        let held = cursor.held.take();
        let t = match &self.txn {
            TxnState::Block(t) => Some(&**t),
            _ => None,
        };
        let r = cursor_run(held.as_ref(), t, &mut self.rng, &self.guard, |cx| {
            cursor.fetch(direction, cx, limit, rows)
        });
        cursor.held = held;
        match r {
            Ok(n) => {
                self.cursors.insert(name.to_string(), cursor);
                Ok(n)
            }
            Err(e) => {
                self.release(cursor);
                Err(self.fail(e))
            }
        }
    }

    /// Closes a cursor: its held snapshot goes back to its transaction.
    fn release(&mut self, mut c: Cursor) {
        if let (Some(h), TxnState::Block(t)) = (c.held.take(), &mut self.txn) {
            t.release_snapshot(h);
        }
    }

    /// The columns a FETCH of that cursor gives (Describe of a prepared FETCH); none for
    /// a MOVE, a CLOSE or a cursor that does not exist.
    pub(super) fn cursor_columns(
        &self,
        c: &CursorStatement,
    ) -> Vec<(String, crate::types::SqlType)> {
        match c {
            CursorStatement::Fetch {
                name,
                moving: false,
                ..
            } => self
                .cursors
                .get(name)
                .map(|c| c.columns.clone())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Opens a protocol portal of a prepared query in a transaction block as a NO
    /// SCROLL cursor named `name` (portals and cursors share one namespace, as in
    /// PostgreSQL): a client's Execute with a row limit then reads it a batch at a time
    /// (`fetch_portal`) without its rows being made whole. Ok(false) for any other
    /// statement, or outside a block (the caller runs it whole): a portal of an
    /// implicit transaction would outlive its statement's commit.
    pub fn open_portal(
        &mut self,
        name: &str,
        p: &crate::Prepared,
        params: &[walden::Value],
    ) -> SqlResult<bool> {
        if !matches!(self.txn, TxnState::Block(_))
            || !matches!(p.statement(), Some(Statement::Query(_)))
        {
            return Ok(false);
        }
        self.close_portal(name);
        self.guard = self.start_guard();
        self.statement_starts().map_err(|e| self.fail(e))?;
        let parsed = p.with_values(params, &self.db).map_err(|e| self.fail(e))?;
        let auth = self.authority();
        if !auth.superuser {
            let stmt = match &parsed {
                crate::script::Parsed::Prepared(run) => run.statement().statement().clone(),
                crate::script::Parsed::Statement { stmt, .. } => (**stmt).clone(),
                _ => return Ok(false),
            };
            crate::privileges::check::check_statement(&self.db, &auth, &stmt)
                .map_err(|e| self.fail(e))?;
        }
        let text = p.text().to_string();
        let created = self.wall_now();
        let cursor = self.transactional(|s, t| {
            let plan = match &parsed {
                crate::script::Parsed::Prepared(run) => run.select_plan(&s.db)?,
                crate::script::Parsed::Statement { stmt, .. } => match &**stmt {
                    Statement::Query(q) => QueryPlan::plan(q, &crate::view::catalog_of(&s.db))?,
                    _ => return Err(SqlError::new(code::INTERNAL, "a portal of no query")),
                },
                _ => return Err(SqlError::new(code::INTERNAL, "a portal of no query")),
            };
            s.open_cursor(t, &plan, text, Scroll::No, false, created, true)
        })?;
        // Not in pg_cursors, as PostgreSQL shows no portal a Bind made.
        let mut cursor = cursor;
        cursor.visible = false;
        self.cursors.insert(name.to_string(), cursor);
        Ok(true)
    }

    /// Reads up to `max` rows (0: all) of a portal `open_portal` opened into `rows`;
    /// returns how many, and whether it has no more (then it is closed).
    pub fn fetch_portal(
        &mut self,
        name: &str,
        max: u64,
        rows: &mut dyn crate::RowSink,
    ) -> SqlResult<(u64, bool)> {
        self.guard = self.start_guard();
        if !self.cursors.contains_key(name) {
            // Its transaction ended (COMMIT or ROLLBACK close portals).
            return Err(SqlError::new(
                code::INVALID_CURSOR_NAME,
                format!("portal \"{name}\" does not exist"),
            ));
        }
        let direction = Direction::Forward((max > 0).then_some(max));
        let mut out = Vec::new();
        let n = self.fetch_rows(name, direction, &mut out)?;
        for row in &out {
            rows.row(row)?;
        }
        let done = max == 0 || n < max || self.cursor_at_end(name);
        if done {
            self.close_portal(name);
        }
        Ok((n, done))
    }

    /// Closes a portal (a cursor) of that name, if there is one.
    pub fn close_portal(&mut self, name: &str) {
        if let Some(c) = self.cursors.remove(name) {
            self.release(c);
        }
    }

    fn cursor_at_end(&self, name: &str) -> bool {
        self.cursors.get(name).is_none_or(|c| c.at_end())
    }

    /// The result columns of an open cursor (a client's Describe of a portal by the
    /// cursor's name: PostgreSQL's cursors are portals); None if there is none.
    pub fn cursor_description(&self, name: &str) -> Option<Vec<(String, crate::types::SqlType)>> {
        self.cursors.get(name).map(|c| c.columns.clone())
    }

    /// Before a block's COMMIT: each WITH HOLD cursor it declared reads the rest of its
    /// rows; the others close.
    pub(super) fn cursors_at_commit(&mut self, t: &walden::Transaction) -> SqlResult<()> {
        let names: Vec<String> = self.cursors.keys().cloned().collect();
        for name in names {
            let Some(mut c) = self.cursors.remove(&name) else {
                continue;
            };
            if !c.hold {
                continue;
            }
            if c.new {
                let limit = self.keep_limit(Scroll::Yes);
                let held = c.held.take();
                cursor_run(held.as_ref(), Some(t), &mut self.rng, &self.guard, |cx| {
                    c.materialize(cx, limit)
                })?;
            }
            self.cursors.insert(name, c);
        }
        Ok(())
    }

    /// At a rollback (or a failed block): the cursors declared in the transaction go.
    pub(super) fn cursors_at_rollback(&mut self) {
        self.cursors.retain(|_, c| !c.new && c.held.is_none());
    }

    /// At a rollback to the savepoint at `depth`: the cursors declared since it was
    /// set go (their snapshots released in `t`).
    pub(super) fn cursors_at_rollback_to(&mut self, t: &mut walden::Transaction, depth: usize) {
        let gone: Vec<String> = self
            .cursors
            .iter()
            .filter(|(_, c)| c.new && c.savepoints >= depth)
            .map(|(n, _)| n.clone())
            .collect();
        for name in gone {
            if let Some(mut c) = self.cursors.remove(&name) {
                if let Some(h) = c.held.take() {
                    t.release_snapshot(h);
                }
            }
        }
    }

    /// At a release of the savepoint at `depth`: the cursors declared since belong to
    /// the savepoint around it.
    pub(super) fn cursors_at_release(&mut self, depth: usize) {
        for c in self.cursors.values_mut() {
            c.savepoints = c.savepoints.min(depth - 1);
        }
    }

    /// The session's cursors for `pg_cursors`: name, statement, holdable, binary,
    /// scrollable, creation time.
    pub(crate) fn cursor_list(&self) -> Vec<crate::cursors::CursorInfo> {
        self.cursors
            .iter()
            .filter(|(_, c)| c.visible)
            .map(|(name, c)| crate::cursors::CursorInfo {
                name: name.clone(),
                statement: c.text.clone(),
                holdable: c.hold,
                binary: c.binary,
                scrollable: c.scrollable(),
                created: c.created,
            })
            .collect()
    }
}
