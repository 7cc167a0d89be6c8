//! Reading the WAL back: shared by recovery and `walden waldump`.
//!
//! The reader walks frames from a start position. The log ends at the first frame that
//! is missing, invalid, out of sequence or of an older generation — a torn tail — unless a
//! valid frame further on says (by its `durable_lsn`) that the log past the bad frame had
//! been synced: then the bad frame is corruption of durable WAL, reported with its LSN and
//! never skipped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::vfs::{OpenMode, Vfs, VfsFile};
use crate::wal::compress::decompress_frame;
use crate::wal::format::*;
use crate::wal::record::{decode_record, LogRecord};
use crate::wal::writer::WalPosition;

/// What the frames read so far held: the logical and the physical log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Frames of records (switch frames not counted).
    pub frames: u64,
    pub lz4_frames: u64,
    pub zstd_frames: u64,
    /// Record bytes, uncompressed (the logical log).
    pub raw_bytes: u64,
    /// Bytes the frames take in the files, headers included (the physical log).
    pub stored_bytes: u64,
}

impl FrameStats {
    pub fn add(&mut self, o: &FrameStats) {
        self.frames += o.frames;
        self.lz4_frames += o.lz4_frames;
        self.zstd_frames += o.zstd_frames;
        self.raw_bytes += o.raw_bytes;
        self.stored_bytes += o.stored_bytes;
    }
}

/// Sequential reader of records.
pub struct WalReader {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    segment_size: u64,
    segment_no: u64,
    offset: u64,
    file: Option<Arc<dyn VfsFile>>,
    /// LSN of the next record expected.
    lsn: u64,
    /// Generation of the last valid frame: older frames are stale leftovers.
    generation: u64,
    frame: Vec<u8>,
    frame_pos: usize,
    ended: bool,
    stats: FrameStats,
}

impl WalReader {
    /// Starts reading at `start` (a frame boundary, e.g. a checkpoint's redo position).
    /// The start segment must exist.
    pub fn new(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        segment_size: u64,
        start: WalPosition,
    ) -> Result<Self> {
        let mut r = WalReader {
            vfs,
            dir: dir.to_path_buf(),
            segment_size,
            segment_no: start.segment_no,
            offset: start.offset,
            file: None,
            lsn: start.lsn,
            generation: 0,
            frame: Vec::new(),
            frame_pos: 0,
            ended: false,
            stats: FrameStats::default(),
        };
        if !r.open_segment(start.segment_no)? {
            return Err(Error::MissingWalSegment {
                path: dir.join(segment_name(start.segment_no)),
                segment: start.segment_no,
            });
        }
        Ok(r)
    }

    /// Starts at the first frame of segment `segment_no`, whatever its LSN (for tools
    /// that dump the whole log that is still on disk).
    pub fn at_segment_start(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        segment_size: u64,
        segment_no: u64,
    ) -> Result<Self> {
        let mut r = WalReader::new(
            vfs,
            dir,
            segment_size,
            WalPosition {
                segment_no,
                offset: SEGMENT_HEADER_BYTES,
                lsn: 0,
            },
        )?;
        if let Some((h, _)) = r.try_frame(segment_no, SEGMENT_HEADER_BYTES)? {
            r.lsn = h.lsn_start;
        } else {
            r.ended = true;
        }
        Ok(r)
    }

    /// The WAL segments present in `dir`, in order.
    pub fn segments(vfs: &Arc<dyn Vfs>, dir: &Path) -> Result<Vec<u64>> {
        let mut v: Vec<u64> = vfs
            .list_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .iter()
            .filter_map(|n| parse_segment_name(n))
            .collect();
        v.sort_unstable();
        Ok(v)
    }

    /// Where the valid log ends (meaningful once `next` returned None): new WAL is
    /// appended here.
    pub fn end_position(&self) -> WalPosition {
        WalPosition {
            segment_no: self.segment_no,
            offset: self.offset,
            lsn: self.lsn,
        }
    }

    /// Totals of the frames read so far.
    pub fn frame_stats(&self) -> FrameStats {
        self.stats
    }

    /// The generation of the last valid frame read (0 if none).
    pub fn last_generation(&self) -> u64 {
        self.generation
    }

