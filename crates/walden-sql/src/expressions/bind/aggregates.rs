//! Aggregates and grouping: the aggregate calls of a grouped query, their arguments,
//! FILTER and ORDER BY bound, and expressions regrouped onto the grouped row.

use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments, Spanned};
use walden::Value;

use super::calls::{call_args, order_clause};
use super::literals::{coerce_literal, is_unknown, text_of};
use super::names::function_name;
use super::operators::not_unique;
use super::Binder;
use crate::catalog::{ident_name, Scope};
use crate::depth;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::infer::Params;
use crate::types::SqlType;
use crate::window::WINDOW_PLACEHOLDER;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
    StringAgg,
    BoolAnd,
    BoolOr,
    /// jsonb_agg(x): the values as a jsonb array, NULLs as JSON nulls.
    JsonbAgg,
    /// jsonb_object_agg(k, v): an object of the pairs (a later key wins).
    JsonbObjectAgg,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AggCall {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub ty: SqlType,
    /// `agg(DISTINCT x)`: each value once.
    pub distinct: bool,
    /// string_agg's delimiter.
    pub extra: Option<Expr>,
    /// `FILTER (WHERE …)`: only rows it holds for are aggregated.
    pub filter: Option<Expr>,
    /// `ORDER BY` inside the call: the order the values are taken in (each key,
    /// descending, NULLs first).
    pub order: Vec<(Expr, bool, bool)>,
}

impl AggCall {
    /// The call with its parameters (or, `outer`, its outer values) filled in.
    pub(crate) fn filled(&self, values: &[Value], outer: bool) -> SqlResult<AggCall> {
        let fill = |e: &Option<Expr>| e.clone().map(|e| e.filled(values, outer)).transpose();
        let mut order = Vec::with_capacity(self.order.len());
        for (k, desc, nulls_first) in &self.order {
            order.push((k.clone().filled(values, outer)?, *desc, *nulls_first));
        }
        Ok(AggCall {
            func: self.func,
            arg: fill(&self.arg)?,
            ty: self.ty,
            distinct: self.distinct,
            extra: fill(&self.extra)?,
            filter: fill(&self.filter)?,
            order,
        })
    }
}

/// GROUP BY keys and the aggregates found so far. After grouping, a row holds the key
/// values followed by the aggregate results.
#[derive(Debug, Default, Clone)]
pub struct Grouping {
    pub keys: Vec<Expr>,
    pub aggs: Vec<AggCall>,
    /// Set while one grouped expression is bound in one pass over the input columns,
    /// its aggregates standing in as [`AGG_PLACEHOLDER`] columns (see `bind_grouped`).
    pub(super) collecting: bool,
}

impl Grouping {
    /// The number of aggregate `call`, added if it is new (count(*) twice is one
    /// accumulator).
    fn add_agg(&mut self, call: AggCall) -> usize {
        match self.aggs.iter().position(|a| *a == call) {
            Some(i) => i,
            None => {
                self.aggs.push(call);
                self.aggs.len() - 1
            }
        }
    }
}

/// Column numbers from here on stand for aggregate `n - AGG_PLACEHOLDER` while a grouped
/// expression is being bound; never evaluated.
const AGG_PLACEHOLDER: usize = usize::MAX / 2;

/// Turns an expression bound over the input row (aggregates as placeholders) into one
/// over the grouped row: parts equal to a GROUP BY key read the key. None if a column
/// is used outside keys and aggregates.
fn regroup(e: Expr, keys: &[Expr]) -> Option<Expr> {
    depth::recurse(|| regroup_node(e, keys))
}

fn regroup_node(e: Expr, keys: &[Expr]) -> Option<Expr> {
    if let Some(i) = keys.iter().position(|k| *k == e) {
        return Some(Expr::Column(i, e.ty()));
    }
    match e {
        // A window function's value: its arguments were regrouped when it was bound.
        Expr::Column(i, _) if i >= WINDOW_PLACEHOLDER => Some(e),
        Expr::Column(i, ty) if i >= AGG_PLACEHOLDER => {
            Some(Expr::Column(keys.len() + (i - AGG_PLACEHOLDER), ty))
        }
        Expr::Column(..) => None,
        e if e.is_folded_constant() => Some(e),
        e => e.try_map_operands(&mut |x| regroup(x, keys)),
    }
}

