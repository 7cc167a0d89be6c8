//! The catalog: tables by name and id, their schemas and their pages. Kept in memory,
//! saved whole in each checkpoint file, changed by WAL records (create, drop, new page)
//! whose redo is idempotent (this module owns the create and drop records).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

use crate::codec::{put_string, put_varint, Reader};
use crate::schema::{KeyOrder, Schema};
use crate::sequence::{Sequence, Sequences};
use crate::wal::payload::{finish, Payload};
use crate::wal::{LogRecord, RecordOwner, RecordType, RedoCtx};

mod changes;
pub use changes::{hidden_name, is_hidden, DdlChange};

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
    /// Name and schema change only by ALTER TABLE, which holds the DDL lock
    /// exclusively and the catalog's write lock.
    def: RwLock<(String, Arc<Schema>)>,
    pub kind: TableKind,
    /// The table's heap pages, sorted (page numbers are handed out in increasing order).
    pub pages: Mutex<Vec<u64>>,
    /// Free-space hints: page -> free bytes, for pages other than the last (filled in by
    /// vacuum). Kept by checkpoints (format 18), not logged: an insert that finds a page
    /// fuller than its hint moves on.
    pub free: Mutex<BTreeMap<u64, usize>>,
    /// The table's indexes, in the order they were created.
    pub indexes: Mutex<Vec<Arc<Index>>>,
    /// Held shared by each statement that changes the table, exclusively by an index
    /// build or drop, so that every statement sees one list of indexes throughout.
    pub ddl: DdlLock,
    /// What ANALYZE last found (None: never analyzed).
    stats: Mutex<Option<Arc<TableStats>>>,
    /// The table's toast relation, which holds its values stored out of line
    /// (`engine/toast.rs`), once one was needed.
    toast: Mutex<Option<Arc<Table>>>,
    /// For a toast relation: the table whose values it holds (it has no name in the
    /// catalog's namespace: only `by_id` lists it).
    pub toast_of: Option<u32>,
}

/// What ANALYZE found in a table, for the planner's estimates: PostgreSQL's
/// `reltuples`, `relpages` and per-column `n_distinct`.
#[derive(Debug, Clone, PartialEq)]
pub struct TableStats {
    /// Live rows counted.
    pub rows: f64,
    /// The table's pages then (an estimate now scales `rows` by the pages it has now).
    pub pages: u64,
    /// Per column (in schema order, dropped ones included): distinct values, as
    /// PostgreSQL's `n_distinct` — above 0 a count, below 0 minus a share of the rows
    /// (the count grows with the table), 0 unknown.
    pub distinct: Vec<f64>,
}

impl TableStats {
    /// Longest column list a record may carry (a table has at most 1,600 columns).
    const MAX_COLUMNS: usize = 1600;

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.rows.to_le_bytes());
        put_varint(out, self.pages);
        put_varint(out, self.distinct.len() as u64);
        for d in &self.distinct {
            out.extend_from_slice(&d.to_le_bytes());
        }
    }

    fn decode(r: &mut Reader) -> Result<TableStats, String> {
        let rows = f64::from_le_bytes(r.u64()?.to_le_bytes());
        let pages = r.varint()?;
        let n = r.varint()? as usize;
        if n > Self::MAX_COLUMNS || n > r.remaining() / 8 {
            return Err(format!("table statistics for {n} columns"));
        }
        let mut distinct = Vec::with_capacity(n);
        for _ in 0..n {
            distinct.push(f64::from_le_bytes(r.u64()?.to_le_bytes()));
        }
        let stats = TableStats {
            rows,
            pages,
            distinct,
        };
        if !stats.rows.is_finite()
            || stats.rows < 0.0
            || stats.distinct.iter().any(|d| !d.is_finite() || *d < -1.0)
        {
            return Err(format!("table statistics out of range: {stats:?}"));
        }
        Ok(stats)
    }
}

/// A table's statement lock: statements share it, an index build or drop holds it alone.
/// A statement never waits for a build that is only waiting (std's `RwLock` makes new
/// readers queue behind a waiting writer): a statement holding it may wait for another
/// transaction, whose next statement on the table must then not queue behind a build
/// that waits for the first statement — a deadlock no wait-for graph would see.
#[derive(Debug, Default)]
pub struct DdlLock {
    state: Mutex<DdlState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct DdlState {
    /// Statements holding it.
    readers: usize,
    /// A build or drop holds it.
    writer: bool,
    /// Threads waiting on `cv` (a release wakes them only if there are any: a wake is a
    /// system call, and every statement releases the lock).
    waiting: usize,
}

/// A statement's share of a `DdlLock`.
pub struct DdlRead<'a>(&'a DdlLock);
/// A build's or drop's hold of a `DdlLock`.
pub struct DdlWrite<'a>(&'a DdlLock);

impl DdlLock {
    fn wait_while<'g>(
        &self,
        mut s: std::sync::MutexGuard<'g, DdlState>,
        busy: impl Fn(&DdlState) -> bool,
    ) -> std::sync::MutexGuard<'g, DdlState> {
        while busy(&s) {
            s.waiting += 1;
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
            s.waiting -= 1;
        }
        s
    }

    pub fn read(&self) -> DdlRead<'_> {
        let mut s = self.wait_while(lock(&self.state), |s| s.writer);
        s.readers += 1;
        DdlRead(self)
    }

    pub fn write(&self) -> DdlWrite<'_> {
        let mut s = self.wait_while(lock(&self.state), |s| s.writer || s.readers > 0);
        s.writer = true;
        DdlWrite(self)
    }
}

impl Drop for DdlRead<'_> {
    fn drop(&mut self) {
        let mut s = lock(&self.0.state);
        s.readers -= 1;
        if s.readers == 0 && s.waiting > 0 {
            self.0.cv.notify_all();
        }
    }
}

impl Drop for DdlWrite<'_> {
    fn drop(&mut self) {
        let mut s = lock(&self.0.state);
        s.writer = false;
        if s.waiting > 0 {
            self.0.cv.notify_all();
        }
    }
}

/// A B-tree index on columns of a table (the tree is `access::btree`).
#[derive(Debug)]
pub struct Index {
    /// Ids of indexes and tables share one space (a page's owner field names either).
    pub id: u32,
    pub name: String,
    pub table: u32,
    /// The indexed columns (positions in the table's schema), in key order.
    pub columns: Vec<u16>,
    /// Each column's order (one per column: ascending, NULLs last, unless declared).
    pub order: Vec<KeyOrder>,
    pub unique: bool,
    /// The table's primary key (unique, and its columns NOT NULL).
    pub primary: bool,
    /// The meta page (it names the root).
    pub meta: u64,
    /// Every page of the index, meta page included, sorted.
    pub pages: Mutex<Vec<u64>>,
    /// The structure lock: shared for searches and for changes within one page,
    /// exclusive for splits and page removal (docs/ARCHITECTURE.md, invariant 6).
    pub tree: RwLock<()>,
    /// The root page and level the meta page names, as last read or written here
    /// (`(root + 1) << 16 | level`; 0 before the meta page is first read), so that a
    /// search reads the meta page once, not once per descent. A new root writes it
    /// (under the exclusive structure lock); a search that starts from a root replaced
    /// since still ends where it should, moving right from the old root at its level
    /// as any search overtaken by a split does. Redo writes meta pages before the
    /// catalog's indexes are made.
    pub root: std::sync::atomic::AtomicU64,
}

impl Index {
    pub fn new(def: IndexDef, pages: Vec<u64>) -> Index {
        Index {
            id: def.id,
            name: def.name,
            table: def.table,
            columns: def.columns,
            order: def.order,
            unique: def.unique,
            primary: def.primary,
            meta: def.meta,
            pages: Mutex::new(pages),
            tree: RwLock::new(()),
            root: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// What the catalog records say of the index.
    pub fn def(&self) -> IndexDef {
        IndexDef {
            id: self.id,
            name: self.name.clone(),
            table: self.table,
            columns: self.columns.clone(),
            order: self.order.clone(),
            unique: self.unique,
            primary: self.primary,
            meta: self.meta,
        }
    }

    pub fn page_list(&self) -> Vec<u64> {
        lock(&self.pages).clone()
    }

    /// How many pages `page_list` would list (without copying the list).
    pub fn page_count(&self) -> usize {
        lock(&self.pages).len()
    }

    /// Adds a page (idempotent: redo may add a page the checkpoint already listed).
    pub fn add_page(&self, page: u64) {
        add_sorted(&mut lock(&self.pages), page);
    }
}

/// The definition of an index, as logged and checkpointed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    pub id: u32,
    pub name: String,
    pub table: u32,
    pub columns: Vec<u16>,
    /// One per column.
    pub order: Vec<KeyOrder>,
    pub unique: bool,
    pub primary: bool,
    pub meta: u64,
}

/// Flag bits of an index definition: unique, primary key, column orders follow.
const INDEX_UNIQUE: u8 = 1;
const INDEX_PRIMARY: u8 = 2;
const INDEX_ORDERS: u8 = 4;
/// Bits of a column's order byte.
const ORDER_DESC: u8 = 1;
const ORDER_NULLS_FIRST: u8 = 2;

impl IndexDef {
    /// `id varint | name | table varint | count varint | count × column varint | flags u8
    /// | (flag 4) count × order u8 | meta varint`: an index whose columns are all in the
    /// default order (ascending, NULLs last) writes no order bytes, as before format 15.
    fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.id as u64);
        put_string(out, &self.name);
        put_varint(out, self.table as u64);
        put_varint(out, self.columns.len() as u64);
        for c in &self.columns {
            put_varint(out, *c as u64);
        }
        let ordered = self.order.iter().any(|o| *o != KeyOrder::default());
        let bit = |set: bool, bit: u8| if set { bit } else { 0 };
        out.push(
            bit(self.unique, INDEX_UNIQUE)
                | bit(self.primary, INDEX_PRIMARY)
                | bit(ordered, INDEX_ORDERS),
        );
        if ordered {
            for n in 0..self.columns.len() {
                let o = KeyOrder::of(&self.order, n);
                out.push(bit(o.desc, ORDER_DESC) | bit(o.nulls_first, ORDER_NULLS_FIRST));
            }
        }
        put_varint(out, self.meta);
    }

    fn decode(r: &mut Reader) -> Result<IndexDef, String> {
        let id = r.varint32()?;
        let name = r.string()?;
        let table = r.varint32()?;
        let n = r.varint()?;
        if n == 0 || n > 32 {
            return Err(format!("index {name:?} has {n} columns (1 to 32)"));
        }
        let mut columns = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let c = r.varint()?;
            let c = u16::try_from(c).map_err(|_| format!("index column {c} out of range"))?;
            columns.push(c);
        }
        let flags = r.u8()?;
        if flags & !(INDEX_UNIQUE | INDEX_PRIMARY | INDEX_ORDERS) != 0 {
            return Err(format!("index {name:?}: unknown flags {flags}"));
        }
        let mut order = vec![KeyOrder::default(); columns.len()];
        if flags & INDEX_ORDERS != 0 {
            for (n, o) in order.iter_mut().enumerate() {
                let b = r.u8()?;
                if b & !(ORDER_DESC | ORDER_NULLS_FIRST) != 0 {
                    return Err(format!(
                        "index {name:?}: column {n} has unknown order bits {b}"
                    ));
                }
                *o = KeyOrder {
                    desc: b & ORDER_DESC != 0,
                    nulls_first: b & ORDER_NULLS_FIRST != 0,
                };
            }
        }
        let meta = r.varint()?;
        Ok(IndexDef {
            id,
            name,
            table,
            columns,
            order,
            unique: flags & INDEX_UNIQUE != 0,
            primary: flags & INDEX_PRIMARY != 0,
            meta,
        })
    }
}