    fn seg_path(&self, no: u64) -> PathBuf {
        self.dir.join(segment_name(no))
    }

    /// Opens segment `no`; Ok(false) if it does not exist.
    fn open_segment(&mut self, no: u64) -> Result<bool> {
        let path = self.seg_path(no);
        if !self.vfs.exists(&path).map_err(|e| Error::io(&path, e))? {
            return Ok(false);
        }
        let file = self
            .vfs
            .open(&path, OpenMode::Existing)
            .map_err(|e| Error::io(&path, e))?;
        let len = file.len().map_err(|e| Error::io(&path, e))?;
        if len < self.segment_size {
            return Err(Error::TruncatedWalSegment {
                path,
                len,
                expected: self.segment_size,
            });
        }
        let mut h = [0u8; SEGMENT_HEADER_BYTES as usize];
        file.read_exact_at(&mut h, 0)
            .map_err(|e| Error::io(&path, e))?;
        if check_segment_header(&h, no, self.segment_size).is_err() {
            if let Some(found) = segment_header_version(&h) {
                if found != WAL_FORMAT_VERSION {
                    // Written whole by another build: not ours to read, nor to ignore.
                    return Err(Error::UnsupportedVersion {
                        path,
                        found,
                        supported: WAL_FORMAT_VERSION,
                    });
                }
            }
            // A header that does not validate: the segment was being created (recycled)
            // when the crash came, so nothing in it was ever acknowledged.
            return Ok(false);
        }
        self.file = Some(file);
        self.segment_no = no;
        Ok(true)
    }

    /// The next record, or None at the end of the log. (Not an `Iterator`: reading can
    /// fail, and a `Result` per item would hide where the log ended.)
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<LogRecord>> {
        loop {
            if self.ended {
                return Ok(None);
            }
            if self.frame_pos < self.frame.len() {
                let rec =
                    decode_record(&self.frame[self.frame_pos..], self.lsn).map_err(|reason| {
                        Error::CorruptWal {
                            path: self.seg_path(self.segment_no),
                            lsn: self.lsn,
                            reason,
                        }
                    })?;
                self.frame_pos += rec.len as usize;
                self.lsn += rec.len as u64;
                return Ok(Some(rec));
            }
            self.read_frame()?;
        }
    }

    /// Reads the frame at the current position into `frame`, or sets `ended`.
    fn read_frame(&mut self) -> Result<()> {
        self.frame.clear();
        self.frame_pos = 0;
        match self.try_frame(self.segment_no, self.offset)? {
            Some((h, payload)) if h.lsn_start == self.lsn && h.generation >= self.generation => {
                self.generation = h.generation;
                if h.flags & FLAG_SWITCH != 0 {
                    let next = self.segment_no + 1;
                    if self.open_segment(next)? {
                        self.offset = SEGMENT_HEADER_BYTES;
                    } else {
                        self.ended = true;
                    }
                    return Ok(());
                }
                let raw = decompress_frame(h.flags, &payload).map_err(|reason| {
                    // The CRC held: these bytes were written so, not torn.
                    Error::CorruptWal {
                        path: self.seg_path(self.segment_no),
                        lsn: self.lsn,
                        reason: format!("frame at offset {}: {reason}", self.offset),
                    }
                })?;
                self.offset += FRAME_HEADER_BYTES + payload.len() as u64;
                self.stats.frames += 1;
                self.stats.stored_bytes += FRAME_HEADER_BYTES + payload.len() as u64;
                if h.flags & FLAG_LZ4 != 0 {
                    self.stats.lz4_frames += 1;
                } else if h.flags & FLAG_ZSTD != 0 {
                    self.stats.zstd_frames += 1;
                }
                self.frame = raw.unwrap_or(payload);
                self.stats.raw_bytes += self.frame.len() as u64;
                Ok(())
            }
            _ => {
                self.check_torn_tail()?;
                self.ended = true;
                Ok(())
            }
        }
    }

    /// Reads and validates a frame at (segment, offset). None if it is not a valid frame.
    fn try_frame(&self, segment_no: u64, offset: u64) -> Result<Option<(FrameHeader, Vec<u8>)>> {
        match &self.file {
            Some(file) => self.try_frame_in(file.as_ref(), segment_no, offset),
            None => Ok(None),
        }
    }

