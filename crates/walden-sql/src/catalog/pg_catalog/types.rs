//! Column types as PostgreSQL's catalog names them: OIDs, `typname`, `format_type`'s
//! text, and how a stored default is shown. A new SQL type is one row of `TYPES` and
//! one arm of `type_of`.

use crate::types::{DeclaredType, SqlType};

/// One row of `pg_type`, with PostgreSQL 15's values for the type.
pub struct PgType {
    pub oid: i64,
    pub name: &'static str,
    /// What `format_type` calls it (without a length).
    pub format: &'static str,
    /// `typlen`: bytes, or -1 for variable length.
    pub len: i16,
    /// Whether values sort by a collation (`typcollation` 100, "default").
    pub collatable: bool,
    /// `typbyval`: passed by value.
    pub by_value: bool,
    /// `typcategory`: B boolean, D date/time, N numeric, S string, T timespan, U user
    /// defined, Z internal.
    pub category: char,
    /// `typispreferred`: the category's preferred type.
    pub preferred: bool,
    /// `typalign`: c, s, i or d (1, 2, 4 or 8 bytes).
    pub align: char,
    /// `typstorage`: p plain, x extended, m main.
    pub storage: char,
    /// The stem of its I/O functions' names: `typinput` is `{io}in`, `typoutput`
    /// `{io}out`, `typreceive` `{io}recv`, `typsend` `{io}send`.
    pub io: &'static str,
    /// Whether it takes a type modifier (`typmodin` `{name}typmodin`).
    pub takes_typmod: bool,
}

