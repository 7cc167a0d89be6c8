//! The session's functions: settings, sequences, the current and session user,
//! version().

use walden::Value;

use super::text::text_arg;
use super::Func;
use crate::error::{code, SqlError, SqlResult};
use crate::expr::EvalCtx;
use crate::value::as_i64;

/// The session's functions (strict: the caller has answered a NULL argument).
pub(super) fn call(f: Func, args: &[Value], cx: &mut EvalCtx) -> SqlResult<Option<Value>> {
    let int = |i: usize| as_i64(&args[i]).unwrap_or(0);
    Ok(Some(match f {
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
        Func::Advisory(a) => return advisory(a, args, cx).map(Some),
        Func::CurrentSetting => {
            let missing_ok = matches!(args.get(1), Some(Value::Bool(true)));
            match settings(cx, "current_setting")?.current(text_arg(&args[0]), missing_ok)? {
                Some(v) => Value::Text(v),
                None => Value::Null,
            }
        }
        _ => return Ok(None),
    }))
}

/// The advisory lock functions, on the session's backend and the statement's
/// transaction.
fn advisory(a: super::Advisory, args: &[Value], cx: &EvalCtx) -> SqlResult<Value> {
    use super::{Advisory, AdvisoryOp};
    let Some((db, backend, xid)) = cx.guard.and_then(|g| g.advisory()) else {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            "advisory locks are not supported here (they are a session's)",
        ));
    };
    let (op, shared, xact) = match a {
        Advisory::UnlockAll => {
            db.advisory_unlock_all(backend);
            return Ok(Value::Null);
        }
        Advisory::Key { op, shared, xact } => (op, shared, xact),
    };
    // PostgreSQL's two key spaces: one bigint, or two ints.
    let key = match args {
        [k] => (1u8, as_i64(k).unwrap_or(0)),
        [a, b] => {
            let (a, b) = (as_i64(a).unwrap_or(0), as_i64(b).unwrap_or(0));
            (2u8, (a << 32) | (b & 0xffff_ffff))
        }
        _ => return Ok(Value::Null),
    };
    match op {
        AdvisoryOp::Unlock => Ok(Value::Bool(db.advisory_unlock(backend, key, shared))),
        AdvisoryOp::Lock | AdvisoryOp::Try => {
            if xid == 0 {
                return Err(SqlError::new(
                    code::INTERNAL,
                    "an advisory lock outside a transaction",
                ));
            }
            let wait = op == AdvisoryOp::Lock;
            let mode = walden::AdvisoryMode { shared, xact, wait };
            let guard = cx.guard;
            let stop = || guard.is_some_and(|g| g.check_waiting().is_err());
            let Some(got) = db.advisory_lock(xid, backend, key, mode, &stop)? else {
                // Cancelled, or past statement_timeout: the guard says which.
                return Err(match guard.map(|g| g.check_waiting()) {
                    Some(Err(e)) => e,
                    _ => SqlError::new(
                        code::QUERY_CANCELED,
                        "canceling statement due to user request",
                    ),
                });
            };
            Ok(if wait { Value::Null } else { Value::Bool(got) })
        }
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

pub(super) fn set_config(args: &[Value], cx: &EvalCtx) -> SqlResult<Value> {
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
