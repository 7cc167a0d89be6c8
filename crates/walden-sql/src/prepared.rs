//! Prepared statements: a statement with parameters `$1`, `$2`, ... parsed once, then run
//! with values (`Session::prepare` / `Session::execute_prepared`, and SQL's `PREPARE`,
//! `EXECUTE`, `DEALLOCATE`).
//!
//! What is kept is the statement's syntax tree. Running it copies the tree and puts each
//! value in place of its parameter as a literal of the value's type (under a cast to the
//! type `PREPARE name (types)` declared, if any), then binds and plans the copy. Values
//! never pass through SQL text, so a parameter cannot change the statement's shape.
//! A SELECT, `INSERT ... VALUES`, UPDATE or DELETE whose values are all typed keeps its
//! plan instead (`PreparedRun`): bound once with each `$n` a parameter of its value's
//! type, against the catalog as it stood, and filled with each run's values, which then
//! choose the access path (key ranges from the values, as PostgreSQL's custom plans
//! would, without binding again). The plan is made again when the catalog
//! changes or the values' types do; a statement that does not bind with parameters
//! (one where only a constant may stand, or whose type the context must decide, such
//! as a text value compared with a uuid column) is run with its values written in.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use sqlparser::ast::{
    self, visit_expressions, visit_expressions_mut, CastKind, DataType, Spanned, UnaryOperator,
};
use sqlparser::tokenizer::Location;
use walden::{Database, Value};

use crate::depth::Deep;
use crate::dml::{BoundInsert, BoundModify};
use crate::error::{code, SqlError, SqlResult};
use crate::script::{parse_script, Parsed};
use crate::select::{CachedSelect, QueryPlan};
use crate::session::DbCatalog;
use crate::types::SqlType;
use crate::value;

/// A statement ready to run with parameter values.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The text as prepared.
    text: String,
    /// The parsed statement, shared by the clones of this handle. None for a statement
    /// the parser handles apart (CHECKPOINT, REINDEX), which takes no parameters and is
    /// parsed again from `text` on each run.
    tree: Option<Arc<Template>>,
    /// Declared types, one per parameter (None: the value's own type).
    types: Vec<Option<DataType>>,
}

#[derive(Debug)]
pub(crate) struct Template {
    stmt: Deep<ast::Statement>,
    table_kind: Option<(String, Location)>,
    /// The plan for the values' types last run with (SELECT, INSERT, UPDATE, DELETE).
    cached: Mutex<Option<Cached>>,
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

/// A prepared query, insert, update or delete run with values (`Parsed::Prepared`).
#[derive(Debug)]
pub struct PreparedRun {
    /// A query, insert, update or delete (`Prepared::cached_run` checked), with no
    /// declared parameter types.
    template: Arc<Template>,
    values: Vec<Value>,
}

impl Template {
    pub(crate) fn statement(&self) -> &ast::Statement {
        &self.stmt
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
        &self.values
    }

    /// The statement with this run's values written in.
    pub(crate) fn written_in(&self) -> Deep<ast::Statement> {
        written_in(&self.template, &self.values, &[])
    }

    /// The plan kept for this run's value types at the catalog's generation, made first
    /// if there is none for them; None when the statement does not bind with
    /// parameters of these types (remembered as such until either changes).
    pub(crate) fn plan(&self, db: &Database) -> Option<Plan> {
        let types: Vec<SqlType> = self.values.iter().map(value::type_of).collect();
        let generation = db.catalog_generation();
        let mut slot = self
            .template
            .cached
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(c) = slot.as_ref() {
            if c.generation == generation && c.types == types {
                return c.plan.clone();
            }
        }
        let plan = match &*self.template.stmt {
            ast::Statement::Query(q) => {
                CachedSelect::new(q, &types, &DbCatalog::new(db)).map(|p| Plan::Select(Arc::new(p)))
            }
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
    pub(crate) fn select_plan(&self, db: &Database) -> SqlResult<QueryPlan> {
        if let Some(Plan::Select(c)) = self.plan(db) {
            return c.instantiate(&self.values);
        }
        match &*self.written_in() {
            ast::Statement::Query(q) => QueryPlan::plan(q, &DbCatalog::new(db)),
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

/// The statement of `t` with `values` in place of its parameters, as literals of their
/// types (under a cast to the declared type in `types`, when there is one).
fn written_in(t: &Template, values: &[Value], types: &[Option<DataType>]) -> Deep<ast::Statement> {
    crate::depth::with_stack(t.stmt.stack_bytes(), || {
        let mut stmt = (*t.stmt).clone();
        let _ = visit_expressions_mut(&mut stmt, |e| {
            if let Some(Ok(n)) = placeholder(e) {
                let ty = types.get(n - 1).and_then(Option::as_ref);
                *e = literal(&values[n - 1], ty);
            }
            ControlFlow::<()>::Continue(())
        });
        t.stmt.alike(stmt)
    })
}

impl Prepared {
    /// Parses one statement with its parameters. `types` are declared parameter types
    /// (there may be more parameters than types).
    pub fn new(sql: &str, types: Vec<Option<DataType>>) -> SqlResult<Prepared> {
        let mut statements = parse_script(sql)?;
        let one = statements
            .pop()
            .filter(|_| statements.is_empty())
            .ok_or_else(|| SqlError::syntax("a prepared statement holds exactly one statement"))?;
        let mut types = types;
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
                }))
            }
            // (The parser makes no prepared runs.)
            Parsed::Checkpoint
            | Parsed::Reindex { .. }
            | Parsed::Prepared(_)
            | Parsed::Role(..) => None,
        };
        Ok(Prepared {
            text: sql.to_string(),
            tree,
            types,
        })
    }

