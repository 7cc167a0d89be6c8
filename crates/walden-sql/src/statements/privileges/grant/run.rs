//! Running GRANT and REVOKE: the grantor's rights checked, the objects and roles
//! resolved, roles granted to roles.

use walden::privilege::bits;
use walden::{Database, MemberChange, Membership, ObjectAcl, ObjectKind};

use super::acl::{apply_acl, grant_item, revoke_item, Change};
use super::{command, GrantStatement, Target};
use crate::error::{code, SqlError, SqlResult};
use crate::privileges::{items_of, Authority, RelKind, PUBLIC_SCHEMA};
use crate::roles::find;
use crate::statement::Output;

pub(super) fn no_schema(name: &str) -> SqlError {
    SqlError::new(
        code::INVALID_SCHEMA_NAME,
        format!("schema \"{name}\" does not exist"),
    )
}

pub(super) fn no_role(name: &str) -> SqlError {
    SqlError::new(
        code::UNDEFINED_OBJECT,
        format!("role \"{name}\" does not exist"),
    )
}

/// A grantee's name resolved: the special specifiers to the session's roles; every
/// named role must exist.
fn resolve(db: &Database, name: &str, current: &str, session: &str) -> SqlResult<String> {
    let name = match name {
        "\u{0}current_user" => current,
        "\u{0}session_user" => session,
        other => other,
    };
    if name.is_empty() {
        return Ok(String::new());
    }
    if find(db, name).is_none() {
        return Err(no_role(name));
    }
    Ok(name.to_string())
}

/// `resolve` of every name of a list.
fn resolve_all(
    db: &Database,
    names: &[String],
    auth: &Authority,
    session_user: &str,
) -> SqlResult<Vec<String>> {
    names
        .iter()
        .map(|n| resolve(db, n, &auth.user, session_user))
        .collect()
}

/// Runs a GRANT or REVOKE (committed at once).
pub(crate) fn run(
    db: &Database,
    auth: &Authority,
    session_user: &str,
    stmt: GrantStatement,
) -> SqlResult<Output> {
    let mut out = Output::tag(command(&stmt));
    match stmt {
        GrantStatement::Defaults {
            roles,
            schema,
            change,
        } => alter_defaults(
            db,
            auth,
            session_user,
            roles,
            schema,
            *change,
            &mut out.notices,
        )?,
        GrantStatement::Privileges {
            grant,
            privs,
            columns,
            target,
            grantees,
            option,
            cascade,
        } => {
            let grantees = resolve_all(db, &grantees, auth, session_user)?;
            let objects = objects_of(db, &target)?;
            for (kind, name, rel) in objects {
                let all = match rel {
                    Some(k) => k.owner_default(),
                    None => bits::USAGE | bits::CREATE,
                };
                let wanted = match privs {
                    None => all,
                    Some(0) => 0,
                    Some(p) => {
                        check_kind(p, rel, &name, &target, &mut out.notices)?;
                        p & all
                    }
                };
                let cols = column_privileges(db, &name, &columns)?;
                let change = Change {
                    grant,
                    privs: wanted,
                    columns: cols,
                    option,
                    cascade,
                    grantees: &grantees,
                    asked_all: privs.is_none(),
                };
                apply_acl(db, auth, kind, &name, rel, &change, &mut out.notices)?;
            }
        }
        GrantStatement::Roles {
            grant,
            roles,
            members,
            admin,
        } => {
            let roles = resolve_all(db, &roles, auth, session_user)?;
            let members = resolve_all(db, &members, auth, session_user)?;
            for r in roles.iter().chain(&members) {
                if r.is_empty() {
                    return Err(SqlError::new(
                        code::INVALID_GRANT_OPERATION,
                        "role \"public\" does not exist",
                    ));
                }
            }
            for role in &roles {
                may_admin(auth, db, role)?;
            }
            let grantor = auth.user.clone();
            let notices = &mut out.notices;
            db.change_members::<SqlError>(|p, _| {
                member_changes(p, &roles, &members, grant, admin, &grantor, notices)
            })?;
        }
    }
    Ok(out)
}

