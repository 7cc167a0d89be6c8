//! Planning a query expression (`QueryPlan::plan`): WITH queries, `TABLE name`, FETCH FIRST,
//! LIMIT and OFFSET, the ORDER BY of a set operation or VALUES, and their bodies.

use std::sync::Arc;

use sqlparser::ast::{
    self, LimitClause, OrderByKind, OrderBySort, SetExpr, SetOperator, SetQuantifier, Spanned,
};
use walden::{Reader, Value};

use crate::bind::Binder;
use crate::catalog::{ident_name, Catalog, Scope};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::from::Explain;
use crate::guard::Guard;
use crate::infer::Params;
use crate::run::{PlanStats, RunCx};
use crate::types::SqlType;
use crate::value::as_i64;

use super::block::order_position;
use super::execute::{with_run, with_run_cx};
use super::set_op::union_type;
use super::subquery::Subqueries;
use super::{
    Body, Combined, Cte, CteBody, Ctes, PlanCx, QueryPlan, SelectPlan, SetOp, MAX_TARGET_COLUMNS,
};

/// LIMIT's or OFFSET's count, None for a NULL (no limit, no offset), as PostgreSQL
/// takes them; a parameter there is a bigint.
pub(super) fn const_int(params: Params, e: &ast::Expr, what: &str) -> SqlResult<Option<i64>> {
    let bound = Binder::plain(&Scope::default())
        .with_params(params)
        .bind(e)?;
    let b = crate::bind::coerce_literal(params, bound, SqlType::Int8)?;
    match b {
        Expr::Const(v) if as_i64(&v).is_some() => Ok(as_i64(&v)),
        Expr::Const(Value::Null) => Ok(None),
        Expr::Cast(inner, _) if matches!(*inner, Expr::Const(Value::Null)) => Ok(None),
        _ => Err(SqlError::new(
            code::DATATYPE_MISMATCH,
            format!("argument of {what} must be an integer constant"),
        )
        .at(e.span().start)),
    }
}

pub(super) fn is_aggregate_error(e: &SqlError) -> bool {
    e.code == code::GROUPING_ERROR && e.message.starts_with("aggregate functions are not allowed")
}

/// LIMIT and OFFSET as written.
pub(super) fn limit_offset(
    params: Params,
    limit: Option<&LimitClause>,
) -> SqlResult<(Option<u64>, u64)> {
    let mut out = (None, 0);
    match limit {
        None => {}
        Some(LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) if limit_by.is_empty() => {
            if let Some(n) = limit
                .as_ref()
                .map(|l| const_int(params, l, "LIMIT"))
                .transpose()?
                .flatten()
            {
                if n < 0 {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER,
                        "LIMIT must not be negative",
                    ));
                }
                out.0 = Some(n as u64);
            }
            let offset = offset
                .as_ref()
                .map(|o| const_int(params, &o.value, "OFFSET"));
            if let Some(n) = offset.transpose()?.flatten() {
                if n < 0 {
                    return Err(SqlError::new(
                        code::INVALID_PARAMETER,
                        "OFFSET must not be negative",
                    ));
                }
                out.1 = n as u64;
            }
        }
        Some(_) => return Err(SqlError::unsupported("this LIMIT syntax")),
    }
    Ok(out)
}

/// ORDER BY's items: each expression, descending, and NULLs first.
pub(super) fn order_items(ob: Option<&ast::OrderBy>) -> SqlResult<Vec<(&ast::Expr, bool, bool)>> {
    let Some(ob) = ob else {
        return Ok(Vec::new());
    };
    let OrderByKind::Expressions(list) = &ob.kind else {
        return Err(SqlError::unsupported("ORDER BY ALL"));
    };
    let mut out = Vec::with_capacity(list.len());
    for o in list {
        let desc = match &o.options.sort {
            None | Some(OrderBySort::Asc) => false,
            Some(OrderBySort::Desc) => true,
            Some(OrderBySort::Using(_)) => return Err(SqlError::unsupported("ORDER BY USING")),
        };
        // PostgreSQL: NULLs are larger than any value.
        out.push((&o.expr, desc, o.options.nulls_first.unwrap_or(desc)));
    }
    Ok(out)
}

