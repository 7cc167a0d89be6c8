//! Scalar functions: their names, argument checks, result types, and PostgreSQL's
//! behaviour for each.

mod composite;
mod date;
mod math;
mod signature;
mod system;
mod text;

use walden::Value;

use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::types::SqlType;
use crate::value;

pub(crate) use system::current_user;
pub use text::like;

/// An advisory lock function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advisory {
    /// On one lock, named by a bigint or two ints.
    Key {
        op: AdvisoryOp,
        shared: bool,
        /// Held until the transaction ends (`_xact_`); else at session level.
        xact: bool,
    },
    /// `pg_advisory_unlock_all()`.
    UnlockAll,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdvisoryOp {
    /// Waits for the lock (void).
    Lock,
    /// Takes it if free (bool).
    Try,
    /// Releases one session-level hold (bool: whether one was held).
    Unlock,
}

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
    /// The advisory lock functions (`pg_advisory_lock`, `pg_try_advisory_xact_lock_shared`,
    /// `pg_advisory_unlock_all`, …): `crate::functions::system`.
    Advisory(Advisory),
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
            "pg_advisory_unlock_all" => Func::Advisory(Advisory::UnlockAll),
            n if n.starts_with("pg_") && n.contains("advisory_") => {
                let shared = n.ends_with("_shared");
                let base = n.strip_suffix("_shared").unwrap_or(n);
                let (op, xact) = match base {
                    "pg_advisory_lock" => (AdvisoryOp::Lock, false),
                    "pg_try_advisory_lock" => (AdvisoryOp::Try, false),
                    "pg_advisory_xact_lock" => (AdvisoryOp::Lock, true),
                    "pg_try_advisory_xact_lock" => (AdvisoryOp::Try, true),
                    "pg_advisory_unlock" => (AdvisoryOp::Unlock, false),
                    _ => return None,
                };
                Func::Advisory(Advisory::Key { op, shared, xact })
            }
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
                | Func::Advisory(_)
        )
    }

    /// Checks the argument types and gives the result type, or PostgreSQL's "function
    /// does not exist" error.
    pub fn result_type(self, name: &str, args: &[SqlType]) -> SqlResult<SqlType> {
        if !self.accepts(args) {
            let list: Vec<&str> = args.iter().map(|t| t.name()).collect();
            return Err(SqlError::new(
                code::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", list.join(", ")),
            )
            .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."));
        }
        Ok(self.returns(args))
    }
}

/// A scalar function's value: the few that are not strict here, the others by family
/// (a NULL argument gives NULL).
pub fn call(f: Func, args: &[Value], cx: &mut EvalCtx) -> SqlResult<Value> {
    if let Some(v) = call_not_strict(f, args, cx)? {
        return Ok(v);
    }
    if args.iter().any(|a| matches!(a, Value::Null)) {
        return Ok(Value::Null);
    }
    if let Some(v) = math::call(f, args, cx)? {
        return Ok(v);
    }
    if let Some(v) = text::call(f, args, cx)? {
        return Ok(v);
    }
    if let Some(v) = date::call(f, args, cx)? {
        return Ok(v);
    }
    if let Some(v) = system::call(f, args, cx)? {
        return Ok(v);
    }
    // The functions that are not strict were answered above.
    Ok(composite::call(f, args)?.unwrap_or(Value::Null))
}

/// Every function here but the jsonb builders, nullif, a record and set_config is
/// strict: these answer a NULL argument themselves.
fn call_not_strict(f: Func, args: &[Value], cx: &EvalCtx) -> SqlResult<Option<Value>> {
    Ok(Some(match f {
        Func::SetConfig => system::set_config(args, cx)?,
        Func::Row(_) => Value::Text(crate::record::record_text(args)),
        Func::NullIf => {
            let equal = value::compare(&args[0], &args[1]) == Some(std::cmp::Ordering::Equal);
            if equal {
                Value::Null
            } else {
                args[0].clone()
            }
        }
        Func::JsonbBuildObject => crate::jsonb::build_object(args)?,
        Func::JsonbBuildArray => {
            let items = args
                .iter()
                .map(crate::jsonb::from_value)
                .collect::<SqlResult<Vec<_>>>()?;
            crate::jsonb::value(walden::Json::Array(items))
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests;
