//! Bound expressions: columns resolved to positions and types fixed, ready to evaluate
//! row after row.

use std::cmp::Ordering;
use std::sync::Arc;

use walden::rng::SimRng;
use walden::Value;

use crate::error::{code, SqlError, SqlResult};
use crate::functions::{self, Func};
use crate::pg_catalog::{CatalogFn, Snap};
use crate::run::RunCx;
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
    pub fn holds(self, o: Ordering) -> bool {
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

/// Calls of at most this many arguments evaluate them into an array on the stack.
const SMALL_ARGS: usize = 4;

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Const(Value),
    /// Parameter `n` (0-based) of a prepared statement's cached plan, of the type its
    /// values have; replaced by the value before the plan runs (`with_params`). While a
    /// statement is described, a parameter of a type not yet inferred, typed text
    /// (`infer.rs`); never run.
    Param(usize, SqlType),
    /// A value of the input row.
    Column(usize, SqlType),
    /// Negation, with its type.
    Neg(Box<Expr>, SqlType),
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
    /// A function of the virtual catalog (`pg_catalog/functions.rs`), with the
    /// statement's catalog snapshot it reads.
    Catalog(CatalogFn, Vec<Expr>, Snap, SqlType),
    Coalesce(Vec<Expr>, SqlType),
    InList(Box<Expr>, Vec<Expr>, bool),
    /// Parameter `n` of the subquery this expression is part of: a value of the
    /// enclosing query's row (a correlated subquery's outer column).
    Outer(usize, SqlType),
    Subquery(Box<Subquery>),
}

/// What a subquery in an expression gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SubqueryKind {
    /// `(SELECT x ...)`: its one value, or NULL for no row.
    Scalar,
    /// `ARRAY(SELECT x ...)`: its values as an array, in text form (`crate::array`).
    Array,
    /// `EXISTS (SELECT ...)`.
    Exists,
    /// `lhs op ANY (SELECT x ...)` (`IN` is `= ANY`).
    Any(CmpOp),
    /// `lhs op ALL (SELECT x ...)`.
    All(CmpOp),
}

/// A subquery's plan, made by the planner while the expression holding it is bound and
/// run by it when the expression is evaluated (`run::SubqueryRunner`): expressions hold
/// it without knowing what it is (`select::QueryPlan`).
pub trait SubqueryPlan: std::fmt::Debug + Send + Sync {
    /// The subquery's result columns.
    fn columns(&self) -> &[(String, SqlType)];
    /// The plan as what it is, for the planner that made it.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A subquery in an expression, with the values of the enclosing row it reads
/// (`params`, bound in the enclosing query; `Expr::Outer(n)` inside reads value n).
#[derive(Debug, Clone)]
pub struct Subquery {
    pub kind: SubqueryKind,
    pub plan: Arc<dyn SubqueryPlan>,
    pub params: Vec<Expr>,
    pub lhs: Option<Expr>,
    pub ty: SqlType,
}

impl PartialEq for Subquery {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.plan, &other.plan)
            && self.kind == other.kind
            && self.params == other.params
            && self.lhs == other.lhs
    }
}

/// What evaluation may need besides the row.
pub struct EvalCtx<'a> {
    pub rng: &'a mut SimRng,
    /// The values `Expr::Outer` reads (a subquery's parameters while it runs).
    pub outer: &'a [Value],
    /// The running query: what subqueries read with, what runs them, and what they
    /// found.
    pub run: Option<&'a RunCx<'a>>,
    /// What now() gives: the transaction's start, microseconds since 2000-01-01 UTC.
    pub now_micros: i64,
    /// The session's settings (`current_setting`, `set_config`); none where no
    /// session's statement runs (constant folding, CHECK constraints, unit tests).
    pub settings: Option<&'a crate::settings::StatementSettings>,
    /// The session's sequences (`nextval`, `currval`, `lastval`, `setval`); none where
    /// no session's statement runs.
    pub sequences: Option<&'a crate::sequences::StatementSequences>,
    /// The statement's checks, where one runs (what `room_for` asks; a running query's
    /// is its `run`'s too).
    pub(crate) guard: Option<&'a crate::guard::Guard>,
    /// Constant folding (`bind::fold`): values over 1 MiB are not made.
    pub(crate) folding: bool,
}

