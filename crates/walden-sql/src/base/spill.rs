//! Rows a sort or a grouping writes to a temporary file when they pass `work_mem`, and
//! the external merge sort built on them.
//!
//! A [`Spool`] is a sequence of rows in one temporary file (`walden::TempFile`, made in
//! the database's `tmp/` directory), written in blocks of about 32 KiB and read back
//! in order. A block (docs/format.md, "Temporary files") is `payload length u32 |
//! crc32c of the payload u32 | rows u32 | payload`, each row `values u16 | value…`,
//! each value a tag byte and its bytes. The bytes come back from disk, so every block
//! is checked (length, checksum, every value's bounds and UTF-8) before a row is taken
//! from it: a damaged file is an error (XX001), never a wrong row.
//!
//! A sort keeps rows until they pass `work_mem`, then sorts them and writes them as
//! one run; at the end the runs and what is still in memory are merged, at most
//! [`MERGE_FAN_IN`] at a time (more runs are first merged into fewer, oldest first).
//! Rows that compare equal come out in the order they arrived, as an in-memory stable
//! sort gives them.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use walden::codec::Reader;
use walden::{Interval, Json, Numeric, TempFile, TempSpace, Value};

use crate::error::{code, SqlError, SqlResult};

/// A block is written once its rows pass this many bytes.
const BLOCK_BYTES: usize = 32 << 10;
const BLOCK_HEADER: usize = 12;
/// Most runs merged at once (each holds one block in memory while merged: 4 MiB of
/// blocks, some more decoded).
pub(crate) const MERGE_FAN_IN: usize = 128;

/// Rows in a temporary file, written at the end and read from the start.
pub(crate) struct Spool {
    space: TempSpace,
    file: Option<TempFile>,
    /// Where each written block starts, and its length.
    blocks: Vec<(u64, u32)>,
    /// The block being filled: its rows' bytes, and how many rows.
    buf: Vec<u8>,
    buffered: u32,
    rows: u64,
    /// Bytes written to the file.
    bytes: u64,
    /// The values of every row pushed, when they all had as many (a sort's runs, a
    /// grouping's partitions): rows read back are held to it.
    width: Option<usize>,
    uniform: bool,
}

