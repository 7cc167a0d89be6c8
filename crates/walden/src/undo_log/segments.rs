//! The undo log's store: records back to back in segments, shared by all undo tables.
//! Recent segments stay in memory. Past the memory budget (`undo_memory`), the oldest
//! segments are written to files in `undo/` and read back when a snapshot read or a
//! rollback needs one of their records. The files need no WAL and no fsync: the WAL
//! carries what crash rollback needs, and they are deleted when the database opens
//! (docs/recovery.md rule 22a). `undo_limit` bounds memory and files together.
//!
//! A segment file (`undo/<first pointer, 16 hex digits>`, docs/format.md) is
//! `magic "WALDUNDO" | crc32c u32 | records u32 | bytes u32 | reserved u32 | starts
//! (u32 each) | bytes`; the CRC covers everything after itself. Bytes read back are
//! checked (magic, lengths, CRC) before any record is taken from them.

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::UndoLog;
use crate::error::{Error, Result};
use crate::stats::{Stats, TxnStats};
use crate::vfs::{OpenMode, Vfs};

/// Largest segment: a unit of spilling and of discarding.
const MAX_SEGMENT_BYTES: usize = 1 << 20;
/// Smallest segment (a small memory budget gets small segments, so that it is kept).
const MIN_SEGMENT_BYTES: usize = 256;
/// Spilled segments read back and kept, for the readers that come back to them (an
/// old snapshot reading row after row, a rollback going back through a segment).
const CACHED_SEGMENTS: usize = 4;
const FILE_MAGIC: &[u8; 8] = b"WALDUNDO";
const FILE_HEADER_BYTES: usize = 24;

/// Records back to back, with where each starts.
#[derive(Default)]
struct Records {
    bytes: Vec<u8>,
    /// Where each record starts in `bytes` (a record ends where the next starts). Kept
    /// apart from the bytes so that a pointer is the record's offset in the log.
    starts: Vec<u32>,
}

