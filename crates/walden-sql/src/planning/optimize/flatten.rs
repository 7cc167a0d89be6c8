//! Subquery flattening, PostgreSQL's `pull_up_sublinks`: an AND-ed part of a SELECT
//! block's WHERE clause that is `x IN (SELECT e FROM …)`, `EXISTS (SELECT … WHERE
//! inner = outer …)` or `NOT EXISTS (…)` becomes a join of the block's FROM clause with
//! the subquery's distinct keys — a semi-join (`JOIN (SELECT DISTINCT …) ON …`) or an
//! anti-join (`LEFT JOIN (SELECT DISTINCT …) ON … WHERE key IS NULL`) — so the join
//! planner chooses how to meet them (a hash join, or an index nested loop from the keys
//! into the outer table) instead of running the subquery once per outer row.
//!
//! The rewrite is exact where it applies: a WHERE part filters rows whether it is false
//! or NULL, so `x IN (…)` keeps a row exactly when some key equals x; the keys are
//! distinct, so no row is doubled; a key that met a row is never NULL, so a LEFT JOIN
//! leaves NULL only where none did. It applies only to a top-level SELECT block (not a
//! subquery's, whose names may reach further out) without `SELECT *` (the keys would
//! show), whose FROM clause is one item (an anti-join's ON clause must see all of it),
//! and to subqueries that are one plain SELECT over tables of the catalog, without
//! grouping, aggregates, windows, DISTINCT ON, ORDER BY, LIMIT, WITH or subqueries of
//! their own; a correlated one must refer outward only through `inner = outer`
//! AND-ed parts. NOT IN is never flattened (a NULL key makes it NULL for every row).
//!
//! EXISTS and NOT EXISTS are flattened when the outer rows are many against the inner
//! table (`worth_it`): one index probe per outer row beats reading the inner table
//! whole when the outer rows are few.

use std::ops::ControlFlow;

use sqlparser::ast::{self, visit_expressions, BinaryOperator, Expr, SelectItem, SetExpr};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::catalog::{ident_name, Catalog};

/// An index probe costs about this many rows read in a scan.
const PROBE_ROWS: f64 = 20.0;

/// What the subqueries' names are looked up in: the catalog, and whether a name is a
/// WITH query's (not a table read here).
pub(crate) struct Names<'a> {
    pub catalog: &'a dyn Catalog,
    pub is_cte: &'a dyn Fn(&str) -> bool,
}

/// The top-level SELECT block with its flattenable WHERE parts made joins, or None
/// when it has none. `outer_rows` is the planner's estimate of the rows its FROM clause
/// gives through its WHERE clause.
pub(crate) fn flatten(select: &ast::Select, outer_rows: f64, cx: &Names) -> Option<ast::Select> {
    if select.from.len() != 1 {
        return None;
    }
    if select
        .projection
        .iter()
        .any(|i| matches!(i, SelectItem::Wildcard(_)))
    {
        return None;
    }
    let selection = select.selection.as_ref()?;
    let mut parts = Vec::new();
    and_parts(selection, &mut parts);
    let mut kept: Vec<Expr> = Vec::new();
    let mut joins: Vec<ast::Join> = Vec::new();
    for part in parts {
        let alias = format!("__sj{}", joins.len());
        match semi_join(part, &alias, outer_rows, cx) {
            Some((join, filter)) => {
                joins.push(join);
                kept.extend(filter);
            }
            None => kept.push(part.clone()),
        }
    }
    if joins.is_empty() {
        return None;
    }
    let mut out = select.clone();
    out.from[0].joins.extend(joins);
    out.selection = kept.into_iter().reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::And,
        right: Box::new(b),
    });
    Some(out)
}

/// The AND-ed parts of a condition, a part's parentheses looked through.
fn and_parts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    let mut parts = Vec::new();
    crate::from::split_and(e, &mut parts);
    for mut p in parts {
        while let Expr::Nested(inner) = p {
            p = inner;
        }
        match p {
            Expr::BinaryOp {
                op: BinaryOperator::And,
                ..
            } => and_parts(p, out),
            p => out.push(p),
        }
    }
}