/// ALTER DEFAULT PRIVILEGES [FOR ROLE …] [IN SCHEMA public] GRANT or REVOKE: the
/// entries for the tables or sequences the roles create from now on.
fn alter_defaults(
    db: &Database,
    auth: &Authority,
    session_user: &str,
    roles: Vec<String>,
    schema: bool,
    change: GrantStatement,
    notices: &mut Vec<String>,
) -> SqlResult<()> {
    let GrantStatement::Privileges {
        grant,
        privs,
        columns: _,
        target,
        grantees,
        option,
        cascade,
    } = change
    else {
        return Err(SqlError::syntax(
            "ALTER DEFAULT PRIVILEGES takes GRANT or REVOKE",
        ));
    };
    let kind = if target == Target::DefaultSequences {
        RelKind::Sequence
    } else {
        RelKind::Table
    };
    let objtype = if kind == RelKind::Sequence {
        b'S'
    } else {
        b'r'
    };
    let all = kind.owner_default();
    let wanted = match privs {
        None => all,
        Some(p) => {
            check_kind(p, Some(kind), "", &target, notices)?;
            p & all
        }
    };
    let roles = if roles.is_empty() {
        vec![auth.user.clone()]
    } else {
        resolve_all(db, &roles, auth, session_user)?
    };
    let grantees = resolve_all(db, &grantees, auth, session_user)?;
    for role in roles {
        if !auth.is_member(&role) {
            return Err(SqlError::new(
                code::INSUFFICIENT_PRIVILEGE,
                format!("must be member of role \"{role}\""),
            ));
        }
        let base = if schema {
            Vec::new()
        } else {
            items_of(&ObjectAcl::owned_by(&role), all)
        };
        let key = (
            role.clone(),
            if schema {
                PUBLIC_SCHEMA.to_string()
            } else {
                String::new()
            },
            objtype,
        );
        db.change_default_acl::<SqlError>(key, |old| {
            let mut items = old.cloned().unwrap_or_else(|| base.clone());
            for g in &grantees {
                if grant {
                    grant_item(&mut items, g, &role, wanted, option)?;
                } else {
                    revoke_item(&mut items, g, &role, wanted, option, cascade, &role)?;
                }
            }
            Ok((items != base).then_some(items))
        })?;
    }
    Ok(())
}

/// Each column named, by its stored position: (privileges, position, name).
fn column_privileges(
    db: &Database,
    name: &str,
    columns: &[(u16, Vec<String>)],
) -> SqlResult<Vec<(u16, u32, String)>> {
    let mut cols: Vec<(u16, u32, String)> = Vec::new();
    if !columns.is_empty() {
        let positions = crate::privileges::column_positions(db, name).unwrap_or_default();
        for (bit, names) in columns {
            for c in names {
                let Some((_, at)) = positions.iter().find(|(n, _)| n == c) else {
                    return Err(SqlError::new(
                        code::UNDEFINED_COLUMN,
                        format!("column \"{c}\" of relation \"{name}\" does not exist"),
                    ));
                };
                match cols.iter_mut().find(|x| x.1 == *at) {
                    Some(x) => x.0 |= bit,
                    None => cols.push((*bit, *at, c.clone())),
                }
            }
        }
    }
    Ok(cols)
}

/// GRANT or REVOKE role TO role: the memberships it changes, with PostgreSQL's notices
/// for those already there or not there.
fn member_changes(
    p: &walden::Privileges,
    roles: &[String],
    members: &[String],
    grant: bool,
    admin: bool,
    grantor: &str,
    notices: &mut Vec<String>,
) -> SqlResult<Vec<MemberChange>> {
    let mut changes = Vec::new();
    for role in roles {
        for member in members {
            let key = (role.clone(), member.clone());
            let have = p.members.get(&key);
            if grant {
                if crate::privileges::is_member_of(p, role, member) {
                    return Err(SqlError::new(
                        code::INVALID_GRANT_OPERATION,
                        format!("role \"{role}\" is a member of role \"{member}\""),
                    ));
                }
                if let Some(m) = have {
                    if m.admin || !admin {
                        notices.push(format!(
                            "NOTICE:  role \"{member}\" is already a member of role \"{role}\""
                        ));
                        continue;
                    }
                }
                changes.push(MemberChange {
                    role: role.clone(),
                    member: member.clone(),
                    how: Some(Membership {
                        grantor: grantor.to_string(),
                        admin,
                    }),
                });
            } else {
                let Some(m) = have else {
                    notices.push(format!(
                        "WARNING:  role \"{member}\" is not a member of role \"{role}\""
                    ));
                    continue;
                };
                let how = admin.then(|| Membership {
                    grantor: m.grantor.clone(),
                    admin: false,
                });
                changes.push(MemberChange {
                    role: role.clone(),
                    member: member.clone(),
                    how,
                });
            }
        }
    }
    Ok(changes)
}

/// PostgreSQL 15's check for granting a role: a superuser role is a superuser's; any
/// other needs CREATEROLE or ADMIN OPTION on it.
fn may_admin(auth: &Authority, db: &Database, role: &str) -> SqlResult<()> {
    if auth.superuser {
        return Ok(());
    }
    let def = find(db, role).ok_or_else(|| no_role(role))?;
    if def.superuser {
        return Err(SqlError::new(
            code::INSUFFICIENT_PRIVILEGE,
            "must be superuser to alter superusers",
        ));
    }
    let me = find(db, &auth.user);
    if me.is_some_and(|m| m.createrole) {
        return Ok(());
    }
    let admin = auth
        .privileges
        .members
        .iter()
        .any(|((r, m), how)| r == role && how.admin && auth.is_member(m));
    if admin {
        Ok(())
    } else {
        Err(SqlError::new(
            code::INSUFFICIENT_PRIVILEGE,
            format!("must have admin option on role \"{role}\""),
        ))
    }
}

