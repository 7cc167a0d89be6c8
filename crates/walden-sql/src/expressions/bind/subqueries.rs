//! Subqueries in expressions: the outer query a correlated name reaches, scalar and
//! EXISTS subqueries, IN and ANY/ALL over a subquery (or `= ANY` over an array).

use std::sync::Arc;

use sqlparser::ast::{self, BinaryOperator, Spanned};

use super::literals::{coerce_literal, text_of};
use super::operators::{check_comparable, cmp_op, negate_if};
use super::{unsupported_expression, Binder};
use crate::catalog::{Catalog, Scope};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{CmpOp, Expr, Subquery, SubqueryKind, SubqueryPlan};
use crate::functions::Func;
use crate::infer::Params;
use crate::types::{DeclaredType, SqlType};

/// The query a subquery is bound inside: its scope, which the subquery's names may
/// reach when its own do not have them (a correlated subquery), and the values of
/// those outer columns the subquery needs, collected as they are found (its
/// parameters, evaluated on the outer row each time the subquery runs).
pub struct Outer<'a> {
    pub scope: &'a Scope,
    pub params: std::cell::RefCell<Vec<Expr>>,
    pub parent: Option<&'a Outer<'a>>,
}

impl Outer<'_> {
    /// An outer column: `Expr::Outer(k)`, parameter k of the subquery bound in this
    /// query; None when no enclosing query has it.
    pub(super) fn resolve(
        &self,
        table: Option<&ast::Ident>,
        id: &ast::Ident,
    ) -> SqlResult<Option<Expr>> {
        let value = match self.scope.resolve(table, id)? {
            Some((i, _)) if table.is_none() => self.scope.column_expr(i),
            Some((i, ty)) => Expr::Column(i, ty),
            None => match self.parent {
                Some(p) => match p.resolve(table, id)? {
                    Some(e) => e,
                    None => return Ok(None),
                },
                None => return Ok(None),
            },
        };
        let ty = value.ty();
        let mut params = self.params.borrow_mut();
        let k = match params.iter().position(|p| *p == value) {
            Some(k) => k,
            None => {
                params.push(value);
                params.len() - 1
            }
        };
        Ok(Some(Expr::Outer(k, ty)))
    }
}

/// The query an expression is bound in, as binding needs it: the statement's catalog,
/// the enclosing query a correlated name reaches, and the planner of the subqueries the
/// expression holds. The planner's context (`select::PlanCx`) is one: binding reaches the
/// planner through it, never by name.
pub trait SubqueryPlanner {
    fn catalog(&self) -> &dyn Catalog;
    /// Set while a subquery is bound: the query it is inside.
    fn outer(&self) -> Option<&Outer<'_>>;
    /// Plans `q`, a subquery of an expression of this query, inside `outer`: a name its
    /// own scope lacks is found there (and becomes one of `outer`'s parameters).
    fn plan_subquery(&self, q: &ast::Query, outer: &Outer) -> SqlResult<Arc<dyn SubqueryPlan>>;
    /// What binding knows of the statement's parameters.
    fn params(&self) -> Params<'_>;
}

/// The type of a subquery's one column (a subquery in an expression gives one).
fn one_column(plan: &Arc<dyn SubqueryPlan>, q: &ast::Query) -> SqlResult<SqlType> {
    match plan.columns() {
        [(_, ty)] => Ok(*ty),
        _ => Err(SqlError::syntax("subquery must return only one column").at(q.span().start)),
    }
}

