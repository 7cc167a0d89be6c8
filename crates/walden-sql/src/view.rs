//! Views: CREATE [OR REPLACE] VIEW, DROP VIEW, and reading one in FROM. The catalog keeps
//! a view's column names and its query as SQL text; each read parses and plans the text
//! again (as a subquery in FROM named for the view), so a view sees the tables as they
//! are when it is read. Which relations a view depends on is read from its text.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{self, Spanned};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use walden::{Database, ViewDef};

use crate::catalog::{ident_name, object_name, Catalog, DbCatalog};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::select::QueryPlan;
use crate::session::{Ctx, Output};

/// The most bytes of SQL text a view's query may have (the catalog stores it whole).
const MAX_VIEW_QUERY_BYTES: usize = 1 << 20;

/// Parses a view's stored query. The text was written by Walden, but it is read back
/// from disk: text that does not parse is a clear error.
pub(crate) fn parse_query(view: &ViewDef) -> SqlResult<ast::Query> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&view.query)
        .and_then(|mut p| p.parse_query())
        .map(|q| *q)
        .map_err(|e| {
            SqlError::new(
                code::DATA_CORRUPTED,
                format!(
                    "the stored query of view \"{}\" does not parse: {e}",
                    view.name
                ),
            )
        })
}

/// The relations a query names (tables and views; WITH names too, which only makes the
/// answer larger).
fn relations_of(query: &ast::Query) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let _ = ast::visit_relations(query, |name| {
        if let Ok(n) = object_name(name) {
            out.insert(n);
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// The views whose queries name `relation`, by name.
pub(crate) fn dependents(db: &Database, relation: &str) -> Vec<String> {
    db.views()
        .iter()
        .filter(|v| parse_query(v).is_ok_and(|q| relations_of(&q).contains(relation)))
        .map(|v| v.name.clone())
        .collect()
}

/// The error for dropping (or changing) `what` while views depend on it, as PostgreSQL
/// words it.
pub(crate) fn depended_on(what: &str, dependents: &[String], of: &str) -> SqlError {
    let detail = dependents
        .iter()
        .map(|d| format!("view {d} depends on {of}"))
        .collect::<Vec<_>>()
        .join("\n");
    SqlError::new(
        "2BP01",
        format!("cannot drop {what} because other objects depend on it"),
    )
    .with_detail(detail)
    .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")
}

/// Whether `start`'s query reaches the view `name` through the views it reads.
fn reaches(db: &Database, start: &BTreeSet<String>, name: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = start.iter().cloned().collect();
    while let Some(r) = todo.pop() {
        if r == name {
            return true;
        }
        if !seen.insert(r.clone()) {
            continue;
        }
        if let Some(v) = db.view(&r) {
            if let Ok(q) = parse_query(&v) {
                todo.extend(relations_of(&q));
            }
        }
    }
    false
}

/// CREATE [OR REPLACE] VIEW name [(columns)] AS query.
pub(crate) fn create_view(cx: &mut Ctx, cv: &ast::CreateView) -> SqlResult<Output> {
    let unsupported = [
        (cv.materialized, "materialized views"),
        (cv.temporary, "temporary views"),
        (cv.or_alter, "CREATE OR ALTER VIEW"),
        (cv.to.is_some(), "CREATE VIEW ... TO"),
        (cv.if_not_exists, "CREATE VIEW IF NOT EXISTS"),
        (
            !matches!(cv.options, ast::CreateTableOptions::None),
            "view options",
        ),
    ];
    for (set, what) in unsupported {
        if set {
            return Err(SqlError::unsupported(what));
        }
    }
    let name = object_name(&cv.name)?;
    if !cx.auth.superuser {
        cx.auth.require_create()?;
    }
    let exists = || {
        SqlError::new(
            code::DUPLICATE_TABLE,
            format!("relation \"{name}\" already exists"),
        )
    };
    let old = cx.db.view(&name);
    if (cx.db.relation_exists(&name) && old.is_none()) || (old.is_some() && !cv.or_replace) {
        return Err(exists());
    }
    if old.is_some() {
        crate::privileges::check::require_owner(&cx.auth, &name, crate::privileges::RelKind::View)?;
    }
    let plan = QueryPlan::plan(&cv.query, &DbCatalog::new(cx.db))?;
    let mut columns: Vec<String> = plan.columns().iter().map(|(n, _)| n.clone()).collect();
    if cv.columns.len() > columns.len() {
        return Err(SqlError::syntax(
            "CREATE VIEW specifies more column names than columns",
        ));
    }
    for (i, c) in cv.columns.iter().enumerate() {
        if c.data_type.is_some() || c.options.is_some() {
            return Err(SqlError::unsupported("types or options on view columns"));
        }
        columns[i] = ident_name(&c.name);
    }
    for (i, c) in columns.iter().enumerate() {
        if columns[..i].contains(c) {
            return Err(SqlError::new(
                code::DUPLICATE_COLUMN,
                format!("column \"{c}\" specified more than once"),
            ));
        }
        if let crate::types::SqlType::Record(_) = plan.columns()[i].1 {
            return Err(SqlError::new(
                code::INVALID_TABLE_DEFINITION,
                format!("column \"{c}\" has pseudo-type record"),
            ));
        }
    }
    if let Some(old) = &old {
        check_replacement(cx.db, old, &columns)?;
        if reaches(cx.db, &relations_of(&cv.query), &name) {
            return Err(SqlError::new(
                "42P17",
                format!("infinite recursion detected in rules for relation \"{name}\""),
            ));
        }
    }
    let query = cv.query.to_string();
    if query.len() > MAX_VIEW_QUERY_BYTES {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            "a view's query of more than 1 MiB of text is not supported",
        ));
    }
    cx.db.create_view(
        ViewDef {
            name,
            columns,
            query,
        },
        cv.or_replace,
        Some(cx.auth.new_acl(crate::privileges::RelKind::View)),
    )?;
    Ok(Output::tag("CREATE VIEW"))
}

/// CREATE OR REPLACE VIEW keeps the old view's columns, in order, with their names and
/// types, and may add columns after them (PostgreSQL's rule).
fn check_replacement(db: &Database, old: &ViewDef, new: &[String]) -> SqlResult<()> {
    if new.len() < old.columns.len() {
        return Err(SqlError::new(
            code::INVALID_TABLE_DEFINITION,
            "cannot drop columns from view",
        ));
    }
    for (a, b) in old.columns.iter().zip(new) {
        if a != b {
            return Err(SqlError::new(
                code::INVALID_TABLE_DEFINITION,
                format!("cannot change name of view column \"{a}\" to \"{b}\""),
            )
            .with_hint(
                "Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.",
            ));
        }
    }
    let _ = db;
    Ok(())
}

/// Plans a view read in FROM: its query, with the view's column names. A view created
/// with `SELECT *` keeps the columns it had when created, as in PostgreSQL.
pub(crate) fn plan_view(view: &ViewDef, catalog: &dyn Catalog) -> SqlResult<QueryPlan> {
    let query = parse_query(view)?;
    let plan = crate::depth::recurse(|| QueryPlan::plan(&query, catalog))?;
    if plan.columns().len() == view.columns.len() {
        return Ok(plan);
    }
    if plan.columns().len() < view.columns.len() {
        return Err(SqlError::new(
            code::UNDEFINED_COLUMN,
            format!(
                "view \"{}\" has {} columns but its query now returns {}",
                view.name,
                view.columns.len(),
                plan.columns().len()
            ),
        ));
    }
    // More columns than when it was made (a table read with * gained some): keep the
    // first ones.
    let quote = |c: &str| format!("\"{}\"", c.replace('"', "\"\""));
    let names: Vec<String> = view.columns.iter().map(|c| quote(c)).collect();
    let text = format!(
        "SELECT {} FROM ({}) AS {}",
        names.join(", "),
        view.query,
        quote(&view.name)
    );
    let wrapped = parse_query(&ViewDef {
        query: text,
        ..view.clone()
    })?;
    crate::depth::recurse(|| QueryPlan::plan(&wrapped, catalog))
}

/// DROP VIEW [IF EXISTS] name, ... [CASCADE].
pub(crate) fn drop_views(
    cx: &mut Ctx,
    if_exists: bool,
    names: &[ast::ObjectName],
    cascade: bool,
) -> SqlResult<Output> {
    let mut out = Output::tag("DROP VIEW");
    let mut to_drop = Vec::new();
    for n in names {
        let name = object_name(n)?;
        if cx.db.view(&name).is_some() {
            crate::privileges::check::require_owner(
                &cx.auth,
                &name,
                crate::privileges::RelKind::View,
            )?;
            to_drop.push(name);
        } else if cx.db.table_names().contains(&name) {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("\"{name}\" is not a view"),
            )
            .with_hint("Use DROP TABLE to remove a table.")
            .at(n.span().start));
        } else if if_exists {
            out.notices
                .push(format!("NOTICE:  view \"{name}\" does not exist, skipping"));
        } else {
            return Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("view \"{name}\" does not exist"),
            )
            .at(n.span().start));
        }
    }
    let all = with_dependents(cx.db, &to_drop, "view", cascade, &mut out.notices)?;
    for name in all {
        cx.db.drop_view(&name)?;
    }
    Ok(out)
}

