//! `walden check DIR`: opens a database (recovering it if it crashed) and verifies every
//! table and index (`Database::check`: pages, visible rows, each index's order, sibling
//! links, levels, and one entry per visible row), like PostgreSQL's amcheck. Prints what
//! it found; exits 1 if anything is inconsistent.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use walden::{Database, Options};

use crate::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// The database directory.
    dir: PathBuf,
}

pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let mut out = std::io::stdout().lock();
    let db = Database::open(&args.dir, Options::default())?;
    let report = db.check()?;
    for t in &report.tables {
        outln!(
            out,
            "table {}: {} pages, {} visible rows",
            t.name,
            t.pages,
            t.rows
        )?;
    }
    for i in &report.indexes {
        let pages: u64 = i.pages.iter().sum();
        outln!(
            out,
            "index {} on {}: {} levels, {} pages, {} entries{}{}{}{}",
            i.name,
            i.table,
            i.levels,
            pages,
            i.entries,
            if i.stale > 0 {
                format!(", {} stale (old versions vacuum will clear)", i.stale)
            } else {
                String::new()
            },
            if i.missing_downlinks > 0 {
                format!(
                    ", {} pages awaiting their downlink (put in by the next insert)",
                    i.missing_downlinks
                )
            } else {
                String::new()
            },
            if i.free_pages > 0 {
                format!(", {} free pages (reused by splits)", i.free_pages)
            } else {
                String::new()
            },
            if i.unreachable > 0 {
                format!(
                    ", {} unreachable pages (a crash cut a change short; the next VACUUM frees them)",
                    i.unreachable
                )
            } else {
                String::new()
            }
        )?;
    }
    db.close()?;
    if report.is_clean() {
        outln!(
            out,
            "ok: {} tables and {} indexes are consistent",
            report.tables.len(),
            report.indexes.len()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    for p in &report.problems {
        outln!(out, "PROBLEM: {p}")?;
    }
    outln!(out, "{} problems found", report.problems.len())?;
    Ok(ExitCode::FAILURE)
}
