//! SQL types: PostgreSQL's names for them, how they map onto the engine's column types,
//! and the column attributes (`varchar(n)`, `char(n)`, `serial`) that ride along.

use sqlparser::ast::{CharacterLength, DataType, ExactNumberInfo, TimezoneInfo};
use walden::{Column, ColumnType};

use crate::error::{code, SqlError, SqlResult};

/// The type of an expression's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SqlType {
    Int2,
    Int4,
    Int8,
    Float8,
    /// PostgreSQL's exact decimal (`walden::Numeric`): the type of a literal such as
    /// `2.5`, of arithmetic mixing it with integers, of sum(bigint) and avg(integer).
    Numeric,
    Bool,
    Text,
    /// PostgreSQL's `character(n)` (`bpchar`): text kept blank-padded to its length.
    /// Its trailing blanks do not count when it is compared, and it loses them where it
    /// becomes text (`||`, text functions, a cast or an assignment to text), as in
    /// PostgreSQL; LIKE, `~`, octet_length and the value shown keep them.
    Bpchar,
    Uuid,
    Date,
    Timestamp,
    /// `timestamp with time zone`: an instant, shown in the session's zone (UTC).
    Timestamptz,
    Interval,
    Bytea,
    /// A normalized JSON document (PostgreSQL's jsonb; `json` is taken as it too).
    Jsonb,
    /// A bare NULL: takes the type of wherever it goes.
    Null,
    /// A composite value (`crate::record`), held as its text form.
    Record(crate::record::RecordShape),
}

impl SqlType {
    pub fn from_column(ty: ColumnType) -> SqlType {
        match ty {
            ColumnType::Int2 => SqlType::Int2,
            ColumnType::Int4 => SqlType::Int4,
            ColumnType::Int8 => SqlType::Int8,
            ColumnType::Float8 => SqlType::Float8,
            ColumnType::Bool => SqlType::Bool,
            ColumnType::Text => SqlType::Text,
            ColumnType::Uuid => SqlType::Uuid,
            ColumnType::Date => SqlType::Date,
            ColumnType::Timestamp => SqlType::Timestamp,
            ColumnType::Timestamptz => SqlType::Timestamptz,
            ColumnType::Interval => SqlType::Interval,
            ColumnType::Bytea => SqlType::Bytea,
            ColumnType::Numeric => SqlType::Numeric,
            ColumnType::Jsonb => SqlType::Jsonb,
        }
    }

    /// The type of a column's values: `character(n)` columns are bpchar.
    pub fn of_column(c: &Column) -> SqlType {
        match SqlType::from_column(c.ty) {
            SqlType::Text if c.blank_padded => SqlType::Bpchar,
            t => t,
        }
    }

    /// True for text and bpchar: the types a string is.
    pub fn is_text(self) -> bool {
        matches!(self, SqlType::Text | SqlType::Bpchar)
    }

    /// The engine type a column of this type is stored as (a bare NULL becomes text,
    /// as PostgreSQL's `CREATE TABLE AS SELECT NULL` does).
    pub fn column_type(self) -> ColumnType {
        match self {
            SqlType::Int2 => ColumnType::Int2,
            SqlType::Int4 => ColumnType::Int4,
            SqlType::Int8 => ColumnType::Int8,
            SqlType::Float8 => ColumnType::Float8,
            SqlType::Numeric => ColumnType::Numeric,
            SqlType::Bool => ColumnType::Bool,
            SqlType::Text | SqlType::Bpchar | SqlType::Null | SqlType::Record(_) => {
                ColumnType::Text
            }
            SqlType::Uuid => ColumnType::Uuid,
            SqlType::Date => ColumnType::Date,
            SqlType::Timestamp => ColumnType::Timestamp,
            SqlType::Timestamptz => ColumnType::Timestamptz,
            SqlType::Interval => ColumnType::Interval,
            SqlType::Bytea => ColumnType::Bytea,
            SqlType::Jsonb => ColumnType::Jsonb,
        }
    }

