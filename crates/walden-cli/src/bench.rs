//! `walden bench insert`: N rows in one transaction into a fresh database, timed, with what
//! the insert cost in WAL bytes, data file bytes, page images and fsyncs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use walden::{Column, ColumnType, Database, Options, Schema, StatsSnapshot, Value, WalCompression};

use crate::{CliError, Mode};

const TABLE: &str = "demo";
/// Six int4 columns and the 100 bytes of `g`: the row as the user sees it.
const RAW_ROW_BYTES: u64 = 6 * 4 + TEXT_BYTES as u64;
const TEXT_BYTES: usize = 100;
const MIB: f64 = (1u64 << 20) as f64;

#[derive(clap::Args)]
pub struct InsertArgs {
    /// Rows to insert (their number is stored in int4 columns, so at most 2^31 - 1).
    #[arg(long, default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    rows: u64,
    /// Torn-page protection of the new database.
    #[arg(long, value_enum, default_value_t = Mode::Cow)]
    mode: Mode,
    /// Codec of the WAL frames: off, lz4 or zstd (the default).
    #[arg(long, default_value = "zstd", value_parser = parse_codec)]
    wal_compression: WalCompression,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Create the database in DIR and keep it (for `walden waldump DIR`), instead of a
    /// temporary directory that is removed. DIR must not hold a database yet.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub(crate) fn parse_codec(s: &str) -> Result<WalCompression, String> {
    WalCompression::parse(s).ok_or_else(|| format!("unknown codec {s:?}; known: off, lz4, zstd"))
}

/// A directory that is removed when dropped, also when the benchmark fails.
pub(crate) struct TempDir {
    pub(crate) path: PathBuf,
}

impl TempDir {
    pub(crate) fn create() -> Result<TempDir, CliError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let name = format!("walden-bench-{}-{nanos}", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir(&path)
            .map_err(|e| CliError::io(format!("creating {}", path.display()), e))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// What one run measured.
struct Measurement {
    rows: u64,
    seconds: f64,
    /// Bytes that reached WAL files between the start of the transaction and its commit.
    wal_bytes: u64,
    data_file_bytes: u64,
    /// Counters accumulated by the insert and commit.
    delta: StatsSnapshot,
}

impl Measurement {
    fn raw_row_bytes(&self) -> u64 {
        RAW_ROW_BYTES * self.rows
    }

    fn rows_per_sec(&self) -> f64 {
        self.rows as f64 / self.seconds.max(1e-9)
    }
}

pub fn insert(args: &InsertArgs) -> Result<ExitCode, CliError> {
    let m = match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::io(format!("creating {}", dir.display()), e))?;
            measure(dir, args.mode, args.wal_compression, args.rows)?
        }
        None => {
            let dir = TempDir::create()?;
            // The database is closed inside `measure`, before `dir` removes its files.
            measure(&dir.path, args.mode, args.wal_compression, args.rows)?
        }
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        print_json(&mut out, args.mode, args.wal_compression, &m)?;
    } else {
        print_table(&mut out, args.mode, args.wal_compression, &m)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn schema() -> Schema {
    let mut columns: Vec<Column> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .map(|name| Column::new(name, ColumnType::Int4))
        .collect();
    columns.push(Column::new("g", ColumnType::Text));
    Schema::new(columns)
}

fn measure(
    dir: &Path,
    mode: Mode,
    codec: WalCompression,
    rows: u64,
) -> Result<Measurement, CliError> {
    let opts = Options {
        protection: mode.protection(),
        wal_compression: codec,
        ..Options::default()
    };
    let db = Database::create(dir, opts)?;
    db.create_table(TABLE, schema())?;
    let text = "x".repeat(TEXT_BYTES);
    let before = db.stats();
    let start = Instant::now();
    let mut tx = db.begin();
    let mut n = 0u64;
    let inserted = tx.insert_with(TABLE, |row| {
        if n == rows {
            return Ok(false);
        }
        n += 1;
        // `rows` is at most i32::MAX (checked by the argument parser).
        let v = Value::Int4(i32::try_from(n).unwrap_or(i32::MAX));
        for column in row.iter_mut().take(6) {
            *column = v.clone();
        }
        if let Some(g @ Value::Null) = row.get_mut(6) {
            *g = Value::Text(text.clone());
        }
        Ok::<_, walden::Error>(true)
    })?;
    tx.commit()?;
    let seconds = start.elapsed().as_secs_f64();
    let delta = db.stats().since(&before);
    db.checkpoint()?;
    let data_file_bytes = db.data_file_bytes()?;
    db.close()?;
    Ok(Measurement {
        rows: inserted,
        seconds,
        wal_bytes: delta.wal_bytes_written,
        data_file_bytes,
        delta,
    })
}

fn print_json(
    out: &mut impl Write,
    mode: Mode,
    codec: WalCompression,
    m: &Measurement,
) -> Result<(), CliError> {
    let value = serde_json::json!({
        "mode": mode.protection().name(),
        "wal_compression": codec.name(),
        "rows": m.rows,
        "seconds": m.seconds,
        "rows_per_sec": m.rows_per_sec().round(),
        "wal_bytes": m.wal_bytes,
        "raw_row_bytes": m.raw_row_bytes(),
        "data_file_bytes": m.data_file_bytes,
        "wal_record_bytes": m.delta.wal_record_bytes,
        "wal_records": m.delta.wal_records,
        "page_images": m.delta.page_images,
        "wal_fsyncs": m.delta.wal_fsyncs,
        "fsyncs": m.delta.fsyncs(),
    });
    outln!(out, "{value}")
}

fn print_table(
    out: &mut impl Write,
    mode: Mode,
    codec: WalCompression,
    m: &Measurement,
) -> Result<(), CliError> {
    let raw = m.raw_row_bytes() as f64;
    let mib = |bytes: u64| bytes as f64 / MIB;
    outln!(
        out,
        "bench insert: {} rows, mode {}, WAL compression {}, one transaction",
        m.rows,
        mode.protection().name(),
        codec.name()
    )?;
    outln!(out, "  rows/s           {:.0}", m.rows_per_sec())?;
    outln!(out, "  elapsed          {:.3} s", m.seconds)?;
    outln!(
        out,
        "  WAL bytes        {} ({:.1} MiB, {:.3} x raw)",
        m.wal_bytes,
        mib(m.wal_bytes),
        m.wal_bytes as f64 / raw
    )?;
    outln!(
        out,
        "  WAL records      {} bytes ({:.1} MiB) before compression",
        m.delta.wal_record_bytes,
        mib(m.delta.wal_record_bytes)
    )?;
    outln!(
        out,
        "  raw row bytes    {} ({:.1} MiB, {RAW_ROW_BYTES} per row)",
        m.raw_row_bytes(),
        mib(m.raw_row_bytes())
    )?;
    outln!(
        out,
        "  data file bytes  {} ({:.1} MiB, {:.3} x raw)",
        m.data_file_bytes,
        mib(m.data_file_bytes),
        m.data_file_bytes as f64 / raw
    )?;
    outln!(out, "  page images      {}", m.delta.page_images)?;
    outln!(
        out,
        "  fsyncs           {} ({} of the WAL)",
        m.delta.fsyncs(),
        m.delta.wal_fsyncs
    )
}
