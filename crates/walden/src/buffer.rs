//! The buffer pool: a fixed number of page frames, a page table, clock eviction of
//! unpinned pages, pin guards and dirty tracking. It enforces the WAL rule: before a
//! dirty page is written, the WAL is made durable up to the page's LSN.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::lock_order::{self, Lock};

use crate::error::{Error, Result};
use crate::page::page_lsn;
use crate::poison::Poison;
use crate::store::PageStore;

/// The page table's hash of a page number: one multiplication, its top bits mixed down
/// for the table's bucket index. Page numbers are not chosen by anyone who could aim
/// them at one bucket, so SipHash's protection against chosen keys buys nothing here.
#[derive(Default)]
struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

/// What the buffer pool needs from the log for the WAL rule (no page reaches disk before
/// the WAL covering its LSN is durable), without depending on the WAL itself: the WAL
/// implements it and is handed to the pool once open.
pub trait LogDurability: Send + Sync {
    /// End of the log known durable.
    fn durable_lsn(&self) -> u64;
    /// Makes the log durable up to at least `lsn`.
    fn flush_to(&self, lsn: u64) -> Result<()>;
}

const NO_PAGE: u64 = u64::MAX;

/// Whether a frame's write may wait for the pages it must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    Always,
    /// Not for a page that is pinned (eviction: the caller may hold its latch).
    NotOnPinned,
}

/// What `flush_frame` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flushed {
    Clean,
    Written,
    /// Left dirty: eviction would have had to wait.
    Skipped,
    /// A page it must follow has a write to come after all: start again.
    Retry,
}

struct Frame {
    /// The page latch and the page bytes (allocated on first use).
    data: RwLock<Vec<u8>>,
    /// Page in this frame, or NO_PAGE. Changed only under the table lock with pins == 0.
    page_no: AtomicU64,
    pins: AtomicU32,
    dirty: AtomicBool,
    referenced: AtomicBool,
    /// Set once the page content is valid (load finished).
    loaded: AtomicBool,
    /// Serializes writes of this frame to disk; holds the page's copy while it is written.
    io: Mutex<Vec<u8>>,
    /// Pages that must reach disk before this one does (`PinnedPage::write_after`).
    write_after: Mutex<Vec<u64>>,
}

struct Table {
    map: HashMap<u64, usize, BuildHasherDefault<PageHasher>>,
    hand: usize,
}

/// How to bring a page into the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// Read it from disk if it is not cached.
    Read,
    /// The caller will overwrite the whole page (new page, page image): never read it.
    Overwrite,
    /// Read it from disk if it was ever written, else a zeroed page (LSN 0): redo of a
    /// record that builds a new page from another, which must not redo a page a later
    /// write already holds (copy-on-write placement only: a fixed place never written
    /// fails its checksum).
    ReadOrNew,
}

/// Locations kept free beyond one per frame (`BufferPool::ensure_room`): what the
/// changes running at once may write between two checks.
pub const ROOM_MARGIN: u64 = 64;
/// The least room a change goes ahead with when the file cannot grow to
/// `ROOM_MARGIN`: a change of a few pages (a delete to free space) still fits on a full
/// disk while the margin lasts.
pub const ROOM_MIN: u64 = 16;

/// The pool of page frames.
pub struct BufferPool {
    frames: Vec<Frame>,
    /// Page table and clock hand.
    table: Mutex<Table>,
    page_size: usize,
    store: Arc<PageStore>,
    /// Set after recovery has found the end of the log; before that, every page LSN
    /// refers to WAL already on disk and synced (recovery syncs it first).
    wal: OnceLock<Arc<dyn LogDurability>>,
    poison: Arc<Poison>,
    /// Before the WAL is set (recovery): the highest page LSN read from disk and its
    /// page, which recovery compares with the end of the log it found.
    highest_read_lsn: Mutex<(u64, u64)>,
    /// Frames dirty now (what `ensure_room` keeps locations for).
    dirty_frames: AtomicU64,
}

