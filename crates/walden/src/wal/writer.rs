//! The WAL writer: appends records to an in-memory buffer, writes the buffer out as frames,
//! and makes it durable with group commit (the first committer to take the writer lock
//! writes and syncs everything buffered, for every thread waiting behind it).
//!
//! Lock order: `writer` before `insert`. Appenders take only `insert`; when the buffer
//! grows past `WRITE_OUT_BYTES` they release it and write out through `flush`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::codec::put_varint;
use crate::error::{Error, Result};
use crate::lock_order::{self, Lock};
use crate::page::{PageKind, PageMut};
use crate::poison::Poison;
use crate::stats::{Stats, TxnStats};
use crate::vfs::{OpenMode, Vfs, VfsFile};
use crate::wal::compress::{FrameCompressor, WalCompression};
use crate::wal::format::*;
use crate::wal::record::{
    peek_record_len, put_record, RecordType, MAX_RECORD_HEADER_BYTES, PAGE_IMAGE, UNDO_ONLY,
};

/// Buffered bytes past which an appender writes the buffer out (without syncing).
const WRITE_OUT_BYTES: usize = 4 << 20;
/// Recycled segments kept for reuse; older ones are removed.
const MAX_SPARE_SEGMENTS: usize = 4;

/// Where the log is, physically and logically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalPosition {
    pub segment_no: u64,
    pub offset: u64,
    pub lsn: u64,
}

/// The result of an append: where the record went and what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub lsn: u64,
    pub end_lsn: u64,
    pub rtype: RecordType,
    pub bytes: u32,
}

struct InsertState {
    /// Complete records not yet written out; the first starts at `buffer_start_lsn`.
    buffer: Vec<u8>,
    buffer_start_lsn: u64,
    /// LSN of the next record (end of the last appended one).
    next_lsn: u64,
    /// The redo point of the checkpoint in progress or last completed: the first change to
    /// a page whose LSN is at or below it logs a page image (full-page mode only).
    redo_lsn: u64,
}

struct WriterState {
    segment_no: u64,
    offset: u64,
    file: Option<Arc<dyn VfsFile>>,
    written_lsn: u64,
    spare_buffer: Vec<u8>,
    frame: Vec<u8>,
    /// Old segments ready to be renamed into new ones.
    spare_segments: Vec<u64>,
    /// The next segment made ahead (`prepare_next`): whole, under its temporary name.
    prepared: Option<(u64, Arc<dyn VfsFile>)>,
    compressor: FrameCompressor,
}

/// The write-ahead log of one database.
pub struct Wal {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    segment_size: u64,
    database_id: u64,
    full_page_writes: bool,
    generation: u64,
    /// The codec of new frames (`WalCompression::code`); changeable at any time, since
    /// each frame names its own.
    compression: AtomicU8,
    /// Guarded by its mutex; see the module comment for the lock order.
    insert: Mutex<InsertState>,
    writer: Mutex<WriterState>,
    /// Everything below this LSN is on disk and synced. Only grows.
    durable_lsn: AtomicU64,
    poison: Arc<Poison>,
    stats: Arc<Stats>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a WAL lock is a bug of ours; the state is still the best we have.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The insert lock held (its order against the writer lock is checked in debug builds).
struct InsertLock<'a>(MutexGuard<'a, InsertState>);

impl std::ops::Deref for InsertLock<'_> {
    type Target = InsertState;
    fn deref(&self) -> &InsertState {
        &self.0
    }
}

impl std::ops::DerefMut for InsertLock<'_> {
    fn deref_mut(&mut self) -> &mut InsertState {
        &mut self.0
    }
}

impl Drop for InsertLock<'_> {
    fn drop(&mut self) {
        lock_order::release(Lock::WalInsert, 0);
    }
}

