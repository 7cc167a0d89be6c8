//! Composite values — PostgreSQL's anonymous `record`s, such as a row of a
//! set-returning function with several columns (`_pg_expandarray`'s `(x, n)`) — held as
//! their text form (`(1,"a b",)`, PostgreSQL's `record_out`), typed by their shape
//! ([`RecordShape`]: the fields' names and types), which is how `(r).field` finds a
//! field by name.

use walden::Value;

use crate::error::{code, SqlError, SqlResult};
use crate::types::SqlType;

/// The composite types Walden makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordShape {
    /// A row of `information_schema._pg_expandarray(array)`: `x`, an element, and `n`,
    /// its 1-based place.
    ExpandArray,
}

impl RecordShape {
    /// The fields' names and types. An array's element is text (arrays are held as
    /// text) and takes the type of what it is compared with, as `array[i]` does.
    pub fn fields(self) -> &'static [(&'static str, SqlType)] {
        match self {
            RecordShape::ExpandArray => &[("x", SqlType::Text), ("n", SqlType::Int4)],
        }
    }

    /// Whether field `i` is an array's element (see [`RecordShape::fields`]).
    pub fn is_element(self, i: usize) -> bool {
        matches!((self, i), (RecordShape::ExpandArray, 0))
    }

    /// The field named `name` (as written, folded to lower case unless quoted).
    pub fn field(self, name: &str) -> Option<usize> {
        self.fields().iter().position(|(n, _)| *n == name)
    }
}

/// The text form of a record of these values: a field is quoted when it is empty or
/// holds a quote, a backslash, a parenthesis, a comma or white space; NULL is nothing.
pub fn record_text(values: &[Value]) -> String {
    let fields: Vec<String> = values
        .iter()
        .map(|v| match v {
            Value::Null => String::new(),
            v => {
                let s = crate::value::display(v);
                let quote = s.is_empty()
                    || s.chars()
                        .any(|c| c.is_whitespace() || "\"\\(),".contains(c));
                if quote {
                    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\"\""))
                } else {
                    s
                }
            }
        })
        .collect();
    format!("({})", fields.join(","))
}

fn malformed(text: &str) -> SqlError {
    SqlError::new(
        code::INVALID_TEXT,
        format!("malformed record literal: \"{}\"", crate::error::clip(text)),
    )
}

/// The fields of a record's text form (None for NULL), as PostgreSQL's `record_in`
/// reads them.
pub fn fields(text: &str) -> SqlResult<Vec<Option<String>>> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| malformed(text))?;
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        let mut field = String::new();
        let mut quoted = false;
        while let Some(&c) = chars.peek() {
            match c {
                ',' => break,
                '"' => {
                    quoted = true;
                    chars.next();
                    loop {
                        match chars.next() {
                            Some('"') if chars.peek() == Some(&'"') => {
                                chars.next();
                                field.push('"');
                            }
                            Some('"') => break,
                            Some('\\') => field.push(chars.next().ok_or_else(|| malformed(text))?),
                            Some(c) => field.push(c),
                            None => return Err(malformed(text)),
                        }
                    }
                }
                '\\' => {
                    chars.next();
                    field.push(chars.next().ok_or_else(|| malformed(text))?);
                }
                c => {
                    field.push(c);
                    chars.next();
                }
            }
        }
        out.push((quoted || !field.is_empty()).then_some(field));
        if chars.next().is_none() {
            return Ok(out);
        }
    }
}

/// Field `i` of a record's text form, of the field's type.
pub fn field(text: &str, shape: RecordShape, i: usize) -> SqlResult<Value> {
    let all = fields(text)?;
    let (_, ty) = shape.fields()[i];
    match all.get(i) {
        Some(Some(f)) => crate::value::parse_text(f, ty),
        _ => Ok(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips_as_postgres_writes_it() {
        let values = [
            Value::Int4(1),
            Value::Text("a b".into()),
            Value::Null,
            Value::Text(String::new()),
            Value::Text("q\"(,)\\".into()),
        ];
        let text = record_text(&values);
        // PostgreSQL 15: select row(1, 'a b', null, '', 'q"(,)\');
        assert_eq!(text, r#"(1,"a b",,"","q""(,)\\")"#);
        assert_eq!(
            fields(&text).unwrap(),
            vec![
                Some("1".to_string()),
                Some("a b".into()),
                None,
                Some(String::new()),
                Some("q\"(,)\\".into())
            ]
        );
        assert_eq!(fields("()").unwrap(), vec![None]);
        assert!(fields("1,2").is_err());
        assert!(fields("(\"a)").is_err());
        assert_eq!(
            field("(3,2)", RecordShape::ExpandArray, 1).unwrap(),
            Value::Int4(2)
        );
        assert_eq!(
            field("(3,2)", RecordShape::ExpandArray, 0).unwrap(),
            Value::Text("3".into())
        );
    }
}
