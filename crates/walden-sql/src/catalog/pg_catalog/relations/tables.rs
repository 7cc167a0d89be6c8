//! The relations of schemas, tables, their columns, defaults, indexes and constraints:
//! `pg_namespace`, `pg_class`, `pg_attribute`, `pg_attrdef`, `pg_index`, `pg_constraint`.

use walden::Value;

use super::types::{self, DEFAULT_COLLATION_OID};
use super::*;

/// `pg_namespace`: the schemas, `public`'s owner and ACL as the privileges have them.
pub(super) fn pg_namespace(snap: &Snapshot) -> VirtualRelation {
    relation(
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
                let acl = crate::acl::schema_acl(&snap.privileges, n);
                let text = crate::acl::acl_text(&acl);
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
    )
}

pub(super) fn pg_class(snap: &Snapshot) -> VirtualRelation {
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

pub(super) fn pg_attribute(snap: &Snapshot) -> VirtualRelation {
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

pub(super) fn pg_attrdef(snap: &Snapshot) -> VirtualRelation {
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

pub(super) fn pg_index(snap: &Snapshot) -> VirtualRelation {
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

pub(super) fn pg_constraint(snap: &Snapshot) -> VirtualRelation {
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
