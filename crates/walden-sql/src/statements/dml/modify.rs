//! What UPDATE and DELETE share: the statement bound against its table (`BoundModify`),
//! its rows found and judged, changed in one command, and READ COMMITTED's rows left
//! judged again; RETURNING rows and foreign-key notes kept per row.

use std::ops::ControlFlow;

use sqlparser::ast;
use walden::{Row, RowAction, Schema, Transaction, Value};

use super::assign::{assign, check_not_null};
use super::delete::{bind_delete, delete_parsed};
use super::recheck::Noted;
use super::returning::{changed, Returning};
use super::update::{bind_update, update_parsed};
use crate::access_path::{self, Access, Wanted};
use crate::bind::Binder;
use crate::catalog::Scope;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::fkeys::enforce::Written;
use crate::guard::{row_bytes, Guard};
use crate::infer::Params;
use crate::optimize::simplify::is_constant_false;
use crate::prepared::Plan;
use crate::run::RunCx;
use crate::select::{read_index, PlanCx, Subqueries};
use crate::statement::{Ctx, Output};
use crate::types::SqlType;

/// A prepared UPDATE or DELETE: its cached plan, or its values written in.
pub(super) fn prepared_modify(cx: &mut Ctx, t: &mut Transaction) -> SqlResult<Output> {
    let Some(run) = cx.prepared else {
        return Err(SqlError::new(code::INTERNAL, "no prepared statement runs"));
    };
    if let Some(Plan::Modify(plan)) = run.plan(cx.db) {
        return plan.run(cx, t, Some(run.values()));
    }
    let stmt = run.written_in();
    match &*stmt {
        ast::Statement::Update(u) => update_parsed(cx, t, u),
        ast::Statement::Delete(d) => delete_parsed(cx, t, d),
        _ => Err(SqlError::new(
            code::INTERNAL,
            "a prepared statement changed",
        )),
    }
}

/// An UPDATE or DELETE bound against its table; a prepared one keeps it with its
/// parameters unfilled.
#[derive(Debug)]
pub(crate) struct BoundModify {
    pub(super) table: String,
    pub(super) schema: Schema,
    /// UPDATE's assignments (column, value); None for a DELETE.
    pub(super) sets: Option<Vec<(usize, Expr)>>,
    pub(super) filter: Option<Expr>,
    pub(super) returning: Option<Returning>,
}

impl BoundModify {
    /// Binds a prepared UPDATE or DELETE with its parameters of `types`; None when it
    /// does not bind that way (it is then run with its values written in, which also
    /// reports any error).
    pub fn cached(
        stmt: &ast::Statement,
        types: &[SqlType],
        db: &walden::Database,
    ) -> Option<BoundModify> {
        let params = Params::Typed(types);
        match stmt {
            ast::Statement::Update(u) => bind_update(db, u, params),
            ast::Statement::Delete(d) => bind_delete(db, d, params),
            _ => Err(SqlError::new(code::INTERNAL, "not an UPDATE or DELETE")),
        }
        .ok()
    }

    /// The assignments and the WHERE clause with `values` for their parameters.
    #[allow(clippy::type_complexity)]
    fn filled(&self, values: &[Value]) -> SqlResult<(Option<Vec<(usize, Expr)>>, Option<Expr>)> {
        let fill = |e: &Expr| e.clone().with_params(values);
        let sets = self
            .sets
            .as_ref()
            .map(|sets| sets.iter().map(|(i, e)| fill(e).map(|x| (*i, x))).collect())
            .transpose()?;
        let filter = self.filter.as_ref().map(fill).transpose()?;
        Ok((sets, filter))
    }

    /// Runs it, with these values for its parameters if it has any.
    pub fn run(
        &self,
        cx: &mut Ctx,
        t: &mut Transaction,
        values: Option<&[Value]>,
    ) -> SqlResult<Output> {
        let filled = values.map(|v| self.filled(v)).transpose()?;
        let (sets, filter) = match &filled {
            Some((sets, filter)) => (sets.as_deref(), filter.as_ref()),
            None => (self.sets.as_deref(), self.filter.as_ref()),
        };
        let table = &self.table;
        let returning = self.returning.as_ref();
        if filter.is_some_and(is_constant_false) {
            // WHERE is the constant false or NULL: no row is read, none is changed.
            let update = sets.is_some();
            return finish(cx, t, table, update, 0, returning, Noted::default(), None);
        }
        let mut notes = ModifyNotes {
            returning,
            guard: cx.guard,
            returned: Noted::default(),
            fk: crate::fkeys::enforce::watches(cx, table)?.then(Noted::default),
        };
        let pass = Pass {
            table,
            schema: &self.schema,
            sets,
            filter,
            checks: cx.checks,
            reads: filter.is_some_and(Expr::has_subquery)
                || sets.is_some_and(|s| s.iter().any(|(_, e)| e.has_subquery())),
        };
        let first = if pass.reads {
            pass.judge_first(cx, t, &mut notes)?
        } else {
            pass.judge_as_read(cx, t, &mut notes)?
        };
        let mut n = first.count;
        if !first.changed.is_empty() {
            n += pass.judge_left(cx, t, first.changed, &mut notes)?;
        }
        let ModifyNotes { returned, fk, .. } = notes;
        finish(cx, t, table, sets.is_some(), n, returning, returned, fk)
    }
}

