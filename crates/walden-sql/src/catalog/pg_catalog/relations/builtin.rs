//! The relations of what is built in: `pg_type`, `pg_am`, `pg_collation`, and those
//! Walden has nothing for (their columns, no rows).

use walden::Value;

use super::types::{self, DEFAULT_COLLATION_OID, TYPES};
use super::*;
use crate::types::SqlType;

/// `pg_am`: the heap, btree and undo access methods.
pub(super) fn pg_am() -> VirtualRelation {
    relation(
        &[("oid", OID), ("amname", NAME), ("amtype", CHAR)],
        vec![
            vec![o(HEAP_AM), t("heap"), t("t")],
            vec![o(BTREE_AM), t("btree"), t("i")],
            vec![o(UNDO_AM), t("undo"), t("t")],
        ],
    )
}

/// `pg_collation`: the default, C and POSIX collations.
pub(super) fn pg_collation() -> VirtualRelation {
    relation(
        &[("oid", OID), ("collname", NAME), ("collnamespace", OID)],
        [
            (DEFAULT_COLLATION_OID, "default"),
            (950, "C"),
            (951, "POSIX"),
        ]
        .iter()
        .map(|(oid, n)| vec![o(*oid), t(n), o(PG_CATALOG_NAMESPACE)])
        .collect(),
    )
}

/// The relations Walden has nothing for (comments, inheritance, partitioning, triggers,
/// policies, extended statistics, publications): their columns and no rows.
pub(super) fn empty(name: &str) -> Option<VirtualRelation> {
    let columns: &[(&str, SqlType)] = match name {
        "pg_description" => &[
            ("objoid", OID),
            ("classoid", OID),
            ("objsubid", I4),
            ("description", TEXT),
        ],
        "pg_inherits" => &[
            ("inhrelid", OID),
            ("inhparent", OID),
            ("inhseqno", I4),
            ("inhdetachpending", BOOL),
        ],
        // No partitioned tables: pgbench reads it to learn pgbench_accounts is not one.
        "pg_partitioned_table" => &[
            ("partrelid", OID),
            ("partstrat", CHAR),
            ("partnatts", I2),
            ("partdefid", OID),
            ("partattrs", TEXT),
            ("partclass", TEXT),
            ("partcollation", TEXT),
            ("partexprs", TEXT),
        ],
        "pg_trigger" => &[
            ("oid", OID),
            ("tgrelid", OID),
            ("tgparentid", OID),
            ("tgname", NAME),
            ("tgfoid", OID),
            ("tgenabled", CHAR),
            ("tgisinternal", BOOL),
        ],
        "pg_policy" => &[
            ("oid", OID),
            ("polname", NAME),
            ("polrelid", OID),
            ("polcmd", CHAR),
            ("polpermissive", BOOL),
            ("polroles", TEXT),
            ("polqual", TEXT),
            ("polwithcheck", TEXT),
        ],
        "pg_statistic_ext" => &[
            ("oid", OID),
            ("stxrelid", OID),
            ("stxname", NAME),
            ("stxnamespace", OID),
            ("stxowner", OID),
            ("stxstattarget", I4),
            ("stxkeys", TEXT),
            ("stxkind", TEXT),
        ],
        "pg_publication" => &[
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
        "pg_publication_rel" => &[
            ("oid", OID),
            ("prpubid", OID),
            ("prrelid", OID),
            ("prqual", TEXT),
            ("prattrs", TEXT),
        ],
        "pg_publication_namespace" => &[("oid", OID), ("pnpubid", OID), ("pnnspid", OID)],
        _ => return None,
    };
    Some(relation(columns, Vec::new()))
}

/// The types, as PostgreSQL 15's `pg_type` has them. Walden has no array, domain or
/// composite types: `typarray`, `typelem` (but `name`'s, `"char"`, as in PostgreSQL),
/// `typrelid` and `typbasetype` are 0. The I/O functions (`regproc`) are their names.
pub(super) fn pg_type() -> VirtualRelation {
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
