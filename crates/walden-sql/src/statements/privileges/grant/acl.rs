//! A GRANT's or REVOKE's change to one object's access control list, with grant
//! options and CASCADE.

use walden::privilege::bits;
use walden::{AclItem, Database, ObjectAcl, ObjectKind};

use crate::error::{code, SqlError, SqlResult};
use crate::privileges::{items_of, relation_acl, schema_acl, Authority, RelKind};

pub(super) struct Change<'a> {
    pub(super) grant: bool,
    pub(super) privs: u16,
    /// Column privileges: (privileges, stored position, name).
    pub(super) columns: Vec<(u16, u32, String)>,
    pub(super) option: bool,
    pub(super) cascade: bool,
    pub(super) grantees: &'a [String],
    pub(super) asked_all: bool,
}

impl Change<'_> {
    /// Grants or revokes `privs` (as `grantor`) to or from each grantee in one list.
    fn apply(
        &self,
        items: &mut Vec<AclItem>,
        grantor: &str,
        privs: u16,
        owner: &str,
    ) -> SqlResult<()> {
        for grantee in self.grantees {
            if self.grant {
                grant_item(items, grantee, grantor, privs, self.option)?;
            } else {
                revoke_item(
                    items,
                    grantee,
                    grantor,
                    privs,
                    self.option,
                    self.cascade,
                    owner,
                )?;
            }
        }
        Ok(())
    }
}

/// Applies a GRANT or REVOKE to one object, PostgreSQL's `ExecGrant_Relation`: the
/// grantor is the owner when the user has the owner's privileges, else the user, whose
/// grant options bound what it grants (a warning when they fall short; 42501 when it
/// has no privilege on the object at all). A column's grant options are the table's and
/// the column's own; REVOKE of a table-level privilege revokes it from every column too.
pub(super) fn apply_acl(
    db: &Database,
    auth: &Authority,
    kind: ObjectKind,
    name: &str,
    rel: Option<RelKind>,
    change: &Change,
    notices: &mut Vec<String>,
) -> SqlResult<()> {
    let default_privs = rel.map_or(bits::USAGE | bits::CREATE, |k| k.owner_default());
    let word = rel.map_or("schema", |k| k.word());
    db.change_acl::<SqlError>(kind, name, |stored| {
        let entry = match (stored, kind) {
            (Some(e), _) => e.clone(),
            (None, ObjectKind::Relation) => relation_acl(&Default::default(), name),
            (None, ObjectKind::Schema) => schema_acl(&Default::default(), name),
        };
        let owner = entry.owner.clone();
        let is_owner = auth.superuser || auth.has_privs_of(&owner);
        let mine = |items: &[AclItem]| grantable_and_held(auth, items);
        let items = items_of(&entry, default_privs);
        let (table_may, table_any) = mine(&items);
        // What the user may grant, and as whom.
        let grantor = if is_owner {
            owner.clone()
        } else {
            auth.user.clone()
        };
        let verb = if change.grant { "granted" } else { "revoked" };
        let could = if change.grant { "were" } else { "could be" };
        let mut items = items;
        let table_level = change.privs != 0 || change.columns.is_empty();
        if table_level {
            let may = if is_owner { bits::ALL } else { table_may };
            if !is_owner && may == 0 && table_any == 0 {
                return Err(SqlError::new(
                    code::INSUFFICIENT_PRIVILEGE,
                    format!("permission denied for {word} {name}"),
                ));
            }
            let this = change.privs & may;
            if this != change.privs || may == 0 {
                if this == 0 {
                    notices.push(format!(
                        "WARNING:  no privileges {could} {verb} for \"{name}\""
                    ));
                } else if !change.asked_all || this != change.privs & default_privs {
                    notices.push(format!(
                        "WARNING:  not all privileges {could} {verb} for \"{name}\""
                    ));
                }
            }
            change.apply(&mut items, &grantor, this, &owner)?;
        }
        let mut columns = entry.columns.clone();
        for (privs, at, col) in column_changes(change, &entry) {
            let mut list = columns.get(&at).cloned().unwrap_or_default();
            let this = if is_owner {
                privs
            } else {
                let (col_may, col_any) = mine(&list);
                let may = table_may | col_may;
                if let Some(col) = &col {
                    if may == 0 && table_any == 0 && col_any == 0 {
                        return Err(SqlError::new(
                            code::INSUFFICIENT_PRIVILEGE,
                            format!("permission denied for column \"{col}\" of relation \"{name}\""),
                        ));
                    }
                    if privs & may != privs {
                        let how = if privs & may == 0 { "no" } else { "not all" };
                        notices.push(format!(
                            "WARNING:  {how} privileges {could} {verb} for column \"{col}\" of relation \"{name}\""
                        ));
                    }
                }
                privs & may
            };
            change.apply(&mut list, &grantor, this, &owner)?;
            if list.is_empty() {
                columns.remove(&at);
            } else {
                columns.insert(at, list);
            }
        }
        let acl = if table_level || entry.acl.is_some() {
            Some(items)
        } else {
            None
        };
        Ok(Some(ObjectAcl {
            owner,
            acl,
            columns,
        }))
    })
}

