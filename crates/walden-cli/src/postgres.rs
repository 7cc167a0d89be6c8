//! A throwaway PostgreSQL cluster for the side-by-side benchmark (`walden bench seed`): it
//! runs the installed server binaries on a private directory and socket, and measures what
//! one SQL statement writes — WAL bytes, full-page images, data-file bytes — and how long it
//! takes. It never uses a system service or the system's clusters.
//!
//! PostgreSQL refuses to run as root, so when we are root the server binaries run as the
//! `postgres` OS user (`runuser`), in a directory handed to that user; psql runs as
//! ourselves and connects over the cluster's own Unix socket with trust authentication.

use std::fs;
use std::io::{self, Write};
use std::net::TcpListener;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::CliError;

/// The OS user that runs the server when we are root, and the cluster's superuser name.
const SERVER_USER: &str = "postgres";
/// Where Debian and Ubuntu install one directory per server major version.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";
/// The binaries a usable bin directory must hold.
const REQUIRED_BINARIES: [&str; 4] = ["postgres", "initdb", "pg_ctl", "psql"];
/// How often a cluster start is tried when the port turns out to be taken.
const START_ATTEMPTS: u32 = 4;
/// How long to wait for the checkpointer to publish the statistics of our CHECKPOINT.
const CHECKPOINT_STATS_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings every cluster gets unless the caller gives its own value: a buffer pool the
/// size of Walden's default, and no checkpoint or autovacuum in the middle of a measured
/// statement (either would write WAL or data pages that are not the statement's).
const DEFAULT_SETTINGS: [(&str, &str); 5] = [
    ("shared_buffers", "256MB"),
    ("max_wal_size", "8GB"),
    ("checkpoint_timeout", "1h"),
    ("track_wal_io_timing", "off"),
    ("autovacuum", "off"),
];

