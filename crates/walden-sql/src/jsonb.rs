//! The jsonb type's SQL side: PostgreSQL's JSON text input (its lexer's tokens and its
//! error details), numbers normalized as numeric prints them, and the operators and
//! functions on documents (`->`, `->>`, `#>`, `@>`, `?`, `||`, `-`, jsonb_typeof, …).
//! The document, its stored bytes, its order and its output are the engine's
//! (`walden::jsonb`).

use std::sync::Arc;

use walden::jsonb::{self, Json, MAX_DEPTH};
use walden::Value;

use crate::error::{clip, code, SqlError, SqlResult};

/// The operators on jsonb (the binder picks one by the operand types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonOp {
    /// `->`: an object's field (text) or an array's element (integer).
    Get,
    /// `->>`: the same as text.
    GetText,
    /// `#>`: the value at a path (a text array).
    Path,
    /// `#>>`: the same as text.
    PathText,
    /// `@>`
    Contains,
    /// `<@`
    ContainedIn,
    /// `?`: a key (or string element) exists.
    Exists,
    /// `?|`: any of the keys exists.
    ExistsAny,
    /// `?&`: all of the keys exist.
    ExistsAll,
    /// `||`
    Concat,
    /// `-`: a key (text) or an element (integer) removed.
    Delete,
}

impl JsonOp {
    pub fn symbol(self) -> &'static str {
        match self {
            JsonOp::Get => "->",
            JsonOp::GetText => "->>",
            JsonOp::Path => "#>",
            JsonOp::PathText => "#>>",
            JsonOp::Contains => "@>",
            JsonOp::ContainedIn => "<@",
            JsonOp::Exists => "?",
            JsonOp::ExistsAny => "?|",
            JsonOp::ExistsAll => "?&",
            JsonOp::Concat => "||",
            JsonOp::Delete => "-",
        }
    }
}

pub fn value(j: Json) -> Value {
    Value::Jsonb(Arc::new(j))
}

fn invalid_json(detail: String) -> SqlError {
    SqlError::new(code::INVALID_TEXT, "invalid input syntax for type json").with_detail(detail)
}

fn too_deep() -> SqlError {
    SqlError::new(code::STATEMENT_TOO_COMPLEX, "stack depth limit exceeded").with_hint(format!(
        "jsonb nests at most {MAX_DEPTH} arrays and objects in Walden."
    ))
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    ObjectStart,
    ObjectEnd,
    ArrayStart,
    ArrayEnd,
    Comma,
    Colon,
    String(String),
    Number(String),
    True,
    False,
    Null,
    End,
}

/// PostgreSQL's json lexer: a token and the text it was read from.
struct Lexer<'a> {
    text: &'a str,
    at: usize,
}

/// JSON_ALPHANUMERIC_CHAR: what PostgreSQL takes as part of one (invalid) token.
fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

