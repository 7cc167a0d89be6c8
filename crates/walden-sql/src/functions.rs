//! Scalar functions: their names, argument checks, result types, and PostgreSQL's
//! behaviour for each.

use walden::{Numeric, Value};

use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::types::SqlType;
use crate::value::{self, as_i64, ArithOp};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Mod,
    Abs,
    /// round(x) and round(numeric, digits): a numeric's halves away from zero, a
    /// float8's to even (PostgreSQL's rint).
    Round,
    /// trunc(x) and trunc(numeric, digits).
    Trunc,
    Ceil,
    Floor,
    Sign,
    Lpad,
    Rpad,
    Repeat,
    Substr,
    Length,
    Upper,
    Lower,
    /// The text functions of `crate::strings`.
    Replace,
    Translate,
    SplitPart,
    Left,
    Right,
    Reverse,
    /// btrim, ltrim, rtrim (and SQL's TRIM): of spaces, or of the characters given.
    Trim(crate::strings::Ends),
    /// strpos(s, sub), and SQL's POSITION(sub IN s).
    Strpos,
    Md5,
    Random,
    GenRandomUuid,
    /// `text LIKE pattern [ESCAPE e]`: arguments text, pattern, escape.
    Like,
    /// ILIKE: LIKE ignoring case.
    ILike,
    /// `text ~ pattern` (`crate::regex`); `!~` is its negation.
    RegexMatch,
    /// `text ~* pattern`: `~` ignoring case.
    RegexIMatch,
    /// `x = ANY(array)` over an array's text form (`crate::array`): x as text.
    EqAnyArray,
    ArrayToString,
    ArrayUpper,
    /// array_position(array, element): the first element's 1-based place, compared as
    /// text (arrays are held as text), NULL when absent.
    ArrayPosition,
    /// `array[i]`: the element (1-based) as text; the binder gives it the type of what
    /// it is compared with, as an untyped literal gets.
    ArrayElement,
    /// now(), current_timestamp: the transaction's start as a timestamptz.
    Now,
    CurrentDate,
    /// localtimestamp: the transaction's start as a timestamp (the session is in UTC).
    LocalTimestamp,
    /// date_part(unit, x): a float8.
    DatePart,
    /// extract(unit from x): as date_part (PostgreSQL's gives a numeric, held here as a
    /// float8).
    Extract,
    DateTrunc,
    /// `bytea || bytea`.
    ByteaConcat,
    OctetLength,
    Encode,
    Decode,
    Age,
    JustifyHours,
    JustifyDays,
    JustifyInterval,
    ToTimestamp,
    MakeDate,
    /// to_char(timestamp or timestamptz, format).
    ToChar,
    /// A jsonb operator (`->`, `@>`, `?`, …): a jsonb and its right operand.
    Json(crate::jsonb::JsonOp),
    JsonbTypeof,
    JsonbArrayLength,
    /// jsonb_build_object(k, v, …): not strict (a NULL value is a JSON null).
    JsonbBuildObject,
    /// jsonb_build_array(v, …): not strict.
    JsonbBuildArray,
    ToJsonb,
    /// version(): the PostgreSQL version spoken, and Walden's.
    Version,
    /// nullif(a, b): NULL where a = b, else a (bound by `bind::nullif`).
    NullIf,
    /// A record of its arguments (a row of a set-returning function of several
    /// columns); not strict: a NULL is a NULL field.
    Row(crate::record::RecordShape),
    /// `(record).field`: the field at this place.
    Field(crate::record::RecordShape, usize),
    /// Integer `&`, `|` and `#` (PostgreSQL's bitwise and, or, xor).
    BitAnd,
    BitOr,
    BitXor,
    /// current_setting(name [, missing_ok]): a setting's value as SHOW gives it.
    CurrentSetting,
    /// set_config(name, value, is_local): SET (SET LOCAL when is_local) from a
    /// query; the new value. Not strict: a NULL value is RESET, a NULL is_local false.
    SetConfig,
    /// nextval(regclass): the sequence's next value, from the session's cache or the
    /// shared counter (`crate::sequences`); a `regclass` is an OID, or the name as text.
    Nextval,
    /// currval(regclass): what nextval gave this session last (55000 before).
    Currval,
    /// lastval(): what nextval gave this session last, of any sequence.
    Lastval,
    /// setval(regclass, bigint [, is_called]).
    Setval,
    /// current_user, current_role, user: the role statements run as (SET ROLE's, else
    /// the session user).
    CurrentUser,
    /// session_user: the role the session logged in as (or SET SESSION AUTHORIZATION
    /// made it).
    SessionUser,
}

