//! PostgreSQL's jsonb as the engine keeps it: the normalized document tree, its stored
//! bytes (checked when read: they come from disk), the text PostgreSQL prints for it,
//! and its index key, whose bytewise order is PostgreSQL's jsonb ordering. Parsing JSON
//! text and the operators belong to the SQL layer; the engine prints values in its own
//! messages ("Key (j)=({"a": 1}) already exists"), so the printing lives here.
//!
//! A document is normalized as PostgreSQL's jsonb is: an object's keys are distinct (the
//! last of a repeated key wins) and ordered by (length, bytes); a number is kept as the
//! decimal text PostgreSQL's numeric prints for it (`1.50e1` is `15.0`, `-0` is `0`).
//!
//! Stored bytes (docs/format.md, "jsonb"): one value, a tag byte then its payload —
//! `0` null, `1` false, `2` true, `3` string (varint length + UTF-8), `4` number (varint
//! length + its decimal text), `5` array (varint count + values), `6` object (varint
//! count + pairs of key (varint length + UTF-8) and value). Nesting is at most
//! [`MAX_DEPTH`] containers deep.

use std::cmp::Ordering;
use std::fmt;

use crate::codec::{put_varint, Reader};

/// Containers nested deeper than this are refused (PostgreSQL's own bound is its stack
/// depth limit; every walk of a document here is recursive, so it needs one).
pub const MAX_DEPTH: usize = 1000;

/// A jsonb document, normalized (see the module comment).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// The decimal text numeric prints: `-?digits(.digits)?`, no exponent.
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Keys distinct and ordered by (length, bytes).
    Object(Vec<(String, Json)>),
}

const TAG_NULL: u8 = 0;
const TAG_FALSE: u8 = 1;
const TAG_TRUE: u8 = 2;
const TAG_STRING: u8 = 3;
const TAG_NUMBER: u8 = 4;
const TAG_ARRAY: u8 = 5;
const TAG_OBJECT: u8 = 6;

/// PostgreSQL's order of object keys in a jsonb: shorter first, then bytewise.
pub fn key_order(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

impl Json {
    /// An object of `pairs` normalized: ordered by [`key_order`], and of a repeated key
    /// only the last kept.
    pub fn object(mut pairs: Vec<(String, Json)>) -> Json {
        // A stable sort keeps repeated keys in input order; the last of each run wins.
        pairs.sort_by(|a, b| key_order(&a.0, &b.0));
        let mut out: Vec<(String, Json)> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = v,
                _ => out.push((k, v)),
            }
        }
        Json::Object(out)
    }

    /// PostgreSQL's name for the value's type (`jsonb_typeof`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }

    /// The stored bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Json::Null => out.push(TAG_NULL),
            Json::Bool(false) => out.push(TAG_FALSE),
            Json::Bool(true) => out.push(TAG_TRUE),
            Json::String(s) => {
                out.push(TAG_STRING);
                put_str(out, s);
            }
            Json::Number(n) => {
                out.push(TAG_NUMBER);
                put_str(out, n);
            }
            Json::Array(items) => {
                out.push(TAG_ARRAY);
                put_varint(out, items.len() as u64);
                items.iter().for_each(|v| v.encode(out));
            }
            Json::Object(pairs) => {
                out.push(TAG_OBJECT);
                put_varint(out, pairs.len() as u64);
                for (k, v) in pairs {
                    put_str(out, k);
                    v.encode(out);
                }
            }
        }
    }

    /// Decodes stored bytes, checking everything: lengths, UTF-8, the number text, key
    /// order, the nesting depth, and that nothing follows the value.
    pub fn decode(bytes: &[u8]) -> Result<Json, String> {
        let mut r = Reader::new(bytes, 0);
        let v = decode_value(&mut r, 0)?;
        if r.remaining() != 0 {
            return Err(format!("{} bytes after a jsonb value", r.remaining()));
        }
        Ok(v)
    }

    /// Appends the index key: its bytewise order is PostgreSQL's jsonb ordering, and
    /// values PostgreSQL calls equal (`1.0` and `1`) have one key. At the top level an
    /// empty array sorts below every scalar and a non-empty one above them (PostgreSQL
    /// stores a top-level scalar as a one-element "raw scalar" array and compares
    /// element counts first); inside a document null < string < number < boolean <
    /// array < object, arrays and objects by their size first, then element by element
    /// (an object's pairs in their stored order, key then value).
    pub fn push_key(&self, out: &mut Vec<u8>) {
        match self {
            Json::Array(items) if items.is_empty() => out.push(0x01),
            _ => {
                out.push(0x02);
                self.push_inner_key(out);
            }
        }
    }

    fn push_inner_key(&self, out: &mut Vec<u8>) {
        match self {
            Json::Null => out.push(0x01),
            Json::String(s) => {
                out.push(0x02);
                push_key_string(out, s);
            }
            Json::Number(n) => {
                out.push(0x03);
                push_number_key(out, n);
            }
            Json::Bool(b) => out.extend_from_slice(&[0x04, *b as u8]),
            Json::Array(items) => {
                out.push(0x05);
                out.extend_from_slice(&(items.len() as u32).to_be_bytes());
                items.iter().for_each(|v| v.push_inner_key(out));
            }
            Json::Object(pairs) => {
                out.push(0x06);
                out.extend_from_slice(&(pairs.len() as u32).to_be_bytes());
                for (k, v) in pairs {
                    push_key_string(out, k);
                    v.push_inner_key(out);
                }
            }
        }
    }

    /// The key from [`Json::push_key`] as a vector.
    pub fn sort_key(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.push_key(&mut out);
        out
    }

    /// A document read back from its index key (for messages): an equal one, its
    /// numbers without trailing fraction zeros. None when the bytes are not such a key;
    /// `key` is advanced past it.
    pub fn from_key(key: &mut &[u8]) -> Option<Json> {
        let (&top, rest) = key.split_first()?;
        *key = rest;
        match top {
            0x01 => Some(Json::Array(Vec::new())),
            0x02 => inner_from_key(key, 0),
            _ => None,
        }
    }
}

