//! Queries: a query expression planned — WITH, set operations (UNION, INTERSECT,
//! EXCEPT), VALUES, and SELECT blocks over their FROM clause (see `from`) — and run:
//! filter, grouping and aggregates, projection, DISTINCT, ORDER BY, OFFSET and LIMIT;
//! and the subqueries expressions hold.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use sqlparser::ast::{
    self, GroupByExpr, LimitClause, OrderByKind, OrderBySort, SelectItem, SetExpr, SetOperator,
    SetQuantifier, Spanned,
};
use walden::{Numeric, Reader, Value};

use crate::access_path::{self, Access, KeyFrom, Wanted};
use crate::bind::{
    output_name, regroup_column, AggCall, AggFunc, Binder, Grouping, Outer, SubqueryPlanner,
};
use crate::catalog::{ident_name, Catalog, IndexMeta, Scope};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr, Subquery, SubqueryKind, SubqueryPlan};
pub use crate::from::Source;
use crate::from::{plan_from, Explain};
use crate::guard::{row_bytes, Guard};
use crate::infer::Params;
use crate::run::{record, Hashed, HashedBy, NodeKey, PlanStats, RunCx, SubResult, SubqueryRunner};
use crate::types::{DeclaredType, SqlType};
use crate::value::{self, as_f64, as_i64, sort_cmp};
use crate::window::{self as windowing, WindowCall, Windows, WINDOW_PLACEHOLDER};

#[derive(Debug, Clone, PartialEq)]
enum SortKey {
    Output(usize),
    Expr(Expr),
}

/// A WITH query, by name.
pub struct Cte {
    pub name: String,
    pub body: CteBody,
    pub columns: Vec<(String, SqlType)>,
}

/// What a WITH query's name reads.
pub enum CteBody {
    /// Its query, run where it is read.
    Plan(Arc<QueryPlan>),
    /// A WITH RECURSIVE query that reads itself.
    Recursive(Arc<crate::recursive::RecursivePlan>),
    /// A WITH RECURSIVE query seen from inside its own definition.
    SelfRef(crate::recursive::SelfRef),
}

/// The WITH queries in reach of a query: its own, then its enclosing queries'.
pub struct Ctes<'a> {
    pub list: Vec<Cte>,
    pub parent: Option<&'a Ctes<'a>>,
}

impl Ctes<'_> {
    pub fn find(&self, name: &str) -> Option<&Cte> {
        match self.list.iter().find(|c| c.name == name) {
            Some(c) => Some(c),
            None => self.parent?.find(name),
        }
    }
}

/// What planning a query needs: the catalog, the WITH queries in reach, and the query it
/// is a subquery of. Binding reaches the planner through it (`bind::SubqueryPlanner`).
#[derive(Clone, Copy)]
pub struct PlanCx<'a> {
    pub catalog: &'a dyn Catalog,
    pub ctes: Option<&'a Ctes<'a>>,
    /// Set while a subquery is bound: the query it is inside.
    pub outer: Option<&'a Outer<'a>>,
    /// What binding knows of the statement's parameters.
    pub params: Params<'a>,
}

impl<'a> PlanCx<'a> {
    /// The context of a statement's top query.
    pub fn of(catalog: &'a dyn Catalog) -> PlanCx<'a> {
        PlanCx {
            catalog,
            ctes: None,
            outer: None,
            params: Params::Absent,
        }
    }
}

impl SubqueryPlanner for PlanCx<'_> {
    fn catalog(&self) -> &dyn Catalog {
        self.catalog
    }

    fn outer(&self) -> Option<&Outer<'_>> {
        self.outer
    }

    fn params(&self) -> Params<'_> {
        self.params
    }

    fn plan_subquery(&self, q: &ast::Query, outer: &Outer) -> SqlResult<Arc<dyn SubqueryPlan>> {
        let inner = PlanCx {
            outer: Some(outer),
            ..*self
        };
        Ok(Arc::new(QueryPlan::plan_in(q, &inner)?))
    }
}

/// A planned query expression.
#[derive(Debug)]
pub enum QueryPlan {
    Select(Box<SelectPlan>),
    /// A set operation, VALUES or a parenthesized query, with the ORDER BY, OFFSET and
    /// LIMIT written after it.
    Combined(Box<Combined>),
}

