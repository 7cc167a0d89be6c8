//! Reading the WAL back: shared by recovery and `walden waldump`.
//!
//! The reader walks frames from a start position. The log may end only at a torn tail
//! that nothing acknowledged can lie beyond (docs/recovery.md rule 16): at the first frame
//! that is missing, invalid, out of sequence or of an older generation, unless
//! - a valid frame further on, in this segment or a later one, says (by its
//!   `durable_lsn`) that the log past the bad frame had been synced, or
//! - the bad frame is where a switch frame promised the next segment, and that segment is
//!   missing or its header is not this database's segment of that number, or
//! - a segment file lies past the end of the log beyond the one a switch could have made.
//!
//! Each of these is reported as an error naming the file and the LSN; nothing is skipped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::vfs::{OpenMode, Vfs, VfsFile};
use crate::wal::compress::decompress_frame;
use crate::wal::format::*;
use crate::wal::owner::Owners;
use crate::wal::record::LogRecord;
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
    /// Decodes and checks each record through its owner.
    owners: &'static Owners,
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    segment_size: u64,
    id: SegmentIdentity,
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
    /// Tools that dump whatever log is on disk (`at_segment_start`): a missing or
    /// foreign next segment ends the stretch, and the end-of-log checks are skipped.
    lenient: bool,
    /// `walden recover --accept-data-loss`: damage ends the log where it is found, and
    /// `dropped` says what was wrong there.
    accept_loss: bool,
    dropped: Option<String>,
}

impl WalReader {
    /// Starts reading at `start` (a frame boundary, e.g. a checkpoint's redo position).
    /// The start segment must exist.
    pub fn new(
        owners: &'static Owners,
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        id: SegmentIdentity,
        start: WalPosition,
    ) -> Result<Self> {
        let mut r = WalReader {
            owners,
            vfs,
            dir: dir.to_path_buf(),
            segment_size: id.segment_size,
            id,
            segment_no: start.segment_no,
            offset: start.offset,
            file: None,
            lsn: start.lsn,
            generation: 0,
            frame: Vec::new(),
            frame_pos: 0,
            ended: false,
            stats: FrameStats::default(),
            lenient: false,
            accept_loss: false,
            dropped: None,
        };
        if let Err(problem) = r.open_segment(start.segment_no)? {
            let path = dir.join(segment_name(start.segment_no));
            return Err(problem.into_error(
                path,
                start.segment_no,
                start.lsn,
                "recovery starts in it",
            ));
        }
        Ok(r)
    }