impl<'a> Lexer<'a> {
    /// The next token and its text (for "but found …").
    fn next(&mut self) -> SqlResult<(Token, &'a str)> {
        let bytes = self.text.as_bytes();
        while self.at < bytes.len() && matches!(bytes[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let start = self.at;
        let Some(&b) = bytes.get(start) else {
            return Ok((Token::End, ""));
        };
        let single = match b {
            b'{' => Some(Token::ObjectStart),
            b'}' => Some(Token::ObjectEnd),
            b'[' => Some(Token::ArrayStart),
            b']' => Some(Token::ArrayEnd),
            b',' => Some(Token::Comma),
            b':' => Some(Token::Colon),
            _ => None,
        };
        if let Some(t) = single {
            self.at += 1;
            return Ok((t, &self.text[start..self.at]));
        }
        let token = match b {
            b'"' => Token::String(self.string()?),
            b'-' | b'0'..=b'9' => self.number()?,
            _ => {
                let mut end = start;
                while end < bytes.len() && word_byte(bytes[end]) {
                    end += 1;
                }
                if end == start {
                    // One character that starts no token.
                    end += self.text[start..].chars().next().map_or(1, char::len_utf8);
                }
                self.at = end;
                match &self.text[start..end] {
                    "true" => Token::True,
                    "false" => Token::False,
                    "null" => Token::Null,
                    word => return Err(invalid_token(word)),
                }
            }
        };
        Ok((token, &self.text[start..self.at]))
    }

    /// The rest of an invalid token from `start`: through the alphanumeric run.
    fn bad_token(&mut self, start: usize) -> SqlError {
        let bytes = self.text.as_bytes();
        let mut end = self.at.max(start + 1).min(bytes.len());
        while end < bytes.len() && word_byte(bytes[end]) {
            end += 1;
        }
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        self.at = end;
        invalid_token(&self.text[start..end])
    }

    fn number(&mut self) -> SqlResult<Token> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let mut p = start;
        let digits = |p: &mut usize| {
            let s = *p;
            while *p < bytes.len() && bytes[*p].is_ascii_digit() {
                *p += 1;
            }
            *p > s
        };
        if bytes[p] == b'-' {
            p += 1;
        }
        let int_start = p;
        let mut ok = digits(&mut p);
        if ok && bytes[int_start] == b'0' && p - int_start > 1 {
            ok = false;
        }
        if ok && p < bytes.len() && bytes[p] == b'.' {
            p += 1;
            ok = digits(&mut p);
        }
        if ok && p < bytes.len() && matches!(bytes[p], b'e' | b'E') {
            p += 1;
            if p < bytes.len() && matches!(bytes[p], b'+' | b'-') {
                p += 1;
            }
            ok = digits(&mut p);
        }
        self.at = p;
        if !ok || (p < bytes.len() && word_byte(bytes[p])) {
            return Err(self.bad_token(start));
        }
        Ok(Token::Number(normalize_number(&self.text[start..p])?))
    }

    fn string(&mut self) -> SqlResult<String> {
        let text = self.text;
        let bytes = text.as_bytes();
        let start = self.at;
        let mut p = start + 1;
        let mut out = String::new();
        let mut high: Option<u32> = None;
        loop {
            let Some(&b) = bytes.get(p) else {
                self.at = p;
                return Err(invalid_token(&text[start..]));
            };
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = bytes.get(p + 1) else {
                        self.at = p + 1;
                        return Err(invalid_token(&text[start..]));
                    };
                    if e == b'u' {
                        let hex = text
                            .get(p + 2..p + 6)
                            .filter(|h| h.len() == 4 && h.bytes().all(|c| c.is_ascii_hexdigit()));
                        let Some(hex) = hex else {
                            return Err(invalid_json(
                                "\"\\u\" must be followed by four hexadecimal digits.".into(),
                            ));
                        };
                        let cp = u32::from_str_radix(hex, 16).unwrap_or(0);
                        p += 6;
                        if (0xD800..0xDC00).contains(&cp) {
                            if high.is_some() {
                                return Err(invalid_json(
                                    "Unicode high surrogate must not follow a high surrogate."
                                        .into(),
                                ));
                            }
                            high = Some(cp);
                            continue;
                        }
                        let cp = if (0xDC00..0xE000).contains(&cp) {
                            let Some(h) = high.take() else {
                                return Err(low_without_high());
                            };
                            0x10000 + ((h - 0xD800) << 10) + (cp - 0xDC00)
                        } else {
                            if high.is_some() {
                                return Err(low_without_high());
                            }
                            cp
                        };
                        if cp == 0 {
                            return Err(SqlError::new(
                                "22P05",
                                "unsupported Unicode escape sequence",
                            )
                            .with_detail("\\u0000 cannot be converted to text."));
                        }
                        out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                        continue;
                    }
                    if high.is_some() {
                        return Err(low_without_high());
                    }
                    out.push(match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        _ => {
                            let c = text[p + 1..].chars().next().unwrap_or(' ');
                            return Err(invalid_json(format!(
                                "Escape sequence \"\\{c}\" is invalid."
                            )));
                        }
                    });
                    p += 2;
                }
                _ => {
                    if high.is_some() {
                        return Err(low_without_high());
                    }
                    if b < 0x20 {
                        return Err(invalid_json(format!(
                            "Character with value 0x{b:02x} must be escaped."
                        )));
                    }
                    let c = text[p..].chars().next().unwrap_or(' ');
                    out.push(c);
                    p += c.len_utf8();
                }
            }
        }
        if high.is_some() {
            return Err(low_without_high());
        }
        self.at = p + 1;
        Ok(out)
    }
}

