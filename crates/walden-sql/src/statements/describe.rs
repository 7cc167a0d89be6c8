//! Describing a prepared statement without running it (`Session::describe`, the wire
//! protocol's Describe): the types of its parameters, declared or inferred from where
//! each is used (`infer.rs`), and the names and types of the columns it returns.
//!
//! The columns are those of the statement bound and planned with a NULL of each
//! parameter's type written in, which is how `Session::execute_prepared` writes a NULL
//! value in; a value of that type binds to the same types, so a run returns the columns
//! described. Binding and planning read the catalog only: no row is read or written.

use sqlparser::ast::Statement;
use walden::Database;

use crate::error::{SqlError, SqlResult};
use crate::infer::Params;
use crate::select::{PlanCx, QueryPlan};
use crate::types::SqlType;

/// What a prepared statement takes and gives, as the extended query protocol's
/// ParameterDescription and RowDescription carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// The type of each parameter, `$1` first: the type declared for it, or the one its
    /// context gives it (text where none does, as in PostgreSQL).
    pub params: Vec<SqlType>,
    /// The result columns, as `StatementResult::columns` will name and type them; empty
    /// for a statement that returns no rows.
    pub columns: Vec<(String, SqlType)>,
}

/// The result columns of `stmt`, bound and planned as running it would: a query's, the
/// RETURNING list of an INSERT, UPDATE or DELETE, EXPLAIN's `QUERY PLAN`; none for
/// anything else (SHOW's are the session's: `Session::describe`).
pub(crate) fn columns(
    db: &Database,
    stmt: &Statement,
    params: Params,
) -> SqlResult<Vec<(String, SqlType)>> {
    let catalog = crate::view::catalog_of(db);
    let cx = PlanCx {
        params,
        ..PlanCx::of(&catalog)
    };
    match stmt {
        Statement::Query(q) => Ok(QueryPlan::plan_in(q, &cx)?.columns().to_vec()),
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
            crate::dml::returned_columns(db, stmt, params)
        }
        Statement::Explain { statement, .. } => {
            match statement.as_ref() {
                Statement::Query(_)
                | Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_) => {
                    columns(db, statement, params)?;
                }
                other => {
                    let text = other.to_string();
                    let words: Vec<&str> = text.split_whitespace().take(2).collect();
                    return Err(SqlError::unsupported(format!(
                        "EXPLAIN {}",
                        words.join(" ").to_uppercase()
                    )));
                }
            }
            Ok(vec![("QUERY PLAN".into(), SqlType::Text)])
        }
        Statement::Declare { stmts } => {
            // Bound for its parameters' types; a DECLARE returns no rows.
            for q in stmts.iter().filter_map(|d| d.for_query.as_ref()) {
                QueryPlan::plan_in(q, &cx)?;
            }
            Ok(Vec::new())
        }
        _ => Ok(Vec::new()),
    }
}