/// A pinned page: it cannot be evicted while this guard lives.
pub struct PinnedPage<'a> {
    pool: &'a BufferPool,
    idx: usize,
    page_no: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PinnedPage<'_> {
    pub fn page_no(&self) -> u64 {
        self.page_no
    }

    /// Shared latch on the page bytes.
    pub fn read(&self) -> RwLockReadGuard<'_, Vec<u8>> {
        self.pool.frames[self.idx]
            .data
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Exclusive latch on the page bytes; the page is marked dirty. A thread takes
    /// these in page-number order (checked in debug builds: `lock_order`).
    pub fn write(&self) -> PageWriteGuard<'_> {
        lock_order::acquire(Lock::PageWrite, self.page_no);
        self.latch_write()
    }

    fn latch_write(&self) -> PageWriteGuard<'_> {
        let f = &self.pool.frames[self.idx];
        let g = f.data.write().unwrap_or_else(|e| e.into_inner());
        if !f.dirty.swap(true, Ordering::AcqRel) {
            self.pool.dirty_frames.fetch_add(1, Ordering::Relaxed);
        }
        PageWriteGuard {
            g,
            page_no: self.page_no,
        }
    }

    /// Exclusive latch without the page-number order check: only for a thread that holds
    /// a lock excluding every other writer of these pages (a B-tree's structure lock held
    /// exclusively), so that no other thread can wait for one of its latches while
    /// holding another.
    pub fn write_any_order(&self) -> PageWriteGuard<'_> {
        lock_order::acquire_unordered(Lock::PageWrite, self.page_no);
        self.latch_write()
    }

    /// Notes that this page must not reach disk before `first` has (as it stands now):
    /// a change logged here relies on a page the redo of whose record reads this one (a
    /// B-tree split's new right page is rebuilt at redo from the left page as it was).
    /// Every write of this page first writes `first` if it is dirty, or waits for its
    /// write in flight.
    pub fn write_after(&self, first: u64) {
        let f = &self.pool.frames[self.idx];
        let mut w = lock(&f.write_after);
        if !w.contains(&first) {
            w.push(first);
        }
    }
}

/// An exclusive latch on a page's bytes (`PinnedPage::write`).
pub struct PageWriteGuard<'a> {
    g: RwLockWriteGuard<'a, Vec<u8>>,
    page_no: u64,
}

impl std::ops::Deref for PageWriteGuard<'_> {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.g
    }
}

impl std::ops::DerefMut for PageWriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.g
    }
}

impl Drop for PageWriteGuard<'_> {
    fn drop(&mut self) {
        lock_order::release(Lock::PageWrite, self.page_no);
    }
}

impl Drop for PinnedPage<'_> {
    fn drop(&mut self) {
        self.pool.frames[self.idx]
            .pins
            .fetch_sub(1, Ordering::AcqRel);
    }
}

impl BufferPool {
    pub fn new(capacity_bytes: u64, store: Arc<PageStore>, poison: Arc<Poison>) -> BufferPool {
        let page_size = store.page_size();
        let n = (capacity_bytes / page_size as u64).max(16) as usize;
        let frames = (0..n)
            .map(|_| Frame {
                data: RwLock::new(Vec::new()),
                page_no: AtomicU64::new(NO_PAGE),
                pins: AtomicU32::new(0),
                dirty: AtomicBool::new(false),
                referenced: AtomicBool::new(false),
                loaded: AtomicBool::new(false),
                io: Mutex::new(Vec::new()),
                write_after: Mutex::new(Vec::new()),
            })
            .collect();
        BufferPool {
            frames,
            table: Mutex::new(Table {
                map: HashMap::default(),
                hand: 0,
            }),
            page_size,
            store,
            wal: OnceLock::new(),
            highest_read_lsn: Mutex::new((0, 0)),
            dirty_frames: AtomicU64::new(0),
            poison,
        }
    }

