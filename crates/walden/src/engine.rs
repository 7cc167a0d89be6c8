//! The public `Database`: creating and opening (with crash recovery), transactions,
//! tables, checkpoints, vacuum, accounting, and the background checkpointer.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::buffer::BufferPool;
use crate::catalog::{Catalog, Table, TableKind};
use crate::clock::{Clock, RealClock};
use crate::clog::{Clog, XidStatus};
use crate::control::{checkpoint_path, CheckpointData, Control};
use crate::error::{Error, Result};
use crate::heap::{self, HeapCtx, TxnView};
use crate::page::{DEFAULT_PAGE_SIZE, PAGE_SIZES};
use crate::poison::Poison;
use crate::schema::{Row, Schema, Value};
use crate::stats::{Stats, StatsSnapshot, TxnStats};
use crate::store::{PageStore, Protection, SpacePressure};
use crate::txn::{Snapshot, TxnManager};
use crate::undo::{self, CrashUndo, TxnUndo, UndoCtx, UndoStore};
use crate::vfs::{write_file_atomically, FileLock, LockMode, RealVfs, Vfs};
use crate::wal::format::{segment_name, MIN_SEGMENT_BYTES, SEGMENT_HEADER_BYTES};
use crate::wal::{Record, RecordKind, Wal, WalCompression, WalPosition, WalReader};
use crate::RowId;

/// Settings of a database. Those marked "at creation" are stored in the control file and
/// ignored when opening an existing database.
#[derive(Clone)]
pub struct Options {
    /// At creation: 4096, 8192 (default), 16384 or 32768.
    pub page_size: usize,
    /// At creation: torn-page protection (default `cow`).
    pub protection: Protection,
    /// At creation: WAL segment size (default 16 MiB).
    pub segment_size_bytes: u64,
    /// Buffer pool capacity (default 256 MiB).
    pub buffer_pool_bytes: u64,
    /// Wait for the WAL to be durable at commit (default true).
    pub synchronous_commit: bool,
    /// Checkpoint after this much WAL (default 1 GiB).
    pub checkpoint_wal_bytes: u64,
    /// Checkpoint after this long (default 300 s).
    pub checkpoint_interval_secs: u64,
    /// Run the background checkpointer and WAL flusher (default true).
    pub background: bool,
    /// The kind of a table created without naming one (default `undo`: in place, the
    /// least WAL and no table growth on update; README.md, "Defaults").
    pub default_table_kind: TableKind,
    /// Most undo the undo log may hold at once (default 1 GiB); a change that would need
    /// more fails with `Error::UndoFull`.
    pub undo_limit_bytes: u64,
    /// Codec of the WAL frames written (default zstd); any codec reads any log.
    pub wal_compression: WalCompression,
    /// The operator's way out (`walden recover --accept-data-loss`, like PostgreSQL's
    /// pg_resetwal): open after damage that a normal open refuses — the log is cut
    /// where it is damaged, later segments are set aside as `*.lost`, unreadable
    /// transaction statuses count as not committed — and say what was dropped in the
    /// recovery report and in `data-loss.log`. Default false; never set it to get past
    /// an error you have not read.
    pub accept_data_loss: bool,
    pub vfs: Arc<dyn Vfs>,
    pub clock: Arc<dyn Clock>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: DEFAULT_PAGE_SIZE,
            protection: Protection::Cow,
            segment_size_bytes: 16 << 20,
            buffer_pool_bytes: 256 << 20,
            synchronous_commit: true,
            checkpoint_wal_bytes: 1 << 30,
            checkpoint_interval_secs: 300,
            background: true,
            default_table_kind: TableKind::Undo,
            undo_limit_bytes: 1 << 30,
            wal_compression: WalCompression::default(),
            accept_data_loss: false,
            vfs: Arc::new(RealVfs),
            clock: Arc::new(RealClock::default()),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("page_size", &self.page_size)
            .field("protection", &self.protection)
            .field("segment_size_bytes", &self.segment_size_bytes)
            .field("buffer_pool_bytes", &self.buffer_pool_bytes)
            .field("synchronous_commit", &self.synchronous_commit)
            .field("default_table_kind", &self.default_table_kind)
            .field("undo_limit_bytes", &self.undo_limit_bytes)
            .field("wal_compression", &self.wal_compression)
            .finish_non_exhaustive()
    }
}

/// What recovery did when the database was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub records_replayed: u64,
    pub transactions_rolled_back: u64,
    pub end_lsn: u64,
    /// With `Options::accept_data_loss`: what was dropped, one sentence each (empty when
    /// nothing was).
    pub data_loss: Vec<String>,
}

