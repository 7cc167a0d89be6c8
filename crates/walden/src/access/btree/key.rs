//! Index keys as byte strings whose bytewise order is the order the index declares for
//! its columns, so that the tree compares keys with `memcmp` whatever their types.
//!
//! Each column: a tag byte, then for a value its encoding. The tag is `0x01` for a value
//! and, for NULL, `0x02` when the column puts NULLs last (the default, and every key
//! before format 15) or `0x00` when it puts them first (`KeyOrder::nulls_first`). The
//! tag is never inverted, so NULLs sit at the declared end whatever the direction.
//! A value in ascending order: int2/int4/int8 big-endian with the sign bit flipped;
//! float8 as its bits big-endian, all flipped for a negative number and the sign bit
//! flipped for a positive one (-0 stored as 0, every NaN as one NaN above +infinity);
//! bool one byte; uuid its 16 bytes; text its UTF-8 bytes with each `0x00` written
//! `0x00 0xff`, ended by `0x00 0x00` (bytewise order: PostgreSQL's C collation); bytea
//! its bytes the same way; date as an int4, timestamp and timestamptz as an int8;
//! interval its span (`Interval::span_micros`, months as 30 days) as a 16-byte
//! big-endian integer with the sign bit flipped, so intervals PostgreSQL calls equal
//! (`'1 mon'`, `'30 days'`) have one key; numeric its sign class, decimal exponent and
//! digit pairs (`Numeric::push_key`), so values equal across scales (`1.0`, `1.00`)
//! have one key; jsonb its document's key (`Json::push_key`: PostgreSQL's jsonb
//! ordering, `1.0` and `1` one key). In a descending column (`KeyOrder::desc`) every
//! byte of the value's encoding after the tag is inverted (bitwise NOT).
//!
//! No value's encoding is a prefix of another's (each is fixed-length or ends with its
//! own terminator), so two values first differ at a byte both have: inverting the bytes
//! reverses their order and keeps them prefix-free. A key followed by a row id therefore
//! orders by key, then row id. A leaf item is `key | row id` (page u32 big-endian, slot
//! u16 big-endian).

use crate::calendar::Interval;
use crate::numeric::Numeric;
pub use crate::schema::KeyOrder;
use crate::schema::{ColumnType, Schema, Value};
use crate::RowId;

const TAG_VALUE: u8 = 0x01;
/// NULL in a column that puts NULLs last (below every other tag's use: 0xff after a
/// whole column is past every key that starts with it, `past`).
const TAG_NULL_LAST: u8 = 0x02;
/// NULL in a column that puts NULLs first.
const TAG_NULL_FIRST: u8 = 0x00;
/// Bytes of the row id ending a leaf item.
pub const ROW_ID_BYTES: usize = 6;

impl KeyOrder {
    /// The tag byte of a NULL in a column of this order.
    fn null_tag(self) -> u8 {
        null_tag(self.nulls_first)
    }
}

fn null_tag(nulls_first: bool) -> u8 {
    if nulls_first {
        TAG_NULL_FIRST
    } else {
        TAG_NULL_LAST
    }
}

/// Inverts the bytes of a descending column's value (everything after its tag, which
/// begins at `start`).
fn invert_from(out: &mut [u8], start: usize) {
    if let Some(value) = out.get_mut(start + 1..) {
        value.iter_mut().for_each(|b| *b = !*b);
    }
}

/// Appends one value's encoding in a column of `order`, as `push_value` does for the
/// default order.
pub fn push_value_in(out: &mut Vec<u8>, ty: ColumnType, v: &Value, order: KeyOrder) -> bool {
    if matches!(v, Value::Null) {
        out.push(order.null_tag());
        return true;
    }
    let start = out.len();
    if !push_value(out, ty, v) {
        return false;
    }
    if order.desc {
        invert_from(out, start);
    }
    true
}