    /// Connects the WAL once recovery knows where it ends.
    pub fn set_wal(&self, wal: Arc<dyn LogDurability>) {
        let _ = self.wal.set(wal);
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The pool's size: frames × page size.
    pub fn capacity_bytes(&self) -> u64 {
        self.frames.len() as u64 * self.page_size as u64
    }

    /// Before a change that may dirty pages: room on disk for every dirty frame to be
    /// written, and `ROOM_MARGIN` more (what the changes running at once dirty before
    /// their next check), reserved now (`PageStore::ensure_room`): a full disk refuses the
    /// change (`DiskFull`) rather than a page write later.
    ///
    /// A change that makes pages (`makes_pages`: a new page of a table or an index
    /// build) needs the whole margin; one that changes pages there are goes ahead on a
    /// full disk while `ROOM_MIN` are left, so that deletes and small updates still run
    /// once inserts are refused.
    pub fn ensure_room(&self, makes_pages: bool) -> Result<()> {
        let dirty = self.dirty_frames.load(Ordering::Relaxed);
        let least = if makes_pages { ROOM_MARGIN } else { ROOM_MIN };
        self.store
            .ensure_room(dirty, dirty + least, dirty + ROOM_MARGIN)
    }

    /// The free locations `ensure_room` keeps now: one per dirty frame, and
    /// `ROOM_MARGIN`.
    pub fn room_wanted(&self) -> u64 {
        self.dirty_frames.load(Ordering::Relaxed) + ROOM_MARGIN
    }

    pub fn store(&self) -> &Arc<PageStore> {
        &self.store
    }

    /// Pins a page, loading it if needed. With `Fetch::Read`, a page that was never
    /// written is an error.
    pub fn fetch(&self, page_no: u64, how: Fetch) -> Result<PinnedPage<'_>> {
        let mut skipped = 0usize;
        loop {
            let mut t = lock(&self.table);
            if let Some(&idx) = t.map.get(&page_no) {
                let f = &self.frames[idx];
                f.pins.fetch_add(1, Ordering::AcqRel);
                f.referenced.store(true, Ordering::Relaxed);
                drop(t);
                // Loaded already (the loader stores `loaded` after the bytes, and the pin
                // keeps the frame from being reused), or wait for the load in progress
                // (the loader holds the write latch).
                let ready = || {
                    f.loaded.load(Ordering::Acquire) && f.page_no.load(Ordering::Acquire) == page_no
                };
                let ok = ready() || {
                    let _g = f.data.read().unwrap_or_else(|e| e.into_inner());
                    ready()
                };
                let pinned = PinnedPage {
                    pool: self,
                    idx,
                    page_no,
                };
                if ok {
                    return Ok(pinned);
                }
                drop(pinned);
                continue;
            }
            let idx = self.find_victim(&mut t)?;
            let f = &self.frames[idx];
            if f.dirty.load(Ordering::Acquire) {
                f.pins.fetch_add(1, Ordering::AcqRel);
                drop(t);
                let r = self.flush_frame(idx, Waiting::NotOnPinned);
                t = lock(&self.table);
                f.pins.fetch_sub(1, Ordering::AcqRel);
                if r? == Flushed::Skipped {
                    // A page it must follow is in use (perhaps latched by this thread):
                    // evict another, unless every frame was tried.
                    skipped += 1;
                    if skipped > 3 * self.frames.len() {
                        return Err(Error::BufferPoolExhausted {
                            frames: self.frames.len(),
                        });
                    }
                    continue;
                }
                // Take the frame just cleaned (rather than sweeping on and writing out
                // a burst of other dirty frames), unless it was used again meanwhile or
                // someone else brought our page in.
                let reusable = f.pins.load(Ordering::Acquire) == 0
                    && !f.dirty.load(Ordering::Acquire)
                    && !t.map.contains_key(&page_no);
                if !reusable {
                    continue;
                }
            }
            let old = f.page_no.swap(page_no, Ordering::AcqRel);
            if old != NO_PAGE {
                t.map.remove(&old);
            }
            t.map.insert(page_no, idx);
            f.pins.store(1, Ordering::Release);
            f.referenced.store(true, Ordering::Relaxed);
            f.loaded.store(false, Ordering::Release);
            // Unpinned until now, so nobody holds the latch: this cannot block.
            let mut g = f.data.write().unwrap_or_else(|e| e.into_inner());
            drop(t);
            let pinned = PinnedPage {
                pool: self,
                idx,
                page_no,
            };
            if g.len() != self.page_size {
                *g = vec![0u8; self.page_size];
            }
            lock(&f.write_after).clear();
            let r = match how {
                Fetch::Overwrite => {
                    g.fill(0);
                    Ok(true)
                }
                Fetch::ReadOrNew => self.store.read_page(page_no, &mut g).and_then(|found| {
                    if found {
                        self.check_read_lsn(page_no, &g)?;
                    } else {
                        g.fill(0);
                    }
                    Ok(true)
                }),
                Fetch::Read => self.store.read_page(page_no, &mut g).and_then(|found| {
                    // Only a page that was read has an LSN to check (else the frame
                    // still holds its previous page's bytes).
                    if found {
                        self.check_read_lsn(page_no, &g)?;
                    }
                    Ok(found)
                }),
            };
            match r {
                Ok(true) => {
                    f.loaded.store(true, Ordering::Release);
                    drop(g);
                    return Ok(pinned);
                }
                Ok(false) | Err(_) => {
                    let mut t = lock(&self.table);
                    t.map.remove(&page_no);
                    f.page_no.store(NO_PAGE, Ordering::Release);
                    drop(t);
                    drop(g);
                    drop(pinned);
                    return Err(match r {
                        Err(e) => e,
                        _ => Error::CorruptPage {
                            path: self.store.path().to_path_buf(),
                            page: page_no,
                            location: page_no,
                            reason: "page was never written".into(),
                        },
                    });
                }
            }
        }
    }

