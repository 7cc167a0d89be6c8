//! PostgreSQL's functions that take text apart and put it together: `replace`,
//! `translate`, `split_part`, `left`, `right`, `reverse`, the trims (`btrim`, `ltrim`,
//! `rtrim`, and SQL's `TRIM`) and `strpos` (SQL's `POSITION`). Positions and lengths
//! count characters, not bytes, as PostgreSQL's do in UTF8. NULLs are the caller's
//! (every one is strict).

use std::collections::HashMap;

use crate::error::{code, SqlError, SqlResult};

/// `replace(s, from, to)`: every occurrence of `from` replaced, left to right; an
/// empty `from` leaves `s` as it is. Fails past `max_bytes` of result.
pub fn replace(s: &str, from: &str, to: &str, max_bytes: usize) -> SqlResult<String> {
    if from.is_empty() {
        return Ok(s.to_string());
    }
    let count = s.matches(from).count();
    let bytes = (s.len() - count * from.len()).saturating_add(count.saturating_mul(to.len()));
    if bytes > max_bytes {
        return Err(too_long(bytes));
    }
    Ok(s.replace(from, to))
}

/// `translate(s, from, to)`: each character of `from` becomes the character of `to`
/// at its place, or is deleted where `to` is shorter; the first of a repeated
/// character counts.
pub fn translate(s: &str, from: &str, to: &str) -> String {
    let mut map: HashMap<char, Option<char>> = HashMap::new();
    let mut to = to.chars();
    for c in from.chars() {
        let replacement = to.next();
        map.entry(c).or_insert(replacement);
    }
    s.chars()
        .filter_map(|c| match map.get(&c) {
            Some(r) => *r,
            None => Some(c),
        })
        .collect()
}

/// `split_part(s, delimiter, n)`: the `n`th field (from the end when negative), empty
/// past the last; an empty delimiter makes `s` one field. `n` may not be 0.
pub fn split_part(s: &str, delimiter: &str, n: i64) -> SqlResult<String> {
    if n == 0 {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            "field position must not be zero",
        ));
    }
    let fields: Vec<&str> = if delimiter.is_empty() {
        vec![s]
    } else {
        s.split(delimiter).collect()
    };
    let index = if n > 0 {
        usize::try_from(n - 1).ok()
    } else {
        usize::try_from(n.unsigned_abs())
            .ok()
            .and_then(|back| fields.len().checked_sub(back))
    };
    Ok(index
        .and_then(|i| fields.get(i))
        .map_or_else(String::new, |f| f.to_string()))
}

/// `left(s, n)`: the first `n` characters; all but the last `-n` when negative.
pub fn left(s: &str, n: i64) -> String {
    let len = s.chars().count() as i64;
    let take = if n >= 0 { n } else { len.saturating_add(n) };
    s.chars().take(take.max(0) as usize).collect()
}

/// `right(s, n)`: the last `n` characters; all but the first `-n` when negative.
pub fn right(s: &str, n: i64) -> String {
    let len = s.chars().count() as i64;
    let skip = if n >= 0 {
        len.saturating_sub(n)
    } else {
        n.saturating_neg()
    };
    s.chars().skip(skip.clamp(0, len) as usize).collect()
}

pub fn reverse(s: &str) -> String {
    s.chars().rev().collect()
}

/// Which ends a trim takes characters from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    Both,
    Leading,
    Trailing,
}

/// `btrim`, `ltrim`, `rtrim` (`TRIM(BOTH | LEADING | TRAILING chars FROM s)`): the
/// longest run of characters in `chars` removed from those ends.
pub fn trim(s: &str, chars: &str, ends: Ends) -> String {
    let strip = |c: char| chars.contains(c);
    match ends {
        Ends::Both => s.trim_matches(strip),
        Ends::Leading => s.trim_start_matches(strip),
        Ends::Trailing => s.trim_end_matches(strip),
    }
    .to_string()
}

/// `strpos(s, sub)`, `POSITION(sub IN s)`: the 1-based character position of the
/// first `sub` in `s`, 0 when there is none (1 for an empty `sub`).
pub fn strpos(s: &str, sub: &str) -> i32 {
    match s.find(sub) {
        Some(at) => s[..at].chars().count() as i32 + 1,
        None => 0,
    }
}

fn too_long(bytes: usize) -> SqlError {
    SqlError::new(
        code::PROGRAM_LIMIT,
        format!("requested length too large: {bytes}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each case's answer is PostgreSQL 15's.
    #[test]
    fn replace_and_translate_as_postgres() {
        let r = |s, f, t| replace(s, f, t, 1 << 20).unwrap();
        assert_eq!(r("abcabc", "b", "XY"), "aXYcaXYc");
        assert_eq!(r("abc", "", "X"), "abc");
        assert_eq!(r("aaa", "aa", "b"), "ba");
        assert_eq!(r("abc", "b", ""), "ac");
        assert_eq!(
            replace("aaaa", "a", "bbbb", 10).unwrap_err().code,
            code::PROGRAM_LIMIT
        );
        assert_eq!(translate("12345", "143", "ax"), "a2x5");
        assert_eq!(translate("abcabc", "aa", "xy"), "xbcxbc");
        assert_eq!(translate("abc", "", "x"), "abc");
        assert_eq!(translate("héllo", "é", "e"), "hello");
    }

    #[test]
    fn split_part_counts_fields_from_either_end() {
        let p = |s, d, n| split_part(s, d, n).unwrap();
        assert_eq!(p("a,b,c", ",", 2), "b");
        assert_eq!(p("a,b,c", ",", 4), "");
        assert_eq!(p("a,b,c", ",", -1), "c");
        assert_eq!(p("a,b,c", ",", -4), "");
        assert_eq!(p("abc", "", 1), "abc");
        assert_eq!(p("abc", "", 2), "");
        assert_eq!(p("abc", "", -1), "abc");
        assert_eq!(p("a::b", "::", 2), "b");
        assert_eq!(p("", ",", 1), "");
        assert_eq!(p("a,b", ",", i64::from(i32::MAX)), "");
        assert_eq!(p("a,b", ",", i64::from(i32::MIN)), "");
        let e = split_part("a,b", ",", 0).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (code::INVALID_PARAMETER, "field position must not be zero")
        );
    }

    #[test]
    fn left_right_reverse_trim_strpos_as_postgres() {
        assert_eq!(
            [
                left("abcde", 2),
                left("abcde", -2),
                left("abc", 10),
                left("abc", -10),
                left("abc", 0),
                left("abc", i64::from(i32::MIN)),
            ],
            ["ab", "abc", "abc", "", "", ""]
        );
        assert_eq!(
            [
                right("abcde", 2),
                right("abcde", -2),
                right("abc", 10),
                right("abc", -10),
                right("abc", i64::from(i32::MIN)),
            ],
            ["de", "cde", "abc", "", ""]
        );
        assert_eq!(reverse("abcé"), "écba");
        assert_eq!(trim("xxaxx", "x", Ends::Both), "a");
        assert_eq!(trim("xyaxy", "yx", Ends::Leading), "axy");
        assert_eq!(trim("xyaxy", "yx", Ends::Trailing), "xya");
        assert_eq!(trim("abcba", "ab", Ends::Both), "c");
        assert_eq!(trim("\"ab\"", "\"", Ends::Both), "ab");
        assert_eq!(
            [
                strpos("abcb", "b"),
                strpos("abc", "z"),
                strpos("abc", ""),
                strpos("éb", "b")
            ],
            [2, 0, 1, 2]
        );
    }
}
