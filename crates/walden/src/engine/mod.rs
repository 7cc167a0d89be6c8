//! The public `Database`: creating and opening (recovery is `crate::recovery`), tables,
//! vacuum and accounting; `Transaction` (transaction.rs), checkpoints (checkpoint.rs) and
//! the background thread (background.rs) are its submodules.

mod advisory;
mod background;
mod catalog_txn;
mod check;
mod checkpoint;
mod cursor;
mod ddl;
mod index;
mod isolation;
mod privileges;
mod read;
mod roles;
mod savepoint;
mod sequences;
mod tables;
mod toast;
mod transaction;

pub use crate::options::Options;
use crate::privilege::ObjectAcl;
pub use crate::recovery::RecoveryReport;
pub use advisory::{AdvisoryKey, AdvisoryMode};
pub use check::{CheckReport, IndexCheck, TableCheck};
pub use cursor::{HeldSnapshot, TableCursor};
pub use ddl::AlterOp;
pub use index::{IndexInfo, IndexSpec, RelationKind};
pub use isolation::{Isolation, Modified, Newest};
pub use privileges::MemberChange;
pub use read::Rows;
pub use sequences::SeqValues;
pub use transaction::{Reader, RowAction, Transaction};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;

use crate::access::{self, Ctx, Vacuumed};
use crate::buffer::BufferPool;
use crate::catalog::{Catalog, Table, TableKind};
use crate::clock::Clock;
use crate::clog::Clog;
use crate::control::{checkpoint_path, CheckpointData, Control};
use crate::error::{Error, Result};
use crate::page::PAGE_SIZES;
use crate::poison::Poison;
use crate::recovery::Parts;
use crate::schema::Schema;
use crate::stats::{Stats, StatsSnapshot};
use crate::store::{PageStore, Protection};
use crate::txn::TxnManager;
use crate::undo_log::{SegmentedUndoLog, SpillDir, UndoLog};
use crate::vfs::{FileLock, LockMode, Vfs};
use crate::wal::format::{MIN_SEGMENT_BYTES, SEGMENT_HEADER_BYTES};
use crate::wal::{Wal, WalCompression, WalPosition};
use checkpoint::CheckpointState;

struct Inner {
    /// The directory's exclusive lock, released when the last handle goes.
    _dir_lock: Box<dyn FileLock>,
    dir: PathBuf,
    vfs: Arc<dyn Vfs>,
    clock: Arc<dyn Clock>,
    control: Control,
    synchronous_commit: bool,
    checkpoint_wal_bytes: u64,
    checkpoint_interval_millis: u64,
    poison: Arc<Poison>,
    stats: Arc<Stats>,
    store: Arc<PageStore>,
    pool: BufferPool,
    wal: Arc<Wal>,
    clog: Clog,
    txns: TxnManager,
    catalog: RwLock<Catalog>,
    /// Where statements' sorts and groupings spill (`tmp/`, emptied at open), and
    /// transactions' undo-table change lists past `txn_undo_memory_bytes`.
    temp: crate::temp::TempSpace,
    txn_undo_memory_bytes: u64,
    /// Commits hold it shared from their commit record to their clog bit; a checkpoint
    /// takes it exclusively to set its redo point.
    commit_fence: RwLock<()>,
    /// One checkpoint at a time; guards the checkpoint sequence and last redo point.
    checkpoint: Mutex<CheckpointState>,
    shutdown: AtomicBool,
    default_table_kind: TableKind,
    /// Whether work may run on threads besides the caller's (an index build's second
    /// reader): as `Options::background`, so that a simulation without background
    /// work runs on one thread and replays exactly.
    threads: bool,
    /// The undo log of undo tables.
    undo: Box<dyn UndoLog>,
    undo_writers: Mutex<UndoWriters>,
}

/// Where each running transaction that changed an undo table may need recovery to start
/// reading the WAL to roll it back (docs/recovery.md rule 22).
struct UndoWriters {
    /// Redo position of the last complete checkpoint: a record boundary at or before
    /// anything logged from now on.
    last_redo: WalPosition,
    active: BTreeMap<u64, WalPosition>,
}

