//! A SELECT block bound (`SelectPlan::bound`): its select list, GROUP BY, HAVING, ORDER BY,
//! DISTINCT [ON], window and set-returning functions, over its FROM clause's scope.

use std::sync::Arc;

use sqlparser::ast::{self, GroupByExpr, LimitClause, SelectItem, Spanned};
use walden::Value;

use crate::access_path::{self, Access, KeyFrom};
use crate::bind::{output_name, regroup_column, Binder, Grouping, SubqueryPlanner};
use crate::catalog::{ident_name, Scope};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::from::{plan_from, Source};
use crate::infer::Params;
use crate::optimize::simplify::{is_constant_false, simplify, simplify_condition};
use crate::types::SqlType;
use crate::window::{self as windowing, Windows, WINDOW_PLACEHOLDER};

use super::plan::{const_int, is_aggregate_error, limit_offset, order_items};
use super::{Distinct, Item, PlanCx, SelectPlan, SortKey};

impl SelectPlan {
    /// The plan of a SELECT block before its access path is chosen (a sequential
    /// scan), with the scope of its FROM clause; then the access path.
    pub(super) fn bound(
        select: &ast::Select,
        order_by: Option<&ast::OrderBy>,
        limit: Option<&LimitClause>,
        cx: &PlanCx,
    ) -> SqlResult<(SelectPlan, Scope)> {
        let (mut plan, mut scope) = SelectPlan::bind_block(select, order_by, limit, cx)?;
        // IN / EXISTS / NOT EXISTS made joins (`flatten`), when the block binds so too
        // (its errors, if any, are the block's own as written: it bound first).
        let subqueries = select
            .selection
            .as_ref()
            .is_some_and(crate::optimize::flatten::has_subquery);
        if subqueries && !cx.params.typed() {
            let is_cte = |name: &str| cx.ctes.is_some_and(|c| c.find(name).is_some());
            let names = crate::optimize::flatten::Names {
                catalog: cx.catalog,
                is_cte: &is_cte,
            };
            let flat = cx
                .outer
                .is_none()
                .then(|| crate::optimize::flatten::flatten(select, plan.from_rows, &names))
                .flatten();
            if let Some(flat) = flat {
                if let Ok(bound) = SelectPlan::bind_block(&flat, order_by, limit, cx) {
                    (plan, scope) = bound;
                }
            }
        }
        if let Source::Table(t) = &plan.source {
            let indexes = cx.catalog.indexes(&t.name);
            if !indexes.is_empty() && !cx.params.typed() {
                let mut outer = false;
                if let Some(f) = &plan.filter {
                    f.visit(&mut |e| outer |= matches!(e, Expr::Outer(..)));
                }
                let generic = plan.filter.as_ref().filter(|_| outer).and_then(|f| {
                    let types: Vec<SqlType> = scope.columns.iter().map(|(_, t)| *t).collect();
                    access_path::generic_point(&indexes, &types, f, KeyFrom::Outer)
                });
                if let (Some(read), Source::Table(t)) = (generic, &mut plan.source) {
                    // One plan for every outer row, its key their values.
                    t.access = Access::Index(read);
                } else if outer {
                    plan.reaccess = Some(Arc::new((scope.clone(), indexes)));
                } else {
                    plan.choose_access(&scope, &indexes);
                }
            }
        }
        Ok((plan, scope))
    }