/// One run of an UPDATE or DELETE: its table, its assignments and WHERE clause (the
/// run's values filled in), and whether subqueries in them read tables.
struct Pass<'s> {
    table: &'s str,
    schema: &'s Schema,
    sets: Option<&'s [(usize, Expr)]>,
    filter: Option<&'s Expr>,
    checks: &'s crate::checks::CheckCache,
    reads: bool,
}

impl Pass<'_> {
    /// What the statement does with `row`, judged by `filter`.
    fn action(
        &self,
        row: &[Value],
        filter: Option<&Expr>,
        ecx: &mut EvalCtx,
    ) -> SqlResult<RowAction> {
        row_action(
            self.checks,
            row,
            self.sets,
            filter,
            self.table,
            self.schema,
            ecx,
        )
    }

    /// Subqueries read tables as the rows are judged: every row is judged first, in one
    /// command's snapshot, then the changes are made.
    fn judge_first(
        &self,
        cx: &mut Ctx,
        t: &mut Transaction,
        notes: &mut ModifyNotes,
    ) -> SqlResult<walden::Modified> {
        let guard = cx.guard;
        let mut actions = Vec::new();
        {
            let reader = t.reader()?;
            let rc = RunCx::new(Some(reader), guard, &Subqueries);
            let mut ecx = eval_cx(&mut *cx.rng, Some(&rc), guard);
            let mut judge = |id: walden::RowId, row: walden::Row| -> SqlResult<ControlFlow<()>> {
                guard.check()?;
                let action = self.action(&row, self.filter, &mut ecx)?;
                notes.give_back(id, &row, &action, &mut ecx)?;
                if !matches!(action, RowAction::Keep) {
                    guard.charge(action_bytes(&action))?;
                    actions.push((id, action));
                }
                Ok(ControlFlow::Continue(()))
            };
            match access_for(cx.db, self.table, self.schema, self.filter) {
                Access::Scan => {
                    let shape = walden::RowShape::default();
                    reader.read(walden::Rows::Table(self.table), shape, &mut judge)?
                }
                Access::Index(r) => read_index(&reader, &r, 0, (&[], &[]), &mut judge)?,
            }
        }
        Ok(t.modify_rows(self.table, actions)?)
    }

    /// The rows judged as they are read, decoding of each what the statement needs.
    fn judge_as_read(
        &self,
        cx: &mut Ctx,
        t: &mut Transaction,
        notes: &mut ModifyNotes,
    ) -> SqlResult<walden::Modified> {
        let guard = cx.guard;
        // A DELETE that returns nothing and has no foreign key to tell needs of a
        // row only what its WHERE clause reads; other statements need rows that
        // pass it whole.
        let whole = self.sets.is_some() || notes.returning.is_some() || notes.fk.is_some();
        let judged = Judged::of(self.schema, self.filter, whole);
        // The whole rows of rows that pass, decoded into one vector.
        let mut full = Vec::new();
        let (table, schema) = (self.table, self.schema);
        let first = modify(cx.db, guard, t, table, schema, &judged, |id, some, rest| {
            let mut ecx = EvalCtx::of(&mut *cx.rng, guard);
            guard.check()?;
            if let Some(f) = self.filter {
                if !f.test(some, &mut ecx)? {
                    return Ok(RowAction::Keep);
                }
            }
            let row = match rest {
                Some(decode) if whole => {
                    decode(&mut full)?;
                    &full
                }
                _ => some,
            };
            let a = self.action(row, None, &mut ecx)?;
            notes.give_back(id, row, &a, &mut ecx)?;
            Ok(a)
        })?;
        Ok(first)
    }

    /// READ COMMITTED: the rows the engine `left` (a transaction that committed since
    /// the snapshot changed them) judged again in their newest versions, and what was
    /// done to them noted. The number of rows changed.
    fn judge_left(
        &self,
        cx: &mut Ctx,
        t: &mut Transaction,
        left: Vec<walden::RowId>,
        notes: &mut ModifyNotes,
    ) -> SqlResult<u64> {
        notes.forget(&left);
        let guard = cx.guard;
        let rng = &mut *cx.rng;
        let (more, applied) =
            super::recheck::judge_again(t, self.table, left, &mut |t, _, newest| {
                guard.check()?;
                let reader = self.reads.then(|| t.command_reader()).transpose()?;
                let rc = RunCx::new(reader, guard, &Subqueries);
                let mut ecx = eval_cx(&mut *rng, self.reads.then_some(&rc), guard);
                self.action(&newest.row, self.filter, &mut ecx)
            })?;
        let rc = RunCx::new(
            self.reads.then(|| t.command_reader()).transpose()?,
            guard,
            &Subqueries,
        );
        let mut ecx = eval_cx(&mut *cx.rng, self.reads.then_some(&rc), guard);
        for (id, row, action) in applied {
            notes.give_back(id, &row, &action, &mut ecx)?;
        }
        Ok(more)
    }
}

