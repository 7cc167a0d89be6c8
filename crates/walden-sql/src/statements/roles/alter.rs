//! ALTER ROLE (attributes, password, RENAME TO), and who may change which role how.

use walden::{Database, RoleDef};

use super::options::{
    check_limits, prepare, sets, sets_bypassrls, sets_replication, sets_superuser,
};
use super::{
    bootstrap_role, denied, find, no_such_role, reserved_prefix, Name, OptionKind, RoleOption,
    BOOTSTRAP,
};
use crate::error::{code, SqlError, SqlResult};

/// PostgreSQL 15's AlterRole checks: superuser, replication and bypassrls roles and
/// attributes are a superuser's; other roles a CREATEROLE role's; a role without
/// CREATEROLE may change only its own password.
fn may_alter(actor: &RoleDef, target: &RoleDef, options: &[RoleOption]) -> SqlResult<()> {
    if actor.superuser {
        return Ok(());
    }
    if target.superuser || sets(options, sets_superuser) {
        return Err(denied(
            "must be superuser to alter superuser roles or change superuser attribute",
        ));
    }
    if target.replication || sets(options, sets_replication) {
        return Err(denied(
            "must be superuser to alter replication roles or change replication attribute",
        ));
    }
    if sets(options, sets_bypassrls) {
        return Err(denied("must be superuser to change bypassrls attribute"));
    }
    if actor.createrole {
        return Ok(());
    }
    let only_password = !options.is_empty()
        && options
            .iter()
            .all(|o| matches!(o.kind, OptionKind::Password(_)));
    if !only_password || target.name != actor.name {
        return Err(denied("permission denied"));
    }
    Ok(())
}

/// ALTER ROLE's attributes and password.
pub(super) fn alter(
    db: &Database,
    me: &RoleDef,
    name: &str,
    options: &[RoleOption],
    notices: &mut Vec<String>,
) -> SqlResult<&'static str> {
    check_limits(options)?;
    let Some(target) = find(db, name) else {
        return Err(no_such_role(name));
    };
    may_alter(me, &target, options)?;
    // The verifier is made before the catalog's lock is taken.
    let patch = prepare(options, notices)?;
    db.change_role(name, unstored(name), |mut r| {
        patch.apply(&mut r);
        Ok::<_, SqlError>(r)
    })?;
    Ok("ALTER ROLE")
}

/// ALTER ROLE … RENAME TO.
pub(super) fn rename(db: &Database, me: &RoleDef, name: &str, to: Name) -> SqlResult<&'static str> {
    let Some(target) = find(db, name) else {
        return Err(no_such_role(name));
    };
    if name == me.name || name == BOOTSTRAP {
        return Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            "session user cannot be renamed",
        ));
    }
    if target.superuser && !me.superuser {
        return Err(denied("must be superuser to rename superusers"));
    }
    if !me.superuser && !me.createrole {
        return Err(denied("permission denied to rename role"));
    }
    reserved_prefix(&to.name)?;
    if find(db, &to.name).is_some() {
        return Err(SqlError::new(
            code::DUPLICATE_OBJECT,
            format!("role \"{}\" already exists", to.name),
        ));
    }
    // A SCRAM verifier does not depend on the name, so it stays (PostgreSQL
    // clears only MD5 hashes, which are salted with it).
    db.change_role(name, None, |r| {
        Ok::<_, SqlError>(RoleDef { name: to.name, ..r })
    })?;
    Ok("ALTER ROLE")
}

/// What a change starts from when the role is not stored: the bootstrap superuser's
/// definition (it is stored the first time it changes).
fn unstored(name: &str) -> Option<RoleDef> {
    (name == BOOTSTRAP).then(bootstrap_role)
}
