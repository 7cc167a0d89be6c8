//! UPDATE: its SET assignments and WHERE clause bound against the table.

use sqlparser::ast::{self, AssignmentTarget, Spanned};
use walden::{Column, Schema, Transaction};

use super::assign::{bind_for_column, column_default, is_default};
use super::modify::{modify_binder, prepared_modify, BoundModify};
use super::returning::Returning;
use super::{alias_of, schema_of, scope_of, single_table};
use crate::catalog::ident_name;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::infer::Params;
use crate::select::{bind_condition, PlanCx};
use crate::statement::{Ctx, Output};

pub(crate) fn update(cx: &mut Ctx, t: &mut Transaction, u: &ast::Update) -> SqlResult<Output> {
    if cx.prepared.is_some() {
        return prepared_modify(cx, t);
    }
    update_parsed(cx, t, u)
}

pub(super) fn update_parsed(
    cx: &mut Ctx,
    t: &mut Transaction,
    u: &ast::Update,
) -> SqlResult<Output> {
    if u.from.is_some() {
        return super::joined::update(cx, t, u);
    }
    bind_update(cx.db, u, Params::Absent)?.run(cx, t, None)
}

/// SET's assignments to columns of `table`: each column and its value, bound by `bind`
/// (DEFAULT is the column's default).
pub(super) fn bind_assignments(
    db: &walden::Database,
    assignments: &[ast::Assignment],
    table: &str,
    schema: &Schema,
    bind: &mut dyn FnMut(&ast::Expr, &Column) -> SqlResult<Expr>,
) -> SqlResult<Vec<(usize, Expr)>> {
    let mut sets: Vec<(usize, Expr)> = Vec::new();
    let always = crate::sequences::owned::always_columns(db, table);
    for a in assignments {
        let AssignmentTarget::ColumnName(cname) = &a.target else {
            return Err(SqlError::unsupported("assigning a tuple of columns"));
        };
        // SET may not qualify the column with the table name (PostgreSQL allows it only
        // as a composite field), so take the last part.
        let col_name = cname
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(ident_name)
            .unwrap_or_default();
        let Some(i) = schema.columns.iter().position(|c| c.name == col_name) else {
            return Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{col_name}\" of relation \"{table}\" does not exist"),
            )
            .at(cname.span().start));
        };
        if sets.iter().any(|(j, _)| *j == i) {
            return Err(SqlError::syntax(format!(
                "multiple assignments to same column \"{col_name}\""
            )));
        }
        let col = &schema.columns[i];
        let value = if !is_default(&a.value) {
            if always.contains(&i) {
                return Err(SqlError::new(
                    code::GENERATED_ALWAYS,
                    format!("column \"{col_name}\" can only be updated to DEFAULT"),
                )
                .with_detail(format!(
                    "Column \"{col_name}\" is an identity column defined as GENERATED ALWAYS."
                )));
            }
            bind(&a.value, col)?
        } else {
            column_default(col)?
        };
        sets.push((i, value));
    }
    Ok(sets)
}

pub(super) fn bind_update(
    db: &walden::Database,
    u: &ast::Update,
    params: Params,
) -> SqlResult<BoundModify> {
    if u.from.is_some() {
        return Err(SqlError::unsupported("a cached UPDATE ... FROM"));
    }
    let (table, tname, alias) = single_table(&u.table)?;
    let schema = schema_of(db, &table, tname, "update")?;
    let mut scope = scope_of(&table, &schema);
    if let Some(a) = alias {
        scope.table = Some(a);
    }
    let catalog = crate::view::catalog_of(db);
    let cx = PlanCx {
        params,
        ..PlanCx::of(&catalog)
    };
    let sets = bind_assignments(db, &u.assignments, &table, &schema, &mut |e, col| {
        bind_for_column(&mut modify_binder(&scope, &cx), e, col)
    })?;
    let filter = match &u.selection {
        Some(w) => Some(bind_condition(&mut modify_binder(&scope, &cx), w, "WHERE")?),
        None => None,
    };
    let returning = Returning::bind(
        params,
        u.returning.as_deref(),
        &table,
        &schema,
        alias_of(&u.table),
    )?;
    Ok(BoundModify {
        table,
        schema,
        sets: Some(sets),
        filter,
        returning,
    })
}
