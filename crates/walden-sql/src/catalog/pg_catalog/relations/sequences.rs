//! The sequence relations: `pg_sequence`, the view `pg_sequences`, and `pg_depend` (a
//! sequence on the column that owns it).

use walden::Value;

use super::*;
use crate::types::SqlType;

/// Every sequence's definition.
pub(super) fn pg_sequence(snap: &Snapshot) -> VirtualRelation {
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
pub(super) fn pg_sequences(snap: &Snapshot) -> VirtualRelation {
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
pub(super) fn pg_depend(snap: &Snapshot) -> VirtualRelation {
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