impl Records {
    /// The record `at` bytes into the segment whose first pointer is `start`.
    fn record(&self, ptr: u64, start: u64) -> std::result::Result<Vec<u8>, String> {
        let not_a_start = || format!("undo pointer {ptr} is not the start of a record");
        let at = u32::try_from(ptr - start).map_err(|_| not_a_start())?;
        let i = self.starts.binary_search(&at).map_err(|_| not_a_start())?;
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.bytes.len(), |&e| e as usize);
        self.bytes
            .get(at as usize..end)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| format!("undo record {ptr} is cut short"))
    }

    fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(FILE_HEADER_BYTES + 4 * self.starts.len() + self.bytes.len());
        out.extend_from_slice(FILE_MAGIC);
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&(self.starts.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        for s in &self.starts {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend_from_slice(&self.bytes);
        let crc = crc32c::crc32c(&out[12..]);
        out[8..12].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes a segment file's bytes, untrusted.
    fn decode(file: &[u8]) -> std::result::Result<Records, String> {
        if file.len() < FILE_HEADER_BYTES || &file[..8] != FILE_MAGIC {
            return Err("not an undo segment (bad magic or too short)".into());
        }
        let u32_at =
            |i: usize| u32::from_le_bytes([file[i], file[i + 1], file[i + 2], file[i + 3]]);
        if crc32c::crc32c(&file[12..]) != u32_at(8) {
            return Err("checksum mismatch".into());
        }
        let (n, len) = (u32_at(12) as usize, u32_at(16) as usize);
        if FILE_HEADER_BYTES as u64 + 4 * n as u64 + len as u64 != file.len() as u64 {
            return Err(format!(
                "{n} records of {len} bytes do not fill its {} bytes",
                file.len()
            ));
        }
        let starts: Vec<u32> = (0..n).map(|i| u32_at(FILE_HEADER_BYTES + 4 * i)).collect();
        if starts.windows(2).any(|w| w[0] > w[1])
            || starts.last().is_some_and(|&s| s as usize > len)
        {
            return Err("record starts out of order or past the end".into());
        }
        Ok(Records {
            bytes: file[FILE_HEADER_BYTES + 4 * n..].to_vec(),
            starts,
        })
    }
}

enum Body {
    Memory(Records),
    /// In the segment's file, of this many bytes.
    Spilled {
        file_bytes: u64,
    },
}

struct Segment {
    /// Undo pointer of the first byte.
    start: u64,
    body: Body,
    /// Largest xid with a record here.
    max_xid: u64,
    /// Its size: the bytes it may hold, and what it counts in memory while there.
    size: u64,
}

struct StoreState {
    segments: VecDeque<Segment>,
    /// How many segments at the front are spilled (the oldest go first).
    spilled: usize,
    /// Undo pointer of the next record (0 means "no undo").
    next: u64,
    /// Segments in memory, each counted whole.
    memory_bytes: u64,
    /// Bytes of the spilled segments' files.
    file_bytes: u64,
    /// Transactions whose rollback could not finish (the database refused writes): their
    /// rows still hold their changes, so readers need their undo until a reopen.
    unresolved: BTreeSet<u64>,
}

/// Where spilled segments go.
pub struct SpillDir {
    pub vfs: Arc<dyn Vfs>,
    pub dir: PathBuf,
}

impl SpillDir {
    /// The file of the segment whose first pointer is `start`.
    fn path(&self, start: u64) -> PathBuf {
        self.dir.join(format!("{start:016x}"))
    }
}

/// The undo log of a database (see the module's comment).
pub struct SegmentedUndoLog {
    state: RwLock<StoreState>,
    limit: AtomicU64,
    memory: AtomicU64,
    stats: Arc<Stats>,
    /// None: everything stays in memory (`undo_memory` is not applied).
    spill: Option<SpillDir>,
    /// Spilled segments read back lately (first pointer, records), newest last.
    cache: Mutex<VecDeque<(u64, Arc<Records>)>>,
}

impl SegmentedUndoLog {
    /// A log bounded at `limit` bytes that keeps at most `memory` bytes in memory,
    /// spilling the rest to `spill`. Files a previous run left there are deleted (the
    /// log starts empty at every open); one that cannot be is overwritten when its name
    /// comes round again, and its stale bytes past the new contents are never read.
    pub fn new(
        limit: u64,
        memory: u64,
        stats: Arc<Stats>,
        spill: Option<SpillDir>,
    ) -> SegmentedUndoLog {
        if let Some(s) = &spill {
            for name in s.vfs.list_dir(&s.dir).unwrap_or_default() {
                let _ = s.vfs.remove(&s.dir.join(name));
            }
        }
        SegmentedUndoLog {
            state: RwLock::new(StoreState {
                segments: VecDeque::new(),
                spilled: 0,
                next: 1,
                memory_bytes: 0,
                file_bytes: 0,
                unresolved: BTreeSet::new(),
            }),
            limit: AtomicU64::new(limit),
            memory: AtomicU64::new(memory),
            stats,
            spill,
            cache: Mutex::new(VecDeque::new()),
        }
    }

    /// A log held in memory only, bounded at `limit` bytes.
    pub fn in_memory(limit: u64, stats: Arc<Stats>) -> SegmentedUndoLog {
        SegmentedUndoLog::new(limit, u64::MAX, stats, None)
    }

    fn state(&self) -> RwLockReadGuard<'_, StoreState> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn state_mut(&self) -> RwLockWriteGuard<'_, StoreState> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Segment size for the memory budget: a quarter of it, within the bounds.
    fn segment_bytes(&self) -> usize {
        let quarter = self.memory.load(Ordering::Relaxed) / 4;
        quarter.clamp(MIN_SEGMENT_BYTES as u64, MAX_SEGMENT_BYTES as u64) as usize
    }

    /// Writes the oldest segment in memory to its file. On an error nothing changes
    /// (the segment stays in memory).
    fn spill_oldest(&self, st: &mut StoreState) -> Result<()> {
        let Some(spill) = &self.spill else {
            return Ok(());
        };
        let i = st.spilled;
        let Some(seg) = st.segments.get_mut(i) else {
            return Ok(());
        };
        let Body::Memory(records) = &seg.body else {
            return Ok(());
        };
        let seg_size = seg.size;
        let path = spill.path(seg.start);
        let bytes = records.encode();
        let written = spill
            .vfs
            .create_dir_all(&spill.dir)
            .and_then(|()| spill.vfs.open(&path, OpenMode::CreateOrOpen))
            .and_then(|f| f.write_all_at(&bytes, 0));
        if let Err(source) = written {
            return Err(Error::UndoSpill { path, source });
        }
        seg.body = Body::Spilled {
            file_bytes: bytes.len() as u64,
        };
        st.memory_bytes -= seg_size;
        st.file_bytes += bytes.len() as u64;
        st.spilled += 1;
        self.stats
            .undo_bytes_spilled
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// The records of the spilled segment beginning at `start`, from the cache or its
    /// file. The caller holds the state lock (shared), so the file stays.
    fn load(&self, start: u64, file_bytes: u64) -> std::result::Result<Arc<Records>, String> {
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, r)) = cache.iter().find(|(s, _)| *s == start) {
                return Ok(r.clone());
            }
        }
        let Some(spill) = &self.spill else {
            return Err(format!(
                "undo segment {start} is spilled, but there is nowhere to read it from"
            ));
        };
        let path = spill.path(start);
        let damaged =
            |why: String| format!("undo segment file {} is damaged: {why}", path.display());
        let len = usize::try_from(file_bytes).map_err(|_| damaged("too long".into()))?;
        let mut buf = vec![0u8; len];
        spill
            .vfs
            .open(&path, OpenMode::ReadOnly)
            .and_then(|f| f.read_exact_at(&mut buf, 0))
            .map_err(|e| format!("cannot read undo segment file {}: {e}", path.display()))?;
        let records = Arc::new(Records::decode(&buf).map_err(damaged)?);
        self.stats
            .undo_bytes_read_back
            .fetch_add(file_bytes, Ordering::Relaxed);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if !cache.iter().any(|(s, _)| *s == start) {
            if cache.len() >= CACHED_SEGMENTS {
                cache.pop_front();
            }
            cache.push_back((start, records.clone()));
        }
        Ok(records)
    }
}