    fn bind_block(
        select: &ast::Select,
        order_by: Option<&ast::OrderBy>,
        limit: Option<&LimitClause>,
        cx: &PlanCx,
    ) -> SqlResult<(SelectPlan, Scope)> {
        if select.into.is_some() {
            return Err(SqlError::unsupported("SELECT INTO"));
        }
        if select.top.is_some() || !select.lateral_views.is_empty() || select.qualify.is_some() {
            return Err(SqlError::unsupported("this SELECT clause"));
        }
        let from = plan_from(&select.from, select.selection.as_ref(), cx)?;
        let scope = from.scope;
        let cx = *cx;
        let items = select_items(select, &scope)?;
        let group_items = group_items(select, &items, &scope, cx.params)?;
        let mut windows = Windows::new(&select.named_window)?;
        let mut srfs = crate::srf::SetReturning::default();
        let plain_outputs = if group_items.is_empty() && select.having.is_none() {
            bind_plain(&items, &scope, &cx, &mut windows, &mut srfs)?
        } else {
            None
        };
        let needs_grouping = plain_outputs.is_none();
        let mut plan = SelectPlan {
            filter_text: from.filter_text,
            filter: from.filter,
            ..SelectPlan::over(
                from.source,
                scope.columns.iter().map(|(n, _)| n.clone()).collect(),
                from.rows,
            )
        };
        let mut grouping = match plain_outputs {
            Some(outputs) => {
                plan.outputs = outputs;
                Grouping::default()
            }
            None => plan.bind_grouped(select, &items, &group_items, &scope, &cx, &mut windows)?,
        };
        if plan.having.as_ref().is_some_and(is_constant_false) && !plan.source.refusable() {
            // No group passes HAVING: the rows grouped are not read (the one group of
            // an aggregate without GROUP BY is still made, and dropped by HAVING).
            (plan.source, plan.filter, plan.filter_text) = (Source::Empty, None, None);
        }
        plan.columns = items
            .iter()
            .zip(&plan.outputs)
            .map(|((_, name), e)| (name.clone(), e.ty()))
            .collect();
        for (e, desc, nulls_first) in order_items(order_by)? {
            let key = order_key(
                e,
                &items,
                &scope,
                needs_grouping.then_some(&mut grouping),
                cx,
                &mut windows,
            )?;
            plan.order.push((key, desc, nulls_first));
        }
        let keys = (items.as_slice(), &scope, cx);
        plan.bind_distinct(
            select,
            keys,
            needs_grouping.then_some(&mut grouping),
            &mut windows,
        )?;
        let grouped_width = needs_grouping.then(|| grouping.keys.len() + grouping.aggs.len());
        plan.place_calls(srfs, windows, scope.columns.len(), grouped_width)?;
        if needs_grouping {
            plan.groups = grouping
                .keys
                .iter()
                .map(|k| match k {
                    Expr::Column(i, _) => from.distinct.get(*i).copied().filter(|d| *d > 0.0),
                    _ => None,
                })
                .product::<Option<f64>>();
            plan.grouping = Some(grouping);
        }
        let (limit, offset) = limit_offset(cx.params, limit)?;
        plan.limit = limit;
        plan.offset = offset;
        plan.prune();
        plan.push_top();
        Ok((plan, scope))
    }

    /// The GROUP BY keys, then the select list over the groups and HAVING: the
    /// grouping they make, the plan's outputs bound over it.
    fn bind_grouped(
        &mut self,
        select: &ast::Select,
        items: &[(Item, String)],
        group_items: &[Item],
        scope: &Scope,
        cx: &PlanCx,
        windows: &mut Windows,
    ) -> SqlResult<Grouping> {
        let mut grouping = Grouping::default();
        for g in group_items {
            grouping.keys.push(match g {
                Item::Ast(e) => Binder::in_query(scope, cx)
                    .bind(e)
                    .map_err(|e| windowing::in_clause(e, "GROUP BY"))?,
                Item::Column(c) => scope.column_expr(*c),
            });
        }
        for (item, _) in items {
            self.outputs.push(match item {
                Item::Ast(e) => {
                    simplify(grouped(scope, &mut grouping, cx, Some(&mut *windows)).bind(e)?)
                }
                Item::Column(c) => regroup_column(*c, scope, &grouping)?,
            });
        }
        if let Some(h) = &select.having {
            self.having = Some(
                grouped(scope, &mut grouping, cx, None)
                    .boolean(h, "HAVING")
                    .map(simplify_condition)
                    .map_err(|e| windowing::in_clause(e, "HAVING"))?,
            );
        }
        Ok(grouping)
    }