fn low_without_high() -> SqlError {
    invalid_json("Unicode low surrogate must follow a high surrogate.".into())
}

fn invalid_token(t: &str) -> SqlError {
    invalid_json(format!("Token \"{}\" is invalid.", clip(t)))
}

fn unexpected_end() -> SqlError {
    invalid_json("The input string ended unexpectedly.".into())
}

/// PostgreSQL's parse error for `found` where `expected` was wanted.
fn expected(expected: &str, found: &str) -> SqlError {
    invalid_json(format!(
        "Expected {expected}, but found \"{}\".",
        clip(found)
    ))
}

/// A JSON number (already lexed) as numeric prints it: exponent applied, the fraction
/// digits it needs (`1.50e1` is `15.0`), no sign on zero.
pub fn normalize_number(lexeme: &str) -> SqlResult<String> {
    let (negative, body) = match lexeme.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, lexeme.strip_prefix('+').unwrap_or(lexeme)),
    };
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, "0"),
    };
    let overflow = || SqlError::new(code::NUMERIC_OUT_OF_RANGE, "value overflows numeric format");
    let exp: i64 = match exp.parse() {
        Ok(e) => e,
        Err(_)
            if exp
                .trim_start_matches(['+', '-'])
                .bytes()
                .all(|b| b.is_ascii_digit()) =>
        {
            return Err(overflow())
        }
        Err(_) => return Err(invalid_token(lexeme)),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // Bounded so the text stays within what a row can hold.
    if !(-20_000..=20_000).contains(&exp) {
        return Err(overflow());
    }
    let scale = (frac.len() as i64 - exp).max(0);
    let digits: String = int.chars().chain(frac.chars()).collect();
    let point = int.len() as i64 + exp;
    let mut text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        let mut s = digits.clone();
        s.push_str(&"0".repeat(point as usize - digits.len()));
        if scale > 0 {
            s.push('.');
        }
        s
    } else {
        let (a, b) = digits.split_at(point as usize);
        format!("{a}.{b}")
    };
    // Leading zeros of the integer part go (one stays).
    let int_len = text.find('.').unwrap_or(text.len());
    let zeros = text[..int_len].bytes().take_while(|&b| b == b'0').count();
    text.drain(..zeros.min(int_len - 1));
    if negative && text.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        text.insert(0, '-');
    }
    debug_assert!(jsonb::is_number_text(&text), "{lexeme} gave {text}");
    Ok(text)
}

/// Parses JSON text into a normalized document, with PostgreSQL's errors.
pub fn parse(text: &str) -> SqlResult<Json> {
    let mut lexer = Lexer { text, at: 0 };
    let (first, found) = lexer.next()?;
    let v = parse_value(&mut lexer, first, found, 0)?;
    match lexer.next()? {
        (Token::End, _) => Ok(v),
        (_, found) => Err(expected("end of input", found)),
    }
}