struct CheckpointState {
    seq: u64,
    /// Redo position of the last complete checkpoint.
    redo: WalPosition,
    last_millis: u64,
    generation: u64,
}

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
    /// Commits hold it shared from their commit record to their clog bit; a checkpoint
    /// takes it exclusively to set its redo point.
    commit_fence: RwLock<()>,
    /// One checkpoint at a time; guards the checkpoint sequence and last redo point.
    checkpoint: Mutex<CheckpointState>,
    shutdown: AtomicBool,
    default_table_kind: TableKind,
    /// The undo log of undo tables.
    undo: UndoStore,
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
        let inner = Inner::new(
            dir,
            &opts,
            control,
            parts,
            wal,
            Catalog::default(),
            1,
            0,
            start,
        );
        let inner = Arc::new(inner);
        inner.checkpoint()?;
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
        let (inner, report) = Inner::recover(dir, &opts, control, ckpt, dir_lock)?;
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
            || !crate::directory::database_files(&opts.vfs, dir)?.is_empty()
        {
            // Database files without `control` are a damaged database: `open` says so
            // rather than a new database being made over them.
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

    /// Starts a transaction.
    pub fn begin(&self) -> Transaction {
        Transaction {
            db: self.handle.inner.clone(),
            snapshot: self.handle.inner.txns.begin(),
            cid: 0,
            stats: TxnStats::default(),
            wrote: false,
            finished: false,
            synchronous_commit: self.handle.inner.synchronous_commit,
            undo: TxnUndo::default(),
            undo_registered: false,
        }
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
        check_name("table", name)?;
        if schema.columns.is_empty() || schema.columns.len() > MAX_COLUMNS {
            return Err(Error::InvalidOption(format!(
                "a table has 1 to {MAX_COLUMNS} columns"
            )));
        }
        let mut seen = HashSet::new();
        for c in &schema.columns {
            check_name("column", &c.name)?;
            if !seen.insert(c.name.as_str()) {
                return Err(Error::InvalidOption(format!(
                    "column {:?} appears twice",
                    c.name
                )));
            }
        }
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        if cat.by_name.contains_key(name) {
            return Err(Error::TableExists(name.to_string()));
        }
        let id = cat.next_table_id.max(1);
        let mut tx = self.begin();
        let rec = Record::CreateTable {
            table: id,
            name: name.to_string(),
            schema: schema.clone(),
            kind: kind.code(),
        };
        tx.log(&rec)?;
        tx.commit_inner()?;
        cat.insert(Table::new(id, name, schema, kind, Vec::new()));
        Ok(())
    }

    /// Drops a table (committed at once). Its pages are not reused yet.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let inner = &self.handle.inner;
        let mut cat = inner.catalog.write().unwrap_or_else(|e| e.into_inner());
        let id = cat
            .by_name
            .get(name)
            .map(|t| t.id)
            .ok_or_else(|| Error::NoSuchTable(name.to_string()))?;
        let mut tx = self.begin();
        tx.log(&Record::DropTable { table: id })?;
        tx.commit_inner()?;
        cat.remove(id);
        Ok(())
    }

    /// Table names, sorted.
    pub fn table_names(&self) -> Vec<String> {
        let cat = self
            .handle
            .inner
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<String> = cat.by_name.keys().cloned().collect();
        v.sort();
        v
    }

    /// A table's schema.
    pub fn schema(&self, name: &str) -> Result<Schema> {
        Ok(self.handle.inner.table(name)?.schema.clone())
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

    /// Removes row versions no snapshot can see; returns how many.
    pub fn vacuum(&self, name: &str) -> Result<u64> {
        let inner = &self.handle.inner;
        let table = inner.table(name)?;
        let horizon = inner.txns.horizon();
        let mut tx = self.begin();
        let ctx = inner.heap_ctx();
        let n = match table.kind {
            TableKind::Heap => {
                let (n, waiting) =
                    heap::vacuum(&ctx, &table, horizon, tx.snapshot.xid, &mut tx.stats)?;
                if waiting == 0 {
                    n
                } else {
                    // Old versions that a new version's delta still reads until a
                    // checkpoint passes the update (docs/recovery.md rule 26).
                    inner.checkpoint()?;
                    let horizon = inner.txns.horizon().min(horizon);
                    n + heap::vacuum(&ctx, &table, horizon, tx.snapshot.xid, &mut tx.stats)?.0
                }
            }
            TableKind::Undo => {
                heap::prune_pages(&ctx, &table, tx.snapshot.xid, &mut tx.stats, &|p| {
                    undo::dead_slots(&ctx, p, horizon)
                })?
            }
        };
        tx.wrote = true;
        tx.commit()?;
        Ok(n)
    }

    /// Runs a checkpoint now.
    pub fn checkpoint(&self) -> Result<()> {
        self.handle.inner.checkpoint()
    }

    /// Makes all WAL written so far durable (for asynchronous commit).
    pub fn flush_wal(&self) -> Result<()> {
        self.handle.inner.wal.flush_all()
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
        Ok(t.page_list().len() as u64 * self.handle.inner.control.page_size as u64)
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

/// The parts of an open database below the WAL, built the same way for a new database
/// and for recovery.
struct Parts {
    dir_lock: Box<dyn FileLock>,
    vfs: Arc<dyn Vfs>,
    poison: Arc<Poison>,
    stats: Arc<Stats>,
    store: Arc<PageStore>,
    pool: BufferPool,
    clog: Clog,
}

impl Parts {
    fn open(
        dir: &Path,
        opts: &Options,
        control: &Control,
        dir_lock: Box<dyn FileLock>,
        ckpt: Option<&mut CheckpointData>,
        loss: &mut Vec<String>,
    ) -> Result<Parts> {
        let vfs = opts.vfs.clone();
        let poison = Arc::new(Poison::default());
        let stats = Arc::new(Stats::default());
        let data_path = dir.join("data");
        let (page_size, protection) = (control.page_size as usize, control.protection);
        let (store, clog) = match ckpt {
            None => (
                PageStore::create(
                    &vfs,
                    &data_path,
                    control.database_id,
                    page_size,
                    protection,
                    stats.clone(),
                )?,
                Clog::create(dir),
            ),
            Some(c) => {
                let store = PageStore::open(
                    &vfs,
                    &data_path,
                    control.database_id,
                    page_size,
                    protection,
                    c.next_page,
                    c.data_file_bytes,
                    std::mem::take(&mut c.chunk_locations),
                    stats.clone(),
                )?;
                let clog = if opts.accept_data_loss {
                    let (clog, lost) = Clog::load_accepting_loss(
                        &vfs,
                        dir,
                        control.database_id,
                        c.redo.lsn,
                        c.next_xid,
                    )?;
                    loss.extend(lost);
                    clog
                } else {
                    Clog::load(&vfs, dir, control.database_id, c.redo.lsn, c.next_xid)?
                };
                (store, clog)
            }
        };
        let store = Arc::new(store);
        let pool = BufferPool::new(opts.buffer_pool_bytes, store.clone(), poison.clone());
        Ok(Parts {
            dir_lock,
            vfs,
            poison,
            stats,
            store,
            pool,
            clog,
        })
    }

    /// Opens the WAL for appending at `end` and connects it to the buffer pool.
    fn open_wal(
        &self,
        dir: &Path,
        control: &Control,
        compression: WalCompression,
        end: WalPosition,
        redo_lsn: u64,
    ) -> Result<Arc<Wal>> {
        let wal = Arc::new(Wal::open(
            self.vfs.clone(),
            &dir.join("wal"),
            control.segment_identity(),
            control.protection == Protection::FullPage,
            compression,
            control.generation,
            end,
            redo_lsn,
            self.poison.clone(),
            self.stats.clone(),
        )?);
        self.pool.set_wal(wal.clone());
        Ok(wal)
    }
}

impl Inner {
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
            commit_fence: RwLock::new(()),
            checkpoint: Mutex::new(CheckpointState {
                seq: checkpoint_seq,
                redo,
                last_millis: opts.clock.now_millis(),
                generation: control.generation,
            }),
            shutdown: AtomicBool::new(false),
            default_table_kind: opts.default_table_kind,
            undo: UndoStore::new(opts.undo_limit_bytes, parts_stats),
            undo_writers: Mutex::new(UndoWriters {
                last_redo: redo,
                active: BTreeMap::new(),
            }),
        }
    }

    fn heap_ctx(&self) -> HeapCtx<'_> {
        HeapCtx {
            pool: &self.pool,
            wal: &self.wal,
            clog: &self.clog,
            txns: &self.txns,
            hook: self,
        }
    }

    fn undo_ctx(&self) -> UndoCtx<'_> {
        UndoCtx {
            heap: self.heap_ctx(),
            store: &self.undo,
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
        self.undo.discard(|| self.txns.horizon());
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

    /// Cow mode: when many rewritten locations wait for a checkpoint, make the map
    /// durable now (in the calling thread, unless a checkpoint is already running), so
    /// that a long statement cannot grow the data file much past its live pages.
    fn relieve_space(&self) {
        let pressure = self.store.space_pressure();
        let guard = match pressure {
            SpacePressure::None => return,
            // Another thread is checkpointing: it will free the space.
            SpacePressure::Soft => match self.checkpoint.try_lock() {
                Ok(g) => g,
                Err(_) => return,
            },
            // Too much waits: hold this writer back until the space is freed.
            SpacePressure::Hard => lock(&self.checkpoint),
        };
        let mut cp = guard;
        if self.poison.is_set() || self.store.space_pressure() == SpacePressure::None {
            return;
        }
        let redo = cp.redo;
        let r = self.map_checkpoint(&mut cp, redo);
        let _ = self.poison.guard(r);
    }

    fn table(&self, name: &str) -> Result<Arc<Table>> {
        let cat = self.catalog.read().unwrap_or_else(|e| e.into_inner());
        cat.by_name
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NoSuchTable(name.to_string()))
    }

    /// Crash recovery: replay the WAL from the checkpoint's redo point, then roll back
    /// the transactions that did not commit (docs/recovery.md).
    fn recover(
        dir: &Path,
        opts: &Options,
        control: Control,
        mut ckpt: CheckpointData,
        dir_lock: Box<dyn FileLock>,
    ) -> Result<(Inner, RecoveryReport)> {
        let wal_dir = dir.join("wal");
        sync_wal_from(&opts.vfs, &wal_dir, ckpt.undo_start.segment_no)?;
        let mut loss = Vec::new();
        let parts = Parts::open(dir, opts, &control, dir_lock, Some(&mut ckpt), &mut loss)?;
        let (store, pool, clog) = (&parts.store, &parts.pool, &parts.clog);
        // Reading starts at the undo start (at or before the redo point): records before
        // the redo point only tell which undo-table changes running transactions made.
        let mut reader = WalReader::new(
            opts.vfs.clone(),
            &wal_dir,
            control.segment_identity(),
            ckpt.undo_start,
        )?;
        if opts.accept_data_loss {
            reader.accept_data_loss();
        }
        let mut seen = BTreeSet::new();
        let mut finished = HashSet::new();
        let mut max_xid = 0u64;
        let mut report = RecoveryReport::default();
        let mut catalog = ckpt.catalog;
        let mut crash_undo = CrashUndo::default();
        let mut checkpoint_record_found = false;
        while let Some(rec) = reader.next()? {
            crash_undo.note(rec.lsn, rec.xid, &rec.record);
            if rec.lsn < ckpt.redo.lsn {
                if matches!(rec.record, Record::Commit | Record::Abort) {
                    finished.insert(rec.xid);
                }
                continue;
            }
            report.records_replayed += 1;
            let end = rec.lsn + rec.len as u64;
            if rec.xid >= MAX_XID {
                return Err(Error::CorruptWal {
                    path: wal_dir.clone(),
                    lsn: rec.lsn,
                    reason: format!("transaction id {} out of range", rec.xid),
                });
            }
            if rec.xid != 0 {
                seen.insert(rec.xid);
                max_xid = max_xid.max(rec.xid);
            }
            match &rec.record {
                Record::Commit => {
                    clog.set(rec.xid, XidStatus::Committed);
                    finished.insert(rec.xid);
                }
                Record::Abort => {
                    clog.set(rec.xid, XidStatus::Aborted);
                    finished.insert(rec.xid);
                }
                Record::CreateTable { table, .. } if *table >= u32::MAX - 1 => {
                    return Err(Error::CorruptWal {
                        path: wal_dir.clone(),
                        lsn: rec.lsn,
                        reason: format!("table id {table} out of range"),
                    });
                }
                Record::CreateTable {
                    table,
                    name,
                    schema,
                    kind,
                } => {
                    if !catalog.by_id.contains_key(table) && !catalog.by_name.contains_key(name) {
                        let kind = TableKind::from_code(*kind).unwrap_or_default();
                        catalog.insert(Table::new(*table, name, schema.clone(), kind, Vec::new()));
                    }
                }
                Record::DropTable { table } => {
                    catalog.remove(*table);
                }
                Record::Checkpoint { redo_lsn, .. } => {
                    checkpoint_record_found |= *redo_lsn == ckpt.redo.lsn;
                }
                r => {
                    if let Some(page) = r.page() {
                        check_redo_page(r, page, store).map_err(|reason| Error::CorruptWal {
                            path: wal_dir.clone(),
                            lsn: rec.lsn,
                            reason,
                        })?;
                        store.note_page_no(page);
                        match r {
                            Record::UndoInsert { .. }
                            | Record::UndoChange { .. }
                            | Record::UndoRevert { .. } => undo::redo(pool, r, rec.xid, end)?,
                            _ => heap::redo(pool, r, rec.xid, end)?,
                        }
                        if let Record::HeapInit { page, table } = r {
                            if let Some(t) = catalog.by_id.get(table) {
                                t.add_page(*page);
                            }
                        }
                    }
                }
            }
        }
        let mut end = reader.end_position();
        if let Some(why) = reader.dropped() {
            loss.push(format!(
                "the WAL from LSN {} on (segment {}, offset {}) was dropped: {why}",
                end.lsn, end.segment_no, end.offset
            ));
        }
        if opts.accept_data_loss {
            set_aside_segments_after(&opts.vfs, &wal_dir, end.segment_no, &mut loss)?;
        }
        if !checkpoint_record_found && opts.accept_data_loss {
            loss.push(format!(
                "the log ended without the record of checkpoint {} (redo LSN {}): changes the checkpoint covered may be missing from pages",
                ckpt.seq, ckpt.redo.lsn
            ));
        } else if !checkpoint_record_found {
            // The checkpoint logs its record, durably, before its file is written: a
            // log that ends without it has lost WAL the checkpoint relies on.
            return Err(Error::CorruptWal {
                path: wal_dir.join(segment_name(end.segment_no)),
                lsn: end.lsn,
                reason: format!(
                    "the log ends (segment {}, offset {}) without the record of checkpoint {} (redo LSN {}): WAL the checkpoint relies on is missing or damaged",
                    end.segment_no, end.offset, ckpt.seq, ckpt.redo.lsn
                ),
            });
        }
        if opts.accept_data_loss {
            // New WAL must start past every change a page already holds, or redo would
            // skip new records on such pages (pg_resetwal does the same).
            let max_page_lsn = store.max_page_lsn_in_file()?;
            if max_page_lsn > end.lsn {
                loss.push(format!(
                    "pages hold changes up to LSN {max_page_lsn}, past the end of the readable log (LSN {}): they are kept as they are, and the log goes on from LSN {max_page_lsn}",
                    end.lsn
                ));
                end.lsn = max_page_lsn;
            }
        } else {
            pool.check_pages_read_before(end.lsn)?;
        }
        report.end_lsn = end.lsn;
        let next_xid = ckpt.next_xid.max(max_xid + 1);
        let wal = parts.open_wal(dir, &control, control.wal_compression, end, ckpt.redo.lsn)?;
        // Undo tables: take back what running transactions changed (heap tables need
        // nothing: their versions are invisible once the transaction counts as aborted).
        for xid in crash_undo.pending() {
            if !finished.contains(&xid) {
                seen.insert(xid);
            }
        }
        crash_undo.roll_back(&parts.pool, &wal, &finished)?;
        let mut rolled_back = Vec::new();
        for &xid in seen.iter().filter(|x| !finished.contains(x)) {
            wal.append(RecordKind::Abort, xid, &[], None)?;
            parts.clog.set(xid, XidStatus::Aborted);
            report.transactions_rolled_back += 1;
            rolled_back.push(xid);
        }
        if !loss.is_empty() && !rolled_back.is_empty() {
            loss.push(format!(
                "transactions rolled back because their end was not in the readable log: xids {rolled_back:?}"
            ));
        }
        if !loss.is_empty() {
            record_data_loss(&opts.vfs, dir, control.generation, &loss)?;
        }
        report.data_loss = loss;
        let inner = Inner::new(
            dir, opts, control, parts, wal, catalog, next_xid, ckpt.seq, ckpt.redo,
        );
        Ok((inner, report))
    }

    fn set_wal_compression(&self, codec: WalCompression) -> Result<()> {
        // Under the checkpoint lock: checkpoints write the control file too.
        let cp = lock(&self.checkpoint);
        self.poison.check()?;
        self.wal.set_compression(codec);
        let control = Control {
            checkpoint_seq: cp.seq,
            generation: cp.generation,
            wal_compression: codec,
            ..self.control
        };
        let r = control.write(&self.vfs, &self.dir);
        self.poison.guard(r)
    }

    /// A fuzzy checkpoint (docs/recovery.md, rule 5): writers keep going throughout.
    fn checkpoint(&self) -> Result<()> {
        let mut cp = lock(&self.checkpoint);
        self.poison.check()?;
        let r = self.checkpoint_locked(&mut cp);
        self.poison.guard(r)
    }

    fn checkpoint_locked(&self, cp: &mut CheckpointState) -> Result<()> {
        // Read before the redo point is fixed: every transaction below it has ended, so
        // all its records lie before the redo point (docs/recovery.md rule 26).
        let ended_below = self.txns.horizon();
        let redo = {
            let _fence = self.commit_fence.write().unwrap_or_else(|e| e.into_inner());
            self.wal.begin_checkpoint()?
        };
        let next_xid = self.txns.next_xid();
        // The checkpoint's record, durable before its file exists: recovery from this
        // checkpoint insists on finding it, which tells a log that lost WAL from one
        // that ends where the checkpoint left it (docs/recovery.md rule 16).
        let mut payload = Vec::new();
        Record::Checkpoint {
            redo_lsn: redo.lsn,
            next_xid,
        }
        .encode_payload(&mut payload);
        let appended = self.wal.append(RecordKind::Checkpoint, 0, &payload, None)?;
        self.wal.flush(appended.end_lsn, true)?;
        // In cow mode a rewritten page's old location stays taken until a checkpoint
        // that no longer references it completes. Writing every dirty page before one
        // completes would need twice the space of the pages written; so when many
        // locations wait, a map-only checkpoint (same redo point as the last complete
        // one) frees them part way.
        let prev_redo = cp.redo;
        self.pool.flush_all_with(&mut || {
            if self.store.space_pressure() != SpacePressure::None {
                self.map_checkpoint(cp, prev_redo)?;
            }
            Ok(())
        })?;
        // A write or fsync may have failed in another thread meanwhile: then nothing
        // more may be written (docs/recovery.md rule 20). Checked before each step.
        self.poison.check()?;
        self.clog
            .write_out(&self.vfs, &self.stats, self.control.database_id, redo.lsn)?;
        let undo_start = self.write_checkpoint(cp, redo, next_xid)?;
        cp.redo = redo;
        cp.last_millis = self.clock.now_millis();
        lock(&self.undo_writers).last_redo = redo;
        self.wal
            .recycle_before(redo.segment_no.min(undo_start.segment_no))?;
        self.txns.set_checkpointed_xid(ended_below);
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Makes the current page map durable under a new checkpoint file with the redo
    /// point of the last complete checkpoint, so that locations freed since the last
    /// capture can be reused. Valid because every page the map points at is durable and
    /// consistent with the WAL, and redo skips what a page already holds.
    fn map_checkpoint(&self, cp: &mut CheckpointState, redo: WalPosition) -> Result<()> {
        let next_xid = self.txns.next_xid();
        self.write_checkpoint(cp, redo, next_xid).map(|_| ())
    }

    /// Captures and writes the map (cow), syncs the data file, writes the checkpoint file
    /// and points the control file at it, then frees what no checkpoint references now.
    /// Returns the undo start it recorded.
    fn write_checkpoint(
        &self,
        cp: &mut CheckpointState,
        redo: WalPosition,
        next_xid: u64,
    ) -> Result<WalPosition> {
        // Read after the redo point is fixed: a writer that registers later logs its
        // first change after the redo point (docs/recovery.md rule 22).
        let undo_start = self.undo_start(redo);
        self.poison.check()?;
        let mut capture =
            (self.control.protection == Protection::Cow).then(|| self.store.capture_map());
        let chunk_locations = match &mut capture {
            Some(c) => self.store.write_map(c)?,
            None => Vec::new(),
        };
        self.poison.check()?;
        self.store.sync()?;
        let seq = cp.seq + 1;
        let bytes = {
            let cat = self.catalog.read().unwrap_or_else(|e| e.into_inner());
            let data = CheckpointData {
                seq,
                database_id: self.control.database_id,
                redo,
                undo_start,
                next_xid,
                next_page: self.store.next_page_no(),
                data_file_bytes: self.store.file_len_bytes(),
                chunk_locations,
                catalog: Catalog::default(),
            };
            data.encode_with(&cat)
        };
        let name = format!("checkpoint.{seq:016x}");
        self.poison.check()?;
        write_file_atomically(&self.vfs, &self.dir, &name, &bytes)?;
        self.poison.check()?;
        let control = Control {
            checkpoint_seq: seq,
            generation: cp.generation,
            wal_compression: self.wal.compression(),
            ..self.control
        };
        control.write(&self.vfs, &self.dir)?;
        // Two atomic file replacements: a file sync and a directory sync each.
        self.stats.other_fsyncs.fetch_add(4, Ordering::Relaxed);
        if let Some(c) = capture {
            self.store.checkpoint_complete(c);
        }
        if cp.seq > 0 {
            let old = checkpoint_path(&self.dir, cp.seq);
            let _ = self.vfs.remove(&old);
        }
        cp.seq = seq;
        Ok(undo_start)
    }

    /// Checkpoints by WAL volume and by time; flushes asynchronous commits.
    fn background_loop(&self) {
        let mut ticks = 0u64;
        while !self.shutdown.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
            ticks += 1;
            if self.poison.is_set() {
                continue;
            }
            if !self.synchronous_commit && ticks.is_multiple_of(5) {
                let _ = self.wal.flush_all();
            }
            let due = {
                let cp = lock(&self.checkpoint);
                self.wal.insert_lsn().saturating_sub(cp.redo.lsn) >= self.checkpoint_wal_bytes
                    || self.clock.now_millis().saturating_sub(cp.last_millis)
                        >= self.checkpoint_interval_millis
            };
            if due {
                let _ = self.checkpoint();
            } else if self.store.space_pressure() != SpacePressure::None {
                let mut cp = lock(&self.checkpoint);
                let redo = cp.redo;
                let r = self.map_checkpoint(&mut cp, redo);
                let _ = self.poison.guard(r);
            }
        }
    }
}

