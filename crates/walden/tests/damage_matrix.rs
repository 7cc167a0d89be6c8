//! Damage matrix: what could go wrong is a database that, after one of its files was lost,
//! emptied, cut short, zeroed, flipped, or swapped for an older copy of itself or another
//! file of its kind, opens with contents other than what was acknowledged, fails without
//! saying which file is bad, or panics. Every file of a database (found by listing its
//! directory, so that files the engine adds later are covered too) × every kind of damage,
//! on heap and undo tables, with a log spanning several WAL segments and an unacknowledged
//! tail cut off by a crash, on the real file layer.
//!
//! Each case must end in an error whose text names the damaged file (its path or its name;
//! `NotADatabase` never counts, since the directory always holds the other files of a
//! database), or in a database holding exactly what was acknowledged, again after a close
//! and a reopen. A page nothing needed at open may instead fail its first read, with an
//! error naming the file; such cases are counted apart. A panic, a hang, wrong contents or
//! an error that does not name the file fails the test, which lists every failing case.
//!
//! CI runs a short sweep (a few hundred cases); `WALDEN_DAMAGE_LONG=1` runs the long one
//! (every protection mode, zstd and lz4, 4 KiB pages, more offsets and truncation points);
//! `WALDEN_DAMAGE_VERBOSE=1` prints every case with its outcome.
#![allow(clippy::unwrap_used)]

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use walden::rng::SimRng;
use walden::vfs::RealVfs;
use walden::wal::format::{
    frame_crc, parse_segment_name, FrameHeader, FLAG_SWITCH, FRAME_HEADER_BYTES,
    SEGMENT_HEADER_BYTES,
};
use walden::*;

mod support;
use support::{default_opts, id_text_schema, text_row, TempDir, SEGMENT_BYTES};

/// Set to 1 for the long sweep.
const LONG_ENV: &str = "WALDEN_DAMAGE_LONG";
/// Set to 1 to print every case with its outcome, not only the failures.
const VERBOSE_ENV: &str = "WALDEN_DAMAGE_VERBOSE";
/// Both table kinds live in every fixture.
const TABLES: [(&str, TableKind); 2] = [
    ("heap_rows", TableKind::Heap),
    ("undo_rows", TableKind::Undo),
];
const PAYLOAD_BYTES: usize = 200;
/// Rows each committed transaction inserts into each table.
const ROWS_PER_ROUND: usize = 60;
/// Segments the log fills before the last checkpoint.
const SEGMENTS_BEFORE_REDO: u64 = 2;
/// Segments the log reaches past the one holding the last checkpoint's redo point (so the
/// WAL recovery replays spans one more than this).
const SEGMENTS_AFTER_REDO: u64 = 2;
/// A case still running after this long is reported as hung (and left behind).
const CASE_TIMEOUT: Duration = Duration::from_secs(120);
/// Name prefix of the threads that run cases: their panics are captured, not printed.
const CASE_THREAD: &str = "damage-case";

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

// ---------------------------------------------------------------------------------------
// Fixtures

/// The settings of one pair of fixture databases.
#[derive(Debug, Clone, Copy)]
struct Config {
    name: &'static str,
    protection: Protection,
    compression: WalCompression,
    page_size: usize,
    seed: u64,
}

impl Config {
    fn options(&self) -> Options {
        Options {
            protection: self.protection,
            page_size: self.page_size,
            segment_size_bytes: SEGMENT_BYTES,
            wal_compression: self.compression,
            // Small, so that pages are evicted while the history is written: the data file
            // then holds pages newer than the last checkpoint, as after a real crash.
            buffer_pool_bytes: 2 << 20,
            // Small too, so that the crashed fixtures hold undo segment files (the running
            // transaction's undo, spilled): the open must delete them whatever they hold.
            undo_memory_bytes: 4 << 10,
            ..default_opts(Arc::new(RealVfs))
        }
    }
}

fn configs(long: bool) -> Vec<Config> {
    let c = |name, protection, compression, page_size, seed| Config {
        name,
        protection,
        compression,
        page_size,
        seed,
    };
    let mut v = vec![
        c("cow", Protection::Cow, WalCompression::Off, 8192, 11),
        c(
            "full-page",
            Protection::FullPage,
            WalCompression::Off,
            8192,
            12,
        ),
    ];
    if long {
        v.extend([
            c("none", Protection::None, WalCompression::Off, 8192, 13),
            c("cow-zstd", Protection::Cow, WalCompression::Zstd, 8192, 14),
            c("cow-lz4", Protection::Cow, WalCompression::Lz4, 8192, 15),
            c(
                "full-page-zstd",
                Protection::FullPage,
                WalCompression::Zstd,
                8192,
                16,
            ),
            c("none-lz4", Protection::None, WalCompression::Lz4, 8192, 17),
            c("cow-4k", Protection::Cow, WalCompression::Off, 4096, 18),
        ]);
    }
    v
}

/// How a fixture's history ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Unacknowledged work in the WAL files, then the process is gone (the database is
    /// dropped without `close`: with the real file layer every write is in the files,
    /// which is what a SIGKILL leaves).
    Crash,
    /// `close()`.
    Close,
}

/// A database built once; every case damages a copy of it.
struct Fixture {
    name: String,
    config: Config,
    end: End,
    dir: PathBuf,
    /// Per table: id -> payload of every row that acknowledged commits left.
    model: BTreeMap<&'static str, BTreeMap<i64, String>>,
    /// Copies of the whole directory taken earlier in its history: (when, directory).
    older: Vec<(&'static str, PathBuf)>,
    /// Index of another fixture with the same settings and different contents.
    donor: usize,
    /// The segment of the last checkpoint's redo point.
    redo_segment: u64,
}

impl Fixture {
    fn rows_acknowledged(&self) -> usize {
        self.model.values().map(|t| t.len()).sum()
    }
}

/// The changes of one transaction to one table, applied to the model once it commits.
#[derive(Default)]
struct Staged {
    put: Vec<(i64, RowId, String)>,
    deleted: Vec<i64>,
}

/// Writes a history and keeps the model of what was acknowledged.
struct Workload<'db> {
    db: &'db Database,
    rng: SimRng,
    next_id: i64,
    /// Per table (index into `TABLES`): id -> (where, payload) of the acknowledged rows.
    acked: [BTreeMap<i64, (RowId, String)>; 2],
}

