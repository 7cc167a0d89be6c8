//! Operators: unary, comparison, arithmetic, boolean, string, regex, jsonb and bitwise
//! operators, and IS NULL, BETWEEN, IN (list) and LIKE.

use sqlparser::ast::{self, BinaryOperator, Spanned, UnaryOperator};
use walden::Value;

use super::literals::{coerce_literal, is_unknown, number_literal, text_of};
use super::{unsupported_expression, Binder};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::{CmpOp, Expr};
use crate::functions::Func;
use crate::infer::Params;
use crate::jsonb::JsonOp;
use crate::types::{DeclaredType, SqlType};
use crate::value::{self, ArithOp};

/// Operands compared where one is bpchar: PostgreSQL compares bpchar with bpchar (or a
/// string literal) ignoring trailing blanks on both sides, and a bpchar with text as
/// text without the bpchar's trailing blanks. Both come to this: the bpchar side, and a
/// literal beside it, lose their trailing blanks. (An index on a `character(n)` column
/// then serves no comparison: the column is compared through the cast.)
pub(super) fn bpchar_compared(a: Expr, b: Expr) -> (Expr, Expr) {
    if a.ty() != SqlType::Bpchar && b.ty() != SqlType::Bpchar {
        return (a, b);
    }
    (bpchar_side(a), bpchar_side(b))
}

pub(super) fn bpchar_side(e: Expr) -> Expr {
    match e {
        Expr::Const(Value::Text(s)) => {
            Expr::Const(Value::Text(s.trim_end_matches(' ').to_string()))
        }
        e => text_of(e),
    }
}

/// PostgreSQL's error for an operator or function all of whose operands are of
/// unknown type (`'1' + '2'`, `-$1`, `sum($1)`), which several would take.
pub(super) fn not_unique(message: &str) -> SqlError {
    let what = if message.starts_with("function") {
        "function"
    } else {
        "operator"
    };
    SqlError::new(code::AMBIGUOUS_FUNCTION, message).with_hint(format!(
        "Could not choose a best candidate {what}. You might need to add explicit type casts."
    ))
}

/// Gives a string literal operand of arithmetic its type, as PostgreSQL resolves an
/// operator with an operand of unknown type: the other operand's type where that
/// operator exists, else the one operator there is (`timestamp + '1 day'` adds an
/// interval, `interval * '2'` multiplies by a float8).
fn temporal_operands(params: Params, op: ArithOp, a: Expr, b: Expr) -> SqlResult<(Expr, Expr)> {
    // `date + '...'` could add days, an interval or a time: PostgreSQL refuses to guess.
    let date_plus_unknown = op == ArithOp::Add
        && ((a.ty() == SqlType::Date && is_unknown(params, &b))
            || (b.ty() == SqlType::Date && is_unknown(params, &a)));
    if date_plus_unknown {
        let (l, r) = if is_unknown(params, &a) {
            ("unknown", "date")
        } else {
            ("date", "unknown")
        };
        return Err(not_unique(&format!("operator is not unique: {l} + {r}")));
    }
    if is_unknown(params, &a) && is_unknown(params, &b) {
        return Err(not_unique(&format!(
            "operator is not unique: unknown {} unknown",
            op.symbol()
        )));
    }
    let other_type = |known: SqlType| -> SqlType {
        match (op, known) {
            (ArithOp::Add, SqlType::Timestamp | SqlType::Timestamptz) => SqlType::Interval,
            (ArithOp::Mul | ArithOp::Div, SqlType::Interval) => SqlType::Float8,
            (_, t) => t,
        }
    };
    Ok(match (is_unknown(params, &a), is_unknown(params, &b)) {
        (true, false) => {
            let t = other_type(b.ty());
            (coerce_literal(params, a, t)?, b)
        }
        (false, true) => {
            let t = other_type(a.ty());
            (a, coerce_literal(params, b, t)?)
        }
        _ => (a, b),
    })
}

