//! SELECT, INSERT, UPDATE, DELETE and TRUNCATE inside a transaction: binding against the
//! table's schema, assignment rules (types, NOT NULL, character limits, serial columns,
//! primary keys), and the engine calls that do the work.

use sqlparser::ast::{self, Spanned, TableFactor};
use walden::{Schema, Transaction};

use crate::catalog::{ident_name, object_name, Scope};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::select::QueryPlan;
use crate::statement::{Ctx, Output};

mod assign;
mod delete;
mod explain;
mod insert;
mod joined;
mod modify;
pub(crate) mod recheck;
mod returning;
mod truncate;
mod update;
mod upsert;

pub(crate) use assign::{
    assign, assign_from, bind_default, check_inserted_keys, check_not_null, column_default,
    row_text, RowBuilder,
};
pub(crate) use delete::delete;
pub(crate) use explain::explain;
pub(crate) use insert::{insert, insert_plan, BoundInsert};
pub(crate) use modify::BoundModify;
pub(crate) use returning::returned_columns;
pub(crate) use truncate::truncate;
pub(crate) use update::update;

pub(crate) fn select(cx: &mut Ctx, t: &mut Transaction, q: &ast::Query) -> SqlResult<Output> {
    let (plan, params) = match cx.prepared {
        // A prepared query: the plan its runs share, run with its values; its cached
        // plan filled with them; or its values written in.
        Some(run) => match run.generic_plan(cx.db) {
            Some(shared) => shared,
            None => (std::sync::Arc::new(run.select_plan(cx.db)?), &[][..]),
        },
        None => (
            std::sync::Arc::new(QueryPlan::plan(q, &crate::view::catalog_of(cx.db))?),
            &[][..],
        ),
    };
    // The rows as the executor's stream makes them: to the caller's sink when it takes
    // them so, else kept for the result.
    let columns = plan.columns().to_vec();
    let mut kept = Vec::new();
    let mut sink = cx.rows.take();
    if let Some(s) = sink.as_deref_mut() {
        s.start(&columns)?;
    }
    let n = crate::exec::with_run_params(Some(t.reader()?), params, cx.rng, cx.guard, |ecx| {
        let mut stream = crate::exec::RowStream::open(&plan, ecx)?;
        // Rows made whole were charged as they were made.
        let charge = !stream.is_materialized();
        let mut n = 0u64;
        while let Some(row) = stream.next(ecx)? {
            match sink.as_deref_mut() {
                Some(s) => s.row(&row)?,
                None => {
                    if let Some(g) = ecx.statement_guard().filter(|_| charge) {
                        g.charge(crate::guard::row_bytes(&row) + 24)?;
                    }
                    kept.push(row);
                }
            }
            n += 1;
        }
        Ok::<u64, SqlError>(n)
    })?;
    let mut out = Output::tag(format!("SELECT {n}"));
    out.columns = columns;
    out.rows = kept;
    out.streamed = sink.is_some();
    Ok(out)
}

/// The schema of the table a statement writes; `verb` names the write in the error for
/// a view ("insert into", "update", "delete from", "truncate").
fn schema_of(
    db: &walden::Database,
    name: &str,
    at: &ast::ObjectName,
    verb: &str,
) -> SqlResult<Schema> {
    db.schema(name).map_err(|e| {
        if db.view(name).is_none() {
            return SqlError::from(e).at(at.span().start);
        }
        if verb == "truncate" {
            return SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("\"{name}\" is not a table"),
            )
            .at(at.span().start);
        }
        crate::view::not_writable(verb, name).at(at.span().start)
    })
}

fn scope_of(table: &str, schema: &Schema) -> Scope {
    Scope::of_table(table, schema)
}

fn alias_of(twj: &ast::TableWithJoins) -> Option<String> {
    match &twj.relation {
        TableFactor::Table { alias: Some(a), .. } => Some(ident_name(&a.name)),
        _ => None,
    }
}

fn single_table(
    twj: &ast::TableWithJoins,
) -> SqlResult<(String, &ast::ObjectName, Option<String>)> {
    if !twj.joins.is_empty() {
        return Err(SqlError::unsupported("JOIN"));
    }
    crate::bind::check_table_reference(&twj.relation)?;
    match &twj.relation {
        TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => Ok((
            object_name(name)?,
            name,
            alias.as_ref().map(|a| ident_name(&a.name)),
        )),
        other => Err(
            SqlError::unsupported(format!("{} as a target", clip(&other.to_string())))
                .at(other.span().start),
        ),
    }
}