    /// A page on disk was written only after the WAL up to its LSN was durable (rule
    /// 5), so a page LSN past the durable log means WAL was lost, or the data file is
    /// not this log's: an error, never data.
    fn check_read_lsn(&self, page_no: u64, page: &[u8]) -> Result<()> {
        let lsn = page_lsn(page);
        let Some(wal) = self.wal.get() else {
            let mut high = lock(&self.highest_read_lsn);
            if lsn > high.0 {
                *high = (lsn, page_no);
            }
            return Ok(());
        };
        let durable = wal.durable_lsn();
        if lsn > durable {
            return Err(self.lsn_beyond_wal(page_no, lsn, durable));
        }
        Ok(())
    }

    fn lsn_beyond_wal(&self, page_no: u64, lsn: u64, wal_end: u64) -> Error {
        Error::CorruptPage {
            path: self.store.path().to_path_buf(),
            page: page_no,
            location: page_no,
            reason: format!(
                "page LSN {lsn} lies beyond the end of the WAL (LSN {wal_end}): WAL the page depends on is missing, or the data file is not this log's"
            ),
        }
    }

    /// Recovery, once it found the end of the log: no page read so far may have a
    /// newer LSN.
    pub fn check_pages_read_before(&self, wal_end: u64) -> Result<()> {
        let (lsn, page_no) = *lock(&self.highest_read_lsn);
        if lsn > wal_end {
            return Err(self.lsn_beyond_wal(page_no, lsn, wal_end));
        }
        Ok(())
    }

    /// Clock sweep over unpinned frames. Caller holds the table lock. After a failed
    /// write or fsync (the database fenced) a dirty frame is never chosen, as it cannot
    /// be written: reads go on through the clean frames (docs/recovery.md rule 20).
    fn find_victim(&self, t: &mut Table) -> Result<usize> {
        let n = self.frames.len();
        let fenced = self.poison.is_set();
        for _ in 0..3 * n {
            let idx = t.hand;
            t.hand = (t.hand + 1) % n;
            let f = &self.frames[idx];
            if f.pins.load(Ordering::Acquire) != 0 {
                continue;
            }
            if fenced && f.dirty.load(Ordering::Acquire) {
                continue;
            }
            if f.page_no.load(Ordering::Acquire) == NO_PAGE {
                return Ok(idx);
            }
            if f.referenced.swap(false, Ordering::Relaxed) {
                continue;
            }
            return Ok(idx);
        }
        // Fenced with every unpinned frame dirty: what stops the read is the fence.
        if fenced {
            self.poison.check()?;
        }
        Err(Error::BufferPoolExhausted { frames: n })
    }

    /// Writes a frame if it is dirty, after making the WAL durable to its LSN and
    /// writing, deepest first, the pages it must follow (`write_after`) that have a write
    /// to come. With `Waiting::NotOnPinned` (eviction, whose caller may hold latches)
    /// nothing is waited for: a chain through a pinned page, a latch or a write in
    /// flight leaves the frame dirty and returns `Skipped`.
    fn flush_frame(&self, idx: usize, waiting: Waiting) -> Result<Flushed> {
        loop {
            let target = match self.deepest_pending(idx, waiting)? {
                Some(t) => t,
                None => return Ok(Flushed::Skipped),
            };
            let r = self.write_one(target, waiting);
            if target != idx {
                self.frames[target].pins.fetch_sub(1, Ordering::AcqRel);
            }
            match r? {
                Flushed::Skipped => return Ok(Flushed::Skipped),
                Flushed::Retry => continue,
                done if target == idx => return Ok(done),
                _ => continue,
            }
        }
    }