    /// PostgreSQL's name, as in error messages.
    pub fn name(self) -> &'static str {
        match self {
            SqlType::Int2 => "smallint",
            SqlType::Int4 => "integer",
            SqlType::Int8 => "bigint",
            SqlType::Float8 => "double precision",
            SqlType::Numeric => "numeric",
            SqlType::Bool => "boolean",
            SqlType::Text => "text",
            SqlType::Bpchar => "character",
            SqlType::Uuid => "uuid",
            SqlType::Date => "date",
            SqlType::Timestamp => "timestamp without time zone",
            SqlType::Timestamptz => "timestamp with time zone",
            SqlType::Interval => "interval",
            SqlType::Bytea => "bytea",
            SqlType::Jsonb => "jsonb",
            SqlType::Null => "unknown",
            SqlType::Record(_) => "record",
        }
    }

    /// PostgreSQL's internal name, used as a column name for a bare cast (`'1'::int`).
    pub fn short_name(self) -> &'static str {
        match self {
            SqlType::Int2 => "int2",
            SqlType::Int4 => "int4",
            SqlType::Int8 => "int8",
            SqlType::Float8 => "float8",
            SqlType::Numeric => "numeric",
            SqlType::Bool => "bool",
            SqlType::Text => "text",
            SqlType::Bpchar => "bpchar",
            SqlType::Uuid => "uuid",
            SqlType::Date => "date",
            SqlType::Timestamp => "timestamp",
            SqlType::Timestamptz => "timestamptz",
            SqlType::Interval => "interval",
            SqlType::Bytea => "bytea",
            SqlType::Jsonb => "jsonb",
            SqlType::Null => "unknown",
            SqlType::Record(_) => "record",
        }
    }

    /// PostgreSQL's OID of the type, as the wire protocol's RowDescription and
    /// ParameterDescription name it. A bare NULL is text (25), as PostgreSQL (since 10)
    /// reports a column of an unknown-typed NULL.
    pub fn oid(&self) -> u32 {
        match self {
            SqlType::Int2 => 21,
            SqlType::Int4 => 23,
            SqlType::Int8 => 20,
            SqlType::Float8 => 701,
            SqlType::Numeric => 1700,
            SqlType::Bool => 16,
            SqlType::Text | SqlType::Null => 25,
            SqlType::Bpchar => 1042,
            SqlType::Uuid => 2950,
            SqlType::Date => 1082,
            SqlType::Timestamp => 1114,
            SqlType::Timestamptz => 1184,
            SqlType::Interval => 1186,
            SqlType::Bytea => 17,
            SqlType::Jsonb => 3802,
            SqlType::Record(_) => 2249,
        }
    }

    /// The type Walden holds values of a PostgreSQL type OID in, for the parameter types
    /// a client declares: each type's own OID, and the types Walden stores as another,
    /// as its type names do (`real` is a float8, `varchar(n)`, `char(n)` and `name` are
    /// text, `json` is a jsonb, `oid` an int8, `"char"` text). None for an OID Walden has
    /// no type for, and for 0 and 705 (`unknown`), which declare no type: a caller takes
    /// those as "infer it" (`Prepared::with_types` with None).
    pub fn from_oid(oid: u32) -> Option<SqlType> {
        Some(match oid {
            21 => SqlType::Int2,
            23 => SqlType::Int4,
            20 | 26 => SqlType::Int8,
            700 | 701 => SqlType::Float8,
            1700 => SqlType::Numeric,
            16 => SqlType::Bool,
            25 | 1043 | 1042 | 19 | 18 => SqlType::Text,
            2950 => SqlType::Uuid,
            1082 => SqlType::Date,
            1114 => SqlType::Timestamp,
            1184 => SqlType::Timestamptz,
            1186 => SqlType::Interval,
            17 => SqlType::Bytea,
            3802 | 114 => SqlType::Jsonb,
            _ => return None,
        })
    }

    /// The length PostgreSQL's `pg_type.typlen` gives the type, as RowDescription
    /// carries it: the bytes of a fixed-width value, -1 for a variable-width one.
    pub fn typlen(&self) -> i16 {
        match self {
            SqlType::Int2 => 2,
            SqlType::Int4 | SqlType::Date => 4,
            SqlType::Int8 | SqlType::Float8 | SqlType::Timestamp | SqlType::Timestamptz => 8,
            SqlType::Bool => 1,
            SqlType::Uuid | SqlType::Interval => 16,
            SqlType::Numeric
            | SqlType::Text
            | SqlType::Bpchar
            | SqlType::Bytea
            | SqlType::Jsonb
            | SqlType::Null
            | SqlType::Record(_) => -1,
        }
    }

    /// The type as a syntax tree's type name, for a cast written into a statement.
    pub(crate) fn data_type(self) -> DataType {
        match self {
            SqlType::Int2 => DataType::Int2(None),
            SqlType::Int4 => DataType::Int4(None),
            SqlType::Int8 => DataType::Int8(None),
            SqlType::Float8 => DataType::Float8,
            SqlType::Numeric => DataType::Numeric(ExactNumberInfo::None),
            SqlType::Bool => DataType::Bool,
            // A blank-padded value written in as text: assigned to a char(n) column it is
            // padded again, and compared with one, trailing blanks do not count.
            SqlType::Text | SqlType::Bpchar | SqlType::Null | SqlType::Record(_) => DataType::Text,
            SqlType::Uuid => DataType::Uuid,
            SqlType::Date => DataType::Date,
            SqlType::Timestamp => DataType::Timestamp(None, TimezoneInfo::None),
            SqlType::Timestamptz => DataType::Timestamp(None, TimezoneInfo::WithTimeZone),
            SqlType::Interval => DataType::Interval {
                fields: None,
                precision: None,
            },
            SqlType::Bytea => DataType::Bytea,
            SqlType::Jsonb => DataType::JSONB,
        }
    }

    /// Date, timestamp and timestamptz: comparable with each other (a date as its
    /// midnight), as PostgreSQL's cross-type operators allow.
    pub fn is_datetime(self) -> bool {
        matches!(
            self,
            SqlType::Date | SqlType::Timestamp | SqlType::Timestamptz
        )
    }

    pub fn is_integer(self) -> bool {
        matches!(self, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
    }

    pub fn is_numeric(self) -> bool {
        self.is_integer() || matches!(self, SqlType::Numeric | SqlType::Float8)
    }

    /// True for float8 (an integer or numeric meeting it becomes a float8).
    pub fn is_float(self) -> bool {
        self == SqlType::Float8
    }

    /// Rank among numeric types, for the wider of two.
    fn numeric_rank(self) -> u8 {
        match self {
            SqlType::Int2 => 1,
            SqlType::Int4 => 2,
            SqlType::Int8 => 3,
            SqlType::Numeric => 4,
            SqlType::Float8 => 5,
            _ => 0,
        }
    }

    /// The type both sides of a numeric operation are brought to; of two date/time
    /// types, the one both convert to (date → timestamp → timestamptz, as PostgreSQL's
    /// implicit casts go).
    pub fn wider(a: SqlType, b: SqlType) -> SqlType {
        let datetime_rank = |t: SqlType| match t {
            SqlType::Date => 1,
            SqlType::Timestamp => 2,
            _ => 3,
        };
        match (a, b) {
            (SqlType::Null, t) | (t, SqlType::Null) => t,
            _ if a.is_datetime() && b.is_datetime() => {
                if datetime_rank(a) >= datetime_rank(b) {
                    a
                } else {
                    b
                }
            }
            _ if a.numeric_rank() >= b.numeric_rank() => a,
            _ => b,
        }
    }
}