/// A view: its column names and the SQL text of its query, parsed and planned by the
/// SQL layer whenever the view is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewDef {
    pub name: String,
    pub columns: Vec<String>,
    pub query: String,
}

impl ViewDef {
    /// `name | count varint | count × name | query bytes` (names as `u16` length + UTF-8,
    /// the query as a varint length + UTF-8).
    fn encode(&self, out: &mut Vec<u8>) {
        put_string(out, &self.name);
        put_varint(out, self.columns.len() as u64);
        for c in &self.columns {
            put_string(out, c);
        }
        crate::codec::put_bytes_v(out, self.query.as_bytes());
    }

    fn decode(r: &mut Reader) -> Result<ViewDef, String> {
        let name = r.string()?;
        let n = crate::wal::payload::count(r, 2)?;
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            columns.push(r.string()?);
        }
        let query = String::from_utf8(r.bytes_v()?.to_vec())
            .map_err(|_| format!("view {name:?}: the query is not UTF-8"))?;
        Ok(ViewDef {
            name,
            columns,
            query,
        })
    }
}

/// A database role: a name clients log in as, its attributes, and the verifier its
/// password is checked against. The engine keeps roles for the layers above (the SQL
/// layer's `CREATE ROLE`, the server's authentication); it gives the attributes no
/// meaning of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleDef {
    pub name: String,
    /// The password's verifier as PostgreSQL stores it
    /// (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`), never the
    /// password itself (the engine refuses anything else). None: no password.
    pub password: Option<String>,
    /// May log in (PostgreSQL's `rolcanlogin`).
    pub login: bool,
    pub superuser: bool,
    pub createdb: bool,
    pub createrole: bool,
    pub inherit: bool,
    pub replication: bool,
    pub bypassrls: bool,
    /// Connections the role may have at once; -1 for no limit.
    pub connection_limit: i32,
    /// When the password stops being valid, as a timestamptz (microseconds since
    /// 2000-01-01 00:00 UTC; `i64::MAX` is infinity). None: never.
    pub valid_until: Option<i64>,
}

/// The prefix every stored password has: the verifier's scheme.
pub const ROLE_PASSWORD_SCHEME: &str = "SCRAM-SHA-256$";

const ROLE_LOGIN: u8 = 1;
const ROLE_SUPERUSER: u8 = 2;
const ROLE_CREATEDB: u8 = 4;
const ROLE_CREATEROLE: u8 = 8;
const ROLE_INHERIT: u8 = 16;
const ROLE_REPLICATION: u8 = 32;
const ROLE_BYPASSRLS: u8 = 64;
/// `valid_until` follows the connection limit.
const ROLE_VALID_UNTIL: u8 = 128;

impl RoleDef {
    /// A role with PostgreSQL's defaults for `CREATE ROLE name`: no login, no
    /// password, INHERIT, no other attribute, no connection limit.
    pub fn new(name: &str) -> RoleDef {
        RoleDef {
            name: name.to_string(),
            password: None,
            login: false,
            superuser: false,
            createdb: false,
            createrole: false,
            inherit: true,
            replication: false,
            bypassrls: false,
            connection_limit: -1,
            valid_until: None,
        }
    }

    /// What a definition must hold before it is logged or after it is read.
    pub fn check(&self) -> Result<(), String> {
        if self.name.is_empty() || self.name.len() > u16::MAX as usize {
            return Err(format!("role name of {} bytes", self.name.len()));
        }
        if self
            .password
            .as_deref()
            .is_some_and(|p| !p.starts_with(ROLE_PASSWORD_SCHEME))
        {
            return Err(format!(
                "role {:?}: a password is kept only as a {ROLE_PASSWORD_SCHEME}… verifier",
                self.name
            ));
        }
        if self.connection_limit < -1 {
            return Err(format!(
                "role {:?}: connection limit {}",
                self.name, self.connection_limit
            ));
        }
        Ok(())
    }

    /// `name | flags u8 | connection_limit svarint | password (varint 0: none, else
    /// length + 1, then UTF-8) | valid_until i64 if flag 128`.
    fn encode(&self, out: &mut Vec<u8>) {
        put_string(out, &self.name);
        let bit = |set: bool, bit: u8| if set { bit } else { 0 };
        out.push(
            bit(self.login, ROLE_LOGIN)
                | bit(self.superuser, ROLE_SUPERUSER)
                | bit(self.createdb, ROLE_CREATEDB)
                | bit(self.createrole, ROLE_CREATEROLE)
                | bit(self.inherit, ROLE_INHERIT)
                | bit(self.replication, ROLE_REPLICATION)
                | bit(self.bypassrls, ROLE_BYPASSRLS)
                | bit(self.valid_until.is_some(), ROLE_VALID_UNTIL),
        );
        crate::codec::put_varint_signed(out, i64::from(self.connection_limit));
        match &self.password {
            None => put_varint(out, 0),
            Some(p) => {
                put_varint(out, p.len() as u64 + 1);
                out.extend_from_slice(p.as_bytes());
            }
        }
        if let Some(t) = self.valid_until {
            out.extend_from_slice(&t.to_le_bytes());
        }
    }

    fn decode(r: &mut Reader) -> Result<RoleDef, String> {
        let name = r.string()?;
        let flags = r.u8()?;
        let limit = r.varint_signed()?;
        let connection_limit =
            i32::try_from(limit).map_err(|_| format!("role {name:?}: connection limit {limit}"))?;
        let password = match r.varint()? {
            0 => None,
            n => {
                let n = usize::try_from(n - 1).map_err(|_| "length overflow".to_string())?;
                let bytes = r.take(n)?.to_vec();
                Some(
                    String::from_utf8(bytes)
                        .map_err(|_| format!("role {name:?}: the password is not UTF-8"))?,
                )
            }
        };
        let valid_until = if flags & ROLE_VALID_UNTIL != 0 {
            Some(i64::from_le_bytes(r.array()?))
        } else {
            None
        };
        let role = RoleDef {
            name,
            password,
            login: flags & ROLE_LOGIN != 0,
            superuser: flags & ROLE_SUPERUSER != 0,
            createdb: flags & ROLE_CREATEDB != 0,
            createrole: flags & ROLE_CREATEROLE != 0,
            inherit: flags & ROLE_INHERIT != 0,
            replication: flags & ROLE_REPLICATION != 0,
            bypassrls: flags & ROLE_BYPASSRLS != 0,
            connection_limit,
            valid_until,
        };
        role.check()?;
        Ok(role)
    }

    /// The attributes, for `waldump` (the verifier is not shown: it is what a
    /// password guess is checked against).
    fn describe(&self) -> String {
        let mut out = format!("role {:?}", self.name);
        for (set, name) in [
            (self.login, "login"),
            (self.superuser, "superuser"),
            (self.createdb, "createdb"),
            (self.createrole, "createrole"),
            (!self.inherit, "noinherit"),
            (self.replication, "replication"),
            (self.bypassrls, "bypassrls"),
            (self.password.is_some(), "password"),
        ] {
            if set {
                out.push(' ');
                out.push_str(name);
            }
        }
        if self.connection_limit != -1 {
            out.push_str(&format!(" connection_limit {}", self.connection_limit));
        }
        if let Some(t) = self.valid_until {
            out.push_str(&format!(" valid_until {t}"));
        }
        out
    }
}