    /// The frame a write of `idx` must begin with: the end of the chain of pages to
    /// follow that still have a write to come (pinned, unless it is `idx`), or `idx`
    /// itself. None when eviction must not wait for that chain; an error when the chain
    /// runs in a circle (no write could ever begin).
    fn deepest_pending(&self, idx: usize, waiting: Waiting) -> Result<Option<usize>> {
        let mut cur = idx;
        let mut steps = 0usize;
        loop {
            let deps = lock(&self.frames[cur].write_after).clone();
            let t = lock(&self.table);
            let next = deps.iter().find_map(|p| {
                let &j = t.map.get(p)?;
                self.pending(j).then_some(j)
            });
            let Some(j) = next else {
                return Ok(Some(cur));
            };
            // Back at the page being written, or longer than the pool has frames: the
            // chain runs in a circle, which writing would wait on forever. (Waits
            // point at higher page numbers, docs/recovery.md rules 28 and 33, so only a
            // bug gets here.)
            steps += 1;
            if j == idx || steps > self.frames.len() {
                let page = |f: usize| self.frames[f].page_no.load(Ordering::Acquire);
                let mut pages = vec![page(idx), page(cur), page(j)];
                pages.dedup();
                if cur != idx {
                    self.frames[cur].pins.fetch_sub(1, Ordering::AcqRel);
                }
                return Err(Error::WriteOrderCycle { pages });
            }
            if waiting == Waiting::NotOnPinned && self.frames[j].pins.load(Ordering::Acquire) != 0 {
                if cur != idx {
                    self.frames[cur].pins.fetch_sub(1, Ordering::AcqRel);
                }
                return Ok(None);
            }
            self.frames[j].pins.fetch_add(1, Ordering::AcqRel);
            drop(t);
            if cur != idx {
                self.frames[cur].pins.fetch_sub(1, Ordering::AcqRel);
            }
            cur = j;
        }
    }

    /// Whether a frame has a write to come: dirty, or written by another thread now.
    fn pending(&self, j: usize) -> bool {
        let f = &self.frames[j];
        f.dirty.load(Ordering::Acquire) || f.io.try_lock().is_err()
    }