/// Appends one value's encoding, for a column of type `ty` in the default order
/// (ascending, NULLs last). False when the value is not of that type (the caller
/// checked rows against the schema, so this is a bug or a lookup with a value of
/// another type, which the SQL layer converts first).
pub fn push_value(out: &mut Vec<u8>, ty: ColumnType, v: &Value) -> bool {
    match (ty, v) {
        (_, Value::Null) => out.push(TAG_NULL_LAST),
        (ColumnType::Int2, Value::Int2(x)) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(&((*x as u16) ^ 0x8000).to_be_bytes());
        }
        (ColumnType::Int4, Value::Int4(x)) | (ColumnType::Date, Value::Date(x)) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(&((*x as u32) ^ 0x8000_0000).to_be_bytes());
        }
        (ColumnType::Int8, Value::Int8(x))
        | (ColumnType::Timestamp, Value::Timestamp(x))
        | (ColumnType::Timestamptz, Value::Timestamptz(x)) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(&((*x as u64) ^ (1 << 63)).to_be_bytes());
        }
        (ColumnType::Float8, Value::Float8(x)) => {
            out.push(TAG_VALUE);
            let f = if x.is_nan() {
                f64::NAN
            } else if *x == 0.0 {
                0.0
            } else {
                *x
            };
            let bits = f.to_bits();
            let bits = if f.is_nan() {
                u64::MAX
            } else if bits >> 63 == 1 {
                !bits
            } else {
                bits ^ (1 << 63)
            };
            out.extend_from_slice(&bits.to_be_bytes());
        }
        (ColumnType::Bool, Value::Bool(b)) => {
            out.push(TAG_VALUE);
            out.push(*b as u8);
        }
        (ColumnType::Uuid, Value::Uuid(u)) => {
            out.push(TAG_VALUE);
            out.extend_from_slice(u);
        }
        (ColumnType::Text, Value::Text(s)) => push_text(out, s.as_bytes()),
        (ColumnType::Bytea, Value::Bytea(b)) => push_text(out, b),
        (ColumnType::Jsonb, Value::Jsonb(j)) => {
            out.push(TAG_VALUE);
            j.push_key(out);
        }
        (ColumnType::Interval, Value::Interval(iv)) => {
            out.push(TAG_VALUE);
            let flipped = (iv.span_micros() as u128) ^ (1 << 127);
            out.extend_from_slice(&flipped.to_be_bytes());
        }
        (ColumnType::Numeric, Value::Numeric(n)) => {
            out.push(TAG_VALUE);
            n.push_key(out);
        }
        _ => return false,
    }
    true
}

fn push_text(out: &mut Vec<u8>, s: &[u8]) {
    out.push(TAG_VALUE);
    crate::codec::put_escaped(out, s);
}

/// Where one key column's value lies in a row as stored (`Schema::encode_row`): NULL
/// (and where the column puts NULLs), or the column's type, the offset of its value and
/// whether the column is descending. With these, redo of a `btree_insert_row` builds the
/// key from the row's bytes without the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPart {
    Null {
        nulls_first: bool,
    },
    At {
        ty: ColumnType,
        offset: u32,
        desc: bool,
    },
}

/// The key parts of an index on `columns` (in the orders `order`, see `KeyOrder::of`) for a
/// row as stored; None when the bytes do not match the schema.
pub fn key_parts(
    schema: &Schema,
    columns: &[u16],
    order: &[KeyOrder],
    row: &[u8],
) -> Option<Vec<KeyPart>> {
    key_parts_in(schema, columns, order, &schema.value_ranges(row).ok()?)
}

/// The key parts of an index on `columns` (in the orders `order`), given where each
/// value of a row lies (`Schema::value_ranges`); None when the ranges do not match the
/// schema.
pub fn key_parts_in(
    schema: &Schema,
    columns: &[u16],
    order: &[KeyOrder],
    ranges: &[Option<std::ops::Range<usize>>],
) -> Option<Vec<KeyPart>> {
    let mut out = Vec::with_capacity(columns.len());
    key_parts_into(schema, columns, order, ranges, &mut out)?;
    Some(out)
}

/// As `key_parts_in`, into `out` (cleared first).
pub fn key_parts_into(
    schema: &Schema,
    columns: &[u16],
    order: &[KeyOrder],
    ranges: &[Option<std::ops::Range<usize>>],
    out: &mut Vec<KeyPart>,
) -> Option<()> {
    out.clear();
    for (n, &c) in columns.iter().enumerate() {
        let ty = schema.columns.get(c as usize)?.ty;
        let o = KeyOrder::of(order, n);
        out.push(match ranges.get(c as usize)? {
            Some(r) => KeyPart::At {
                ty,
                offset: u32::try_from(r.start).ok()?,
                desc: o.desc,
            },
            None => KeyPart::Null {
                nulls_first: o.nulls_first,
            },
        });
    }
    Some(())
}

