//! Names and the catalog as binding and planning see them: identifiers folded as
//! PostgreSQL folds them, the columns a name may find (`Scope`), a table's indexes
//! (`IndexMeta`), and the one `Catalog` trait planning resolves names through, with
//! `DbCatalog`, its implementation over a database.

pub mod acl;
pub(crate) mod foreign_keys;
pub mod pg_catalog;

use sqlparser::ast::{self, Spanned};
use walden::{Database, KeyOrder, RoleDef, TableKind};

use crate::error::{code, SqlError, SqlResult};
use crate::types::SqlType;

/// An identifier as PostgreSQL folds it: unquoted names are lower-cased.
pub fn ident_name(id: &ast::Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_lowercase()
    }
}

/// A relation's name, unqualified or qualified by `public` (the one schema of tables).
pub fn object_name(name: &ast::ObjectName) -> SqlResult<String> {
    let parts: Vec<&ast::Ident> = name.0.iter().filter_map(|p| p.as_ident()).collect();
    match parts.as_slice() {
        [id] => Ok(ident_name(id)),
        [schema, id] if ident_name(schema) == "public" => Ok(ident_name(id)),
        _ => Err(SqlError::unsupported(format!("the qualified name {name}")).at(name.span().start)),
    }
}

/// What marks a `JOIN … USING (…) AS alias`'s alias among the USING columns, where the
/// script's parser puts it (sqlparser has no place for it): no identifier PostgreSQL
/// accepts holds it.
pub const USING_ALIAS_MARK: char = '\u{1}';

/// The columns an expression may name.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The table (or alias) the columns may be qualified with, when they all come from
    /// one table.
    pub table: Option<String>,
    pub columns: Vec<(String, SqlType)>,
    /// With several relations in FROM: each relation's name (or alias) and the range of
    /// its columns (empty for one table: `table` names them all).
    pub relations: Vec<(String, std::ops::Range<usize>)>,
    /// Columns an unqualified name does not find (the right-hand copies of a JOIN's
    /// USING columns, which the left-hand ones stand for).
    pub hidden: Vec<usize>,
    /// The columns `*` stands for, in order, when not all of them (JOIN ... USING lists
    /// its columns once, first).
    pub star: Option<Vec<usize>>,
    /// A FULL JOIN's USING columns as (visible, hidden) pairs: an unqualified name (and
    /// `*`) reads coalesce(visible, hidden), as PostgreSQL's merged column is.
    pub merged: Vec<(usize, usize)>,
    /// `JOIN … USING (a, b) AS j`: each alias with the join's merged columns, which
    /// `j.a` reads as the unqualified `a` does.
    pub join_aliases: Vec<(String, Vec<usize>)>,
}

impl Scope {
    /// The columns of one table, qualified by its name.
    pub fn of_table(table: &str, schema: &walden::Schema) -> Scope {
        Scope {
            table: Some(table.to_string()),
            columns: schema
                .columns
                .iter()
                .map(|c| (c.name.clone(), SqlType::of_column(c)))
                .collect(),
            ..Scope::default()
        }
    }

    /// The range of columns of the relation called `name`, if there is one.
    pub fn relation(&self, name: &str) -> Option<std::ops::Range<usize>> {
        if self.relations.is_empty() {
            return (self.table.as_deref() == Some(name)).then_some(0..self.columns.len());
        }
        let mut found = self.relations.iter().filter(|(n, _)| n == name);
        found.next().map(|(_, r)| r.clone())
    }

    /// The merged columns of the JOIN … USING alias called `name`, if there is one.
    pub fn join_alias(&self, name: &str) -> Option<&[usize]> {
        if self.relation(name).is_some() {
            return None;
        }
        self.join_aliases
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, cols)| cols.as_slice())
    }

    /// The column a (possibly qualified) name refers to: Ok(None) when the scope has no
    /// such column (or no such relation).
    pub fn resolve(
        &self,
        table: Option<&ast::Ident>,
        id: &ast::Ident,
    ) -> SqlResult<Option<(usize, SqlType)>> {
        let name = ident_name(id);
        let range = match table {
            Some(t) => match self.relation(&ident_name(t)) {
                Some(r) => r,
                None => {
                    let cols = self.join_alias(&ident_name(t)).unwrap_or_default();
                    let found = cols.iter().find(|c| self.columns[**c].0 == name);
                    return Ok(found.map(|&c| (c, self.columns[c].1)));
                }
            },
            None => 0..self.columns.len(),
        };
        let mut found = self.columns[range.clone()]
            .iter()
            .enumerate()
            .map(|(i, c)| (i + range.start, c))
            .filter(|(i, (n, _))| *n == name && (table.is_some() || !self.hidden.contains(i)));
        match (found.next(), found.next()) {
            (Some((i, (_, ty))), None) => Ok(Some((i, *ty))),
            (Some(_), Some(_)) => Err(SqlError::new(
                code::AMBIGUOUS_COLUMN,
                format!("column reference \"{name}\" is ambiguous"),
            )
            .at(id.span.start)),
            _ => Ok(None),
        }
    }

    /// The columns `*` stands for.
    pub fn star_columns(&self) -> Vec<usize> {
        match &self.star {
            Some(s) => s.clone(),
            None => (0..self.columns.len()).collect(),
        }
    }
}

