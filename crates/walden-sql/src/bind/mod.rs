//! Binding: turns parsed expressions into `Expr`s — names resolved against a scope, types
//! checked and fixed, literals coerced, constants folded, aggregates collected.

use std::sync::Arc;

use sqlparser::ast::{
    self, BinaryOperator, CastKind, FunctionArg, FunctionArgExpr, FunctionArguments, Spanned,
    UnaryOperator,
};
use walden::rng::SimRng;
use walden::Value;

use crate::catalog::{ident_name, object_name, Catalog, Scope};
use crate::depth;
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::{CmpOp, EvalCtx, Expr, Subquery, SubqueryKind, SubqueryPlan};
use crate::functions::Func;
use crate::infer::Params;
use crate::jsonb::JsonOp;
use crate::pg_catalog::CatalogFn;
use crate::types::{declared_type, DeclaredType, SqlType};
use crate::value::{self, ArithOp};
use crate::window::{Windows, WINDOW_PLACEHOLDER};

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
    fn resolve(&self, table: Option<&ast::Ident>, id: &ast::Ident) -> SqlResult<Option<Expr>> {
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

/// A function's name: `pg_catalog.` (where every function lives) and `public.` may
/// qualify it; `information_schema._pg_expandarray` is qualified.
pub fn function_name(name: &ast::ObjectName) -> SqlResult<String> {
    let parts: Vec<&ast::Ident> = name.0.iter().filter_map(|p| p.as_ident()).collect();
    match parts.as_slice() {
        [schema, id] if ident_name(schema) == "pg_catalog" => Ok(ident_name(id)),
        // information_schema's function (not on the search path: always qualified).
        [schema, id]
            if ident_name(schema) == "information_schema"
                && ident_name(id) == "_pg_expandarray" =>
        {
            Ok("information_schema._pg_expandarray".into())
        }
        _ => object_name(name),
    }
}

/// Refuses what a table reference in FROM may carry that Walden does not do, rather
/// than reading the whole table as if it were not there (`TABLESAMPLE SYSTEM (10)`
/// returning every row).
pub fn check_table_reference(t: &ast::TableFactor) -> SqlResult<()> {
    let ast::TableFactor::Table {
        name,
        sample,
        with_ordinality,
        version,
        partitions,
        with_hints,
        index_hints,
        json_path,
        ..
    } = t
    else {
        return Ok(());
    };
    let unsupported = [
        (sample.is_some(), "TABLESAMPLE"),
        (*with_ordinality, "WITH ORDINALITY"),
        (
            version.is_some(),
            "a table version (FOR SYSTEM_TIME, AT, BEFORE)",
        ),
        (!partitions.is_empty(), "PARTITION"),
        (
            !with_hints.is_empty() || !index_hints.is_empty(),
            "table hints",
        ),
        (json_path.is_some(), "a JSON path on a table"),
    ];
    match unsupported.iter().find(|(set, _)| *set) {
        Some((_, what)) => Err(SqlError::unsupported(what).at(name.span().start)),
        None => Ok(()),
    }
}

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
    collecting: bool,
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

/// True for a value of PostgreSQL's unknown type: a string literal, or a parameter
/// whose type is being inferred and no context has given yet (`infer.rs`).
pub(crate) fn is_unknown(params: Params, e: &Expr) -> bool {
    matches!(e, Expr::Const(Value::Text(_))) || params.unknown(e).is_some()
}

/// Gives a string literal the type it is compared or combined with, as PostgreSQL does
/// with literals of unknown type; a parameter of unknown type takes that type
/// (`infer::resolve`), text included.
pub(crate) fn coerce_literal(params: Params, e: Expr, to: SqlType) -> SqlResult<Expr> {
    if let Some(n) = params.unknown(&e) {
        if to == SqlType::Null {
            return Ok(e);
        }
        return params.resolve(n, to);
    }
    match e {
        Expr::Const(Value::Text(s)) if to != SqlType::Text && to != SqlType::Null => {
            Ok(Expr::Const(value::parse_text(&s, to)?))
        }
        other => Ok(other),
    }
}

/// A bpchar taken where text is expected becomes text without its trailing blanks, as
/// PostgreSQL casts it (`||`, text functions, string_agg); anything else stays.
pub(crate) fn text_of(e: Expr) -> Expr {
    if e.ty() == SqlType::Bpchar {
        Expr::Cast(Box::new(e), DeclaredType::plain(SqlType::Text))
    } else {
        e
    }
}

/// Operands compared where one is bpchar: PostgreSQL compares bpchar with bpchar (or a
/// string literal) ignoring trailing blanks on both sides, and a bpchar with text as
/// text without the bpchar's trailing blanks. Both come to this: the bpchar side, and a
/// literal beside it, lose their trailing blanks. (An index on a `character(n)` column
/// then serves no comparison: the column is compared through the cast.)
fn bpchar_compared(a: Expr, b: Expr) -> (Expr, Expr) {
    if a.ty() != SqlType::Bpchar && b.ty() != SqlType::Bpchar {
        return (a, b);
    }
    (bpchar_side(a), bpchar_side(b))
}

fn bpchar_side(e: Expr) -> Expr {
    match e {
        Expr::Const(Value::Text(s)) => {
            Expr::Const(Value::Text(s.trim_end_matches(' ').to_string()))
        }
        e => text_of(e),
    }
}

/// A number as written: an integer literal is int4 or int8, as it fits; any other (a
/// fraction, an exponent, an integer beyond int8) is an exact numeric, as in PostgreSQL.
/// One of more significant digits than a numeric holds here (38: `1e308`) is taken as a
/// float8, within a float8's range, rather than refused (PostgreSQL keeps it numeric).
fn number_literal(s: &str) -> SqlResult<Expr> {
    if let Ok(x) = s.parse::<i64>() {
        return Ok(Expr::Const(match i32::try_from(x) {
            Ok(small) => Value::Int4(small),
            Err(_) => Value::Int8(x),
        }));
    }
    match walden::Numeric::parse(s) {
        Ok(n) => Ok(Expr::Const(Value::Numeric(n))),
        Err(walden::numeric::NumericError::Invalid) => {
            Err(SqlError::syntax(format!("invalid number \"{}\"", clip(s))))
        }
        Err(walden::numeric::NumericError::Overflow) => {
            let x = s
                .parse::<f64>()
                .map_err(|_| SqlError::syntax(format!("invalid number \"{}\"", clip(s))))?;
            value::check_float_range(x, s)?;
            Ok(Expr::Const(Value::Float8(x)))
        }
        Err(e) => Err(value::numeric_error(e)),
    }
}

/// A string literal's value. An escape (`E'\\000'`, `U&'\\0000'`) can spell a NUL,
/// which PostgreSQL's text cannot hold.
fn text_literal(s: &str) -> SqlResult<Value> {
    if s.contains('\0') {
        return Err(crate::error::nul_in_text());
    }
    Ok(Value::Text(s.to_string()))
}

/// PostgreSQL's error for an operator or function all of whose operands are of
/// unknown type (`'1' + '2'`, `-$1`, `sum($1)`), which several would take.
fn not_unique(message: &str) -> SqlError {
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

/// `interval '2' hour`: a bare number counts in the field's unit, and what is below the
/// field is cut off (`interval '1.5' day` is 1 day), as PostgreSQL does.
fn qualified_interval(value: Expr, field: &ast::DateTimeField) -> SqlResult<walden::Interval> {
    let Expr::Const(Value::Text(text)) = value else {
        return Err(SqlError::unsupported(
            "an interval field qualifier on a non-literal",
        ));
    };
    let unit = field.to_string().to_lowercase();
    let bare_number = text.trim().parse::<f64>().is_ok();
    let iv = if bare_number {
        crate::datetime::parse_interval(&format!("{} {unit}", text.trim()))?
    } else {
        crate::datetime::parse_interval(&text)?
    };
    crate::datetime::interval_trunc(&unit, iv)
}

/// The common type of CASE branches or COALESCE arguments.
pub(crate) fn common_type(params: Params, exprs: &[&Expr], what: &str) -> SqlResult<SqlType> {
    let mut ty = SqlType::Null;
    for e in exprs.iter().filter(|e| !is_unknown(params, e)) {
        let t = e.ty();
        ty = match (ty, t) {
            (SqlType::Null, t) | (t, SqlType::Null) => t,
            (a, b) if a == b => a,
            (a, b) if a.is_numeric() && b.is_numeric() => SqlType::wider(a, b),
            (a, b) if a.is_datetime() && b.is_datetime() => SqlType::wider(a, b),
            // bpchar and text convert to each other implicitly: PostgreSQL keeps the
            // first one's type.
            (a, b) if a.is_text() && b.is_text() => a,
            (a, b) => {
                return Err(SqlError::new(
                    code::DATATYPE_MISMATCH,
                    format!(
                        "{what} types {} and {} cannot be matched",
                        a.name(),
                        b.name()
                    ),
                ))
            }
        };
    }
    if ty == SqlType::Null && exprs.iter().any(|e| is_unknown(params, e)) {
        ty = SqlType::Text;
    }
    Ok(ty)
}

/// Brings an expression to a type where the other types allow it silently (numbers
/// widen, literals parse); used for branches of CASE and COALESCE.
pub(crate) fn to_common(params: Params, e: Expr, ty: SqlType) -> SqlResult<Expr> {
    let e = coerce_literal(params, e, ty)?;
    if e.ty() == ty || e.ty() == SqlType::Null {
        return Ok(e);
    }
    Ok(Expr::Cast(Box::new(e), DeclaredType::plain(ty)))
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
    fn ungrouped(&self) -> Binder<'_> {
        Binder {
            scope: self.scope,
            grouping: None,
            cx: self.cx,
            windows: None,
            set_returning: None,
            params: self.params,
        }
    }

    fn column(&self, table: Option<&ast::Ident>, id: &ast::Ident) -> SqlResult<Expr> {
        if let Some((i, ty)) = self.scope.resolve(table, id)? {
            if table.is_none() {
                return Ok(self.scope.column_expr(i));
            }
            return Ok(Expr::Column(i, ty));
        }
        if let Some(outer) = self.cx.and_then(|c| c.outer()) {
            if let Some(e) = outer.resolve(table, id)? {
                return Ok(e);
            }
        }
        let name = ident_name(id);
        match table {
            Some(t) if self.scope.relation(&ident_name(t)).is_none() => Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("missing FROM-clause entry for table \"{}\"", ident_name(t)),
            )
            .at(t.span.start)),
            _ => Err(SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("column \"{name}\" does not exist"),
            )
            .at(id.span.start)),
        }
    }

    /// Plans a subquery bound in this binder's query: its outer references become its
    /// parameters, values of this query's row.
    fn subquery(&mut self, q: &ast::Query) -> SqlResult<(Arc<dyn SubqueryPlan>, Vec<Expr>)> {
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
    fn bind_node(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as A;
        let bound = match e {
            A::Identifier(id) => self.column(None, id)?,
            A::CompoundIdentifier(parts) => match parts.as_slice() {
                [t, c] => self.column(Some(t), c)?,
                _ => {
                    return Err(SqlError::unsupported(format!(
                        "the qualified name {}",
                        clip(&e.to_string())
                    )))
                }
            },
            A::Value(v) => self.literal(&v.value)?,
            A::Nested(inner) => self.bind(inner)?,
            A::CompoundFieldAccess { root, access_chain } => self.access(root, access_chain)?,
            A::Collate { expr, collation } => {
                // Walden compares text bytewise, which is what the collations named
                // here are; psql writes `COLLATE pg_catalog.default` after its patterns.
                let name = collation
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .map(ident_name)
                    .unwrap_or_default();
                if !matches!(name.as_str(), "default" | "C" | "POSIX") {
                    return Err(SqlError::unsupported(format!("the collation {collation}")));
                }
                self.bind(expr)?
            }
            A::UnaryOp { op, expr } => self.unary(*op, expr)?,
            A::BinaryOp { left, op, right } => self.binary(left, op, right)?,
            // The parser reads ceil(x) and floor(x) as their own expressions.
            A::Ceil {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => self.ceil_floor(Func::Ceil, "ceil", expr)?,
            A::Floor {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => self.ceil_floor(Func::Floor, "floor", expr)?,
            A::IsNull(x) | A::IsNotNull(x) => {
                let x = self.bind(x)?;
                // PostgreSQL gives `$1 IS NULL` no type to infer.
                self.params.note_bare(&x);
                Expr::IsNull(Box::new(x), matches!(e, A::IsNotNull(_)))
            }
            A::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let ge = self.comparison(expr, CmpOp::GtEq, low)?;
                let le = self.comparison(expr, CmpOp::LtEq, high)?;
                negate_if(Expr::And(Box::new(ge), Box::new(le)), *negated)
            }
            A::InList {
                expr,
                list,
                negated,
            } => {
                let x = self.bind(expr)?;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    items.push(coerce_literal(self.params, self.bind(item)?, x.ty())?);
                }
                let bpchar =
                    x.ty() == SqlType::Bpchar || items.iter().any(|i| i.ty() == SqlType::Bpchar);
                let x = if bpchar { bpchar_side(x) } else { x };
                let items = items
                    .into_iter()
                    .map(|b| {
                        let b = if bpchar { bpchar_side(b) } else { b };
                        check_comparable(&x, &b, "IN").map(|()| b)
                    })
                    .collect::<SqlResult<Vec<_>>>()?;
                Expr::InList(Box::new(x), items, *negated)
            }
            A::Cast {
                kind,
                expr,
                data_type,
                ..
            } => {
                if matches!(kind, CastKind::TryCast | CastKind::SafeCast) {
                    return Err(SqlError::unsupported("TRY_CAST"));
                }
                if let Some(e) = self.catalog_cast(expr, data_type)? {
                    return fold(e);
                }
                let to = declared_type(data_type, false)?;
                let mut inner = self.bind(expr)?;
                // `$1::int`: the parameter is an int.
                if self.params.unknown(&inner).is_some() {
                    inner = coerce_literal(self.params, inner, to.ty)?;
                }
                if to.ty == SqlType::Text && crate::infer::is_written_in(expr) {
                    // A prepared statement's text value, or one cast to text: a text
                    // constant, not folded into a literal of unknown type.
                    return Ok(Expr::Cast(Box::new(inner), to));
                }
                Expr::Cast(Box::new(inner), to)
            }
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(operand.as_deref(), conditions, else_result.as_deref())?,
            A::Function(f) => self.function(f)?,
            A::TypedString(ts) => {
                let to = declared_type(&ts.data_type, false)?;
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                        s.clone()
                    }
                    other => {
                        return Err(SqlError::unsupported(format!(
                            "the literal {}",
                            clip(&other.to_string())
                        )))
                    }
                };
                Expr::Cast(Box::new(Expr::Const(text_literal(&text)?)), to)
            }
            A::Interval(iv) => match (&iv.leading_field, &iv.last_field) {
                (None, None) => {
                    let inner = self.bind(&iv.value)?;
                    Expr::Cast(Box::new(inner), DeclaredType::plain(SqlType::Interval))
                }
                (Some(field), None) => Expr::Const(Value::Interval(qualified_interval(
                    self.bind(&iv.value)?,
                    field,
                )?)),
                _ => {
                    return Err(SqlError::unsupported(
                        "interval field ranges (DAY TO SECOND)",
                    ))
                }
            },
            A::AtTimeZone {
                timestamp,
                time_zone,
            } => {
                // The session's zone is UTC: at UTC a timestamp becomes the timestamptz of
                // the same microseconds and back. Other zones are not known here.
                let zone = coerce_literal(self.params, self.bind(time_zone)?, SqlType::Text)?;
                let utc = matches!(&zone, Expr::Const(Value::Text(z))
                    if ["utc", "gmt", "z", "+00", "+00:00", "-00", "00:00", "etc/utc", "zulu"]
                        .contains(&z.trim().to_ascii_lowercase().as_str()));
                if !utc {
                    return Err(SqlError::unsupported(
                        "AT TIME ZONE with a zone other than UTC",
                    ));
                }
                let x = self.bind(timestamp)?;
                let to = match x.ty() {
                    SqlType::Timestamp => SqlType::Timestamptz,
                    SqlType::Timestamptz => SqlType::Timestamp,
                    t => {
                        return Err(SqlError::new(
                            code::UNDEFINED_FUNCTION,
                            format!(
                                "function pg_catalog.timezone(unknown, {}) does not exist",
                                t.name()
                            ),
                        ))
                    }
                };
                Expr::Cast(Box::new(x), DeclaredType::plain(to))
            }
            A::Extract { field, expr, .. } => {
                let unit = Expr::Const(Value::Text(field.to_string().to_lowercase()));
                let x = self.bind(expr)?;
                let ty = Func::Extract.result_type("extract", &[SqlType::Text, x.ty()])?;
                Expr::Call(Func::Extract, vec![unit, x], ty)
            }
            A::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters: None,
            } => {
                let ends = match trim_where {
                    None | Some(ast::TrimWhereField::Both) => crate::strings::Ends::Both,
                    Some(ast::TrimWhereField::Leading) => crate::strings::Ends::Leading,
                    Some(ast::TrimWhereField::Trailing) => crate::strings::Ends::Trailing,
                };
                let mut args = vec![self.bind(expr)?];
                if let Some(chars) = trim_what {
                    args.push(self.bind(chars)?);
                }
                self.text_call(Func::Trim(ends), trim_name(ends), args)?
            }
            A::Position { expr, r#in } => {
                let args = vec![self.bind(r#in)?, self.bind(expr)?];
                self.text_call(Func::Strpos, "strpos", args)?
            }
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
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
                Expr::Call(Func::Substr, args, ty)
            }
            A::Like {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            }
            | A::ILike {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            } => {
                if *any {
                    return Err(SqlError::unsupported("LIKE ANY"));
                }
                let func = if matches!(e, A::ILike { .. }) {
                    Func::ILike
                } else {
                    Func::Like
                };
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
                negate_if(Expr::Call(func, args, ty), *negated)
            }
            A::Subquery(q) => {
                let (plan, params) = self.subquery(q)?;
                let ty = one_column(&plan, q)?;
                Expr::Subquery(Box::new(Subquery {
                    kind: SubqueryKind::Scalar,
                    plan,
                    params,
                    lhs: None,
                    ty,
                }))
            }
            A::Exists { subquery, negated } => {
                let (plan, params) = self.subquery(subquery)?;
                let e = Expr::Subquery(Box::new(Subquery {
                    kind: SubqueryKind::Exists,
                    plan,
                    params,
                    lhs: None,
                    ty: SqlType::Bool,
                }));
                negate_if(e, *negated)
            }
            A::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let e = self.quantified(expr, CmpOp::Eq, subquery, false)?;
                negate_if(e, *negated)
            }
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            }
            | A::AllOp {
                left,
                compare_op,
                right,
            } => {
                let all = matches!(e, A::AllOp { .. });
                let op = cmp_op(compare_op).ok_or_else(|| {
                    SqlError::unsupported(format!("the operator {compare_op} with ANY or ALL"))
                })?;
                let mut inner = right.as_ref();
                while let A::Nested(x) = inner {
                    inner = x;
                }
                let A::Subquery(q) = inner else {
                    if all || op != CmpOp::Eq {
                        return Err(SqlError::unsupported(
                            "ALL, or an operator but =, over an array",
                        ));
                    }
                    return fold(self.eq_any_array(left, inner)?);
                };
                self.quantified(left, op, q, all)?
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "the expression {}",
                    clip(&other.to_string())
                )))
            }
        };
        fold(bound)
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
    fn aggregate(&mut self, e: &ast::Expr) -> SqlResult<Option<Expr>> {
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

    fn literal(&self, v: &ast::Value) -> SqlResult<Expr> {
        use ast::Value as V;
        if let V::Placeholder(p) = v {
            if let Some(param) = self.params.placeholder(p) {
                return Ok(param);
            }
            let n = p.strip_prefix('$').and_then(|d| d.parse().ok());
            if let Some(param) = n.and_then(|n| self.params.reference(n)) {
                return param;
            }
        }
        Ok(Expr::Const(match v {
            V::Number(s, _) => return number_literal(s),
            V::SingleQuotedString(s) | V::EscapedStringLiteral(s) => text_literal(s)?,
            V::DollarQuotedString(d) => text_literal(&d.value)?,
            V::Boolean(b) => Value::Bool(*b),
            V::Null => Value::Null,
            other => {
                return Err(SqlError::unsupported(format!(
                    "the literal {}",
                    clip(&other.to_string())
                )))
            }
        }))
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

    /// `(record).name`: the field of that name of a record.
    fn field(&self, record: Expr, name: &ast::Ident) -> SqlResult<Expr> {
        let field = ident_name(name);
        let SqlType::Record(shape) = record.ty() else {
            return Err(SqlError::new(
                code::WRONG_OBJECT_TYPE,
                format!(
                    "column notation .{field} applied to type {}, which is not a composite type",
                    record.ty().name()
                ),
            ));
        };
        let i = shape.field(&field).ok_or_else(|| {
            SqlError::new(
                code::UNDEFINED_COLUMN,
                format!("could not identify column \"{field}\" in record data type"),
            )
        })?;
        Ok(Expr::Call(
            Func::Field(shape, i),
            vec![record],
            shape.fields()[i].1,
        ))
    }

    /// `root` followed by `.field`s and `[subscript]`s: a qualified column name's
    /// parts first, then each access in turn.
    fn access(&mut self, root: &ast::Expr, chain: &[ast::AccessExpr]) -> SqlResult<Expr> {
        // `t.col[i]` comes as `t` then `.col`: a column's qualified name.
        let (mut e, rest) = match (root, chain.first()) {
            (ast::Expr::Identifier(t), Some(ast::AccessExpr::Dot(ast::Expr::Identifier(c)))) => {
                (self.column(Some(t), c)?, &chain[1..])
            }
            _ => (self.bind(root)?, chain),
        };
        for a in rest {
            e = match a {
                ast::AccessExpr::Dot(ast::Expr::Identifier(f)) => self.field(e, f)?,
                ast::AccessExpr::Subscript(ast::Subscript::Index { index }) => {
                    let arr = coerce_literal(self.params, e, SqlType::Text)?;
                    let i = coerce_literal(self.params, self.bind(index)?, SqlType::Int4)?;
                    let types = [arr.ty(), i.ty()];
                    let ty = Func::ArrayElement.result_type("array subscript", &types)?;
                    Expr::Call(Func::ArrayElement, vec![arr, i], ty)
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the expression {}",
                        clip(&other.to_string())
                    )))
                }
            };
        }
        Ok(e)
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
    fn operands(&mut self, l: &ast::Expr, r: &ast::Expr) -> SqlResult<(Expr, Expr)> {
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
        let cmp = match op {
            B::Eq => Some(CmpOp::Eq),
            B::NotEq => Some(CmpOp::NotEq),
            B::Lt => Some(CmpOp::Lt),
            B::LtEq => Some(CmpOp::LtEq),
            B::Gt => Some(CmpOp::Gt),
            B::GtEq => Some(CmpOp::GtEq),
            _ => None,
        };
        if let Some(c) = cmp {
            return self.comparison(l, c, r);
        }
        let json = match op {
            B::Arrow => Some(JsonOp::Get),
            B::LongArrow => Some(JsonOp::GetText),
            B::HashArrow => Some(JsonOp::Path),
            B::HashLongArrow => Some(JsonOp::PathText),
            B::AtArrow => Some(JsonOp::Contains),
            B::ArrowAt => Some(JsonOp::ContainedIn),
            B::Question => Some(JsonOp::Exists),
            B::QuestionPipe => Some(JsonOp::ExistsAny),
            B::QuestionAnd => Some(JsonOp::ExistsAll),
            _ => None,
        };
        if let Some(j) = json {
            let (a, b) = (self.bind(l)?, self.bind(r)?);
            return json_operator(self.params, j, a, b);
        }
        let arith = match op {
            B::Plus => Some(ArithOp::Add),
            B::Minus => Some(ArithOp::Sub),
            B::Multiply => Some(ArithOp::Mul),
            B::Divide => Some(ArithOp::Div),
            B::Modulo => Some(ArithOp::Mod),
            _ => None,
        };
        let bitwise = match op {
            B::BitwiseAnd => Some(Func::BitAnd),
            B::BitwiseOr => Some(Func::BitOr),
            B::PGBitwiseXor => Some(Func::BitXor),
            _ => None,
        };
        if let Some(f) = bitwise {
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
            return Ok(Expr::Call(f, vec![a, b], ty));
        }
        match (op, arith) {
            (_, Some(a)) => self.arith(l, a, r),
            (B::And, _) => Ok(Expr::And(
                Box::new(self.boolean(l, "AND")?),
                Box::new(self.boolean(r, "AND")?),
            )),
            (B::Or, _) => Ok(Expr::Or(
                Box::new(self.boolean(l, "OR")?),
                Box::new(self.boolean(r, "OR")?),
            )),
            (B::StringConcat, _) => {
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
                if (a.ty() == SqlType::Bytea || b.ty() == SqlType::Bytea)
                    && bytes(a.ty())
                    && bytes(b.ty())
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
            (B::PGRegexMatch, _) => self.regex(l, Func::RegexMatch, false, r),
            (B::PGRegexNotMatch, _) => self.regex(l, Func::RegexMatch, true, r),
            (B::PGRegexIMatch, _) => self.regex(l, Func::RegexIMatch, false, r),
            (B::PGRegexNotIMatch, _) => self.regex(l, Func::RegexIMatch, true, r),
            (B::PGCustomBinaryOperator(parts), _) => match parts
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
            },
            (other, None) => Err(SqlError::unsupported(format!("the operator {other}"))),
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

    /// The statement's catalog snapshot (an empty one where there is no catalog).
    fn snapshot(&self) -> crate::pg_catalog::Snap {
        crate::pg_catalog::Snap(
            self.cx
                .and_then(|c| c.catalog().pg_snapshot())
                .unwrap_or_default(),
        )
    }

    /// Casts to the catalog's types: `regclass` (a name to an OID, an OID to its
    /// name), `regtype` (an OID to its name), `regproc` (a function's name, which is
    /// how the catalog holds one), and `oid`, `name`, `"char"` and
    /// `pg_catalog.text`, which are int8 and text here. None for other types.
    fn catalog_cast(&mut self, e: &ast::Expr, dt: &ast::DataType) -> SqlResult<Option<Expr>> {
        if let ast::DataType::Array(_) = dt {
            // Arrays are held in their text form (`crate::array`).
            let inner = coerce_literal(self.params, self.bind(e)?, SqlType::Text)?;
            if !matches!(inner.ty(), SqlType::Text | SqlType::Null) {
                return Err(SqlError::unsupported(format!("the cast to {dt}")));
            }
            return Ok(Some(inner));
        }
        let ty = match dt {
            ast::DataType::Regclass => "regclass".to_string(),
            ast::DataType::Custom(name, mods) if mods.is_empty() => {
                let parts: Vec<String> = name
                    .0
                    .iter()
                    .filter_map(|p| p.as_ident())
                    .map(ident_name)
                    .collect();
                match parts
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .as_slice()
                {
                    [t] | ["pg_catalog", t] => t.to_string(),
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        let inner = self.bind(e)?;
        let snap = self.snapshot();
        let texty = inner.ty().is_text() || inner.ty() == SqlType::Null;
        Ok(Some(match ty.as_str() {
            "regclass" if texty => Expr::Catalog(
                CatalogFn::RegclassIn,
                vec![text_of(inner)],
                snap,
                SqlType::Int8,
            ),
            "regclass" if inner.ty().is_integer() => {
                Expr::Catalog(CatalogFn::RegclassOut, vec![inner], snap, SqlType::Text)
            }
            "regnamespace" if inner.ty().is_integer() => {
                Expr::Catalog(CatalogFn::NamespaceName, vec![inner], snap, SqlType::Text)
            }
            "regtype" if inner.ty().is_integer() => Expr::Catalog(
                CatalogFn::FormatType,
                vec![inner, Expr::Const(Value::Null)],
                snap,
                SqlType::Text,
            ),
            "regproc" if texty || inner.ty().is_integer() => Expr::Catalog(
                CatalogFn::RegprocIn,
                vec![text_of(inner)],
                snap,
                SqlType::Text,
            ),
            "oid" => Expr::Cast(Box::new(inner), DeclaredType::plain(SqlType::Int8)),
            "text" | "name" | "char" | "varchar" => {
                Expr::Cast(Box::new(inner), DeclaredType::plain(SqlType::Text))
            }
            "bpchar" => Expr::Cast(Box::new(inner), DeclaredType::plain(SqlType::Bpchar)),
            "int2" | "int4" | "int8" => {
                let t = match ty.as_str() {
                    "int2" => SqlType::Int2,
                    "int4" => SqlType::Int4,
                    _ => SqlType::Int8,
                };
                Expr::Cast(Box::new(inner), DeclaredType::plain(t))
            }
            _ => return Ok(None),
        }))
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

    fn case(
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

    fn function(&mut self, f: &ast::Function) -> SqlResult<Expr> {
        let name = function_name(&f.name)?;
        if let (FunctionArguments::Subquery(q), "array") = (&f.args, name.as_str()) {
            let (plan, params) = self.subquery(q)?;
            one_column(&plan, q)?;
            return Ok(Expr::Subquery(Box::new(Subquery {
                kind: SubqueryKind::Array,
                plan,
                params,
                lhs: None,
                ty: SqlType::Text,
            })));
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
        let args = plain_args(f, &name)?;
        let mut bound = Vec::with_capacity(args.len());
        let names_sequence = matches!(name.as_str(), "nextval" | "currval" | "setval");
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
        if name == "coalesce" {
            if bound.is_empty() {
                return Err(SqlError::syntax("coalesce needs at least one argument"));
            }
            let refs: Vec<&Expr> = bound.iter().collect();
            let ty = common_type(self.params, &refs, "COALESCE")?;
            let args = bound
                .into_iter()
                .map(|e| to_common(self.params, e, ty))
                .collect::<SqlResult<Vec<_>>>()?;
            return Ok(Expr::Coalesce(args, ty));
        }
        if name == "nullif" {
            return nullif(self.params, bound);
        }
        if let Some((func, ty, counts)) = CatalogFn::lookup(&name) {
            if !counts.contains(&bound.len()) {
                let types: Vec<&str> = bound.iter().map(|e| e.ty().name()).collect();
                return Err(SqlError::new(
                    code::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", types.join(", ")),
                ));
            }
            let args = bound
                .into_iter()
                .enumerate()
                .map(|(i, e)| coerce_literal(self.params, text_of(e), func.arg_type(i)))
                .collect::<SqlResult<Vec<_>>>()?;
            return Ok(Expr::Catalog(func, args, self.snapshot(), ty));
        }
        let Some(func) = Func::lookup(&name) else {
            let types: Vec<&str> = bound.iter().map(|e| e.ty().name()).collect();
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", types.join(", ")),
            ));
        };
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
            let want = match (func, i) {
                _ if want_int => Some(SqlType::Int4),
                (Func::DatePart | Func::DateTrunc, 1) => Some(SqlType::Timestamptz),
                (Func::Encode, 0) => Some(SqlType::Bytea),
                (Func::Age, _) => Some(SqlType::Timestamp),
                (Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval, _) => {
                    Some(SqlType::Interval)
                }
                (Func::ToTimestamp | Func::Abs | Func::Sign, _) => Some(SqlType::Float8),
                // round(x) is float8's, round(x, n) numeric's; trunc(x, n) too.
                (Func::Round, 0) if bound_len == 1 => Some(SqlType::Float8),
                (Func::Round | Func::Trunc, 0) if bound_len == 2 => Some(SqlType::Numeric),
                (Func::Round | Func::Trunc, 1) => Some(SqlType::Int4),
                (Func::JsonbTypeof | Func::JsonbArrayLength, _) => Some(SqlType::Jsonb),
                (Func::CurrentSetting, 1) | (Func::SetConfig, 2) => Some(SqlType::Bool),
                (Func::Setval, 1) => Some(SqlType::Int8),
                (Func::Setval, 2) => Some(SqlType::Bool),
                _ => None,
            };
            args.push(match want {
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
        let ty = func.result_type(&name, &types)?;
        Ok(Expr::Call(func, args, ty))
    }
}

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
fn call_args<'f>(f: &'f ast::Function, name: &str) -> SqlResult<(Vec<&'f ast::Expr>, bool)> {
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
    if let FunctionArguments::List(list) = &f.args {
        if let [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] = list.args.as_slice() {
            if func == AggFunc::Count && list.duplicate_treatment.is_none() {
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
        }
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
    let t = arg.ty();
    let texty = |t: SqlType| matches!(t, SqlType::Text | SqlType::Null);
    let ty = match func {
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
        AggFunc::StringAgg if texty(t) && extra.as_ref().is_some_and(|d| texty(d.ty())) => {
            SqlType::Text
        }
        AggFunc::BoolAnd | AggFunc::BoolOr if matches!(t, SqlType::Bool | SqlType::Null) => {
            SqlType::Bool
        }
        _ => {
            let mut types = vec![t.name()];
            if let Some(d) = &extra {
                types.push(d.ty().name());
            }
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", types.join(", ")),
            ));
        }
    };
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

/// `NOT e` when `negated`.
fn negate_if(e: Expr, negated: bool) -> Expr {
    if negated {
        Expr::Not(Box::new(e))
    } else {
        e
    }
}

/// The type of a subquery's one column (a subquery in an expression gives one).
fn one_column(plan: &Arc<dyn SubqueryPlan>, q: &ast::Query) -> SqlResult<SqlType> {
    match plan.columns() {
        [(_, ty)] => Ok(*ty),
        _ => Err(SqlError::syntax("subquery must return only one column").at(q.span().start)),
    }
}

fn cmp_op(op: &BinaryOperator) -> Option<CmpOp> {
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

fn check_comparable(a: &Expr, b: &Expr, op: &str) -> SqlResult<()> {
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

/// The name PostgreSQL gives a result column for an unaliased expression.
pub fn output_name(e: &ast::Expr) -> String {
    figure_name(e).0
}

/// A column name as PostgreSQL's FigureColname finds it, with how strongly the
/// expression gives it: 2 names it (a column, a function, EXISTS), 1 only types it (a
/// cast, a typed literal, CASE), 0 gives none (`?column?`). A cast of what names a
/// column weakly or not at all is named for the outermost cast's type, and CASE for its
/// ELSE where that names it.
fn figure_name(e: &ast::Expr) -> (String, u8) {
    use ast::Expr as A;
    let type_name = |dt: &ast::DataType| {
        declared_type(dt, false)
            .map(|d| d.ty.short_name().to_string())
            .unwrap_or_else(|_| "?column?".into())
    };
    // Parentheses and casts are looked through (in a loop: they may nest thousands of
    // levels deep).
    let mut inner = e;
    let mut outer_cast = None;
    let (name, strength) = loop {
        // A value a prepared statement's run wrote in for `$n`, which has no name.
        if crate::infer::is_written_in(inner) {
            break ("?column?".to_string(), 0);
        }
        match inner {
            A::Nested(x) => inner = x,
            A::Cast {
                expr, data_type, ..
            } => {
                outer_cast.get_or_insert(data_type);
                inner = expr;
            }
            _ => break name_of(inner, &type_name),
        }
    };
    match outer_cast {
        Some(data_type) if strength <= 1 => (type_name(data_type), 1),
        _ => (name, strength),
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

/// The function SQL's TRIM is.
fn trim_name(ends: crate::strings::Ends) -> &'static str {
    match ends {
        crate::strings::Ends::Both => "btrim",
        crate::strings::Ends::Leading => "ltrim",
        crate::strings::Ends::Trailing => "rtrim",
    }
}

/// [`figure_name`] of an expression other than parentheses and casts.
fn name_of(e: &ast::Expr, type_name: &dyn Fn(&ast::DataType) -> String) -> (String, u8) {
    use ast::Expr as A;
    let strong = |name: String| (name, 2);
    match e {
        A::Identifier(id) => strong(ident_name(id)),
        A::CompoundIdentifier(parts) => strong(parts.last().map(ident_name).unwrap_or_default()),
        A::Function(f) => strong(
            f.name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .map(ident_name)
                .unwrap_or_default(),
        ),
        A::Case { else_result, .. } => {
            let otherwise = else_result
                .as_deref()
                .map(|x| depth::recurse(|| figure_name(x)));
            match otherwise {
                Some((name, 2)) => strong(name),
                _ => ("case".into(), 1),
            }
        }
        A::Substring { .. } => strong("substr".into()),
        A::Trim { trim_where, .. } => strong(
            trim_name(match trim_where {
                Some(ast::TrimWhereField::Leading) => crate::strings::Ends::Leading,
                Some(ast::TrimWhereField::Trailing) => crate::strings::Ends::Trailing,
                _ => crate::strings::Ends::Both,
            })
            .into(),
        ),
        A::Position { .. } => strong("position".into()),
        // `(r).field` is named for the field; `a[i]` and `t.a[i]` for the array.
        A::CompoundFieldAccess { root, access_chain } => {
            match access_chain.iter().rev().find_map(|a| match a {
                ast::AccessExpr::Dot(ast::Expr::Identifier(id)) => Some(id),
                _ => None,
            }) {
                Some(id) => strong(ident_name(id)),
                None => depth::recurse(|| figure_name(root)),
            }
        }
        A::Extract { .. } => strong("extract".into()),
        A::Ceil { .. } => strong("ceil".into()),
        A::Floor { .. } => strong("floor".into()),
        A::AtTimeZone { .. } => strong("timezone".into()),
        A::Exists { .. } => strong("exists".into()),
        // A scalar subquery is named for its one column.
        A::Subquery(q) => match q.body.as_ref() {
            ast::SetExpr::Select(s) => match s.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(x)) => {
                    strong(depth::recurse(|| figure_name(x)).0)
                }
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => strong(ident_name(alias)),
                _ => ("?column?".into(), 0),
            },
            _ => ("?column?".into(), 0),
        },
        A::TypedString(ts) => (type_name(&ts.data_type), 1),
        A::Interval(_) => ("interval".into(), 1),
        _ => ("?column?".into(), 0),
    }
}