/// Longest table or column name, in bytes.
const MAX_NAME_BYTES: usize = 255;
/// Most columns a table can have.
const MAX_COLUMNS: usize = 1600;
/// Transaction ids are stored in 48 bits in tuple headers.
const MAX_XID: u64 = 1 << 48;
/// How far past the checkpoint's next page a replayed new page may lie (pages are handed
/// out in order, but concurrent writers may log their new pages slightly out of order).
const REDO_PAGE_SLACK: u64 = 1 << 20;

fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(Error::InvalidOption(format!(
            "{what} name {:?} must be 1 to {MAX_NAME_BYTES} bytes",
            name.chars().take(40).collect::<String>()
        )));
    }
    Ok(())
}

/// A page number in a replayed record must be one the database could have handed out.
fn check_redo_page(rec: &Record, page: u64, store: &PageStore) -> std::result::Result<(), String> {
    let limit = match rec {
        Record::HeapInit { .. } | Record::PageImage { .. } => {
            store.next_page_no().saturating_add(REDO_PAGE_SLACK)
        }
        _ => store.next_page_no(),
    };
    if page >= limit || page >= u64::from(u32::MAX) {
        return Err(format!(
            "page {page} was never allocated (next page {})",
            store.next_page_no()
        ));
    }
    Ok(())
}