    /// Starts at the first frame of segment `segment_no`, whatever its LSN (for tools
    /// that dump the whole log that is still on disk). Lenient: the stretch of log ends
    /// at the first frame or segment that does not follow, without the checks recovery
    /// makes there (a recycled spare segment's old log ends that way).
    pub fn at_segment_start(
        owners: &'static Owners,
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        id: SegmentIdentity,
        segment_no: u64,
    ) -> Result<Self> {
        let mut r = WalReader::new(
            owners,
            vfs,
            dir,
            id,
            WalPosition {
                segment_no,
                offset: SEGMENT_HEADER_BYTES,
                lsn: 0,
            },
        )?;
        r.lenient = true;
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

    /// Opens segment `no`: Ok(Err(problem)) when it is missing or not this database's
    /// segment of that number (the caller decides whether that ends the log or is damage).
    fn open_segment(&mut self, no: u64) -> Result<std::result::Result<(), SegmentProblem>> {
        match self.check_segment(no)? {
            Ok(file) => {
                self.file = Some(file);
                self.segment_no = no;
                Ok(Ok(()))
            }
            Err(p) => Ok(Err(p)),
        }
    }

    /// Opens segment `no` read-only and checks its length and header.
    fn check_segment(
        &self,
        no: u64,
    ) -> Result<std::result::Result<Arc<dyn VfsFile>, SegmentProblem>> {
        let path = self.seg_path(no);
        if !self.vfs.exists(&path).map_err(|e| Error::io(&path, e))? {
            return Ok(Err(SegmentProblem::Missing));
        }
        let file = self
            .vfs
            .open(&path, OpenMode::ReadOnly)
            .map_err(|e| Error::io(&path, e))?;
        let len = file.len().map_err(|e| Error::io(&path, e))?;
        if len < self.segment_size {
            return Ok(Err(SegmentProblem::Truncated(len, self.segment_size)));
        }
        let mut h = [0u8; SEGMENT_HEADER_BYTES as usize];
        file.read_exact_at(&mut h, 0)
            .map_err(|e| Error::io(&path, e))?;
        if let Err(reason) = check_segment_header(&h, no, self.id) {
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
            return Ok(Err(SegmentProblem::Header(reason)));
        }
        Ok(Ok(file))
    }

    /// From now on, damage ends the log where it is found instead of failing (see
    /// `dropped`): for the operator's way out after a refused open.
    pub fn accept_data_loss(&mut self) {
        self.accept_loss = true;
    }

    /// With `accept_data_loss`: why the log was cut short, if it was.
    pub fn dropped(&self) -> Option<&str> {
        self.dropped.as_deref()
    }

    /// The next record, or None at the end of the log. (Not an `Iterator`: reading can
    /// fail, and a `Result` per item would hide where the log ended.)
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<LogRecord>> {
        match self.next_record() {
            Err(e) if self.accept_loss && e.is_wal_damage() => {
                // The position stays a frame boundary: a bad record drops the rest of
                // its frame (the offset is already past it), anything else the frame
                // at the current offset and all after it.
                self.frame.clear();
                self.frame_pos = 0;
                self.dropped = Some(e.to_string());
                self.ended = true;
                Ok(None)
            }
            r => r,
        }
    }

    fn next_record(&mut self) -> Result<Option<LogRecord>> {
        loop {
            if self.ended {
                return Ok(None);
            }
            if self.frame_pos < self.frame.len() {
                let rec = self
                    .owners
                    .decode(&self.frame[self.frame_pos..], self.lsn)
                    .map_err(|reason| Error::CorruptWal {
                        path: self.seg_path(self.segment_no),
                        lsn: self.lsn,
                        reason,
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
            Some((h, _)) if h.flags & FLAG_END_MARKER != 0 && h.lsn_start == self.lsn => {
                // The writer's end marker: the log ends here (the next frame would have
                // overwritten it), and it vouches for everything before it.
                self.check_torn_tail()?;
                self.ended = true;
                Ok(())
            }
            Some((h, payload)) if h.lsn_start == self.lsn && h.generation >= self.generation => {
                self.generation = h.generation;
                if h.flags & FLAG_SWITCH != 0 {
                    // The writer made the next segment durable before this frame: its
                    // absence or a bad header is damage (rule 16).
                    let next = self.segment_no + 1;
                    if let Err(problem) = self.open_segment(next)? {
                        if self.lenient {
                            self.ended = true;
                            return Ok(());
                        }
                        let why = format!(
                            "segment {} ends with a switch to it at LSN {}",
                            self.segment_no, self.lsn
                        );
                        return Err(problem.into_error(self.seg_path(next), next, self.lsn, &why));
                    }
                    self.offset = SEGMENT_HEADER_BYTES;
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

    /// Segments past the one the log ends in: the next one may exist (made before a
    /// switch frame that did not become durable) but must hold no frame proving the log
    /// went on; any later one, or one that is not this database's, is damage.
    fn check_later_segments(&self) -> Result<()> {
        let later: Vec<u64> = Self::segments(&self.vfs, &self.dir)?
            .into_iter()
            .filter(|&n| n > self.segment_no)
            .collect();
        for no in later {
            let path = self.seg_path(no);
            if no > self.segment_no + 1 {
                return Err(Error::CorruptWal {
                    path,
                    lsn: self.lsn,
                    reason: format!(
                        "the log ends in segment {} at offset {}, but segment {no} exists past it: WAL between them is missing or damaged",
                        self.segment_no, self.offset
                    ),
                });
            }
            match self.check_segment(no)? {
                Ok(file) => {
                    self.find_proof_of_durability(file.as_ref(), no, SEGMENT_HEADER_BYTES)?
                }
                Err(p) => {
                    let why = format!(
                        "it lies past the end of the log (segment {})",
                        self.segment_no
                    );
                    return Err(p.into_error(path, no, self.lsn, &why));
                }
            }
        }
        Ok(())
    }

    /// Scans `file` (segment `no`) from `start` for a valid frame written when the log
    /// was durable past the current position: if there is one, the log cannot end here.
    fn find_proof_of_durability(&self, file: &dyn VfsFile, no: u64, start: u64) -> Result<()> {
        if start >= self.segment_size {
            return Ok(());
        }
        let path = self.seg_path(no);
        let mut rest = vec![0u8; (self.segment_size - start) as usize];
        file.read_exact_at(&mut rest, start)
            .map_err(|e| Error::io(&path, e))?;
        let magic = FRAME_MAGIC.to_le_bytes();
        for i in 0..rest.len().saturating_sub(FRAME_HEADER_BYTES as usize) {
            if rest[i..i + 4] != magic {
                continue;
            }
            let offset = start + i as u64;
            if let Some((h, _)) = self.try_frame_in(file, no, offset)? {
                if self.proves_durable(&h) {
                    return Err(Error::CorruptWal {
                        path: self.seg_path(self.segment_no),
                        lsn: self.lsn,
                        reason: format!(
                            "invalid frame at offset {}, but a later frame (segment {no}, offset {offset}) was written after the log was durable to LSN {}: acknowledged WAL is damaged or missing",
                            self.offset, h.durable_lsn
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// At an invalid frame: if any later valid frame of this or a newer generation was
    /// written when the log was already durable past this point, or a later segment
    /// shows the log went on, this is damage, not the end of the log.
    fn check_torn_tail(&self) -> Result<()> {
        if self.lenient {
            return Ok(());
        }
        if let Some(file) = &self.file {
            self.find_proof_of_durability(file.as_ref(), self.segment_no, self.offset + 1)?;
        }
        self.check_later_segments()
    }
}

/// Why a segment cannot be read.
#[derive(Debug)]
enum SegmentProblem {
    Missing,
    Truncated(u64, u64),
    Header(String),
}

impl SegmentProblem {
    /// The error for segment `no` at `path`, needed because of `why`.
    fn into_error(self, path: PathBuf, no: u64, lsn: u64, why: &str) -> Error {
        match self {
            SegmentProblem::Missing => Error::MissingWalSegment {
                path,
                segment: no,
                reason: why.to_string(),
            },
            SegmentProblem::Truncated(len, expected) => Error::TruncatedWalSegment {
                path,
                len,
                expected,
            },
            SegmentProblem::Header(reason) => Error::CorruptWal {
                path,
                lsn,
                reason: format!("bad segment header ({reason}); {why}"),
            },
        }
    }
}
