//! TRUNCATE.

use sqlparser::ast;
use walden::{RowAction, Transaction};

use super::schema_of;
use crate::catalog::object_name;
use crate::error::{SqlError, SqlResult};
use crate::statement::{Ctx, Output};

/// TRUNCATE deletes every row in the transaction (so it is transactional and crash-safe
/// like any delete; VACUUM reclaims the space).
pub(crate) fn truncate(cx: &mut Ctx, t: &mut Transaction, tr: &ast::Truncate) -> SqlResult<Output> {
    let mut names = Vec::new();
    for target in &tr.table_names {
        let name = object_name(&target.name)?;
        schema_of(cx.db, &name, &target.name, "truncate")?;
        names.push(name);
    }
    let cascade = matches!(tr.cascade, Some(ast::CascadeOption::Cascade));
    let mut notices = Vec::new();
    let names = crate::fkeys::ddl::truncate_list(cx.db, cx.fkeys, names, cascade, &mut notices)?;
    let restart = matches!(tr.identity, Some(ast::TruncateIdentityOption::Restart));
    // TRUNCATE on every table it empties, those CASCADE adds included; RESTART IDENTITY
    // needs the sequences' ownership too (PostgreSQL's ExecuteTruncate).
    if !cx.auth.superuser {
        use crate::privileges::RelKind;
        for name in &names {
            cx.auth
                .require(name, RelKind::Table, walden::privilege::bits::TRUNCATE)?;
        }
        if restart {
            for seq in cx.db.sequences() {
                let owned = crate::ddl::sequence::owner_names(cx.db, &seq.def)
                    .is_some_and(|(table, _)| names.contains(&table));
                if owned {
                    cx.auth.require_owner(&seq.def.name, RelKind::Sequence)?;
                }
            }
        }
    }
    // RESTART IDENTITY: the sequences the tables' columns own start again (at once,
    // not at commit: PostgreSQL's is transactional, Walden's sequences are not).
    if restart {
        for name in &names {
            crate::sequences::owned::restart_owned(cx.db, name)?;
        }
    }
    let guard = cx.guard;
    for name in names {
        let first = t.modify(&name, |_, _| {
            guard.check()?;
            Ok::<_, SqlError>(RowAction::Delete)
        })?;
        // READ COMMITTED: the rows changed since the snapshot go in their newest versions.
        super::recheck::judge_again(t, &name, first.changed, &mut |_, _, _| {
            guard.check()?;
            Ok(RowAction::Delete)
        })?;
    }
    let mut out = Output::tag("TRUNCATE TABLE");
    out.notices = notices;
    Ok(out)
}