/// PostgreSQL's jsonb comparison (`jsonb_cmp`), by the index key.
pub fn compare(a: &Json, b: &Json) -> Ordering {
    a.sort_key().cmp(&b.sort_key())
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn read_str(r: &mut Reader<'_>) -> Result<String, String> {
    let n = r.varint()?;
    if n > r.remaining() as u64 {
        return Err(format!("a jsonb string of {n} bytes runs past the value"));
    }
    let b = r.take(n as usize)?;
    String::from_utf8(b.to_vec()).map_err(|_| "a jsonb string is not UTF-8".to_string())
}

fn decode_value(r: &mut Reader<'_>, depth: usize) -> Result<Json, String> {
    let tag = r.u8()?;
    Ok(match tag {
        TAG_NULL => Json::Null,
        TAG_FALSE => Json::Bool(false),
        TAG_TRUE => Json::Bool(true),
        TAG_STRING => Json::String(read_str(r)?),
        TAG_NUMBER => {
            let n = read_str(r)?;
            if !is_number_text(&n) {
                return Err(format!("bad jsonb number {:?}", clip(&n)));
            }
            Json::Number(n)
        }
        TAG_ARRAY | TAG_OBJECT => {
            if depth >= MAX_DEPTH {
                return Err(format!("jsonb nested deeper than {MAX_DEPTH}"));
            }
            let count = r.varint()?;
            // Every element takes at least one byte (a pair two).
            if count > r.remaining() as u64 {
                return Err(format!("{count} jsonb elements cannot fit"));
            }
            if tag == TAG_ARRAY {
                let mut items = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    items.push(decode_value(r, depth + 1)?);
                }
                Json::Array(items)
            } else {
                let mut pairs: Vec<(String, Json)> = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    let k = read_str(r)?;
                    if let Some((last, _)) = pairs.last() {
                        if key_order(last, &k) != Ordering::Less {
                            return Err("jsonb object keys out of order".into());
                        }
                    }
                    let v = decode_value(r, depth + 1)?;
                    pairs.push((k, v));
                }
                Json::Object(pairs)
            }
        }
        other => return Err(format!("unknown jsonb tag {other}")),
    })
}

