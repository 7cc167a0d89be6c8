//! A prepared statement's plan (`CachedSelect`): bound once with its parameters unfilled,
//! then filled with each run's values (`SelectPlan::filled`), or one generic plan for every run.

use std::sync::Arc;

use sqlparser::ast;
use walden::Value;

use crate::access_path::{self, Access, KeyFrom};
use crate::catalog::{Catalog, IndexMeta, Scope};
use crate::error::SqlResult;
use crate::expr::Expr;
use crate::from::Source;
use crate::infer::Params;
use crate::types::SqlType;

use super::{Distinct, PlanCx, QueryPlan, SelectPlan, SortKey};

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
            Source::Nothing | Source::Empty | Source::Series { .. } => Vec::new(),
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
    /// A prepared statement's plan for every run, as PostgreSQL's generic plan: a read
    /// of one table whose only parameters are `col = $n` conditions fixing each column
    /// of a unique index (`access_path::generic_point`), with nothing that a run's
    /// values would fold or choose differently (no grouping, windows, set-returning
    /// functions or DISTINCT, no parameter outside the WHERE clause). None otherwise:
    /// each run fills its values in and chooses its access path (`instantiate`).
    pub(super) fn generic(&self, scope: &Scope, indexes: &[IndexMeta]) -> Option<SelectPlan> {
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
    pub(super) fn with_params(&self, values: &[Value]) -> SqlResult<SelectPlan> {
        self.filled(values, false)
    }

    /// The plan with its parameters (or, `outer`, its outer values) filled in.
    pub(super) fn filled(&self, values: &[Value], outer: bool) -> SqlResult<SelectPlan> {
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
}