#[derive(Debug)]
pub struct Combined {
    body: Body,
    columns: Vec<(String, SqlType)>,
    /// Sort keys over the output row.
    order: Vec<(Expr, bool, bool)>,
    limit: Option<u64>,
    offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

#[derive(Debug)]
enum Body {
    Query(QueryPlan),
    Values(Vec<Vec<Expr>>),
    SetOp {
        op: SetOp,
        all: bool,
        left: QueryPlan,
        right: QueryPlan,
        /// Each column's type where a side's differs from the result's.
        left_casts: Vec<Option<SqlType>>,
        right_casts: Vec<Option<SqlType>>,
    },
}

/// LIMIT's or OFFSET's count, None for a NULL (no limit, no offset), as PostgreSQL
/// takes them; a parameter there is a bigint.
fn const_int(params: Params, e: &ast::Expr, what: &str) -> SqlResult<Option<i64>> {
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

fn is_aggregate_error(e: &SqlError) -> bool {
    e.code == code::GROUPING_ERROR && e.message.starts_with("aggregate functions are not allowed")
}

/// LIMIT and OFFSET as written.
fn limit_offset(params: Params, limit: Option<&LimitClause>) -> SqlResult<(Option<u64>, u64)> {
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
fn order_items(ob: Option<&ast::OrderBy>) -> SqlResult<Vec<(&ast::Expr, bool, bool)>> {
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

/// PostgreSQL's MaxTupleAttributeNumber: the most columns a query may return (the wire
/// protocol counts them in 16 bits).
pub const MAX_TARGET_COLUMNS: usize = 1664;

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
                    crate::recursive::plan_cte(cte, &ctes, &cx)?
                } else {
                    let plan = QueryPlan::plan_in(
                        &cte.query,
                        &PlanCx {
                            ctes: Some(&ctes),
                            ..cx
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
            holder = ctes;
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
        // ORDER BY over the result: a position, or a result column's name.
        let scope = Scope {
            columns: columns.clone(),
            ..Scope::default()
        };
        let mut order = Vec::new();
        for (e, desc, nulls_first) in items {
            let key = match order_position(e, columns.len())? {
                Some(i) => Expr::Column(i, columns[i].1),
                None => Binder::plain(&scope).with_params(cx.params).bind(e).map_err(|err| {
                    if err.code == code::UNDEFINED_COLUMN && !matches!(body, Body::Query(_)) {
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

/// The type of a column of a set operation whose sides have types `a` and `b`.
pub(crate) fn union_type(a: SqlType, b: SqlType, name: &str) -> SqlResult<SqlType> {
    Ok(match (a, b) {
        (x, y) if x == y => x,
        (SqlType::Null, y) => y,
        (x, SqlType::Null) => x,
        (x, y) if x.is_numeric() && y.is_numeric() => SqlType::wider(x, y),
        (x, y) if x.is_datetime() && y.is_datetime() => SqlType::wider(x, y),
        // bpchar and text convert to each other implicitly, and PostgreSQL then keeps
        // the first one's type.
        (x, y) if x.is_text() && y.is_text() => x,
        (x, y) => {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "{name} types {} and {} cannot be matched",
                    x.name(),
                    y.name()
                ),
            ))
        }
    })
}

impl Body {
    fn columns(&self) -> Cow<'_, [(String, SqlType)]> {
        match self {
            Body::Query(q) => Cow::Borrowed(q.columns()),
            Body::SetOp {
                left, left_casts, ..
            } => Cow::Owned(
                left.columns()
                    .iter()
                    .zip(left_casts)
                    .map(|((n, t), c)| (n.clone(), c.unwrap_or(*t)))
                    .collect(),
            ),
            Body::Values(rows) => {
                let n = rows.first().map_or(0, Vec::len);
                Cow::Owned(
                    (0..n)
                        .map(|i| {
                            let ty = rows.iter().map(|r| r[i].ty()).fold(SqlType::Null, |a, b| {
                                match (a, b) {
                                    (SqlType::Null, b) => b,
                                    (a, b) if a.is_numeric() && b.is_numeric() => {
                                        SqlType::wider(a, b)
                                    }
                                    (a, _) => a,
                                }
                            });
                            (format!("column{}", i + 1), ty)
                        })
                        .collect(),
                )
            }
        }
    }
}

impl Combined {
    fn run(&self, cx: &mut EvalCtx) -> SqlResult<Vec<Vec<Value>>> {
        let guard = cx.run.map(|r| r.guard);
        let mut rows = match &self.body {
            Body::Query(q) => q.run(cx)?,
            Body::Values(list) => {
                let mut rows = Vec::with_capacity(list.len());
                for r in list {
                    let mut out = Vec::with_capacity(r.len());
                    for (e, (_, ty)) in r.iter().zip(&self.columns) {
                        let v = e.eval(&[], cx)?;
                        out.push(convert(v, e.ty(), *ty)?);
                    }
                    rows.push(out);
                }
                rows
            }
            Body::SetOp {
                op,
                all,
                left,
                right,
                left_casts,
                right_casts,
            } => {
                let l = cast_rows(left.run(cx)?, left.columns(), left_casts)?;
                let r = cast_rows(right.run(cx)?, right.columns(), right_casts)?;
                set_operation(*op, *all, l, r, guard)?
            }
        };
        if !self.order.is_empty() {
            let mut keyed = Vec::with_capacity(rows.len());
            for row in rows {
                let mut keys = Vec::with_capacity(self.order.len());
                for (e, _, _) in &self.order {
                    keys.push(e.eval(&row, cx)?);
                }
                keyed.push((row, keys));
            }
            keyed.sort_by(|a, b| compare_keys(&self.order, &a.1, &b.1));
            rows = keyed.into_iter().map(|(r, _)| r).collect();
        }
        let skip = usize::try_from(self.offset).unwrap_or(usize::MAX);
        let take = self
            .limit
            .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        if skip > 0 || take < rows.len() {
            rows = rows.into_iter().skip(skip).take(take).collect();
        }
        Ok(rows)
    }

    /// The planner's estimate of the rows the query gives.
    pub(crate) fn estimate(&self) -> f64 {
        limited(self.body_estimate(), self.limit, self.offset)
    }

    /// As `estimate`, before LIMIT and OFFSET.
    fn body_estimate(&self) -> f64 {
        match &self.body {
            Body::Query(q) => q.estimate(),
            Body::Values(rows) => rows.len() as f64,
            Body::SetOp {
                op, left, right, ..
            } => {
                let (l, r) = (left.estimate(), right.estimate());
                match op {
                    SetOp::Union => l + r,
                    SetOp::Intersect => l.min(r),
                    SetOp::Except => l,
                }
            }
        }
    }

    fn explain_into(&self, out: &mut Explain, mut depth: usize) {
        if self.limit.is_some() || self.offset > 0 {
            out.est(self.estimate());
            out.node(depth, "Limit");
            depth += 1;
        }
        if !self.order.is_empty() {
            out.est(self.body_estimate());
            out.node(depth, "Sort");
            depth += 1;
        }
        if let Body::SetOp { .. } = &self.body {
            out.est(self.body_estimate());
        }
        match &self.body {
            Body::Query(q) => q.explain_into(out, depth),
            Body::Values(rows) => out.node(
                depth,
                &format!("Values Scan on \"*VALUES*\"  (rows={})", rows.len()),
            ),
            Body::SetOp {
                op,
                all,
                left,
                right,
                ..
            } => {
                let text = match (op, all) {
                    (SetOp::Union, true) => "Append",
                    (SetOp::Union, false) => "HashAggregate (Union)",
                    (SetOp::Intersect, true) => "HashSetOp Intersect All",
                    (SetOp::Intersect, false) => "HashSetOp Intersect",
                    (SetOp::Except, true) => "HashSetOp Except All",
                    (SetOp::Except, false) => "HashSetOp Except",
                };
                out.node(depth, text);
                left.explain_into(out, depth + 1);
                right.explain_into(out, depth + 1);
            }
        }
    }
}

fn convert(v: Value, from: SqlType, to: SqlType) -> SqlResult<Value> {
    if from == to || matches!(v, Value::Null) || from == SqlType::Null {
        return Ok(v);
    }
    value::cast_from(v, from, &DeclaredType::plain(to), false)
}

pub(crate) fn cast_rows(
    mut rows: Vec<Vec<Value>>,
    columns: &[(String, SqlType)],
    casts: &[Option<SqlType>],
) -> SqlResult<Vec<Vec<Value>>> {
    if casts.iter().all(Option::is_none) {
        return Ok(rows);
    }
    for row in &mut rows {
        for (i, c) in casts.iter().enumerate() {
            if let (Some(to), Some(v)) = (c, row.get_mut(i)) {
                let from = columns.get(i).map_or(SqlType::Null, |c| c.1);
                *v = convert(std::mem::replace(v, Value::Null), from, *to)?;
            }
        }
    }
    Ok(rows)
}

/// UNION, INTERSECT or EXCEPT of two row lists, with or without ALL; rows equal as
/// DISTINCT sees them (NULLs equal) are the same row.
fn set_operation(
    op: SetOp,
    all: bool,
    left: Vec<Vec<Value>>,
    right: Vec<Vec<Value>>,
    guard: Option<&Guard>,
) -> SqlResult<Vec<Vec<Value>>> {
    let mut buf = Vec::new();
    let charge = |row: &[Value]| -> SqlResult<()> {
        match guard {
            Some(g) => g.charge(row_bytes(row) + 48),
            None => Ok(()),
        }
    };
    match (op, all) {
        (SetOp::Union, true) => {
            let mut out = left;
            out.extend(right);
            Ok(out)
        }
        (SetOp::Union, false) => {
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for row in left.into_iter().chain(right) {
                key_bytes(&row, &mut buf);
                if seen.insert(buf.clone()) {
                    charge(&row)?;
                    out.push(row);
                }
            }
            Ok(out)
        }
        (SetOp::Intersect | SetOp::Except, _) => {
            let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
            for row in &right {
                key_bytes(row, &mut buf);
                charge(row)?;
                *counts.entry(buf.clone()).or_default() += 1;
            }
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for row in left {
                key_bytes(&row, &mut buf);
                let c = counts.get_mut(&buf);
                let keep = match (op, all, c) {
                    (SetOp::Intersect, true, Some(n)) if *n > 0 => {
                        *n -= 1;
                        true
                    }
                    (SetOp::Intersect, false, Some(_)) => seen.insert(buf.clone()),
                    (SetOp::Intersect, _, _) => false,
                    (SetOp::Except, true, Some(n)) if *n > 0 => {
                        *n -= 1;
                        false
                    }
                    (SetOp::Except, true, _) => true,
                    (SetOp::Except, false, Some(_)) => false,
                    (SetOp::Except, false, None) => seen.insert(buf.clone()),
                    (SetOp::Union, ..) => true,
                };
                if keep {
                    out.push(row);
                }
            }
            Ok(out)
        }
    }
}

/// A SELECT list item: an expression as written, or a column `*` stands for.
#[derive(Clone)]
enum Item<'q> {
    Ast(&'q ast::Expr),
    Column(usize),
}

#[derive(Debug, Clone, PartialEq)]
enum Distinct {
    None,
    All,
    /// DISTINCT ON: the first row (in ORDER BY order) of each set of equal keys.
    On(Vec<Expr>),
}

#[derive(Debug, Clone)]
pub struct SelectPlan {
    pub source: Source,
    /// The WHERE clause as written, and the source's column names, for EXPLAIN.
    filter_text: Option<Arc<str>>,
    source_names: Arc<[String]>,
    /// Stop reading after this many rows passed the filter (min/max read through an
    /// index need one).
    input_limit: Option<u64>,
    filter: Option<Expr>,
    grouping: Option<Grouping>,
    having: Option<Expr>,
    outputs: Vec<Expr>,
    distinct: Distinct,
    /// Names and types of the result columns.
    pub columns: Vec<(String, SqlType)>,
    order: Vec<(SortKey, bool, bool)>,
    limit: Option<u64>,
    offset: u64,
    /// FETCH FIRST n ROWS WITH TIES: n, and the rows after the n-th that sort equal to
    /// it (`limit` is then None).
    ties: Option<u64>,
    /// A correlated subquery over one table with indexes, whose WHERE clause reads outer
    /// values: the scope and indexes to choose its access path with again once the
    /// values are known, each run (an index lookup per outer row, not a scan).
    reaccess: Option<Arc<(Scope, Vec<IndexMeta>)>>,
    /// Window function calls, computed over the rows after grouping and HAVING; the
    /// outputs and sort keys read their values after those rows' columns.
    windows: Vec<WindowCall>,
    /// Set-returning functions of the select list (`crate::srf`): each input row
    /// becomes the rows they make, their columns after the row's.
    srfs: Vec<crate::srf::SrfCall>,
    /// The planner's estimate of the rows that pass the WHERE clause.
    from_rows: f64,
    /// The groups GROUP BY makes, when ANALYZE's distinct values of every key (each a
    /// column) are known: their product.
    groups: Option<f64>,
    /// ORDER BY … LIMIT pushed down to a table read (`push_top`): the id under which
    /// the top-N publishes the keys of the last row it keeps.
    top_id: Option<u64>,
}

/// A streaming plan's parts (`SelectPlan::stream_parts`).
pub(crate) struct StreamParts<'p> {
    pub source: &'p Source,
    pub filter: Option<&'p Expr>,
    pub outputs: &'p [Expr],
    pub offset: u64,
    pub limit: Option<u64>,
}

/// The rows LIMIT and OFFSET leave of `rows` (at least 1, as PostgreSQL's estimates).
fn limited(rows: f64, limit: Option<u64>, offset: u64) -> f64 {
    let after = (rows - offset as f64).max(1.0);
    limit.map_or(after, |n| after.min(n as f64)).max(1.0)
}

/// A query's plan kept by a prepared statement, with its parameters unfilled: made once
/// for the types of the values it is run with and the catalog as it stood
/// (`generation`), then filled with each run's values, whose key ranges choose the
/// access path then (`instantiate`).
#[derive(Debug)]
pub(crate) struct CachedSelect {
    plan: SelectPlan,
    scope: Scope,
    indexes: Vec<IndexMeta>,
    /// For a FROM clause of several tables: each table's indexes and column types, to
    /// choose again how each is read once the run's values are in its conditions.
    tables: Vec<crate::from::TableIndexes>,
    /// The plan every run shares when its parameters only fix a unique key
    /// (`SelectPlan::generic`): run with the values in its run context, not made again.
    generic: Option<Arc<QueryPlan>>,
}

impl CachedSelect {
    /// Binds `query` with its parameters of `types`; None when it does not bind that way
    /// (a parameter where only a constant may stand, or whose type the context must
    /// decide, or a query of more than one table or with subqueries: the statement is
    /// then bound with its values written in, each run).
    pub fn new(
        query: &ast::Query,
        types: &[SqlType],
        catalog: &dyn Catalog,
    ) -> Option<CachedSelect> {
        let ast::SetExpr::Select(s) = query.body.as_ref() else {
            return None;
        };
        if query.with.is_some() || query.fetch.is_some() || !query.locks.is_empty() {
            return None;
        }
        let cx = PlanCx {
            params: Params::Typed(types),
            ..PlanCx::of(catalog)
        };
        let (plan, scope) =
            SelectPlan::bound(s, query.order_by.as_ref(), query.limit_clause.as_ref(), &cx).ok()?;
        let mut tables = Vec::new();
        let indexes = match &plan.source {
            Source::Table(t) => catalog.indexes(&t.name),
            Source::Nothing | Source::Series { .. } => Vec::new(),
            // Joins: planned once with the parameters unknown (`o.id = $1` estimated
            // as a key lookup when a unique index covers it), each table's reads chosen
            // again per run.
            source if source.cacheable() => {
                let mut names = Vec::new();
                source.table_names(&mut names);
                for name in names {
                    if tables.iter().any(|(n, _, _)| *n == name) {
                        continue;
                    }
                    let types = catalog
                        .table_scope(&name)
                        .ok()?
                        .columns
                        .iter()
                        .map(|(_, t)| t.column_type())
                        .collect();
                    tables.push((name.clone(), catalog.indexes(&name), types));
                }
                Vec::new()
            }
            _ => return None,
        };
        let generic = plan
            .generic(&scope, &indexes)
            .map(|p| Arc::new(QueryPlan::Select(Box::new(p))));
        Some(CachedSelect {
            plan,
            scope,
            indexes,
            tables,
            generic,
        })
    }

    /// The plan every run shares, if there is one: run it with the run's values as
    /// its parameters (`with_run_params`).
    pub(crate) fn generic(&self) -> Option<&Arc<QueryPlan>> {
        self.generic.as_ref()
    }

    /// The plan for these values.
    pub fn instantiate(&self, values: &[Value]) -> SqlResult<QueryPlan> {
        let mut plan = self.plan.with_params(values)?;
        if !self.indexes.is_empty() {
            plan.choose_access(&self.scope, &self.indexes);
        }
        if !self.tables.is_empty() {
            plan.source.choose_access(&self.tables);
        }
        Ok(QueryPlan::Select(Box::new(plan)))
    }
}

impl SelectPlan {
    /// The plan of a SELECT block before its access path is chosen (a sequential
    /// scan), with the scope of its FROM clause; then the access path.
    fn bound(
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
            .is_some_and(crate::flatten::has_subquery);
        if subqueries && !cx.params.typed() {
            let is_cte = |name: &str| cx.ctes.is_some_and(|c| c.find(name).is_some());
            let names = crate::flatten::Names {
                catalog: cx.catalog,
                is_cte: &is_cte,
            };
            let flat = cx
                .outer
                .is_none()
                .then(|| crate::flatten::flatten(select, plan.from_rows, &names))
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
        // Expand the select list. (Borrowed: cloning a deep expression takes 4 KiB of
        // stack per level.)
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
        let group_items: Vec<Item> = match &select.group_by {
            GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => exprs
                .iter()
                .map(|e| match e {
                    ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                        let i = const_int(cx.params, e, "GROUP BY")?.unwrap_or(0);
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
                .collect::<SqlResult<_>>()?,
            _ => return Err(SqlError::unsupported("GROUP BY ALL or ROLLUP")),
        };
        let mut plain_outputs = Vec::new();
        let mut needs_grouping = !group_items.is_empty() || select.having.is_some();
        let mut windows = Windows::new(&select.named_window)?;
        let mut srfs = crate::srf::SetReturning::default();
        if !needs_grouping {
            for (item, _) in &items {
                let bound = match item {
                    Item::Ast(e) => Binder {
                        scope: &scope,
                        grouping: None,
                        cx: Some(&cx),
                        windows: Some(&mut windows),
                        set_returning: Some(&mut srfs),
                        params: cx.params,
                    }
                    .bind(e),
                    Item::Column(c) => Ok(scope.column_expr(*c)),
                };
                match bound {
                    Ok(x) => plain_outputs.push(x),
                    Err(err) if is_aggregate_error(&err) => {
                        needs_grouping = true;
                        windows.calls.clear();
                        srfs.calls.clear();
                        break;
                    }
                    Err(err) => return Err(err),
                }
            }
        }
        let mut plan = SelectPlan {
            filter_text: from.filter_text,
            filter: from.filter,
            ..SelectPlan::over(
                from.source,
                scope.columns.iter().map(|(n, _)| n.clone()).collect(),
                from.rows,
            )
        };
        let mut grouping = Grouping::default();
        if needs_grouping {
            for g in &group_items {
                grouping.keys.push(match g {
                    Item::Ast(e) => Binder::in_query(&scope, &cx)
                        .bind(e)
                        .map_err(|e| windowing::in_clause(e, "GROUP BY"))?,
                    Item::Column(c) => scope.column_expr(*c),
                });
            }
            for (item, _) in &items {
                plan.outputs.push(match item {
                    Item::Ast(e) => {
                        grouped(&scope, &mut grouping, &cx, Some(&mut windows)).bind(e)?
                    }
                    Item::Column(c) => regroup_column(*c, &scope, &grouping)?,
                });
            }
            if let Some(h) = &select.having {
                plan.having = Some(
                    grouped(&scope, &mut grouping, &cx, None)
                        .boolean(h, "HAVING")
                        .map_err(|e| windowing::in_clause(e, "HAVING"))?,
                );
            }
        } else {
            plan.outputs = plain_outputs;
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
        match &select.distinct {
            // `SELECT ALL`: the default, spelled out.
            None | Some(ast::Distinct::All) => {}
            Some(ast::Distinct::Distinct) => {
                plan.distinct = Distinct::All;
                // The sort keys must be output columns (the rows are told apart by them).
                for (k, _, _) in &mut plan.order {
                    if let SortKey::Expr(e) = k {
                        match plan.outputs.iter().position(|o| o == e) {
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
                    let k = order_key(
                        e,
                        &items,
                        &scope,
                        needs_grouping.then_some(&mut grouping),
                        cx,
                        &mut windows,
                    )?;
                    keys.push(match k {
                        SortKey::Output(i) => plan.outputs[i].clone(),
                        SortKey::Expr(e) => e,
                    });
                }
                plan.distinct = Distinct::On(keys);
            }
        }
        if !srfs.calls.is_empty() {
            if !windows.calls.is_empty() {
                return Err(SqlError::unsupported(
                    "set-returning functions in a select list with window functions",
                ));
            }
            // Their values follow the FROM clause's row.
            plan.renumber_placeholders(crate::srf::SRF_PLACEHOLDER, scope.columns.len());
            plan.srfs = srfs.calls;
        }
        if !windows.calls.is_empty() {
            // Window values follow the row they are computed over: the grouped row, or
            // the FROM clause's.
            let width = if needs_grouping {
                grouping.keys.len() + grouping.aggs.len()
            } else {
                scope.columns.len()
            };
            plan.renumber_placeholders(WINDOW_PLACEHOLDER, width);
            plan.windows = windows.calls;
        }
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

    /// Picks an index to read the table through, if one serves the WHERE clause, the
    /// ORDER BY with a LIMIT, or a min or max.
    fn choose_access(&mut self, scope: &Scope, indexes: &[IndexMeta]) {
        let types: Vec<walden::ColumnType> =
            scope.columns.iter().map(|(_, t)| t.column_type()).collect();
        // min(col) or max(col), alone (possibly several times) over the whole input.
        let extreme = self.grouping.as_ref().and_then(|g| {
            if !g.keys.is_empty() || g.aggs.is_empty() {
                return None;
            }
            let first = g.aggs.first()?;
            let max = match first.func {
                AggFunc::Min => false,
                AggFunc::Max => true,
                _ => return None,
            };
            let Some(Expr::Column(c, _)) = &first.arg else {
                return None;
            };
            g.aggs.iter().all(|a| a == first).then_some((*c, max))
        });
        // Windows see every row and sort them again: the index may only serve the filter.
        let extreme = extreme.filter(|_| self.windows.is_empty());
        // Set-returning functions make rows after the read: it can only serve the filter.
        let order: Option<Vec<(usize, bool, bool)>> =
            if !self.windows.is_empty() || !self.srfs.is_empty() {
                None
            } else if let Some((c, max)) = extreme {
                Some(vec![(c, max, max)])
            } else if self.grouping.is_some() {
                None
            } else {
                self.order
                    .iter()
                    .map(|(k, desc, nulls_first)| {
                        let e = match k {
                            SortKey::Output(i) => self.outputs.get(*i)?,
                            SortKey::Expr(e) => e,
                        };
                        match e {
                            Expr::Column(c, _) => Some((*c, *desc, *nulls_first)),
                            _ => None,
                        }
                    })
                    .collect()
            };
        let wanted = Wanted {
            filter: self.filter.as_ref(),
            order,
            nulls_dropped: extreme.is_some(),
            few: extreme.is_some()
                || (self.limit.is_some()
                    && self.grouping.is_none()
                    && self.windows.is_empty()
                    && self.srfs.is_empty()),
        };
        let access = access_path::choose(indexes, &types, &wanted);
        if let Access::Index(read) = &access {
            if read.ordered {
                if let Some((c, _)) = extreme {
                    // The first row with a value is the answer.
                    let not_null =
                        Expr::IsNull(Box::new(Expr::Column(c, types_sql(scope, c))), true);
                    self.filter = Some(match self.filter.take() {
                        Some(f) => Expr::And(Box::new(f), Box::new(not_null)),
                        None => not_null,
                    });
                    self.input_limit = Some(1);
                } else {
                    // Rows come in ORDER BY order.
                    self.order.clear();
                }
            }
        }
        if let Source::Table(t) = &mut self.source {
            t.access = access;
        }
    }

    /// A prepared statement's plan for every run, as PostgreSQL's generic plan: a read
    /// of one table whose only parameters are `col = $n` conditions fixing each column
    /// of a unique index (`access_path::generic_point`), with nothing that a run's
    /// values would fold or choose differently (no grouping, windows, set-returning
    /// functions or DISTINCT, no parameter outside the WHERE clause). None otherwise:
    /// each run fills its values in and chooses its access path (`instantiate`).
    fn generic(&self, scope: &Scope, indexes: &[IndexMeta]) -> Option<SelectPlan> {
        let Source::Table(t) = &self.source else {
            return None;
        };
        let filter = self.filter.as_ref()?;
        if indexes.is_empty()
            || self.grouping.is_some()
            || !self.windows.is_empty()
            || !self.srfs.is_empty()
            || !matches!(self.distinct, Distinct::None)
            || self.reaccess.is_some()
        {
            return None;
        }
        let mut params = false;
        let mut look = |e: &Expr| params |= matches!(e, Expr::Param(..));
        self.outputs.iter().for_each(|e| e.visit(&mut look));
        for e in self.having.iter().chain(t.filter.iter()) {
            e.visit(&mut look);
        }
        for (k, _, _) in &self.order {
            if let SortKey::Expr(e) = k {
                e.visit(&mut look);
            }
        }
        if params {
            return None;
        }
        let types: Vec<SqlType> = scope.columns.iter().map(|(_, t)| *t).collect();
        let read = access_path::generic_point(indexes, &types, filter, KeyFrom::Param)?;
        let mut plan = self.clone();
        if let Source::Table(t) = &mut plan.source {
            t.access = Access::Index(read);
        }
        Some(plan)
    }

    /// The plan with each parameter replaced by its value (a cached plan of a prepared
    /// statement, before its access path is chosen for these values).
    fn with_params(&self, values: &[Value]) -> SqlResult<SelectPlan> {
        self.filled(values, false)
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

    /// The plan with its parameters (or, `outer`, its outer values) filled in.
    fn filled(&self, values: &[Value], outer: bool) -> SqlResult<SelectPlan> {
        let fill = |e: &Expr| e.clone().filled(values, outer);
        let grouping = match &self.grouping {
            None => None,
            Some(g) => {
                let mut g = g.clone();
                for k in &mut g.keys {
                    *k = std::mem::replace(k, Expr::Const(Value::Null)).filled(values, outer)?;
                }
                for a in &mut g.aggs {
                    *a = a.filled(values, outer)?;
                }
                Some(g)
            }
        };
        let order = self
            .order
            .iter()
            .map(|(key, desc, nulls_first)| {
                let key = match key {
                    SortKey::Expr(e) => SortKey::Expr(fill(e)?),
                    k => k.clone(),
                };
                Ok((key, *desc, *nulls_first))
            })
            .collect::<SqlResult<_>>()?;
        let distinct = match &self.distinct {
            Distinct::On(keys) => Distinct::On(keys.iter().map(fill).collect::<SqlResult<_>>()?),
            d => d.clone(),
        };
        Ok(SelectPlan {
            // A cached plan's parameters may sit in its FROM clause's conditions (a
            // correlated subquery's outer values are read as it runs).
            source: if outer {
                self.source.clone()
            } else {
                self.source.filled_params(values)?
            },
            filter_text: self.filter_text.clone(),
            source_names: self.source_names.clone(),
            input_limit: self.input_limit,
            filter: self.filter.as_ref().map(fill).transpose()?,
            grouping,
            having: self.having.as_ref().map(fill).transpose()?,
            outputs: self.outputs.iter().map(fill).collect::<SqlResult<_>>()?,
            distinct,
            columns: self.columns.clone(),
            order,
            limit: self.limit,
            offset: self.offset,
            ties: self.ties,
            reaccess: None,
            windows: self
                .windows
                .iter()
                .map(|w| w.filled(values, outer))
                .collect::<SqlResult<_>>()?,
            srfs: self
                .srfs
                .iter()
                .map(|c| {
                    Ok(crate::srf::SrfCall {
                        args: c.args.iter().map(fill).collect::<SqlResult<_>>()?,
                        ..c.clone()
                    })
                })
                .collect::<SqlResult<_>>()?,
            from_rows: self.from_rows,
            groups: self.groups,
            top_id: self.top_id,
        })
    }

    /// The plan as EXPLAIN shows it; with `costs`, each node's estimated rows.
    pub fn explain(&self, costs: bool) -> Vec<String> {
        let mut out = Explain::new(costs, None);
        self.explain_into(&mut out, 0);
        out.lines
    }

    /// Column pruning (`Source::prune`): the FROM clause's columns this block reads —
    /// in WHERE, and in the outputs, ORDER BY and DISTINCT ON, or with GROUP BY in the
    /// keys and the aggregates' arguments (what comes after grouping reads the grouped
    /// row). Nothing is pruned with window functions or subqueries (they may read any
    /// column).
    /// ORDER BY … LIMIT over a join whose sort keys are all columns of one table read
    /// (as `ORDER BY o.amount DESC, o.id LIMIT 10` over orders joined to customers):
    /// the read drops the rows that sort after the last row the top-N keeps, before
    /// the join probes or copies them (`TopFilter`). Only where a row's sort keys are
    /// known as it is read and a dropped row can only drop rows made from it: no
    /// grouping, DISTINCT or window functions, and the table reached through inner
    /// joins or the kept side of outer joins (`Source::top_target`).
    fn push_top(&mut self) {
        if self.limit.is_none()
            || self.order.is_empty()
            || self.grouping.is_some()
            || self.distinct != Distinct::None
            || !self.windows.is_empty()
            || !self.srfs.is_empty()
            || !matches!(self.source, Source::Join(_))
        {
            return;
        }
        let mut cols = Vec::with_capacity(self.order.len());
        for (key, desc, nulls_first) in &self.order {
            let e = match key {
                SortKey::Output(i) => &self.outputs[*i],
                SortKey::Expr(e) => e,
            };
            let Expr::Column(c, _) = e else { return };
            cols.push((*c, *desc, *nulls_first));
        }
        let only: Vec<usize> = cols.iter().map(|c| c.0).collect();
        let Some((read, at)) = self.source.top_target(&only, 0) else {
            return;
        };
        static NEXT_TOP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT_TOP.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        read.top = Some(crate::from::TopFilter {
            id,
            keys: cols.iter().map(|&(c, d, n)| (c - at, d, n)).collect(),
        });
        self.top_id = Some(id);
    }

    fn prune(&mut self) {
        if !self.windows.is_empty() || self.has_subquery() {
            return;
        }
        let mut exprs: Vec<&Expr> = self.filter.iter().collect();
        match &self.grouping {
            Some(g) => {
                exprs.extend(&g.keys);
                for a in &g.aggs {
                    let crate::bind::AggCall {
                        func: _,
                        arg,
                        ty: _,
                        distinct: _,
                        extra,
                        filter,
                        order,
                    } = a;
                    exprs.extend(arg.iter().chain(extra).chain(filter));
                    exprs.extend(order.iter().map(|(e, _, _)| e));
                }
            }
            None => {
                exprs.extend(&self.outputs);
                exprs.extend(self.srfs.iter().flat_map(|c| &c.args));
                exprs.extend(self.order.iter().filter_map(|(k, _, _)| match k {
                    SortKey::Expr(e) => Some(e),
                    SortKey::Output(_) => None,
                }));
                if let Distinct::On(keys) = &self.distinct {
                    exprs.extend(keys);
                }
            }
        }
        if exprs.iter().any(|e| e.has_subquery()) {
            return;
        }
        // Columns past the row's are the set-returning functions'.
        let width = self.source_names.len();
        let used: Vec<usize> = exprs
            .iter()
            .flat_map(|e| e.columns())
            .filter(|c| *c < width)
            .collect();
        self.source.prune(&used);
    }

    /// The planner's estimates of the rows read (past the WHERE clause), after grouping,
    /// after DISTINCT and after LIMIT. Groups are the product of the keys' distinct
    /// values when ANALYZE knows them all (`groups`); otherwise groups and distinct
    /// rows are PostgreSQL's guess without statistics (200 per key); at most the rows.
    fn estimates(&self) -> [f64; 4] {
        let read = self
            .input_limit
            .map_or(self.from_rows, |n| self.from_rows.min(n as f64))
            .max(1.0);
        let grouped = match &self.grouping {
            None => read,
            Some(g) if g.keys.is_empty() => 1.0,
            Some(g) => read.min(
                self.groups
                    .unwrap_or_else(|| 200f64.powi(g.keys.len().min(8) as i32)),
            ),
        };
        let distinct = match self.distinct {
            Distinct::None => grouped,
            _ => grouped.min(200.0),
        };
        [
            read,
            grouped,
            distinct,
            limited(distinct, self.limit, self.offset),
        ]
    }

    /// The planner's estimate of the rows the query gives.
    pub(crate) fn estimate(&self) -> f64 {
        self.estimates()[3]
    }

    fn explain_into(&self, out: &mut Explain, mut depth: usize) {
        let me = self as *const SelectPlan as usize;
        let [read, grouped, distinct, limited] = self.estimates();
        if self.limit.is_some() || self.offset > 0 {
            out.est(limited);
            out.node_at(depth, "Limit", (me, Upper::Limit as u8));
            depth += 1;
        }
        if self.distinct != Distinct::None {
            let name = if self.order.is_empty() {
                "HashAggregate"
            } else {
                "Unique"
            };
            out.est(distinct);
            out.node_at(depth, name, (me, Upper::Distinct as u8));
            depth += 1;
        }
        if !self.order.is_empty() {
            out.est(grouped);
            out.node_at(depth, "Sort", (me, Upper::Sort as u8));
            if let Some(s) = out.stats.and_then(|s| s.get(&(me, Upper::Sort as u8))) {
                if s.disk_bytes > 0 {
                    let line = format!(
                        "Sort Method: external merge  Disk: {}kB",
                        s.disk_bytes.div_ceil(1024)
                    );
                    out.detail(depth, &line);
                }
            }
            depth += 1;
        }
        if !self.windows.is_empty() {
            out.est(grouped);
            out.node_at(depth, "WindowAgg", (me, Upper::Window as u8));
            depth += 1;
        }
        if !self.srfs.is_empty() {
            out.est(grouped);
            out.node_at(depth, "ProjectSet", (me, Upper::ProjectSet as u8));
            depth += 1;
        }
        if let Some(g) = &self.grouping {
            let name = if g.keys.is_empty() {
                "Aggregate"
            } else {
                "HashAggregate"
            };
            out.est(grouped);
            out.node_at(depth, name, (me, Upper::Aggregate as u8));
            if let Some(s) = out.stats.and_then(|s| s.get(&(me, Upper::Aggregate as u8))) {
                if s.disk_bytes > 0 {
                    let line = format!(
                        "Batches: {}  Disk Usage: {}kB",
                        s.batches + 1,
                        s.disk_bytes.div_ceil(1024)
                    );
                    out.detail(depth, &line);
                }
            }
            depth += 1;
        }
        out.est(read);
        match &self.source {
            Source::Table(t) => {
                explain_access(
                    out,
                    &t.access,
                    &t.label(),
                    depth,
                    self.filter_text.as_deref(),
                    &self.source_names,
                    Some(self.source.key()),
                );
            }
            other => {
                if let (Some(_), Some(text)) = (&self.filter, &self.filter_text) {
                    if !matches!(other, Source::Join(_)) {
                        out.est(read);
                        out.node(depth, "Result");
                        out.detail(depth, &format!("Filter: ({text})"));
                        other.explain(out, depth + 1);
                        return;
                    }
                }
                let before = out.lines.len();
                other.explain(out, depth);
                // Conditions left for the joined rows belong to the top join.
                if let (Some(_), Some(text), Source::Join(_)) =
                    (&self.filter, &self.filter_text, other)
                {
                    let line = Explain::detail_line(depth, &format!("Filter: ({text})"));
                    out.lines.insert(before + 1, line);
                }
            }
        }
    }
}

fn types_sql(scope: &Scope, c: usize) -> SqlType {
    scope
        .columns
        .get(c)
        .map(|(_, t)| *t)
        .unwrap_or(SqlType::Null)
}

/// The lines of a table read: `Seq Scan on t` or `Index Scan [Backward] using i on t`,
/// with its index condition and whether a filter is checked on each row.
pub(crate) fn explain_access(
    out: &mut Explain,
    access: &Access,
    table: &str,
    depth: usize,
    filter: Option<&str>,
    names: &[String],
    key: Option<NodeKey>,
) {
    let node = |out: &mut Explain, text: &str| match key {
        Some(k) => out.node_at(depth, text, k),
        None => out.node(depth, text),
    };
    match access {
        Access::Scan => {
            node(out, &format!("Seq Scan on {table}"));
            if let Some(f) = filter {
                out.detail(depth, &format!("Filter: ({f})"));
            }
        }
        Access::Index(r) => {
            let dir = if r.backward { " Backward" } else { "" };
            node(
                out,
                &format!("Index Scan{dir} using {} on {table}", r.index),
            );
            if !r.cond.is_empty() {
                out.detail(depth, &format!("Index Cond: {}", r.cond_text(names)));
            }
            if let Some(f) = filter.filter(|_| r.residual) {
                out.detail(depth, &format!("Filter: ({f})"));
            }
        }
    }
}

impl SelectPlan {
    /// True when rows can be produced one at a time, as they are read (no grouping,
    /// sort or DISTINCT): INSERT ... SELECT streams such a query into the table.
    pub fn is_streaming(&self) -> bool {
        self.grouping.is_none()
            && self.order.is_empty()
            && self.distinct == Distinct::None
            && self.windows.is_empty()
            && self.srfs.is_empty()
    }

    /// What the executor's stream (`exec::RowStream`) needs of a plan that streams (no
    /// grouping, sort, DISTINCT, window, set-returning function, or access chosen per
    /// run); None for another.
    pub(crate) fn stream_parts(&self) -> Option<StreamParts<'_>> {
        if !self.is_streaming() || self.reaccess.is_some() || self.input_limit.is_some() {
            return None;
        }
        Some(StreamParts {
            source: &self.source,
            filter: self.filter.as_ref(),
            outputs: &self.outputs,
            offset: self.offset,
            limit: self.limit,
        })
    }

    /// For a streaming plan: the output row for one input row, or None if filtered out.
    pub fn project_one(&self, input: &[Value], cx: &mut EvalCtx) -> SqlResult<Option<Vec<Value>>> {
        let mut out = Vec::with_capacity(self.outputs.len());
        Ok(self.project_into(input, cx, &mut out)?.then_some(out))
    }

    /// As `project_one`, into `out` (cleared first): false if the filter drops the row.
    pub fn project_into(
        &self,
        input: &[Value],
        cx: &mut EvalCtx,
        out: &mut Vec<Value>,
    ) -> SqlResult<bool> {
        out.clear();
        if let Some(f) = &self.filter {
            if !f.test(input, cx)? {
                return Ok(false);
            }
        }
        for e in &self.outputs {
            out.push(e.eval(input, cx)?);
        }
        Ok(true)
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// True if an expression of the plan holds a subquery (such a plan reads tables as
    /// it evaluates).
    pub fn has_subquery(&self) -> bool {
        let mut exprs: Vec<&Expr> = self.outputs.iter().collect();
        exprs.extend(self.filter.iter());
        exprs.extend(self.having.iter());
        exprs.extend(self.windows.iter().flat_map(|w| w.exprs()));
        exprs.extend(self.srfs.iter().flat_map(|c| &c.args));
        exprs.iter().any(|e| e.has_subquery())
    }

    /// How two rows of a sort's runs order: each is the output values followed by the
    /// sort keys (ORDER BY's, then DISTINCT ON's).
    fn compare_run_rows(&self, a: &[Value], b: &[Value]) -> Ordering {
        let (w, n) = (self.outputs.len(), self.order.len());
        compare_keys(&self.order, &a[w..w + n], &b[w..w + n])
    }

    /// The first `limit` of sorted rows (with their sort keys), or under WITH TIES its
    /// count and the rows after that sort equal to the last of them.
    fn take_rows(
        &self,
        rows: impl Iterator<Item = (Vec<Value>, Vec<Value>)>,
        limit: usize,
    ) -> Vec<Vec<Value>> {
        let Some(count) = self.ties else {
            return rows.take(limit).map(|(r, _)| r).collect();
        };
        let n = self.order.len();
        let mut out = Vec::new();
        let mut last: Option<Vec<Value>> = None;
        for (row, keys) in rows {
            if out.len() as u64 >= count {
                match &last {
                    Some(l) if compare_keys(&self.order, l, &keys[..n]) == Ordering::Equal => {}
                    _ => break,
                }
            }
            last = Some(keys[..n].to_vec());
            out.push(row);
        }
        out
    }

    /// True if the query computes aggregates.
    pub(crate) fn has_aggregates(&self) -> bool {
        self.grouping.as_ref().is_some_and(|g| !g.aggs.is_empty())
    }

    /// Runs the query and returns its rows; the guard is checked per row.
    pub(crate) fn run(&self, cx: &mut EvalCtx) -> SqlResult<Vec<Vec<Value>>> {
        if self.limit == Some(0) {
            return Ok(Vec::new());
        }
        if let Some(re) = &self.reaccess {
            let mut plan = self.filled(cx.outer, true)?;
            plan.choose_access(&re.0, &re.1);
            return plan.run(cx);
        }
        let guard = match cx.run {
            Some(r) => r.guard,
            None => return Err(SqlError::new(code::INTERNAL, "a query run without a guard")),
        };
        let stats = cx.run.and_then(|r| r.stats.as_ref());
        let started = stats.map(|_| std::time::Instant::now());
        let mut run = Run::new(self, guard);
        // A bound left by an earlier run of this plan (a correlated subquery's) is not
        // this run's; it is gone once the run ends.
        let top = self.top_id.zip(cx.run);
        if let Some((id, r)) = top {
            r.top_bounds.borrow_mut().retain(|(i, _)| *i != id);
        }
        let produced = self.source.produce(cx, &mut |cx, row| run.feed(&row, cx));
        if let Some((id, r)) = top {
            r.top_bounds.borrow_mut().retain(|(i, _)| *i != id);
        }
        produced?;
        let emitted = run.emitted;
        let (rows, measured) = run.finish(cx)?;
        let groups = measured.groups;
        if let (Some(stats), Some(t)) = (stats, started) {
            // Each node over the FROM clause: its rows, and the time of the whole
            // SELECT (these nodes' time includes everything below them).
            let nanos = t.elapsed().as_nanos();
            let me = self as *const SelectPlan as usize;
            let out = rows.len() as u64;
            let counts = [
                (Upper::Limit, out),
                (Upper::Distinct, emitted.max(out)),
                (Upper::Sort, (out + self.offset).min(emitted.max(out))),
                (Upper::Window, emitted.max(out)),
                (
                    Upper::Aggregate,
                    groups.max(u64::from(self.grouping.is_some())),
                ),
            ];
            for (node, n) in counts {
                record(stats, (me, node as u8), n, 1, nanos);
            }
            let mut s = stats.borrow_mut();
            for (node, bytes, batches) in [
                (Upper::Sort, measured.sort_disk_bytes, 0),
                (
                    Upper::Aggregate,
                    measured.group_disk_bytes,
                    measured.batches,
                ),
            ] {
                let e = s.entry((me, node as u8)).or_default();
                e.disk_bytes += bytes;
                e.batches += batches;
            }
        }
        Ok(rows)
    }
}

/// Runs `f` with an evaluation context for a statement's reads: `reader`'s (none for
/// rows made before), `guard`'s checks, now() and settings.
pub(crate) fn with_run<R>(
    reader: Option<Reader<'_>>,
    rng: &mut walden::rng::SimRng,
    guard: &Guard,
    f: impl FnOnce(&mut EvalCtx) -> R,
) -> R {
    with_run_params(reader, &[], rng, guard, f)
}

/// As `with_run`, for a generic plan run with a prepared statement's values.
pub(crate) fn with_run_params<R>(
    reader: Option<Reader<'_>>,
    params: &[Value],
    rng: &mut walden::rng::SimRng,
    guard: &Guard,
    f: impl FnOnce(&mut EvalCtx) -> R,
) -> R {
    let mut rc = RunCx::new(reader, guard, &Subqueries);
    rc.params = params;
    with_run_cx(&rc, rng, guard, f)
}

/// As `with_run`, with a run context made by the caller (EXPLAIN ANALYZE's measures).
fn with_run_cx<R>(
    rc: &RunCx,
    rng: &mut walden::rng::SimRng,
    guard: &Guard,
    f: impl FnOnce(&mut EvalCtx) -> R,
) -> R {
    let mut cx = EvalCtx {
        rng,
        outer: &[],
        run: Some(rc),
        now_micros: guard.now_micros(),
        settings: guard.settings(),
        sequences: guard.sequences(),
        guard: Some(guard),
        folding: false,
    };
    f(&mut cx)
}

/// The nodes a SELECT puts over its FROM clause, as parts of their EXPLAIN ANALYZE key.
#[derive(Clone, Copy)]
enum Upper {
    Limit = 1,
    Distinct,
    Sort,
    Window,
    Aggregate,
    ProjectSet,
}

/// The most subquery results a statement keeps for reuse.
const SUBQUERY_CACHE: usize = 4096;

/// A value as a key that equal numbers share (1, 1.0 and 1::int8 alike).
fn norm_key(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Float8(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => {
            key_bytes(&[Value::Int8(*x as i64)], out)
        }
        other => key_bytes(std::slice::from_ref(other), out),
    }
}

/// True if `e` reads a parameter of its subquery (an outer value) or calls a volatile
/// function (which must run per outer row).
fn outer_or_volatile(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        found |= match x {
            Expr::Outer(..) | Expr::Subquery(_) => true,
            Expr::Call(f, ..) => f.is_volatile(),
            _ => false,
        }
    });
    found
}

impl SelectPlan {
    /// A plan of `source`'s rows as they are: no filter, grouping, select list, order
    /// or limit yet (`source_names` for EXPLAIN; `from_rows` the rows estimated).
    fn over(source: Source, source_names: Arc<[String]>, from_rows: f64) -> SelectPlan {
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

    /// The plan that reads a correlated subquery's rows by key, over one table without
    /// an index to look each outer row up with, when its only outer references are
    /// `column = outer value` conjuncts (of one type): EXISTS (`grouped` false) of any
    /// select list, or a scalar aggregate without GROUP BY (`grouped`), its keys then
    /// grouped. The plan (its key columns first), and the parameter each key column is
    /// compared with; None for any other shape.
    fn by_hash(&self, grouped: bool) -> Option<(SelectPlan, Vec<usize>)> {
        if self.having.is_some()
            || !self.windows.is_empty()
            || !self.srfs.is_empty()
            || self.limit.is_some()
            || self.offset > 0
            || self.input_limit.is_some()
            || self.ties.is_some()
            || self.outputs.iter().any(outer_or_volatile)
        {
            return None;
        }
        match (&self.grouping, grouped) {
            (None, false) => {}
            (Some(g), true)
                if g.keys.is_empty()
                    && self.outputs.len() == 1
                    && self.distinct == Distinct::None
                    && !g.aggs.iter().any(|a| {
                        let mut parts: Vec<&Expr> = Vec::new();
                        parts.extend(a.arg.iter());
                        parts.extend(a.extra.iter());
                        parts.extend(a.filter.iter());
                        parts.extend(a.order.iter().map(|(e, _, _)| e));
                        parts.into_iter().any(outer_or_volatile)
                    }) => {}
            _ => return None,
        }
        let Source::Table(t) = &self.source else {
            return None;
        };
        if !matches!(t.access, Access::Scan) || t.row_id {
            return None;
        }
        let mut conjs = Vec::new();
        if let Some(f) = &self.filter {
            f.and_parts(&mut conjs);
        }
        if let Some(f) = &t.filter {
            f.and_parts(&mut conjs);
        }
        let (mut keys, mut probe, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for c in conjs {
            if let Expr::Cmp(crate::expr::CmpOp::Eq, a, b) = c {
                match (a.as_ref(), b.as_ref()) {
                    (Expr::Column(col, t1), Expr::Outer(j, t2))
                    | (Expr::Outer(j, t2), Expr::Column(col, t1))
                        if t1 == t2 =>
                    {
                        keys.push(Expr::Column(*col, *t1));
                        probe.push(*j);
                        continue;
                    }
                    _ => {}
                }
            }
            if outer_or_volatile(c) {
                return None;
            }
            rest.push(c.clone());
        }
        if keys.is_empty() {
            return None;
        }
        // An index whose first column is a key column looks each outer row up (the
        // access chosen per run; one chosen once is not a scan, above): kept for that.
        if let Some(re) = &self.reaccess {
            let indexed = re.1.iter().any(|ix| {
                ix.columns.first().is_some_and(|c| {
                    keys.iter()
                        .any(|k| matches!(k, Expr::Column(col, _) if col == c))
                })
            });
            if indexed {
                return None;
            }
        }
        let mut read = t.clone();
        read.filter = None;
        read.filter_text = None;
        read.top = None;
        let filter = rest
            .into_iter()
            .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)));
        let n = keys.len();
        let mut columns: Vec<(String, SqlType)> =
            keys.iter().map(|k| ("key".to_string(), k.ty())).collect();
        let (grouping, outputs) = match &self.grouping {
            // Grouped by the keys: each group's row is its keys, then its aggregates.
            Some(g) => {
                let mut g = g.clone();
                g.keys = keys;
                let mut outputs: Vec<Expr> =
                    (0..n).map(|i| Expr::Column(i, columns[i].1)).collect();
                outputs.extend(
                    self.outputs
                        .iter()
                        .map(|e| e.clone().map_columns(&|i| i + n)),
                );
                columns.extend(self.columns.iter().cloned());
                (Some(g), outputs)
            }
            None => (None, keys),
        };
        let build = SelectPlan {
            filter,
            grouping,
            columns,
            outputs,
            ..SelectPlan::over(
                Source::Table(read),
                self.source_names.clone(),
                self.from_rows,
            )
        };
        Some((build, probe))
    }
}

/// The hash probe of a correlated EXISTS or scalar aggregate subquery, made at its
/// first evaluation in the statement (None: the subquery is not of that shape, and
/// runs per outer values).
fn hashed(s: &Subquery, cx: &mut EvalCtx) -> SqlResult<Option<Rc<Hashed>>> {
    let Some(run) = cx.run else {
        return Ok(None);
    };
    let id = plan_id(s);
    if let Some(h) = run.hashed.borrow().get(&id) {
        return Ok(h.clone());
    }
    let plan = plan_of(s)?;
    let shape = match (plan, s.kind, s.params.is_empty()) {
        (QueryPlan::Select(p), SubqueryKind::Exists, false) => p.by_hash(false),
        (QueryPlan::Select(p), SubqueryKind::Scalar, false) => p.by_hash(true),
        _ => None,
    };
    let made = match shape {
        None => None,
        Some((build, probe)) => {
            let mut inner = cx.nested(&[]);
            let rows = build.run(&mut inner)?;
            let n = probe.len();
            let mut buf = Vec::new();
            let mut key_of = |row: &[Value]| -> Option<Vec<u8>> {
                // A NULL key equals nothing.
                if row[..n].iter().any(|v| matches!(v, Value::Null)) {
                    return None;
                }
                buf.clear();
                for v in &row[..n] {
                    push_key(v, &mut buf);
                }
                Some(buf.clone())
            };
            let by = if s.kind == SubqueryKind::Exists {
                HashedBy::Exists(rows.iter().filter_map(|r| key_of(r)).collect())
            } else {
                let mut values = HashMap::with_capacity(rows.len());
                for row in rows {
                    if let Some(k) = key_of(&row) {
                        values.insert(k, row.into_iter().nth(n).unwrap_or(Value::Null));
                    }
                }
                // The aggregate over no rows: the subquery run with outer values no
                // key equals (NULLs).
                let nulls = vec![Value::Null; s.params.len()];
                inner.outer = &nulls;
                let empty = plan
                    .run(&mut inner)?
                    .into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next())
                    .unwrap_or(Value::Null);
                HashedBy::Scalar { values, empty }
            };
            Some(Rc::new(Hashed { probe, by }))
        }
    };
    run.hashed.borrow_mut().insert(id, made.clone());
    Ok(made)
}

/// The planner's runner of the subqueries expressions hold, handed to every run it makes
/// (`RunCx::subqueries`): evaluation reaches the planner only through it.
pub(crate) struct Subqueries;

impl SubqueryRunner for Subqueries {
    fn eval_subquery(&self, s: &Subquery, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
        eval_subquery(s, row, cx)
    }
}

impl SubqueryPlan for QueryPlan {
    fn columns(&self) -> &[(String, SqlType)] {
        QueryPlan::columns(self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A subquery's plan as the planner made it (`PlanCx::plan_subquery`).
fn plan_of(s: &Subquery) -> SqlResult<&QueryPlan> {
    s.plan
        .as_any()
        .downcast_ref::<QueryPlan>()
        .ok_or_else(|| SqlError::new(code::INTERNAL, "a subquery not planned as a query"))
}

/// A subquery's plan's address: what a run keeps its results by.
fn plan_id(s: &Subquery) -> usize {
    Arc::as_ptr(&s.plan).cast::<()>() as usize
}

/// Evaluates a subquery expression on `row` of the query holding it.
fn eval_subquery(s: &Subquery, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
    let Some(run) = cx.run else {
        return Err(SqlError::unsupported("a subquery here"));
    };
    let mut params = Vec::with_capacity(s.params.len());
    for p in &s.params {
        params.push(p.eval(row, cx)?);
    }
    if matches!(s.kind, SubqueryKind::Exists | SubqueryKind::Scalar) {
        if let Some(h) = hashed(s, cx)? {
            let mut key = Vec::new();
            let mut null = false;
            for &j in &h.probe {
                match params.get(j) {
                    Some(Value::Null) | None => null = true,
                    Some(v) => push_key(v, &mut key),
                }
            }
            return Ok(match &h.by {
                HashedBy::Exists(set) => Value::Bool(!null && set.contains(&key)),
                HashedBy::Scalar { values, empty } => match values.get(&key).filter(|_| !null) {
                    Some(v) => v.clone(),
                    None => empty.clone(),
                },
            });
        }
    }
    let lhs = match &s.lhs {
        Some(e) => Some(e.eval(row, cx)?),
        None => None,
    };
    let mut key = Vec::new();
    key_bytes(&params, &mut key);
    let id = (plan_id(s), key);
    let cached = run.cache.borrow().get(&id).cloned();
    let result = match cached {
        Some(r) => r,
        None => {
            let rows = {
                let mut inner = cx.nested(&params);
                plan_of(s)?.run(&mut inner)?
            };
            let r = Rc::new(match s.kind {
                SubqueryKind::Scalar => {
                    if rows.len() > 1 {
                        return Err(SqlError::new(
                            code::CARDINALITY_VIOLATION,
                            "more than one row returned by a subquery used as an expression",
                        ));
                    }
                    SubResult::Scalar(
                        rows.into_iter()
                            .next()
                            .and_then(|r| r.into_iter().next())
                            .unwrap_or(Value::Null),
                    )
                }
                SubqueryKind::Exists => SubResult::Exists(!rows.is_empty()),
                SubqueryKind::Array => {
                    let values: Vec<Value> = rows
                        .into_iter()
                        .map(|r| r.into_iter().next().unwrap_or(Value::Null))
                        .collect();
                    SubResult::Scalar(Value::Text(crate::array::array_text(&values)))
                }
                SubqueryKind::Any(op) | SubqueryKind::All(op) => {
                    let values: Vec<Value> = rows
                        .into_iter()
                        .map(|r| r.into_iter().next().unwrap_or(Value::Null))
                        .collect();
                    let has_null = values.iter().any(|v| matches!(v, Value::Null));
                    let set = (op == crate::expr::CmpOp::Eq).then(|| {
                        let mut buf = Vec::new();
                        values
                            .iter()
                            .filter(|v| !matches!(v, Value::Null))
                            .map(|v| {
                                norm_key(v, &mut buf);
                                buf.clone()
                            })
                            .collect()
                    });
                    SubResult::Values {
                        values,
                        set,
                        has_null,
                    }
                }
            });
            let mut cache = run.cache.borrow_mut();
            if cache.len() < SUBQUERY_CACHE {
                cache.insert(id, r.clone());
            }
            r
        }
    };
    Ok(match (&*result, s.kind) {
        (SubResult::Scalar(v), _) => v.clone(),
        (SubResult::Exists(b), _) => Value::Bool(*b),
        (
            SubResult::Values {
                values,
                set,
                has_null,
            },
            kind,
        ) => {
            let x = lhs.unwrap_or(Value::Null);
            let (op, all) = match kind {
                SubqueryKind::All(op) => (op, true),
                SubqueryKind::Any(op) => (op, false),
                _ => {
                    return Err(SqlError::new(
                        code::INTERNAL,
                        "a subquery of the wrong kind",
                    ))
                }
            };
            if values.is_empty() {
                return Ok(Value::Bool(all));
            }
            if matches!(x, Value::Null) {
                return Ok(Value::Null);
            }
            if let (Some(set), false) = (set, all) {
                let mut buf = Vec::new();
                norm_key(&x, &mut buf);
                return Ok(if set.contains(&buf) {
                    Value::Bool(true)
                } else if *has_null {
                    Value::Null
                } else {
                    Value::Bool(false)
                });
            }
            let mut saw_null = false;
            for y in values {
                match value::compare(&x, y) {
                    Some(o) => {
                        let holds = op.holds(o);
                        if holds && !all {
                            return Ok(Value::Bool(true));
                        }
                        if !holds && all {
                            return Ok(Value::Bool(false));
                        }
                    }
                    None => saw_null = true,
                }
            }
            if saw_null {
                Value::Null
            } else {
                Value::Bool(all)
            }
        }
    })
}

/// Reads rows through an index: each key range in turn (in key order, or reversed),
/// until `f` returns false.
/// Reads a table through an index as `r` plans, each row in a vector with room for
/// `capacity` values (the joined width, when a join widens it; 0: its own).
pub(crate) fn read_index(
    reader: &Reader,
    r: &access_path::IndexRead,
    capacity: usize,
    (params, outer): (&[Value], &[Value]),
    f: &mut dyn FnMut(walden::RowId, walden::Row) -> bool,
) -> SqlResult<()> {
    use std::ops::Bound;
    if r.generic {
        // A generic read: the key the run's values make, if they make one.
        let Some(key) = r.key_of(params, outer) else {
            return Ok(());
        };
        let key = Bound::Included(key.as_slice());
        reader.index_scan_shaped(&r.index, key, key, false, capacity, f)?;
        return Ok(());
    }
    let whole = [(Bound::Unbounded, Bound::Unbounded)];
    let ranges: &[access_path::KeyRange] = if r.ranges.is_empty() {
        &whole
    } else {
        &r.ranges
    };
    let order: Vec<&access_path::KeyRange> = if r.backward {
        ranges.iter().rev().collect()
    } else {
        ranges.iter().collect()
    };
    for (lo, hi) in order {
        let mut more = true;
        reader.index_scan_shaped(
            &r.index,
            lo.as_ref().map(|v| v.as_slice()),
            hi.as_ref().map(|v| v.as_slice()),
            r.backward,
            capacity,
            |id, row| {
                more = f(id, row);
                more
            },
        )?;
        if !more {
            break;
        }
    }
    Ok(())
}

fn grouped<'a>(
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

pub fn bind_condition(b: &mut Binder, e: &ast::Expr, what: &str) -> SqlResult<Expr> {
    b.boolean(e, what)
}

/// `ORDER BY n` (a position among `count` output columns): Some(n - 1); None for any
/// other expression.
fn order_position(e: &ast::Expr, count: usize) -> SqlResult<Option<usize>> {
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

/// A kept row's sort keys against another's: the ORDER BY list, each key ascending or
/// descending with its NULLs first or last.
pub(crate) fn compare_keys<K>(order: &[(K, bool, bool)], a: &[Value], b: &[Value]) -> Ordering {
    for (i, (_, desc, nulls_first)) in order.iter().enumerate() {
        let o = compare_key(&a[i], &b[i], *desc, *nulls_first);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Sorts kept rows (output values, sort keys) by their first `n` keys, stably. A
/// cancel request is honoured after it (the caller checks): a comparison that gave up
/// early would not be a total order, which Rust's sorts may panic on.
///
/// When every value of the first key is text, or every one an integer, the rows are
/// sorted through an 8-byte prefix of that key held beside each row's position (as
/// PostgreSQL's abbreviated keys): most comparisons are then of two integers in one
/// array, not of values reached through two pointers each. Prefixes order as their
/// values do (text compares bytewise, and no text holds a NUL byte), so rows whose
/// prefixes differ are in the right order; equal prefixes are compared in full, and
/// equal rows keep their order.
pub(crate) fn sort_kept<K>(
    rows: &mut Vec<(Vec<Value>, Vec<Value>)>,
    order: &[(K, bool, bool)],
    n: usize,
    guard: &Guard,
) {
    // Canceled already: left unsorted, the caller's check reports it.
    if guard.cancelled() {
        return;
    }
    let full = |a: &[Value], b: &[Value]| compare_keys(order, &a[..n], &b[..n]);
    #[derive(PartialEq)]
    enum Prefix {
        Text,
        Int,
    }
    let mut kind = None;
    let mut usable = n > 0 && rows.len() >= 64;
    if usable {
        for r in rows.iter() {
            let k = match r.1.first() {
                Some(Value::Null) => continue,
                Some(Value::Text(_)) => Prefix::Text,
                Some(Value::Int2(_) | Value::Int4(_) | Value::Int8(_)) => Prefix::Int,
                _ => {
                    usable = false;
                    break;
                }
            };
            match &kind {
                None => kind = Some(k),
                Some(seen) if *seen == k => {}
                Some(_) => {
                    usable = false;
                    break;
                }
            }
        }
    }
    if !usable {
        rows.sort_by(|a, b| full(&a.1, &b.1));
        return;
    }
    let (desc, nulls_first) = (order[0].1, order[0].2);
    // (class: NULLs before or after the values, prefix, position)
    let mut keyed: Vec<(u8, u64, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let p = match r.1.first() {
                Some(Value::Text(t)) => {
                    let mut b = [0u8; 8];
                    let len = t.len().min(8);
                    b[..len].copy_from_slice(&t.as_bytes()[..len]);
                    u64::from_be_bytes(b)
                }
                Some(v @ (Value::Int2(_) | Value::Int4(_) | Value::Int8(_))) => {
                    (as_i64(v).unwrap_or(0) as u64) ^ (1 << 63)
                }
                _ => return (if nulls_first { 0 } else { 2 }, 0, i),
            };
            (1, if desc { !p } else { p }, i)
        })
        .collect();
    keyed.sort_unstable_by(|a, b| {
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then_with(|| full(&rows[a.2].1, &rows[b.2].1).then(a.2.cmp(&b.2)))
    });
    let mut taken: Vec<Option<(Vec<Value>, Vec<Value>)>> = rows.drain(..).map(Some).collect();
    rows.extend(keyed.iter().filter_map(|k| taken[k.2].take()));
}

/// How two values of one sort key order, the key descending or not, NULLs first or
/// last.
pub(crate) fn compare_key(x: &Value, y: &Value, desc: bool, nulls_first: bool) -> Ordering {
    match (matches!(x, Value::Null), matches!(y, Value::Null)) {
        (true, true) => Ordering::Equal,
        (true, false) if nulls_first => Ordering::Less,
        (true, false) => Ordering::Greater,
        (false, true) if nulls_first => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) if desc => sort_cmp(x, y).reverse(),
        (false, false) => sort_cmp(x, y),
    }
}

/// A row kept by a top-N sort. Entries order by their sort keys and then by arrival, so
/// that the heap keeps of equal rows the ones that came first, as the stable full sort
/// puts them first.
struct TopEntry<'p> {
    keys: Vec<Value>,
    arrival: u64,
    row: Vec<Value>,
    /// The bytes charged to the guard for this entry.
    bytes: u64,
    order: &'p [(SortKey, bool, bool)],
}

impl Ord for TopEntry<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_keys(self.order, &self.keys, &other.keys).then(self.arrival.cmp(&other.arrival))
    }
}

impl PartialOrd for TopEntry<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for TopEntry<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for TopEntry<'_> {}

/// ORDER BY with LIMIT: the first `keep` rows of the sorted output (OFFSET plus LIMIT),
/// in a max-heap whose top is the last of them, so memory holds `keep` rows however
/// many come in.
struct TopN<'p> {
    order: &'p [(SortKey, bool, bool)],
    keep: usize,
    heap: BinaryHeap<TopEntry<'p>>,
    arrivals: u64,
    /// The bytes charged for the rows held.
    bytes: u64,
}

impl<'p> TopN<'p> {
    /// Whether `keep` rows are held already.
    fn full(&self) -> bool {
        self.heap.len() >= self.keep
    }

    /// Whether a row with these sort keys would be kept: it sorts before the last one
    /// kept (an equal one arrives later, so it sorts after).
    fn admits(&self, keys: &[Value]) -> bool {
        self.heap
            .peek()
            .is_none_or(|last| compare_keys(self.order, keys, &last.keys) == Ordering::Less)
    }

    /// Publishes the sort keys of the last row kept for the table read the top-N was
    /// pushed down to (`SelectPlan::push_top`).
    fn publish(&self, id: u64, run: &RunCx) {
        let Some(last) = self.heap.peek() else { return };
        let mut bounds = run.top_bounds.borrow_mut();
        match bounds.iter_mut().find(|(i, _)| *i == id) {
            Some((_, b)) => b.clone_from(&last.keys),
            None => bounds.push((id, last.keys.clone())),
        }
    }

    /// Offers a row; true when it was kept.
    fn offer(&mut self, row: Vec<Value>, keys: Vec<Value>, guard: &Guard) -> SqlResult<bool> {
        let entry = TopEntry {
            bytes: row_bytes(&row) + row_bytes(&keys) + std::mem::size_of::<TopEntry>() as u64,
            keys,
            arrival: self.arrivals,
            row,
            order: self.order,
        };
        self.arrivals += 1;
        if self.heap.len() < self.keep {
            guard.charge(entry.bytes)?;
            self.bytes += entry.bytes;
            self.heap.push(entry);
            return Ok(true);
        }
        // Later arrivals are larger, so a row equal to the last kept one stays out.
        if let Some(mut last) = self.heap.peek_mut() {
            if entry < *last {
                guard.release(last.bytes);
                guard.charge(entry.bytes)?;
                self.bytes = self.bytes - last.bytes + entry.bytes;
                *last = entry;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A top-N's rows in order. Entries are totally ordered (arrival breaks ties), so an
/// unstable sort of the heap's vector gives the heap's order, faster than the heap's
/// own sort (a heapsort) when it holds many rows.
fn sorted_entries(heap: BinaryHeap<TopEntry<'_>>) -> Vec<TopEntry<'_>> {
    let mut v = heap.into_vec();
    v.sort_unstable();
    v
}

/// The values of a generate_series source.
pub struct SeriesIter {
    next: i64,
    stop: i64,
    step: i64,
    ty: SqlType,
    /// A series of timestamps: the interval added to each to make the next.
    interval: Option<walden::Interval>,
    done: bool,
}

impl SeriesIter {
    pub fn new(source: &Source) -> SeriesIter {
        match source {
            Source::Series {
                start,
                stop,
                step,
                ty,
                interval,
            } => SeriesIter {
                next: *start,
                stop: *stop,
                step: *step,
                ty: *ty,
                interval: *interval,
                done: false,
            },
            _ => SeriesIter {
                next: 0,
                stop: 0,
                step: 1,
                ty: SqlType::Int4,
                interval: None,
                done: true,
            },
        }
    }
}

impl Iterator for SeriesIter {
    type Item = Value;
    fn next(&mut self) -> Option<Value> {
        if self.done
            || (self.step > 0 && self.next > self.stop)
            || (self.step < 0 && self.next < self.stop)
        {
            return None;
        }
        let v = self.next;
        if let Some(iv) = self.interval {
            // Past the end of the timestamp range the series ends.
            match crate::datetime::timestamp_add(v, iv) {
                Ok(n) if n != v => self.next = n,
                _ => self.done = true,
            }
            return Some(if self.ty == SqlType::Timestamp {
                Value::Timestamp(v)
            } else {
                Value::Timestamptz(v)
            });
        }
        match v.checked_add(self.step) {
            Some(n) => self.next = n,
            None => self.done = true,
        }
        value::int_value(v, self.ty).ok()
    }
}

#[derive(Clone)]
pub(crate) enum Acc {
    Count(i64),
    /// A sum of integers so far; true: the result is a numeric (sum of bigint).
    SumInt(Option<i128>, bool),
    SumFloat(Option<f64>),
    SumNumeric(Option<Numeric>),
    MinMax(Option<Value>, bool),
    /// avg: the sum so far (float8 for a float8 argument, else exact) and the count.
    AvgFloat(f64, i64),
    AvgNumeric(Numeric, i64),
    /// sum (false) or avg (true) of intervals: the sum so far and the count.
    Interval(Option<walden::Interval>, bool, i64),
    Text(Option<String>),
    /// bool_and (true) or bool_or (false) so far.
    Bool(Option<bool>, bool),
    /// jsonb_agg: the elements so far.
    JsonArray(Vec<walden::Json>),
    /// jsonb_object_agg: the pairs so far, in input order.
    JsonObject(Vec<(String, walden::Json)>),
    /// DISTINCT: the values seen, and the aggregate of the first of each.
    Distinct(HashSet<Vec<u8>>, Box<Acc>),
    /// ORDER BY inside the call: each value with its sort keys and delimiter, taken
    /// into the (empty) aggregate in order when the result is asked for.
    Ordered(Vec<OrderedValue>, Box<Acc>, Vec<((), bool, bool)>),
}

/// A value kept for an aggregate with ORDER BY: its sort keys, the value, the delimiter.
type OrderedValue = (Vec<Value>, Value, Option<Value>);

impl Acc {
    pub(crate) fn new(a: &AggCall) -> Acc {
        let acc = match (a.func, a.ty) {
            (AggFunc::Count | AggFunc::CountStar, _) => Acc::Count(0),
            (AggFunc::Sum, SqlType::Float8) => Acc::SumFloat(None),
            (AggFunc::Sum, SqlType::Numeric) if arg_is_integer(a) => Acc::SumInt(None, true),
            (AggFunc::Sum, SqlType::Numeric) => Acc::SumNumeric(None),
            (AggFunc::Sum | AggFunc::Avg, SqlType::Interval) => {
                Acc::Interval(None, a.func == AggFunc::Avg, 0)
            }
            (AggFunc::Sum, _) => Acc::SumInt(None, false),
            (AggFunc::Min, _) => Acc::MinMax(None, false),
            (AggFunc::Max, _) => Acc::MinMax(None, true),
            (AggFunc::Avg, SqlType::Float8) => Acc::AvgFloat(0.0, 0),
            (AggFunc::Avg, _) => Acc::AvgNumeric(Numeric::ZERO, 0),
            (AggFunc::StringAgg, _) => Acc::Text(None),
            (AggFunc::BoolAnd, _) => Acc::Bool(None, true),
            (AggFunc::BoolOr, _) => Acc::Bool(None, false),
            (AggFunc::JsonbAgg, _) => Acc::JsonArray(Vec::new()),
            (AggFunc::JsonbObjectAgg, _) => Acc::JsonObject(Vec::new()),
        };
        let acc = if a.distinct {
            Acc::Distinct(HashSet::new(), Box::new(acc))
        } else {
            acc
        };
        if a.order.is_empty() {
            acc
        } else {
            let dirs = a.order.iter().map(|(_, d, n)| ((), *d, *n)).collect();
            Acc::Ordered(Vec::new(), Box::new(acc), dirs)
        }
    }

    /// Adds a row's value; returns the bytes the accumulator grew by.
    pub(crate) fn add(&mut self, a: &AggCall, row: &[Value], cx: &mut EvalCtx) -> SqlResult<u64> {
        // count(*), and count and sum of an integer column, read the row where it lies.
        if a.filter.is_none() && a.extra.is_none() {
            let col = match &a.arg {
                Some(Expr::Column(i, _)) => row.get(*i),
                _ => None,
            };
            match (&mut *self, &a.arg, col) {
                (Acc::Count(n), None, _) => {
                    *n += 1;
                    return Ok(0);
                }
                (Acc::Count(n), Some(_), Some(v)) => {
                    *n += i64::from(!matches!(v, Value::Null));
                    return Ok(0);
                }
                (Acc::SumInt(s, _), Some(_), Some(v)) => {
                    if let Some(x) = as_i64(v) {
                        *s = Some(s.unwrap_or(0) + x as i128);
                    }
                    return Ok(0);
                }
                _ => {}
            }
        }
        if let Some(f) = &a.filter {
            if !f.test(row, cx)? {
                return Ok(0);
            }
        }
        let v = match &a.arg {
            Some(e) => e.eval(row, cx)?,
            None => Value::Bool(true),
        };
        // jsonb_agg and jsonb_object_agg keep NULLs (as JSON nulls); the rest skip them.
        let keeps_null = matches!(a.func, AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg);
        if matches!(v, Value::Null) && !keeps_null {
            return Ok(0);
        }
        let sep = match &a.extra {
            Some(e) => Some(e.eval(row, cx)?),
            None => None,
        };
        if let Acc::Ordered(kept, ..) = self {
            let mut keys = Vec::with_capacity(a.order.len());
            for (k, _, _) in &a.order {
                keys.push(k.eval(row, cx)?);
            }
            let grew = row_bytes(&keys) + row_bytes(std::slice::from_ref(&v)) + 16;
            kept.push((keys, v, sep));
            // The order is kept with the values: sorted when the result is asked for.
            return Ok(grew);
        }
        self.take(v, sep)
    }

    fn take(&mut self, v: Value, sep: Option<Value>) -> SqlResult<u64> {
        match self {
            Acc::Count(n) => *n += 1,
            Acc::SumInt(s, _) => *s = Some(s.unwrap_or(0) + as_i64(&v).unwrap_or(0) as i128),
            Acc::SumFloat(s) => *s = Some(float_sum(s.unwrap_or(0.0), as_f64(&v).unwrap_or(0.0))?),
            Acc::SumNumeric(s) => *s = Some(numeric_sum(s.unwrap_or(Numeric::ZERO), &v)?),
            Acc::Interval(sum, _, n) => {
                if let Value::Interval(iv) = v {
                    *sum = Some(match sum {
                        Some(s) => crate::datetime::interval_add(*s, iv)?,
                        None => iv,
                    });
                    *n += 1;
                }
            }
            Acc::MinMax(cur, max) => {
                let replace = match cur {
                    None => true,
                    Some(c) => {
                        let o = sort_cmp(&v, c);
                        // Of equal intervals ('1 mon', '30 days'), PostgreSQL's
                        // interval_larger and interval_smaller keep the later one.
                        (o == Ordering::Equal && matches!(v, Value::Interval(_)))
                            || if *max {
                                o == Ordering::Greater
                            } else {
                                o == Ordering::Less
                            }
                    }
                };
                if replace {
                    *cur = Some(v);
                }
            }
            Acc::AvgFloat(sum, n) => {
                *n += 1;
                *sum = float_sum(*sum, as_f64(&v).unwrap_or(0.0))?;
            }
            Acc::AvgNumeric(sum, n) => {
                *n += 1;
                *sum = numeric_sum(*sum, &v)?;
            }
            Acc::Text(cur) => {
                let Value::Text(t) = v else { return Ok(0) };
                let grew = t.len() as u64;
                let had = cur.as_ref().map_or(0, |s| s.len());
                let more = t.len()
                    + match (&sep, cur.is_some()) {
                        (Some(Value::Text(d)), true) => d.len(),
                        _ => 0,
                    };
                if had + more > walden::schema::MAX_VALUE_BYTES {
                    return Err(
                        SqlError::new(code::PROGRAM_LIMIT, "out of memory").with_detail(format!(
                        "Cannot enlarge string buffer containing {had} bytes by {more} more bytes."
                    )),
                    );
                }
                match cur {
                    None => *cur = Some(t),
                    Some(s) => {
                        if let Some(Value::Text(d)) = &sep {
                            s.push_str(d);
                        }
                        s.push_str(&t);
                    }
                }
                return Ok(grew);
            }
            Acc::Bool(cur, and) => {
                let b = matches!(v, Value::Bool(true));
                *cur = Some(match cur {
                    None => b,
                    Some(c) if *and => *c && b,
                    Some(c) => *c || b,
                });
            }
            Acc::Ordered(kept, ..) => kept.push((Vec::new(), v, sep)),
            Acc::JsonArray(items) => {
                let j = crate::jsonb::from_value(&v)?;
                let grew = j.to_bytes().len() as u64 + 32;
                items.push(j);
                return Ok(grew);
            }
            Acc::JsonObject(pairs) => {
                let key = match v {
                    Value::Null => {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER,
                            "field name must not be null",
                        ))
                    }
                    Value::Text(s) => s,
                    other => value::to_text(&other).unwrap_or_default(),
                };
                let j = crate::jsonb::from_value(&sep.unwrap_or(Value::Null))?;
                let grew = (key.len() + j.to_bytes().len()) as u64 + 32;
                pairs.push((key, j));
                return Ok(grew);
            }
            Acc::Distinct(seen, inner) => {
                let mut key = Vec::new();
                norm_key(&v, &mut key);
                if seen.contains(&key) {
                    return Ok(0);
                }
                let grew = key.len() as u64 + 32;
                seen.insert(key);
                return Ok(grew + inner.take(v, sep)?);
            }
        }
        Ok(0)
    }

    pub(crate) fn result(&self) -> SqlResult<Value> {
        Ok(match self {
            Acc::Count(n) => Value::Int8(*n),
            Acc::SumInt(None, _) | Acc::SumFloat(None) | Acc::SumNumeric(None) => Value::Null,
            Acc::SumInt(Some(s), false) => {
                Value::Int8(i64::try_from(*s).map_err(|_| SqlError::out_of_range("bigint"))?)
            }
            Acc::SumInt(Some(s), true) => {
                Value::Numeric(Numeric::new(*s, 0).map_err(value::numeric_error)?)
            }
            Acc::SumFloat(Some(s)) => Value::Float8(*s),
            Acc::SumNumeric(Some(s)) => Value::Numeric(*s),
            Acc::MinMax(v, _) => v.clone().unwrap_or(Value::Null),
            Acc::JsonArray(items) if items.is_empty() => Value::Null,
            Acc::JsonArray(items) => crate::jsonb::value(walden::Json::Array(items.clone())),
            Acc::JsonObject(pairs) if pairs.is_empty() => Value::Null,
            Acc::JsonObject(pairs) => crate::jsonb::value(walden::Json::object(pairs.clone())),
            Acc::Interval(None, _, _) => Value::Null,
            Acc::Interval(Some(s), false, _) => Value::Interval(*s),
            // PostgreSQL's interval_avg: the sum divided by the count.
            Acc::Interval(Some(s), true, n) => {
                Value::Interval(crate::datetime::interval_div(*s, *n as f64)?)
            }
            Acc::AvgFloat(_, 0) | Acc::AvgNumeric(_, 0) => Value::Null,
            Acc::AvgFloat(sum, n) => Value::Float8(sum / *n as f64),
            // PostgreSQL's numeric_avg: the sum divided by the count, at the scale of
            // numeric division.
            Acc::AvgNumeric(sum, n) => Value::Numeric(
                sum.checked_div(Numeric::from_i64(*n))
                    .map_err(value::numeric_error)?,
            ),
            Acc::Text(s) => s.clone().map_or(Value::Null, Value::Text),
            Acc::Bool(b, _) => b.map_or(Value::Null, Value::Bool),
            Acc::Distinct(_, inner) => inner.result()?,
            Acc::Ordered(kept, inner, dirs) => {
                let mut sorted: Vec<&OrderedValue> = kept.iter().collect();
                sorted.sort_by(|x, y| compare_keys(dirs, &x.0, &y.0));
                let mut acc = (**inner).clone();
                for (_, v, sep) in sorted {
                    acc.take(v.clone(), sep.clone())?;
                }
                acc.result()?
            }
        })
    }
}

/// Whether an aggregate's argument is an integer (sum(bigint) adds in an i128).
fn arg_is_integer(a: &AggCall) -> bool {
    a.arg.as_ref().is_some_and(|e| e.ty().is_integer())
}

/// A numeric sum with one more integer or numeric value.
fn numeric_sum(sum: Numeric, v: &Value) -> SqlResult<Numeric> {
    let x = value::as_numeric(v).unwrap_or(Numeric::ZERO);
    sum.checked_add(x).map_err(value::numeric_error)
}

/// A float8 sum as PostgreSQL adds: overflowing to an infinity is an error.
fn float_sum(sum: f64, x: f64) -> SqlResult<f64> {
    let r = sum + x;
    if r.is_infinite() && sum.is_finite() && x.is_finite() {
        return Err(value::float_overflow());
    }
    Ok(r)
}

/// A group-by key as bytes, so that equal values hash alike (1 as int4 and int8 too).
pub(crate) fn key_bytes(vals: &[Value], out: &mut Vec<u8>) {
    out.clear();
    for v in vals {
        push_key(v, out);
    }
}

/// Appends one value's key bytes (see `key_bytes`).
pub(crate) fn push_key(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(0),
        Value::Float8(x) => {
            out.push(2);
            let x = if *x == 0.0 { 0.0 } else { *x };
            out.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        Value::Text(s) => {
            out.push(3);
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bool(b) => out.extend_from_slice(&[4, *b as u8]),
        Value::Uuid(u) => {
            out.push(5);
            out.extend_from_slice(u);
        }
        // Dates and timestamps that compare equal hash alike (a date as its midnight),
        // and so do intervals of one span ('1 mon' and '30 days').
        Value::Date(_) | Value::Timestamp(_) | Value::Timestamptz(_) => {
            out.push(6);
            let micros = value::instant_micros(v).unwrap_or(0);
            out.extend_from_slice(&micros.to_le_bytes());
        }
        Value::Interval(iv) => {
            out.push(7);
            out.extend_from_slice(&iv.span_micros().to_le_bytes());
        }
        Value::Bytea(b) => {
            out.push(8);
            out.extend_from_slice(&(b.len() as u64).to_le_bytes());
            out.extend_from_slice(b);
        }
        // Numerics equal across scales (1.0, 1.00) hash alike, and an integral one as
        // the integer it equals.
        Value::Numeric(n) => match n.trunc(0).ok().filter(|t| t == n).and_then(|t| t.to_i64()) {
            Some(x) => {
                out.push(1);
                out.extend_from_slice(&x.to_le_bytes());
            }
            None => {
                let (m, exp) = n.normalized();
                out.push(9);
                out.extend_from_slice(&m.to_le_bytes());
                out.extend_from_slice(&exp.to_le_bytes());
            }
        },
        // Documents that compare equal (`1.0` and `1`) have one key.
        Value::Jsonb(j) => {
            out.push(10);
            let key = j.sort_key();
            out.extend_from_slice(&(key.len() as u64).to_le_bytes());
            out.extend_from_slice(&key);
        }
        other => {
            out.push(1);
            out.extend_from_slice(&as_i64(other).unwrap_or(0).to_le_bytes());
        }
    }
}

struct Group {
    keys: Vec<Value>,
    accs: Vec<Acc>,
    /// The bytes charged to the guard for this group.
    bytes: u64,
}

/// Where a run keeps its output rows.
enum Kept<'p> {
    /// In arrival order, with their sort keys when there is an ORDER BY.
    All(Vec<(Vec<Value>, Vec<Value>)>),
    /// ORDER BY with LIMIT.
    Top(TopN<'p>),
}

struct Run<'p, 'g> {
    plan: &'p SelectPlan,
    guard: &'g Guard,
    kept: Kept<'p>,
    /// Rows emitted so far (when there is no ORDER BY, to know when LIMIT is reached).
    emitted: u64,
    skipped: u64,
    /// Input rows that passed the filter.
    fed: u64,
    groups: Vec<Group>,
    /// Each group's number by its key's bytes (made at the first group).
    index: Option<crate::keytable::KeyTable>,
    key_buf: Vec<u8>,
    /// Output rows seen, for DISTINCT.
    seen: HashSet<Vec<u8>>,
    /// With window functions: the rows after grouping and HAVING, all of which the
    /// windows see before any is projected; and the bytes charged for them.
    pending: Vec<Vec<Value>>,
    pending_bytes: u64,
    /// A sort's rows past `work_mem`: sorted runs in temporary files; and the bytes
    /// charged for the rows `kept` holds now.
    runs: Option<crate::spill::Runs>,
    kept_bytes: u64,
    /// A grouping past `work_mem`: the bytes its groups hold; the rows of groups that
    /// did not fit, by partition of their key (this pass's), and partitions waiting
    /// for a pass of their own; and the pass (0 for the first).
    group_bytes: u64,
    parts: Vec<Option<crate::spill::Spool>>,
    waiting: Vec<(u32, crate::spill::Spool)>,
    pass: u32,
    /// In a partition's pass: its rows not yet grouped (they bound the groups still to
    /// come, so the partitions it needs in turn).
    pass_rows_left: Option<u64>,
    /// For EXPLAIN ANALYZE: groups made in all passes, partitions grouped, and bytes a
    /// grouping and a sort wrote to temporary files.
    groups_made: u64,
    batches: u64,
    group_disk_bytes: u64,
    sort_disk_bytes: u64,
}

/// What a run measured, for EXPLAIN ANALYZE.
struct Measured {
    groups: u64,
    batches: u64,
    group_disk_bytes: u64,
    sort_disk_bytes: u64,
}

/// Partitions a grouping past `work_mem` writes the rows of groups it has no room for
/// to, per pass (each is grouped in a pass of its own afterwards): at most this many,
/// and in the first pass, whose input's size is not known, this many.
const GROUP_PARTITIONS: usize = 32;
/// Passes after which a grouping keeps every group in memory (within
/// `statement_mem`): each pass splits its rows 32 ways, so this is reached only by
/// groups that never fit.
const MAX_GROUP_PASSES: u32 = 8;

/// Fewest rows a sort writes as a run (rows larger than `work_mem` each are written
/// this many at a time, not one per file).
const MIN_RUN_ROWS: usize = 16;

/// The partition of a group's key bytes in a pass: a different split in each pass.
fn group_partition(key: &[u8], pass: u32, partitions: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    pass.hash(&mut h);
    key.hash(&mut h);
    (h.finish() % partitions.max(1) as u64) as usize
}

impl<'p, 'g> Run<'p, 'g> {
    fn new(plan: &'p SelectPlan, guard: &'g Guard) -> Run<'p, 'g> {
        let kept = match plan.limit {
            Some(limit) if !plan.order.is_empty() && !matches!(plan.distinct, Distinct::On(_)) => {
                Kept::Top(TopN {
                    order: &plan.order,
                    keep: usize::try_from(limit.saturating_add(plan.offset)).unwrap_or(usize::MAX),
                    heap: BinaryHeap::new(),
                    arrivals: 0,
                    bytes: 0,
                })
            }
            _ => Kept::All(Vec::new()),
        };
        Run {
            plan,
            guard,
            kept,
            emitted: 0,
            skipped: 0,
            fed: 0,
            groups: Vec::new(),
            index: None,
            key_buf: Vec::new(),
            seen: HashSet::new(),
            pending: Vec::new(),
            pending_bytes: 0,
            runs: None,
            kept_bytes: 0,
            group_bytes: 0,
            parts: Vec::new(),
            waiting: Vec::new(),
            pass: 0,
            pass_rows_left: None,
            groups_made: 0,
            batches: 0,
            group_disk_bytes: 0,
            sort_disk_bytes: 0,
        }
    }

    /// The memory a sort or a grouping may use before it spills, and where to; None
    /// when the statement cannot spill.
    fn spill_budget(&self) -> Option<(u64, &'g walden::TempSpace)> {
        self.guard.spilling().map(|s| (s.work_mem_bytes, &s.temp))
    }

    /// True when the kept rows are sorted at the end (ORDER BY or DISTINCT ON).
    fn sorts(&self) -> bool {
        !self.plan.order.is_empty() || matches!(self.plan.distinct, Distinct::On(_))
    }

    /// Sorts the rows kept in memory and writes them as a run (each as its output
    /// values followed by its sort keys), giving their memory back.
    fn spill_sorted(&mut self) -> SqlResult<()> {
        let Some((_, temp)) = self.spill_budget() else {
            return Ok(());
        };
        let Kept::All(rows) = &mut self.kept else {
            return Ok(());
        };
        let mut rows = std::mem::take(rows);
        let guard = self.guard;
        let plan = self.plan;
        let n = plan.order.len();
        sort_kept(&mut rows, &plan.order, n, guard);
        guard.check()?;
        let runs = self
            .runs
            .get_or_insert_with(|| crate::spill::Runs::new(temp));
        runs.write_parts(rows)?;
        // Past the fan-in, the oldest runs become one now, so that a sort holds at most
        // that many files open however large it is.
        runs.compact(&|a, b| plan.compare_run_rows(a, b), &|| guard.check())?;
        guard.release(self.kept_bytes);
        self.kept_bytes = 0;
        Ok(())
    }

    /// Moves a top-N's rows, past `work_mem`, to a sort that spills: they are the
    /// first rows, in order, of those come so far.
    fn top_to_sort(&mut self) -> SqlResult<()> {
        let Kept::Top(top) = std::mem::replace(&mut self.kept, Kept::All(Vec::new())) else {
            return Ok(());
        };
        self.kept_bytes = top.bytes;
        self.kept = Kept::All(
            sorted_entries(top.heap)
                .into_iter()
                .map(|e| (e.row, e.keys))
                .collect(),
        );
        self.spill_sorted()
    }

    /// Takes one input row; false when no more rows are needed.
    fn feed(&mut self, input: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        if let Some(f) = &self.plan.filter {
            if !f.test(input, cx)? {
                return Ok(true);
            }
        }
        self.fed += 1;
        if self.plan.input_limit.is_some_and(|l| self.fed >= l) {
            self.take(input, cx)?;
            return Ok(false);
        }
        self.take(input, cx)
    }

    /// Groups or emits a row that passed the filter.
    fn take(&mut self, input: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        self.take_keyed(input, None, cx)
    }

    /// As `take`, the grouping keys' values `given` (a row read back from a partition:
    /// its keys were evaluated once, when it first came, as a volatile key must be).
    fn take_keyed(
        &mut self,
        input: &[Value],
        given: Option<&[Value]>,
        cx: &mut EvalCtx,
    ) -> SqlResult<bool> {
        if let Some(g) = &self.plan.grouping {
            // The key's bytes, from the row's columns where they lie; other keys are
            // evaluated once, and kept only if they make a new group.
            self.key_buf.clear();
            let mut evaluated = Vec::new();
            for (j, k) in g.keys.iter().enumerate() {
                match (given, k) {
                    (Some(values), _) => {
                        let v = values.get(j).cloned().unwrap_or(Value::Null);
                        push_key(&v, &mut self.key_buf);
                        evaluated.push(v);
                    }
                    (None, Expr::Column(i, _)) if *i < input.len() => {
                        push_key(&input[*i], &mut self.key_buf)
                    }
                    (None, _) => {
                        let v = k.eval(input, cx)?;
                        push_key(&v, &mut self.key_buf);
                        evaluated.push(v);
                    }
                }
            }
            // Every key's value, from where it lies or as evaluated.
            let key_values = |evaluated: Vec<Value>| -> Vec<Value> {
                if given.is_some() {
                    return evaluated;
                }
                let mut evaluated = evaluated.into_iter();
                g.keys
                    .iter()
                    .map(|k| match k {
                        Expr::Column(i, _) if *i < input.len() => input[*i].clone(),
                        _ => evaluated.next().unwrap_or(Value::Null),
                    })
                    .collect()
            };
            // Without GROUP BY there is one group.
            let found = if g.keys.is_empty() {
                (!self.groups.is_empty()).then_some(0)
            } else {
                self.index.as_ref().and_then(|t| t.first(&self.key_buf))
            };
            // No room for another group: the row waits in its key's partition.
            let spill_to = match self.spill_budget() {
                Some((budget, temp))
                    if found.is_none()
                        && !g.keys.is_empty()
                        && !self.groups.is_empty()
                        && self.pass < MAX_GROUP_PASSES
                        && self.group_bytes >= budget =>
                {
                    Some(temp)
                }
                _ => None,
            };
            if let Some(temp) = spill_to {
                if self.parts.is_empty() {
                    // As many partitions as the rows left would need if each made a
                    // group, at as many groups per partition as this pass holds.
                    let n = match self.pass_rows_left {
                        Some(left) => {
                            usize::try_from((left + 1).div_ceil(self.groups.len() as u64))
                                .unwrap_or(GROUP_PARTITIONS)
                                .clamp(1, GROUP_PARTITIONS)
                        }
                        None => GROUP_PARTITIONS,
                    };
                    self.parts.resize_with(n, || None);
                }
                let p = group_partition(&self.key_buf, self.pass, self.parts.len());
                self.parts[p]
                    .get_or_insert_with(|| crate::spill::Spool::new(temp))
                    .push_parts(input, &key_values(evaluated))?;
                return Ok(true);
            }
            let i = match found {
                Some(i) => i,
                None => {
                    let keys = key_values(evaluated);
                    // The group, its accumulators, and its key bytes in the index (with
                    // the index's own slot).
                    let bytes = row_bytes(&keys)
                        + (std::mem::size_of::<Group>()
                            + g.aggs.len() * std::mem::size_of::<Acc>()
                            + self.key_buf.len()
                            + std::mem::size_of::<(Vec<u8>, usize)>()
                            + 1) as u64;
                    self.guard.charge(bytes)?;
                    self.group_bytes += bytes;
                    self.groups_made += 1;
                    self.groups.push(Group {
                        keys,
                        accs: g.aggs.iter().map(Acc::new).collect(),
                        bytes,
                    });
                    self.index
                        .get_or_insert_with(|| crate::keytable::KeyTable::with_capacity(16))
                        .insert(&self.key_buf, self.groups.len() - 1);
                    self.groups.len() - 1
                }
            };
            let group = &mut self.groups[i];
            let mut grew = 0;
            for (acc, call) in group.accs.iter_mut().zip(&g.aggs) {
                grew += acc.add(call, input, cx)?;
            }
            if grew > 0 {
                group.bytes += grew;
                self.group_bytes += grew;
                self.guard.charge(grew)?;
            }
            return Ok(true);
        }
        self.stage(input, cx)
    }

    /// Hands a row after grouping and HAVING on: projected at once, or kept for the
    /// window functions.
    fn stage(&mut self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        if self.plan.windows.is_empty() {
            return self.emit(row, cx);
        }
        let bytes = row_bytes(row) + std::mem::size_of::<Vec<Value>>() as u64;
        self.guard.charge(bytes)?;
        self.pending_bytes += bytes;
        self.pending.push(row.to_vec());
        Ok(true)
    }

    /// Projects a (possibly grouped) row and keeps it: each row its set-returning
    /// functions make, if it has any.
    fn emit(&mut self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        let plan = self.plan;
        if plan.srfs.is_empty() {
            return self.emit_row(row, cx);
        }
        crate::srf::expand(&plan.srfs, row, cx, &mut |r, cx| self.emit_row(r, cx))
    }

    fn emit_row(&mut self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        let plan = self.plan;
        let immediate = plan.order.is_empty() && !matches!(plan.distinct, Distinct::On(_));
        if immediate && plan.distinct == Distinct::None && self.skipped < plan.offset {
            self.skipped += 1;
            return Ok(true);
        }
        // ORDER BY … LIMIT: a row that sorts after the last one kept is dropped before
        // it is projected (most rows, once the first `keep` are in).
        if let Kept::Top(top) = &self.kept {
            if plan.distinct == Distinct::None && top.full() {
                let mut keys = Vec::with_capacity(plan.order.len());
                for (k, _, _) in &plan.order {
                    keys.push(match k {
                        SortKey::Output(i) => plan.outputs[*i].eval(row, cx)?,
                        SortKey::Expr(e) => e.eval(row, cx)?,
                    });
                }
                if !top.admits(&keys) {
                    return Ok(true);
                }
            }
        }
        let mut out = Vec::with_capacity(plan.outputs.len());
        for e in &plan.outputs {
            out.push(e.eval(row, cx)?);
        }
        if plan.distinct == Distinct::All {
            key_bytes(&out, &mut self.key_buf);
            if self.seen.contains(&self.key_buf) {
                return Ok(true);
            }
            self.guard.charge(self.key_buf.len() as u64 + 48)?;
            self.seen.insert(self.key_buf.clone());
            if immediate && self.skipped < plan.offset {
                self.skipped += 1;
                return Ok(true);
            }
        }
        let mut keys = Vec::with_capacity(plan.order.len());
        for (k, _, _) in &plan.order {
            keys.push(match k {
                SortKey::Output(i) => out[*i].clone(),
                SortKey::Expr(e) => e.eval(row, cx)?,
            });
        }
        if let Distinct::On(on) = &plan.distinct {
            for e in on {
                keys.push(e.eval(row, cx)?);
            }
        }
        let budget = self.spill_budget().map(|(b, _)| b);
        match &mut self.kept {
            Kept::Top(top) => {
                if top.offer(out, keys, self.guard)? && top.full() {
                    if let (Some(id), Some(run)) = (plan.top_id, cx.run) {
                        top.publish(id, run);
                    }
                }
                // Only while it fills: a full heap holds just the rows it returns, as
                // PostgreSQL's bounded sort keeps its heap whatever its size.
                if budget.is_some_and(|b| top.bytes > b) && !top.full() {
                    self.top_to_sort()?;
                }
            }
            Kept::All(rows) => {
                let slot = std::mem::size_of::<(Vec<Value>, Vec<Value>)>() as u64;
                let bytes = row_bytes(&out) + row_bytes(&keys) + slot;
                self.guard.charge(bytes)?;
                rows.push((out, keys));
                self.kept_bytes += bytes;
                if budget.is_some_and(|b| self.kept_bytes > b)
                    && rows.len() >= MIN_RUN_ROWS
                    && self.sorts()
                {
                    self.spill_sorted()?;
                }
            }
        }
        self.emitted += 1;
        let full = immediate && plan.limit.is_some_and(|l| self.emitted >= l);
        Ok(!full)
    }

    /// What the run measured, once finished.
    fn measured(&self) -> Measured {
        Measured {
            groups: self.groups_made,
            batches: self.batches,
            group_disk_bytes: self.group_disk_bytes,
            sort_disk_bytes: self.sort_disk_bytes,
        }
    }

    fn finish(mut self, cx: &mut EvalCtx) -> SqlResult<(Vec<Vec<Value>>, Measured)> {
        let plan = self.plan;
        if let Some(g) = &plan.grouping {
            // An aggregate over no rows without GROUP BY still gives one row.
            if self.groups.is_empty() && g.keys.is_empty() {
                self.groups.push(Group {
                    keys: Vec::new(),
                    accs: g.aggs.iter().map(Acc::new).collect(),
                    bytes: 0,
                });
            }
            'passes: loop {
                self.index = None;
                // Partitions this pass wrote wait for passes of their own.
                for mut part in std::mem::take(&mut self.parts).into_iter().flatten() {
                    part.flush()?;
                    self.group_disk_bytes += part.bytes();
                    self.waiting.push((self.pass + 1, part));
                }
                for group in std::mem::take(&mut self.groups) {
                    self.guard.check()?;
                    // The group becomes an output row, charged in its turn.
                    self.guard.release(group.bytes);
                    let mut row = group.keys;
                    for acc in &group.accs {
                        row.push(acc.result()?);
                    }
                    if let Some(h) = &plan.having {
                        if !h.test(&row, cx)? {
                            continue;
                        }
                    }
                    if !self.stage(&row, cx)? {
                        break 'passes;
                    }
                }
                // The next partition: its rows grouped as they first came.
                let Some((pass, part)) = self.waiting.pop() else {
                    break;
                };
                self.pass = pass;
                self.batches += 1;
                self.group_bytes = 0;
                self.index = None;
                self.pass_rows_left = Some(part.rows());
                let mut rows = part.into_reader()?;
                let n = plan.grouping.as_ref().map_or(0, |g| g.keys.len());
                while let Some(row) = rows.next_row()? {
                    self.guard.check()?;
                    if let Some(left) = &mut self.pass_rows_left {
                        *left = left.saturating_sub(1);
                    }
                    // The row as it came, then its keys' values.
                    let (input, keys) = row.split_at(row.len().saturating_sub(n));
                    self.take_keyed(input, Some(keys), cx)?;
                }
            }
            self.waiting.clear();
        }
        if !plan.windows.is_empty() {
            let rows = std::mem::take(&mut self.pending);
            let rows = windowing::compute(rows, &plan.windows, cx, self.guard)?;
            for row in rows {
                if !self.emit(&row, cx)? {
                    break;
                }
            }
            self.guard.release(self.pending_bytes);
        }
        let skip = usize::try_from(plan.offset).unwrap_or(usize::MAX);
        let limit = plan
            .limit
            .or(plan.ties.filter(|&t| t == 0))
            .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        if self.runs.is_some() {
            return self.merge_runs(skip, limit);
        }
        let measured = self.measured();
        let rows: Vec<Vec<Value>> = match self.kept {
            Kept::Top(top) => {
                // Ascending: the heap's order is the output order.
                let sorted = sorted_entries(top.heap);
                sorted.into_iter().skip(skip).map(|e| e.row).collect()
            }
            Kept::All(mut rows) if matches!(plan.distinct, Distinct::On(_)) => {
                let guard = self.guard;
                let n = plan.order.len();
                sort_kept(&mut rows, &plan.order, n, guard);
                guard.check()?;
                let mut seen = HashSet::new();
                let mut buf = Vec::new();
                let kept = rows
                    .into_iter()
                    .filter(|(_, keys)| {
                        key_bytes(&keys[n..], &mut buf);
                        seen.insert(buf.clone())
                    })
                    .skip(skip);
                plan.take_rows(kept, limit)
            }
            Kept::All(mut rows) if !plan.order.is_empty() => {
                let guard = self.guard;
                // A cancel request makes the rest of the comparisons cheap; it is
                // reported once the sort is over.
                sort_kept(&mut rows, &plan.order, plan.order.len(), guard);
                guard.check()?;
                plan.take_rows(rows.into_iter().skip(skip), limit)
            }
            // Without ORDER BY, OFFSET was applied as rows came; grouped emission may
            // have passed LIMIT.
            Kept::All(rows) => rows.into_iter().take(limit).map(|(r, _)| r).collect(),
        };
        Ok((rows, measured))
    }

    /// The end of a sort that wrote runs: the rows still in memory sorted, merged with
    /// the runs, DISTINCT ON, OFFSET and LIMIT applied as they come out. The rows
    /// returned are charged as they come; the sort's own memory goes at the end.
    fn merge_runs(mut self, skip: usize, limit: usize) -> SqlResult<(Vec<Vec<Value>>, Measured)> {
        let plan = self.plan;
        let guard = self.guard;
        let width = plan.outputs.len();
        let n = plan.order.len();
        let Some(runs) = self.runs.take() else {
            return Ok((Vec::new(), self.measured()));
        };
        let mut memory = match std::mem::replace(&mut self.kept, Kept::All(Vec::new())) {
            Kept::All(rows) => rows,
            Kept::Top(_) => Vec::new(),
        };
        sort_kept(&mut memory, &plan.order, n, guard);
        guard.check()?;
        let memory: Vec<Vec<Value>> = memory
            .into_iter()
            .map(|(mut out, keys)| {
                out.extend(keys);
                out
            })
            .collect();
        let cmp = |a: &[Value], b: &[Value]| plan.compare_run_rows(a, b);
        let check = || guard.check();
        let (mut merged, disk_bytes) = runs.merge(memory, &cmp, &check)?;
        self.sort_disk_bytes = disk_bytes;
        let mut seen = HashSet::new();
        let mut buf = Vec::new();
        let (mut skipped, mut out) = (0, Vec::new());
        // WITH TIES: the sort keys of the last row of the count, once it is reached.
        let mut tie: Option<Vec<Value>> = None;
        while out.len() < limit {
            let Some(mut row) = merged.next_row()? else {
                break;
            };
            guard.check()?;
            if let Some(t) = &tie {
                if compare_keys(&plan.order, t, &row[width..width + n]) != Ordering::Equal {
                    break;
                }
            }
            if matches!(plan.distinct, Distinct::On(_)) {
                key_bytes(&row[width + n..], &mut buf);
                if !seen.insert(buf.clone()) {
                    continue;
                }
                guard.charge(buf.len() as u64 + 48)?;
            }
            if skipped < skip {
                skipped += 1;
                continue;
            }
            if tie.is_none() && plan.ties.is_some_and(|t| out.len() as u64 + 1 >= t) {
                tie = Some(row[width..width + n].to_vec());
            }
            row.truncate(width);
            guard.charge(row_bytes(&row) + 24)?;
            out.push(row);
        }
        guard.release(self.kept_bytes);
        Ok((out, self.measured()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorting through prefixes gives what a plain stable sort gives: text sharing
    /// long prefixes, integers of every width and sign, NULLs first or last, descending
    /// keys, ties on the first key broken by the second and then by arrival.
    #[test]
    fn prefix_sorts_give_the_plain_stable_order() {
        let cancel = crate::guard::CancelHandle::default();
        let guard = Guard::start(&cancel, u64::MAX);
        let mut rng = walden::rng::SimRng::new(7);
        let words = [
            "",
            "a",
            "ab",
            "abcdefgh",
            "abcdefghi",
            "abcdefgh\u{e9}",
            "b",
            "zz",
        ];
        for case in 0..200 {
            let ints = case % 2 == 0;
            let rows: Vec<(Vec<Value>, Vec<Value>)> = (0..300)
                .map(|i| {
                    let first = match rng.below(10) {
                        0 => Value::Null,
                        _ if ints => match rng.below(3) {
                            0 => Value::Int2(rng.below(7) as i16 - 3),
                            1 => Value::Int4(rng.below(7) as i32 - 3),
                            _ => Value::Int8(if rng.chance(10) {
                                i64::MIN
                            } else {
                                rng.below(7) as i64 - 3
                            }),
                        },
                        _ => {
                            let w = words[rng.below(words.len() as u64) as usize];
                            Value::Text(format!("{w}{}", "x".repeat(rng.below(2) as usize)))
                        }
                    };
                    let second = Value::Int4(rng.below(3) as i32);
                    (vec![Value::Int4(i)], vec![first, second])
                })
                .collect();
            let order = [
                ((), case % 3 == 0, case % 5 == 0),
                ((), case % 7 == 0, false),
            ];
            let mut plain = rows.clone();
            plain.sort_by(|a, b| compare_keys(&order, &a.1, &b.1));
            let mut prefixed = rows;
            sort_kept(&mut prefixed, &order, 2, &guard);
            assert_eq!(prefixed, plain, "case {case}");
        }
    }
}