/// The join (named `alias`) a WHERE part becomes, and what stays in the WHERE clause
/// for it (an anti-join's `key IS NULL`).
fn semi_join(
    part: &Expr,
    alias: &str,
    outer_rows: f64,
    cx: &Names,
) -> Option<(ast::Join, Option<Expr>)> {
    let (query, anti, in_expr) = match part {
        Expr::InSubquery {
            expr,
            subquery,
            negated: false,
        } => (subquery, false, Some(&**expr)),
        Expr::Exists { subquery, negated } => (subquery, *negated, None),
        _ => return None,
    };
    let inner = Inner::of(query, cx)?;
    // (inner side, outer side) of each key.
    let mut keys: Vec<(Expr, Expr)> = Vec::new();
    let mut inner_conds: Vec<Expr> = Vec::new();
    match in_expr {
        Some(x) => {
            if has_subquery(x) {
                return None;
            }
            let [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }] =
                &inner.select.projection[..]
            else {
                return None;
            };
            if inner.refers_outward(e) {
                return None;
            }
            keys.push((e.clone(), x.clone()));
            if let Some(w) = &inner.select.selection {
                if inner.refers_outward(w) {
                    return None;
                }
                inner_conds.push(w.clone());
            }
        }
        None => {
            (keys, inner_conds) = exists_keys(&inner)?;
            if keys.is_empty() || !worth_it(outer_rows, &inner, cx) {
                return None;
            }
        }
    }
    let text = join_text(&inner, &keys, &inner_conds, alias, anti);
    let mut q = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_query())
        .ok()?;
    let SetExpr::Select(s) = &mut *q.body else {
        return None;
    };
    let join = s.from.first_mut()?.joins.pop()?;
    let filter = anti.then(|| Expr::IsNull(Box::new(key_column(alias))));
    Some((join, filter))
}

/// A subquery's WHERE clause split: the keys (inner side, outer side) of its
/// `inner = outer` equalities, and its parts that read no outer column.
type SplitWhere = (Vec<(Expr, Expr)>, Vec<Expr>);

/// An EXISTS subquery's WHERE parts split: the keys of its `inner = outer` equalities
/// (inner side, outer side), and the parts that read no outer column; None if another
/// part reads one.
fn exists_keys(inner: &Inner) -> Option<SplitWhere> {
    let (mut keys, mut inner_conds) = (Vec::new(), Vec::new());
    let mut parts = Vec::new();
    if let Some(w) = &inner.select.selection {
        and_parts(w, &mut parts);
    }
    for p in parts {
        if !inner.refers_outward(p) {
            inner_conds.push(p.clone());
            continue;
        }
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = p
        else {
            return None;
        };
        let key = if inner.only_inner(left) && inner.only_outer(right) {
            ((**left).clone(), (**right).clone())
        } else if inner.only_inner(right) && inner.only_outer(left) {
            ((**right).clone(), (**left).clone())
        } else {
            return None;
        };
        keys.push(key);
    }
    Some((keys, inner_conds))
}

/// The text of the join a subquery becomes: the outer rows joined (LEFT JOIN for an
/// anti-join) to the distinct keys of the inner rows that pass `inner_conds`, as
/// `alias.__k0, …`, on each key's outer side.
fn join_text(
    inner: &Inner,
    keys: &[(Expr, Expr)],
    inner_conds: &[Expr],
    alias: &str,
    anti: bool,
) -> String {
    let list: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, (e, _))| format!("{e} AS __k{i}"))
        .collect();
    let from: Vec<String> = inner.select.from.iter().map(|t| t.to_string()).collect();
    let mut derived = format!(
        "SELECT DISTINCT {} FROM {}",
        list.join(", "),
        from.join(", ")
    );
    if !inner_conds.is_empty() {
        let conds: Vec<String> = inner_conds.iter().map(|c| format!("({c})")).collect();
        derived.push_str(&format!(" WHERE {}", conds.join(" AND ")));
    }
    let on: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, (_, o))| format!("({o}) = {alias}.__k{i}"))
        .collect();
    let kind = if anti { "LEFT JOIN" } else { "JOIN" };
    format!(
        "SELECT 1 FROM __outer {kind} ({derived}) AS {alias} ON {}",
        on.join(" AND ")
    )
}

