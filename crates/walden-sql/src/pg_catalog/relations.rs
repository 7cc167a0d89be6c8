//! The rows of each virtual relation. Catalog column types map onto SQL types Walden
//! has: `oid` and `regclass` are int8, `name`, `"char"`, `text[]`, `int2vector` and
//! `pg_node_tree` are text (arrays in their `{a,b}` text form), `float4` is float8.
//! Relations Walden has nothing for (policies, triggers, publications, inheritance,
//! partitioning, extended statistics, comments) have their columns and no rows.

use walden::Value;

use super::types::{self, DEFAULT_COLLATION_OID, TYPES};
use super::*;
use crate::types::SqlType;

/// A relation's columns and rows.
#[derive(Debug, Clone)]
pub struct VirtualRelation {
    pub columns: Vec<(String, SqlType)>,
    pub rows: Rows,
    /// Readable by superusers only (`pg_authid`, `pg_shadow`: they hold the password
    /// verifiers), and what PostgreSQL calls the relation in its refusal ("table
    /// pg_authid"). Checked when the statement runs, as PostgreSQL checks a relation's
    /// privileges when its executor starts.
    pub superuser_only: Option<&'static str>,
}

/// Where a virtual relation's rows come from.
#[derive(Debug, Clone)]
pub enum Rows {
    /// Made with the statement's snapshot.
    Made(Vec<Vec<Value>>),
    /// The session's settings as the statement sees them when it runs (`pg_settings`,
    /// which PostgreSQL reads from `pg_show_all_settings()`): [`settings_rows`].
    Settings,
    /// The session's open cursors when the statement started (`pg_cursors`):
    /// [`cursor_rows`].
    Cursors,
}

const OID: SqlType = SqlType::Int8;
const NAME: SqlType = SqlType::Text;
const CHAR: SqlType = SqlType::Text;
const TEXT: SqlType = SqlType::Text;
const BOOL: SqlType = SqlType::Bool;
const I2: SqlType = SqlType::Int2;
const I4: SqlType = SqlType::Int4;
const F8: SqlType = SqlType::Float8;

fn o(x: i64) -> Value {
    Value::Int8(x)
}
fn t(s: &str) -> Value {
    Value::Text(s.to_string())
}
fn b(x: bool) -> Value {
    Value::Bool(x)
}
fn i2(x: i64) -> Value {
    Value::Int2(x as i16)
}
fn i4(x: i64) -> Value {
    Value::Int4(x as i32)
}

fn relation(columns: &[(&str, SqlType)], rows: Vec<Vec<Value>>) -> VirtualRelation {
    debug_assert!(rows.iter().all(|r| r.len() == columns.len()));
    VirtualRelation {
        columns: columns.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        rows: Rows::Made(rows),
        superuser_only: None,
    }
}

/// `pg_settings`' columns (some of PostgreSQL's).
const SETTINGS_COLUMNS: &[(&str, SqlType)] = &[
    ("name", TEXT),
    ("setting", TEXT),
    ("unit", TEXT),
    ("short_desc", TEXT),
    ("context", TEXT),
    ("vartype", TEXT),
    ("reset_val", TEXT),
    ("pending_restart", BOOL),
];

/// `pg_cursors`' columns.
const CURSOR_COLUMNS: &[(&str, SqlType)] = &[
    ("name", TEXT),
    ("statement", TEXT),
    ("is_holdable", BOOL),
    ("is_binary", BOOL),
    ("is_scrollable", BOOL),
    ("creation_time", SqlType::Timestamptz),
];

/// `pg_cursors`' rows: the session's open cursors.
pub fn cursor_rows(cursors: &[crate::pg_catalog::CursorInfo]) -> Vec<Vec<Value>> {
    cursors
        .iter()
        .map(|c| {
            vec![
                t(&c.name),
                t(&c.statement),
                b(c.holdable),
                b(c.binary),
                b(c.scrollable),
                Value::Timestamptz(c.created),
            ]
        })
        .collect()
}

