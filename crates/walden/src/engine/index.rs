//! Indexes in the engine: creating one (built bottom-up from the table's rows), dropping
//! and listing them; keeping them up to date as statements insert and change rows
//! (uniqueness checked under the index's lock, waiting for running transactions with no
//! lock held); and reading rows through them, each entry rechecked against the row
//! version the reader sees.

use std::collections::HashSet;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

use super::{check_name, Database, Inner, Reader, Transaction};
use crate::access::btree::{self, key, Logger, Unique, Verdict};
use crate::access::LastInsert;
use crate::access::{self, Ctx, Latest, Own, TableAccess};
use crate::catalog::{CatalogRecord, Index, IndexDef, Table};
use crate::error::{Error, Result};
use crate::index_page::cmp_keys;
use crate::schema::{KeyOrder, Row, RowShape, Schema, Value};
use crate::RowId;

/// A hasher for the row ids an index read has given (SipHash, the default, cost more
/// than the rest of a range read's bookkeeping): a row id's page and slot multiplied
/// and folded. Its input is the reader's own row ids, not data an attacker picks.
#[derive(Clone, Copy, Default)]
struct IdHash;

struct IdHasher(u64);

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(26) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_u16(&mut self, n: u16) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
}

/// What `Database::create_index` creates.
#[derive(Debug, Clone, Default)]
pub struct IndexSpec<'a> {
    pub name: &'a str,
    pub table: &'a str,
    /// Column names, in key order.
    pub columns: &'a [&'a str],
    /// Each column's order, one per column; empty: every column ascending with NULLs
    /// last. The keys are stored in this order, so a scan forward gives it and a scan
    /// backward its reverse.
    pub order: &'a [KeyOrder],
    pub unique: bool,
    /// The table's primary key (unique; the SQL layer makes its columns NOT NULL).
    pub primary: bool,
    /// An index of that name already there is not an error.
    pub if_not_exists: bool,
}

/// An index as `Database::indexes` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexInfo {
    /// The index's id, from the same numbering as tables' ids.
    pub id: u32,
    pub name: String,
    pub table: String,
    pub columns: Vec<String>,
    /// Each column's order, one per column.
    pub order: Vec<KeyOrder>,
    pub unique: bool,
    pub primary: bool,
    /// Pages the index holds, its meta page included.
    pub pages: u64,
}

fn lock_read<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn lock_write<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

impl Inner {
    pub(super) fn index(&self, name: &str) -> Result<(Arc<Index>, Arc<Table>)> {
        let cat = lock_read(&self.catalog);
        let ix = cat
            .index_names
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchIndex(name.to_string()))?;
        let t = cat
            .by_id
            .get(&ix.table)
            .cloned()
            .ok_or_else(|| Error::NoSuchIndex(name.to_string()))?;
        Ok((ix, t))
    }
}

/// The key of a row for an index, followed by its row id (the leaf item), and the key's
/// length; None for the key when a key column is NULL.
pub(super) fn item_of(
    t: &Table,
    ix: &Index,
    row: &[Value],
    id: RowId,
) -> Result<(Vec<u8>, usize, bool)> {
    item_of_in(&t.schema(), t, ix, row, id)
}

/// As `item_of`, with the table's schema at hand.
pub(super) fn item_of_in(
    schema: &Schema,
    t: &Table,
    ix: &Index,
    row: &[Value],
    id: RowId,
) -> Result<(Vec<u8>, usize, bool)> {
    let mut item = Vec::with_capacity(32);
    let has_null = key_into(schema, t, ix, row, &mut item)?;
    let key_len = item.len();
    key::push_row_id(&mut item, id);
    Ok((item, key_len, has_null))
}

/// Appends a row's key for an index to `out`; whether a key column is NULL.
fn key_into(
    schema: &Schema,
    t: &Table,
    ix: &Index,
    row: &[Value],
    out: &mut Vec<u8>,
) -> Result<bool> {
    key::encode_key(schema, &ix.columns, &ix.order, row, out).ok_or_else(|| Error::SchemaMismatch {
        table: t.name(),
        reason: format!("a row does not fit index {:?}", ix.name),
    })
}

/// A row's leaf item for an index built from the row as stored, and where its key lies
/// in the row (for a leaf insert that names the row of the insert record instead of
/// logging the key); None when `ranges` (the row's `Schema::value_ranges`) are missing
/// or do not cover the key, as for a row that lacks a column added later.
fn item_from_bytes(
    schema: &Schema,
    ix: &Index,
    ranges: Option<&[Option<std::ops::Range<usize>>]>,
    id: RowId,
    row: &[u8],
) -> Option<(Vec<u8>, usize, bool, Vec<key::KeyPart>)> {
    let parts = key::key_parts_in(schema, &ix.columns, &ix.order, ranges?)?;
    let mut item = Vec::with_capacity(32);
    key::key_from_parts(row, &parts, &mut item).ok()?;
    let key_len = item.len();
    key::push_row_id(&mut item, id);
    let has_null = parts.iter().any(|p| matches!(p, key::KeyPart::Null { .. }));
    Some((item, key_len, has_null, parts))
}

