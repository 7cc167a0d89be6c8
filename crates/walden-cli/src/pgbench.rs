//! `walden bench pgbench`: PostgreSQL's own pgbench, unmodified, against `walden serve`
//! (in this process, on a Unix socket) and against throwaway PostgreSQL 15 clusters in
//! the same run: `pgbench -i` (timed), then the chosen script at each client count, a
//! CHECKPOINT before each run. Reported per run: transactions per second, average and
//! 99th-percentile latency (from pgbench's per-transaction log), and per transaction
//! the WAL: how far the log advanced (Walden: its record bytes, which its LSNs count;
//! PostgreSQL: the insert position's advance) and what was written to the WAL files
//! (Walden: frames as written; PostgreSQL: a lower bound, `pg_stat_wal.wal_write` × its
//! 8 KiB WAL page), page images and WAL fsyncs (PostgreSQL: `pg_stat_wal`).
//!
//! Besides pgbench's built-in scripts, `serial-insert` runs a one-line script of ours:
//! each transaction inserts one row into a `bigserial primary key` table
//! (`bench_serial`, made anew instead of `pgbench -i`), and after each run every row's
//! id is checked distinct (`count(*)` against `count(distinct id)`). `savepoint-insert`
//! does the same with ten rows per transaction, each in a `SAVEPOINT` released after it
//! (what psql's ON_ERROR_ROLLBACK, Django's nested `atomic` and ORMs' nested
//! transactions send).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use serde_json::json;
use walden::{Database, StatsSnapshot};
use walden_server::{Server, ServerConfig};

use crate::postgres::{find_bindir, Cluster};
use crate::CliError;
use std::io::Write;

#[derive(clap::Args)]
pub struct PgbenchArgs {
    /// pgbench's scale factor (100,000 accounts each).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10000))]
    scale: u32,
    /// Client counts, `--runs` runs each.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    clients: Vec<u32>,
    /// Runs per client count: the run with the median TPS is reported (the others'
    /// TPS beside it).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=99))]
    runs: u32,
    /// Times `pgbench -i` is run: the median time is reported, with its steps.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=99))]
    init_runs: u32,
    /// Seconds per run.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=86400))]
    duration: u32,
    /// pgbench's built-in script (tpcb-like, simple-update or select-only), or
    /// serial-insert: one row per transaction into a bigserial primary key table;
    /// savepoint-insert: ten such rows per transaction, each in a SAVEPOINT released
    /// after it.
    #[arg(long, default_value = "tpcb-like")]
    script: String,
    /// pgbench's query protocol: simple, extended or prepared.
    #[arg(long, default_value = "simple")]
    protocol: String,
    /// PostgreSQL: auto (use it if installed), off, or the server's bin directory.
    #[arg(long, default_value = "auto")]
    postgres: String,
    /// PostgreSQL configurations beside Walden: fpw-on (full_page_writes on, the
    /// default) and fpw-off.
    #[arg(long, value_delimiter = ',', default_value = "fpw-on,fpw-off")]
    postgres_configs: Vec<String>,
    /// Write pgbench.json and pgbench.svg/png (WAL per transaction) here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also run every client count as an ordinary role granted the tables (what the
    /// privilege checks cost), alternating run by run with the superuser's; reported
    /// as `<target>/ordinary-role`.
    #[arg(long)]
    ordinary_role: bool,
}

/// The ordinary role `--ordinary-role` runs as.
const BENCH_ROLE: &str = "bench_role";

/// What the ordinary role is granted after each initialization (the tables are made
/// anew, and their privileges with them).
fn grants(args: &PgbenchArgs) -> &'static str {
    if serial_insert(args) {
        "grant select, insert on bench_serial to bench_role; \
         grant usage on sequence bench_serial_id_seq to bench_role"
    } else {
        "grant select, insert, update, delete on pgbench_accounts, pgbench_branches, \
         pgbench_tellers, pgbench_history to bench_role"
    }
}

/// One target's figures.
#[derive(Debug, Clone)]
struct Target {
    name: String,
    /// The median `pgbench -i` (seconds), and every run's.
    init_secs: f64,
    init_all: Vec<f64>,
    /// The median run's steps as pgbench reported them ("drop tables 0.00 s, …").
    init_steps: String,
    /// Per client count, the median run.
    runs: Vec<Run>,
}

