//! One-dimensional arrays, held as their text form (`{a,b,"c d",NULL}`, PostgreSQL's
//! `array_out`): what `ARRAY(subquery)` makes and what the catalog's array columns
//! (`pg_policy.polroles`, `pg_statistic_ext.stxkind`) hold. Walden has no array type:
//! these values are of type text, and only `x = ANY(array)`, `array_to_string`,
//! `array_upper` and `array_position` read them.

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

/// The elements of an array's text form (None for NULL elements).
pub fn elements(text: &str) -> SqlResult<Vec<Option<String>>> {
    let inner = text
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
        assert!(elements("0").is_err());
        assert!(elements("{a,{b}}").is_err());
    }
}
