//! ALTER … OWNER TO: a relation's or the schema's owner changed, its ACL following.

use walden::{AclItem, Database, ObjectAcl, ObjectKind};

use super::run::no_role;
use crate::error::{code, SqlError, SqlResult};
use crate::privileges::{relation_acl, Authority, RelKind};
use crate::roles::{find, BOOTSTRAP};

/// `ALTER TABLE | VIEW | SEQUENCE name OWNER TO role`, PostgreSQL's
/// `ATExecChangeOwner`: a superuser may give anything to anyone; anyone else must own
/// the relation, be a member of the new owner, and the new owner must be able to
/// create in the schema. The access control list follows (PostgreSQL's
/// `aclnewowner`), and a table's sequences follow their table.
pub(crate) fn change_owner(
    db: &Database,
    auth: &Authority,
    relation: &str,
    role: &str,
) -> SqlResult<()> {
    let Some(kind) = crate::privileges::rel_kind(db, relation) else {
        return Err(SqlError::new(
            code::UNDEFINED_TABLE,
            format!("relation \"{relation}\" does not exist"),
        ));
    };
    let role = match role {
        "current_user" | "current_role" => auth.user.clone(),
        other => other.to_string(),
    };
    if find(db, &role).is_none() {
        return Err(no_role(&role));
    }
    let current = relation_acl(&auth.privileges, relation).owner;
    if current == role {
        return Ok(());
    }
    if kind == RelKind::Sequence {
        if let Some((table, _)) = db
            .sequence(relation)
            .and_then(|s| crate::ddl::sequence::owner_names(db, &s.def))
        {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                format!("cannot change owner of sequence \"{relation}\""),
            )
            .with_detail(format!(
                "Sequence \"{relation}\" is linked to table \"{table}\"."
            )));
        }
    }
    if !auth.superuser {
        auth.require_owner(relation, kind)?;
        if !auth.is_member(&role) {
            return Err(SqlError::new(
                code::INSUFFICIENT_PRIVILEGE,
                format!("must be member of role \"{role}\""),
            ));
        }
        let new_auth = auth.as_role(&role);
        new_auth.require_create()?;
    }
    let mut relations = vec![relation.to_string()];
    if kind == RelKind::Table {
        relations.extend(
            db.sequences()
                .into_iter()
                .filter(|s| {
                    crate::ddl::sequence::owner_names(db, &s.def)
                        .is_some_and(|(t, _)| t == relation)
                })
                .map(|s| s.def.name),
        );
    }
    for name in relations {
        db.change_acl::<SqlError>(ObjectKind::Relation, &name, |stored| {
            let entry = stored
                .cloned()
                .unwrap_or_else(|| ObjectAcl::owned_by(BOOTSTRAP));
            Ok(Some(new_owner(entry, &role)))
        })?;
    }
    Ok(())
}

/// An entry with its owner replaced, in its items too (PostgreSQL's `aclnewowner`:
/// what the old owner held or granted, the new one does; items that come to name the
/// same pair are merged).
fn new_owner(entry: ObjectAcl, role: &str) -> ObjectAcl {
    let old = entry.owner;
    let swap = |items: Vec<AclItem>| {
        let mut out: Vec<AclItem> = Vec::new();
        for mut i in items {
            if i.grantee == old {
                i.grantee = role.to_string();
            }
            if i.grantor == old {
                i.grantor = role.to_string();
            }
            match out
                .iter_mut()
                .find(|o| o.grantee == i.grantee && o.grantor == i.grantor)
            {
                Some(o) => {
                    o.privs |= i.privs;
                    o.grantable |= i.grantable;
                }
                None => out.push(i),
            }
        }
        out
    };
    ObjectAcl {
        owner: role.to_string(),
        acl: entry.acl.map(swap),
        columns: entry
            .columns
            .into_iter()
            .map(|(at, items)| (at, swap(items)))
            .collect(),
    }
}
