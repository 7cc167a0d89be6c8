//! Simplification of bound expressions, after binding has folded every constant
//! subexpression (`bind::fold`): what is left is an operator with a constant operand
//! and operands that are not constant.
//!
//! - A strict operator (comparison, arithmetic, negation) with a NULL operand is NULL,
//!   of the operator's type, and its other operand is not evaluated: `x / 0 = NULL` is
//!   NULL on every row, as in PostgreSQL (a strict function of a constant NULL is
//!   NULL, `simplify_function`).
//! - `e AND false` is false, `e AND true` is `e`, `e OR true` is true, `e OR false` is
//!   `e`, `NOT NOT e` is `e`, `NOT` of a constant is the constant negated, `NULL IS
//!   [NOT] NULL` is its answer (`simplify_and_arguments`, `simplify_or_arguments`,
//!   `negate_clause`).
//! - In a condition (WHERE, JOIN … ON, HAVING: [`simplify_condition`]) a NULL where
//!   AND and OR combine the condition's parts counts as false, since a row for which
//!   the condition is NULL is dropped as one for which it is false (PostgreSQL's
//!   `canonicalize_qual` with `is_check` false). Below a NOT it does not: `NOT NULL`
//!   is NULL, not true.
//! - A condition left the constant false or NULL ([`is_constant_false`]) passes no row:
//!   the planner reads nothing under it (`Source::Empty`, EXPLAIN's `One-Time Filter`).
//!
//! Nothing here evaluates a non-constant operand, so nothing here can fail.

use walden::Value;

use crate::expr::Expr;
use crate::types::{DeclaredType, SqlType};

/// `e` simplified where its value is used as a value (a select list, a function's
/// argument, a CASE branch).
pub(crate) fn simplify(e: Expr) -> Expr {
    crate::depth::recurse(|| {
        let e = match e.try_map_operands(&mut |child| Some(simplify(child))) {
            Some(e) => e,
            None => unreachable!("the mapping never gives None"),
        };
        simplify_node(e)
    })
}

/// `e` simplified as a condition: simplified as a value, then a NULL at the levels
/// where AND and OR combine the condition's parts taken as false.
pub(crate) fn simplify_condition(e: Expr) -> Expr {
    null_as_false(simplify(e))
}

/// Whether the condition `e` (simplified by [`simplify_condition`]) passes no row: it
/// is the constant false or NULL. A query reads nothing under such a condition, as
/// PostgreSQL's `Result` node with `One-Time Filter: false` reads nothing.
pub(crate) fn is_constant_false(e: &Expr) -> bool {
    truth(e) == Some(false) || is_null(e)
}

/// Whether `e` is a constant NULL (of any type).
fn is_null(e: &Expr) -> bool {
    match e {
        Expr::Const(Value::Null) => true,
        Expr::Cast(inner, _) => matches!(**inner, Expr::Const(Value::Null)),
        _ => false,
    }
}