/// Whether `new` may replace `old` as a table's schema: every stored column keeps its
/// place and type (added columns go at the end), and a dropped column stays dropped.
fn compatible(old: &Schema, new: &Schema) -> Result<(), String> {
    if new.columns.len() < old.columns.len() || new.counted != old.counted {
        return Err("alter_table: the new schema drops stored columns".into());
    }
    if !new.counted && new.columns.len() != old.columns.len() {
        return Err("alter_table: a table of an older format cannot add columns".into());
    }
    for (a, b) in old.columns.iter().zip(&new.columns) {
        if a.ty != b.ty || (a.dropped && !b.dropped) {
            return Err(format!(
                "alter_table: column {:?} changes type or comes back",
                a.name
            ));
        }
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds a page to a sorted page list unless it is there. Pages are handed out in
/// increasing order, so the common case is an append; only redo (or a split's new page
/// after a later one) brings one from before the end.
fn add_sorted(pages: &mut Vec<u64>, page: u64) {
    match pages.last() {
        Some(&last) if page <= last => {
            if let Err(at) = pages.binary_search(&page) {
                pages.insert(at, page);
            }
        }
        _ => pages.push(page),
    }
}

impl Table {
    pub fn new(id: u32, name: &str, schema: Schema, kind: TableKind, pages: Vec<u64>) -> Table {
        Table {
            id,
            def: RwLock::new((name.to_string(), Arc::new(schema))),
            kind,
            pages: Mutex::new(pages),
            free: Mutex::new(BTreeMap::new()),
            indexes: Mutex::new(Vec::new()),
            ddl: DdlLock::default(),
            stats: Mutex::new(None),
            toast: Mutex::new(None),
            toast_of: None,
        }
    }

    /// A toast relation for table `of` (a heap of chunk rows, `toast_schema`).
    pub fn new_toast(id: u32, of: u32, pages: Vec<u64>) -> Table {
        Table {
            toast_of: Some(of),
            ..Table::new(
                id,
                &format!("pg_toast_{of}"),
                toast_schema(),
                TableKind::Heap,
                pages,
            )
        }
    }

    /// The table's toast relation, if it has one.
    pub fn toast(&self) -> Option<Arc<Table>> {
        lock(&self.toast).clone()
    }

    /// What ANALYZE last found, if it ran.
    pub fn stats(&self) -> Option<Arc<TableStats>> {
        lock(&self.stats).clone()
    }

    pub fn set_stats(&self, stats: TableStats) {
        *lock(&self.stats) = Some(Arc::new(stats));
    }

    /// The table's name.
    pub fn name(&self) -> String {
        self.def.read().unwrap_or_else(|e| e.into_inner()).0.clone()
    }

    /// The table's schema (every column, dropped ones included).
    pub fn schema(&self) -> Arc<Schema> {
        self.def.read().unwrap_or_else(|e| e.into_inner()).1.clone()
    }

    /// Gives the table a new name and schema (ALTER TABLE; the catalog renames).
    fn redefine(&self, name: &str, schema: Schema) {
        *self.def.write().unwrap_or_else(|e| e.into_inner()) = (name.to_string(), Arc::new(schema));
    }

    /// The table's indexes.
    pub fn index_list(&self) -> Vec<Arc<Index>> {
        lock(&self.indexes).clone()
    }

    /// Every page of the table, of its indexes and of its toast relation (what a drop
    /// frees).
    pub fn pages_with_indexes(&self) -> Vec<u64> {
        let mut pages = self.page_list();
        for ix in self.index_list() {
            pages.extend(ix.page_list());
        }
        if let Some(t) = self.toast() {
            pages.extend(t.page_list());
        }
        pages
    }

    pub fn page_list(&self) -> Vec<u64> {
        lock(&self.pages).clone()
    }

    /// How many pages `page_list` would list (without copying the list).
    pub fn page_count(&self) -> usize {
        lock(&self.pages).len()
    }

    pub fn last_page(&self) -> Option<u64> {
        lock(&self.pages).last().copied()
    }

    /// Adds a page (idempotent: redo may add a page the checkpoint already listed).
    pub fn add_page(&self, page: u64) {
        add_sorted(&mut lock(&self.pages), page);
    }

    /// A page other than `exclude` with at least `need` free bytes, per the hints.
    pub fn page_with_space(&self, need: usize, exclude: u64) -> Option<u64> {
        lock(&self.free)
            .iter()
            .find(|(&p, &f)| f >= need && p != exclude)
            .map(|(&p, _)| p)
    }

    /// The free-space hints, by page (what a checkpoint keeps of them).
    pub fn free_hints(&self) -> Vec<(u64, usize)> {
        lock(&self.free).iter().map(|(&p, &f)| (p, f)).collect()
    }

    /// Takes pages out of the table (VACUUM found them empty; `runs` of consecutive
    /// pages, ascending): out of its page list and its free-space hints. Returns those
    /// it had.
    pub fn remove_pages(&self, runs: &[(u64, u64)]) -> Vec<u64> {
        let mut list = lock(&self.pages);
        let mut free = lock(&self.free);
        let mut removed = Vec::new();
        list.retain(|p| {
            let at = runs.partition_point(|&(start, _)| start <= *p);
            let gone = at > 0 && *p < runs[at - 1].0 + runs[at - 1].1;
            if gone {
                removed.push(*p);
                free.remove(p);
            }
            !gone
        });
        removed
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

/// All tables and indexes. Guarded by the engine's RwLock around it.
#[derive(Debug, Default)]
pub struct Catalog {
    pub by_name: HashMap<String, Arc<Table>>,
    pub by_id: BTreeMap<u32, Arc<Table>>,
    /// Indexes by id (they also hang off their table).
    pub indexes: BTreeMap<u32, Arc<Index>>,
    /// Index names (one namespace with tables, as in PostgreSQL).
    pub index_names: HashMap<String, Arc<Index>>,
    /// Views by name (one namespace with tables and indexes).
    pub views: BTreeMap<String, ViewDef>,
    /// Roles by name (a namespace of their own).
    pub roles: BTreeMap<String, RoleDef>,
    /// Sequences (one namespace with tables, indexes and views; ids from
    /// `next_table_id`).
    pub sequences: Sequences,
    /// Recovery only: the role changes redo has read of each transaction whose end it
    /// has not read yet. A role change takes effect at its transaction's commit
    /// (`settle_roles`), so one whose commit never reached the log is gone after a
    /// crash (docs/recovery.md rule 36).
    pending_roles: HashMap<u64, Vec<Pending>>,
    /// Owners, access control lists and role memberships (`privilege.rs`), shared with
    /// readers as a snapshot (`Database::privileges`) and copied on change.
    privileges: Arc<crate::privilege::Privileges>,
    /// Changes with every role or privilege change: a number no other state of any
    /// catalog in the process has had (what a session worked out of them stays valid
    /// while it holds).
    pub auth_generation: u64,
    /// 32 random bytes drawn when the database was created (or first opened by a
    /// format 16 build), kept in every checkpoint and never logged or shown: what the
    /// layers above derive stable secrets from (the server's mock SCRAM salts, as
    /// PostgreSQL's `mock_auth_nonce`). All zero until drawn.
    pub secret: [u8; 32],
    /// The free page numbers a checkpoint listed (read back at open; the live list is the
    /// page store's, `PageStore::free_page_list`).
    pub free_pages: Vec<u64>,
    /// Next id for a table or an index.
    pub next_table_id: u32,
    /// Changes with every table or index added or removed: a number no other state of
    /// any catalog in the process has had (plans cached against it stay valid while it
    /// holds).
    pub generation: u64,
}

/// A change redo holds until its transaction's end (docs/recovery.md rule 36).
#[derive(Debug)]
pub enum Pending {
    Role(CatalogRecord),
    Privilege(crate::privilege::PrivilegeRecord),
}

/// The source of catalog generations, shared by every catalog of the process.
static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_generation() -> u64 {
    GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Catalog {
    /// Marks the catalog changed.
    fn changed(&mut self) {
        self.generation = next_generation();
    }

    pub fn insert(&mut self, table: Table) {
        self.changed();
        let t = Arc::new(table);
        self.next_table_id = self.next_table_id.max(t.id.saturating_add(1));
        self.by_name.insert(t.name(), t.clone());
        self.by_id.insert(t.id, t);
    }

    /// Adds a table's toast relation (None when the table is not there or has one).
    pub fn insert_toast(&mut self, toast: Table) -> Option<Arc<Table>> {
        let of = toast.toast_of?;
        let parent = self.by_id.get(&of)?.clone();
        if parent.toast().is_some() || self.by_id.contains_key(&toast.id) {
            return None;
        }
        self.changed();
        let t = Arc::new(toast);
        self.next_table_id = self.next_table_id.max(t.id.saturating_add(1));
        self.by_id.insert(t.id, t.clone());
        *lock(&parent.toast) = Some(t.clone());
        Some(t)
    }

    /// Removes a table, with its indexes and its toast relation.
    pub fn remove(&mut self, id: u32) -> Option<Arc<Table>> {
        // A toast relation goes only with its table.
        if self.by_id.get(&id)?.toast_of.is_some() {
            return None;
        }
        self.changed();
        let t = self.by_id.remove(&id)?;
        if let Some(toast) = t.toast() {
            self.by_id.remove(&toast.id);
        }
        self.by_name.remove(&t.name());
        for ix in t.index_list() {
            self.indexes.remove(&ix.id);
            self.index_names.remove(&ix.name);
        }
        self.privileges_mut().relation_gone(&t.name());
        Some(t)
    }

    /// Every table's and index's name with its pages.
    pub fn relation_pages(&self) -> Vec<(String, Vec<u64>)> {
        self.by_id
            .values()
            .map(|t| (t.name(), t.page_list()))
            .chain(
                self.indexes
                    .values()
                    .map(|ix| (ix.name.clone(), ix.page_list())),
            )
            .collect()
    }

    /// Whether a table, an index, a view or a sequence has this name.
    pub fn name_taken(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
            || self.index_names.contains_key(name)
            || self.views.contains_key(name)
            || self.sequences.contains_name(name)
    }

    /// Adds a sequence (its id and name are free: the caller checked).
    pub fn insert_sequence(&mut self, seq: Sequence) -> Arc<Sequence> {
        self.changed();
        self.next_table_id = self.next_table_id.max(seq.id.saturating_add(1));
        self.sequences.insert(seq)
    }

    pub fn remove_sequence(&mut self, id: u32) -> Option<Arc<Sequence>> {
        self.changed();
        let seq = self.sequences.remove(id)?;
        self.privileges_mut().relation_gone(&seq.name());
        Some(seq)
    }

    /// A sequence's definition changed (ALTER SEQUENCE), its name perhaps from `old`.
    pub fn sequence_renamed(&mut self, id: u32, old: &str) {
        self.changed();
        self.sequences.renamed(id, old);
        if let Some(new) = self.sequences.by_id(id).map(|s| s.name()) {
            self.privileges_mut().relation_renamed(old, &new);
        }
    }

    /// Gives a table a new name and schema (ALTER TABLE). Errors when the table is
    /// missing, the new name is another relation's, or the schema does not keep the
    /// stored columns' places and types (rows already stored must still decode).
    pub fn redefine(&mut self, id: u32, name: &str, schema: Schema) -> Result<(), String> {
        let t = self
            .by_id
            .get(&id)
            .cloned()
            .ok_or_else(|| format!("alter_table: no table {id}"))?;
        let old = t.schema();
        let old_name = t.name();
        if name != old_name && self.name_taken(name) {
            return Err(format!("alter_table: the name {name:?} is taken"));
        }
        compatible(&old, &schema)?;
        self.changed();
        self.by_name.remove(&old_name);
        t.redefine(name, schema);
        self.by_name.insert(name.to_string(), t);
        self.privileges_mut().relation_renamed(&old_name, name);
        // A dropped column's grants go with it (its position is never reused).
        if let Some(dropped) = self.dropped_columns(name) {
            let stale = self
                .privileges
                .relations
                .get(name)
                .is_some_and(|a| a.columns.keys().any(|at| dropped.contains(at)));
            if stale {
                if let Some(a) = self.privileges_mut().relations.get_mut(name) {
                    a.prune_columns(|at| dropped.contains(&at));
                }
            }
        }
        Ok(())
    }

    /// The stored positions of a table's dropped columns (None: no such table).
    pub fn dropped_columns(&self, name: &str) -> Option<Vec<u32>> {
        let t = self.by_name.get(name)?;
        Some(
            t.schema()
                .columns
                .iter()
                .enumerate()
                .filter(|(_, c)| c.dropped)
                .map(|(i, _)| i as u32)
                .collect(),
        )
    }

    /// Whether redo of an `alter_table` record applies: the table is there, the name is
    /// free, and the catalog's definition is not later than the record's (more columns,
    /// or a column the record has that the catalog dropped).
    fn alter_applies(&self, table: u32, name: &str, schema: &Schema) -> bool {
        let Some(t) = self.by_id.get(&table) else {
            return false;
        };
        let free = self.by_name.get(name).is_none_or(|t| t.id == table)
            && !self.index_names.contains_key(name)
            && !self.views.contains_key(name);
        let have = t.schema();
        let newer = have.columns.len() > schema.columns.len()
            || have
                .columns
                .iter()
                .zip(&schema.columns)
                .any(|(h, s)| h.dropped && !s.dropped);
        free && !newer
    }

    /// Adds or replaces a view. Errors when a table or an index has its name.
    pub fn put_view(&mut self, view: ViewDef) -> Result<(), String> {
        if self.by_name.contains_key(&view.name) || self.index_names.contains_key(&view.name) {
            return Err(format!(
                "view {:?}: a table or index has the name",
                view.name
            ));
        }
        self.changed();
        self.views.insert(view.name.clone(), view);
        Ok(())
    }

    pub fn remove_view(&mut self, name: &str) -> Option<ViewDef> {
        self.changed();
        let view = self.views.remove(name)?;
        self.privileges_mut().relation_gone(name);
        Some(view)
    }

    /// Puts a role (`old` None: a new one, or one redo sets whole) or replaces the role
    /// `old` (which may be renamed) by `role`.
    pub fn put_role(&mut self, old: Option<&str>, role: RoleDef) {
        self.auth_generation = next_generation();
        if let Some(old) = old {
            self.roles.remove(old);
            if old != role.name {
                self.privileges_mut().role_renamed(old, &role.name);
            }
        }
        self.roles.insert(role.name.clone(), role);
    }

    /// Removes a role, and its memberships.
    pub fn remove_role(&mut self, name: &str) -> Option<RoleDef> {
        self.privileges_mut().role_gone(name);
        self.roles.remove(name)
    }

    /// Redo read the end of transaction `xid`: its role and privilege changes take
    /// effect if it committed, in the order it logged them, and are forgotten otherwise.
    pub fn settle_roles(&mut self, xid: u64, committed: bool) {
        let Some(changes) = self.pending_roles.remove(&xid) else {
            return;
        };
        if !committed {
            return;
        }
        for change in changes {
            match change {
                Pending::Role(CatalogRecord::CreateRole { role }) => self.put_role(None, role),
                Pending::Role(CatalogRecord::AlterRole { old, role }) => {
                    self.put_role(Some(&old), role)
                }
                Pending::Role(CatalogRecord::DropRole { name }) => {
                    self.remove_role(&name);
                }
                Pending::Role(_) => {}
                Pending::Privilege(rec) => rec.apply(self),
            }
        }
    }

    /// Redo read a change that takes effect at its transaction's commit.
    pub(crate) fn pend(&mut self, xid: u64, change: Pending) {
        self.pending_roles.entry(xid).or_default().push(change);
    }

    /// The privileges as they are now (a snapshot: later changes make a new one).
    pub fn privileges(&self) -> Arc<crate::privilege::Privileges> {
        self.privileges.clone()
    }

    /// The privileges, to change (copied first when a snapshot of them is held).
    pub fn privileges_mut(&mut self) -> &mut crate::privilege::Privileges {
        self.auth_generation = next_generation();
        Arc::make_mut(&mut self.privileges)
    }

    /// Recovery is over: role changes of transactions that never ended are dropped
    /// (those transactions are rolled back).
    pub fn drop_unsettled_roles(&mut self) {
        self.pending_roles.clear();
    }

    /// Adds an index to its table. Errors when the table is missing or an id or name is
    /// taken (redo checks first).
    pub fn insert_index(&mut self, index: Index) -> Result<Arc<Index>, String> {
        let Some(t) = self.by_id.get(&index.table).cloned() else {
            return Err(format!("index {:?}: no table {}", index.name, index.table));
        };
        if self.name_taken(&index.name)
            || self.indexes.contains_key(&index.id)
            || self.by_id.contains_key(&index.id)
        {
            return Err(format!(
                "index {:?} (id {}) appears twice",
                index.name, index.id
            ));
        }
        if let Some(&c) = index
            .columns
            .iter()
            .find(|&&c| c as usize >= t.schema().columns.len())
        {
            return Err(format!("index {:?}: table has no column {c}", index.name));
        }
        self.changed();
        let ix = Arc::new(index);
        self.next_table_id = self.next_table_id.max(ix.id.saturating_add(1));
        self.indexes.insert(ix.id, ix.clone());
        self.index_names.insert(ix.name.clone(), ix.clone());
        lock(&t.indexes).push(ix.clone());
        Ok(ix)
    }

    pub fn remove_index(&mut self, id: u32) -> Option<Arc<Index>> {
        self.changed();
        let ix = self.indexes.remove(&id)?;
        self.index_names.remove(&ix.name);
        if let Some(t) = self.by_id.get(&ix.table) {
            lock(&t.indexes).retain(|i| i.id != id);
        }
        Some(ix)
    }

    /// Serializes the catalog for a checkpoint file.
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_with_free(out, &|| self.free_pages.clone())
    }

    /// Serializes the catalog with `free()` as its free page list (a checkpoint passes
    /// the page store's). `free` is called after the relations' page lists are read: a
    /// page handed out meanwhile (its making record is after the redo point) is then in
    /// neither list, never in both.
    pub fn encode_with_free(&self, out: &mut Vec<u8>, free: &dyn Fn() -> Vec<u64>) {
        out.extend_from_slice(&self.next_table_id.to_le_bytes());
        out.extend_from_slice(&(self.by_id.len() as u32).to_le_bytes());
        for t in self.by_id.values() {
            out.extend_from_slice(&t.id.to_le_bytes());
            put_string(out, &t.name());
            t.schema().encode(out);
            // A toast relation (format 20): its kind's code with the high bit set,
            // then its table's id.
            match t.toast_of {
                Some(of) => {
                    out.push(t.kind.code() | TOAST_FLAG);
                    out.extend_from_slice(&of.to_le_bytes());
                }
                None => out.push(t.kind.code()),
            }
            let pages = t.page_list();
            out.extend_from_slice(&(pages.len() as u64).to_le_bytes());
            for p in pages {
                out.extend_from_slice(&p.to_le_bytes());
            }
        }
        out.extend_from_slice(&(self.indexes.len() as u32).to_le_bytes());
        for ix in self.indexes.values() {
            // An index hidden by a running drop is kept under its hidden name.
            let mut def = ix.def();
            if self.index_hidden(ix) && !is_hidden(&def.name) {
                def.name = hidden_name(def.id, &def.name);
            }
            def.encode(out);
            let pages = ix.page_list();
            out.extend_from_slice(&(pages.len() as u64).to_le_bytes());
            for p in pages {
                out.extend_from_slice(&p.to_le_bytes());
            }
        }
        out.extend_from_slice(&(self.views.len() as u32).to_le_bytes());
        for v in self.views.values() {
            v.encode(out);
        }
        let analyzed: Vec<_> = self
            .by_id
            .values()
            .filter_map(|t| Some((t.id, t.stats()?)))
            .collect();
        out.extend_from_slice(&(analyzed.len() as u32).to_le_bytes());
        for (id, stats) in analyzed {
            out.extend_from_slice(&id.to_le_bytes());
            stats.encode(out);
        }
        out.extend_from_slice(&(self.roles.len() as u32).to_le_bytes());
        for role in self.roles.values() {
            role.encode(out);
        }
        out.extend_from_slice(&self.secret);
        // Free-space hints (format 18): where inserts find room vacuum made.
        let hinted: Vec<_> = self
            .by_id
            .values()
            .map(|t| (t.id, t.free_hints()))
            .filter(|(_, h)| !h.is_empty())
            .collect();
        out.extend_from_slice(&(hinted.len() as u32).to_le_bytes());
        for (id, hints) in hinted {
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&(hints.len() as u64).to_le_bytes());
            for (page, free) in hints {
                out.extend_from_slice(&page.to_le_bytes());
                out.extend_from_slice(&(free.min(u32::MAX as usize) as u32).to_le_bytes());
            }
        }
        // Free page numbers (format 18): a dropped relation's, reused by the next.
        let free = free();
        out.extend_from_slice(&(free.len() as u64).to_le_bytes());
        for p in free {
            out.extend_from_slice(&p.to_le_bytes());
        }
        // Sequences (format 21): each definition with its counter as logged.
        self.sequences.encode(out);
        // Owners, access control lists and memberships (format 22).
        self.privileges.encode(out);
    }

    /// Parses a serialized catalog, advancing `at`.
    pub fn decode(bytes: &[u8], at: &mut usize) -> Result<Catalog, String> {
        let mut r = Reader::new(bytes, *at);
        let mut cat = Catalog {
            next_table_id: r.u32()?,
            ..Catalog::default()
        };
        let n = r.u32()?;
        let mut toasts = Vec::new();
        for _ in 0..n {
            let id = r.u32()?;
            let name = r.string()?;
            let mut pos = r.pos();
            let schema = Schema::decode(bytes, &mut pos)?;
            r = Reader::new(bytes, pos);
            let c = r.u8()?;
            let toast_of = if c & TOAST_FLAG != 0 {
                Some(r.u32()?)
            } else {
                None
            };
            let kind = TableKind::from_code(c & !TOAST_FLAG)
                .ok_or_else(|| format!("table {name:?}: unknown kind {c}"))?;
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
            if let Some(of) = toast_of {
                if kind != TableKind::Heap || schema != toast_schema() {
                    return Err(format!(
                        "toast relation {id} of table {of} is not a toast heap"
                    ));
                }
                toasts.push(Table::new_toast(id, of, pages));
                continue;
            }
            if cat.by_id.contains_key(&id) || cat.by_name.contains_key(&name) {
                return Err(format!("table {name:?} (id {id}) appears twice"));
            }
            cat.insert(Table::new(id, &name, schema, kind, pages));
        }
        for toast in toasts {
            let (id, of) = (toast.id, toast.toast_of);
            if cat.insert_toast(toast).is_none() {
                return Err(format!(
                    "toast relation {id} of table {of:?}, which is not there, has one, or shares its id"
                ));
            }
        }
        let n = r.u32()?;
        for _ in 0..n {
            let def = IndexDef::decode(&mut r)?;
            let count = r.u64()?;
            if count > (r.remaining() / 8) as u64 {
                return Err(format!(
                    "index {:?} lists {count} pages, more than the file holds",
                    def.name
                ));
            }
            let mut pages = Vec::with_capacity(count as usize);
            for _ in 0..count {
                pages.push(r.u64()?);
            }
            cat.insert_index(Index::new(def, pages))?;
        }
        cat.rehide_indexes();
        // Views follow since format 10; an older checkpoint ends here.
        if r.remaining() > 0 {
            let n = r.u32()?;
            for _ in 0..n {
                let v = ViewDef::decode(&mut r)?;
                if cat.name_taken(&v.name) {
                    return Err(format!("view {:?} appears twice", v.name));
                }
                cat.put_view(v)?;
            }
        }
        // Table statistics follow since format 14; an older checkpoint ends here.
        if r.remaining() > 0 {
            let n = r.u32()?;
            for _ in 0..n {
                let id = r.u32()?;
                let stats = TableStats::decode(&mut r)?;
                let t = cat
                    .by_id
                    .get(&id)
                    .ok_or_else(|| format!("statistics for table {id}, which is not there"))?;
                t.set_stats(stats);
            }
        }
        // Roles follow since format 16; an older checkpoint ends here.
        if r.remaining() > 0 {
            let n = r.u32()?;
            for _ in 0..n {
                let role = RoleDef::decode(&mut r)?;
                if cat.roles.contains_key(&role.name) {
                    return Err(format!("role {:?} appears twice", role.name));
                }
                cat.put_role(None, role);
            }
            cat.secret = r.array()?;
        }
        // Free-space hints follow since format 18; an older checkpoint ends here (its
        // tables' hints come back as vacuum finds the space again).
        if r.remaining() > 0 {
            let n = r.u32()?;
            for _ in 0..n {
                let id = r.u32()?;
                let t = cat.by_id.get(&id).cloned().ok_or_else(|| {
                    format!("free-space hints for table {id}, which is not there")
                })?;
                let count = r.u64()?;
                if count > (r.remaining() / 12) as u64 {
                    return Err(format!(
                        "table {id} lists {count} free-space hints, more than the file holds"
                    ));
                }
                let pages = t.page_list();
                for _ in 0..count {
                    let (page, free) = (r.u64()?, r.u32()?);
                    if pages.binary_search(&page).is_err() || free > 1 << 16 {
                        return Err(format!(
                            "table {id}: a free-space hint of {free} bytes for page {page}, which is not one of its pages or larger than a page"
                        ));
                    }
                    t.set_free(page, free as usize);
                }
            }
            // Free page numbers, none of them any relation's.
            let count = r.u64()?;
            if count > (r.remaining() / 8) as u64 {
                return Err(format!(
                    "{count} free pages listed, more than the file holds"
                ));
            }
            let used: HashSet<u64> = cat
                .relation_pages()
                .into_iter()
                .flat_map(|(_, pages)| pages)
                .collect();
            for _ in 0..count {
                let p = r.u64()?;
                if used.contains(&p) {
                    return Err(format!("page {p} is listed free and used by a relation"));
                }
                cat.free_pages.push(p);
            }
        }
        // Sequences follow since format 21; an older checkpoint ends here.
        if r.remaining() > 0 {
            let seqs = Sequences::decode(&mut r, &|name| cat.name_taken(name))?;
            for s in seqs.iter() {
                cat.next_table_id = cat.next_table_id.max(s.id.saturating_add(1));
                if cat.by_id.contains_key(&s.id) || cat.indexes.contains_key(&s.id) {
                    return Err(format!("sequence {} shares a relation's id", s.id));
                }
            }
            cat.sequences = seqs;
        }
        // Privileges follow since format 22; an older checkpoint ends here (its
        // relations are the bootstrap superuser's, with the default privileges).
        if r.remaining() > 0 {
            let p = crate::privilege::Privileges::decode(&mut r)?;
            if let Some(name) = p.relations.keys().find(|n| !cat.name_taken(n)) {
                return Err(format!("privileges of {name:?}, which is no relation"));
            }
            cat.privileges = Arc::new(p);
        }
        *at = r.pos();
        Ok(cat)
    }
}

// ---------------------------------------------------------------------------------------
// WAL records: the catalog owns the creation and removal of tables and indexes.

/// A table was created: `table varint | name | schema | kind u8`.
pub const CREATE_TABLE: RecordType = RecordType::new(8, "create_table", 0);
/// A table was dropped: `table varint`.
pub const DROP_TABLE: RecordType = RecordType::new(9, "drop_table", 0);
/// An index was created, its pages already logged: `definition | count varint | count ×
/// page varint`.
pub const CREATE_INDEX: RecordType = RecordType::new(17, "create_index", 0);
/// An index was dropped: `index varint`.
pub const DROP_INDEX: RecordType = RecordType::new(18, "drop_index", 0);
/// An index was rebuilt (REINDEX) under a new id, in one step: `old index varint |
/// definition | count varint | count × page varint`.
pub const REPLACE_INDEX: RecordType = RecordType::new(25, "replace_index", 0);

/// A view was created, or replaced: `replace u8 | view definition`.
pub const CREATE_VIEW: RecordType = RecordType::new(30, "create_view", 0);
/// A view was dropped: `name`.
pub const DROP_VIEW: RecordType = RecordType::new(31, "drop_view", 0);
/// A table was altered (ALTER TABLE): `table varint | name | schema`, its whole new
/// definition.
pub const ALTER_TABLE: RecordType = RecordType::new(32, "alter_table", 0);
/// ANALYZE found a table's statistics: `table varint | rows f64 | pages varint | count
/// varint | count × n_distinct f64`.
pub const TABLE_STATS: RecordType = RecordType::new(39, "table_stats", 0);
/// A role was created: `role definition`.
pub const CREATE_ROLE: RecordType = RecordType::new(33, "create_role", 0);
/// A role was changed (and maybe renamed): `old name | role definition`, its whole new
/// definition.
pub const ALTER_ROLE: RecordType = RecordType::new(34, "alter_role", 0);
/// A role was dropped: `name`.
pub const DROP_ROLE: RecordType = RecordType::new(35, "drop_role", 0);
/// VACUUM took empty pages out of a table; they are free for any relation once a
/// checkpoint allows (docs/recovery.md rule 26): `table varint | runs varint | runs ×
/// (gap varint, length varint)`, runs of consecutive pages ascending, each starting
/// `gap` pages after the end of the one before (the first: after page 0).
pub const FREE_TABLE_PAGES: RecordType = RecordType::new(36, "free_table_pages", 0);
/// A table's toast relation was made, where its values stored out of line go
/// (`engine/toast.rs`): `table varint | toast varint`.
pub const CREATE_TOAST: RecordType = RecordType::new(37, "create_toast", 0);

/// The bit of a table's kind code, in a checkpoint's catalog, that marks a toast
/// relation (its table's id follows).
const TOAST_FLAG: u8 = 0x80;

/// The schema of a toast relation's rows: one chunk of a value stored out of line, its
/// number within the value, and where the next chunk is (NULL for the last).
pub fn toast_schema() -> Schema {
    Schema::new(vec![
        crate::schema::Column::not_null("chunk_seq", crate::schema::ColumnType::Int4),
        crate::schema::Column::new("next_page", crate::schema::ColumnType::Int8),
        crate::schema::Column::new("next_slot", crate::schema::ColumnType::Int4),
        crate::schema::Column::not_null("chunk_data", crate::schema::ColumnType::Bytea),
    ])
}

/// A catalog record.
#[derive(Debug, Clone, PartialEq)]
pub enum CatalogRecord {
    /// Since format 25 a replaced view's old definition follows (what a rollback puts
    /// back: docs/recovery.md rule 40).
    CreateView {
        replace: bool,
        view: ViewDef,
        old: Option<ViewDef>,
    },
    /// Since format 25 the dropped definition follows.
    DropView {
        name: String,
        old: Option<ViewDef>,
    },
    /// Since format 25 the old name and schema follow.
    AlterTable {
        table: u32,
        name: String,
        schema: Schema,
        old: Option<(String, Schema)>,
    },
    CreateTable {
        table: u32,
        name: String,
        schema: Schema,
        kind: TableKind,
    },
    /// Since format 25 the table's name follows (empty before).
    DropTable {
        table: u32,
        name: String,
    },
    CreateIndex {
        def: IndexDef,
        pages: Vec<u64>,
    },
    /// Since format 25 the index's name follows (empty before).
    DropIndex {
        index: u32,
        name: String,
    },
    ReplaceIndex {
        old: u32,
        def: IndexDef,
        pages: Vec<u64>,
    },
    TableStats {
        table: u32,
        stats: TableStats,
    },
    CreateRole {
        role: RoleDef,
    },
    AlterRole {
        old: String,
        role: RoleDef,
    },
    DropRole {
        name: String,
    },
    FreeTablePages {
        table: u32,
        /// Runs of consecutive pages, ascending and apart: (first page, length).
        runs: Vec<(u64, u64)>,
    },
    CreateToast {
        table: u32,
        toast: u32,
    },
}

fn put_index(out: &mut Vec<u8>, def: &IndexDef, pages: &[u64]) {
    def.encode(out);
    put_varint(out, pages.len() as u64);
    for p in pages {
        put_varint(out, *p);
    }
}

/// A view's old definition in a record (format 25; absent in older records).
fn put_old_view(out: &mut Vec<u8>, old: Option<&ViewDef>) {
    match old {
        Some(v) => {
            out.push(1);
            v.encode(out);
        }
        None => out.push(0),
    }
}

fn read_old_view(r: &mut Reader) -> Result<Option<ViewDef>, String> {
    if r.remaining() == 0 {
        return Ok(None);
    }
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(ViewDef::decode(r)?)),
        other => Err(format!("bad old-view flag {other}")),
    }
}

fn read_index(r: &mut Reader) -> Result<(IndexDef, Vec<u64>), String> {
    let def = IndexDef::decode(r)?;
    let n = crate::wal::payload::count(r, 1)?;
    let mut pages = Vec::with_capacity(n);
    for _ in 0..n {
        pages.push(r.varint()?);
    }
    Ok((def, pages))
}

impl Payload for CatalogRecord {
    fn record_type(&self) -> RecordType {
        match self {
            CatalogRecord::CreateTable { .. } => CREATE_TABLE,
            CatalogRecord::DropTable { .. } => DROP_TABLE,
            CatalogRecord::CreateIndex { .. } => CREATE_INDEX,
            CatalogRecord::DropIndex { .. } => DROP_INDEX,
            CatalogRecord::ReplaceIndex { .. } => REPLACE_INDEX,
            CatalogRecord::CreateView { .. } => CREATE_VIEW,
            CatalogRecord::DropView { .. } => DROP_VIEW,
            CatalogRecord::AlterTable { .. } => ALTER_TABLE,
            CatalogRecord::TableStats { .. } => TABLE_STATS,
            CatalogRecord::CreateRole { .. } => CREATE_ROLE,
            CatalogRecord::AlterRole { .. } => ALTER_ROLE,
            CatalogRecord::DropRole { .. } => DROP_ROLE,
            CatalogRecord::FreeTablePages { .. } => FREE_TABLE_PAGES,
            CatalogRecord::CreateToast { .. } => CREATE_TOAST,
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
            CatalogRecord::DropTable { table, name } => {
                put_varint(out, *table as u64);
                put_string(out, name);
            }
            CatalogRecord::CreateIndex { def, pages } => put_index(out, def, pages),
            CatalogRecord::DropIndex { index, name } => {
                put_varint(out, *index as u64);
                put_string(out, name);
            }
            CatalogRecord::ReplaceIndex { old, def, pages } => {
                put_varint(out, *old as u64);
                put_index(out, def, pages);
            }
            CatalogRecord::CreateView { replace, view, old } => {
                out.push(*replace as u8);
                view.encode(out);
                put_old_view(out, old.as_ref());
            }
            CatalogRecord::DropView { name, old } => {
                put_string(out, name);
                put_old_view(out, old.as_ref());
            }
            CatalogRecord::AlterTable {
                table,
                name,
                schema,
                old,
            } => {
                put_varint(out, *table as u64);
                put_string(out, name);
                schema.encode(out);
                match old {
                    Some((name, schema)) => {
                        out.push(1);
                        put_string(out, name);
                        schema.encode(out);
                    }
                    None => out.push(0),
                }
            }
            CatalogRecord::TableStats { table, stats } => {
                put_varint(out, *table as u64);
                stats.encode(out);
            }
            CatalogRecord::CreateRole { role } => role.encode(out),
            CatalogRecord::AlterRole { old, role } => {
                put_string(out, old);
                role.encode(out);
            }
            CatalogRecord::DropRole { name } => put_string(out, name),
            CatalogRecord::FreeTablePages { table, runs } => {
                put_varint(out, *table as u64);
                put_varint(out, runs.len() as u64);
                let mut end = 0;
                for &(start, len) in runs {
                    put_varint(out, start - end);
                    put_varint(out, len);
                    end = start + len;
                }
            }
            CatalogRecord::CreateToast { table, toast } => {
                put_varint(out, *table as u64);
                put_varint(out, *toast as u64);
            }
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
            let table = r.varint32()?;
            let name = if r.remaining() > 0 {
                r.string()?
            } else {
                String::new()
            };
            CatalogRecord::DropTable { table, name }
        } else if t == CREATE_INDEX {
            let (def, pages) = read_index(&mut r)?;
            CatalogRecord::CreateIndex { def, pages }
        } else if t == REPLACE_INDEX {
            let old = r.varint32()?;
            let (def, pages) = read_index(&mut r)?;
            CatalogRecord::ReplaceIndex { old, def, pages }
        } else if t == DROP_INDEX {
            let index = r.varint32()?;
            let name = if r.remaining() > 0 {
                r.string()?
            } else {
                String::new()
            };
            CatalogRecord::DropIndex { index, name }
        } else if t == CREATE_VIEW {
            let replace = match r.u8()? {
                0 => false,
                1 => true,
                other => return Err(format!("create_view: bad replace flag {other}")),
            };
            let view = ViewDef::decode(&mut r)?;
            let old = read_old_view(&mut r)?;
            CatalogRecord::CreateView { replace, view, old }
        } else if t == DROP_VIEW {
            let name = r.string()?;
            let old = read_old_view(&mut r)?;
            CatalogRecord::DropView { name, old }
        } else if t == ALTER_TABLE {
            let table = r.varint32()?;
            let name = r.string()?;
            let mut at = r.pos();
            let schema = Schema::decode(payload, &mut at)?;
            r = Reader::new(payload, at);
            // Format 25: the old definition (a flag, then a name and schema).
            let old = match (r.remaining() > 0).then(|| r.u8()).transpose()? {
                None | Some(0) => None,
                Some(1) => {
                    let old_name = r.string()?;
                    let mut at = r.pos();
                    let old_schema = Schema::decode(payload, &mut at)?;
                    r = Reader::new(payload, at);
                    Some((old_name, old_schema))
                }
                Some(other) => return Err(format!("alter_table: bad old-definition flag {other}")),
            };
            CatalogRecord::AlterTable {
                table,
                name,
                schema,
                old,
            }
        } else if t == TABLE_STATS {
            CatalogRecord::TableStats {
                table: r.varint32()?,
                stats: TableStats::decode(&mut r)?,
            }
        } else if t == CREATE_ROLE {
            CatalogRecord::CreateRole {
                role: RoleDef::decode(&mut r)?,
            }
        } else if t == ALTER_ROLE {
            CatalogRecord::AlterRole {
                old: r.string()?,
                role: RoleDef::decode(&mut r)?,
            }
        } else if t == DROP_ROLE {
            CatalogRecord::DropRole { name: r.string()? }
        } else if t == FREE_TABLE_PAGES {
            let table = r.varint32()?;
            let n = crate::wal::payload::count(&mut r, 2)?;
            let mut runs = Vec::with_capacity(n);
            let mut end = 0u64;
            for i in 0..n {
                let (gap, len) = (r.varint()?, r.varint()?);
                let start = end
                    .checked_add(gap)
                    .filter(|_| i == 0 || gap > 0)
                    .ok_or("free_table_pages: runs not apart and ascending")?;
                end = start
                    .checked_add(len)
                    .filter(|_| len > 0)
                    .ok_or("free_table_pages: an empty run, or one past 2^64")?;
                runs.push((start, len));
            }
            CatalogRecord::FreeTablePages { table, runs }
        } else if t == CREATE_TOAST {
            CatalogRecord::CreateToast {
                table: r.varint32()?,
                toast: r.varint32()?,
            }
        } else {
            return Err(format!("record code {} is not the catalog's", t.code));
        };
        finish(&r, t)?;
        Ok(rec)
    }
}

/// Sorted page numbers as runs of consecutive pages: (first, length).
pub fn page_runs(pages: &[u64]) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &p in pages {
        match runs.last_mut() {
            Some((start, len)) if *start + *len == p => *len += 1,
            _ => runs.push((p, 1)),
        }
    }
    runs
}

