//! Prepared statements: a statement with parameters `$1`, `$2`, ... parsed once, then run
//! with values (`Session::prepare` / `Session::execute_prepared`, SQL's `PREPARE`,
//! `EXECUTE`, `DEALLOCATE`, and the wire protocol's Parse, Describe and Bind through
//! `Prepared::with_types` and `Session::describe`).
//!
//! What is kept is the statement's syntax tree. Running it copies the tree and puts each
//! value in place of its parameter as a constant, then binds and plans the copy. Values
//! never pass through SQL text, so a parameter cannot change the statement's shape.
//! A value is first converted to its parameter's declared type, if it has one; then a
//! value of its parameter's type (declared, or inferred from the statement as
//! PostgreSQL infers it: `infer.rs`) is written in as a constant of that type, a NULL
//! included; a value of another type, where no type was declared, is written in as a
//! literal of its own type, which the context may convert as it converts a literal (a
//! text compared with a bigint column is read as a bigint). A text of a text parameter
//! stays a text (`CAST('x' AS TEXT)`, which binding does not take for a string literal
//! of unknown type), as the parameter's NULL does: so a run binds to the types
//! `Session::describe` found, which binds the statement with NULLs written in.
//!
//! A SELECT, `INSERT ... VALUES`, UPDATE or DELETE run with no NULL among its values
//! keeps its plan instead (`PreparedRun`): bound once with each `$n` a parameter of its
//! value's type, against the catalog as it stood, and filled with each run's values,
//! which then choose the access path (key ranges from the values, as PostgreSQL's custom
//! plans would, without binding again). The plan is made again when the catalog
//! changes or the values' types do; a statement that does not bind with parameters
//! (one where only a constant may stand, or whose type the context must decide, such
//! as a text value compared with a uuid column) is run with its values written in.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use sqlparser::ast::{self, visit_expressions, visit_expressions_mut, CastKind, DataType, Spanned};
use sqlparser::tokenizer::Location;
use walden::{Database, Value};

use crate::depth::Deep;
use crate::dml::{BoundInsert, BoundModify};
use crate::error::{code, SqlError, SqlResult};
use crate::script::{parse_script, Parsed};
use crate::select::{CachedSelect, QueryPlan};
use crate::types::{declared_type, DeclaredType, SqlType};
use crate::value;

/// A statement ready to run with parameter values.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The text as prepared.
    text: String,
    /// The parsed statement, shared by the clones of this handle. None for a statement
    /// the parser handles apart (CHECKPOINT, REINDEX), which takes no parameters and is
    /// parsed again from `text` on each run, and for the empty statement.
    tree: Option<Arc<Template>>,
    /// True for a text that holds no statement (white space, comments, semicolons):
    /// PostgreSQL's empty query.
    empty: bool,
    /// Declared types, one per parameter (None: inferred from the statement).
    types: Vec<Option<DataType>>,
}

