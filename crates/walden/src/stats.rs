//! Accounting: counters of everything Walden writes, readable globally and per
//! transaction. WAL records and bytes by record kind, page images, data pages written,
//! fsync calls and checkpoints. Benchmarks and `\wal` in the shell read these.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Record codes are below this (the byte after a record's length; `wal::record`). The
/// counters are indexed by code, so this module needs no record type.
pub const RECORD_CODES: usize = 48;

/// Counters of WAL records by record code (logical bytes: the records themselves), and
/// of the page images among them.
#[derive(Debug)]
pub struct WalCounters {
    records: [AtomicU64; RECORD_CODES],
    bytes: [AtomicU64; RECORD_CODES],
    images: AtomicU64,
    image_bytes: AtomicU64,
    /// Records that change index pages (their images included).
    index_records: AtomicU64,
    index_bytes: AtomicU64,
    index_images: AtomicU64,
}

// Written out: std derives `Default` for arrays of at most 32.
impl Default for WalCounters {
    fn default() -> WalCounters {
        WalCounters {
            records: std::array::from_fn(|_| AtomicU64::new(0)),
            bytes: std::array::from_fn(|_| AtomicU64::new(0)),
            images: AtomicU64::new(0),
            image_bytes: AtomicU64::new(0),
            index_records: AtomicU64::new(0),
            index_bytes: AtomicU64::new(0),
            index_images: AtomicU64::new(0),
        }
    }
}

impl WalCounters {
    /// Counts a record of type `code`; `image` when it is a page image, `index` when it
    /// changes an index page.
    pub fn add(&self, code: u8, bytes: u64, image: bool, index: bool) {
        let i = code as usize % RECORD_CODES;
        self.records[i].fetch_add(1, Relaxed);
        self.bytes[i].fetch_add(bytes, Relaxed);
        if image {
            self.images.fetch_add(1, Relaxed);
            self.image_bytes.fetch_add(bytes, Relaxed);
        }
        if index {
            self.index_records.fetch_add(1, Relaxed);
            self.index_bytes.fetch_add(bytes, Relaxed);
            self.index_images.fetch_add(image as u64, Relaxed);
        }
    }

    fn snapshot(&self) -> [KindCount; RECORD_CODES] {
        std::array::from_fn(|i| KindCount {
            code: i as u8,
            records: self.records[i].load(Relaxed),
            bytes: self.bytes[i].load(Relaxed),
        })
    }
}

/// Global counters, shared by every thread of a database.
#[derive(Debug, Default)]
pub struct Stats {
    pub wal: WalCounters,
    /// Bytes written to WAL files: frames, segment headers, everything.
    pub wal_bytes_written: AtomicU64,
    /// Record bytes written out in frames, before compression.
    pub wal_frame_raw_bytes: AtomicU64,
    pub wal_fsyncs: AtomicU64,
    pub data_pages_written: AtomicU64,
    pub data_bytes_written: AtomicU64,
    /// Bytes cut from the data file's end (free space given back, `PageStore::trim`).
    pub data_bytes_given_back: AtomicU64,
    pub data_fsyncs: AtomicU64,
    pub other_fsyncs: AtomicU64,
    pub checkpoints: AtomicU64,
    pub commits: AtomicU64,
    pub aborts: AtomicU64,
    /// Undo records and bytes appended to the undo log (undo tables).
    pub undo_records: AtomicU64,
    pub undo_bytes: AtomicU64,
    /// Bytes of undo segments written to files (past `undo_memory`), and read back.
    pub undo_bytes_spilled: AtomicU64,
    pub undo_bytes_read_back: AtomicU64,
    /// Temporary files made (sorts and groupings past `work_mem`, `temp`), and the bytes
    /// written to them: PostgreSQL's `temp_files` and `temp_bytes`.
    pub temp_files: AtomicU64,
    pub temp_bytes: AtomicU64,
    /// Row versions pruned from table pages, by vacuum and by updates that found their
    /// page full (heap tables).
    pub versions_pruned: AtomicU64,
    /// Index pages VACUUM put on their index's free list (empty leaves unlinked,
    /// unreachable pages found).
    pub index_pages_freed: AtomicU64,
}

