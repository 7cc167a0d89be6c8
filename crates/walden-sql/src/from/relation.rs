//! A relation of FROM bound (`Builder::relation`): a table, view, sequence, WITH query,
//! virtual catalog relation, set-returning function, subquery (LATERAL or not) or
//! parenthesized join.

use std::sync::Arc;

use sqlparser::ast::{self, Spanned, TableFactor};
use walden::Value;

use crate::access_path::Access;
use crate::catalog::{ident_name, object_name};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::select::{CteBody, PlanCx, QueryPlan};
use crate::types::SqlType;

use super::series::{json_rows, series};
use super::table::label;
use super::{Builder, Item, LateralBody, Rel, Source, TableRead};

impl Builder<'_, '_> {
    /// A relation of FROM: its columns join the scope.
    pub(super) fn relation(&mut self, t: &TableFactor) -> SqlResult<Item> {
        let (source, default_name, mut columns, alias, table) = match t {
            TableFactor::Table {
                name, alias, args, ..
            } => {
                crate::bind::check_table_reference(t)?;
                let virtual_rel = match args {
                    None => self.virtual_relation(name)?,
                    Some(_) => None,
                };
                if let Some((vname, rel)) = virtual_rel {
                    (
                        match rel.rows {
                            crate::pg_catalog::Rows::Made(rows) => Source::Values {
                                rows: Arc::new(rows),
                                name: vname.clone(),
                                superuser_only: rel.superuser_only,
                            },
                            crate::pg_catalog::Rows::Settings => Source::Settings,
                            crate::pg_catalog::Rows::Cursors => Source::Cursors,
                        },
                        Some(vname),
                        rel.columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some((func, args)) = args.as_ref().and_then(|a| {
                    let table = crate::bind::function_name(name).ok()?;
                    Some((crate::jsonb::JsonRows::lookup(&table)?, a))
                }) {
                    let src = json_rows(func, args, self.cx)?;
                    let names = alias.as_ref().map(|a| &a.columns);
                    let columns = func
                        .columns()
                        .into_iter()
                        .enumerate()
                        .map(|(i, (col, ty))| {
                            let named = names.and_then(|n| n.get(i)).map(|c| ident_name(&c.name));
                            let lone = (func == crate::jsonb::JsonRows::ObjectKeys)
                                .then(|| alias.as_ref().map(|a| ident_name(&a.name)))
                                .flatten();
                            (named.or(lone).unwrap_or_else(|| col.to_string()), ty)
                        })
                        .collect();
                    (
                        src,
                        Some(func.name().to_string()),
                        columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some(args) = args {
                    let table = crate::bind::function_name(name)?;
                    // A function in FROM may read the items before it (as LATERAL).
                    let ((src, col_ty), params) =
                        self.lateral(|inner| series(&table, name, args, inner))?;
                    let src = if params.is_empty() {
                        src
                    } else {
                        Source::Lateral {
                            body: LateralBody::Series(Box::new(src)),
                            params,
                            name: "generate_series".into(),
                        }
                    };
                    let col = alias
                        .as_ref()
                        .and_then(|a| a.columns.first())
                        .map(|c| ident_name(&c.name))
                        .or_else(|| alias.as_ref().map(|a| ident_name(&a.name)))
                        .unwrap_or_else(|| "generate_series".into());
                    (
                        src,
                        Some("generate_series".to_string()),
                        vec![(col, col_ty)],
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some(cte) = object_name(name)
                    .ok()
                    .and_then(|table| self.cx.ctes.and_then(|c| c.find(&table)))
                {
                    let table = cte.name.clone();
                    let columns = cte.columns.clone();
                    let source = match &cte.body {
                        CteBody::Plan(plan) => Source::Derived {
                            plan: plan.clone(),
                            name: table.clone(),
                        },
                        CteBody::Recursive(plan) => Source::Recursive {
                            plan: plan.clone(),
                            label: label(&table, alias.as_ref()),
                        },
                        CteBody::SelfRef(s) => {
                            let mut source = s.reference(&table, self.cx, name.span().start)?;
                            if let Source::WorkTable { name, .. } = &mut source {
                                *name = label(&table, alias.as_ref());
                            }
                            source
                        }
                    };
                    (
                        source,
                        Some(table),
                        columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some((table, seq)) = object_name(name)
                    .ok()
                    .and_then(|t| self.cx.catalog.sequence(&t).map(|s| (t, s)))
                {
                    // A sequence reads as its one row, as PostgreSQL's does (what
                    // pg_dump reads of it: `SELECT last_value, is_called FROM s`).
                    let row = vec![
                        Value::Int8(seq.state.last_value),
                        Value::Int8(seq.log_cnt),
                        Value::Bool(seq.state.is_called),
                    ];
                    (
                        Source::Values {
                            rows: Arc::new(vec![row]),
                            name: table.clone(),
                            superuser_only: None,
                        },
                        Some(table),
                        vec![
                            ("last_value".to_string(), SqlType::Int8),
                            ("log_cnt".to_string(), SqlType::Int8),
                            ("is_called".to_string(), SqlType::Bool),
                        ],
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else if let Some((table, view)) = object_name(name)
                    .ok()
                    .and_then(|t| self.cx.catalog.view(&t).map(|v| (t, v)))
                {
                    let plan = crate::view::plan_view(&view, self.cx.catalog)
                        .map_err(|e| e.at(name.span().start))?;
                    let columns = view
                        .columns
                        .iter()
                        .zip(plan.columns())
                        .map(|(n, (_, ty))| (n.clone(), *ty))
                        .collect();
                    (
                        Source::Derived {
                            plan: Arc::new(plan),
                            name: table.clone(),
                        },
                        Some(table),
                        columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        None,
                    )
                } else {
                    let table = object_name(name)?;
                    let scope = self
                        .cx
                        .catalog
                        .table_scope(&table)
                        .map_err(|e| e.at(name.span().start))?;
                    let row_id = std::mem::take(&mut self.row_id_next);
                    let mut columns = scope.columns;
                    let names = columns.iter().map(|(n, _)| n.clone()).collect();
                    if row_id {
                        self.hidden.push(self.columns.len() + columns.len());
                        columns.push(("ctid".to_string(), SqlType::Int8));
                    }
                    (
                        Source::Table(TableRead {
                            name: table.clone(),
                            alias: alias.as_ref().map(|a| ident_name(&a.name)),
                            access: Access::Scan,
                            filter: None,
                            filter_text: None,
                            names,
                            row_id,
                            est: 0.0,
                            needed: None,
                            top: None,
                            width: 0,
                        }),
                        Some(table.clone()),
                        columns,
                        alias.as_ref().map(|a| ident_name(&a.name)),
                        Some(table),
                    )
                }
            }
            TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                let name = alias.as_ref().map(|a| ident_name(&a.name));
                let label = name.clone().unwrap_or_else(|| "unnamed_subquery".into());
                let (source, columns) = if *lateral {
                    let (plan, params) = self.lateral_subquery(subquery)?;
                    let columns = plan.columns().to_vec();
                    let source = Source::Lateral {
                        body: LateralBody::Query(Arc::new(plan)),
                        params,
                        name: label,
                    };
                    (source, columns)
                } else {
                    let plan = QueryPlan::plan_in(subquery, self.cx)?;
                    let columns = plan.columns().to_vec();
                    let source = Source::Derived {
                        plan: Arc::new(plan),
                        name: label,
                    };
                    (source, columns)
                };
                (source, None, columns, name, None)
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                if alias.is_some() {
                    return Err(SqlError::unsupported("an alias on a parenthesized join"));
                }
                let mut item = self.relation(&table_with_joins.relation)?;
                for j in &table_with_joins.joins {
                    let right = self.relation(&j.relation)?;
                    item = self.join(item, right, &j.join_operator)?;
                }
                return Ok(item);
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "the FROM item {}",
                    clip(&other.to_string())
                ))
                .at(other.span().start))
            }
        };
        // Column aliases: `AS x(a, b)` renames the first columns.
        if let TableFactor::Table {
            alias: Some(a),
            args: None,
            ..
        }
        | TableFactor::Derived { alias: Some(a), .. } = t
        {
            if a.columns.len() > columns.len() {
                return Err(SqlError::new(
                    code::INVALID_COLUMN_REFERENCE,
                    format!(
                        "table \"{}\" has {} columns available but {} columns specified",
                        ident_name(&a.name),
                        columns.len(),
                        a.columns.len()
                    ),
                ));
            }
            for (c, new) in columns.iter_mut().zip(&a.columns) {
                c.0 = ident_name(&new.name);
            }
        }
        let name = alias.or(default_name);
        if let Some(n) = &name {
            if self.relations.iter().any(|(r, _)| r == n) {
                return Err(SqlError::new(
                    code::DUPLICATE_ALIAS,
                    format!("table name \"{n}\" specified more than once"),
                )
                .at(t.span().start));
            }
        }
        let at = self.columns.len();
        let range = at..at + columns.len();
        if let Some(n) = &name {
            self.relations.push((n.clone(), range));
        }
        self.columns.extend(columns.iter().cloned());
        let (indexes, rows, distinct) = match &table {
            Some(tname) => (
                self.cx.catalog.indexes(tname),
                self.cx.catalog.rows(tname),
                self.cx.catalog.distinct(tname),
            ),
            None => (Vec::new(), 1000.0, Vec::new()),
        };
        let mut source = source;
        if let Source::Table(t) = &mut source {
            t.est = rows;
        }
        let types = columns.iter().map(|(_, t)| t.column_type()).collect();
        self.rels.push(Rel {
            source,
            name,
            columns,
            at,
            indexes,
            types,
            rows,
            distinct,
        });
        Ok(Item::Rel(self.rels.len() - 1))
    }

    /// A relation of `pg_catalog` or `information_schema`: a qualified name, or an
    /// unqualified one of `pg_catalog` that no WITH query takes (PostgreSQL searches
    /// `pg_catalog` before `public`).
    fn virtual_relation(
        &self,
        name: &ast::ObjectName,
    ) -> SqlResult<Option<(String, crate::pg_catalog::VirtualRelation)>> {
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| p.as_ident())
            .map(ident_name)
            .collect();
        let (schema, rel) = match parts.as_slice() {
            [s, n] if s == "pg_catalog" || s == "information_schema" => (Some(s.as_str()), n),
            [n] if crate::pg_catalog::is_pg_catalog_name(n)
                && self.cx.ctes.and_then(|c| c.find(n)).is_none() =>
            {
                (None, n)
            }
            _ => return Ok(None),
        };
        let snap = self.cx.catalog.pg_snapshot().unwrap_or_default();
        match crate::pg_catalog::lookup(schema, rel, &snap) {
            Some(r) => Ok(Some((rel.clone(), r))),
            None => Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("relation \"{}\" does not exist", parts.join(".")),
            )
            .at(name.span().start)),
        }
    }

    /// Plans a LATERAL subquery: the columns of the FROM items before it are its outer
    /// scope, their values its parameters.
    fn lateral_subquery(&self, q: &ast::Query) -> SqlResult<(QueryPlan, Vec<Expr>)> {
        self.lateral(|inner| QueryPlan::plan_in(q, inner))
    }

    /// Plans with the columns of the FROM items before this one as the outer scope:
    /// what `plan` made, and the outer values it reads (its parameters).
    fn lateral<R>(&self, plan: impl FnOnce(&PlanCx) -> SqlResult<R>) -> SqlResult<(R, Vec<Expr>)> {
        let scope = self.scope_so_far();
        let outer = crate::bind::Outer {
            scope: &scope,
            params: std::cell::RefCell::new(Vec::new()),
            parent: self.cx.outer,
        };
        let inner = PlanCx {
            outer: Some(&outer),
            ..*self.cx
        };
        let made = plan(&inner)?;
        Ok((made, outer.params.into_inner()))
    }
}