/// The views to drop with `relations` (themselves too if they are views), dependents
/// first; without CASCADE, the 2BP01 error when a view outside the list depends on one.
pub(crate) fn with_dependents(
    db: &Database,
    relations: &[String],
    kind: &str,
    cascade: bool,
    notices: &mut Vec<String>,
) -> SqlResult<Vec<String>> {
    let mut order: Vec<String> = Vec::new();
    let mut cascaded: Vec<String> = Vec::new();
    for r in relations {
        collect(db, r, relations, &mut order, &mut cascaded);
        let outside: Vec<String> = dependents(db, r)
            .into_iter()
            .filter(|d| !relations.contains(d))
            .collect();
        if !outside.is_empty() && !cascade {
            return Err(depended_on(
                &format!("{kind} {r}"),
                &outside,
                &format!("{kind} {r}"),
            ));
        }
    }
    match cascaded.len() {
        0 => {}
        1 => notices.push(format!("NOTICE:  drop cascades to view {}", cascaded[0])),
        n => notices.push(format!(
            "NOTICE:  drop cascades to {n} other objects\nDETAIL:  {}",
            cascaded
                .iter()
                .map(|c| format!("drop cascades to view {c}"))
                .collect::<Vec<_>>()
                .join("\n")
        )),
    }
    Ok(order.into_iter().filter(|v| db.view(v).is_some()).collect())
}

/// Puts the views depending on `r` (depth first), then `r`, into `order`.
fn collect(
    db: &Database,
    r: &str,
    listed: &[String],
    order: &mut Vec<String>,
    cascaded: &mut Vec<String>,
) {
    if order.iter().any(|o| o == r) {
        return;
    }
    for d in dependents(db, r) {
        if d != r && !order.contains(&d) {
            if !listed.contains(&d) && !cascaded.contains(&d) {
                cascaded.push(d.clone());
            }
            crate::depth::recurse(|| collect(db, &d, listed, order, cascaded));
        }
    }
    order.push(r.to_string());
}

/// The error for writing into a view (Walden's views are read-only).
pub(crate) fn not_writable(verb: &str, name: &str) -> SqlError {
    SqlError::new("55000", format!("cannot {verb} view \"{name}\""))
        .with_detail("Walden's views are not automatically updatable.")
        .with_hint(clip("Write to the view's table instead.").into_owned())
}