impl<'a> EvalCtx<'a> {
    /// A context for expressions that read no tables, at 2000-01-01 (constant folding,
    /// which never folds now(), and unit tests).
    pub fn new(rng: &'a mut SimRng) -> EvalCtx<'a> {
        EvalCtx::at(rng, 0)
    }

    /// A context for expressions that read no tables, in a transaction that started at
    /// `now_micros`.
    pub fn at(rng: &'a mut SimRng, now_micros: i64) -> EvalCtx<'a> {
        EvalCtx {
            rng,
            outer: &[],
            run: None,
            now_micros,
            settings: None,
            sequences: None,
            guard: None,
            folding: false,
        }
    }

    /// A context for expressions that read no tables, in the statement `guard` checks.
    pub(crate) fn of(rng: &'a mut SimRng, guard: &'a crate::guard::Guard) -> EvalCtx<'a> {
        EvalCtx {
            settings: guard.settings(),
            sequences: guard.sequences(),
            guard: Some(guard),
            ..EvalCtx::at(rng, guard.now_micros())
        }
    }

    /// A context for a subquery's run inside this one's: the same reads, checks, now()
    /// and settings, with `outer` as the values `Expr::Outer` reads.
    pub(crate) fn nested<'b>(&'b mut self, outer: &'b [Value]) -> EvalCtx<'b> {
        EvalCtx {
            rng: &mut *self.rng,
            outer,
            run: self.run,
            now_micros: self.now_micros,
            settings: self.settings,
            sequences: self.sequences,
            guard: self.guard,
            folding: false,
        }
    }

    /// The statement's checks, if one runs.
    pub(crate) fn statement_guard(&self) -> Option<&crate::guard::Guard> {
        self.guard.or(self.run.map(|r| r.guard))
    }

    /// A value of `bytes` is about to be made: past 1 MiB it must fit in what the
    /// statement may still take (`statement_mem`, 53200), as every value a statement
    /// builds counts against it (a row it keeps is charged as it is kept).
    pub(crate) fn room_for(&self, bytes: usize) -> SqlResult<()> {
        if bytes < 1 << 20 {
            return Ok(());
        }
        match self.statement_guard() {
            Some(g) => g.room(bytes as u64),
            // Constant folding: a large value is left to be made when the statement
            // runs, within its budget (`bind::fold` keeps the expression).
            None if self.folding => Err(SqlError::new(
                code::OUT_OF_MEMORY,
                "a large value is made when the statement runs",
            )),
            None => Ok(()),
        }
    }
}

impl Expr {
    pub fn ty(&self) -> SqlType {
        match self {
            Expr::Const(v) => value::type_of(v),
            Expr::Column(_, t) | Expr::Param(_, t) | Expr::Outer(_, t) => *t,
            Expr::Subquery(s) => s.ty,
            Expr::Neg(_, t) => *t,
            Expr::Arith(_, _, _, t)
            | Expr::Case { ty: t, .. }
            | Expr::Call(_, _, t)
            | Expr::Catalog(_, _, _, t)
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

    /// True for a constant as binding leaves it: a value, or a NULL (or a value of a
    /// type its representation does not show) kept as a cast that gives it its type.
    pub fn is_folded_constant(&self) -> bool {
        match self {
            Expr::Const(_) => true,
            Expr::Cast(inner, _) => matches!(**inner, Expr::Const(_)),
            _ => false,
        }
    }

    /// True if the expression calls nothing random and its operands are folded
    /// constants: it can be evaluated once, when binding. Binding folds bottom-up, so
    /// looking one level down is enough (and keeps binding a long chain linear).
    pub fn is_foldable(&self) -> bool {
        let folded = Expr::is_folded_constant;
        match self {
            Expr::Const(_) => true,
            Expr::Column(..) | Expr::Param(..) | Expr::Outer(..) | Expr::Subquery(_) => false,
            Expr::Neg(e, _) | Expr::Not(e) | Expr::IsNull(e, _) | Expr::Cast(e, _) => folded(e),
            Expr::Arith(_, a, b, _)
            | Expr::Cmp(_, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Concat(a, b) => folded(a) && folded(b),
            Expr::Case {
                operand,
                whens,
                otherwise,
                ..
            } => {
                operand.as_deref().is_none_or(folded)
                    && whens.iter().all(|(w, t)| folded(w) && folded(t))
                    && otherwise.as_deref().is_none_or(folded)
            }
            Expr::Call(f, args, _) => !f.is_volatile() && args.iter().all(folded),
            Expr::Catalog(f, args, _, _) => !f.needs_user() && args.iter().all(folded),
            Expr::Coalesce(args, _) => args.iter().all(folded),
            Expr::InList(e, list, _) => folded(e) && list.iter().all(folded),
        }
    }

    /// The same node over operands mapped by `f`; None if `f` gives None for one.
    pub fn try_map_operands(self, f: &mut impl FnMut(Expr) -> Option<Expr>) -> Option<Expr> {
        Some(match self {
            Expr::Const(_) | Expr::Column(..) | Expr::Param(..) | Expr::Outer(..) => self,
            Expr::Subquery(mut s) => {
                s.lhs = match s.lhs.take() {
                    Some(e) => Some(f(e)?),
                    None => None,
                };
                s.params = std::mem::take(&mut s.params)
                    .into_iter()
                    .map(&mut *f)
                    .collect::<Option<_>>()?;
                Expr::Subquery(s)
            }
            Expr::Neg(e, ty) => Expr::Neg(Box::new(f(*e)?), ty),
            Expr::Not(e) => Expr::Not(Box::new(f(*e)?)),
            Expr::IsNull(e, negated) => Expr::IsNull(Box::new(f(*e)?), negated),
            Expr::Cast(e, to) => Expr::Cast(Box::new(f(*e)?), to),
            Expr::Arith(op, a, b, ty) => Expr::Arith(op, Box::new(f(*a)?), Box::new(f(*b)?), ty),
            Expr::Cmp(op, a, b) => Expr::Cmp(op, Box::new(f(*a)?), Box::new(f(*b)?)),
            Expr::And(a, b) => Expr::And(Box::new(f(*a)?), Box::new(f(*b)?)),
            Expr::Or(a, b) => Expr::Or(Box::new(f(*a)?), Box::new(f(*b)?)),
            Expr::Concat(a, b) => Expr::Concat(Box::new(f(*a)?), Box::new(f(*b)?)),
            Expr::Case {
                operand,
                whens,
                otherwise,
                ty,
            } => Expr::Case {
                operand: match operand {
                    Some(e) => Some(Box::new(f(*e)?)),
                    None => None,
                },
                whens: whens
                    .into_iter()
                    .map(|(w, t)| Some((f(w)?, f(t)?)))
                    .collect::<Option<_>>()?,
                otherwise: match otherwise {
                    Some(e) => Some(Box::new(f(*e)?)),
                    None => None,
                },
                ty,
            },
            Expr::Call(func, args, ty) => Expr::Call(
                func,
                args.into_iter().map(&mut *f).collect::<Option<_>>()?,
                ty,
            ),
            Expr::Catalog(func, args, snap, ty) => Expr::Catalog(
                func,
                args.into_iter().map(&mut *f).collect::<Option<_>>()?,
                snap,
                ty,
            ),
            Expr::Coalesce(args, ty) => {
                Expr::Coalesce(args.into_iter().map(&mut *f).collect::<Option<_>>()?, ty)
            }
            Expr::InList(e, list, negated) => {
                let e = Box::new(f(*e)?);
                Expr::InList(
                    e,
                    list.into_iter().map(&mut *f).collect::<Option<_>>()?,
                    negated,
                )
            }
        })
    }

    /// Calls `f` with this expression and each expression inside it (not inside a
    /// subquery's own plan: its parameters and left operand only).
    /// The AND-ed parts of a condition, in order (itself when it is no AND).
    pub(crate) fn and_parts<'e>(&'e self, out: &mut Vec<&'e Expr>) {
        match self {
            Expr::And(a, b) => crate::depth::recurse(|| {
                a.and_parts(out);
                b.and_parts(out);
            }),
            e => out.push(e),
        }
    }

    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        crate::depth::recurse(|| {
            f(self);
            match self {
                Expr::Const(_) | Expr::Column(..) | Expr::Param(..) | Expr::Outer(..) => {}
                Expr::Subquery(s) => {
                    s.lhs.iter().for_each(|e| e.visit(f));
                    s.params.iter().for_each(|e| e.visit(f));
                }
                Expr::Neg(e, _) | Expr::Not(e) | Expr::IsNull(e, _) | Expr::Cast(e, _) => {
                    e.visit(f)
                }
                Expr::Arith(_, a, b, _)
                | Expr::Cmp(_, a, b)
                | Expr::And(a, b)
                | Expr::Or(a, b)
                | Expr::Concat(a, b) => {
                    a.visit(f);
                    b.visit(f);
                }
                Expr::Case {
                    operand,
                    whens,
                    otherwise,
                    ..
                } => {
                    operand.iter().for_each(|e| e.visit(f));
                    for (w, t) in whens {
                        w.visit(f);
                        t.visit(f);
                    }
                    otherwise.iter().for_each(|e| e.visit(f));
                }
                Expr::Call(_, args, _) | Expr::Catalog(_, args, _, _) | Expr::Coalesce(args, _) => {
                    args.iter().for_each(|e| e.visit(f))
                }
                Expr::InList(e, list, _) => {
                    e.visit(f);
                    list.iter().for_each(|x| x.visit(f));
                }
            }
        })
    }

    /// The input columns the expression reads, in order, without repeats.
    pub fn columns(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Column(i, _) = e {
                if !out.contains(i) {
                    out.push(*i);
                }
            }
        });
        out.sort_unstable();
        out
    }

