//! The page store: where each logical page lives in the data file, and reading and
//! writing pages there (checksummed).
//!
//! In `full-page` and `none` modes a page lives at a fixed place (location = page number)
//! and is overwritten. In `cow` mode (the default) a page is never overwritten where the
//! last complete checkpoint expects it: each write goes to a free location and the page map
//! is updated. A location freed by a rewrite is reused only once no checkpoint that is
//! complete or in progress can point at it (see `free_location`). The map is written at
//! checkpoints as map pages, only the chunks that changed, each to a new location.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::page::{self, PageKind, PageMut, PageRef, PAGE_HEADER_BYTES};
use crate::stats::Stats;
use crate::vfs::{OpenMode, Vfs, VfsFile};

/// Torn-page protection, chosen when a database is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protection {
    /// Copy-on-write page placement: torn writes only hit unreferenced locations.
    Cow,
    /// Pages overwritten in place; the first change after a checkpoint logs the page.
    FullPage,
    /// Pages overwritten in place, no images: a torn page is detected, not repaired.
    None,
}

impl Protection {
    pub fn name(self) -> &'static str {
        match self {
            Protection::Cow => "cow",
            Protection::FullPage => "full-page",
            Protection::None => "none",
        }
    }
    pub fn code(self) -> u8 {
        match self {
            Protection::Cow => 1,
            Protection::FullPage => 2,
            Protection::None => 3,
        }
    }
    pub fn from_code(c: u8) -> Option<Protection> {
        match c {
            1 => Some(Protection::Cow),
            2 => Some(Protection::FullPage),
            3 => Some(Protection::None),
            _ => None,
        }
    }
}

impl std::str::FromStr for Protection {
    type Err = Error;
    fn from_str(s: &str) -> Result<Protection> {
        match s {
            "cow" => Ok(Protection::Cow),
            "full-page" | "full_page" | "fullpage" => Ok(Protection::FullPage),
            "none" => Ok(Protection::None),
            _ => Err(Error::InvalidOption(format!(
                "unknown protection mode {s:?} (expected cow, full-page or none)"
            ))),
        }
    }
}

/// See [`PageStore::space_pressure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpacePressure {
    None,
    Soft,
    Hard,
}

/// The copy-on-write map and location allocator. Guarded by `PageStore::cow`.
struct CowState {
    /// Logical page -> location + 1 (0: the page has no location yet).
    map: Vec<u64>,
    /// Map chunks changed since the last capture.
    dirty_chunks: BTreeSet<usize>,
    /// Location + 1 of each map chunk in the last complete (or in-progress) checkpoint.
    chunk_locations: Vec<u64>,
    /// Epoch in which each location was allocated (index = location).
    born_epoch: Vec<u32>,
    /// Locations free for reuse, lowest first (keeps the file compact).
    free: BTreeSet<u64>,
    /// Locations freed by a rewrite, with the epoch they were freed in.
    pending: Vec<(u32, u64)>,
    /// Current epoch; a capture for a checkpoint ends it.
    epoch: u32,
    /// Locations in the file.
    file_locations: u64,
}

/// What a checkpoint took from the map: the chunks to write and its epoch.
pub struct MapCapture {
    pub epoch: u32,
    chunks: Vec<(usize, Vec<u64>)>,
    old_chunk_locations: Vec<u64>,
}

/// Whether a failed growth of the file means the file system is full.
fn no_room(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOSPC) || e.kind() == std::io::ErrorKind::StorageFull
}

/// The least a data file grows by when `ensure_room` finds too few free locations.
pub const ROOM_MIN_GROWTH: u64 = 64;

/// The data file and its page placement.
pub struct PageStore {
    path: PathBuf,
    /// Seeds every page checksum: a page of another database fails it.
    database_id: u64,
    file: Arc<dyn VfsFile>,
    page_size: usize,
    protection: Protection,
    cow: Mutex<CowState>,
    /// Next logical page number to hand out.
    next_page: AtomicU64,
    /// Page numbers of dropped relations, handed out again once safe (`FreePages`).
    free_pages: Mutex<FreePages>,
    /// Length of the data file (it grows only by page writes).
    file_len_bytes: AtomicU64,
    stats: Arc<Stats>,
    /// Debug builds: the LSN of the last write of each page, to catch stale reads.
    last_written: Mutex<std::collections::HashMap<u64, u64>>,
}