#[allow(clippy::too_many_arguments)]
const fn ty(
    oid: i64,
    name: &'static str,
    format: &'static str,
    len: i16,
    collatable: bool,
    (by_value, category, preferred): (bool, char, bool),
    (align, storage): (char, char),
    (io, takes_typmod): (&'static str, bool),
) -> PgType {
    PgType {
        oid,
        name,
        format,
        len,
        collatable,
        by_value,
        category,
        preferred,
        align,
        storage,
        io,
        takes_typmod,
    }
}

/// The types `pg_type` lists: Walden's column types and those its catalog columns use.
#[rustfmt::skip]
pub const TYPES: &[PgType] = &[
    ty(16, "bool", "boolean", 1, false, (true, 'B', true), ('c', 'p'), ("bool", false)),
    ty(17, "bytea", "bytea", -1, false, (false, 'U', false), ('i', 'x'), ("bytea", false)),
    ty(18, "char", "\"char\"", 1, false, (true, 'Z', false), ('c', 'p'), ("char", false)),
    ty(19, "name", "name", 64, false, (false, 'S', false), ('c', 'p'), ("name", false)),
    ty(20, "int8", "bigint", 8, false, (true, 'N', false), ('d', 'p'), ("int8", false)),
    ty(21, "int2", "smallint", 2, false, (true, 'N', false), ('s', 'p'), ("int2", false)),
    ty(23, "int4", "integer", 4, false, (true, 'N', false), ('i', 'p'), ("int4", false)),
    ty(25, "text", "text", -1, true, (false, 'S', true), ('i', 'x'), ("text", false)),
    ty(26, "oid", "oid", 4, false, (true, 'N', true), ('i', 'p'), ("oid", false)),
    ty(701, "float8", "double precision", 8, false, (true, 'N', true), ('d', 'p'), ("float8", false)),
    ty(1042, "bpchar", "character", -1, true, (false, 'S', false), ('i', 'x'), ("bpchar", true)),
    ty(1043, "varchar", "character varying", -1, true, (false, 'S', false), ('i', 'x'), ("varchar", true)),
    ty(1082, "date", "date", 4, false, (true, 'D', false), ('i', 'p'), ("date_", false)),
    ty(1114, "timestamp", "timestamp without time zone", 8, false, (true, 'D', false), ('d', 'p'), ("timestamp_", true)),
    ty(1184, "timestamptz", "timestamp with time zone", 8, false, (true, 'D', true), ('d', 'p'), ("timestamptz_", true)),
    ty(1186, "interval", "interval", 16, false, (false, 'T', true), ('d', 'p'), ("interval_", true)),
    ty(1700, "numeric", "numeric", -1, false, (false, 'N', false), ('i', 'm'), ("numeric_", true)),
    ty(2205, "regclass", "regclass", 4, false, (true, 'N', false), ('i', 'p'), ("regclass", false)),
    ty(2950, "uuid", "uuid", 16, false, (false, 'U', false), ('c', 'p'), ("uuid_", false)),
    ty(3802, "jsonb", "jsonb", -1, false, (false, 'U', false), ('i', 'x'), ("jsonb_", false)),
];

pub const TEXT_OID: i64 = 25;
pub const DEFAULT_COLLATION_OID: i64 = 100;
/// The "C" collation, `name`'s.
pub const C_COLLATION_OID: i64 = 950;

/// A column's type as the catalog shows it: the `pg_type` row and the type modifier
/// (`atttypmod`: for `varchar(n)` and `char(n)`, n + 4, as PostgreSQL stores it; for
/// `numeric(p,s)` PostgreSQL's `((p << 16) | (s & 0x7ff)) + 4`; else -1).
pub fn type_of(d: &DeclaredType) -> (&'static PgType, i32) {
    let oid = match (d.ty, d.max_chars, d.blank_padded) {
        (SqlType::Bpchar, _, _) | (SqlType::Text, _, true) => 1042,
        (SqlType::Text, Some(_), false) => 1043,
        // A record column (of a view over `_pg_expandarray`) shows as its text form.
        (SqlType::Text | SqlType::Null | SqlType::Record(_), _, _) => 25,
        (SqlType::Int2, _, _) => 21,
        (SqlType::Int4, _, _) => 23,
        (SqlType::Int8, _, _) => 20,
        (SqlType::Float8, _, _) => 701,
        (SqlType::Numeric, _, _) => 1700,
        (SqlType::Bool, _, _) => 16,
        (SqlType::Uuid, _, _) => 2950,
        (SqlType::Bytea, _, _) => 17,
        (SqlType::Date, _, _) => 1082,
        (SqlType::Timestamp, _, _) => 1114,
        (SqlType::Timestamptz, _, _) => 1184,
        (SqlType::Interval, _, _) => 1186,
        (SqlType::Jsonb, _, _) => 3802,
    };
    let typmod = match d.max_chars {
        Some(n) if d.ty.is_text() => n as i32 + 4,
        Some(typmod) if d.ty == SqlType::Numeric => typmod as i32,
        _ => -1,
    };
    (by_oid(oid).unwrap_or(&TYPES[0]), typmod)
}

pub fn by_oid(oid: i64) -> Option<&'static PgType> {
    TYPES.iter().find(|t| t.oid == oid)
}

/// The type a name gives, as `regtype`'s input reads it: `pg_catalog.` allowed, the
/// catalog's name (`int4`) or the SQL name (`integer`) and the usual aliases, any case
/// unless quoted. None for a type `pg_type` does not list.
pub fn by_name(s: &str) -> Option<&'static PgType> {
    let s = s.trim();
    let s = s.strip_prefix("pg_catalog.").unwrap_or(s);
    let name = match s.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        Some(q) => q.to_string(),
        None => s
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase(),
    };
    let name = match name.as_str() {
        "int" => "int4",
        "float" => "float8",
        "bool" => "bool",
        "decimal" => "numeric",
        "char" if !s.starts_with('"') => "bpchar",
        "character" => "bpchar",
        "timestamp with time zone" => "timestamptz",
        other => other,
    };
    TYPES.iter().find(|t| t.name == name || t.format == name)
}

/// PostgreSQL's `format_type(oid, typmod)`.
pub fn format_type(oid: i64, typmod: Option<i64>) -> String {
    match by_oid(oid) {
        Some(t) => match typmod {
            Some(m) if m >= 4 && matches!(oid, 1042 | 1043) => format!("{}({})", t.format, m - 4),
            Some(m) if m >= 4 && oid == 1700 => {
                let (p, s) = crate::types::precision_scale(m as u32);
                format!("numeric({p},{s})")
            }
            _ => t.format.to_string(),
        },
        None => "???".to_string(),
    }
}

