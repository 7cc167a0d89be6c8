//! Crash recovery: the WAL replayed from the last checkpoint's redo point through each
//! record's owner, then the transactions that did not commit rolled back
//! (docs/recovery.md). It returns the recovered state, from which the engine builds
//! itself.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use crate::access::undo_table::CrashUndo;
use crate::buffer::BufferPool;
use crate::catalog::Catalog;
use crate::catalog::DdlChange;
use crate::clog::{Clog, XidStatus};
use crate::control::{CheckpointData, Control};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::owners::owners;
use crate::poison::Poison;
use crate::stats::Stats;
use crate::store::{PageStore, Protection};
use crate::txn::{decode_subs, ends_transaction, ABORT, COMMIT, MAX_XID};
use crate::vfs::{FileLock, Vfs};
use crate::wal::format::segment_name;
use crate::wal::payload::{get_insert, LoggedRows};
use crate::wal::record::{CheckpointRecord, LogRecord, CHECKPOINT, PAGE_IMAGE};
use crate::wal::{RedoCtx, Wal, WalCompression, WalPosition, WalReader};

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

/// The parts of an open database below the WAL, built the same way for a new database
/// and for recovery.
pub(crate) struct Parts {
    pub dir_lock: Box<dyn FileLock>,
    pub vfs: Arc<dyn Vfs>,
    pub poison: Arc<Poison>,
    pub stats: Arc<Stats>,
    pub store: Arc<PageStore>,
    pub pool: BufferPool,
    pub clog: Clog,
}

