//! The role list as SQL sees it: the stored roles and the bootstrap superuser, which
//! every database has and the engine stores only once it is changed (`pg_roles` shows
//! them; the role statements start from them).

use walden::{Database, RoleDef};

use crate::catalog::{bootstrap_role, BOOTSTRAP};

/// Every role, by name, the bootstrap superuser included.
pub fn all_roles(db: &Database) -> Vec<RoleDef> {
    let mut roles = db.roles();
    if !roles.iter().any(|r| r.name == BOOTSTRAP) {
        roles.push(bootstrap_role());
        roles.sort_by(|a, b| a.name.cmp(&b.name));
    }
    roles
}
