//! `walden waldump`: prints every WAL record still on disk, one line each, or totals per
//! record kind (`--stats`, like pg_waldump).
//!
//! The lowest-numbered segment may be a recycled spare holding an older stretch of log that
//! ends early (the segment after it was renamed for reuse). When the log read so far ends
//! before the last segment, reading resumes at the next segment that starts a valid log, so
//! the live log is always shown.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use walden::control::Control;
use walden::vfs::{LockMode, RealVfs, Vfs};
use walden::wal::format::SegmentIdentity;
use walden::wal::record::ChangeOp;
use walden::wal::{FrameStats, LogRecord, Record, RecordKind, WalPosition, WalReader};

use crate::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// The database directory.
    dir: PathBuf,
    /// Print totals per record kind instead of the records.
    #[arg(long)]
    stats: bool,
}

/// Totals of one record kind, indexed like `RecordKind::ALL`.
#[derive(Debug, Clone, Copy, Default)]
struct KindTotal {
    records: u64,
    bytes: u64,
}

/// Where one stretch of valid log began and ended.
struct Stretch {
    first_lsn: u64,
    end: WalPosition,
}

pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let vfs: Arc<dyn Vfs> = Arc::new(RealVfs);
    // A shared lock when the database is not open elsewhere; waldump only reads, so it
    // also reads a database in use (saying so) or on a read-only file system.
    let _lock = match walden::directory::lock_database_dir(&vfs, &args.dir, LockMode::Shared) {
        Ok(lock) => Some(lock),
        Err(walden::Error::Locked { holder, .. }) => {
            eprintln!(
                "waldump: the database is in use by {holder}; showing the WAL as it is on disk now (its last records may still be changing)"
            );
            None
        }
        // No lock file (a database never opened by this build, or a read-only copy):
        // nothing can hold it either.
        Err(_) => None,
    };
    let control = Control::read(&vfs, &args.dir)?;
    let wal_dir = args.dir.join("wal");
    let segments = WalReader::segments(&vfs, &wal_dir)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut totals = [KindTotal::default(); RecordKind::ALL.len()];
    let stats = args.stats;
    let mut frames = FrameStats::default();
    let result = walk(
        &vfs,
        &wal_dir,
        control.segment_identity(),
        &segments,
        &mut frames,
        |event| {
            match event {
            Event::Record(rec) => {
                if let Some(i) = RecordKind::ALL.iter().position(|k| *k == rec.kind) {
                    totals[i].records += 1;
                    totals[i].bytes += u64::from(rec.len);
                }
                if !stats {
                    outln!(out, "{}", record_line(rec))?;
                }
            }
            Event::Resume { segment_no, lsn } if !stats => outln!(
                out,
                "-- log resumes in segment {segment_no} at lsn {lsn} (the log before it ended early)"
            )?,
            Event::Resume { .. } => {}
        }
            Ok(())
        },
    );
    // What was printed before an error is still worth seeing: flush it first.
    let flushed = out.flush();
    let last = result?;
    flushed.map_err(|e| CliError::io("writing to standard output", e))?;
    if stats {
        print_stats(&mut out, &totals)?;
        print_frames(&mut out, &frames)?;
    } else {
        print_end(&mut out, &segments, last.as_ref())?;
    }
    out.flush()
        .map_err(|e| CliError::io("writing to standard output", e))?;
    Ok(ExitCode::SUCCESS)
}

enum Event<'a> {
    Record(&'a LogRecord),
    /// A new stretch of log begins after an earlier one ended before the last segment.
    Resume {
        segment_no: u64,
        lsn: u64,
    },
}

