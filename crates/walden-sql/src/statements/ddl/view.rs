//! CREATE VIEW, CREATE OR REPLACE VIEW and DROP VIEW, with the views that depend on
//! what is dropped (`with_dependents`). Reading a view (its query, its plan) is
//! planning's (`crate::view`).

use std::collections::BTreeSet;

use sqlparser::ast::{self, Spanned};
use walden::{Database, ViewDef};

use crate::catalog::{ident_name, object_name};
use crate::error::{code, SqlError, SqlResult};
use crate::select::QueryPlan;
use crate::statement::{Ctx, Output};
use crate::view::{depended_on, dependents, parse_query, relations_of};

/// The most bytes of SQL text a view's query may have (the catalog stores it whole).
const MAX_VIEW_QUERY_BYTES: usize = 1 << 20;

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
pub(crate) fn create_view(
    cx: &mut Ctx,
    t: &mut walden::Transaction,
    cv: &ast::CreateView,
) -> SqlResult<Output> {
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
    let plan = QueryPlan::plan(&cv.query, &crate::view::catalog_of(cx.db))?;
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
    t.create_view(
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

/// DROP VIEW [IF EXISTS] name, ... [CASCADE].
pub(crate) fn drop_views(
    cx: &mut Ctx,
    t: &mut walden::Transaction,
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
        t.drop_view(&name)?;
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
