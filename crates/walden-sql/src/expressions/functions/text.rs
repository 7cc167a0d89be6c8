//! The text and bytea functions: padding, substrings, case, trimming, md5, LIKE and
//! regular expressions, encode/decode.

use walden::Value;

use super::{Func, MAX_TEXT_BYTES};
use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::value::as_i64;

/// The text and bytea functions (strict: the caller has answered a NULL argument).
pub(super) fn call(f: Func, args: &[Value], cx: &mut EvalCtx) -> SqlResult<Option<Value>> {
    let int = |i: usize| as_i64(&args[i]).unwrap_or(0);
    Ok(Some(match f {
        Func::Lpad | Func::Rpad => {
            let fill = args.get(2).map_or(" ", text_arg);
            let widest = fill.chars().map(char::len_utf8).max().unwrap_or(1);
            cx.room_for(checked_len(int(1))?.saturating_mul(widest))?;
            pad(text_arg(&args[0]), int(1), fill, f == Func::Lpad)?
        }
        Func::Repeat => {
            let s = text_arg(&args[0]);
            let n = int(1).max(0);
            cx.room_for(checked_len((s.len() as i64).saturating_mul(n))?)?;
            Value::Text(s.repeat(n as usize))
        }
        Func::Substr => substr(text_arg(&args[0]), int(1), args.get(2).and_then(as_i64))?,
        Func::Length | Func::OctetLength => match &args[0] {
            Value::Bytea(b) => Value::Int4(b.len() as i32),
            v if f == Func::OctetLength => Value::Int4(text_arg(v).len() as i32),
            v => Value::Int4(text_arg(v).chars().count() as i32),
        },
        Func::Upper => Value::Text(text_arg(&args[0]).to_uppercase()),
        Func::Lower => Value::Text(text_arg(&args[0]).to_lowercase()),
        Func::Replace => Value::Text(crate::strings::replace(
            text_arg(&args[0]),
            text_arg(&args[1]),
            text_arg(&args[2]),
            MAX_TEXT_BYTES as usize,
        )?),
        Func::Translate => Value::Text(crate::strings::translate(
            text_arg(&args[0]),
            text_arg(&args[1]),
            text_arg(&args[2]),
        )),
        Func::SplitPart => Value::Text(crate::strings::split_part(
            text_arg(&args[0]),
            text_arg(&args[1]),
            int(2),
        )?),
        Func::Left => Value::Text(crate::strings::left(text_arg(&args[0]), int(1))),
        Func::Right => Value::Text(crate::strings::right(text_arg(&args[0]), int(1))),
        Func::Reverse => Value::Text(crate::strings::reverse(text_arg(&args[0]))),
        Func::Trim(ends) => {
            let chars = args.get(1).map_or(" ", text_arg);
            Value::Text(crate::strings::trim(text_arg(&args[0]), chars, ends))
        }
        Func::Strpos => Value::Int4(crate::strings::strpos(
            text_arg(&args[0]),
            text_arg(&args[1]),
        )),
        Func::Md5 => match &args[0] {
            Value::Bytea(b) => Value::Text(hex(&md5::compute(b).0)),
            v => Value::Text(hex(&md5::compute(text_arg(v)).0)),
        },
        Func::Like | Func::ILike => Value::Bool(like_args(args, f == Func::ILike)?),
        Func::RegexMatch => Value::Bool(crate::regex::matches(
            text_arg(&args[0]),
            text_arg(&args[1]),
        )?),
        Func::RegexIMatch => Value::Bool(crate::regex::matches(
            &text_arg(&args[0]).to_lowercase(),
            &text_arg(&args[1]).to_lowercase(),
        )?),
        Func::ByteaConcat => match (&args[0], &args[1]) {
            (Value::Bytea(a), Value::Bytea(b)) => {
                cx.room_for(checked_len((a.len() + b.len()) as i64)?)?;
                Value::Bytea([a.as_slice(), b.as_slice()].concat())
            }
            _ => Value::Null,
        },
        Func::Encode => match &args[0] {
            Value::Bytea(b) => Value::Text(crate::bytea::encode(b, text_arg(&args[1]))?),
            _ => Value::Null,
        },
        Func::Decode => Value::Bytea(crate::bytea::decode(
            text_arg(&args[0]),
            text_arg(&args[1]),
        )?),
        _ => return Ok(None),
    }))
}

/// LIKE (ILIKE when `ignore_case`) of text, pattern and escape string (empty or one
/// character).
fn like_args(args: &[Value], ignore_case: bool) -> SqlResult<bool> {
    let (mut s, mut p) = (
        text_arg(&args[0]).to_string(),
        text_arg(&args[1]).to_string(),
    );
    if ignore_case {
        s = s.to_lowercase();
        p = p.to_lowercase();
    }
    let escape = text_arg(&args[2]);
    let mut chars = escape.chars();
    let esc = match (chars.next(), chars.next()) {
        (None, _) => None,
        (Some(c), None) => Some(c),
        _ => {
            return Err(SqlError::new("22025", "invalid escape string")
                .with_hint("Escape string must be empty or one character."))
        }
    };
    like(&s, &p, esc)
}