/// Texts longer than this are refused: PostgreSQL's 1 GB (2^30 - 1 bytes), which is
/// what a stored value may hold (the engine keeps long values out of line).
const MAX_TEXT_BYTES: i64 = walden::schema::MAX_VALUE_BYTES as i64;

impl Func {
    pub fn lookup(name: &str) -> Option<Func> {
        Some(match name {
            "mod" => Func::Mod,
            "abs" => Func::Abs,
            "round" => Func::Round,
            "trunc" => Func::Trunc,
            "ceil" | "ceiling" => Func::Ceil,
            "floor" => Func::Floor,
            "sign" => Func::Sign,
            "lpad" => Func::Lpad,
            "rpad" => Func::Rpad,
            "repeat" => Func::Repeat,
            "substr" | "substring" => Func::Substr,
            "length" | "char_length" | "character_length" => Func::Length,
            "upper" => Func::Upper,
            "lower" => Func::Lower,
            "replace" => Func::Replace,
            "translate" => Func::Translate,
            "split_part" => Func::SplitPart,
            "left" => Func::Left,
            "right" => Func::Right,
            "reverse" => Func::Reverse,
            "btrim" => Func::Trim(crate::strings::Ends::Both),
            "ltrim" => Func::Trim(crate::strings::Ends::Leading),
            "rtrim" => Func::Trim(crate::strings::Ends::Trailing),
            "strpos" => Func::Strpos,
            "md5" => Func::Md5,
            "random" => Func::Random,
            "gen_random_uuid" => Func::GenRandomUuid,
            "array_to_string" => Func::ArrayToString,
            "array_upper" => Func::ArrayUpper,
            "array_position" => Func::ArrayPosition,
            "now" | "current_timestamp" | "transaction_timestamp" => Func::Now,
            "current_date" => Func::CurrentDate,
            "localtimestamp" => Func::LocalTimestamp,
            "date_part" => Func::DatePart,
            "date_trunc" => Func::DateTrunc,
            "octet_length" => Func::OctetLength,
            "encode" => Func::Encode,
            "decode" => Func::Decode,
            "age" => Func::Age,
            "justify_hours" => Func::JustifyHours,
            "justify_days" => Func::JustifyDays,
            "justify_interval" => Func::JustifyInterval,
            "to_timestamp" => Func::ToTimestamp,
            "make_date" => Func::MakeDate,
            "to_char" => Func::ToChar,
            "jsonb_typeof" | "json_typeof" => Func::JsonbTypeof,
            "jsonb_array_length" | "json_array_length" => Func::JsonbArrayLength,
            "jsonb_build_object" | "json_build_object" => Func::JsonbBuildObject,
            "jsonb_build_array" | "json_build_array" => Func::JsonbBuildArray,
            "to_jsonb" | "to_json" => Func::ToJsonb,
            "version" => Func::Version,
            "current_setting" => Func::CurrentSetting,
            "set_config" => Func::SetConfig,
            "nextval" => Func::Nextval,
            "currval" => Func::Currval,
            "lastval" => Func::Lastval,
            "setval" => Func::Setval,
            "current_user" | "current_role" | "user" => Func::CurrentUser,
            "session_user" => Func::SessionUser,
            _ => return None,
        })
    }

    /// Random functions give a new value per row: never folded into a constant. Nor is
    /// the time, which is the transaction's (a cached plan outlives it), nor a
    /// setting, which is the session's when the statement runs.
    pub fn is_volatile(self) -> bool {
        matches!(
            self,
            Func::Random
                | Func::GenRandomUuid
                | Func::Now
                | Func::CurrentDate
                | Func::LocalTimestamp
                | Func::CurrentSetting
                | Func::SetConfig
                | Func::Nextval
                | Func::Currval
                | Func::Lastval
                | Func::Setval
                | Func::CurrentUser
                | Func::SessionUser
        )
    }