/// `alias.__k0`.
fn key_column(alias: &str) -> Expr {
    Expr::CompoundIdentifier(vec![ast::Ident::new(alias), ast::Ident::new("__k0")])
}

/// Whether reading the inner tables once beats probing them per outer row.
fn worth_it(outer_rows: f64, inner: &Inner, cx: &Names) -> bool {
    let inner_rows: f64 = inner.tables.iter().map(|t| cx.catalog.rows(&t.table)).sum();
    outer_rows * PROBE_ROWS >= inner_rows
}

/// True if the expression holds a subquery.
pub(crate) fn has_subquery(e: &Expr) -> bool {
    visit_expressions(e, |x| {
        if matches!(
            x,
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
        ) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// A relation of the subquery's FROM clause: the name it is known by, the table, and
/// its columns.
struct InnerTable {
    name: String,
    table: String,
    columns: Vec<String>,
}

/// A subquery that may be flattened: one plain SELECT over tables.
struct Inner<'q> {
    select: &'q ast::Select,
    tables: Vec<InnerTable>,
}

impl<'q> Inner<'q> {
    fn of(q: &'q ast::Query, cx: &Names) -> Option<Inner<'q>> {
        if q.with.is_some()
            || q.order_by.is_some()
            || q.limit_clause.is_some()
            || q.fetch.is_some()
            || !q.locks.is_empty()
        {
            return None;
        }
        let SetExpr::Select(select) = &*q.body else {
            return None;
        };
        let select = &**select;
        let plain =
            select.distinct.is_none() || matches!(select.distinct, Some(ast::Distinct::Distinct));
        let no_grouping = match &select.group_by {
            ast::GroupByExpr::Expressions(e, m) => e.is_empty() && m.is_empty(),
            ast::GroupByExpr::All(_) => false,
        };
        if !plain
            || !no_grouping
            || select.having.is_some()
            || !select.named_window.is_empty()
            || select.qualify.is_some()
            || select.top.is_some()
            || select.into.is_some()
            || !select.lateral_views.is_empty()
            || select.prewhere.is_some()
            || select.from.is_empty()
        {
            return None;
        }
        // No calls in the select list: an aggregate would make one row of any input.
        for item in &select.projection {
            let e = match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                _ => continue,
            };
            let call = visit_expressions(e, |x| {
                if matches!(x, Expr::Function(_)) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            if call.is_break() || has_subquery(e) {
                return None;
            }
        }
        if select.selection.as_ref().is_some_and(has_subquery) {
            return None;
        }
        let mut tables = Vec::new();
        for twj in &select.from {
            let mut relations = vec![&twj.relation];
            for j in &twj.joins {
                relations.push(&j.relation);
                // The ON clauses stay in the derived table's FROM: they must be the
                // inner tables' own.
                if let ast::JoinOperator::Join(c)
                | ast::JoinOperator::Inner(c)
                | ast::JoinOperator::Left(c)
                | ast::JoinOperator::LeftOuter(c) = &j.join_operator
                {
                    if let ast::JoinConstraint::On(e) = c {
                        if has_subquery(e) {
                            return None;
                        }
                    }
                } else {
                    return None;
                }
            }
            for r in relations {
                tables.push(InnerTable::of(r, cx)?);
            }
        }
        let inner = Inner { select, tables };
        // ON clauses may not reach outward.
        for twj in &select.from {
            for j in &twj.joins {
                if let ast::JoinOperator::Join(ast::JoinConstraint::On(e))
                | ast::JoinOperator::Inner(ast::JoinConstraint::On(e))
                | ast::JoinOperator::Left(ast::JoinConstraint::On(e))
                | ast::JoinOperator::LeftOuter(ast::JoinConstraint::On(e)) = &j.join_operator
                {
                    if inner.refers_outward(e) {
                        return None;
                    }
                }
            }
        }
        Some(inner)
    }

    /// Whether a name of the subquery is one of its own relations' (Some(true)), one of
    /// the outer query's (Some(false)), or cannot be told (None: a longer name).
    fn is_inner(&self, e: &Expr) -> Option<bool> {
        match e {
            Expr::Identifier(id) => {
                let name = ident_name(id);
                Some(self.tables.iter().any(|t| t.columns.contains(&name)))
            }
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                let q = ident_name(&parts[0]);
                Some(self.tables.iter().any(|t| t.name == q))
            }
            _ => None,
        }
    }

    /// Counts the names of `e` that are the subquery's own and the outer query's; None
    /// when one cannot be told or `e` holds a subquery.
    fn names(&self, e: &Expr) -> Option<(usize, usize)> {
        if has_subquery(e) {
            return None;
        }
        let (mut own, mut outer) = (0, 0);
        let flow = visit_expressions(e, |x| {
            if matches!(x, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
                match self.is_inner(x) {
                    Some(true) => own += 1,
                    Some(false) => outer += 1,
                    None => return ControlFlow::Break(()),
                }
            }
            ControlFlow::Continue(())
        });
        (!flow.is_break()).then_some((own, outer))
    }

    /// True if `e` names the outer query (or cannot be told not to).
    fn refers_outward(&self, e: &Expr) -> bool {
        self.names(e).is_none_or(|(_, outer)| outer > 0)
    }

    /// True if `e` names only the subquery's relations, at least one.
    fn only_inner(&self, e: &Expr) -> bool {
        self.names(e)
            .is_some_and(|(own, outer)| own > 0 && outer == 0)
    }

    /// True if `e` names only the outer query, at least once.
    fn only_outer(&self, e: &Expr) -> bool {
        self.names(e)
            .is_some_and(|(own, outer)| own == 0 && outer > 0)
    }
}

impl InnerTable {
    fn of(r: &ast::TableFactor, cx: &Names) -> Option<InnerTable> {
        let ast::TableFactor::Table {
            name, alias, args, ..
        } = r
        else {
            return None;
        };
        if args.is_some() {
            return None;
        }
        let parts = &name.0;
        let last = parts.last()?.as_ident()?;
        if parts.len() > 2
            || (parts.len() == 2
                && parts[0]
                    .as_ident()
                    .is_none_or(|s| ident_name(s) != "public"))
        {
            return None;
        }
        let table = ident_name(last);
        // A WITH query or a view of that name is not a table read here.
        if (cx.is_cte)(&table) || cx.catalog.view(&table).is_some() {
            return None;
        }
        let scope = cx.catalog.table_scope(&table).ok()?;
        let columns = scope.columns.iter().map(|(n, _)| n.clone()).collect();
        let name = alias
            .as_ref()
            .map_or_else(|| table.clone(), |a| ident_name(&a.name));
        Some(InnerTable {
            name,
            table,
            columns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Scope;
    use crate::error::SqlResult;
    use crate::types::SqlType;

    /// customers(id, region, name) of 100,000 rows, orders(id, customer_id, status) of
    /// 1,000,000.
    struct Shop;

    impl Catalog for Shop {
        fn table_scope(&self, name: &str) -> SqlResult<Scope> {
            let columns: &[&str] = match name {
                "customers" => &["id", "region", "name"],
                "orders" => &["id", "customer_id", "status"],
                _ => return Err(crate::error::SqlError::syntax("no such table")),
            };
            Ok(Scope {
                table: Some(name.to_string()),
                columns: columns
                    .iter()
                    .map(|c| (c.to_string(), SqlType::Int4))
                    .collect(),
                ..Scope::default()
            })
        }

        fn rows(&self, table: &str) -> f64 {
            if table == "orders" {
                1_000_000.0
            } else {
                100_000.0
            }
        }
    }

    /// The block of `sql` flattened for `outer_rows`, as text; None when it is not.
    fn flat(sql: &str, outer_rows: f64) -> Option<String> {
        let q = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_query())
            .expect("parses");
        let SetExpr::Select(s) = &*q.body else {
            panic!("a SELECT");
        };
        let cx = Names {
            catalog: &Shop,
            is_cte: &|_| false,
        };
        flatten(s, outer_rows, &cx).map(|s| s.to_string())
    }

    #[test]
    fn in_becomes_a_join_with_the_distinct_keys() {
        assert_eq!(
            flat(
                "select count(*) from orders where customer_id in \
                 (select id from customers where region = 3) and status = 1",
                1_000_000.0
            )
            .as_deref(),
            Some(
                "SELECT count(*) FROM orders JOIN (SELECT DISTINCT id AS __k0 FROM customers \
                 WHERE (region = 3)) AS __sj0 ON (customer_id) = __sj0.__k0 WHERE status = 1"
            )
        );
        // Uncorrelated: flattened however few the outer rows.
        assert!(flat(
            "select id from orders where id in (select id from customers)",
            1.0
        )
        .is_some());
    }

    #[test]
    fn exists_becomes_a_semi_join_and_not_exists_an_anti_join() {
        assert_eq!(
            flat(
                "select count(*) from customers c where exists (select 1 from orders o \
                 where o.customer_id = c.id and o.status = 3)",
                100_000.0
            )
            .as_deref(),
            Some(
                "SELECT count(*) FROM customers c JOIN (SELECT DISTINCT o.customer_id AS __k0 \
                 FROM orders o WHERE (o.status = 3)) AS __sj0 ON (c.id) = __sj0.__k0"
            )
        );
        assert_eq!(
            flat(
                "select count(*) from orders o where not exists (select 1 from customers c \
                 where c.region = o.status and c.id < 15)",
                1_000_000.0
            )
            .as_deref(),
            Some(
                "SELECT count(*) FROM orders o LEFT JOIN (SELECT DISTINCT c.region AS __k0 \
                 FROM customers c WHERE (c.id < 15)) AS __sj0 ON (o.status) = __sj0.__k0 \
                 WHERE __sj0.__k0 IS NULL"
            )
        );
    }

    #[test]
    fn few_outer_rows_keep_their_probes() {
        // 1,000 outer rows probe an index 1,000 times rather than read 1,000,000 rows.
        let sql = "select id from customers c where c.id < 1000 and exists \
                   (select 1 from orders o where o.customer_id = c.id)";
        assert!(flat(sql, 1_000.0).is_none());
        assert!(flat(sql, 100_000.0).is_some());
    }

    #[test]
    fn what_is_not_flattened() {
        let many = 1_000_000.0;
        for sql in [
            // NOT IN: a NULL key makes it NULL.
            "select id from orders where customer_id not in (select id from customers)",
            // Under OR, or NOT: not a WHERE part of its own.
            "select id from orders where status = 1 or customer_id in (select id from customers)",
            "select id from orders o where not (exists (select 1 from customers c where c.id = o.customer_id))",
            // `*` would show the keys.
            "select * from orders where customer_id in (select id from customers)",
            // Aggregates, grouping, LIMIT, DISTINCT ON in the subquery.
            "select id from orders where customer_id in (select max(id) from customers)",
            "select id from orders where customer_id in (select region from customers group by region)",
            "select id from orders where customer_id in (select id from customers limit 5)",
            "select id from orders o where exists (select count(*) from customers c where c.id = o.id)",
            // An outward reference that is not `inner = outer`.
            "select id from orders o where exists (select 1 from customers c where c.id < o.customer_id)",
            "select id from orders o where exists (select 1 from customers c where c.id = o.customer_id or c.region = 1)",
            // Correlated IN.
            "select id from orders o where customer_id in (select id from customers c where c.region = o.status)",
            // A table the catalog does not have (a view, a WITH query): not read here.
            "select id from orders where customer_id in (select id from elsewhere)",
            // Two FROM items: an anti-join's ON could not see the first.
            "select o.id from orders o, customers c where not exists (select 1 from customers d where d.id = o.customer_id)",
            // No correlation at all.
            "select id from orders where exists (select 1 from customers where region = 2)",
            // A subquery inside the subquery.
            "select id from orders o where exists (select 1 from customers c where c.id = o.customer_id \
             and c.region in (select status from orders))",
        ] {
            assert_eq!(flat(sql, many), None, "{sql}");
        }
    }
}