    fn try_frame_in(
        &self,
        file: &dyn VfsFile,
        segment_no: u64,
        offset: u64,
    ) -> Result<Option<(FrameHeader, Vec<u8>)>> {
        if offset + FRAME_HEADER_BYTES > self.segment_size {
            return Ok(None);
        }
        let path = self.seg_path(segment_no);
        let mut hb = [0u8; FRAME_HEADER_BYTES as usize];
        file.read_exact_at(&mut hb, offset)
            .map_err(|e| Error::io(&path, e))?;
        let Some(h) = FrameHeader::decode(&hb) else {
            return Ok(None);
        };
        let len = h.payload_len as u64;
        if len > MAX_FRAME_PAYLOAD_BYTES || offset + FRAME_HEADER_BYTES + len > self.segment_size {
            return Ok(None);
        }
        let mut payload = vec![0u8; len as usize];
        file.read_exact_at(&mut payload, offset + FRAME_HEADER_BYTES)
            .map_err(|e| Error::io(&path, e))?;
        if frame_crc(segment_no, offset, &hb, &payload) != h.crc {
            return Ok(None);
        }
        Ok(Some((h, payload)))
    }

    /// A valid frame of this generation or a newer one, written when the log was durable
    /// past the current position.
    fn proves_durable(&self, h: &FrameHeader) -> bool {
        h.generation >= self.generation && h.durable_lsn > self.lsn
    }

    /// The first frame of the next segment can also prove that the log went on.
    fn check_next_segment(&self) -> Result<()> {
        let next = self.segment_no + 1;
        let path = self.seg_path(next);
        if !self.vfs.exists(&path).map_err(|e| Error::io(&path, e))? {
            return Ok(());
        }
        let file = self
            .vfs
            .open(&path, OpenMode::Existing)
            .map_err(|e| Error::io(&path, e))?;
        if file.len().map_err(|e| Error::io(&path, e))? < self.segment_size {
            return Ok(());
        }
        let mut h = [0u8; SEGMENT_HEADER_BYTES as usize];
        file.read_exact_at(&mut h, 0)
            .map_err(|e| Error::io(&path, e))?;
        if check_segment_header(&h, next, self.segment_size).is_err() {
            return Ok(());
        }
        if let Some((fh, _)) = self.try_frame_in(file.as_ref(), next, SEGMENT_HEADER_BYTES)? {
            if self.proves_durable(&fh) {
                return Err(Error::CorruptWal {
                    path: self.seg_path(self.segment_no),
                    lsn: self.lsn,
                    reason: format!(
                        "invalid frame at offset {}, but segment {next} goes on from a log durable to LSN {}",
                        self.offset, fh.durable_lsn
                    ),
                });
            }
        }
        Ok(())
    }

    /// At an invalid frame: if any later valid frame of this or a newer generation was
    /// written when the log was already durable past this point, this is corruption.
    fn check_torn_tail(&self) -> Result<()> {
        self.check_next_segment()?;
        let Some(file) = &self.file else {
            return Ok(());
        };
        let path = self.seg_path(self.segment_no);
        let start = self.offset + 1;
        if start >= self.segment_size {
            return Ok(());
        }
        let mut rest = vec![0u8; (self.segment_size - start) as usize];
        file.read_exact_at(&mut rest, start)
            .map_err(|e| Error::io(&path, e))?;
        let magic = FRAME_MAGIC.to_le_bytes();
        for i in 0..rest.len().saturating_sub(FRAME_HEADER_BYTES as usize) {
            if rest[i..i + 4] != magic {
                continue;
            }
            let offset = start + i as u64;
            if let Some((h, _)) = self.try_frame(self.segment_no, offset)? {
                if self.proves_durable(&h) {
                    return Err(Error::CorruptWal {
                        path,
                        lsn: self.lsn,
                        reason: format!(
                            "invalid frame at offset {}, but a later frame (offset {offset}) was written after the log was durable to LSN {}",
                            self.offset, h.durable_lsn
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}