    /// Checks the argument types and gives the result type, or PostgreSQL's "function
    /// does not exist" error.
    pub fn result_type(self, name: &str, args: &[SqlType]) -> SqlResult<SqlType> {
        use SqlType as T;
        // A bpchar reaches only LIKE and `~` (other functions take it as text).
        let text = |t: T| matches!(t, T::Text | T::Bpchar | T::Null);
        let int = |t: T| t.is_integer() || t == T::Null;
        let exact = |t: T| int(t) || t == T::Numeric;
        let ok = match (self, args) {
            (Func::Mod, [a, b]) => exact(*a) && exact(*b),
            (Func::Round | Func::Trunc | Func::Ceil | Func::Floor | Func::Sign, [a]) => {
                a.is_numeric() || *a == T::Null
            }
            // Only the numeric forms take a number of digits (round(float8, int) does
            // not exist in PostgreSQL).
            (Func::Round | Func::Trunc, [a, d]) => exact(*a) && int(*d),
            (Func::Abs, [a]) => a.is_numeric() || *a == T::Null,
            (Func::Lpad | Func::Rpad, [s, n]) => text(*s) && int(*n),
            (Func::Lpad | Func::Rpad, [s, n, f]) => text(*s) && int(*n) && text(*f),
            (Func::Repeat, [s, n]) => text(*s) && int(*n),
            (Func::Substr, [s, from]) => text(*s) && int(*from),
            (Func::Substr, [s, from, len]) => text(*s) && int(*from) && int(*len),
            (Func::Length | Func::OctetLength, [s]) => text(*s) || *s == T::Bytea,
            (Func::Upper | Func::Lower | Func::Reverse, [s]) => text(*s),
            (Func::Replace | Func::Translate, [s, a, b]) => text(*s) && text(*a) && text(*b),
            (Func::SplitPart, [s, d, n]) => text(*s) && text(*d) && int(*n),
            (Func::Left | Func::Right, [s, n]) => text(*s) && int(*n),
            (Func::Trim(_), [s]) => text(*s),
            (Func::Trim(_) | Func::Strpos, [s, c]) => text(*s) && text(*c),
            (Func::Md5, [s]) => text(*s) || *s == T::Bytea,
            (Func::Random | Func::GenRandomUuid, []) => true,
            (Func::Now | Func::CurrentDate | Func::LocalTimestamp | Func::Version, []) => true,
            (Func::DatePart | Func::Extract | Func::DateTrunc, [u, x]) => {
                text(*u) && (x.is_datetime() || matches!(x, T::Interval | T::Null))
            }
            (Func::ByteaConcat, [a, b]) => {
                matches!(a, T::Bytea | T::Null) && matches!(b, T::Bytea | T::Null)
            }
            (Func::Encode, [b, f]) => matches!(b, T::Bytea | T::Null) && text(*f),
            (Func::Decode, [s, f]) => text(*s) && text(*f),
            (Func::Age, [a, b]) => {
                let ts = |t: T| matches!(t, T::Timestamp | T::Timestamptz | T::Null);
                ts(*a) && ts(*b) && (a == b || *a == T::Null || *b == T::Null)
            }
            (Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval, [x]) => {
                matches!(x, T::Interval | T::Null)
            }
            (Func::ToTimestamp, [x]) => x.is_numeric() || *x == T::Null,
            (Func::MakeDate, [y, m, d]) => int(*y) && int(*m) && int(*d),
            (Func::ToChar, [x, f]) => x.is_datetime() && text(*f),
            (Func::Like | Func::ILike, [a, p, e]) => text(*a) && text(*p) && text(*e),
            (Func::RegexMatch | Func::RegexIMatch | Func::EqAnyArray, [a, p]) => {
                text(*a) && text(*p)
            }
            (Func::ArrayToString, [a, s]) => text(*a) && text(*s),
            (Func::ArrayPosition, [a, x]) => text(*a) && text(*x),
            (Func::ArrayUpper | Func::ArrayElement, [a, d]) => text(*a) && int(*d),
            (Func::JsonbTypeof | Func::JsonbArrayLength, [j]) => {
                matches!(j, T::Jsonb | T::Null)
            }
            (Func::JsonbBuildObject | Func::JsonbBuildArray, _) => true,
            (Func::ToJsonb, [_]) => true,
            (Func::Row(_), _) => true,
            (Func::Field(shape, _), [r]) => matches!(r, T::Record(s) if *s == shape),
            (Func::BitAnd | Func::BitOr | Func::BitXor, [a, b]) => {
                (a.is_integer() || *a == T::Null) && (b.is_integer() || *b == T::Null)
            }
            (Func::CurrentSetting, [n]) => text(*n),
            (Func::CurrentSetting, [n, m]) => text(*n) && matches!(m, T::Bool | T::Null),
            (Func::SetConfig, [n, v, l]) => text(*n) && text(*v) && matches!(l, T::Bool | T::Null),
            // A regclass is an OID (an integer here) or a name as text.
            (Func::Nextval | Func::Currval, [r]) => text(*r) || int(*r),
            (Func::Lastval | Func::CurrentUser | Func::SessionUser, []) => true,
            (Func::Setval, [r, v]) => (text(*r) || int(*r)) && int(*v),
            (Func::Setval, [r, v, c]) => {
                (text(*r) || int(*r)) && int(*v) && matches!(c, T::Bool | T::Null)
            }
            _ => false,
        };
        if !ok {
            let list: Vec<&str> = args.iter().map(|t| t.name()).collect();
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", list.join(", ")),
            )
            .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."));
        }
        Ok(match self {
            Func::Mod | Func::Abs => {
                let t = args.iter().copied().fold(T::Null, T::wider);
                if t == T::Null {
                    T::Int4
                } else {
                    t
                }
            }
            // With one argument, an integer goes to float8 (PostgreSQL's preferred
            // numeric type), as round(5) does there.
            Func::Round | Func::Trunc if args.len() == 2 => T::Numeric,
            Func::Round | Func::Trunc | Func::Ceil | Func::Floor | Func::Sign => {
                if args[0] == T::Numeric {
                    T::Numeric
                } else {
                    T::Float8
                }
            }
            Func::Length | Func::OctetLength | Func::Strpos => T::Int4,
            Func::Nextval | Func::Currval | Func::Lastval | Func::Setval => T::Int8,
            Func::Row(shape) => T::Record(shape),
            Func::Field(shape, i) => shape.fields()[i].1,
            Func::BitAnd | Func::BitOr | Func::BitXor => match T::wider(args[0], args[1]) {
                T::Null => T::Int4,
                t => t,
            },
            Func::Random | Func::DatePart | Func::Extract => T::Float8,
            Func::Now => T::Timestamptz,
            Func::Version => T::Text,
            Func::CurrentDate => T::Date,
            Func::LocalTimestamp => T::Timestamp,
            // A date is truncated as the timestamptz it converts to, as in PostgreSQL.
            Func::DateTrunc => match args[1] {
                T::Date | T::Null => T::Timestamptz,
                t => t,
            },
            Func::ByteaConcat | Func::Decode => T::Bytea,
            Func::Age | Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval => {
                T::Interval
            }
            Func::ToTimestamp => T::Timestamptz,
            Func::MakeDate => T::Date,
            Func::GenRandomUuid => T::Uuid,
            Func::Like | Func::ILike | Func::RegexMatch | Func::RegexIMatch | Func::EqAnyArray => {
                T::Bool
            }
            Func::ArrayUpper | Func::ArrayPosition | Func::JsonbArrayLength => T::Int4,
            Func::JsonbBuildObject | Func::JsonbBuildArray | Func::ToJsonb => T::Jsonb,
            _ => T::Text,
        })
    }
}