/// A stored default (its SQL text as written) as PostgreSQL's `pg_get_expr` shows the
/// expression it stored: a string literal carries its cast (`'ab'::text`), a negative
/// number is a quoted constant of the column's type (`'-1'::integer`); numbers,
/// `true`, `false` and anything else are shown as written (PostgreSQL would show a
/// function call or an expression in its own deparsed form).
pub fn deparse_default(text: &str, d: &DeclaredType) -> String {
    let (t, _) = type_of(d);
    let cast = match t.oid {
        1042 => "bpchar",
        _ => t.format,
    };
    let t = text.trim();
    if t.starts_with('\'') && t.ends_with('\'') && t.len() >= 2 {
        return format!("{t}::{cast}");
    }
    // A dollar-quoted string ($$x$$, $tag$x$tag$) is the same constant as a quoted one.
    if let Some(body) = dollar_quoted(t) {
        return format!("'{}'::{cast}", body.replace('\'', "''"));
    }
    if let Some(num) = t.strip_prefix('-') {
        if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return format!("'{t}'::{cast}");
        }
    }
    t.to_string()
}

/// The body of `t` if it is one dollar-quoted string: `$tag$body$tag$`, the tag empty
/// or an identifier without `$`.
fn dollar_quoted(t: &str) -> Option<&str> {
    let rest = t.strip_prefix('$')?;
    let tag_end = rest.find('$')?;
    let tag = &rest[..tag_end];
    if !tag
        .chars()
        .enumerate()
        .all(|(i, c)| c == '_' || c.is_alphabetic() || (i > 0 && c.is_ascii_digit()))
    {
        return None;
    }
    let delim = &t[..tag_end + 2];
    let body = t[delim.len()..].strip_suffix(delim)?;
    // One string: the delimiter does not close it earlier.
    (!body.contains(delim)).then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_type_names_lengths_as_postgres() {
        assert_eq!(format_type(1043, Some(14)), "character varying(10)");
        assert_eq!(format_type(1042, Some(7)), "character(3)");
        assert_eq!(format_type(23, Some(-1)), "integer");
        assert_eq!(format_type(1043, Some(-1)), "character varying");
        assert_eq!(format_type(1700, Some(655366)), "numeric(10,2)");
        assert_eq!(format_type(1700, Some(-1)), "numeric");
        // numeric(3,-2): the scale's 11 bits sign-extend.
        assert_eq!(
            format_type(1700, Some(crate::types::numeric_typmod(3, -2) as i64)),
            "numeric(3,-2)"
        );
    }

    #[test]
    fn defaults_deparse_as_postgres_shows_them() {
        let text = DeclaredType::plain(SqlType::Text);
        let int = DeclaredType::plain(SqlType::Int4);
        let vc = DeclaredType {
            max_chars: Some(5),
            ..text
        };
        let bp = DeclaredType {
            max_chars: Some(2),
            blank_padded: true,
            ..text
        };
        assert_eq!(deparse_default("'ab'", &text), "'ab'::text");
        assert_eq!(deparse_default("'q'", &vc), "'q'::character varying");
        assert_eq!(deparse_default("'zz'", &bp), "'zz'::bpchar");
        assert_eq!(deparse_default("-1", &int), "'-1'::integer");
        assert_eq!(deparse_default("5", &int), "5");
        assert_eq!(deparse_default("$$x$$", &text), "'x'::text");
        assert_eq!(deparse_default("$t1$it's$t1$", &text), "'it''s'::text");
        assert_eq!(deparse_default("$$a$$ || $$b$$", &text), "$$a$$ || $$b$$");
        assert_eq!(
            deparse_default("true", &DeclaredType::plain(SqlType::Bool)),
            "true"
        );
    }
}