/// An open database: a cheap handle (clone it to share the database between threads or
/// tasks; every clone is the same database). Send + Sync. The database closes when the
/// last handle and the last transaction are gone (or at `close`).
#[derive(Clone)]
pub struct Database {
    handle: Arc<Handle>,
}

/// What the handles of one open database share: the background thread, stopped when the
/// last handle goes, and what recovery did.
struct Handle {
    inner: Arc<Inner>,
    background: Mutex<Option<JoinHandle<()>>>,
    recovery: RecoveryReport,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Database {
    /// Creates a new database in `dir` (which must not hold one).
    pub fn create(dir: impl AsRef<Path>, opts: Options) -> Result<Database> {
        let dir = dir.as_ref();
        let vfs = opts.vfs.clone();
        if !PAGE_SIZES.contains(&opts.page_size) {
            return Err(Error::InvalidOption(format!(
                "page size {} (expected 4096, 8192, 16384 or 32768)",
                opts.page_size
            )));
        }
        if opts.segment_size_bytes < MIN_SEGMENT_BYTES || opts.segment_size_bytes > 1 << 32 {
            return Err(Error::InvalidOption(format!(
                "WAL segment size {} (expected 2 MiB to 4 GiB)",
                opts.segment_size_bytes
            )));
        }
        crate::directory::check_can_create(&vfs, dir)?;
        vfs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let dir_lock = crate::directory::lock_database_dir(&vfs, dir, LockMode::Exclusive)?;
        // Checked again under the lock: another creator may have won the race.
        crate::directory::check_can_create(&vfs, dir)?;
        // An earlier creation interrupted (its marker, no control file) left files no
        // commit ever reached: they are cleared. Then the marker goes first, durably.
        let marker = dir.join(crate::directory::CREATING_FILE);
        if crate::directory::creation_interrupted(&vfs, dir)? {
            crate::directory::clear_interrupted_creation(&vfs, dir)?;
        } else {
            // Empty: its name is all it holds, durable with the directory.
            vfs.open(&marker, crate::vfs::OpenMode::CreateOrOpen)
                .map_err(|e| Error::io(&marker, e))?;
            vfs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
        }
        let wal_dir = dir.join("wal");
        vfs.create_dir_all(&wal_dir)
            .map_err(|e| Error::io(&wal_dir, e))?;
        vfs.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
        let control = Control {
            page_size: opts.page_size as u32,
            protection: opts.protection,
            segment_size: opts.segment_size_bytes,
            checkpoint_seq: 0,
            generation: 1,
            database_id: new_database_id(opts.clock.as_ref(), dir),
            wal_compression: opts.wal_compression,
        };
        let start = WalPosition {
            segment_no: 1,
            offset: SEGMENT_HEADER_BYTES,
            lsn: 16,
        };
        let parts = Parts::open(dir, &opts, &control, dir_lock, None, &mut Vec::new())?;
        let wal = parts.open_wal(dir, &control, control.wal_compression, start, start.lsn)?;
        let mut catalog = Catalog::default();
        catalog.secret = draw_secret(dir)?;
        let inner = Inner::new(dir, &opts, control, parts, wal, catalog, 1, 0, start);
        let inner = Arc::new(inner);
        inner.checkpoint()?;
        // The control file is durable: the database exists, and the marker goes.
        crate::directory::remove_creation_marker(&vfs, dir)?;
        Ok(Database::start(inner, &opts, RecoveryReport::default()))
    }

    /// Opens the database in `dir`, recovering from a crash if there was one.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Database> {
        let dir = dir.as_ref();
        let vfs = opts.vfs.clone();
        let control_path = crate::control::control_path(dir);
        if !vfs
            .exists(&control_path)
            .map_err(|e| Error::io(&control_path, e))?
        {
            // Said before taking the lock, so that a directory that is not a database
            // gets no lock file.
            return Err(crate::directory::missing_control_error(&vfs, dir));
        }
        let dir_lock = crate::directory::lock_database_dir(&vfs, dir, LockMode::Exclusive)?;
        let mut control = Control::read(&vfs, dir)?;
        // A creation that crashed after its control file was durable left its marker:
        // the database exists, and the marker goes, so that a control file lost later
        // is never taken for an interrupted creation (whose files `create` clears).
        crate::directory::remove_creation_marker(&vfs, dir)?;
        let ckpt = CheckpointData::read(&vfs, dir, control.checkpoint_seq)?;
        let max_offset = control.segment_size - crate::wal::format::FRAME_HEADER_BYTES;
        if ckpt.database_id != control.database_id {
            return Err(Error::CorruptCheckpoint {
                path: checkpoint_path(dir, ckpt.seq),
                reason: format!(
                    "belongs to another database (id {:016x}; the control file's is {:016x})",
                    ckpt.database_id, control.database_id
                ),
            });
        }
        if ckpt.redo.offset < SEGMENT_HEADER_BYTES || ckpt.redo.offset > max_offset {
            return Err(Error::CorruptCheckpoint {
                path: checkpoint_path(dir, ckpt.seq),
                reason: format!("redo offset {} outside a WAL segment", ckpt.redo.offset),
            });
        }
        // A new generation before any WAL is written: frames left over from an earlier
        // run's torn tail can then never be mistaken for new ones.
        control.generation += 1;
        control.write(&vfs, dir)?;
        let r = crate::recovery::recover(dir, &opts, control, ckpt, dir_lock)?;
        let report = r.report;
        let mut catalog = r.catalog;
        // A database made before format 16 has no secret: one is drawn now, and the
        // checkpoint below keeps it before the database is handed out.
        if catalog.secret == [0; 32] {
            catalog.secret = draw_secret(dir)?;
        }
        let inner = Inner::new(
            dir,
            &opts,
            r.control,
            r.parts,
            r.wal,
            catalog,
            r.next_xid,
            r.checkpoint_seq,
            r.redo,
        );
        let inner = Arc::new(inner);
        inner.checkpoint()?;
        Ok(Database::start(inner, &opts, report))
    }