/// `pg_settings`' rows: every setting, by name in any case, as PostgreSQL orders them.
pub fn settings_rows(all: Vec<crate::settings::Shown>) -> Vec<Vec<Value>> {
    let mut rows: Vec<(String, Vec<Value>)> = all
        .into_iter()
        .map(|s| {
            let def = s.def;
            let row = vec![
                Value::Text(s.name.clone()),
                Value::Text(s.setting),
                def.unit.map_or(Value::Null, t),
                t(def.description),
                t(def.context.name()),
                t(def.vartype),
                Value::Text(s.reset),
                b(false),
            ];
            (s.name.to_lowercase(), row)
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows.into_iter().map(|(_, r)| r).collect()
}

/// The relation `schema.name` (`schema` None: unqualified, found in `pg_catalog`
/// first, as PostgreSQL's search path does implicitly).
pub fn lookup(schema: Option<&str>, name: &str, snap: &Snapshot) -> Option<VirtualRelation> {
    match schema {
        Some("pg_catalog") | None => pg_catalog(name, snap),
        Some("information_schema") => information_schema(name, snap),
        _ => None,
    }
}

/// Whether `name` is a relation of `pg_catalog` (an unqualified name finds it before
/// any table of that name).
pub fn is_pg_catalog_name(name: &str) -> bool {
    pg_catalog(name, &Snapshot::default()).is_some()
}

fn pg_catalog(name: &str, snap: &Snapshot) -> Option<VirtualRelation> {
    Some(match name {
        "pg_class" => pg_class(snap),
        "pg_namespace" => relation(
            &[
                ("oid", OID),
                ("nspname", NAME),
                ("nspowner", OID),
                ("nspacl", TEXT),
            ],
            [
                (PG_CATALOG_NAMESPACE, "pg_catalog"),
                (PG_TOAST_NAMESPACE, "pg_toast"),
                (PUBLIC_NAMESPACE, "public"),
                (INFORMATION_SCHEMA_NAMESPACE, "information_schema"),
            ]
            .iter()
            .map(|(oid, n)| {
                if *oid == PUBLIC_NAMESPACE {
                    let acl = crate::privileges::schema_acl(&snap.privileges, n);
                    let text = crate::privileges::acl_text(&acl);
                    vec![
                        o(*oid),
                        t(n),
                        o(snap.role_oid(&acl.owner)),
                        text.map_or(Value::Null, |a| t(&a)),
                    ]
                } else {
                    vec![o(*oid), t(n), o(OWNER_OID), Value::Null]
                }
            })
            .collect(),
        ),
        "pg_attribute" => pg_attribute(snap),
        "pg_settings" => VirtualRelation {
            columns: SETTINGS_COLUMNS
                .iter()
                .map(|(n, t)| (n.to_string(), *t))
                .collect(),
            rows: Rows::Settings,
            superuser_only: None,
        },
        "pg_cursors" => VirtualRelation {
            columns: CURSOR_COLUMNS
                .iter()
                .map(|(n, t)| (n.to_string(), *t))
                .collect(),
            rows: Rows::Cursors,
            superuser_only: None,
        },
        "pg_attrdef" => pg_attrdef(snap),
        "pg_type" => pg_type(),
        "pg_sequence" => pg_sequence(snap),
        "pg_sequences" => pg_sequences(snap),
        "pg_depend" => pg_depend(snap),
        "pg_index" => pg_index(snap),
        "pg_constraint" => pg_constraint(snap),
        "pg_am" => relation(
            &[("oid", OID), ("amname", NAME), ("amtype", CHAR)],
            vec![
                vec![o(HEAP_AM), t("heap"), t("t")],
                vec![o(BTREE_AM), t("btree"), t("i")],
                vec![o(UNDO_AM), t("undo"), t("t")],
            ],
        ),
        "pg_collation" => relation(
            &[("oid", OID), ("collname", NAME), ("collnamespace", OID)],
            [
                (DEFAULT_COLLATION_OID, "default"),
                (950, "C"),
                (951, "POSIX"),
            ]
            .iter()
            .map(|(oid, n)| vec![o(*oid), t(n), o(PG_CATALOG_NAMESPACE)])
            .collect(),
        ),
        "pg_roles" | "pg_authid" | "pg_user" | "pg_shadow" | "pg_group" | "pg_auth_members" => {
            let mut r = roles(name, snap);
            r.superuser_only = match name {
                "pg_authid" => Some("table pg_authid"),
                "pg_shadow" => Some("view pg_shadow"),
                _ => None,
            };
            r
        }
        "pg_description" => relation(
            &[
                ("objoid", OID),
                ("classoid", OID),
                ("objsubid", I4),
                ("description", TEXT),
            ],
            Vec::new(),
        ),
        "pg_inherits" => relation(
            &[
                ("inhrelid", OID),
                ("inhparent", OID),
                ("inhseqno", I4),
                ("inhdetachpending", BOOL),
            ],
            Vec::new(),
        ),
        // No partitioned tables: pgbench reads it to learn pgbench_accounts is not one.
        "pg_partitioned_table" => relation(
            &[
                ("partrelid", OID),
                ("partstrat", CHAR),
                ("partnatts", I2),
                ("partdefid", OID),
                ("partattrs", TEXT),
                ("partclass", TEXT),
                ("partcollation", TEXT),
                ("partexprs", TEXT),
            ],
            Vec::new(),
        ),
        "pg_trigger" => relation(
            &[
                ("oid", OID),
                ("tgrelid", OID),
                ("tgparentid", OID),
                ("tgname", NAME),
                ("tgfoid", OID),
                ("tgenabled", CHAR),
                ("tgisinternal", BOOL),
            ],
            Vec::new(),
        ),
        "pg_default_acl" => relation(
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
                        crate::privileges::acl_text(&acl).map_or(Value::Null, |a| t(&a)),
                    ]
                })
                .collect(),
        ),
        "pg_policy" => relation(
            &[
                ("oid", OID),
                ("polname", NAME),
                ("polrelid", OID),
                ("polcmd", CHAR),
                ("polpermissive", BOOL),
                ("polroles", TEXT),
                ("polqual", TEXT),
                ("polwithcheck", TEXT),
            ],
            Vec::new(),
        ),
        "pg_statistic_ext" => relation(
            &[
                ("oid", OID),
                ("stxrelid", OID),
                ("stxname", NAME),
                ("stxnamespace", OID),
                ("stxowner", OID),
                ("stxstattarget", I4),
                ("stxkeys", TEXT),
                ("stxkind", TEXT),
            ],
            Vec::new(),
        ),
        "pg_publication" => relation(
            &[
                ("oid", OID),
                ("pubname", NAME),
                ("pubowner", OID),
                ("puballtables", BOOL),
                ("pubinsert", BOOL),
                ("pubupdate", BOOL),
                ("pubdelete", BOOL),
                ("pubtruncate", BOOL),
                ("pubviaroot", BOOL),
            ],
            Vec::new(),
        ),
        "pg_publication_rel" => relation(
            &[
                ("oid", OID),
                ("prpubid", OID),
                ("prrelid", OID),
                ("prqual", TEXT),
                ("prattrs", TEXT),
            ],
            Vec::new(),
        ),
        "pg_publication_namespace" => relation(
            &[("oid", OID), ("pnpubid", OID), ("pnnspid", OID)],
            Vec::new(),
        ),
        _ => return None,
    })
}