impl Parts {
    pub(crate) fn open(
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
                c.catalog.free_pages.sort_unstable();
                let store = PageStore::open(
                    &vfs,
                    &data_path,
                    control.database_id,
                    page_size,
                    protection,
                    c.next_page,
                    c.data_file_bytes,
                    std::mem::take(&mut c.chunk_locations),
                    &c.catalog.free_pages,
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
    pub(crate) fn open_wal(
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

/// How far past the checkpoint's next page a replayed new page may lie (pages are handed
/// out in order, but concurrent writers may log their new pages slightly out of order).
const REDO_PAGE_SLACK: u64 = 1 << 20;

/// The state recovery leaves: the engine builds itself from it.
pub(crate) struct Recovered {
    pub control: Control,
    pub parts: Parts,
    pub wal: Arc<Wal>,
    pub catalog: Catalog,
    pub next_xid: u64,
    /// The checkpoint recovered from, and its redo point.
    pub checkpoint_seq: u64,
    pub redo: WalPosition,
    pub report: RecoveryReport,
}

/// Crash recovery: replay the WAL from the checkpoint's redo point, then roll back
/// the transactions that did not commit (docs/recovery.md).
pub(crate) fn recover(
    dir: &Path,
    opts: &Options,
    control: Control,
    mut ckpt: CheckpointData,
    dir_lock: Box<dyn FileLock>,
) -> Result<Recovered> {
    let wal_dir = dir.join("wal");
    sync_wal_from(&opts.vfs, &wal_dir, ckpt.undo_start.segment_no)?;
    let mut loss = Vec::new();
    let parts = Parts::open(dir, opts, &control, dir_lock, Some(&mut ckpt), &mut loss)?;
    let (store, pool, clog) = (&parts.store, &parts.pool, &parts.clog);
    // Reading starts at the undo start (at or before the redo point): records before
    // the redo point only tell which undo-table changes running transactions made.
    let mut reader = WalReader::new(
        owners(),
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
    // The checkpoint's free pages: free again, for relations made after the checkpoint
    // that ends the open (a page a record below makes anew leaves the list).
    store.free_pages(&std::mem::take(&mut catalog.free_pages), ckpt.redo.lsn, 0);
    let mut crash_undo = CrashUndo::default();
    let mut checkpoint_record_found = false;
    let corrupt = |rec: &LogRecord, reason: String| Error::CorruptWal {
        path: wal_dir.clone(),
        lsn: rec.lsn,
        reason,
    };
    // Each transaction's latest insert record's rows, for `btree_insert_row` (rule 31).
    let mut rows: HashMap<u64, LoggedRows> = HashMap::new();
    // Each transaction's catalog changes (rule 40), from where the checkpoint says a
    // running one began: finished at its commit, taken back at its abort or, if it never
    // ended, once the log is read.
    let mut ddl = DdlLog::default();
    while let Some(rec) = reader.next()? {
        crash_undo.note(&rec).map_err(|r| corrupt(&rec, r))?;
        let ended = ddl.note(&rec).map_err(|r| corrupt(&rec, r))?;
        if ends_transaction(rec.rtype) {
            finished.insert(rec.xid);
            rows.remove(&rec.xid);
            // Subtransactions that end with it (checked by the reader).
            for x in decode_subs(&rec).map_err(|r| corrupt(&rec, r))? {
                finished.insert(x);
                rows.remove(&x);
            }
        } else if rec.rtype.carries_rows() {
            let logged = get_insert(&rec.payload).map_err(|r| corrupt(&rec, r))?;
            rows.insert(rec.xid, logged);
        }
        if rec.lsn < ckpt.redo.lsn {
            continue;
        }
        report.records_replayed += 1;
        if rec.xid >= MAX_XID {
            let reason = format!("transaction id {} out of range", rec.xid);
            return Err(corrupt(&rec, reason));
        }
        if rec.xid != 0 {
            seen.insert(rec.xid);
            max_xid = max_xid.max(rec.xid);
        }
        if rec.rtype == CHECKPOINT {
            let c = CheckpointRecord::decode(&rec.payload).map_err(|r| corrupt(&rec, r))?;
            checkpoint_record_found |= c.redo_lsn == ckpt.redo.lsn;
        }
        if let Some(page) = rec.page() {
            check_redo_page(&rec, page, store).map_err(|r| corrupt(&rec, r))?;
            store.note_page_no(page);
            // A relation's page making (never a page image: a reused page's new owner
            // starts it with its own record) takes the page out of the free list.
            if rec.rtype.may_allocate() && rec.rtype != PAGE_IMAGE {
                store.page_reused(page);
            }
        }
        let mut ctx = RedoCtx {
            pool,
            clog,
            catalog: &mut catalog,
            wal_dir: &wal_dir,
            rows: &rows,
        };
        owners().redo(&rec, &mut ctx)?;
        // Role changes take effect at their transaction's commit (rule 36).
        if ends_transaction(rec.rtype) {
            catalog.settle_roles(rec.xid, rec.rtype == COMMIT);
        }
        // Catalog changes end with their transaction (an end before the redo point is
        // in the checkpoint's catalog already).
        if let Some(changes) = ended {
            let freed: Vec<u64> = if rec.rtype == COMMIT {
                catalog
                    .finish_drops(&changes)
                    .into_iter()
                    .flat_map(|(pages, _)| pages)
                    .collect()
            } else {
                catalog
                    .revert(&changes)
                    .into_iter()
                    .flat_map(|(pages, _)| pages)
                    .collect()
            };
            store.free_pages(&freed, rec.end_lsn(), 0);
        }
    }
    // Transactions that never ended: their catalog changes are taken back.
    let (unfinished, changes) = ddl.unfinished();
    let freed: Vec<u64> = catalog
        .revert(&changes)
        .into_iter()
        .flat_map(|(pages, _)| pages)
        .collect();
    store.free_pages(&freed, reader.end_position().lsn, 0);
    seen.extend(unfinished.into_iter().filter(|x| !finished.contains(x)));
    catalog.drop_unsettled_roles();
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
        wal.append(ABORT, xid, &[], None)?;
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
    Ok(Recovered {
        control,
        parts,
        wal,
        catalog,
        next_xid,
        checkpoint_seq: ckpt.seq,
        redo: ckpt.redo,
        report,
    })
}

/// A page number in a replayed record must be one the database could have handed out.
fn check_redo_page(
    rec: &LogRecord,
    page: u64,
    store: &PageStore,
) -> std::result::Result<(), String> {
    // A record that writes its page whole (a new page, an image) may name one past
    // the checkpoint's next page.
    let limit = if rec.rtype.may_allocate() {
        store.next_page_no().saturating_add(REDO_PAGE_SLACK)
    } else {
        store.next_page_no()
    };
    if page >= limit || page >= u64::from(u32::MAX) {
        return Err(format!(
            "page {page} was never allocated (next page {})",
            store.next_page_no()
        ));
    }
    Ok(())
}

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

/// Syncs every WAL segment from `first` on, so that what recovery replays is durable
/// before any page built from it can reach disk.
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

/// Each transaction's catalog changes as recovery reads them (docs/recovery.md rule
/// 40), by the xid that logged them (a subtransaction's own).
#[derive(Default)]
struct DdlLog {
    by_xid: HashMap<u64, Vec<(u64, DdlChange)>>,
}

impl DdlLog {
    /// Notes a record's catalog change; when the record ends a transaction (and the
    /// subtransactions it lists), returns their changes, oldest first.
    fn note(&mut self, rec: &LogRecord) -> std::result::Result<Option<Vec<DdlChange>>, String> {
        if let Some(change) = DdlChange::of_record(rec)? {
            self.by_xid
                .entry(rec.xid)
                .or_default()
                .push((rec.lsn, change));
        }
        if !ends_transaction(rec.rtype) || self.by_xid.is_empty() {
            return Ok(None);
        }
        let mut all = self.by_xid.remove(&rec.xid).unwrap_or_default();
        for x in decode_subs(rec)? {
            all.extend(self.by_xid.remove(&x).unwrap_or_default());
        }
        if all.is_empty() {
            return Ok(None);
        }
        all.sort_by_key(|(lsn, _)| *lsn);
        Ok(Some(all.into_iter().map(|(_, c)| c).collect()))
    }

    /// The xids whose end was never read, and their changes, oldest first.
    fn unfinished(self) -> (Vec<u64>, Vec<DdlChange>) {
        let xids = self.by_xid.keys().copied().collect();
        let mut all: Vec<(u64, DdlChange)> = self.by_xid.into_values().flatten().collect();
        all.sort_by_key(|(lsn, _)| *lsn);
        (xids, all.into_iter().map(|(_, c)| c).collect())
    }
}
