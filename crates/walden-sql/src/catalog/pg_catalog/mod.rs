//! The virtual catalog: read-only relations of `pg_catalog` and `information_schema`
//! (the ones psql 15's `\d` family reads), generated from the engine's catalog when a
//! statement that names one is planned. Nothing here is stored: each statement sees
//! a [`Snapshot`] of the tables and indexes as they are, with OIDs derived from the
//! engine's ids so they stay the same from one statement to the next.
//!
//! OIDs: a table or an index is `16384 + id` (ids of tables and indexes are one
//! numbering, and sequences share it). Objects Walden has no id for get OIDs from the
//! table's id and a column number: a column default `ATTRDEF_BASE + id * 2048 +
//! attnum`, a primary-key or unique constraint
//! `CONSTRAINT_BASE + index id`; a view `VIEW_BASE +` a hash of its name. Types have
//! PostgreSQL's OIDs (`types.rs`).

mod functions;
pub mod privilege_functions;
mod relations;
mod role_list;
pub mod types;

use walden::{Column, Database};

use crate::types::{DeclaredType, SqlType};

pub use crate::catalog::bootstrap_role;
pub use functions::{CatalogFn, Snap};
pub use relations::{
    cursor_rows, is_pg_catalog_name, lock_rows, lookup, settings_rows, Rows, SettingRow,
    VirtualRelation,
};
pub use role_list::all_roles;

/// The first OID of a user object, as in PostgreSQL.
pub const FIRST_USER_OID: i64 = 16384;
const ATTRDEF_BASE: i64 = 0x5000_0000;
const CONSTRAINT_BASE: i64 = 0x6000_0000;
/// Views (which have no engine id): `VIEW_BASE +` a hash of the name, the next free
/// number on a clash (so two views whose names clash may swap OIDs when one is dropped).
const VIEW_BASE: i64 = 0x7000_0000;
const VIEW_OIDS: i64 = 0x0800_0000;
const FOREIGN_KEY_BASE: i64 = 0x7800_0000;
/// Roles (which have no engine id either): `ROLE_BASE +` a hash of the name, as views;
/// the bootstrap superuser is 10, as in PostgreSQL.
const ROLE_BASE: i64 = 0x3000_0000;
const ROLE_OIDS: i64 = 0x0800_0000;
/// Columns per table in the OID arithmetic (PostgreSQL allows 1600).
const ATTNUMS_PER_TABLE: i64 = 2048;

pub const PG_CATALOG_NAMESPACE: i64 = 11;
pub const PG_TOAST_NAMESPACE: i64 = 99;
pub const PUBLIC_NAMESPACE: i64 = 2200;
pub const INFORMATION_SCHEMA_NAMESPACE: i64 = 13000;
/// The owner of every relation: the bootstrap superuser (psql shows owners by name).
pub const OWNER_OID: i64 = crate::catalog::BOOTSTRAP_OID;
pub const OWNER_NAME: &str = crate::catalog::BOOTSTRAP;
/// Access methods, as PostgreSQL numbers them.
pub const HEAP_AM: i64 = 2;
pub const BTREE_AM: i64 = 403;
/// Walden's undo tables (`USING undo`), a table access method PostgreSQL does not have:
/// an OID below the user range, as a built-in one would have.
pub const UNDO_AM: i64 = 16000;

/// What kind of relation a `pg_class` row is (`relkind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelKind {
    Table,
    Index,
    Sequence,
    /// A view: its columns are its query's, as planned when the snapshot is made.
    View,
}

impl RelKind {
    pub fn code(self) -> &'static str {
        match self {
            RelKind::Table => "r",
            RelKind::Index => "i",
            RelKind::Sequence => "S",
            RelKind::View => "v",
        }
    }
}

/// A column of a relation, as `pg_attribute` shows it.
#[derive(Debug, Clone)]
pub struct Attr {
    pub name: String,
    pub ty: DeclaredType,
    pub not_null: bool,
    /// The default as `pg_get_expr` shows it.
    pub default: Option<String>,
    /// `attidentity`: 'a' (GENERATED ALWAYS) or 'd' (BY DEFAULT) for an identity column.
    pub identity: Option<char>,
    /// The stored position its privileges are keyed by (`privileges::column_positions`).
    pub position: u32,
}

