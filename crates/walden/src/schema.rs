//! Typed rows: column types, schemas, values, and the byte encoding of a row inside a
//! tuple (after the tuple header). Decoding checks every length: row bytes come from disk.
//!
//! Row encoding: in a *counted* schema (every table created since format 10) first the
//! row's column count (`varint`); then a null bitmap of ceil(count / 8) bytes (bit set =
//! NULL), then each non-null column in order: int2 2 bytes, int4 4, int8 8, float8 8,
//! bool 1, uuid 16, text u16 length + UTF-8 bytes, date 4 (days since 2000-01-01),
//! timestamp and timestamptz 8 (microseconds since 2000-01-01), interval 16
//! (microseconds i64, days i32, months i32), bytea u16 length + bytes, numeric u16
//! length and its stored form (`Numeric::encode`: sign, scale, base-10000 digits),
//! jsonb u16 length + the document's bytes (`jsonb.rs`).
//! Little-endian, no padding. A text, bytea or jsonb value stored out of line (format 20,
//! `engine/toast.rs`) has the length `EXTERNAL` (0xFFFF) and a pointer of
//! `EXTERNAL_BYTES` in place of its bytes (`External`); a value longer than
//! `MAX_INLINE` has the length `LONG` (0xFFFE) and a u32 length before its bytes, in a
//! row on its way to being stored (never on a page: such a value goes out of line) or a
//! column's missing value. A row written before `ALTER TABLE … ADD COLUMN` has fewer
//! columns than the schema: the columns it lacks read as their *missing value*
//! (PostgreSQL's attmissingval). A dropped column keeps its place in the schema (PostgreSQL's
//! attisdropped): its stored bytes are skipped, it is NULL in rows written since, and
//! the API hides it.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use crate::calendar::{self, Interval};
use crate::jsonb::Json;
use crate::numeric::Numeric;

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    Int2,
    Int4,
    Int8,
    Float8,
    Bool,
    Text,
    Uuid,
    Date,
    Timestamp,
    Timestamptz,
    Interval,
    Bytea,
    /// PostgreSQL's exact decimal; a column's `numeric(p,s)` rides in
    /// [`Column::max_chars`] as PostgreSQL's typmod.
    Numeric,
    Jsonb,
}

/// The order an index declares for one of its columns (its keys: `access::btree::key`).
/// The default, ascending with NULLs last, is the order of every index before format 15;
/// PostgreSQL's default for a descending column (NULLs first) is the SQL layer's to fill
/// in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KeyOrder {
    /// Larger values have lower keys.
    pub desc: bool,
    /// NULLs have the lowest keys (else the highest).
    pub nulls_first: bool,
}

impl KeyOrder {
    /// Ascending, NULLs last: the default.
    pub const ASC: KeyOrder = KeyOrder {
        desc: false,
        nulls_first: false,
    };
    /// Descending, NULLs first: PostgreSQL's `DESC`.
    pub const DESC: KeyOrder = KeyOrder {
        desc: true,
        nulls_first: true,
    };

    /// The order of column `n` of an index whose orders are `order` (an empty or short
    /// list means the default for the columns it lacks).
    pub fn of(order: &[KeyOrder], n: usize) -> KeyOrder {
        order.get(n).copied().unwrap_or_default()
    }
}

impl ColumnType {
    /// Bytes of a value in a stored row (None: text, bytea, numeric or jsonb, a u16 length and
    /// the bytes).
    pub fn fixed_width(self) -> Option<usize> {
        match self {
            ColumnType::Int2 => Some(2),
            ColumnType::Int4 => Some(4),
            ColumnType::Int8 | ColumnType::Float8 => Some(8),
            ColumnType::Bool => Some(1),
            ColumnType::Uuid | ColumnType::Interval => Some(16),
            ColumnType::Date => Some(4),
            ColumnType::Timestamp | ColumnType::Timestamptz => Some(8),
            ColumnType::Text | ColumnType::Bytea | ColumnType::Numeric | ColumnType::Jsonb => None,
        }
    }

    pub const fn code(self) -> u8 {
        match self {
            ColumnType::Int2 => 1,
            ColumnType::Int4 => 2,
            ColumnType::Int8 => 3,
            ColumnType::Float8 => 4,
            ColumnType::Bool => 5,
            ColumnType::Text => 6,
            ColumnType::Uuid => 7,
            ColumnType::Date => 8,
            ColumnType::Timestamp => 9,
            ColumnType::Timestamptz => 10,
            ColumnType::Interval => 11,
            ColumnType::Bytea => 12,
            ColumnType::Numeric => 13,
            ColumnType::Jsonb => 14,
        }
    }
    pub fn from_code(c: u8) -> Option<ColumnType> {
        Some(match c {
            1 => ColumnType::Int2,
            2 => ColumnType::Int4,
            3 => ColumnType::Int8,
            4 => ColumnType::Float8,
            5 => ColumnType::Bool,
            6 => ColumnType::Text,
            7 => ColumnType::Uuid,
            8 => ColumnType::Date,
            9 => ColumnType::Timestamp,
            10 => ColumnType::Timestamptz,
            11 => ColumnType::Interval,
            12 => ColumnType::Bytea,
            13 => ColumnType::Numeric,
            14 => ColumnType::Jsonb,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Int2 => "int2",
            ColumnType::Int4 => "int4",
            ColumnType::Int8 => "int8",
            ColumnType::Float8 => "float8",
            ColumnType::Bool => "bool",
            ColumnType::Text => "text",
            ColumnType::Uuid => "uuid",
            ColumnType::Date => "date",
            ColumnType::Timestamp => "timestamp",
            ColumnType::Timestamptz => "timestamptz",
            ColumnType::Interval => "interval",
            ColumnType::Bytea => "bytea",
            ColumnType::Numeric => "numeric",
            ColumnType::Jsonb => "jsonb",
        }
    }
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
    pub nullable: bool,
    /// Text columns: at most this many characters (checked on every write). Numeric
    /// columns: PostgreSQL's typmod of `numeric(p,s)`, `((p << 16) | (s & 0x7ff)) + 4`,
    /// which the SQL layer applies (the engine stores it and does not act on it).
    pub max_chars: Option<u32>,
    /// Attributes the engine stores for the layer above and does not act on: the SQL
    /// layer enforces primary keys and fills serial columns.
    pub primary_key: bool,
    pub serial: bool,
    /// Text columns: `char(n)`, blank-padded to `max_chars` by the SQL layer.
    pub blank_padded: bool,
    /// The column's default as SQL text (at most 65,535 bytes), evaluated by the SQL
    /// layer for a row that gives the column no value.
    pub default: Option<String>,
    /// Dropped by `ALTER TABLE … DROP COLUMN`: invisible through the API, its stored
    /// bytes skipped, NULL in rows written since.
    pub dropped: bool,
    /// The value a row stored before the column was added has for it, encoded as in a
    /// row (no bitmap); None: NULL.
    pub missing: Option<Vec<u8>>,
}

// Column flag bits in the schema encoding (docs/format.md, "Schema").
const FLAG_NULLABLE: u8 = 1;
const FLAG_PRIMARY_KEY: u8 = 2;
const FLAG_SERIAL: u8 = 4;
const FLAG_BLANK_PADDED: u8 = 8;
const FLAG_MAX_CHARS: u8 = 16;
const FLAG_DEFAULT: u8 = 32;
const FLAG_DROPPED: u8 = 64;
const FLAG_MISSING: u8 = 128;
/// The bit of the schema's column count that marks a counted schema (rows start with
/// their column count).
const SCHEMA_COUNTED: u16 = 0x8000;
/// The bit of the schema's column count that says constraints follow the columns.
const SCHEMA_CONSTRAINTS: u16 = 0x4000;

impl Column {
    pub fn new(name: &str, ty: ColumnType) -> Column {
        Column {
            name: name.to_string(),
            ty,
            nullable: true,
            max_chars: None,
            primary_key: false,
            serial: false,
            blank_padded: false,
            default: None,
            dropped: false,
            missing: None,
        }
    }
    pub fn not_null(name: &str, ty: ColumnType) -> Column {
        Column {
            nullable: false,
            ..Column::new(name, ty)
        }
    }

