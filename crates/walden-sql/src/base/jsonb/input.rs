//! JSON text input as PostgreSQL reads it: its lexer's tokens, its error details, numbers
//! normalized as numeric prints them, a nesting bound.

use walden::jsonb::{self, Json, MAX_DEPTH};

use super::{invalid_json, too_deep};
use crate::error::{clip, code, SqlError, SqlResult};

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
                        let c = unicode_escape(text, p, &mut high)?;
                        p += 6;
                        if let Some(c) = c {
                            out.push(c);
                        }
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

/// The `\uXXXX` escape at `p` of a JSON string: the character it stands for, or None
/// for a high surrogate (kept in `high` for the low one that must follow).
fn unicode_escape(text: &str, p: usize, high: &mut Option<u32>) -> SqlResult<Option<char>> {
    let hex = text
        .get(p + 2..p + 6)
        .filter(|h| h.len() == 4 && h.bytes().all(|c| c.is_ascii_hexdigit()));
    let Some(hex) = hex else {
        return Err(invalid_json(
            "\"\\u\" must be followed by four hexadecimal digits.".into(),
        ));
    };
    let cp = u32::from_str_radix(hex, 16).unwrap_or(0);
    if (0xD800..0xDC00).contains(&cp) {
        if high.is_some() {
            return Err(invalid_json(
                "Unicode high surrogate must not follow a high surrogate.".into(),
            ));
        }
        *high = Some(cp);
        return Ok(None);
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
        return Err(
            SqlError::new("22P05", "unsupported Unicode escape sequence")
                .with_detail("\\u0000 cannot be converted to text."),
        );
    }
    Ok(Some(char::from_u32(cp).unwrap_or('\u{fffd}')))
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
