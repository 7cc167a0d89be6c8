//! Function calls: plain functions, set-returning functions in a select list, CASE,
//! COALESCE and NULLIF, and the calls the parser gives as their own expressions.

use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};
use walden::Value;

use super::aggregates::agg_func;
use super::literals::{coerce_literal, common_type, text_of, to_common};
use super::names::{function_name, trim_name};
use super::operators::{bpchar_side, check_comparable};
use super::{unsupported_expression, Binder};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::functions::Func;
use crate::infer::Params;
use crate::pg_catalog::CatalogFn;
use crate::types::SqlType;

/// The text of a `'name'::regclass` cast of a string literal.
fn regclass_literal(e: &ast::Expr) -> Option<String> {
    let ast::Expr::Cast {
        expr, data_type, ..
    } = e
    else {
        return None;
    };
    let regclass = match data_type {
        ast::DataType::Regclass => true,
        ast::DataType::Custom(name, mods) if mods.is_empty() => {
            name.to_string().eq_ignore_ascii_case("regclass")
                || name.to_string().eq_ignore_ascii_case("pg_catalog.regclass")
        }
        _ => false,
    };
    match expr.as_ref() {
        ast::Expr::Value(v) if regclass => match &v.value {
            ast::Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn plain_args<'f>(f: &'f ast::Function, name: &str) -> SqlResult<Vec<&'f ast::Expr>> {
    let (args, distinct) = call_args(f, name)?;
    if !order_clause(f).is_empty() {
        return Err(SqlError::new(
            code::WRONG_OBJECT_TYPE,
            format!("ORDER BY specified, but {name} is not an aggregate function"),
        ));
    }
    if distinct {
        return Err(SqlError::syntax(format!(
            "DISTINCT specified, but {name} is not an aggregate function"
        )));
    }
    Ok(args)
}

/// A call's arguments, and whether DISTINCT was written before them.
pub(super) fn call_args<'f>(
    f: &'f ast::Function,
    name: &str,
) -> SqlResult<(Vec<&'f ast::Expr>, bool)> {
    match &f.args {
        FunctionArguments::None => Ok((Vec::new(), false)),
        FunctionArguments::Subquery(_) => Err(SqlError::unsupported("a subquery")),
        FunctionArguments::List(list) => {
            if list
                .clauses
                .iter()
                .any(|c| !matches!(c, ast::FunctionArgumentClause::OrderBy(_)))
            {
                return Err(SqlError::unsupported(format!(
                    "this clause inside {name}()"
                )));
            }
            let distinct = match list.duplicate_treatment {
                None | Some(ast::DuplicateTreatment::All) => false,
                Some(ast::DuplicateTreatment::Distinct) => true,
            };
            let args = list
                .args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
                    FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => Err(SqlError::syntax(
                        format!("{name}(*) is only valid for count"),
                    )),
                    _ => Err(SqlError::unsupported(format!("named arguments to {name}"))),
                })
                .collect::<SqlResult<_>>()?;
            Ok((args, distinct))
        }
    }
}

/// The ORDER BY written inside a call's parentheses.
pub(crate) fn order_clause(f: &ast::Function) -> &[ast::OrderByExpr] {
    match &f.args {
        FunctionArguments::List(list) => list
            .clauses
            .iter()
            .find_map(|c| match c {
                ast::FunctionArgumentClause::OrderBy(o) => Some(o.as_slice()),
                _ => None,
            })
            .unwrap_or(&[]),
        _ => &[],
    }
}

/// `nullif(a, b)`: NULL where `a = b`, else `a`; of `a`'s type, but the two sides'
/// common type where `a` would be converted to compare (an integer with a numeric),
/// as PostgreSQL resolves its `=`.
fn nullif(params: Params, bound: Vec<Expr>) -> SqlResult<Expr> {
    let [a, b]: [Expr; 2] = bound.try_into().map_err(|args: Vec<Expr>| {
        let types: Vec<&str> = args.iter().map(|e| e.ty().name()).collect();
        SqlError::new(
            code::UNDEFINED_FUNCTION,
            format!("function nullif({}) does not exist", types.join(", ")),
        )
    })?;
    let (ta, tb) = (a.ty(), b.ty());
    let ty = if ta.is_integer() && tb.is_integer() {
        ta
    } else {
        common_type(params, &[&a, &b], "NULLIF")?
    };
    let b = if tb.is_integer() && ty.is_integer() {
        b
    } else {
        to_common(params, b, ty)?
    };
    let a = to_common(params, a, ty)?;
    Ok(Expr::Call(Func::NullIf, vec![a, b], ty))
}

