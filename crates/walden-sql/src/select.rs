//! SELECT: planning a query over one table, `generate_series`, or nothing, and running
//! it — filter, grouping and aggregates, projection, ORDER BY, OFFSET and LIMIT.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use sqlparser::ast::{
    self, FunctionArg, FunctionArgExpr, GroupByExpr, LimitClause, OrderByKind, OrderBySort,
    SelectItem, SetExpr, Spanned, TableFactor,
};
use walden::{Transaction, Value};

use crate::access_path::{self, Access, IndexMeta, Wanted};
use crate::bind::{object_name, output_name, AggCall, AggFunc, Binder, Grouping, Scope};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::guard::{row_bytes, Guard};
use crate::types::SqlType;
use crate::value::{self, as_f64, as_i64, sort_cmp};

/// Where a query's rows come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// No FROM: one row with no columns.
    Nothing,
    Series {
        start: i64,
        stop: i64,
        step: i64,
        ty: SqlType,
    },
    Table(String),
}

#[derive(Debug, Clone, PartialEq)]
enum SortKey {
    Output(usize),
    Expr(Expr),
}

#[derive(Debug)]
pub struct SelectPlan {
    pub source: Source,
    /// How a table source is read.
    pub access: Access,
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
    /// Names and types of the result columns.
    pub columns: Vec<(String, SqlType)>,
    order: Vec<(SortKey, bool, bool)>,
    limit: Option<u64>,
    offset: u64,
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
}

impl CachedSelect {
    /// Binds `query` with its parameters of `types`; None when it does not bind that way
    /// (a parameter where only a constant may stand, or whose type the context must
    /// decide: the statement is then bound with its values written in, each run).
    pub fn new(
        query: &ast::Query,
        types: &[SqlType],
        catalog: &mut dyn Catalog,
    ) -> Option<CachedSelect> {
        let (plan, scope) =
            crate::bind::with_param_types(types, || SelectPlan::bound(query, catalog)).ok()?;
        let indexes = match &plan.source {
            Source::Table(name) => catalog.indexes(name),
            _ => Vec::new(),
        };
        Some(CachedSelect {
            plan,
            scope,
            indexes,
        })
    }

    /// The plan for these values.
    pub fn instantiate(&self, values: &[Value]) -> SqlResult<SelectPlan> {
        let mut plan = self.plan.with_params(values)?;
        if !self.indexes.is_empty() {
            plan.choose_access(&self.scope, &self.indexes);
        }
        Ok(plan)
    }
}

/// Resolves a table name to its scope (the caller knows the catalog).
pub trait Catalog {
    fn table_scope(&mut self, name: &str) -> SqlResult<Scope>;
    /// The table's indexes (none by default).
    fn indexes(&mut self, _table: &str) -> Vec<IndexMeta> {
        Vec::new()
    }
}

