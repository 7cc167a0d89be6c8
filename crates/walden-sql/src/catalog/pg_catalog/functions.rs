//! The catalog's functions (`format_type`, `pg_get_indexdef`, `pg_table_is_visible`,
//! …) and the `regclass` casts. They read the statement's [`Snapshot`], which the
//! bound call carries (`Expr::Catalog`), so a plan never looks anything up twice.

use std::sync::Arc;

use walden::Value;

use super::privilege_functions::Inquiry;
use super::{quote_ident, types, RelKind, Snapshot};
use crate::error::{code, SqlError, SqlResult};
use crate::types::SqlType;

/// A statement's snapshot inside a bound expression: compared by identity.
#[derive(Clone)]
pub struct Snap(pub Arc<Snapshot>);

impl PartialEq for Snap {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Snap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Snapshot({} relations)", self.0.relations.len())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogFn {
    FormatType,
    GetExpr,
    GetIndexdef,
    GetConstraintdef,
    TableIsVisible,
    GetUserById,
    ObjDescription,
    QuoteIdent,
    RelationIsPublishable,
    StatisticsObjdefColumns,
    CurrentDatabase,
    CurrentSchema,
    /// `current_schemas(include_implicit)`: the search path as an array (text form):
    /// `{pg_catalog,public}`, or `{public}` without the implicit schemas.
    CurrentSchemas,
    /// `oid::regclass` (shown as the relation's name).
    RegclassOut,
    /// `'name'::regclass` (the relation's OID).
    RegclassIn,
    /// `oid::regnamespace` (the schema's name).
    NamespaceName,
    /// `'name'::regtype` (the type's OID; 42704 for a type `pg_type` does not list).
    RegtypeIn,
    /// `pg_is_in_recovery()`: false (Walden has no standby yet).
    IsInRecovery,
    /// `to_regtype(text)`: as `'name'::regtype`, NULL for a type that does not exist.
    ToRegtype,
    /// `to_regclass(text)`: as `'name'::regclass`, NULL for a relation that does not
    /// exist.
    ToRegclass,
    /// `'name'::regproc`: a function as the catalog's `regproc` columns hold it, by
    /// name (`typinput`, …; Walden has no `pg_proc` to give it an OID, so the name is
    /// not looked up): a `pg_catalog.` qualifier dropped, an unquoted name in lower
    /// case; `0::regproc` is `-`, as PostgreSQL shows no function.
    RegprocIn,
    /// `pg_partition_ancestors(regclass)`: a set-returning function in PostgreSQL that
    /// gives the relation and the partitioned tables above it; Walden has no
    /// partitions, so its one row is the relation itself, a scalar here.
    PartitionAncestors,
    /// `pg_relation_size(regclass [, fork])`: the bytes of a relation's pages (the
    /// main fork; Walden has no other, so `fsm`, `vm` and `init` are 0).
    RelationSize,
    /// `pg_table_size(regclass)`: a table's pages and its toast relation's.
    TableSize,
    /// `pg_indexes_size(regclass)`: the pages of a table's indexes.
    IndexesSize,
    /// `pg_total_relation_size(regclass)`: the table, its toast relation and indexes.
    TotalRelationSize,
    /// `pg_size_pretty(bigint)`: bytes as PostgreSQL prints them (`977 kB`).
    SizePretty,
    /// `pg_get_serial_sequence(table, column)`: the sequence a serial or identity
    /// column owns, qualified (`public.t_id_seq`), or NULL.
    GetSerialSequence,
    /// `has_table_privilege`, `has_sequence_privilege`, `has_schema_privilege`,
    /// `pg_has_role` (`privileges/functions.rs`).
    Privilege(super::privilege_functions::Inquiry),
}

