//! LOCK TABLE: PostgreSQL's table locks, held until the transaction ends (the engine's
//! `Transaction::lock_table`). Only inside a transaction block (25P01, as PostgreSQL),
//! READ ONLY ones too (a lock writes nothing); NOWAIT fails at once with 55P03 where
//! another transaction holds a conflicting mode.

use sqlparser::ast::{self, LockTableMode, Spanned};
use walden::privilege::bits;
use walden::{RelLockMode, Transaction};

use crate::catalog::object_name;
use crate::error::{code, SqlError, SqlResult};
use crate::privileges::RelKind;
use crate::statement::{Ctx, Output};

/// The engine's mode for the statement's (ACCESS EXCLUSIVE when none is named).
fn mode_of(mode: &Option<LockTableMode>) -> RelLockMode {
    match mode {
        Some(LockTableMode::AccessShare) => RelLockMode::AccessShare,
        Some(LockTableMode::RowShare) => RelLockMode::RowShare,
        Some(LockTableMode::RowExclusive) => RelLockMode::RowExclusive,
        Some(LockTableMode::ShareUpdateExclusive) => RelLockMode::ShareUpdateExclusive,
        Some(LockTableMode::Share) => RelLockMode::Share,
        Some(LockTableMode::ShareRowExclusive) => RelLockMode::ShareRowExclusive,
        Some(LockTableMode::Exclusive) => RelLockMode::Exclusive,
        Some(LockTableMode::AccessExclusive) | None => RelLockMode::AccessExclusive,
    }
}

/// The refusal of LOCK TABLE outside a transaction block.
pub(crate) fn outside_block() -> SqlError {
    SqlError::new("25P01", "LOCK TABLE can only be used in transaction blocks")
}

/// LOCK [TABLE] name [, ...] [IN mode MODE] [NOWAIT], in the session's transaction.
pub(crate) fn lock_tables(cx: &mut Ctx, t: &mut Transaction, l: &ast::Lock) -> SqlResult<Output> {
    let mode = mode_of(&l.lock_mode);
    // PostgreSQL's privileges: SELECT for ACCESS SHARE; INSERT, UPDATE, DELETE or
    // TRUNCATE for ROW EXCLUSIVE; UPDATE, DELETE or TRUNCATE for the others.
    let any_of = match mode {
        RelLockMode::AccessShare => bits::SELECT,
        RelLockMode::RowExclusive => bits::INSERT | bits::UPDATE | bits::DELETE | bits::TRUNCATE,
        _ => bits::UPDATE | bits::DELETE | bits::TRUNCATE,
    };
    for target in &l.tables {
        let name = object_name(&target.name)?;
        let at = target.name.span().start;
        if cx.db.view(&name).is_some() {
            return Err(
                SqlError::unsupported("LOCK TABLE of a view (Walden locks tables only)").at(at),
            );
        }
        if !cx.db.table_names().contains(&name) {
            return Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            )
            .at(at));
        }
        if cx.auth.relation_mask(&name, RelKind::Table, any_of) & any_of == 0 {
            return Err(crate::privileges::denied(RelKind::Table, &name));
        }
        t.lock_table(&name, mode, l.nowait)?;
    }
    Ok(Output::tag("LOCK TABLE"))
}
