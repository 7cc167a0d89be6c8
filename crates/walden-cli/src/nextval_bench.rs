//! `walden bench nextval`: how fast a sequence hands out values in one process, beside
//! PostgreSQL 15. Walden embedded: `Transaction::nextval` called N times in one
//! transaction (the engine's shared counter, logging 32 values ahead), and the SQL
//! `select count(nextval('s')) from generate_series(1, N)` through a session (CACHE 1
//! and CACHE 32); PostgreSQL: the same SQL on a throwaway cluster (psql's own
//! `\timing`). The median of `--runs` runs of each, in values per second.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use walden::{Database, SeqType, SequenceDef};
use walden_sql::Session;

use crate::postgres::{find_bindir, Cluster};
use crate::CliError;
use std::io::Write;

#[derive(clap::Args)]
pub struct NextvalArgs {
    /// Values per run.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    values: u64,
    /// Runs of each measurement: the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=99))]
    runs: u32,
    /// PostgreSQL: auto (use it if installed), off, or the server's bin directory.
    #[arg(long, default_value = "auto")]
    postgres: String,
}

fn fail(what: impl std::fmt::Display) -> CliError {
    CliError::io("bench nextval", std::io::Error::other(what.to_string()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

/// Runs `f` `runs` times; each gives its seconds. The median and every run's.
fn timed(
    runs: u32,
    mut f: impl FnMut() -> Result<f64, CliError>,
) -> Result<(f64, Vec<f64>), CliError> {
    let mut all = Vec::new();
    for _ in 0..runs {
        all.push(f()?);
    }
    Ok((median(all.clone()), all))
}

fn sql_count(s: &mut Session, sql: &str, want: u64) -> Result<f64, CliError> {
    let started = Instant::now();
    let r = s.execute(sql).map_err(|e| fail(format!("{sql}: {e}")))?;
    let secs = started.elapsed().as_secs_f64();
    let got = r
        .last()
        .and_then(|r| r.rows.first())
        .map(|row| walden_sql::value::display(&row[0]));
    if got.as_deref() != Some(&want.to_string()) {
        return Err(fail(format!("{sql} gave {got:?}")));
    }
    Ok(secs)
}

/// The time psql's `\timing` printed for the last statement of its output, in seconds.
fn psql_time(out: &str) -> Option<f64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("Time: "))
        .filter_map(|t| t.split_whitespace().next()?.parse::<f64>().ok())
        .next_back()
        .map(|ms| ms / 1000.0)
}

pub fn run(args: &NextvalArgs) -> Result<ExitCode, CliError> {
    let n = args.values;
    let scratch: PathBuf =
        std::env::temp_dir().join(format!("walden-bench-nextval-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let db = Database::create(&scratch, crate::memory::options(None))?;
    let result = (|| {
        let mut rows: Vec<(String, f64, Vec<f64>)> = Vec::new();
        db.create_sequence(SequenceDef::new("s", SeqType::Int8))?;
        let (m, all) = timed(args.runs, || {
            let started = Instant::now();
            let mut t = db.begin();
            for _ in 0..n {
                t.nextval("s")?;
            }
            t.commit()?;
            Ok(started.elapsed().as_secs_f64())
        })?;
        rows.push(("walden: Transaction::nextval, cache 1".into(), m, all));
        let mut s = Session::new(&db);
        s.execute("create sequence s1; create sequence s32 cache 32")
            .map_err(|e| fail(e.to_string()))?;
        for (seq, label) in [("s1", "cache 1"), ("s32", "cache 32")] {
            let sql = format!("select count(nextval('{seq}')) from generate_series(1, {n})");
            let (m, all) = timed(args.runs, || sql_count(&mut s, &sql, n))?;
            rows.push((format!("walden: SQL nextval, {label}"), m, all));
        }
        Ok::<_, CliError>(rows)
    })();
    db.close()?;
    let _ = std::fs::remove_dir_all(&scratch);
    let mut rows = result?;
    if args.postgres != "off" {
        let bindir = match args.postgres.as_str() {
            "auto" => find_bindir(None),
            dir => find_bindir(Some(std::path::Path::new(dir))),
        };
        match bindir {
            Some(bindir) => {
                let cluster = Cluster::start(&bindir, &[])?;
                let r = (|| {
                    cluster.query("create sequence s1")?;
                    cluster.query("create sequence s32 cache 32")?;
                    for (seq, label) in [("s1", "cache 1"), ("s32", "cache 32")] {
                        let script = format!(
                            "\\timing on\nselect count(nextval('{seq}')) from generate_series(1, {n});\n"
                        );
                        let (m, all) = timed(args.runs, || {
                            let out = cluster.psql(&script)?;
                            psql_time(&out)
                                .ok_or_else(|| fail(format!("no time in psql's output: {out}")))
                        })?;
                        rows.push((format!("postgres: SQL nextval, {label}"), m, all));
                    }
                    Ok::<_, CliError>(())
                })();
                let _ = cluster.stop();
                r?;
            }
            None if args.postgres == "auto" => {
                eprintln!("bench nextval: PostgreSQL not installed; Walden alone")
            }
            None => return Err(fail("no PostgreSQL server there")),
        }
    }
    let mut out = std::io::stdout();
    outln!(
        out,
        "bench nextval: {n} values per run, the median of {} runs",
        args.runs
    )?;
    let mut table = comfy_table::Table::new();
    table.set_header(vec!["what", "values/s", "seconds", "runs (s)"]);
    for (what, secs, all) in rows {
        let runs: Vec<String> = all.iter().map(|s| format!("{s:.3}")).collect();
        table.add_row(vec![
            what,
            format!("{:.0}", n as f64 / secs.max(f64::MIN_POSITIVE)),
            format!("{secs:.3}"),
            runs.join(", "),
        ]);
    }
    outln!(out, "{table}")?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psql_timing_is_read_in_seconds() {
        let out = "Timing is on.\n  count  \n---------\n 1000000\n(1 row)\n\nTime: 512.250 ms\n";
        assert_eq!(psql_time(out), Some(0.51225));
        assert_eq!(psql_time("no timing"), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
    }
}