impl<'db> Workload<'db> {
    fn new(db: &'db Database, seed: u64) -> Self {
        Workload {
            db,
            rng: SimRng::new(seed),
            next_id: 0,
            acked: Default::default(),
        }
    }

    /// A row payload that compresses about as well as text does, so that compressed
    /// fixtures still span several segments.
    fn payload(&mut self, id: i64) -> String {
        const ALPHABET: &[u8; 64] =
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
        let mut s = format!("{id}:");
        while s.len() < PAYLOAD_BYTES {
            s.push(ALPHABET[self.rng.below(64) as usize] as char);
        }
        s
    }

    fn insert(&mut self, tx: &mut Transaction, t: usize, n: usize, staged: &mut Staged) {
        let rows: Vec<(i64, String)> = (0..n)
            .map(|_| {
                let id = self.next_id;
                self.next_id += 1;
                (id, self.payload(id))
            })
            .collect();
        let ids = tx
            .insert_many(TABLES[t].0, rows.iter().map(|(id, p)| text_row(*id, p)))
            .unwrap();
        assert_eq!(ids.len(), rows.len());
        for ((id, p), rid) in rows.into_iter().zip(ids) {
            staged.put.push((id, rid, p));
        }
    }

    /// Up to `n` acknowledged rows of table `t` that this transaction has not touched.
    fn pick(&mut self, t: usize, n: usize, touched: &mut HashSet<i64>) -> Vec<(i64, RowId)> {
        let mut out = Vec::new();
        for _ in 0..n * 4 {
            if out.len() == n || self.next_id == 0 {
                break;
            }
            let id = self.rng.below(self.next_id as u64) as i64;
            if let Some((rid, _)) = self.acked[t].get(&id) {
                if touched.insert(id) {
                    out.push((id, *rid));
                }
            }
        }
        out
    }

    fn change(&mut self, tx: &mut Transaction, t: usize, updates: usize, deletes: usize) -> Staged {
        let mut staged = Staged::default();
        let mut touched = HashSet::new();
        for (id, rid) in self.pick(t, updates, &mut touched) {
            let p = self.payload(id);
            let moved = tx.update(TABLES[t].0, rid, &text_row(id, &p)).unwrap();
            staged.put.push((id, moved, p));
        }
        for (id, rid) in self.pick(t, deletes, &mut touched) {
            tx.delete(TABLES[t].0, rid).unwrap();
            staged.deleted.push(id);
        }
        staged
    }

    /// Inserts, updates and deletes in both tables in one transaction.
    fn write_round(
        &mut self,
        tx: &mut Transaction,
        inserts: usize,
        updates: usize,
        deletes: usize,
    ) -> [Staged; 2] {
        let mut staged: [Staged; 2] = Default::default();
        for (t, s) in staged.iter_mut().enumerate() {
            *s = self.change(tx, t, updates, deletes);
            self.insert(tx, t, inserts, s);
        }
        staged
    }

    /// One committed transaction; the model follows once `commit` returned.
    fn commit_round(&mut self, inserts: usize, updates: usize, deletes: usize) {
        let db = self.db;
        let mut tx = db.begin();
        let staged = self.write_round(&mut tx, inserts, updates, deletes);
        tx.commit().unwrap();
        for (t, s) in staged.into_iter().enumerate() {
            for id in s.deleted {
                self.acked[t].remove(&id).unwrap();
            }
            for (id, rid, p) in s.put {
                self.acked[t].insert(id, (rid, p));
            }
        }
    }

    /// A transaction that rolls back: the model does not change.
    fn rollback_round(&mut self) {
        let db = self.db;
        let mut tx = db.begin();
        self.write_round(&mut tx, ROWS_PER_ROUND, 8, 4);
        tx.rollback().unwrap();
    }

    /// Work no commit acknowledged: a transaction whose records a later commit's flush
    /// (and evictions) wrote to the WAL files, then more of it only in memory, then the
    /// crash. The transaction is forgotten, not dropped, so that nothing rolls it back.
    fn unacknowledged_tail(&mut self) {
        let db = self.db;
        let mut tx = db.begin();
        self.write_round(&mut tx, 4 * ROWS_PER_ROUND, 20, 10);
        // Inserts only: the running transaction holds its changed rows.
        self.commit_round(ROWS_PER_ROUND, 0, 0);
        self.write_round(&mut tx, ROWS_PER_ROUND, 0, 0);
        std::mem::forget(tx);
    }

    fn model(&self) -> BTreeMap<&'static str, BTreeMap<i64, String>> {
        TABLES
            .iter()
            .zip(&self.acked)
            .map(|((name, _), rows)| {
                (
                    *name,
                    rows.iter().map(|(id, (_, p))| (*id, p.clone())).collect(),
                )
            })
            .collect()
    }
}