impl UndoLog for SegmentedUndoLog {
    fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    fn set_limit(&self, bytes: u64) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    fn memory(&self) -> u64 {
        self.memory.load(Ordering::Relaxed)
    }

    fn set_memory(&self, bytes: u64) {
        self.memory.store(bytes, Ordering::Relaxed);
    }

    fn live_bytes(&self) -> u64 {
        let st = self.state();
        st.memory_bytes + st.file_bytes
    }

    fn spilled_bytes(&self) -> u64 {
        self.state().file_bytes
    }

    fn append(&self, xid: u64, rec: &[u8], stats: &mut TxnStats) -> Result<u64> {
        // A pointer is a record's offset in the log: an empty record would share its
        // pointer with the next one. The undo tables never write one.
        if rec.is_empty() {
            return Err(Error::InvalidOption(
                "an undo record is at least one byte".into(),
            ));
        }
        let mut st = self.state_mut();
        let limit = self.limit();
        let need = rec.len() as u64;
        let seg_bytes = self.segment_bytes();
        let fits_last = st.segments.back().is_some_and(|s| match &s.body {
            Body::Memory(r) => (r.bytes.len() + rec.len()) as u64 <= s.size,
            Body::Spilled { .. } => false,
        });
        // A record larger than a segment gets a segment of its own.
        let grow = if fits_last {
            0
        } else {
            rec.len().max(seg_bytes) as u64
        };
        let full = |st: &StoreState| Error::UndoFull {
            limit,
            live: st.memory_bytes + st.file_bytes,
        };
        if st.memory_bytes + st.file_bytes + grow > limit.max(seg_bytes as u64) || need > limit {
            return Err(full(&st));
        }
        if !fits_last {
            // Room in memory for the new segment: the oldest go to their files.
            let budget = self.memory();
            while self.spill.is_some()
                && st.memory_bytes + grow > budget
                && st.spilled < st.segments.len()
            {
                self.spill_oldest(&mut st)?;
            }
            let ptr = st.next;
            st.segments.push_back(Segment {
                start: ptr,
                body: Body::Memory(Records {
                    bytes: Vec::with_capacity(grow as usize),
                    starts: Vec::new(),
                }),
                max_xid: 0,
                size: grow,
            });
            st.memory_bytes += grow;
        }
        let ptr = st.next;
        let Some(Segment {
            body: Body::Memory(r),
            max_xid,
            ..
        }) = st.segments.back_mut()
        else {
            return Err(full(&st));
        };
        r.starts.push(r.bytes.len() as u32);
        r.bytes.extend_from_slice(rec);
        *max_xid = (*max_xid).max(xid);
        st.next += need;
        drop(st);
        self.stats.undo_records.fetch_add(1, Ordering::Relaxed);
        self.stats.undo_bytes.fetch_add(need, Ordering::Relaxed);
        stats.undo_records += 1;
        stats.undo_bytes += need;
        Ok(ptr)
    }