impl CatalogFn {
    /// The function of that name (without `pg_catalog.`), its result type and the
    /// argument counts it takes. The `regclass` casts are bound from casts, not names.
    pub fn lookup(name: &str) -> Option<(CatalogFn, SqlType, &'static [usize])> {
        use CatalogFn as F;
        use SqlType::{Bool, Text};
        Some(match name {
            "format_type" => (F::FormatType, Text, &[2]),
            "pg_get_expr" => (F::GetExpr, Text, &[2, 3]),
            "pg_get_indexdef" => (F::GetIndexdef, Text, &[1, 3]),
            "pg_get_constraintdef" => (F::GetConstraintdef, Text, &[1, 2]),
            "pg_table_is_visible" => (F::TableIsVisible, Bool, &[1]),
            "pg_get_userbyid" => (F::GetUserById, Text, &[1]),
            "obj_description" => (F::ObjDescription, Text, &[1, 2]),
            "quote_ident" => (F::QuoteIdent, Text, &[1]),
            "pg_relation_is_publishable" => (F::RelationIsPublishable, Bool, &[1]),
            "pg_get_statisticsobjdef_columns" => (F::StatisticsObjdefColumns, Text, &[1]),
            "pg_partition_ancestors" => (F::PartitionAncestors, SqlType::Int8, &[1]),
            "pg_relation_size" => (F::RelationSize, SqlType::Int8, &[1, 2]),
            "pg_table_size" => (F::TableSize, SqlType::Int8, &[1]),
            "pg_indexes_size" => (F::IndexesSize, SqlType::Int8, &[1]),
            "pg_total_relation_size" => (F::TotalRelationSize, SqlType::Int8, &[1]),
            "pg_size_pretty" => (F::SizePretty, Text, &[1]),
            "pg_get_serial_sequence" => (F::GetSerialSequence, Text, &[2]),
            "pg_is_in_recovery" => (F::IsInRecovery, Bool, &[0]),
            "to_regtype" => (F::ToRegtype, SqlType::Int8, &[1]),
            "to_regclass" => (F::ToRegclass, SqlType::Int8, &[1]),
            "current_database" => (F::CurrentDatabase, Text, &[0]),
            "current_schema" => (F::CurrentSchema, Text, &[0]),
            "current_schemas" => (F::CurrentSchemas, Text, &[1]),
            "has_table_privilege" => (F::Privilege(Inquiry::Table), Bool, &[2, 3]),
            "has_column_privilege" => (F::Privilege(Inquiry::Column), Bool, &[3, 4]),
            "has_any_column_privilege" => (F::Privilege(Inquiry::AnyColumn), Bool, &[2, 3]),
            "has_sequence_privilege" => (F::Privilege(Inquiry::Sequence), Bool, &[2, 3]),
            "has_schema_privilege" => (F::Privilege(Inquiry::Schema), Bool, &[2, 3]),
            "pg_has_role" => (F::Privilege(Inquiry::Role), Bool, &[2, 3]),
            _ => return None,
        })
    }

    /// The type each argument is taken as (string literals are coerced to it).
    pub fn arg_type(self, i: usize) -> SqlType {
        use CatalogFn as F;
        match (self, i) {
            (
                F::QuoteIdent
                | F::RegclassIn
                | F::RegtypeIn
                | F::ToRegtype
                | F::ToRegclass
                | F::RegprocIn
                | F::PartitionAncestors
                | F::RelationSize
                | F::TableSize
                | F::IndexesSize
                | F::TotalRelationSize
                | F::GetSerialSequence
                | F::Privilege(_),
                _,
            )
            | (F::GetExpr, 0) => SqlType::Text,
            (F::GetIndexdef, 1) | (F::FormatType, 1) => SqlType::Int4,
            (F::GetIndexdef | F::GetConstraintdef, 2) | (F::GetConstraintdef, 1) => SqlType::Bool,
            (F::GetExpr, 2) | (F::CurrentSchemas, 0) => SqlType::Bool,
            _ => SqlType::Int8,
        }
    }

    /// Whether the function asks about the current user (it is given to `call`).
    pub fn needs_user(self) -> bool {
        matches!(self, CatalogFn::Privilege(_))
    }