/// Runs of pages for waldump: `count [a-b c …]`.
fn describe_runs(runs: &[(u64, u64)]) -> String {
    let count: u64 = runs.iter().map(|r| r.1).sum();
    let parts: Vec<String> = runs
        .iter()
        .map(|&(start, len)| match len {
            1 => start.to_string(),
            _ => format!("{start}-{}", start + len - 1),
        })
        .collect();
    format!("{count} [{}]", parts.join(" "))
}

fn describe_index(def: &IndexDef, pages: &[u64]) -> String {
    // Column orders only when one is declared (as the definition's bytes do).
    let orders = if def.order.iter().any(|o| *o != KeyOrder::default()) {
        let each: Vec<&str> = def
            .order
            .iter()
            .map(|o| match (o.desc, o.nulls_first) {
                (false, false) => "asc",
                (false, true) => "asc nulls first",
                (true, false) => "desc nulls last",
                (true, true) => "desc",
            })
            .collect();
        format!(" orders [{}]", each.join(", "))
    } else {
        String::new()
    };
    format!(
        "index {} name {:?} table {} columns {:?}{orders}{}{} meta {} pages {}",
        def.id,
        def.name,
        def.table,
        def.columns,
        if def.unique { " unique" } else { "" },
        if def.primary { " primary" } else { "" },
        def.meta,
        pages.len()
    )
}