    /// Opens `dir` if it holds a database, else creates one there.
    pub fn open_or_create(dir: impl AsRef<Path>, opts: Options) -> Result<Database> {
        let dir = dir.as_ref();
        let control_path = crate::control::control_path(dir);
        if opts
            .vfs
            .exists(&control_path)
            .map_err(|e| Error::io(&control_path, e))?
            || (!crate::directory::database_files(&opts.vfs, dir)?.is_empty()
                && !crate::directory::creation_interrupted(&opts.vfs, dir)?)
        {
            // Database files without `control` are a damaged database: `open` says so
            // rather than a new database being made over them — unless they are what
            // an interrupted creation left, which `create` clears.
            Database::open(dir, opts)
        } else {
            Database::create(dir, opts)
        }
    }

    fn start(inner: Arc<Inner>, opts: &Options, recovery: RecoveryReport) -> Database {
        let background = if opts.background {
            let bg = inner.clone();
            std::thread::Builder::new()
                .name("walden-background".into())
                .spawn(move || bg.background_loop())
                .ok()
        } else {
            None
        };
        Database {
            handle: Arc::new(Handle {
                inner,
                background: Mutex::new(background),
                recovery,
            }),
        }
    }

    /// What recovery did when this database was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.handle.recovery
    }

    pub fn dir(&self) -> &Path {
        &self.handle.inner.dir
    }

    pub fn protection(&self) -> Protection {
        self.handle.inner.control.protection
    }

    pub fn page_size(&self) -> usize {
        self.handle.inner.control.page_size as usize
    }

    /// Starts a REPEATABLE READ transaction (snapshot isolation: one snapshot, taken
    /// now; a write that meets a row changed since fails with `SerializationFailure`).
    pub fn begin(&self) -> Transaction {
        self.begin_with(Isolation::RepeatableRead)
    }

    /// Starts a transaction at an isolation level (`engine/isolation.rs`). Its
    /// snapshot is taken now; a READ COMMITTED one takes a new one per statement
    /// (`Transaction::new_statement_snapshot`).
    pub fn begin_with(&self, isolation: Isolation) -> Transaction {
        Transaction::new(self.handle.inner.clone(), isolation)
    }

    /// Whether commits wait for their WAL to be durable unless a transaction says
    /// otherwise (the `synchronous_commit` option).
    pub fn synchronous_commit(&self) -> bool {
        self.handle.inner.synchronous_commit
    }

    /// Creates a table of the default kind (`Options::default_table_kind`), committed at
    /// once.
    pub fn create_table(&self, name: &str, schema: Schema) -> Result<()> {
        self.create_table_with(name, schema, self.handle.inner.default_table_kind)
    }

    /// Creates a table of the given kind (committed at once).
    pub fn create_table_with(&self, name: &str, schema: Schema, kind: TableKind) -> Result<()> {
        self.create_table_owning(name, schema, kind, Vec::new(), None)
    }

    /// Creates a table of the given kind with the sequences its columns own (serial and
    /// identity columns), committed at once (`Transaction::create_table_owning`).
    pub fn create_table_owning(
        &self,
        name: &str,
        schema: Schema,
        kind: TableKind,
        sequences: Vec<crate::sequence::SequenceDef>,
        acl: Option<(ObjectAcl, ObjectAcl)>,
    ) -> Result<()> {
        let mut tx = self.begin();
        tx.create_table_owning(name, schema, kind, sequences, acl)?;
        tx.commit()
    }

    /// Drops a table, committed at once (`Transaction::drop_table`).
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let mut tx = self.begin();
        tx.drop_table(name)?;
        tx.commit()
    }

    /// The catalog, read (a poisoned lock's catalog is still whole: every change to it
    /// is made under the write lock in one step).
    pub(super) fn catalog_read(&self) -> std::sync::RwLockReadGuard<'_, crate::catalog::Catalog> {
        self.handle
            .inner
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Table names, sorted.
    pub fn table_names(&self) -> Vec<String> {
        let cat = self.catalog_read();
        let mut v: Vec<String> = cat
            .by_name
            .keys()
            .filter(|n| !crate::catalog::is_hidden(n))
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// A table's schema.
    pub fn schema(&self, name: &str) -> Result<Schema> {
        Ok(self.handle.inner.table(name)?.schema().visible())
    }

    /// The stored position of each of a table's columns, in the order `schema` lists
    /// them (its place among every column the table has stored, dropped ones
    /// included): what column privileges are keyed by, which no ALTER TABLE changes.
    pub fn stored_positions(&self, name: &str) -> Result<Vec<u32>> {
        let t = self.handle.inner.table(name)?;
        Ok(t.schema()
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.dropped)
            .map(|(i, _)| i as u32)
            .collect())
    }

    /// A number that changes whenever a table or an index is created, dropped or
    /// replaced, and that no other catalog state in the process has had: a plan made
    /// against the catalog stays valid while this holds.
    pub fn catalog_generation(&self) -> u64 {
        self.catalog_read().generation
    }

    /// A table's id: stable for the table's life, never reused by another table or
    /// index of this database while it exists (the SQL layer's catalog OIDs derive from it).
    pub fn table_id(&self, name: &str) -> Result<u32> {
        Ok(self.handle.inner.table(name)?.id)
    }

    /// A table's kind.
    pub fn table_kind(&self, name: &str) -> Result<TableKind> {
        Ok(self.handle.inner.table(name)?.kind)
    }

    /// The kind `create_table` uses.
    pub fn default_table_kind(&self) -> TableKind {
        self.handle.inner.default_table_kind
    }

    /// Bytes the undo log holds now (undo tables' old values that a snapshot or a running
    /// transaction may still need).
    pub fn undo_bytes(&self) -> u64 {
        self.handle.inner.undo.live_bytes()
    }

    /// The undo log's bound (`Options::undo_limit_bytes`).
    pub fn undo_limit(&self) -> u64 {
        self.handle.inner.undo.limit()
    }

    /// The codec of WAL frames written from now on.
    pub fn wal_compression(&self) -> WalCompression {
        self.handle.inner.wal.compression()
    }

    /// Changes the codec of WAL frames (takes effect at the next write of the log) and
    /// records it in the control file, so that it survives a reopen.
    pub fn set_wal_compression(&self, codec: WalCompression) -> Result<()> {
        self.handle.inner.set_wal_compression(codec)
    }

    /// Changes the undo log's bound for changes from now on.
    pub fn set_undo_limit(&self, bytes: u64) {
        self.handle.inner.undo.set_limit(bytes)
    }

    /// The buffer pool's size (`Options::buffer_pool_bytes`, in whole pages).
    pub fn buffer_pool_bytes(&self) -> u64 {
        self.handle.inner.pool.capacity_bytes()
    }

    /// Bytes of undo in files now (undo past `undo_memory`).
    pub fn undo_spilled_bytes(&self) -> u64 {
        self.handle.inner.undo.spilled_bytes()
    }

    /// Where temporary files are made: a statement's sorts and groupings past
    /// `work_mem` (in `tmp/`, emptied when the database opens).
    pub fn temp_space(&self) -> crate::temp::TempSpace {
        self.handle.inner.temp.clone()
    }

    /// The undo kept in memory before older undo goes to files
    /// (`Options::undo_memory_bytes`).
    pub fn undo_memory(&self) -> u64 {
        self.handle.inner.undo.memory()
    }

    /// Changes the undo memory budget for undo appended from now on.
    pub fn set_undo_memory(&self, bytes: u64) {
        self.handle.inner.undo.set_memory(bytes)
    }

    /// Removes row versions no snapshot can see, then the index entries no version
    /// holds any more, and gives the pages left empty back; returns how many versions.
    pub fn vacuum(&self, name: &str) -> Result<u64> {
        self.vacuum_report(name).map(|r| r.versions_removed)
    }

    /// As `vacuum`, saying what it did (VACUUM VERBOSE). A table's toast relation is
    /// vacuumed with it (its versions and pages counted with the table's).
    pub fn vacuum_report(&self, name: &str) -> Result<VacuumReport> {
        let inner = &self.handle.inner;
        let table = inner.table(name)?;
        let mut tx = self.begin();
        let (mut n, mut freed) = self.vacuum_relation(&table, &table, &mut tx)?;
        if let Some(toast) = table.toast() {
            let (m, f) = self.vacuum_relation(&toast, &table, &mut tx)?;
            n += m;
            freed.extend(f);
        }
        tx.wrote = true;
        tx.commit()?;
        let given_back = || inner.stats.data_bytes_given_back.load(Ordering::Relaxed);
        let cut_before = given_back();
        if !freed.is_empty() {
            // Empty pages are never read again once no transaction of before runs:
            // their frames go unwritten if none does. Then the space goes back to the
            // file system (`PageStore::trim`): a checkpoint makes the pages free for
            // reuse and cuts the file's free end; in cow mode more are needed.
            inner.discard_unreachable(&freed);
            inner.checkpoint()?;
            if inner.control.protection == crate::store::Protection::Cow {
                // The second frees the locations; what it wrote past the compact end
                // (its map) moves down in the third, which then cuts the file.
                inner.checkpoint()?;
                inner.checkpoint()?;
            }
        }
        Ok(VacuumReport {
            versions_removed: n,
            pages_given_back: freed.len() as u64,
            file_bytes_cut: given_back() - cut_before,
            pages_left: table.page_count() as u64,
        })
    }

    /// Vacuums one table (or toast relation) in `tx`: removes the versions no snapshot
    /// can see, the index entries no version holds, and takes the pages left empty out
    /// of it (under `owner`'s DDL lock: the table's own, or for a toast relation its
    /// table's, whose statements write it). Returns the versions removed and the pages
    /// freed.
    fn vacuum_relation(
        &self,
        table: &Arc<Table>,
        owner: &Table,
        tx: &mut Transaction,
    ) -> Result<(u64, Vec<u64>)> {
        let inner = &self.handle.inner;
        let horizon = inner.txns.horizon();
        let xid = tx.snapshot.xid;
        // Pages a pass left empty: candidates to give back (judged again under the
        // table's DDL lock, `free_empty_pages`).
        let mut empty = std::collections::BTreeSet::new();
        let mut pass = |horizon: u64| -> Result<Vacuumed> {
            let (ctx, access) = (inner.access_ctx(), access::of(table.kind));
            let last = table.last_page();
            let mut total = Vacuumed::default();
            for page in table.page_list() {
                let v = access.vacuum_page(&ctx, table, page, last, horizon, xid, &mut tx.stats)?;
                total.removed += v.removed;
                total.waiting = total.waiting.max(v.waiting);
                if v.empty {
                    empty.insert(page);
                }
                inner.relieve_space();
            }
            Ok(total)
        };
        let first = pass(horizon)?;
        let mut n = first.removed;
        if first.waiting > 0 {
            // Old versions that a new version's delta still reads until a checkpoint
            // passes the update (docs/recovery.md rule 26).
            inner.checkpoint()?;
            n += pass(inner.txns.horizon().min(horizon))?.removed;
        }
        let empty: Vec<u64> = empty.into_iter().collect();
        let freed = self.vacuum_indexes(table, owner, &empty, tx)?;
        Ok((n, freed))
    }

    /// Runs a checkpoint now.
    pub fn checkpoint(&self) -> Result<()> {
        self.handle.inner.checkpoint()
    }

    /// Makes all WAL written so far durable (for asynchronous commit).
    pub fn flush_wal(&self) -> Result<()> {
        self.handle.inner.wal.flush_all()
    }

    /// Makes the WAL durable up to `lsn` (what `Database::nextval` returned, for a
    /// caller whose transaction has already ended).
    pub fn flush_wal_to(&self, lsn: u64) -> Result<()> {
        self.handle.inner.wal.flush(lsn, true)
    }

    /// The global counters.
    pub fn stats(&self) -> StatsSnapshot {
        self.handle.inner.stats.snapshot()
    }

    /// Size of the data file in bytes.
    pub fn data_file_bytes(&self) -> Result<u64> {
        self.handle.inner.store.file_bytes()
    }

    /// Size of a table: its pages times the page size (the pages it owns, wherever
    /// copy-on-write placed them in the data file).
    pub fn table_bytes(&self, name: &str) -> Result<u64> {
        let t = self.handle.inner.table(name)?;
        Ok(t.page_count() as u64 * self.handle.inner.control.page_size as u64)
    }

    /// Size of a table's toast relation, where its values stored out of line are: its
    /// pages times the page size (0 when it has none).
    pub fn toast_bytes(&self, name: &str) -> Result<u64> {
        let t = self.handle.inner.table(name)?;
        let pages = t.toast().map_or(0, |x| x.page_count() as u64);
        Ok(pages * self.handle.inner.control.page_size as u64)
    }

    /// Data file locations: (in the file, free for reuse, waiting for a checkpoint).
    /// Free and waiting are always 0 outside cow mode.
    pub fn data_file_locations(&self) -> (u64, u64, u64) {
        self.handle.inner.store.location_counts()
    }

    /// True once a write or fsync failed: the database refuses writes until reopened.
    pub fn is_poisoned(&self) -> bool {
        self.handle.inner.poison.is_set()
    }

    /// The current end of the WAL.
    pub fn wal_insert_lsn(&self) -> u64 {
        self.handle.inner.wal.insert_lsn()
    }

    /// Checkpoints (if the database can still write) and stops background work (for
    /// every handle: other clones go on working, without the background thread).
    pub fn close(self) -> Result<()> {
        self.stop_background();
        if self.handle.inner.poison.is_set() {
            return self.handle.inner.poison.check();
        }
        self.handle.inner.checkpoint()
    }

    fn stop_background(&self) {
        self.handle.stop_background();
    }
}