    pub fn call(self, args: &[Value], snap: &Snapshot, current_user: &str) -> SqlResult<Value> {
        use CatalogFn as F;
        let int = |i: usize| int_arg(args, i);
        let text = |s: String| Value::Text(s);
        // Functions of an OID give NULL for NULL, as PostgreSQL's strict functions do.
        let strict = !matches!(self, F::CurrentDatabase | F::CurrentSchema | F::FormatType);
        if strict && args.first().is_some_and(|v| matches!(v, Value::Null)) {
            return Ok(Value::Null);
        }
        Ok(match self {
            F::FormatType => match int(0) {
                None => Value::Null,
                Some(oid) => text(types::format_type(oid, int(1))),
            },
            F::GetExpr => args[0].clone(),
            F::GetIndexdef => match int(0).and_then(|oid| snap.by_oid(oid)) {
                Some(r) => text(index_def(snap, r, int(1).unwrap_or(0))),
                None => Value::Null,
            },
            F::GetConstraintdef => {
                let found = snap.relations.iter().find(|r| {
                    r.index.as_ref().is_some_and(|i| i.constraint.is_some())
                        && Some(super::constraint_oid(r.oid)) == int(0)
                });
                let foreign = || snap.foreign_keys.iter().find(|k| Some(k.oid) == int(0));
                match (found, foreign()) {
                    (Some(r), _) => text(constraint_def(r)),
                    (None, Some(k)) => text(k.definition.clone()),
                    (None, None) => Value::Null,
                }
            }
            F::TableIsVisible => Value::Bool(true),
            F::GetSerialSequence => match (&args[0], &args[1]) {
                (Value::Text(table), Value::Text(column)) => serial_sequence(snap, table, column)?,
                _ => Value::Null,
            },
            F::GetUserById => match int(0) {
                Some(oid) => match snap.role_name(oid) {
                    Some(name) => text(name.into()),
                    None => text(format!("unknown (OID={oid})")),
                },
                None => Value::Null,
            },
            F::ObjDescription | F::StatisticsObjdefColumns => Value::Null,
            F::QuoteIdent => match &args[0] {
                Value::Text(s) => text(quote_ident(s)),
                _ => Value::Null,
            },
            F::RelationIsPublishable => Value::Bool(false),
            F::Privilege(which) => {
                return super::privilege_functions::call(which, args, snap, current_user)
            }
            F::CurrentDatabase => text(super::relations::DATABASE_NAME.into()),
            F::CurrentSchema => text("public".into()),
            F::CurrentSchemas => match &args[0] {
                Value::Bool(true) => text("{pg_catalog,public}".into()),
                _ => text("{public}".into()),
            },
            F::RegclassOut => match int(0) {
                Some(oid) => text(snap.regclass_name(oid)),
                None => Value::Null,
            },
            F::NamespaceName => match int(0) {
                Some(oid) => text(super::namespace_name(oid)),
                None => Value::Null,
            },
            F::RegprocIn => match &args[0] {
                Value::Text(s) => text(regproc_in(s)),
                _ if int(0) == Some(0) => text("-".into()),
                other => text(other.to_string()),
            },
            F::RegclassIn | F::PartitionAncestors => match &args[0] {
                Value::Text(s) => Value::Int8(regclass_in(snap, s)?),
                Value::Int8(oid) => Value::Int8(*oid),
                _ => Value::Null,
            },
            F::IsInRecovery => Value::Bool(false),
            F::RegtypeIn | F::ToRegtype => match &args[0] {
                Value::Text(s) => match super::types::by_name(s) {
                    Some(t) => Value::Int8(t.oid),
                    None if self == F::ToRegtype => Value::Null,
                    None => {
                        return Err(SqlError::new(
                            code::UNDEFINED_OBJECT,
                            format!("type \"{}\" does not exist", s.trim()),
                        ))
                    }
                },
                _ => Value::Null,
            },
            F::ToRegclass => match &args[0] {
                Value::Text(s) if s.trim().parse::<i64>().is_err() => {
                    regclass_in(snap, s).map_or(Value::Null, Value::Int8)
                }
                _ => Value::Null,
            },
            F::RelationSize | F::TableSize | F::IndexesSize | F::TotalRelationSize => {
                return relation_size(self, args, snap)
            }
            F::SizePretty => match int(0) {
                Some(n) => text(size_pretty(n)),
                None => Value::Null,
            },
        })
    }
}