fn parse_value(lexer: &mut Lexer<'_>, token: Token, found: &str, depth: usize) -> SqlResult<Json> {
    Ok(match token {
        Token::String(s) => Json::String(s),
        Token::Number(n) => Json::Number(n),
        Token::True => Json::Bool(true),
        Token::False => Json::Bool(false),
        Token::Null => Json::Null,
        Token::End => return Err(unexpected_end()),
        Token::ArrayStart | Token::ObjectStart if depth >= MAX_DEPTH => return Err(too_deep()),
        Token::ArrayStart => {
            let mut items = Vec::new();
            let (mut t, mut f) = lexer.next()?;
            let mut what = "array element or \"]\"";
            if t != Token::ArrayEnd {
                loop {
                    if matches!(
                        t,
                        Token::ArrayEnd | Token::ObjectEnd | Token::Comma | Token::Colon
                    ) {
                        return Err(expected(what, f));
                    }
                    what = "JSON value";
                    items.push(parse_value(lexer, t, f, depth + 1)?);
                    match lexer.next()? {
                        (Token::ArrayEnd, _) => break,
                        (Token::Comma, _) => (t, f) = lexer.next()?,
                        (Token::End, _) => return Err(unexpected_end()),
                        (_, f) => return Err(expected("\",\" or \"]\"", f)),
                    }
                    if t == Token::End {
                        return Err(unexpected_end());
                    }
                }
            }
            Json::Array(items)
        }
        Token::ObjectStart => {
            let mut pairs = Vec::new();
            let (mut t, mut f) = lexer.next()?;
            let mut what = "string or \"}\"";
            if t != Token::ObjectEnd {
                loop {
                    let key = match t {
                        Token::String(k) => k,
                        Token::End => return Err(unexpected_end()),
                        _ => return Err(expected(what, f)),
                    };
                    match lexer.next()? {
                        (Token::Colon, _) => {}
                        (Token::End, _) => return Err(unexpected_end()),
                        (_, f) => return Err(expected("\":\"", f)),
                    }
                    let (vt, vf) = lexer.next()?;
                    if matches!(
                        vt,
                        Token::ArrayEnd | Token::ObjectEnd | Token::Comma | Token::Colon
                    ) {
                        return Err(expected("JSON value", vf));
                    }
                    pairs.push((key, parse_value(lexer, vt, vf, depth + 1)?));
                    match lexer.next()? {
                        (Token::ObjectEnd, _) => break,
                        (Token::Comma, _) => (t, f) = lexer.next()?,
                        (Token::End, _) => return Err(unexpected_end()),
                        (_, f) => return Err(expected("\",\" or \"}\"", f)),
                    }
                    what = "string";
                }
            }
            Json::object(pairs)
        }
        Token::ArrayEnd | Token::ObjectEnd | Token::Comma | Token::Colon => {
            return Err(expected("JSON value", found))
        }
    })
}

pub(crate) fn doc(v: &Value) -> Option<&Json> {
    match v {
        Value::Jsonb(j) => Some(j),
        _ => None,
    }
}

/// `->>`'s text of a value: a string's contents, NULL for a JSON null, the jsonb text
/// of anything else.
pub fn as_text(j: &Json) -> Value {
    match j {
        Json::Null => Value::Null,
        Json::String(s) => Value::Text(s.clone()),
        other => Value::Text(other.to_string()),
    }
}

/// An array's element at `i` (negative: from the end); a top-level scalar is taken as
/// a one-element array, as PostgreSQL's raw scalar is.
fn element(j: &Json, i: i64, top: bool) -> Option<&Json> {
    let items: &[Json] = match j {
        Json::Array(items) => items,
        Json::Object(_) => return None,
        scalar if top => std::slice::from_ref(scalar),
        _ => return None,
    };
    let n = items.len() as i64;
    let at = if i < 0 { n + i } else { i };
    usize::try_from(at).ok().and_then(|at| items.get(at))
}

fn field<'j>(j: &'j Json, key: &str) -> Option<&'j Json> {
    match j {
        Json::Object(pairs) => pairs
            .binary_search_by(|(k, _)| jsonb::key_order(k, key))
            .ok()
            .map(|i| &pairs[i].1),
        _ => None,
    }
}

/// The value at a path of keys and array indexes (`#>`).
fn at_path<'j>(j: &'j Json, path: &[Option<String>]) -> Option<&'j Json> {
    let mut cur = j;
    for (n, step) in path.iter().enumerate() {
        let step = step.as_deref()?;
        cur = match cur {
            Json::Object(_) => field(cur, step)?,
            Json::Array(_) => element(cur, step.trim().parse().ok()?, false)?,
            // A path into a scalar finds nothing (only the empty path gives it back).
            _ if n == 0 => return None,
            _ => return None,
        };
    }
    Some(cur)
}

