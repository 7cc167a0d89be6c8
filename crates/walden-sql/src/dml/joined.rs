//! UPDATE … FROM and DELETE … USING: the target table joined with the other relations,
//! planned as a query's FROM clause (so the join method and order are chosen as a
//! query's are, and conditions on one table go into its read), the target's rows
//! carrying their row ids. Every target row that meets a joined row is changed once —
//! by the first joined row it meets, as PostgreSQL leaves unspecified which one — and
//! all changes are made in one command after every row is judged, in one snapshot.

use std::collections::HashSet;

use sqlparser::ast::{self, FromTable, UpdateTableFromKind};
use walden::{RowAction, RowId, Schema, Transaction, Value};

use super::{
    assign, bind_assignments, bind_for_column, changed, check_not_null, schema_of, single_table,
    Returning,
};
use crate::bind::{Binder, PlanCx};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::from::{plan_from_with_row_id, row_id_of, FromPlan};
use crate::guard::row_bytes;
use crate::select::RunCx;
use crate::session::{Ctx, DbCatalog, Output};

pub(crate) fn update(cx: &mut Ctx, t: &mut Transaction, u: &ast::Update) -> SqlResult<Output> {
    let from = match &u.from {
        Some(UpdateTableFromKind::AfterSet(v)) => v,
        Some(UpdateTableFromKind::BeforeSet(_)) => {
            return Err(SqlError::syntax(
                "FROM goes after SET in PostgreSQL's UPDATE",
            ))
        }
        None => return Err(SqlError::new(code::INTERNAL, "UPDATE without FROM here")),
    };
    let (table, tname, _) = single_table(&u.table)?;
    let schema = schema_of(cx.db, &table, tname)?;
    let mut items = vec![u.table.clone()];
    items.extend(from.iter().cloned());
    let catalog = DbCatalog(cx.db);
    let pcx = PlanCx {
        catalog: &catalog,
        ctes: None,
        outer: None,
    };
    let plan = plan_from_with_row_id(&items, u.selection.as_ref(), &pcx)?;
    let sets = bind_assignments(&u.assignments, &table, &schema, &mut |e, col| {
        bind_for_column(&mut Binder::in_query(&plan.scope, pcx), e, col)
    })?;
    let returning = returning(u.returning.as_deref(), &plan, &schema)?;
    run(
        cx,
        t,
        &table,
        &schema,
        &plan,
        Some(&sets),
        returning.as_ref(),
    )
}

pub(crate) fn delete(cx: &mut Ctx, t: &mut Transaction, d: &ast::Delete) -> SqlResult<Output> {
    let target = match &d.from {
        FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
    };
    let [twj] = target.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    let Some(using) = &d.using else {
        return Err(SqlError::new(code::INTERNAL, "DELETE without USING here"));
    };
    let (table, tname, _) = single_table(twj)?;
    let schema = schema_of(cx.db, &table, tname)?;
    let mut items = vec![twj.clone()];
    items.extend(using.iter().cloned());
    let catalog = DbCatalog(cx.db);
    let pcx = PlanCx {
        catalog: &catalog,
        ctes: None,
        outer: None,
    };
    let plan = plan_from_with_row_id(&items, d.selection.as_ref(), &pcx)?;
    let returning = returning(d.returning.as_deref(), &plan, &schema)?;
    run(cx, t, &table, &schema, &plan, None, returning.as_ref())
}

/// RETURNING over the joined row (the target's row id left out of `*`).
fn returning(
    items: Option<&[ast::SelectItem]>,
    plan: &FromPlan,
    schema: &Schema,
) -> SqlResult<Option<Returning>> {
    items
        .map(|items| Returning::bind_in(items, &plan.scope, &[schema.columns.len()]))
        .transpose()
}

/// Judges every joined row, then updates (`sets`) or deletes the target rows met.
fn run(
    cx: &mut Ctx,
    t: &mut Transaction,
    table: &str,
    schema: &Schema,
    plan: &FromPlan,
    sets: Option<&[(usize, Expr)]>,
    returning: Option<&Returning>,
) -> SqlResult<Output> {
    // The target's columns come first, then its row id.
    let width = schema.columns.len();
    let guard = cx.guard;
    let mut actions: Vec<(RowId, RowAction)> = Vec::new();
    let mut returned: Vec<Vec<Value>> = Vec::new();
    {
        let reader = t.reader()?;
        let rc = RunCx::new(Some(reader), guard);
        let mut ecx = EvalCtx {
            rng: &mut *cx.rng,
            outer: &[],
            run: Some(&rc),
        };
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
            let action = match sets {
                None => RowAction::Delete,
                Some(sets) => {
                    let mut new = row[..width].to_vec();
                    for (i, e) in sets {
                        new[*i] = assign(e.eval(&row, ecx)?, &schema.columns[*i])?;
                    }
                    check_not_null(table, schema, &new)?;
                    RowAction::Update(new)
                }
            };
            if let Some(r) = returning {
                // The target's new version, with the other relations' columns.
                let out = match &action {
                    RowAction::Update(new) => {
                        let mut both = new.clone();
                        both.extend_from_slice(&row[width..]);
                        r.project(&both, ecx)?
                    }
                    _ => r.project(&row, ecx)?,
                };
                guard.charge(row_bytes(&out) + 24)?;
                returned.push(out);
            }
            let bytes = match &action {
                RowAction::Update(new) => row_bytes(new),
                _ => 0,
            } + 48;
            guard.charge(bytes)?;
            actions.push((id, action));
            Ok(true)
        })?;
    }
    let n = t.modify_rows(table, actions)?;
    let verb = if sets.is_some() { "UPDATE" } else { "DELETE" };
    Ok(changed(format!("{verb} {n}"), returning, returned))
}