/// Page numbers no relation uses (a dropped table's or index's), reused before new ones
/// are handed out (docs/recovery.md rule 26). A page freed at WAL position `lsn` while
/// transactions below `xid` may run is only `pending`: redo from a checkpoint older than
/// the free, or crash rollback of such a transaction, may still replay the old
/// relation's records onto it. A checkpoint whose redo point is at or past `lsn`, fixed
/// when every transaction below `xid` had ended, makes it `ready`.
#[derive(Debug, Default)]
struct FreePages {
    ready: BTreeSet<u64>,
    /// (lsn, xid, page).
    pending: Vec<(u64, u64, u64)>,
}

/// Free locations below which cow mode moves no page down to cut the file: a few
/// hundred KiB are not worth the writes.
const MOVE_DOWN_MIN_FREE: u64 = 256;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PageStore {
    /// Creates the data file of a new database.
    pub fn create(
        vfs: &Arc<dyn Vfs>,
        path: &Path,
        database_id: u64,
        page_size: usize,
        protection: Protection,
        stats: Arc<Stats>,
    ) -> Result<PageStore> {
        let file = vfs
            .open(path, OpenMode::CreateNew)
            .map_err(|e| Error::io(path, e))?;
        Ok(PageStore::new(
            path,
            database_id,
            file,
            0,
            page_size,
            protection,
            0,
            stats,
        ))
    }

    /// Opens the data file of the checkpoint recovery starts from: `chunk_locations`
    /// (cow), `min_len_bytes`, the file's length when that checkpoint was durable, and
    /// `free_pages` (sorted) come from it. A missing file, or one that lost pages, is an
    /// error, never empty pages.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        vfs: &Arc<dyn Vfs>,
        path: &Path,
        database_id: u64,
        page_size: usize,
        protection: Protection,
        next_page: u64,
        min_len_bytes: u64,
        chunk_locations: Vec<u64>,
        free_pages: &[u64],
        stats: Arc<Stats>,
    ) -> Result<PageStore> {
        let file = vfs.open(path, OpenMode::Existing).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::MissingFile {
                    path: path.to_path_buf(),
                    reason: "the data file holds every table's pages".into(),
                }
            } else {
                Error::io(path, e)
            }
        })?;
        let len = file.len().map_err(|e| Error::io(path, e))?;
        // A file shorter than the checkpoint left it has lost pages, unless what is
        // missing was given back: free pages at the end (fixed places, `trim`). In cow
        // mode the map says what must be there (`load_map` checks each location).
        if len < min_len_bytes && protection != Protection::Cow {
            let ps = page_size as u64;
            // Pages past the checkpoint's next page number were never handed out
            // before it (the file is kept longer than that: `ensure_room_fixed`), and
            // any handed out since are made again by redo from their first record.
            let lost = (len / ps..min_len_bytes.div_ceil(ps).min(next_page))
                .find(|p| free_pages.binary_search(p).is_err());
            if let Some(page) = lost {
                return Err(Error::CorruptFile {
                    path: path.to_path_buf(),
                    reason: format!(
                        "{len} bytes, but the last checkpoint wrote {min_len_bytes} and page {page} is in use: the file was truncated or replaced"
                    ),
                });
            }
        }
        let store = PageStore::new(
            path,
            database_id,
            file,
            len,
            page_size,
            protection,
            next_page,
            stats,
        );
        if protection == Protection::Cow {
            store.load_map(chunk_locations)?;
        }
        Ok(store)
    }

    #[allow(clippy::too_many_arguments)]
    fn new(
        path: &Path,
        database_id: u64,
        file: Arc<dyn VfsFile>,
        len: u64,
        page_size: usize,
        protection: Protection,
        next_page: u64,
        stats: Arc<Stats>,
    ) -> PageStore {
        PageStore {
            path: path.to_path_buf(),
            database_id,
            file,
            page_size,
            protection,
            cow: Mutex::new(CowState {
                map: Vec::new(),
                dirty_chunks: BTreeSet::new(),
                chunk_locations: Vec::new(),
                born_epoch: Vec::new(),
                free: BTreeSet::new(),
                pending: Vec::new(),
                epoch: 1,
                file_locations: len / page_size as u64,
            }),
            next_page: AtomicU64::new(next_page),
            free_pages: Mutex::new(FreePages::default()),
            file_len_bytes: AtomicU64::new(len),
            stats,
            last_written: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// The highest LSN of any readable page in the data file, referenced or not (for
    /// `walden recover`: new WAL must start past every change a page already holds).
    pub fn max_page_lsn_in_file(&self) -> Result<u64> {
        let locations = self.file_len_bytes() / self.page_size as u64;
        let mut buf = vec![0u8; self.page_size];
        let mut max = 0;
        for loc in 0..locations {
            let offset = loc * self.page_size as u64;
            self.file
                .read_exact_at(&mut buf, offset)
                .map_err(|e| Error::io(&self.path, e))?;
            if page::verify_checksum(&buf, self.database_id).is_ok() {
                max = max.max(PageRef(&buf).lsn());
            }
        }
        Ok(max)
    }

    /// The data file's length (it grows by page writes and by `ensure_room`).
    pub fn file_len_bytes(&self) -> u64 {
        self.file_len_bytes.load(Ordering::Acquire)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn page_size(&self) -> usize {
        self.page_size
    }
    pub fn protection(&self) -> Protection {
        self.protection
    }

    fn entries_per_chunk(&self) -> usize {
        (self.page_size - PAGE_HEADER_BYTES) / 8
    }

    /// Reads the map chunks of the last checkpoint and rebuilds the allocator: every
    /// location the map or a chunk uses is taken, every other one is free.
    fn load_map(&self, chunk_locations: Vec<u64>) -> Result<()> {
        let per = self.entries_per_chunk();
        let mut st = lock(&self.cow);
        if chunk_locations.len() as u64 > st.file_locations {
            return Err(Error::CorruptCheckpoint {
                path: self.path.clone(),
                reason: format!(
                    "{} map chunks for a data file of {} pages",
                    chunk_locations.len(),
                    st.file_locations
                ),
            });
        }
        let mut map = vec![0u64; chunk_locations.len() * per];
        let mut buf = vec![0u8; self.page_size];
        for (i, &loc1) in chunk_locations.iter().enumerate() {
            if loc1 == 0 {
                continue;
            }
            if loc1 > st.file_locations {
                return Err(Error::CorruptFile {
                    path: self.path.clone(),
                    reason: format!(
                        "map chunk {i} is at location {}, past the end of the file ({} pages): the file was truncated or replaced",
                        loc1 - 1,
                        st.file_locations
                    ),
                });
            }
            self.read_location(loc1 - 1, i as u64, PageKind::Map, &mut buf)?;
            for (j, e) in map[i * per..(i + 1) * per].iter_mut().enumerate() {
                let at = PAGE_HEADER_BYTES + j * 8;
                *e = u64::from_le_bytes(buf[at..at + 8].try_into().unwrap_or([0; 8]));
            }
        }
        let mut used = vec![false; st.file_locations as usize];
        for &loc1 in map.iter().chain(chunk_locations.iter()) {
            if loc1 == 0 {
                continue;
            }
            let loc = (loc1 - 1) as usize;
            if loc >= used.len() {
                return Err(Error::CorruptFile {
                    path: self.path.clone(),
                    reason: format!("the page map points at location {loc}, past the end of the file ({} pages): the file was truncated or replaced", used.len()),
                });
            }
            if used[loc] {
                return Err(Error::CorruptCheckpoint {
                    path: self.path.clone(),
                    reason: format!("location {loc} is used twice in the page map"),
                });
            }
            used[loc] = true;
        }
        st.free = (0..used.len() as u64)
            .filter(|&l| !used[l as usize])
            .collect();
        st.born_epoch = vec![0; used.len()];
        st.map = map;
        st.chunk_locations = chunk_locations;
        Ok(())
    }

    /// Hands out a logical page number: a free one (the lowest) if one is ready, else a
    /// new one.
    pub fn allocate_page_no(&self) -> u64 {
        // Under the free list's lock, which `trim` holds while it lowers the next page.
        let mut f = lock(&self.free_pages);
        if let Some(p) = f.ready.pop_first() {
            return p;
        }
        self.next_page.fetch_add(1, Ordering::SeqCst)
    }

    /// The pages of a dropped relation: free once a checkpoint allows (see `FreePages`).
    /// `lsn`: the log's end after the drop; `xid`: the next transaction id then.
    pub fn free_pages(&self, pages: &[u64], lsn: u64, xid: u64) {
        let mut f = lock(&self.free_pages);
        f.pending.extend(pages.iter().map(|&p| (lsn, xid, p)));
    }

    /// A checkpoint with redo point `redo_lsn` completed, every transaction below
    /// `horizon` having ended before that point: pages freed before both are safe to
    /// reuse. Returns them, taken out of the pending list but not yet handed out: the
    /// caller drops what the buffer pool and the map hold of them, then `make_ready`
    /// (so that no new owner can take one in between).
    pub fn release_free_pages(&self, redo_lsn: u64, horizon: u64) -> Vec<u64> {
        let mut f = lock(&self.free_pages);
        let FreePages { ready, pending } = &mut *f;
        let mut released = Vec::new();
        pending.retain(|&(lsn, xid, p)| {
            let safe = lsn <= redo_lsn && xid <= horizon;
            if safe && !ready.contains(&p) {
                released.push(p);
            }
            !safe
        });
        released.sort_unstable();
        released.dedup();
        released
    }

    /// Pages `release_free_pages` returned: handed out from now on, lowest first.
    pub fn make_ready(&self, pages: &[u64]) {
        lock(&self.free_pages).ready.extend(pages.iter().copied());
    }

    /// Ready free pages (cow): nothing reads their contents again (a new relation's page
    /// making overwrites them whole), so the map forgets their locations, which are
    /// freed as a rewrite frees the old one (once no checkpoint points at them).
    pub fn forget_locations(&self, pages: &[u64]) {
        if self.protection != Protection::Cow {
            return;
        }
        let per = self.entries_per_chunk();
        let mut st = lock(&self.cow);
        for &p in pages {
            let Some(e) = st.map.get_mut(p as usize) else {
                continue;
            };
            let old = std::mem::replace(e, 0);
            if old > 0 {
                st.dirty_chunks.insert(p as usize / per);
                Self::free_location(&mut st, old - 1);
            }
        }
    }

    /// Gives the data file's free end back to the file system (truncation; see
    /// docs/format.md). Ready free pages at the end of the page numbers lower the next
    /// page number; then the file is cut after the last place in use: in fixed-place
    /// modes `keep_free` pages past the next page number, in cow mode after the last
    /// location that is not free, keeping `keep_free` free locations (and one per map
    /// chunk): the room `ensure_room` reserves for changes to come. Returns the bytes
    /// given back.
    pub fn trim(&self, keep_free: u64) -> Result<u64> {
        let ps = self.page_size as u64;
        let mut f = lock(&self.free_pages);
        let next = self.next_page.load(Ordering::SeqCst);
        let mut keep = next;
        while keep > 0 && f.ready.contains(&(keep - 1)) {
            keep -= 1;
        }
        if keep < next {
            f.ready.retain(|&p| p < keep);
            // A page listed twice (ready, and pending again) goes with its ready self.
            f.pending.retain(|&(_, _, p)| p < keep);
            self.next_page.store(keep, Ordering::SeqCst);
        }
        let before = self.file_len_bytes();
        // Cut under the map's lock (cow: no location is handed out meanwhile) or the
        // free list's (fixed places: no page number is, and no page at or past `keep`
        // is in use nor in the buffer pool, ready pages' frames being discarded when
        // they become ready).
        let mut cow = (self.protection == Protection::Cow).then(|| lock(&self.cow));
        let end = match cow.as_deref_mut() {
            Some(st) => {
                // The room `ensure_room` keeps stays (cutting it would make the next
                // change grow the file again).
                let keep = keep_free + st.chunk_locations.len() as u64 + 1;
                let mut n = st.file_locations;
                while n > 0 && st.free.len() as u64 > keep && st.free.remove(&(n - 1)) {
                    n -= 1;
                }
                st.file_locations = n;
                st.born_epoch.truncate(n as usize);
                n * ps
            }
            // The room `ensure_room_fixed` keeps past the next page number stays.
            None => (keep + keep_free) * ps,
        };
        if end < before {
            self.file
                .truncate(end)
                .map_err(|e| Error::io(&self.path, e))?;
            self.file_len_bytes.store(end, Ordering::Release);
        }
        drop((cow, f));
        Ok(before.saturating_sub(end))
    }

    /// Cow: the pages that keep the file from being cut (at most `limit`) when a
    /// quarter or more of its locations, and at least `MOVE_DOWN_MIN_FREE`, are free. A page whose location lies past where
    /// the file would end were it compact goes to the lowest free location when it is
    /// next written; the caller makes it dirty for that. A map chunk there is marked for
    /// the next capture, which writes it low the same way. A later checkpoint frees the
    /// old locations and `trim` cuts them.
    pub fn pages_to_move_down(&self, limit: usize) -> Vec<u64> {
        if self.protection != Protection::Cow {
            return Vec::new();
        }
        let mut st = lock(&self.cow);
        let free = st.free.len() as u64;
        if free < MOVE_DOWN_MIN_FREE || free * 4 < st.file_locations {
            return Vec::new();
        }
        let compact_end = st.file_locations - free;
        let high = |loc1: u64| loc1 > compact_end;
        let chunks: Vec<usize> = (0..st.chunk_locations.len())
            .filter(|&c| high(st.chunk_locations[c]))
            .collect();
        st.dirty_chunks.extend(chunks);
        st.map
            .iter()
            .enumerate()
            .filter(|&(_, &loc1)| high(loc1))
            .map(|(p, _)| p as u64)
            .take(limit)
            .collect()
    }

    /// Redo met a record that makes `page` anew: it is some relation's again.
    pub fn page_reused(&self, page: u64) {
        let mut f = lock(&self.free_pages);
        if f.ready.remove(&page) {
            return;
        }
        f.pending.retain(|&(_, _, p)| p != page);
    }

    /// Every free page, ready or not (what a checkpoint keeps), sorted.
    pub fn free_page_list(&self) -> Vec<u64> {
        let f = lock(&self.free_pages);
        let mut v: Vec<u64> = f.ready.iter().copied().collect();
        v.extend(f.pending.iter().map(|&(_, _, p)| p));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Makes sure page numbers below `page + 1` are never handed out again (redo).
    pub fn note_page_no(&self, page: u64) {
        self.next_page
            .fetch_max(page.saturating_add(1), Ordering::SeqCst);
    }

    pub fn next_page_no(&self) -> u64 {
        self.next_page.load(Ordering::SeqCst)
    }

    /// Location of a page, if it has been written.
    fn location(&self, page_no: u64) -> Option<u64> {
        match self.protection {
            Protection::Cow => {
                let st = lock(&self.cow);
                match st.map.get(page_no as usize) {
                    Some(&l) if l > 0 => Some(l - 1),
                    _ => None,
                }
            }
            _ => {
                // Known length instead of an fstat per read: the file only grows, and
                // only through `write_location`.
                let len = self.file_len_bytes.load(Ordering::Acquire);
                if page_no
                    .saturating_add(1)
                    .saturating_mul(self.page_size as u64)
                    <= len
                {
                    Some(page_no)
                } else {
                    None
                }
            }
        }
    }

    /// Reads a page into `buf`. Ok(false) if the page was never written (it has no
    /// location). The checksum, page number and layout are verified.
    pub fn read_page(&self, page_no: u64, buf: &mut [u8]) -> Result<bool> {
        let Some(loc) = self.location(page_no) else {
            return Ok(false);
        };
        self.read_location(loc, page_no, PageKind::Heap, buf)?;
        if cfg!(debug_assertions) {
            if let Some(&w) = lock(&self.last_written).get(&page_no) {
                let got = PageRef(buf).lsn();
                assert!(
                    got >= w,
                    "stale read of page {page_no}: LSN {got}, last written {w} (location {loc})"
                );
            }
        }
        Ok(true)
    }

    fn read_location(&self, loc: u64, page_no: u64, kind: PageKind, buf: &mut [u8]) -> Result<()> {
        let offset = loc * self.page_size as u64;
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io(&self.path, e))?;
        if let Err((expected, actual)) = page::verify_checksum(buf, self.database_id) {
            return Err(Error::ChecksumMismatch {
                path: self.path.clone(),
                page: page_no,
                location: loc,
                expected,
                actual,
            });
        }
        let p = PageRef(buf);
        let corrupt = |reason: String| Error::CorruptPage {
            path: self.path.clone(),
            page: page_no,
            location: loc,
            reason,
        };
        if p.page_no() != page_no {
            return Err(corrupt(format!("holds page {} instead", p.page_no())));
        }
        if kind == PageKind::Map {
            if p.kind_byte() != PageKind::Map as u8 {
                return Err(corrupt("not a map page".into()));
            }
            return Ok(());
        }
        p.validate().map_err(corrupt)
    }

    /// Writes a page (its checksum is set here). In cow mode it goes to a new location.
    pub fn write_page(&self, page_no: u64, buf: &mut [u8]) -> Result<()> {
        page::seal(buf, self.database_id);
        if cfg!(debug_assertions) {
            let lsn = PageRef(buf).lsn();
            let mut w = lock(&self.last_written);
            let e = w.entry(page_no).or_insert(0);
            assert!(lsn >= *e, "page {page_no} written with LSN {lsn} after {e}");
            *e = lsn;
        }
        let loc = match self.protection {
            Protection::Cow => self.allocate_location(),
            _ => page_no,
        };
        self.write_location(loc, buf)?;
        if self.protection == Protection::Cow {
            let mut st = lock(&self.cow);
            let idx = page_no as usize;
            if st.map.len() <= idx {
                let per = self.entries_per_chunk();
                let new_len = (idx / per + 1) * per;
                st.map.resize(new_len, 0);
            }
            let old = std::mem::replace(&mut st.map[idx], loc + 1);
            let per = self.entries_per_chunk();
            st.dirty_chunks.insert(idx / per);
            if old > 0 {
                Self::free_location(&mut st, old - 1);
            }
        }
        Ok(())
    }

    fn write_location(&self, loc: u64, buf: &[u8]) -> Result<()> {
        let offset = loc * self.page_size as u64;
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| Error::io(&self.path, e))?;
        self.file_len_bytes
            .fetch_max(offset + buf.len() as u64, Ordering::AcqRel);
        self.stats
            .data_pages_written
            .fetch_add(1, Ordering::Relaxed);
        self.stats
            .data_bytes_written
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn allocate_location(&self) -> u64 {
        let mut st = lock(&self.cow);
        let loc = match st.free.pop_first() {
            Some(l) => l,
            None => {
                st.file_locations += 1;
                st.file_locations - 1
            }
        };
        debug_assert!(
            !st.map.contains(&(loc + 1)) && !st.chunk_locations.contains(&(loc + 1)),
            "location {loc} handed out while the page map still uses it"
        );
        debug_assert!(
            !st.pending.iter().any(|&(_, l)| l == loc),
            "location {loc} handed out while a checkpoint may still reference it"
        );
        let epoch = st.epoch;
        if st.born_epoch.len() <= loc as usize {
            st.born_epoch.resize(loc as usize + 1, 0);
        }
        st.born_epoch[loc as usize] = epoch;
        loc
    }

    /// A location replaced by a rewrite. If it was written after the last capture, no
    /// checkpoint can point at it: free now. Otherwise the latest capture (and maybe the
    /// last complete checkpoint) points at it: wait for the next checkpoint to complete.
    fn free_location(st: &mut CowState, loc: u64) {
        if st.born_epoch.get(loc as usize) == Some(&st.epoch) {
            st.free.insert(loc);
        } else {
            let e = st.epoch;
            st.pending.push((e, loc));
        }
    }

    /// Takes the map chunks to write for a checkpoint and ends the epoch.
    pub fn capture_map(&self) -> MapCapture {
        let mut st = lock(&self.cow);
        let per = self.entries_per_chunk();
        let dirty = std::mem::take(&mut st.dirty_chunks);
        let chunks = dirty
            .into_iter()
            .map(|c| {
                let start = c * per;
                (c, st.map[start..start + per].to_vec())
            })
            .collect();
        let epoch = st.epoch;
        st.epoch += 1;
        MapCapture {
            epoch,
            chunks,
            old_chunk_locations: Vec::new(),
        }
    }

    /// Writes the captured chunks to new locations; returns the chunk locations (+1) the
    /// checkpoint file must list.
    pub fn write_map(&self, capture: &mut MapCapture) -> Result<Vec<u64>> {
        let mut buf = vec![0u8; self.page_size];
        for (chunk, entries) in &capture.chunks {
            PageMut(&mut buf).init(PageKind::Map, *chunk as u64, 0);
            for (j, e) in entries.iter().enumerate() {
                let at = PAGE_HEADER_BYTES + j * 8;
                buf[at..at + 8].copy_from_slice(&e.to_le_bytes());
            }
            page::seal(&mut buf, self.database_id);
            let loc = self.allocate_location();
            self.write_location(loc, &buf)?;
            let mut st = lock(&self.cow);
            if st.chunk_locations.len() <= *chunk {
                st.chunk_locations.resize(chunk + 1, 0);
            }
            let old = std::mem::replace(&mut st.chunk_locations[*chunk], loc + 1);
            if old > 0 {
                capture.old_chunk_locations.push(old - 1);
            }
        }
        Ok(lock(&self.cow).chunk_locations.clone())
    }

    /// The checkpoint of `capture` is durable: locations no checkpoint can point at any
    /// more become free.
    pub fn checkpoint_complete(&self, capture: MapCapture) {
        let mut st = lock(&self.cow);
        let (done, keep): (Vec<_>, Vec<_>) =
            st.pending.iter().partition(|(e, _)| *e <= capture.epoch);
        st.pending = keep;
        for (_, loc) in done {
            st.free.insert(loc);
        }
        for loc in capture.old_chunk_locations {
            st.free.insert(loc);
        }
    }

    /// fdatasync of the data file.
    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.path, e))?;
        self.stats.data_fsyncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Size of the data file in bytes.
    pub fn file_bytes(&self) -> Result<u64> {
        self.file.len().map_err(|e| Error::io(&self.path, e))
    }

    /// How urgently rewritten locations waiting for a checkpoint should be freed. Cow
    /// mode keeps the data file within a small factor of the fixed-place modes by making
    /// the map durable (a map-only checkpoint) at `Soft` and holding writers back at `Hard`.
    pub fn space_pressure(&self) -> SpacePressure {
        if self.protection != Protection::Cow {
            return SpacePressure::None;
        }
        let st = lock(&self.cow);
        let pending = st.pending.len() as u64;
        if pending < 32 || pending * 16 <= st.file_locations {
            SpacePressure::None
        } else if pending * 8 <= st.file_locations {
            SpacePressure::Soft
        } else {
            SpacePressure::Hard
        }
    }

    /// Cow: makes sure `wanted` locations, and one per map chunk, are free before a
    /// change that may dirty pages, growing the file (preallocated: the file system
    /// gives the space now) when they are not; on a full file system the change still
    /// goes ahead while `least` are free. Every dirty page then has a location to go to
    /// when it is written, evicted or checkpointed, so a full disk refuses the change
    /// that does not fit (`DiskFull`, before anything is written) instead of failing a
    /// page write later, which fences the database. The file grows by at least
    /// `ROOM_MIN_GROWTH` locations or an eighth of itself, so that it grows rarely (by
    /// just what is missing when that much does not fit). Fixed-place modes write each
    /// page at its own place: there `dirty` pages need no room of their own (each has
    /// its place), and the file is kept `wanted - dirty` pages past the next page number
    /// (`ensure_room_fixed`).
    pub fn ensure_room(&self, dirty: u64, least: u64, wanted: u64) -> Result<()> {
        if self.protection != Protection::Cow {
            return self.ensure_room_fixed(least - dirty, wanted - dirty);
        }
        let mut st = lock(&self.cow);
        let chunks = st.chunk_locations.len() as u64 + 1;
        let need = wanted + chunks;
        let free = st.free.len() as u64;
        if free >= need {
            return Ok(());
        }
        let ps = self.page_size as u64;
        let from = st.file_locations;
        let generous = (need - free)
            .max(ROOM_MIN_GROWTH)
            .max(st.file_locations / 8);
        // (Replaced by the last growth's error: both are tried before it is read.)
        let mut failure = (need - free, std::io::Error::from_raw_os_error(libc::ENOSPC));
        for grow in [generous, need - free] {
            match self.file.preallocate((from + grow) * ps) {
                Ok(()) => {
                    let to = from + grow;
                    let epoch = st.epoch;
                    st.born_epoch.resize(to as usize, epoch);
                    st.free.extend(from..to);
                    st.file_locations = to;
                    self.file_len_bytes.fetch_max(to * ps, Ordering::AcqRel);
                    return Ok(());
                }
                Err(e) if !no_room(&e) => return Err(Error::io(&self.path, e)),
                Err(e) => failure = (grow, e),
            }
        }
        // No room to grow: a change that needs no more than what is left goes on.
        if free >= least + chunks {
            return Ok(());
        }
        let (grow, source) = failure;
        Err(Error::DiskFull {
            path: self.path.clone(),
            bytes: grow * ps,
            source,
        })
    }

    /// Fixed places: the file holds `wanted` pages past the next page number (pages
    /// given back and ready count too), grown by `fallocate` as in cow mode, so that a
    /// new page's first write has its room; on a full file system a change goes ahead
    /// while `least` are there. A page number handed out past the file's end is written
    /// there later, by eviction or a checkpoint, which a full disk would fail (fencing
    /// the database): this refuses the change instead, before it logs anything.
    fn ensure_room_fixed(&self, least: u64, wanted: u64) -> Result<()> {
        let ps = self.page_size as u64;
        // Under the free list's lock: no page number is handed out meanwhile (and
        // `trim` holds it while it cuts the file).
        let f = lock(&self.free_pages);
        let next = self.next_page.load(Ordering::SeqCst);
        let pages = self.file_len_bytes() / ps;
        let room = pages.saturating_sub(next) + f.ready.len() as u64;
        if room >= wanted {
            return Ok(());
        }
        let generous = (wanted - room).max(ROOM_MIN_GROWTH).max(pages / 8);
        let mut failure = (
            wanted - room,
            std::io::Error::from_raw_os_error(libc::ENOSPC),
        );
        for grow in [generous, wanted - room] {
            let to = pages.max(next) + grow;
            match self.file.preallocate(to * ps) {
                Ok(()) => {
                    self.file_len_bytes.fetch_max(to * ps, Ordering::AcqRel);
                    return Ok(());
                }
                Err(e) if !no_room(&e) => return Err(Error::io(&self.path, e)),
                Err(e) => failure = (grow, e),
            }
        }
        drop(f);
        if room >= least {
            return Ok(());
        }
        let (grow, source) = failure;
        Err(Error::DiskFull {
            path: self.path.clone(),
            bytes: grow * ps,
            source,
        })
    }

    /// Locations in use and free (cow), for tests and space accounting.
    pub fn location_counts(&self) -> (u64, u64, u64) {
        let st = lock(&self.cow);
        (
            st.file_locations,
            st.free.len() as u64,
            st.pending.len() as u64,
        )
    }
}