/// An integer argument, None for NULL or another type.
fn int_arg(args: &[Value], i: usize) -> Option<i64> {
    match args.get(i) {
        Some(Value::Int2(x)) => Some(i64::from(*x)),
        Some(Value::Int4(x)) => Some(i64::from(*x)),
        Some(Value::Int8(x)) => Some(*x),
        _ => None,
    }
}

/// pg_relation_size (of a fork), pg_table_size (with the toast relation),
/// pg_indexes_size and pg_total_relation_size of a relation given by OID or name.
fn relation_size(which: CatalogFn, args: &[Value], snap: &Snapshot) -> SqlResult<Value> {
    use CatalogFn as F;
    let oid = match &args[0] {
        Value::Text(s) => regclass_in(snap, s)?,
        _ => match int_arg(args, 0) {
            Some(oid) => oid,
            None => return Ok(Value::Null),
        },
    };
    let fork = match args.get(1) {
        None => "main",
        Some(Value::Text(f)) => f.as_str(),
        Some(_) => return Ok(Value::Null),
    };
    // A relation that is not there has no size, as in PostgreSQL.
    let Some(r) = snap.by_oid(oid) else {
        return Ok(Value::Null);
    };
    let indexes = || -> i64 {
        snap.relations
            .iter()
            .filter(|x| x.index.as_ref().is_some_and(|i| i.table_oid == r.oid))
            .map(|x| x.bytes)
            .sum()
    };
    Ok(Value::Int8(match which {
        F::RelationSize => match fork {
            "main" => r.bytes,
            "fsm" | "vm" | "init" => 0,
            _ => {
                return Err(
                    SqlError::new(code::INVALID_PARAMETER, "invalid fork name".to_string())
                        .with_hint("Valid fork names are \"main\", \"fsm\", \"vm\", and \"init\"."),
                )
            }
        },
        F::TableSize => r.bytes + r.toast_bytes,
        F::IndexesSize => indexes(),
        _ => r.bytes + r.toast_bytes + indexes(),
    }))
}

/// Bytes as PostgreSQL's `pg_size_pretty` prints them: bytes below 10 kB, then kB, MB,
/// GB, TB, PB, each below 20 kB of its unit (rounded half away from zero), as its
/// `size_pretty_units` say.
pub fn size_pretty(size: i64) -> String {
    // (name, limit, rounded, bits of the unit)
    const UNITS: [(&str, i64, bool, u32); 6] = [
        ("bytes", 10 * 1024, false, 0),
        ("kB", 20 * 1024 - 1, true, 10),
        ("MB", 20 * 1024 - 1, true, 20),
        ("GB", 20 * 1024 - 1, true, 30),
        ("TB", 20 * 1024 - 1, true, 40),
        ("PB", 20 * 1024 - 1, true, 50),
    ];
    let mut size = size;
    for (i, &(name, limit, round, bits)) in UNITS.iter().enumerate() {
        let last = i + 1 == UNITS.len();
        if last || size.unsigned_abs() < limit as u64 {
            if round {
                size = (size + if size < 0 { -1 } else { 1 }) / 2;
            }
            return format!("{size} {name}");
        }
        let (_, _, next_round, next_bits) = UNITS[i + 1];
        let shift = next_bits - bits - u32::from(next_round) + u32::from(round);
        size /= 1i64 << shift;
    }
    format!("{size} bytes")
}