/// The privileges the current user may grant and those it holds among `items`: its
/// own, its roles' and PUBLIC's.
fn grantable_and_held(auth: &Authority, items: &[AclItem]) -> (u16, u16) {
    let (mut may, mut any) = (0, 0);
    for i in items {
        if i.grantee.is_empty() || auth.has_privs_of(&i.grantee) {
            may |= i.grantable;
            any |= i.privs;
        }
    }
    (may, any)
}

/// The column privileges a change touches: (privileges, stored position, the column's
/// name when the statement named it). REVOKE of table-level privileges takes them from
/// every column as well.
fn column_changes(change: &Change, entry: &ObjectAcl) -> Vec<(u16, u32, Option<String>)> {
    let mut col_changes: Vec<(u16, u32, Option<String>)> = change
        .columns
        .iter()
        .map(|(b, at, n)| (*b, *at, Some(n.clone())))
        .collect();
    if !change.grant && change.privs & crate::privileges::COLUMN_PRIVS != 0 {
        for at in entry.columns.keys() {
            match col_changes.iter_mut().find(|c| c.1 == *at) {
                Some(c) => c.0 |= change.privs & crate::privileges::COLUMN_PRIVS,
                None => {
                    col_changes.push((change.privs & crate::privileges::COLUMN_PRIVS, *at, None))
                }
            }
        }
    }
    col_changes
}

pub(super) fn grant_item(
    items: &mut Vec<AclItem>,
    grantee: &str,
    grantor: &str,
    privs: u16,
    option: bool,
) -> SqlResult<()> {
    if option && grantee == grantor {
        return Err(SqlError::new(
            code::INVALID_GRANT_OPERATION,
            "grant options cannot be granted back to your own grantor",
        ));
    }
    if privs == 0 {
        return Ok(());
    }
    match items
        .iter_mut()
        .find(|i| i.grantee == grantee && i.grantor == grantor)
    {
        Some(i) => {
            i.privs |= privs;
            if option {
                i.grantable |= privs;
            }
        }
        None => items.push(AclItem {
            grantee: grantee.to_string(),
            grantor: grantor.to_string(),
            privs,
            grantable: if option { privs } else { 0 },
        }),
    }
    Ok(())
}

/// Revokes `privs` (or only their grant options) granted by `grantor` to `grantee`;
/// grants made on the strength of a grant option revoked go too with CASCADE and are
/// an error without it (2BP01), PostgreSQL's `recursive_revoke`.
pub(super) fn revoke_item(
    items: &mut Vec<AclItem>,
    grantee: &str,
    grantor: &str,
    privs: u16,
    option_only: bool,
    cascade: bool,
    owner: &str,
) -> SqlResult<()> {
    let Some(at) = items
        .iter()
        .position(|i| i.grantee == grantee && i.grantor == grantor)
    else {
        return Ok(());
    };
    let lost_options = items[at].grantable & privs;
    if lost_options != 0 && grantee != owner {
        let dependent = items
            .iter()
            .any(|i| i.grantor == grantee && i.privs & lost_options != 0);
        if dependent {
            if !cascade {
                return Err(SqlError::new(
                    code::DEPENDENT_OBJECTS_STILL_EXIST,
                    "dependent privileges exist",
                )
                .with_hint("Use CASCADE to revoke them too."));
            }
            let dependents: Vec<String> = items
                .iter()
                .filter(|i| i.grantor == grantee && i.privs & lost_options != 0)
                .map(|i| i.grantee.clone())
                .collect();
            for d in dependents {
                revoke_item(items, &d, grantee, lost_options, false, true, owner)?;
            }
        }
    }
    let Some(at) = items
        .iter()
        .position(|i| i.grantee == grantee && i.grantor == grantor)
    else {
        return Ok(());
    };
    let item = &mut items[at];
    item.grantable &= !privs;
    if !option_only {
        item.privs &= !privs;
    }
    if item.privs == 0 {
        items.remove(at);
    }
    Ok(())
}