/// The session's settings, which a statement of a session always has.
fn settings<'a>(
    cx: &EvalCtx<'a>,
    function: &str,
) -> SqlResult<&'a crate::settings::StatementSettings> {
    cx.settings.ok_or_else(|| {
        SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("{function} is not supported here (it reads the session's settings)"),
        )
    })
}

/// The session's sequences, which a statement of a session always has.
fn sequences<'a>(
    cx: &EvalCtx<'a>,
    function: &str,
) -> SqlResult<&'a crate::sequences::StatementSequences> {
    cx.sequences.ok_or_else(|| {
        SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!("{function} is not supported here (it changes the session's sequences)"),
        )
    })
}

fn set_config(args: &[Value], cx: &EvalCtx) -> SqlResult<Value> {
    let Value::Text(name) = &args[0] else {
        return Err(SqlError::new(
            code::NULL_VALUE_NOT_ALLOWED,
            "SET requires parameter name",
        ));
    };
    let value = match &args[1] {
        Value::Text(v) => Some(v.as_str()),
        _ => None,
    };
    let local = matches!(args[2], Value::Bool(true));
    let set = settings(cx, "set_config")?.set_config(name, value, local)?;
    Ok(Value::Text(set))
}

fn text_arg(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

fn checked_len(n: i64) -> SqlResult<usize> {
    if n > MAX_TEXT_BYTES {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT,
            format!("requested length too large: {n}"),
        ));
    }
    Ok(n.max(0) as usize)
}

/// PostgreSQL's lpad/rpad: truncate to `len` characters, or fill with `fill` repeated.
fn pad(s: &str, len: i64, fill: &str, left: bool) -> SqlResult<Value> {
    let len = checked_len(len)?;
    let chars = s.chars().count();
    if chars >= len {
        return Ok(Value::Text(s.chars().take(len).collect()));
    }
    if fill.is_empty() {
        return Ok(Value::Text(s.to_string()));
    }
    let filler: String = fill.chars().cycle().take(len - chars).collect();
    Ok(Value::Text(if left {
        filler + s
    } else {
        let mut out = s.to_string();
        out.push_str(&filler);
        out
    }))
}