impl QueryPlan {
    pub fn plan(query: &ast::Query, catalog: &dyn Catalog) -> SqlResult<QueryPlan> {
        QueryPlan::plan_in(query, &PlanCx::of(catalog))
    }

    /// Plans a query inside `cx` (a subquery sees its enclosing queries and their WITH
    /// queries).
    pub fn plan_in(query: &ast::Query, cx: &PlanCx) -> SqlResult<QueryPlan> {
        let plan = crate::depth::recurse(|| QueryPlan::plan_query(query, cx))?;
        if plan.columns().len() > MAX_TARGET_COLUMNS {
            return Err(SqlError::new(
                code::TOO_MANY_COLUMNS,
                format!("target lists can have at most {MAX_TARGET_COLUMNS} entries"),
            ));
        }
        Ok(plan)
    }

    fn plan_query(query: &ast::Query, cx: &PlanCx) -> SqlResult<QueryPlan> {
        if !query.locks.is_empty() {
            return Err(SqlError::unsupported("FOR UPDATE"));
        }
        let (limit_clause, ties) = fetch_first(cx.params, query)?;
        let table_body;
        let query_body: &SetExpr = match query.body.as_ref() {
            SetExpr::Table(t) => {
                table_body = table_command(t)?;
                &table_body
            }
            b => b,
        };
        let holder;
        let mut cx = *cx;
        if let Some(with) = &query.with {
            holder = plan_ctes(with, &cx)?;
            cx.ctes = Some(&holder);
        }
        if let SetExpr::Select(s) = query_body {
            let (mut plan, _) =
                SelectPlan::bound(s, query.order_by.as_ref(), limit_clause.as_ref(), &cx)?;
            plan.ties = ties;
            return Ok(QueryPlan::Select(Box::new(plan)));
        }
        if ties.is_some() {
            return Err(SqlError::unsupported(
                "FETCH FIRST ... WITH TIES over a set operation or VALUES",
            ));
        }
        let body = plan_body(query_body, &cx)?;
        let (limit, offset) = limit_offset(cx.params, limit_clause.as_ref())?;
        let columns = body.columns().to_vec();
        let items = order_items(query.order_by.as_ref())?;
        if items.is_empty() && limit.is_none() && offset == 0 {
            if let Body::Query(q) = body {
                return Ok(q);
            }
        }
        let set_op = !matches!(body, Body::Query(_));
        let order = result_order(items, &columns, set_op, cx.params)?;
        Ok(QueryPlan::Combined(Box::new(Combined {
            body,
            columns,
            order,
            limit,
            offset,
        })))
    }

    /// Output `i` of a SELECT block when it is a value of unknown type (a string
    /// literal, or a parameter whose type is being inferred).
    pub(crate) fn unknown_output(&self, params: Params, i: usize) -> Option<&Expr> {
        let QueryPlan::Select(s) = self else {
            return None;
        };
        s.outputs
            .get(i)
            .filter(|e| i < s.columns.len() && crate::bind::is_unknown(params, e))
    }

    /// Names and types of the result columns.
    pub fn columns(&self) -> &[(String, SqlType)] {
        match self {
            QueryPlan::Select(s) => &s.columns,
            QueryPlan::Combined(c) => &c.columns,
        }
    }

    /// Whether running the query may be refused for a relation its FROM clauses read
    /// (`Source::refusable`).
    pub(crate) fn refusable(&self) -> bool {
        match self {
            QueryPlan::Select(s) => s.source.refusable(),
            QueryPlan::Combined(c) => c.body.refusable(),
        }
    }

    pub fn as_select(&self) -> Option<&SelectPlan> {
        match self {
            QueryPlan::Select(s) => Some(s),
            QueryPlan::Combined(_) => None,
        }
    }