/// Reads every stretch of valid log in `segments`, in order; returns the last stretch.
fn walk(
    vfs: &Arc<dyn Vfs>,
    wal_dir: &Path,
    id: SegmentIdentity,
    segments: &[u64],
    frames: &mut FrameStats,
    mut visit: impl FnMut(Event<'_>) -> Result<(), CliError>,
) -> Result<Option<Stretch>, CliError> {
    let mut last: Option<Stretch> = None;
    let mut index = 0;
    while let Some(&segment_no) = segments.get(index) {
        let mut reader = match WalReader::at_segment_start(vfs.clone(), wal_dir, id, segment_no) {
            Ok(r) => r,
            // A segment whose header does not validate: not part of the log.
            Err(walden::Error::MissingWalSegment { .. } | walden::Error::CorruptWal { .. }) => {
                index += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let mut first_lsn = None;
        while let Some(rec) = reader.next()? {
            if first_lsn.is_none() {
                first_lsn = Some(rec.lsn);
                if last.is_some() {
                    visit(Event::Resume {
                        segment_no,
                        lsn: rec.lsn,
                    })?;
                }
            }
            visit(Event::Record(&rec))?;
        }
        let end = reader.end_position();
        frames.add(&reader.frame_stats());
        if let Some(first_lsn) = first_lsn {
            last = Some(Stretch { first_lsn, end });
        }
        // Go on with the first segment after the one this stretch ended in.
        let ended_in = end.segment_no.max(segment_no);
        index = segments
            .iter()
            .position(|&s| s > ended_in)
            .unwrap_or(segments.len());
    }
    Ok(last)
}

/// One record as a short line: position, size, transaction, kind and what it changed.
fn record_line(rec: &LogRecord) -> String {
    let details = details(&rec.record);
    let head = format!(
        "lsn {} len {} xid {} {}",
        rec.lsn,
        rec.len,
        rec.xid,
        rec.kind.name()
    );
    if details.is_empty() {
        head
    } else {
        format!("{head} {details}")
    }
}

/// A slot list: the slot itself when there is one, else how many.
fn slot_list(slots: &[u16]) -> String {
    match slots {
        [s] => format!("slot {s}"),
        _ => format!("slots {}", slots.len()),
    }
}

/// What a record changed, in a few words.
fn details(record: &Record) -> String {
    match record {
        Record::HeapInit { page, table } => format!("page {page} table {table}"),
        Record::HeapInsert { page, cid, rows } => {
            let bytes: usize = rows.iter().map(|(_, r)| r.len()).sum();
            format!("page {page} cid {cid} rows {} ({bytes} bytes)", rows.len())
        }
        Record::HeapDelete { page, slots } => format!("page {page} {}", slot_list(slots)),
        Record::HeapUpdateOld { page, links } => match links.as_slice() {
            [l] => format!(
                "page {page} slot {} -> page {} slot {}",
                l.slot, l.new_page, l.new_slot
            ),
            _ => format!("page {page} rows {}", links.len()),
        },
        Record::HeapUpdateNew { page, cid, rows } => {
            let bytes: usize = rows.iter().map(|d| d.middle.len()).sum();
            format!(
                "page {page} cid {cid} rows {} as deltas ({bytes} bytes changed)",
                rows.len()
            )
        }
        Record::HeapPrune { page, slots } => format!("page {page} slots {}", slots.len()),
        Record::Commit | Record::Abort => String::new(),
        Record::CreateTable {
            table,
            name,
            schema,
            kind,
        } => format!(
            "table {table} name {name:?} columns {} kind {}",
            schema.columns.len(),
            walden::TableKind::from_code(*kind).map_or("?", |k| k.name())
        ),
        Record::DropTable { table } => format!("table {table}"),
        Record::PageImage {
            page,
            lower,
            upper,
            image,
        } => format!(
            "page {page} hole {lower}..{upper} image {} bytes",
            image.len()
        ),
        Record::Checkpoint { redo_lsn, next_xid } => {
            format!("redo_lsn {redo_lsn} next_xid {next_xid}")
        }
        Record::UndoInsert { page, cid, rows } => {
            let bytes: usize = rows.iter().map(|(_, r)| r.len()).sum();
            format!("page {page} cid {cid} rows {} ({bytes} bytes)", rows.len())
        }
        Record::UndoChange { page, cid, ops } => {
            let mut n = [0usize; 4];
            for op in ops {
                n[match op {
                    ChangeOp::Update { .. } => 0,
                    ChangeOp::Resize { .. } => 1,
                    ChangeOp::Move { .. } => 2,
                    ChangeOp::Delete { .. } => 3,
                }] += 1;
            }
            format!(
                "page {page} cid {cid} updated {} resized {} moved {} deleted {}",
                n[0], n[1], n[2], n[3]
            )
        }
        Record::UndoRevert {
            page,
            undone_lsn,
            ops,
        } => format!("page {page} undoes lsn {undone_lsn} rows {}", ops.len()),
        Record::UndoOnly(inner) => format!("{}: {}", inner.kind().name(), details(inner)),
    }
}

fn print_end(
    out: &mut impl Write,
    segments: &[u64],
    last: Option<&Stretch>,
) -> Result<(), CliError> {
    match last {
        Some(s) => outln!(
            out,
            "end of log at lsn {} (segment {} offset {}); {} bytes of records from lsn {}",
            s.end.lsn,
            s.end.segment_no,
            s.end.offset,
            s.end.lsn - s.first_lsn,
            s.first_lsn
        ),
        None => outln!(out, "no valid WAL records in {} segment(s)", segments.len()),
    }
}

/// The frames behind the records: the logical log (records) against the physical one
/// (what the frames take on disk, compressed or not, headers included).
fn print_frames(out: &mut impl Write, f: &FrameStats) -> Result<(), CliError> {
    let plain = f.frames - f.lz4_frames - f.zstd_frames;
    outln!(
        out,
        "frames {} (zstd {}, lz4 {}, uncompressed {}): logical {} bytes, physical {} bytes{}",
        f.frames,
        f.zstd_frames,
        f.lz4_frames,
        plain,
        f.raw_bytes,
        f.stored_bytes,
        if f.stored_bytes > 0 {
            format!(", {:.2}x", f.raw_bytes as f64 / f.stored_bytes as f64)
        } else {
            String::new()
        }
    )
}

fn print_stats(out: &mut impl Write, totals: &[KindTotal]) -> Result<(), CliError> {
    let all_records: u64 = totals.iter().map(|t| t.records).sum();
    let all_bytes: u64 = totals.iter().map(|t| t.bytes).sum();
    let percent = |bytes: u64| {
        if all_bytes == 0 {
            0.0
        } else {
            100.0 * bytes as f64 / all_bytes as f64
        }
    };
    outln!(
        out,
        "{:<16} {:>12} {:>16} {:>8}",
        "kind",
        "count",
        "bytes",
        "% bytes"
    )?;
    for (kind, t) in RecordKind::ALL.iter().zip(totals) {
        if t.records > 0 {
            outln!(
                out,
                "{:<16} {:>12} {:>16} {:>7.2}%",
                kind.name(),
                t.records,
                t.bytes,
                percent(t.bytes)
            )?;
        }
    }
    outln!(
        out,
        "{:<16} {:>12} {:>16} {:>7.2}%",
        "total",
        all_records,
        all_bytes,
        percent(all_bytes)
    )
}