const TIMESTAMPTZ: SqlType = SqlType::Timestamptz;

/// The role relations, PostgreSQL's columns in its order. `pg_authid` and `pg_shadow`
/// (the verifiers) are a superuser's to read; `pg_roles` and `pg_user` show
/// `********`, as PostgreSQL's do. `pg_auth_members` lists the memberships (OIDs from
/// `MEMBERSHIP_BASE`), `pg_group` each role that cannot log in with its members.
/// The OIDs of `pg_auth_members` rows.
const MEMBERSHIP_BASE: i64 = 9_000_000;
/// The OIDs of `pg_default_acl` rows.
const DEFAULT_ACL_BASE: i64 = 9_100_000;

fn roles(name: &str, snap: &Snapshot) -> VirtualRelation {
    let until = |r: &walden::RoleDef| r.valid_until.map_or(Value::Null, Value::Timestamptz);
    let stars = || t("********");
    let verifier = |r: &walden::RoleDef| r.password.as_deref().map_or(Value::Null, t);
    let logins = || snap.roles.iter().filter(|(_, r)| r.login);
    match name {
        "pg_roles" => relation(
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
        ),
        "pg_authid" => relation(
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
        ),
        "pg_user" | "pg_shadow" => relation(
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
            logins()
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
        ),
        "pg_group" => relation(
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
        ),
        _ => relation(
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
        ),
    }
}