    /// Runs the query (tables read through `cx.run`) and returns its rows.
    pub fn run(&self, cx: &mut EvalCtx) -> SqlResult<Vec<Vec<Value>>> {
        crate::depth::recurse(|| match self {
            QueryPlan::Select(s) => s.run(cx),
            QueryPlan::Combined(c) => c.run(cx),
        })
    }

    /// EXPLAIN ANALYZE: runs the query at the top of a statement and returns the plan's
    /// lines with what each node measured, and the rows' count.
    pub(crate) fn run_analyzed(
        &self,
        costs: bool,
        reader: Option<Reader>,
        rng: &mut walden::rng::SimRng,
        guard: &Guard,
    ) -> SqlResult<(Vec<String>, usize)> {
        let mut rc = RunCx::new(reader, guard, &Subqueries);
        rc.stats = Some(PlanStats::default());
        let rows = with_run_cx(&rc, rng, guard, |cx| self.run(cx))?.len();
        let stats = rc.stats.take().unwrap_or_default().into_inner();
        let mut out = Explain::new(costs, Some(&stats));
        self.explain_into(&mut out, 0);
        Ok((out.lines, rows))
    }

    /// Runs the query at the top of a statement, reading with `reader`.
    pub(crate) fn run_top(
        &self,
        reader: Option<Reader>,
        rng: &mut walden::rng::SimRng,
        guard: &Guard,
    ) -> SqlResult<Vec<Vec<Value>>> {
        with_run(reader, rng, guard, |cx| self.run(cx))
    }

    /// The plan as EXPLAIN shows it, one line per row, PostgreSQL's node names; with
    /// `costs`, each node's estimated rows.
    pub fn explain(&self, costs: bool) -> Vec<String> {
        let mut out = Explain::new(costs, None);
        self.explain_into(&mut out, 0);
        out.lines
    }

    /// The planner's estimate of the rows the query gives.
    pub(crate) fn estimate(&self) -> f64 {
        match self {
            QueryPlan::Select(s) => s.estimate(),
            QueryPlan::Combined(c) => c.estimate(),
        }
    }

    pub(crate) fn explain_into(&self, out: &mut Explain, depth: usize) {
        match self {
            QueryPlan::Select(s) => s.explain_into(out, depth),
            QueryPlan::Combined(c) => c.explain_into(out, depth),
        }
    }
}

/// `TABLE name` as PostgreSQL reads it: `SELECT * FROM name`.
fn table_command(t: &ast::Table) -> SqlResult<SetExpr> {
    let Some(name) = &t.table_name else {
        return Err(SqlError::syntax("syntax error at end of input"));
    };
    let quoted = |n: &str| format!("\"{}\"", n.to_lowercase().replace('"', "\"\""));
    let from = match &t.schema_name {
        Some(schema) => format!("{}.{}", quoted(schema), quoted(name)),
        None => quoted(name),
    };
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let parsed = sqlparser::parser::Parser::parse_sql(&dialect, &format!("SELECT * FROM {from}"))
        .map_err(|e| SqlError::syntax(e.to_string()))?;
    match parsed.into_iter().next() {
        Some(ast::Statement::Query(q)) => Ok(*q.body),
        _ => Err(SqlError::new(code::INTERNAL, "TABLE read as no query")),
    }
}