    fn flags(&self) -> u8 {
        let mut f = 0;
        for (on, bit) in [
            (self.nullable, FLAG_NULLABLE),
            (self.primary_key, FLAG_PRIMARY_KEY),
            (self.serial, FLAG_SERIAL),
            (self.blank_padded, FLAG_BLANK_PADDED),
            (self.max_chars.is_some(), FLAG_MAX_CHARS),
            (self.default.is_some(), FLAG_DEFAULT),
            (self.dropped, FLAG_DROPPED),
            (self.missing.is_some(), FLAG_MISSING),
        ] {
            if on {
                f |= bit;
            }
        }
        f
    }
}

/// The columns of a table, in order (dropped ones included: positions never change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    pub columns: Vec<Column>,
    /// Rows start with their column count (tables created since format 10); an older
    /// table's rows have exactly the schema's columns, and it cannot add columns.
    pub counted: bool,
    /// The table's constraints the SQL layer enforces (CHECK), by name, each as SQL
    /// text; the engine stores them and does not act on them.
    pub constraints: Vec<Constraint>,
}

/// A named table constraint kept as SQL text for the layer above ("CHECK (a > 0)").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    pub name: String,
    pub definition: String,
}

/// The u16 length of a value stored out of line: its pointer follows.
pub const EXTERNAL: u16 = 0xFFFF;
/// The u16 length of a value too long for a u16, in a row on its way to being stored
/// (never on a page): a u32 length and the bytes follow.
pub const LONG: u16 = 0xFFFE;
/// The longest value a u16 length gives inline.
pub const MAX_INLINE: usize = 0xFFFD;
/// The longest text, bytea or jsonb value, as PostgreSQL's 1 GB: 2^30 - 1 bytes.
pub const MAX_VALUE_BYTES: usize = (1 << 30) - 1;
/// Bytes of an out-of-line value's pointer after its `EXTERNAL` length.
pub const EXTERNAL_BYTES: usize = 23;

/// A value stored out of line (`engine/toast.rs`): where the first of its chunks is in
/// the table's toast relation, its length, how it is stored (compressed or not, and
/// how long that is) and the CRC-32C of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct External {
    pub page: u64,
    pub slot: u16,
    /// The value's length.
    pub raw_len: u32,
    /// The length of what the chunks hold.
    pub stored_len: u32,
    /// 0: the bytes as they are; 1: zstd (a frame, of `raw_len` bytes once
    /// decompressed).
    pub method: u8,
    /// CRC-32C of the value's bytes.
    pub crc: u32,
}

impl External {
    /// Appends the pointer (without the `EXTERNAL` length before it).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.page.to_le_bytes());
        out.extend_from_slice(&self.slot.to_le_bytes());
        out.extend_from_slice(&self.raw_len.to_le_bytes());
        out.extend_from_slice(&self.stored_len.to_le_bytes());
        out.push(self.method);
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    /// Reads a pointer of `EXTERNAL_BYTES` bytes, checked.
    pub fn decode(b: &[u8]) -> Result<External, String> {
        if b.len() != EXTERNAL_BYTES {
            return Err(format!("an out-of-line pointer of {} bytes", b.len()));
        }
        let e = External {
            page: u64::from_le_bytes(arr(&b[0..8])),
            slot: u16::from_le_bytes(arr(&b[8..10])),
            raw_len: u32::from_le_bytes(arr(&b[10..14])),
            stored_len: u32::from_le_bytes(arr(&b[14..18])),
            method: b[18],
            crc: u32::from_le_bytes(arr(&b[19..23])),
        };
        if e.method > 1 || e.raw_len as usize > MAX_VALUE_BYTES || e.stored_len == 0 {
            return Err(format!("a bad out-of-line pointer {e:?}"));
        }
        if e.method == 0 && e.stored_len != e.raw_len {
            return Err(format!("a bad out-of-line pointer {e:?}"));
        }
        Ok(e)
    }
}

/// Reads a value stored out of line (the engine's toast relations; `None` where none
/// can be read: a pointer is then an error).
pub type FetchExternal<'a> = &'a dyn Fn(&External) -> Result<Vec<u8>, String>;

/// Where a text, bytea or jsonb value's bytes are in a row: how long its encoding is
/// from `at` (length included), and the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarForm {
    /// A u16 length and this many bytes.
    Inline(usize),
    /// `LONG`, a u32 length and this many bytes (in memory only).
    Long(usize),
    /// `EXTERNAL` and a pointer.
    External,
}

impl VarForm {
    /// Reads the form of the variable-length value at `at`.
    pub fn at(bytes: &[u8], at: usize) -> Result<VarForm, String> {
        let b = bytes.get(at..at + 2).ok_or("row truncated")?;
        Ok(match u16::from_le_bytes([b[0], b[1]]) {
            EXTERNAL => VarForm::External,
            LONG => {
                let b = bytes.get(at + 2..at + 6).ok_or("row truncated")?;
                VarForm::Long(u32::from_le_bytes(arr(b)) as usize)
            }
            n => VarForm::Inline(n as usize),
        })
    }