/// A row as stored, decoded; a row that does not decode is a damaged page.
pub(super) fn decode_row(inner: &Inner, t: &Table, id: RowId, bytes: &[u8]) -> Result<Row> {
    decode_columns_in(inner, t, &t.schema(), id, bytes, RowShape::default())
}

/// As `decode_row`, with the table's schema at hand, decoding what `shape` asks for
/// (`Schema::decode_shaped`); values stored out of line are read from the table's toast
/// relation.
pub(super) fn decode_columns_in(
    inner: &Inner,
    t: &Table,
    schema: &Schema,
    id: RowId,
    bytes: &[u8],
    shape: RowShape,
) -> Result<Row> {
    let mut row = Vec::new();
    decode_columns_into(inner, t, schema, id, bytes, shape, &mut row)?;
    Ok(row)
}

/// As `decode_columns_in`, into `row` (its values replaced).
pub(super) fn decode_columns_into(
    inner: &Inner,
    t: &Table,
    schema: &Schema,
    id: RowId,
    bytes: &[u8],
    shape: RowShape,
    row: &mut Row,
) -> Result<()> {
    let fetch = |p: &crate::schema::External| super::toast::fetch(inner, t, p);
    schema
        .decode_shaped_into(bytes, shape, Some(&fetch), row)
        .map_err(|reason| Error::CorruptPage {
            path: inner.store.path().to_path_buf(),
            page: id.page,
            location: id.page,
            reason: format!("row at slot {}: {reason}", id.slot),
        })
}