    /// An error for a discarded record would be a bug: only records no snapshot needs
    /// are discarded.
    fn read(&self, ptr: u64) -> std::result::Result<Vec<u8>, String> {
        let st = self.state();
        let i = st.segments.partition_point(|s| s.start <= ptr);
        let seg = i
            .checked_sub(1)
            .and_then(|i| st.segments.get(i))
            .ok_or_else(|| format!("undo record {ptr} was discarded"))?;
        match &seg.body {
            Body::Memory(r) => r.record(ptr, seg.start),
            Body::Spilled { file_bytes } => {
                self.load(seg.start, *file_bytes)?.record(ptr, seg.start)
            }
        }
    }

    fn discard(&self, horizon: &mut dyn FnMut() -> u64) {
        let horizon = {
            let st = self.state();
            let Some(front) = st.segments.front() else {
                return;
            };
            let h = horizon();
            if front.max_xid >= h {
                return;
            }
            h
        };
        let mut gone = Vec::new();
        let mut st = self.state_mut();
        while let Some(front) = st.segments.front() {
            let pinned = st.unresolved.range(..=front.max_xid).next().is_some();
            if front.max_xid >= horizon || pinned {
                break;
            }
            let Some(seg) = st.segments.pop_front() else {
                break;
            };
            match seg.body {
                Body::Memory(_) => st.memory_bytes -= seg.size,
                Body::Spilled { file_bytes } => {
                    st.file_bytes -= file_bytes;
                    st.spilled -= 1;
                    gone.push(seg.start);
                }
            }
        }
        drop(st);
        if gone.is_empty() {
            return;
        }
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(s, _)| !gone.contains(s));
        if let Some(spill) = &self.spill {
            for start in gone {
                // A file that cannot be removed now is removed at the next open.
                let _ = spill.vfs.remove(&spill.path(start));
            }
        }
    }

    fn keep_unresolved(&self, xid: u64) {
        self.state_mut().unresolved.insert(xid);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::vfs::{FaultKind, FaultOps, SimVfs};

    fn spilling(vfs: &SimVfs, memory: u64, stats: Arc<Stats>) -> SegmentedUndoLog {
        SegmentedUndoLog::new(
            u64::MAX,
            memory,
            stats,
            Some(SpillDir {
                vfs: Arc::new(vfs.clone()),
                dir: PathBuf::from("undo"),
            }),
        )
    }

    #[test]
    fn store_appends_reads_discards_and_bounds() {
        let stats = Arc::new(Stats::default());
        let store = SegmentedUndoLog::in_memory(4 << 20, stats.clone());
        let mut ts = TxnStats::default();
        let rec = vec![3u8, 1, 4, 1, 5];
        let p1 = store.append(10, &rec, &mut ts).unwrap();
        assert_ne!(p1, 0, "0 means no undo");
        assert_eq!(store.read(p1).unwrap(), rec);
        // Accounting counts the record's bytes, not the framing.
        assert_eq!((ts.undo_records, ts.undo_bytes), (1, 5));
        // Fill past the limit: the append that would exceed it fails.
        let big = vec![7u8; 60_000];
        let mut n = 0;
        let err = loop {
            match store.append(11, &big, &mut ts) {
                Ok(p) => {
                    assert_eq!(store.read(p).unwrap(), big);
                    n += 1
                }
                Err(e) => break e,
            }
        };
        assert!(matches!(err, Error::UndoFull { .. }), "{err}");
        assert!(n > 0 && store.live_bytes() <= 4 << 20);
        // Horizon below the writers: nothing goes. Above: everything.
        store.discard(&mut || 10);
        assert!(store.read(p1).is_ok());
        store.keep_unresolved(11);
        store.discard(&mut || 100);
        assert!(
            store.read(p1).is_ok(),
            "unresolved transaction pins its undo"
        );
        let store = SegmentedUndoLog::in_memory(4 << 20, Arc::new(Stats::default()));
        let p = store.append(10, &rec, &mut ts).unwrap();
        store.discard(&mut || 11);
        assert!(store.read(p).is_err());
        assert_eq!(store.live_bytes(), 0);
        // A pointer that is not a record's start, or past the end, is an error, not a
        // panic.
        let store = SegmentedUndoLog::in_memory(4 << 20, Arc::new(Stats::default()));
        let p = store.append(1, &big, &mut ts).unwrap();
        let q = store.append(1, &rec, &mut ts).unwrap();
        assert_eq!(q, p + big.len() as u64, "pointers are offsets in the log");
        assert!(store.read(p + 1).is_err());
        assert!(store.read(q + 100_000).is_err());
        assert!(
            store.read(q + (1 << 32)).is_err(),
            "offsets past u32 do not wrap"
        );
        assert_eq!(store.read(q).unwrap(), rec);
    }

    /// Records of many sizes, some larger than a segment.
    fn record(i: u64) -> Vec<u8> {
        let len = match i % 50 {
            0 => 70_000,
            n => (n * 37 % 900) as usize,
        };
        (0..len).map(|j| (i as usize * 31 + j) as u8).collect()
    }

    #[test]
    fn undo_past_the_memory_budget_goes_to_files_and_reads_back() {
        let vfs = SimVfs::new(1);
        let stats = Arc::new(Stats::default());
        // 64 KiB in memory: 16 KiB segments.
        let store = spilling(&vfs, 64 << 10, stats.clone());
        let mut ts = TxnStats::default();
        let ptrs: Vec<(u64, u64)> = (0..2000)
            .map(|i| (i, store.append(100 + i / 100, &record(i), &mut ts).unwrap()))
            .collect();
        let st = store.state();
        assert!(
            st.memory_bytes <= (64 << 10) + 70_000,
            "{}",
            st.memory_bytes
        );
        assert!(
            st.spilled > 10 && st.file_bytes > 500_000,
            "{} {}",
            st.spilled,
            st.file_bytes
        );
        drop(st);
        let files = vfs.list_dir(Path::new("undo")).unwrap();
        assert_eq!(files.len(), store.state().spilled);
        assert_eq!(
            store.spilled_bytes(),
            stats.undo_bytes_spilled.load(Ordering::Relaxed)
        );
        // Every record reads back: forwards (as a scan), backwards (as a rollback).
        for (i, p) in ptrs.iter().chain(ptrs.iter().rev()) {
            assert_eq!(store.read(*p).unwrap(), record(*i), "record {i}");
        }
        assert!(stats.undo_bytes_read_back.load(Ordering::Relaxed) > 0);
        // Discarding removes the files of what goes.
        store.discard(&mut || 110);
        assert!(store.read(ptrs[0].1).is_err());
        assert_eq!(store.read(ptrs[1500].1).unwrap(), record(1500));
        let left = vfs.list_dir(Path::new("undo")).unwrap();
        assert!(left.len() < files.len() && left.len() == store.state().spilled);
        store.discard(&mut || u64::MAX);
        assert_eq!(store.live_bytes(), 0);
        assert!(vfs.list_dir(Path::new("undo")).unwrap().is_empty());
        // A new log (the next open) starts by deleting what a previous one left.
        let store = spilling(&vfs, 16 << 10, stats.clone());
        for i in 0..200 {
            store.append(1, &record(i), &mut ts).unwrap();
        }
        assert!(!vfs.list_dir(Path::new("undo")).unwrap().is_empty());
        drop(store);
        let _store = spilling(&vfs, 16 << 10, stats);
        assert!(vfs.list_dir(Path::new("undo")).unwrap().is_empty());
    }

    #[test]
    fn an_empty_record_is_refused() {
        let store = SegmentedUndoLog::in_memory(4 << 20, Arc::new(Stats::default()));
        let mut ts = TxnStats::default();
        assert!(store.append(1, &[], &mut ts).is_err());
        let p = store.append(1, &[5], &mut ts).unwrap();
        assert_eq!(store.read(p).unwrap(), [5]);
    }

    #[test]
    fn a_failed_spill_is_an_error_and_loses_nothing() {
        let vfs = SimVfs::new(2);
        let store = spilling(&vfs, 16 << 10, Arc::new(Stats::default()));
        let mut ts = TxnStats::default();
        let mut ptrs = Vec::new();
        let mut failed = 0;
        for i in 0..400 {
            if i % 50 == 10 {
                vfs.fail_nth(1, FaultOps::Write, FaultKind::Enospc);
            }
            match store.append(1, &record(i), &mut ts) {
                Ok(p) => ptrs.push((i, p)),
                Err(e) => {
                    assert!(matches!(e, Error::UndoSpill { .. }), "{e}");
                    assert!(e.to_string().contains("could not write undo"), "{e}");
                    failed += 1;
                }
            }
        }
        assert!(failed > 0);
        for (i, p) in &ptrs {
            assert_eq!(store.read(*p).unwrap(), record(*i), "record {i}");
        }
    }

    #[test]
    fn a_damaged_segment_file_is_an_error_not_data() {
        let vfs = SimVfs::new(3);
        let store = spilling(&vfs, 16 << 10, Arc::new(Stats::default()));
        let mut ts = TxnStats::default();
        let ptrs: Vec<u64> = (0..300)
            .map(|i| store.append(1, &record(i), &mut ts).unwrap())
            .collect();
        let first = vfs.list_dir(Path::new("undo")).unwrap()[0].clone();
        let path = Path::new("undo").join(&first);
        let len = vfs.file_contents(&path).unwrap().len() as u64;
        assert!(vfs.corrupt_byte(&path, len / 2, 0x40));
        let e = store.read(ptrs[0]).unwrap_err();
        assert!(e.contains("damaged") && e.contains("checksum"), "{e}");
        // Random bytes never decode into records, and never panic.
        for n in [0usize, 10, 24, 100] {
            let junk: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
            assert!(Records::decode(&junk).is_err());
        }
        let r = Records {
            starts: vec![0, 5],
            bytes: vec![1; 9],
        };
        let mut enc = r.encode();
        assert!(Records::decode(&enc).is_ok());
        enc[12] = 200;
        assert!(Records::decode(&enc).is_err());
    }
}