/// What one VACUUM did (`Database::vacuum_report`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VacuumReport {
    /// Row versions removed.
    pub versions_removed: u64,
    /// Empty pages taken out of the table, free for any relation.
    pub pages_given_back: u64,
    /// Bytes cut from the data file's end by the checkpoints it ran (others running
    /// meanwhile may add theirs).
    pub file_bytes_cut: u64,
    /// The table's pages after it.
    pub pages_left: u64,
}

impl Handle {
    fn stop_background(&self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
        if let Some(h) = lock(&self.background).take() {
            let _ = h.join();
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.stop_background();
        if !self.inner.poison.is_set() && !self.inner.synchronous_commit {
            let _ = self.inner.wal.flush_all();
        }
    }
}

impl Inner {
    /// After a drop committed: frees the buffer frames of the dropped relation's pages
    /// without writing them (they are never read again: the catalog no longer names
    /// them, and they are reused only by a new relation's page making, which overwrites
    /// them whole). Only when nothing can reach them
    /// any more: no statement still holds the relation (`held`: a scan begun before the
    /// drop), and no transaction is running (one might have changed the table and
    /// would read its pages to roll back). Otherwise they are written when evicted, as
    /// before.
    fn release_dropped(&self, pages: &[u64], held: bool) {
        // A relation a statement still holds keeps its pages, and its frames are written
        // at eviction as any: that statement may read them yet.
        if held {
            return;
        }
        // Frames are not dropped while a checkpoint runs: one whose redo point is fixed
        // takes every page changed before it to disk, and recovery from it would replay
        // the dropped table's later records onto a page missing the earlier ones. The
        // checkpoint lock is held through the discard (tried, never waited for: the
        // caller holds the catalog's, which a checkpoint takes after it).
        self.discard_unreachable(pages);
        // The page numbers go back to the store, for relations made after a checkpoint
        // allows it (docs/recovery.md rule 26).
        self.store
            .free_pages(pages, self.wal.insert_lsn(), self.txns.next_xid());
    }