/// The unique-violation error for `key` (its columns and values named as PostgreSQL
/// does).
fn violation(t: &Table, ix: &Index, key: &[u8]) -> Error {
    let types: Vec<_> = ix
        .columns
        .iter()
        .map(|&c| t.schema().columns[c as usize].ty)
        .collect();
    let columns = ix
        .columns
        .iter()
        .map(|&c| t.schema().columns[c as usize].name.clone())
        .collect::<Vec<_>>()
        .join(", ");
    let values = key::decode_key(&types, &ix.order, key)
        .map(|vs| {
            vs.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| "?".into());
    Error::UniqueViolation {
        index: ix.name.clone(),
        columns,
        values,
    }
}

/// The unique-violation error for a new `row`, naming its own values (as PostgreSQL
/// does: a key read back from its index bytes could show an equal value written
/// differently, jsonb's `1` for `1.0`).
fn row_violation(t: &Table, ix: &Index, row: &[Value]) -> Error {
    let name = |c: u16| t.schema().columns[c as usize].name.clone();
    let value = |c: u16| row.get(c as usize).map_or("?".into(), |v| v.to_string());
    Error::UniqueViolation {
        index: ix.name.clone(),
        columns: ix
            .columns
            .iter()
            .map(|&c| name(c))
            .collect::<Vec<_>>()
            .join(", "),
        values: ix
            .columns
            .iter()
            .map(|&c| value(c))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The error for a primary key with a NULL in `row`.
fn null_in_key(t: &Table, ix: &Index, row: &[Value]) -> Error {
    let column = ix
        .columns
        .iter()
        .find(|&&c| matches!(row.get(c as usize), Some(Value::Null)))
        .map(|&c| t.schema().columns[c as usize].name.clone())
        .unwrap_or_default();
    Error::NotNullViolation {
        table: t.name(),
        column,
    }
}

/// Whether the row (as `latest` found it) holds `key` in the index.
fn holds_key(
    inner: &Inner,
    t: &Table,
    ix: &Index,
    id: RowId,
    row: &[u8],
    key: &[u8],
) -> Result<bool> {
    let row = decode_row(inner, t, id, row)?;
    let (item, key_len, _) = item_of(t, ix, &row, id)?;
    Ok(&item[..key_len] == key)
}

impl Database {
    /// Creates an index, committed at once (`Transaction::create_index`).
    pub fn create_index(&self, spec: &IndexSpec) -> Result<bool> {
        let mut tx = self.begin();
        let made = tx.create_index(spec)?;
        tx.commit()?;
        Ok(made)
    }

    /// Rebuilds an index from its table's rows (REINDEX): the new tree replaces the old
    /// one in one catalog record, so a crash leaves one or the other. Its old pages are
    /// not reused yet.
    pub fn reindex(&self, name: &str) -> Result<()> {
        let (ix, t) = self.handle.inner.index(name)?;
        let def = IndexDef {
            id: 0,
            name: ix.name.clone(),
            table: t.id,
            columns: ix.columns.clone(),
            order: ix.order.clone(),
            unique: ix.unique,
            primary: ix.primary,
            meta: 0,
        };
        let mut tx = self.begin();
        tx.build_index(&t, def, Some(&ix), false)?;
        tx.commit()
    }

    /// Drops an index, committed at once (`Transaction::drop_index`).
    pub fn drop_index(&self, name: &str) -> Result<()> {
        let mut tx = self.begin();
        tx.drop_index(name)?;
        tx.commit()
    }
}

impl Transaction {
    /// Creates an index and builds it from the table's rows: every version a snapshot
    /// may still read is indexed, sorted, and the tree written bottom-up. A unique
    /// index on rows that repeat a key fails with `UniqueViolation`, changing nothing.
    /// Statements changing the table wait while it is built, other transactions until
    /// this one ends. Returns false when `if_not_exists` found the name taken.
    pub fn create_index(&mut self, spec: &IndexSpec) -> Result<bool> {
        self.check_open()?;
        check_name("index", spec.name)?;
        let t = self.table(spec.table)?;
        let mut columns = Vec::with_capacity(spec.columns.len());
        if spec.columns.is_empty() || spec.columns.len() > 32 {
            return Err(Error::InvalidOption("an index has 1 to 32 columns".into()));
        }
        for name in spec.columns {
            let c = t
                .schema()
                .columns
                .iter()
                .position(|c| c.name == *name)
                .ok_or_else(|| {
                    Error::InvalidOption(format!(
                        "column {name:?} of table {:?} does not exist",
                        t.name()
                    ))
                })?;
            if columns.contains(&(c as u16)) {
                return Err(Error::InvalidOption(format!(
                    "column {name:?} appears twice in index {:?}",
                    spec.name
                )));
            }
            columns.push(c as u16);
        }
        let order = match spec.order.len() {
            0 => vec![KeyOrder::default(); columns.len()],
            n if n == columns.len() => spec.order.to_vec(),
            n => {
                return Err(Error::InvalidOption(format!(
                    "index {:?} has {} columns but {n} column orders",
                    spec.name,
                    columns.len()
                )))
            }
        };
        let def = IndexDef {
            id: 0,
            name: spec.name.to_string(),
            table: t.id,
            columns,
            order,
            unique: spec.unique || spec.primary,
            primary: spec.primary,
            meta: 0,
        };
        self.build_index(&t, def, None, spec.if_not_exists)
    }

    /// Builds the index `def` describes (its id and meta page to be chosen), in place of
    /// `replaces` if given.
    fn build_index(
        &mut self,
        t: &Arc<Table>,
        mut def: IndexDef,
        replaces: Option<&Arc<Index>>,
        if_not_exists: bool,
    ) -> Result<bool> {
        let inner = self.db.clone();
        // PostgreSQL's SHARE lock: others read on (and may read through the new index
        // before the commit: it has every version), writers wait for the transaction.
        self.lock_table_of(t, crate::txn::RelLockMode::Share, false)?;
        loop {
            let ddl = t.ddl.write();
            {
                let cat = lock_read(&inner.catalog);
                if !cat.by_id.get(&t.id).is_some_and(|x| Arc::ptr_eq(x, t)) {
                    return Err(Error::NoSuchTable(t.name()));
                }
                match replaces {
                    Some(old)
                        if !cat
                            .indexes
                            .get(&old.id)
                            .is_some_and(|x| Arc::ptr_eq(x, old)) =>
                    {
                        return Err(Error::NoSuchIndex(old.name.clone()));
                    }
                    Some(_) => {}
                    None if cat.name_taken(&def.name) => {
                        if if_not_exists {
                            return Ok(false);
                        }
                        return Err(Error::IndexExists(def.name.clone()));
                    }
                    None => {}
                }
            }
            let id = {
                let mut cat = lock_write(&inner.catalog);
                let id = cat.next_table_id.max(1);
                cat.next_table_id = id.saturating_add(1);
                id
            };
            def.id = id;
            let ctx = inner.access_ctx();
            let access = access::of(t.kind);
            let probe = Index::new(def.clone(), Vec::new());
            let own = Own {
                xid: self.snapshot.xid,
                subs: &self.subs,
            };
            let items = match collect_items(&inner, &ctx, t, &probe, access, own)? {
                Collected::Items(arena, entries) => (arena, entries),
                Collected::Wait(other) => {
                    drop(ddl);
                    inner.txns.wait_for(self.snapshot.xid, other)?;
                    continue;
                }
            };
            let mut w = Logger {
                xid: self.writer,
                stats: &mut self.stats,
                row_ref: None,
            };
            // Each item copied out only as the build reaches it.
            let (arena, entries) = items;
            let mut items = entries.iter().map(|e| arena.item(e).to_vec());
            let (meta, pages) = btree::build(&ctx, id, &mut items, &mut w)?;
            self.wrote = true;
            def.meta = meta;
            // Logged and put in the catalog under the catalog lock, so that a
            // checkpoint whose catalog lacks the index has its redo point before the
            // record (as for tables).
            let mut cat = lock_write(&inner.catalog);
            match replaces {
                Some(old) => self.log(&CatalogRecord::ReplaceIndex {
                    old: old.id,
                    def: def.clone(),
                    pages: pages.clone(),
                })?,
                None => self.log_ddl(&CatalogRecord::CreateIndex {
                    def: def.clone(),
                    pages: pages.clone(),
                })?,
            }
            if let Some(old) = replaces {
                cat.remove_index(old.id);
            }
            cat.insert_index(Index::new(def, pages))
                .map_err(Error::InvalidOption)?;
            // The old index's pages go as a dropped index's do (under the catalog's
            // lock: a checkpoint lists them in the index or in the free list). Held by
            // the caller alone unless a statement still has it.
            if let Some(old) = replaces {
                inner.release_dropped(&old.page_list(), Arc::strong_count(old) > 1);
            }
            drop(cat);
            drop(ddl);
            return Ok(true);
        }
    }

    /// Drops an index: hidden from now on (its name free again), gone with its pages
    /// freed when the transaction commits.
    pub fn drop_index(&mut self, name: &str) -> Result<()> {
        self.check_open()?;
        let inner = self.db.clone();
        let (ix, t) = inner.index(name)?;
        let t = self.table_to_alter(&t.name())?;
        let _ddl = t.ddl.write();
        let mut cat = lock_write(&inner.catalog);
        if !cat.indexes.get(&ix.id).is_some_and(|x| Arc::ptr_eq(x, &ix)) || cat.index_hidden(&ix) {
            return Err(Error::NoSuchIndex(name.to_string()));
        }
        self.log_ddl(&CatalogRecord::DropIndex {
            index: ix.id,
            name: ix.name.clone(),
        })?;
        cat.hide_index(ix.id);
        Ok(())
    }
}

impl Database {
    /// Removes the index entries of versions vacuum took away (an entry stays while some
    /// version of its row that a snapshot may still read has its key), then gives the
    /// index's empty leaves back to its free list (`btree::reclaim`), then takes the
    /// table's empty pages out of it (`free_empty_pages`). Statements that change the
    /// table wait meanwhile (so no entry is made for a slot while it is judged, and no
    /// row is put on a page being given back). Returns the pages it gave back.
    /// `owner` is the table whose DDL lock keeps statements out: the table itself, or
    /// for a toast relation the table whose statements write it.
    pub(super) fn vacuum_indexes(
        &self,
        table: &Arc<crate::catalog::Table>,
        owner: &crate::catalog::Table,
        candidates: &[u64],
        tx: &mut Transaction,
    ) -> Result<Vec<u64>> {
        let _ddl = owner.ddl.write();
        self.vacuum_index_entries(table, tx)?;
        self.free_empty_pages(table, candidates, tx)
    }

    /// Gives back those of `candidates` (pages the vacuum pass found empty) that are
    /// still empty (VACUUM, with the table's DDL lock held
    /// exclusively: no statement changes the table meanwhile). One `free_table_pages`
    /// record names them; their page numbers go to the free list, for any relation once
    /// a checkpoint allows (docs/recovery.md rule 26). A scan that read the page list
    /// before finds them empty; index entries still naming their slots lead to no row.
    fn free_empty_pages(
        &self,
        table: &crate::catalog::Table,
        candidates: &[u64],
        tx: &mut Transaction,
    ) -> Result<Vec<u64>> {
        let inner = &self.handle.inner;
        let ctx = inner.access_ctx();
        // The vacuum pass's empty pages (sorted), judged again now that no statement
        // changes the table, and only while the table still has them.
        // Those in the pool first: reading one that is not evicts a frame (written if
        // dirty), and read in the pass's order, the pages the pass left at the start
        // would push out every page after them in turn, each written on the way.
        let pages = table.page_list();
        let (cached, not): (Vec<u64>, Vec<u64>) = candidates
            .iter()
            .filter(|p| pages.binary_search(p).is_ok())
            .partition(|&&p| inner.pool.is_cached(p));
        let mut empty = Vec::new();
        for page in cached.into_iter().chain(not) {
            if crate::access::slotted::is_empty(&ctx, page)? {
                empty.push(page);
            }
        }
        empty.sort_unstable();
        if empty.is_empty() {
            return Ok(empty);
        }
        let runs = crate::catalog::page_runs(&empty);
        tx.log(&CatalogRecord::FreeTablePages {
            table: table.id,
            runs: runs.clone(),
        })?;
        let removed = table.remove_pages(&runs);
        // Read after the pages left the list: a transaction that begins later never
        // sees them in it, and one that began before holds the pages until it ends.
        inner
            .store
            .free_pages(&removed, inner.wal.insert_lsn(), inner.txns.next_xid());
        Ok(removed)
    }

    fn vacuum_index_entries(
        &self,
        table: &Arc<crate::catalog::Table>,
        tx: &mut Transaction,
    ) -> Result<()> {
        let inner = &self.handle.inner;
        let indexes = table.index_list();
        if indexes.is_empty() {
            return Ok(());
        }
        let (ctx, access) = (inner.access_ctx(), access::of(table.kind));
        let mut live: Vec<std::collections::HashSet<Vec<u8>>> =
            vec![std::collections::HashSet::new(); indexes.len()];
        let mut rows = crate::access::PageRows::default();
        // Only the indexed columns are decoded (a value stored out of line elsewhere
        // in the row is not read).
        let schema = table.schema();
        let needed: Vec<bool> = schema
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.dropped)
            .map(|(i, _)| indexes.iter().any(|ix| ix.columns.contains(&(i as u16))))
            .collect();
        let shape = RowShape {
            needed: Some(&needed),
            capacity: 0,
        };
        for page in table.page_list() {
            rows.clear();
            access.versions_of_page(&ctx, page, None, &mut rows)?;
            for (id, bytes) in rows.iter() {
                let row = decode_columns_in(inner, table, &schema, id, bytes, shape)?;
                for (n, ix) in indexes.iter().enumerate() {
                    live[n].insert(item_of(table, ix, &row, id)?.0);
                }
            }
            inner.relieve_space();
        }
        for (n, ix) in indexes.iter().enumerate() {
            let mut dead = Vec::new();
            btree::scan(&ctx, ix, &[], None, &mut |item| {
                if !live[n].contains(item) {
                    dead.push(item.to_vec());
                }
                Ok(true)
            })?;
            let xid = tx.xid();
            let mut w = btree::Logger {
                xid,
                stats: &mut tx.stats,
                row_ref: None,
            };
            btree::delete_sorted(&ctx, ix, &dead, &mut w)?;
            let r = btree::reclaim(&ctx, ix, &mut w)?;
            inner.stats.index_pages_freed.fetch_add(
                r.unlinked + r.unreachable,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        Ok(())
    }

    /// The indexes of a table, in the order they were created.
    pub fn indexes(&self, table: &str) -> Result<Vec<IndexInfo>> {
        let t = self.handle.inner.table(table)?;
        Ok(t.index_list().iter().map(|ix| info(&t, ix)).collect())
    }

    /// The index of that name (`NoSuchIndex` if none).
    pub fn index(&self, name: &str) -> Result<IndexInfo> {
        let (ix, t) = self.handle.inner.index(name)?;
        Ok(info(&t, &ix))
    }

    /// Whether a table, an index, a view or a sequence has this name (they share one
    /// namespace).
    pub fn relation_exists(&self, name: &str) -> bool {
        lock_read(&self.handle.inner.catalog).name_taken(name)
    }

    /// What the relation of that name is, if there is one.
    pub fn relation_kind(&self, name: &str) -> Option<RelationKind> {
        let cat = lock_read(&self.handle.inner.catalog);
        if cat.by_name.contains_key(name) {
            Some(RelationKind::Table)
        } else if cat.index_names.contains_key(name) {
            Some(RelationKind::Index)
        } else if cat.views.contains_key(name) {
            Some(RelationKind::View)
        } else if cat.sequences.contains_name(name) {
            Some(RelationKind::Sequence)
        } else {
            None
        }
    }

    /// The table an index is on.
    pub fn index_table(&self, index: &str) -> Option<String> {
        let cat = lock_read(&self.handle.inner.catalog);
        let ix = cat.index_names.get(index)?;
        cat.by_id.get(&ix.table).map(|t| t.name())
    }
}

/// The kinds of relation, which share one namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationKind {
    Table,
    Index,
    View,
    Sequence,
}

fn info(t: &Table, ix: &Index) -> IndexInfo {
    IndexInfo {
        id: ix.id,
        name: ix.name.clone(),
        table: t.name(),
        columns: ix
            .columns
            .iter()
            .map(|&c| t.schema().columns[c as usize].name.clone())
            .collect(),
        order: (0..ix.columns.len())
            .map(|n| KeyOrder::of(&ix.order, n))
            .collect(),
        unique: ix.unique,
        primary: ix.primary,
        pages: ix.page_count() as u64,
    }
}

enum Collected {
    /// The items, and their order (sorted, without repeats).
    Items(ItemArena, Vec<ItemEntry>),
    /// A running transaction holds a repeated key of a unique index.
    Wait(u64),
}

/// Leaf items kept end to end in one buffer (a build makes one per row version: a
/// vector each would cost an allocation each).
#[derive(Default)]
struct ItemArena {
    bytes: Vec<u8>,
}

/// Where an item starts in the arena, its length, its key's length, and whether a key
/// column is NULL.
type ItemEntry = (usize, u32, u32, bool);

impl ItemArena {
    fn item(&self, e: &ItemEntry) -> &[u8] {
        &self.bytes[e.0..e.0 + e.1 as usize]
    }

    fn key(&self, e: &ItemEntry) -> &[u8] {
        &self.bytes[e.0..e.0 + e.2 as usize]
    }
}

/// Tables of at least this many pages have their index items collected by two threads.
const PARALLEL_BUILD_PAGES: usize = 256;

/// The leaf items of every row version on `pages` (unsorted).
fn items_of_pages(
    inner: &Inner,
    ctx: &Ctx,
    t: &Table,
    ix: &Index,
    access: &dyn TableAccess,
    pages: &[u64],
) -> Result<(ItemArena, Vec<ItemEntry>)> {
    let max = btree::max_key_bytes(ctx.pool.page_size());
    let mut arena = ItemArena::default();
    let mut entries: Vec<ItemEntry> = Vec::new();
    let mut rows = crate::access::PageRows::default();
    // The key is cut from the row's bytes; a row that lacks a column added later is
    // decoded instead.
    let mut schema = t.schema();
    let mut ranges = Vec::new();
    let mut parts = Vec::new();
    for &page in pages {
        rows.clear();
        access.versions_of_page(ctx, page, None, &mut rows)?;
        for (id, bytes) in rows.iter() {
            let start = arena.bytes.len();
            let cut = schema.value_ranges_into(bytes, &mut ranges).is_ok()
                && key::key_parts_into(&schema, &ix.columns, &ix.order, &ranges, &mut parts)
                    .is_some()
                && key::key_from_parts(bytes, &parts, &mut arena.bytes).is_ok();
            let (key_len, has_null) = if cut {
                let has_null = parts.iter().any(|p| matches!(p, key::KeyPart::Null { .. }));
                let key_len = arena.bytes.len() - start;
                key::push_row_id(&mut arena.bytes, id);
                (key_len, has_null)
            } else {
                arena.bytes.truncate(start);
                let row = decode_row(inner, t, id, bytes)?;
                schema = t.schema();
                let (item, key_len, has_null) = item_of_in(&schema, t, ix, &row, id)?;
                arena.bytes.extend_from_slice(&item);
                (key_len, has_null)
            };
            if key_len > max {
                return Err(Error::KeyTooLarge {
                    index: ix.name.clone(),
                    size: key_len,
                    max,
                });
            }
            let len = arena.bytes.len() - start;
            let too_long = || Error::InvalidOption("index build: an item too long".into());
            entries.push((
                start,
                u32::try_from(len).map_err(|_| too_long())?,
                u32::try_from(key_len).map_err(|_| too_long())?,
                has_null,
            ));
        }
        inner.relieve_space();
    }
    Ok((arena, entries))
}

/// The leaf items of every row version of the table, sorted, without repeats; for a
/// unique index, checked for keys two live rows share.
fn collect_items(
    inner: &Inner,
    ctx: &Ctx,
    t: &Table,
    ix: &Index,
    access: &dyn TableAccess,
    own: Own<'_>,
) -> Result<Collected> {
    let pages = t.page_list();
    // A large table's pages are read in two halves at once (a build is otherwise one
    // thread reading, decoding and cutting keys while the machine's other cores idle).
    let (arena, mut entries) = if pages.len() >= PARALLEL_BUILD_PAGES
        && inner.threads
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
    {
        let (first, second) = pages.split_at(pages.len() / 2);
        let (a, b) = std::thread::scope(|s| {
            // A thread the system refuses (at its limit of threads) leaves the second
            // half to this one.
            let other = std::thread::Builder::new()
                .name("walden-index-build".into())
                .spawn_scoped(s, || items_of_pages(inner, ctx, t, ix, access, second));
            let mine = items_of_pages(inner, ctx, t, ix, access, first);
            let theirs = match other {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    Err(Error::InvalidOption(
                        "index build: a reader thread failed".into(),
                    ))
                }),
                Err(_) => items_of_pages(inner, ctx, t, ix, access, second),
            };
            (mine, theirs)
        });
        let (mut arena, mut entries) = a?;
        let (more, more_entries) = b?;
        let base = arena.bytes.len();
        arena.bytes.extend_from_slice(&more.bytes);
        entries.extend(
            more_entries
                .into_iter()
                .map(|(at, len, key_len, null)| (at + base, len, key_len, null)),
        );
        (arena, entries)
    } else {
        items_of_pages(inner, ctx, t, ix, access, &pages)?
    };
    entries.sort_unstable_by(|a, b| arena.item(a).cmp(arena.item(b)));
    entries.dedup_by(|a, b| arena.item(a) == arena.item(b));
    if ix.primary {
        // A primary key holds no NULL: a live row that has one refuses the build.
        for e in entries.iter().filter(|e| e.3) {
            let Some((_, id)) = key::split_item(arena.item(e)) else {
                continue;
            };
            match access.latest(ctx, t, id, own)? {
                Latest::Gone => {}
                Latest::Pending { xid, .. } => return Ok(Collected::Wait(xid)),
                Latest::Live { id: at, row } => {
                    let row = decode_row(inner, t, at, &row)?;
                    if ix
                        .columns
                        .iter()
                        .any(|&c| matches!(row.get(c as usize), Some(Value::Null)))
                    {
                        return Err(null_in_key(t, ix, &row));
                    }
                }
            }
        }
    }
    if ix.unique {
        let mut i = 0;
        while i < entries.len() {
            let key = arena.key(&entries[i]);
            let has_null = entries[i].3;
            let mut j = i + 1;
            while j < entries.len() && arena.key(&entries[j]) == key {
                j += 1;
            }
            if j - i > 1 && !has_null {
                let mut live = HashSet::new();
                for e in &entries[i..j] {
                    let Some((_, id)) = key::split_item(arena.item(e)) else {
                        continue;
                    };
                    match access.latest(ctx, t, id, own)? {
                        Latest::Gone => {}
                        Latest::Pending {
                            only: Some((at, row)),
                            ..
                        } if !holds_key(inner, t, ix, at, &row, key)? => {}
                        Latest::Pending { xid, .. } => return Ok(Collected::Wait(xid)),
                        Latest::Live { id: at, row } => {
                            if holds_key(inner, t, ix, at, &row, key)? {
                                live.insert(at);
                            }
                        }
                    }
                }
                if live.len() > 1 {
                    return Err(violation(t, ix, key));
                }
            }
            i = j;
        }
    }
    Ok(Collected::Items(arena, entries))
}

impl Transaction {
    /// Puts the entries of rows just inserted or changed into every index of the
    /// table: `rows` are (row id, row bytes). Unique indexes are checked; a running
    /// transaction holding the key is waited for. Returns the entries it made (to take
    /// back on failure) through `made`.
    pub(super) fn index_rows(
        &mut self,
        t: &Table,
        indexes: &[Arc<Index>],
        rows: &[(RowId, Vec<u8>)],
        fresh: Option<&LastInsert>,
        made: &mut Vec<(usize, Vec<u8>)>,
    ) -> Result<()> {
        let db = self.db.clone();
        let ctx = db.access_ctx();
        let access = access::of(t.kind);
        let me = self.snapshot.xid;
        // Entries are logged with the xid their rows carry (`btree_insert_row` names
        // the row of that xid's latest insert): a heap table's rows carry the
        // savepoint's subtransaction.
        let logged_as = if access.uses_undo() { me } else { self.writer };
        let own = crate::access::Own {
            xid: me,
            subs: &self.subs,
        };
        // The schema is read once (it sits behind a lock), and each key is built from
        // the row's bytes without decoding the row; only a row that lacks a column added
        // later is decoded.
        let schema = t.schema();
        for (id, bytes) in rows {
            let ranges = schema.value_ranges(bytes).ok();
            let decoded = || decode_row(&db, t, *id, bytes);
            for (n, ix) in indexes.iter().enumerate() {
                let (item, key_len, has_null, parts) =
                    match item_from_bytes(&schema, ix, ranges.as_deref(), *id, bytes) {
                        Some((item, key_len, has_null, parts)) => {
                            (item, key_len, has_null, Some(parts))
                        }
                        None => {
                            let (item, key_len, has_null) = item_of(t, ix, &decoded()?, *id)?;
                            (item, key_len, has_null, None)
                        }
                    };
                if has_null && ix.primary {
                    return Err(null_in_key(t, ix, &decoded()?));
                }
                let row_ref = fresh
                    .filter(|f| f.page == id.page && f.slots.contains(&id.slot))
                    .zip(parts)
                    .map(|(f, key)| btree::RowRef {
                        rows_lsn: f.lsn,
                        id: *id,
                        key,
                    });
                let mut w = Logger {
                    xid: logged_as,
                    stats: &mut self.stats,
                    row_ref,
                };
                if !ix.unique || has_null {
                    btree::insert(&ctx, ix, &item, &mut w)?;
                    made.push((n, item));
                    continue;
                }
                let key = &item[..key_len];
                loop {
                    let r = btree::insert_unique(
                        &ctx,
                        ix,
                        &item,
                        key_len,
                        &mut |other| {
                            if other == *id {
                                return Ok(Verdict::Fine);
                            }
                            Ok(match access.latest(&ctx, t, other, own)? {
                                Latest::Gone => Verdict::Fine,
                                Latest::Pending {
                                    only: Some((at, row)),
                                    ..
                                } if !holds_key(&db, t, ix, at, &row, key)? => Verdict::Fine,
                                Latest::Pending { xid, .. } => Verdict::Wait(xid),
                                Latest::Live { id: at, row } => {
                                    if at != *id && holds_key(&db, t, ix, at, &row, key)? {
                                        Verdict::Conflict
                                    } else {
                                        Verdict::Fine
                                    }
                                }
                            })
                        },
                        &mut w,
                    )?;
                    match r {
                        Unique::Inserted => break,
                        Unique::Conflict(_) => return Err(row_violation(t, ix, &decoded()?)),
                        Unique::Wait(other) => db.txns.wait_for(me, other)?,
                    }
                }
                made.push((n, item));
            }
        }
        Ok(())
    }

    /// Takes back index entries `index_rows` made (a statement that failed after them).
    pub(super) fn unindex(
        &mut self,
        t: &Table,
        indexes: &[Arc<Index>],
        made: &[(usize, Vec<u8>)],
    ) -> Result<()> {
        let db = self.db.clone();
        let ctx = db.access_ctx();
        // Logged as the entries were (`index_rows`).
        let xid = if access::of(t.kind).uses_undo() {
            self.snapshot.xid
        } else {
            self.writer
        };
        let mut w = Logger {
            xid,
            stats: &mut self.stats,
            row_ref: None,
        };
        for (n, item) in made.iter().rev() {
            btree::delete(&ctx, &indexes[*n], item, &mut w)?;
        }
        Ok(())
    }

    /// The rows visible to this transaction whose key in `index` equals `key` (or starts
    /// with it, for fewer values than the index has columns).
    pub fn index_get(&mut self, index: &str, key: &[Value]) -> Result<Vec<(RowId, Row)>> {
        let mut out = Vec::new();
        let rows = super::Rows::index_key(index, key);
        self.read(rows, RowShape::default(), |id, row| {
            out.push((id, row));
            Ok::<_, Error>(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }
}

impl Reader<'_> {
    /// The index read under `Reader::read`: each visible row whose key lies between
    /// the bounds, decoded whole in a vector with room for `capacity` values, given to
    /// `f` until it breaks or fails. An error of `f` is kept aside while the B-tree's
    /// walk unwinds (it knows only the engine's errors) and returned as it was.
    pub(super) fn read_index<E: From<Error>>(
        &self,
        index: &str,
        (lower, upper): (Bound<&[Value]>, Bound<&[Value]>),
        backward: bool,
        capacity: usize,
        mut f: impl FnMut(RowId, Row) -> std::result::Result<ControlFlow<()>, E>,
    ) -> std::result::Result<(), E> {
        let txn = self.txn;
        let db = txn.db.clone();
        let (ix, t) = db.index(index)?;
        txn.lock_table_of(&t, crate::txn::RelLockMode::AccessShare, false)?;
        let prefix = |vals: &[Value]| -> Result<Vec<u8>> {
            if vals.len() > ix.columns.len() {
                return Err(Error::InvalidOption(format!(
                    "index {:?} has {} columns, not {}",
                    ix.name,
                    ix.columns.len(),
                    vals.len()
                )));
            }
            // Room for a fixed-width key without growing.
            let mut out = Vec::with_capacity(vals.len() * 16 + 8);
            for (n, (v, &c)) in vals.iter().zip(&ix.columns).enumerate() {
                let (ty, order) = (
                    t.schema().columns[c as usize].ty,
                    KeyOrder::of(&ix.order, n),
                );
                if !key::push_value_in(&mut out, ty, v, order) {
                    return Err(Error::SchemaMismatch {
                        table: t.name(),
                        reason: format!(
                            "{v} is not a value of column {:?}",
                            t.schema().columns[c as usize].name
                        ),
                    });
                }
            }
            Ok(out)
        };
        // Keys at or above `start` and, when `stop` is given, below it.
        let start = match lower {
            Bound::Unbounded => Vec::new(),
            Bound::Included(v) => prefix(v)?,
            Bound::Excluded(v) => key::past(prefix(v)?),
        };
        let stop: Option<Vec<u8>> = match upper {
            Bound::Unbounded => None,
            Bound::Included(v) => Some(key::past(prefix(v)?)),
            Bound::Excluded(v) => Some(prefix(v)?),
        };
        let ctx = db.access_ctx();
        let access = access::of(t.kind);
        // The rows given for the current key. Every entry that gives a row holds the
        // key the row has now, so a row found twice (an entry of an older version, or
        // of the place it moved from, beside its own) is found within one run of equal
        // keys: the set is emptied when the key changes, and stays small.
        let mut seen: HashSet<RowId, IdHash> = HashSet::default();
        let mut seen_key: Vec<u8> = Vec::new();
        let mut first_of_key: Option<RowId> = None;
        // The key of each row found, rebuilt here (one buffer for the scan).
        let mut now: Vec<u8> = Vec::with_capacity(32);
        let view = self.view();
        // Read once for the scan, not per row (it sits behind a lock); read again only
        // when a row does not decode with it (an ALTER TABLE since).
        let mut schema = t.schema();
        // The heap page the last row was read from, kept pinned for the next: through
        // `f` too, so a nested read keeps one more frame from eviction while it runs
        // (a pin holds no latch, and nothing waits for pins to drop; eviction only
        // passes over a frame pinned or one whose writes must follow it).
        let mut held = None;
        let mut failed: Option<E> = None;
        let mut visit = |item: &[u8]| -> Result<bool> {
            let Some((key, id)) = key::split_item(item) else {
                return Ok(true);
            };
            let inside = if backward {
                cmp_keys(key, &start).is_ge()
            } else {
                stop.as_ref().is_none_or(|s| cmp_keys(key, s).is_lt())
            };
            if !inside {
                return Ok(false);
            }
            let Some((at, bytes)) = access.fetch_held(&ctx, &t, id, &view, &mut held)? else {
                return Ok(true);
            };
            let shape = RowShape {
                needed: None,
                capacity,
            };
            let row =
                super::transaction::decode_latest_columns(&db, &t, &mut schema, at, &bytes, shape)?;
            now.clear();
            key_into(&schema, &t, &ix, &row, &mut now)?;
            if cmp_keys(&now, key).is_ne() {
                return Ok(true);
            }
            if cmp_keys(key, &seen_key).is_ne() {
                seen_key.clear();
                seen_key.extend_from_slice(key);
                if seen.capacity() > 64 {
                    seen = HashSet::default();
                } else {
                    seen.clear();
                }
                // The first row of a key needs no set (a unique index's only row):
                // it goes in when a second row comes under the same key.
                first_of_key = Some(at);
            } else {
                if seen.is_empty() {
                    seen.extend(first_of_key);
                }
                if !seen.insert(at) {
                    return Ok(true);
                }
            }
            match f(at, schema.to_visible(row)) {
                Ok(ControlFlow::Continue(())) => Ok(true),
                Ok(ControlFlow::Break(())) => Ok(false),
                Err(e) => {
                    failed = Some(e);
                    Ok(false)
                }
            }
        };
        let walked = if backward {
            btree::scan_backward(&ctx, &ix, stop.as_deref(), &mut visit)
        } else {
            btree::scan(&ctx, &ix, &start, stop.as_deref(), &mut visit)
        };
        match failed {
            Some(e) => Err(e),
            None => Ok(walked?),
        }
    }
}
