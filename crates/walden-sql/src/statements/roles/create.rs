//! CREATE ROLE, and who may create a role with which attributes.

use walden::{Database, RoleDef};

use super::options::{check_limits, prepare, turns_on};
use super::{denied, find, reserved_prefix, Name, OptionKind, RoleOption};
use crate::error::{code, SqlError, SqlResult};

/// PostgreSQL 15's CreateRole checks: only a superuser makes a superuser, a
/// replication or a bypassrls role; otherwise CREATEROLE is needed.
fn may_create(actor: &RoleDef, options: &[RoleOption]) -> SqlResult<()> {
    if actor.superuser {
        return Ok(());
    }
    if turns_on(options, |k| match k {
        OptionKind::Superuser(v) => Some(*v),
        _ => None,
    }) {
        return Err(denied("must be superuser to create superusers"));
    }
    if turns_on(options, |k| match k {
        OptionKind::Replication(v) => Some(*v),
        _ => None,
    }) {
        return Err(denied("must be superuser to create replication users"));
    }
    if turns_on(options, |k| match k {
        OptionKind::Bypassrls(v) => Some(*v),
        _ => None,
    }) {
        return Err(denied("must be superuser to create bypassrls users"));
    }
    if !actor.createrole {
        return Err(denied("permission denied to create role"));
    }
    Ok(())
}

/// CREATE ROLE: checked, then stored with its options applied.
pub(super) fn create(
    db: &Database,
    me: &RoleDef,
    name: &Name,
    options: &[RoleOption],
    user: bool,
    notices: &mut Vec<String>,
) -> SqlResult<&'static str> {
    may_create(me, options)?;
    check_limits(options)?;
    reserved_prefix(&name.name)?;
    if find(db, &name.name).is_some() {
        return Err(SqlError::new(
            code::DUPLICATE_OBJECT,
            format!("role \"{}\" already exists", name.name),
        ));
    }
    let mut role = RoleDef {
        login: user,
        ..RoleDef::new(&name.name)
    };
    prepare(options, notices)?.apply(&mut role);
    db.create_role(role)?;
    Ok("CREATE ROLE")
}
