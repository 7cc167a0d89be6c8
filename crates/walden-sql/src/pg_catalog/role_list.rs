//! The role list as SQL sees it: the stored roles and the bootstrap superuser, which
//! every database has and the engine stores only once it is changed (`pg_roles` shows
//! them; the role statements start from them).

use walden::{Database, RoleDef};

use crate::catalog::BOOTSTRAP;

/// The bootstrap superuser as it is until changed: every attribute, no password (a
/// server lets it in only by trust until `ALTER ROLE postgres PASSWORD` or `walden user
/// password` gives it one).
pub fn bootstrap_role() -> RoleDef {
    RoleDef {
        login: true,
        superuser: true,
        createdb: true,
        createrole: true,
        replication: true,
        bypassrls: true,
        ..RoleDef::new(BOOTSTRAP)
    }
}

/// Every role, by name, the bootstrap superuser included.
pub fn all_roles(db: &Database) -> Vec<RoleDef> {
    let mut roles = db.roles();
    if !roles.iter().any(|r| r.name == BOOTSTRAP) {
        roles.push(bootstrap_role());
        roles.sort_by(|a, b| a.name.cmp(&b.name));
    }
    roles
}