    /// Bytes of the whole encoding (length included).
    pub fn encoded_len(self) -> usize {
        match self {
            VarForm::Inline(n) => 2 + n,
            VarForm::Long(n) => 6 + n,
            VarForm::External => 2 + EXTERNAL_BYTES,
        }
    }

    /// Where the value's own bytes start, from the start of its encoding (None:
    /// out of line).
    pub fn header_len(self) -> Option<usize> {
        match self {
            VarForm::Inline(_) => Some(2),
            VarForm::Long(_) => Some(6),
            VarForm::External => None,
        }
    }
}

/// Appends a variable-length value's length (u16, or `LONG` and a u32) and its bytes.
fn put_var(out: &mut Vec<u8>, b: &[u8]) {
    if b.len() <= MAX_INLINE {
        out.extend_from_slice(&(b.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&LONG.to_le_bytes());
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(b);
}

/// The length of the encoding of a value of `col` at `at` (length included).
fn stored_len(col: &Column, bytes: &[u8], at: usize) -> Result<usize, String> {
    let len = match col.ty.fixed_width() {
        Some(n) => n,
        None => VarForm::at(bytes, at)
            .map_err(|_| format!("row truncated in column {:?}", col.name))?
            .encoded_len(),
    };
    if at + len > bytes.len() {
        return Err(format!("row truncated in column {:?}", col.name));
    }
    Ok(len)
}

/// What a read decodes of each row, and the room its vector has: the columns
/// `needed` marks (by column number among the visible ones; None: all; the others come
/// as NULL, their bytes not read), in a vector with room for `capacity` values.
#[derive(Debug, Clone, Copy, Default)]
pub struct RowShape<'a> {
    pub needed: Option<&'a [bool]>,
    pub capacity: usize,
}

/// A value of one column.
#[derive(Debug, PartialEq)]
pub enum Value {
    Null,
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float8(f64),
    Bool(bool),
    Text(String),
    Uuid([u8; 16]),
    /// Days since 2000-01-01 (`i32::MIN`/`MAX`: -infinity/infinity).
    Date(i32),
    /// Microseconds since 2000-01-01 00:00:00 (`i64::MIN`/`MAX`: -infinity/infinity).
    Timestamp(i64),
    /// Microseconds since 2000-01-01 00:00:00 UTC.
    Timestamptz(i64),
    Interval(Interval),
    Bytea(Vec<u8>),
    Numeric(Numeric),
    /// A normalized jsonb document (shared: a document is never changed in place).
    Jsonb(std::sync::Arc<Json>),
}

// Rows are vectors of values, copied at every join: a variant larger than a string
// would make every value larger.
const _: () = assert!(std::mem::size_of::<Value>() == 32);

/// Written out rather than derived so that it is inlined where rows are copied (joins):
/// the derived clone is a call whose result is copied once more, and the processor
/// stalls reading back a value stored in two parts.
impl Clone for Value {
    #[inline]
    fn clone(&self) -> Value {
        match self {
            Value::Null => Value::Null,
            Value::Int2(x) => Value::Int2(*x),
            Value::Int4(x) => Value::Int4(*x),
            Value::Int8(x) => Value::Int8(*x),
            Value::Float8(x) => Value::Float8(*x),
            Value::Bool(x) => Value::Bool(*x),
            Value::Date(x) => Value::Date(*x),
            Value::Timestamp(x) => Value::Timestamp(*x),
            Value::Timestamptz(x) => Value::Timestamptz(*x),
            Value::Uuid(x) => Value::Uuid(*x),
            Value::Interval(x) => Value::Interval(*x),
            Value::Numeric(x) => Value::Numeric(*x),
            Value::Text(x) => Value::Text(x.clone()),
            Value::Bytea(x) => Value::Bytea(x.clone()),
            Value::Jsonb(x) => Value::Jsonb(x.clone()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "NULL"),
            Value::Int2(v) => write!(f, "{v}"),
            Value::Int4(v) => write!(f, "{v}"),
            Value::Int8(v) => write!(f, "{v}"),
            Value::Float8(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{}", if *v { "t" } else { "f" }),
            Value::Text(v) => write!(f, "{v}"),
            Value::Uuid(b) => {
                for (i, byte) in b.iter().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        write!(f, "-")?;
                    }
                    write!(f, "{byte:02x}")?;
                }
                Ok(())
            }
            Value::Date(d) => calendar::fmt_date(f, *d),
            Value::Timestamp(t) => calendar::fmt_timestamp(f, *t, false),
            Value::Timestamptz(t) => calendar::fmt_timestamp(f, *t, true),
            Value::Interval(iv) => calendar::fmt_interval(f, *iv),
            Value::Bytea(b) => {
                write!(f, "\\x")?;
                b.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
            }
            Value::Numeric(n) => write!(f, "{n}"),
            Value::Jsonb(j) => write!(f, "{j}"),
        }
    }
}

/// A row: one value per column.
pub type Row = Vec<Value>;

impl Schema {
    pub fn new(columns: Vec<Column>) -> Schema {
        Schema {
            columns,
            counted: true,
            constraints: Vec::new(),
        }
    }

    /// Whether a column was dropped.
    pub fn has_dropped(&self) -> bool {
        self.columns.iter().any(|c| c.dropped)
    }

    /// The schema as the API shows it: without dropped columns.
    pub fn visible(&self) -> Schema {
        Schema {
            columns: self
                .columns
                .iter()
                .filter(|c| !c.dropped)
                .cloned()
                .collect(),
            counted: self.counted,
            constraints: self.constraints.clone(),
        }
    }

    /// A row as stored (every column) made, in place, a row as the API shows it.
    pub fn to_visible_in_place(&self, row: &mut Row) {
        if self.has_dropped() {
            let mut i = 0;
            row.retain(|_| {
                let keep = self.columns.get(i).is_some_and(|c| !c.dropped);
                i += 1;
                keep
            });
        }
    }

    /// The row as the API shows it: its dropped columns' values left out.
    pub fn to_visible(&self, mut row: Row) -> Row {
        self.to_visible_in_place(&mut row);
        row
    }