fn pg_class(snap: &Snapshot) -> VirtualRelation {
    let columns = [
        ("oid", OID),
        ("relname", NAME),
        ("relnamespace", OID),
        ("reltype", OID),
        ("reloftype", OID),
        ("relowner", OID),
        ("relam", OID),
        ("relfilenode", OID),
        ("reltablespace", OID),
        ("relpages", I4),
        ("reltuples", F8),
        ("reltoastrelid", OID),
        ("relhasindex", BOOL),
        ("relisshared", BOOL),
        ("relpersistence", CHAR),
        ("relkind", CHAR),
        ("relnatts", I2),
        ("relchecks", I2),
        ("relhasrules", BOOL),
        ("relhastriggers", BOOL),
        ("relhassubclass", BOOL),
        ("relrowsecurity", BOOL),
        ("relforcerowsecurity", BOOL),
        ("relispopulated", BOOL),
        ("relreplident", CHAR),
        ("relispartition", BOOL),
        ("relacl", TEXT),
        ("reloptions", TEXT),
        ("relpartbound", TEXT),
    ];
    let rows = snap
        .relations
        .iter()
        .map(|r| {
            let has_index = r.kind == RelKind::Table
                && snap
                    .relations
                    .iter()
                    .any(|x| x.index.as_ref().is_some_and(|i| i.table_oid == r.oid));
            let natts = match r.kind {
                RelKind::Sequence => 3,
                _ => r.columns.len() as i64,
            };
            let (owner, acl) = snap.owner_and_acl(r);
            vec![
                o(r.oid),
                t(&r.name),
                o(PUBLIC_NAMESPACE),
                o(0),
                o(0),
                o(owner),
                o(r.access_method),
                o(r.oid),
                o(0),
                i4(0),
                Value::Float8(r.rows),
                o(0),
                b(has_index),
                b(false),
                t("p"),
                t(r.kind.code()),
                i2(natts),
                i2(0),
                b(false),
                b(false),
                b(false),
                b(false),
                b(false),
                b(true),
                t(if r.kind == RelKind::Table { "d" } else { "n" }),
                b(false),
                acl.map_or(Value::Null, |a| t(&a)),
                Value::Null,
                Value::Null,
            ]
        })
        .collect();
    relation(&columns, rows)
}

fn pg_attribute(snap: &Snapshot) -> VirtualRelation {
    let columns = [
        ("attrelid", OID),
        ("attname", NAME),
        ("atttypid", OID),
        ("attlen", I2),
        ("attnum", I2),
        ("atttypmod", I4),
        ("attndims", I2),
        ("attnotnull", BOOL),
        ("atthasdef", BOOL),
        ("attidentity", CHAR),
        ("attgenerated", CHAR),
        ("attisdropped", BOOL),
        ("attislocal", BOOL),
        ("attinhcount", I4),
        ("attcollation", OID),
        // Column privileges (aclitem[] as text), NULL where a column has none.
        ("attacl", TEXT),
    ];
    let mut rows = Vec::new();
    for r in &snap.relations {
        for (i, a) in r.columns.iter().enumerate() {
            let (ty, typmod) = types::type_of(&a.ty);
            rows.push(vec![
                o(r.oid),
                t(&a.name),
                o(ty.oid),
                i2(ty.len.into()),
                i2(i as i64 + 1),
                i4(typmod.into()),
                i2(0),
                b(a.not_null),
                b(a.default.is_some()),
                t(&a.identity.map(String::from).unwrap_or_default()),
                t(""),
                b(false),
                b(true),
                i4(0),
                o(if ty.collatable {
                    DEFAULT_COLLATION_OID
                } else {
                    0
                }),
                snap.column_acl(r, a).map_or(Value::Null, Value::Text),
            ]);
        }
    }
    relation(&columns, rows)
}

fn pg_attrdef(snap: &Snapshot) -> VirtualRelation {
    let mut rows = Vec::new();
    for r in snap.relations.iter().filter(|r| r.kind == RelKind::Table) {
        for (i, a) in r.columns.iter().enumerate() {
            if let Some(d) = &a.default {
                let attnum = i as i64 + 1;
                rows.push(vec![
                    o(attrdef_oid(r.oid, attnum)),
                    o(r.oid),
                    i2(attnum),
                    t(d),
                ]);
            }
        }
    }
    relation(
        &[
            ("oid", OID),
            ("adrelid", OID),
            ("adnum", I2),
            ("adbin", TEXT),
        ],
        rows,
    )
}