pub(crate) fn agg_func(name: &str) -> Option<AggFunc> {
    Some(match name {
        "count" => AggFunc::Count,
        "sum" => AggFunc::Sum,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        "avg" => AggFunc::Avg,
        "string_agg" => AggFunc::StringAgg,
        "bool_and" | "every" => AggFunc::BoolAnd,
        "bool_or" => AggFunc::BoolOr,
        "jsonb_agg" | "json_agg" => AggFunc::JsonbAgg,
        "jsonb_object_agg" | "json_object_agg" => AggFunc::JsonbObjectAgg,
        _ => return None,
    })
}

/// Column `c` of the input, in a grouped query: the GROUP BY key it is.
pub(crate) fn regroup_column(c: usize, scope: &Scope, grouping: &Grouping) -> SqlResult<Expr> {
    let (name, ty) = scope
        .columns
        .get(c)
        .cloned()
        .unwrap_or_else(|| (String::new(), SqlType::Null));
    let _ = ty;
    regroup(scope.column_expr(c), &grouping.keys).ok_or_else(|| {
        SqlError::new(
            code::GROUPING_ERROR,
            format!(
                "column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function"
            ),
        )
    })
}

fn bind_agg(b: &Binder, func: AggFunc, name: &str, f: &ast::Function) -> SqlResult<AggCall> {
    if f.over.is_some() {
        return Err(SqlError::unsupported(format!("{name}() with OVER")));
    }
    // Aggregates may not nest: the argument is bound without grouping.
    let nested = |e: SqlError| {
        let e = crate::window::in_aggregate(e);
        if e.code == code::GROUPING_ERROR && !e.message.contains("window") {
            SqlError::new(
                code::GROUPING_ERROR,
                "aggregate function calls cannot be nested",
            )
        } else {
            e
        }
    };
    agg_call(b.params, func, name, f, &mut |e| {
        b.ungrouped().bind(e).map_err(nested)
    })
}

/// The aggregate `func` called as `f`, its arguments, FILTER and ORDER BY bound by
/// `bind_arg` (over the input rows for a grouped query's aggregates; over the grouped
/// rows for a window aggregate).
pub(crate) fn agg_call(
    params: Params,
    func: AggFunc,
    name: &str,
    f: &ast::Function,
    bind_arg: &mut dyn FnMut(&ast::Expr) -> SqlResult<Expr>,
) -> SqlResult<AggCall> {
    let mut call = agg_args(params, func, name, f, bind_arg)?;
    if let Some(w) = &f.filter {
        let cond = bind_arg(w).map_err(|e| {
            if e.message == "aggregate function calls cannot be nested" {
                SqlError::new(
                    code::GROUPING_ERROR,
                    "aggregate functions are not allowed in FILTER",
                )
            } else {
                e
            }
        })?;
        let cond = coerce_literal(params, cond, SqlType::Bool)?;
        if !matches!(cond.ty(), SqlType::Bool | SqlType::Null) {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                format!(
                    "argument of FILTER must be type boolean, not type {}",
                    cond.ty().name()
                ),
            )
            .at(w.span().start));
        }
        call.filter = Some(cond);
    }
    for o in order_clause(f) {
        let desc = match &o.options.sort {
            None | Some(ast::OrderBySort::Asc) => false,
            Some(ast::OrderBySort::Desc) => true,
            Some(ast::OrderBySort::Using(_)) => {
                return Err(SqlError::unsupported("ORDER BY USING"))
            }
        };
        let key = bind_arg(&o.expr)?;
        if call.distinct && call.arg.as_ref() != Some(&key) && call.extra.as_ref() != Some(&key) {
            return Err(SqlError::new(
                code::INVALID_COLUMN_REFERENCE,
                "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
            )
            .at(o.expr.span().start));
        }
        call.order
            .push((key, desc, o.options.nulls_first.unwrap_or(desc)));
    }
    Ok(call)
}