impl Spool {
    pub fn new(space: &TempSpace) -> Spool {
        Spool {
            space: space.clone(),
            file: None,
            blocks: Vec::new(),
            buf: Vec::new(),
            buffered: 0,
            rows: 0,
            bytes: 0,
            width: None,
            uniform: true,
        }
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes written to the file so far (the block being filled not yet).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Adds a row (written once its block is full).
    pub fn push(&mut self, row: &[Value]) -> SqlResult<()> {
        self.push_parts(row, &[])
    }

    /// Adds the row `head` followed by `tail` (a sort's output values and its keys),
    /// without joining them first.
    pub fn push_parts(&mut self, head: &[Value], tail: &[Value]) -> SqlResult<()> {
        let w = head.len() + tail.len();
        if *self.width.get_or_insert(w) != w {
            self.uniform = false;
        }
        if self.buf.is_empty() {
            self.buf.extend_from_slice(&[0; BLOCK_HEADER]);
        }
        encode_row(head, tail, &mut self.buf)?;
        self.buffered += 1;
        self.rows += 1;
        if self.buf.len() >= BLOCK_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the block being filled.
    pub fn flush(&mut self) -> SqlResult<()> {
        if self.buffered == 0 {
            return Ok(());
        }
        let payload = (self.buf.len() - BLOCK_HEADER) as u32;
        let crc = crc32c::crc32c(&self.buf[BLOCK_HEADER..]);
        self.buf[0..4].copy_from_slice(&payload.to_le_bytes());
        self.buf[4..8].copy_from_slice(&crc.to_le_bytes());
        self.buf[8..12].copy_from_slice(&self.buffered.to_le_bytes());
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(self.space.create()?),
        };
        let at = file.append(&self.buf)?;
        self.bytes += self.buf.len() as u64;
        self.blocks.push((at, self.buf.len() as u32));
        self.buf.clear();
        self.buffered = 0;
        Ok(())
    }

    /// Everything written; the spool's rows are read from the start.
    pub fn into_reader(mut self) -> SqlResult<SpoolReader> {
        self.flush()?;
        Ok(SpoolReader {
            file: self.file,
            blocks: self.blocks.into(),
            rows: VecDeque::new(),
            width: self.width.filter(|_| self.uniform),
        })
    }
}

/// Reads a spool's rows back, a block at a time.
pub(crate) struct SpoolReader {
    file: Option<TempFile>,
    blocks: VecDeque<(u64, u32)>,
    rows: VecDeque<Vec<Value>>,
    /// The values each row holds, when the spool knows.
    width: Option<usize>,
}

impl SpoolReader {
    pub fn next_row(&mut self) -> SqlResult<Option<Vec<Value>>> {
        loop {
            if let Some(r) = self.rows.pop_front() {
                return Ok(Some(r));
            }
            let Some((at, len)) = self.blocks.pop_front() else {
                // Read to the end: the file goes now rather than with the reader.
                self.file = None;
                return Ok(None);
            };
            let Some(file) = &self.file else {
                return Err(damaged("a block of a spool without a file"));
            };
            let mut bytes = vec![0u8; len as usize];
            file.read_at(at, &mut bytes)?;
            let width = self.width;
            self.rows = decode_block(&bytes)
                .and_then(
                    |rows| match rows.iter().find(|r| width.is_some_and(|w| r.len() != w)) {
                        Some(r) => Err(format!(
                            "a row of {} values in a spool of rows of {}",
                            r.len(),
                            width.unwrap_or(0)
                        )),
                        None => Ok(rows),
                    },
                )
                .map_err(|e| {
                    damaged(&format!(
                        "temporary file {} at {at}: {e}",
                        file.path().display()
                    ))
                })?;
        }
    }
}

fn damaged(why: &str) -> SqlError {
    SqlError::new(
        code::DATA_CORRUPTED,
        format!("could not read back a temporary file: {why}"),
    )
}

/// One block's rows, checked.
fn decode_block(bytes: &[u8]) -> Result<VecDeque<Vec<Value>>, String> {
    let mut r = Reader::new(bytes, 0);
    let payload = r.u32()? as usize;
    let crc = r.u32()?;
    let count = r.u32()?;
    if payload != r.remaining() {
        return Err(format!(
            "block says {payload} bytes of rows, has {}",
            r.remaining()
        ));
    }
    if crc32c::crc32c(&bytes[BLOCK_HEADER..]) != crc {
        return Err("checksum mismatch".into());
    }
    let mut rows = VecDeque::new();
    for _ in 0..count {
        rows.push_back(decode_row(&mut r)?);
    }
    if r.remaining() != 0 {
        return Err(format!("{} bytes after its {count} rows", r.remaining()));
    }
    Ok(rows)
}

const NULL: u8 = 0;
const INT2: u8 = 1;
const INT4: u8 = 2;
const INT8: u8 = 3;
const FLOAT8: u8 = 4;
const BOOL: u8 = 5;
const TEXT: u8 = 6;
const UUID: u8 = 7;
const DATE: u8 = 8;
const TIMESTAMP: u8 = 9;
const TIMESTAMPTZ: u8 = 10;
const INTERVAL: u8 = 11;
const BYTEA: u8 = 12;
const NUMERIC: u8 = 13;
const JSONB: u8 = 14;

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) -> SqlResult<()> {
    let len = u32::try_from(b.len()).map_err(|_| {
        SqlError::new(
            code::PROGRAM_LIMIT,
            "a value of 4 GB or more cannot be sorted or grouped",
        )
    })?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

/// Encodes the row `head` followed by `tail`.
pub(crate) fn encode_row(head: &[Value], tail: &[Value], out: &mut Vec<u8>) -> SqlResult<()> {
    let n = u16::try_from(head.len() + tail.len())
        .map_err(|_| SqlError::new(code::PROGRAM_LIMIT, "too many columns to spill a row"))?;
    out.extend_from_slice(&n.to_le_bytes());
    for v in head.iter().chain(tail) {
        match v {
            Value::Null => out.push(NULL),
            Value::Int2(x) => {
                out.push(INT2);
                out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Int4(x) => {
                out.push(INT4);
                out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Int8(x) => {
                out.push(INT8);
                out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Float8(x) => {
                out.push(FLOAT8);
                out.extend_from_slice(&x.to_bits().to_le_bytes());
            }
            Value::Bool(x) => out.extend_from_slice(&[BOOL, u8::from(*x)]),
            Value::Text(s) => {
                out.push(TEXT);
                put_bytes(out, s.as_bytes())?;
            }
            Value::Uuid(u) => {
                out.push(UUID);
                out.extend_from_slice(u);
            }
            Value::Date(d) => {
                out.push(DATE);
                out.extend_from_slice(&d.to_le_bytes());
            }
            Value::Timestamp(t) => {
                out.push(TIMESTAMP);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::Timestamptz(t) => {
                out.push(TIMESTAMPTZ);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::Interval(i) => {
                out.push(INTERVAL);
                out.extend_from_slice(&i.months.to_le_bytes());
                out.extend_from_slice(&i.days.to_le_bytes());
                out.extend_from_slice(&i.micros.to_le_bytes());
            }
            Value::Bytea(b) => {
                out.push(BYTEA);
                put_bytes(out, b)?;
            }
            Value::Numeric(n) => {
                out.push(NUMERIC);
                let mut b = Vec::with_capacity(n.encoded_len());
                n.encode(&mut b);
                put_bytes(out, &b)?;
            }
            Value::Jsonb(j) => {
                out.push(JSONB);
                put_bytes(out, &j.to_bytes())?;
            }
        }
    }
    Ok(())
}

fn decode_row(r: &mut Reader) -> Result<Vec<Value>, String> {
    let n = r.u16()?;
    let mut row = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let tag = r.u8()?;
        let v = match tag {
            NULL => Value::Null,
            INT2 => Value::Int2(i16::from_le_bytes(r.array()?)),
            INT4 => Value::Int4(r.u32()? as i32),
            INT8 => Value::Int8(r.u64()? as i64),
            FLOAT8 => Value::Float8(f64::from_bits(r.u64()?)),
            BOOL => match r.u8()? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(format!("boolean byte {b}")),
            },
            TEXT => {
                let len = r.u32()? as usize;
                let b = r.take(len)?;
                Value::Text(
                    String::from_utf8(b.to_vec()).map_err(|_| "text is not UTF-8".to_string())?,
                )
            }
            UUID => Value::Uuid(r.array()?),
            DATE => Value::Date(r.u32()? as i32),
            TIMESTAMP => Value::Timestamp(r.u64()? as i64),
            TIMESTAMPTZ => Value::Timestamptz(r.u64()? as i64),
            INTERVAL => Value::Interval(Interval {
                months: r.u32()? as i32,
                days: r.u32()? as i32,
                micros: r.u64()? as i64,
            }),
            BYTEA => {
                let len = r.u32()? as usize;
                Value::Bytea(r.take(len)?.to_vec())
            }
            NUMERIC => {
                let len = r.u32()? as usize;
                Value::Numeric(Numeric::decode(r.take(len)?)?)
            }
            JSONB => {
                let len = r.u32()? as usize;
                Value::Jsonb(Arc::new(Json::decode(r.take(len)?)?))
            }
            t => return Err(format!("value tag {t}")),
        };
        row.push(v);
    }
    Ok(row)
}

/// Where a merge takes rows from: a run on disk, or the rows still in memory.
enum Source {
    Disk(SpoolReader),
    Memory(std::vec::IntoIter<Vec<Value>>),
}

impl Source {
    fn next_row(&mut self) -> SqlResult<Option<Vec<Value>>> {
        match self {
            Source::Disk(r) => r.next_row(),
            Source::Memory(rows) => Ok(rows.next()),
        }
    }
}

/// A row waiting in the merge's heap: the least first, and of equal rows the one from
/// the earlier source (runs are in arrival order), so the merge is stable.
struct Head<'c> {
    row: Vec<Value>,
    source: usize,
    cmp: &'c dyn Fn(&[Value], &[Value]) -> Ordering,
}

impl Ord for Head<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reversed.
        (self.cmp)(&other.row, &self.row).then(other.source.cmp(&self.source))
    }
}
impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head<'_> {}

/// Rows in sorted runs, merged.
pub(crate) struct Merge<'c> {
    sources: Vec<Source>,
    heap: BinaryHeap<Head<'c>>,
    cmp: &'c dyn Fn(&[Value], &[Value]) -> Ordering,
}