/// The highest WAL segment number in a database directory.
fn max_segment(dir: &Path) -> u64 {
    fs::read_dir(dir.join("wal"))
        .unwrap()
        .filter_map(|e| parse_segment_name(e.unwrap().file_name().to_str()?))
        .max()
        .unwrap_or(0)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Builds one fixture: the history of `write_history`, then the end.
fn build_fixture(config: Config, root: &Path, end: End) -> Fixture {
    let ending = if end == End::Crash {
        "crashed"
    } else {
        "closed"
    };
    let name = format!("{}-{ending}", config.name);
    let dir = root.join(&name);
    let db = Database::create(&dir, config.options()).unwrap();
    for (t, kind) in TABLES {
        db.create_table_with(t, id_text_schema("payload"), kind)
            .unwrap();
    }
    let mut w = Workload::new(&db, config.seed * 1000 + end as u64);
    let (older, redo) = write_history(&mut w, &dir, root, &name);
    let (model, redo_segment) = match end {
        End::Crash => {
            w.unacknowledged_tail();
            let model = w.model();
            drop(db);
            (model, redo)
        }
        End::Close => {
            let model = w.model();
            db.close().unwrap();
            (model, max_segment(&dir))
        }
    };
    Fixture {
        name,
        config,
        end,
        dir,
        model,
        older,
        donor: usize::MAX,
        redo_segment,
    }
}

/// A checkpoint, work past a segment switch, a copy of the directory ("before the last
/// checkpoint"), the last checkpoint, work until the log reaches `SEGMENTS_AFTER_REDO`
/// more segments with a copy part way ("after the last checkpoint"), and a little more.
/// Returns the copies and the segment of the last checkpoint's redo point.
fn write_history(
    w: &mut Workload<'_>,
    dir: &Path,
    root: &Path,
    name: &str,
) -> (Vec<(&'static str, PathBuf)>, u64) {
    for _ in 0..3 {
        w.commit_round(ROWS_PER_ROUND, 0, 0);
    }
    w.db.checkpoint().unwrap();
    // The segments before the last checkpoint's redo point are recycled as later ones,
    // whose stale frames then lie past the new ones.
    let mut round = 0u64;
    while max_segment(dir) < 1 + SEGMENTS_BEFORE_REDO {
        round += 1;
        w.commit_round(ROWS_PER_ROUND, 8, 4);
        if round == 3 {
            w.rollback_round();
        }
    }
    let before = root.join(format!("{name}.before-last-checkpoint"));
    copy_dir(dir, &before);
    let mut older = vec![("before the last checkpoint", before)];
    w.commit_round(ROWS_PER_ROUND, 8, 4);
    w.db.checkpoint().unwrap();
    // The checkpoint wrote the WAL buffer out: its redo point is in the segment written
    // now.
    let redo = max_segment(dir);
    while max_segment(dir) < redo + SEGMENTS_AFTER_REDO {
        round += 1;
        if round.is_multiple_of(16) {
            w.rollback_round();
        } else {
            w.commit_round(ROWS_PER_ROUND, 8, 4);
        }
        if older.len() == 1 && max_segment(dir) > redo {
            let after = root.join(format!("{name}.after-last-checkpoint"));
            copy_dir(dir, &after);
            older.push(("after the last checkpoint", after));
        }
    }
    for _ in 0..3 {
        w.commit_round(ROWS_PER_ROUND, 8, 4);
    }
    (older, redo)
}

/// A crashed and a closed fixture per setting; each is the other's "other database".
fn build_fixtures(root: &Path, long: bool) -> Vec<Fixture> {
    let mut out = Vec::new();
    for config in configs(long) {
        let first = out.len();
        out.push(build_fixture(config, root, End::Crash));
        out.push(build_fixture(config, root, End::Close));
        out[first].donor = first + 1;
        out[first + 1].donor = first;
    }
    out
}

// ---------------------------------------------------------------------------------------
// Files and damage

/// What a file of a database is, by its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum FileKind {
    Control,
    Checkpoint,
    Data,
    Xact,
    WalSegment(u64),
    /// A file this test does not know (added by a later engine): damaged all the same.
    Other(String),
}

impl FileKind {
    fn of(rel: &Path) -> FileKind {
        let name = rel.file_name().unwrap().to_str().unwrap();
        let top = rel.parent() == Some(Path::new(""));
        match name {
            "control" if top => FileKind::Control,
            "data" if top => FileKind::Data,
            n if top && (n == "xact" || n.starts_with("xact.")) && !n.ends_with(".tmp") => {
                FileKind::Xact
            }
            n if top && n.starts_with("checkpoint.") && !n.ends_with(".tmp") => {
                FileKind::Checkpoint
            }
            n if rel.parent() == Some(Path::new("wal")) && parse_segment_name(n).is_some() => {
                FileKind::WalSegment(parse_segment_name(n).unwrap())
            }
            _ => FileKind::Other(rel.display().to_string()),
        }
    }

    /// The name in the per-kind counts.
    fn label(&self) -> String {
        match self {
            FileKind::Control => "control".into(),
            FileKind::Checkpoint => "checkpoint".into(),
            FileKind::Data => "data".into(),
            FileKind::Xact => "xact".into(),
            FileKind::WalSegment(_) => "wal segment".into(),
            FileKind::Other(name) => format!("other ({name})"),
        }
    }

    /// Files of one kind: all WAL segments are of one kind; an unknown file is of the
    /// kind of the files with its name.
    fn same_kind(&self, other: &FileKind) -> bool {
        match (self, other) {
            (FileKind::Other(a), FileKind::Other(b)) => a == b,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

/// A lock file holds no data: its contents are never read and a missing one is simply
/// created again, so damaging it says nothing about recovery. (The name is what engines
/// conventionally use; nothing else is skipped.)
fn is_lock_file(rel: &Path) -> bool {
    let name = rel
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    name == "lock" || name.ends_with(".lock") || name.starts_with("lock.")
}

/// Every file under `dir`, as paths relative to it, sorted.
fn list_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(root.join(rel)).unwrap() {
            let e = e.unwrap();
            let r = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                walk(root, &r, out);
            } else {
                out.push(r);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, Path::new(""), &mut out);
    out.sort();
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Damage {
    /// The undamaged copy: it must open with exactly the acknowledged contents.
    None,
    Missing,
    Empty,
    Truncated {
        len: u64,
        why: String,
    },
    Zeroed,
    Flipped {
        offset: u64,
        why: String,
    },
    /// Replaced by the bytes of `from` (an older copy, or another file of the same kind).
    Replaced {
        from: PathBuf,
        what: String,
    },
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::None => write!(f, "none (the undamaged copy)"),
            Damage::Missing => write!(f, "missing"),
            Damage::Empty => write!(f, "empty"),
            Damage::Truncated { len, why } => write!(f, "truncated to {len} bytes ({why})"),
            Damage::Zeroed => write!(f, "zeroed"),
            Damage::Flipped { offset, why } => write!(f, "byte {offset} flipped ({why})"),
            Damage::Replaced { what, .. } => write!(f, "replaced by {what}"),
        }
    }
}

fn apply_damage(path: &Path, damage: &Damage) {
    match damage {
        Damage::None => {}
        Damage::Missing => fs::remove_file(path).unwrap(),
        Damage::Empty => fs::write(path, b"").unwrap(),
        Damage::Truncated { len, .. } => {
            let f = fs::OpenOptions::new().write(true).open(path).unwrap();
            f.set_len(*len).unwrap();
        }
        Damage::Zeroed => {
            let len = fs::metadata(path).unwrap().len();
            fs::write(path, vec![0u8; len as usize]).unwrap();
        }
        Damage::Flipped { offset, .. } => {
            let mut bytes = fs::read(path).unwrap();
            bytes[*offset as usize] ^= 0xFF;
            fs::write(path, bytes).unwrap();
        }
        Damage::Replaced { from, .. } => {
            fs::copy(from, path).unwrap();
        }
    }
}

/// A valid frame of a WAL segment.
struct Frame {
    offset: u64,
    payload_len: u64,
    switch: bool,
}

/// The valid frames of a segment from its start, up to the first that does not validate
/// (in a recycled segment, the stale frames after the new ones fail their CRC).
fn valid_frames(bytes: &[u8], segment_no: u64) -> Vec<Frame> {
    let mut out = Vec::new();
    let mut at = SEGMENT_HEADER_BYTES as usize;
    let hl = FRAME_HEADER_BYTES as usize;
    while at + hl <= bytes.len() {
        let Some(h) = FrameHeader::decode(&bytes[at..at + hl]) else {
            break;
        };
        let end = at + hl + h.payload_len as usize;
        if end > bytes.len()
            || frame_crc(
                segment_no,
                at as u64,
                &bytes[at..at + hl],
                &bytes[at + hl..end],
            ) != h.crc
        {
            break;
        }
        out.push(Frame {
            offset: at as u64,
            payload_len: h.payload_len as u64,
            switch: h.flags & FLAG_SWITCH != 0,
        });
        at = end;
    }
    out
}

/// Where the valid frames of a segment end.
fn frames_end(frames: &[Frame]) -> u64 {
    frames.last().map_or(SEGMENT_HEADER_BYTES, |f| {
        f.offset + FRAME_HEADER_BYTES + f.payload_len
    })
}

/// Lengths to cut a file to, with why each is interesting; all below the file's length
/// and above 0 (an empty file is a damage of its own).
fn truncations(
    kind: &FileKind,
    bytes: &[u8],
    page_size: u64,
    long: bool,
    rng: &mut SimRng,
) -> Vec<(u64, String)> {
    let len = bytes.len() as u64;
    let mut v = vec![
        (1, "1 byte left".to_string()),
        (len / 2, "half".to_string()),
        (len.saturating_sub(1), "all but the last byte".to_string()),
    ];
    match kind {
        FileKind::Checkpoint => v.push((24, "header only".into())),
        FileKind::Data => {
            v.push((len.saturating_sub(page_size), "last page cut off".into()));
            v.push((page_size, "first page only".into()));
            if long {
                v.push((
                    len / 2 / page_size * page_size + page_size / 2,
                    "in the middle of a page".into(),
                ));
            }
        }
        FileKind::WalSegment(no) => {
            let frames = valid_frames(bytes, *no);
            let end = frames_end(&frames);
            v.push((SEGMENT_HEADER_BYTES, "segment header only".into()));
            v.push((
                end.div_ceil(4096) * 4096,
                "just after the last frame: only unwritten bytes lost".into(),
            ));
            if long {
                v.push((end.saturating_sub(1), "inside the last frame".into()));
                if let Some(f) = frames.get(frames.len() / 2) {
                    v.push((f.offset, "at a frame boundary in the middle".into()));
                }
            }
        }
        _ => {}
    }
    if long {
        for _ in 0..3 {
            v.push((1 + rng.below(len.max(2) - 1), "seeded".into()));
        }
    }
    let mut seen = HashSet::new();
    v.retain(|(l, _)| *l > 0 && *l < len && seen.insert(*l));
    v
}

/// Fields of the control file (docs/format.md, format 4); the bool marks those of the CI
/// sweep. Field names only label the report: the damage is the same whatever the layout.
const CONTROL_FIELDS: [(u64, &str, bool); 10] = [
    (0, "magic", true),
    (8, "format version", false),
    (12, "checksum", true),
    (16, "page size", false),
    (20, "protection", true),
    (24, "segment size", false),
    (32, "checkpoint number", true),
    (40, "generation", true),
    (48, "database id", false),
    (56, "compression / reserved", false),
];

/// The header of a checkpoint file, and the start of its body (the checkpoint number, then
/// the positions recovery starts from).
const CHECKPOINT_FIELDS: [(u64, &str, bool); 9] = [
    (0, "magic", true),
    (8, "format version", false),
    (12, "checksum", false),
    (16, "body length", false),
    (24, "body: checkpoint number", true),
    (32, "body byte 8", true),
    (40, "body byte 16", false),
    (48, "body byte 24", true),
    (56, "body byte 32", false),
];

/// Offsets at which to flip a byte, with what each hits.
fn flips(
    kind: &FileKind,
    bytes: &[u8],
    page_size: u64,
    long: bool,
    rng: &mut SimRng,
) -> Vec<(u64, String)> {
    let len = bytes.len() as u64;
    let fields = |f: &[(u64, &str, bool)]| -> Vec<(u64, String)> {
        f.iter()
            .filter(|(_, _, ci)| long || *ci)
            .map(|(o, w, _)| (*o, w.to_string()))
            .collect()
    };
    let mut v = match kind {
        FileKind::Control => fields(&CONTROL_FIELDS),
        FileKind::Checkpoint => {
            let mut v = fields(&CHECKPOINT_FIELDS);
            v.push((len.saturating_sub(1), "last byte (catalog)".into()));
            v
        }
        FileKind::Data => data_flips(len, page_size, long, rng),
        FileKind::WalSegment(no) => wal_flips(bytes, *no, long, rng),
        FileKind::Xact | FileKind::Other(_) => {
            let mut v = vec![
                (0, "first byte".to_string()),
                (len / 2, "middle".into()),
                (len.saturating_sub(1), "last byte".into()),
            ];
            if long {
                v.extend([8, 12, 16, 24, 32].map(|o| (o, format!("byte {o} (header)"))));
            }
            v
        }
    };
    if !matches!(kind, FileKind::WalSegment(_)) {
        for _ in 0..if long { 4 } else { 1 } {
            v.push((rng.below(len.max(1)), "seeded".into()));
        }
    }
    let mut seen = HashSet::new();
    v.retain(|(o, _)| *o < len && seen.insert(*o));
    v
}

fn data_flips(len: u64, page_size: u64, long: bool, rng: &mut SimRng) -> Vec<(u64, String)> {
    let pages = (len / page_size).max(1);
    let mut v = vec![
        (0, "page 0: checksum".to_string()),
        (page_size + 8, "page 1: header LSN".into()),
        (
            (pages - 1) * page_size + page_size / 2,
            format!("page {}: middle", pages - 1),
        ),
        (len.saturating_sub(1), "last byte".into()),
    ];
    let seeded = if long { 6 } else { 1 };
    for _ in 0..seeded {
        let p = rng.below(pages);
        let at = 32 + rng.below(page_size - 32);
        v.push((p * page_size + at, format!("page {p}: seeded byte {at}")));
    }
    if long {
        for (field, at) in [
            ("kind", 4),
            ("slot count", 6),
            ("page number", 16),
            ("owner", 28),
        ] {
            let p = rng.below(pages);
            v.push((p * page_size + at, format!("page {p}: header {field}")));
        }
    }
    v
}

fn wal_flips(bytes: &[u8], no: u64, long: bool, rng: &mut SimRng) -> Vec<(u64, String)> {
    let len = bytes.len() as u64;
    let frames = valid_frames(bytes, no);
    let mut v = vec![(16, "segment header: segment number".to_string())];
    if long {
        v.extend([
            (0, "segment header: magic".to_string()),
            (8, "segment header: version".into()),
            (12, "segment header: checksum".into()),
            (24, "segment header: segment size".into()),
            (32, "segment header: database id".into()),
            (
                frames_end(&frames),
                "first byte after the last frame".into(),
            ),
            (len.saturating_sub(1), "last byte of the file".into()),
        ]);
    }
    if frames.is_empty() {
        v.push((len / 2, "middle (no valid frame in this segment)".into()));
        return v;
    }
    let n = frames.len();
    let payload_byte = |i: usize, at: u64| frames[i].offset + FRAME_HEADER_BYTES + at;
    v.push((frames[0].offset + 16, format!("frame 1 of {n}: header LSN")));
    // Frames of records; a frame without payload is a switch or an end marker.
    let records: Vec<usize> = (0..n).filter(|&i| frames[i].payload_len > 0).collect();
    if let Some(&i) = records.get(records.len() / 2) {
        v.push((
            payload_byte(i, frames[i].payload_len / 2),
            format!("frame {} of {n}: payload middle", i + 1),
        ));
    }
    if let Some(&i) = records.last() {
        v.push((
            payload_byte(i, frames[i].payload_len - 1),
            format!("frame {} of {n}: last byte of the last record frame", i + 1),
        ));
    }
    if frames[n - 1].payload_len == 0 {
        let what = if frames[n - 1].switch {
            "switch frame"
        } else {
            "end marker"
        };
        v.push((
            frames[n - 1].offset + 24,
            format!("frame {n} of {n}: {what} durable LSN"),
        ));
    }
    if long {
        for (field, at) in [
            ("magic", 0),
            ("checksum", 4),
            ("payload length", 8),
            ("generation", 32),
        ] {
            let i = rng.below(n as u64) as usize;
            v.push((
                frames[i].offset + at,
                format!("frame {} of {n}: header {field}", i + 1),
            ));
        }
    }
    for _ in 0..if long { 5 } else { 1 } {
        let i = rng.below(n as u64) as usize;
        let size = FRAME_HEADER_BYTES + frames[i].payload_len;
        let at = rng.below(size);
        v.push((
            frames[i].offset + at,
            format!("frame {} of {n}: seeded byte {at}", i + 1),
        ));
    }
    v
}

/// Files to put in place of `rel`: its older copies, and other files of the same kind (of
/// this database, of its older copies, or of another database).
fn replacements(
    fx: &Fixture,
    donor: &Fixture,
    rel: &Path,
    kind: &FileKind,
    bytes: &[u8],
    long: bool,
) -> Vec<(PathBuf, String)> {
    let mut v = Vec::new();
    for (when, snap) in &fx.older {
        if snap.join(rel).exists() {
            v.push((snap.join(rel), format!("its older copy ({when})")));
        }
    }
    match kind {
        FileKind::WalSegment(no) => {
            // The next segment (else the previous one); the long sweep takes both.
            let mut neighbours = [no + 1, no.wrapping_sub(1)]
                .into_iter()
                .map(|n| rel.with_file_name(format!("{n:016x}")))
                .filter(|r| fx.dir.join(r).exists())
                .collect::<Vec<_>>();
            neighbours.truncate(if long { 2 } else { 1 });
            for other in neighbours {
                v.push((
                    fx.dir.join(&other),
                    format!("{} of this database", other.display()),
                ));
            }
            if donor.dir.join(rel).exists() {
                v.push((
                    donor.dir.join(rel),
                    "the same segment of another database".into(),
                ));
            }
        }
        FileKind::Checkpoint => {
            for (when, snap) in &fx.older {
                for other in list_files(snap)
                    .into_iter()
                    .filter(|r| r != rel && FileKind::of(r) == *kind)
                {
                    v.push((
                        snap.join(&other),
                        format!("{} of this database ({when})", other.display()),
                    ));
                }
            }
            for other in list_files(&donor.dir)
                .into_iter()
                .filter(|r| FileKind::of(r) == *kind)
            {
                v.push((
                    donor.dir.join(&other),
                    format!("{} of another database", other.display()),
                ));
            }
        }
        _ => {
            let same = list_files(&donor.dir)
                .into_iter()
                .filter(|r| FileKind::of(r).same_kind(kind))
                .min_by_key(|r| r != rel);
            if let Some(other) = same {
                v.push((
                    donor.dir.join(&other),
                    format!("{} of another database", other.display()),
                ));
            }
        }
    }
    // A replacement with the same bytes would be no damage at all.
    let mut seen = HashSet::new();
    v.retain(|(from, _)| {
        let b = fs::read(from).unwrap();
        b != bytes && seen.insert(b)
    });
    v
}

/// One case: a fixture, a file of it (relative path) and a damage.
struct Case {
    fixture: usize,
    file: PathBuf,
    kind: Option<FileKind>,
    damage: Damage,
}

fn seed_of(fx: &Fixture, rel: &Path) -> u64 {
    // FNV-1a of the path, mixed with the fixture's seed: offsets stay put when other
    // files come and go.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ fx.config.seed;
    for b in rel.display().to_string().bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn cases_for(fixtures: &[Fixture], index: usize, long: bool) -> Vec<Case> {
    let fx = &fixtures[index];
    let donor = &fixtures[fx.donor];
    let mut out = vec![Case {
        fixture: index,
        file: PathBuf::new(),
        kind: None,
        damage: Damage::None,
    }];
    let page_size = fx.config.page_size as u64;
    for rel in list_files(&fx.dir).into_iter().filter(|r| !is_lock_file(r)) {
        let bytes = fs::read(fx.dir.join(&rel)).unwrap();
        let kind = FileKind::of(&rel);
        let mut rng = SimRng::new(seed_of(fx, &rel));
        let mut damages = vec![Damage::Missing];
        if !bytes.is_empty() {
            damages.push(Damage::Empty);
            damages.push(Damage::Zeroed);
        }
        for (len, why) in truncations(&kind, &bytes, page_size, long, &mut rng) {
            damages.push(Damage::Truncated { len, why });
        }
        for (offset, why) in flips(&kind, &bytes, page_size, long, &mut rng) {
            damages.push(Damage::Flipped { offset, why });
        }
        for (from, what) in replacements(fx, donor, &rel, &kind, &bytes, long) {
            damages.push(Damage::Replaced { from, what });
        }
        out.extend(damages.into_iter().map(|damage| Case {
            fixture: index,
            file: rel.clone(),
            kind: Some(kind.clone()),
            damage,
        }));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Running a case and judging it

#[derive(Debug, Clone)]
enum Outcome {
    /// Open failed with an error naming the damaged file.
    Refused { variant: String, message: String },
    /// Opened, and every table held exactly what was acknowledged, also after a reopen.
    Exact,
    /// Opened, but reading a table failed with an error naming the damaged file (a page
    /// nothing needed at open is checked when read).
    RefusedOnRead { variant: String, message: String },
    /// Anything else.
    Failed(String),
}

impl Outcome {
    fn label(&self) -> &'static str {
        match self {
            Outcome::Refused { .. } => "refused at open (error names the file)",
            Outcome::Exact => "opened with exactly the acknowledged contents",
            Outcome::RefusedOnRead { .. } => "opened, a read refused (error names the file)",
            Outcome::Failed(_) => "FAILED",
        }
    }
}

fn variant_name(e: &Error) -> String {
    let debug = format!("{e:?}");
    debug
        .split([' ', '{', '('])
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Whether `needle` appears in `text` as a whole name (not inside a longer one).
fn mentions(text: &str, needle: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(needle).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + needle.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// Whether the message names the file: its full path, its path in the database
/// directory, or its name.
fn names_file(message: &str, dir: &Path, rel: &Path) -> bool {
    let full = dir.join(rel).display().to_string();
    let name = rel.file_name().map(|n| n.to_string_lossy().to_string());
    [Some(full), Some(rel.display().to_string()), name]
        .into_iter()
        .flatten()
        .any(|n| mentions(message, &n))
}

/// The error text with the case directory left out, for the report.
fn short(e: &Error, dir: &Path) -> String {
    e.to_string().replace(&format!("{}/", dir.display()), "")
}

fn judge_error(e: &Error, dir: &Path, case: &Case, when: &str) -> Outcome {
    let variant = variant_name(e);
    let msg = short(e, dir);
    if case.damage == Damage::None {
        return Outcome::Failed(format!(
            "the undamaged copy failed at {when}: {variant}: {msg}"
        ));
    }
    if matches!(e, Error::NotADatabase { .. }) {
        // Every case leaves other files of the database in the directory.
        return Outcome::Failed(format!(
            "{when}: {variant} although the directory holds the other files of a database: {msg}"
        ));
    }
    if names_file(&e.to_string(), dir, &case.file) {
        return if when == "open" {
            Outcome::Refused {
                variant,
                message: msg,
            }
        } else {
            Outcome::RefusedOnRead {
                variant,
                message: msg,
            }
        };
    }
    Outcome::Failed(format!(
        "{when} failed with an error that does not name {}: {variant}: {msg}",
        case.file.display()
    ))
}

/// How the rows of one table differ from the model, or None.
fn diff(table: &str, rows: &[(RowId, Row)], model: &BTreeMap<i64, String>) -> Option<String> {
    let mut seen = BTreeMap::new();
    let (mut extra, mut changed, mut duplicates, mut malformed) = (0, 0, 0, 0);
    for (_, r) in rows {
        let (Some(Value::Int8(id)), Some(Value::Text(p)), 2) = (r.first(), r.get(1), r.len())
        else {
            malformed += 1;
            continue;
        };
        let n = seen.entry(*id).or_insert(0);
        *n += 1;
        if *n > 1 {
            duplicates += 1;
            continue;
        }
        match model.get(id) {
            None => extra += 1,
            Some(q) if q != p => changed += 1,
            Some(_) => {}
        }
    }
    let missing = model.keys().filter(|id| !seen.contains_key(id)).count();
    let parts: Vec<String> = [
        (missing, "missing"),
        (extra, "not in the acknowledged contents"),
        (changed, "with other contents"),
        (duplicates, "seen twice"),
        (malformed, "malformed"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "{table}: {} rows of {} acknowledged ({})",
            rows.len(),
            model.len(),
            parts.join(", ")
        )
    })
}

/// Ok when every table holds exactly the model; else the outcome that ends the case.
fn compare(
    db: &Database,
    fx: &Fixture,
    dir: &Path,
    case: &Case,
    when: &str,
) -> Result<(), Outcome> {
    let expected: Vec<String> = fx.model.keys().map(|t| t.to_string()).collect();
    let names = db.table_names();
    if names != expected {
        return Err(Outcome::Failed(format!(
            "{when}: opened with tables {names:?}, acknowledged {expected:?}"
        )));
    }
    let mut diffs = Vec::new();
    for (table, model) in &fx.model {
        match db.begin().scan(table) {
            Ok(rows) => diffs.extend(diff(table, &rows, model)),
            Err(e) => {
                return Err(judge_error(
                    &e,
                    dir,
                    case,
                    &format!("reading {table} {when}"),
                ))
            }
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(Outcome::Failed(format!(
            "{when}: opened with {}",
            diffs.join("; ")
        )))
    }
}

fn check_case(dir: &Path, fx: &Fixture, case: &Case) -> Outcome {
    let db = match Database::open(dir, fx.config.options()) {
        Ok(db) => db,
        Err(e) => return judge_error(&e, dir, case, "open"),
    };
    if case.damage == Damage::None
        && fx.end == End::Crash
        && db.recovery_report().transactions_rolled_back == 0
    {
        return Outcome::Failed(
            "harness: recovery rolled back nothing, so the unacknowledged tail never reached the WAL files".into(),
        );
    }
    if let Err(o) = compare(&db, fx, dir, case, "after open") {
        return o;
    }
    if let Err(e) = db.close() {
        return Outcome::Failed(format!(
            "opened with the acknowledged contents, but close failed: {}",
            short(&e, dir)
        ));
    }
    let db = match Database::open(dir, fx.config.options()) {
        Ok(db) => db,
        Err(e) => {
            return Outcome::Failed(format!(
                "opened with the acknowledged contents, but the reopen after close failed: {}: {}",
                variant_name(&e),
                short(&e, dir)
            ))
        }
    };
    let r = compare(&db, fx, dir, case, "after close and reopen");
    drop(db);
    match r {
        Ok(()) => Outcome::Exact,
        Err(o) => o,
    }
}

thread_local! {
    /// The last panic of this thread, captured by the hook instead of printed.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let in_case = thread::current()
                .name()
                .is_some_and(|n| n.starts_with(CASE_THREAD));
            if in_case {
                let text = info.to_string().replace('\n', " ");
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
            } else {
                default(info);
            }
        }));
    });
}

/// Copies the fixture, damages the copy, opens it (panics caught), and cleans up.
fn run_case(fixtures: &[Fixture], case: &Case, dir: &Path) -> Outcome {
    let fx = &fixtures[case.fixture];
    copy_dir(&fx.dir, dir);
    apply_damage(&dir.join(&case.file), &case.damage);
    let r = panic::catch_unwind(AssertUnwindSafe(|| check_case(dir, fx, case)));
    let _ = fs::remove_dir_all(dir);
    r.unwrap_or_else(|_| {
        let at = LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_default();
        Outcome::Failed(format!("panic: {at}"))
    })
}

/// Runs every case on a few worker threads, each case in a thread of its own so that a
/// hung case is reported and left behind instead of stopping the sweep.
fn run_all(fixtures: Arc<Vec<Fixture>>, cases: Arc<Vec<Case>>, root: &Path) -> Vec<Outcome> {
    install_panic_hook();
    let next = Arc::new(AtomicUsize::new(0));
    let results = Arc::new(Mutex::new(vec![None; cases.len()]));
    let workers = thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let (fixtures, cases, next, results) = (
                fixtures.clone(),
                cases.clone(),
                next.clone(),
                results.clone(),
            );
            let root = root.to_path_buf();
            thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= cases.len() {
                    break;
                }
                let (tx, rx) = mpsc::channel();
                let (f, c, dir) = (
                    fixtures.clone(),
                    cases.clone(),
                    root.join(format!("case-{i}")),
                );
                thread::Builder::new()
                    .name(format!("{CASE_THREAD}-{i}"))
                    .spawn(move || {
                        let _ = tx.send(run_case(&f, &c[i], &dir));
                    })
                    .unwrap();
                let outcome = match rx.recv_timeout(CASE_TIMEOUT) {
                    Ok(o) => o,
                    Err(mpsc::RecvTimeoutError::Timeout) => Outcome::Failed(format!(
                        "hung: no result after {} s",
                        CASE_TIMEOUT.as_secs()
                    )),
                    Err(mpsc::RecvTimeoutError::Disconnected) => Outcome::Failed(
                        "harness: the case thread died while copying or damaging".into(),
                    ),
                };
                results.lock().unwrap()[i] = Some(outcome);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let results = std::mem::take(&mut *results.lock().unwrap());
    results.into_iter().map(Option::unwrap).collect()
}

// ---------------------------------------------------------------------------------------
// The test

fn describe_fixture(fx: &Fixture) -> String {
    let segments: Vec<u64> = list_files(&fx.dir)
        .iter()
        .filter_map(|r| match FileKind::of(r) {
            FileKind::WalSegment(no) => Some(no),
            _ => None,
        })
        .collect();
    format!(
        "{}: {} files, WAL segments {:?}, redo point in segment {}, {} rows acknowledged",
        fx.name,
        list_files(&fx.dir).len(),
        segments,
        fx.redo_segment,
        fx.rows_acknowledged()
    )
}

fn print_summary(fixtures: &[Fixture], cases: &[Case], outcomes: &[Outcome]) {
    let mut per_kind: BTreeMap<String, BTreeMap<&str, usize>> = BTreeMap::new();
    let mut per_outcome: BTreeMap<&str, usize> = BTreeMap::new();
    let mut variants: BTreeMap<String, usize> = BTreeMap::new();
    for (case, o) in cases.iter().zip(outcomes) {
        let kind = case
            .kind
            .as_ref()
            .map_or("(undamaged copy)".to_string(), FileKind::label);
        *per_kind
            .entry(kind)
            .or_default()
            .entry(o.label())
            .or_default() += 1;
        *per_outcome.entry(o.label()).or_default() += 1;
        if let Outcome::Refused { variant, .. } | Outcome::RefusedOnRead { variant, .. } = o {
            *variants.entry(variant.clone()).or_default() += 1;
        }
    }
    for fx in fixtures {
        println!("  fixture {}", describe_fixture(fx));
    }
    println!("  cases per file kind (injected damage), by outcome:");
    for (kind, by) in &per_kind {
        let total: usize = by.values().sum();
        let parts: Vec<String> = by.iter().map(|(o, n)| format!("{o}: {n}")).collect();
        println!("    {kind:<28} {total:>5}  ({})", parts.join("; "));
    }
    println!("  outcomes:");
    for (o, n) in &per_outcome {
        println!("    {o:<48} {n:>5}");
    }
    println!("  errors that refused: {variants:?}");
}

fn failure_table(fixtures: &[Fixture], cases: &[Case], outcomes: &[Outcome]) -> String {
    let rows: Vec<(String, String, String, &str)> = cases
        .iter()
        .zip(outcomes)
        .filter_map(|(c, o)| match o {
            Outcome::Failed(why) => Some((
                fixtures[c.fixture].name.clone(),
                if c.file.as_os_str().is_empty() {
                    "-".into()
                } else {
                    c.file.display().to_string()
                },
                c.damage.to_string(),
                why.as_str(),
            )),
            _ => None,
        })
        .collect();
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(7);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(4);
    let w2 = rows.iter().map(|r| r.2.len()).max().unwrap_or(0).max(6);
    let mut s = format!(
        "{:<w0$} | {:<w1$} | {:<w2$} | outcome\n",
        "fixture", "file", "damage"
    );
    for (f, file, damage, why) in &rows {
        s += &format!("{f:<w0$} | {file:<w1$} | {damage:<w2$} | {why}\n");
    }
    s
}

#[test]
fn every_file_times_every_damage_ends_in_a_named_error_or_the_acknowledged_contents() {
    let long = env_flag(LONG_ENV);
    let root = TempDir::new("damage-matrix");
    fs::create_dir_all(&root.0).unwrap();
    let started = Instant::now();
    let fixtures = build_fixtures(&root.0, long);
    let built = started.elapsed();
    let cases: Vec<Case> = (0..fixtures.len())
        .flat_map(|i| cases_for(&fixtures, i, long))
        .collect();
    let (fixtures, cases) = (Arc::new(fixtures), Arc::new(cases));
    let outcomes = run_all(fixtures.clone(), cases.clone(), &root.0);
    println!(
        "damage matrix ({} mode; {LONG_ENV}=1 for the long sweep): {} fixtures built in {:.1} s, {} cases run in {:.1} s",
        if long { "long" } else { "CI" },
        fixtures.len(),
        built.as_secs_f64(),
        cases.len(),
        (started.elapsed() - built).as_secs_f64()
    );
    print_summary(&fixtures, &cases, &outcomes);
    if env_flag(VERBOSE_ENV) {
        for (c, o) in cases.iter().zip(outcomes.iter()) {
            let detail = match o {
                Outcome::Refused { variant, message }
                | Outcome::RefusedOnRead { variant, message } => format!("{variant}: {message}"),
                Outcome::Failed(why) => why.clone(),
                Outcome::Exact => String::new(),
            };
            let f = &fixtures[c.fixture].name;
            println!(
                "    {f} | {} | {} | {}: {detail}",
                c.file.display(),
                c.damage,
                o.label()
            );
        }
    }
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let failed = count(|o| matches!(o, Outcome::Failed(_)));
    assert!(
        failed == 0,
        "{failed} of {} damage cases failed:\n{}",
        cases.len(),
        failure_table(&fixtures, &cases, &outcomes)
    );
    assert!(
        count(|o| matches!(o, Outcome::Refused { .. })) > 0,
        "no damage was refused: the matrix injected nothing"
    );
    let damaged_exact = cases
        .iter()
        .zip(outcomes.iter())
        .filter(|(c, o)| c.damage != Damage::None && matches!(o, Outcome::Exact))
        .count();
    assert!(
        damaged_exact > 0,
        "no damaged copy opened: the matrix tested nothing that recovers"
    );
}