/// An index's definition.
#[derive(Debug, Clone)]
pub struct IndexDef {
    pub table_oid: i64,
    /// Column numbers in the table (1-based).
    pub keys: Vec<i16>,
    /// Each key column's order.
    pub order: Vec<walden::KeyOrder>,
    pub unique: bool,
    pub primary: bool,
    /// The constraint PRIMARY KEY or UNIQUE made the index for, if one did: a unique
    /// index named `<table>_..._key` or `_pkey` is taken as a constraint (Walden does
    /// not record whether CREATE UNIQUE INDEX or a UNIQUE constraint made it).
    pub constraint: Option<char>,
}

/// A foreign key as `pg_constraint` shows it (contype 'f').
#[derive(Debug, Clone)]
pub struct ForeignKeyDef {
    pub oid: i64,
    pub name: String,
    /// The referencing table, and its key columns (1-based).
    pub table_oid: i64,
    pub keys: Vec<i16>,
    /// The referenced table, its unique index, and its key columns.
    pub parent_oid: i64,
    pub index_oid: i64,
    pub parent_keys: Vec<i16>,
    /// `confupdtype`, `confdeltype`: a, r, c, n or d.
    pub on_update: &'static str,
    pub on_delete: &'static str,
    /// What `pg_get_constraintdef` gives.
    pub definition: String,
}

/// One relation of `pg_class`.
#[derive(Debug, Clone)]
pub struct Relation {
    pub oid: i64,
    pub name: String,
    pub kind: RelKind,
    pub columns: Vec<Attr>,
    pub index: Option<IndexDef>,
    /// For a sequence a column owns: the table and column it belongs to.
    pub owner: Option<SequenceOwner>,
    /// A sequence's definition and counter.
    pub sequence: Option<walden::SequenceInfo>,
    /// `relam`: a table's kind (heap or undo), btree for an index, 0 otherwise.
    pub access_method: i64,
    /// `reltuples`: a table's rows (an index's entries, one per row) as ANALYZE last
    /// counted them, scaled to the table's size now; -1 when never analyzed, as
    /// PostgreSQL says of a table never vacuumed or analyzed.
    pub rows: f64,
    /// Bytes of its pages (PostgreSQL's main fork: `pg_relation_size`).
    pub bytes: i64,
    /// A table's toast relation's bytes (its values stored out of line).
    pub toast_bytes: i64,
}

/// The column a sequence belongs to, and how (`pg_depend.deptype`: 'a' for a serial
/// column's or one OWNED BY, 'i' for an identity column's).
#[derive(Debug, Clone)]
pub struct SequenceOwner {
    pub table_oid: i64,
    pub attnum: i16,
    pub deptype: char,
}

/// The catalog as one statement sees it.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Tables first, each followed by its indexes and sequences, tables by name.
    pub relations: Vec<Relation>,
    /// Foreign keys by table and name.
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// Every role with its OID, by name (the bootstrap superuser included).
    pub roles: Vec<(i64, walden::RoleDef)>,
    /// Owners, access control lists and memberships.
    pub privileges: std::sync::Arc<walden::Privileges>,
}

/// A view's column types, found by planning its query against the tables as they are
/// (the planner's, handed down: this layer plans nothing); None when it no longer plans.
pub(crate) type ViewTypes = fn(&Database, &walden::ViewDef) -> Option<Vec<SqlType>>;

impl Snapshot {
    /// Reads the engine's catalog. A table dropped while this runs is left out.
    pub(crate) fn of(db: &Database, view_types: ViewTypes) -> Snapshot {
        let mut relations = Vec::new();
        let sequences = db.sequences();
        let identity = identity_columns(&sequences);
        for name in db.table_names() {
            table_relations(db, &name, &identity, &mut relations);
        }
        view_relations(db, view_types, &mut relations);
        for info in sequences {
            relations.push(sequence_relation(db, info));
        }
        let foreign_keys = foreign_keys(db, &relations);
        Snapshot {
            relations,
            foreign_keys,
            roles: roles(db),
            privileges: db.privileges(),
        }
    }

    /// A role's OID by name (0 for none: a role dropped while this was made).
    pub fn role_oid(&self, name: &str) -> i64 {
        self.roles
            .iter()
            .find(|(_, r)| r.name == name)
            .map_or(0, |(oid, _)| *oid)
    }

    /// A relation's owner's OID and its `relacl` (an index: its table's owner, no list).
    pub fn owner_and_acl(&self, r: &Relation) -> (i64, Option<String>) {
        let name = match &r.index {
            Some(ix) => self
                .relations
                .iter()
                .find(|x| x.oid == ix.table_oid)
                .map_or(r.name.as_str(), |x| x.name.as_str()),
            None => r.name.as_str(),
        };
        let acl = crate::acl::relation_acl(&self.privileges, name);
        let text = match r.index {
            Some(_) => None,
            None => crate::acl::acl_text(&acl),
        };
        (self.role_oid(&acl.owner), text)
    }