/// Finds the server's bin directory: `explicit` if given (None if it lacks the server),
/// else `pg_config --bindir` if it holds the server, else the highest
/// `/usr/lib/postgresql/*/bin` that does. None when no server is installed.
pub fn find_bindir(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = explicit {
        return has_server(dir).then(|| dir.to_path_buf());
    }
    if let Some(dir) = pg_config_bindir().filter(|dir| has_server(dir)) {
        return Some(dir);
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir(DEBIAN_ROOT)
        .ok()?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let version = parse_version(entry.file_name().to_str()?)?;
            let bin = entry.path().join("bin");
            has_server(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn has_server(dir: &Path) -> bool {
    REQUIRED_BINARIES
        .iter()
        .all(|name| dir.join(name).is_file())
}

fn pg_config_bindir() -> Option<PathBuf> {
    let output = Command::new("pg_config")
        .arg("--bindir")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| PathBuf::from(text.trim()))
}

/// "15" → [15], "9.6" → [9, 6]; None for names that are not versions.
fn parse_version(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

/// What one statement cost PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PgMeasure {
    /// WAL the statement generated: the insert position after it minus before it, so page
    /// headers and the commit record count.
    pub wal_bytes: u64,
    /// Full-page images the statement logged (`pg_stat_wal.wal_fpi`).
    pub page_images: u64,
    /// Data-file bytes written by the statement and by the CHECKPOINT issued right after it
    /// (blocks written by the checkpointer, the background writer and backends), so every
    /// page the statement dirtied is counted once it reaches its file.
    pub data_bytes_written: u64,
    /// How much the database's relation files (all forks) grew over the statement; 0 when
    /// they shrank. PostgreSQL 15 adds a page to a file by writing it as zeros first, a
    /// backend write counted in `data_bytes_written`, so `data_bytes_written -
    /// file_growth_bytes` is roughly what was written with content.
    pub file_growth_bytes: u64,
    /// The statement's duration as psql's `\timing` reports it (send to last result).
    pub seconds: f64,
}

/// A running throwaway cluster. Dropping it stops the server (immediate mode, killing the
/// postmaster if pg_ctl fails) and removes its directory; `stop` does a fast shutdown and
/// reports errors.
pub struct Cluster {
    bindir: PathBuf,
    /// The temporary directory: `data/` (the cluster), the socket and `server.log`.
    dir: PathBuf,
    port: u16,
    /// Whether server binaries run as `SERVER_USER` through runuser (we are root).
    as_server_user: bool,
    /// Whether a postmaster may be running, so that drop must stop it.
    running: bool,
}

/// Names of temporary directories made by this process, so two clusters never collide.
static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

impl Cluster {
    /// Creates a cluster in a fresh directory under the system temporary directory, with
    /// `settings` (name, value) added to its postgresql.conf over the defaults, and starts it
    /// on a private socket (no TCP). Nothing is created inside; use database `postgres`.
    pub fn start(bindir: &Path, settings: &[(&str, &str)]) -> Result<Cluster, CliError> {
        let as_server_user = running_as_root();
        let mut cluster = Cluster {
            bindir: bindir.to_path_buf(),
            dir: make_private_dir()?,
            port: 0,
            as_server_user,
            running: false,
        };
        // From here on an early return drops `cluster`, which removes the directory.
        if as_server_user {
            hand_to_server_user(&cluster.dir)?;
        }
        cluster.initdb()?;
        cluster.write_settings(settings)?;
        cluster.start_server()?;
        Ok(cluster)
    }

    /// The cluster's temporary directory (removed by `stop` and by drop).
    #[cfg(test)]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs SQL (one or more statements) through psql and returns its standard output
    /// (unaligned, tuples only). An SQL error is an error carrying psql's message. The
    /// session's statistics are flushed before it ends, so later readers see them.
    pub fn query(&self, sql: &str) -> Result<String, CliError> {
        let script = format!(
            "{}\n;\n\\o /dev/null\nselect pg_stat_force_next_flush();\n",
            trim_statement(sql)
        );
        self.psql(&script)
    }

    /// Runs one statement and measures it (see `PgMeasure`). WAL and full-page images are
    /// counted up to the end of the statement; data-file writes also over a CHECKPOINT
    /// issued right after it, which this runs.
    pub fn measure(&self, sql: &str) -> Result<PgMeasure, CliError> {
        // pg_stat_wal and pg_stat_bgwriter are shared-memory snapshots that a backend
        // updates only when it flushes its pending counters, at most once a second unless
        // forced. `pg_stat_force_next_flush()` makes this session flush before it reports
        // the next command complete, so "after" includes the statement's full-page images;
        // `query` does the same, so "before" includes every earlier session's.
        let script = format!(
            "select 'walden:before', {STATS};\n\
             select pg_current_wal_insert_lsn() as walden_lsn0 \\gset\n\
             \\timing on\n{}\n;\n\\timing off\n\
             select 'walden:wal', pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'walden_lsn0');\n\
             select pg_stat_force_next_flush();\n\
             select 'walden:after', {STATS};\n\
             checkpoint;\n",
            trim_statement(sql)
        );
        let output = self.psql(&script)?;
        let before = Stats::parse(marked_line(&output, "walden:before")?)?;
        let after = Stats::parse(marked_line(&output, "walden:after")?)?;
        let wal_bytes = parse_number(marked_line(&output, "walden:wal")?.trim(), "WAL bytes")?;
        let seconds = statement_seconds(&output)?;
        let blocks_written = self.blocks_written_after_checkpoint(after.checkpoints_requested)?;
        Ok(PgMeasure {
            wal_bytes,
            page_images: after.page_images.saturating_sub(before.page_images),
            data_bytes_written: blocks_written.saturating_sub(before.blocks_written)
                * before.block_size,
            file_growth_bytes: after.file_bytes.saturating_sub(before.file_bytes),
            seconds,
        })
    }

    /// `pg_table_size` of a table: its main fork, free-space and visibility maps, TOAST.
    pub fn table_bytes(&self, table: &str) -> Result<u64, CliError> {
        let literal = table.replace('\'', "''");
        let output = self.query(&format!("select pg_table_size('{literal}'::regclass)"))?;
        parse_number(output.trim(), "table size")
    }

    /// Stops the server (fast shutdown) and removes the cluster's directory.
    pub fn stop(mut self) -> Result<(), CliError> {
        let output = self.pg_ctl(&["stop", "-m", "fast"])?;
        if !output.status.success() {
            // Drop kills the postmaster and removes the directory.
            return Err(failed("pg_ctl stop", &output));
        }
        self.running = false;
        fs::remove_dir_all(&self.dir)
            .map_err(|e| CliError::io(format!("postgres: removing {}", self.dir.display()), e))
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A command that runs a server binary as the user owning the cluster.
    fn server_command(&self, program: &str) -> Command {
        let path = self.bindir.join(program);
        let mut command = if self.as_server_user {
            let mut command = Command::new("runuser");
            command.args(["-u", SERVER_USER, "--"]).arg(path);
            command
        } else {
            Command::new(path)
        };
        // The server user may not be allowed into our working directory.
        command.current_dir(&self.dir).stdin(Stdio::null());
        command
    }

    fn initdb(&self) -> Result<(), CliError> {
        let output = self
            .server_command("initdb")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-U", SERVER_USER, "-A", "trust", "-E", "UTF8", "--locale=C"])
            .args(["--no-sync", "--no-instructions"])
            .output()
            .map_err(|e| CliError::io("postgres: running initdb", e))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(failed("initdb", &output))
        }
    }

    /// Appends the settings to postgresql.conf: defaults, then the caller's (a later line
    /// wins), then the private socket, which the caller may not override.
    fn write_settings(&self, settings: &[(&str, &str)]) -> Result<(), CliError> {
        let socket_dir = self.dir.to_string_lossy().into_owned();
        let forced = [
            ("listen_addresses", ""),
            ("unix_socket_directories", socket_dir.as_str()),
        ];
        let mut text = String::from("\n# Added by walden bench.\n");
        for (name, value) in DEFAULT_SETTINGS.iter().chain(settings).chain(&forced) {
            text.push_str(&setting_line(name, value)?);
        }
        let path = self.data_dir().join("postgresql.conf");
        fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(|e| CliError::io(format!("postgres: writing {}", path.display()), e))
    }

    /// Starts the server on a free port, trying another port when the chosen one was
    /// taken between choosing and binding.
    fn start_server(&mut self) -> Result<(), CliError> {
        let mut attempt = 1;
        loop {
            self.port = free_port()?;
            let port_option = format!("-p {}", self.port);
            let log = self.dir.join("server.log");
            let log = log.to_string_lossy();
            self.running = true;
            let output = self.pg_ctl(&["start", "-l", &log, "-o", &port_option])?;
            if output.status.success() {
                return Ok(());
            }
            self.force_stop();
            let log_tail = self.log_tail();
            let port_taken = ["already in use", "could not bind", "lock file"]
                .iter()
                .any(|sign| log_tail.contains(sign));
            if !port_taken || attempt == START_ATTEMPTS {
                let detail = if log_tail.is_empty() {
                    one_line(&output.stderr)
                } else {
                    log_tail
                };
                return Err(error(format!("pg_ctl start failed: {detail}")));
            }
            attempt += 1;
        }
    }

    /// Runs `pg_ctl` on the cluster, waiting (up to a minute) for the action to finish.
    fn pg_ctl(&self, args: &[&str]) -> Result<Output, CliError> {
        self.server_command("pg_ctl")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-w", "-t", "60"])
            .args(args)
            .output()
            .map_err(|e| CliError::io("postgres: running pg_ctl", e))
    }

    /// Stops the server however it can, ignoring errors: immediate shutdown, else SIGKILL to
    /// the postmaster named in postmaster.pid (its children exit when it dies).
    fn force_stop(&mut self) {
        if !self.running {
            return;
        }
        self.running = false;
        let stopped = self
            .pg_ctl(&["stop", "-m", "immediate"])
            .is_ok_and(|output| output.status.success());
        if stopped {
            return;
        }
        let pid_file = self.data_dir().join("postmaster.pid");
        let pid = fs::read_to_string(pid_file).ok().and_then(|text| {
            let first = text.lines().next()?.trim().to_string();
            first.parse::<u32>().ok().map(|_| first)
        });
        if let Some(pid) = pid {
            let _ = Command::new("kill")
                .args(["-KILL", &pid])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    /// The last lines of the server log, as one line.
    fn log_tail(&self) -> String {
        let text = fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(3)..].join(" / ")
    }

    /// Runs a psql script (fed on stdin, stopping at the first error) as the superuser
    /// over the cluster's socket and returns its standard output.
    fn psql(&self, script: &str) -> Result<String, CliError> {
        let mut child = Command::new(self.bindir.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-A", "-t"])
            .arg("-h")
            .arg(&self.dir)
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                SERVER_USER,
                "-d",
                "postgres",
            ])
            .env_remove("PGOPTIONS")
            .env_remove("PGSERVICE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| CliError::io("postgres: running psql", e))?;
        // Written from a thread: a large script and a large result could otherwise fill
        // both pipes and wait on each other.
        let writer = child.stdin.take().map(|mut stdin| {
            let script = script.to_string();
            std::thread::spawn(move || stdin.write_all(script.as_bytes()))
        });
        let output = child
            .wait_with_output()
            .map_err(|e| CliError::io("postgres: running psql", e))?;
        if !output.status.success() {
            return Err(failed("psql", &output));
        }
        if let Some(writer) = writer {
            writer
                .join()
                .map_err(|_| error("psql: the thread feeding its input panicked"))?
                .map_err(|e| CliError::io("postgres: writing to psql", e))?;
        }
        String::from_utf8(output.stdout).map_err(|_| error("psql printed invalid UTF-8"))
    }

    /// Waits until the checkpointer has published the statistics of the CHECKPOINT that
    /// `measure` issued — it reports them after waking the waiting backend, so they can
    /// lag — and returns the total of blocks written by checkpointer, bgwriter and backends.
    fn blocks_written_after_checkpoint(&self, checkpoints_before: u64) -> Result<u64, CliError> {
        let started = Instant::now();
        loop {
            let output = self.query(
                "select checkpoints_req, buffers_checkpoint + buffers_clean + buffers_backend \
                 from pg_stat_bgwriter",
            )?;
            let fields = split_fields(output.trim(), 2)?;
            let checkpoints = parse_number(fields[0], "checkpoints_req")?;
            if checkpoints > checkpoints_before {
                return parse_number(fields[1], "blocks written");
            }
            if started.elapsed() > CHECKPOINT_STATS_TIMEOUT {
                return Err(error(
                    "the checkpointer did not report the statement's checkpoint",
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.force_stop();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The counters `measure` reads before and after a statement, in this order.
const STATS: &str = "(select wal_fpi from pg_stat_wal), \
    (select buffers_checkpoint + buffers_clean + buffers_backend from pg_stat_bgwriter), \
    (select checkpoints_req from pg_stat_bgwriter), \
    current_setting('block_size')::int8, \
    (select coalesce(sum(pg_relation_size(oid, 'main') + pg_relation_size(oid, 'fsm') \
        + pg_relation_size(oid, 'vm') + pg_relation_size(oid, 'init')), 0) from pg_class)";

struct Stats {
    page_images: u64,
    blocks_written: u64,
    checkpoints_requested: u64,
    block_size: u64,
    /// Bytes of all relation files of the database.
    file_bytes: u64,
}

impl Stats {
    fn parse(fields: &str) -> Result<Stats, CliError> {
        let fields = split_fields(fields, 5)?;
        Ok(Stats {
            page_images: parse_number(fields[0], "wal_fpi")?,
            blocks_written: parse_number(fields[1], "blocks written")?,
            checkpoints_requested: parse_number(fields[2], "checkpoints_req")?,
            block_size: parse_number(fields[3], "block_size")?,
            file_bytes: parse_number(fields[4], "relation file bytes")?,
        })
    }
}

/// Splits psql's unaligned output line into exactly `count` fields.
fn split_fields(line: &str, count: usize) -> Result<Vec<&str>, CliError> {
    let fields: Vec<&str> = line.split('|').collect();
    if fields.len() == count {
        Ok(fields)
    } else {
        Err(error(format!(
            "expected {count} fields from psql, got {line:?}"
        )))
    }
}

/// The rest of the output line that starts with `marker|`.
fn marked_line<'a>(output: &'a str, marker: &str) -> Result<&'a str, CliError> {
    output
        .lines()
        .find_map(|line| line.strip_prefix(marker)?.strip_prefix('|'))
        .ok_or_else(|| error(format!("no {marker} line in psql output")))
}

/// The sum of psql's `Time: 12.345 ms` lines (one per statement run under `\timing`;
/// durations over a second also print "(mm:ss.fff)" after the milliseconds), in seconds.
fn statement_seconds(output: &str) -> Result<f64, CliError> {
    let mut total_ms = 0.0;
    let mut found = false;
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("Time: ") {
            let ms = rest.split_whitespace().next().unwrap_or("");
            total_ms += ms
                .parse::<f64>()
                .map_err(|_| error(format!("cannot read psql timing {line:?}")))?;
            found = true;
        }
    }
    if found {
        Ok(total_ms / 1000.0)
    } else {
        Err(error("psql printed no timing for the statement"))
    }
}

fn parse_number(text: &str, what: &str) -> Result<u64, CliError> {
    // pg_wal_lsn_diff returns numeric, printed without a fraction for whole numbers.
    text.trim()
        .parse()
        .map_err(|_| error(format!("cannot read {what} from psql output {text:?}")))
}

/// SQL without its trailing semicolons, so the script can end it on a line of its own
/// (which also ends a trailing `--` comment).
fn trim_statement(sql: &str) -> &str {
    sql.trim_end().trim_end_matches(';').trim_end()
}

/// One `name = 'value'` line of postgresql.conf; names are checked and values quoted so
/// that a setting cannot add lines of its own.
fn setting_line(name: &str, value: &str) -> Result<String, CliError> {
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !name_ok || value.contains(['\n', '\r']) {
        return Err(error(format!("invalid setting {name} = {value:?}")));
    }
    Ok(format!("{name} = '{}'\n", value.replace('\'', "''")))
}

fn running_as_root() -> bool {
    // /proc/self belongs to the process's effective user.
    if let Ok(meta) = fs::metadata("/proc/self") {
        return meta.uid() == 0;
    }
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// Creates a new directory (mode 0700) under the system temporary directory.
fn make_private_dir() -> Result<PathBuf, CliError> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "walden-pg-{}-{}-{nanos:08x}",
        std::process::id(),
        NEXT_DIR.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir().join(name);
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| CliError::io(format!("postgres: creating {}", dir.display()), e))?;
    Ok(dir)
}

/// Gives the directory to the server user, who must own the cluster.
fn hand_to_server_user(dir: &Path) -> Result<(), CliError> {
    let uid = id_of(&["-u", SERVER_USER])?;
    let gid = id_of(&["-g", SERVER_USER])?;
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).map_err(|e| {
        CliError::io(
            format!("postgres: giving {} to {SERVER_USER}", dir.display()),
            e,
        )
    })
}

fn id_of(args: &[&str]) -> Result<u32, CliError> {
    let output = Command::new("id")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| CliError::io("postgres: running id", e))?;
    let text = String::from_utf8_lossy(&output.stdout);
    match text.trim().parse() {
        Ok(id) if output.status.success() => Ok(id),
        _ => Err(error(format!(
            "running as root needs the {SERVER_USER:?} OS user to run the server: {}",
            one_line(&output.stderr)
        ))),
    }
}

/// Picks a TCP port that is free now (the server only uses it to name its socket).
fn free_port() -> Result<u16, CliError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| CliError::io("postgres: choosing a port", e))
}

fn error(message: impl Into<String>) -> CliError {
    CliError::io("postgres", io::Error::other(message.into()))
}

/// "postgres: <what> failed: <its stderr, or its exit status>".
fn failed(what: &str, output: &Output) -> CliError {
    let mut detail = one_line(&output.stderr);
    if detail.is_empty() {
        detail = output.status.to_string();
    }
    error(format!("{what} failed: {detail}"))
}

/// A program's message on one line.
fn one_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREATE_DEMO: &str = "create table demo as select generate_series a,generate_series b,\
        generate_series c,generate_series d,generate_series e,generate_series f,\
        lpad('x',100,'x') g from generate_series(0,0);";
    const INSERT_10K: &str = "insert into demo select g,g,g,g,g,g,lpad('x',100,'x') \
        from generate_series(1,10000) g";

    /// The seed's first steps: insert 10,000 rows, checkpoint, update every row. Returns
    /// the two measures and the table's pages before the update.
    fn seed_steps(cluster: &Cluster) -> (PgMeasure, PgMeasure, u64) {
        cluster.query(CREATE_DEMO).unwrap();
        let insert = cluster.measure(INSERT_10K).unwrap();
        cluster.query("checkpoint").unwrap();
        let pages = cluster
            .query("select pg_relation_size('demo') / current_setting('block_size')::int8")
            .unwrap();
        let pages: u64 = pages.trim().parse().unwrap();
        let update = cluster.measure("update demo set b=b+1").unwrap();
        (insert, update, pages)
    }

    #[test]
    fn measures_the_seed_steps_with_and_without_full_page_writes() {
        let Some(bindir) = find_bindir(None) else {
            println!("postgres not installed: skipped");
            return;
        };
        let cluster = Cluster::start(&bindir, &[("full_page_writes", "on")]).unwrap();
        let dir = cluster.dir().to_path_buf();
        assert!(dir.join("data/postmaster.pid").is_file());
        let (insert, update, pages) = seed_steps(&cluster);
        println!("full_page_writes=on: insert {insert:?}");
        println!("full_page_writes=on: update {update:?} over {pages} pages");
        assert!(insert.wal_bytes > 10_000 * 100, "{insert:?}");
        assert!(insert.seconds > 0.0, "{insert:?}");
        assert!(insert.file_growth_bytes >= pages * 8192, "{insert:?}");
        assert!(
            insert.data_bytes_written >= insert.file_growth_bytes,
            "{insert:?}"
        );
        // The first change to each page after the checkpoint logs the page.
        assert!(update.page_images >= pages, "{update:?}");
        assert!(update.data_bytes_written > 0, "{update:?}");
        assert!(cluster.table_bytes("demo").unwrap() > pages * 8192);
        cluster.stop().unwrap();
        assert!(!dir.exists(), "{} left behind", dir.display());

        let cluster = Cluster::start(&bindir, &[("full_page_writes", "off")]).unwrap();
        let dir = cluster.dir().to_path_buf();
        let (insert, update, _) = seed_steps(&cluster);
        println!("full_page_writes=off: insert {insert:?}");
        println!("full_page_writes=off: update {update:?}");
        assert_eq!(insert.page_images, 0);
        assert_eq!(update.page_images, 0);
        assert!(update.wal_bytes > 0);
        // Dropping without stop() must not leave the server or its directory behind.
        drop(cluster);
        assert!(!dir.exists(), "{} left behind", dir.display());
    }

    #[test]
    fn an_sql_error_is_reported_with_psql_message() {
        let Some(bindir) = find_bindir(None) else {
            println!("postgres not installed: skipped");
            return;
        };
        let cluster = Cluster::start(&bindir, &[]).unwrap();
        let err = cluster.query("select * from no_such_table").unwrap_err();
        let message = err.to_string();
        assert!(message.starts_with("postgres: psql failed: "), "{message}");
        assert!(message.contains("no_such_table"), "{message}");
        assert!(!message.contains('\n'), "{message}");
        assert_eq!(cluster.query("select 40 + 2").unwrap().trim(), "42");
        cluster.stop().unwrap();
    }

    #[test]
    fn a_bad_setting_fails_start_with_the_server_log() {
        let Some(bindir) = find_bindir(None) else {
            println!("postgres not installed: skipped");
            return;
        };
        let Err(err) = Cluster::start(&bindir, &[("shared_buffers", "lots")]) else {
            panic!("a cluster started with shared_buffers = 'lots'");
        };
        let message = err.to_string();
        assert!(
            message.starts_with("postgres: pg_ctl start failed: "),
            "{message}"
        );
        assert!(message.contains("shared_buffers"), "{message}");
        assert!(!message.contains('\n'), "{message}");
    }

    #[test]
    fn settings_cannot_inject_lines() {
        assert_eq!(
            setting_line("wal_compression", "lz4").unwrap(),
            "wal_compression = 'lz4'\n"
        );
        assert_eq!(setting_line("x", "it's").unwrap(), "x = 'it''s'\n");
        assert!(setting_line("a = 1\nb", "2").is_err());
        assert!(setting_line("a", "1\nb = 2").is_err());
    }

    #[test]
    fn reads_psql_timing_lines() {
        let output = "x\nTime: 12.5 ms\nTime: 1500.000 ms (00:01.500)\n";
        assert_eq!(statement_seconds(output).unwrap(), 1.5125);
        assert!(statement_seconds("no timing").is_err());
        assert_eq!(parse_version("9.6"), Some(vec![9, 6]));
        assert_eq!(parse_version("main"), None);
    }
}