#[derive(Debug)]
pub(crate) struct Template {
    stmt: Deep<ast::Statement>,
    table_kind: Option<(String, Location)>,
    /// The plan for the values' types last run with (SELECT, INSERT, UPDATE, DELETE).
    cached: Mutex<Option<Cached>>,
    /// Every parameter's type (declared, or inferred from the statement), or why there
    /// is none, for the catalog generation it was found at. The declared types are those
    /// of the handle, which every clone sharing this template has too.
    param_types: Mutex<Option<(u64, SqlResult<Vec<SqlType>>)>>,
    /// The last privilege check it passed: for which role, at which generations of
    /// roles and privileges and of the catalog, and what it said (whether constraint
    /// errors leave out rows). While all hold, the check's answer is the same.
    checked: Mutex<Option<CheckMemo>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CheckMemo {
    user: String,
    auth_generation: u64,
    catalog_generation: u64,
    unreadable: bool,
}

/// What a prepared statement keeps of its last planning: for one catalog generation and
/// the types of the values it was run with, its plan, or None when it does not bind
/// with parameters of those types.
#[derive(Debug)]
struct Cached {
    generation: u64,
    types: Vec<SqlType>,
    plan: Option<Plan>,
}

/// A prepared statement's plan with its parameters unfilled.
#[derive(Debug, Clone)]
pub(crate) enum Plan {
    Select(Arc<CachedSelect>),
    Insert(Arc<BoundInsert>),
    Modify(Arc<BoundModify>),
}

/// A run's values as the statement takes them: each converted to its parameter's
/// declared type, with the type it is written in as (None: a literal of its own type).
#[derive(Debug)]
struct RunValues {
    values: Vec<Value>,
    typed: Vec<Option<SqlType>>,
}

/// A prepared query, insert, update or delete run with values (`Parsed::Prepared`).
#[derive(Debug)]
pub struct PreparedRun {
    /// A query, insert, update or delete (`Prepared::with_values` checked).
    template: Arc<Template>,
    /// No NULL among them.
    run: RunValues,
}

impl Template {
    pub(crate) fn statement(&self) -> &ast::Statement {
        &self.stmt
    }

    /// What the privilege check said when it last passed for `user` at these
    /// generations (None: not passed then).
    pub(crate) fn checked_for(&self, user: &str, auth: u64, catalog: u64) -> Option<bool> {
        let memo = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        memo.as_ref()
            .filter(|m| {
                m.user == user && m.auth_generation == auth && m.catalog_generation == catalog
            })
            .map(|m| m.unreadable)
    }

    /// Remembers a passed privilege check (`checked_for`).
    pub(crate) fn remember_check(&self, user: &str, auth: u64, catalog: u64, unreadable: bool) {
        *self.checked.lock().unwrap_or_else(|e| e.into_inner()) = Some(CheckMemo {
            user: user.to_string(),
            auth_generation: auth,
            catalog_generation: catalog,
            unreadable,
        });
    }

    /// `USING kind` of a CREATE TABLE, with where it was written.
    pub(crate) fn table_kind(&self) -> Option<(String, Location)> {
        self.table_kind.clone()
    }
}

impl PreparedRun {
    /// The stack that binding and running the statement needs.
    pub fn stack_bytes(&self) -> usize {
        self.template.stmt.stack_bytes()
    }

    /// The statement (with its placeholders), for dispatch.
    pub(crate) fn statement(&self) -> Arc<Template> {
        self.template.clone()
    }

    /// The values of this run.
    pub(crate) fn values(&self) -> &[Value] {
        &self.run.values
    }

    /// The statement with this run's values written in.
    pub(crate) fn written_in(&self) -> Deep<ast::Statement> {
        written_in(&self.template, &self.run)
    }

    /// The plan kept for this run's value types at the catalog's generation, made first
    /// if there is none for them; None when the statement does not bind with
    /// parameters of these types (remembered as such until either changes).
    pub(crate) fn plan(&self, db: &Database) -> Option<Plan> {
        let generation = db.catalog_generation();
        let mut slot = self
            .template
            .cached
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(c) = slot.as_ref() {
            let same_types = c.types.len() == self.run.values.len()
                && c.types
                    .iter()
                    .zip(&self.run.values)
                    .all(|(t, v)| *t == value::type_of(v));
            if c.generation == generation && same_types {
                return c.plan.clone();
            }
        }
        let types: Vec<SqlType> = self.run.values.iter().map(value::type_of).collect();
        let plan = match &*self.template.stmt {
            ast::Statement::Query(q) => CachedSelect::new(q, &types, &crate::view::catalog_of(db))
                .map(|p| Plan::Select(Arc::new(p))),
            ast::Statement::Insert(ins) => {
                BoundInsert::cached(ins, &types, db).map(|p| Plan::Insert(Arc::new(p)))
            }
            stmt => BoundModify::cached(stmt, &types, db).map(|p| Plan::Modify(Arc::new(p))),
        };
        *slot = Some(Cached {
            generation,
            types,
            plan: plan.clone(),
        });
        plan
    }

