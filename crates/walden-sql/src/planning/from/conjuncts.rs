//! WHERE and ON conditions as AND-ed parts (`Conj`): split, bound, joined again, shown, and
//! added to a unit's filter.

use sqlparser::ast::{self};

use crate::bind::Binder;
use crate::error::SqlResult;
use crate::expr::Expr;
use crate::optimize::simplify::simplify_condition;
use crate::window;

use super::estimate::selectivity_of;
use super::{Conj, Source, Unit};

/// The AND-ed parts of a WHERE or ON condition (parentheses around an AND looked
/// through).
pub(crate) fn split_and<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
    let mut e = e;
    while let ast::Expr::Nested(x) = e {
        if matches!(
            **x,
            ast::Expr::BinaryOp {
                op: ast::BinaryOperator::And,
                ..
            }
        ) {
            e = x;
        } else {
            break;
        }
    }
    match e {
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            crate::depth::recurse(|| {
                split_and(left, out);
                split_and(right, out);
            });
        }
        other => out.push(other),
    }
}

pub(super) fn bind_conjuncts(b: &mut Binder, e: &ast::Expr, what: &str) -> SqlResult<Vec<Conj>> {
    let mut parts = Vec::new();
    split_and(e, &mut parts);
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        let expr = b
            .boolean(p, what)
            .map(simplify_condition)
            .map_err(|e| window::in_clause(e, what))?;
        out.push(Conj {
            cols: expr.columns(),
            text: p.to_string(),
            expr,
        });
    }
    Ok(out)
}

pub(super) fn and_all(conds: Vec<Expr>) -> Option<Expr> {
    conds
        .into_iter()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

pub(super) fn text_of(conjs: &[Conj]) -> Option<String> {
    match conjs {
        [] => None,
        [one] => Some(one.text.clone()),
        many => Some(
            many.iter()
                .map(|c| format!("({})", c.text))
                .collect::<Vec<_>>()
                .join(" AND "),
        ),
    }
}

/// Conditions over a unit that is not one table: checked on its rows.
pub(super) fn add_filter(u: &mut Unit, conds: Vec<Conj>) {
    if conds.is_empty() {
        return;
    }
    u.rows = (u.rows * selectivity_of(&conds)).max(1.0);
    let text = text_of(&conds).unwrap_or_default();
    if let Some(cond) = and_all(conds.into_iter().map(|c| c.expr).collect()) {
        let inner = std::mem::replace(&mut u.source, Source::Nothing);
        u.source = Source::Filter {
            inner: Box::new(inner),
            cond,
            text,
            est: u.rows,
        };
    }
    u.table = None;
}