    /// A row as the API gives it made a row to store: NULL in each dropped column. A row
    /// of the wrong length is returned as it is (`check` refuses it).
    pub fn to_stored<'r>(&self, row: &'r [Value]) -> Cow<'r, [Value]> {
        if !self.has_dropped() || row.len() == self.columns.len() {
            return Cow::Borrowed(row);
        }
        let mut values = row.iter();
        let mut out = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            if c.dropped {
                out.push(Value::Null);
            } else {
                match values.next() {
                    Some(v) => out.push(v.clone()),
                    None => return Cow::Borrowed(row),
                }
            }
        }
        if values.next().is_some() {
            return Cow::Borrowed(row);
        }
        Cow::Owned(out)
    }

    /// The column count of a stored row and where its null bitmap starts, checked.
    fn row_header(&self, bytes: &[u8]) -> Result<(usize, usize), String> {
        if !self.counted {
            return Ok((self.columns.len(), 0));
        }
        let mut r = crate::codec::Reader::new(bytes, 0);
        let n = r.varint().map_err(|e| format!("row column count: {e}"))?;
        if n > self.columns.len() as u64 {
            return Err(format!(
                "row has {n} columns, the table {}",
                self.columns.len()
            ));
        }
        Ok((n as usize, r.pos()))
    }

    /// Checks a row against the schema: arity, types, NOT NULL.
    pub fn check(&self, row: &[Value]) -> Result<(), String> {
        if row.len() != self.columns.len() {
            return Err(format!(
                "{} values for {} columns",
                row.len(),
                self.columns.len()
            ));
        }
        for (col, v) in self.columns.iter().zip(row) {
            let ok = match (col.ty, v) {
                (_, Value::Null) => col.nullable || col.dropped,
                _ if col.dropped => false,
                (ColumnType::Int2, Value::Int2(_))
                | (ColumnType::Int4, Value::Int4(_))
                | (ColumnType::Int8, Value::Int8(_))
                | (ColumnType::Float8, Value::Float8(_))
                | (ColumnType::Bool, Value::Bool(_))
                | (ColumnType::Uuid, Value::Uuid(_))
                | (ColumnType::Date, Value::Date(_))
                | (ColumnType::Timestamp, Value::Timestamp(_))
                | (ColumnType::Timestamptz, Value::Timestamptz(_))
                | (ColumnType::Interval, Value::Interval(_))
                | (ColumnType::Numeric, Value::Numeric(_)) => true,
                (ColumnType::Bytea, Value::Bytea(b)) => b.len() <= MAX_VALUE_BYTES,
                (ColumnType::Jsonb, Value::Jsonb(j)) => j.to_bytes().len() <= MAX_VALUE_BYTES,
                (ColumnType::Text, Value::Text(s)) => {
                    if let Some(max) = col.max_chars {
                        if s.chars().count() > max as usize {
                            return Err(format!(
                                "value too long for column {:?} ({} characters at most)",
                                col.name, max
                            ));
                        }
                    }
                    s.len() <= MAX_VALUE_BYTES
                }
                _ => false,
            };
            if !ok {
                return Err(match v {
                    Value::Null => format!(
                        "null value in column {:?} violates not-null constraint",
                        col.name
                    ),
                    _ => format!(
                        "value {v} does not fit column {:?} of type {}",
                        col.name,
                        col.ty.name()
                    ),
                });
            }
        }
        Ok(())
    }

    /// Appends the encoding of a row (already checked) to `out`.
    pub fn encode_row(&self, row: &[Value], out: &mut Vec<u8>) {
        // Room for the whole row at once (at most a varint's length prefix per value):
        // a row grown value by value reallocates several times.
        let room: usize = row
            .iter()
            .map(|v| match v {
                Value::Text(s) => s.len() + 5,
                Value::Bytea(b) => b.len() + 5,
                Value::Jsonb(_) => 64,
                Value::Numeric(_) => 24,
                Value::Uuid(_) | Value::Interval(_) => 16,
                _ => 8,
            })
            .sum();
        out.reserve(room + 10 + row.len().div_ceil(8));
        if self.counted {
            crate::codec::put_varint(out, row.len() as u64);
        }
        let bitmap_at = out.len();
        out.resize(bitmap_at + row.len().div_ceil(8), 0);
        for (i, v) in row.iter().enumerate() {
            match v {
                Value::Null => out[bitmap_at + i / 8] |= 1 << (i % 8),
                Value::Int2(x) => out.extend_from_slice(&x.to_le_bytes()),
                Value::Int4(x) => out.extend_from_slice(&x.to_le_bytes()),
                Value::Int8(x) => out.extend_from_slice(&x.to_le_bytes()),
                Value::Float8(x) => out.extend_from_slice(&x.to_le_bytes()),
                Value::Bool(x) => out.push(*x as u8),
                Value::Uuid(x) => out.extend_from_slice(x),
                Value::Text(s) => put_var(out, s.as_bytes()),
                Value::Date(x) => out.extend_from_slice(&x.to_le_bytes()),
                Value::Timestamp(x) | Value::Timestamptz(x) => {
                    out.extend_from_slice(&x.to_le_bytes())
                }
                Value::Interval(iv) => {
                    out.extend_from_slice(&iv.micros.to_le_bytes());
                    out.extend_from_slice(&iv.days.to_le_bytes());
                    out.extend_from_slice(&iv.months.to_le_bytes());
                }
                Value::Bytea(b) => put_var(out, b),
                Value::Numeric(n) => {
                    // At most 3 + 2·10 bytes: the u16 length always holds it.
                    out.extend_from_slice(&(n.encoded_len() as u16).to_le_bytes());
                    n.encode(out);
                }
                Value::Jsonb(j) => put_var(out, &j.to_bytes()),
            }
        }
    }

    /// Decodes a row (every column, dropped ones NULL); `Err` with a reason when the
    /// bytes do not match the schema.
    pub fn decode_row(&self, bytes: &[u8]) -> Result<Row, String> {
        self.decode_columns(bytes, None)
    }

    /// As `decode_row`, decoding only the columns `needed` marks (by their number among
    /// the visible columns, as `to_visible` numbers them; past its end, every column):
    /// the others are left NULL, their bytes stepped over unread (a text a query does
    /// not read is neither copied nor checked), and nothing past the last column asked
    /// for is read (so not checked either: the row's length is checked only when its
    /// last column is read).
    pub fn decode_columns(&self, bytes: &[u8], needed: Option<&[bool]>) -> Result<Row, String> {
        self.decode_shaped(
            bytes,
            RowShape {
                needed,
                capacity: 0,
            },
        )
    }

    /// As `decode_columns`, the row's vector with room for `shape.capacity` values (a
    /// reader that widens rows, as a join does, is spared a reallocation per row).
    pub fn decode_shaped(&self, bytes: &[u8], shape: RowShape) -> Result<Row, String> {
        self.decode_shaped_with(bytes, shape, None)
    }

    /// As `decode_shaped`, reading values stored out of line through `fetch` (without
    /// it, such a value is an error).
    pub fn decode_shaped_with(
        &self,
        bytes: &[u8],
        shape: RowShape,
        fetch: Option<FetchExternal>,
    ) -> Result<Row, String> {
        let mut row = Vec::new();
        self.decode_shaped_into(bytes, shape, fetch, &mut row)?;
        Ok(row)
    }

    /// As `decode_shaped_with`, into `row` (its values replaced), so that a loop over
    /// many rows reuses one vector.
    pub fn decode_shaped_into(
        &self,
        bytes: &[u8],
        shape: RowShape,
        fetch: Option<FetchExternal>,
        row: &mut Row,
    ) -> Result<(), String> {
        let needed = shape.needed;
        let (count, start) = self.row_header(bytes)?;
        let nb = count.div_ceil(8);
        let bitmap = bytes
            .get(start..start + nb)
            .ok_or("row shorter than its null bitmap")?;
        let mut at = start + nb;
        // Every value starts NULL and is written in its place: a value made apart and
        // pushed costs a copy the processor stalls on (its tag and its payload stored
        // separately, read back as one), where scans spent a third of their time.
        row.clear();
        row.reserve(self.columns.len().max(shape.capacity));
        row.resize_with(self.columns.len(), || Value::Null);
        // Past the last column asked for, nothing more is read: the row's later bytes
        // are not looked at (a DELETE that reads no column reads only the header).
        let stop = match needed {
            None => self.columns.len(),
            Some(n) => {
                let mut visible = 0;
                let mut stop = 0;
                for (i, col) in self.columns.iter().enumerate() {
                    if !col.dropped {
                        if n.get(visible).copied().unwrap_or(true) {
                            stop = i + 1;
                        }
                        visible += 1;
                    }
                }
                stop
            }
        };
        let mut visible = 0usize;
        for ((i, col), slot) in self.columns.iter().enumerate().zip(row.iter_mut()) {
            if i >= stop {
                return Ok(());
            }
            // A dropped column's bytes are stepped over (a value of it stored out of
            // line is never read).
            let wanted =
                !col.dropped && needed.is_none_or(|n| n.get(visible).copied().unwrap_or(true));
            if !col.dropped {
                visible += 1;
            }
            if i >= count {
                if let (Some(m), false) = (&col.missing, col.dropped) {
                    *slot = decode_value(col, m, &mut 0)?;
                }
                continue;
            }
            if bitmap[i / 8] & (1 << (i % 8)) != 0 {
                continue;
            }
            if !wanted {
                at += stored_len(col, bytes, at)?;
                continue;
            }
            let fixed = |n: usize| bytes.get(at..at + n);
            match col.ty {
                ColumnType::Int4 if !col.dropped => {
                    if let Some(b) = fixed(4) {
                        *slot = Value::Int4(i32::from_le_bytes(arr(b)));
                        at += 4;
                        continue;
                    }
                }
                ColumnType::Int8 if !col.dropped => {
                    if let Some(b) = fixed(8) {
                        *slot = Value::Int8(i64::from_le_bytes(arr(b)));
                        at += 8;
                        continue;
                    }
                }
                ColumnType::Float8 if !col.dropped => {
                    if let Some(b) = fixed(8) {
                        *slot = Value::Float8(f64::from_le_bytes(arr(b)));
                        at += 8;
                        continue;
                    }
                }
                _ => {}
            }
            let v = decode_value_with(col, bytes, &mut at, fetch)?;
            if !col.dropped {
                *slot = v;
            }
        }
        if at != bytes.len() {
            return Err(format!("{} trailing bytes after the row", bytes.len() - at));
        }
        Ok(())
    }

    /// Where each column's value lies in a row as stored (None: NULL), each range within
    /// the row; `Err` with a reason when the bytes do not match the schema, or when the
    /// row lacks a column whose missing value is not NULL (the value is not in the row).
    pub fn value_ranges(&self, bytes: &[u8]) -> Result<Vec<Option<Range<usize>>>, String> {
        let mut out = Vec::with_capacity(self.columns.len());
        self.value_ranges_into(bytes, &mut out)?;
        Ok(out)
    }

    /// As `value_ranges`, into `out` (cleared first), so that a loop over many rows
    /// reuses one vector.
    pub fn value_ranges_into(
        &self,
        bytes: &[u8],
        out: &mut Vec<Option<Range<usize>>>,
    ) -> Result<(), String> {
        out.clear();
        let (count, start) = self.row_header(bytes)?;
        let nb = count.div_ceil(8);
        let bitmap = bytes
            .get(start..start + nb)
            .ok_or("row shorter than its null bitmap")?;
        let mut at = start + nb;
        for (i, col) in self.columns.iter().enumerate() {
            if i >= count {
                if col.missing.is_some() && !col.dropped {
                    return Err(format!("column {:?} is not in the row", col.name));
                }
                out.push(None);
                continue;
            }
            if bitmap[i / 8] & (1 << (i % 8)) != 0 {
                out.push(None);
                continue;
            }
            let len = stored_len(col, bytes, at)?;
            out.push(Some(at..at + len));
            at += len;
        }
        Ok(())
    }

    /// Whether two stored rows hold the same bytes in each of `columns` (NULL in
    /// both counts as the same); false when either does not match the schema.
    pub fn same_values(&self, a: &[u8], b: &[u8], columns: &[u16]) -> bool {
        let (Ok(ra), Ok(rb)) = (self.value_ranges(a), self.value_ranges(b)) else {
            return false;
        };
        columns
            .iter()
            .all(|&c| match (ra.get(c as usize), rb.get(c as usize)) {
                (Some(x), Some(y)) => x.clone().map(|r| &a[r]) == y.clone().map(|r| &b[r]),
                _ => false,
            })
    }

    /// Serializes the schema (for the catalog and CreateTable records).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let counted = if self.counted { SCHEMA_COUNTED } else { 0 };
        let constraints = if self.constraints.is_empty() {
            0
        } else {
            SCHEMA_CONSTRAINTS
        };
        out.extend_from_slice(&(self.columns.len() as u16 | counted | constraints).to_le_bytes());
        for c in &self.columns {
            out.push(c.ty.code());
            out.push(c.flags());
            if let Some(max) = c.max_chars {
                out.extend_from_slice(&max.to_le_bytes());
            }
            out.extend_from_slice(&(c.name.len() as u16).to_le_bytes());
            out.extend_from_slice(c.name.as_bytes());
            if let Some(d) = &c.default {
                out.extend_from_slice(&(d.len() as u16).to_le_bytes());
                out.extend_from_slice(d.as_bytes());
            }
            if let Some(m) = &c.missing {
                crate::codec::put_bytes_v(out, m);
            }
        }
        if !self.constraints.is_empty() {
            crate::codec::put_varint(out, self.constraints.len() as u64);
            for c in &self.constraints {
                crate::codec::put_string(out, &c.name);
                crate::codec::put_bytes_v(out, c.definition.as_bytes());
            }
        }
    }

    /// Parses a serialized schema, advancing `at`.
    pub fn decode(bytes: &[u8], at: &mut usize) -> Result<Schema, String> {
        let mut r = crate::codec::Reader::new(bytes, *at);
        let n = r.u16()?;
        let counted = n & SCHEMA_COUNTED != 0;
        let has_constraints = n & SCHEMA_CONSTRAINTS != 0;
        let n = (n & !(SCHEMA_COUNTED | SCHEMA_CONSTRAINTS)) as usize;
        let mut columns = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let code = r.u8()?;
            let ty = ColumnType::from_code(code).ok_or(format!("unknown column type {code}"))?;
            let flags = r.u8()?;
            let max_chars = if flags & FLAG_MAX_CHARS != 0 {
                Some(r.u32()?)
            } else {
                None
            };
            let name = r.string()?;
            let default = if flags & FLAG_DEFAULT != 0 {
                Some(r.string()?)
            } else {
                None
            };
            let missing = if flags & FLAG_MISSING != 0 {
                Some(r.bytes_v()?.to_vec())
            } else {
                None
            };
            let column = Column {
                name,
                ty,
                nullable: flags & FLAG_NULLABLE != 0,
                max_chars,
                primary_key: flags & FLAG_PRIMARY_KEY != 0,
                serial: flags & FLAG_SERIAL != 0,
                blank_padded: flags & FLAG_BLANK_PADDED != 0,
                default,
                dropped: flags & FLAG_DROPPED != 0,
                missing,
            };
            if let Some(m) = &column.missing {
                // Untrusted bytes: the missing value must decode whole.
                let mut at = 0;
                decode_value(&column, m, &mut at)?;
                if at != m.len() {
                    return Err(format!("column {:?}: bad missing value", column.name));
                }
            }
            columns.push(column);
        }
        let mut constraints = Vec::new();
        if has_constraints {
            let count = r.varint()?;
            if count > r.remaining() as u64 {
                return Err(format!("{count} constraints cannot fit"));
            }
            for _ in 0..count {
                let name = r.string()?;
                let definition = String::from_utf8(r.bytes_v()?.to_vec())
                    .map_err(|_| format!("constraint {name:?} is not UTF-8"))?;
                constraints.push(Constraint { name, definition });
            }
        }
        *at = r.pos();
        Ok(Schema {
            columns,
            counted,
            constraints,
        })
    }
}