/// Every sequence's definition.
fn pg_sequence(snap: &Snapshot) -> VirtualRelation {
    let rows = snap
        .relations
        .iter()
        .filter_map(|r| {
            let d = &r.sequence.as_ref()?.def;
            Some(vec![
                o(r.oid),
                o(sequence_type_oid(d.ty)),
                Value::Int8(d.start),
                Value::Int8(d.increment),
                Value::Int8(d.max_value),
                Value::Int8(d.min_value),
                Value::Int8(d.cache),
                b(d.cycle),
            ])
        })
        .collect();
    relation(
        &[
            ("seqrelid", OID),
            ("seqtypid", OID),
            ("seqstart", SqlType::Int8),
            ("seqincrement", SqlType::Int8),
            ("seqmax", SqlType::Int8),
            ("seqmin", SqlType::Int8),
            ("seqcache", SqlType::Int8),
            ("seqcycle", BOOL),
        ],
        rows,
    )
}

fn sequence_type_oid(ty: walden::SeqType) -> i64 {
    match ty {
        walden::SeqType::Int2 => 21,
        walden::SeqType::Int4 => 23,
        walden::SeqType::Int8 => 20,
    }
}

/// The view `pg_sequences`: each sequence with its counter (`last_value` NULL until
/// the first nextval, as PostgreSQL's).
fn pg_sequences(snap: &Snapshot) -> VirtualRelation {
    let rows = snap
        .relations
        .iter()
        .filter_map(|r| {
            let s = r.sequence.as_ref()?;
            let d = &s.def;
            Some(vec![
                t("public"),
                t(&r.name),
                t(OWNER_NAME),
                t(d.ty.name()),
                Value::Int8(d.start),
                Value::Int8(d.min_value),
                Value::Int8(d.max_value),
                Value::Int8(d.increment),
                b(d.cycle),
                Value::Int8(d.cache),
                if s.state.is_called {
                    Value::Int8(s.state.last_value)
                } else {
                    Value::Null
                },
            ])
        })
        .collect();
    relation(
        &[
            ("schemaname", NAME),
            ("sequencename", NAME),
            ("sequenceowner", NAME),
            ("data_type", TEXT),
            ("start_value", SqlType::Int8),
            ("min_value", SqlType::Int8),
            ("max_value", SqlType::Int8),
            ("increment_by", SqlType::Int8),
            ("cycle", BOOL),
            ("cache_size", SqlType::Int8),
            ("last_value", SqlType::Int8),
        ],
        rows,
    )
}

/// Dependencies: only a serial column's sequence on its column (deptype 'a', auto), the
/// one psql reads; PostgreSQL also records indexes, constraints, defaults and types.
fn pg_depend(snap: &Snapshot) -> VirtualRelation {
    let pg_class = 1259;
    let rows = snap
        .relations
        .iter()
        .filter_map(|r| {
            let owner = r.owner.as_ref()?;
            Some(vec![
                o(pg_class),
                o(r.oid),
                i4(0),
                o(pg_class),
                o(owner.table_oid),
                i4(owner.attnum.into()),
                t(&owner.deptype.to_string()),
            ])
        })
        .collect();
    relation(
        &[
            ("classid", OID),
            ("objid", OID),
            ("objsubid", I4),
            ("refclassid", OID),
            ("refobjid", OID),
            ("refobjsubid", I4),
            ("deptype", CHAR),
        ],
        rows,
    )
}