fn const_int(e: &ast::Expr, what: &str) -> SqlResult<i64> {
    let b = Binder::plain(&Scope::default()).bind(e)?;
    match b {
        Expr::Const(v) if as_i64(&v).is_some() => Ok(as_i64(&v).unwrap_or(0)),
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

impl SelectPlan {
    pub fn plan(query: &ast::Query, catalog: &mut dyn Catalog) -> SqlResult<SelectPlan> {
        let (mut plan, scope) = SelectPlan::bound(query, catalog)?;
        if let Source::Table(name) = &plan.source {
            let indexes = catalog.indexes(name);
            if !indexes.is_empty() {
                plan.choose_access(&scope, &indexes);
            }
        }
        Ok(plan)
    }

    /// The plan before its access path is chosen (a sequential scan), with the scope
    /// of its source.
    fn bound(query: &ast::Query, catalog: &mut dyn Catalog) -> SqlResult<(SelectPlan, Scope)> {
        if query.with.is_some() {
            return Err(SqlError::unsupported("WITH"));
        }
        if query.fetch.is_some() || !query.locks.is_empty() {
            return Err(SqlError::unsupported("FETCH or FOR UPDATE"));
        }
        let select = match query.body.as_ref() {
            SetExpr::Select(s) => s,
            SetExpr::Query(q) => return SelectPlan::bound(q, catalog),
            SetExpr::SetOperation { op, .. } => {
                return Err(SqlError::unsupported(op.to_string().to_uppercase()))
            }
            SetExpr::Values(_) => return Err(SqlError::unsupported("VALUES as a query")),
            _ => return Err(SqlError::unsupported("this kind of query")),
        };
        if select.distinct.is_some() {
            return Err(SqlError::unsupported("SELECT DISTINCT"));
        }
        if select.into.is_some() {
            return Err(SqlError::unsupported("SELECT INTO"));
        }
        let (source, scope) = plan_from(&select.from, catalog)?;
        let filter = match &select.selection {
            Some(w) => Some(bind_condition(&mut Binder::plain(&scope), w, "WHERE")?),
            None => None,
        };
        // Expand the select list. (Borrowed: cloning a deep expression takes 4 KiB of
        // stack per level.)
        let mut items: Vec<(Cow<ast::Expr>, String)> = Vec::new();
        for item in &select.projection {
            match item {
                SelectItem::UnnamedExpr(e) => items.push((Cow::Borrowed(e), output_name(e))),
                SelectItem::ExprWithAlias { expr, alias } => {
                    items.push((Cow::Borrowed(expr), crate::bind::ident_name(alias)))
                }
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                    if scope.columns.is_empty() {
                        return Err(SqlError::syntax(
                            "SELECT * with no tables specified is not valid",
                        ));
                    }
                    for (name, _) in &scope.columns {
                        let column = ast::Expr::Identifier(ast::Ident::new(name));
                        items.push((Cow::Owned(column), name.clone()));
                    }
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the select item {}",
                        crate::error::clip(&other.to_string())
                    )))
                }
            }
        }
        let group_exprs: Vec<Cow<ast::Expr>> = match &select.group_by {
            GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => exprs
                .iter()
                .map(|e| match e {
                    ast::Expr::Value(v) if matches!(v.value, ast::Value::Number(..)) => {
                        let i = const_int(e, "GROUP BY")?;
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
                    _ => Ok(Cow::Borrowed(e)),
                })
                .collect::<SqlResult<_>>()?,
            _ => return Err(SqlError::unsupported("GROUP BY ALL or ROLLUP")),
        };
        let mut plain_outputs = Vec::new();
        let mut needs_grouping = !group_exprs.is_empty() || select.having.is_some();
        if !needs_grouping {
            for (e, _) in &items {
                match Binder::plain(&scope).bind(e) {
                    Ok(b) => plain_outputs.push(b),
                    Err(err) if is_aggregate_error(&err) => {
                        needs_grouping = true;
                        break;
                    }
                    Err(err) => return Err(err),
                }
            }
        }
        let mut plan = SelectPlan {
            source,
            access: Access::Scan,
            filter_text: select.selection.as_ref().map(|w| w.to_string().into()),
            source_names: scope.columns.iter().map(|(n, _)| n.clone()).collect(),
            input_limit: None,
            filter,
            grouping: None,
            having: None,
            outputs: Vec::new(),
            columns: Vec::new(),
            order: Vec::new(),
            limit: None,
            offset: 0,
        };
        let mut grouping = Grouping::default();
        if needs_grouping {
            for g in &group_exprs {
                grouping.keys.push(Binder::plain(&scope).bind(g)?);
            }
            for (e, _) in &items {
                plan.outputs.push(grouped(&scope, &mut grouping).bind(e)?);
            }
            if let Some(h) = &select.having {
                plan.having = Some(bind_condition(
                    &mut grouped(&scope, &mut grouping),
                    h,
                    "HAVING",
                )?);
            }
        } else {
            plan.outputs = plain_outputs;
        }
        plan.columns = items
            .iter()
            .zip(&plan.outputs)
            .map(|((_, name), e)| (name.clone(), e.ty()))
            .collect();
        if let Some(ob) = &query.order_by {
            let OrderByKind::Expressions(list) = &ob.kind else {
                return Err(SqlError::unsupported("ORDER BY ALL"));
            };
            for o in list {
                let key = order_key(
                    &o.expr,
                    &items,
                    &scope,
                    needs_grouping.then_some(&mut grouping),
                )?;
                let desc = match &o.options.sort {
                    None | Some(OrderBySort::Asc) => false,
                    Some(OrderBySort::Desc) => true,
                    Some(OrderBySort::Using(_)) => {
                        return Err(SqlError::unsupported("ORDER BY USING"))
                    }
                };
                // PostgreSQL: NULLs are larger than any value.
                let nulls_first = o.options.nulls_first.unwrap_or(desc);
                plan.order.push((key, desc, nulls_first));
            }
        }
        if needs_grouping {
            plan.grouping = Some(grouping);
        }
        match &query.limit_clause {
            None => {}
            Some(LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) if limit_by.is_empty() => {
                if let Some(l) = limit {
                    if !matches!(l, ast::Expr::Value(v) if v.value == ast::Value::Null) {
                        let n = const_int(l, "LIMIT")?;
                        if n < 0 {
                            return Err(SqlError::new(
                                code::INVALID_PARAMETER,
                                "LIMIT must not be negative",
                            ));
                        }
                        plan.limit = Some(n as u64);
                    }
                }
                if let Some(o) = offset {
                    let n = const_int(&o.value, "OFFSET")?;
                    if n < 0 {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER,
                            "OFFSET must not be negative",
                        ));
                    }
                    plan.offset = n as u64;
                }
            }
            Some(_) => return Err(SqlError::unsupported("this LIMIT syntax")),
        }
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
        let order: Option<Vec<(usize, bool, bool)>> = if let Some((c, max)) = extreme {
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
            few: extreme.is_some() || (self.limit.is_some() && self.grouping.is_none()),
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
        self.access = access;
    }

    /// The plan with each parameter replaced by its value (a cached plan of a prepared
    /// statement, before its access path is chosen for these values).
    fn with_params(&self, values: &[Value]) -> SqlResult<SelectPlan> {
        let fill = |e: &Expr| e.clone().with_params(values);
        let grouping = match &self.grouping {
            None => None,
            Some(g) => {
                let mut g = g.clone();
                for k in &mut g.keys {
                    *k = std::mem::replace(k, Expr::Const(Value::Null)).with_params(values)?;
                }
                for a in &mut g.aggs {
                    a.arg = a.arg.take().map(|e| e.with_params(values)).transpose()?;
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
        Ok(SelectPlan {
            source: self.source.clone(),
            access: self.access.clone(),
            filter_text: self.filter_text.clone(),
            source_names: self.source_names.clone(),
            input_limit: self.input_limit,
            filter: self.filter.as_ref().map(fill).transpose()?,
            grouping,
            having: self.having.as_ref().map(fill).transpose()?,
            outputs: self.outputs.iter().map(fill).collect::<SqlResult<_>>()?,
            columns: self.columns.clone(),
            order,
            limit: self.limit,
            offset: self.offset,
        })
    }

    /// The plan as EXPLAIN shows it, one line per row, PostgreSQL's node names.
    pub fn explain(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut depth = 0usize;
        let mut node = |lines: &mut Vec<String>, text: String| {
            if depth == 0 {
                lines.push(text);
            } else {
                lines.push(format!("{}->  {text}", " ".repeat(depth * 6 - 4)));
            }
            depth += 1;
        };
        if self.limit.is_some() || self.offset > 0 {
            node(&mut lines, "Limit".into());
        }
        if !self.order.is_empty() {
            node(&mut lines, "Sort".into());
        }
        if let Some(g) = &self.grouping {
            node(
                &mut lines,
                if g.keys.is_empty() {
                    "Aggregate"
                } else {
                    "HashAggregate"
                }
                .into(),
            );
        }
        match &self.source {
            Source::Nothing => node(&mut lines, "Result".into()),
            Source::Series { .. } => node(&mut lines, "Function Scan on generate_series".into()),
            Source::Table(name) => {
                explain_access(
                    &mut lines,
                    &self.access,
                    name,
                    depth,
                    self.filter_text.as_deref(),
                    &self.source_names,
                );
            }
        }
        lines
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
    lines: &mut Vec<String>,
    access: &Access,
    table: &str,
    depth: usize,
    filter: Option<&str>,
    names: &[String],
) {
    let (head, detail) = if depth == 0 {
        (String::new(), "  ".to_string())
    } else {
        (
            format!("{}->  ", " ".repeat(depth * 6 - 4)),
            " ".repeat(depth * 6 + 2),
        )
    };
    match access {
        Access::Scan => {
            lines.push(format!("{head}Seq Scan on {table}"));
            if let Some(f) = filter {
                lines.push(format!("{detail}Filter: ({f})"));
            }
        }
        Access::Index(r) => {
            let dir = if r.backward { " Backward" } else { "" };
            lines.push(format!(
                "{head}Index Scan{dir} using {} on {table}",
                r.index
            ));
            if !r.cond.is_empty() {
                lines.push(format!("{detail}Index Cond: {}", r.cond_text(names)));
            }
            if let Some(f) = filter.filter(|_| r.residual) {
                lines.push(format!("{detail}Filter: ({f})"));
            }
        }
    }
}

impl SelectPlan {
    /// True when rows can be produced one at a time, as they are read (no grouping and
    /// no sort): INSERT ... SELECT streams such a query into the table.
    pub fn is_streaming(&self) -> bool {
        self.grouping.is_none() && self.order.is_empty()
    }

    /// For a streaming plan: the output row for one input row, or None if filtered out.
    pub fn project_one(&self, input: &[Value], cx: &mut EvalCtx) -> SqlResult<Option<Vec<Value>>> {
        if let Some(f) = &self.filter {
            if !f.test(input, cx)? {
                return Ok(None);
            }
        }
        let mut out = Vec::with_capacity(self.outputs.len());
        for e in &self.outputs {
            out.push(e.eval(input, cx)?);
        }
        Ok(Some(out))
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Runs the query and returns its rows; `guard` is checked per row.
    pub(crate) fn run(
        &self,
        txn: Option<&mut Transaction>,
        cx: &mut EvalCtx,
        guard: &Guard,
    ) -> SqlResult<Vec<Vec<Value>>> {
        if self.limit == Some(0) {
            return Ok(Vec::new());
        }
        let mut run = Run::new(self, guard);
        match &self.source {
            Source::Nothing => {
                run.feed(&[], cx)?;
            }
            Source::Series { .. } => {
                for v in SeriesIter::new(&self.source) {
                    if !run.feed(std::slice::from_ref(&v), cx)? {
                        break;
                    }
                }
            }
            Source::Table(name) => {
                let txn = txn.ok_or_else(|| {
                    SqlError::new(code::INTERNAL, "no transaction for a table scan")
                })?;
                let mut failed = None;
                let mut f = |_, row: walden::Row| match run.feed(&row, cx) {
                    Ok(more) => more,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                };
                match &self.access {
                    Access::Scan => txn.scan_with(name, f)?,
                    Access::Index(r) => read_index(txn, r, &mut f)?,
                }
                if let Some(e) = failed {
                    return Err(e);
                }
            }
        }
        run.finish(cx)
    }
}

/// Reads rows through an index: each key range in turn (in key order, or reversed),
/// until `f` returns false.
pub(crate) fn read_index(
    txn: &mut Transaction,
    r: &access_path::IndexRead,
    f: &mut dyn FnMut(walden::RowId, walden::Row) -> bool,
) -> SqlResult<()> {
    let whole = [(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)];
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
        txn.index_scan_in(
            &r.index,
            lo.as_ref().map(|v| v.as_slice()),
            hi.as_ref().map(|v| v.as_slice()),
            r.backward,
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

fn grouped<'a>(scope: &'a Scope, grouping: &'a mut Grouping) -> Binder<'a> {
    Binder {
        scope,
        grouping: Some(grouping),
    }
}

pub fn bind_condition(b: &mut Binder, e: &ast::Expr, what: &str) -> SqlResult<Expr> {
    b.boolean(e, what)
}

fn order_key(
    e: &ast::Expr,
    items: &[(Cow<ast::Expr>, String)],
    scope: &Scope,
    grouping: Option<&mut Grouping>,
) -> SqlResult<SortKey> {
    if let ast::Expr::Value(v) = e {
        if matches!(v.value, ast::Value::Number(..)) {
            let i = const_int(e, "ORDER BY")?;
            if i < 1 || i as usize > items.len() {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER,
                    format!("ORDER BY position {i} is not in select list"),
                )
                .at(e.span().start));
            }
            return Ok(SortKey::Output(i as usize - 1));
        }
    }
    if let ast::Expr::Identifier(id) = e {
        let name = crate::bind::ident_name(id);
        let hits: Vec<usize> = items
            .iter()
            .enumerate()
            .filter(|(_, (_, n))| *n == name)
            .map(|(i, _)| i)
            .collect();
        if hits.len() == 1 && !scope.columns.iter().any(|(c, _)| *c == name) {
            return Ok(SortKey::Output(hits[0]));
        }
    }
    let mut b = Binder { scope, grouping };
    Ok(SortKey::Expr(b.bind(e)?))
}

fn plan_from(
    from: &[ast::TableWithJoins],
    catalog: &mut dyn Catalog,
) -> SqlResult<(Source, Scope)> {
    let twj = match from {
        [] => return Ok((Source::Nothing, Scope::default())),
        [one] => one,
        [_, second, ..] => {
            return Err(SqlError::unsupported("more than one table in FROM")
                .at(second.relation.span().start))
        }
    };
    if let Some(j) = twj.joins.first() {
        return Err(SqlError::unsupported("JOIN").at(j.relation.span().start));
    }
    let TableFactor::Table {
        name, alias, args, ..
    } = &twj.relation
    else {
        return Err(SqlError::unsupported("a subquery in FROM").at(twj.relation.span().start));
    };
    crate::bind::check_table_reference(&twj.relation)?;
    let table = object_name(name)?;
    let alias_name = alias.as_ref().map(|a| crate::bind::ident_name(&a.name));
    if let Some(args) = args {
        if table != "generate_series" {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {table} does not exist"),
            )
            .at(name.span().start));
        }
        let mut vals = Vec::new();
        for a in &args.args {
            let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
                return Err(SqlError::unsupported("this generate_series argument"));
            };
            let b = Binder::plain(&Scope::default()).bind(e)?;
            match b {
                Expr::Const(v) if as_i64(&v).is_some() => {
                    vals.push((as_i64(&v).unwrap_or(0), value::type_of(&v)))
                }
                _ => {
                    return Err(SqlError::unsupported(
                        "generate_series over anything but integer constants",
                    )
                    .at(e.span().start))
                }
            }
        }
        let (start, stop, step) = match vals.as_slice() {
            [a, b] => (a.0, b.0, 1),
            [a, b, c] => (a.0, b.0, c.0),
            _ => {
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    "generate_series takes 2 or 3 arguments",
                ))
            }
        };
        if step == 0 {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                "step size cannot equal zero",
            ));
        }
        let ty = vals.iter().map(|v| v.1).fold(SqlType::Int4, SqlType::wider);
        let column = alias
            .as_ref()
            .and_then(|a| a.columns.first())
            .map(|c| crate::bind::ident_name(&c.name))
            .or_else(|| alias_name.clone())
            .unwrap_or_else(|| "generate_series".into());
        let scope = Scope {
            table: Some(alias_name.unwrap_or_else(|| "generate_series".into())),
            columns: vec![(column, ty)],
        };
        return Ok((
            Source::Series {
                start,
                stop,
                step,
                ty,
            },
            scope,
        ));
    }
    let mut scope = catalog
        .table_scope(&table)
        .map_err(|e| e.at(name.span().start))?;
    scope.table = Some(alias_name.unwrap_or_else(|| table.clone()));
    Ok((Source::Table(table), scope))
}