/// `a @> b`: PostgreSQL's containment (JsonbDeepContains): an object contains an
/// object whose every pair it has (values contained in turn); an array contains an
/// array whose every element some element of it contains, in any order and number; a
/// top-level array contains a scalar it has as an element.
pub fn contains(a: &Json, b: &Json, top: bool) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            x.len() >= y.len()
                && y.iter()
                    .all(|(k, bv)| field(a, k).is_some_and(|av| contains(av, bv, false)))
        }
        (Json::Array(x), Json::Array(y)) => y.iter().all(|bv| match bv {
            Json::Array(_) | Json::Object(_) => x.iter().any(|av| {
                std::mem::discriminant(av) == std::mem::discriminant(bv) && contains(av, bv, false)
            }),
            scalar => x.iter().any(|av| scalar_eq(av, scalar)),
        }),
        (Json::Array(x), scalar) if top && !matches!(scalar, Json::Object(_)) => {
            x.iter().any(|av| scalar_eq(av, scalar))
        }
        (Json::Array(_) | Json::Object(_), _) | (_, Json::Array(_) | Json::Object(_)) => false,
        (x, y) => scalar_eq(x, y),
    }
}

fn scalar_eq(a: &Json, b: &Json) -> bool {
    !matches!(a, Json::Array(_) | Json::Object(_))
        && jsonb::compare(a, b) == std::cmp::Ordering::Equal
}

/// `?`: a key of an object, a string element of an array, or a string scalar.
pub fn exists(j: &Json, key: &str) -> bool {
    match j {
        Json::Object(_) => field(j, key).is_some(),
        Json::Array(items) => items
            .iter()
            .any(|v| matches!(v, Json::String(s) if s == key)),
        Json::String(s) => s == key,
        _ => false,
    }
}

/// `a || b`: two objects merge (the right's values win); anything else is an array of
/// both sides' elements (a scalar or object counting as a one-element array).
pub fn concat(a: &Json, b: &Json) -> Json {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            Json::object(x.iter().chain(y.iter()).cloned().collect())
        }
        _ => {
            let items = |j: &Json| match j {
                Json::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            let mut out = items(a);
            out.extend(items(b));
            Json::Array(out)
        }
    }
}

fn cannot_delete(what: &str) -> SqlError {
    SqlError::new(
        code::INVALID_PARAMETER,
        format!("cannot delete from {what}"),
    )
}

/// `j - key`: the object without the key, or the array without its string elements
/// equal to it.
pub fn delete_key(j: &Json, key: &str) -> SqlResult<Json> {
    Ok(match j {
        Json::Object(pairs) => {
            Json::Object(pairs.iter().filter(|(k, _)| k != key).cloned().collect())
        }
        Json::Array(items) => Json::Array(
            items
                .iter()
                .filter(|v| !matches!(v, Json::String(s) if s == key))
                .cloned()
                .collect(),
        ),
        _ => return Err(cannot_delete("scalar")),
    })
}

/// `j - i`: the array without its element at `i` (negative: from the end).
pub fn delete_index(j: &Json, i: i64) -> SqlResult<Json> {
    match j {
        Json::Array(items) => {
            let n = items.len() as i64;
            let at = if i < 0 { n + i } else { i };
            Ok(Json::Array(
                items
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k as i64 != at)
                    .map(|(_, v)| v.clone())
                    .collect(),
            ))
        }
        Json::Object(_) => Err(cannot_delete("object using integer index")),
        _ => Err(cannot_delete("scalar")),
    }
}