    /// DISTINCT (its ORDER BY keys must be output columns: the rows are told apart by
    /// them) or DISTINCT ON (its keys bound as ORDER BY's are, over the select list
    /// `items` and the FROM clause's scope).
    fn bind_distinct(
        &mut self,
        select: &ast::Select,
        (items, scope, cx): (&[(Item, String)], &Scope, PlanCx),
        mut grouping: Option<&mut Grouping>,
        windows: &mut Windows,
    ) -> SqlResult<()> {
        match &select.distinct {
            // `SELECT ALL`: the default, spelled out.
            None | Some(ast::Distinct::All) => {}
            Some(ast::Distinct::Distinct) => {
                self.distinct = Distinct::All;
                for (k, _, _) in &mut self.order {
                    if let SortKey::Expr(e) = k {
                        match self.outputs.iter().position(|o| o == e) {
                            Some(i) => *k = SortKey::Output(i),
                            None => {
                                return Err(SqlError::new(
                                    code::INVALID_COLUMN_REFERENCE,
                                    "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                                ))
                            }
                        }
                    }
                }
            }
            Some(ast::Distinct::On(exprs)) => {
                let mut keys = Vec::new();
                for e in exprs {
                    let k = order_key(e, items, scope, grouping.as_deref_mut(), cx, windows)?;
                    keys.push(match k {
                        SortKey::Output(i) => self.outputs[i].clone(),
                        SortKey::Expr(e) => e,
                    });
                }
                self.distinct = Distinct::On(keys);
            }
        }
        Ok(())
    }

    /// The set-returning and window function calls bound, their placeholder columns
    /// renumbered to follow the row they are computed over: set-returning functions'
    /// the FROM clause's row (`from_width` wide), windows' the grouped row
    /// (`grouped_width`, with grouping) or the FROM clause's.
    fn place_calls(
        &mut self,
        srfs: crate::srf::SetReturning,
        windows: Windows,
        from_width: usize,
        grouped_width: Option<usize>,
    ) -> SqlResult<()> {
        if !srfs.calls.is_empty() {
            if !windows.calls.is_empty() {
                return Err(SqlError::unsupported(
                    "set-returning functions in a select list with window functions",
                ));
            }
            self.renumber_placeholders(crate::srf::SRF_PLACEHOLDER, from_width);
            self.srfs = srfs.calls;
        }
        if !windows.calls.is_empty() {
            self.renumber_placeholders(WINDOW_PLACEHOLDER, grouped_width.unwrap_or(from_width));
            self.windows = windows.calls;
        }
        Ok(())
    }

    /// Makes the outputs and sort keys read window call `k` (a placeholder column while
    /// the block was bound) at column `width + k`.
    /// Makes the placeholder columns from `from` (windows' or set-returning
    /// functions', which `from` begins and the next kind's start ends) follow a row
    /// `width` columns wide.
    fn renumber_placeholders(&mut self, from: usize, width: usize) {
        let f = |i: usize| {
            let ours = match from {
                WINDOW_PLACEHOLDER => i >= WINDOW_PLACEHOLDER,
                _ => (from..WINDOW_PLACEHOLDER).contains(&i),
            };
            if ours {
                width + (i - from)
            } else {
                i
            }
        };
        let renumber =
            |e: &mut Expr| *e = std::mem::replace(e, Expr::Const(Value::Null)).map_columns(&f);
        self.outputs.iter_mut().for_each(renumber);
        for (k, _, _) in &mut self.order {
            if let SortKey::Expr(e) = k {
                renumber(e);
            }
        }
        if let Distinct::On(keys) = &mut self.distinct {
            keys.iter_mut().for_each(renumber);
        }
    }

    /// A plan of `source`'s rows as they are: no filter, grouping, select list, order
    /// or limit yet (`source_names` for EXPLAIN; `from_rows` the rows estimated).
    pub(super) fn over(source: Source, source_names: Arc<[String]>, from_rows: f64) -> SelectPlan {
        SelectPlan {
            source,
            filter_text: None,
            source_names,
            input_limit: None,
            filter: None,
            grouping: None,
            having: None,
            outputs: Vec::new(),
            distinct: Distinct::None,
            columns: Vec::new(),
            order: Vec::new(),
            limit: None,
            offset: 0,
            ties: None,
            reaccess: None,
            windows: Vec::new(),
            srfs: Vec::new(),
            from_rows,
            groups: None,
            top_id: None,
        }
    }
}

pub(super) fn grouped<'a>(
    scope: &'a Scope,
    grouping: &'a mut Grouping,
    cx: &'a dyn SubqueryPlanner,
    windows: Option<&'a mut Windows>,
) -> Binder<'a> {
    Binder {
        scope,
        grouping: Some(grouping),
        cx: Some(cx),
        windows,
        set_returning: None,
        params: cx.params(),
    }
}

