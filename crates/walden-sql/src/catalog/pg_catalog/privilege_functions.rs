//! The privilege inquiry functions, PostgreSQL's: `has_table_privilege`,
//! `has_column_privilege`, `has_any_column_privilege`, `has_sequence_privilege`, `has_schema_privilege` and `pg_has_role`, each with the
//! user given (a name or an OID) or the current user's, the object by name or OID,
//! and the privileges as text (`'SELECT, INSERT WITH GRANT OPTION'`). They read the
//! statement's catalog snapshot.

use std::collections::BTreeMap;
use std::sync::Arc;

use walden::privilege::bits;
use walden::Value;

use crate::acl::{items_of, relation_acl, schema_acl, Authority, RelKind};
use crate::error::{code, SqlError, SqlResult};
use crate::pg_catalog::Snapshot;

/// Which inquiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inquiry {
    Table,
    /// `has_column_privilege([user,] table, column, privileges)`.
    Column,
    /// `has_any_column_privilege([user,] table, privileges)`.
    AnyColumn,
    Sequence,
    Schema,
    Role,
}

/// The privileges a text names, as bits with their grant options (PostgreSQL's
/// `convert_any_priv_string`): a comma-separated list, case-insensitive, each
/// optionally `WITH GRANT OPTION`.
fn parse_privs(text: &str, allowed: &[(&str, u16)]) -> SqlResult<(u16, u16)> {
    let (mut privs, mut options) = (0, 0);
    for part in text.split(',') {
        let lower = part.trim().to_ascii_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        let (name, grant) = match words.as_slice() {
            [name] => (*name, false),
            [name, "with", "grant", "option"] => (*name, true),
            _ => ("", false),
        };
        let Some((_, bit)) = allowed.iter().find(|(n, _)| *n == name) else {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                format!("unrecognized privilege type: \"{}\"", part.trim()),
            ));
        };
        if grant {
            options |= bit;
        } else {
            privs |= bit;
        }
    }
    Ok((privs, options))
}

const TABLE_PRIVS: &[(&str, u16)] = &[
    ("select", bits::SELECT),
    ("insert", bits::INSERT),
    ("update", bits::UPDATE),
    ("delete", bits::DELETE),
    ("truncate", bits::TRUNCATE),
    ("references", bits::REFERENCES),
    ("trigger", bits::TRIGGER),
];
const COLUMN_PRIVS: &[(&str, u16)] = &[
    ("select", bits::SELECT),
    ("insert", bits::INSERT),
    ("update", bits::UPDATE),
    ("references", bits::REFERENCES),
];
const SEQUENCE_PRIVS: &[(&str, u16)] = &[
    ("usage", bits::USAGE),
    ("select", bits::SELECT),
    ("update", bits::UPDATE),
];
const SCHEMA_PRIVS: &[(&str, u16)] = &[("create", bits::CREATE), ("usage", bits::USAGE)];

/// The user an inquiry is about: its first argument when it has one more than the
/// two-argument form, else the current user.
fn user_of(snap: &Snapshot, arg: &Value) -> SqlResult<String> {
    match arg {
        Value::Text(name) => {
            if snap.roles.iter().any(|(_, r)| r.name == *name) || name == "public" {
                Ok(name.clone())
            } else {
                Err(SqlError::new(
                    code::UNDEFINED_OBJECT,
                    format!("role \"{name}\" does not exist"),
                ))
            }
        }
        v => match crate::value::as_i64(v) {
            Some(oid) => snap.role_name(oid).map(str::to_string).ok_or_else(|| {
                SqlError::new(
                    code::UNDEFINED_OBJECT,
                    format!("role with OID {oid} does not exist"),
                )
            }),
            None => Err(SqlError::new(
                code::INVALID_PARAMETER,
                "a role is a name or an OID",
            )),
        },
    }
}

fn authority(snap: &Snapshot, user: &str) -> Authority {
    let roles: BTreeMap<String, walden::RoleDef> = snap
        .roles
        .iter()
        .map(|(_, r)| (r.name.clone(), r.clone()))
        .collect();
    Authority::from_state(0, snap.privileges.clone(), Arc::new(roles), user)
}

/// Runs an inquiry: `args` are ([user,] object, privileges); None where an argument is
/// NULL (the answer is NULL then).
pub fn call(
    which: Inquiry,
    args: &[Value],
    snap: &Snapshot,
    current_user: &str,
) -> SqlResult<Value> {
    if args.iter().any(|a| matches!(a, Value::Null)) {
        return Ok(Value::Null);
    }
    // A column inquiry's column comes between the table and the privileges.
    let (args, column) = match (which, args) {
        (Inquiry::Column, [rest @ .., c, p]) if !rest.is_empty() => {
            let mut v: Vec<Value> = rest.to_vec();
            v.push(p.clone());
            (v, Some(c))
        }
        _ => (args.to_vec(), None),
    };
    let (user, object, privs) = match args.as_slice() {
        [o, p] => (current_user.to_string(), o, p),
        [u, o, p] => (user_of(snap, u)?, o, p),
        _ => return Ok(Value::Null),
    };
    let Value::Text(privs) = privs else {
        return Err(SqlError::new(
            code::INVALID_PARAMETER,
            "privileges are given as text",
        ));
    };
    let auth = authority(snap, &user);
    let answer = match which {
        Inquiry::Table | Inquiry::Sequence | Inquiry::Column | Inquiry::AnyColumn => {
            relation_inquiry(which, object, column, privs, snap, &auth)?
        }
        Inquiry::Schema => Some(schema_inquiry(object, privs, snap, &auth)?),
        Inquiry::Role => Some(role_inquiry(object, privs, snap, &auth)?),
    };
    Ok(answer.map_or(Value::Null, Value::Bool))
}