/// The context a row of the statement is evaluated in, with `run` for subqueries that
/// read tables.
pub(super) fn eval_cx<'c>(
    rng: &'c mut walden::rng::SimRng,
    run: Option<&'c RunCx<'c>>,
    guard: &'c Guard,
) -> EvalCtx<'c> {
    EvalCtx {
        rng,
        outer: &[],
        run,
        now_micros: guard.now_micros(),
        settings: guard.settings(),
        sequences: guard.sequences(),
        guard: Some(guard),
        folding: false,
    }
}

/// What an UPDATE or DELETE notes of each row it changes — its RETURNING row, and the
/// change for the table's foreign keys — under the id of the row judged: READ
/// COMMITTED may leave a row and judge its newest version again (`dml/recheck.rs`).
struct ModifyNotes<'r> {
    returning: Option<&'r Returning>,
    guard: &'r Guard,
    returned: Noted<Vec<Value>>,
    /// None: no foreign key involves the table.
    fk: Option<Noted<(Row, RowAction)>>,
}

impl ModifyNotes<'_> {
    fn give_back(
        &mut self,
        id: walden::RowId,
        row: &[Value],
        action: &RowAction,
        ecx: &mut crate::expr::EvalCtx,
    ) -> SqlResult<()> {
        if let Some(fk) = self.fk.as_mut() {
            self.guard.charge(row_bytes(row) * 2 + 32)?;
            fk.push(id, (row.to_vec(), action.clone()));
        }
        let Some(r) = self.returning else {
            return Ok(());
        };
        let out = match action {
            RowAction::Update(new) => r.project(new, ecx)?,
            RowAction::Delete => r.project(row, ecx)?,
            _ => return Ok(()),
        };
        self.guard.charge(row_bytes(&out) + 24)?;
        self.returned.push(id, out);
        Ok(())
    }

    /// Takes back the notes of rows the engine left.
    fn forget(&mut self, left: &[walden::RowId]) {
        self.returned.forget(left);
        if let Some(fk) = self.fk.as_mut() {
            fk.forget(left);
        }
    }
}

/// What an UPDATE or DELETE does with one row.
fn row_action(
    checks: &crate::checks::CheckCache,
    row: &[Value],
    sets: Option<&[(usize, Expr)]>,
    filter: Option<&Expr>,
    table: &str,
    schema: &Schema,
    ecx: &mut crate::expr::EvalCtx,
) -> SqlResult<RowAction> {
    if let Some(f) = filter {
        if !f.test(row, ecx)? {
            return Ok(RowAction::Keep);
        }
    }
    let Some(sets) = sets else {
        return Ok(RowAction::Delete);
    };
    let mut new = row.to_vec();
    for (i, e) in sets {
        new[*i] = assign(e.eval(row, ecx)?, &schema.columns[*i])?;
    }
    check_not_null(checks, table, schema, &new)?;
    Ok(RowAction::Update(new))
}

/// A binder for an UPDATE's or DELETE's expressions, where subqueries may read tables.
pub(super) fn modify_binder<'a>(scope: &'a Scope, cx: &'a PlanCx<'a>) -> Binder<'a> {
    Binder::in_query(scope, cx)
}