    /// Frees the buffer frames of pages nothing reads again (a dropped relation's, or
    /// pages VACUUM gave back), unwritten, if no transaction runs (one begun before
    /// might read them) and no checkpoint runs (see `release_dropped`).
    fn discard_unreachable(&self, pages: &[u64]) {
        let idle = self.checkpoint.try_lock();
        if idle.is_ok() && self.txns.none_active() {
            self.pool.discard(pages);
        }
    }

    /// Puts the parts together. `redo` is the redo position of the last complete
    /// checkpoint (`checkpoint_seq`).
    #[allow(clippy::too_many_arguments)]
    fn new(
        dir: &Path,
        opts: &Options,
        control: Control,
        parts: Parts,
        wal: Arc<Wal>,
        catalog: Catalog,
        next_xid: u64,
        checkpoint_seq: u64,
        redo: WalPosition,
    ) -> Inner {
        let parts_stats = parts.stats.clone();
        let parts_vfs = parts.vfs.clone();
        Inner {
            _dir_lock: parts.dir_lock,
            dir: dir.to_path_buf(),
            vfs: parts.vfs,
            clock: opts.clock.clone(),
            control,
            synchronous_commit: opts.synchronous_commit,
            checkpoint_wal_bytes: opts.checkpoint_wal_bytes.max(1 << 20),
            checkpoint_interval_millis: opts.checkpoint_interval_secs.max(1) * 1000,
            poison: parts.poison,
            stats: parts.stats,
            store: parts.store,
            pool: parts.pool,
            wal,
            clog: parts.clog,
            txns: TxnManager::new(next_xid),
            catalog: RwLock::new(catalog),
            temp: crate::temp::TempSpace::open(
                parts_vfs.clone(),
                dir.join(crate::temp::TEMP_DIR),
                parts_stats.clone(),
            ),
            txn_undo_memory_bytes: opts.txn_undo_memory_bytes,
            commit_fence: RwLock::new(()),
            checkpoint: Mutex::new(CheckpointState {
                seq: checkpoint_seq,
                redo,
                redo_written: 0,
                last_millis: opts.clock.now_millis(),
                generation: control.generation,
            }),
            shutdown: AtomicBool::new(false),
            default_table_kind: opts.default_table_kind,
            threads: opts.background,
            undo: Box::new(SegmentedUndoLog::new(
                opts.undo_limit_bytes,
                opts.undo_memory_bytes,
                parts_stats,
                Some(SpillDir {
                    vfs: parts_vfs,
                    dir: dir.join(UNDO_DIR),
                }),
            )),
            undo_writers: Mutex::new(UndoWriters {
                last_redo: redo,
                active: BTreeMap::new(),
            }),
        }
    }