/// Applies a jsonb operator to non-null operands (their types were checked when
/// binding: the left is a jsonb; the right a jsonb, text, integer or text array).
pub fn apply(op: JsonOp, a: &Value, b: &Value) -> SqlResult<Value> {
    let (Some(j), false) = (doc(a), matches!(b, Value::Null)) else {
        return Ok(Value::Null);
    };
    let text_array = |v: &Value| match v {
        Value::Text(s) => crate::array::elements(s),
        _ => Ok(Vec::new()),
    };
    Ok(match op {
        JsonOp::Get | JsonOp::GetText => {
            let found = match b {
                Value::Text(k) => field(j, k),
                other => element(j, crate::value::as_i64(other).unwrap_or(0), true),
            };
            match (found, op) {
                (None, _) => Value::Null,
                (Some(v), JsonOp::Get) => value(v.clone()),
                (Some(v), _) => as_text(v),
            }
        }
        JsonOp::Path | JsonOp::PathText => {
            let path = text_array(b)?;
            match (at_path(j, &path), op) {
                (None, _) => Value::Null,
                (Some(v), JsonOp::Path) => value(v.clone()),
                (Some(v), _) => as_text(v),
            }
        }
        JsonOp::Contains | JsonOp::ContainedIn => {
            let Some(other) = doc(b) else {
                return Ok(Value::Null);
            };
            let (x, y) = if op == JsonOp::Contains {
                (j, other)
            } else {
                (other, j)
            };
            Value::Bool(contains(x, y, true))
        }
        JsonOp::Exists => match b {
            Value::Text(k) => Value::Bool(exists(j, k)),
            _ => Value::Null,
        },
        JsonOp::ExistsAny | JsonOp::ExistsAll => {
            let keys = text_array(b)?;
            let mut hits = keys.iter().flatten().map(|k| exists(j, k));
            Value::Bool(if op == JsonOp::ExistsAny {
                hits.any(|h| h)
            } else {
                hits.all(|h| h)
            })
        }
        JsonOp::Concat => match doc(b) {
            Some(other) => value(concat(j, other)),
            None => Value::Null,
        },
        JsonOp::Delete => match b {
            Value::Text(k) => value(delete_key(j, k)?),
            other => value(delete_index(j, crate::value::as_i64(other).unwrap_or(0))?),
        },
    })
}

/// `jsonb_array_length`.
pub fn array_length(j: &Json) -> SqlResult<Value> {
    match j {
        Json::Array(items) => Ok(Value::Int4(items.len() as i32)),
        Json::Object(_) => Err(SqlError::new(
            code::INVALID_PARAMETER,
            "cannot get array length of a non-array",
        )),
        _ => Err(SqlError::new(
            code::INVALID_PARAMETER,
            "cannot get array length of a scalar",
        )),
    }
}

/// `to_jsonb` of a SQL value (NULL: a JSON null, as an element of jsonb_build_*).
pub fn from_value(v: &Value) -> SqlResult<Json> {
    Ok(match v {
        Value::Null => Json::Null,
        Value::Jsonb(j) => (**j).clone(),
        Value::Bool(b) => Json::Bool(*b),
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) => {
            Json::Number(crate::value::as_i64(v).unwrap_or(0).to_string())
        }
        Value::Float8(x) if !x.is_finite() => Json::String(crate::value::float_text(*x)),
        Value::Float8(x) => Json::Number(normalize_number(&crate::value::float_text(*x))?),
        // An exact numeric keeps its digits and scale (`2.50` stays `2.50`).
        Value::Numeric(n) => Json::Number(normalize_number(&n.to_string())?),
        Value::Text(s) => Json::String(s.clone()),
        // PostgreSQL writes dates and times in ISO 8601 with a `T`.
        Value::Timestamp(_) => Json::String(v.to_string().replacen(' ', "T", 1)),
        Value::Timestamptz(_) => {
            let s = v.to_string().replacen(' ', "T", 1);
            Json::String(match s.strip_suffix("+00") {
                Some(t) => format!("{t}+00:00"),
                None => s,
            })
        }
        other => Json::String(crate::value::to_text(other).unwrap_or_default()),
    })
}