/// An interval from its 16 stored bytes (micros, days, months, little-endian).
pub fn decode_interval(b: &[u8]) -> Interval {
    Interval {
        micros: i64::from_le_bytes(arr(&b[0..8])),
        days: i32::from_le_bytes(arr(&b[8..12])),
        months: i32::from_le_bytes(arr(&b[12..16])),
    }
}

/// Decodes one non-null value of `col` at `*at`, advancing it.
fn decode_value(col: &Column, bytes: &[u8], at: &mut usize) -> Result<Value, String> {
    decode_value_with(col, bytes, at, None)
}

/// The bytes of the variable-length value at `*at` (read through `fetch` when stored
/// out of line), advancing `at` past its encoding.
fn var_bytes<'b>(
    col: &Column,
    bytes: &'b [u8],
    at: &mut usize,
    fetch: Option<FetchExternal>,
) -> Result<Cow<'b, [u8]>, String> {
    let form =
        VarForm::at(bytes, *at).map_err(|_| format!("row truncated in column {:?}", col.name))?;
    let start = *at;
    let len = stored_len(col, bytes, start)?;
    *at = start + len;
    match form.header_len() {
        Some(h) => Ok(Cow::Borrowed(&bytes[start + h..start + len])),
        None => {
            let p = External::decode(&bytes[start + 2..start + len])
                .map_err(|e| format!("column {:?}: {e}", col.name))?;
            let fetch = fetch
                .ok_or_else(|| format!("column {:?} holds a value stored out of line", col.name))?;
            fetch(&p)
                .map(Cow::Owned)
                .map_err(|e| format!("column {:?}: {e}", col.name))
        }
    }
}