/// Records and bytes of one record type (`walden::owners::OWNERS` names the code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindCount {
    pub code: u8,
    pub records: u64,
    pub bytes: u64,
}

/// A point-in-time copy of the global counters. Subtract two to measure a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Indexed by record code.
    pub by_kind: [KindCount; RECORD_CODES],
    /// Sum of the record bytes (the logical WAL).
    pub wal_record_bytes: u64,
    pub wal_records: u64,
    /// Bytes that reached the WAL files (the physical WAL: records, compressed when
    /// `wal_compression` is on, plus frame and segment headers).
    pub wal_bytes_written: u64,
    /// Record bytes that went into those frames before compression (the logical WAL
    /// written out; `wal_record_bytes` counts records when they are appended).
    pub wal_frame_raw_bytes: u64,
    pub page_images: u64,
    pub page_image_bytes: u64,
    /// The part of the records (and images) that changed index pages; the rest is the
    /// tables', the catalog's and the transactions'.
    pub index_wal_records: u64,
    pub index_wal_bytes: u64,
    pub index_page_images: u64,
    pub wal_fsyncs: u64,
    pub data_pages_written: u64,
    pub data_bytes_written: u64,
    pub data_bytes_given_back: u64,
    pub data_fsyncs: u64,
    pub other_fsyncs: u64,
    pub checkpoints: u64,
    pub commits: u64,
    pub aborts: u64,
    pub undo_records: u64,
    pub undo_bytes: u64,
    /// Bytes of undo segments written to files past `undo_memory`, and read back.
    pub undo_bytes_spilled: u64,
    pub undo_bytes_read_back: u64,
    /// Temporary files made, and the bytes written to them (`temp`).
    pub temp_files: u64,
    pub temp_bytes: u64,
    /// Row versions pruned from table pages (by vacuum, and on the fly).
    pub versions_pruned: u64,
    pub index_pages_freed: u64,
}

impl StatsSnapshot {
    /// All fsync calls (WAL, data file, control and directory).
    pub fn fsyncs(&self) -> u64 {
        self.wal_fsyncs + self.data_fsyncs + self.other_fsyncs
    }

    /// The counters accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &StatsSnapshot) -> StatsSnapshot {
        let by_kind = std::array::from_fn(|i| {
            let (a, b) = (&self.by_kind[i], &earlier.by_kind[i]);
            KindCount {
                code: a.code,
                records: a.records - b.records,
                bytes: a.bytes - b.bytes,
            }
        });
        StatsSnapshot {
            by_kind,
            wal_record_bytes: self.wal_record_bytes - earlier.wal_record_bytes,
            wal_records: self.wal_records - earlier.wal_records,
            wal_bytes_written: self.wal_bytes_written - earlier.wal_bytes_written,
            wal_frame_raw_bytes: self.wal_frame_raw_bytes - earlier.wal_frame_raw_bytes,
            page_images: self.page_images - earlier.page_images,
            page_image_bytes: self.page_image_bytes - earlier.page_image_bytes,
            index_wal_records: self.index_wal_records - earlier.index_wal_records,
            index_wal_bytes: self.index_wal_bytes - earlier.index_wal_bytes,
            index_page_images: self.index_page_images - earlier.index_page_images,
            wal_fsyncs: self.wal_fsyncs - earlier.wal_fsyncs,
            data_pages_written: self.data_pages_written - earlier.data_pages_written,
            data_bytes_written: self.data_bytes_written - earlier.data_bytes_written,
            data_bytes_given_back: self.data_bytes_given_back - earlier.data_bytes_given_back,
            data_fsyncs: self.data_fsyncs - earlier.data_fsyncs,
            other_fsyncs: self.other_fsyncs - earlier.other_fsyncs,
            checkpoints: self.checkpoints - earlier.checkpoints,
            commits: self.commits - earlier.commits,
            aborts: self.aborts - earlier.aborts,
            undo_records: self.undo_records - earlier.undo_records,
            undo_bytes: self.undo_bytes - earlier.undo_bytes,
            undo_bytes_spilled: self.undo_bytes_spilled - earlier.undo_bytes_spilled,
            undo_bytes_read_back: self.undo_bytes_read_back - earlier.undo_bytes_read_back,
            temp_files: self.temp_files - earlier.temp_files,
            temp_bytes: self.temp_bytes - earlier.temp_bytes,
            versions_pruned: self.versions_pruned - earlier.versions_pruned,
            index_pages_freed: self.index_pages_freed - earlier.index_pages_freed,
        }
    }
}