/// Syncs every WAL segment from `first` on, so that what recovery replays is durable
/// before any page built from it can reach disk.
/// `accept_data_loss`: segments after the one the log now ends in are renamed
/// `<name>.lost` (kept for salvage, no longer part of the log).
fn set_aside_segments_after(
    vfs: &Arc<dyn Vfs>,
    wal_dir: &Path,
    last: u64,
    loss: &mut Vec<String>,
) -> Result<()> {
    for no in WalReader::segments(vfs, wal_dir)? {
        if no <= last {
            continue;
        }
        let path = wal_dir.join(segment_name(no));
        let lost = wal_dir.join(format!("{}.lost", segment_name(no)));
        vfs.rename(&path, &lost).map_err(|e| Error::io(&path, e))?;
        loss.push(format!(
            "WAL segment {} was past the end of the readable log: renamed {}",
            path.display(),
            lost.display()
        ));
    }
    vfs.sync_dir(wal_dir).map_err(|e| Error::io(wal_dir, e))
}

/// Appends what `accept_data_loss` dropped to `data-loss.log` in the database
/// directory, so that the loss stays on record after the report is gone.
fn record_data_loss(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    generation: u64,
    loss: &[String],
) -> Result<()> {
    let path = dir.join("data-loss.log");
    let mut text =
        format!("opened with accept_data_loss (WAL generation {generation}); dropped:\n");
    for line in loss {
        text.push_str(&format!("  - {line}\n"));
    }
    // Appended (never read back): earlier entries stay whatever this file holds.
    let io = |e| Error::io(&path, e);
    let f = vfs
        .open(&path, crate::vfs::OpenMode::CreateOrOpen)
        .map_err(io)?;
    let end = f.len().map_err(io)?;
    f.write_all_at(text.as_bytes(), end).map_err(io)?;
    f.sync_data().map_err(io)?;
    vfs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

fn sync_wal_from(vfs: &Arc<dyn Vfs>, wal_dir: &Path, first: u64) -> Result<()> {
    let names = vfs.list_dir(wal_dir).map_err(|e| Error::io(wal_dir, e))?;
    for name in &names {
        // A segment being made when the process stopped (a full disk, a crash): never
        // part of the log (segments are renamed into place whole).
        let stem = name.strip_suffix(".tmp").unwrap_or("");
        if crate::wal::format::parse_segment_name(stem).is_some() {
            let path = wal_dir.join(name);
            vfs.remove(&path).map_err(|e| Error::io(&path, e))?;
        }
    }
    for name in names {
        let Some(no) = crate::wal::format::parse_segment_name(&name) else {
            continue;
        };
        if no >= first {
            let path = wal_dir.join(segment_name(no));
            let f = vfs
                .open(&path, crate::vfs::OpenMode::Existing)
                .map_err(|e| Error::io(&path, e))?;
            f.sync_data().map_err(|e| Error::io(&path, e))?;
        }
    }
    Ok(())
}

impl heap::BetweenPages for Inner {
    fn between_pages(&self) {
        self.relieve_space();
    }
}

/// What `Transaction::modify_with` does with one row.
#[derive(Debug, Clone, PartialEq)]
pub enum RowAction {
    /// Leave the row as it is.
    Keep,
    /// Replace the row with these values.
    Update(Row),
    /// Delete the row.
    Delete,
    /// Stop the scan here; rows changed so far stay changed.
    Stop,
}

/// A transaction. Dropping it without `commit` rolls it back.
pub struct Transaction {
    /// The database it runs in: owned, so a transaction can move to another thread or
    /// outlive the handle that began it.
    db: Arc<Inner>,
    snapshot: Snapshot,
    cid: u32,
    stats: TxnStats,
    wrote: bool,
    finished: bool,
    /// Wait for the commit record to be durable before `commit` returns.
    synchronous_commit: bool,
    /// Changes to undo tables, for rollback.
    undo: TxnUndo,
    /// Registered as an undo-table writer (see `Inner::register_undo_writer`).
    undo_registered: bool,
}

impl Transaction {
    pub fn xid(&self) -> u64 {
        self.snapshot.xid
    }

    /// Chooses, for this transaction only, whether `commit` waits for the WAL to be
    /// durable. Off, a crash may lose the transaction but never leaves it half applied.
    pub fn set_synchronous_commit(&mut self, on: bool) {
        self.synchronous_commit = on;
    }

    /// WAL this transaction has written so far, by record kind.
    pub fn stats(&self) -> &TxnStats {
        &self.stats
    }

    fn check_open(&self) -> Result<()> {
        if self.finished {
            Err(Error::TransactionFinished)
        } else {
            Ok(())
        }
    }

    /// Starts a new command: versions created by earlier commands become visible.
    fn next_command(&mut self) -> Result<u32> {
        self.check_open()?;
        self.cid = self.cid.checked_add(1).ok_or(Error::TooManyCommands {
            max: u64::from(u32::MAX),
        })?;
        Ok(self.cid)
    }

    fn view(&self) -> TxnView<'_> {
        TxnView {
            snapshot: &self.snapshot,
            cid: self.cid,
        }
    }

    fn log(&mut self, rec: &Record) -> Result<()> {
        let mut payload = Vec::new();
        rec.encode_payload(&mut payload);
        self.db.wal.append(
            rec.kind(),
            self.snapshot.xid,
            &payload,
            Some(&mut self.stats),
        )?;
        self.wrote = true;
        Ok(())
    }

    fn encode(table: &Table, row: &[Value], out: &mut Vec<u8>) -> Result<()> {
        table
            .schema
            .check(row)
            .map_err(|reason| Error::SchemaMismatch {
                table: table.name.clone(),
                reason,
            })?;
        out.clear();
        table.schema.encode_row(row, out);
        Ok(())
    }

    /// Inserts one row.
    pub fn insert(&mut self, table: &str, row: &[Value]) -> Result<RowId> {
        let mut once = Some(row);
        let t = self.db.table(table)?;
        let ids = self.insert_inner(&t, &mut |out| match once.take() {
            Some(r) => Self::encode(&t, r, out).map(|()| true),
            None => Ok(false),
        })?;
        ids.into_iter().next().ok_or(Error::TransactionFinished)
    }

    /// Inserts many rows in one command: rows that land on one page share one WAL record.
    pub fn insert_many<R: AsRef<[Value]>>(
        &mut self,
        table: &str,
        rows: impl IntoIterator<Item = R>,
    ) -> Result<Vec<RowId>> {
        let t = self.db.table(table)?;
        let mut it = rows.into_iter();
        self.insert_inner(&t, &mut |out| match it.next() {
            Some(r) => Self::encode(&t, r.as_ref(), out).map(|()| true),
            None => Ok(false),
        })
    }

    /// Inserts rows produced by `fill`, which sets the next row in place (reusing its
    /// values) and returns false when done. Returns the number of rows inserted.
    pub fn insert_with(
        &mut self,
        table: &str,
        mut fill: impl FnMut(&mut Row) -> bool,
    ) -> Result<u64> {
        let t = self.db.table(table)?;
        let mut row: Row = vec![Value::Null; t.schema.columns.len()];
        let ids = self.insert_inner(&t, &mut |out| {
            if fill(&mut row) {
                Self::encode(&t, &row, out).map(|()| true)
            } else {
                Ok(false)
            }
        })?;
        Ok(ids.len() as u64)
    }

    /// Before the first change to an undo table.
    fn note_undo_writer(&mut self) {
        if !self.undo_registered {
            self.db.register_undo_writer(self.snapshot.xid);
            self.undo_registered = true;
        }
    }

    fn insert_inner(
        &mut self,
        t: &Table,
        next: &mut dyn FnMut(&mut Vec<u8>) -> Result<bool>,
    ) -> Result<Vec<RowId>> {
        self.next_command()?;
        self.wrote = true;
        if t.kind == TableKind::Undo {
            self.note_undo_writer();
        }
        let view = TxnView {
            snapshot: &self.snapshot,
            cid: self.cid,
        };
        match t.kind {
            TableKind::Heap => {
                heap::insert_many(&self.db.heap_ctx(), t, &view, &mut self.stats, next)
            }
            TableKind::Undo => {
                let ctx = self.db.undo_ctx();
                let mark = self.undo.entries.len();
                match undo::insert_many(&ctx, t, &view, &mut self.stats, &mut self.undo, next) {
                    Ok(ids) => Ok(ids),
                    Err(e) => {
                        // A failed call has no effect: take back the rows it inserted.
                        let xid = view.snapshot.xid;
                        undo::rollback_to(&ctx, xid, &mut self.undo, mark, &mut self.stats)?;
                        Err(e)
                    }
                }
            }
        }
    }

    /// Changes one row of an undo table. A row that moved is found through the link its
    /// old place keeps (looked up only then: the common case touches the page once).
    fn change_undo_row(
        &mut self,
        t: &Table,
        id: RowId,
        change: undo::Change,
        moved_to: &mut Vec<RowId>,
    ) -> Result<()> {
        let changes = [(id.slot, change)];
        match self.change_undo_rows(t, id.page, &changes, moved_to) {
            Err(Error::NoSuchRow(_)) => {
                let at = undo::fetch(&self.db.undo_ctx(), t, id, &self.view())?
                    .map(|(at, _)| at)
                    .filter(|at| *at != id)
                    .ok_or(Error::NoSuchRow(id))?;
                let [(_, change)] = changes;
                self.change_undo_rows(t, at.page, &[(at.slot, change)], moved_to)
            }
            r => r,
        }
    }

    /// Applies changes to rows of one page of an undo table.
    fn change_undo_rows(
        &mut self,
        t: &Table,
        page: u64,
        changes: &[(u16, undo::Change)],
        moved_to: &mut Vec<RowId>,
    ) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        self.note_undo_writer();
        self.wrote = true;
        let view = TxnView {
            snapshot: &self.snapshot,
            cid: self.cid,
        };
        undo::change_rows(
            &self.db.undo_ctx(),
            t,
            &view,
            &mut self.stats,
            &mut self.undo,
            page,
            changes,
            moved_to,
        )
    }

    /// The version of a row visible to this transaction (following updates).
    pub fn get(&mut self, table: &str, id: RowId) -> Result<Option<Row>> {
        self.next_command()?;
        let t = self.db.table(table)?;
        let found = match t.kind {
            TableKind::Heap => heap::fetch(&self.db.heap_ctx(), &t, id, &self.view())?,
            TableKind::Undo => undo::fetch(&self.db.undo_ctx(), &t, id, &self.view())?,
        };
        match found {
            Some((_, bytes)) => Ok(Some(self.decode(&t, id, &bytes)?)),
            None => Ok(None),
        }
    }

    fn decode(&self, t: &Table, id: RowId, bytes: &[u8]) -> Result<Row> {
        t.schema
            .decode_row(bytes)
            .map_err(|reason| Error::CorruptPage {
                path: self.db.store.path().to_path_buf(),
                page: id.page,
                location: id.page,
                reason: format!("row at slot {}: {reason}", id.slot),
            })
    }

    /// Calls `f` for every visible row, page by page; stop early by returning false.
    pub fn scan_with(&mut self, table: &str, mut f: impl FnMut(RowId, Row) -> bool) -> Result<()> {
        self.next_command()?;
        let t = self.db.table(table)?;
        let ctx = self.db.heap_ctx();
        let mut rows = Vec::new();
        for page in t.page_list() {
            rows.clear();
            self.scan_page(&t, page, &mut rows)?;
            ctx.hook.between_pages();
            for (id, bytes) in rows.drain(..) {
                let row = self.decode(&t, id, &bytes)?;
                if !f(id, row) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn scan_page(&self, t: &Table, page: u64, rows: &mut Vec<(RowId, Vec<u8>)>) -> Result<()> {
        match t.kind {
            TableKind::Heap => heap::scan_page(&self.db.heap_ctx(), page, &self.view(), rows),
            TableKind::Undo => undo::scan_page(&self.db.undo_ctx(), page, &self.view(), rows),
        }
    }

    /// Every visible row.
    pub fn scan(&mut self, table: &str) -> Result<Vec<(RowId, Row)>> {
        let mut out = Vec::new();
        self.scan_with(table, |id, row| {
            out.push((id, row));
            true
        })?;
        Ok(out)
    }

    /// Replaces a row; returns the id of the new version. If another transaction changed
    /// the row, waits for it; if it committed, fails with `SerializationFailure`.
    pub fn update(&mut self, table: &str, id: RowId, row: &[Value]) -> Result<RowId> {
        self.next_command()?;
        let t = self.db.table(table)?;
        let mut bytes = Vec::new();
        Self::encode(&t, row, &mut bytes)?;
        if t.kind == TableKind::Undo {
            let mut moved_to = Vec::new();
            let change = undo::Change::Update(bytes);
            let r = self.change_undo_row(&t, id, change, &mut moved_to);
            self.db.heap_ctx().hook.between_pages();
            r?;
            return Ok(moved_to.first().copied().unwrap_or(id));
        }
        self.wrote = true;
        let ctx = self.db.heap_ctx();
        let view = TxnView {
            snapshot: &self.snapshot,
            cid: self.cid,
        };
        let r = heap::update(&ctx, &t, id, &bytes, &view, &mut self.stats);
        ctx.hook.between_pages();
        r
    }

    /// Updates or deletes rows in one command. `f` sees every row visible at the start
    /// of the command, page by page, and says what to do with it. Versions the command
    /// writes are invisible to its own scan, so an update that moves rows forward never
    /// meets them again. Returns the number of rows updated or deleted.
    ///
    /// Unlike the single-row calls, a failure part-way (or `RowAction::Stop`) leaves the
    /// rows changed before it changed: a caller that wants all or nothing rolls back.
    pub fn modify_with(
        &mut self,
        table: &str,
        mut f: impl FnMut(RowId, &Row) -> RowAction,
    ) -> Result<u64> {
        self.next_command()?;
        let t = self.db.table(table)?;
        // Each page's changes are applied together, so that they share WAL records: one
        // per page for an undo table's in-place changes and a heap table's deletes, one
        // per page for the new versions a heap update puts there.
        let mut rows = Vec::new();
        let mut changes = Vec::new();
        let mut changed = 0u64;
        for page in t.page_list() {
            rows.clear();
            changes.clear();
            self.scan_page(&t, page, &mut rows)?;
            let mut stop = false;
            for (id, raw) in rows.drain(..) {
                let row = self.decode(&t, id, &raw)?;
                match f(id, &row) {
                    RowAction::Keep => continue,
                    RowAction::Stop => {
                        stop = true;
                        break;
                    }
                    RowAction::Update(new) => {
                        let mut bytes = Vec::new();
                        Self::encode(&t, &new, &mut bytes)?;
                        changes.push((id.slot, undo::Change::Update(bytes)));
                    }
                    RowAction::Delete => changes.push((id.slot, undo::Change::Delete)),
                }
            }
            self.change_page_rows(&t, page, &changes)?;
            changed += changes.len() as u64;
            self.db.heap_ctx().hook.between_pages();
            if stop {
                break;
            }
        }
        Ok(changed)
    }

    /// Applies the changes `modify_with` gathered for one page of a table.
    fn change_page_rows(
        &mut self,
        t: &Table,
        page: u64,
        changes: &[(u16, undo::Change)],
    ) -> Result<()> {
        if t.kind == TableKind::Undo {
            return self.change_undo_rows(t, page, changes, &mut Vec::new());
        }
        let deletes: Vec<u16> = changes
            .iter()
            .filter(|(_, c)| matches!(c, undo::Change::Delete))
            .map(|(slot, _)| *slot)
            .collect();
        let updates: Vec<(u16, &[u8])> = changes
            .iter()
            .filter_map(|(slot, c)| match c {
                undo::Change::Update(bytes) => Some((*slot, &bytes[..])),
                undo::Change::Delete => None,
            })
            .collect();
        let ctx = self.db.heap_ctx();
        let view = TxnView {
            snapshot: &self.snapshot,
            cid: self.cid,
        };
        if !deletes.is_empty() {
            self.wrote = true;
            heap::delete_rows(&ctx, t, page, &deletes, &view, &mut self.stats)?;
        }
        if !updates.is_empty() {
            self.wrote = true;
            let mut new_ids = Vec::with_capacity(updates.len());
            heap::update_rows(
                &ctx,
                t,
                page,
                &updates,
                &view,
                &mut self.stats,
                &mut new_ids,
            )?;
        }
        Ok(())
    }

    /// Deletes a row (same waiting rules as `update`).
    pub fn delete(&mut self, table: &str, id: RowId) -> Result<()> {
        self.next_command()?;
        let t = self.db.table(table)?;
        if t.kind == TableKind::Undo {
            let r = self.change_undo_row(&t, id, undo::Change::Delete, &mut Vec::new());
            self.db.heap_ctx().hook.between_pages();
            return r;
        }
        self.wrote = true;
        let ctx = self.db.heap_ctx();
        let view = TxnView {
            snapshot: &self.snapshot,
            cid: self.cid,
        };
        let r = heap::delete(&ctx, &t, id, &view, &mut self.stats);
        ctx.hook.between_pages();
        r
    }

    /// Commits. Returns once the commit is durable (unless asynchronous commit is on).
    pub fn commit(mut self) -> Result<()> {
        self.check_open()?;
        self.commit_inner()
    }

    /// Commits, and returns what the whole transaction wrote to the WAL, the commit
    /// record included (which `stats()` cannot show before the commit).
    pub fn commit_with_stats(mut self) -> Result<TxnStats> {
        self.check_open()?;
        self.commit_inner()?;
        Ok(std::mem::take(&mut self.stats))
    }

    fn commit_inner(&mut self) -> Result<()> {
        self.finished = true;
        let xid = self.snapshot.xid;
        if !self.wrote {
            self.db.txns.end(xid);
            self.db.undo_writer_ended(xid, self.undo_registered);
            return Ok(());
        }
        // Held from the commit record until its clog bit is set, so that no checkpoint
        // takes its redo point in between (the bit would then be neither in the clog it
        // writes nor replayed after a crash: docs/recovery.md rule 4).
        let fence = self
            .db
            .commit_fence
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let r = (|| {
            let a = self
                .db
                .wal
                .append(RecordKind::Commit, xid, &[], Some(&mut self.stats))?;
            if self.synchronous_commit {
                self.db.wal.flush(a.end_lsn, true)?;
            }
            Ok(())
        })();
        match r {
            Ok(()) => {
                self.db.clog.set(xid, XidStatus::Committed);
                drop(fence);
                self.db.stats.commits.fetch_add(1, Ordering::Relaxed);
                self.db.txns.end(xid);
                self.db.undo_writer_ended(xid, self.undo_registered);
                Ok(())
            }
            Err(e) => {
                drop(fence);
                // Not acknowledged; whether the commit record reached the disk is
                // decided by recovery. Here it counts as aborted; its changes to undo
                // tables stay in place, so readers keep needing their undo.
                if !self.undo.entries.is_empty() {
                    self.db.undo.keep_unresolved(xid);
                }
                self.db.clog.set(xid, XidStatus::Aborted);
                self.db.txns.end(xid);
                self.db.undo_writer_ended(xid, self.undo_registered);
                Err(e)
            }
        }
    }

    /// Rolls back: the transaction's versions become invisible (heap tables need no undo).
    pub fn rollback(mut self) -> Result<()> {
        self.check_open()?;
        self.rollback_inner()
    }

    fn rollback_inner(&mut self) -> Result<()> {
        self.finished = true;
        let xid = self.snapshot.xid;
        // Undo tables: put the old values back first (heap tables need nothing).
        let undone = if self.undo.entries.is_empty() {
            Ok(())
        } else {
            let r = self.db.poison.check().and_then(|()| {
                undo::rollback_to(&self.db.undo_ctx(), xid, &mut self.undo, 0, &mut self.stats)
            });
            if r.is_err() {
                // The rows keep (some of) the changes until recovery takes them back.
                self.db.undo.keep_unresolved(xid);
            }
            r
        };
        let r = if undone.is_err() {
            undone
        } else if self.wrote && !self.db.poison.is_set() {
            self.db
                .wal
                .append(RecordKind::Abort, xid, &[], Some(&mut self.stats))
                .map(|_| ())
        } else {
            Ok(())
        };
        self.db.clog.set(xid, XidStatus::Aborted);
        self.db.stats.aborts.fetch_add(1, Ordering::Relaxed);
        self.db.txns.end(xid);
        self.db.undo_writer_ended(xid, self.undo_registered);
        r
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.rollback_inner();
        }
    }
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