/// As `decode_value`, reading a value stored out of line through `fetch`.
fn decode_value_with(
    col: &Column,
    bytes: &[u8],
    at: &mut usize,
    fetch: Option<FetchExternal>,
) -> Result<Value, String> {
    match col.ty {
        ColumnType::Text => {
            let b = var_bytes(col, bytes, at, fetch)?;
            let s = match b {
                Cow::Borrowed(b) => std::str::from_utf8(b).map(str::to_string).ok(),
                Cow::Owned(v) => String::from_utf8(v).ok(),
            };
            return Ok(Value::Text(
                s.ok_or_else(|| format!("column {:?} is not UTF-8", col.name))?,
            ));
        }
        ColumnType::Bytea => {
            return Ok(Value::Bytea(var_bytes(col, bytes, at, fetch)?.into_owned()))
        }
        ColumnType::Jsonb => {
            let b = var_bytes(col, bytes, at, fetch)?;
            let doc = Json::decode(&b).map_err(|e| format!("column {:?}: {e}", col.name))?;
            return Ok(Value::Jsonb(std::sync::Arc::new(doc)));
        }
        _ => {}
    }
    let mut take = |n: usize| -> Result<&[u8], String> {
        let s = bytes
            .get(*at..*at + n)
            .ok_or_else(|| format!("row truncated in column {:?}", col.name))?;
        *at += n;
        Ok(s)
    };
    Ok(match col.ty {
        ColumnType::Int2 => Value::Int2(i16::from_le_bytes(arr(take(2)?))),
        ColumnType::Int4 => Value::Int4(i32::from_le_bytes(arr(take(4)?))),
        ColumnType::Int8 => Value::Int8(i64::from_le_bytes(arr(take(8)?))),
        ColumnType::Float8 => Value::Float8(f64::from_le_bytes(arr(take(8)?))),
        ColumnType::Bool => Value::Bool(take(1)?[0] != 0),
        ColumnType::Uuid => Value::Uuid(arr(take(16)?)),
        // Read above, before `take` borrows `at`.
        ColumnType::Text | ColumnType::Bytea | ColumnType::Jsonb => {
            return Err(format!("column {:?}: a variable-length value", col.name))
        }
        ColumnType::Date => Value::Date(i32::from_le_bytes(arr(take(4)?))),
        ColumnType::Timestamp => Value::Timestamp(i64::from_le_bytes(arr(take(8)?))),
        ColumnType::Timestamptz => Value::Timestamptz(i64::from_le_bytes(arr(take(8)?))),
        ColumnType::Interval => Value::Interval(decode_interval(take(16)?)),

        ColumnType::Numeric => {
            let len = u16::from_le_bytes(arr(take(2)?)) as usize;
            Value::Numeric(
                Numeric::decode(take(len)?).map_err(|e| format!("column {:?}: {e}", col.name))?,
            )
        }
    })
}