#[derive(Debug, Clone)]
struct Run {
    clients: u32,
    /// Every run's TPS at this client count, in the order run (this one's among them).
    tps_all: Vec<f64>,
    transactions: u64,
    failed: u64,
    tps: f64,
    latency_avg_ms: f64,
    latency_p99_ms: f64,
    /// How far the log advanced: Walden's record bytes (its LSNs count them), PostgreSQL's
    /// insert-LSN difference (records with their headers, and page headers).
    wal_bytes: u64,
    /// Bytes written to the WAL files: Walden's frames (compressed records, frame
    /// headers, end markers); PostgreSQL: at least its write calls × 8 KiB, since each
    /// writes whole WAL pages (a partial page again at every flush).
    wal_written: u64,
    page_images: u64,
    wal_fsyncs: u64,
    /// serial-insert: the table's rows and distinct ids after the run.
    ids: Option<(u64, u64)>,
}

/// `serial-insert`'s table, made anew in place of `pgbench -i`.
const SERIAL_INIT: &str = "drop table if exists bench_serial;\n\
     create table bench_serial (id bigserial primary key, client int);\n";
/// `serial-insert`'s one statement.
const SERIAL_INSERT: &str = "insert into bench_serial (client) values (:client_id);\n";
/// `savepoint-insert`'s transaction: ten rows, each in a savepoint released after it.
const SAVEPOINT_INSERT: &str = "begin;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     savepoint s;\ninsert into bench_serial (client) values (:client_id);\nrelease savepoint s;\n\
     commit;\n";

/// What the initialization is called in the report.
fn init_name(args: &PgbenchArgs) -> String {
    if serial_insert(args) {
        "bench_serial made anew".to_string()
    } else {
        format!("pgbench -i -s {}", args.scale)
    }
}

/// One of our scripts on `bench_serial` (serial-insert, savepoint-insert).
fn serial_insert(args: &PgbenchArgs) -> bool {
    matches!(args.script.as_str(), "serial-insert" | "savepoint-insert")
}

/// Writes one of our scripts into the scratch directory; its path.
fn script_file(scratch: &Path, name: &str, text: &str) -> Result<String, CliError> {
    let path = scratch.join(name);
    std::fs::write(&path, text).map_err(|e| CliError::io(format!("writing {name}"), e))?;
    Ok(path.to_string_lossy().into_owned())
}

impl Run {
    fn per_txn(&self, n: u64) -> f64 {
        n as f64 / self.transactions.max(1) as f64
    }
}

fn fail(what: impl std::fmt::Display) -> CliError {
    CliError::io("bench pgbench", std::io::Error::other(what.to_string()))
}

/// Where a server listens, for pgbench's -h/-p/-U.
#[derive(Clone)]
struct Endpoint {
    host: PathBuf,
    port: u16,
    user: String,
    dbname: String,
}

/// Runs pgbench with `args` against `at`; its standard output, then its standard
/// error (an error with both when it fails).
fn pgbench(bin: &Path, at: &Endpoint, args: &[String], cwd: &Path) -> Result<String, CliError> {
    let out = Command::new(bin)
        .arg("-h")
        .arg(&at.host)
        .args(["-p", &at.port.to_string(), "-U", &at.user])
        .args(args)
        .arg(&at.dbname)
        .current_dir(cwd)
        .env_remove("PGOPTIONS")
        .env_remove("PGSERVICE")
        .output()
        .map_err(|e| CliError::io(format!("running {}", bin.display()), e))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(fail(format!("pgbench {} failed:\n{text}", args.join(" "))));
    }
    Ok(text)
}

/// The steps in `pgbench -i`'s closing line: "done in 0.72 s (drop tables 0.00 s, …)."
/// gives "drop tables 0.00 s, …" (empty when there is no such line).
fn init_steps(out: &str) -> String {
    out.lines()
        .filter_map(|l| l.trim().strip_prefix("done in "))
        .filter_map(|rest| Some(rest.split_once('(')?.1.trim_end_matches(['.', ')'])))
        .next_back()
        .unwrap_or_default()
        .to_string()
}