/// A WHERE clause (or another condition whose NULL drops the row) bound and simplified
/// as a condition (`optimize::simplify`).
pub fn bind_condition(b: &mut Binder, e: &ast::Expr, what: &str) -> SqlResult<Expr> {
    b.boolean(e, what).map(simplify_condition)
}

/// `ORDER BY n` (a position among `count` output columns): Some(n - 1); None for any
/// other expression.
pub(super) fn order_position(e: &ast::Expr, count: usize) -> SqlResult<Option<usize>> {
    let ast::Expr::Value(v) = e else {
        return Ok(None);
    };
    if !matches!(v.value, ast::Value::Number(..)) {
        return Ok(None);
    }
    // A number, which binds alike whatever the statement's parameters.
    let i = const_int(Params::Absent, e, "ORDER BY")?.unwrap_or(0);
    if i < 1 || i as usize > count {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            format!("ORDER BY position {i} is not in select list"),
        )
        .at(e.span().start));
    }
    Ok(Some(i as usize - 1))
}

fn order_key(
    e: &ast::Expr,
    items: &[(Item, String)],
    scope: &Scope,
    grouping: Option<&mut Grouping>,
    cx: PlanCx,
    windows: &mut Windows,
) -> SqlResult<SortKey> {
    if let Some(i) = order_position(e, items.len())? {
        return Ok(SortKey::Output(i));
    }
    // A bare name is an output column's first (SQL92's rule, PostgreSQL's and SQLite's:
    // `SELECT a + 1 AS a FROM t ORDER BY a` sorts by the output), else an expression
    // over the FROM items'. Two outputs of the name: the FROM column's when there is one
    // (`SELECT a, a`, `SELECT *, a`: the same values), else PostgreSQL's 42702.
    if let ast::Expr::Identifier(id) = e {
        let name = ident_name(id);
        let hits: Vec<usize> = items
            .iter()
            .enumerate()
            .filter(|(_, (_, n))| *n == name)
            .map(|(i, _)| i)
            .collect();
        match hits.as_slice() {
            [] => {}
            [i] => return Ok(SortKey::Output(*i)),
            _ if scope.columns.iter().any(|(c, _)| *c == name) => {}
            _ => {
                return Err(SqlError::new(
                    crate::error::code::AMBIGUOUS_COLUMN,
                    format!("ORDER BY \"{name}\" is ambiguous"),
                ))
            }
        }
    }
    let mut b = Binder {
        scope,
        grouping,
        cx: Some(&cx),
        windows: Some(windows),
        set_returning: None,
        params: cx.params,
    };
    Ok(SortKey::Expr(b.bind(e)?))
}

