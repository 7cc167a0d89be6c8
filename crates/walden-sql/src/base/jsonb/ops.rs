//! The jsonb operators (`->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`, `?|`, `?&`, `||`, `-`)
//! and jsonb_array_length.

use walden::jsonb::{self, Json};
use walden::Value;

use super::{as_text, doc, value, JsonOp};
use crate::error::{code, SqlError, SqlResult};

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
