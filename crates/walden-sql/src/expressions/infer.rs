//! Parameter types inferred from context, as PostgreSQL infers the types of the
//! parameters a client sends without one (`Session::describe`).
//!
//! While a prepared statement is bound for inference ([`infer`]), a `$n` whose type is
//! not yet known binds as an *unknown parameter*, `Expr::Param(n, text)`: the binder
//! treats it as it treats a string literal, PostgreSQL's other value of unknown type, so
//! the contexts that give a literal a type give the parameter that type
//! (`bind::coerce_literal` calls [`Params::resolve`]): the other side of a comparison, the
//! column of an INSERT or UPDATE, a function's argument, LIMIT, a cast. From then on the
//! parameter binds as a NULL of its type, a constant such as a value written in would be
//! (a later `$n` too, as in PostgreSQL, where a parameter keeps the first type given).
//! A parameter no context types is text, as PostgreSQL resolves unknown to text; one
//! met, untyped, where PostgreSQL leaves it unknown (`$1 IS NULL`, `count($1)`) is an
//! error, 42P18, or 42P08 when another use typed it after.

use std::cell::RefCell;

use walden::Value;

use sqlparser::ast;
use sqlparser::tokenizer::Span;

use crate::error::{code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::types::{DeclaredType, SqlType};

/// What binding knows of the parameters (`$n`) of the statement it binds: carried by
/// every binder (`Binder::params`) and by the planner's context (`select::PlanCx`), from
/// where the statement is bound down to each of its expressions.
#[derive(Clone, Copy, Default)]
pub enum Params<'a> {
    /// `$n` is no parameter here (a statement bound with its values written in).
    #[default]
    Absent,
    /// A prepared statement's plan bound to be cached: `$n` binds as parameter `n` of
    /// type `types[n - 1]`.
    Typed(&'a [SqlType]),
    /// The statement is bound to infer its parameters' types ([`infer`]).
    Inferring(&'a RefCell<State>),
}

/// What is known of the parameters of the statement being bound.
pub struct State {
    /// Each parameter's type: declared, or given by the first context that typed it.
    types: Vec<Option<SqlType>>,
    /// Parameters met untyped where PostgreSQL leaves the type unknown.
    bare: Vec<bool>,
    /// Parameters the statement's binding met at all.
    referenced: Vec<bool>,
}

/// Runs `f`, which binds a statement with parameters `$1`..`$declared.len()` under the
/// `Params` it is given, inferring the types of those `declared` leaves None; returns
/// what `f` returns and every parameter's type.
pub(crate) fn infer<R>(
    declared: &[Option<SqlType>],
    f: impl FnOnce(Params) -> SqlResult<R>,
) -> SqlResult<(R, Vec<SqlType>)> {
    let state = RefCell::new(State {
        types: declared.to_vec(),
        bare: vec![false; declared.len()],
        referenced: vec![false; declared.len()],
    });
    let out = f(Params::Inferring(&state))?;
    let state = state.into_inner();
    let mut types = Vec::with_capacity(state.types.len());
    for (n, ty) in state.types.iter().enumerate() {
        // A parameter the statement does not use, or uses only where it stays unknown.
        let unused = !state.referenced[n] || state.bare[n];
        match (ty, unused) {
            (None, true) => return Err(undetermined(code::INDETERMINATE_DATATYPE, n)),
            (Some(_), true) if state.bare[n] => {
                return Err(undetermined(code::AMBIGUOUS_PARAMETER, n))
            }
            (ty, _) => types.push(ty.unwrap_or(SqlType::Text)),
        }
    }
    Ok((out, types))
}

fn undetermined(code: &'static str, n: usize) -> SqlError {
    SqlError::new(
        code,
        format!("could not determine data type of parameter ${}", n + 1),
    )
}

/// A NULL of type `ty`, as binding leaves `CAST(NULL AS ty)`.
fn typed_null(ty: SqlType) -> Expr {
    Expr::Cast(Box::new(Expr::Const(Value::Null)), DeclaredType::plain(ty))
}

impl Params<'_> {
    /// True while a prepared statement's plan is bound to be cached.
    pub(crate) fn typed(self) -> bool {
        matches!(self, Params::Typed(_))
    }

    /// The parameter a placeholder (`$n`) names, while a plan is bound to be cached.
    pub(crate) fn placeholder(self, p: &str) -> Option<Expr> {
        let n: usize = p.strip_prefix('$')?.parse().ok()?;
        let Params::Typed(types) = self else {
            return None;
        };
        let ty = *types.get(n.checked_sub(1)?)?;
        Some(Expr::Param(n - 1, ty))
    }

    /// True while a statement is bound for inference.
    fn inferring(self) -> bool {
        matches!(self, Params::Inferring(_))
    }

    /// `$n` (1-based) as binding for inference meets it: a NULL of its type when that is
    /// known, else the unknown parameter. None when no statement is bound for inference.
    pub(crate) fn reference(self, n: usize) -> Option<SqlResult<Expr>> {
        let Params::Inferring(state) = self else {
            return None;
        };
        let mut s = state.borrow_mut();
        let i = n.checked_sub(1)?;
        if let Some(r) = s.referenced.get_mut(i) {
            *r = true;
        }
        Some(match s.types.get(i) {
            Some(Some(ty)) => Ok(typed_null(*ty)),
            Some(None) => Ok(Expr::Param(i, SqlType::Text)),
            None => Err(SqlError::new(
                code::UNDEFINED_PARAMETER,
                format!("there is no parameter ${n}"),
            )),
        })
    }

    /// The unknown parameter `e` is, if it is one (0-based).
    pub(crate) fn unknown(self, e: &Expr) -> Option<usize> {
        match e {
            Expr::Param(n, _) if self.inferring() => Some(*n),
            _ => None,
        }
    }

    /// Gives unknown parameter `n` (0-based) the type `to` a context gives it, as
    /// PostgreSQL's coercion of an unknown-typed parameter does; returns what it binds
    /// as from now on. A type other than one given before is an error.
    pub(crate) fn resolve(self, n: usize, to: SqlType) -> SqlResult<Expr> {
        let not_inferred = || {
            SqlError::new(
                code::INTERNAL,
                format!("parameter ${} is not being inferred", n + 1),
            )
        };
        let Params::Inferring(state) = self else {
            return Err(not_inferred());
        };
        let mut s = state.borrow_mut();
        let Some(slot) = s.types.get_mut(n) else {
            return Err(not_inferred());
        };
        match slot {
            None => *slot = Some(to),
            Some(t) if *t == to => {}
            Some(t) => {
                return Err(SqlError::new(
                    code::AMBIGUOUS_PARAMETER,
                    format!("inconsistent types deduced for parameter ${}", n + 1),
                )
                .with_detail(format!("{} versus {}", t.name(), to.name())))
            }
        }
        Ok(typed_null(to))
    }

    /// Notes that `e`, if an unknown parameter, stands where PostgreSQL leaves a
    /// parameter's type undetermined (`$1 IS NULL`, an argument of type "any").
    pub(crate) fn note_bare(self, e: &Expr) {
        let (Some(n), Params::Inferring(state)) = (self.unknown(e), self) else {
            return;
        };
        if let Some(b) = state.borrow_mut().bare.get_mut(n) {
            *b = true;
        }
    }
}

/// True for an expression a prepared statement's run wrote in for a parameter
/// (`literal`, `typed_literal`): a value with no place in the text, maybe under the one
/// cast that gives it its type. The parser gives every node it makes a place, so none
/// of those is taken for one of these.
pub(crate) fn is_written_in(e: &ast::Expr) -> bool {
    let spanless = |e: &ast::Expr| matches!(e, ast::Expr::Value(v) if v.span == Span::empty());
    match e {
        ast::Expr::Cast { expr, .. } => spanless(expr),
        e => spanless(e),
    }
}