/// `NOT e` when `negated`.
pub(super) fn negate_if(e: Expr, negated: bool) -> Expr {
    if negated {
        Expr::Not(Box::new(e))
    } else {
        e
    }
}

/// A jsonb operator's expression: a string literal on the left, or on the right where
/// the operator takes a jsonb there, is read as a jsonb; the right operand's type picks
/// between a key and an index. Anything else is PostgreSQL's "operator does not exist".
fn json_operator(params: Params, op: JsonOp, a: Expr, b: Expr) -> SqlResult<Expr> {
    use SqlType as T;
    let jsonb_right = matches!(op, JsonOp::Contains | JsonOp::ContainedIn | JsonOp::Concat);
    let (a, b) = match (is_unknown(params, &a), is_unknown(params, &b)) {
        (true, false) if b.ty() == T::Jsonb => (coerce_literal(params, a, T::Jsonb)?, b),
        (true, _) if !jsonb_right => (coerce_literal(params, a, T::Jsonb)?, b),
        (false, true) if jsonb_right => (a, coerce_literal(params, b, T::Jsonb)?),
        _ => (a, b),
    };
    let (ta, tb) = (a.ty(), b.ty());
    let text = |t: T| matches!(t, T::Text | T::Null);
    let int = |t: T| t.is_integer() || t == T::Null;
    let right_ok = match op {
        JsonOp::Get | JsonOp::GetText | JsonOp::Delete => text(tb) || int(tb),
        JsonOp::Path
        | JsonOp::PathText
        | JsonOp::Exists
        | JsonOp::ExistsAny
        | JsonOp::ExistsAll => text(tb),
        JsonOp::Contains | JsonOp::ContainedIn | JsonOp::Concat => {
            matches!(tb, T::Jsonb | T::Null)
        }
    };
    if !matches!(ta, T::Jsonb | T::Null) || !right_ok {
        // A string literal is of type unknown until it meets an operator.
        let name = |e: &Expr| {
            if is_unknown(params, e) {
                "unknown"
            } else {
                e.ty().name()
            }
        };
        return Err(SqlError::new(
            code::UNDEFINED_FUNCTION,
            format!(
                "operator does not exist: {} {} {}",
                name(&a),
                op.symbol(),
                name(&b)
            ),
        )
        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
    }
    let ty = match op {
        JsonOp::Get | JsonOp::Path | JsonOp::Concat | JsonOp::Delete => T::Jsonb,
        JsonOp::GetText | JsonOp::PathText => T::Text,
        _ => T::Bool,
    };
    Ok(Expr::Call(Func::Json(op), vec![a, b], ty))
}

pub(super) fn check_comparable(a: &Expr, b: &Expr, op: &str) -> SqlResult<()> {
    let (x, y) = (a.ty(), b.ty());
    let ok = x == y
        || x == SqlType::Null
        || y == SqlType::Null
        || (x.is_numeric() && y.is_numeric())
        || (x.is_datetime() && y.is_datetime());
    if ok {
        Ok(())
    } else {
        Err(SqlError::new(
            code::UNDEFINED_FUNCTION,
            format!("operator does not exist: {} {op} {}", x.name(), y.name()),
        )
        .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."))
    }
}

impl Binder<'_> {
    /// An operator's expression: unary and binary operators, IS [NOT] NULL, BETWEEN,
    /// IN (a list), LIKE and ILIKE.
    pub(super) fn operator(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as A;
        match e {
            A::UnaryOp { op, expr } => self.unary(*op, expr),
            A::BinaryOp { left, op, right } => self.binary(left, op, right),
            A::IsNull(x) => self.is_null(x, false),
            A::IsNotNull(x) => self.is_null(x, true),
            A::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let ge = self.comparison(expr, CmpOp::GtEq, low)?;
                let le = self.comparison(expr, CmpOp::LtEq, high)?;
                Ok(negate_if(Expr::And(Box::new(ge), Box::new(le)), *negated))
            }
            A::InList {
                expr,
                list,
                negated,
            } => self.in_list(expr, list, *negated),
            A::Like { any: true, .. } | A::ILike { any: true, .. } => {
                Err(SqlError::unsupported("LIKE ANY"))
            }
            A::Like {
                negated,
                expr,
                pattern,
                escape_char,
                ..
            } => self.like(Func::Like, *negated, expr, pattern, escape_char.as_deref()),
            A::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                ..
            } => self.like(Func::ILike, *negated, expr, pattern, escape_char.as_deref()),
            other => Err(unsupported_expression(other)),
        }
    }

    /// `x IS NULL`, or `not_null`, `x IS NOT NULL`.
    fn is_null(&mut self, x: &ast::Expr, not_null: bool) -> SqlResult<Expr> {
        let x = self.bind(x)?;
        // PostgreSQL gives `$1 IS NULL` no type to infer.
        self.params.note_bare(&x);
        Ok(Expr::IsNull(Box::new(x), not_null))
    }

    /// `x [NOT] IN (list)`: the items take x's type; bpchar sides compare without their
    /// trailing blanks.
    fn in_list(&mut self, expr: &ast::Expr, list: &[ast::Expr], negated: bool) -> SqlResult<Expr> {
        let x = self.bind(expr)?;
        let mut items = Vec::with_capacity(list.len());
        for item in list {
            items.push(coerce_literal(self.params, self.bind(item)?, x.ty())?);
        }
        let bpchar = x.ty() == SqlType::Bpchar || items.iter().any(|i| i.ty() == SqlType::Bpchar);
        let x = if bpchar { bpchar_side(x) } else { x };
        let items = items
            .into_iter()
            .map(|b| {
                let b = if bpchar { bpchar_side(b) } else { b };
                check_comparable(&x, &b, "IN").map(|()| b)
            })
            .collect::<SqlResult<Vec<_>>>()?;
        Ok(Expr::InList(Box::new(x), items, negated))
    }

    /// `x [NOT] LIKE pattern [ESCAPE c]`, or ILIKE (`func`).
    fn like(
        &mut self,
        func: Func,
        negated: bool,
        expr: &ast::Expr,
        pattern: &ast::Expr,
        escape_char: Option<&ast::Expr>,
    ) -> SqlResult<Expr> {
        let x = coerce_literal(self.params, self.bind(expr)?, SqlType::Text)?;
        let p = coerce_literal(self.params, self.bind(pattern)?, SqlType::Text)?;
        let esc = match escape_char {
            Some(c) => coerce_literal(self.params, self.bind(c)?, SqlType::Text)?,
            None => Expr::Const(Value::Text("\\".into())),
        };
        let args = vec![x, p, esc];
        let types: Vec<SqlType> = args.iter().map(Expr::ty).collect();
        let name = if func == Func::ILike { "~~*" } else { "~~" };
        let ty = func.result_type(name, &types).map_err(|_| {
            SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {name} {}",
                    types[0].name(),
                    types[1].name()
                ),
            )
        })?;
        Ok(negate_if(Expr::Call(func, args, ty), negated))
    }

    fn unary(&mut self, op: UnaryOperator, expr: &ast::Expr) -> SqlResult<Expr> {
        match op {
            UnaryOperator::Minus => {
                // -2147483648 is an int4 literal, not the negation of an int8.
                if let ast::Expr::Value(v) = expr {
                    if let ast::Value::Number(s, _) = &v.value {
                        return number_literal(&format!("-{s}"));
                    }
                }
                let x = self.bind(expr)?;
                if is_unknown(self.params, &x) {
                    return Err(not_unique("operator is not unique: - unknown"));
                }
                let ok = x.ty().is_numeric() || matches!(x.ty(), SqlType::Null | SqlType::Interval);
                if !ok {
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!("operator does not exist: - {}", x.ty().name()),
                    ));
                }
                let ty = x.ty();
                Ok(Expr::Neg(Box::new(x), ty))
            }
            UnaryOperator::Plus => {
                let x = self.bind(expr)?;
                if !x.ty().is_numeric() {
                    return Err(SqlError::new(
                        code::UNDEFINED_FUNCTION,
                        format!("operator does not exist: + {}", x.ty().name()),
                    ));
                }
                Ok(x)
            }
            UnaryOperator::Not => {
                let x = self.boolean(expr, "NOT")?;
                Ok(Expr::Not(Box::new(x)))
            }
            other => Err(SqlError::unsupported(format!("the operator {other}"))),
        }
    }

    /// Binds an operand that must be boolean.
    pub(crate) fn boolean(&mut self, e: &ast::Expr, what: &str) -> SqlResult<Expr> {
        let x = coerce_literal(self.params, self.bind(e)?, SqlType::Bool)?;
        match x.ty() {
            SqlType::Bool | SqlType::Null => Ok(x),
            t => Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "argument of {what} must be type boolean, not type {}",
                    t.name()
                ),
            )
            .at(e.span().start)),
        }
    }

    /// Binds the two operands of a binary operator; a text literal on one side takes the
    /// other side's type (as PostgreSQL's unknown-typed literals do).
    pub(super) fn operands(&mut self, l: &ast::Expr, r: &ast::Expr) -> SqlResult<(Expr, Expr)> {
        let (a, b) = (self.bind(l)?, self.bind(r)?);
        // An array element (arrays are held as text) takes the other side's type.
        let element = |e: &Expr| match e {
            Expr::Call(Func::ArrayElement, ..) => true,
            Expr::Call(Func::Field(shape, i), ..) => shape.is_element(*i),
            _ => false,
        };
        let (a, b) = match (element(&a), element(&b)) {
            (true, false) if !matches!(b.ty(), SqlType::Text | SqlType::Null) => {
                let t = b.ty();
                (Expr::Cast(Box::new(a), DeclaredType::plain(t)), b)
            }
            (false, true) if !matches!(a.ty(), SqlType::Text | SqlType::Null) => {
                let t = a.ty();
                (a, Expr::Cast(Box::new(b), DeclaredType::plain(t)))
            }
            _ => (a, b),
        };
        Ok(
            match (is_unknown(self.params, &a), is_unknown(self.params, &b)) {
                (true, false) => (coerce_literal(self.params, a, b.ty())?, b),
                (false, true) => {
                    let t = a.ty();
                    (a, coerce_literal(self.params, b, t)?)
                }
                _ => (a, b),
            },
        )
    }

    fn comparison(&mut self, l: &ast::Expr, op: CmpOp, r: &ast::Expr) -> SqlResult<Expr> {
        let (a, b) = self.operands(l, r)?;
        let (a, b) = bpchar_compared(a, b);
        let sym = match op {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "<>",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        };
        check_comparable(&a, &b, sym)?;
        Ok(Expr::Cmp(op, Box::new(a), Box::new(b)))
    }

    fn binary(&mut self, l: &ast::Expr, op: &BinaryOperator, r: &ast::Expr) -> SqlResult<Expr> {
        use BinaryOperator as B;
        if let Some(c) = cmp_op(op) {
            return self.comparison(l, c, r);
        }
        if let Some(j) = json_op(op) {
            let (a, b) = (self.bind(l)?, self.bind(r)?);
            return json_operator(self.params, j, a, b);
        }
        if let Some(f) = bitwise_func(op) {
            return self.bitwise(l, f, op, r);
        }
        if let Some(a) = arith_op(op) {
            return self.arith(l, a, r);
        }
        match op {
            B::And => Ok(Expr::And(
                Box::new(self.boolean(l, "AND")?),
                Box::new(self.boolean(r, "AND")?),
            )),
            B::Or => Ok(Expr::Or(
                Box::new(self.boolean(l, "OR")?),
                Box::new(self.boolean(r, "OR")?),
            )),
            B::StringConcat => self.concat(l, r),
            B::PGRegexMatch => self.regex(l, Func::RegexMatch, false, r),
            B::PGRegexNotMatch => self.regex(l, Func::RegexMatch, true, r),
            B::PGRegexIMatch => self.regex(l, Func::RegexIMatch, false, r),
            B::PGRegexNotIMatch => self.regex(l, Func::RegexIMatch, true, r),
            B::PGCustomBinaryOperator(parts) => self.qualified_operator(l, op, parts, r),
            other => Err(SqlError::unsupported(format!("the operator {other}"))),
        }
    }

    /// `l & r`, `l | r`, `l # r`: bitwise operators on integers.
    fn bitwise(
        &mut self,
        l: &ast::Expr,
        f: Func,
        op: &BinaryOperator,
        r: &ast::Expr,
    ) -> SqlResult<Expr> {
        let (a, b) = self.operands(l, r)?;
        let (a, b) = (
            coerce_literal(self.params, a, SqlType::Int4)?,
            coerce_literal(self.params, b, SqlType::Int4)?,
        );
        let ty = f
            .result_type(&op.to_string(), &[a.ty(), b.ty()])
            .map_err(|_| {
                SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!(
                        "operator does not exist: {} {op} {}",
                        a.ty().name(),
                        b.ty().name()
                    ),
                )
            })?;
        Ok(Expr::Call(f, vec![a, b], ty))
    }

    /// `l || r`: text, bytea or jsonb concatenation.
    fn concat(&mut self, l: &ast::Expr, r: &ast::Expr) -> SqlResult<Expr> {
        let (a, b) = (self.bind(l)?, self.bind(r)?);
        let (mut a, mut b) = (text_of(a), text_of(b));
        if a.ty() == SqlType::Jsonb || b.ty() == SqlType::Jsonb {
            return json_operator(self.params, JsonOp::Concat, a, b);
        }
        // A string literal beside a bytea is a bytea (only there: `1 || '2'`
        // is text).
        if a.ty() == SqlType::Bytea {
            b = coerce_literal(self.params, b, SqlType::Bytea)?;
        } else if b.ty() == SqlType::Bytea {
            a = coerce_literal(self.params, a, SqlType::Bytea)?;
        }
        let bytes = |t: SqlType| matches!(t, SqlType::Bytea | SqlType::Null);
        if (a.ty() == SqlType::Bytea || b.ty() == SqlType::Bytea) && bytes(a.ty()) && bytes(b.ty())
        {
            return Ok(Expr::Call(Func::ByteaConcat, vec![a, b], SqlType::Bytea));
        }
        let texty = |t: SqlType| matches!(t, SqlType::Text | SqlType::Null);
        if !texty(a.ty()) && !texty(b.ty()) {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} || {}",
                    a.ty().name(),
                    b.ty().name()
                ),
            ));
        }
        Ok(Expr::Concat(Box::new(a), Box::new(b)))
    }

    /// `OPERATOR(pg_catalog.op)`, as psql writes its operators: the regex and
    /// comparison operators.
    fn qualified_operator(
        &mut self,
        l: &ast::Expr,
        op: &BinaryOperator,
        parts: &[String],
        r: &ast::Expr,
    ) -> SqlResult<Expr> {
        use BinaryOperator as B;
        match parts
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["pg_catalog", "~"] => self.regex(l, Func::RegexMatch, false, r),
            ["pg_catalog", "!~"] => self.regex(l, Func::RegexMatch, true, r),
            ["pg_catalog", "~*"] => self.regex(l, Func::RegexIMatch, false, r),
            ["pg_catalog", "!~*"] => self.regex(l, Func::RegexIMatch, true, r),
            ["pg_catalog", op] => {
                let op = match *op {
                    "=" => B::Eq,
                    "<>" => B::NotEq,
                    "<" => B::Lt,
                    "<=" => B::LtEq,
                    ">" => B::Gt,
                    ">=" => B::GtEq,
                    _ => return Err(SqlError::unsupported(format!("the operator {op}"))),
                };
                self.binary(l, &op, r)
            }
            _ => Err(SqlError::unsupported(format!("the operator {op}"))),
        }
    }

    /// `text ~ pattern` and its variants.
    fn regex(&mut self, l: &ast::Expr, f: Func, negated: bool, r: &ast::Expr) -> SqlResult<Expr> {
        let a = coerce_literal(self.params, self.bind(l)?, SqlType::Text)?;
        let p = coerce_literal(self.params, self.bind(r)?, SqlType::Text)?;
        let name = if f == Func::RegexMatch { "~" } else { "~*" };
        let types = [a.ty(), p.ty()];
        let ty = f.result_type(name, &types).map_err(|_| {
            SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {name} {}",
                    types[0].name(),
                    types[1].name()
                ),
            )
        })?;
        Ok(negate_if(Expr::Call(f, vec![a, p], ty), negated))
    }

    fn arith(&mut self, l: &ast::Expr, op: ArithOp, r: &ast::Expr) -> SqlResult<Expr> {
        let (a, b) = (self.bind(l)?, self.bind(r)?);
        if op == ArithOp::Sub && a.ty() == SqlType::Jsonb {
            return json_operator(self.params, JsonOp::Delete, a, b);
        }
        let (a, b) = temporal_operands(self.params, op, a, b)?;
        let (ta, tb) = (a.ty(), b.ty());
        if let Some(ty) = value::datetime_arith_type(op, ta, tb) {
            return Ok(Expr::Arith(op, Box::new(a), Box::new(b), ty));
        }
        let ok = |t: SqlType| t.is_numeric() || t == SqlType::Null;
        if !ok(ta) || !ok(tb) {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {} {}",
                    ta.name(),
                    op.symbol(),
                    tb.name()
                ),
            )
            .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."));
        }
        let mut ty = SqlType::wider(ta, tb);
        if ty == SqlType::Null {
            ty = SqlType::Int4;
        }
        Ok(Expr::Arith(op, Box::new(a), Box::new(b), ty))
    }
}

