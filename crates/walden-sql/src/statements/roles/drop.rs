//! DROP ROLE: the roles it removes, each refused while anything depends on it.

use walden::{Database, RoleDef};

use super::{denied, find, no_such_role, Spec, BOOTSTRAP};
use crate::error::{code, SqlError, SqlResult};

/// DROP ROLE: every role checked before any goes, each refused while it owns or holds
/// privileges on anything.
pub(super) fn drop_roles(
    db: &Database,
    me: &RoleDef,
    if_exists: bool,
    names: &[Spec],
    notices: &mut Vec<String>,
) -> SqlResult<&'static str> {
    if !me.superuser && !me.createrole {
        return Err(denied("permission denied to drop role"));
    }
    let doomed = droppable(db, me, if_exists, names, notices)?;
    for name in doomed {
        drop_unless_needed(db, &name)?;
    }
    Ok("DROP ROLE")
}

/// Drops a role, refused while it owns or holds privileges on anything (checked under
/// the catalog's lock, so nothing comes to name it meanwhile).
fn drop_unless_needed(db: &Database, name: &str) -> SqlResult<()> {
    // (Each relation's kind is read first: the check runs under the catalog's
    // lock, where the database cannot be asked.)
    let words: std::collections::HashMap<String, &'static str> = db
        .privileges()
        .relations
        .keys()
        .map(|r| {
            let word = crate::privileges::rel_kind(db, r).map_or("relation", |k| k.word());
            (r.clone(), word)
        })
        .collect();
    db.drop_role_checked::<SqlError>(name, |p| {
        let kinds = |rel: &str| words.get(rel).copied().unwrap_or("relation");
        let deps = crate::privileges::dependents(p, name, &kinds);
        if deps.is_empty() {
            return Ok(());
        }
        Err(SqlError::new(
            code::DEPENDENT_OBJECTS_STILL_EXIST,
            format!("role \"{name}\" cannot be dropped because some objects depend on it"),
        )
        .with_detail(deps.join("\n")))
    })?;
    Ok(())
}

/// The stored roles a DROP ROLE removes, all checked before any goes (PostgreSQL drops
/// them in one transaction: one error keeps them all).
fn droppable(
    db: &Database,
    actor: &RoleDef,
    if_exists: bool,
    names: &[Spec],
    notices: &mut Vec<String>,
) -> SqlResult<Vec<String>> {
    let mut doomed: Vec<String> = Vec::new();
    for spec in names {
        let name = match spec {
            Spec::Named(n) => &n.name,
            Spec::Current(..) => {
                return Err(SqlError::new(
                    code::INVALID_PARAMETER,
                    "cannot use special role specifier in DROP ROLE",
                ))
            }
        };
        if name == "public" {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                "cannot use special role specifier in DROP ROLE",
            ));
        }
        if find(db, name).is_none() || doomed.contains(name) {
            if if_exists {
                notices.push(format!("role \"{name}\" does not exist, skipping"));
                continue;
            }
            return Err(no_such_role(name));
        }
        if name == BOOTSTRAP || *name == actor.name {
            return Err(SqlError::new(
                code::OBJECT_IN_USE,
                "current user cannot be dropped",
            ));
        }
        if find(db, name).is_some_and(|r| r.superuser) && !actor.superuser {
            return Err(denied("must be superuser to drop superusers"));
        }
        doomed.push(name.clone());
    }
    Ok(doomed)
}