/// `jsonb_build_object(k1, v1, …)`.
pub fn build_object(args: &[Value]) -> SqlResult<Value> {
    if !args.len().is_multiple_of(2) {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            "argument list must have even number of elements",
        )
        .with_hint(
            "The arguments of jsonb_build_object() must consist of alternating keys and values.",
        ));
    }
    let mut pairs = Vec::with_capacity(args.len() / 2);
    for (i, kv) in args.chunks(2).enumerate() {
        let key = match &kv[0] {
            Value::Null => {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER,
                    format!("argument {}: key must not be null", 2 * i + 1),
                ))
            }
            Value::Text(s) => s.clone(),
            other => crate::value::to_text(other).unwrap_or_default(),
        };
        pairs.push((key, from_value(&kv[1])?));
    }
    Ok(value(Json::object(pairs)))
}

/// A jsonb cast to a SQL type PostgreSQL allows (numbers to numeric types, booleans to
/// boolean); anything else is its "cannot cast jsonb … to type …".
pub fn cast_to(j: &Json, to: crate::types::SqlType) -> SqlResult<Value> {
    use crate::types::SqlType as T;
    let kind = match j {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "numeric",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    };
    let refuse = || {
        SqlError::new(
            code::INVALID_PARAMETER,
            format!("cannot cast jsonb {kind} to type {}", to.name()),
        )
    };
    match (j, to) {
        (Json::Bool(b), T::Bool) => Ok(Value::Bool(*b)),
        (Json::Number(n), t) if t.is_numeric() => {
            let x = crate::value::parse_text(n, T::Numeric)?;
            crate::value::cast_from(x, T::Numeric, &crate::types::DeclaredType::plain(t), true)
        }
        _ => Err(refuse()),
    }
}

/// The set-returning jsonb functions Walden has in FROM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonRows {
    ArrayElements,
    ArrayElementsText,
    Each,
    EachText,
    ObjectKeys,
}