pub(super) fn cmp_op(op: &BinaryOperator) -> Option<CmpOp> {
    use BinaryOperator as B;
    Some(match op {
        B::Eq => CmpOp::Eq,
        B::NotEq => CmpOp::NotEq,
        B::Lt => CmpOp::Lt,
        B::LtEq => CmpOp::LtEq,
        B::Gt => CmpOp::Gt,
        B::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

/// The jsonb operator `op` is, if it is one.
fn json_op(op: &BinaryOperator) -> Option<JsonOp> {
    use BinaryOperator as B;
    Some(match op {
        B::Arrow => JsonOp::Get,
        B::LongArrow => JsonOp::GetText,
        B::HashArrow => JsonOp::Path,
        B::HashLongArrow => JsonOp::PathText,
        B::AtArrow => JsonOp::Contains,
        B::ArrowAt => JsonOp::ContainedIn,
        B::Question => JsonOp::Exists,
        B::QuestionPipe => JsonOp::ExistsAny,
        B::QuestionAnd => JsonOp::ExistsAll,
        _ => return None,
    })
}

/// The arithmetic operator `op` is, if it is one.
fn arith_op(op: &BinaryOperator) -> Option<ArithOp> {
    use BinaryOperator as B;
    Some(match op {
        B::Plus => ArithOp::Add,
        B::Minus => ArithOp::Sub,
        B::Multiply => ArithOp::Mul,
        B::Divide => ArithOp::Div,
        B::Modulo => ArithOp::Mod,
        _ => return None,
    })
}

/// The function of the bitwise operator `op`, if it is one.
fn bitwise_func(op: &BinaryOperator) -> Option<Func> {
    use BinaryOperator as B;
    Some(match op {
        B::BitwiseAnd => Func::BitAnd,
        B::BitwiseOr => Func::BitOr,
        B::PGBitwiseXor => Func::BitXor,
        _ => return None,
    })
}