/// The types, as PostgreSQL 15's `pg_type` has them. Walden has no array, domain or
/// composite types: `typarray`, `typelem` (but `name`'s, `"char"`, as in PostgreSQL),
/// `typrelid` and `typbasetype` are 0. The I/O functions (`regproc`) are their names.
fn pg_type() -> VirtualRelation {
    const REGPROC: SqlType = TEXT;
    let columns = [
        ("oid", OID),
        ("typname", NAME),
        ("typnamespace", OID),
        ("typowner", OID),
        ("typlen", I2),
        ("typbyval", BOOL),
        ("typtype", CHAR),
        ("typcategory", CHAR),
        ("typispreferred", BOOL),
        ("typisdefined", BOOL),
        ("typdelim", CHAR),
        ("typrelid", OID),
        ("typsubscript", REGPROC),
        ("typelem", OID),
        ("typarray", OID),
        ("typinput", REGPROC),
        ("typoutput", REGPROC),
        ("typreceive", REGPROC),
        ("typsend", REGPROC),
        ("typmodin", REGPROC),
        ("typmodout", REGPROC),
        ("typanalyze", REGPROC),
        ("typalign", CHAR),
        ("typstorage", CHAR),
        ("typnotnull", BOOL),
        ("typbasetype", OID),
        ("typtypmod", I4),
        ("typndims", I4),
        ("typcollation", OID),
        ("typdefaultbin", TEXT),
        ("typdefault", TEXT),
        ("typacl", TEXT),
    ];
    let rows = TYPES
        .iter()
        .map(|ty| {
            let typmod = |suffix: &str| match ty.takes_typmod {
                true => Value::Text(format!("{}typmod{suffix}", ty.name)),
                false => t("-"),
            };
            vec![
                o(ty.oid),
                t(ty.name),
                o(PG_CATALOG_NAMESPACE),
                o(OWNER_OID),
                i2(ty.len.into()),
                b(ty.by_value),
                t("b"),
                t(&ty.category.to_string()),
                b(ty.preferred),
                b(true),
                t(","),
                o(0),
                t(if ty.oid == 19 {
                    "raw_array_subscript_handler"
                } else {
                    "-"
                }),
                o(if ty.oid == 19 { 18 } else { 0 }),
                o(0),
                Value::Text(format!("{}in", ty.io)),
                Value::Text(format!("{}out", ty.io)),
                Value::Text(format!("{}recv", ty.io)),
                Value::Text(format!("{}send", ty.io)),
                typmod("in"),
                typmod("out"),
                t("-"),
                t(&ty.align.to_string()),
                t(&ty.storage.to_string()),
                b(false),
                o(0),
                i4(-1),
                i4(0),
                o(match (ty.collatable, ty.oid) {
                    (true, _) => DEFAULT_COLLATION_OID,
                    (false, 19) => types::C_COLLATION_OID,
                    (false, _) => 0,
                }),
                Value::Null,
                Value::Null,
                Value::Null,
            ]
        })
        .collect();
    relation(&columns, rows)
}

fn int2vector(keys: &[i16]) -> Value {
    t(&keys
        .iter()
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
        .join(" "))
}

/// `pg_index.indoption`: per key column, bit 0 DESC and bit 1 NULLS FIRST (PostgreSQL's
/// INDOPTION_DESC and INDOPTION_NULLS_FIRST).
fn indoption(ix: &super::IndexDef) -> Vec<i16> {
    (0..ix.keys.len())
        .map(|n| {
            let o = walden::KeyOrder::of(&ix.order, n);
            i16::from(o.desc) | i16::from(o.nulls_first) << 1
        })
        .collect()
}

fn pg_index(snap: &Snapshot) -> VirtualRelation {
    let columns = [
        ("indexrelid", OID),
        ("indrelid", OID),
        ("indnatts", I2),
        ("indnkeyatts", I2),
        ("indisunique", BOOL),
        ("indnullsnotdistinct", BOOL),
        ("indisprimary", BOOL),
        ("indisexclusion", BOOL),
        ("indimmediate", BOOL),
        ("indisclustered", BOOL),
        ("indisvalid", BOOL),
        ("indcheckxmin", BOOL),
        ("indisready", BOOL),
        ("indislive", BOOL),
        ("indisreplident", BOOL),
        ("indkey", TEXT),
        ("indoption", TEXT),
        ("indexprs", TEXT),
        ("indpred", TEXT),
    ];
    let rows = snap
        .relations
        .iter()
        .filter_map(|r| {
            let ix = r.index.as_ref()?;
            let n = ix.keys.len() as i64;
            Some(vec![
                o(r.oid),
                o(ix.table_oid),
                i2(n),
                i2(n),
                b(ix.unique),
                b(false),
                b(ix.primary),
                b(false),
                b(true),
                b(false),
                b(true),
                b(false),
                b(true),
                b(true),
                b(false),
                int2vector(&ix.keys),
                int2vector(&indoption(ix)),
                Value::Null,
                Value::Null,
            ])
        })
        .collect();
    relation(&columns, rows)
}

