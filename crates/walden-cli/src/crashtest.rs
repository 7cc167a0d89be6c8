//! `walden crashtest`: runs the engine's crash simulation per protection mode, on a heap or
//! an undo table (`--kind`), in chunks so that long runs show progress, and fails when any
//! recovery lost or invented data.

use std::io::Write;
use std::process::ExitCode;

use walden::crashsim::{self, CrashConfig, CrashReport};
use walden::rng::SimRng;
use walden::{Protection, TableKind, WalCompression};

use crate::{CliError, Kind, Mode};

/// Crash points per call of the simulation; one progress line is printed per chunk.
const CHUNK_ITERATIONS: u64 = 500;
/// Failure messages kept per mode for the report.
const MAX_FAILURES: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CrashMode {
    Cow,
    FullPage,
    None,
    All,
}

impl CrashMode {
    fn modes(self) -> Vec<Mode> {
        match self {
            CrashMode::Cow => vec![Mode::Cow],
            CrashMode::FullPage => vec![Mode::FullPage],
            CrashMode::None => vec![Mode::None],
            CrashMode::All => vec![Mode::Cow, Mode::FullPage, Mode::None],
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// Crash points to try per mode.
    #[arg(long, default_value_t = 2000)]
    iters: u64,
    /// Torn-page protection mode to test, or all three.
    #[arg(long, value_enum, default_value_t = CrashMode::All)]
    mode: CrashMode,
    /// Kind of the table the workload runs on.
    #[arg(long, value_enum, default_value_t = Kind::Heap)]
    kind: Kind,
    /// WAL codec: off, lz4, zstd, or all (the databases of a run take turns).
    #[arg(long, default_value = "all", value_parser = parse_codec)]
    wal_compression: Codec,
    /// Seed of the first chunk; later chunks use seeds derived from it (printed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object per mode instead of a table.
    #[arg(long)]
    json: bool,
}

/// A codec, or None for all of them in turn.
type Codec = Option<WalCompression>;

fn parse_codec(s: &str) -> Result<Codec, String> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    WalCompression::parse(s)
        .map(Some)
        .ok_or_else(|| format!("unknown codec {s:?}; known: off, lz4, zstd, all"))
}

pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let mut all_passed = true;
    for mode in args.mode.modes() {
        let report = run_mode(
            mode.protection(),
            args.kind.table_kind(),
            args.wal_compression,
            args.seed,
            args.iters,
        );
        let passed = passed(mode.protection(), &report);
        all_passed &= passed;
        let mut out = std::io::stdout().lock();
        if args.json {
            print_json(&mut out, &report, passed)?;
        } else {
            print_table(&mut out, &report, passed)?;
        }
        out.flush()
            .map_err(|e| CliError::io("writing to standard output", e))?;
    }
    Ok(if all_passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A torn page is only an acceptable outcome where no protection was promised.
fn passed(protection: Protection, report: &CrashReport) -> bool {
    report.passed() && (protection == Protection::None || report.torn_pages_detected == 0)
}

/// The seed of chunk `index`: the first chunk uses `seed` itself, so that a chunk that
/// failed can be replayed alone with `--seed <its seed> --iters 500`.
fn chunk_seed(seed: u64, index: u64) -> u64 {
    if index == 0 {
        seed
    } else {
        SimRng::new(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64()
    }
}

fn run_mode(
    protection: Protection,
    kind: TableKind,
    compression: Codec,
    seed: u64,
    iterations: u64,
) -> CrashReport {
    let mut total = CrashReport {
        mode: protection.name().to_string(),
        compression: compression.map_or("off/lz4/zstd".into(), |c| c.name().to_string()),
        kind: kind.name().to_string(),
        seed,
        ..CrashReport::default()
    };
    let chunks = iterations.div_ceil(CHUNK_ITERATIONS);
    for index in 0..chunks {
        let done = index * CHUNK_ITERATIONS;
        let cfg = CrashConfig {
            protection,
            kind,
            seed: chunk_seed(seed, index),
            iterations: CHUNK_ITERATIONS.min(iterations - done),
            compression,
        };
        let report = crashsim::run(&cfg);
        add(&mut total, &report, cfg.seed);
        if chunks > 1 {
            progress(&total, iterations, cfg.seed);
        }
    }
    total
}

fn add(total: &mut CrashReport, chunk: &CrashReport, chunk_seed: u64) {
    total.crash_points += chunk.crash_points;
    total.committed_checked += chunk.committed_checked;
    total.committed_lost += chunk.committed_lost;
    total.uncommitted_visible += chunk.uncommitted_visible;
    total.wrong_results += chunk.wrong_results;
    total.torn_pages_detected += chunk.torn_pages_detected;
    total.recoveries += chunk.recoveries;
    for failure in &chunk.failures {
        if total.failures.len() < MAX_FAILURES {
            total
                .failures
                .push(format!("[chunk seed {chunk_seed}] {failure}"));
        }
    }
}

fn progress(total: &CrashReport, iterations: u64, chunk_seed: u64) {
    let failures = total.committed_lost + total.uncommitted_visible + total.wrong_results;
    let _ = writeln!(
        std::io::stderr().lock(),
        "crashtest {} ({} table): {}/{} crash points, {} failures (last chunk seed {chunk_seed})",
        total.mode,
        total.kind,
        total.crash_points,
        iterations,
        failures
    );
}

fn print_json(out: &mut impl Write, r: &CrashReport, passed: bool) -> Result<(), CliError> {
    let value = serde_json::json!({
        "mode": r.mode,
        "wal_compression": r.compression,
        "kind": r.kind,
        "seed": r.seed,
        "crash_points": r.crash_points,
        "committed_checked": r.committed_checked,
        "committed_lost": r.committed_lost,
        "uncommitted_visible": r.uncommitted_visible,
        "wrong_results": r.wrong_results,
        "torn_pages_detected": r.torn_pages_detected,
        "recoveries": r.recoveries,
        "passed": passed,
        "failures": r.failures,
    });
    outln!(out, "{value}")
}

fn print_table(out: &mut impl Write, r: &CrashReport, passed: bool) -> Result<(), CliError> {
    outln!(
        out,
        "crashtest mode {}, {} table, WAL compression {} (seed {})",
        r.mode,
        r.kind,
        r.compression,
        r.seed
    )?;
    outln!(out, "  crash points tried          {}", r.crash_points)?;
    outln!(out, "  committed txns checked      {}", r.committed_checked)?;
    outln!(out, "  committed lost              {}", r.committed_lost)?;
    outln!(
        out,
        "  uncommitted visible         {}",
        r.uncommitted_visible
    )?;
    outln!(out, "  wrong results               {}", r.wrong_results)?;
    outln!(
        out,
        "  torn pages detected         {}",
        r.torn_pages_detected
    )?;
    outln!(out, "  recoveries                  {}", r.recoveries)?;
    outln!(
        out,
        "  result                      {}",
        if passed { "passed" } else { "FAILED" }
    )?;
    for failure in &r.failures {
        outln!(out, "  failure: {failure}")?;
    }
    Ok(())
}