impl JsonRows {
    pub fn lookup(name: &str) -> Option<JsonRows> {
        Some(match name {
            "jsonb_array_elements" | "json_array_elements" => JsonRows::ArrayElements,
            "jsonb_array_elements_text" | "json_array_elements_text" => JsonRows::ArrayElementsText,
            "jsonb_each" | "json_each" => JsonRows::Each,
            "jsonb_each_text" | "json_each_text" => JsonRows::EachText,
            "jsonb_object_keys" | "json_object_keys" => JsonRows::ObjectKeys,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            JsonRows::ArrayElements => "jsonb_array_elements",
            JsonRows::ArrayElementsText => "jsonb_array_elements_text",
            JsonRows::Each => "jsonb_each",
            JsonRows::EachText => "jsonb_each_text",
            JsonRows::ObjectKeys => "jsonb_object_keys",
        }
    }

    /// The result columns, as PostgreSQL names them (a lone column without an OUT
    /// parameter's name, jsonb_object_keys's, takes a table alias's name).
    pub fn columns(self) -> Vec<(&'static str, crate::types::SqlType)> {
        use crate::types::SqlType as T;
        match self {
            JsonRows::ArrayElements => vec![("value", T::Jsonb)],
            JsonRows::ArrayElementsText => vec![("value", T::Text)],
            JsonRows::Each => vec![("key", T::Text), ("value", T::Jsonb)],
            JsonRows::EachText => vec![("key", T::Text), ("value", T::Text)],
            JsonRows::ObjectKeys => vec![("jsonb_object_keys", T::Text)],
        }
    }

    /// The rows for a document, or PostgreSQL's error for one of the wrong kind.
    pub fn rows(self, j: &Json) -> SqlResult<Vec<Vec<Value>>> {
        let refuse = |m: String| Err(SqlError::new(code::INVALID_PARAMETER, m));
        let text = |v: &Json| match v {
            Json::Null => Value::Null,
            Json::String(s) => Value::Text(s.clone()),
            other => Value::Text(other.to_string()),
        };
        match (self, j) {
            (JsonRows::ArrayElements | JsonRows::ArrayElementsText, Json::Array(items)) => {
                Ok(items
                    .iter()
                    .map(|v| match self {
                        JsonRows::ArrayElements => vec![value(v.clone())],
                        _ => vec![text(v)],
                    })
                    .collect())
            }
            (JsonRows::ArrayElements | JsonRows::ArrayElementsText, Json::Object(_)) => {
                refuse("cannot extract elements from an object".into())
            }
            (JsonRows::ArrayElements | JsonRows::ArrayElementsText, _) => {
                refuse("cannot extract elements from a scalar".into())
            }
            (JsonRows::Each | JsonRows::EachText, Json::Object(pairs)) => Ok(pairs
                .iter()
                .map(|(k, v)| {
                    let v = match self {
                        JsonRows::Each => value(v.clone()),
                        _ => text(v),
                    };
                    vec![Value::Text(k.clone()), v]
                })
                .collect()),
            (JsonRows::Each | JsonRows::EachText, _) => {
                refuse(format!("cannot call {} on a non-object", self.name()))
            }
            (JsonRows::ObjectKeys, Json::Object(pairs)) => Ok(pairs
                .iter()
                .map(|(k, _)| vec![Value::Text(k.clone())])
                .collect()),
            (JsonRows::ObjectKeys, Json::Array(_)) => {
                refuse("cannot call jsonb_object_keys on an array".into())
            }
            (JsonRows::ObjectKeys, _) => refuse("cannot call jsonb_object_keys on a scalar".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> String {
        match parse(s) {
            Ok(j) => j.to_string(),
            Err(e) => format!(
                "{} {} {}",
                e.code,
                e.message,
                e.detail.clone().unwrap_or_default()
            ),
        }
    }

    #[test]
    fn parses_and_normalizes_as_postgres() {
        assert_eq!(
            text(r#"{"b":1,"aa":2,"b":3, "a": 1.50e1}"#),
            r#"{"a": 15.0, "b": 3, "aa": 2}"#
        );
        assert_eq!(text("-0.0"), "0.0");
        assert_eq!(text("0.000e5"), "0");
        assert_eq!(text("1E+2"), "100");
        assert_eq!(text("12.3e-5"), "0.000123");
        assert_eq!(text(r#""\u00e9\n\t\"\\ \/""#), r#""é\n\t\"\\ /""#);
        assert_eq!(text(r#""\ud83d\ude00""#), "\"\u{1f600}\"");
        assert_eq!(text(" [ ] "), "[]");
    }

    #[test]
    fn errors_carry_postgres_details() {
        let d = |s: &str| {
            parse(s)
                .unwrap_err()
                .detail
                .clone()
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(d("01"), "Token \"01\" is invalid.");
        assert_eq!(d(r#"{"a":1,}"#), "Expected string, but found \"}\".");
        assert_eq!(d(r#"{"a" 1}"#), "Expected \":\", but found \"1\".");
        assert_eq!(d(""), "The input string ended unexpectedly.");
        assert_eq!(d("[1,2"), "The input string ended unexpectedly.");
        assert_eq!(d("nul"), "Token \"nul\" is invalid.");
        assert_eq!(d("\"abc"), "Token \"\"abc\" is invalid.");
        assert_eq!(d(r#""\x""#), "Escape sequence \"\\x\" is invalid.");
        assert_eq!(d("[1] x"), "Token \"x\" is invalid.");
        assert_eq!(d("1."), "Token \"1.\" is invalid.");
        assert_eq!(
            d(r#""\ud83d""#),
            "Unicode low surrogate must follow a high surrogate."
        );
        assert_eq!(parse(r#""\u0000""#).unwrap_err().code, "22P05");
        let deep = "[".repeat(100_000);
        assert_eq!(parse(&deep).unwrap_err().code, "54001");
    }

    #[test]
    fn containment_follows_postgres() {
        let c = |a: &str, b: &str| contains(&parse(a).unwrap(), &parse(b).unwrap(), true);
        assert!(c("[1,[2,3]]", "[[3]]"));
        assert!(c("[1,2]", "1"));
        assert!(!c("1", "[1]"));
        assert!(c(r#"{"a":[1,2]}"#, r#"{"a":[2,2]}"#));
        assert!(!c("[[1,2]]", "[1]"));
        assert!(c(r#"{"a":1,"b":{"c":2}}"#, r#"{"b":{}}"#));
    }
}
