//! Binding: turns parsed expressions into `Expr`s — names resolved against a scope, types
//! checked and fixed, literals coerced, constants folded, aggregates collected.

mod aggregates;
mod calls;
mod literals;
mod names;
mod operators;
mod subqueries;

use sqlparser::ast::{self, Spanned};
use walden::rng::SimRng;
use walden::Value;

use crate::catalog::Scope;
use crate::depth;
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::{EvalCtx, Expr};
use crate::infer::Params;
use crate::types::{DeclaredType, SqlType};
use crate::value;
use crate::window::Windows;

pub(crate) use aggregates::{agg_call, agg_func, regroup_column};
pub use aggregates::{AggCall, AggFunc, Grouping};
pub(crate) use calls::{order_clause, plain_args};
pub(crate) use literals::{coerce_literal, common_type, is_unknown, to_common};
pub use names::{check_table_reference, function_name, output_name};
pub use subqueries::{Outer, SubqueryPlanner};

/// A scope is the catalog's (`catalog.rs`); a column read as an expression is binding's.
impl Scope {
    /// Column `i` as an unqualified name (or `*`) reads it: a FULL JOIN's merged USING
    /// column is coalesce of both sides.
    pub fn column_expr(&self, i: usize) -> Expr {
        let ty = self.columns.get(i).map_or(SqlType::Null, |c| c.1);
        match self.merged.iter().find(|(v, _)| *v == i) {
            Some(&(v, h)) => Expr::Coalesce(vec![Expr::Column(v, ty), Expr::Column(h, ty)], ty),
            None => Expr::Column(i, ty),
        }
    }
}

pub struct Binder<'a> {
    pub scope: &'a Scope,
    /// Set when binding the SELECT list, HAVING and ORDER BY of a grouped query.
    pub grouping: Option<&'a mut Grouping>,
    /// Set where subqueries may appear (a query's clauses); None elsewhere (a column
    /// default, an UPDATE's SET), where a subquery is refused.
    pub cx: Option<&'a dyn SubqueryPlanner>,
    /// Set where window functions may appear (a SELECT block's select list and ORDER
    /// BY): the calls found so far, each standing in as a placeholder column
    /// (`window::WINDOW_PLACEHOLDER`). None elsewhere, where they are refused.
    pub windows: Option<&'a mut Windows>,
    /// Set where set-returning functions may appear (a SELECT block's select list):
    /// the calls found so far, each standing in as placeholder columns
    /// (`srf::SRF_PLACEHOLDER`). None elsewhere, where they are refused.
    pub set_returning: Option<&'a mut crate::srf::SetReturning>,
    /// What binding knows of the statement's parameters (`$n`).
    pub params: Params<'a>,
}

/// Marks an error as having no position (so that callers do not give it one).
pub const NO_POSITION: sqlparser::tokenizer::Location =
    sqlparser::tokenizer::Location { line: 0, column: 0 };

/// Folds a constant expression into its value (errors such as 1/0 surface at once, as
/// in PostgreSQL).
pub(crate) fn fold(e: Expr) -> SqlResult<Expr> {
    if matches!(e, Expr::Const(_)) || !e.is_foldable() {
        return Ok(e);
    }
    let mut rng = SimRng::new(0);
    let mut cx = EvalCtx::new(&mut rng);
    cx.folding = true;
    // An evaluation error has no position, as in PostgreSQL (it is not about the text).
    // A value too large to make while planning (`EvalCtx::room_for`) is made when the
    // statement runs, within its statement_mem.
    let v = match e.eval(&[], &mut cx) {
        Ok(v) => v,
        Err(err) if err.code == code::OUT_OF_MEMORY => return Ok(e),
        Err(err) => return Err(err.at(NO_POSITION)),
    };
    // A folded NULL keeps its type for the column it may create.
    if matches!(v, Value::Null) || value::type_of(&v) != e.ty() {
        let ty = e.ty();
        return Ok(Expr::Cast(
            Box::new(Expr::Const(v)),
            DeclaredType::plain(ty),
        ));
    }
    Ok(Expr::Const(v))
}

impl<'a> Binder<'a> {
    pub fn plain(scope: &Scope) -> Binder<'_> {
        Binder {
            scope,
            grouping: None,
            cx: None,
            windows: None,
            set_returning: None,
            params: Params::Absent,
        }
    }

    /// This binder, binding the statement's parameters as `params` says.
    pub(crate) fn with_params(self, params: Params<'a>) -> Self {
        Binder { params, ..self }
    }

    /// A binder for a query's clauses, where subqueries may appear.
    pub fn in_query<'b>(scope: &'b Scope, cx: &'b dyn SubqueryPlanner) -> Binder<'b> {
        Binder {
            scope,
            grouping: None,
            cx: Some(cx),
            windows: None,
            set_returning: None,
            params: cx.params(),
        }
    }

    /// A binder over the same scope and context, without grouping.
    pub(super) fn ungrouped(&self) -> Binder<'_> {
        Binder {
            scope: self.scope,
            grouping: None,
            cx: self.cx,
            windows: None,
            set_returning: None,
            params: self.params,
        }
    }

    pub fn bind(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        // The span of an expression is found by walking all of it: only worth it for an
        // error that has no position yet.
        depth::recurse(|| {
            self.bind_inner(e).map_err(|err| match err.location {
                None => err.at(e.span().start),
                Some(_) => err,
            })
        })
    }

    fn bind_inner(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        match self.grouping.as_deref_mut() {
            Some(g) if g.collecting => {
                if let Some(x) = self.aggregate(e)? {
                    return Ok(x);
                }
            }
            Some(_) => return self.bind_grouped(e),
            None => {}
        }
        self.bind_node(e)
    }

    /// Binds one node; its operands go through [`Binder::bind`].
    pub(super) fn bind_node(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as A;
        let bound = match e {
            A::Nested(inner) => self.bind(inner)?,
            A::Identifier(_)
            | A::CompoundIdentifier(_)
            | A::CompoundFieldAccess { .. }
            | A::Collate { .. } => self.name(e)?,
            A::Value(_) | A::TypedString(_) | A::Interval(_) | A::AtTimeZone { .. } => {
                self.written_value(e)?
            }
            // A cast folds itself: a text value written in stays a cast.
            A::Cast {
                kind,
                expr,
                data_type,
                ..
            } => return self.cast(kind, expr, data_type),
            A::UnaryOp { .. }
            | A::BinaryOp { .. }
            | A::IsNull(_)
            | A::IsNotNull(_)
            | A::Between { .. }
            | A::InList { .. }
            | A::Like { .. }
            | A::ILike { .. } => self.operator(e)?,
            A::Function(_)
            | A::Case { .. }
            | A::Ceil { .. }
            | A::Floor { .. }
            | A::Extract { .. }
            | A::Trim { .. }
            | A::Position { .. }
            | A::Substring { .. } => self.call(e)?,
            A::Subquery(_)
            | A::Exists { .. }
            | A::InSubquery { .. }
            | A::AnyOp { .. }
            | A::AllOp { .. } => self.subquery_expr(e)?,
            other => return Err(unsupported_expression(other)),
        };
        fold(bound)
    }
}

/// The error for an expression binding does not take.
pub(super) fn unsupported_expression(e: &ast::Expr) -> SqlError {
    SqlError::unsupported(format!("the expression {}", clip(&e.to_string())))
}
