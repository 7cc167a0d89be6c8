//! The rows of each virtual relation. Catalog column types map onto SQL types Walden
//! has: `oid` and `regclass` are int8, `name`, `"char"`, `text[]`, `int2vector` and
//! `pg_node_tree` are text (arrays in their `{a,b}` text form), `float4` is float8.
//! Relations Walden has nothing for (policies, triggers, publications, inheritance,
//! partitioning, extended statistics, comments) have their columns and no rows.

mod builtin;
mod information_schema;
mod roles;
mod sequences;
mod tables;

use walden::Value;

use super::types;
use super::*;
use crate::types::SqlType;

use builtin::{empty, pg_am, pg_collation, pg_type};
use information_schema::information_schema;
use roles::{pg_default_acl, role_relation};
use sequences::{pg_depend, pg_sequence, pg_sequences};
use tables::{pg_attrdef, pg_attribute, pg_class, pg_constraint, pg_index, pg_namespace};

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
    /// The locks held when the statement runs (`pg_locks`): [`lock_rows`].
    Locks,
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

/// `pg_locks`' columns (PostgreSQL 15's).
const LOCK_COLUMNS: &[(&str, SqlType)] = &[
    ("locktype", TEXT),
    ("database", OID),
    ("relation", OID),
    ("page", I4),
    ("tuple", I2),
    ("virtualxid", TEXT),
    ("transactionid", SqlType::Int8),
    ("classid", OID),
    ("objid", OID),
    ("objsubid", I2),
    ("virtualtransaction", TEXT),
    ("pid", I4),
    ("mode", TEXT),
    ("granted", BOOL),
    ("fastpath", BOOL),
    ("waitstart", SqlType::Timestamptz),
];

/// `pg_locks`' rows: the table locks held (`relation` the table's OID, `mode` as
/// PostgreSQL names it), then the advisory locks held, as PostgreSQL lists them (a
/// bigint key in `classid` and `objid` as its high and low halves with `objsubid` 1;
/// two int keys as `classid`, `objid`, `objsubid` 2). `pid` is the holding session's
/// backend id (NULL for a transaction of no session); `database` is NULL (Walden has
/// no `pg_database`).
pub fn lock_rows(
    relations: &[(u32, Option<u64>, u64, walden::RelLockMode)],
    locks: &[(walden::AdvisoryKey, u64, bool, bool)],
) -> Vec<Vec<Value>> {
    let tables = relations.iter().map(|(table, backend, _xid, mode)| {
        vec![
            t("relation"),
            Value::Null,
            o(crate::pg_catalog::FIRST_USER_OID + *table as i64),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            backend.map_or(Value::Null, |b| i4(b as i64)),
            t(mode.name()),
            b(true),
            b(false),
            Value::Null,
        ]
    });
    let advisory = locks.iter().map(|((space, key), backend, _xact, shared)| {
        // OIDs: unsigned, as PostgreSQL shows them.
        let (hi, lo) = ((key >> 32) as u32, *key as u32);
        vec![
            t("advisory"),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            o(hi as i64),
            o(lo as i64),
            i2(*space as i64),
            Value::Null,
            i4(*backend as i64),
            t(if *shared {
                "ShareLock"
            } else {
                "ExclusiveLock"
            }),
            b(true),
            b(false),
            Value::Null,
        ]
    });
    tables.chain(advisory).collect()
}

/// One setting as `pg_settings` shows it (the settings' `Shown` converts into it).
pub struct SettingRow {
    pub name: String,
    /// In the unit `unit` names, where it has one.
    pub setting: String,
    pub unit: Option<&'static str>,
    pub description: &'static str,
    /// When it may be changed (PostgreSQL's `GucContext` name).
    pub context: &'static str,
    pub vartype: &'static str,
    /// What RESET would give it.
    pub reset: String,
}

/// `pg_settings`' rows: every setting, by name in any case, as PostgreSQL orders them.
pub fn settings_rows<S: Into<SettingRow>>(all: Vec<S>) -> Vec<Vec<Value>> {
    let mut rows: Vec<(String, Vec<Value>)> = all
        .into_iter()
        .map(|s| {
            let s: SettingRow = s.into();
            let row = vec![
                Value::Text(s.name.clone()),
                Value::Text(s.setting),
                s.unit.map_or(Value::Null, t),
                t(s.description),
                t(s.context),
                t(s.vartype),
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
        "pg_namespace" => pg_namespace(snap),
        "pg_attribute" => pg_attribute(snap),
        "pg_settings" => read_when_run(SETTINGS_COLUMNS, Rows::Settings),
        "pg_cursors" => read_when_run(CURSOR_COLUMNS, Rows::Cursors),
        "pg_locks" => read_when_run(LOCK_COLUMNS, Rows::Locks),
        "pg_attrdef" => pg_attrdef(snap),
        "pg_type" => pg_type(),
        "pg_sequence" => pg_sequence(snap),
        "pg_sequences" => pg_sequences(snap),
        "pg_depend" => pg_depend(snap),
        "pg_index" => pg_index(snap),
        "pg_constraint" => pg_constraint(snap),
        "pg_am" => pg_am(),
        "pg_collation" => pg_collation(),
        "pg_roles" | "pg_authid" | "pg_user" | "pg_shadow" | "pg_group" | "pg_auth_members" => {
            role_relation(name, snap)
        }
        "pg_default_acl" => pg_default_acl(snap),
        _ => return empty(name),
    })
}

/// A relation whose rows are the session's, read when the statement runs.
fn read_when_run(columns: &[(&str, SqlType)], rows: Rows) -> VirtualRelation {
    VirtualRelation {
        columns: columns.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        rows,
        superuser_only: None,
    }
}

const TIMESTAMPTZ: SqlType = SqlType::Timestamptz;

/// What `table_catalog` and `current_database()` say.
pub const DATABASE_NAME: &str = "walden";