/// An aggregate call's arguments bound.
fn agg_args(
    params: Params,
    func: AggFunc,
    name: &str,
    f: &ast::Function,
    bind_arg: &mut dyn FnMut(&ast::Expr) -> SqlResult<Expr>,
) -> SqlResult<AggCall> {
    if func == AggFunc::Count && is_count_star(f) {
        return Ok(AggCall {
            func: AggFunc::CountStar,
            arg: None,
            ty: SqlType::Int8,
            distinct: false,
            extra: None,
            filter: None,
            order: Vec::new(),
        });
    }
    let (args, distinct) = call_args(f, name)?;
    let (arg, extra) = match (func, args.as_slice()) {
        (AggFunc::StringAgg | AggFunc::JsonbObjectAgg, [a, d]) => (*a, Some(*d)),
        (AggFunc::StringAgg | AggFunc::JsonbObjectAgg, _) => {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name} takes exactly two arguments"),
            ))
        }
        (_, [a]) => (*a, None),
        _ => {
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name} takes exactly one argument"),
            ))
        }
    };
    let mut arg = bind_arg(arg)?;
    if func == AggFunc::Count {
        // count takes "any": PostgreSQL gives `count($1)` no type to infer.
        params.note_bare(&arg);
    }
    let extra = match extra {
        Some(d) => Some(coerce_literal(
            params,
            text_of(bind_arg(d)?),
            SqlType::Text,
        )?),
        None => None,
    };
    if matches!(func, AggFunc::StringAgg) {
        arg = coerce_literal(params, text_of(arg), SqlType::Text)?;
    }
    if matches!(func, AggFunc::BoolAnd | AggFunc::BoolOr) {
        arg = coerce_literal(params, arg, SqlType::Bool)?;
    }
    if matches!(func, AggFunc::Sum | AggFunc::Avg) && is_unknown(params, &arg) {
        return Err(not_unique(&format!(
            "function {name}(unknown) is not unique"
        )));
    }
    let ty = agg_type(func, name, arg.ty(), extra.as_ref())?;
    Ok(AggCall {
        func,
        arg: Some(arg),
        ty,
        distinct,
        extra,
        filter: None,
        order: Vec::new(),
    })
}

/// `agg(*)`, without DISTINCT or ALL.
fn is_count_star(f: &ast::Function) -> bool {
    match &f.args {
        FunctionArguments::List(list) => {
            matches!(
                list.args.as_slice(),
                [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)]
            ) && list.duplicate_treatment.is_none()
        }
        _ => false,
    }
}

/// The result type of aggregate `func` (called as `name`) of an argument of type `t`
/// (and string_agg's delimiter `extra`), as PostgreSQL types it.
fn agg_type(func: AggFunc, name: &str, t: SqlType, extra: Option<&Expr>) -> SqlResult<SqlType> {
    let texty = |t: SqlType| matches!(t, SqlType::Text | SqlType::Null);
    Ok(match func {
        AggFunc::Count | AggFunc::CountStar => SqlType::Int8,
        // PostgreSQL: sum of int2/int4 is bigint, of bigint numeric; avg of any integer
        // is numeric.
        AggFunc::Sum if matches!(t, SqlType::Int2 | SqlType::Int4 | SqlType::Null) => SqlType::Int8,
        AggFunc::Sum | AggFunc::Avg if t.is_integer() || t == SqlType::Numeric => SqlType::Numeric,
        AggFunc::Sum | AggFunc::Avg if t.is_float() || t == SqlType::Interval => t,
        AggFunc::Avg if t == SqlType::Null => SqlType::Numeric,
        // PostgreSQL has no min or max of jsonb.
        AggFunc::Min | AggFunc::Max if t != SqlType::Null && t != SqlType::Jsonb => t,
        AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg => SqlType::Jsonb,
        AggFunc::StringAgg if texty(t) && extra.is_some_and(|d| texty(d.ty())) => SqlType::Text,
        AggFunc::BoolAnd | AggFunc::BoolOr if matches!(t, SqlType::Bool | SqlType::Null) => {
            SqlType::Bool
        }
        _ => {
            let mut types = vec![t.name()];
            if let Some(d) = extra {
                types.push(d.ty().name());
            }
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", types.join(", ")),
            ));
        }
    })
}