impl Binder<'_> {
    /// A call: of a function, CASE, or one the parser gives as an expression of its own
    /// (ceil, floor, EXTRACT, TRIM, POSITION, SUBSTRING).
    pub(super) fn call(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as A;
        match e {
            A::Function(f) => self.function(f),
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(operand.as_deref(), conditions, else_result.as_deref()),
            A::Ceil {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => self.ceil_floor(Func::Ceil, "ceil", expr),
            A::Floor {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => self.ceil_floor(Func::Floor, "floor", expr),
            A::Extract { field, expr, .. } => self.extract(field, expr),
            A::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters: None,
            } => self.trim(trim_where.as_ref(), trim_what.as_deref(), expr),
            A::Position { expr, r#in } => {
                let args = vec![self.bind(r#in)?, self.bind(expr)?];
                self.text_call(Func::Strpos, "strpos", args)
            }
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => self.substring(expr, substring_from.as_deref(), substring_for.as_deref()),
            other => Err(unsupported_expression(other)),
        }
    }

    /// `EXTRACT(field FROM x)`.
    fn extract(&mut self, field: &ast::DateTimeField, expr: &ast::Expr) -> SqlResult<Expr> {
        let unit = Expr::Const(Value::Text(field.to_string().to_lowercase()));
        let x = self.bind(expr)?;
        let ty = Func::Extract.result_type("extract", &[SqlType::Text, x.ty()])?;
        Ok(Expr::Call(Func::Extract, vec![unit, x], ty))
    }

    /// `TRIM([BOTH | LEADING | TRAILING] [chars FROM] x)`: btrim, ltrim or rtrim.
    fn trim(
        &mut self,
        trim_where: Option<&ast::TrimWhereField>,
        trim_what: Option<&ast::Expr>,
        expr: &ast::Expr,
    ) -> SqlResult<Expr> {
        let ends = match trim_where {
            None | Some(ast::TrimWhereField::Both) => crate::strings::Ends::Both,
            Some(ast::TrimWhereField::Leading) => crate::strings::Ends::Leading,
            Some(ast::TrimWhereField::Trailing) => crate::strings::Ends::Trailing,
        };
        let mut args = vec![self.bind(expr)?];
        if let Some(chars) = trim_what {
            args.push(self.bind(chars)?);
        }
        self.text_call(Func::Trim(ends), trim_name(ends), args)
    }

    /// `SUBSTRING(x FROM from FOR n)`: substr.
    fn substring(
        &mut self,
        expr: &ast::Expr,
        substring_from: Option<&ast::Expr>,
        substring_for: Option<&ast::Expr>,
    ) -> SqlResult<Expr> {
        let mut args = vec![text_of(self.bind(expr)?)];
        let from = match substring_from {
            Some(f) => self.bind(f)?,
            None => Expr::Const(Value::Int4(1)),
        };
        args.push(coerce_literal(self.params, from, SqlType::Int4)?);
        if let Some(n) = substring_for {
            args.push(coerce_literal(self.params, self.bind(n)?, SqlType::Int4)?);
        }
        let types: Vec<SqlType> = args.iter().map(Expr::ty).collect();
        let ty = Func::Substr.result_type("substr", &types)?;
        Ok(Expr::Call(Func::Substr, args, ty))
    }

    /// A set-returning function's call in a select list: the placeholder columns it
    /// stands in as (a record of them for a function of several columns).
    fn set_returning_call(
        &mut self,
        f: &ast::Function,
        name: &str,
        func: crate::srf::SrfFunc,
    ) -> SqlResult<Expr> {
        let want = match func {
            crate::srf::SrfFunc::GenerateSeries => SqlType::Int4,
            crate::srf::SrfFunc::ExpandArray => SqlType::Text,
        };
        // Its arguments are bound without the list of calls: a call among them (a
        // set-returning function's argument) is refused, not numbered into the wrong
        // list.
        let outer = self.set_returning.take();
        let mut bound = || -> SqlResult<Vec<Expr>> {
            let mut args = Vec::new();
            for a in plain_args(f, name)? {
                args.push(coerce_literal(self.params, self.bind(a)?, want)?);
            }
            Ok(args)
        };
        let args = bound();
        self.set_returning = outer;
        let args = args?;
        let types: Vec<SqlType> = args.iter().map(Expr::ty).collect();
        let (columns, ty) = func.signature(&types)?;
        let Some(calls) = self.set_returning.as_deref_mut() else {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                crate::srf::NOT_HERE,
            ));
        };
        let at = calls.add(crate::srf::SrfCall {
            func,
            args,
            columns: columns.clone(),
        });
        Ok(match ty {
            SqlType::Record(shape) => Expr::Call(
                Func::Row(shape),
                columns
                    .iter()
                    .enumerate()
                    .map(|(i, t)| Expr::Column(at + i, *t))
                    .collect(),
                ty,
            ),
            _ => Expr::Column(at, ty),
        })
    }

    /// A function of text arguments that the parser gives as an expression of its own
    /// (TRIM, POSITION): literals are text, a bpchar loses its trailing blanks.
    fn text_call(&mut self, func: Func, name: &str, args: Vec<Expr>) -> SqlResult<Expr> {
        let args = args
            .into_iter()
            .map(|a| coerce_literal(self.params, a, SqlType::Text).map(text_of))
            .collect::<SqlResult<Vec<_>>>()?;
        let types: Vec<SqlType> = args.iter().map(Expr::ty).collect();
        let ty = func.result_type(name, &types)?;
        Ok(Expr::Call(func, args, ty))
    }

    /// ceil(x) or floor(x), which the parser gives as their own expressions.
    fn ceil_floor(&mut self, func: Func, name: &str, x: &ast::Expr) -> SqlResult<Expr> {
        let arg = coerce_literal(self.params, self.bind(x)?, SqlType::Float8)?;
        let ty = func.result_type(name, &[arg.ty()])?;
        Ok(Expr::Call(func, vec![arg], ty))
    }

    pub(super) fn case(
        &mut self,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&ast::Expr>,
    ) -> SqlResult<Expr> {
        let operand = match operand {
            Some(o) => Some(self.bind(o)?),
            None => None,
        };
        // A bpchar operand is compared without trailing blanks (`bpchar_compared`).
        let bpchar = operand.as_ref().is_some_and(|o| o.ty() == SqlType::Bpchar);
        let operand = operand.map(|o| if bpchar { bpchar_side(o) } else { o });
        let mut whens = Vec::new();
        for cw in conditions {
            let w = match &operand {
                Some(o) => {
                    let ty = if bpchar { SqlType::Bpchar } else { o.ty() };
                    let w = coerce_literal(self.params, self.bind(&cw.condition)?, ty)?;
                    let w = if bpchar { bpchar_side(w) } else { w };
                    check_comparable(o, &w, "=")?;
                    w
                }
                None => self.boolean(&cw.condition, "CASE/WHEN")?,
            };
            whens.push((w, self.bind(&cw.result)?));
        }
        let otherwise = match else_result {
            Some(e) => Some(self.bind(e)?),
            None => None,
        };
        let mut results: Vec<&Expr> = whens.iter().map(|(_, t)| t).collect();
        results.extend(otherwise.iter());
        let ty = common_type(self.params, &results, "CASE")?;
        let whens = whens
            .into_iter()
            .map(|(w, t)| Ok((w, to_common(self.params, t, ty)?)))
            .collect::<SqlResult<Vec<_>>>()?;
        let otherwise = match otherwise {
            Some(e) => Some(Box::new(to_common(self.params, e, ty)?)),
            None => None,
        };
        Ok(Expr::Case {
            operand: operand.map(Box::new),
            whens,
            otherwise,
            ty,
        })
    }

    pub(super) fn function(&mut self, f: &ast::Function) -> SqlResult<Expr> {
        let name = function_name(&f.name)?;
        if let (FunctionArguments::Subquery(q), "array") = (&f.args, name.as_str()) {
            return self.array_subquery(q);
        }
        if f.over.is_some() {
            return self.window(f, &name);
        }
        if crate::window::is_window_function(&name) {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!("window function {name} requires an OVER clause"),
            ));
        }
        if agg_func(&name).is_some() {
            return Err(SqlError::new(
                code::GROUPING_ERROR,
                format!("aggregate functions are not allowed here ({name})"),
            ));
        }
        if let Some(srf) = crate::srf::SrfFunc::lookup(&name) {
            return self.set_returning_call(f, &name, srf);
        }
        let bound = self.function_args(f, &name)?;
        match name.as_str() {
            "coalesce" => return coalesce(self.params, bound),
            "nullif" => return nullif(self.params, bound),
            _ => {}
        }
        if let Some((func, ty, counts)) = CatalogFn::lookup(&name) {
            if !counts.contains(&bound.len()) {
                return Err(no_such_function(&name, &bound));
            }
            let args = bound
                .into_iter()
                .enumerate()
                .map(|(i, e)| coerce_literal(self.params, text_of(e), func.arg_type(i)))
                .collect::<SqlResult<Vec<_>>>()?;
            return Ok(Expr::Catalog(func, args, self.snapshot(), ty));
        }
        let Some(func) = Func::lookup(&name) else {
            return Err(no_such_function(&name, &bound));
        };
        self.builtin_call(func, &name, bound)
    }

    /// A plain function call's arguments bound.
    fn function_args(&mut self, f: &ast::Function, name: &str) -> SqlResult<Vec<Expr>> {
        let args = plain_args(f, name)?;
        let mut bound = Vec::with_capacity(args.len());
        let names_sequence = matches!(name, "nextval" | "currval" | "setval");
        for (i, a) in args.into_iter().enumerate() {
            // `nextval('s'::regclass)`, as serial defaults and pg_dump write it: the
            // function finds the sequence by name when it runs, with no catalog
            // snapshot per statement.
            match regclass_literal(a) {
                Some(text) if i == 0 && names_sequence => {
                    bound.push(Expr::Const(Value::Text(text)));
                }
                _ => bound.push(self.bind(a)?),
            }
        }
        Ok(bound)
    }

    /// A call of built-in function `func` on its arguments `bound`: literals take the
    /// types its parameters want.
    fn builtin_call(&mut self, func: Func, name: &str, bound: Vec<Expr>) -> SqlResult<Expr> {
        // String literals passed to text parameters stay text; to integer parameters
        // they parse.
        let bound_len = bound.len();
        if matches!(func, Func::JsonbBuildObject | Func::JsonbBuildArray) {
            // Their arguments are of type "any": PostgreSQL types no parameter there.
            bound.iter().for_each(|e| self.params.note_bare(e));
        }
        if matches!(func, Func::ToJsonb | Func::ArrayToString)
            && bound
                .first()
                .is_some_and(|e| self.params.unknown(e).is_some())
        {
            return Err(SqlError::new(
                code::DATATYPE_MISMATCH,
                "could not determine polymorphic type because input has type unknown",
            ));
        }
        let mut args = Vec::with_capacity(bound.len());
        for (i, e) in bound.into_iter().enumerate() {
            args.push(match argument_type(func, i, bound_len) {
                Some(t) => coerce_literal(self.params, e, t)?,
                None => e,
            });
        }
        // Text functions take a bpchar as text, without its trailing blanks;
        // octet_length counts them, as PostgreSQL's octet_length(character) does.
        if func != Func::OctetLength {
            args = args.into_iter().map(text_of).collect();
        }
        let types: Vec<SqlType> = args.iter().map(Expr::ty).collect();
        let ty = func.result_type(name, &types)?;
        Ok(Expr::Call(func, args, ty))
    }
}

