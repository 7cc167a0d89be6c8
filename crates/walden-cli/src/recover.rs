//! `walden recover DIR --accept-data-loss`: the operator's way out, like PostgreSQL's
//! pg_resetwal. After an open that refused a damaged database (a missing or damaged WAL
//! segment, a damaged `xact`), it opens what can be read, prints exactly what it dropped,
//! records it in `DIR/data-loss.log`, and leaves a database that opens normally.
//! Without the flag it only opens the database normally and says whether that works.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use walden::{Database, Options};

use crate::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// The database directory.
    dir: PathBuf,
    /// Open even though data will be lost: cut the log at the damage, count transactions
    /// whose status cannot be read as not committed, and say what was dropped.
    #[arg(long)]
    accept_data_loss: bool,
}

pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let mut out = std::io::stdout().lock();
    if !args.accept_data_loss {
        return match Database::open(&args.dir, Options::default()) {
            Ok(db) => {
                db.close()?;
                outln!(
                    out,
                    "{}: opens normally; nothing to recover",
                    args.dir.display()
                )?;
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                outln!(out, "{}: does not open: {e}", args.dir.display())?;
                outln!(
                    out,
                    "Restore from a backup if you can. Otherwise `walden recover {} --accept-data-loss` opens what can be read and says what it drops.",
                    args.dir.display()
                )?;
                Ok(ExitCode::FAILURE)
            }
        };
    }
    let opts = Options {
        accept_data_loss: true,
        ..Options::default()
    };
    let db = Database::open(&args.dir, opts)?;
    let report = db.recovery_report().clone();
    db.close()?;
    if report.data_loss.is_empty() {
        outln!(
            out,
            "{}: opened without dropping anything (end of log at LSN {})",
            args.dir.display(),
            report.end_lsn
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(out, "{}: opened; dropped:", args.dir.display())?;
    for line in &report.data_loss {
        outln!(out, "  - {line}")?;
    }
    outln!(
        out,
        "Recorded in {}. The database now opens normally.",
        args.dir.join("data-loss.log").display()
    )?;
    Ok(ExitCode::SUCCESS)
}