/// PostgreSQL's substr: 1-based start, which may be before the string.
fn substr(s: &str, from: i64, len: Option<i64>) -> SqlResult<Value> {
    let end = match len {
        Some(l) if l < 0 => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                "negative substring length not allowed",
            ))
        }
        Some(l) => Some(from.saturating_add(l)),
        None => None,
    };
    let start = from.max(1);
    let take = match end {
        Some(e) if e <= start => 0,
        Some(e) => (e - start) as usize,
        None => usize::MAX,
    };
    Ok(Value::Text(
        s.chars().skip((start - 1) as usize).take(take).collect(),
    ))
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

pub fn call(f: Func, args: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
    // Every function here but the jsonb builders and set_config is strict: a NULL
    // argument gives NULL.
    match f {
        Func::SetConfig => return set_config(args, cx),
        Func::Row(_) => return Ok(Value::Text(crate::record::record_text(args))),
        Func::NullIf => {
            let equal = value::compare(&args[0], &args[1]) == Some(std::cmp::Ordering::Equal);
            return Ok(if equal { Value::Null } else { args[0].clone() });
        }
        Func::JsonbBuildObject => return crate::jsonb::build_object(args),
        Func::JsonbBuildArray => {
            let items = args
                .iter()
                .map(crate::jsonb::from_value)
                .collect::<SqlResult<Vec<_>>>()?;
            return Ok(crate::jsonb::value(walden::Json::Array(items)));
        }
        _ => {}
    }
    if args.iter().any(|a| matches!(a, Value::Null)) {
        return Ok(Value::Null);
    }
    let int = |i: usize| as_i64(&args[i]).unwrap_or(0);
    Ok(match f {
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
        Func::Lpad | Func::Rpad => {
            let fill = args.get(2).map_or(" ", text_arg);
            let widest = fill.chars().map(char::len_utf8).max().unwrap_or(1);
            cx.room_for(checked_len(int(1))?.saturating_mul(widest))?;
            pad(text_arg(&args[0]), int(1), fill, f == Func::Lpad)?
        }
        Func::Repeat => {
            let s = text_arg(&args[0]);
            let n = int(1).max(0);
            cx.room_for(checked_len((s.len() as i64).saturating_mul(n))?)?;
            Value::Text(s.repeat(n as usize))
        }
        Func::Substr => substr(text_arg(&args[0]), int(1), args.get(2).and_then(as_i64))?,
        Func::Length | Func::OctetLength => match &args[0] {
            Value::Bytea(b) => Value::Int4(b.len() as i32),
            v if f == Func::OctetLength => Value::Int4(text_arg(v).len() as i32),
            v => Value::Int4(text_arg(v).chars().count() as i32),
        },
        Func::Now => Value::Timestamptz(cx.now_micros),
        Func::Nextval => Value::Int8(sequences(cx, "nextval")?.nextval(&args[0])?),
        Func::Currval => Value::Int8(sequences(cx, "currval")?.currval(&args[0])?),
        Func::Lastval => Value::Int8(sequences(cx, "lastval")?.lastval()?),
        Func::CurrentUser => Value::Text(current_user(cx)?),
        Func::SessionUser => match cx.settings {
            Some(s) => Value::Text(
                s.current("session_authorization", false)?
                    .unwrap_or_default(),
            ),
            None => Value::Text(crate::catalog::BOOTSTRAP.to_string()),
        },
        Func::Setval => {
            let called = !matches!(args.get(2), Some(Value::Bool(false)));
            Value::Int8(sequences(cx, "setval")?.setval(&args[0], int(1), called)?)
        }
        Func::Version => Value::Text(crate::settings::version()),
        Func::CurrentSetting => {
            let missing_ok = matches!(args.get(1), Some(Value::Bool(true)));
            match settings(cx, "current_setting")?.current(text_arg(&args[0]), missing_ok)? {
                Some(v) => Value::Text(v),
                None => Value::Null,
            }
        }
        Func::LocalTimestamp => Value::Timestamp(cx.now_micros),
        Func::CurrentDate => Value::Date(crate::datetime::timestamp_to_date(cx.now_micros)),
        Func::DatePart | Func::Extract => {
            date_part(text_arg(&args[0]), &args[1], f == Func::Extract)?
        }
        Func::DateTrunc => date_trunc(text_arg(&args[0]), &args[1])?,
        Func::ByteaConcat => match (&args[0], &args[1]) {
            (Value::Bytea(a), Value::Bytea(b)) => {
                cx.room_for(checked_len((a.len() + b.len()) as i64)?)?;
                Value::Bytea([a.as_slice(), b.as_slice()].concat())
            }
            _ => Value::Null,
        },
        Func::Encode => match &args[0] {
            Value::Bytea(b) => Value::Text(crate::bytea::encode(b, text_arg(&args[1]))?),
            _ => Value::Null,
        },
        Func::Age => match (&args[0], &args[1]) {
            (
                Value::Timestamp(a) | Value::Timestamptz(a),
                Value::Timestamp(b) | Value::Timestamptz(b),
            ) => Value::Interval(crate::datetime::age(*a, *b)?),
            _ => Value::Null,
        },
        Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval => match &args[0] {
            Value::Interval(iv) => Value::Interval(match f {
                Func::JustifyHours => crate::datetime::justify_hours(*iv)?,
                Func::JustifyDays => crate::datetime::justify_days(*iv)?,
                _ => crate::datetime::justify_interval(*iv)?,
            }),
            _ => Value::Null,
        },
        Func::ToTimestamp => Value::Timestamptz(crate::datetime::to_timestamp(
            value::as_f64(&args[0]).unwrap_or(0.0),
        )?),
        Func::MakeDate => Value::Date(crate::datetime::make_date(int(0), int(1), int(2))?),
        Func::ToChar => {
            let (t, zone) = match &args[0] {
                Value::Date(d) => (crate::datetime::date_to_timestamp(*d)?, false),
                Value::Timestamp(t) => (*t, false),
                Value::Timestamptz(t) => (*t, true),
                _ => return Ok(Value::Null),
            };
            crate::to_char::to_char(t, text_arg(&args[1]), zone).map_or(Value::Null, Value::Text)
        }
        Func::Decode => Value::Bytea(crate::bytea::decode(
            text_arg(&args[0]),
            text_arg(&args[1]),
        )?),
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
        // Not strict: answered before the NULL check above.
        Func::JsonbBuildObject
        | Func::JsonbBuildArray
        | Func::SetConfig
        | Func::NullIf
        | Func::Row(_) => Value::Null,
        Func::Field(shape, i) => crate::record::field(text_arg(&args[0]), shape, i)?,
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
        Func::Upper => Value::Text(text_arg(&args[0]).to_uppercase()),
        Func::Lower => Value::Text(text_arg(&args[0]).to_lowercase()),
        Func::Replace => Value::Text(crate::strings::replace(
            text_arg(&args[0]),
            text_arg(&args[1]),
            text_arg(&args[2]),
            MAX_TEXT_BYTES as usize,
        )?),
        Func::Translate => Value::Text(crate::strings::translate(
            text_arg(&args[0]),
            text_arg(&args[1]),
            text_arg(&args[2]),
        )),
        Func::SplitPart => Value::Text(crate::strings::split_part(
            text_arg(&args[0]),
            text_arg(&args[1]),
            int(2),
        )?),
        Func::Left => Value::Text(crate::strings::left(text_arg(&args[0]), int(1))),
        Func::Right => Value::Text(crate::strings::right(text_arg(&args[0]), int(1))),
        Func::Reverse => Value::Text(crate::strings::reverse(text_arg(&args[0]))),
        Func::Trim(ends) => {
            let chars = args.get(1).map_or(" ", text_arg);
            Value::Text(crate::strings::trim(text_arg(&args[0]), chars, ends))
        }
        Func::Strpos => Value::Int4(crate::strings::strpos(
            text_arg(&args[0]),
            text_arg(&args[1]),
        )),
        Func::Md5 => match &args[0] {
            Value::Bytea(b) => Value::Text(hex(&md5::compute(b).0)),
            v => Value::Text(hex(&md5::compute(text_arg(v)).0)),
        },
        Func::Random => Value::Float8((cx.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64),
        Func::Like | Func::ILike => {
            let (mut s, mut p) = (
                text_arg(&args[0]).to_string(),
                text_arg(&args[1]).to_string(),
            );
            if f == Func::ILike {
                s = s.to_lowercase();
                p = p.to_lowercase();
            }
            let escape = text_arg(&args[2]);
            let mut chars = escape.chars();
            let esc = match (chars.next(), chars.next()) {
                (None, _) => None,
                (Some(c), None) => Some(c),
                _ => {
                    return Err(SqlError::new("22025", "invalid escape string")
                        .with_hint("Escape string must be empty or one character."))
                }
            };
            Value::Bool(like(&s, &p, esc)?)
        }
        Func::RegexMatch => Value::Bool(crate::regex::matches(
            text_arg(&args[0]),
            text_arg(&args[1]),
        )?),
        Func::RegexIMatch => Value::Bool(crate::regex::matches(
            &text_arg(&args[0]).to_lowercase(),
            &text_arg(&args[1]).to_lowercase(),
        )?),
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
        Func::GenRandomUuid => {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&cx.rng.next_u64().to_le_bytes());
            b[8..].copy_from_slice(&cx.rng.next_u64().to_le_bytes());
            b[6] = (b[6] & 0x0f) | 0x40; // version 4
            b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
            Value::Uuid(b)
        }
    })
}