/// How an UPDATE or DELETE with this WHERE clause reads its table.
pub(crate) fn access_for(
    db: &walden::Database,
    table: &str,
    schema: &Schema,
    filter: Option<&Expr>,
) -> Access {
    let indexes = crate::catalog::index_metas(db, table);
    if indexes.is_empty() || filter.is_none() {
        return Access::Scan;
    }
    let types: Vec<walden::ColumnType> = schema.columns.iter().map(|c| c.ty).collect();
    access_path::choose(
        &indexes,
        &types,
        &Wanted {
            filter,
            order: None,
            nulls_dropped: false,
            few: false,
            stats: None,
        },
    )
}

/// An UPDATE's or DELETE's WHERE clause, and what the statement decodes of each row
/// it scans before judging it: the columns that clause reads (`needed`), unless that is
/// every column or the statement needs rows whole and has no WHERE clause.
struct Judged<'f> {
    filter: Option<&'f Expr>,
    needed: Option<Vec<bool>>,
    width: usize,
}

impl<'f> Judged<'f> {
    fn of(schema: &Schema, filter: Option<&'f Expr>, whole: bool) -> Judged<'f> {
        let width = schema.columns.len();
        let mut needed = vec![false; width];
        for c in filter.iter().flat_map(|f| f.columns()) {
            if let Some(n) = needed.get_mut(c) {
                *n = true;
            }
        }
        // Rows needed whole and judged by no filter are decoded whole at once.
        let partial = needed.iter().any(|n| !n) && (filter.is_some() || !whole);
        Judged {
            filter,
            needed: partial.then_some(needed),
            width,
        }
    }
}

/// Runs `f` on the rows of `table` an UPDATE or DELETE judges (through an index when its
/// WHERE clause bounds one), and applies what it says, in one command. `f` gets each row
/// with the columns `judged` asks for (the others NULL) and, when those are not all,
/// what decodes the whole row (into the vector it is given). Under READ COMMITTED the
/// rows transactions that committed since the snapshot changed are left and listed
/// (`Modified::changed`).
#[allow(clippy::type_complexity)]
fn modify(
    db: &walden::Database,
    guard: &Guard,
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    judged: &Judged,
    mut f: impl FnMut(
        walden::RowId,
        &walden::Row,
        Option<&mut dyn FnMut(&mut walden::Row) -> SqlResult<()>>,
    ) -> SqlResult<RowAction>,
) -> SqlResult<walden::Modified> {
    match access_for(db, table, schema, judged.filter) {
        Access::Scan => {
            let shape = walden::RowShape {
                needed: judged.needed.as_deref(),
                capacity: judged.width,
            };
            // Decoded into the same vector row after row.
            let mut some = Vec::new();
            t.modify(table, |id, decode| {
                decode(shape, &mut some)?;
                if judged.needed.is_none() {
                    return f(id, &some, None);
                }
                let mut whole = |row: &mut walden::Row| -> SqlResult<()> {
                    Ok(decode(walden::RowShape::default(), row)?)
                };
                f(id, &some, Some(&mut whole))
            })
        }
        Access::Index(r) => {
            // Found first, then changed: a changed key never meets the read again.
            let mut actions = Vec::new();
            read_index(
                &t.reader()?,
                &r,
                0,
                (&[], &[]),
                &mut |id, row| match f(id, &row, None)? {
                    RowAction::Keep => Ok(ControlFlow::Continue(())),
                    RowAction::Stop => Ok(ControlFlow::Break(())),
                    action => {
                        guard.charge(action_bytes(&action))?;
                        actions.push((id, action));
                        Ok(ControlFlow::Continue(()))
                    }
                },
            )?;
            Ok(t.modify_rows(table, actions)?)
        }
    }
}

/// What an action found by a read keeps in memory until it is applied, charged to the
/// statement's guard.
fn action_bytes(action: &RowAction) -> u64 {
    let new = match action {
        RowAction::Update(new) => row_bytes(new),
        _ => 0,
    };
    new + 32
}

/// An UPDATE's or DELETE's end, plain or joined: the foreign keys of the rows it
/// changed checked and acted on, then its tag and RETURNING rows.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    update: bool,
    n: u64,
    returning: Option<&Returning>,
    returned: Noted<Vec<Value>>,
    fk: Option<Noted<(Row, RowAction)>>,
) -> SqlResult<Output> {
    if let Some(fk) = fk {
        let mut w = Written::new(table);
        for (row, action) in fk.into_items() {
            w.take(row, action);
        }
        crate::fkeys::enforce::after(cx, t, w)?;
    }
    let verb = if update { "UPDATE" } else { "DELETE" };
    Ok(changed(
        format!("{verb} {n}"),
        returning,
        returned.into_items().collect(),
    ))
}