/// The constant truth value `e` is, if it is one (NULL is not).
fn truth(e: &Expr) -> Option<bool> {
    match e {
        Expr::Const(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// NULL of type `ty`, as binding writes a typed NULL.
fn null_of(ty: SqlType) -> Expr {
    if ty == SqlType::Null {
        return Expr::Const(Value::Null);
    }
    Expr::Cast(Box::new(Expr::Const(Value::Null)), DeclaredType::plain(ty))
}

/// One node simplified, its operands already simplified.
fn simplify_node(e: Expr) -> Expr {
    match e {
        Expr::Cmp(_, ref a, ref b) if is_null(a) || is_null(b) => null_of(SqlType::Bool),
        Expr::Arith(_, ref a, ref b, ty) if is_null(a) || is_null(b) => null_of(ty),
        Expr::Neg(ref a, ty) if is_null(a) => null_of(ty),
        Expr::And(a, b) => and(*a, *b),
        Expr::Or(a, b) => or(*a, *b),
        Expr::Not(a) => not(*a),
        Expr::IsNull(ref a, negated) if is_null(a) => Expr::Const(Value::Bool(!negated)),
        e => e,
    }
}

fn and(a: Expr, b: Expr) -> Expr {
    match (truth(&a), truth(&b)) {
        (Some(false), _) | (_, Some(false)) => Expr::Const(Value::Bool(false)),
        (Some(true), _) => b,
        (_, Some(true)) => a,
        _ => Expr::And(Box::new(a), Box::new(b)),
    }
}

fn or(a: Expr, b: Expr) -> Expr {
    match (truth(&a), truth(&b)) {
        (Some(true), _) | (_, Some(true)) => Expr::Const(Value::Bool(true)),
        (Some(false), _) => b,
        (_, Some(false)) => a,
        _ => Expr::Or(Box::new(a), Box::new(b)),
    }
}

fn not(a: Expr) -> Expr {
    if let Some(t) = truth(&a) {
        return Expr::Const(Value::Bool(!t));
    }
    if is_null(&a) {
        return null_of(SqlType::Bool);
    }
    match a {
        Expr::Not(inner) => *inner,
        a => Expr::Not(Box::new(a)),
    }
}

/// A NULL where AND and OR combine a condition's parts made false, and the AND or OR
/// above it simplified again.
fn null_as_false(e: Expr) -> Expr {
    crate::depth::recurse(|| match e {
        e if is_null(&e) => Expr::Const(Value::Bool(false)),
        Expr::And(a, b) => and(null_as_false(*a), null_as_false(*b)),
        Expr::Or(a, b) => or(null_as_false(*a), null_as_false(*b)),
        e => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::CmpOp;
    use crate::value::ArithOp;

    fn col(n: usize) -> Expr {
        Expr::Column(n, SqlType::Int4)
    }
    fn int(v: i32) -> Expr {
        Expr::Const(Value::Int4(v))
    }
    fn boolean(b: bool) -> Expr {
        Expr::Const(Value::Bool(b))
    }
    fn eq(a: Expr, b: Expr) -> Expr {
        Expr::Cmp(CmpOp::Eq, Box::new(a), Box::new(b))
    }
    fn and(a: Expr, b: Expr) -> Expr {
        Expr::And(Box::new(a), Box::new(b))
    }
    fn or(a: Expr, b: Expr) -> Expr {
        Expr::Or(Box::new(a), Box::new(b))
    }
    fn not(a: Expr) -> Expr {
        Expr::Not(Box::new(a))
    }
    fn div(a: Expr, b: Expr) -> Expr {
        Expr::Arith(ArithOp::Div, Box::new(a), Box::new(b), SqlType::Int4)
    }
    fn null() -> Expr {
        Expr::Const(Value::Null)
    }

    #[test]
    fn a_strict_operator_of_null_is_null_and_its_other_operand_is_not_kept() {
        // x / 0 = NULL: NULL of type boolean, the division gone (PostgreSQL gives NULL
        // on every row, never "division by zero").
        let e = simplify(eq(div(col(0), int(0)), null()));
        assert_eq!(e, null_of(SqlType::Bool));
        assert_eq!(e.ty(), SqlType::Bool);
        // NULL::int + x is NULL of the sum's type.
        let sum = Expr::Arith(
            ArithOp::Add,
            Box::new(null_of(SqlType::Int4)),
            Box::new(col(1)),
            SqlType::Int4,
        );
        assert_eq!(simplify(sum), null_of(SqlType::Int4));
        // -NULL::int8
        let neg = Expr::Neg(Box::new(null_of(SqlType::Int8)), SqlType::Int8);
        assert_eq!(simplify(neg), null_of(SqlType::Int8));
    }

    #[test]
    fn and_or_not_with_constant_operands() {
        let x = eq(col(0), int(1));
        assert_eq!(simplify(and(x.clone(), boolean(true))), x);
        assert_eq!(simplify(and(boolean(true), x.clone())), x);
        assert_eq!(simplify(and(x.clone(), boolean(false))), boolean(false));
        assert_eq!(simplify(or(x.clone(), boolean(false))), x);
        assert_eq!(simplify(or(boolean(true), x.clone())), boolean(true));
        assert_eq!(simplify(not(not(x.clone()))), x);
        assert_eq!(simplify(not(boolean(true))), boolean(false));
        assert_eq!(simplify(not(null())), null_of(SqlType::Bool));
        // Neither operand constant: left as it is.
        let y = eq(col(1), int(2));
        assert_eq!(
            simplify(and(x.clone(), y.clone())),
            and(x.clone(), y.clone())
        );
        // A constant reached only after simplifying below: 1 = 2 folded by binding
        // to false, then `false OR x` is x.
        assert_eq!(
            simplify(or(boolean(false), and(x.clone(), boolean(true)))),
            x
        );
    }

    #[test]
    fn null_and_x_stays_as_a_value_but_is_false_as_a_condition() {
        let x = eq(col(0), int(3));
        // As a value, NULL AND x is NULL when x is true, false when x is false: kept.
        let e = and(eq(col(1), null()), x.clone());
        assert_eq!(simplify(e.clone()), and(null_of(SqlType::Bool), x.clone()));
        // As a condition it is false on every row (WHERE x = NULL AND id > 3).
        assert_eq!(simplify_condition(e), boolean(false));
        // NULL OR x as a condition is x.
        assert_eq!(simplify_condition(or(null(), x.clone())), x);
        // Such a condition passes no row; x may.
        let never = simplify_condition(and(x.clone(), null()));
        assert!(is_constant_false(&never));
        assert!(!is_constant_false(&simplify_condition(x.clone())));
        // Under NOT a NULL stays NULL: NOT (NULL AND x) is not NOT false.
        let under_not = not(and(null(), x.clone()));
        assert_eq!(simplify_condition(under_not.clone()), under_not);
    }

    #[test]
    fn is_null_of_null() {
        assert_eq!(
            simplify(Expr::IsNull(Box::new(null()), false)),
            boolean(true)
        );
        assert_eq!(
            simplify(Expr::IsNull(Box::new(null()), true)),
            boolean(false)
        );
        // What becomes NULL below is answered too: (x / 0 = NULL) IS NULL is true.
        let e = Expr::IsNull(Box::new(eq(div(col(0), int(0)), null())), false);
        assert_eq!(simplify(e), boolean(true));
        // x IS NULL stays.
        let e = Expr::IsNull(Box::new(col(0)), false);
        assert_eq!(simplify(e.clone()), e);
    }
}