/// date_part / extract of a date (as its midnight), timestamp, timestamptz or interval.
fn date_part(unit: &str, v: &Value, extract: bool) -> SqlResult<Value> {
    use crate::datetime as dt;
    let x = match v {
        Value::Date(d) => {
            let u = unit.to_ascii_lowercase();
            // A date has no time of day: PostgreSQL's extract refuses its time fields
            // (date_part takes the date as a timestamp).
            if extract
                && matches!(
                    u.as_str(),
                    "hour" | "minute" | "second" | "milliseconds" | "microseconds" | "timezone"
                )
            {
                return Err(SqlError::new(
                    code::FEATURE_NOT_SUPPORTED,
                    format!("unit \"{unit}\" not supported for type date"),
                ));
            }
            dt::timestamp_part(unit, dt::date_to_timestamp(*d)?, false)?
        }
        Value::Timestamp(t) => dt::timestamp_part(unit, *t, false)?,
        Value::Timestamptz(t) => dt::timestamp_part(unit, *t, true)?,
        Value::Interval(iv) => Some(dt::interval_part(unit, *iv)?),
        _ => None,
    };
    Ok(x.map_or(Value::Null, Value::Float8))
}

fn date_trunc(unit: &str, v: &Value) -> SqlResult<Value> {
    use crate::datetime as dt;
    Ok(match v {
        Value::Date(d) => {
            Value::Timestamptz(dt::timestamp_trunc(unit, dt::date_to_timestamp(*d)?, true)?)
        }
        Value::Timestamp(t) => Value::Timestamp(dt::timestamp_trunc(unit, *t, false)?),
        Value::Timestamptz(t) => Value::Timestamptz(dt::timestamp_trunc(unit, *t, true)?),
        Value::Interval(iv) => Value::Interval(dt::interval_trunc(unit, *iv)?),
        _ => Value::Null,
    })
}