/// Appends the key the parts read from `row`; a reason when a part lies outside it.
pub fn key_from_parts(row: &[u8], parts: &[KeyPart], out: &mut Vec<u8>) -> Result<(), String> {
    for part in parts {
        match *part {
            KeyPart::Null { nulls_first } => out.push(null_tag(nulls_first)),
            KeyPart::At { ty, offset, desc } => {
                let start = out.len();
                push_stored(row, ty, offset as usize, out)?;
                if desc {
                    invert_from(out, start);
                }
            }
        }
    }
    Ok(())
}

/// Appends the ascending encoding (tag included) of the value of type `ty` stored at
/// byte `at` of `row`.
fn push_stored(row: &[u8], ty: ColumnType, at: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let take = |n: usize| {
        row.get(at..at.saturating_add(n))
            .ok_or_else(|| format!("a key value at byte {at} lies outside the row"))
    };
    // A value of variable length: a u16 length, then its bytes.
    let counted = |what: &str| -> Result<&[u8], String> {
        let len = take(2)?;
        let len = u16::from_le_bytes([len[0], len[1]]);
        if len >= crate::schema::LONG {
            // Out of line (or too long for a page): never a key read in place.
            return Err(format!(
                "a key {what} at byte {at} is not stored in the row"
            ));
        }
        let len = len as usize;
        row.get(at + 2..at + 2 + len)
            .ok_or_else(|| format!("a key {what} at byte {at} runs past the row"))
    };
    let le8 = |b: &[u8]| -> [u8; 8] { std::array::from_fn(|i| b[i]) };
    let v = match ty {
        ColumnType::Int2 => {
            let b = take(2)?;
            Value::Int2(i16::from_le_bytes([b[0], b[1]]))
        }
        ColumnType::Int4 => {
            let b = take(4)?;
            Value::Int4(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        ColumnType::Int8 => Value::Int8(i64::from_le_bytes(le8(take(8)?))),
        ColumnType::Float8 => Value::Float8(f64::from_le_bytes(le8(take(8)?))),
        ColumnType::Bool => Value::Bool(take(1)?[0] != 0),
        ColumnType::Uuid => {
            let b = take(16)?;
            Value::Uuid(std::array::from_fn(|i| b[i]))
        }
        ColumnType::Date => {
            let b = take(4)?;
            Value::Date(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        ColumnType::Timestamp => Value::Timestamp(i64::from_le_bytes(le8(take(8)?))),
        ColumnType::Timestamptz => Value::Timestamptz(i64::from_le_bytes(le8(take(8)?))),
        ColumnType::Interval => Value::Interval(crate::schema::decode_interval(take(16)?)),
        ColumnType::Jsonb => {
            let doc = crate::jsonb::Json::decode(counted("jsonb")?)
                .map_err(|e| format!("a key jsonb at byte {at}: {e}"))?;
            out.push(TAG_VALUE);
            doc.push_key(out);
            return Ok(());
        }
        ColumnType::Text | ColumnType::Bytea => {
            push_text(out, counted("text")?);
            return Ok(());
        }
        ColumnType::Numeric => {
            Value::Numeric(Numeric::decode(counted("numeric")?).map_err(|e| format!("a key {e}"))?)
        }
    };
    push_value(out, ty, &v);
    Ok(())
}

/// The key of `row` for an index on `columns` of `schema` in the orders `order` (see
/// `KeyOrder::of`); None: a value of the wrong type. `has_null` says whether a key column is
/// NULL (a unique index lets such keys repeat, as PostgreSQL does).
pub fn encode_key(
    schema: &Schema,
    columns: &[u16],
    order: &[KeyOrder],
    row: &[Value],
    out: &mut Vec<u8>,
) -> Option<bool> {
    let mut has_null = false;
    for (n, &c) in columns.iter().enumerate() {
        let ty = schema.columns.get(c as usize)?.ty;
        let v = row.get(c as usize)?;
        has_null |= matches!(v, Value::Null);
        if !push_value_in(out, ty, v, KeyOrder::of(order, n)) {
            return None;
        }
    }
    Some(has_null)
}

/// The first byte string after every key that starts with `prefix`, a key of whole
/// columns: what follows a whole column is the next column's tag (0 to 2) or a row id
/// (whose first byte is 0xff only on pages past 2^32 - 2^24), so 0xff sorts after them.
pub fn past(mut prefix: Vec<u8>) -> Vec<u8> {
    prefix.push(0xff);
    prefix
}

/// Appends a row id (the end of a leaf item).
pub fn push_row_id(out: &mut Vec<u8>, id: RowId) {
    out.extend_from_slice(&(id.page as u32).to_be_bytes());
    out.extend_from_slice(&id.slot.to_be_bytes());
}

/// The row id ending a leaf item, and the key before it.
pub fn split_item(item: &[u8]) -> Option<(&[u8], RowId)> {
    let n = item.len().checked_sub(ROW_ID_BYTES)?;
    let (key, id) = item.split_at(n);
    Some((
        key,
        RowId {
            page: u32::from_be_bytes([id[0], id[1], id[2], id[3]]) as u64,
            slot: u16::from_be_bytes([id[4], id[5]]),
        },
    ))
}

/// The values of a key (for messages such as "Key (id)=(5) already exists"), decoded
/// against the column types and orders (see `KeyOrder::of`); None when the bytes are not
/// such a key.
pub fn decode_key(types: &[ColumnType], order: &[KeyOrder], mut key: &[u8]) -> Option<Vec<Value>> {
    let mut out = Vec::with_capacity(types.len());
    for (n, &ty) in types.iter().enumerate() {
        let o = KeyOrder::of(order, n);
        let (&tag, rest) = key.split_first()?;
        key = rest;
        if tag == o.null_tag() {
            out.push(Value::Null);
            continue;
        }
        if tag != TAG_VALUE {
            return None;
        }
        if !o.desc {
            out.push(decode_value(ty, &mut key)?);
            continue;
        }
        // The value's length is known only once it is decoded: decode it from the rest
        // of the key inverted back, then step past the bytes it took.
        let plain: Vec<u8> = key.iter().map(|b| !b).collect();
        let mut r = plain.as_slice();
        out.push(decode_value(ty, &mut r)?);
        key = key.get(plain.len() - r.len()..)?;
    }
    key.is_empty().then_some(out)
}

/// One value of type `ty` in ascending order (after its tag) from the front of `key`,
/// advancing it; None when the bytes are not such a value.
fn decode_value(ty: ColumnType, key: &mut &[u8]) -> Option<Value> {
    let fixed = |key: &mut &[u8], n: usize| -> Option<Vec<u8>> {
        if key.len() < n {
            return None;
        }
        let (a, b) = key.split_at(n);
        *key = b;
        Some(a.to_vec())
    };
    Some(match ty {
        ColumnType::Int2 => {
            let b = fixed(key, 2)?;
            Value::Int2((u16::from_be_bytes([b[0], b[1]]) ^ 0x8000) as i16)
        }
        ColumnType::Int4 | ColumnType::Date => {
            let b = fixed(key, 4)?;
            let x = (u32::from_be_bytes(b.try_into().ok()?) ^ 0x8000_0000) as i32;
            if ty == ColumnType::Date {
                Value::Date(x)
            } else {
                Value::Int4(x)
            }
        }
        ColumnType::Int8 | ColumnType::Timestamp | ColumnType::Timestamptz => {
            let b = fixed(key, 8)?;
            let x = (u64::from_be_bytes(b.try_into().ok()?) ^ (1 << 63)) as i64;
            match ty {
                ColumnType::Timestamp => Value::Timestamp(x),
                ColumnType::Timestamptz => Value::Timestamptz(x),
                _ => Value::Int8(x),
            }
        }
        ColumnType::Interval => {
            // The key keeps only the span: the interval read back is an equal one,
            // in months of 30 days, days and microseconds.
            let b = fixed(key, 16)?;
            let span = (u128::from_be_bytes(b.try_into().ok()?) ^ (1 << 127)) as i128;
            Value::Interval(Interval::from_span(span)?)
        }
        ColumnType::Float8 => {
            let b = fixed(key, 8)?;
            let bits = u64::from_be_bytes(b.try_into().ok()?);
            let bits = if bits == u64::MAX {
                f64::NAN.to_bits()
            } else if bits >> 63 == 1 {
                bits ^ (1 << 63)
            } else {
                !bits
            };
            Value::Float8(f64::from_bits(bits))
        }
        ColumnType::Bool => Value::Bool(fixed(key, 1)?[0] != 0),
        // The key keeps the value, not its scale: `1.50` reads back `1.5`.
        ColumnType::Numeric => Value::Numeric(Numeric::read_key(key)?),
        ColumnType::Jsonb => Value::Jsonb(std::sync::Arc::new(crate::jsonb::Json::from_key(key)?)),
        ColumnType::Uuid => Value::Uuid(fixed(key, 16)?.try_into().ok()?),
        ColumnType::Text | ColumnType::Bytea => {
            let s = crate::codec::read_escaped(key)?;
            if ty == ColumnType::Bytea {
                Value::Bytea(s)
            } else {
                Value::Text(String::from_utf8(s).ok()?)
            }
        }
    })
}

/// The shortest prefix of `right` that sorts above `left` (`left < right`): the
/// separator a leaf split puts in the parent (suffix truncation keeps internal pages
/// small).
pub fn separator(left: &[u8], right: &[u8]) -> Vec<u8> {
    let common = left.iter().zip(right).take_while(|(a, b)| a == b).count();
    right[..(common + 1).min(right.len())].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Column;
    use proptest::prelude::*;

    fn key(ty: ColumnType, v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(push_value(&mut out, ty, v));
        out
    }

    fn sql_cmp(a: &Value, b: &Value) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        match (a, b) {
            (Value::Null, Value::Null) => Equal,
            (Value::Null, _) => Greater,
            (_, Value::Null) => Less,
            (Value::Int2(x), Value::Int2(y)) => x.cmp(y),
            (Value::Int4(x), Value::Int4(y)) => x.cmp(y),
            (Value::Int8(x), Value::Int8(y)) => x.cmp(y),
            (Value::Float8(x), Value::Float8(y)) => match (x.is_nan(), y.is_nan()) {
                (true, true) => Equal,
                (true, false) => Greater,
                (false, true) => Less,
                _ => x.partial_cmp(y).unwrap_or(Equal),
            },
            (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
            (Value::Uuid(x), Value::Uuid(y)) => x.cmp(y),
            (Value::Date(x), Value::Date(y)) => x.cmp(y),
            (Value::Timestamp(x), Value::Timestamp(y))
            | (Value::Timestamptz(x), Value::Timestamptz(y)) => x.cmp(y),
            (Value::Interval(x), Value::Interval(y)) => x.span_micros().cmp(&y.span_micros()),
            (Value::Bytea(x), Value::Bytea(y)) => x.cmp(y),
            (Value::Numeric(x), Value::Numeric(y)) => x.cmp(y),
            (Value::Jsonb(x), Value::Jsonb(y)) => crate::jsonb::compare(x, y),
            _ => Equal,
        }
    }

    fn value(ty: ColumnType) -> BoxedStrategy<Value> {
        let v = match ty {
            ColumnType::Int2 => any::<i16>().prop_map(Value::Int2).boxed(),
            ColumnType::Int4 => any::<i32>().prop_map(Value::Int4).boxed(),
            ColumnType::Int8 => any::<i64>().prop_map(Value::Int8).boxed(),
            ColumnType::Float8 => prop_oneof![
                any::<f64>(),
                Just(0.0),
                Just(-0.0),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                Just(f64::NAN)
            ]
            .prop_map(Value::Float8)
            .boxed(),
            ColumnType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
            ColumnType::Uuid => any::<[u8; 16]>().prop_map(Value::Uuid).boxed(),
            ColumnType::Text => "[a\\x00b\\xff]{0,6}".prop_map(Value::Text).boxed(),
            ColumnType::Date => any::<i32>().prop_map(Value::Date).boxed(),
            ColumnType::Timestamp => any::<i64>().prop_map(Value::Timestamp).boxed(),
            ColumnType::Timestamptz => any::<i64>().prop_map(Value::Timestamptz).boxed(),
            ColumnType::Interval => (any::<i32>(), any::<i32>(), any::<i64>())
                .prop_map(|(months, days, micros)| {
                    Value::Interval(Interval {
                        months,
                        days,
                        micros,
                    })
                })
                .boxed(),
            ColumnType::Bytea => {
                proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(255)], 0..6)
                    .prop_map(Value::Bytea)
                    .boxed()
            }
            ColumnType::Numeric => (any::<i64>(), 0u16..12)
                .prop_map(|(m, s)| {
                    Value::Numeric(Numeric::new(m as i128, s).unwrap_or(Numeric::ZERO))
                })
                .boxed(),
            ColumnType::Jsonb => {
                use crate::jsonb::Json;
                let leaf = prop_oneof![
                    Just(Json::Null),
                    any::<bool>().prop_map(Json::Bool),
                    prop_oneof![Just("0"), Just("-1.5"), Just("1.50"), Just("12")]
                        .prop_map(|n| Json::Number(n.into())),
                    "[a\\x00]{0,2}".prop_map(Json::String),
                ];
                leaf.prop_recursive(2, 8, 3, |inner| {
                    prop_oneof![
                        proptest::collection::vec(inner.clone(), 0..3).prop_map(Json::Array),
                        proptest::collection::vec(("[ab]{0,1}", inner), 0..3)
                            .prop_map(Json::object),
                    ]
                })
                .prop_map(|j| Value::Jsonb(std::sync::Arc::new(j)))
                .boxed()
            }
        };
        prop_oneof![1 => Just(Value::Null), 8 => v].boxed()
    }

    const TYPES: [ColumnType; 14] = [
        ColumnType::Int2,
        ColumnType::Int4,
        ColumnType::Int8,
        ColumnType::Float8,
        ColumnType::Bool,
        ColumnType::Uuid,
        ColumnType::Text,
        ColumnType::Date,
        ColumnType::Timestamp,
        ColumnType::Timestamptz,
        ColumnType::Interval,
        ColumnType::Bytea,
        ColumnType::Numeric,
        ColumnType::Jsonb,
    ];

    /// The order an index of `order` gives two values of one column.
    fn ordered_cmp(a: &Value, b: &Value, order: KeyOrder) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        match (a, b) {
            (Value::Null, Value::Null) => Equal,
            (Value::Null, _) if order.nulls_first => Less,
            (Value::Null, _) => Greater,
            (_, Value::Null) if order.nulls_first => Greater,
            (_, Value::Null) => Less,
            _ if order.desc => sql_cmp(b, a),
            _ => sql_cmp(a, b),
        }
    }

    fn key_order() -> impl Strategy<Value = KeyOrder> {
        (any::<bool>(), any::<bool>())
            .prop_map(|(desc, nulls_first)| KeyOrder { desc, nulls_first })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::testing::proptest_cases()))]

        /// A key read from a stored row through its parts (what redo of
        /// `btree_insert_row` does) is the key of the row's values, for rows of three
        /// columns of any types, NULLs included, indexed in any column order and in any
        /// directions.
        #[test]
        fn parts_read_the_key_from_the_stored_row(
            (types, row, columns, orders) in (0..TYPES.len(), 0..TYPES.len(), 0..TYPES.len()).prop_flat_map(|(i, j, k)| {
                let types = [TYPES[i], TYPES[j], TYPES[k]];
                (Just(types), (value(types[0]), value(types[1]), value(types[2])),
                 Just(vec![2u16, 0]).prop_union(Just(vec![1u16])).or(Just(vec![0u16, 1, 2])),
                 proptest::collection::vec(key_order(), 3))
            })
        ) {
            let schema = Schema::new(
                types.iter().enumerate().map(|(n, &t)| Column::new(&format!("c{n}"), t)).collect(),
            );
            let row = vec![row.0, row.1, row.2];
            let mut stored = Vec::new();
            schema.encode_row(&row, &mut stored);
            let mut want = Vec::new();
            encode_key(&schema, &columns, &orders, &row, &mut want).unwrap();
            let parts = key_parts(&schema, &columns, &orders, &stored).unwrap();
            let mut got = Vec::new();
            key_from_parts(&stored, &parts, &mut got).unwrap();
            prop_assert_eq!(got, want);
            // Parts that point past the row are an error, not a panic.
            let mut short = Vec::new();
            let cut = &stored[..stored.len() / 2];
            let _ = key_from_parts(cut, &parts, &mut short);
        }

        /// Byte order is the declared order (ascending or descending, NULLs first or
        /// last, per column), and keys decode back, for pairs of composite keys.
        #[test]
        fn order_matches_sql(
            (t1, t2, a1, a2, b1, b2, o1, o2) in (0..TYPES.len(), 0..TYPES.len()).prop_flat_map(|(i, j)| {
                let (t1, t2) = (TYPES[i], TYPES[j]);
                (Just(t1), Just(t2), value(t1), value(t2), value(t1), value(t2), key_order(), key_order())
            })
        ) {
            let schema = Schema::new(vec![Column::new("x", t1), Column::new("y", t2)]);
            let orders = [o1, o2];
            let (mut ka, mut kb) = (Vec::new(), Vec::new());
            encode_key(&schema, &[0, 1], &orders, &[a1.clone(), a2.clone()], &mut ka).unwrap();
            encode_key(&schema, &[0, 1], &orders, &[b1.clone(), b2.clone()], &mut kb).unwrap();
            let sql = ordered_cmp(&a1, &b1, o1).then(ordered_cmp(&a2, &b2, o2));
            prop_assert_eq!(ka.cmp(&kb), sql);
            let back = decode_key(&[t1, t2], &orders, &ka).unwrap();
            prop_assert_eq!(sql_cmp(&back[0], &a1), std::cmp::Ordering::Equal);
            prop_assert_eq!(sql_cmp(&back[1], &a2), std::cmp::Ordering::Equal);
            prop_assert_eq!(matches!(back[0], Value::Null), matches!(a1, Value::Null));
            // With row ids after them, items still order by key first.
            let (mut ia, mut ib) = (ka.clone(), kb.clone());
            push_row_id(&mut ia, RowId { page: 9, slot: 1 });
            push_row_id(&mut ib, RowId { page: 1, slot: 0 });
            if sql != std::cmp::Ordering::Equal {
                prop_assert_eq!(ia.cmp(&ib), sql);
            }
            prop_assert_eq!(split_item(&ia).map(|(k, _)| k), Some(&ka[..]));
            // A key of the default order is the key an index before format 15 made.
            if orders == [KeyOrder::ASC; 2] {
                let mut old = Vec::new();
                prop_assert!(push_value(&mut old, t1, &a1) && push_value(&mut old, t2, &a2));
                prop_assert_eq!(&old, &ka);
            }
        }

        #[test]
        fn separator_divides(mut a in proptest::collection::vec(any::<u8>(), 1..12),
                             mut b in proptest::collection::vec(any::<u8>(), 1..12)) {
            if a == b { b.push(0); }
            if a > b { std::mem::swap(&mut a, &mut b); }
            let s = separator(&a, &b);
            prop_assert!(a < s && s <= b && b.starts_with(&s));
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40),
                               orders in proptest::collection::vec(key_order(), TYPES.len())) {
            let _ = decode_key(&TYPES, &[], &bytes);
            let _ = decode_key(&TYPES, &orders, &bytes);
        }
    }

    /// Every pair of a sample of each type's values, NULL included (text with 0x00
    /// bytes, negative floats and zeros, numerics across scales), sorts as declared in
    /// each of the four orders, and decodes back.
    #[test]
    fn samples_sort_as_declared_in_every_order() {
        use crate::jsonb::Json;
        let num = |m: i128, s: u16| Value::Numeric(Numeric::new(m, s).unwrap());
        let iv = |months, days, micros| {
            Value::Interval(Interval {
                months,
                days,
                micros,
            })
        };
        let json = |j: Json| Value::Jsonb(std::sync::Arc::new(j));
        let samples: Vec<(ColumnType, Vec<Value>)> = vec![
            (
                ColumnType::Int2,
                [i16::MIN, -1, 0, 1, i16::MAX].map(Value::Int2).to_vec(),
            ),
            (
                ColumnType::Int4,
                [i32::MIN, -7, 0, 7, i32::MAX].map(Value::Int4).to_vec(),
            ),
            (
                ColumnType::Int8,
                [i64::MIN, -1, 0, 1, i64::MAX].map(Value::Int8).to_vec(),
            ),
            (
                ColumnType::Float8,
                [
                    f64::NEG_INFINITY,
                    -2.5,
                    -1e-300,
                    -0.0,
                    0.0,
                    1e-300,
                    3.0,
                    f64::INFINITY,
                    f64::NAN,
                ]
                .map(Value::Float8)
                .to_vec(),
            ),
            (
                ColumnType::Bool,
                vec![Value::Bool(false), Value::Bool(true)],
            ),
            (
                ColumnType::Uuid,
                vec![
                    Value::Uuid([0; 16]),
                    Value::Uuid([1; 16]),
                    Value::Uuid([255; 16]),
                ],
            ),
            (
                ColumnType::Text,
                [
                    "", "\0", "\0\0", "\0a", "a", "a\0", "a\0b", "ab", "b", "\u{ff}",
                ]
                .map(|t| Value::Text(t.into()))
                .to_vec(),
            ),
            (ColumnType::Date, [-1, 0, 1].map(Value::Date).to_vec()),
            (
                ColumnType::Timestamp,
                [-1, 0, 1].map(Value::Timestamp).to_vec(),
            ),
            (
                ColumnType::Timestamptz,
                [-1, 0, 1].map(Value::Timestamptz).to_vec(),
            ),
            (
                ColumnType::Interval,
                vec![
                    iv(-1, 0, 0),
                    iv(0, -1, 5),
                    iv(0, 0, 0),
                    iv(0, 30, 0),
                    iv(1, 0, 1),
                ],
            ),
            (
                ColumnType::Bytea,
                vec![
                    Value::Bytea(vec![]),
                    Value::Bytea(vec![0]),
                    Value::Bytea(vec![0, 0]),
                    Value::Bytea(vec![0, 255]),
                    Value::Bytea(vec![1]),
                    Value::Bytea(vec![255]),
                ],
            ),
            (
                ColumnType::Numeric,
                vec![
                    num(-12345, 2),
                    num(-1, 0),
                    num(-10, 1),
                    num(-5, 3),
                    num(0, 0),
                    num(0, 4),
                    num(5, 3),
                    num(1, 0),
                    num(100, 2),
                    num(15, 1),
                    num(12345, 2),
                ],
            ),
            (
                ColumnType::Jsonb,
                vec![
                    json(Json::Array(vec![])),
                    json(Json::Null),
                    json(Json::String("a\0".into())),
                    json(Json::String("ab".into())),
                    json(Json::Number("-1.5".into())),
                    json(Json::Number("12".into())),
                    json(Json::Bool(true)),
                    json(Json::Array(vec![Json::Null])),
                ],
            ),
        ];
        for (ty, mut values) in samples {
            values.push(Value::Null);
            for desc in [false, true] {
                for nulls_first in [false, true] {
                    let order = KeyOrder { desc, nulls_first };
                    for a in &values {
                        let mut ka = Vec::new();
                        assert!(push_value_in(&mut ka, ty, a, order));
                        let back = decode_key(&[ty], &[order], &ka).unwrap();
                        assert_eq!(
                            ordered_cmp(&back[0], a, order),
                            std::cmp::Ordering::Equal,
                            "{ty:?} {order:?} {a}"
                        );
                        for b in &values {
                            let mut kb = Vec::new();
                            assert!(push_value_in(&mut kb, ty, b, order));
                            assert_eq!(
                                ka.cmp(&kb),
                                ordered_cmp(a, b, order),
                                "{ty:?} {order:?}: {a} vs {b}"
                            );
                        }
                    }
                }
            }
        }
        // The tag is never inverted: a descending key's NULL is at the declared end.
        let mut null_first = Vec::new();
        assert!(push_value_in(
            &mut null_first,
            ColumnType::Int4,
            &Value::Null,
            KeyOrder::DESC
        ));
        assert_eq!(null_first, [TAG_NULL_FIRST]);
        let mut five = Vec::new();
        assert!(push_value_in(
            &mut five,
            ColumnType::Int4,
            &Value::Int4(5),
            KeyOrder::DESC
        ));
        assert_eq!(five, [TAG_VALUE, !0x80, 0xff, 0xff, !5]);
    }

    #[test]
    fn examples() {
        assert!(key(ColumnType::Int4, &Value::Int4(-1)) < key(ColumnType::Int4, &Value::Int4(0)));
        assert!(
            key(ColumnType::Text, &Value::Text("ab".into()))
                < key(ColumnType::Text, &Value::Text("ab\0".into()))
        );
        assert!(
            key(ColumnType::Int8, &Value::Int8(i64::MAX)) < key(ColumnType::Int8, &Value::Null)
        );
        assert_eq!(
            key(ColumnType::Float8, &Value::Float8(-0.0)),
            key(ColumnType::Float8, &Value::Float8(0.0))
        );
    }
}
