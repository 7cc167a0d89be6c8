//! Roles: created, changed and dropped at once, each one logged catalog record under the
//! catalog's write lock, committed before the catalog in memory changes (as views are).
//! Redo applies a role record only once it reads its transaction's commit
//! (docs/recovery.md rule 36).

use super::{check_name, Database};
use crate::catalog::{CatalogRecord, RoleDef};
use crate::error::{Error, Result};

fn checked(role: &RoleDef) -> Result<()> {
    check_name("role", &role.name)?;
    role.check().map_err(Error::InvalidOption)
}

impl Database {
    /// Creates a role (committed at once). Its password, if any, must be a verifier
    /// (`RoleDef::password`).
    pub fn create_role(&self, role: RoleDef) -> Result<()> {
        checked(&role)?;
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        if cat.roles.contains_key(&role.name) {
            return Err(Error::RoleExists(role.name));
        }
        let mut tx = self.begin();
        tx.log(&CatalogRecord::CreateRole { role: role.clone() })?;
        tx.commit_inner()?;
        cat.put_role(None, role);
        Ok(())
    }

    /// Replaces the role `name` by `role`, its whole new definition (committed at
    /// once); `role.name` renames it.
    pub fn alter_role(&self, name: &str, role: RoleDef) -> Result<()> {
        checked(&role)?;
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        if !cat.roles.contains_key(name) {
            return Err(Error::NoSuchRole(name.to_string()));
        }
        if role.name != name && cat.roles.contains_key(&role.name) {
            return Err(Error::RoleExists(role.name));
        }
        let mut tx = self.begin();
        tx.log(&CatalogRecord::AlterRole {
            old: name.to_string(),
            role: role.clone(),
        })?;
        tx.commit_inner()?;
        cat.put_role(Some(name), role);
        Ok(())
    }

    /// Changes the role `name` in one step under the catalog's lock, so that two
    /// changes at once cannot lose one another: `change` gets the role as it is (or
    /// `missing`, when there is no such role: a role the caller always has, stored
    /// from its first change) and returns its whole new definition, which is logged
    /// and committed at once (`role.name` renames it). `change` runs under the
    /// catalog's write lock: it must be quick and must not call into the database.
    pub fn change_role<E: From<Error>>(
        &self,
        name: &str,
        missing: Option<RoleDef>,
        change: impl FnOnce(RoleDef) -> std::result::Result<RoleDef, E>,
    ) -> std::result::Result<(), E> {
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        let stored = cat.roles.get(name).cloned();
        let was_stored = stored.is_some();
        let Some(old) = stored.or(missing) else {
            return Err(Error::NoSuchRole(name.to_string()).into());
        };
        let role = change(old)?;
        checked(&role)?;
        if role.name != name && cat.roles.contains_key(&role.name) {
            return Err(Error::RoleExists(role.name).into());
        }
        let rec = if was_stored {
            CatalogRecord::AlterRole {
                old: name.to_string(),
                role: role.clone(),
            }
        } else {
            CatalogRecord::CreateRole { role: role.clone() }
        };
        let mut tx = self.begin();
        tx.log(&rec)?;
        tx.commit_inner()?;
        cat.put_role(was_stored.then_some(name), role);
        Ok(())
    }

    /// Drops a role (committed at once).
    pub fn drop_role(&self, name: &str) -> Result<()> {
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        if !cat.roles.contains_key(name) {
            return Err(Error::NoSuchRole(name.to_string()));
        }
        let mut tx = self.begin();
        tx.log(&CatalogRecord::DropRole {
            name: name.to_string(),
        })?;
        tx.commit_inner()?;
        cat.remove_role(name);
        Ok(())
    }

    /// The role of that name, if there is one.
    pub fn role(&self, name: &str) -> Option<RoleDef> {
        self.catalog_read().roles.get(name).cloned()
    }

    /// Every role, by name.
    pub fn roles(&self) -> Vec<RoleDef> {
        self.catalog_read().roles.values().cloned().collect()
    }

    /// 32 random bytes drawn when the database was created (or first opened by a
    /// format 16 build) and kept with it, never logged: a stable secret to derive
    /// keys from, such as the salts of the mock SCRAM exchange a server runs for a
    /// user that does not exist (the same salt at every attempt and after a restart,
    /// unguessable without the database's files).
    pub fn secret_seed(&self) -> [u8; 32] {
        self.catalog_read().secret
    }
}
