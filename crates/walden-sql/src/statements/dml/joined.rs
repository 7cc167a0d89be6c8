//! UPDATE … FROM and DELETE … USING: the target table joined with the other relations,
//! planned as a query's FROM clause (so the join method and order are chosen as a
//! query's are, and conditions on one table go into its read), the target's rows
//! carrying their row ids. Every target row that meets a joined row is changed once —
//! by the first joined row it meets, as PostgreSQL leaves unspecified which one — and
//! all changes are made in one command after every row is judged, in one snapshot.
//! Under READ COMMITTED a target row a concurrent transaction changed is judged again
//! in its newest version with the other relations' columns of the joined row that met
//! it, against the whole WHERE clause, as PostgreSQL's EvalPlanQual does.

use std::collections::{HashMap, HashSet};

use sqlparser::ast::{self, FromTable, UpdateTableFromKind};
use walden::{Isolation, Row, RowAction, RowId, Schema, Transaction, Value};

use super::assign::{assign, bind_for_column, check_not_null};
use super::modify::{eval_cx, modify_binder};
use super::recheck::{self, Noted};
use super::returning::Returning;
use super::update::bind_assignments;
use super::{schema_of, single_table};
use crate::bind::Binder;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::from::{plan_from_with_row_id, row_id_of, FromPlan};
use crate::guard::row_bytes;
use crate::infer::Params;
use crate::run::RunCx;
use crate::select::{PlanCx, Subqueries};
use crate::statement::{Ctx, Output};

pub(crate) fn update(cx: &mut Ctx, t: &mut Transaction, u: &ast::Update) -> SqlResult<Output> {
    let (target, sets, returning) = bind_update(cx.db, u, Params::Absent)?;
    run(cx, t, &target, Some(&sets), returning.as_ref())
}

pub(crate) fn delete(cx: &mut Ctx, t: &mut Transaction, d: &ast::Delete) -> SqlResult<Output> {
    let (target, returning) = bind_delete(cx.db, d, Params::Absent)?;
    run(cx, t, &target, None, returning.as_ref())
}

/// An UPDATE … FROM bound: the target and its join, SET's assignments, RETURNING.
#[allow(clippy::type_complexity)]
pub(crate) fn bind_update(
    db: &walden::Database,
    u: &ast::Update,
    params: Params,
) -> SqlResult<(Target, Vec<(usize, Expr)>, Option<Returning>)> {
    let from = match &u.from {
        Some(UpdateTableFromKind::AfterSet(v)) => v,
        Some(UpdateTableFromKind::BeforeSet(_)) => {
            return Err(SqlError::syntax(
                "FROM goes after SET in PostgreSQL's UPDATE",
            ))
        }
        None => return Err(SqlError::new(code::INTERNAL, "UPDATE without FROM here")),
    };
    let target = Target::plan(db, &u.table, from, u.selection.as_ref(), "update", params)?;
    let catalog = crate::view::catalog_of(db);
    let cx = PlanCx {
        params,
        ..PlanCx::of(&catalog)
    };
    let sets = bind_assignments(
        db,
        &u.assignments,
        &target.table,
        &target.schema,
        &mut |e, col| bind_for_column(&mut modify_binder(&target.plan.scope, &cx), e, col),
    )?;
    let returning = returning(params, u.returning.as_deref(), &target.plan, &target.schema)?;
    Ok((target, sets, returning))
}

/// A DELETE … USING bound: the target and its join, RETURNING.
pub(crate) fn bind_delete(
    db: &walden::Database,
    d: &ast::Delete,
    params: Params,
) -> SqlResult<(Target, Option<Returning>)> {
    let target = match &d.from {
        FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
    };
    let [twj] = target.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    let Some(using) = &d.using else {
        return Err(SqlError::new(code::INTERNAL, "DELETE without USING here"));
    };
    let target = Target::plan(db, twj, using, d.selection.as_ref(), "delete from", params)?;
    let returning = returning(params, d.returning.as_deref(), &target.plan, &target.schema)?;
    Ok((target, returning))
}

/// The table an UPDATE … FROM or DELETE … USING changes, and the plan of its join
/// with the other relations.
pub(crate) struct Target {
    table: String,
    schema: Schema,
    plan: FromPlan,
    /// The whole WHERE clause over the joined row, to judge a row again (the plan
    /// spreads it over the join's reads).
    recheck: Option<Expr>,
}

