//! The catalog: tables by name and id, their schemas and their pages. Kept in memory,
//! saved whole in each checkpoint file, changed by WAL records (create, drop, new page)
//! whose redo is idempotent (this module owns the create and drop records).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::codec::{put_string, put_varint, Reader};
use crate::schema::Schema;
use crate::wal::payload::{finish, Payload};
use crate::wal::{LogRecord, RecordOwner, RecordType, RedoCtx};

/// How a table stores its rows, chosen per table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum TableKind {
    /// PostgreSQL-like: an update writes a new row version (module `heap`).
    #[default]
    Heap,
    /// Oracle/zheap-like: rows change in place, old values go to the undo log (module
    /// `undo`).
    Undo,
}

impl TableKind {
    pub fn code(self) -> u8 {
        match self {
            TableKind::Heap => 0,
            TableKind::Undo => 1,
        }
    }

    pub fn from_code(c: u8) -> Option<TableKind> {
        match c {
            0 => Some(TableKind::Heap),
            1 => Some(TableKind::Undo),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TableKind::Heap => "heap",
            TableKind::Undo => "undo",
        }
    }

    /// Parses `heap` or `undo` (any case).
    pub fn parse(s: &str) -> Option<TableKind> {
        match s.to_ascii_lowercase().as_str() {
            "heap" => Some(TableKind::Heap),
            "undo" => Some(TableKind::Undo),
            _ => None,
        }
    }
}

impl std::fmt::Display for TableKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A table and its runtime state.
#[derive(Debug)]
pub struct Table {
    pub id: u32,
    pub name: String,
    pub schema: Schema,
    pub kind: TableKind,
    /// The table's heap pages, sorted (page numbers are handed out in increasing order).
    pub pages: Mutex<Vec<u64>>,
    /// Free-space hints: page -> free bytes, for pages other than the last (filled in by
    /// vacuum). Not persisted: after a restart a vacuum finds the space again.
    pub free: Mutex<BTreeMap<u64, usize>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Table {
    pub fn new(id: u32, name: &str, schema: Schema, kind: TableKind, pages: Vec<u64>) -> Table {
        Table {
            id,
            name: name.to_string(),
            schema,
            kind,
            pages: Mutex::new(pages),
            free: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn page_list(&self) -> Vec<u64> {
        lock(&self.pages).clone()
    }

    pub fn last_page(&self) -> Option<u64> {
        lock(&self.pages).last().copied()
    }

    /// Adds a page (idempotent: redo may add a page the checkpoint already listed).
    pub fn add_page(&self, page: u64) {
        let mut p = lock(&self.pages);
        // Pages are handed out in increasing order, so the common case is an append; only
        // redo can bring a page the list already has.
        match p.last() {
            Some(&last) if page <= last => {
                if let Err(at) = p.binary_search(&page) {
                    p.insert(at, page);
                }
            }
            _ => p.push(page),
        }
    }

    /// A page other than `exclude` with at least `need` free bytes, per the hints.
    pub fn page_with_space(&self, need: usize, exclude: u64) -> Option<u64> {
        lock(&self.free)
            .iter()
            .find(|(&p, &f)| f >= need && p != exclude)
            .map(|(&p, _)| p)
    }

    pub fn set_free(&self, page: u64, free_bytes: usize) {
        let mut f = lock(&self.free);
        if free_bytes >= 256 {
            f.insert(page, free_bytes);
        } else {
            f.remove(&page);
        }
    }
}

/// All tables. Guarded by the engine's RwLock around it.
#[derive(Debug, Default)]
pub struct Catalog {
    pub by_name: HashMap<String, Arc<Table>>,
    pub by_id: BTreeMap<u32, Arc<Table>>,
    pub next_table_id: u32,
}

impl Catalog {
    pub fn insert(&mut self, table: Table) {
        let t = Arc::new(table);
        self.next_table_id = self.next_table_id.max(t.id.saturating_add(1));
        self.by_name.insert(t.name.clone(), t.clone());
        self.by_id.insert(t.id, t);
    }

    pub fn remove(&mut self, id: u32) -> Option<Arc<Table>> {
        let t = self.by_id.remove(&id)?;
        self.by_name.remove(&t.name);
        Some(t)
    }

    /// Serializes the catalog for a checkpoint file.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.next_table_id.to_le_bytes());
        out.extend_from_slice(&(self.by_id.len() as u32).to_le_bytes());
        for t in self.by_id.values() {
            out.extend_from_slice(&t.id.to_le_bytes());
            put_string(out, &t.name);
            t.schema.encode(out);
            out.push(t.kind.code());
            let pages = t.page_list();
            out.extend_from_slice(&(pages.len() as u64).to_le_bytes());
            for p in pages {
                out.extend_from_slice(&p.to_le_bytes());
            }
        }
    }

    /// Parses a serialized catalog, advancing `at`. Format 1 had no table kinds (all heap).
    pub fn decode(bytes: &[u8], at: &mut usize, version: u32) -> Result<Catalog, String> {
        let mut r = Reader::new(bytes, *at);
        let mut cat = Catalog {
            next_table_id: r.u32()?,
            ..Catalog::default()
        };
        let n = r.u32()?;
        for _ in 0..n {
            let id = r.u32()?;
            let name = r.string()?;
            let mut pos = r.pos();
            let schema = Schema::decode(bytes, &mut pos)?;
            r = Reader::new(bytes, pos);
            let kind = if version >= 2 {
                let c = r.u8()?;
                TableKind::from_code(c)
                    .ok_or_else(|| format!("table {name:?}: unknown kind {c}"))?
            } else {
                TableKind::Heap
            };
            let count = r.u64()?;
            if count > (r.remaining() / 8) as u64 {
                return Err(format!(
                    "table {name:?} lists {count} pages, more than the file holds"
                ));
            }
            let mut pages = Vec::with_capacity(count as usize);
            for _ in 0..count {
                pages.push(r.u64()?);
            }
            if cat.by_id.contains_key(&id) || cat.by_name.contains_key(&name) {
                return Err(format!("table {name:?} (id {id}) appears twice"));
            }
            cat.insert(Table::new(id, &name, schema, kind, pages));
        }
        *at = r.pos();
        Ok(cat)
    }
}

// ---------------------------------------------------------------------------------------
// WAL records: the catalog owns table creation and removal.

/// A table was created: `table varint | name | schema | kind u8`.
pub const CREATE_TABLE: RecordType = RecordType::new(8, "create_table", 0);
/// A table was dropped: `table varint`.
pub const DROP_TABLE: RecordType = RecordType::new(9, "drop_table", 0);

/// A catalog record.
#[derive(Debug, Clone, PartialEq)]
pub enum CatalogRecord {
    CreateTable {
        table: u32,
        name: String,
        schema: Schema,
        kind: TableKind,
    },
    DropTable {
        table: u32,
    },
}

impl Payload for CatalogRecord {
    fn record_type(&self) -> RecordType {
        match self {
            CatalogRecord::CreateTable { .. } => CREATE_TABLE,
            CatalogRecord::DropTable { .. } => DROP_TABLE,
        }
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            CatalogRecord::CreateTable {
                table,
                name,
                schema,
                kind,
            } => {
                put_varint(out, *table as u64);
                put_string(out, name);
                schema.encode(out);
                out.push(kind.code());
            }
            CatalogRecord::DropTable { table } => put_varint(out, *table as u64),
        }
    }
}

impl CatalogRecord {
    pub fn decode(t: RecordType, payload: &[u8]) -> Result<CatalogRecord, String> {
        let mut r = Reader::new(payload, 0);
        let rec = if t == CREATE_TABLE {
            let table = r.varint32()?;
            let name = r.string()?;
            let mut at = r.pos();
            let schema = Schema::decode(payload, &mut at)?;
            r = Reader::new(payload, at);
            let code = r.u8()?;
            let kind =
                TableKind::from_code(code).ok_or_else(|| format!("unknown table kind {code}"))?;
            CatalogRecord::CreateTable {
                table,
                name,
                schema,
                kind,
            }
        } else if t == DROP_TABLE {
            CatalogRecord::DropTable {
                table: r.varint32()?,
            }
        } else {
            return Err(format!("record code {} is not the catalog's", t.code));
        };
        finish(&r, t)?;
        Ok(rec)
    }
}

/// The owner of the catalog records.
pub struct CatalogOwner;

impl RecordOwner for CatalogOwner {
    fn name(&self) -> &'static str {
        "catalog"
    }