impl Stats {
    pub fn snapshot(&self) -> StatsSnapshot {
        let by_kind = self.wal.snapshot();
        StatsSnapshot {
            wal_record_bytes: by_kind.iter().map(|k| k.bytes).sum(),
            wal_records: by_kind.iter().map(|k| k.records).sum(),
            page_images: self.wal.images.load(Relaxed),
            page_image_bytes: self.wal.image_bytes.load(Relaxed),
            index_wal_records: self.wal.index_records.load(Relaxed),
            index_wal_bytes: self.wal.index_bytes.load(Relaxed),
            index_page_images: self.wal.index_images.load(Relaxed),
            by_kind,
            wal_bytes_written: self.wal_bytes_written.load(Relaxed),
            wal_frame_raw_bytes: self.wal_frame_raw_bytes.load(Relaxed),
            wal_fsyncs: self.wal_fsyncs.load(Relaxed),
            data_pages_written: self.data_pages_written.load(Relaxed),
            data_bytes_written: self.data_bytes_written.load(Relaxed),
            data_bytes_given_back: self.data_bytes_given_back.load(Relaxed),
            data_fsyncs: self.data_fsyncs.load(Relaxed),
            other_fsyncs: self.other_fsyncs.load(Relaxed),
            checkpoints: self.checkpoints.load(Relaxed),
            commits: self.commits.load(Relaxed),
            aborts: self.aborts.load(Relaxed),
            undo_records: self.undo_records.load(Relaxed),
            undo_bytes: self.undo_bytes.load(Relaxed),
            undo_bytes_spilled: self.undo_bytes_spilled.load(Relaxed),
            undo_bytes_read_back: self.undo_bytes_read_back.load(Relaxed),
            temp_files: self.temp_files.load(Relaxed),
            temp_bytes: self.temp_bytes.load(Relaxed),
            versions_pruned: self.versions_pruned.load(Relaxed),
            index_pages_freed: self.index_pages_freed.load(Relaxed),
        }
    }
}

/// Per-transaction WAL counters (single-threaded: a transaction belongs to one thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnStats {
    /// Records and bytes by record code.
    pub records: [u64; RECORD_CODES],
    pub bytes: [u64; RECORD_CODES],
    images: u64,
    image_bytes: u64,
    /// Records (images included) that changed index pages, and their bytes.
    pub index_records: u64,
    pub index_bytes: u64,
    /// Undo records and bytes this transaction appended to the undo log.
    pub undo_records: u64,
    pub undo_bytes: u64,
}

impl Default for TxnStats {
    fn default() -> TxnStats {
        TxnStats {
            records: [0; RECORD_CODES],
            bytes: [0; RECORD_CODES],
            images: 0,
            image_bytes: 0,
            index_records: 0,
            index_bytes: 0,
            undo_records: 0,
            undo_bytes: 0,
        }
    }
}

impl TxnStats {
    /// Counts a record of type `code`; `image` when it is a page image.
    pub fn add(&mut self, code: u8, bytes: u64, image: bool, index: bool) {
        let i = code as usize % RECORD_CODES;
        self.records[i] += 1;
        self.bytes[i] += bytes;
        if image {
            self.images += 1;
            self.image_bytes += bytes;
        }
        if index {
            self.index_records += 1;
            self.index_bytes += bytes;
        }
    }
    pub fn wal_bytes(&self) -> u64 {
        self.bytes.iter().sum()
    }
    pub fn wal_records(&self) -> u64 {
        self.records.iter().sum()
    }
    pub fn page_images(&self) -> u64 {
        self.images
    }
    pub fn page_image_bytes(&self) -> u64 {
        self.image_bytes
    }
}