impl Target {
    /// EXPLAIN's lines: `verb on table` above the join's plan, PostgreSQL's layout.
    pub(crate) fn explain(&self, verb: &str, costs: bool) -> Vec<String> {
        let mut out = crate::from::Explain::new(costs, None);
        out.lines = vec![format!("{verb} on {}", self.table)];
        let filter = self
            .plan
            .filter
            .as_ref()
            .and(self.plan.filter_text.as_deref());
        crate::select::explain_source(&mut out, &self.plan.source, filter, 1, self.plan.rows);
        out.lines
    }

    fn plan(
        db: &walden::Database,
        target: &ast::TableWithJoins,
        others: &[ast::TableWithJoins],
        selection: Option<&ast::Expr>,
        verb: &str,
        params: Params,
    ) -> SqlResult<Target> {
        let (table, tname, _) = single_table(target)?;
        let schema = schema_of(db, &table, tname, verb)?;
        let mut items = vec![target.clone()];
        items.extend(others.iter().cloned());
        let catalog = crate::view::catalog_of(db);
        let pcx = PlanCx {
            params,
            ..PlanCx::of(&catalog)
        };
        let plan = plan_from_with_row_id(&items, selection, &pcx)?;
        let recheck = selection
            .map(|w| {
                Binder::in_query(&plan.scope, &pcx)
                    .boolean(w, "WHERE")
                    .map(crate::optimize::simplify::simplify_condition)
            })
            .transpose()?;
        Ok(Target {
            table,
            schema,
            plan,
            recheck,
        })
    }
}

/// RETURNING over the joined row (the target's row id left out of `*`).
fn returning(
    params: Params,
    items: Option<&[ast::SelectItem]>,
    plan: &FromPlan,
    schema: &Schema,
) -> SqlResult<Option<Returning>> {
    items
        .map(|items| Returning::bind_in(params, items, &plan.scope, &[schema.columns.len()]))
        .transpose()
}

/// Judges every joined row, then updates (`sets`) or deletes the target rows met.
fn run(
    cx: &mut Ctx,
    t: &mut Transaction,
    target: &Target,
    sets: Option<&[(usize, Expr)]>,
    returning: Option<&Returning>,
) -> SqlResult<Output> {
    let table = target.table.as_str();
    let mut notes = JoinNotes {
        returning,
        guard: cx.guard,
        returned: Noted::default(),
        fk: crate::fkeys::enforce::watches(cx, table)?.then(Noted::default),
    };
    // READ COMMITTED: the rest of each joined row (the row id on), to judge the
    // target row again with if it was changed concurrently.
    let mut rests: Option<HashMap<RowId, Vec<Value>>> =
        (t.isolation() == Isolation::ReadCommitted).then(HashMap::new);
    let actions = judge_joined(cx, t, target, sets, &mut notes, &mut rests)?;
    let first = t.modify_rows(table, actions)?;
    let mut n = first.count;
    if let (Some(rests), false) = (rests, first.changed.is_empty()) {
        n += judge_left(cx, t, target, sets, rests, first.changed, &mut notes)?;
    }
    let JoinNotes { returned, fk, .. } = notes;
    super::modify::finish(cx, t, table, sets.is_some(), n, returning, returned, fk)
}

/// Every joined row judged in the statement's snapshot: what it does to its target row
/// (the first joined row that meets a target row decides), noted, and under READ
/// COMMITTED the rest of the joined row kept in `rests`.
fn judge_joined(
    cx: &mut Ctx,
    t: &mut Transaction,
    target: &Target,
    sets: Option<&[(usize, Expr)]>,
    notes: &mut JoinNotes,
    rests: &mut Option<HashMap<RowId, Vec<Value>>>,
) -> SqlResult<Vec<(RowId, RowAction)>> {
    let (table, schema, plan) = (target.table.as_str(), &target.schema, &target.plan);
    // The target's columns come first, then its row id.
    let width = schema.columns.len();
    let guard = cx.guard;
    let checks = cx.checks;
    let mut actions: Vec<(RowId, RowAction)> = Vec::new();
    let reader = t.reader()?;
    let rc = RunCx::new(Some(reader), guard, &Subqueries);
    let mut ecx = eval_cx(&mut *cx.rng, Some(&rc), guard);
    let mut met: HashSet<RowId> = HashSet::new();
    plan.source.produce(&mut ecx, &mut |ecx, row| {
        if let Some(f) = &plan.filter {
            if !f.test(&row, ecx)? {
                return Ok(true);
            }
        }
        let Some(id) = row.get(width).and_then(row_id_of) else {
            return Err(SqlError::new(
                code::INTERNAL,
                "a joined row without its row id",
            ));
        };
        if !met.insert(id) {
            return Ok(true);
        }
        let action = action_of(checks, &row, width, sets, table, schema, ecx)?;
        notes.give_back(id, &row, width, &action, ecx)?;
        let bytes = match &action {
            RowAction::Update(new) => row_bytes(new),
            _ => 0,
        } + 48;
        guard.charge(bytes)?;
        if let Some(rests) = rests.as_mut() {
            guard.charge(row_bytes(&row[width..]) + 32)?;
            rests.insert(id, row[width..].to_vec());
        }
        actions.push((id, action));
        Ok(true)
    })?;
    Ok(actions)
}