/// The index of the median of `values` (the lower of the two middle ones).
fn median_index(values: &[f64]) -> usize {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    order[(values.len() - 1) / 2]
}

/// A number after `key` on a line of pgbench's report ("tps = 123.4 (without …)").
fn reported(out: &str, key: &str) -> Option<f64> {
    out.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(key)?;
        let rest = rest.trim_start_matches([' ', '=', ':']);
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The 99th percentile of the latencies (µs, the third field) in pgbench's
/// per-transaction logs `prefix.*` under `dir`, in milliseconds; the logs are removed.
fn p99_from_logs(dir: &Path, prefix: &str) -> Result<f64, CliError> {
    let mut latencies: Vec<u64> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| CliError::io("reading pgbench logs", e))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(prefix) {
            continue;
        }
        let text = std::fs::read_to_string(e.path())
            .map_err(|err| CliError::io(format!("reading {name}"), err))?;
        latencies.extend(
            text.lines()
                .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok()),
        );
        let _ = std::fs::remove_file(e.path());
    }
    if latencies.is_empty() {
        return Err(fail("pgbench wrote no transaction log"));
    }
    latencies.sort_unstable();
    let at = ((latencies.len() as f64) * 0.99).ceil() as usize;
    Ok(latencies[at.saturating_sub(1).min(latencies.len() - 1)] as f64 / 1000.0)
}

/// What a target has counted so far.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    wal_bytes: u64,
    wal_written: u64,
    page_images: u64,
    wal_fsyncs: u64,
}

/// What a target measures around a run.
trait Counters {
    fn checkpoint(&self) -> Result<(), CliError>;
    fn counters(&self) -> Result<Counts, CliError>;
    /// A query's one row, its values `|`-separated.
    fn query_row(&self, sql: &str) -> Result<String, CliError>;
    /// Runs statements as the superuser.
    fn execute(&self, sql: &str) -> Result<(), CliError> {
        self.query_row(sql).map(drop)
    }
}

struct WaldenCounters(Database);

fn walden_counts(s: &StatsSnapshot) -> Counts {
    Counts {
        wal_bytes: s.wal_record_bytes,
        wal_written: s.wal_bytes_written,
        page_images: s.page_images,
        wal_fsyncs: s.wal_fsyncs,
    }
}

/// PostgreSQL's WAL page (XLOG_BLCKSZ): the least one write of its WAL puts on disk.
const PG_WAL_PAGE: u64 = 8192;

impl Counters for WaldenCounters {
    fn checkpoint(&self) -> Result<(), CliError> {
        Ok(self.0.checkpoint()?)
    }
    fn counters(&self) -> Result<Counts, CliError> {
        Ok(walden_counts(&self.0.stats()))
    }
    fn query_row(&self, sql: &str) -> Result<String, CliError> {
        let mut s = walden_sql::Session::new(&self.0);
        let r = s.execute(sql).map_err(|e| fail(format!("{sql}: {e}")))?;
        let row = r
            .last()
            .and_then(|r| r.rows.first())
            .cloned()
            .unwrap_or_default();
        Ok(row
            .iter()
            .map(walden_sql::value::display)
            .collect::<Vec<_>>()
            .join("|"))
    }
}

impl Counters for Cluster {
    fn checkpoint(&self) -> Result<(), CliError> {
        self.query("checkpoint")?;
        Ok(())
    }
    fn query_row(&self, sql: &str) -> Result<String, CliError> {
        Ok(self.query(sql)?.trim().to_string())
    }
    fn counters(&self) -> Result<Counts, CliError> {
        let out = self.query(
            "select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint, wal_write, wal_fpi, wal_sync from pg_stat_wal",
        )?;
        let fields: Vec<u64> = out
            .trim()
            .split('|')
            .filter_map(|f| f.trim().parse().ok())
            .collect();
        match fields.as_slice() {
            [w, writes, p, s] => Ok(Counts {
                wal_bytes: *w,
                wal_written: writes * PG_WAL_PAGE,
                page_images: *p,
                wal_fsyncs: *s,
            }),
            _ => Err(fail(format!("unexpected pg_stat_wal output {out:?}"))),
        }
    }
}

