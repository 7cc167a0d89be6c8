//! `information_schema.tables` and `columns`.

use walden::Value;

use super::types;
use super::*;

pub(super) fn information_schema(name: &str, snap: &Snapshot) -> Option<VirtualRelation> {
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
