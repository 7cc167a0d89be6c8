//! The jsonb type's SQL side: PostgreSQL's JSON text input (its lexer's tokens and its
//! error details), numbers normalized as numeric prints them, and the operators and
//! functions on documents (`->`, `->>`, `#>`, `@>`, `?`, `||`, `-`, jsonb_typeof, …).
//! The document, its stored bytes, its order and its output are the engine's
//! (`walden::jsonb`).

mod input;
mod ops;

use std::sync::Arc;

use walden::jsonb::{Json, MAX_DEPTH};
use walden::Value;

use crate::error::{code, SqlError, SqlResult};

pub use input::{normalize_number, parse};
pub use ops::{apply, array_length, concat, contains, delete_index, delete_key, exists};

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
mod tests;