/// Initializes and runs every client count against one target: as its superuser, and
/// with `--ordinary-role` also as an ordinary role, run by run in turn (a target each).
fn bench_target(
    args: &PgbenchArgs,
    name: &str,
    bin: &Path,
    at: &Endpoint,
    counters: &dyn Counters,
    scratch: &Path,
) -> Result<Vec<Target>, CliError> {
    let mut users = vec![(name.to_string(), at.user.clone())];
    if args.ordinary_role {
        counters.execute(&format!("create role {BENCH_ROLE} login"))?;
        users.push((format!("{name}/ordinary-role"), BENCH_ROLE.to_string()));
    }
    let mut inits = Vec::new();
    for _ in 0..args.init_runs {
        let started = Instant::now();
        let init: Vec<String> = if serial_insert(args) {
            let file = script_file(scratch, "serial_init.sql", SERIAL_INIT)?;
            ["-n", "-c", "1", "-t", "1", "-f", &file]
                .map(String::from)
                .to_vec()
        } else {
            vec![
                "-i".into(),
                "-q".into(),
                "-s".into(),
                args.scale.to_string(),
            ]
        };
        let out = pgbench(bin, at, &init, scratch)?;
        let secs = started.elapsed().as_secs_f64();
        if args.ordinary_role {
            counters.execute(grants(args))?;
        }
        eprintln!(
            "{name}: {} in {secs:.2} s ({})",
            init_name(args),
            init_steps(&out)
        );
        inits.push((secs, init_steps(&out)));
    }
    let init_all: Vec<f64> = inits.iter().map(|i| i.0).collect();
    let (init_secs, init_steps) = inits.swap_remove(median_index(&init_all));
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); users.len()];
    for &clients in &args.clients {
        let mut tries: Vec<Vec<Run>> = vec![Vec::new(); users.len()];
        for _ in 0..args.runs {
            for (u, (label, user)) in users.iter().enumerate() {
                let at = Endpoint {
                    user: user.clone(),
                    ..at.clone()
                };
                tries[u].push(one_run(args, label, bin, &at, counters, scratch, clients)?);
            }
        }
        for (u, mut tries) in tries.into_iter().enumerate() {
            let tps_all: Vec<f64> = tries.iter().map(|r| r.tps).collect();
            let mut median = tries.swap_remove(median_index(&tps_all));
            median.tps_all = tps_all;
            runs[u].push(median);
        }
    }
    Ok(users
        .into_iter()
        .zip(runs)
        .map(|((label, _), runs)| Target {
            name: label,
            init_secs,
            init_all: init_all.clone(),
            init_steps: init_steps.clone(),
            runs,
        })
        .collect())
}

/// One pgbench run at `clients` clients, after a CHECKPOINT.
fn one_run(
    args: &PgbenchArgs,
    name: &str,
    bin: &Path,
    at: &Endpoint,
    counters: &dyn Counters,
    scratch: &Path,
    clients: u32,
) -> Result<Run, CliError> {
    counters.checkpoint()?;
    let before = counters.counters()?;
    let prefix = format!("pgbench_log_{}", name.replace('/', "_"));
    let script = if args.script == "savepoint-insert" {
        [
            "-f".into(),
            script_file(scratch, "savepoint_insert.sql", SAVEPOINT_INSERT)?,
        ]
    } else if serial_insert(args) {
        [
            "-f".into(),
            script_file(scratch, "serial_insert.sql", SERIAL_INSERT)?,
        ]
    } else {
        ["-b".into(), args.script.clone()]
    };
    let out = pgbench(
        bin,
        at,
        &[
            "-n".into(),
            script[0].clone(),
            script[1].clone(),
            "-M".into(),
            args.protocol.clone(),
            "-c".into(),
            clients.to_string(),
            "-j".into(),
            clients.min(available_threads()).to_string(),
            "-T".into(),
            args.duration.to_string(),
            "-l".into(),
            "--log-prefix".into(),
            prefix.clone(),
        ],
        scratch,
    )?;
    let after = counters.counters()?;
    let transactions = reported(&out, "number of transactions actually processed")
        .ok_or_else(|| fail(format!("no transaction count in pgbench's report:\n{out}")))?
        as u64;
    let run = Run {
        clients,
        tps_all: Vec::new(),
        transactions,
        failed: reported(&out, "number of failed transactions").unwrap_or(0.0) as u64,
        tps: reported(&out, "tps").ok_or_else(|| fail(format!("no tps in:\n{out}")))?,
        latency_avg_ms: reported(&out, "latency average").unwrap_or(f64::NAN),
        latency_p99_ms: p99_from_logs(scratch, &prefix)?,
        wal_bytes: after.wal_bytes.saturating_sub(before.wal_bytes),
        wal_written: after.wal_written.saturating_sub(before.wal_written),
        page_images: after.page_images.saturating_sub(before.page_images),
        wal_fsyncs: after.wal_fsyncs.saturating_sub(before.wal_fsyncs),
        ids: None,
    };
    let run = if serial_insert(args) {
        let row = counters.query_row("select count(*), count(distinct id) from bench_serial")?;
        let n: Vec<u64> = row
            .split('|')
            .filter_map(|v| v.trim().parse().ok())
            .collect();
        match n.as_slice() {
            [rows, distinct] => Run {
                ids: Some((*rows, *distinct)),
                ..run
            },
            _ => return Err(fail(format!("unexpected id count {row:?}"))),
        }
    } else {
        run
    };
    eprintln!(
        "{name}: {clients} clients: {:.0} tps, {:.0} WAL bytes per transaction ({:.0} written)",
        run.tps,
        run.per_txn(run.wal_bytes),
        run.per_txn(run.wal_written)
    );
    Ok(run)
}

