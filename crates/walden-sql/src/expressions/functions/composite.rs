//! The functions of composite values: jsonb, arrays (held as text) and records.

use walden::Value;

use super::text::text_arg;
use super::Func;
use crate::error::SqlResult;
use crate::value::as_i64;

/// The jsonb, array and record functions (strict: the caller has answered a NULL
/// argument).
pub(super) fn call(f: Func, args: &[Value]) -> SqlResult<Option<Value>> {
    let int = |i: usize| as_i64(&args[i]).unwrap_or(0);
    Ok(Some(match f {
        Func::Json(op) => crate::jsonb::apply(op, &args[0], &args[1])?,
        Func::JsonbTypeof => match crate::jsonb::doc(&args[0]) {
            Some(j) => Value::Text(j.type_name().into()),
            None => Value::Null,
        },
        Func::JsonbArrayLength => match crate::jsonb::doc(&args[0]) {
            Some(j) => crate::jsonb::array_length(j)?,
            None => Value::Null,
        },
        Func::ToJsonb => crate::jsonb::value(crate::jsonb::from_value(&args[0])?),
        Func::Field(shape, i) => crate::record::field(text_arg(&args[0]), shape, i)?,
        Func::EqAnyArray => {
            let items = crate::array::elements(text_arg(&args[1]))?;
            let x = text_arg(&args[0]);
            if items.iter().any(|i| i.as_deref() == Some(x)) {
                Value::Bool(true)
            } else if items.iter().any(Option::is_none) {
                Value::Null
            } else {
                Value::Bool(false)
            }
        }
        Func::ArrayToString => {
            let items = crate::array::elements(text_arg(&args[0]))?;
            let kept: Vec<String> = items.into_iter().flatten().collect();
            Value::Text(kept.join(text_arg(&args[1])))
        }
        Func::ArrayElement => {
            let array = crate::array::parse(text_arg(&args[0]))?;
            match array.get(int(1)) {
                Some(item) => Value::Text(item.to_string()),
                None => Value::Null,
            }
        }
        Func::ArrayPosition => {
            let array = crate::array::parse(text_arg(&args[0]))?;
            let wanted = text_arg(&args[1]);
            match array
                .items
                .iter()
                .position(|i| i.as_deref() == Some(wanted))
            {
                Some(i) => Value::Int4((array.lower + i as i64) as i32),
                None => Value::Null,
            }
        }
        Func::ArrayUpper => {
            let array = crate::array::parse(text_arg(&args[0]))?;
            match array.upper() {
                Some(upper) if int(1) == 1 => Value::Int4(upper as i32),
                _ => Value::Null,
            }
        }
        _ => return Ok(None),
    }))
}