    /// A column's `attacl`: NULL while it has no list of its own.
    pub fn column_acl(&self, r: &Relation, a: &Attr) -> Option<String> {
        if r.index.is_some() {
            return None;
        }
        let items = self
            .privileges
            .relations
            .get(&r.name)?
            .columns
            .get(&a.position)?;
        Some(crate::acl::items_text(items))
    }

    /// A role's name by OID.
    pub fn role_name(&self, oid: i64) -> Option<&str> {
        self.roles
            .iter()
            .find(|(o, _)| *o == oid)
            .map(|(_, r)| r.name.as_str())
    }

    pub fn by_oid(&self, oid: i64) -> Option<&Relation> {
        self.relations.iter().find(|r| r.oid == oid)
    }

    pub fn by_name(&self, name: &str) -> Option<&Relation> {
        self.relations.iter().find(|r| r.name == name)
    }

    /// A relation's name as `regclass` shows it: bare, since every relation is in
    /// `public`, which is on the search path; quoted where it needs it.
    pub fn regclass_name(&self, oid: i64) -> String {
        match self.by_oid(oid) {
            Some(r) => quote_ident(&r.name),
            None => oid.to_string(),
        }
    }
}

/// Identity columns by (table id, column position).
type Identities = std::collections::HashMap<(u32, u16), char>;

/// Identity columns by (table id, column position): 'a' for ALWAYS, 'd' for BY DEFAULT.
fn identity_columns(sequences: &[walden::SequenceInfo]) -> Identities {
    sequences
        .iter()
        .filter_map(|s| {
            let kind = match s.def.identity {
                walden::Identity::Always => 'a',
                walden::Identity::ByDefault => 'd',
                walden::Identity::None => return None,
            };
            Some((s.def.owned_by?, kind))
        })
        .collect()
}

/// A table's relation and its indexes' (none for a table dropped meanwhile).
fn table_relations(
    db: &Database,
    name: &str,
    identity: &Identities,
    relations: &mut Vec<Relation>,
) {
    let (Ok(id), Ok(schema), Ok(indexes)) = (db.table_id(name), db.schema(name), db.indexes(name))
    else {
        return;
    };
    let table_oid = FIRST_USER_OID + i64::from(id);
    let rows = db
        .table_estimate(name)
        .map_or(-1.0, |(rows, _)| rows.round());
    let positions = db.stored_positions(name).unwrap_or_default();
    let columns: Vec<Attr> = schema
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| Attr {
            position: positions.get(i).copied().unwrap_or(i as u32),
            ..attr(name, c, identity.get(&(id, i as u16)).copied())
        })
        .collect();
    relations.push(Relation {
        oid: table_oid,
        name: name.to_string(),
        kind: RelKind::Table,
        columns: columns.clone(),
        index: None,
        owner: None,
        sequence: None,
        rows,
        access_method: match db.table_kind(name) {
            Ok(walden::TableKind::Undo) => UNDO_AM,
            _ => HEAP_AM,
        },
        bytes: db.table_bytes(name).unwrap_or(0) as i64,
        toast_bytes: db.toast_bytes(name).unwrap_or(0) as i64,
    });
    for ix in indexes {
        relations.push(index_relation(
            db,
            &ix,
            &schema.columns,
            &columns,
            table_oid,
            rows,
        ));
    }
}

/// An index's relation: its key columns are its table's.
fn index_relation(
    db: &Database,
    ix: &walden::IndexInfo,
    table_columns: &[Column],
    columns: &[Attr],
    table_oid: i64,
    rows: f64,
) -> Relation {
    let keys: Vec<i16> = ix
        .columns
        .iter()
        .filter_map(|c| table_columns.iter().position(|x| x.name == *c))
        .map(|p| (p + 1) as i16)
        .collect();
    let constraint = if ix.primary {
        Some('p')
    } else if ix.unique && ix.name.ends_with("_key") {
        Some('u')
    } else {
        None
    };
    Relation {
        oid: FIRST_USER_OID + i64::from(ix.id),
        name: ix.name.clone(),
        kind: RelKind::Index,
        columns: keys
            .iter()
            .map(|&k| Attr {
                default: None,
                not_null: false,
                ..columns[k as usize - 1].clone()
            })
            .collect(),
        index: Some(IndexDef {
            table_oid,
            keys,
            order: ix.order.clone(),
            unique: ix.unique,
            primary: ix.primary,
            constraint,
        }),
        owner: None,
        sequence: None,
        access_method: BTREE_AM,
        rows,
        bytes: (ix.pages * db.page_size() as u64) as i64,
        toast_bytes: 0,
    }
}