impl Binder<'_> {
    /// Binds an expression of a grouped query in one pass: over the input columns, with
    /// aggregates as placeholders, then [`regroup`]ed onto the grouped row. (Binding it
    /// part by part would bind each part again for every level above it.)
    pub(crate) fn bind_grouped(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        let Some(grouping) = self.grouping.as_deref_mut() else {
            return self.bind_node(e);
        };
        // A window function's arguments are bound this way in the middle of the pass
        // over the expression around it: the flag is put back as it was.
        let was_collecting = std::mem::replace(&mut grouping.collecting, true);
        let bound = self.bind(e);
        let Some(grouping) = self.grouping.as_deref_mut() else {
            return bound;
        };
        grouping.collecting = false;
        let result = match bound.map(|b| regroup(b, &grouping.keys)) {
            Err(err) => Err(err),
            Ok(Some(x)) => Ok(x),
            // A column outside keys and aggregates: look for it part by part, to name it
            // and point at it.
            Ok(None) => match self.bind_grouped_part(e) {
                Ok(Some(x)) => Ok(x),
                Ok(None) => self.bind_node(e),
                Err(err) => Err(err),
            },
        };
        if let Some(grouping) = self.grouping.as_deref_mut() {
            grouping.collecting = was_collecting;
        }
        result
    }

    /// While collecting: an aggregate call, as a placeholder column.
    pub(super) fn aggregate(&mut self, e: &ast::Expr) -> SqlResult<Option<Expr>> {
        let ast::Expr::Function(f) = e else {
            return Ok(None);
        };
        if f.over.is_some() || self.grouping.is_none() {
            return Ok(None);
        }
        let name = function_name(&f.name)?;
        let Some(func) = agg_func(&name) else {
            return Ok(None);
        };
        let call = bind_agg(&self.ungrouped(), func, &name, f)?;
        let ty = call.ty;
        let Some(grouping) = self.grouping.as_deref_mut() else {
            return Ok(None);
        };
        Ok(Some(Expr::Column(
            AGG_PLACEHOLDER + grouping.add_agg(call),
            ty,
        )))
    }

    /// In a grouped query: an aggregate call, or an expression equal to a GROUP BY key,
    /// or a bare column that is neither (an error). None: bind the parts.
    fn bind_grouped_part(&mut self, e: &ast::Expr) -> SqlResult<Option<Expr>> {
        if self.grouping.is_none() {
            return Ok(None);
        }
        if let ast::Expr::Function(f) = e {
            let name = function_name(&f.name)?;
            if let Some(func) = agg_func(&name).filter(|_| f.over.is_none()) {
                let call = bind_agg(&self.ungrouped(), func, &name, f)?;
                let ty = call.ty;
                let Some(grouping) = self.grouping.as_deref_mut() else {
                    return Ok(None);
                };
                let i = grouping.add_agg(call);
                return Ok(Some(Expr::Column(grouping.keys.len() + i, ty)));
            }
        }
        let Some(grouping) = self.grouping.as_deref() else {
            return Ok(None);
        };
        // An expression over the input that equals a key is that key's value.
        if let Ok(plain) = (Binder {
            scope: self.scope,
            grouping: None,
            cx: self.cx,
            windows: None,
            set_returning: None,
            params: self.params,
        })
        .bind(e)
        {
            if let Some(i) = grouping.keys.iter().position(|k| *k == plain) {
                return Ok(Some(Expr::Column(i, plain.ty())));
            }
            if plain.is_folded_constant() {
                return Ok(Some(plain));
            }
            if let ast::Expr::Identifier(id) = e {
                return Err(SqlError::new(
                    code::GROUPING_ERROR,
                    format!(
                        "column \"{}\" must appear in the GROUP BY clause or be used in an aggregate function",
                        ident_name(id)
                    ),
                )
                .at(id.span.start));
            }
            if let ast::Expr::CompoundIdentifier(parts) = e {
                return Err(SqlError::new(
                    code::GROUPING_ERROR,
                    format!(
                        "column \"{e}\" must appear in the GROUP BY clause or be used in an aggregate function"
                    ),
                )
                .at(parts.first().map(|p| p.span.start).unwrap_or(e.span().start)));
            }
        }
        Ok(None)
    }
}