/// Whether `auth` holds any of the privileges `want`, or the grant option of any of
/// `options`, among `items` (an owner's grant options are all of them).
fn held(
    auth: &Authority,
    items: Vec<walden::AclItem>,
    owner: &str,
    want: u16,
    options: u16,
) -> bool {
    if auth.superuser {
        return true;
    }
    let mut got = 0;
    let mut grantable = 0;
    for i in items {
        if i.grantee.is_empty() || auth.has_privs_of(&i.grantee) {
            got |= i.privs;
            grantable |= i.grantable;
        }
    }
    if auth.has_privs_of(owner) {
        grantable = bits::ALL;
    }
    // PostgreSQL's answer is true when any of the privileges named is held.
    (want != 0 && got & want != 0) || (options != 0 && grantable & options != 0)
}

/// has_table_privilege, has_sequence_privilege, has_column_privilege and
/// has_any_column_privilege; None (NULL) for an OID or column number that names nothing.
fn relation_inquiry(
    which: Inquiry,
    object: &Value,
    column: Option<&Value>,
    privs: &str,
    snap: &Snapshot,
    auth: &Authority,
) -> SqlResult<Option<bool>> {
    let name = match object {
        Value::Text(t) => crate::catalog::relation_name_of_text(t)?.1,
        v => match crate::value::as_i64(v).and_then(|oid| snap.by_oid(oid)) {
            Some(r) => r.name.clone(),
            None => return Ok(None),
        },
    };
    let Some(rel) = snap.by_name(&name) else {
        return Err(SqlError::new(
            code::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        ));
    };
    let kind = match rel.kind {
        crate::pg_catalog::RelKind::Sequence => RelKind::Sequence,
        crate::pg_catalog::RelKind::View => RelKind::View,
        _ => RelKind::Table,
    };
    if which == Inquiry::Sequence && kind != RelKind::Sequence {
        return Err(SqlError::new(
            code::WRONG_OBJECT_TYPE,
            format!("\"{name}\" is not a sequence"),
        ));
    }
    let allowed = match which {
        Inquiry::Sequence => SEQUENCE_PRIVS,
        Inquiry::Column | Inquiry::AnyColumn => COLUMN_PRIVS,
        _ => TABLE_PRIVS,
    };
    let (want, options) = parse_privs(privs, allowed)?;
    let acl = relation_acl(&snap.privileges, &name);
    let table = held(
        auth,
        items_of(&acl, kind.owner_default()),
        &acl.owner,
        want,
        options,
    );
    Ok(Some(match which {
        // The table's privileges, or the column's own.
        Inquiry::Column => {
            let found = match column {
                Some(Value::Text(c)) => rel.columns.iter().find(|a| a.name == *c),
                Some(v) => crate::value::as_i64(v)
                    .and_then(|n| usize::try_from(n - 1).ok())
                    .and_then(|i| rel.columns.get(i)),
                None => None,
            };
            let Some(a) = found else {
                if let Some(Value::Text(c)) = column {
                    return Err(SqlError::new(
                        code::UNDEFINED_COLUMN,
                        format!("column \"{c}\" of relation \"{name}\" does not exist"),
                    ));
                }
                return Ok(None);
            };
            table || {
                let items = acl.columns.get(&a.position).cloned().unwrap_or_default();
                held(auth, items, "", want, options)
            }
        }
        Inquiry::AnyColumn => {
            table
                || acl
                    .columns
                    .values()
                    .any(|items| held(auth, items.clone(), "", want, options))
        }
        _ => table,
    }))
}

/// has_schema_privilege.
fn schema_inquiry(
    object: &Value,
    privs: &str,
    snap: &Snapshot,
    auth: &Authority,
) -> SqlResult<bool> {
    let name = match object {
        Value::Text(t) => t.clone(),
        v => crate::value::as_i64(v)
            .map(crate::pg_catalog::namespace_name)
            .unwrap_or_default(),
    };
    let (want, options) = parse_privs(privs, SCHEMA_PRIVS)?;
    Ok(match name.as_str() {
        crate::acl::PUBLIC_SCHEMA => {
            let acl = schema_acl(&snap.privileges, &name);
            held(
                auth,
                items_of(&acl, bits::USAGE | bits::CREATE),
                &acl.owner,
                want,
                options,
            )
        }
        // The system's schemas: USAGE for everyone, CREATE for superusers.
        "pg_catalog" | "information_schema" | "pg_toast" => {
            auth.superuser || (want & bits::USAGE != 0 && options == 0)
        }
        _ => {
            return Err(SqlError::new(
                code::INVALID_SCHEMA_NAME,
                format!("schema \"{name}\" does not exist"),
            ))
        }
    })
}

/// pg_has_role.
fn role_inquiry(object: &Value, privs: &str, snap: &Snapshot, auth: &Authority) -> SqlResult<bool> {
    let role = user_of(snap, object)?;
    let mode = privs.trim().to_ascii_lowercase();
    Ok(match mode.as_str() {
        "member" | "set" => auth.is_member(&role),
        "usage" => auth.has_privs_of(&role),
        "member with admin option"
        | "usage with admin option"
        | "member with grant option"
        | "usage with grant option" => {
            auth.superuser
                || snap
                    .privileges
                    .members
                    .iter()
                    .any(|((r, m), how)| *r == role && how.admin && auth.is_member(m))
        }
        _ => {
            return Err(SqlError::new(
                code::INVALID_PARAMETER,
                format!("unrecognized privilege type: \"{}\"", privs.trim()),
            ))
        }
    })
}