pub(super) fn text_arg(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

fn checked_len(n: i64) -> SqlResult<usize> {
    if n > MAX_TEXT_BYTES {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!("requested length too large: {n}"),
        ));
    }
    Ok(n.max(0) as usize)
}

/// PostgreSQL's lpad/rpad: truncate to `len` characters, or fill with `fill` repeated.
fn pad(s: &str, len: i64, fill: &str, left: bool) -> SqlResult<Value> {
    let len = checked_len(len)?;
    let chars = s.chars().count();
    if chars >= len {
        return Ok(Value::Text(s.chars().take(len).collect()));
    }
    if fill.is_empty() {
        return Ok(Value::Text(s.to_string()));
    }
    let filler: String = fill.chars().cycle().take(len - chars).collect();
    Ok(Value::Text(if left {
        filler + s
    } else {
        let mut out = s.to_string();
        out.push_str(&filler);
        out
    }))
}

/// PostgreSQL's substr: 1-based start, which may be before the string.
fn substr(s: &str, from: i64, len: Option<i64>) -> SqlResult<Value> {
    let end = match len {
        Some(l) if l < 0 => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                "negative substring length not allowed",
            ))
        }
        Some(l) => Some(from.saturating_add(l)),
        None => None,
    };
    let start = from.max(1);
    let take = match end {
        Some(e) if e <= start => 0,
        Some(e) => (e - start) as usize,
        None => usize::MAX,
    };
    Ok(Value::Text(
        s.chars().skip((start - 1) as usize).take(take).collect(),
    ))
}

/// One element of a LIKE pattern.
#[derive(Debug, Clone, PartialEq)]
enum LikeItem {
    /// `%`: any run of characters.
    Any,
    /// `_`: one character.
    One,
    Char(char),
}

/// PostgreSQL's LIKE: `%` matches any run of characters, `_` one, and the escape
/// character (by default `\`) makes the next character literal. Matched greedily with
/// one backtracking point per `%` (linear in practice, never exponential).
pub fn like(text: &str, pattern: &str, escape: Option<char>) -> SqlResult<bool> {
    let mut items = Vec::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        if Some(c) == escape {
            match it.next() {
                Some(n) => items.push(LikeItem::Char(n)),
                None => {
                    return Err(SqlError::new(
                        "22025",
                        "LIKE pattern must not end with escape character",
                    ))
                }
            }
        } else if c == '%' {
            if items.last() != Some(&LikeItem::Any) {
                items.push(LikeItem::Any);
            }
        } else if c == '_' {
            items.push(LikeItem::One);
        } else {
            items.push(LikeItem::Char(c));
        }
    }
    let s: Vec<char> = text.chars().collect();
    let (mut i, mut p) = (0usize, 0usize);
    let mut back: Option<(usize, usize)> = None;
    while i < s.len() {
        match items.get(p) {
            Some(LikeItem::Any) => {
                back = Some((p, i));
                p += 1;
                continue;
            }
            Some(LikeItem::One) => {
                i += 1;
                p += 1;
                continue;
            }
            Some(LikeItem::Char(c)) if *c == s[i] => {
                i += 1;
                p += 1;
                continue;
            }
            _ => {}
        }
        match back {
            Some((bp, bi)) => {
                back = Some((bp, bi + 1));
                p = bp + 1;
                i = bi + 1;
            }
            None => return Ok(false),
        }
    }
    Ok(items[p..].iter().all(|x| *x == LikeItem::Any))
}

/// Lower-case hex of `bytes` (what `format!("{:x}")` gives, without the formatter's
/// per-byte cost: md5 of random text is a hot path of the seed benchmark).
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

#[cfg(test)]
mod hex_tests {
    #[test]
    fn hex_is_what_the_formatter_gives() {
        let d = md5::compute(b"walden");
        assert_eq!(super::hex(&d.0), format!("{d:x}"));
    }
}

#[cfg(test)]
mod like_tests {
    use super::like;

    #[test]
    fn like_matches_as_postgres_does() {
        let m = |s: &str, p: &str| like(s, p, Some('\\')).unwrap();
        assert!(m("abc", "abc"));
        assert!(!m("abc", "ab"));
        assert!(m("abc", "a%"));
        assert!(m("abc", "%c"));
        assert!(m("abc", "%b%"));
        assert!(m("abc", "a_c"));
        assert!(!m("ac", "a_c"));
        assert!(m("", "%"));
        assert!(!m("", "_"));
        assert!(m("abcabc", "%bc%c"));
        assert!(m("aaab", "%a%ab"));
        assert!(!m("aaa", "%b%"));
        assert!(m("a%b", "a\\%b"));
        assert!(!m("axb", "a\\%b"));
        assert!(m("héllo", "h_llo"));
        assert!(like("a_b", "a#_b", Some('#')).unwrap());
        assert!(like("a\\b", "a\\b", None).unwrap());
        assert!(like("x", "x\\", Some('\\')).is_err());
    }
}