    /// Writes one frame if it is dirty and every page it must follow is written
    /// (`Retry` when one is not, any more).
    fn write_one(&self, idx: usize, waiting: Waiting) -> Result<Flushed> {
        let f = &self.frames[idx];
        let mut copy = match waiting {
            Waiting::Always => lock(&f.io),
            Waiting::NotOnPinned => match f.io.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return Ok(Flushed::Skipped),
            },
        };
        let (page_no, first) = {
            let g = match waiting {
                Waiting::Always => f.data.read().unwrap_or_else(|e| e.into_inner()),
                Waiting::NotOnPinned => match f.data.try_read() {
                    Ok(g) => g,
                    Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) => return Ok(Flushed::Skipped),
                },
            };
            if !f.dirty.load(Ordering::Acquire) || !f.loaded.load(Ordering::Acquire) {
                return Ok(Flushed::Clean);
            }
            // Read with the copy, under the latch: every change in the copy that needs
            // another page first has named it by now.
            let first = lock(&f.write_after).clone();
            if !first.is_empty() {
                let t = lock(&self.table);
                if first
                    .iter()
                    .any(|p| t.map.get(p).is_some_and(|&j| j != idx && self.pending(j)))
                {
                    return Ok(Flushed::Retry);
                }
            }
            if f.dirty.swap(false, Ordering::AcqRel) {
                self.dirty_frames.fetch_sub(1, Ordering::Relaxed);
            }
            copy.clear();
            copy.extend_from_slice(&g);
            (f.page_no.load(Ordering::Acquire), first)
        };
        let r = self.write_copy(page_no, &mut copy);
        // The copy is not kept with the frame: a pool whose every frame was written once
        // would otherwise hold each page twice.
        *copy = Vec::new();
        if r.is_err() {
            if !f.dirty.swap(true, Ordering::AcqRel) {
                self.dirty_frames.fetch_add(1, Ordering::Relaxed);
            }
        } else if !first.is_empty() {
            lock(&f.write_after).retain(|p| !first.contains(p));
        }
        self.poison.guard(r).map(|_| Flushed::Written)
    }

    fn write_copy(&self, page_no: u64, copy: &mut [u8]) -> Result<()> {
        self.poison.check()?;
        if let Some(wal) = self.wal.get() {
            wal.flush_to(page_lsn(copy))?;
        }
        self.store.write_page(page_no, copy)
    }

    /// Whether a page is in the pool now (it may be evicted right after).
    pub fn is_cached(&self, page_no: u64) -> bool {
        lock(&self.table).map.contains_key(&page_no)
    }

    /// Forgets pages that will never be read again (a dropped relation's, like
    /// PostgreSQL's DropRelationBuffers): their frames are freed, dirty or not, without
    /// being written. A frame pinned or being written now is left as it is (written when
    /// evicted, like any other). Returns how many frames were freed.
    pub fn discard(&self, pages: &[u64]) -> usize {
        let mut t = lock(&self.table);
        let mut freed = 0;
        for page in pages {
            let Some(&idx) = t.map.get(page) else {
                continue;
            };
            let f = &self.frames[idx];
            // Pins are taken under the table lock, which this holds: an unpinned frame
            // stays unpinned. A write in flight holds `io` (and takes the table lock
            // under it, so only a try here).
            if f.pins.load(Ordering::Acquire) != 0 {
                continue;
            }
            let Ok(_io) = f.io.try_lock() else {
                continue;
            };
            if f.dirty.swap(false, Ordering::AcqRel) {
                self.dirty_frames.fetch_sub(1, Ordering::Relaxed);
            }
            f.loaded.store(false, Ordering::Release);
            f.referenced.store(false, Ordering::Relaxed);
            f.page_no.store(NO_PAGE, Ordering::Release);
            lock(&f.write_after).clear();
            t.map.remove(page);
            freed += 1;
        }
        freed
    }

    /// Writes every dirty page (for a checkpoint), calling `after_write` after each
    /// one. Writers keep going meanwhile.
    pub fn flush_all_with(&self, after_write: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        for idx in 0..self.frames.len() {
            let f = &self.frames[idx];
            if !f.dirty.load(Ordering::Acquire) {
                // A write of this frame may be in flight (an eviction cleared the flag
                // and has not written yet): the checkpoint must not complete before it
                // does, so wait for the frame's I/O lock. If that write failed, the flag
                // is set again (and the database fenced) before the lock is released.
                drop(lock(&f.io));
                if !f.dirty.load(Ordering::Acquire) {
                    continue;
                }
            }
            // Pin first (under the table lock, like every pin): an unpinned frame could
            // be evicted and its page re-read from disk while this write is in flight.
            {
                let _t = lock(&self.table);
                if f.page_no.load(Ordering::Acquire) == NO_PAGE {
                    continue;
                }
                f.pins.fetch_add(1, Ordering::AcqRel);
            }
            let r = self.flush_frame(idx, Waiting::Always);
            f.pins.fetch_sub(1, Ordering::AcqRel);
            r?;
            after_write()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Stats;
    use crate::store::Protection;
    use crate::vfs::{SimVfs, Vfs};

    /// Two pages that must each reach disk after the other (which the rules forbid: a
    /// bug) make a flush fail with an error naming them, rather than loop forever.
    #[test]
    fn pages_waiting_for_each_other_are_an_error_not_a_hang() {
        let vfs: Arc<dyn Vfs> = Arc::new(SimVfs::new(1));
        let store = PageStore::create(
            &vfs,
            std::path::Path::new("/db/data"),
            7,
            4096,
            Protection::None,
            Arc::new(Stats::default()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let pool = BufferPool::new(16 * 4096, Arc::new(store), Arc::new(Poison::default()));
        let (a, b) = (
            pool.store().allocate_page_no(),
            pool.store().allocate_page_no(),
        );
        for (p, after) in [(a, b), (b, a)] {
            let pinned = pool
                .fetch(p, Fetch::Overwrite)
                .unwrap_or_else(|e| panic!("{e}"));
            drop(pinned.write_any_order());
            pinned.write_after(after);
        }
        match pool.flush_all_with(&mut || Ok(())) {
            Err(Error::WriteOrderCycle { pages }) => {
                assert!(pages.contains(&a) && pages.contains(&b), "{pages:?}")
            }
            other => panic!("expected a write-order cycle, got {other:?}"),
        }
    }
}