    pub(super) fn access_ctx(&self) -> Ctx<'_> {
        Ctx {
            pool: &self.pool,
            wal: &self.wal,
            clog: &self.clog,
            txns: &self.txns,
            undo: self.undo.as_ref(),
        }
    }

    /// Notes that `xid` is about to change an undo table for the first time.
    fn register_undo_writer(&self, xid: u64) {
        let mut w = lock(&self.undo_writers);
        let at = w.last_redo;
        w.active.entry(xid).or_insert(at);
    }

    /// After `xid` ended: forget it, and discard the undo nobody needs any more.
    fn undo_writer_ended(&self, xid: u64, registered: bool) {
        if registered {
            lock(&self.undo_writers).active.remove(&xid);
        }
        self.undo.discard(&mut || self.txns.horizon());
    }

    /// Where recovery must start reading to roll back the undo-table writers running now:
    /// `redo`, or the position each registered when it began writing, if earlier.
    fn undo_start(&self, redo: WalPosition) -> WalPosition {
        let w = lock(&self.undo_writers);
        w.active
            .values()
            .copied()
            .chain(std::iter::once(redo))
            .min_by_key(|p| p.lsn)
            .unwrap_or(redo)
    }

    fn table(&self, name: &str) -> Result<Arc<Table>> {
        let cat = self.catalog.read().unwrap_or_else(|e| e.into_inner());
        cat.by_name
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchTable(name.to_string()))
    }
}

