//! DELETE: its WHERE clause bound against the table.

use sqlparser::ast::{self, FromTable};
use walden::Transaction;

use super::modify::{modify_binder, prepared_modify, BoundModify};
use super::returning::Returning;
use super::{alias_of, schema_of, scope_of, single_table};
use crate::error::{SqlError, SqlResult};
use crate::infer::Params;
use crate::select::{bind_condition, PlanCx};
use crate::statement::{Ctx, Output};

pub(crate) fn delete(cx: &mut Ctx, t: &mut Transaction, d: &ast::Delete) -> SqlResult<Output> {
    if cx.prepared.is_some() {
        return prepared_modify(cx, t);
    }
    delete_parsed(cx, t, d)
}

pub(super) fn delete_parsed(
    cx: &mut Ctx,
    t: &mut Transaction,
    d: &ast::Delete,
) -> SqlResult<Output> {
    if d.using.is_some() {
        return super::joined::delete(cx, t, d);
    }
    bind_delete(cx.db, d, Params::Absent)?.run(cx, t, None)
}

pub(super) fn bind_delete(
    db: &walden::Database,
    d: &ast::Delete,
    params: Params,
) -> SqlResult<BoundModify> {
    if d.using.is_some() {
        return Err(SqlError::unsupported("a cached DELETE ... USING"));
    }
    let from = match &d.from {
        FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
    };
    let [twj] = from.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    let (table, tname, alias) = single_table(twj)?;
    let schema = schema_of(db, &table, tname, "delete from")?;
    let mut scope = scope_of(&table, &schema);
    if let Some(a) = alias {
        scope.table = Some(a);
    }
    let catalog = crate::view::catalog_of(db);
    let cx = PlanCx {
        params,
        ..PlanCx::of(&catalog)
    };
    let filter = match &d.selection {
        Some(w) => Some(bind_condition(&mut modify_binder(&scope, &cx), w, "WHERE")?),
        None => None,
    };
    let returning = Returning::bind(
        params,
        d.returning.as_deref(),
        &table,
        &schema,
        alias_of(twj),
    )?;
    Ok(BoundModify {
        table,
        schema,
        sets: None,
        filter,
        returning,
    })
}
