//! The role relations (`pg_roles`, `pg_authid`, `pg_user`, `pg_shadow`, `pg_group`,
//! `pg_auth_members`) and `pg_default_acl`.

use walden::Value;

use super::*;

/// `pg_default_acl`: ALTER DEFAULT PRIVILEGES' entries.
pub(super) fn pg_default_acl(snap: &Snapshot) -> VirtualRelation {
    relation(
        &[
            ("oid", OID),
            ("defaclrole", OID),
            ("defaclnamespace", OID),
            ("defaclobjtype", CHAR),
            ("defaclacl", TEXT),
        ],
        snap.privileges
            .defaults
            .iter()
            .enumerate()
            .map(|(n, ((role, schema, kind), items))| {
                let acl = walden::ObjectAcl {
                    owner: role.clone(),
                    acl: Some(items.clone()),
                    columns: Default::default(),
                };
                vec![
                    o(DEFAULT_ACL_BASE + n as i64),
                    o(snap.role_oid(role)),
                    o(if schema.is_empty() {
                        0
                    } else {
                        PUBLIC_NAMESPACE
                    }),
                    t(&(*kind as char).to_string()),
                    crate::acl::acl_text(&acl).map_or(Value::Null, |a| t(&a)),
                ]
            })
            .collect(),
    )
}

/// The OIDs of `pg_auth_members` rows.
const MEMBERSHIP_BASE: i64 = 9_000_000;

/// The OIDs of `pg_default_acl` rows.
const DEFAULT_ACL_BASE: i64 = 9_100_000;

/// The role relations, PostgreSQL's columns in its order. `pg_authid` and `pg_shadow`
/// (the verifiers) are a superuser's to read; `pg_roles` and `pg_user` show
/// `********`, as PostgreSQL's do. `pg_auth_members` lists the memberships (OIDs from
/// `MEMBERSHIP_BASE`), `pg_group` each role that cannot log in with its members.
pub(super) fn role_relation(name: &str, snap: &Snapshot) -> VirtualRelation {
    let mut r = match name {
        "pg_roles" => pg_roles(snap),
        "pg_authid" => pg_authid(snap),
        "pg_user" | "pg_shadow" => pg_user(name, snap),
        "pg_group" => pg_group(snap),
        _ => pg_auth_members(snap),
    };
    r.superuser_only = match name {
        "pg_authid" => Some("table pg_authid"),
        "pg_shadow" => Some("view pg_shadow"),
        _ => None,
    };
    r
}

/// A role's VALID UNTIL, NULL for none.
fn until(r: &walden::RoleDef) -> Value {
    r.valid_until.map_or(Value::Null, Value::Timestamptz)
}

/// What `pg_roles` and `pg_user` show for a password.
fn stars() -> Value {
    t("********")
}

/// A role's SCRAM verifier, NULL for none.
fn verifier(r: &walden::RoleDef) -> Value {
    r.password.as_deref().map_or(Value::Null, t)
}

/// `pg_roles`: every role, its password hidden.
fn pg_roles(snap: &Snapshot) -> VirtualRelation {
    relation(
        &[
            ("rolname", NAME),
            ("rolsuper", BOOL),
            ("rolinherit", BOOL),
            ("rolcreaterole", BOOL),
            ("rolcreatedb", BOOL),
            ("rolcanlogin", BOOL),
            ("rolreplication", BOOL),
            ("rolconnlimit", I4),
            ("rolpassword", TEXT),
            ("rolvaliduntil", TIMESTAMPTZ),
            ("rolbypassrls", BOOL),
            ("rolconfig", TEXT),
            ("oid", OID),
        ],
        snap.roles
            .iter()
            .map(|(oid, r)| {
                vec![
                    t(&r.name),
                    b(r.superuser),
                    b(r.inherit),
                    b(r.createrole),
                    b(r.createdb),
                    b(r.login),
                    b(r.replication),
                    i4(i64::from(r.connection_limit)),
                    stars(),
                    until(r),
                    b(r.bypassrls),
                    Value::Null,
                    o(*oid),
                ]
            })
            .collect(),
    )
}

/// `pg_authid`: every role with its verifier.
fn pg_authid(snap: &Snapshot) -> VirtualRelation {
    relation(
        &[
            ("oid", OID),
            ("rolname", NAME),
            ("rolsuper", BOOL),
            ("rolinherit", BOOL),
            ("rolcreaterole", BOOL),
            ("rolcreatedb", BOOL),
            ("rolcanlogin", BOOL),
            ("rolreplication", BOOL),
            ("rolbypassrls", BOOL),
            ("rolconnlimit", I4),
            ("rolpassword", TEXT),
            ("rolvaliduntil", TIMESTAMPTZ),
        ],
        snap.roles
            .iter()
            .map(|(oid, r)| {
                vec![
                    o(*oid),
                    t(&r.name),
                    b(r.superuser),
                    b(r.inherit),
                    b(r.createrole),
                    b(r.createdb),
                    b(r.login),
                    b(r.replication),
                    b(r.bypassrls),
                    i4(i64::from(r.connection_limit)),
                    verifier(r),
                    until(r),
                ]
            })
            .collect(),
    )
}

/// `pg_user` (password hidden) and `pg_shadow` (the verifier): the roles that can log in.
fn pg_user(name: &str, snap: &Snapshot) -> VirtualRelation {
    relation(
        &[
            ("usename", NAME),
            ("usesysid", OID),
            ("usecreatedb", BOOL),
            ("usesuper", BOOL),
            ("userepl", BOOL),
            ("usebypassrls", BOOL),
            ("passwd", TEXT),
            ("valuntil", TIMESTAMPTZ),
            ("useconfig", TEXT),
        ],
        snap.roles
            .iter()
            .filter(|(_, r)| r.login)
            .map(|(oid, r)| {
                vec![
                    t(&r.name),
                    o(*oid),
                    b(r.createdb),
                    b(r.superuser),
                    b(r.replication),
                    b(r.bypassrls),
                    if name == "pg_user" {
                        stars()
                    } else {
                        verifier(r)
                    },
                    until(r),
                    Value::Null,
                ]
            })
            .collect(),
    )
}

/// `pg_group`: each role that cannot log in, with its members.
fn pg_group(snap: &Snapshot) -> VirtualRelation {
    relation(
        &[("groname", NAME), ("grosysid", OID), ("grolist", TEXT)],
        snap.roles
            .iter()
            .filter(|(_, r)| !r.login)
            .map(|(oid, r)| {
                let members: Vec<String> = snap
                    .privileges
                    .members
                    .keys()
                    .filter(|(role, _)| *role == r.name)
                    .map(|(_, m)| snap.role_oid(m).to_string())
                    .collect();
                vec![
                    t(&r.name),
                    o(*oid),
                    t(&format!("{{{}}}", members.join(","))),
                ]
            })
            .collect(),
    )
}

/// `pg_auth_members`: the memberships.
fn pg_auth_members(snap: &Snapshot) -> VirtualRelation {
    relation(
        &[
            ("oid", OID),
            ("roleid", OID),
            ("member", OID),
            ("grantor", OID),
            ("admin_option", BOOL),
        ],
        snap.privileges
            .members
            .iter()
            .enumerate()
            .map(|(n, ((role, member), how))| {
                vec![
                    o(MEMBERSHIP_BASE + n as i64),
                    o(snap.role_oid(role)),
                    o(snap.role_oid(member)),
                    o(snap.role_oid(&how.grantor)),
                    b(how.admin),
                ]
            })
            .collect(),
    )
}