/// `coalesce(args…)`: of the arguments' common type.
fn coalesce(params: Params, bound: Vec<Expr>) -> SqlResult<Expr> {
    if bound.is_empty() {
        return Err(SqlError::syntax("coalesce needs at least one argument"));
    }
    let refs: Vec<&Expr> = bound.iter().collect();
    let ty = common_type(params, &refs, "COALESCE")?;
    let args = bound
        .into_iter()
        .map(|e| to_common(params, e, ty))
        .collect::<SqlResult<Vec<_>>>()?;
    Ok(Expr::Coalesce(args, ty))
}

/// PostgreSQL's error for a function of no such name or arguments.
fn no_such_function(name: &str, bound: &[Expr]) -> SqlError {
    let types: Vec<&str> = bound.iter().map(|e| e.ty().name()).collect();
    SqlError::new(
        code::UNDEFINED_FUNCTION,
        format!("function {name}({}) does not exist", types.join(", ")),
    )
}

/// The type a literal argument `i` (of `count`) of `func` is read as, where it is not
/// left as it is.
fn argument_type(func: Func, i: usize, count: usize) -> Option<SqlType> {
    let want_int = matches!(
        (func, i),
        (Func::Mod | Func::MakeDate, _)
            | (
                Func::Lpad | Func::Rpad | Func::Repeat | Func::Left | Func::Right,
                1
            )
            | (Func::SplitPart, 2)
            | (Func::Substr, 1 | 2)
    );
    // A literal to be truncated or taken apart is a timestamptz (PostgreSQL's
    // preferred type among those the functions take); one to encode a bytea.
    match (func, i) {
        _ if want_int => Some(SqlType::Int4),
        (Func::DatePart | Func::DateTrunc, 1) => Some(SqlType::Timestamptz),
        (Func::Encode, 0) => Some(SqlType::Bytea),
        (Func::Age, _) => Some(SqlType::Timestamp),
        (Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval, _) => {
            Some(SqlType::Interval)
        }
        (Func::ToTimestamp | Func::Abs | Func::Sign, _) => Some(SqlType::Float8),
        // round(x) is float8's, round(x, n) numeric's; trunc(x, n) too.
        (Func::Round, 0) if count == 1 => Some(SqlType::Float8),
        (Func::Round | Func::Trunc, 0) if count == 2 => Some(SqlType::Numeric),
        (Func::Round | Func::Trunc, 1) => Some(SqlType::Int4),
        (Func::JsonbTypeof | Func::JsonbArrayLength, _) => Some(SqlType::Jsonb),
        (Func::CurrentSetting, 1) | (Func::SetConfig, 2) => Some(SqlType::Bool),
        (Func::Setval, 1) => Some(SqlType::Int8),
        (Func::Setval, 2) => Some(SqlType::Bool),
        _ => None,
    }
}