/// A relation name (as `regclass` input: unquoted names fold to lower case; a
/// `public.` or a number is accepted) to its OID.
fn regclass_in(snap: &Snapshot, s: &str) -> SqlResult<i64> {
    let s = s.trim();
    if let Ok(oid) = s.parse::<i64>() {
        return Ok(oid);
    }
    if let Some(&(_, oid)) = super::CATALOG_OIDS
        .iter()
        .find(|(n, _)| s.strip_prefix("pg_catalog.").unwrap_or(s) == *n)
    {
        return Ok(oid);
    }
    let bare = s.strip_prefix("public.").unwrap_or(s);
    let name = match bare.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        Some(q) => q.replace("\"\"", "\""),
        None => bare.to_lowercase(),
    };
    snap.by_name(&name).map(|r| r.oid).ok_or_else(|| {
        SqlError::new(
            code::UNDEFINED_TABLE,
            format!("relation \"{s}\" does not exist"),
        )
    })
}

/// `pg_get_serial_sequence`: the table is a relation name as `regclass` reads it, the
/// column a name as written (not folded to lower case, as in PostgreSQL).
fn serial_sequence(snap: &Snapshot, table: &str, column: &str) -> SqlResult<Value> {
    let oid = regclass_in(snap, table)?;
    let Some(rel) = snap.by_oid(oid) else {
        return Ok(Value::Null);
    };
    let Some(at) = rel.columns.iter().position(|c| c.name == column) else {
        return Err(SqlError::new(
            code::UNDEFINED_COLUMN,
            format!(
                "column \"{column}\" of relation \"{}\" does not exist",
                rel.name
            ),
        ));
    };
    Ok(snap
        .relations
        .iter()
        .find(|r| {
            r.owner
                .as_ref()
                .is_some_and(|o| o.table_oid == oid && o.attnum as usize == at + 1)
        })
        .map_or(Value::Null, |r| {
            Value::Text(format!("public.{}", quote_ident(&r.name)))
        }))
}

fn regproc_in(s: &str) -> String {
    let s = s.trim();
    let bare = s.strip_prefix("pg_catalog.").unwrap_or(s);
    match bare.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        Some(q) => q.replace("\"\"", "\""),
        None => bare.to_lowercase(),
    }
}

/// `pg_get_indexdef(oid, column, pretty)`: the whole CREATE INDEX for column 0, else
/// that key column's name.
fn index_def(snap: &Snapshot, r: &super::Relation, column: i64) -> String {
    let Some(ix) = r.index.as_ref().filter(|_| r.kind == RelKind::Index) else {
        return String::new();
    };
    let Some(table) = snap.by_oid(ix.table_oid) else {
        return String::new();
    };
    let names: Vec<String> = ix
        .keys
        .iter()
        .map(|&k| {
            table
                .columns
                .get(k as usize - 1)
                .map(|c| quote_ident(&c.name))
                .unwrap_or_default()
        })
        .collect();
    if column > 0 {
        // One column: its name alone, without its order (as PostgreSQL).
        return names.get(column as usize - 1).cloned().unwrap_or_default();
    }
    // Each column's order as PostgreSQL prints it: DESC, and the NULLs placement only
    // where it is not the direction's default.
    let columns: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(n, name)| {
            let o = walden::KeyOrder::of(&ix.order, n);
            let option = match (o.desc, o.nulls_first) {
                (false, false) => "",
                (false, true) => " NULLS FIRST",
                (true, true) => " DESC",
                (true, false) => " DESC NULLS LAST",
            };
            format!("{name}{option}")
        })
        .collect();
    format!(
        "CREATE {}INDEX {} ON public.{} USING btree ({})",
        if ix.unique { "UNIQUE " } else { "" },
        quote_ident(&r.name),
        quote_ident(&table.name),
        columns.join(", ")
    )
}

fn constraint_def(r: &super::Relation) -> String {
    let Some(ix) = &r.index else {
        return String::new();
    };
    let cols: Vec<String> = r.columns.iter().map(|c| quote_ident(&c.name)).collect();
    format!(
        "{} ({})",
        if ix.primary { "PRIMARY KEY" } else { "UNIQUE" },
        cols.join(", ")
    )
}
