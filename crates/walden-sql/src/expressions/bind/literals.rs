//! Literals, types and casts: numbers and strings as written, literals of unknown type
//! coerced, the common type of branches, and casts (to the catalog's types too).

use sqlparser::ast::{self, CastKind};
use walden::Value;

use super::{fold, unsupported_expression, Binder};
use crate::catalog::ident_name;
use crate::error::{clip, code, SqlError, SqlResult};
use crate::expr::Expr;
use crate::infer::Params;
use crate::pg_catalog::CatalogFn;
use crate::types::{declared_type, DeclaredType, SqlType};
use crate::value;

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

/// A number as written: an integer literal is int4 or int8, as it fits; any other (a
/// fraction, an exponent, an integer beyond int8) is an exact numeric, as in PostgreSQL.
/// One of more significant digits than a numeric holds here (38: `1e308`) is taken as a
/// float8, within a float8's range, rather than refused (PostgreSQL keeps it numeric).
pub(super) fn number_literal(s: &str) -> SqlResult<Expr> {
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

impl Binder<'_> {
    /// A value as written: a literal or a parameter, a typed string (`date '…'`), an
    /// interval, or a timestamp `AT TIME ZONE` a zone.
    pub(super) fn written_value(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        use ast::Expr as A;
        match e {
            A::Value(v) => self.literal(&v.value),
            A::TypedString(ts) => typed_string(ts),
            A::Interval(iv) => self.interval(iv),
            A::AtTimeZone {
                timestamp,
                time_zone,
            } => self.at_time_zone(timestamp, time_zone),
            other => Err(unsupported_expression(other)),
        }
    }

    /// `x::type` or `CAST(x AS type)`, folded: a text value a prepared statement wrote
    /// in (or one cast to text) stays a cast.
    pub(super) fn cast(
        &mut self,
        kind: &CastKind,
        expr: &ast::Expr,
        data_type: &ast::DataType,
    ) -> SqlResult<Expr> {
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
        fold(Expr::Cast(Box::new(inner), to))
    }

    /// `interval '…'`, with a field qualifier (`interval '2' hour`) or none.
    fn interval(&mut self, iv: &ast::Interval) -> SqlResult<Expr> {
        match (&iv.leading_field, &iv.last_field) {
            (None, None) => {
                let inner = self.bind(&iv.value)?;
                Ok(Expr::Cast(
                    Box::new(inner),
                    DeclaredType::plain(SqlType::Interval),
                ))
            }
            (Some(field), None) => Ok(Expr::Const(Value::Interval(qualified_interval(
                self.bind(&iv.value)?,
                field,
            )?))),
            _ => Err(SqlError::unsupported(
                "interval field ranges (DAY TO SECOND)",
            )),
        }
    }

    /// `timestamp AT TIME ZONE zone`. The session's zone is UTC: at UTC a timestamp
    /// becomes the timestamptz of the same microseconds and back. Other zones are not
    /// known here.
    fn at_time_zone(&mut self, timestamp: &ast::Expr, time_zone: &ast::Expr) -> SqlResult<Expr> {
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
        Ok(Expr::Cast(Box::new(x), DeclaredType::plain(to)))
    }

    pub(super) fn literal(&self, v: &ast::Value) -> SqlResult<Expr> {
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

    /// The statement's catalog snapshot (an empty one where there is no catalog).
    pub(super) fn snapshot(&self) -> crate::pg_catalog::Snap {
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
            "regtype" if texty => Expr::Catalog(
                CatalogFn::RegtypeIn,
                vec![text_of(inner)],
                snap,
                SqlType::Int8,
            ),
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
}

/// `type 'text'` (`date '2024-01-01'`): the text cast to the type.
fn typed_string(ts: &ast::TypedString) -> SqlResult<Expr> {
    let to = declared_type(&ts.data_type, false)?;
    let text = match &ts.value.value {
        ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => s.clone(),
        other => {
            return Err(SqlError::unsupported(format!(
                "the literal {}",
                clip(&other.to_string())
            )))
        }
    };
    Ok(Expr::Cast(Box::new(Expr::Const(text_literal(&text)?)), to))
}