/// A declared column type: the value type plus its modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclaredType {
    pub ty: SqlType,
    /// `varchar(n)`/`char(n)`: the length; `numeric(p,s)`: PostgreSQL's typmod
    /// ([`numeric_typmod`]), as the engine's column keeps it.
    pub max_chars: Option<u32>,
    pub blank_padded: bool,
    pub serial: bool,
}

impl DeclaredType {
    pub fn plain(ty: SqlType) -> DeclaredType {
        DeclaredType {
            ty,
            max_chars: None,
            blank_padded: false,
            serial: false,
        }
    }

    pub fn of_column(c: &Column) -> DeclaredType {
        DeclaredType {
            ty: SqlType::of_column(c),
            max_chars: c.max_chars,
            blank_padded: c.blank_padded,
            serial: c.serial,
        }
    }

    /// `numeric(p,s)`: its precision and scale.
    pub fn numeric_precision_scale(&self) -> Option<(i32, i32)> {
        match (self.ty, self.max_chars) {
            (SqlType::Numeric, Some(typmod)) => Some(precision_scale(typmod)),
            _ => None,
        }
    }

    /// The name `\d` shows, as psql does.
    pub fn display_name(&self) -> String {
        if let Some((p, s)) = self.numeric_precision_scale() {
            return format!("numeric({p},{s})");
        }
        match (self.ty, self.max_chars, self.blank_padded) {
            (SqlType::Text | SqlType::Bpchar, Some(n), true) => format!("character({n})"),
            (SqlType::Text, Some(n), false) => format!("character varying({n})"),
            (SqlType::Int4, _, _) if self.serial => "integer (serial)".into(),
            (SqlType::Int8, _, _) if self.serial => "bigint (serial)".into(),
            (t, _, _) => t.name().into(),
        }
    }
}