/// FETCH FIRST n ROWS ONLY as the LIMIT it is (with the query's OFFSET), and the row
/// count of WITH TIES, which keeps the rows that tie with the last one.
fn fetch_first(
    params: Params,
    query: &ast::Query,
) -> SqlResult<(Option<LimitClause>, Option<u64>)> {
    let Some(f) = &query.fetch else {
        return Ok((query.limit_clause.clone(), None));
    };
    if f.percent {
        return Err(SqlError::unsupported("FETCH FIRST ... PERCENT"));
    }
    let offset = match &query.limit_clause {
        None => None,
        Some(LimitClause::LimitOffset {
            limit: None,
            offset,
            limit_by,
        }) if limit_by.is_empty() => offset.clone(),
        Some(_) => return Err(SqlError::syntax("multiple LIMIT clauses not allowed")),
    };
    let count = match &f.quantity {
        Some(q) => const_int(params, q, "FETCH FIRST")?,
        None => Some(1),
    };
    if count.is_some_and(|n| n < 0) {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            "LIMIT must not be negative",
        ));
    }
    if f.with_ties {
        if query.order_by.is_none() {
            return Err(SqlError::syntax(
                "WITH TIES cannot be specified without ORDER BY clause",
            ));
        }
        let limit = offset.map(|offset| LimitClause::LimitOffset {
            limit: None,
            offset: Some(offset),
            limit_by: Vec::new(),
        });
        return Ok((limit, count.map(|n| n as u64)));
    }
    let limit = f.quantity.clone().unwrap_or_else(|| {
        ast::Expr::Value(ast::Value::Number("1".into(), false).with_empty_span())
    });
    Ok((
        Some(LimitClause::LimitOffset {
            limit: Some(limit),
            offset,
            limit_by: Vec::new(),
        }),
        None,
    ))
}

pub(crate) fn plan_set_expr(e: &SetExpr, cx: &PlanCx) -> SqlResult<QueryPlan> {
    match e {
        SetExpr::Select(s) => Ok(QueryPlan::Select(Box::new(
            SelectPlan::bound(s, None, None, cx)?.0,
        ))),
        SetExpr::Query(q) => QueryPlan::plan_in(q, cx),
        other => Ok(match plan_body(other, cx)? {
            Body::Query(q) => q,
            body => QueryPlan::Combined(Box::new(Combined {
                columns: body.columns().to_vec(),
                body,
                order: Vec::new(),
                limit: None,
                offset: 0,
            })),
        }),
    }
}

fn plan_body(e: &SetExpr, cx: &PlanCx) -> SqlResult<Body> {
    crate::depth::recurse(|| match e {
        SetExpr::Select(_) | SetExpr::Query(_) => Ok(Body::Query(plan_set_expr(e, cx)?)),
        SetExpr::Table(t) => plan_body(&table_command(t)?, cx),
        SetExpr::SetOperation {
            op,
            set_quantifier,
            left,
            right,
        } => {
            let op = match op {
                SetOperator::Union => SetOp::Union,
                SetOperator::Intersect => SetOp::Intersect,
                SetOperator::Except => SetOp::Except,
                other => return Err(SqlError::unsupported(other.to_string().to_uppercase())),
            };
            let all = match set_quantifier {
                SetQuantifier::All => true,
                SetQuantifier::Distinct | SetQuantifier::None => false,
                other => return Err(SqlError::unsupported(format!("{op:?} {other}"))),
            };
            let left = plan_set_expr(left, cx)?;
            let right = plan_set_expr(right, cx)?;
            let name = match op {
                SetOp::Union => "UNION",
                SetOp::Intersect => "INTERSECT",
                SetOp::Except => "EXCEPT",
            };
            let (lc, rc) = (left.columns(), right.columns());
            if lc.len() != rc.len() {
                return Err(SqlError::syntax(format!(
                    "each {name} query must have the same number of columns"
                )));
            }
            let mut left_casts = Vec::with_capacity(lc.len());
            let mut right_casts = Vec::with_capacity(lc.len());
            for (i, ((_, a), (_, b))) in lc.iter().zip(rc).enumerate() {
                // A column of unknown type (a string literal or a parameter) takes the
                // other side's type, as in PostgreSQL: its text is read as that type.
                let (ua, ub) = (
                    left.unknown_output(cx.params, i),
                    right.unknown_output(cx.params, i),
                );
                let ty = match (ua, ub) {
                    (Some(_), None) if *b != SqlType::Null => *b,
                    (None, Some(_)) if *a != SqlType::Null => *a,
                    _ => union_type(*a, *b, name)?,
                };
                for e in [ua, ub].into_iter().flatten() {
                    crate::bind::coerce_literal(cx.params, e.clone(), ty)?;
                }
                left_casts.push((*a != ty && *a != SqlType::Null).then_some(ty));
                right_casts.push((*b != ty && *b != SqlType::Null).then_some(ty));
            }
            Ok(Body::SetOp {
                op,
                all,
                left,
                right,
                left_casts,
                right_casts,
            })
        }
        SetExpr::Values(v) => {
            let empty = Scope::default();
            let mut rows: Vec<Vec<Expr>> = Vec::with_capacity(v.rows.len());
            for row in &v.rows {
                let mut b = Binder::in_query(&empty, cx);
                let mut out = Vec::with_capacity(row.len());
                for e in row.iter() {
                    out.push(b.bind(e)?);
                }
                if let Some(first) = rows.first() {
                    if first.len() != out.len() {
                        return Err(SqlError::syntax("VALUES lists must all be the same length"));
                    }
                }
                rows.push(out);
            }
            // Each column takes its rows' common type, which literals and parameters of
            // unknown type take (text if all are), as in PostgreSQL.
            let width = rows.first().map_or(0, Vec::len);
            for i in 0..width {
                let column: Vec<&Expr> = rows.iter().map(|r| &r[i]).collect();
                let ty = crate::bind::common_type(cx.params, &column, "VALUES")?;
                for row in &mut rows {
                    let e = std::mem::replace(&mut row[i], Expr::Const(Value::Null));
                    row[i] = crate::bind::to_common(cx.params, e, ty)?;
                }
            }
            Ok(Body::Values(rows))
        }
        _ => Err(SqlError::unsupported("this kind of query")),
    })
}