/// A value encoded as in a row (no bitmap): a column's missing value. None for NULL.
pub fn encode_value(v: &Value) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let s = Schema {
        columns: vec![],
        counted: false,
        constraints: Vec::new(),
    };
    if matches!(v, Value::Null) {
        return None;
    }
    s.encode_row(std::slice::from_ref(v), &mut out);
    // No columns in `s`: encode_row wrote a 1-byte bitmap for the one value first.
    out.remove(0);
    Some(out)
}

fn arr<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(s);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::new(vec![
            Column::not_null("a", ColumnType::Int4),
            Column::new("b", ColumnType::Text),
            Column::new("c", ColumnType::Float8),
            Column::new("d", ColumnType::Uuid),
            Column::new("e", ColumnType::Bool),
            Column::new("f", ColumnType::Int2),
            Column::new("g", ColumnType::Int8),
            Column::new("h", ColumnType::Int8),
            Column::new("j", ColumnType::Date),
            Column::new("k", ColumnType::Timestamp),
            Column::new("l", ColumnType::Timestamptz),
            Column::new("m", ColumnType::Interval),
            Column::new("n", ColumnType::Bytea),
            Column::new("o", ColumnType::Numeric),
            Column::new("p", ColumnType::Jsonb),
            Column {
                max_chars: Some(3),
                blank_padded: true,
                primary_key: true,
                serial: true,
                default: Some("'ab' || 'c'".into()),
                ..Column::new("i", ColumnType::Text)
            },
        ])
    }

    #[test]
    fn row_round_trip() {
        let s = schema();
        let row = vec![
            Value::Int4(-5),
            Value::Text("héllo".into()),
            Value::Null,
            Value::Uuid([9; 16]),
            Value::Bool(true),
            Value::Int2(7),
            Value::Int8(i64::MIN),
            Value::Null,
            Value::Date(-3),
            Value::Timestamp(1),
            Value::Timestamptz(i64::MAX),
            Value::Interval(Interval {
                months: -1,
                days: 2,
                micros: -3,
            }),
            Value::Bytea(vec![0, 1, 255]),
            Value::Numeric(Numeric::new(-12_345_678, 4).unwrap()),
            Value::Jsonb(std::sync::Arc::new(crate::jsonb::Json::object(vec![(
                "a".into(),
                crate::jsonb::Json::Array(vec![crate::jsonb::Json::Number("1.5".into())]),
            )]))),
            Value::Text("abc".into()),
        ];
        s.check(&row).expect("valid row");
        let mut b = Vec::new();
        s.encode_row(&row, &mut b);
        assert_eq!(s.decode_row(&b), Ok(row.clone()));
        assert!(s.decode_row(&b[..b.len() - 1]).is_err());
        // A numeric's sign byte that is neither 0 nor 1 is damage, named by column.
        let mut numeric = Vec::new();
        Numeric::new(5, 0).unwrap().encode(&mut numeric);
        let mut bad = Vec::new();
        let mut damaged = row.clone();
        damaged[13] = Value::Numeric(Numeric::new(5, 0).unwrap());
        s.encode_row(&damaged, &mut bad);
        let sign_at = bad
            .windows(numeric.len())
            .rposition(|w| w == &numeric[..])
            .unwrap();
        bad[sign_at] = 7;
        assert_eq!(
            s.decode_row(&bad),
            Err("column \"o\": numeric sign byte 7".to_string())
        );
    }

    #[test]
    fn check_rejects_null_and_type() {
        let s = schema();
        let mut row = vec![Value::Null; 16];
        assert!(s.check(&row).unwrap_err().contains("not-null"));
        row[0] = Value::Text("x".into());
        assert!(s.check(&row).unwrap_err().contains("does not fit"));
        assert!(s.check(&row[..3]).is_err());
        row[0] = Value::Int4(1);
        row[15] = Value::Text("abcé".into());
        assert!(s.check(&row).unwrap_err().contains("too long"));
    }

    #[test]
    fn a_row_stored_before_add_column_reads_the_missing_value() {
        let old = Schema::new(vec![
            Column::new("a", ColumnType::Int4),
            Column::new("b", ColumnType::Text),
        ]);
        let mut stored = Vec::new();
        old.encode_row(&[Value::Int4(1), Value::Text("x".into())], &mut stored);
        let mut new = old.clone();
        new.columns.push(Column {
            missing: encode_value(&Value::Int8(7)),
            ..Column::new("c", ColumnType::Int8)
        });
        new.columns.push(Column::new("d", ColumnType::Bool));
        assert_eq!(
            new.decode_row(&stored),
            Ok(vec![
                Value::Int4(1),
                Value::Text("x".into()),
                Value::Int8(7),
                Value::Null
            ])
        );
        // Its value is not in the row's bytes: no range to read a key from.
        assert!(new.value_ranges(&stored).is_err());
        // Dropped: the bytes are skipped, the API sees the row without the column.
        new.columns[1].dropped = true;
        let row = new.decode_row(&stored).unwrap();
        assert_eq!(row[1], Value::Null);
        assert_eq!(
            new.to_visible(row),
            vec![Value::Int4(1), Value::Int8(7), Value::Null]
        );
        let stored_row = new.to_stored(&[Value::Int4(2), Value::Int8(3), Value::Bool(true)]);
        assert_eq!(stored_row.len(), 4);
        assert_eq!(stored_row[1], Value::Null);
        new.check(&stored_row).unwrap();
        let mut b = Vec::new();
        new.encode_row(&stored_row, &mut b);
        assert_eq!(new.decode_row(&b).unwrap()[2], Value::Int8(3));
        // A row with more columns than its schema is damage.
        assert!(old.decode_row(&b).is_err());
    }

    /// Decoding only some columns: those wanted come as `decode_row` gives them, the
    /// others NULL whatever their type, their bytes stepped over (with a dropped column
    /// between, wanted columns are numbered as the API numbers them); a row cut short
    /// is damage to a read of its last column, and not read at all by the others.
    #[test]
    fn decoding_some_columns_reads_those_and_steps_over_the_rest() {
        let s = schema();
        let mut row: Vec<Value> = (0..16).map(|_| Value::Null).collect();
        row[0] = Value::Int4(3);
        row[1] = Value::Text("skip me".into());
        row[2] = Value::Float8(-0.5);
        row[3] = Value::Uuid([4; 16]);
        row[6] = Value::Int8(9);
        row[12] = Value::Bytea(vec![1, 2]);
        row[13] = Value::Numeric(Numeric::new(125, 2).unwrap());
        row[15] = Value::Text("abc".into());
        let mut b = Vec::new();
        s.encode_row(&row, &mut b);
        for mask_bits in [
            0u32,
            0xffff,
            0b1000_0000_0100_0101,
            0b0110_0000_0000_1010,
            1 << 15,
        ] {
            let needed: Vec<bool> = (0..16).map(|i| mask_bits & (1 << i) != 0).collect();
            let got = s.decode_columns(&b, Some(&needed)).unwrap();
            for i in 0..16 {
                let want = if needed[i] {
                    row[i].clone()
                } else {
                    Value::Null
                };
                assert_eq!(got[i], want, "column {i}, mask {mask_bits:#x}");
            }
            // Bytes past the last column asked for are not read: a row cut short there
            // is damage only to a read of that column.
            let cut = s.decode_columns(&b[..b.len() - 1], Some(&needed));
            assert_eq!(cut.is_err(), needed[15], "mask {mask_bits:#x}");
        }
        // Room asked for: the same values, in a vector that will not reallocate when a
        // join widens it to that many.
        let roomy = s
            .decode_shaped(
                &b,
                RowShape {
                    needed: None,
                    capacity: 40,
                },
            )
            .unwrap();
        assert!(roomy.capacity() >= 40);
        assert_eq!(roomy, row);
        // A mask shorter than the row: the columns past it are decoded.
        assert_eq!(s.decode_columns(&b, Some(&[false])).unwrap()[1..], row[1..]);
        // A dropped column is not counted: mask position 1 is column "c".
        let mut dropped = s.clone();
        dropped.columns[1].dropped = true;
        let mut needed = vec![false; 15];
        needed[1] = true;
        let got = dropped.decode_columns(&b, Some(&needed)).unwrap();
        assert_eq!(
            dropped.to_visible(got)[..3],
            [Value::Null, Value::Float8(-0.5), Value::Null]
        );
    }

    /// A table of a format 9 database: its schema's count has no flag bits and its rows
    /// no column count; both read as they are.
    #[test]
    fn an_uncounted_schema_of_an_older_format_reads_as_before() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&[ColumnType::Int4.code(), FLAG_NULLABLE]);
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.push(b'a');
        let mut at = 0;
        let s = Schema::decode(&bytes, &mut at).unwrap();
        assert_eq!(at, bytes.len());
        assert!(!s.counted);
        let mut row = Vec::new();
        s.encode_row(&[Value::Int4(5)], &mut row);
        assert_eq!(row, [0, 5, 0, 0, 0]);
        assert_eq!(s.decode_row(&row), Ok(vec![Value::Int4(5)]));
        let mut again = Vec::new();
        s.encode(&mut again);
        assert_eq!(again, bytes);
    }

    #[test]
    fn schema_round_trip() {
        let mut s = schema();
        s.columns[2].dropped = true;
        s.columns[3].missing = Some(vec![1; 16]);
        s.constraints.push(Constraint {
            name: "t_a_check".into(),
            definition: "CHECK (a > 0)".into(),
        });
        let mut b = Vec::new();
        s.encode(&mut b);
        let mut at = 0;
        assert_eq!(Schema::decode(&b, &mut at), Ok(s));
        assert_eq!(at, b.len());
    }

    /// A pointer read from disk is checked: its length, method and lengths; a row
    /// holding one reads through `fetch` or is an error, never a value made up.
    #[test]
    fn out_of_line_values_are_checked_when_read() {
        let p = External {
            page: 7,
            slot: 3,
            raw_len: 100,
            stored_len: 40,
            method: 1,
            crc: 0xDEAD_BEEF,
        };
        let mut b = Vec::new();
        p.encode(&mut b);
        assert_eq!(b.len(), EXTERNAL_BYTES);
        assert_eq!(External::decode(&b), Ok(p));
        assert!(External::decode(&b[..EXTERNAL_BYTES - 1]).is_err());
        for bad in [
            External { method: 2, ..p },
            External { stored_len: 0, ..p },
            External { method: 0, ..p },
            External {
                raw_len: MAX_VALUE_BYTES as u32 + 1,
                ..p
            },
        ] {
            let mut b = Vec::new();
            bad.encode(&mut b);
            assert!(External::decode(&b).is_err(), "{bad:?}");
        }
        let schema = Schema::new(vec![Column::new("t", ColumnType::Text)]);
        let mut row = vec![1, 0];
        row.extend_from_slice(&EXTERNAL.to_le_bytes());
        p.encode(&mut row);
        let shape = RowShape::default();
        assert!(schema.decode_row(&row).unwrap_err().contains("out of line"));
        let fetched = |q: &External| {
            assert_eq!(*q, p);
            Ok(b"hello".to_vec())
        };
        assert_eq!(
            schema.decode_shaped_with(&row, shape, Some(&fetched)),
            Ok(vec![Value::Text("hello".into())])
        );
        let failing = |_: &External| Err("chunk missing".to_string());
        let e = schema
            .decode_shaped_with(&row, shape, Some(&failing))
            .unwrap_err();
        assert!(e.contains("chunk missing"), "{e}");
        // Not UTF-8 from the chunks: an error, as from a page.
        let latin = |_: &External| Ok(vec![0xFF, 0xFE]);
        assert!(schema
            .decode_shaped_with(&row, shape, Some(&latin))
            .is_err());
        // A pointer cut short.
        assert!(schema
            .decode_shaped_with(&row[..row.len() - 1], shape, Some(&fetched))
            .is_err());
        // Not read when the read does not want the column.
        let unread = |_: &External| -> Result<Vec<u8>, String> { panic!("read") };
        let none = [false];
        let skip = RowShape {
            needed: Some(&none),
            capacity: 0,
        };
        assert_eq!(
            schema.decode_shaped_with(&row, skip, Some(&unread)),
            Ok(vec![Value::Null])
        );
    }

    /// A value too long for a u16 length takes the long form in memory and reads back.
    #[test]
    fn a_long_value_round_trips_in_memory() {
        let schema = Schema::new(vec![Column::new("t", ColumnType::Text)]);
        let v = vec![Value::Text("x".repeat(MAX_INLINE + 1))];
        schema.check(&v).unwrap();
        let mut row = Vec::new();
        schema.encode_row(&v, &mut row);
        assert_eq!(VarForm::at(&row, 2), Ok(VarForm::Long(MAX_INLINE + 1)));
        assert_eq!(schema.decode_row(&row), Ok(v));
    }
}