    /// The plan for this run: the cached one filled with the values, made first if the
    /// catalog or the values' types changed since; or, for a query that does not bind
    /// with parameters, the plan of the query with its values written in.
    /// The plan every run of this query shares, with this run's values for its
    /// parameters (`CachedSelect::generic`), if it has one.
    pub(crate) fn generic_plan(&self, db: &Database) -> Option<(Arc<QueryPlan>, &[Value])> {
        match self.plan(db) {
            Some(Plan::Select(c)) => Some((c.generic()?.clone(), &self.run.values)),
            _ => None,
        }
    }

    pub(crate) fn select_plan(&self, db: &Database) -> SqlResult<QueryPlan> {
        if let Some(Plan::Select(c)) = self.plan(db) {
            return c.instantiate(&self.run.values);
        }
        match &*self.written_in() {
            ast::Statement::Query(q) => QueryPlan::plan(q, &crate::view::catalog_of(db)),
            _ => Err(SqlError::new(code::INTERNAL, "a prepared query changed")),
        }
    }
}

/// The parameter number (1-based) a placeholder names, if it is `$n` with n in range.
fn placeholder(e: &ast::Expr) -> Option<Result<usize, String>> {
    let ast::Expr::Value(v) = e else {
        return None;
    };
    let ast::Value::Placeholder(p) = &v.value else {
        return None;
    };
    Some(
        p.strip_prefix('$')
            .and_then(|d| d.parse().ok())
            .filter(|n| (1..=65_535).contains(n))
            .ok_or_else(|| p.clone()),
    )
}

/// The statement of `t` with a run's values in place of its parameters: each as a
/// constant of the type the run gives it, or a literal of its own type.
fn written_in(t: &Template, run: &RunValues) -> Deep<ast::Statement> {
    crate::depth::with_stack(t.stmt.stack_bytes(), || {
        let mut stmt = (*t.stmt).clone();
        let _ = visit_expressions_mut(&mut stmt, |e| {
            if let Some(Ok(n)) = placeholder(e) {
                let v = &run.values[n - 1];
                *e = match run.typed.get(n - 1).copied().flatten() {
                    Some(ty) => typed_literal(v, ty),
                    None => literal(v),
                };
            }
            ControlFlow::<()>::Continue(())
        });
        t.stmt.alike(stmt)
    })
}

impl Prepared {
    /// Parses one statement with its parameters. `types` are declared parameter types
    /// (there may be more parameters than types, and more types than parameters). A
    /// text with no statement in it (white space, comments) is PostgreSQL's empty query.
    pub fn new(sql: &str, types: Vec<Option<DataType>>) -> SqlResult<Prepared> {
        let mut statements = parse_script(sql)?;
        if statements.len() > 1 {
            return Err(SqlError::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let mut types = types;
        let Some(one) = statements.pop() else {
            return Ok(Prepared {
                text: sql.to_string(),
                tree: None,
                empty: true,
                types,
            });
        };
        let tree = match one.parsed? {
            Parsed::Statement { stmt, table_kind } => {
                let mut params = 0;
                let scan = crate::depth::with_stack(stmt.stack_bytes(), || {
                    visit_expressions(&*stmt, |e| match placeholder(e) {
                        Some(Ok(n)) => {
                            params = params.max(n);
                            ControlFlow::Continue(())
                        }
                        Some(Err(p)) => ControlFlow::Break(
                            SqlError::syntax(format!("syntax error at or near \"{p}\""))
                                .at(e.span().start),
                        ),
                        None => ControlFlow::Continue(()),
                    })
                });
                if let ControlFlow::Break(e) = scan {
                    return Err(e);
                }
                if types.len() < params {
                    types.resize(params, None);
                }
                Some(Arc::new(Template {
                    stmt,
                    table_kind,
                    cached: Mutex::new(None),
                    param_types: Mutex::new(None),
                    checked: Mutex::new(None),
                }))
            }
            // (The parser makes no prepared runs.)
            Parsed::Checkpoint
            | Parsed::Reindex { .. }
            | Parsed::Sequence(_)
            | Parsed::Maintenance(_)
            | Parsed::Copy(_)
            | Parsed::Prepared(_)
            | Parsed::Role(..)
            | Parsed::Grant(_)
            | Parsed::Cursor(_) => None,
        };
        Ok(Prepared {
            text: sql.to_string(),
            tree,
            empty: false,
            types,
        })
    }

    /// Parses one statement whose parameters have the types given, as the wire
    /// protocol's Parse message declares them (`SqlType::from_oid` of each OID): a value
    /// of a parameter is converted to its type, as PostgreSQL converts a value to a
    /// declared type. None (an OID of 0) leaves the type to be inferred from the
    /// statement (`Session::describe`), as does `SqlType::Null`. There may be more
    /// types than the statement has parameters (those take values it does not use).
    pub fn with_types(sql: &str, types: Vec<Option<SqlType>>) -> SqlResult<Prepared> {
        let types = types
            .into_iter()
            .map(|t| t.filter(|t| *t != SqlType::Null).map(SqlType::data_type))
            .collect();
        Prepared::new(sql, types)
    }

    /// The number of parameters (the highest `$n`, or as many as types were declared).
    pub fn params(&self) -> usize {
        self.types.len()
    }

    /// True for the empty statement (a text of white space, comments or semicolons
    /// only), PostgreSQL's empty query: it runs to a result with an empty tag, no
    /// columns and no rows (the wire protocol's EmptyQueryResponse).
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// True when the statement keeps a plan made for parameters (the last run's value
    /// types, the catalog as it then stood) rather than binding its values written in
    /// on each run.
    pub fn has_cached_plan(&self) -> bool {
        self.tree.as_ref().is_some_and(|t| {
            let slot = t.cached.lock().unwrap_or_else(|e| e.into_inner());
            slot.as_ref().is_some_and(|c| c.plan.is_some())
        })
    }

    /// True when the plan kept is one every run shares, its values read as it runs
    /// (`CachedSelect::generic`: a point read of a unique key), not filled in per run.
    pub fn has_generic_plan(&self) -> bool {
        self.tree.as_ref().is_some_and(|t| {
            let slot = t.cached.lock().unwrap_or_else(|e| e.into_inner());
            matches!(
                slot.as_ref().and_then(|c| c.plan.as_ref()),
                Some(Plan::Select(c)) if c.generic().is_some()
            )
        })
    }

    /// The text as prepared.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parsed statement, if it is one the session binds (not CHECKPOINT, REINDEX
    /// or the empty statement).
    pub(crate) fn statement(&self) -> Option<&ast::Statement> {
        self.tree.as_ref().map(|t| t.statement())
    }

    /// True for what an aborted transaction block still takes: COMMIT, ROLLBACK, or
    /// the empty statement.
    pub(crate) fn ends_transaction(&self) -> bool {
        self.empty
            || matches!(
                self.statement(),
                Some(ast::Statement::Commit { .. } | ast::Statement::Rollback { .. })
            )
    }

    /// The declared types.
    fn declared(&self) -> SqlResult<Vec<Option<DeclaredType>>> {
        self.types
            .iter()
            .map(|t| t.as_ref().map(|t| declared_type(t, false)).transpose())
            .collect()
    }

    /// Every parameter's type: declared, or inferred from the statement as PostgreSQL
    /// infers it (42P18 for one it cannot determine). Kept for the catalog generation
    /// it was found at.
    pub(crate) fn param_types(&self, db: &Database) -> SqlResult<Vec<SqlType>> {
        let declared: Vec<Option<SqlType>> = self
            .declared()?
            .into_iter()
            .map(|d| d.map(|d| d.ty))
            .collect();
        let Some(t) = &self.tree else {
            // Nothing binds the parameters: only declared ones have a type.
            return crate::infer::infer(&declared, |_| Ok(())).map(|(_, types)| types);
        };
        let generation = db.catalog_generation();
        let mut slot = t.param_types.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((g, types)) = slot.as_ref() {
            if *g == generation {
                return types.clone();
            }
        }
        let types = crate::depth::with_stack(t.stmt.stack_bytes(), || {
            crate::infer::infer(&declared, |params| {
                crate::describe::columns(db, &t.stmt, params)
            })
        })
        .map(|(_, types)| types);
        *slot = Some((generation, types.clone()));
        types
    }

    /// FETCH, MOVE or CLOSE, if that is the statement.
    pub(crate) fn cursor_statement(&self) -> Option<crate::cursors::CursorStatement> {
        if self.tree.is_some() {
            return None;
        }
        match parse_script(&self.text).ok()?.pop()?.parsed {
            Ok(Parsed::Cursor(c)) => Some(c),
            _ => None,
        }
    }

    /// The result columns of the statement with a NULL of each parameter's type
    /// (`types`, from [`Prepared::param_types`]) written in, as a run with NULLs would
    /// bind it.
    pub(crate) fn columns(
        &self,
        db: &Database,
        types: &[SqlType],
    ) -> SqlResult<Vec<(String, SqlType)>> {
        let Some(t) = &self.tree else {
            return Ok(Vec::new());
        };
        let run = RunValues {
            values: vec![Value::Null; types.len()],
            typed: types.iter().copied().map(Some).collect(),
        };
        let stmt = written_in(t, &run);
        crate::depth::with_stack(stmt.stack_bytes(), || {
            crate::describe::columns(db, &stmt, crate::infer::Params::Absent)
        })
    }

    /// A run's values are one per parameter.
    fn check_count(&self, values: &[Value]) -> SqlResult<()> {
        if values.len() == self.params() {
            return Ok(());
        }
        Err(SqlError::new(
            code::PROTOCOL_VIOLATION,
            format!(
                "wrong number of parameters for prepared statement: expected {}, got {}",
                self.params(),
                values.len()
            ),
        ))
    }

    /// A run's values as the statement takes them: converted to declared types, and
    /// written in as constants of their parameter's type where they are of it (NULLs
    /// and texts of undeclared parameters look up the inferred types; a statement whose
    /// types cannot be inferred writes them in as literals).
    fn run_values(&self, values: &[Value], db: &Database) -> SqlResult<RunValues> {
        self.check_count(values)?;
        let mut inferred: Option<Option<Vec<SqlType>>> = None;
        let mut run = RunValues {
            values: Vec::with_capacity(values.len()),
            typed: Vec::with_capacity(values.len()),
        };
        for (i, (v, t)) in values.iter().zip(&self.types).enumerate() {
            let d = t.as_ref().map(|t| declared_type(t, false)).transpose()?;
            let (v, typed) = match d {
                Some(d) => (value::cast(v.clone(), &d, true)?, Some(d.ty)),
                None if matches!(v, Value::Null | Value::Text(_)) => {
                    let types = inferred.get_or_insert_with(|| self.param_types(db).ok());
                    let ty = types.as_ref().and_then(|t| t.get(i)).copied();
                    let typed = match (v, ty) {
                        (Value::Null, ty) => ty,
                        (_, ty) => ty.filter(|t| *t == SqlType::Text),
                    };
                    (v.clone(), typed)
                }
                None => (v.clone(), None),
            };
            run.values.push(v);
            run.typed.push(typed);
        }
        Ok(run)
    }

    /// The statement ready to run with these values: a run of its cached plan when it
    /// can have one (a query, insert, update or delete, no NULL among the values), else
    /// the statement with the values written in.
    pub(crate) fn with_values(&self, values: &[Value], db: &Database) -> SqlResult<Parsed> {
        let Some(t) = &self.tree else {
            self.check_count(values)?;
            let mut statements = parse_script(&self.text)?;
            return match statements.pop() {
                Some(s) => s.parsed,
                None => Err(SqlError::syntax("empty statement")),
            };
        };
        let run = self.run_values(values, db)?;
        let cacheable = matches!(
            &*t.stmt,
            ast::Statement::Query(_)
                | ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_)
        ) && !run.values.iter().any(|v| matches!(v, Value::Null));
        if cacheable {
            return Ok(Parsed::Prepared(PreparedRun {
                template: t.clone(),
                run,
            }));
        }
        Ok(Parsed::Statement {
            stmt: written_in(t, &run),
            table_kind: t.table_kind.clone(),
        })
    }
}

fn value_node(v: ast::Value) -> ast::Expr {
    ast::Expr::Value(v.with_empty_span())
}

fn cast(e: ast::Expr, to: DataType) -> ast::Expr {
    ast::Expr::Cast {
        kind: CastKind::DoubleColon,
        expr: Box::new(e),
        data_type: to,
        format: None,
    }
}

/// A value as a literal of its type: text, a boolean or NULL as a literal, any other
/// value as its text cast to its type (which is how `'-5'::INT4` reads: the cast of a
/// string literal, where `-5::INT4` would negate a cast).
fn literal(v: &Value) -> ast::Expr {
    let text = |s: String| value_node(ast::Value::SingleQuotedString(s));
    match v {
        Value::Null => value_node(ast::Value::Null),
        Value::Bool(b) => value_node(ast::Value::Boolean(*b)),
        Value::Text(s) => text(s.clone()),
        Value::Float8(x) => cast(text(value::float_text(*x)), DataType::Float8),
        v => cast(text(v.to_string()), value::type_of(v).data_type()),
    }
}

/// A value as a constant of type `ty`: a NULL cast to it, a text cast to text (so that
/// it is a text, not a literal of unknown type); any other value is of that type
/// already and is its literal.
fn typed_literal(v: &Value, ty: SqlType) -> ast::Expr {
    match v {
        Value::Null | Value::Text(_) => cast(literal(v), ty.data_type()),
        v => literal(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::is_written_in;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    /// Each literal reads as the text the parser would give the same tree.
    #[test]
    fn literals_are_what_the_parser_makes_of_their_text() {
        let values = [
            (Value::Null, "NULL"),
            (Value::Int2(-3), "'-3'::INT2"),
            (Value::Int4(7), "'7'::INT4"),
            (Value::Int8(i64::MIN), "'-9223372036854775808'::INT8"),
            (Value::Float8(-0.5), "'-0.5'::FLOAT8"),
            (Value::Float8(f64::NAN), "'NaN'::FLOAT8"),
            (Value::Bool(true), "true"),
            (Value::Text("it's".into()), "'it''s'"),
            (
                Value::Uuid([0xab; 16]),
                "'abababab-abab-abab-abab-abababababab'::UUID",
            ),
        ];
        for (v, text) in values {
            let built = literal(&v);
            assert!(is_written_in(&built), "{v:?}");
            let parsed = Parser::new(&PostgreSqlDialect {})
                .try_with_sql(text)
                .and_then(|mut p| p.parse_expr())
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(built.to_string(), parsed.to_string(), "{v:?}");
            assert_eq!(built.to_string(), text, "{v:?}");
            // What the parser makes has a place in the text.
            assert!(!is_written_in(&parsed), "{text}");
        }
        // A typed NULL and a typed text are a cast of a written-in value too.
        for (v, ty, text) in [
            (Value::Null, SqlType::Int4, "NULL::INT4"),
            (Value::Text("x".into()), SqlType::Text, "'x'::TEXT"),
            (Value::Int8(5), SqlType::Int8, "'5'::INT8"),
        ] {
            let built = typed_literal(&v, ty);
            assert!(is_written_in(&built), "{v:?}");
            assert_eq!(built.to_string(), text, "{v:?}");
        }
    }
}
