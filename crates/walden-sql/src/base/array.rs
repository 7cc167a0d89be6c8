//! One-dimensional arrays, held as their text form (`{a,b,"c d",NULL}`, PostgreSQL's
//! `array_out`): what `ARRAY(subquery)` makes and what the catalog's array columns
//! (`pg_policy.polroles`, `pg_statistic_ext.stxkind`) hold. Walden has no array type:
//! these values are of type text, and only `x = ANY(array)`, `array_to_string`,
//! `array_upper`, `array_position`, subscripts and `_pg_expandarray` read them.
//!
//! An array's subscripts start at 1 unless its text says otherwise: `[0:1]={a,b}`, as
//! PostgreSQL writes an array with other bounds, and the vectors of the catalog
//! (`int2vector`, `oidvector`: `pg_index.indkey`), whose text is their integers
//! separated by spaces (`1 2`) and whose subscripts start at 0.

use walden::Value;

use crate::error::{SqlError, SqlResult};

/// The text form of an array of these values (NULL as `NULL`; an element quoted when
/// it is empty, is `NULL`, or holds a space, a comma, a quote, a backslash or a brace).
pub fn array_text(values: &[Value]) -> String {
    let items: Vec<String> = values
        .iter()
        .map(|v| match v {
            Value::Null => "NULL".to_string(),
            v => {
                let s = crate::value::display(v);
                let plain = !s.is_empty()
                    && !s.eq_ignore_ascii_case("null")
                    && !s
                        .chars()
                        .any(|c| c.is_whitespace() || "{},\"\\".contains(c));
                if plain {
                    s
                } else {
                    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
                }
            }
        })
        .collect();
    format!("{{{}}}", items.join(","))
}

fn malformed(text: &str) -> SqlError {
    SqlError::new(
        crate::error::code::INVALID_TEXT,
        format!("malformed array literal: \"{}\"", crate::error::clip(text)),
    )
}

/// An array's elements and the subscript of the first.
#[derive(Debug, Clone, PartialEq)]
pub struct Bounded {
    pub lower: i64,
    pub items: Vec<Option<String>>,
}

impl Bounded {
    /// The element at subscript `i` (None when NULL or out of bounds).
    pub fn get(&self, i: i64) -> Option<&str> {
        let at = usize::try_from(i.checked_sub(self.lower)?).ok()?;
        self.items.get(at)?.as_deref()
    }

    /// The last subscript; None for an empty array.
    pub fn upper(&self) -> Option<i64> {
        (!self.items.is_empty()).then(|| self.lower + self.items.len() as i64 - 1)
    }
}

/// An array's text form: `{…}`, `[lower:upper]={…}`, or a vector's integers.
pub fn parse(text: &str) -> SqlResult<Bounded> {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix('[') {
        let (bounds, body) = rest.split_once("]=").ok_or_else(|| malformed(text))?;
        let (lo, hi) = bounds.split_once(':').ok_or_else(|| malformed(text))?;
        // Bounds are int4, as PostgreSQL's (so an upper bound or a position is one too).
        let (lower, upper): (i64, i64) = match (lo.trim().parse::<i32>(), hi.trim().parse::<i32>())
        {
            (Ok(l), Ok(u)) => (l.into(), u.into()),
            _ => return Err(malformed(text)),
        };
        let items = braced(body, text)?;
        if upper.checked_sub(lower).and_then(|d| d.checked_add(1)) != Some(items.len() as i64) {
            return Err(malformed(text));
        }
        return Ok(Bounded { lower, items });
    }
    if !t.starts_with('{') {
        let items = t
            .split_whitespace()
            .map(|w| match w.parse::<i64>() {
                Ok(_) => Ok(Some(w.to_string())),
                Err(_) => Err(malformed(text)),
            })
            .collect::<SqlResult<_>>()?;
        return Ok(Bounded { lower: 0, items });
    }
    Ok(Bounded {
        lower: 1,
        items: braced(t, text)?,
    })
}

/// The elements of an array's text form (None for NULL elements), whatever its bounds.
pub fn elements(text: &str) -> SqlResult<Vec<Option<String>>> {
    Ok(parse(text)?.items)
}

/// The elements of `{…}` (None for NULL elements); `text` is the whole, for errors.
fn braced(body: &str, text: &str) -> SqlResult<Vec<Option<String>>> {
    let inner = body
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(|| malformed(text))?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => item.push(chars.next().ok_or_else(|| malformed(text))?),
                    Some(c) => item.push(c),
                    None => return Err(malformed(text)),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if "{}\"".contains(c) {
                    return Err(malformed(text));
                }
                item.push(c);
                chars.next();
            }
            item = item.trim_end().to_string();
        }
        out.push((quoted || !item.eq_ignore_ascii_case("null")).then_some(item));
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            Some(',') => continue,
            None => return Ok(out),
            Some(_) => return Err(malformed(text)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips() {
        let values = [
            Value::Text("a".into()),
            Value::Null,
            Value::Text("b c".into()),
            Value::Text("".into()),
            Value::Text("q\"\\".into()),
            Value::Int8(10),
        ];
        let text = array_text(&values);
        assert_eq!(text, r#"{a,NULL,"b c","","q\"\\",10}"#);
        assert_eq!(
            elements(&text).unwrap(),
            vec![
                Some("a".to_string()),
                None,
                Some("b c".into()),
                Some("".into()),
                Some("q\"\\".into()),
                Some("10".into())
            ]
        );
        assert_eq!(elements("{}").unwrap(), Vec::<Option<String>>::new());
        assert_eq!(elements("{0}").unwrap(), vec![Some("0".to_string())]);
        assert!(elements("a").is_err());
        assert!(elements("{a,{b}}").is_err());
    }

    /// Bounds past int4 are refused, as PostgreSQL refuses them (an upper bound computed
    /// from them overflowed, or came back truncated).
    #[test]
    fn bounds_are_int4() {
        assert!(parse("[9223372036854775807:9223372036854775807]={a}").is_err());
        assert!(parse("[3000000000:3000000000]={a}").is_err());
        let b = parse("[2147483647:2147483647]={a}").unwrap();
        assert_eq!(b.upper(), Some(2147483647));
    }

    #[test]
    fn bounds_come_from_the_text() {
        let b = parse("{a,b}").unwrap();
        assert_eq!(
            (b.lower, b.get(1), b.get(2), b.get(3), b.upper()),
            (1, Some("a"), Some("b"), None, Some(2))
        );
        // A vector (int2vector, oidvector) starts at 0.
        let v = parse("1 3").unwrap();
        assert_eq!(
            (v.lower, v.get(0), v.get(1), v.get(2), v.upper()),
            (0, Some("1"), Some("3"), None, Some(1))
        );
        assert_eq!(parse("").unwrap().upper(), None);
        let e = parse("[0:1]={x,y}").unwrap();
        assert_eq!(
            (e.get(0), e.get(1), e.get(i64::MIN)),
            (Some("x"), Some("y"), None)
        );
        assert!(parse("[0:2]={x,y}").is_err());
        assert!(parse("1 x").is_err());
    }
}