/// READ COMMITTED: the target rows the engine left (`ids`: a transaction that committed
/// since the snapshot changed them) judged again in their newest versions with the rest
/// of the joined row that met them, against the whole WHERE clause, and noted. The
/// number of rows changed.
fn judge_left(
    cx: &mut Ctx,
    t: &mut Transaction,
    target: &Target,
    sets: Option<&[(usize, Expr)]>,
    mut rests: HashMap<RowId, Vec<Value>>,
    ids: Vec<RowId>,
    notes: &mut JoinNotes,
) -> SqlResult<u64> {
    let (table, schema) = (target.table.as_str(), &target.schema);
    let width = schema.columns.len();
    let guard = cx.guard;
    let checks = cx.checks;
    notes.forget(&ids);
    let rng = &mut *cx.rng;
    let (more, applied) = recheck::judge_again(t, table, ids, &mut |t, left, newest| {
        guard.check()?;
        let Some(rest) = rests.get(&left).cloned() else {
            return Ok(RowAction::Keep);
        };
        let mut row = newest.row.clone();
        row.extend_from_slice(&rest);
        rests.insert(newest.id, rest);
        let rc = RunCx::new(Some(t.command_reader()?), guard, &Subqueries);
        let mut ecx = eval_cx(&mut *rng, Some(&rc), guard);
        if let Some(f) = &target.recheck {
            if !f.test(&row, &mut ecx)? {
                return Ok(RowAction::Keep);
            }
        }
        action_of(checks, &row, width, sets, table, schema, &mut ecx)
    })?;
    let rc = RunCx::new(Some(t.command_reader()?), guard, &Subqueries);
    let mut ecx = eval_cx(&mut *cx.rng, Some(&rc), guard);
    for (id, mut row, action) in applied {
        if let Some(rest) = rests.get(&id) {
            row.extend_from_slice(rest);
            notes.give_back(id, &row, width, &action, &mut ecx)?;
        }
    }
    Ok(more)
}

/// What a joined row (the target's columns, then the rest) does to its target row.
fn action_of(
    checks: &crate::checks::CheckCache,
    row: &[Value],
    width: usize,
    sets: Option<&[(usize, Expr)]>,
    table: &str,
    schema: &Schema,
    ecx: &mut EvalCtx,
) -> SqlResult<RowAction> {
    Ok(match sets {
        None => RowAction::Delete,
        Some(sets) => {
            let mut new = row[..width].to_vec();
            for (i, e) in sets {
                new[*i] = assign(e.eval(row, ecx)?, &schema.columns[*i])?;
            }
            check_not_null(checks, table, schema, &new)?;
            RowAction::Update(new)
        }
    })
}

/// What UPDATE … FROM and DELETE … USING note of each target row they change (its
/// RETURNING row over the joined row, its change for the foreign keys), under the id of
/// the row judged (`dml/recheck.rs`).
struct JoinNotes<'r> {
    returning: Option<&'r Returning>,
    guard: &'r crate::guard::Guard,
    returned: Noted<Vec<Value>>,
    fk: Option<Noted<(Row, RowAction)>>,
}

impl JoinNotes<'_> {
    fn give_back(
        &mut self,
        id: RowId,
        row: &[Value],
        width: usize,
        action: &RowAction,
        ecx: &mut EvalCtx,
    ) -> SqlResult<()> {
        if let Some(r) = self.returning {
            // The target's new version, with the other relations' columns.
            let out = match action {
                RowAction::Update(new) => {
                    let mut both = new.clone();
                    both.extend_from_slice(&row[width..]);
                    r.project(&both, ecx)?
                }
                _ => r.project(row, ecx)?,
            };
            self.guard.charge(row_bytes(&out) + 24)?;
            self.returned.push(id, out);
        }
        if let Some(fk) = self.fk.as_mut() {
            self.guard.charge(row_bytes(row) + 48)?;
            fk.push(id, (row[..width].to_vec(), action.clone()));
        }
        Ok(())
    }

    fn forget(&mut self, left: &[RowId]) {
        self.returned.forget(left);
        if let Some(fk) = self.fk.as_mut() {
            fk.forget(left);
        }
    }
}