impl Wal {
    /// Takes the insert lock.
    fn lock_insert(&self) -> InsertLock<'_> {
        lock_order::acquire(Lock::WalInsert, 0);
        InsertLock(lock(&self.insert))
    }

    /// Takes the writer lock (never while holding the insert lock).
    fn lock_writer(&self) -> MutexGuard<'_, WriterState> {
        lock_order::before_wal_writer();
        lock(&self.writer)
    }

    /// Opens the log for appending at `end` (the end of the valid log found by recovery,
    /// or the start of a new database). `generation` must be new for this open.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        id: SegmentIdentity,
        full_page_writes: bool,
        compression: WalCompression,
        generation: u64,
        end: WalPosition,
        redo_lsn: u64,
        poison: Arc<Poison>,
        stats: Arc<Stats>,
    ) -> Result<Wal> {
        let path = dir.join(segment_name(end.segment_no));
        let file = if vfs.exists(&path).map_err(|e| Error::io(&path, e))? {
            Some(
                vfs.open(&path, OpenMode::Existing)
                    .map_err(|e| Error::io(&path, e))?,
            )
        } else {
            None
        };
        let wal = Wal {
            vfs,
            dir: dir.to_path_buf(),
            segment_size: id.segment_size,
            database_id: id.database_id,
            full_page_writes,
            generation,
            compression: AtomicU8::new(compression.code()),
            insert: Mutex::new(InsertState {
                buffer: Vec::with_capacity(WRITE_OUT_BYTES + (1 << 20)),
                buffer_start_lsn: end.lsn,
                next_lsn: end.lsn,
                redo_lsn,
            }),
            writer: Mutex::new(WriterState {
                segment_no: end.segment_no,
                offset: end.offset,
                file,
                written_lsn: end.lsn,
                spare_buffer: Vec::with_capacity(WRITE_OUT_BYTES + (1 << 20)),
                frame: Vec::new(),
                spare_segments: Vec::new(),
                prepared: None,
                compressor: FrameCompressor::default(),
            }),
            durable_lsn: AtomicU64::new(end.lsn),
            poison,
            stats,
        };
        {
            // A new database: create its first segment (recovery always ends in a
            // segment that exists).
            let mut w = lock(&wal.writer);
            if w.file.is_none() {
                let file = wal.create_segment(&mut w, end.segment_no)?;
                w.file = Some(file);
            }
        }
        Ok(wal)
    }

    /// The codec of frames written from now on.
    /// The database's global counters (which the log shares with the layers above it).
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    pub fn compression(&self) -> WalCompression {
        WalCompression::from_code(self.compression.load(Ordering::Relaxed))
    }

    pub fn set_compression(&self, codec: WalCompression) {
        self.compression.store(codec.code(), Ordering::Relaxed);
    }

    /// `Err(Poisoned)` once a write or fsync failed (the database refuses writes).
    pub fn check_poison(&self) -> Result<()> {
        self.poison.check()
    }

    pub fn durable_lsn(&self) -> u64 {
        self.durable_lsn.load(Ordering::Acquire)
    }

    /// The LSN the next record will get.
    pub fn insert_lsn(&self) -> u64 {
        self.lock_insert().next_lsn
    }

    /// Appends a record whose payload is `payload`.
    pub fn append(
        &self,
        rtype: RecordType,
        xid: u64,
        payload: &[u8],
        txn: Option<&mut TxnStats>,
    ) -> Result<Appended> {
        self.poison.check()?;
        check_record_size(payload.len())?;
        let (appended, big) = {
            let mut ins = self.lock_insert();
            let a = Self::push_parts(&mut ins, rtype, xid, &[payload]);
            (a, ins.buffer.len() >= WRITE_OUT_BYTES)
        };
        self.account(appended, txn, false);
        if big {
            self.flush(appended.end_lsn, false)?;
        }
        Ok(appended)
    }

    /// Appends a record that changes `page` (already changed in memory, under its write
    /// latch) and sets the page LSN. In full-page mode, the first change to a page after
    /// the redo point logs the whole page instead (its image includes this change), so
    /// that recovery never has to read a possibly torn page; a type that redo uses to
    /// write the page whole (`WILL_INIT`) needs no image. A type whose payload recovery
    /// also needs to roll the transaction back (`KEEP_WITH_IMAGE`: undo tables) keeps it
    /// in an `UNDO_ONLY` record after the image. Returns the record that carries the
    /// payload.
    pub fn append_page_change(
        &self,
        rtype: RecordType,
        xid: u64,
        payload: &[u8],
        page: &mut [u8],
        txn: Option<&mut TxnStats>,
    ) -> Result<Appended> {
        self.append_page_change_inner(rtype, xid, payload, None, page, txn)
    }

    /// Like `append_page_change`, for a record whose redo needs an earlier record of its
    /// transaction, at `refers_to` (`btree_insert_row` takes its key from the rows of an
    /// insert record): recovery reads that record only if it is at or after the redo
    /// point, so when the latest checkpoint's redo point is past it, `fallback` (a
    /// record that stands alone) is logged instead. Decided under the insert lock, where
    /// checkpoints fix their redo point (docs/recovery.md rule 31).
    #[allow(clippy::too_many_arguments)]
    pub fn append_page_change_referring(
        &self,
        rtype: RecordType,
        xid: u64,
        payload: &[u8],
        refers_to: u64,
        fallback: (RecordType, &[u8]),
        page: &mut [u8],
        txn: Option<&mut TxnStats>,
    ) -> Result<Appended> {
        let alt = Some((refers_to, fallback.0, fallback.1));
        self.append_page_change_inner(rtype, xid, payload, alt, page, txn)
    }

    fn append_page_change_inner(
        &self,
        rtype: RecordType,
        xid: u64,
        payload: &[u8],
        alt: Option<(u64, RecordType, &[u8])>,
        page: &mut [u8],
        mut txn: Option<&mut TxnStats>,
    ) -> Result<Appended> {
        self.poison.check()?;
        let longest = alt.map_or(payload.len(), |(_, _, p)| p.len().max(payload.len()));
        check_record_size(longest.max(page.len()) + 1)?;
        let (image, appended, big) = {
            let mut ins = self.lock_insert();
            let (rtype, payload) = match alt {
                Some((refers_to, fallback, fallback_payload)) if refers_to < ins.redo_lsn => {
                    (fallback, fallback_payload)
                }
                _ => (rtype, payload),
            };
            let p = PageMut(page);
            let needs_image =
                self.full_page_writes && !rtype.will_init() && p.lsn() <= ins.redo_lsn;
            let (image, a) = if needs_image {
                let page_no = p.page_no();
                let (lower, upper) = p.hole();
                let img = Self::push_image(&mut ins, xid, page_no, lower, upper, page);
                if rtype.keep_with_image() {
                    let code = [rtype.code];
                    let a = Self::push_parts(&mut ins, UNDO_ONLY, xid, &[&code, payload]);
                    (Some(img), a)
                } else {
                    (None, img)
                }
            } else {
                (None, Self::push_parts(&mut ins, rtype, xid, &[payload]))
            };
            PageMut(page).set_lsn(a.end_lsn);
            (image, a, ins.buffer.len() >= WRITE_OUT_BYTES)
        };
        let index = PageMut(page).kind_byte() == PageKind::Index as u8;
        if let Some(img) = image {
            self.account(img, txn.as_deref_mut(), index);
        }
        self.account(appended, txn, index);
        if big {
            self.flush(appended.end_lsn, false)?;
        }
        Ok(appended)
    }

    fn account(&self, a: Appended, txn: Option<&mut TxnStats>, index: bool) {
        let image = a.rtype == PAGE_IMAGE;
        self.stats
            .wal
            .add(a.rtype.code, a.bytes as u64, image, index);
        if let Some(t) = txn {
            t.add(a.rtype.code, a.bytes as u64, image, index);
        }
    }

    fn push_parts(ins: &mut InsertState, rtype: RecordType, xid: u64, parts: &[&[u8]]) -> Appended {
        let lsn = ins.next_lsn;
        let bytes = put_record(&mut ins.buffer, rtype.code, xid, parts);
        ins.next_lsn += bytes as u64;
        Appended {
            lsn,
            end_lsn: ins.next_lsn,
            rtype,
            bytes,
        }
    }

    /// A page image without its free hole (`record::PageImage`): `page varint | lower
    /// varint | upper varint | page[..lower] | page[upper..]`.
    fn push_image(
        ins: &mut InsertState,
        xid: u64,
        page_no: u64,
        lower: usize,
        upper: usize,
        page: &[u8],
    ) -> Appended {
        let mut head = Vec::with_capacity(16);
        put_varint(&mut head, page_no);
        put_varint(&mut head, lower as u64);
        put_varint(&mut head, upper as u64);
        Self::push_parts(
            ins,
            PAGE_IMAGE,
            xid,
            &[&head, &page[..lower], &page[upper..]],
        )
    }

    /// Writes out the buffer up to at least `lsn`; with `sync`, also makes it durable.
    /// Concurrent callers queue on the writer lock; the first one writes for all of them.
    pub fn flush(&self, lsn: u64, sync: bool) -> Result<()> {
        if sync && self.durable_lsn() >= lsn {
            return Ok(());
        }
        let mut w = self.lock_writer();
        if (sync && self.durable_lsn() >= lsn) || (!sync && w.written_lsn >= lsn) {
            return Ok(());
        }
        self.poison.check()?;
        let r = self.write_out(&mut w);
        let r = r.and_then(|()| {
            if sync && w.written_lsn > self.durable_lsn() {
                self.sync_current(&w)?;
                self.durable_lsn.store(w.written_lsn, Ordering::Release);
                return Ok(true);
            }
            Ok(false)
        });
        let synced = self.poison.guard(r)?;
        if synced {
            // A failed marker write fences the database like any failed write (rule
            // 20); the commit that asked for this flush is then in doubt, as after a
            // failed fsync (it is in fact durable).
            self.poison.guard(self.write_end_marker(&w))?;
        }
        Ok(())
    }

    /// Writes an end marker at the current offset without moving it (the next frame
    /// overwrites it; write_stored_frame always leaves room for a frame header there).
    fn write_end_marker(&self, w: &WriterState) -> Result<()> {
        let header = FrameHeader {
            crc: 0,
            payload_len: 0,
            flags: FLAG_END_MARKER,
            lsn_start: w.written_lsn,
            durable_lsn: self.durable_lsn(),
            generation: self.generation,
        };
        let mut frame = Vec::with_capacity(FRAME_HEADER_BYTES as usize);
        build_frame(&mut frame, w.segment_no, w.offset, header, &[]);
        let path = self.dir.join(segment_name(w.segment_no));
        if let Some(file) = &w.file {
            file.write_all_at(&frame, w.offset)
                .map_err(|e| Error::io(&path, e))?;
            // Written, so counted, though the next frame overwrites it.
            self.stats
                .wal_bytes_written
                .fetch_add(frame.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Flushes and syncs everything appended so far.
    pub fn flush_all(&self) -> Result<()> {
        let lsn = self.insert_lsn();
        self.flush(lsn, true)
    }

    fn sync_current(&self, w: &WriterState) -> Result<()> {
        if let Some(f) = &w.file {
            let path = self.dir.join(segment_name(w.segment_no));
            f.sync_data().map_err(|e| Error::io(&path, e))?;
            self.stats.wal_fsyncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Takes the buffer and writes it as frames. Caller holds the writer lock.
    fn write_out(&self, w: &mut WriterState) -> Result<()> {
        self.write_out_inner(w, false)
    }

    /// Like `write_out`; with `set_redo`, the end of the taken buffer becomes the redo
    /// point, atomically with taking it (so no record can slip in between).
    fn write_out_inner(&self, w: &mut WriterState, set_redo: bool) -> Result<()> {
        let (buf, start_lsn) = {
            let mut ins = self.lock_insert();
            if set_redo {
                ins.redo_lsn = ins.next_lsn;
            }
            let mut spare = std::mem::take(&mut w.spare_buffer);
            spare.clear();
            let buf = std::mem::replace(&mut ins.buffer, spare);
            let start = ins.buffer_start_lsn;
            ins.buffer_start_lsn = ins.next_lsn;
            (buf, start)
        };
        debug_assert_eq!(start_lsn, w.written_lsn, "WAL written out of order");
        let mut pos = 0usize;
        let mut lsn = start_lsn;
        while pos < buf.len() {
            let end = frame_end(&buf, pos);
            self.write_frame(w, &buf[pos..end], lsn)?;
            lsn += (end - pos) as u64;
            pos = end;
            w.written_lsn = lsn;
        }
        w.spare_buffer = buf;
        Ok(())
    }

    fn write_frame(&self, w: &mut WriterState, raw: &[u8], lsn: u64) -> Result<()> {
        let codec = self.compression();
        let mut compressor = std::mem::take(&mut w.compressor);
        let (payload, flags) = compressor.compress(codec, raw).unwrap_or((raw, 0));
        let r = self.write_stored_frame(w, payload, flags, lsn);
        if r.is_ok() {
            self.stats
                .wal_frame_raw_bytes
                .fetch_add(raw.len() as u64, Ordering::Relaxed);
        }
        w.compressor = compressor;
        r
    }

    fn write_stored_frame(
        &self,
        w: &mut WriterState,
        payload: &[u8],
        flags: u32,
        lsn: u64,
    ) -> Result<()> {
        let need = FRAME_HEADER_BYTES + payload.len() as u64;
        if w.offset + need + FRAME_HEADER_BYTES > self.segment_size {
            self.switch_segment(w, lsn)?;
        }
        let header = FrameHeader {
            crc: 0,
            payload_len: 0,
            flags,
            lsn_start: lsn,
            durable_lsn: self.durable_lsn(),
            generation: self.generation,
        };
        let mut frame = std::mem::take(&mut w.frame);
        build_frame(&mut frame, w.segment_no, w.offset, header, payload);
        let r = self.write_at(w, &frame);
        w.frame = frame;
        r?;
        if payload.len() as u64 >= MAX_FRAME_PAYLOAD_BYTES / 8 {
            // A bulk write: start it towards the disk now, so that the commit's sync
            // has little left to wait for.
            if let Some(f) = &w.file {
                f.start_writeback(w.offset, need);
            }
        }
        w.offset += need;
        Ok(())
    }

    fn write_at(&self, w: &WriterState, bytes: &[u8]) -> Result<()> {
        let path = self.dir.join(segment_name(w.segment_no));
        let file = w.file.as_ref().ok_or_else(|| Error::CorruptWal {
            path: path.clone(),
            lsn: w.written_lsn,
            reason: "no open segment".into(),
        })?;
        file.write_all_at(bytes, w.offset)
            .map_err(|e| Error::io(&path, e))?;
        self.stats
            .wal_bytes_written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Moves to the next segment: makes it (whole, under its own name, durable) first,
    /// then ends the current one with a switch frame and syncs it. So a valid switch
    /// frame always has its next segment behind it, and recovery can take a missing or
    /// damaged next segment for what it is: damage, not the end of the log
    /// (docs/recovery.md rule 16).
    fn switch_segment(&self, w: &mut WriterState, lsn: u64) -> Result<()> {
        let next = w.segment_no + 1;
        let next_file = self.create_segment(w, next)?;
        let header = FrameHeader {
            crc: 0,
            payload_len: 0,
            flags: FLAG_SWITCH,
            lsn_start: lsn,
            durable_lsn: self.durable_lsn(),
            generation: self.generation,
        };
        let mut frame = std::mem::take(&mut w.frame);
        build_frame(&mut frame, w.segment_no, w.offset, header, &[]);
        let r = self.write_at(w, &frame);
        w.frame = frame;
        r?;
        // Records in this segment must be durable before any commit in the next one is:
        // a commit only syncs the segment it is in.
        self.sync_current(w)?;
        // Everything before the switch is durable now; frames in the next segment say
        // so, which lets recovery tell damage here from a torn tail.
        self.durable_lsn.fetch_max(lsn, Ordering::AcqRel);
        w.file = Some(next_file);
        w.segment_no = next;
        w.offset = SEGMENT_HEADER_BYTES;
        Ok(())
    }

    /// Makes segment `no` (a spare renamed, or a new file): fully allocated, header
    /// written and synced under a temporary name, then renamed into place and the
    /// directory synced. A failure (a full disk) leaves at most the temporary file,
    /// which recovery removes: never a half-made segment under a segment's name.
    fn create_segment(&self, w: &mut WriterState, no: u64) -> Result<Arc<dyn VfsFile>> {
        let path = self.dir.join(segment_name(no));
        let tmp = self.dir.join(format!("{}.tmp", segment_name(no)));
        // Made ahead (`prepare_next`): only its name is left to give.
        let file = match w.prepared.take() {
            Some((p, file)) if p == no => file,
            _ => self.make_segment_file(w, no)?,
        };
        self.vfs
            .rename(&tmp, &path)
            .map_err(|e| Error::io(&path, e))?;
        self.vfs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?;
        self.stats.other_fsyncs.fetch_add(1, Ordering::Relaxed);
        Ok(file)
    }

    /// Before a change, once the segment in use is half full and no old segment waits
    /// to be reused: makes the next segment now (`make_segment_file`, under its
    /// temporary name), so that the switch to it needs no room the disk may not have.
    /// A full disk fails the change with `DiskFull` and fences nothing: the log is
    /// untouched (docs/recovery.md rule 20a). A change never waits for the writer here
    /// (a commit's write or sync may hold it): when it is busy, a later change makes the
    /// segment, with half a segment to go.
    pub fn prepare_next(&self) -> Result<()> {
        self.poison.check()?;
        let mut w = match self.writer.try_lock() {
            Ok(w) => w,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(()),
        };
        if w.prepared.is_some() || !w.spare_segments.is_empty() || w.offset < self.segment_size / 2
        {
            return Ok(());
        }
        let no = w.segment_no + 1;
        match self.make_segment_file(&mut w, no) {
            Ok(file) => {
                w.prepared = Some((no, file));
                Ok(())
            }
            Err(Error::Io { path, source }) if source.raw_os_error() == Some(libc::ENOSPC) => {
                // What was made of it goes: recovery would remove it too.
                let _ = self.vfs.remove(&path);
                Err(Error::DiskFull {
                    path,
                    bytes: self.segment_size,
                    source,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Makes segment `no`'s file under its temporary name (a spare renamed, or a new
    /// file): fully allocated, header written and synced.
    fn make_segment_file(&self, w: &mut WriterState, no: u64) -> Result<Arc<dyn VfsFile>> {
        let tmp = self.dir.join(format!("{}.tmp", segment_name(no)));
        let io_tmp = |e| Error::io(&tmp, e);
        if self.vfs.exists(&tmp).map_err(io_tmp)? {
            self.vfs.remove(&tmp).map_err(io_tmp)?;
        }
        if let Some(old) = w.spare_segments.pop() {
            let old_path = self.dir.join(segment_name(old));
            self.vfs.rename(&old_path, &tmp).map_err(io_tmp)?;
        }
        let file = self
            .vfs
            .open(&tmp, OpenMode::CreateOrOpen)
            .map_err(io_tmp)?;
        file.preallocate(self.segment_size).map_err(io_tmp)?;
        let header = encode_segment_header(no, self.identity());
        file.write_all_at(&header, 0).map_err(io_tmp)?;
        self.stats
            .wal_bytes_written
            .fetch_add(header.len() as u64, Ordering::Relaxed);
        file.sync_data().map_err(io_tmp)?;
        self.stats.wal_fsyncs.fetch_add(1, Ordering::Relaxed);
        Ok(file)
    }

    fn identity(&self) -> SegmentIdentity {
        SegmentIdentity {
            segment_size: self.segment_size,
            database_id: self.database_id,
        }
    }

    /// Starts a checkpoint: writes out the buffer so that the redo point is the start of
    /// a frame, and from now on the first change to each page logs its image (full-page
    /// mode). Returns the redo position.
    pub fn begin_checkpoint(&self) -> Result<WalPosition> {
        let mut w = self.lock_writer();
        self.poison.check()?;
        let r = self.write_out_inner(&mut w, true);
        self.poison.guard(r)?;
        // The next frame starts at this offset, or a switch frame does (write_frame always
        // leaves room for one), so a reader starting here finds the redo point.
        Ok(WalPosition {
            segment_no: w.segment_no,
            offset: w.offset,
            lsn: w.written_lsn,
        })
    }

    /// After a checkpoint is durable: segments before `keep_from` are no longer needed.
    /// Up to `MAX_SPARE_SEGMENTS` are kept for reuse, the rest removed.
    pub fn recycle_before(&self, keep_from: u64) -> Result<()> {
        // List under the writer lock: a segment switch renames spares meanwhile.
        let mut w = self.lock_writer();
        let names = self
            .vfs
            .list_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?;
        for name in names {
            let Some(no) = parse_segment_name(&name) else {
                continue;
            };
            if no >= keep_from || no >= w.segment_no || w.spare_segments.contains(&no) {
                continue;
            }
            if w.spare_segments.len() < MAX_SPARE_SEGMENTS {
                w.spare_segments.push(no);
            } else {
                let path = self.dir.join(&name);
                self.vfs.remove(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
        Ok(())
    }
}

/// A record must fit in one frame (the reader rejects larger frames).
fn check_record_size(payload_bytes: usize) -> Result<()> {
    let bytes = payload_bytes + MAX_RECORD_HEADER_BYTES;
    if bytes as u64 > MAX_FRAME_PAYLOAD_BYTES {
        return Err(Error::RecordTooLarge {
            bytes,
            max: MAX_FRAME_PAYLOAD_BYTES as usize,
        });
    }
    Ok(())
}

/// The end (exclusive) of the longest run of whole records from `pos` that fits a frame.
fn frame_end(buf: &[u8], pos: usize) -> usize {
    let mut end = pos;
    while end < buf.len() {
        // The buffer holds whole records that we wrote: the length is always there.
        let Some(len) = peek_record_len(&buf[end..]).filter(|l| end + l <= buf.len()) else {
            debug_assert!(false, "WAL buffer holds a partial record");
            return buf.len();
        };
        if end > pos && (end + len - pos) as u64 > MAX_FRAME_PAYLOAD_BYTES {
            break;
        }
        end += len;
    }
    end
}

impl crate::buffer::LogDurability for Wal {
    fn durable_lsn(&self) -> u64 {
        Wal::durable_lsn(self)
    }

    fn flush_to(&self, lsn: u64) -> Result<()> {
        self.flush(lsn, true)
    }
}