/// An index as the planner sees it.
#[derive(Debug, Clone)]
pub struct IndexMeta {
    pub name: String,
    /// Column positions in the table, in key order.
    pub columns: Vec<usize>,
    /// Each column's order (one per column).
    pub order: Vec<KeyOrder>,
    pub unique: bool,
}

/// Resolves names to tables (the caller knows the catalog).
pub trait Catalog {
    fn table_scope(&self, name: &str) -> SqlResult<Scope>;
    /// The table's indexes (none by default).
    fn indexes(&self, _table: &str) -> Vec<IndexMeta> {
        Vec::new()
    }
    /// An estimate of the table's rows, for choosing how to join.
    fn rows(&self, _table: &str) -> f64 {
        1000.0
    }
    /// Each column's distinct values as ANALYZE last estimated them (0: unknown); empty
    /// when the table was never analyzed.
    fn distinct(&self, _table: &str) -> Vec<f64> {
        Vec::new()
    }
    /// The virtual catalog as this statement sees it (`pg_catalog`), made on first use.
    fn pg_snapshot(&self) -> Option<std::sync::Arc<crate::pg_catalog::Snapshot>> {
        None
    }
    /// The view of that name, if there is one (none by default).
    fn view(&self, _name: &str) -> Option<walden::ViewDef> {
        None
    }
    /// The sequence of that name, if there is one (none by default).
    fn sequence(&self, _name: &str) -> Option<walden::SequenceInfo> {
        None
    }
}

/// The catalog of a database, for one statement.
pub(crate) struct DbCatalog<'a>(
    pub &'a Database,
    pub PgSnapshotCell,
    pub crate::pg_catalog::ViewTypes,
);

/// The virtual catalog of one statement, made when the statement first names it.
pub(crate) type PgSnapshotCell = std::cell::OnceCell<std::sync::Arc<crate::pg_catalog::Snapshot>>;

impl<'a> DbCatalog<'a> {
    /// The catalog of `db`, whose virtual catalog finds a view's column types with
    /// `view_types` (the planner's: `view::catalog_of` gives it).
    pub fn new(db: &'a Database, view_types: crate::pg_catalog::ViewTypes) -> DbCatalog<'a> {
        DbCatalog(db, PgSnapshotCell::new(), view_types)
    }
}

impl Catalog for DbCatalog<'_> {
    fn pg_snapshot(&self) -> Option<std::sync::Arc<crate::pg_catalog::Snapshot>> {
        Some(
            self.1
                .get_or_init(|| {
                    std::sync::Arc::new(crate::pg_catalog::Snapshot::of(self.0, self.2))
                })
                .clone(),
        )
    }

    fn table_scope(&self, name: &str) -> SqlResult<Scope> {
        Ok(Scope::of_table(name, &self.0.schema(name)?))
    }

    fn indexes(&self, table: &str) -> Vec<IndexMeta> {
        index_metas(self.0, table)
    }

    fn view(&self, name: &str) -> Option<walden::ViewDef> {
        self.0.view(name)
    }

    fn sequence(&self, name: &str) -> Option<walden::SequenceInfo> {
        self.0.sequence(name)
    }

    fn distinct(&self, table: &str) -> Vec<f64> {
        self.0
            .table_estimate(table)
            .map(|(_, d)| d)
            .unwrap_or_default()
    }