/// A query's WITH queries planned in turn, each seeing those before it (and, WITH
/// RECURSIVE, itself).
fn plan_ctes<'a>(with: &ast::With, cx: &PlanCx<'a>) -> SqlResult<Ctes<'a>> {
    let mut ctes = Ctes {
        list: Vec::new(),
        parent: cx.ctes,
    };
    for cte in &with.cte_tables {
        let name = ident_name(&cte.alias.name);
        if ctes.list.iter().any(|c| c.name == name) {
            return Err(SqlError::new(
                code::DUPLICATE_ALIAS,
                format!("WITH query name \"{name}\" specified more than once"),
            )
            .at(cte.alias.name.span.start));
        }
        let planned = if with.recursive {
            crate::recursive::plan_cte(cte, &ctes, cx)?
        } else {
            let plan = QueryPlan::plan_in(
                &cte.query,
                &PlanCx {
                    ctes: Some(&ctes),
                    ..*cx
                },
            )?;
            let columns =
                crate::recursive::named_columns(&name, &cte.alias.columns, plan.columns())?;
            Cte {
                name,
                body: CteBody::Plan(Arc::new(plan)),
                columns,
            }
        };
        ctes.list.push(planned);
    }
    Ok(ctes)
}

/// ORDER BY over a set operation's or VALUES' result (`columns`): a position, or a
/// result column's name (over a set operation, `set_op`, nothing else).
fn result_order(
    items: Vec<(&ast::Expr, bool, bool)>,
    columns: &[(String, SqlType)],
    set_op: bool,
    params: Params,
) -> SqlResult<Vec<(Expr, bool, bool)>> {
    let scope = Scope {
        columns: columns.to_vec(),
        ..Scope::default()
    };
    let mut order = Vec::new();
    for (e, desc, nulls_first) in items {
        let key = match order_position(e, columns.len())? {
            Some(i) => Expr::Column(i, columns[i].1),
            None => Binder::plain(&scope).with_params(params).bind(e).map_err(|err| {
                if err.code == code::UNDEFINED_COLUMN && set_op {
                    SqlError::new(
                        code::FEATURE_NOT_SUPPORTED,
                        "ORDER BY on a UNION/INTERSECT/EXCEPT result must be on one of the result columns",
                    )
                    .at(e.span().start)
                } else {
                    err
                }
            })?,
        };
        order.push((key, desc, nulls_first));
    }
    Ok(order)
}