/// A kept row's sort keys against another's: the ORDER BY list, each key ascending or
/// descending with its NULLs first or last.
fn compare_keys(order: &[(SortKey, bool, bool)], a: &[Value], b: &[Value]) -> Ordering {
    for (i, (_, desc, nulls_first)) in order.iter().enumerate() {
        let (x, y) = (&a[i], &b[i]);
        let o = match (matches!(x, Value::Null), matches!(y, Value::Null)) {
            (true, true) => Ordering::Equal,
            (true, false) if *nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if *nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) if *desc => sort_cmp(x, y).reverse(),
            (false, false) => sort_cmp(x, y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
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
}

impl<'p> TopN<'p> {
    fn offer(&mut self, row: Vec<Value>, keys: Vec<Value>, guard: &Guard) -> SqlResult<()> {
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
            self.heap.push(entry);
            return Ok(());
        }
        // Later arrivals are larger, so a row equal to the last kept one stays out.
        if let Some(mut last) = self.heap.peek_mut() {
            if entry < *last {
                guard.release(last.bytes);
                guard.charge(entry.bytes)?;
                *last = entry;
            }
        }
        Ok(())
    }
}

/// The values of a generate_series source.
pub struct SeriesIter {
    next: i64,
    stop: i64,
    step: i64,
    ty: SqlType,
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
            } => SeriesIter {
                next: *start,
                stop: *stop,
                step: *step,
                ty: *ty,
                done: false,
            },
            _ => SeriesIter {
                next: 0,
                stop: 0,
                step: 1,
                ty: SqlType::Int4,
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
        match v.checked_add(self.step) {
            Some(n) => self.next = n,
            None => self.done = true,
        }
        value::int_value(v, self.ty).ok()
    }
}