/// One element of a LIKE pattern.
#[derive(Debug, Clone, PartialEq)]
enum LikeItem {
    /// `%`: any run of characters.
    Any,
    /// `_`: one character.
    One,
    Char(char),
}

/// PostgreSQL's LIKE: `%` matches any run of characters, `_` one, and the escape
/// character (by default `\`) makes the next character literal. Matched greedily with
/// one backtracking point per `%` (linear in practice, never exponential).
pub fn like(text: &str, pattern: &str, escape: Option<char>) -> SqlResult<bool> {
    let mut items = Vec::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        if Some(c) == escape {
            match it.next() {
                Some(n) => items.push(LikeItem::Char(n)),
                None => {
                    return Err(SqlError::new(
                        "22025",
                        "LIKE pattern must not end with escape character",
                    ))
                }
            }
        } else if c == '%' {
            if items.last() != Some(&LikeItem::Any) {
                items.push(LikeItem::Any);
            }
        } else if c == '_' {
            items.push(LikeItem::One);
        } else {
            items.push(LikeItem::Char(c));
        }
    }
    let s: Vec<char> = text.chars().collect();
    let (mut i, mut p) = (0usize, 0usize);
    let mut back: Option<(usize, usize)> = None;
    while i < s.len() {
        match items.get(p) {
            Some(LikeItem::Any) => {
                back = Some((p, i));
                p += 1;
                continue;
            }
            Some(LikeItem::One) => {
                i += 1;
                p += 1;
                continue;
            }
            Some(LikeItem::Char(c)) if *c == s[i] => {
                i += 1;
                p += 1;
                continue;
            }
            _ => {}
        }
        match back {
            Some((bp, bi)) => {
                back = Some((bp, bi + 1));
                p = bp + 1;
                i = bi + 1;
            }
            None => return Ok(false),
        }
    }
    Ok(items[p..].iter().all(|x| *x == LikeItem::Any))
}

