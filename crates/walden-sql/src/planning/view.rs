//! Views: CREATE [OR REPLACE] VIEW, DROP VIEW, and reading one in FROM. The catalog keeps
//! a view's column names and its query as SQL text; each read parses and plans the text
//! again (as a subquery in FROM named for the view), so a view sees the tables as they
//! are when it is read. Which relations a view depends on is read from its text.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use walden::{Database, ViewDef};

use crate::catalog::{object_name, Catalog, DbCatalog};
use crate::error::{clip, code, SqlError, SqlResult};
use crate::select::QueryPlan;

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
pub(crate) fn relations_of(query: &ast::Query) -> BTreeSet<String> {
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

/// The catalog of `db` for planning: its virtual catalog finds a view's column types by
/// planning the view (`view_types`).
pub(crate) fn catalog_of(db: &Database) -> DbCatalog<'_> {
    DbCatalog::new(db, view_types)
}

/// A view's column types, planned against the tables as they are and an empty virtual
/// catalog (so that a view over `pg_catalog` does not make the snapshot again); None
/// when its query no longer plans.
fn view_types(db: &Database, v: &ViewDef) -> Option<Vec<crate::types::SqlType>> {
    let catalog = DbCatalog::new(db, view_types);
    let _ = catalog
        .1
        .set(std::sync::Arc::new(crate::pg_catalog::Snapshot::default()));
    let plan = plan_view(v, &catalog).ok()?;
    Some(plan.columns().iter().map(|(_, ty)| *ty).collect())
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

/// The error for writing into a view (Walden's views are read-only).
pub(crate) fn not_writable(verb: &str, name: &str) -> SqlError {
    SqlError::new("55000", format!("cannot {verb} view \"{name}\""))
        .with_detail("Walden's views are not automatically updatable.")
        .with_hint(clip("Write to the view's table instead.").into_owned())
}