fn clip(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Whether `s` is the text numeric prints: `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, not `-0`.
pub fn is_number_text(s: &str) -> bool {
    let body = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let int_ok = digits(int) && (int == "0" || !int.starts_with('0'));
    let frac_ok = frac.is_none_or(digits);
    let negative_zero = s.starts_with('-') && body.bytes().all(|b| b == b'0' || b == b'.');
    int_ok && frac_ok && !negative_zero
}

/// A string's key bytes (`codec::put_escaped`: no string's key is a prefix of
/// another's, and the order is bytewise).
fn push_key_string(out: &mut Vec<u8>, s: &str) {
    crate::codec::put_escaped(out, s.as_bytes());
}

fn key_string(key: &mut &[u8]) -> Option<String> {
    String::from_utf8(crate::codec::read_escaped(key)?).ok()
}

/// The significant digits of a number text (no leading or trailing zeros) and its
/// exponent `e` such that the value is `0.digits × 10^e`; no digits for zero.
fn number_parts(n: &str) -> (bool, Vec<u8>, i64) {
    let negative = n.starts_with('-');
    let body = n.trim_start_matches('-');
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let all: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let lead = all.iter().take_while(|&&d| d == 0).count();
    let mut digits = all[lead..].to_vec();
    while digits.last() == Some(&0) {
        digits.pop();
    }
    let exponent = int.len() as i64 - lead as i64;
    (negative, digits, exponent)
}

/// A number's key: `0x02` for zero; `0x03`, the exponent (i32 big-endian, sign bit
/// flipped) and each digit plus one, ended by `0x00`, for a positive number; for a
/// negative one `0x01` and the same bytes inverted (ended by `0xff`), so larger
/// magnitudes sort lower.
fn push_number_key(out: &mut Vec<u8>, n: &str) {
    let (negative, digits, exponent) = number_parts(n);
    if digits.is_empty() {
        out.push(0x02);
        return;
    }
    let flip = |b: u8| if negative { !b } else { b };
    out.push(if negative { 0x01 } else { 0x03 });
    // The text is at most 65,535 bytes, so the exponent fits an i32.
    let e = ((exponent as i32) as u32) ^ 0x8000_0000;
    out.extend(e.to_be_bytes().map(flip));
    out.extend(digits.iter().map(|d| flip(d + 1)));
    out.push(flip(0));
}

fn number_from_key(key: &mut &[u8]) -> Option<String> {
    let (&sign, rest) = key.split_first()?;
    *key = rest;
    if sign == 0x02 {
        return Some("0".into());
    }
    let negative = match sign {
        0x01 => true,
        0x03 => false,
        _ => return None,
    };
    let flip = |b: u8| if negative { !b } else { b };
    if key.len() < 4 {
        return None;
    }
    let (e, rest) = key.split_at(4);
    *key = rest;
    let exponent = (u32::from_be_bytes([flip(e[0]), flip(e[1]), flip(e[2]), flip(e[3])])
        ^ 0x8000_0000) as i32 as i64;
    let mut digits = String::new();
    loop {
        let (&b, rest) = key.split_first()?;
        *key = rest;
        match flip(b) {
            0 => break,
            d @ 1..=10 => digits.push((b'0' + d - 1) as char),
            _ => return None,
        }
    }
    if digits.is_empty() || exponent.unsigned_abs() > 1 << 20 {
        return None;
    }
    let mut text = String::from(if negative { "-" } else { "" });
    text.push_str(&decimal_text(&digits, exponent));
    Some(text)
}

/// The decimal text of `0.digits × 10^exponent`, with exactly the fraction digits it
/// needs (and at least one digit before the point).
pub fn decimal_text(digits: &str, exponent: i64) -> String {
    let n = digits.len() as i64;
    if exponent >= n {
        let mut s = digits.to_string();
        s.extend(std::iter::repeat_n('0', (exponent - n) as usize));
        s
    } else if exponent <= 0 {
        let mut s = String::from("0.");
        s.extend(std::iter::repeat_n('0', (-exponent) as usize));
        s.push_str(digits);
        s
    } else {
        let (a, b) = digits.split_at(exponent as usize);
        format!("{a}.{b}")
    }
}

fn inner_from_key(key: &mut &[u8], depth: usize) -> Option<Json> {
    let (&tag, rest) = key.split_first()?;
    *key = rest;
    Some(match tag {
        0x01 => Json::Null,
        0x02 => Json::String(key_string(key)?),
        0x03 => Json::Number(number_from_key(key)?),
        0x04 => {
            let (&b, rest) = key.split_first()?;
            *key = rest;
            Json::Bool(b != 0)
        }
        0x05 | 0x06 => {
            if depth >= MAX_DEPTH || key.len() < 4 {
                return None;
            }
            let (c, rest) = key.split_at(4);
            *key = rest;
            let count = u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize;
            if count > key.len() {
                return None;
            }
            if tag == 0x05 {
                let mut items = Vec::with_capacity(count);
                for _ in 0..count {
                    items.push(inner_from_key(key, depth + 1)?);
                }
                Json::Array(items)
            } else {
                let mut pairs = Vec::with_capacity(count);
                for _ in 0..count {
                    let k = key_string(key)?;
                    pairs.push((k, inner_from_key(key, depth + 1)?));
                }
                Json::Object(pairs)
            }
        }
        _ => return None,
    })
}

/// Writes a string as PostgreSQL's jsonb output quotes it (`escape_json`).
pub fn write_quoted(f: &mut impl fmt::Write, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\u{8}' => f.write_str("\\b")?,
            '\u{c}' => f.write_str("\\f")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// PostgreSQL's jsonb output: `{"a": 1, "b": [1, 2]}`.
impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Json::Number(n) => f.write_str(n),
            Json::String(s) => write_quoted(f, s),
            Json::Array(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Json::Object(pairs) => {
                f.write_str("{")?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_quoted(f, k)?;
                    write!(f, ": {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn num(s: &str) -> Json {
        Json::Number(s.into())
    }

    /// PostgreSQL's compareJsonbContainers written out structurally, as the model the
    /// key order is checked against.
    fn model_cmp(a: &Json, b: &Json, top: bool) -> Ordering {
        fn rank(v: &Json) -> u8 {
            match v {
                Json::Null => 0,
                Json::String(_) => 1,
                Json::Number(_) => 2,
                Json::Bool(_) => 3,
                Json::Array(_) => 4,
                Json::Object(_) => 5,
            }
        }
        if top {
            // A raw scalar is a one-element array that sorts below a real one of the
            // same length; counts compare first.
            let count = |v: &Json| match v {
                Json::Array(items) => Some(items.len()),
                Json::Object(_) => None,
                _ => Some(1),
            };
            if let (Some(x), Some(y)) = (count(a), count(b)) {
                let scalar = |v: &Json| !matches!(v, Json::Array(_));
                if x != y {
                    return x.cmp(&y);
                }
                if scalar(a) != scalar(b) {
                    return if scalar(a) {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    };
                }
            }
        }
        match (a, b) {
            (Json::String(x), Json::String(y)) => x.as_bytes().cmp(y.as_bytes()),
            (Json::Number(x), Json::Number(y)) => {
                let (fx, fy): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
                fx.partial_cmp(&fy).unwrap()
            }
            (Json::Bool(x), Json::Bool(y)) => x.cmp(y),
            (Json::Array(x), Json::Array(y)) => x.len().cmp(&y.len()).then_with(|| {
                x.iter()
                    .zip(y)
                    .map(|(p, q)| model_cmp(p, q, false))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            }),
            (Json::Object(x), Json::Object(y)) => x.len().cmp(&y.len()).then_with(|| {
                x.iter()
                    .zip(y)
                    .map(|(p, q)| {
                        p.0.as_bytes()
                            .cmp(q.0.as_bytes())
                            .then_with(|| model_cmp(&p.1, &q.1, false))
                    })
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            }),
            _ => rank(a).cmp(&rank(b)),
        }
    }

    fn number() -> impl Strategy<Value = Json> {
        // Few digits, so that an f64 compares them exactly in the model.
        (any::<bool>(), 0u32..1000, 0usize..3).prop_map(|(neg, m, scale)| {
            let digits = format!("{m:0>width$}", width = scale + 1);
            let (int, frac) = digits.split_at(digits.len() - scale);
            let mut text = int.trim_start_matches('0').to_string();
            if text.is_empty() {
                text.push('0');
            }
            if scale > 0 {
                text = format!("{text}.{frac}");
            }
            if neg && m != 0 {
                text.insert(0, '-');
            }
            num(&text)
        })
    }

    fn json() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            number(),
            "[ab\u{e9}]{0,3}".prop_map(Json::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
                proptest::collection::vec(("[ab]{0,2}", inner), 0..4).prop_map(Json::object),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::testing::proptest_cases()))]

        #[test]
        fn bytes_and_keys_round_trip(v in json()) {
            prop_assert_eq!(Json::decode(&v.to_bytes()).unwrap(), v.clone());
            let key = v.sort_key();
            let mut rest = key.as_slice();
            let back = Json::from_key(&mut rest).unwrap();
            prop_assert!(rest.is_empty());
            prop_assert_eq!(back.sort_key(), key);
        }

        #[test]
        fn key_order_is_postgres_order(a in json(), b in json()) {
            prop_assert_eq!(compare(&a, &b), model_cmp(&a, &b, true), "{} vs {}", a, b);
        }

        #[test]
        fn hostile_bytes_are_an_error_not_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(v) = Json::decode(&bytes) {
                prop_assert_eq!(v.to_bytes(), bytes);
            }
        }
    }

    #[test]
    fn numbers_compare_by_value() {
        let k = |s: &str| num(s).sort_key();
        assert_eq!(k("1.0"), k("1"));
        assert_eq!(k("0.00"), k("0"));
        assert!(k("-10") < k("-9.5"));
        assert!(k("-0.5") < k("0"));
        assert!(k("0.01") < k("0.1"));
        assert!(k("99") < k("100"));
        assert!(k("1.5") < k("1.55"));
        assert!(k("-1.55") < k("-1.5"));
    }

    #[test]
    fn top_level_order_is_postgres_quirk() {
        let keys = [
            Json::Array(vec![]),
            Json::Null,
            Json::String("a".into()),
            num("1"),
            Json::Bool(true),
            Json::Array(vec![Json::Null]),
            Json::Array(vec![num("1"), num("2")]),
            Json::object(vec![]),
        ]
        .map(|v| v.sort_key());
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn prints_and_normalizes_as_postgres() {
        let v = Json::object(vec![
            ("b".into(), num("1")),
            (
                "aa".into(),
                Json::Array(vec![Json::String("x\"\n\u{1}".into()), Json::Null]),
            ),
            ("b".into(), num("3")),
        ]);
        assert_eq!(v.to_string(), r#"{"b": 3, "aa": ["x\"\n\u0001", null]}"#);
        assert!(is_number_text("-12.50"));
        assert!(!is_number_text("-0"));
        assert!(!is_number_text("01"));
        assert!(!is_number_text("1."));
        assert_eq!(decimal_text("15", 2), "15");
        assert_eq!(decimal_text("15", 1), "1.5");
        assert_eq!(decimal_text("15", -1), "0.015");
        assert_eq!(decimal_text("1", 3), "100");
    }

    #[test]
    fn corrupt_bytes_are_refused() {
        assert!(Json::decode(&[TAG_OBJECT, 2, 1, b'b', TAG_NULL, 1, b'a', TAG_NULL]).is_err());
        assert!(Json::decode(&[TAG_NUMBER, 2, b'0', b'1']).is_err());
        assert!(Json::decode(&[TAG_ARRAY, 200]).is_err());
        assert!(Json::decode(&[TAG_NULL, TAG_NULL]).is_err());
        let mut deep = [TAG_ARRAY, 1].repeat(MAX_DEPTH + 1);
        deep.push(TAG_NULL);
        assert!(Json::decode(&deep).unwrap_err().contains("deeper"));
    }
}