/// The owner of the catalog records.
pub struct CatalogOwner;

impl RecordOwner for CatalogOwner {
    fn name(&self) -> &'static str {
        "catalog"
    }

    fn types(&self) -> &'static [RecordType] {
        &[
            CREATE_TABLE,
            DROP_TABLE,
            CREATE_INDEX,
            DROP_INDEX,
            REPLACE_INDEX,
            CREATE_VIEW,
            DROP_VIEW,
            ALTER_TABLE,
            CREATE_ROLE,
            ALTER_ROLE,
            DROP_ROLE,
            TABLE_STATS,
            FREE_TABLE_PAGES,
            CREATE_TOAST,
        ]
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
            CatalogRecord::DropTable { table, name } => format!("table {table} name {name:?}"),
            CatalogRecord::CreateIndex { def, pages } => describe_index(&def, &pages),
            CatalogRecord::DropIndex { index, name } => format!("index {index} name {name:?}"),
            CatalogRecord::ReplaceIndex { old, def, pages } => {
                format!("old {old} {}", describe_index(&def, &pages))
            }
            CatalogRecord::CreateView { replace, view, old } => format!(
                "view {:?}{} columns {:?} query {:?}{}",
                view.name,
                if replace { " replace" } else { "" },
                view.columns,
                view.query,
                if old.is_some() { " (old kept)" } else { "" }
            ),
            CatalogRecord::DropView { name, .. } => format!("view {name:?}"),
            CatalogRecord::AlterTable {
                table,
                name,
                schema,
                old,
            } => format!(
                "table {table} name {name:?} columns {}{}",
                schema.columns.len(),
                old.as_ref().map_or(String::new(), |(n, s)| format!(
                    " was {n:?} columns {}",
                    s.columns.len()
                ))
            ),
            CatalogRecord::TableStats { table, stats } => format!(
                "table {table} rows {} pages {} distinct {:?}",
                stats.rows, stats.pages, stats.distinct
            ),
            CatalogRecord::CreateRole { role } => role.describe(),
            CatalogRecord::AlterRole { old, role } => format!("old {old:?} {}", role.describe()),
            CatalogRecord::DropRole { name } => format!("role {name:?}"),
            CatalogRecord::FreeTablePages { table, runs } => {
                format!("table {table} pages {}", describe_runs(&runs))
            }
            CatalogRecord::CreateToast { table, toast } => format!("table {table} toast {toast}"),
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
            CatalogRecord::DropTable { table, .. } => {
                // Hidden until its transaction commits, when its pages are free
                // again (docs/recovery.md rule 40).
                ctx.catalog.hide_table(table);
            }
            CatalogRecord::CreateIndex { def, pages } => {
                let cat = &mut *ctx.catalog;
                // The checkpoint's catalog may be newer than the record (the index, or
                // its table, created or dropped since): like create_table, only what is
                // missing is added.
                if !cat.indexes.contains_key(&def.id)
                    && !cat.name_taken(&def.name)
                    && cat.by_id.contains_key(&def.table)
                {
                    let mut pages = pages;
                    pages.sort_unstable();
                    pages.dedup();
                    cat.insert_index(Index::new(def, pages))
                        .map_err(|r| ctx.corrupt(rec, r))?;
                }
            }
            CatalogRecord::CreateToast { table, toast } => {
                // As create_table: only what is missing (the checkpoint's catalog may
                // have it, or no longer have the table).
                if toast >= u32::MAX - 1 {
                    return Err(ctx.corrupt(rec, format!("toast id {toast} out of range")));
                }
                ctx.catalog
                    .insert_toast(Table::new_toast(toast, table, Vec::new()));
            }
            CatalogRecord::FreeTablePages { table, runs } => {
                // The checkpoint's catalog may no longer have the table (dropped since:
                // its pages, these among them, are free already) or these pages (freed
                // before the checkpoint's page lists were read).
                if let Some(t) = ctx.catalog.by_id.get(&table) {
                    let removed = t.remove_pages(&runs);
                    ctx.pool.store().free_pages(&removed, rec.end_lsn(), 0);
                }
            }
            CatalogRecord::DropIndex { index, .. } => {
                ctx.catalog.hide_index(index);
            }
            CatalogRecord::ReplaceIndex { old, def, pages } => {
                let cat = &mut *ctx.catalog;
                // As create_index: only when the catalog still has the old index (a
                // newer checkpoint's catalog may have the new one, or neither).
                if cat.indexes.contains_key(&old)
                    && !cat.indexes.contains_key(&def.id)
                    && cat.by_id.contains_key(&def.table)
                {
                    // The old index's pages are free again, as the rebuild made them.
                    if let Some(gone) = cat.remove_index(old) {
                        ctx.pool
                            .store()
                            .free_pages(&gone.page_list(), rec.end_lsn(), 0);
                    }
                    if !cat.name_taken(&def.name) {
                        let mut pages = pages;
                        pages.sort_unstable();
                        pages.dedup();
                        cat.insert_index(Index::new(def, pages))
                            .map_err(|r| ctx.corrupt(rec, r))?;
                    }
                }
            }
            CatalogRecord::CreateView { replace, view, .. } => {
                // As create_table: the checkpoint's catalog may be newer (the view made,
                // replaced or dropped since, its name another relation's since): a
                // view is put only where no table or index has its name.
                let cat = &mut *ctx.catalog;
                let free = !cat.by_name.contains_key(&view.name)
                    && !cat.index_names.contains_key(&view.name);
                if free && (replace || !cat.views.contains_key(&view.name)) {
                    cat.put_view(view).map_err(|r| ctx.corrupt(rec, r))?;
                }
            }
            CatalogRecord::DropView { name, .. } => {
                ctx.catalog.remove_view(&name);
            }
            CatalogRecord::AlterTable {
                table,
                name,
                schema,
                ..
            } => {
                // The definition is whole, so redo sets it whenever the table is there
                // and the name free. The checkpoint's catalog is read after its redo
                // point, so it may hold a later definition than the record's: one with
                // more columns, or a column the record has but the catalog dropped.
                // That record is passed over (the records after it lead to the
                // catalog's state again); any other mismatch is damage.
                let cat = &mut *ctx.catalog;
                if cat.alter_applies(table, &name, &schema) {
                    cat.redefine(table, &name, schema)
                        .map_err(|r| ctx.corrupt(rec, r))?;
                }
            }
            CatalogRecord::TableStats { table, stats } => {
                // Statistics are a hint: set on the table when it is still there (a
                // later checkpoint's catalog may have dropped it).
                if let Some(t) = ctx.catalog.by_id.get(&table) {
                    t.set_stats(stats);
                }
            }
            role @ (CatalogRecord::CreateRole { .. }
            | CatalogRecord::AlterRole { .. }
            | CatalogRecord::DropRole { .. }) => {
                // A role change waits for its transaction's commit (rule 36): each
                // record holds whole definitions, so applying them in commit order
                // from a checkpoint's catalog, however late, ends at the same roles.
                ctx.catalog.pend(rec.xid, Pending::Role(role));
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
            CatalogRecord::DropTable {
                table: 4,
                name: "t".into(),
            },
            CatalogRecord::CreateToast { table: 4, toast: 9 },
            CatalogRecord::CreateIndex {
                def: IndexDef {
                    id: 5,
                    name: "t_pkey".into(),
                    table: 4,
                    columns: vec![0, 2],
                    order: vec![KeyOrder::default(); 2],
                    unique: true,
                    primary: true,
                    meta: 40,
                },
                pages: vec![40, 41],
            },
            CatalogRecord::DropIndex {
                index: 5,
                name: "t_pkey".into(),
            },
            CatalogRecord::TableStats {
                table: 4,
                stats: TableStats {
                    rows: 1000.0,
                    pages: 12,
                    distinct: vec![-1.0, 20.0, 0.0],
                },
            },
            CatalogRecord::CreateView {
                replace: true,
                view: ViewDef {
                    name: "v".into(),
                    columns: vec!["a".into(), "b".into()],
                    query: "SELECT a, b FROM t".into(),
                },
                old: Some(ViewDef {
                    name: "v".into(),
                    columns: vec!["a".into()],
                    query: "SELECT a FROM t".into(),
                }),
            },
            CatalogRecord::DropView {
                name: "v".into(),
                old: None,
            },
            CatalogRecord::CreateRole {
                role: sample_role("alice"),
            },
            CatalogRecord::AlterRole {
                old: "alice".into(),
                role: RoleDef {
                    password: None,
                    valid_until: None,
                    connection_limit: -1,
                    login: false,
                    inherit: false,
                    ..sample_role("bob")
                },
            },
            CatalogRecord::DropRole { name: "bob".into() },
            CatalogRecord::AlterTable {
                table: 4,
                name: "t2".into(),
                schema: Schema::new(vec![
                    Column::new("a", ColumnType::Int4),
                    Column {
                        dropped: true,
                        ..Column::new("b", ColumnType::Text)
                    },
                    Column {
                        missing: Some(vec![7, 0, 0, 0]),
                        ..Column::new("c", ColumnType::Int4)
                    },
                ]),
                old: Some((
                    "t".into(),
                    Schema::new(vec![
                        Column::new("a", ColumnType::Int4),
                        Column::new("b", ColumnType::Text),
                    ]),
                )),
            },
            CatalogRecord::ReplaceIndex {
                old: 5,
                def: IndexDef {
                    id: 6,
                    name: "t_pkey".into(),
                    table: 4,
                    columns: vec![0, 2],
                    order: vec![
                        KeyOrder::DESC,
                        KeyOrder {
                            desc: false,
                            nulls_first: true,
                        },
                    ],
                    unique: true,
                    primary: true,
                    meta: 50,
                },
                pages: vec![50],
            },
            CatalogRecord::FreeTablePages {
                table: 4,
                runs: vec![(0, 1), (3, 2), (1 << 40, 1 << 30)],
            },
        ]
    }

    #[test]
    fn free_table_pages_names_runs_and_refuses_bad_ones() {
        assert_eq!(page_runs(&[2, 3, 4, 9, 11, 12]), [(2, 3), (9, 1), (11, 2)]);
        let rec = CatalogRecord::FreeTablePages {
            table: 7,
            runs: page_runs(&(100..20_100).collect::<Vec<u64>>()),
        };
        let mut out = Vec::new();
        rec.encode_payload(&mut out);
        // A whole table's pages in a few bytes.
        assert!(out.len() <= 8, "{} bytes", out.len());
        assert_eq!(CatalogRecord::decode(FREE_TABLE_PAGES, &out), Ok(rec));
        // table 7, two runs: (gap, length) pairs.
        for (bytes, why) in [
            (vec![7, 2, 1, 1, 0, 1], "runs not apart"),
            (vec![7, 1, 1, 0], "an empty run"),
            (vec![7, 2, 1, 1], "a run missing"),
        ] {
            assert!(
                CatalogRecord::decode(FREE_TABLE_PAGES, &bytes).is_err(),
                "{why}"
            );
        }
        let t = Table::new(
            7,
            "t",
            Schema::new(Vec::new()),
            TableKind::Heap,
            vec![1, 2, 5, 6, 9],
        );
        t.set_free(2, 4000);
        assert_eq!(t.remove_pages(&[(2, 4), (9, 1)]), [2, 5, 9]);
        assert_eq!(t.page_list(), [1, 6]);
        assert!(t.free_hints().is_empty());
    }

    /// A role with every attribute set.
    pub(crate) fn sample_role(name: &str) -> RoleDef {
        RoleDef {
            password: Some(format!(
                "{ROLE_PASSWORD_SCHEME}4096:c2FsdA==$c3RvcmVk:c2VydmVy"
            )),
            login: true,
            superuser: true,
            createdb: true,
            createrole: true,
            inherit: true,
            replication: true,
            bypassrls: true,
            connection_limit: 3,
            valid_until: Some(946_684_800_000_000),
            ..RoleDef::new(name)
        }
    }

    /// Role definitions keep every attribute, and a reader refuses a password that is
    /// not a verifier and a connection limit below -1, as the writer does.
    #[test]
    fn role_definitions_round_trip_and_refuse_what_the_writer_refuses() {
        let round_trip = |role: &RoleDef| {
            let mut out = Vec::new();
            role.encode(&mut out);
            let mut r = Reader::new(&out, 0);
            let back = RoleDef::decode(&mut r);
            assert_eq!(r.remaining(), 0);
            back
        };
        let full = sample_role("alice");
        assert_eq!(round_trip(&full), Ok(full.clone()));
        let plain = RoleDef::new("bob");
        assert_eq!(round_trip(&plain), Ok(plain.clone()));
        // name (u16 length + "bob"), flags (inherit), connection limit -1 (zigzag 1),
        // no password.
        let mut out = Vec::new();
        plain.encode(&mut out);
        assert_eq!(out, [3, 0, b'b', b'o', b'b', ROLE_INHERIT, 1, 0]);
        let clear = RoleDef {
            password: Some("secret".into()),
            ..plain.clone()
        };
        assert_eq!(
            round_trip(&clear),
            Err("role \"bob\": a password is kept only as a SCRAM-SHA-256$… verifier".to_string())
        );
        let limit = RoleDef {
            connection_limit: -2,
            ..plain
        };
        assert_eq!(
            round_trip(&limit),
            Err("role \"bob\": connection limit -2".to_string())
        );
    }

    /// waldump describes a role's attributes, never its verifier.
    #[test]
    fn role_records_are_described_without_the_verifier() {
        let describe = |rec: &CatalogRecord| {
            let mut payload = Vec::new();
            rec.encode_payload(&mut payload);
            let log = LogRecord {
                lsn: 0,
                len: 0,
                rtype: rec.record_type(),
                xid: 1,
                payload,
            };
            CatalogOwner.describe(&log).unwrap()
        };
        let create = CatalogRecord::CreateRole {
            role: sample_role("alice"),
        };
        assert_eq!(
            describe(&create),
            "role \"alice\" login superuser createdb createrole replication bypassrls password connection_limit 3 valid_until 946684800000000"
        );
        let alter = CatalogRecord::AlterRole {
            old: "alice".into(),
            role: RoleDef::new("bob"),
        };
        assert_eq!(describe(&alter), "old \"alice\" role \"bob\"");
        let drop = CatalogRecord::DropRole { name: "bob".into() };
        assert_eq!(describe(&drop), "role \"bob\"");
    }

    /// Redo holds a role change until its transaction's commit: what could go wrong is
    /// a role (or a password) that a crash before the commit leaves in place.
    #[test]
    fn role_changes_wait_for_their_commit_at_redo() {
        let mut cat = Catalog::default();
        let pend = |cat: &mut Catalog, xid: u64, rec: CatalogRecord| {
            cat.pend(xid, Pending::Role(rec));
        };
        pend(
            &mut cat,
            5,
            CatalogRecord::CreateRole {
                role: sample_role("a"),
            },
        );
        pend(
            &mut cat,
            6,
            CatalogRecord::CreateRole {
                role: RoleDef::new("b"),
            },
        );
        assert!(cat.roles.is_empty());
        cat.settle_roles(5, true);
        cat.settle_roles(6, false);
        assert_eq!(cat.roles.keys().collect::<Vec<_>>(), ["a"]);
        // A rename then a drop of the new name, in one transaction, in order.
        pend(
            &mut cat,
            7,
            CatalogRecord::AlterRole {
                old: "a".into(),
                role: RoleDef::new("c"),
            },
        );
        pend(&mut cat, 7, CatalogRecord::DropRole { name: "c".into() });
        pend(&mut cat, 8, CatalogRecord::DropRole { name: "a".into() });
        cat.settle_roles(7, true);
        assert!(cat.roles.is_empty());
        cat.put_role(None, sample_role("a"));
        cat.drop_unsettled_roles();
        cat.settle_roles(8, true);
        assert_eq!(cat.roles["a"], sample_role("a"));
    }

    /// A checkpoint's catalog of format 15 or older ends before the roles: it reads as
    /// a catalog without roles; one of format 16 keeps them.
    #[test]
    fn a_catalog_without_roles_reads_as_one_of_no_roles() {
        let mut cat = Catalog::default();
        cat.insert(Table::new(
            4,
            "t",
            Schema::new(vec![Column::new("a", ColumnType::Int4)]),
            TableKind::Heap,
            vec![9],
        ));
        // A format 20 catalog: a format 23 one without its privileges (five counts
        // of 0) and its sequence count (0).
        let v20 = |cat: &Catalog| {
            let mut v = Vec::new();
            cat.encode(&mut v);
            assert_eq!(v[v.len() - 9..], [0; 9]);
            v.truncate(v.len() - 9);
            v
        };
        let mut old = v20(&cat);
        // The role count (0), the secret, the count of tables with free-space hints (0)
        // and the count of free pages (0) are the last fields: an older build wrote up
        // to the statistics.
        cat.secret = [7; 32];
        let new = v20(&cat);
        let n = new.len();
        assert_eq!(new[..n - 48], old[..old.len() - 48]);
        assert_eq!(new[n - 48..n - 44], [0, 0, 0, 0]);
        assert_eq!(new[n - 44..n - 12], [7; 32]);
        assert_eq!(new[n - 12..], [0; 12]);
        // Format 16 and 17 end after the secret: no hints, no free pages.
        let mut at = 0;
        let back = Catalog::decode(&new[..n - 12], &mut at).unwrap();
        assert_eq!((at, back.secret), (n - 12, [7; 32]));
        old.truncate(old.len() - 48);
        let mut at = 0;
        let back = Catalog::decode(&old, &mut at).unwrap();
        assert_eq!(at, old.len());
        assert!(back.roles.is_empty());
        assert_eq!(back.secret, [0; 32]);
        assert_eq!(back.by_name["t"].page_list(), [9]);

        cat.put_role(None, sample_role("alice"));
        cat.put_role(None, RoleDef::new("bob"));
        let mut new = Vec::new();
        cat.encode(&mut new);
        let mut at = 0;
        let back = Catalog::decode(&new, &mut at).unwrap();
        assert_eq!(at, new.len());
        assert_eq!(back.roles, cat.roles);
        assert_eq!(back.secret, [7; 32]);

        // Free-space hints (format 18) come back; one for a page the table does not
        // have is refused.
        cat.by_name["t"].set_free(9, 3000);
        let new = v20(&cat);
        let mut at = 0;
        let back = Catalog::decode(&new, &mut at).unwrap();
        assert_eq!(at, new.len());
        assert_eq!(back.by_name["t"].free_hints(), [(9, 3000)]);
        let n = new.len();
        let mut bad = new.clone();
        bad[n - 20..n - 12].copy_from_slice(&10u64.to_le_bytes());
        let e = Catalog::decode(&bad, &mut 0).unwrap_err();
        assert!(e.contains("not one of its pages"), "{e}");
        // Free pages come back; one a table uses is refused.
        let mut new = Vec::new();
        cat.encode_with_free(&mut new, &|| vec![11, 12]);
        let back = Catalog::decode(&new, &mut 0).unwrap();
        assert_eq!(back.free_pages, [11, 12]);
        let mut new = Vec::new();
        cat.encode_with_free(&mut new, &|| vec![9]);
        let e = Catalog::decode(&new, &mut 0).unwrap_err();
        assert!(e.contains("listed free and used"), "{e}");
    }

    /// Sequences (format 21) come back from a checkpoint's catalog with the counter the
    /// log had; one sharing a relation's name is damage.
    #[test]
    fn sequences_round_trip_in_a_checkpoint() {
        use crate::sequence::{SeqState, SeqType, Sequence, SequenceDef};
        let mut cat = Catalog::default();
        cat.insert(Table::new(
            4,
            "t",
            Schema::new(vec![Column::new("a", ColumnType::Int4)]),
            TableKind::Heap,
            vec![],
        ));
        let mut def = SequenceDef::new("t_a_seq", SeqType::Int4);
        def.id = 9;
        def.owned_by = Some((4, 0));
        cat.insert_sequence(Sequence::new(def.clone(), SeqState::at(5)));
        assert_eq!(cat.next_table_id, 10);
        assert!(cat.name_taken("t_a_seq"));
        let mut bytes = Vec::new();
        cat.encode(&mut bytes);
        let back = Catalog::decode(&bytes, &mut 0).unwrap();
        let info = back.sequences.get("t_a_seq").unwrap().info();
        assert_eq!((info.def, info.state), (def.clone(), SeqState::at(5)));
        assert_eq!(back.next_table_id, 10);
        let mut clash = Catalog::default();
        clash.insert(Table::new(
            4,
            "t_a_seq",
            Schema::new(vec![Column::new("a", ColumnType::Int4)]),
            TableKind::Heap,
            vec![],
        ));
        clash.insert_sequence(Sequence::new(def, SeqState::at(5)));
        let mut bytes = Vec::new();
        clash.encode(&mut bytes);
        let e = Catalog::decode(&bytes, &mut 0).unwrap_err();
        assert!(e.contains("appears twice"), "{e}");
    }

    /// A checkpoint's catalog is read after its redo point: an `alter_table` record after
    /// that point may be older than the catalog, and its redo must pass over it.
    #[test]
    fn an_older_alter_table_is_passed_over_at_redo() {
        let a = || Column::new("a", ColumnType::Int4);
        let b = || Column::new("b", ColumnType::Int4);
        let mut cat = Catalog::default();
        cat.insert(Table::new(
            4,
            "t",
            Schema::new(vec![a()]),
            TableKind::Heap,
            vec![],
        ));
        let one = Schema::new(vec![a(), b()]);
        assert!(cat.alter_applies(4, "t", &one));
        cat.redefine(4, "t2", one.clone()).unwrap();
        let mut dropped = one.clone();
        dropped.columns[1].dropped = true;
        cat.redefine(4, "t2", dropped.clone()).unwrap();
        // Older than the catalog: fewer columns, or b not yet dropped.
        assert!(!cat.alter_applies(4, "t", &Schema::new(vec![a()])));
        assert!(!cat.alter_applies(4, "t2", &one));
        // The same definition, or a later one, applies; another table's name does not.
        assert!(cat.alter_applies(4, "t2", &dropped));
        cat.insert(Table::new(
            5,
            "u",
            Schema::new(vec![a()]),
            TableKind::Heap,
            vec![],
        ));
        assert!(!cat.alter_applies(4, "u", &dropped));
        assert!(!cat.alter_applies(9, "t2", &dropped));
        // A schema that retypes a stored column is refused.
        let retyped = Schema::new(vec![Column::new("a", ColumnType::Text), b()]);
        assert!(cat.redefine(4, "t2", retyped).is_err());
        assert_eq!(cat.by_name["t2"].schema().columns[1].name, "b");
    }

    #[test]
    fn catalog_records_round_trip() {
        check_codec(&samples(), CatalogRecord::decode);
    }

    /// An index whose columns are all in the default order is written as before format
    /// 15 (no order bytes); declared orders follow the flags byte, one per column, and
    /// bits that mean nothing are refused.
    #[test]
    fn index_orders_follow_the_flags() {
        let def = |order: Vec<KeyOrder>| IndexDef {
            id: 5,
            name: "ix".into(),
            table: 4,
            columns: vec![0, 2],
            order,
            unique: true,
            primary: false,
            meta: 40,
        };
        let encoded = |d: &IndexDef| {
            let mut out = Vec::new();
            d.encode(&mut out);
            out
        };
        let decoded = |b: &[u8]| IndexDef::decode(&mut Reader::new(b, 0));
        // id, name (u16 length + "ix"), table, 2 columns (0 and 2), flags, meta.
        let plain = encoded(&def(vec![KeyOrder::default(); 2]));
        assert_eq!(plain, [5, 2, 0, b'i', b'x', 4, 2, 0, 2, 1, 40]);
        assert_eq!(decoded(&plain), Ok(def(vec![KeyOrder::default(); 2])));
        let mixed = vec![
            KeyOrder::default(),
            KeyOrder {
                desc: true,
                nulls_first: false,
            },
        ];
        let ordered = encoded(&def(mixed.clone()));
        assert_eq!(ordered, [5, 2, 0, b'i', b'x', 4, 2, 0, 2, 1 | 4, 0, 1, 40]);
        assert_eq!(decoded(&ordered), Ok(def(mixed)));
        let mut bad = ordered.clone();
        bad[10] = 4;
        assert_eq!(
            decoded(&bad),
            Err("index \"ix\": column 0 has unknown order bits 4".to_string())
        );
        bad[9] = 8;
        assert_eq!(
            decoded(&bad),
            Err("index \"ix\": unknown flags 8".to_string())
        );
    }
}