impl<'c> Merge<'c> {
    fn new(
        sources: Vec<Source>,
        cmp: &'c dyn Fn(&[Value], &[Value]) -> Ordering,
    ) -> SqlResult<Merge<'c>> {
        let mut m = Merge {
            sources,
            heap: BinaryHeap::new(),
            cmp,
        };
        for i in 0..m.sources.len() {
            m.refill(i)?;
        }
        Ok(m)
    }

    fn refill(&mut self, source: usize) -> SqlResult<()> {
        if let Some(row) = self.sources[source].next_row()? {
            self.heap.push(Head {
                row,
                source,
                cmp: self.cmp,
            });
        }
        Ok(())
    }

    pub fn next_row(&mut self) -> SqlResult<Option<Vec<Value>>> {
        let Some(head) = self.heap.pop() else {
            return Ok(None);
        };
        self.refill(head.source)?;
        Ok(Some(head.row))
    }
}

/// An external merge sort's runs: sorted rows written once they passed `work_mem`.
pub(crate) struct Runs {
    space: TempSpace,
    runs: Vec<SpoolReader>,
    /// Bytes written to runs (EXPLAIN ANALYZE's "Disk"), merges included.
    pub bytes_written: u64,
}

impl Runs {
    pub fn new(space: &TempSpace) -> Runs {
        Runs {
            space: space.clone(),
            runs: Vec::new(),
            bytes_written: 0,
        }
    }

