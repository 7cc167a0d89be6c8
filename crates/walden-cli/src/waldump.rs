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
use walden::owners::owners;
use walden::vfs::{LockMode, RealVfs, Vfs};
use walden::wal::format::SegmentIdentity;
use walden::wal::{FrameStats, LogRecord, WalPosition, WalReader};

use crate::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// The database directory.
    dir: PathBuf,
    /// Print totals per record kind instead of the records.
    #[arg(long)]
    stats: bool,
}

/// Totals of one record type, indexed by its code.
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
    let mut totals = [KindTotal::default(); 256];
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
                let t = &mut totals[rec.rtype.code as usize];
                t.records += 1;
                t.bytes += u64::from(rec.len);
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
        let mut reader =
            match WalReader::at_segment_start(owners(), vfs.clone(), wal_dir, id, segment_no) {
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

/// One record as a short line: position, size, transaction, type and, in the words of
/// the record's owner, what it changed.
fn record_line(rec: &LogRecord) -> String {
    let details = owners()
        .describe(rec)
        .unwrap_or_else(|e| format!("(invalid: {e})"));
    let head = format!(
        "lsn {} len {} xid {} {}",
        rec.lsn, rec.len, rec.xid, rec.rtype.name
    );
    if details.is_empty() {
        head
    } else {
        format!("{head} {details}")
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
    for rtype in owners().types() {
        let t = totals[rtype.code as usize];
        if t.records > 0 {
            outln!(
                out,
                "{:<16} {:>12} {:>16} {:>7.2}%",
                rtype.name,
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