/// The views' relations, each OID a hash of its name (the next free one on a collision).
fn view_relations(db: &Database, view_types: ViewTypes, relations: &mut Vec<Relation>) {
    let mut taken = std::collections::HashSet::new();
    for v in db.views() {
        let mut oid = VIEW_BASE + view_hash(&v.name);
        while !taken.insert(oid) {
            oid = VIEW_BASE + (oid - VIEW_BASE + 1) % VIEW_OIDS;
        }
        relations.push(Relation {
            oid,
            name: v.name.clone(),
            kind: RelKind::View,
            columns: view_columns(db, view_types, &v),
            index: None,
            owner: None,
            sequence: None,
            access_method: 0,
            rows: -1.0,
            bytes: 0,
            toast_bytes: 0,
        });
    }
}

/// A sequence's relation, with the column that owns it.
fn sequence_relation(db: &Database, info: walden::SequenceInfo) -> Relation {
    let owner = info.def.owned_by.map(|(table, column)| SequenceOwner {
        table_oid: FIRST_USER_OID + i64::from(table),
        attnum: column as i16 + 1,
        deptype: if info.def.identity == walden::Identity::None {
            'a'
        } else {
            'i'
        },
    });
    Relation {
        oid: FIRST_USER_OID + i64::from(info.def.id),
        name: info.def.name.clone(),
        kind: RelKind::Sequence,
        columns: Vec::new(),
        index: None,
        owner,
        sequence: Some(info),
        access_method: 0,
        rows: -1.0,
        // One page, as PostgreSQL's sequences.
        bytes: db.page_size() as i64,
        toast_bytes: 0,
    }
}

/// The foreign keys of every table: a table's `n`th (by name) has the OID
/// `FOREIGN_KEY_BASE + table id × 256 + n` (a table's keys past the 256th are not
/// shown).
fn foreign_keys(db: &Database, relations: &[Relation]) -> Vec<ForeignKeyDef> {
    // Read afresh: the snapshot is made once per statement that names the catalog, from
    // every table's schema.
    let Ok(all) = crate::foreign_keys::read_all(db) else {
        return Vec::new();
    };
    let by_name =
        |name: &str, kind: RelKind| relations.iter().find(|r| r.name == name && r.kind == kind);
    let attnums = |rel: &Relation, names: &[String]| -> Vec<i16> {
        names
            .iter()
            .filter_map(|n| rel.columns.iter().position(|c| c.name == *n))
            .map(|p| (p + 1) as i16)
            .collect()
    };
    let mut out = Vec::new();
    let mut n = 0;
    let mut last_table = None;
    for k in &all.keys {
        let (Some(t), Some(p)) = (
            by_name(&k.table, RelKind::Table),
            by_name(&k.parent, RelKind::Table),
        ) else {
            continue;
        };
        if last_table != Some(t.oid) {
            last_table = Some(t.oid);
            n = 0;
        }
        n += 1;
        if n > 256 {
            continue;
        }
        let parent_keys = attnums(p, &k.parent_columns);
        let mut sorted = parent_keys.clone();
        sorted.sort_unstable();
        let index_oid = relations
            .iter()
            .find(|r| {
                r.index.as_ref().is_some_and(|ix| {
                    let mut keys = ix.keys.clone();
                    keys.sort_unstable();
                    ix.table_oid == p.oid && ix.unique && keys == sorted
                })
            })
            .map_or(0, |r| r.oid);
        out.push(ForeignKeyDef {
            oid: FOREIGN_KEY_BASE + (t.oid - FIRST_USER_OID) * 256 + n - 1,
            name: k.name.clone(),
            table_oid: t.oid,
            keys: attnums(t, &k.columns),
            parent_oid: p.oid,
            index_oid,
            parent_keys,
            on_update: k.on_update.code(),
            on_delete: k.on_delete.code(),
            definition: k.definition(),
        });
    }
    out
}

/// FNV-1a of a view's name, within the view OIDs.
fn view_hash(name: &str) -> i64 {
    (fnv(name) % VIEW_OIDS as u64) as i64
}