impl Binder<'_> {
    /// A subquery in an expression: scalar, EXISTS, IN, or under ANY or ALL (or an
    /// array under `= ANY`).
    pub(super) fn subquery_expr(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as A;
        match e {
            A::Subquery(q) => self.scalar_subquery(q),
            A::Exists { subquery, negated } => self.exists(subquery, *negated),
            A::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let e = self.quantified(expr, CmpOp::Eq, subquery, false)?;
                Ok(negate_if(e, *negated))
            }
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => self.any_all(left, compare_op, right, false),
            A::AllOp {
                left,
                compare_op,
                right,
            } => self.any_all(left, compare_op, right, true),
            other => Err(unsupported_expression(other)),
        }
    }

    /// `(subquery)` as a value: its one column of its one row.
    fn scalar_subquery(&mut self, q: &ast::Query) -> SqlResult<Expr> {
        let (plan, params) = self.subquery(q)?;
        let ty = one_column(&plan, q)?;
        Ok(Expr::Subquery(Box::new(Subquery {
            kind: SubqueryKind::Scalar,
            plan,
            params,
            lhs: None,
            ty,
        })))
    }

    /// `array(subquery)`: the subquery's one column as an array (in its text form).
    pub(super) fn array_subquery(&mut self, q: &ast::Query) -> SqlResult<Expr> {
        let (plan, params) = self.subquery(q)?;
        one_column(&plan, q)?;
        Ok(Expr::Subquery(Box::new(Subquery {
            kind: SubqueryKind::Array,
            plan,
            params,
            lhs: None,
            ty: SqlType::Text,
        })))
    }

    /// `[NOT] EXISTS (subquery)`.
    fn exists(&mut self, subquery: &ast::Query, negated: bool) -> SqlResult<Expr> {
        let (plan, params) = self.subquery(subquery)?;
        let e = Expr::Subquery(Box::new(Subquery {
            kind: SubqueryKind::Exists,
            plan,
            params,
            lhs: None,
            ty: SqlType::Bool,
        }));
        Ok(negate_if(e, negated))
    }

    /// `left op ANY (right)` or, `all`, `left op ALL (right)`: over a subquery, or
    /// `= ANY` over an array.
    fn any_all(
        &mut self,
        left: &ast::Expr,
        compare_op: &BinaryOperator,
        right: &ast::Expr,
        all: bool,
    ) -> SqlResult<Expr> {
        let op = cmp_op(compare_op).ok_or_else(|| {
            SqlError::unsupported(format!("the operator {compare_op} with ANY or ALL"))
        })?;
        let mut inner = right;
        while let ast::Expr::Nested(x) = inner {
            inner = x;
        }
        let ast::Expr::Subquery(q) = inner else {
            if all || op != CmpOp::Eq {
                return Err(SqlError::unsupported(
                    "ALL, or an operator but =, over an array",
                ));
            }
            return self.eq_any_array(left, inner);
        };
        self.quantified(left, op, q, all)
    }

    /// Plans a subquery bound in this binder's query: its outer references become its
    /// parameters, values of this query's row.
    pub(super) fn subquery(
        &mut self,
        q: &ast::Query,
    ) -> SqlResult<(Arc<dyn SubqueryPlan>, Vec<Expr>)> {
        let Some(cx) = self.cx else {
            return Err(SqlError::unsupported("a subquery here"));
        };
        if self.params.typed() {
            // A prepared statement's cached plan does not reach into subqueries: it is
            // bound with its values written in.
            return Err(SqlError::unsupported("a parameter in a cached subquery"));
        }
        let outer = Outer {
            scope: self.scope,
            params: std::cell::RefCell::new(Vec::new()),
            parent: cx.outer(),
        };
        let plan = cx.plan_subquery(q, &outer)?;
        let params = outer.params.into_inner();
        Ok((plan, params))
    }

    /// `x = ANY(array)`, the array in text form (`crate::array`): x is compared as text.
    fn eq_any_array(&mut self, x: &ast::Expr, array: &ast::Expr) -> SqlResult<Expr> {
        let arr = coerce_literal(self.params, self.bind(array)?, SqlType::Text)?;
        if !matches!(arr.ty(), SqlType::Text | SqlType::Null) {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "op ANY/ALL (array) requires array on right side, not {}",
                    arr.ty().name()
                ),
            ));
        }
        let x = self.bind(x)?;
        let x = match x.ty() {
            SqlType::Text | SqlType::Null => x,
            _ => Expr::Cast(Box::new(x), DeclaredType::plain(SqlType::Text)),
        };
        Ok(Expr::Call(Func::EqAnyArray, vec![x, arr], SqlType::Bool))
    }

    /// `lhs op ANY (subquery)` or `lhs op ALL (subquery)`.
    fn quantified(
        &mut self,
        lhs: &ast::Expr,
        op: CmpOp,
        q: &ast::Query,
        all: bool,
    ) -> SqlResult<Expr> {
        let x = self.bind(lhs)?;
        let (plan, params) = self.subquery(q)?;
        let ty = match plan.columns() {
            [(_, ty)] => *ty,
            [] => return Err(SqlError::syntax("subquery has too few columns").at(q.span().start)),
            _ => return Err(SqlError::syntax("subquery has too many columns").at(q.span().start)),
        };
        let x = coerce_literal(self.params, x, ty)?;
        let x = if ty == SqlType::Bpchar { x } else { text_of(x) };
        check_comparable(&x, &Expr::Column(0, ty), "=")?;
        Ok(Expr::Subquery(Box::new(Subquery {
            kind: if all {
                SubqueryKind::All(op)
            } else {
                SubqueryKind::Any(op)
            },
            plan,
            params,
            lhs: Some(x),
            ty: SqlType::Bool,
        })))
    }
}