fn char_length(len: &Option<CharacterLength>, default: Option<u32>) -> SqlResult<Option<u32>> {
    match len {
        None => Ok(default),
        Some(CharacterLength::Max) => Ok(None),
        Some(CharacterLength::IntegerLength { length, .. }) => {
            if *length == 0 || *length > 10_485_760 {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER,
                    format!("length for type varchar must be between 1 and 10485760, not {length}"),
                ));
            }
            Ok(Some(*length as u32))
        }
    }
}

/// PostgreSQL's typmod of `numeric(precision, scale)`: `((p << 16) | (s & 0x7ff)) + 4`
/// (the scale may be negative, kept in 11 bits).
pub fn numeric_typmod(precision: i32, scale: i32) -> u32 {
    (((precision << 16) | (scale & 0x7ff)) + 4) as u32
}

/// The precision and scale of a numeric typmod (the scale sign-extended from 11 bits).
pub fn precision_scale(typmod: u32) -> (i32, i32) {
    let t = typmod.wrapping_sub(4);
    let precision = (t >> 16) as i32 & 0xffff;
    let scale = (((t & 0x7ff) ^ 0x400) as i32) - 0x400;
    (precision, scale)
}

/// `numeric`, `numeric(p)`, `numeric(p,s)`: the declared type, with PostgreSQL's range
/// checks (precision 1 to 1000, scale -1000 to 1000).
fn numeric_type(info: &ExactNumberInfo) -> SqlResult<DeclaredType> {
    let (precision, scale) = match info {
        ExactNumberInfo::None => return Ok(DeclaredType::plain(SqlType::Numeric)),
        ExactNumberInfo::Precision(p) => (*p, 0),
        ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
    };
    if !(1..=1000).contains(&precision) {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            format!("NUMERIC precision {precision} must be between 1 and 1000"),
        ));
    }
    if !(-1000..=1000).contains(&scale) {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            format!("NUMERIC scale {scale} must be between -1000 and 1000"),
        ));
    }
    Ok(DeclaredType {
        max_chars: Some(numeric_typmod(precision as i32, scale as i32)),
        ..DeclaredType::plain(SqlType::Numeric)
    })
}