    /// True if the expression holds a subquery.
    pub fn has_subquery(&self) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= matches!(e, Expr::Subquery(_)));
        found
    }

    /// The expression with each input column `i` read from column `f(i)` instead.
    pub fn map_columns(self, f: &dyn Fn(usize) -> usize) -> Expr {
        crate::depth::recurse(|| match self {
            Expr::Column(i, ty) => Expr::Column(f(i), ty),
            e => e
                .try_map_operands(&mut |x| Some(x.map_columns(f)))
                .unwrap_or(Expr::Const(Value::Null)),
        })
    }

    /// The expression with each parameter replaced by its value, and folded again where
    /// that made its operands constant (as binding the values written in would).
    pub fn with_params(self, values: &[Value]) -> SqlResult<Expr> {
        self.filled(values, false)
    }

    /// The expression with each outer value (`Expr::Outer`) replaced by its value, and
    /// folded again: a correlated subquery's plan for one row of the enclosing query.
    pub fn with_outer(self, values: &[Value]) -> SqlResult<Expr> {
        self.filled(values, true)
    }

    pub(crate) fn filled(self, values: &[Value], outer: bool) -> SqlResult<Expr> {
        crate::depth::recurse(|| {
            let e = match self {
                Expr::Param(n, _) if !outer => {
                    return Ok(Expr::Const(values.get(n).cloned().unwrap_or(Value::Null)))
                }
                Expr::Outer(n, _) if outer => {
                    return Ok(Expr::Const(values.get(n).cloned().unwrap_or(Value::Null)))
                }
                Expr::Const(_) | Expr::Column(..) | Expr::Outer(..) | Expr::Param(..) => {
                    return Ok(self)
                }
                e => {
                    let mut failed = None;
                    let mapped = e.try_map_operands(&mut |x| match x.filled(values, outer) {
                        Ok(y) => Some(y),
                        Err(err) => {
                            failed = Some(err);
                            None
                        }
                    });
                    match (mapped, failed) {
                        (Some(m), _) => m,
                        (None, Some(err)) => return Err(err),
                        (None, None) => {
                            return Err(SqlError::new(
                                crate::error::code::INTERNAL,
                                "a parameter could not be filled in",
                            ))
                        }
                    }
                }
            };
            crate::bind::fold(e)
        })
    }

    #[inline]
    pub fn eval(&self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
        match self {
            // Leaves do not recurse: no stack to look at.
            Expr::Const(v) => Ok(v.clone()),
            Expr::Column(i, _) => Ok(row.get(*i).cloned().unwrap_or(Value::Null)),
            // A call over leaves goes one level deep: nor does it look at the stack.
            Expr::Call(_, args, _)
                if args
                    .iter()
                    .all(|a| matches!(a, Expr::Const(_) | Expr::Column(..))) =>
            {
                self.eval_node(row, cx)
            }
            _ => crate::depth::recurse(|| self.eval_node(row, cx)),
        }
    }

    fn eval_node(&self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
        Ok(match self {
            Expr::Const(v) => v.clone(),
            Expr::Param(n, _) if cx.run.is_some_and(|r| *n < r.params.len()) => {
                cx.run.map_or(Value::Null, |r| r.params[*n].clone())
            }
            Expr::Param(n, _) => {
                return Err(SqlError::new(
                    crate::error::code::INTERNAL,
                    format!("parameter ${} has no value", n + 1),
                ))
            }
            Expr::Column(i, _) => row.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Outer(i, _) => cx.outer.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Subquery(s) => {
                let Some(run) = cx.run else {
                    return Err(SqlError::unsupported("a subquery here"));
                };
                return run.subqueries.eval_subquery(s, row, cx);
            }
            Expr::Neg(e, _) => value::negate(&e.eval(row, cx)?)?,
            Expr::Not(e) => match e.eval(row, cx)? {
                Value::Bool(b) => Value::Bool(!b),
                _ => Value::Null,
            },
            Expr::Arith(op, a, b, ty) => {
                let (x, y) = (a.eval(row, cx)?, b.eval(row, cx)?);
                value::arith(*op, &x, &y, *ty)?
            }
            Expr::Cmp(op, a, b) => eval_cmp(*op, a, b, row, cx)?,
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
                concat(x, y, cx)?
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
                ..
            } => eval_case(operand.as_deref(), whens, otherwise.as_deref(), row, cx)?,
            Expr::Cast(e, to) => value::cast_from(e.eval(row, cx)?, e.ty(), to, true)?,
            Expr::Call(f, args, _) if args.len() <= SMALL_ARGS => {
                // Few arguments (most calls) are held on the stack: no allocation per row.
                let mut vals = [const { Value::Null }; SMALL_ARGS];
                for (v, a) in vals.iter_mut().zip(args) {
                    *v = a.eval(row, cx)?;
                }
                functions::call(*f, &vals[..args.len()], cx)?
            }
            Expr::Call(f, args, _) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(a.eval(row, cx)?);
                }
                functions::call(*f, &vals, cx)?
            }
            Expr::Catalog(f, args, snap, _) => eval_catalog(*f, args, snap, row, cx)?,
            Expr::Coalesce(args, _) => {
                for a in args {
                    let v = a.eval(row, cx)?;
                    if !matches!(v, Value::Null) {
                        return Ok(v);
                    }
                }
                Value::Null
            }
            Expr::InList(e, list, negated) => eval_in_list(e, list, *negated, row, cx)?,
        })
    }

    /// Evaluates a condition: only TRUE passes (NULL does not).
    pub fn test(&self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
        Ok(self.truth(row, cx)? == Some(true))
    }

    /// A condition's truth value (None: NULL). Comparisons of columns and constants,
    /// and AND and OR of such, are worked out over the row's values where they lie
    /// (`eval` copies each operand and checks the stack's depth at each node: a scan's
    /// WHERE clause spent a fifth of its time so); the rest through `eval`, with the
    /// same order of evaluation.
    fn truth(&self, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Option<bool>> {
        fn operand<'a>(e: &'a Expr, row: &'a [Value]) -> Option<&'a Value> {
            match e {
                Expr::Column(i, _) => row.get(*i),
                Expr::Const(v) => Some(v),
                _ => None,
            }
        }
        match self {
            Expr::Cmp(op, a, b) => {
                // An operand beside an expression (`mod(a, 10) = 1`) is compared where
                // it lies too; the expression is evaluated as `eval` would.
                let o = match (operand(a, row), operand(b, row)) {
                    (Some(x), Some(y)) => value::compare(x, y),
                    (None, Some(y)) => value::compare(&a.eval(row, cx)?, y),
                    (Some(x), None) => value::compare(x, &b.eval(row, cx)?),
                    (None, None) => {
                        let (x, y) = (a.eval(row, cx)?, b.eval(row, cx)?);
                        value::compare(&x, &y)
                    }
                };
                return Ok(o.map(|o| op.holds(o)));
            }
            Expr::And(a, b) => {
                return Ok(match crate::depth::recurse(|| a.truth(row, cx))? {
                    Some(false) => Some(false),
                    x => match (x, crate::depth::recurse(|| b.truth(row, cx))?) {
                        (_, Some(false)) => Some(false),
                        (Some(true), Some(true)) => Some(true),
                        _ => None,
                    },
                });
            }
            Expr::Or(a, b) => {
                return Ok(match crate::depth::recurse(|| a.truth(row, cx))? {
                    Some(true) => Some(true),
                    x => match (x, crate::depth::recurse(|| b.truth(row, cx))?) {
                        (_, Some(true)) => Some(true),
                        (Some(false), Some(false)) => Some(false),
                        _ => None,
                    },
                });
            }
            _ => {}
        }
        match self.eval(row, cx)? {
            Value::Bool(b) => Ok(Some(b)),
            Value::Null => Ok(None),
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

/// `a op b`: columns and constants are compared where they lie, not copied.
fn eval_cmp(op: CmpOp, a: &Expr, b: &Expr, row: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
    Ok(match (a, b) {
        (Expr::Column(i, _), Expr::Const(v)) | (Expr::Const(v), Expr::Column(i, _))
            if row.get(*i).is_some() =>
        {
            let x = &row[*i];
            let o = if matches!(a, Expr::Column(..)) {
                value::compare(x, v)
            } else {
                value::compare(v, x)
            };
            o.map_or(Value::Null, |o| Value::Bool(op.holds(o)))
        }
        _ => {
            let (x, y) = (a.eval(row, cx)?, b.eval(row, cx)?);
            match value::compare(&x, &y) {
                Some(o) => Value::Bool(op.holds(o)),
                None => Value::Null,
            }
        }
    })
}

/// `x || y`: texts are joined in place (no copy of either); other values through their
/// text form.
fn concat(x: Value, y: Value, cx: &mut EvalCtx) -> SqlResult<Value> {
    let (mut s, t) = match (x, y) {
        (Value::Text(s), Value::Text(t)) => (s, t),
        (x, y) => match (value::to_text(&x), value::to_text(&y)) {
            (Some(s), Some(t)) => (s, t),
            _ => return Ok(Value::Null),
        },
    };
    // PostgreSQL's values are at most 1 GB: a longer one is refused before it is made.
    let n = s.len() + t.len();
    if n > walden::schema::MAX_VALUE_BYTES {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!("invalid memory alloc request size {}", n + 4),
        ));
    }
    cx.room_for(n)?;
    s.reserve_exact(t.len());
    s.push_str(&t);
    Ok(Value::Text(s))
}

/// CASE: the first WHEN that holds (or equals the operand) gives its THEN.
fn eval_case(
    operand: Option<&Expr>,
    whens: &[(Expr, Expr)],
    otherwise: Option<&Expr>,
    row: &[Value],
    cx: &mut EvalCtx,
) -> SqlResult<Value> {
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
        Some(e) => e.eval(row, cx),
        None => Ok(Value::Null),
    }
}

/// A call of a catalog function, over the statement's catalog snapshot.
fn eval_catalog(
    f: CatalogFn,
    args: &[Expr],
    snap: &Snap,
    row: &[Value],
    cx: &mut EvalCtx,
) -> SqlResult<Value> {
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        vals.push(a.eval(row, cx)?);
    }
    let user = if f.needs_user() {
        crate::functions::current_user(cx)?
    } else {
        String::new()
    };
    f.call(&vals, &snap.0, &user)
}

/// `x [NOT] IN (list)`: NULL where x is NULL, or no item equals x and one is NULL.
fn eval_in_list(
    e: &Expr,
    list: &[Expr],
    negated: bool,
    row: &[Value],
    cx: &mut EvalCtx,
) -> SqlResult<Value> {
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
    Ok(if saw_null {
        Value::Null
    } else {
        Value::Bool(negated)
    })
}