enum Acc {
    Count(i64),
    SumInt(Option<i128>),
    SumFloat(Option<f64>),
    MinMax(Option<Value>, bool),
    Avg(f64, i128, bool, i64),
}

impl Acc {
    fn new(a: &AggCall) -> Acc {
        match (a.func, a.ty) {
            (AggFunc::Count | AggFunc::CountStar, _) => Acc::Count(0),
            (AggFunc::Sum, SqlType::Float8 | SqlType::Numeric) => Acc::SumFloat(None),
            (AggFunc::Sum, _) => Acc::SumInt(None),
            (AggFunc::Min, _) => Acc::MinMax(None, false),
            (AggFunc::Max, _) => Acc::MinMax(None, true),
            (AggFunc::Avg, _) => Acc::Avg(0.0, 0, false, 0),
        }
    }

    fn add(&mut self, a: &AggCall, row: &[Value], cx: &mut EvalCtx) -> SqlResult<()> {
        let v = match &a.arg {
            Some(e) => e.eval(row, cx)?,
            None => Value::Bool(true),
        };
        if matches!(v, Value::Null) {
            return Ok(());
        }
        match self {
            Acc::Count(n) => *n += 1,
            Acc::SumInt(s) => *s = Some(s.unwrap_or(0) + as_i64(&v).unwrap_or(0) as i128),
            Acc::SumFloat(s) => *s = Some(float_sum(s.unwrap_or(0.0), as_f64(&v).unwrap_or(0.0))?),
            Acc::MinMax(cur, max) => {
                let replace = match cur {
                    None => true,
                    Some(c) => {
                        let o = sort_cmp(&v, c);
                        if *max {
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
            Acc::Avg(fsum, isum, is_float, n) => {
                *n += 1;
                match v {
                    Value::Float8(x) => {
                        *is_float = true;
                        *fsum = float_sum(*fsum, x)?;
                    }
                    other => *isum += as_i64(&other).unwrap_or(0) as i128,
                }
            }
        }
        Ok(())
    }

    fn result(&self) -> SqlResult<Value> {
        Ok(match self {
            Acc::Count(n) => Value::Int8(*n),
            Acc::SumInt(None) | Acc::SumFloat(None) => Value::Null,
            Acc::SumInt(Some(s)) => {
                Value::Int8(i64::try_from(*s).map_err(|_| SqlError::out_of_range("bigint"))?)
            }
            Acc::SumFloat(Some(s)) => Value::Float8(*s),
            Acc::MinMax(v, _) => v.clone().unwrap_or(Value::Null),
            Acc::Avg(_, _, _, 0) => Value::Null,
            Acc::Avg(f, i, is_float, n) => {
                let total = if *is_float { *f } else { *i as f64 };
                Value::Float8(total / *n as f64)
            }
        })
    }
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
            other => {
                out.push(1);
                out.extend_from_slice(&as_i64(other).unwrap_or(0).to_le_bytes());
            }
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
    index: HashMap<Vec<u8>, usize>,
    key_buf: Vec<u8>,
}

impl<'p, 'g> Run<'p, 'g> {
    fn new(plan: &'p SelectPlan, guard: &'g Guard) -> Run<'p, 'g> {
        let kept = match plan.limit {
            Some(limit) if !plan.order.is_empty() => Kept::Top(TopN {
                order: &plan.order,
                keep: usize::try_from(limit.saturating_add(plan.offset)).unwrap_or(usize::MAX),
                heap: BinaryHeap::new(),
                arrivals: 0,
            }),
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
            index: HashMap::new(),
            key_buf: Vec::new(),
        }
    }

    /// Takes one input row; false when no more rows are needed.
    fn feed(&mut self, input: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        self.guard.check()?;
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
        if let Some(g) = &self.plan.grouping {
            let mut keys = Vec::with_capacity(g.keys.len());
            for k in &g.keys {
                keys.push(k.eval(input, cx)?);
            }
            key_bytes(&keys, &mut self.key_buf);
            let i = match self.index.get(&self.key_buf) {
                Some(&i) => i,
                None => {
                    // The group, its accumulators, and its key bytes in the index (with
                    // the index's own slot).
                    let bytes = row_bytes(&keys)
                        + (std::mem::size_of::<Group>()
                            + g.aggs.len() * std::mem::size_of::<Acc>()
                            + self.key_buf.len()
                            + std::mem::size_of::<(Vec<u8>, usize)>()
                            + 1) as u64;
                    self.guard.charge(bytes)?;
                    self.groups.push(Group {
                        keys,
                        accs: g.aggs.iter().map(Acc::new).collect(),
                        bytes,
                    });
                    self.index
                        .insert(self.key_buf.clone(), self.groups.len() - 1);
                    self.groups.len() - 1
                }
            };
            let group = &mut self.groups[i];
            for (acc, call) in group.accs.iter_mut().zip(&g.aggs) {
                acc.add(call, input, cx)?;
            }
            return Ok(true);
        }
        self.emit(input, cx)
    }

    /// Projects a (possibly grouped) row and keeps it.
    fn emit(&mut self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        let plan = self.plan;
        if plan.order.is_empty() && self.skipped < plan.offset {
            self.skipped += 1;
            return Ok(true);
        }
        let mut out = Vec::with_capacity(plan.outputs.len());
        for e in &plan.outputs {
            out.push(e.eval(row, cx)?);
        }
        let mut keys = Vec::with_capacity(plan.order.len());
        for (k, _, _) in &plan.order {
            keys.push(match k {
                SortKey::Output(i) => out[*i].clone(),
                SortKey::Expr(e) => e.eval(row, cx)?,
            });
        }
        match &mut self.kept {
            Kept::Top(top) => top.offer(out, keys, self.guard)?,
            Kept::All(rows) => {
                let slot = std::mem::size_of::<(Vec<Value>, Vec<Value>)>() as u64;
                self.guard
                    .charge(row_bytes(&out) + row_bytes(&keys) + slot)?;
                rows.push((out, keys));
            }
        }
        self.emitted += 1;
        let full = plan.order.is_empty() && plan.limit.is_some_and(|l| self.emitted >= l);
        Ok(!full)
    }

    fn finish(mut self, cx: &mut EvalCtx) -> SqlResult<Vec<Vec<Value>>> {
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
            self.index = HashMap::new();
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
                if !self.emit(&row, cx)? {
                    break;
                }
            }
        }
        let skip = usize::try_from(plan.offset).unwrap_or(usize::MAX);
        let limit = plan
            .limit
            .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        let rows: Vec<Vec<Value>> = match self.kept {
            Kept::Top(top) => {
                // Ascending: the heap's order is the output order.
                let sorted = top.heap.into_sorted_vec();
                sorted.into_iter().skip(skip).map(|e| e.row).collect()
            }
            Kept::All(mut rows) if !plan.order.is_empty() => {
                let guard = self.guard;
                // A cancel request makes the rest of the comparisons cheap; it is
                // reported once the sort is over.
                rows.sort_by(|a, b| {
                    if guard.cancelled() {
                        return Ordering::Equal;
                    }
                    compare_keys(&plan.order, &a.1, &b.1)
                });
                guard.check()?;
                rows.into_iter()
                    .skip(skip)
                    .take(limit)
                    .map(|(r, _)| r)
                    .collect()
            }
            // Without ORDER BY, OFFSET was applied as rows came; grouped emission may
            // have passed LIMIT.
            Kept::All(rows) => rows.into_iter().take(limit).map(|(r, _)| r).collect(),
        };
        Ok(rows)
    }
}
