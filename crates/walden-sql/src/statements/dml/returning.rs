//! RETURNING: the list bound over the target's row, its columns, and a statement's
//! result with the rows it returns.

use sqlparser::ast;
use walden::{Schema, Value};

use super::delete::bind_delete;
use super::insert::{bind_insert, query_targets, Insertion};
use super::scope_of;
use super::update::bind_update;
use crate::bind::Binder;
use crate::catalog::{ident_name, object_name, Scope};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::infer::Params;
use crate::select::{PlanCx, QueryPlan};
use crate::statement::Output;
use crate::types::SqlType;

/// The RETURNING columns of an INSERT, UPDATE or DELETE (none without RETURNING), the
/// statement bound as running it binds it, without reading or writing anything
/// (`Session::describe`).
pub(crate) fn returned_columns(
    db: &walden::Database,
    stmt: &ast::Statement,
    params: Params,
) -> SqlResult<Vec<(String, SqlType)>> {
    let returning = match stmt {
        ast::Statement::Insert(ins) if ins.on.is_some() => {
            super::upsert::bind(db, ins, params)?.returning
        }
        ast::Statement::Insert(ins) => match bind_insert(db, ins, params)? {
            Insertion::Values(b) => b.returning,
            Insertion::Query {
                table,
                targets,
                query,
                returning,
            } => {
                let catalog = crate::view::catalog_of(db);
                let cx = PlanCx {
                    params,
                    ..PlanCx::of(&catalog)
                };
                let plan = QueryPlan::plan_in(query, &cx)?;
                query_targets(params, &plan, &targets, &db.schema(&table)?)?;
                returning
            }
        },
        ast::Statement::Update(u) if u.from.is_some() => {
            super::joined::bind_update(db, u, params)?.2
        }
        ast::Statement::Update(u) => bind_update(db, u, params)?.returning,
        ast::Statement::Delete(d) if d.using.is_some() => {
            super::joined::bind_delete(db, d, params)?.1
        }
        ast::Statement::Delete(d) => bind_delete(db, d, params)?.returning,
        _ => None,
    };
    Ok(returning.map(|r| r.columns).unwrap_or_default())
}

/// A RETURNING list: expressions over the table's row.
#[derive(Debug)]
pub(crate) struct Returning {
    exprs: Vec<Expr>,
    columns: Vec<(String, SqlType)>,
}

impl Returning {
    pub(super) fn bind(
        params: Params,
        items: Option<&[ast::SelectItem]>,
        table: &str,
        schema: &Schema,
        alias: Option<String>,
    ) -> SqlResult<Option<Returning>> {
        let Some(items) = items else {
            return Ok(None);
        };
        let mut scope = scope_of(table, schema);
        if let Some(a) = alias {
            scope.table = Some(a);
        }
        Returning::bind_in(params, items, &scope, &[]).map(Some)
    }

    /// Binds a RETURNING list over `scope`; `*` leaves out the columns `skip`.
    pub(super) fn bind_in(
        params: Params,
        items: &[ast::SelectItem],
        scope: &Scope,
        skip: &[usize],
    ) -> SqlResult<Returning> {
        let mut r = Returning {
            exprs: Vec::new(),
            columns: Vec::new(),
        };
        for item in items {
            match item {
                ast::SelectItem::UnnamedExpr(e) => {
                    let x = Binder::plain(scope).with_params(params).bind(e)?;
                    r.columns.push((crate::bind::output_name(e), x.ty()));
                    r.exprs.push(x);
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let x = Binder::plain(scope).with_params(params).bind(expr)?;
                    r.columns.push((ident_name(alias), x.ty()));
                    r.exprs.push(x);
                }
                ast::SelectItem::Wildcard(_) => {
                    for i in scope.star_columns() {
                        if skip.contains(&i) {
                            continue;
                        }
                        let (name, ty) = &scope.columns[i];
                        r.exprs.push(Expr::Column(i, *ty));
                        r.columns.push((name.clone(), *ty));
                    }
                }
                ast::SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    let name = object_name(n)?;
                    let Some(range) = scope.relation(&name) else {
                        return Err(SqlError::new(
                            code::UNDEFINED_TABLE,
                            format!("missing FROM-clause entry for table \"{name}\""),
                        ));
                    };
                    for i in range.filter(|i| !skip.contains(i)) {
                        let (name, ty) = &scope.columns[i];
                        r.exprs.push(Expr::Column(i, *ty));
                        r.columns.push((name.clone(), *ty));
                    }
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the RETURNING item {}",
                        clip(&other.to_string())
                    )))
                }
            }
        }
        Ok(r)
    }

    pub(super) fn project(
        &self,
        row: &[Value],
        cx: &mut crate::expr::EvalCtx,
    ) -> SqlResult<Vec<Value>> {
        self.exprs.iter().map(|e| e.eval(row, cx)).collect()
    }
}

/// A statement's output: its tag, and the RETURNING rows if it has a RETURNING list.
pub(super) fn changed(tag: String, returning: Option<&Returning>, rows: Vec<Vec<Value>>) -> Output {
    let mut out = Output::tag(tag);
    if let Some(r) = returning {
        out.columns = r.columns.clone();
        out.rows = rows;
    }
    out
}
