//! PostgreSQL's bytea: its text input (hex `\x0102ff` and the escape format) and
//! `encode`/`decode`. Its output (`\x` and hex) is the engine's `Value` display.

use crate::error::{clip, code, SqlError, SqlResult};

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Hex digits (whitespace between pairs allowed, as PostgreSQL's hex_decode does).
pub fn from_hex(s: &str) -> SqlResult<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 2);
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let bad_digit = |at: usize| {
            let c = s.get(at..).and_then(|r| r.chars().next()).unwrap_or('?');
            SqlError::new(
                code::INVALID_PARAMETER,
                format!("invalid hexadecimal digit: \"{c}\""),
            )
        };
        let hi = hex_digit(b[i]).ok_or_else(|| bad_digit(i))?;
        let Some(&lo) = b.get(i + 1) else {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                "invalid hexadecimal data: odd number of digits",
            ));
        };
        let lo = hex_digit(lo).ok_or_else(|| bad_digit(i + 1))?;
        out.push(hi << 4 | lo);
        i += 2;
    }
    Ok(out)
}

pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// PostgreSQL's bytea input: `\x` and hex digits, or the escape format (bytes as they
/// are, `\\` a backslash, `\nnn` an octal byte).
pub fn parse(s: &str) -> SqlResult<Vec<u8>> {
    if let Some(hex) = s.strip_prefix("\\x").or_else(|| s.strip_prefix("\\X")) {
        return from_hex(hex);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
            continue;
        }
        let octal = b.get(i + 1..i + 4).filter(|d| {
            (b'0'..=b'3').contains(&d[0]) && d[1..].iter().all(|x| (b'0'..=b'7').contains(x))
        });
        let Some(d) = octal else {
            return Err(SqlError::new(
                code::INVALID_TEXT,
                "invalid input syntax for type bytea",
            ));
        };
        out.push((d[0] - b'0') << 6 | (d[1] - b'0') << 3 | (d[2] - b'0'));
        i += 4;
    }
    Ok(out)
}

/// `encode(bytes, format)`: `hex` or `escape`.
pub fn encode(bytes: &[u8], format: &str) -> SqlResult<String> {
    match format.to_ascii_lowercase().as_str() {
        "hex" => Ok(to_hex(bytes)),
        "escape" => {
            let mut out = String::new();
            for &b in bytes {
                match b {
                    b'\\' => out.push_str("\\\\"),
                    0 | 0x80..=0xff => out.push_str(&format!("\\{b:03o}")),
                    _ => out.push(b as char),
                }
            }
            Ok(out)
        }
        _ => Err(unknown_encoding(format)),
    }
}

/// `decode(text, format)`: `hex` or `escape`.
pub fn decode(text: &str, format: &str) -> SqlResult<Vec<u8>> {
    match format.to_ascii_lowercase().as_str() {
        "hex" => from_hex(text),
        "escape" => parse(text),
        _ => Err(unknown_encoding(format)),
    }
}

fn unknown_encoding(format: &str) -> SqlError {
    SqlError::new(
        code::INVALID_PARAMETER,
        format!("unrecognized encoding: \"{}\"", clip(format)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_formats() {
        assert_eq!(parse("\\x01 02ff"), Ok(vec![1, 2, 255]));
        assert_eq!(parse("a\\\\b\\001"), Ok(vec![b'a', b'\\', b'b', 1]));
        assert_eq!(parse("\\x0").unwrap_err().code, code::INVALID_PARAMETER);
        assert_eq!(parse("\\q").unwrap_err().code, code::INVALID_TEXT);
        assert_eq!(encode(&[0, b'a', 200], "escape").unwrap(), "\\000a\\310");
    }
}
