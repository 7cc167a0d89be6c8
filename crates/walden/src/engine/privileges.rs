//! Owners, access control lists and role memberships (`privilege.rs`): each change is
//! logged as whole entries and committed at once under the catalog's write lock, as
//! role changes are; redo applies them at their commit (docs/recovery.md rule 36).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Database;
use crate::catalog::RoleDef;
use crate::error::Error;
use crate::privilege::{Membership, ObjectAcl, ObjectKind, PrivilegeRecord, Privileges};

/// One membership to set (`how` None: to revoke).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberChange {
    pub role: String,
    pub member: String,
    pub how: Option<Membership>,
}

impl Database {
    /// The privileges as they are now: a snapshot, cheap to take (later changes make a
    /// new one).
    pub fn privileges(&self) -> Arc<Privileges> {
        self.catalog_read().privileges()
    }

    /// A number that changes whenever a role or a privilege changes, and that no other
    /// state of any catalog in the process has had: what a session worked out of
    /// roles and privileges stays valid while it holds.
    pub fn auth_generation(&self) -> u64 {
        self.catalog_read().auth_generation
    }

    /// The privileges and the roles, read together, with the generation they are of.
    pub fn auth_state(&self) -> (u64, Arc<Privileges>, BTreeMap<String, RoleDef>) {
        let cat = self.catalog_read();
        (cat.auth_generation, cat.privileges(), cat.roles.clone())
    }

    /// Changes an object's owner and access control list in one step under the
    /// catalog's lock, so that two changes at once cannot lose one another: `change`
    /// gets the entry as it is (None: none stored, the bootstrap superuser's default)
    /// and returns the new one, logged and committed at once unless unchanged. A
    /// relation must exist (`NoSuchTable`). `change` must be quick and must not call
    /// into the database.
    pub fn change_acl<E: From<Error>>(
        &self,
        kind: ObjectKind,
        name: &str,
        change: impl FnOnce(Option<&ObjectAcl>) -> std::result::Result<Option<ObjectAcl>, E>,
    ) -> std::result::Result<(), E> {
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        if kind == ObjectKind::Relation && !cat.name_taken(name) {
            return Err(Error::NoSuchTable(name.to_string()).into());
        }
        let snapshot = cat.privileges();
        let old = snapshot.get(kind, name);
        let new = change(old)?;
        if new.as_ref() == old {
            return Ok(());
        }
        let mut tx = self.begin();
        tx.log(&PrivilegeRecord::SetAcl {
            kind,
            name: name.to_string(),
            acl: new.clone(),
        })?;
        tx.commit_inner()?;
        cat.privileges_mut().set(kind, name, new);
        Ok(())
    }

    /// Changes a default access control list in one step under the catalog's lock:
    /// `change` gets it as it is and returns the new one (None: removed), logged and
    /// committed at once unless unchanged.
    pub fn change_default_acl<E: From<Error>>(
        &self,
        key: crate::privilege::DefaultKey,
        change: impl FnOnce(
            Option<&Vec<crate::privilege::AclItem>>,
        ) -> std::result::Result<Option<Vec<crate::privilege::AclItem>>, E>,
    ) -> std::result::Result<(), E> {
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        let snapshot = cat.privileges();
        let old = snapshot.defaults.get(&key);
        let new = change(old)?;
        if new.as_ref() == old {
            return Ok(());
        }
        let mut tx = self.begin();
        tx.log(&PrivilegeRecord::SetDefault {
            key: key.clone(),
            items: new.clone(),
        })?;
        tx.commit_inner()?;
        cat.privileges_mut().set_default(key, new);
        Ok(())
    }

    /// Changes memberships in one step under the catalog's lock: `change` sees the
    /// privileges and the roles as they are and returns the memberships to set, all
    /// logged in one transaction committed at once. Whether each role exists is the
    /// caller's to check (the bootstrap superuser is stored only once changed).
    pub fn change_members<E: From<Error>>(
        &self,
        change: impl FnOnce(
            &Privileges,
            &BTreeMap<String, RoleDef>,
        ) -> std::result::Result<Vec<MemberChange>, E>,
    ) -> std::result::Result<(), E> {
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        let snapshot = cat.privileges();
        let changes = change(&snapshot, &cat.roles)?;
        if changes.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin();
        for c in &changes {
            tx.log(&PrivilegeRecord::SetMember {
                role: c.role.clone(),
                member: c.member.clone(),
                how: c.how.clone(),
            })?;
        }
        tx.commit_inner()?;
        let p = cat.privileges_mut();
        for c in changes {
            p.set_member(&c.role, &c.member, c.how);
        }
        Ok(())
    }

    /// Drops a role (committed at once) once `check` passes, under the catalog's lock
    /// so that no object can come to name the role between the check and the drop:
    /// `check` sees the privileges (owners, grants, memberships) and refuses while the
    /// role owns or holds anything. Its memberships go with it.
    pub fn drop_role_checked<E: From<Error>>(
        &self,
        name: &str,
        check: impl FnOnce(&Privileges) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        if !cat.roles.contains_key(name) {
            return Err(Error::NoSuchRole(name.to_string()).into());
        }
        check(&cat.privileges())?;
        let mut tx = self.begin();
        tx.log(&crate::catalog::CatalogRecord::DropRole {
            name: name.to_string(),
        })?;
        tx.commit_inner()?;
        cat.remove_role(name);
        Ok(())
    }
}