    fn types(&self) -> &'static [RecordType] {
        &[CREATE_TABLE, DROP_TABLE]
    }

    fn check(&self, rec: &LogRecord) -> Result<(), String> {
        CatalogRecord::decode(rec.rtype, &rec.payload).map(|_| ())
    }

    fn describe(&self, rec: &LogRecord) -> Result<String, String> {
        Ok(match CatalogRecord::decode(rec.rtype, &rec.payload)? {
            CatalogRecord::CreateTable {
                table,
                name,
                schema,
                kind,
            } => format!(
                "table {table} name {name:?} columns {} kind {}",
                schema.columns.len(),
                kind.name()
            ),
            CatalogRecord::DropTable { table } => format!("table {table}"),
        })
    }

    fn redo(&self, rec: &LogRecord, ctx: &mut RedoCtx) -> crate::error::Result<()> {
        let decoded =
            CatalogRecord::decode(rec.rtype, &rec.payload).map_err(|r| ctx.corrupt(rec, r))?;
        match decoded {
            CatalogRecord::CreateTable { table, .. } if table >= u32::MAX - 1 => {
                return Err(ctx.corrupt(rec, format!("table id {table} out of range")));
            }
            CatalogRecord::CreateTable {
                table,
                name,
                schema,
                kind,
            } => {
                let cat = &mut *ctx.catalog;
                if !cat.by_id.contains_key(&table) && !cat.by_name.contains_key(&name) {
                    cat.insert(Table::new(table, &name, schema, kind, Vec::new()));
                }
            }
            CatalogRecord::DropTable { table } => {
                ctx.catalog.remove(table);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::schema::{Column, ColumnType};
    use crate::wal::payload::check_codec;

    /// A record of each type (also the registry's fuzz samples).
    pub(crate) fn samples() -> Vec<CatalogRecord> {
        vec![
            CatalogRecord::CreateTable {
                table: 4,
                name: "t".into(),
                schema: Schema::new(vec![Column::new("a", ColumnType::Int4)]),
                kind: TableKind::Undo,
            },
            CatalogRecord::DropTable { table: 4 },
        ]
    }

    #[test]
    fn catalog_records_round_trip() {
        check_codec(&samples(), CatalogRecord::decode);
    }
}