fn available_threads() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
}

pub fn run(args: &PgbenchArgs) -> Result<ExitCode, CliError> {
    if !matches!(
        args.script.as_str(),
        "tpcb-like" | "simple-update" | "select-only" | "serial-insert" | "savepoint-insert"
    ) {
        return Err(fail(format!(
            "unknown script {:?}: tpcb-like, simple-update, select-only, serial-insert or savepoint-insert",
            args.script
        )));
    }
    if !matches!(args.protocol.as_str(), "simple" | "extended" | "prepared") {
        return Err(fail(format!(
            "unknown protocol {:?}: simple, extended or prepared",
            args.protocol
        )));
    }
    if args.clients.is_empty() || args.clients.iter().any(|&c| c == 0 || c > 1000) {
        return Err(fail("--clients takes counts from 1 to 1000"));
    }
    let bindir = match args.postgres.as_str() {
        "off" | "auto" => find_bindir(None),
        dir => Some(
            find_bindir(Some(Path::new(dir)))
                .ok_or_else(|| fail(format!("no PostgreSQL server in {dir}")))?,
        ),
    };
    // pgbench itself comes with PostgreSQL's client tools.
    let bin = bindir
        .as_ref()
        .map(|b| b.join("pgbench"))
        .filter(|p| p.exists())
        .ok_or_else(|| fail("pgbench not found: run scripts/install-postgres.sh"))?;
    let scratch = std::env::temp_dir().join(format!("walden-bench-pgbench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| CliError::io("creating a scratch directory", e))?;
    let result = (|| {
        let mut targets = Vec::new();
        // Walden: a fresh database served on a Unix socket in the scratch directory.
        let db = Database::open_or_create(scratch.join("walden"), crate::memory::options(None))?;
        let server = Server::start(
            db.clone(),
            ServerConfig {
                listen: None,
                socket_dir: Some(scratch.clone()),
                trust_local: true,
                max_connections: 1100,
                ..ServerConfig::default()
            },
        )
        .map_err(|e| CliError::io("starting walden serve", e))?;
        let at = Endpoint {
            host: scratch.clone(),
            port: 5433,
            user: "postgres".into(),
            dbname: "walden".into(),
        };
        let walden = bench_target(
            args,
            "walden",
            &bin,
            &at,
            &WaldenCounters(db.clone()),
            &scratch,
        );
        server.shutdown();
        db.close()?;
        targets.extend(walden?);
        if args.postgres != "off" {
            let bindir = bindir.clone().ok_or_else(|| fail("PostgreSQL not found"))?;
            for config in &args.postgres_configs {
                let fpw = match config.as_str() {
                    "fpw-on" => "on",
                    "fpw-off" => "off",
                    other => {
                        return Err(fail(format!(
                            "unknown PostgreSQL configuration {other:?}: fpw-on or fpw-off"
                        )))
                    }
                };
                let cluster = Cluster::start(
                    &bindir,
                    &[("full_page_writes", fpw), ("wal_compression", "off")],
                )?;
                let at = Endpoint {
                    host: cluster.socket_dir().to_path_buf(),
                    port: cluster.port(),
                    user: "postgres".into(),
                    dbname: "postgres".into(),
                };
                let t = bench_target(
                    args,
                    &format!("postgres/{config}"),
                    &bin,
                    &at,
                    &cluster,
                    &scratch,
                );
                let _ = cluster.stop();
                targets.extend(t?);
            }
        }
        Ok::<_, CliError>(targets)
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    let targets = result?;
    report(args, &targets)?;
    if let Some(dir) = &args.out {
        write_outputs(args, dir, &targets)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn report(args: &PgbenchArgs, targets: &[Target]) -> Result<(), CliError> {
    let mut stdout = std::io::stdout();
    outln!(
        stdout,
        "bench pgbench: scale {}, {} script, -M {}, {} s per run, CHECKPOINT before each",
        args.scale,
        args.script,
        args.protocol,
        args.duration
    )?;
    let mut table = comfy_table::Table::new();
    table.set_header(vec![
        "target",
        "clients",
        "tps",
        "failed",
        "latency avg (ms)",
        "p99 (ms)",
        "WAL B/txn",
        "WAL written B/txn",
        "page images/txn",
        "WAL fsyncs/txn",
    ]);
    for t in targets {
        for r in &t.runs {
            table.add_row(vec![
                t.name.clone(),
                r.clients.to_string(),
                format!("{:.0}", r.tps),
                r.failed.to_string(),
                format!("{:.3}", r.latency_avg_ms),
                format!("{:.3}", r.latency_p99_ms),
                format!("{:.0}", r.per_txn(r.wal_bytes)),
                if t.name.starts_with("walden") {
                    format!("{:.0}", r.per_txn(r.wal_written))
                } else {
                    format!("≥ {:.0}", r.per_txn(r.wal_written))
                },
                format!("{:.3}", r.per_txn(r.page_images)),
                format!("{:.3}", r.per_txn(r.wal_fsyncs)),
            ]);
        }
    }
    outln!(stdout, "{table}")?;
    for t in targets {
        for r in &t.runs {
            if let Some((rows, distinct)) = r.ids {
                outln!(
                    stdout,
                    "{} at {} clients: bench_serial holds {rows} rows with {distinct} distinct ids{}",
                    t.name,
                    r.clients,
                    if rows == distinct { "" } else { ": IDS REPEAT" }
                )?;
            }
        }
    }
    outln!(
        stdout,
        "WAL B/txn: how far the log advanced (Walden: record bytes; PostgreSQL: insert-LSN \
         difference). Written: bytes written to the WAL files (Walden: compressed records, \
         frame headers and end markers; PostgreSQL: its WAL write calls × 8 KiB, a lower \
         bound, since each writes whole WAL pages)."
    )?;
    if args.runs > 1 {
        for t in targets {
            for r in &t.runs {
                let all: Vec<String> = r.tps_all.iter().map(|x| format!("{x:.0}")).collect();
                outln!(
                    stdout,
                    "{} at {} clients: tps of the {} runs {} (median reported)",
                    t.name,
                    r.clients,
                    args.runs,
                    all.join(", ")
                )?;
            }
        }
    }
    for t in targets {
        let all: Vec<String> = t.init_all.iter().map(|x| format!("{x:.2}")).collect();
        outln!(
            stdout,
            "{}: {}: {:.2} s, the median of {} ({}); its steps: {}",
            t.name,
            init_name(args),
            t.init_secs,
            t.init_all.len(),
            all.join(", "),
            t.init_steps
        )?;
    }
    // Walden against each PostgreSQL configuration.
    if let Some(w) = targets.first() {
        for p in &targets[1..] {
            for (wr, pr) in w.runs.iter().zip(&p.runs) {
                outln!(
                    stdout,
                    "walden vs {} at {} clients: tps {:.2}x, WAL per transaction 1/{:.1}, \
                     WAL written per transaction 1/{:.1} or less",
                    p.name,
                    wr.clients,
                    wr.tps / pr.tps.max(f64::MIN_POSITIVE),
                    pr.per_txn(pr.wal_bytes) / wr.per_txn(wr.wal_bytes).max(f64::MIN_POSITIVE),
                    pr.per_txn(pr.wal_written) / wr.per_txn(wr.wal_written).max(f64::MIN_POSITIVE)
                )?;
            }
            outln!(
                stdout,
                "walden vs {}: {} {:.2}x the time",
                p.name,
                init_name(args),
                w.init_secs / p.init_secs.max(f64::MIN_POSITIVE)
            )?;
        }
    }
    Ok(())
}

fn write_outputs(args: &PgbenchArgs, dir: &Path, targets: &[Target]) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::io(format!("creating {}", dir.display()), e))?;
    let doc = json!({
        "scale": args.scale,
        "script": args.script,
        "protocol": args.protocol,
        "duration_secs": args.duration,
        "runs_per_client_count": args.runs,
        "targets": targets.iter().map(|t| json!({
            "name": t.name,
            "init_secs": t.init_secs,
            "init_secs_all": t.init_all,
            "init_steps": t.init_steps,
            "runs": t.runs.iter().map(|r| json!({
                "clients": r.clients,
                "tps_all_runs": r.tps_all,
                "transactions": r.transactions,
                "failed": r.failed,
                "tps": r.tps,
                "latency_avg_ms": r.latency_avg_ms,
                "latency_p99_ms": r.latency_p99_ms,
                "wal_bytes_per_txn": r.per_txn(r.wal_bytes),
                "wal_written_bytes_per_txn": r.per_txn(r.wal_written),
                "wal_written_is_lower_bound": t.name != "walden",
                "page_images_per_txn": r.per_txn(r.page_images),
                "wal_fsyncs_per_txn": r.per_txn(r.wal_fsyncs),
                "rows": r.ids.map(|(rows, _)| rows),
                "distinct_ids": r.ids.map(|(_, distinct)| distinct),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&doc).map_err(fail)?;
    std::fs::write(dir.join("pgbench.json"), text)
        .map_err(|e| CliError::io("writing pgbench.json", e))?;
    let chart = crate::seed_report::ChartData {
        title: format!(
            "WAL bytes per transaction, pgbench {} scale {} (log scale)",
            args.script, args.scale
        ),
        groups: args
            .clients
            .iter()
            .map(|c| format!("{c} clients"))
            .collect(),
        series: targets
            .iter()
            .enumerate()
            .map(|(i, t)| crate::seed_report::Series {
                label: t.name.clone(),
                color: if i == 0 {
                    crate::seed_report::WALDEN_COLORS[0]
                } else {
                    let colors = crate::seed_report::POSTGRES_COLORS;
                    colors[(i - 1) % colors.len()]
                },
                wal_bytes: t
                    .runs
                    .iter()
                    .map(|r| Some(r.per_txn(r.wal_bytes).round() as u64))
                    .collect(),
            })
            .collect(),
        legend_width: 220,
    };
    crate::seed_report::draw_wal_chart(&chart, &dir.join("pgbench.svg"), &dir.join("pgbench.png"))
        .map_err(|e| fail(e.to_string()))?;
    eprintln!(
        "wrote pgbench.json, pgbench.svg and pgbench.png in {}",
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The steps come from `pgbench -i`'s closing line, wherever it is in the output.
    #[test]
    fn init_steps_are_read_from_pgbench_output() {
        let out = "dropping old tables...\ncreating tables...\n\
                   done in 0.72 s (drop tables 0.00 s, create tables 0.01 s, client-side \
                   generate 0.39 s, vacuum 0.09 s, primary keys 0.18 s).\n";
        assert_eq!(
            init_steps(out),
            "drop tables 0.00 s, create tables 0.01 s, client-side generate 0.39 s, \
             vacuum 0.09 s, primary keys 0.18 s"
        );
        assert_eq!(init_steps("no such line\n"), "");
    }

    /// The median run: the middle one, or the lower middle of an even count.
    #[test]
    fn the_median_run_is_chosen() {
        assert_eq!(median_index(&[5.0]), 0);
        assert_eq!(median_index(&[3.0, 1.0, 2.0]), 2);
        assert_eq!(median_index(&[4.0, 1.0, 3.0, 2.0]), 3);
    }
}