    /// The number of parameters (the highest `$n`, or as many as types were declared).
    pub fn params(&self) -> usize {
        self.types.len()
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

    /// The text as prepared.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// A run of a prepared query, insert, update or delete from its cached plan, when it
    /// can have one: no
    /// declared parameter types and no NULL among the values (whose type the context
    /// must decide). None otherwise: `bind` writes the values in.
    pub(crate) fn cached_run(&self, values: &[Value]) -> Option<PreparedRun> {
        let t = self.tree.as_ref()?;
        let usable = matches!(
            &*t.stmt,
            ast::Statement::Query(_)
                | ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_)
        ) && values.len() == self.params()
            && self.types.iter().all(Option::is_none)
            && !values.iter().any(|v| matches!(v, Value::Null));
        usable.then(|| PreparedRun {
            template: t.clone(),
            values: values.to_vec(),
        })
    }

    /// The statement with these values in place of its parameters, ready to run.
    pub(crate) fn bind(&self, values: &[Value]) -> SqlResult<Parsed> {
        if values.len() != self.params() {
            return Err(SqlError::new(
                code::PROTOCOL_VIOLATION,
                format!(
                    "wrong number of parameters for prepared statement: expected {}, got {}",
                    self.params(),
                    values.len()
                ),
            ));
        }
        let Some(t) = &self.tree else {
            let mut statements = parse_script(&self.text)?;
            return match statements.pop() {
                Some(s) => s.parsed,
                None => Err(SqlError::syntax("empty statement")),
            };
        };
        let stmt = written_in(t, values, &self.types);
        Ok(Parsed::Statement {
            stmt,
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

/// An integer as the parser reads `(x)::type`: a minus sign is an operator on the
/// number, and the parentheses keep the literal one operand.
fn integer(x: i64, to: DataType) -> ast::Expr {
    let digits = value_node(ast::Value::Number(x.unsigned_abs().to_string(), false));
    let e = if x < 0 {
        ast::Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: Box::new(digits),
        }
    } else {
        digits
    };
    cast(ast::Expr::Nested(Box::new(e)), to)
}

/// A value as a literal of its type (under a cast to `ty` when given).
fn literal(v: &Value, ty: Option<&DataType>) -> ast::Expr {
    if let Some(t) = ty {
        return ast::Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(literal(v, None)),
            data_type: t.clone(),
            format: None,
        };
    }
    let text = |s: String| value_node(ast::Value::SingleQuotedString(s));
    match v {
        Value::Null => value_node(ast::Value::Null),
        Value::Int2(x) => integer(i64::from(*x), DataType::Int2(None)),
        Value::Int4(x) => integer(i64::from(*x), DataType::Int4(None)),
        Value::Int8(x) => integer(*x, DataType::Int8(None)),
        Value::Float8(x) => cast(text(value::float_text(*x)), DataType::Float8),
        Value::Bool(b) => value_node(ast::Value::Boolean(*b)),
        Value::Text(s) => text(s.clone()),
        Value::Uuid(_) => cast(text(v.to_string()), DataType::Uuid),
        Value::Date(_) => cast(text(v.to_string()), DataType::Date),
        Value::Timestamp(_) => cast(
            text(v.to_string()),
            DataType::Timestamp(None, ast::TimezoneInfo::None),
        ),
        Value::Timestamptz(_) => cast(
            text(v.to_string()),
            DataType::Timestamp(None, ast::TimezoneInfo::WithTimeZone),
        ),
        Value::Interval(_) => cast(
            text(v.to_string()),
            DataType::Interval {
                fields: None,
                precision: None,
            },
        ),
        Value::Bytea(_) => cast(text(v.to_string()), DataType::Bytea),
        Value::Numeric(_) => cast(
            text(v.to_string()),
            DataType::Numeric(ast::ExactNumberInfo::None),
        ),
        Value::Jsonb(_) => cast(text(v.to_string()), DataType::JSONB),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    /// Each literal reads as the text the parser would give the same tree.
    #[test]
    fn literals_are_what_the_parser_makes_of_their_text() {
        let values = [
            (Value::Null, "NULL"),
            (Value::Int2(-3), "(-3)::INT2"),
            (Value::Int4(7), "(7)::INT4"),
            (Value::Int8(i64::MIN), "(-9223372036854775808)::INT8"),
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
            let built = literal(&v, None);
            let parsed = Parser::new(&PostgreSqlDialect {})
                .try_with_sql(text)
                .and_then(|mut p| p.parse_expr())
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(built.to_string(), parsed.to_string(), "{v:?}");
            assert_eq!(built.to_string(), text, "{v:?}");
        }
    }
}