    /// The rows ANALYZE counted, scaled by the table's growth since; for a table never
    /// analyzed, its pages times the rows a page holds at its columns' typical widths.
    fn rows(&self, table: &str) -> f64 {
        if let Some((rows, _)) = self.0.table_estimate(table) {
            return rows.max(1.0);
        }
        let (Ok(bytes), Ok(schema)) = (self.0.table_bytes(table), self.0.schema(table)) else {
            return 1000.0;
        };
        let width: usize = schema
            .columns
            .iter()
            .map(|c| match c.ty {
                walden::ColumnType::Bool => 1,
                walden::ColumnType::Int2 => 2,
                walden::ColumnType::Int4 => 4,
                walden::ColumnType::Int8 | walden::ColumnType::Float8 => 8,
                walden::ColumnType::Uuid => 16,
                _ => 24,
            })
            .sum::<usize>()
            + 24;
        (bytes as f64 / width as f64).max(1.0)
    }
}

/// A table's indexes, for the planner.
pub(crate) fn index_metas(db: &Database, table: &str) -> Vec<IndexMeta> {
    let (Ok(schema), Ok(list)) = (db.schema(table), db.indexes(table)) else {
        return Vec::new();
    };
    list.into_iter()
        .filter_map(|i| {
            let columns = i
                .columns
                .iter()
                .map(|c| schema.columns.iter().position(|x| x.name == *c))
                .collect::<Option<Vec<usize>>>()?;
            Some(IndexMeta {
                name: i.name,
                columns,
                order: i.order,
                unique: i.unique,
            })
        })
        .collect()
}

/// The table kind `CREATE TABLE ... USING name` names: `heap`, or `undo` (also spelled
/// `zheap`, the name of PostgreSQL's undo-based table access method).
pub(crate) fn table_kind_named(name: &str) -> Option<TableKind> {
    match name {
        "zheap" => Some(TableKind::Undo),
        _ => TableKind::parse(name).filter(|k| k.name() == name),
    }
}

/// The hint listing what `USING` and `default_table_kind` accept.
pub(crate) const TABLE_KINDS_HINT: &str =
    "Walden's table kinds: heap, undo (zheap is an alias of undo).";

/// The bootstrap superuser: the role every session runs as (`current_user`), owner of
/// every relation in the virtual catalog.
pub const BOOTSTRAP: &str = "postgres";
/// Its OID, as in PostgreSQL.
pub const BOOTSTRAP_OID: i64 = 10;

/// The bootstrap superuser as it is until changed: every attribute, no password (a
/// server lets it in only by trust until `ALTER ROLE postgres PASSWORD` or `walden user
/// password` gives it one).
pub fn bootstrap_role() -> RoleDef {
    RoleDef {
        login: true,
        superuser: true,
        createdb: true,
        createrole: true,
        replication: true,
        bypassrls: true,
        ..RoleDef::new(BOOTSTRAP)
    }
}

/// A relation name given as text (`'s'`, `'"S"'`, `'public.s'`), as PostgreSQL's
/// `textToQualifiedNameList` reads it: unquoted parts fold to lower case; a schema
/// other than `public` names nothing Walden has.
pub(crate) fn relation_name_of_text(text: &str) -> SqlResult<(Option<String>, String)> {
    let invalid = || SqlError::new(code::INVALID_NAME, "invalid name syntax");
    let mut parts = Vec::new();
    let mut rest = text.trim();
    loop {
        let (part, after) = if let Some(q) = rest.strip_prefix('"') {
            let mut name = String::new();
            let mut chars = q.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                if c == '"' {
                    if q[i + 1..].starts_with('"') {
                        name.push('"');
                        chars.next();
                    } else {
                        end = Some(i + 1);
                        break;
                    }
                } else {
                    name.push(c);
                }
            }
            let end = end.ok_or_else(invalid)?;
            (name, q[end..].trim_start())
        } else {
            let end = rest.find(['.', ' ']).unwrap_or(rest.len());
            (rest[..end].to_lowercase(), rest[end..].trim_start())
        };
        if part.is_empty() {
            return Err(invalid());
        }
        parts.push(part);
        match after.strip_prefix('.') {
            Some(r) => rest = r.trim_start(),
            None if after.is_empty() => break,
            None => return Err(invalid()),
        }
    }
    match parts.len() {
        1 => Ok((None, parts.remove(0))),
        2 => {
            let name = parts.remove(1);
            Ok((Some(parts.remove(0)), name))
        }
        _ => Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!(
                "cross-database references are not implemented: {}",
                text.trim()
            ),
        )),
    }
}