    /// Writes sorted `rows` as a run.
    #[cfg(test)]
    pub fn write(&mut self, rows: impl IntoIterator<Item = Vec<Value>>) -> SqlResult<()> {
        self.write_parts(rows.into_iter().map(|r| (r, Vec::new())))
    }

    /// Writes sorted rows, each its first part followed by its second, as a run.
    pub fn write_parts(
        &mut self,
        rows: impl IntoIterator<Item = (Vec<Value>, Vec<Value>)>,
    ) -> SqlResult<()> {
        let mut spool = Spool::new(&self.space);
        for (head, tail) in rows {
            spool.push_parts(&head, &tail)?;
        }
        spool.flush()?;
        self.bytes_written += spool.bytes();
        self.runs.push(spool.into_reader()?);
        Ok(())
    }

    /// The runs and `memory` (sorted; the last rows to arrive) merged by `cmp`. Past
    /// [`MERGE_FAN_IN`] runs, the oldest are merged into one run first, as often as
    /// needed; `check` is called per row so that a long merge can be canceled. Gives
    /// the merge and the bytes written to runs in all.
    pub fn merge<'c>(
        mut self,
        memory: Vec<Vec<Value>>,
        cmp: &'c dyn Fn(&[Value], &[Value]) -> Ordering,
        check: &dyn Fn() -> SqlResult<()>,
    ) -> SqlResult<(Merge<'c>, u64)> {
        self.compact_to(MERGE_FAN_IN - 1, cmp, check)?;
        let mut sources: Vec<Source> = self.runs.into_iter().map(Source::Disk).collect();
        sources.push(Source::Memory(memory.into_iter()));
        Ok((Merge::new(sources, cmp)?, self.bytes_written))
    }

    /// Once the runs reach [`MERGE_FAN_IN`], merges the oldest of them into one, so that
    /// a sort keeps at most that many files open.
    pub fn compact(
        &mut self,
        cmp: &dyn Fn(&[Value], &[Value]) -> Ordering,
        check: &dyn Fn() -> SqlResult<()>,
    ) -> SqlResult<()> {
        self.compact_to(MERGE_FAN_IN - 1, cmp, check)
    }

    /// Merges the oldest runs into one until at most `most` are left.
    fn compact_to(
        &mut self,
        most: usize,
        cmp: &dyn Fn(&[Value], &[Value]) -> Ordering,
        check: &dyn Fn() -> SqlResult<()>,
    ) -> SqlResult<()> {
        while self.runs.len() > most {
            let oldest: Vec<Source> = self
                .runs
                .drain(..MERGE_FAN_IN.min(self.runs.len()))
                .map(Source::Disk)
                .collect();
            let mut m = Merge::new(oldest, cmp)?;
            let mut spool = Spool::new(&self.space);
            while let Some(row) = m.next_row()? {
                check()?;
                spool.push(&row)?;
            }
            spool.flush()?;
            self.bytes_written += spool.bytes();
            self.runs.insert(0, spool.into_reader()?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> (tempdir::TempDirGuard, walden::Database) {
        let dir = tempdir::TempDirGuard::new();
        let db = walden::Database::create(dir.path(), walden::Options::default()).unwrap();
        (dir, db)
    }

    mod tempdir {
        pub struct TempDirGuard(std::path::PathBuf);
        impl TempDirGuard {
            pub fn new() -> TempDirGuard {
                use std::sync::atomic::{AtomicU64, Ordering};
                static N: AtomicU64 = AtomicU64::new(0);
                let p = std::env::temp_dir().join(format!(
                    "walden-spill-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                let _ = std::fs::remove_dir_all(&p);
                TempDirGuard(p)
            }
            pub fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        impl Drop for TempDirGuard {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    fn every_kind() -> Vec<Value> {
        vec![
            Value::Null,
            Value::Int2(-7),
            Value::Int4(i32::MIN),
            Value::Int8(i64::MAX),
            Value::Float8(-0.5),
            Value::Float8(f64::NAN),
            Value::Bool(true),
            Value::Text("héllo".into()),
            Value::Uuid([9; 16]),
            Value::Date(-3),
            Value::Timestamp(i64::MIN),
            Value::Timestamptz(12345),
            Value::Interval(Interval {
                months: 1,
                days: -2,
                micros: 3,
            }),
            Value::Bytea(vec![0, 255, 7]),
            Value::Numeric(Numeric::parse("-12345.6789").unwrap()),
            Value::Jsonb(Arc::new(Json::object(vec![(
                "a".into(),
                Json::Array(vec![
                    Json::Number("1".into()),
                    Json::String("x".into()),
                    Json::Null,
                ]),
            )]))),
        ]
    }

    #[test]
    fn every_kind_of_value_round_trips_through_a_file() {
        let (_dir, db) = space();
        let mut spool = Spool::new(&db.temp_space());
        let row = every_kind();
        for i in 0..5000 {
            let mut r = row.clone();
            r.push(Value::Int8(i));
            spool.push(&r).unwrap();
        }
        assert!(spool.blocks.len() > 1, "more than one block written");
        let mut reader = spool.into_reader().unwrap();
        for i in 0..5000 {
            let got = reader.next_row().unwrap().unwrap();
            assert_eq!(got.len(), row.len() + 1);
            for (a, b) in got.iter().zip(&row) {
                match (a, b) {
                    (Value::Float8(x), Value::Float8(y)) => assert_eq!(x.to_bits(), y.to_bits()),
                    _ => assert_eq!(a, b),
                }
            }
            assert_eq!(got[row.len()], Value::Int8(i));
        }
        assert!(reader.next_row().unwrap().is_none());
        assert!(
            std::fs::read_dir(db.temp_space().dir())
                .unwrap()
                .next()
                .is_none(),
            "the file is gone once read"
        );
    }

    /// A block that passes its checksum but holds rows of another width than the
    /// spool wrote (bytes from disk are not trusted) is an error, not a short row.
    #[test]
    fn a_row_of_another_width_is_an_error() {
        use std::os::unix::fs::FileExt;
        let (_dir, db) = space();
        let mut spool = Spool::new(&db.temp_space());
        spool
            .push(&[Value::Int8(1), Value::Null, Value::Null])
            .unwrap();
        spool.flush().unwrap();
        let (at, len) = spool.blocks[0];
        let mut forged = vec![0u8; BLOCK_HEADER];
        encode_row(&[Value::Int8(1), Value::Bool(true)], &[], &mut forged).unwrap();
        assert_eq!(
            forged.len(),
            len as usize,
            "the same length as the block written"
        );
        let crc = crc32c::crc32c(&forged[BLOCK_HEADER..]);
        let payload = (forged.len() - BLOCK_HEADER) as u32;
        forged[0..4].copy_from_slice(&payload.to_le_bytes());
        forged[4..8].copy_from_slice(&crc.to_le_bytes());
        forged[8..12].copy_from_slice(&1u32.to_le_bytes());
        let path = spool.file.as_ref().unwrap().path();
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.write_all_at(&forged, at).unwrap();
        let mut reader = spool.into_reader().unwrap();
        let e = reader.next_row().unwrap_err();
        assert_eq!(e.code, "XX001");
        assert!(
            e.message
                .ends_with("a row of 2 values in a spool of rows of 3"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_damaged_block_is_an_error_not_a_row() {
        let row = every_kind();
        let mut block = vec![0u8; BLOCK_HEADER];
        encode_row(&row[..3], &row[3..], &mut block).unwrap();
        let payload = (block.len() - BLOCK_HEADER) as u32;
        let crc = crc32c::crc32c(&block[BLOCK_HEADER..]);
        block[0..4].copy_from_slice(&payload.to_le_bytes());
        block[4..8].copy_from_slice(&crc.to_le_bytes());
        block[8..12].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(decode_block(&block).unwrap().len(), 1);
        for i in 0..block.len() {
            let mut bad = block.clone();
            bad[i] ^= 0x10;
            assert!(decode_block(&bad).is_err(), "byte {i} flipped");
        }
        for cut in 0..block.len() {
            assert!(decode_block(&block[..cut]).is_err(), "cut at {cut}");
        }
        // Bytes that pass the checksum but hold no rows are still checked.
        let mut forged = vec![0u8; BLOCK_HEADER];
        forged.extend_from_slice(&[1, 0, 99]);
        let crc = crc32c::crc32c(&forged[BLOCK_HEADER..]);
        forged[0..4].copy_from_slice(&3u32.to_le_bytes());
        forged[4..8].copy_from_slice(&crc.to_le_bytes());
        forged[8..12].copy_from_slice(&1u32.to_le_bytes());
        let e = decode_block(&forged).unwrap_err();
        assert_eq!(e, "value tag 99");
    }

    fn int(v: &Value) -> i64 {
        match v {
            Value::Int8(x) => *x,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_merge_of_many_runs_is_sorted_and_stable() {
        let (_dir, db) = space();
        let mut runs = Runs::new(&db.temp_space());
        // 150 runs (more than the fan-in) of rows (key, arrival), keys 0..10.
        let mut arrival = 0i64;
        let mut rng = walden::rng::SimRng::new(5);
        for _ in 0..150 {
            let mut rows: Vec<Vec<Value>> = (0..40)
                .map(|_| {
                    arrival += 1;
                    vec![
                        Value::Int8((rng.next_u64() % 10) as i64),
                        Value::Int8(arrival),
                    ]
                })
                .collect();
            rows.sort_by_key(|r| int(&r[0]));
            runs.write(rows).unwrap();
        }
        let mut memory: Vec<Vec<Value>> = (0..7)
            .map(|i| {
                arrival += 1;
                vec![Value::Int8(i % 10), Value::Int8(arrival)]
            })
            .collect();
        memory.sort_by_key(|r| int(&r[0]));
        let cmp = |a: &[Value], b: &[Value]| int(&a[0]).cmp(&int(&b[0]));
        let (mut m, bytes) = runs.merge(memory, &cmp, &|| Ok(())).unwrap();
        assert_eq!(m.sources.len(), 150 - MERGE_FAN_IN + 2);
        assert!(bytes > 0);
        let mut out = Vec::new();
        while let Some(r) = m.next_row().unwrap() {
            out.push(r);
        }
        assert_eq!(out.len(), 150 * 40 + 7);
        for w in out.windows(2) {
            let (a, b) = (
                (int(&w[0][0]), int(&w[0][1])),
                (int(&w[1][0]), int(&w[1][1])),
            );
            assert!(a < b, "{w:?}");
        }
    }
}