fn fnv(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Every role with its OID: 10 for the bootstrap superuser, else `ROLE_BASE +` a hash
/// of the name (the next free number on a clash, in name order).
fn roles(db: &Database) -> Vec<(i64, walden::RoleDef)> {
    let mut taken = std::collections::HashSet::new();
    all_roles(db)
        .into_iter()
        .map(|r| {
            if r.name == crate::catalog::BOOTSTRAP {
                return (OWNER_OID, r);
            }
            let mut oid = ROLE_BASE + (fnv(&r.name) % ROLE_OIDS as u64) as i64;
            while !taken.insert(oid) {
                oid = ROLE_BASE + (oid - ROLE_BASE + 1) % ROLE_OIDS;
            }
            (oid, r)
        })
        .collect()
}

/// A view's columns: its names with its query's types (`view_types`). A view whose
/// query no longer plans shows no columns.
fn view_columns(db: &Database, view_types: ViewTypes, v: &walden::ViewDef) -> Vec<Attr> {
    let Some(types) = view_types(db, v) else {
        return Vec::new();
    };
    v.columns
        .iter()
        .zip(types)
        .zip(0u32..)
        .map(|((name, ty), position)| Attr {
            name: name.clone(),
            ty: DeclaredType::plain(ty),
            not_null: false,
            default: None,
            identity: None,
            position,
        })
        .collect()
}

/// A column as `pg_attribute` and `pg_attrdef` show it: a serial column is NOT NULL
/// with its sequence's `nextval` as default, as PostgreSQL makes it; an identity
/// column shows no default (its values come from its sequence all the same).
fn attr(table: &str, c: &Column, identity: Option<char>) -> Attr {
    let ty = DeclaredType::of_column(c);
    let default = if identity.is_some() {
        None
    } else if c.serial && c.default.is_none() {
        Some(format!(
            "nextval('{}'::regclass)",
            quote_ident(&sequence_name(table, &c.name)).replace('\'', "''")
        ))
    } else {
        c.default.as_deref().map(|d| types::deparse_default(d, &ty))
    };
    Attr {
        name: c.name.clone(),
        ty: DeclaredType {
            serial: false,
            ..ty
        },
        not_null: !c.nullable || c.serial || c.primary_key,
        default,
        identity,
        position: 0,
    }
}

/// The catalog relations `regclass` knows by name, with PostgreSQL's OIDs.
pub const CATALOG_OIDS: &[(&str, i64)] = &[
    ("pg_type", 1247),
    ("pg_attribute", 1249),
    ("pg_class", 1259),
    ("pg_authid", 1260),
    ("pg_auth_members", 1261),
    ("pg_sequence", 2224),
    ("pg_am", 2601),
    ("pg_attrdef", 2604),
    ("pg_constraint", 2606),
    ("pg_depend", 2608),
    ("pg_description", 2609),
    ("pg_index", 2610),
    ("pg_inherits", 2611),
    ("pg_namespace", 2615),
    ("pg_trigger", 2620),
    ("pg_policy", 3256),
    ("pg_default_acl", 826),
    ("pg_partitioned_table", 3350),
    ("pg_statistic_ext", 3381),
    ("pg_collation", 3456),
    ("pg_publication", 6104),
    ("pg_publication_rel", 6106),
    ("pg_publication_namespace", 6237),
];

/// A schema's name by OID (the number itself for one that does not exist).
pub fn namespace_name(oid: i64) -> String {
    match oid {
        PG_CATALOG_NAMESPACE => "pg_catalog".into(),
        PG_TOAST_NAMESPACE => "pg_toast".into(),
        PUBLIC_NAMESPACE => "public".into(),
        INFORMATION_SCHEMA_NAMESPACE => "information_schema".into(),
        other => other.to_string(),
    }
}

/// PostgreSQL's name for a serial column's sequence (without its truncation of long
/// names to 63 bytes or its numbering of clashes).
pub fn sequence_name(table: &str, column: &str) -> String {
    format!("{table}_{column}_seq")
}

pub(crate) fn attrdef_oid(table_oid: i64, attnum: i64) -> i64 {
    ATTRDEF_BASE + (table_oid - FIRST_USER_OID) * ATTNUMS_PER_TABLE + attnum
}

pub(crate) fn constraint_oid(index_oid: i64) -> i64 {
    CONSTRAINT_BASE + (index_oid - FIRST_USER_OID)
}

/// PostgreSQL's `quote_ident`: a name that is not all lower-case letters, digits and
/// underscores (not starting with a digit) is double-quoted. Keywords are not checked.
pub fn quote_ident(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// A cursor as `pg_cursors` lists it.
#[derive(Debug, Clone)]
pub struct CursorInfo {
    pub name: String,
    pub statement: String,
    pub holdable: bool,
    pub binary: bool,
    pub scrollable: bool,
    /// Microseconds since 2000-01-01 UTC.
    pub created: i64,
}