/// The objects a target names: (kind, name, relation kind or None for a schema).
fn objects_of(
    db: &Database,
    target: &Target,
) -> SqlResult<Vec<(ObjectKind, String, Option<RelKind>)>> {
    let rel = |name: &String| -> SqlResult<(ObjectKind, String, Option<RelKind>)> {
        match crate::privileges::rel_kind(db, name) {
            Some(k) => Ok((ObjectKind::Relation, name.clone(), Some(k))),
            None => Err(SqlError::new(
                code::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            )),
        }
    };
    Ok(match target {
        Target::Tables(names) => names.iter().map(rel).collect::<SqlResult<_>>()?,
        Target::Sequences(names) => {
            let mut out = Vec::new();
            for n in names {
                let o = rel(n)?;
                if o.2 != Some(RelKind::Sequence) {
                    return Err(SqlError::new(
                        code::WRONG_OBJECT_TYPE,
                        format!("\"{n}\" is not a sequence"),
                    ));
                }
                out.push(o);
            }
            out
        }
        Target::Schemas(names) => {
            let mut out = Vec::new();
            for n in names {
                if n != PUBLIC_SCHEMA {
                    return Err(no_schema(n));
                }
                out.push((ObjectKind::Schema, n.clone(), None));
            }
            out
        }
        Target::AllTables | Target::AllSequences => {
            let want_seq = *target == Target::AllSequences;
            let mut names: Vec<String> = if want_seq {
                db.sequences().into_iter().map(|s| s.def.name).collect()
            } else {
                let mut v = db.table_names();
                v.extend(db.views().into_iter().map(|v| v.name));
                v
            };
            names.sort();
            names.iter().map(rel).collect::<SqlResult<_>>()?
        }
        Target::DefaultTables | Target::DefaultSequences => Vec::new(),
    })
}

/// A privilege bit's name.
pub(super) fn privilege_word(bit: u16) -> &'static str {
    match bit {
        bits::SELECT => "SELECT",
        bits::INSERT => "INSERT",
        bits::UPDATE => "UPDATE",
        bits::DELETE => "DELETE",
        bits::TRUNCATE => "TRUNCATE",
        bits::REFERENCES => "REFERENCES",
        bits::TRIGGER => "TRIGGER",
        bits::USAGE => "USAGE",
        _ => "CREATE",
    }
}

/// The first of `privs` in PostgreSQL's order (`ACL_ALL_RIGHTS_STR`).
pub(super) fn first_bit(privs: u16) -> Option<u16> {
    [
        bits::INSERT,
        bits::SELECT,
        bits::UPDATE,
        bits::DELETE,
        bits::TRUNCATE,
        bits::REFERENCES,
        bits::TRIGGER,
        bits::USAGE,
        bits::CREATE,
    ]
    .into_iter()
    .find(|b| privs & b != 0)
}

/// PostgreSQL's checks of the privileges named against the object's kind.
fn check_kind(
    privs: u16,
    rel: Option<RelKind>,
    name: &str,
    target: &Target,
    notices: &mut Vec<String>,
) -> SqlResult<()> {
    let word = privilege_word;
    let first_bad = |allowed: u16| first_bit(privs & !allowed);
    match rel {
        Some(RelKind::Sequence) => {
            if let Some(bad) = first_bad(RelKind::Sequence.owner_default()) {
                if matches!(
                    target,
                    Target::Sequences(_) | Target::AllSequences | Target::DefaultSequences
                ) {
                    return Err(SqlError::new(
                        code::INVALID_GRANT_OPERATION,
                        format!("invalid privilege type {} for sequence", word(bad)),
                    ));
                }
                notices.push(format!(
                    "WARNING:  sequence \"{name}\" only supports USAGE, SELECT, and UPDATE privileges"
                ));
            }
        }
        Some(k) => {
            if let Some(bad) = first_bad(k.owner_default()) {
                return Err(SqlError::new(
                    code::INVALID_GRANT_OPERATION,
                    format!("invalid privilege type {} for table", word(bad)),
                ));
            }
        }
        None => {
            if let Some(bad) = first_bad(bits::USAGE | bits::CREATE) {
                return Err(SqlError::new(
                    code::INVALID_GRANT_OPERATION,
                    format!("invalid privilege type {} for schema", word(bad)),
                ));
            }
        }
    }
    Ok(())
}