/// Maps a SQL type name to a declared type. `serial` is allowed only in CREATE TABLE.
pub fn declared_type(dt: &DataType, allow_serial: bool) -> SqlResult<DeclaredType> {
    let plain = |t| Ok(DeclaredType::plain(t));
    match dt {
        DataType::SmallInt(_) | DataType::Int2(_) => plain(SqlType::Int2),
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => plain(SqlType::Int4),
        DataType::BigInt(_) | DataType::Int8(_) => plain(SqlType::Int8),
        DataType::Real
        | DataType::Float4
        | DataType::Float8
        | DataType::Double(ExactNumberInfo::None)
        | DataType::DoublePrecision => plain(SqlType::Float8),
        DataType::Float(_) => plain(SqlType::Float8),
        DataType::Numeric(info) | DataType::Decimal(info) | DataType::Dec(info) => {
            numeric_type(info)
        }
        DataType::Bool | DataType::Boolean => plain(SqlType::Bool),
        DataType::Text | DataType::String(None) => plain(SqlType::Text),
        DataType::Varchar(len) | DataType::CharacterVarying(len) => Ok(DeclaredType {
            max_chars: char_length(len, None)?,
            ..DeclaredType::plain(SqlType::Text)
        }),
        DataType::Char(len) | DataType::Character(len) => Ok(DeclaredType {
            max_chars: char_length(len, Some(1))?,
            blank_padded: true,
            ..DeclaredType::plain(SqlType::Bpchar)
        }),
        DataType::Uuid => plain(SqlType::Uuid),
        DataType::Date => plain(SqlType::Date),
        // A precision below microseconds would round every value stored: not kept yet,
        // so refused rather than ignored.
        DataType::Timestamp(Some(p), _)
        | DataType::Interval {
            precision: Some(p), ..
        } if *p != 6 => Err(SqlError::unsupported(format!(
            "type {} (a fractional seconds precision other than 6)",
            crate::error::clip(&dt.to_string())
        ))),
        DataType::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => {
            plain(SqlType::Timestamp)
        }
        DataType::Timestamp(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => {
            plain(SqlType::Timestamptz)
        }
        DataType::Interval { fields: None, .. } => plain(SqlType::Interval),
        DataType::Bytea => plain(SqlType::Bytea),
        // json is taken as jsonb: stored normalized, printed as jsonb prints
        // (NOTES-types.md).
        DataType::JSONB | DataType::JSON => plain(SqlType::Jsonb),
        DataType::Custom(name, mods) if mods.is_empty() => {
            let n = name.to_string().to_lowercase();
            let serial = |t| {
                if allow_serial {
                    Ok(DeclaredType {
                        serial: true,
                        ..DeclaredType::plain(t)
                    })
                } else {
                    Err(SqlError::new(
                        code::UNDEFINED_OBJECT,
                        format!("type \"{n}\" does not exist"),
                    ))
                }
            };
            match n.as_str() {
                "serial" | "serial4" => serial(SqlType::Int4),
                "bigserial" | "serial8" => serial(SqlType::Int8),
                "smallserial" | "serial2" => serial(SqlType::Int2),
                "float8" => plain(SqlType::Float8),
                "float4" => plain(SqlType::Float8),
                "bool" => plain(SqlType::Bool),
                "timestamptz" => plain(SqlType::Timestamptz),
                "bytea" => plain(SqlType::Bytea),
                "numeric" | "decimal" => plain(SqlType::Numeric),
                "jsonb" | "json" => plain(SqlType::Jsonb),
                _ => Err(SqlError::new(
                    code::UNDEFINED_OBJECT,
                    format!("type \"{n}\" does not exist"),
                )),
            }
        }
        other => Err(SqlError::unsupported(format!(
            "type {}",
            crate::error::clip(&other.to_string())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every type's OID maps back to it; the OIDs of types held as another map to that.
    #[test]
    fn oids_map_back() {
        let all = [
            SqlType::Int2,
            SqlType::Int4,
            SqlType::Int8,
            SqlType::Float8,
            SqlType::Numeric,
            SqlType::Bool,
            SqlType::Text,
            SqlType::Uuid,
            SqlType::Date,
            SqlType::Timestamp,
            SqlType::Timestamptz,
            SqlType::Interval,
            SqlType::Bytea,
            SqlType::Jsonb,
        ];
        for t in all {
            assert_eq!(SqlType::from_oid(t.oid()), Some(t), "{t:?}");
        }
        assert_eq!(SqlType::from_oid(SqlType::Null.oid()), Some(SqlType::Text));
        assert_eq!(SqlType::from_oid(700), Some(SqlType::Float8));
        assert_eq!(SqlType::from_oid(1043), Some(SqlType::Text));
        assert_eq!(SqlType::from_oid(114), Some(SqlType::Jsonb));
        assert_eq!(SqlType::from_oid(0), None);
        assert_eq!(SqlType::from_oid(705), None);
    }
}