/// The select list expanded: each item as written, or a column `*` or `t.*` stands for,
/// with its output name. (Borrowed: cloning a deep expression takes 4 KiB of stack per
/// level.)
fn select_items<'q>(select: &'q ast::Select, scope: &Scope) -> SqlResult<Vec<(Item<'q>, String)>> {
    let mut items: Vec<(Item, String)> = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(e) => items.push((Item::Ast(e), output_name(e))),
            SelectItem::ExprWithAlias { expr, alias } => {
                items.push((Item::Ast(expr), ident_name(alias)))
            }
            SelectItem::Wildcard(_) => {
                if scope.columns.is_empty() {
                    return Err(SqlError::syntax(
                        "SELECT * with no tables specified is not valid",
                    ));
                }
                for c in scope.star_columns() {
                    items.push((Item::Column(c), scope.columns[c].0.clone()));
                }
            }
            SelectItem::ExprWithAliases { .. } => {
                return Err(SqlError::unsupported("several aliases for one select item"))
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let name = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                        crate::catalog::object_name(n)?
                    }
                    ast::SelectItemQualifiedWildcardKind::Expr(e) => {
                        return Err(SqlError::unsupported(format!(
                            "the select item {}.*",
                            crate::error::clip(&e.to_string())
                        )))
                    }
                };
                if let Some(cols) = scope.join_alias(&name) {
                    // `j.*` of `JOIN … USING (…) AS j`: the merged columns.
                    for &c in cols {
                        items.push((Item::Column(c), scope.columns[c].0.clone()));
                    }
                    continue;
                }
                let Some(range) = scope.relation(&name) else {
                    return Err(SqlError::new(
                        code::UNDEFINED_TABLE,
                        format!("missing FROM-clause entry for table \"{name}\""),
                    )
                    .at(item.span().start));
                };
                for c in range {
                    items.push((Item::Column(c), scope.columns[c].0.clone()));
                }
            }
        }
    }
    Ok(items)
}

/// GROUP BY's items: an expression, a position in the select list, or the name of an
/// output column that is no column of the FROM clause.
fn group_items<'q>(
    select: &'q ast::Select,
    items: &[(Item<'q>, String)],
    scope: &Scope,
    params: Params,
) -> SqlResult<Vec<Item<'q>>> {
    let GroupByExpr::Expressions(exprs, mods) = &select.group_by else {
        return Err(SqlError::unsupported("GROUP BY ALL or ROLLUP"));
    };
    if !mods.is_empty() {
        return Err(SqlError::unsupported("GROUP BY ALL or ROLLUP"));
    }
    exprs
        .iter()
        .map(|e| match e {
            ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                let i = const_int(params, e, "GROUP BY")?.unwrap_or(0);
                items
                    .get((i as usize).wrapping_sub(1))
                    .map(|(x, _)| x.clone())
                    .ok_or_else(|| {
                        SqlError::new(
                            code::INVALID_PARAMETER,
                            format!("GROUP BY position {i} is not in select list"),
                        )
                        .at(e.span().start)
                    })
            }
            // A name that is no column of the FROM clause may name an output
            // column, as in PostgreSQL (`select a % 10 as m ... group by m`).
            ast::Expr::Identifier(id) if scope.resolve(None, id)?.is_none() => {
                let name = ident_name(id);
                let mut found = items.iter().filter(|(_, n)| *n == name);
                match (found.next(), found.next()) {
                    (Some((x, _)), None) => Ok(x.clone()),
                    (Some(_), Some(_)) => Err(SqlError::new(
                        code::AMBIGUOUS_COLUMN,
                        format!("GROUP BY \"{name}\" is ambiguous"),
                    )
                    .at(e.span().start)),
                    _ => Ok(Item::Ast(e)),
                }
            }
            _ => Ok(Item::Ast(e)),
        })
        .collect()
}

/// The select list bound without grouping; None when an aggregate in it calls for
/// grouping (the window and set-returning function calls bound so far are dropped).
fn bind_plain(
    items: &[(Item, String)],
    scope: &Scope,
    cx: &PlanCx,
    windows: &mut Windows,
    srfs: &mut crate::srf::SetReturning,
) -> SqlResult<Option<Vec<Expr>>> {
    let mut outputs = Vec::new();
    for (item, _) in items {
        let bound = match item {
            Item::Ast(e) => Binder {
                scope,
                grouping: None,
                cx: Some(cx),
                windows: Some(&mut *windows),
                set_returning: Some(&mut *srfs),
                params: cx.params,
            }
            .bind(e),
            Item::Column(c) => Ok(scope.column_expr(*c)),
        };
        match bound {
            Ok(x) => outputs.push(simplify(x)),
            Err(err) if is_aggregate_error(&err) => {
                windows.calls.clear();
                srfs.calls.clear();
                return Ok(None);
            }
            Err(err) => return Err(err),
        }
    }
    Ok(Some(outputs))
}
