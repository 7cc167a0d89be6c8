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
use crate::optimize::index_cost::TableStats;
use crate::select::{Cte, CteBody, PlanCx, QueryPlan};
use crate::types::SqlType;

use super::series::{json_rows, series};
use super::table::label;
use super::{Builder, Item, LateralBody, Rel, Source, TableRead};

/// What binding a relation of FROM found: its source, the name it goes by unless an
/// alias names it, its columns, and the stored table it reads (for its statistics).
struct Found {
    source: Source,
    default_name: Option<String>,
    columns: Vec<(String, SqlType)>,
    table: Option<String>,
}

impl Builder<'_, '_> {
    /// A relation of FROM: its columns join the scope.
    pub(super) fn relation(&mut self, t: &TableFactor) -> SqlResult<Item> {
        let (found, alias) = match t {
            TableFactor::Table {
                name, alias, args, ..
            } => {
                crate::bind::check_table_reference(t)?;
                let found = self.named_relation(name, alias.as_ref(), args.as_ref())?;
                (found, alias)
            }
            TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => (
                self.derived_relation(*lateral, subquery, alias.as_ref())?,
                alias,
            ),
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
        let alias = alias.as_ref().map(|a| ident_name(&a.name));
        self.add_relation(t, found, alias)
    }

    /// A relation named in FROM (with arguments: a function): a virtual catalog
    /// relation, a jsonb row function, generate_series, a WITH query, a sequence, a view
    /// or a table, looked for in that order.
    fn named_relation(
        &mut self,
        name: &ast::ObjectName,
        alias: Option<&ast::TableAlias>,
        args: Option<&ast::TableFunctionArgs>,
    ) -> SqlResult<Found> {
        let virtual_rel = match args {
            None => self.virtual_relation(name)?,
            Some(_) => None,
        };
        if let Some((vname, rel)) = virtual_rel {
            let source = match rel.rows {
                crate::pg_catalog::Rows::Made(rows) => Source::Values {
                    rows: Arc::new(rows),
                    name: vname.clone(),
                    superuser_only: rel.superuser_only,
                },
                crate::pg_catalog::Rows::Settings => Source::Settings,
                crate::pg_catalog::Rows::Cursors => Source::Cursors,
                crate::pg_catalog::Rows::Locks => Source::Locks,
            };
            return Ok(Found {
                source,
                default_name: Some(vname),
                columns: rel.columns,
                table: None,
            });
        }
        if let Some((func, args)) = args.and_then(|a| {
            let table = crate::bind::function_name(name).ok()?;
            Some((crate::jsonb::JsonRows::lookup(&table)?, a))
        }) {
            return json_relation(func, args, alias, self.cx);
        }
        if let Some(args) = args {
            return self.series_relation(name, args, alias);
        }
        if let Some(cte) = object_name(name)
            .ok()
            .and_then(|table| self.cx.ctes.and_then(|c| c.find(&table)))
        {
            return self.cte_relation(cte, name, alias);
        }
        if let Some((table, seq)) = object_name(name)
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
            return Ok(sequence_relation(table, row));
        }
        if let Some((table, view)) = object_name(name)
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
            return Ok(Found {
                source: Source::Derived {
                    plan: Arc::new(plan),
                    name: table.clone(),
                },
                default_name: Some(table),
                columns,
                table: None,
            });
        }
        self.table_relation(name, alias)
    }

    /// generate_series in FROM, which may read the items before it (as LATERAL): its
    /// one column named by the alias's column, else the alias, else the function.
    fn series_relation(
        &mut self,
        name: &ast::ObjectName,
        args: &ast::TableFunctionArgs,
        alias: Option<&ast::TableAlias>,
    ) -> SqlResult<Found> {
        let table = crate::bind::function_name(name)?;
        let ((src, col_ty), params) = self.lateral(|inner| series(&table, name, args, inner))?;
        let source = if params.is_empty() {
            src
        } else {
            Source::Lateral {
                body: LateralBody::Series(Box::new(src)),
                params,
                name: "generate_series".into(),
            }
        };
        let col = alias
            .and_then(|a| a.columns.first())
            .map(|c| ident_name(&c.name))
            .or_else(|| alias.map(|a| ident_name(&a.name)))
            .unwrap_or_else(|| "generate_series".into());
        Ok(Found {
            source,
            default_name: Some("generate_series".to_string()),
            columns: vec![(col, col_ty)],
            table: None,
        })
    }

    /// A WITH query read: its plan, a WITH RECURSIVE query, or (inside its own
    /// definition) the recursive query's work table.
    fn cte_relation(
        &self,
        cte: &Cte,
        name: &ast::ObjectName,
        alias: Option<&ast::TableAlias>,
    ) -> SqlResult<Found> {
        let table = cte.name.clone();
        let source = match &cte.body {
            CteBody::Plan(plan) => Source::Derived {
                plan: plan.clone(),
                name: table.clone(),
            },
            CteBody::Recursive(plan) => Source::Recursive {
                plan: plan.clone(),
                label: label(&table, alias),
            },
            CteBody::SelfRef(s) => {
                let mut source = s.reference(&table, self.cx, name.span().start)?;
                if let Source::WorkTable { name, .. } = &mut source {
                    *name = label(&table, alias);
                }
                source
            }
        };
        Ok(Found {
            source,
            default_name: Some(table),
            columns: cte.columns.clone(),
            table: None,
        })
    }

    /// A stored table read (a sequential scan until its access is chosen), with the
    /// hidden `ctid` column when the statement asked for row ids.
    fn table_relation(
        &mut self,
        name: &ast::ObjectName,
        alias: Option<&ast::TableAlias>,
    ) -> SqlResult<Found> {
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
        Ok(Found {
            source: Source::Table(TableRead {
                name: table.clone(),
                alias: alias.map(|a| ident_name(&a.name)),
                access: Access::Scan,
                filter: None,
                filter_text: None,
                names,
                row_id,
                est: 0.0,
                needed: None,
                top: None,
                width: 0,
                stats: None,
            }),
            default_name: Some(table.clone()),
            columns,
            table: Some(table),
        })
    }

    /// A subquery in FROM: planned on its own, or LATERAL, with the items before it as
    /// its outer scope.
    fn derived_relation(
        &self,
        lateral: bool,
        subquery: &ast::Query,
        alias: Option<&ast::TableAlias>,
    ) -> SqlResult<Found> {
        let label = alias.map_or_else(|| "unnamed_subquery".into(), |a| ident_name(&a.name));
        let (source, columns) = if lateral {
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
        Ok(Found {
            source,
            default_name: None,
            columns,
            table: None,
        })
    }

    /// Adds a relation bound from `t` to the clause, by its alias or its own name (once
    /// only), its columns renamed by the alias's column list.
    fn add_relation(
        &mut self,
        t: &TableFactor,
        found: Found,
        alias: Option<String>,
    ) -> SqlResult<Item> {
        let Found {
            mut source,
            default_name,
            mut columns,
            table,
        } = found;
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
        if let Source::Table(t) = &mut source {
            t.est = rows;
            if distinct.iter().any(|d| *d > 0.0) {
                t.stats = Some(Arc::new(TableStats {
                    rows,
                    distinct: distinct.clone(),
                }));
            }
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

/// A set-returning jsonb function in FROM: its columns named by the alias's column
/// list (jsonb_object_keys' one column by the alias itself), else the function's.
fn json_relation(
    func: crate::jsonb::JsonRows,
    args: &ast::TableFunctionArgs,
    alias: Option<&ast::TableAlias>,
    cx: &PlanCx,
) -> SqlResult<Found> {
    let source = json_rows(func, args, cx)?;
    let names = alias.map(|a| &a.columns);
    let columns = func
        .columns()
        .into_iter()
        .enumerate()
        .map(|(i, (col, ty))| {
            let named = names.and_then(|n| n.get(i)).map(|c| ident_name(&c.name));
            let lone = (func == crate::jsonb::JsonRows::ObjectKeys)
                .then(|| alias.map(|a| ident_name(&a.name)))
                .flatten();
            (named.or(lone).unwrap_or_else(|| col.to_string()), ty)
        })
        .collect();
    Ok(Found {
        source,
        default_name: Some(func.name().to_string()),
        columns,
        table: None,
    })
}

/// A sequence read as a relation: its one row (`last_value`, `log_cnt`, `is_called`).
fn sequence_relation(table: String, row: Vec<Value>) -> Found {
    Found {
        source: Source::Values {
            rows: Arc::new(vec![row]),
            name: table.clone(),
            superuser_only: None,
        },
        default_name: Some(table),
        columns: vec![
            ("last_value".to_string(), SqlType::Int8),
            ("log_cnt".to_string(), SqlType::Int8),
            ("is_called".to_string(), SqlType::Bool),
        ],
        table: None,
    }
}
