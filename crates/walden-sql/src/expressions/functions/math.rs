//! The arithmetic functions: mod, abs, rounding, bitwise operators, random values.

use walden::{Numeric, Value};

use super::Func;
use crate::error::{SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::types::SqlType;
use crate::value::{self, as_i64, ArithOp};

/// The arithmetic functions (strict: the caller has answered a NULL argument).
pub(super) fn call(f: Func, args: &[Value], cx: &mut EvalCtx) -> SqlResult<Option<Value>> {
    let int = |i: usize| as_i64(&args[i]).unwrap_or(0);
    Ok(Some(match f {
        Func::Mod => {
            let ty = SqlType::wider(value::type_of(&args[0]), value::type_of(&args[1]));
            value::arith(ArithOp::Mod, &args[0], &args[1], ty)?
        }
        Func::Round | Func::Trunc | Func::Ceil | Func::Floor | Func::Sign => rounding(f, args)?,
        Func::Abs => match &args[0] {
            Value::Float8(x) => Value::Float8(x.abs()),
            Value::Numeric(n) => Value::Numeric(n.abs()),
            v => {
                let x = as_i64(v).unwrap_or(0);
                let ty = value::type_of(v);
                value::int_value(
                    x.checked_abs().ok_or(SqlError::out_of_range(ty.name()))?,
                    ty,
                )?
            }
        },
        Func::BitAnd | Func::BitOr | Func::BitXor => {
            let (a, b) = (int(0), int(1));
            let x = match f {
                Func::BitAnd => a & b,
                Func::BitOr => a | b,
                _ => a ^ b,
            };
            let ty = SqlType::wider(value::type_of(&args[0]), value::type_of(&args[1]));
            value::int_value(x, ty)?
        }
        Func::Random => Value::Float8((cx.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64),
        Func::GenRandomUuid => {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&cx.rng.next_u64().to_le_bytes());
            b[8..].copy_from_slice(&cx.rng.next_u64().to_le_bytes());
            b[6] = (b[6] & 0x0f) | 0x40; // version 4
            b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
            Value::Uuid(b)
        }
        _ => return Ok(None),
    }))
}

/// round, trunc, ceil, floor and sign: exact on a numeric (or an integer given a number
/// of digits), on a float8 otherwise.
fn rounding(f: Func, args: &[Value]) -> SqlResult<Value> {
    if let (Value::Numeric(_), _) | (_, 2) = (&args[0], args.len()) {
        let n = value::as_numeric(&args[0]).unwrap_or(Numeric::ZERO);
        let digits = args
            .get(1)
            .and_then(as_i64)
            .unwrap_or(0)
            .clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        let r = match f {
            Func::Round => n.round(digits),
            Func::Trunc => n.trunc(digits),
            Func::Ceil => n.ceil(),
            Func::Floor => n.floor(),
            _ => Ok(Numeric::from_i64(n.signum() as i64)),
        };
        return r.map(Value::Numeric).map_err(value::numeric_error);
    }
    let x = value::as_f64(&args[0]).unwrap_or(0.0);
    Ok(Value::Float8(match f {
        Func::Round => x.round_ties_even(),
        Func::Trunc => x.trunc(),
        Func::Ceil => x.ceil(),
        Func::Floor => x.floor(),
        _ if x > 0.0 => 1.0,
        _ if x < 0.0 => -1.0,
        _ => x,
    }))
}