fn pg_constraint(snap: &Snapshot) -> VirtualRelation {
    let columns = [
        ("oid", OID),
        ("conname", NAME),
        ("connamespace", OID),
        ("contype", CHAR),
        ("condeferrable", BOOL),
        ("condeferred", BOOL),
        ("convalidated", BOOL),
        ("conrelid", OID),
        ("contypid", OID),
        ("conindid", OID),
        ("conparentid", OID),
        ("confrelid", OID),
        ("confupdtype", CHAR),
        ("confdeltype", CHAR),
        ("confmatchtype", CHAR),
        ("conislocal", BOOL),
        ("conkey", TEXT),
        ("confkey", TEXT),
    ];
    let list = |keys: &[i16]| {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        t(&format!("{{{}}}", keys.join(",")))
    };
    let keys = snap.relations.iter().filter_map(|r| {
        let ix = r.index.as_ref()?;
        let contype = ix.constraint?;
        Some(vec![
            o(constraint_oid(r.oid)),
            t(&r.name),
            o(PUBLIC_NAMESPACE),
            t(&contype.to_string()),
            b(false),
            b(false),
            b(true),
            o(ix.table_oid),
            o(0),
            o(r.oid),
            o(0),
            o(0),
            t(" "),
            t(" "),
            t(" "),
            b(true),
            list(&ix.keys),
            Value::Null,
        ])
    });
    let foreign = snap.foreign_keys.iter().map(|k| {
        vec![
            o(k.oid),
            t(&k.name),
            o(PUBLIC_NAMESPACE),
            t("f"),
            b(false),
            b(false),
            b(true),
            o(k.table_oid),
            o(0),
            o(k.index_oid),
            o(0),
            o(k.parent_oid),
            t(k.on_update),
            t(k.on_delete),
            t("s"),
            b(true),
            list(&k.keys),
            list(&k.parent_keys),
        ]
    });
    relation(&columns, keys.chain(foreign).collect())
}

fn information_schema(name: &str, snap: &Snapshot) -> Option<VirtualRelation> {
    let tables = snap
        .relations
        .iter()
        .filter(|r| matches!(r.kind, RelKind::Table | RelKind::View));
    Some(match name {
        "tables" => relation(
            &[
                ("table_catalog", NAME),
                ("table_schema", NAME),
                ("table_name", NAME),
                ("table_type", TEXT),
                ("is_insertable_into", TEXT),
                ("is_typed", TEXT),
            ],
            tables
                .map(|r| {
                    let view = r.kind == RelKind::View;
                    vec![
                        t(DATABASE_NAME),
                        t("public"),
                        t(&r.name),
                        t(if view { "VIEW" } else { "BASE TABLE" }),
                        t(if view { "NO" } else { "YES" }),
                        t("NO"),
                    ]
                })
                .collect(),
        ),
        "columns" => {
            let mut rows = Vec::new();
            for r in tables {
                for (i, a) in r.columns.iter().enumerate() {
                    let (ty, _) = types::type_of(&a.ty);
                    let precision = match ty.oid {
                        21 => Some(16),
                        23 => Some(32),
                        20 => Some(64),
                        701 => Some(53),
                        _ => None,
                    };
                    rows.push(vec![
                        t(DATABASE_NAME),
                        t("public"),
                        t(&r.name),
                        t(&a.name),
                        i4(i as i64 + 1),
                        a.default.as_deref().map_or(Value::Null, t),
                        t(if a.not_null { "NO" } else { "YES" }),
                        t(ty.format),
                        match a.ty.max_chars {
                            Some(n) => i4(n.into()),
                            None => Value::Null,
                        },
                        precision.map_or(Value::Null, i4),
                        precision.map_or(Value::Null, |_| i4(2)),
                        if matches!(ty.oid, 20 | 21 | 23) {
                            i4(0)
                        } else {
                            Value::Null
                        },
                        t(DATABASE_NAME),
                        t("pg_catalog"),
                        t(ty.name),
                        t("NO"),
                        t("NEVER"),
                        t("YES"),
                    ]);
                }
            }
            relation(
                &[
                    ("table_catalog", NAME),
                    ("table_schema", NAME),
                    ("table_name", NAME),
                    ("column_name", NAME),
                    ("ordinal_position", I4),
                    ("column_default", TEXT),
                    ("is_nullable", TEXT),
                    ("data_type", TEXT),
                    ("character_maximum_length", I4),
                    ("numeric_precision", I4),
                    ("numeric_precision_radix", I4),
                    ("numeric_scale", I4),
                    ("udt_catalog", NAME),
                    ("udt_schema", NAME),
                    ("udt_name", NAME),
                    ("is_identity", TEXT),
                    ("is_generated", TEXT),
                    ("is_updatable", TEXT),
                ],
                rows,
            )
        }
        _ => return None,
    })
}

/// What `table_catalog` and `current_database()` say.
pub const DATABASE_NAME: &str = "walden";
