//! `walden bench space`: the seed workload (insert, update all, sparse update, delete all,
//! vacuum; a checkpoint before each statement) through the Rust API, reporting the data
//! file size and WAL of each step per protection mode. It checks that copy-on-write
//! placement does not make the data file balloon next to the fixed-place modes.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use walden::{Database, Options, Row, RowId, Value};

use crate::bench::{schema, TempDir};
use crate::{CliError, Mode};

const TABLE: &str = "demo";

#[derive(clap::Args)]
pub struct SpaceArgs {
    /// Rows of the seed table.
    #[arg(long, default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    rows: u64,
    /// Protection modes to compare.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Mode::Cow, Mode::FullPage])]
    modes: Vec<Mode>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// Buffer pool size in MiB (default: the engine's default, 256).
    #[arg(long)]
    buffer_pool_mib: Option<u64>,
}

/// One statement's cost.
struct Step {
    statement: &'static str,
    rows: u64,
    wal_bytes: u64,
    page_images: u64,
    data_bytes_written: u64,
    data_file_bytes: u64,
    seconds: f64,
}

pub fn space(args: &SpaceArgs) -> Result<ExitCode, CliError> {
    let mut results = Vec::new();
    for &mode in &args.modes {
        let dir = TempDir::create()?;
        results.push((mode, run(&dir, mode, args)?));
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let items: Vec<_> = results
            .iter()
            .flat_map(|(mode, steps)| {
                steps.iter().map(move |s| {
                    serde_json::json!({
                        "mode": mode.protection().name(),
                        "statement": s.statement,
                        "rows": s.rows,
                        "wal_bytes": s.wal_bytes,
                        "page_images": s.page_images,
                        "data_bytes_written": s.data_bytes_written,
                        "data_file_bytes": s.data_file_bytes,
                        "seconds": s.seconds,
                    })
                })
            })
            .collect();
        outln!(out, "{}", serde_json::Value::Array(items))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        out,
        "bench space: {} rows; checkpoint before each statement",
        args.rows
    )?;
    outln!(
        out,
        "{:<10} {:<14} {:>10} {:>12} {:>8} {:>14} {:>14} {:>8}",
        "mode",
        "statement",
        "rows",
        "WAL MiB",
        "images",
        "written MiB",
        "file MiB",
        "s"
    )?;
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    for (mode, steps) in &results {
        for s in steps {
            outln!(
                out,
                "{:<10} {:<14} {:>10} {:>12.1} {:>8} {:>14.1} {:>14.1} {:>8.2}",
                mode.protection().name(),
                s.statement,
                s.rows,
                mib(s.wal_bytes),
                s.page_images,
                mib(s.data_bytes_written),
                mib(s.data_file_bytes),
                s.seconds
            )?;
        }
    }
    let last = |m: Mode| {
        results
            .iter()
            .find(|(mode, _)| *mode == m)
            .and_then(|(_, s)| s.last())
            .map(|s| s.data_file_bytes)
    };
    if let (Some(cow), Some(fpw)) = (last(Mode::Cow), last(Mode::FullPage)) {
        outln!(
            out,
            "data file after the workload: cow {:.1} MiB, full-page {:.1} MiB, ratio {:.3}",
            mib(cow),
            mib(fpw),
            cow as f64 / fpw.max(1) as f64
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run(dir: &TempDir, mode: Mode, args: &SpaceArgs) -> Result<Vec<Step>, CliError> {
    let rows = args.rows;
    let defaults = Options::default();
    let opts = Options {
        protection: mode.protection(),
        buffer_pool_bytes: args
            .buffer_pool_mib
            .map_or(defaults.buffer_pool_bytes, |m| m << 20),
        ..defaults
    };
    let db = Database::create(&dir.path, opts)?;
    db.create_table(TABLE, schema())?;
    let mut steps = Vec::new();
    let text = Value::Text("x".repeat(100));
    steps.push(measure(&db, "insert", || {
        let mut tx = db.begin();
        let mut n = 0u64;
        let count = tx.insert_with(TABLE, |row| {
            if n == rows {
                return Ok(false);
            }
            n += 1;
            let v = Value::Int4(i32::try_from(n).unwrap_or(i32::MAX));
            for c in row.iter_mut().take(6) {
                *c = v.clone();
            }
            row[6] = text.clone();
            Ok::<_, walden::Error>(true)
        })?;
        tx.commit()?;
        Ok(count)
    })?);
    steps.push(measure(&db, "update_all", || update_b(&db, |_| true))?);
    steps.push(measure(&db, "update_sparse", || {
        update_b(&db, |row| matches!(row[0], Value::Int4(a) if a % 10 == 1))
    })?);
    steps.push(measure(&db, "delete", || {
        let mut tx = db.begin();
        let mut ids = Vec::new();
        tx.read(
            walden::Rows::Table(TABLE),
            walden::RowShape::default(),
            |id, _| {
                ids.push(id);
                Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
            },
        )?;
        for &id in &ids {
            tx.delete(TABLE, id)?;
        }
        tx.commit()?;
        Ok(ids.len() as u64)
    })?);
    steps.push(measure(&db, "vacuum", || Ok(db.vacuum(TABLE)?))?);
    db.close()?;
    Ok(steps)
}

/// `update demo set b = b + 1 where <pred>` in one transaction.
fn update_b(db: &Database, pred: impl Fn(&Row) -> bool) -> Result<u64, CliError> {
    let mut tx = db.begin();
    let mut todo: Vec<(RowId, Row)> = Vec::new();
    tx.read(
        walden::Rows::Table(TABLE),
        walden::RowShape::default(),
        |id, row| {
            if pred(&row) {
                todo.push((id, row));
            }
            Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
        },
    )?;
    for (id, row) in &mut todo {
        if let Value::Int4(b) = row[1] {
            row[1] = Value::Int4(b.wrapping_add(1));
        }
        tx.update(TABLE, *id, row)?;
    }
    let n = todo.len() as u64;
    tx.commit()?;
    Ok(n)
}

fn measure(
    db: &Database,
    statement: &'static str,
    f: impl FnOnce() -> Result<u64, CliError>,
) -> Result<Step, CliError> {
    db.checkpoint()?;
    let before = db.stats();
    let start = Instant::now();
    let rows = f()?;
    let seconds = start.elapsed().as_secs_f64();
    let delta = db.stats().since(&before);
    // The statement's pages reach the data file at the checkpoint that follows it.
    db.checkpoint()?;
    let written = db.stats().since(&before).data_bytes_written;
    Ok(Step {
        statement,
        rows,
        wal_bytes: delta.wal_bytes_written,
        page_images: delta.page_images,
        data_bytes_written: written,
        data_file_bytes: db.data_file_bytes()?,
        seconds,
    })
}
