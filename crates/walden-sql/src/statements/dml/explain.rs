//! EXPLAIN of SELECT, INSERT, UPDATE and DELETE, and EXPLAIN ANALYZE of a query.

use sqlparser::ast::{self, FromTable, SetExpr, TableObject};
use walden::{Transaction, Value};

use super::modify::access_for;
use super::{schema_of, scope_of, single_table};
use crate::bind::Binder;
use crate::catalog::object_name;
use crate::error::{SqlError, SqlResult};
use crate::from::Explain;
use crate::infer::Params;
use crate::optimize::simplify::is_constant_false;
use crate::select::{bind_condition, QueryPlan};
use crate::statement::{Ctx, Output};
use crate::types::SqlType;

/// EXPLAIN of a SELECT, INSERT, UPDATE or DELETE: how it reads its table (a scan, or
/// which index over which conditions), in PostgreSQL's node names.
pub(crate) fn explain(
    cx: &mut Ctx,
    t: &mut Transaction,
    stmt: &ast::Statement,
    analyze: bool,
    costs: bool,
) -> SqlResult<Output> {
    if analyze {
        return explain_analyze(cx, t, stmt, costs);
    }
    let lines = match stmt {
        ast::Statement::Query(q) => {
            let plan = QueryPlan::plan(q, &crate::view::catalog_of(cx.db))?;
            plan.explain(costs)
        }
        ast::Statement::Update(u) if u.from.is_some() => {
            let (target, _, _) = super::joined::bind_update(cx.db, u, Params::Absent)?;
            target.explain("Update", costs)
        }
        ast::Statement::Delete(d) if d.using.is_some() => {
            let (target, _) = super::joined::bind_delete(cx.db, d, Params::Absent)?;
            target.explain("Delete", costs)
        }
        ast::Statement::Update(u) => modify_lines(cx, "Update", &u.table, &u.selection, costs)?,
        ast::Statement::Delete(d) => {
            let from = match &d.from {
                FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
            };
            let [twj] = from.as_slice() else {
                return Err(SqlError::unsupported("DELETE from several tables"));
            };
            modify_lines(cx, "Delete", twj, &d.selection, costs)?
        }
        ast::Statement::Insert(ins) => insert_lines(cx, ins, costs)?,
        other => {
            let text = other.to_string();
            let words: Vec<&str> = text.split_whitespace().take(2).collect();
            return Err(SqlError::unsupported(format!(
                "EXPLAIN {}",
                words.join(" ").to_uppercase()
            )));
        }
    };
    Ok(explain_output(lines))
}

/// EXPLAIN ANALYZE, of a query only: it runs the query, and tells the times it took.
fn explain_analyze(
    cx: &mut Ctx,
    t: &mut Transaction,
    stmt: &ast::Statement,
    costs: bool,
) -> SqlResult<Output> {
    let ast::Statement::Query(q) = stmt else {
        return Err(SqlError::unsupported(
            "EXPLAIN ANALYZE of INSERT, UPDATE or DELETE (EXPLAIN ANALYZE runs queries)",
        ));
    };
    let t0 = std::time::Instant::now();
    let plan = QueryPlan::plan(q, &crate::view::catalog_of(cx.db))?;
    let planning = t0.elapsed();
    let t1 = std::time::Instant::now();
    let (mut lines, _rows) = plan.run_analyzed(costs, Some(t.reader()?), cx.rng, cx.guard)?;
    let execution = t1.elapsed();
    lines.push(format!(
        "Planning Time: {:.3} ms",
        planning.as_secs_f64() * 1e3
    ));
    lines.push(format!(
        "Execution Time: {:.3} ms",
        execution.as_secs_f64() * 1e3
    ));
    Ok(explain_output(lines))
}

/// An UPDATE's or DELETE's (`verb`) plan: how it reads its table.
fn modify_lines(
    cx: &Ctx,
    verb: &str,
    twj: &ast::TableWithJoins,
    selection: &Option<ast::Expr>,
    costs: bool,
) -> SqlResult<Vec<String>> {
    let (table, tname, alias) = single_table(twj)?;
    let what = if verb == "Update" {
        "update"
    } else {
        "delete from"
    };
    let schema = schema_of(cx.db, &table, tname, what)?;
    let mut scope = scope_of(&table, &schema);
    if let Some(a) = alias {
        scope.table = Some(a);
    }
    let filter = match selection {
        Some(w) => Some(bind_condition(&mut Binder::plain(&scope), w, "WHERE")?),
        None => None,
    };
    let mut out = Explain::new(costs, None);
    out.lines = vec![format!("{verb} on {table}")];
    if filter.as_ref().is_some_and(is_constant_false) {
        // No row is read (`BoundModify::run`).
        out.node(1, "Result");
        out.detail(1, "One-Time Filter: false");
        return Ok(out.lines);
    }
    let access = access_for(cx.db, &table, &schema, filter.as_ref());
    let text = selection.as_ref().map(|w| w.to_string());
    let names: Vec<String> = schema.columns.iter().map(|c| c.name.clone()).collect();
    crate::select::explain_access(&mut out, &access, &table, 1, text.as_deref(), &names, None);
    Ok(out.lines)
}

/// An INSERT's plan: a Values Scan, or the plan of its query.
fn insert_lines(cx: &Ctx, ins: &ast::Insert, costs: bool) -> SqlResult<Vec<String>> {
    let TableObject::TableName(name) = &ins.table else {
        return Err(SqlError::unsupported("INSERT into a table function"));
    };
    let table = object_name(name)?;
    schema_of(cx.db, &table, name, "insert into")?;
    let mut lines = vec![format!("Insert on {table}")];
    match ins.source.as_deref().map(|q| q.body.as_ref()) {
        Some(SetExpr::Values(_)) | None => lines.push("  ->  Values Scan".into()),
        Some(_) => {
            let q = ins
                .source
                .as_deref()
                .ok_or_else(|| SqlError::syntax("INSERT without rows"))?;
            let plan = QueryPlan::plan(q, &crate::view::catalog_of(cx.db))?;
            for (i, l) in plan.explain(costs).into_iter().enumerate() {
                lines.push(if i == 0 {
                    format!("  ->  {l}")
                } else {
                    format!("      {l}")
                });
            }
        }
    }
    Ok(lines)
}

/// EXPLAIN's result: one text column, a row per line.
fn explain_output(lines: Vec<String>) -> Output {
    let mut out = Output::tag("EXPLAIN");
    out.columns = vec![("QUERY PLAN".into(), SqlType::Text)];
    out.rows = lines.into_iter().map(|l| vec![Value::Text(l)]).collect();
    out
}
