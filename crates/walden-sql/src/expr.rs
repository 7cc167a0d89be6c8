//! Bound expressions: columns resolved to positions and types fixed, ready to evaluate
//! row after row.

use std::cmp::Ordering;

use walden::rng::SimRng;
use walden::Value;

use crate::error::{SqlError, SqlResult};
use crate::functions::{self, Func};
use crate::types::{DeclaredType, SqlType};
use crate::value::{self, ArithOp};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    fn holds(self, o: Ordering) -> bool {
        match self {
            CmpOp::Eq => o == Ordering::Equal,
            CmpOp::NotEq => o != Ordering::Equal,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::LtEq => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::GtEq => o != Ordering::Less,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Const(Value),
    /// A value of the input row.
    Column(usize, SqlType),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Arith(ArithOp, Box<Expr>, Box<Expr>, SqlType),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    Concat(Box<Expr>, Box<Expr>),
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
        ty: SqlType,
    },
    Cast(Box<Expr>, DeclaredType),
    Call(Func, Vec<Expr>, SqlType),
    Coalesce(Vec<Expr>, SqlType),
    InList(Box<Expr>, Vec<Expr>, bool),
}

/// What evaluation may need besides the row.
pub struct EvalCtx<'a> {
    pub rng: &'a mut SimRng,
}

impl Expr {
    pub fn ty(&self) -> SqlType {
        match self {
            Expr::Const(v) => value::type_of(v),
            Expr::Column(_, t) => *t,
            Expr::Neg(e) => e.ty(),
            Expr::Arith(_, _, _, t)
            | Expr::Case { ty: t, .. }
            | Expr::Call(_, _, t)
            | Expr::Coalesce(_, t) => *t,
            Expr::Not(_)
            | Expr::Cmp(..)
            | Expr::And(..)
            | Expr::Or(..)
            | Expr::IsNull(..)
            | Expr::InList(..) => SqlType::Bool,
            Expr::Concat(..) => SqlType::Text,
            Expr::Cast(_, d) => d.ty,
        }
    }

    /// True if the expression reads no row and calls nothing random: it can be
    /// evaluated once, when binding.
    pub fn is_constant(&self) -> bool {
        match self {
            Expr::Const(_) => true,
            Expr::Column(..) => false,
            Expr::Neg(e) | Expr::Not(e) | Expr::IsNull(e, _) | Expr::Cast(e, _) => e.is_constant(),
            Expr::Arith(_, a, b, _)
            | Expr::Cmp(_, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Concat(a, b) => a.is_constant() && b.is_constant(),
            Expr::Case {
                operand,
                whens,
                otherwise,
                ..
            } => {
                operand.as_ref().is_none_or(|e| e.is_constant())
                    && whens
                        .iter()
                        .all(|(w, t)| w.is_constant() && t.is_constant())
                    && otherwise.as_ref().is_none_or(|e| e.is_constant())
            }
            Expr::Call(f, args, _) => !f.is_volatile() && args.iter().all(Expr::is_constant),
            Expr::Coalesce(args, _) => args.iter().all(Expr::is_constant),
            Expr::InList(e, list, _) => e.is_constant() && list.iter().all(Expr::is_constant),
        }
    }

    pub fn eval(&self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
        Ok(match self {
            Expr::Const(v) => v.clone(),
            Expr::Column(i, _) => row.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Neg(e) => value::negate(&e.eval(row, cx)?)?,
            Expr::Not(e) => match e.eval(row, cx)? {
                Value::Bool(b) => Value::Bool(!b),
                _ => Value::Null,
            },
            Expr::Arith(op, a, b, ty) => {
                let (x, y) = (a.eval(row, cx)?, b.eval(row, cx)?);
                value::arith(*op, &x, &y, *ty)?
            }
            Expr::Cmp(op, a, b) => {
                let (x, y) = (a.eval(row, cx)?, b.eval(row, cx)?);
                match value::compare(&x, &y) {
                    Some(o) => Value::Bool(op.holds(o)),
                    None => Value::Null,
                }
            }
            Expr::And(a, b) => match a.eval(row, cx)? {
                Value::Bool(false) => Value::Bool(false),
                x => match (x, b.eval(row, cx)?) {
                    (_, Value::Bool(false)) => Value::Bool(false),
                    (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
                    _ => Value::Null,
                },
            },
            Expr::Or(a, b) => match a.eval(row, cx)? {
                Value::Bool(true) => Value::Bool(true),
                x => match (x, b.eval(row, cx)?) {
                    (_, Value::Bool(true)) => Value::Bool(true),
                    (Value::Bool(false), Value::Bool(false)) => Value::Bool(false),
                    _ => Value::Null,
                },
            },
            Expr::IsNull(e, negated) => {
                Value::Bool(matches!(e.eval(row, cx)?, Value::Null) != *negated)
            }
            Expr::Concat(a, b) => {
                let (x, y) = (a.eval(row, cx)?, b.eval(row, cx)?);
                match (value::to_text(&x), value::to_text(&y)) {
                    (Some(mut s), Some(t)) => {
                        s.push_str(&t);
                        Value::Text(s)
                    }
                    _ => Value::Null,
                }
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
                ..
            } => {
                let subject = match operand {
                    Some(e) => Some(e.eval(row, cx)?),
                    None => None,
                };
                for (when, then) in whens {
                    let w = when.eval(row, cx)?;
                    let hit = match &subject {
                        Some(s) => value::compare(s, &w) == Some(Ordering::Equal),
                        None => w == Value::Bool(true),
                    };
                    if hit {
                        return then.eval(row, cx);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(row, cx)?,
                    None => Value::Null,
                }
            }
            Expr::Cast(e, to) => value::cast(e.eval(row, cx)?, to, true)?,
            Expr::Call(f, args, _) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(a.eval(row, cx)?);
                }
                functions::call(*f, &vals, cx)?
            }
            Expr::Coalesce(args, _) => {
                for a in args {
                    let v = a.eval(row, cx)?;
                    if !matches!(v, Value::Null) {
                        return Ok(v);
                    }
                }
                Value::Null
            }
            Expr::InList(e, list, negated) => {
                let x = e.eval(row, cx)?;
                if matches!(x, Value::Null) {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for item in list {
                    let y = item.eval(row, cx)?;
                    match value::compare(&x, &y) {
                        Some(Ordering::Equal) => return Ok(Value::Bool(!negated)),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*negated)
                }
            }
        })
    }

    /// Evaluates a condition: only TRUE passes (NULL does not).
    pub fn test(&self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        match self.eval(row, cx)? {
            Value::Bool(b) => Ok(b),
            Value::Null => Ok(false),
            other => Err(SqlError::new(
                crate::error::code::DATATYPE_MISMATCH,
                format!(
                    "argument of WHERE must be type boolean, not {}",
                    value::type_of(&other).name()
                ),
            )),
        }
    }
}