/// Lower-case hex of `bytes` (what `format!("{:x}")` gives, without the formatter's
/// per-byte cost: md5 of random text is a hot path of the seed benchmark).
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

#[cfg(test)]
mod hex_tests {
    #[test]
    fn hex_is_what_the_formatter_gives() {
        let d = md5::compute(b"walden");
        assert_eq!(super::hex(&d.0), format!("{d:x}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use walden::rng::SimRng;

    fn run(f: Func, args: &[Value]) -> Value {
        let mut rng = SimRng::new(1);
        call(f, args, &mut EvalCtx::new(&mut rng)).unwrap()
    }

    fn t(s: &str) -> Value {
        Value::Text(s.into())
    }

    #[test]
    fn string_functions_match_postgres() {
        assert_eq!(
            run(Func::Lpad, &[t("x"), Value::Int4(5), t("ab")]),
            t("ababx")
        );
        assert_eq!(run(Func::Lpad, &[t("hello"), Value::Int4(2)]), t("he"));
        assert_eq!(run(Func::Rpad, &[t("x"), Value::Int4(3)]), t("x  "));
        assert_eq!(
            run(Func::Substr, &[t("hello"), Value::Int4(2), Value::Int4(3)]),
            t("ell")
        );
        assert_eq!(
            run(Func::Substr, &[t("hello"), Value::Int4(-1), Value::Int4(3)]),
            t("h")
        );
        assert_eq!(run(Func::Substr, &[t("hello"), Value::Int4(4)]), t("lo"));
        assert_eq!(
            run(Func::Md5, &[t("")]),
            t("d41d8cd98f00b204e9800998ecf8427e")
        );
        assert_eq!(run(Func::Length, &[t("héllo")]), Value::Int4(5));
        assert_eq!(run(Func::Repeat, &[t("ab"), Value::Int4(3)]), t("ababab"));
        assert_eq!(
            run(Func::Mod, &[Value::Int4(-7), Value::Int4(3)]),
            Value::Int4(-1)
        );
        assert_eq!(run(Func::Abs, &[Value::Int8(-7)]), Value::Int8(7));
        assert_eq!(run(Func::Upper, &[Value::Null]), Value::Null);
    }

    #[test]
    fn random_is_in_range_and_uuid_is_v4() {
        let mut rng = SimRng::new(9);
        let mut cx = EvalCtx::new(&mut rng);
        for _ in 0..1000 {
            match call(Func::Random, &[], &mut cx).unwrap() {
                Value::Float8(x) => assert!((0.0..1.0).contains(&x)),
                other => panic!("{other:?}"),
            }
        }
        let u = call(Func::GenRandomUuid, &[], &mut cx).unwrap().to_string();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
    }
}

#[cfg(test)]
mod like_tests {
    use super::like;

    #[test]
    fn like_matches_as_postgres_does() {
        let m = |s: &str, p: &str| like(s, p, Some('\\')).unwrap();
        assert!(m("abc", "abc"));
        assert!(!m("abc", "ab"));
        assert!(m("abc", "a%"));
        assert!(m("abc", "%c"));
        assert!(m("abc", "%b%"));
        assert!(m("abc", "a_c"));
        assert!(!m("ac", "a_c"));
        assert!(m("", "%"));
        assert!(!m("", "_"));
        assert!(m("abcabc", "%bc%c"));
        assert!(m("aaab", "%a%ab"));
        assert!(!m("aaa", "%b%"));
        assert!(m("a%b", "a\\%b"));
        assert!(!m("axb", "a\\%b"));
        assert!(m("héllo", "h_llo"));
        assert!(like("a_b", "a#_b", Some('#')).unwrap());
        assert!(like("a\\b", "a\\b", None).unwrap());
        assert!(like("x", "x\\", Some('\\')).is_err());
    }
}

/// The role statements run as: SET ROLE's, else the session user (the bootstrap
/// superuser where the caller has no settings).
pub(crate) fn current_user(cx: &EvalCtx) -> SqlResult<String> {
    let Some(s) = cx.settings else {
        return Ok(crate::catalog::BOOTSTRAP.to_string());
    };
    let role = s.current("role", false)?.unwrap_or_default();
    if role != "none" && !role.is_empty() {
        return Ok(role);
    }
    Ok(s.current("session_authorization", false)?
        .unwrap_or_default())
}
