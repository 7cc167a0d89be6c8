//! CHECK constraints: named as PostgreSQL names them, kept in the table's schema as SQL
//! text (`CHECK (expr)`), bound once per table and schema (`CheckCache`, which the
//! session keeps) and checked on every row an
//! INSERT or UPDATE writes (23514), and against the stored rows when ALTER TABLE adds one.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;
use std::sync::Arc;

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use walden::rng::SimRng;
use walden::{Constraint, RowShape, Rows, Schema, Value};

use crate::bind::Binder;
use crate::catalog::{ident_name, Scope};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};

/// The text a CHECK constraint is stored as.
pub(crate) fn definition(e: &ast::Expr) -> String {
    format!("CHECK ({e})")
}

/// The expression of a stored CHECK constraint (None: not a CHECK).
fn parse(c: &Constraint) -> Option<SqlResult<ast::Expr>> {
    let text = c.definition.strip_prefix("CHECK ")?;
    Some(
        Parser::new(&PostgreSqlDialect {})
            .try_with_sql(text)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| {
                SqlError::new(
                    code::DATA_CORRUPTED,
                    format!(
                        "the stored check constraint \"{}\" does not parse: {e}",
                        c.name
                    ),
                )
            }),
    )
}

/// The columns an expression names.
fn columns_of(e: &ast::Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let _ = ast::visit_expressions(e, |x| {
        match x {
            ast::Expr::Identifier(id) => {
                out.insert(ident_name(id));
            }
            ast::Expr::CompoundIdentifier(parts) => {
                if let Some(last) = parts.last() {
                    out.insert(ident_name(last));
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// The name PostgreSQL gives a CHECK constraint: `table_column_check` when it names one
/// column, else `table_check`, with a number added until the table has no constraint
/// of that name.
pub(crate) fn name_for(table: &str, e: &ast::Expr, taken: &[String]) -> String {
    let cols = columns_of(e);
    let base = match cols.iter().next() {
        Some(c) if cols.len() == 1 => format!("{table}_{c}_check"),
        _ => format!("{table}_check"),
    };
    if !taken.contains(&base) {
        return base;
    }
    (1..)
        .map(|i| format!("{base}{i}"))
        .find(|n| !taken.contains(n))
        .unwrap_or(base)
}

/// Binds a CHECK expression over the table's columns (no subqueries, no aggregates).
pub(crate) fn bind(table: &str, schema: &Schema, e: &ast::Expr) -> SqlResult<Expr> {
    let mut subquery = false;
    let _ = ast::visit_expressions(e, |x| {
        subquery |= matches!(
            x,
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. }
        );
        ControlFlow::<()>::Continue(())
    });
    if subquery {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            "cannot use subquery in check constraint",
        ));
    }
    let scope = Scope::of_table(table, schema);
    // Simplified as a value: a CHECK constraint whose expression is NULL passes.
    Binder::plain(&scope)
        .boolean(e, "CHECK")
        .map(crate::optimize::simplify::simplify)
}

/// Bound CHECK expressions by table, columns and text: binding once per schema, not
/// per row. A schema change changes the key, so a stale entry is never used. Kept by the
/// session (`Session::checks`) and lent to each of its statements (`Ctx::checks`).
#[derive(Debug, Default)]
pub(crate) struct CheckCache(RefCell<HashMap<String, Arc<Expr>>>);

/// A CHECK constraint's expression bound over the table, parsed and bound on its first
/// use for this schema only; None for a constraint that is not a CHECK.
fn bound(
    cache: &CheckCache,
    table: &str,
    schema: &Schema,
    c: &Constraint,
) -> Option<SqlResult<Arc<Expr>>> {
    c.definition.strip_prefix("CHECK ")?;
    let mut key = format!("{table}\0{}", c.definition);
    for col in &schema.columns {
        key.push('\0');
        key.push_str(&col.name);
        key.push_str(col.ty.name());
    }
    let hit = cache.0.borrow().get(&key).cloned();
    if let Some(x) = hit {
        return Some(Ok(x));
    }
    let made = parse(c)?.and_then(|e| bind(table, schema, &e));
    Some(made.map(|x| {
        let x = Arc::new(x);
        let mut b = cache.0.borrow_mut();
        if b.len() > 4096 {
            b.clear();
        }
        b.insert(key, x.clone());
        x
    }))
}

/// Whether `row` passes the check (NULL passes, as in SQL).
fn passes(expr: &Expr, row: &[Value]) -> SqlResult<bool> {
    let mut rng = SimRng::new(0);
    let v = expr.eval(row, &mut EvalCtx::new(&mut rng))?;
    Ok(!matches!(v, Value::Bool(false)))
}

/// Checks a row about to be written against the table's CHECK constraints, in name
/// order as PostgreSQL does.
pub(crate) fn verify(
    cache: &CheckCache,
    table: &str,
    schema: &Schema,
    row: &[Value],
) -> SqlResult<()> {
    if schema.constraints.is_empty() {
        return Ok(());
    }
    let mut list: Vec<&Constraint> = schema.constraints.iter().collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    for c in list {
        let Some(expr) = bound(cache, table, schema, c) else {
            continue;
        };
        let expr = expr?;
        if !passes(&expr, row)? {
            return Err(SqlError::new(
                "23514",
                format!(
                    "new row for relation \"{table}\" violates check constraint \"{}\"",
                    c.name
                ),
            )
            .with_detail(format!(
                "Failing row contains ({}).",
                crate::dml::row_text(row)
            )));
        }
    }
    Ok(())
}

/// Whether every visible row of the table passes a new CHECK (ALTER TABLE ADD
/// CONSTRAINT); the 23514 error PostgreSQL gives when one does not.
pub(crate) fn verify_rows(
    t: &mut walden::Transaction,
    table: &str,
    schema: &Schema,
    name: &str,
    e: &ast::Expr,
) -> SqlResult<()> {
    let expr = bind(table, schema, e)?;
    let mut failed = false;
    t.read(Rows::Table(table), RowShape::default(), |_, row| {
        failed = !passes(&expr, &row)?;
        Ok::<_, SqlError>(if failed {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })?;
    if failed {
        return Err(SqlError::new(
            "23514",
            format!("check constraint \"{name}\" of relation \"{table}\" is violated by some row"),
        ));
    }
    Ok(())
}

/// After DROP COLUMN: the CHECK constraints that no longer bind (they named the column),
/// which PostgreSQL drops with it.
pub(crate) fn broken(table: &str, schema: &Schema) -> Vec<String> {
    schema
        .constraints
        .iter()
        .filter(|c| match parse(c) {
            Some(Ok(e)) => bind(table, schema, &e).is_err(),
            _ => false,
        })
        .map(|c| c.name.clone())
        .collect()
}