/// Longest table or column name, in bytes.
/// The directory of spilled undo segments (`undo_log::segments`), emptied at open.
pub const UNDO_DIR: &str = "undo";

const MAX_NAME_BYTES: usize = 255;
/// Most columns a table can have.
const MAX_COLUMNS: usize = 1600;

fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(Error::InvalidOption(format!(
            "{what} name {:?} must be 1 to {MAX_NAME_BYTES} bytes",
            name.chars().take(40).collect::<String>()
        )));
    }
    // (A NUL byte marks the hidden names of relations being dropped.)
    if name.contains('\0') {
        return Err(Error::InvalidOption(format!(
            "{what} name {:?} holds a NUL byte",
            name.chars().take(40).collect::<String>()
        )));
    }
    Ok(())
}

/// 32 bytes from the operating system's random source (getrandom(2)), for the
/// catalog's secret: unlike the injected `SimRng`, it must not be guessable.
fn draw_secret(dir: &Path) -> Result<[u8; 32]> {
    let mut out = [0u8; 32];
    let mut filled = 0;
    while filled < out.len() {
        let rest = &mut out[filled..];
        // SAFETY: the pointer and length name `rest`, which lives across the call.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::io(dir, e));
        }
        filled += n as usize;
    }
    Ok(out)
}

/// A database id for a new database: from the injected clock, the directory and a
/// process-wide counter, so two databases made at once still differ. It only tells one
/// database's files from another's; nothing depends on it being secret.
fn new_database_id(clock: &dyn Clock, dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    static CREATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    clock.now_millis().hash(&mut h);
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
        .hash(&mut h);
    dir.hash(&mut h);
    CREATED.fetch_add(1, Ordering::Relaxed).hash(&mut h);
    std::process::id().hash(&mut h);
    h.finish()
}
