//! `walden bench stream`: the memory a server holds while large results leave it.
//! A table of N rows (and a 1,000-row table it joins) is loaded once; then, each in a
//! fresh `walden serve` process (this binary, its buffer pool `--buffer-pool`), psql
//! runs one statement: `SELECT *` of the table, `COPY (SELECT … JOIN …) TO STDOUT`, and
//! `CREATE TABLE AS` over the same join. Reported per statement: seconds, and the
//! server's peak resident memory (VmHWM of /proc/PID/status) against its resident
//! memory when it had just started.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use walden_sql::Session;

use crate::postgres::find_bindir;
use crate::CliError;
use std::io::Write;

#[derive(clap::Args)]
pub struct StreamArgs {
    /// Rows of the large table.
    #[arg(long, default_value_t = 25_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    rows: u64,
    /// The server's buffer pool (`256MB`): the memory the server may keep of pages.
    #[arg(long, default_value = "256MB")]
    buffer_pool: String,
    /// Where the database goes (a temporary directory by default).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// PostgreSQL's bin directory, for psql (found by default).
    #[arg(long)]
    pg_bin: Option<PathBuf>,
}

fn fail(what: impl std::fmt::Display) -> CliError {
    CliError::io("bench stream", std::io::Error::other(what.to_string()))
}

/// A statement's run: its seconds, and the server's memory at start and at its peak.
struct Measured {
    what: &'static str,
    seconds: f64,
    start_kib: u64,
    peak_kib: u64,
}

/// `VmRSS` or `VmHWM` of a process, in KiB.
fn status_kib(pid: u32, key: &str) -> Result<u64, CliError> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| CliError::io("reading /proc/PID/status", e))?;
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l[key.len()..].split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| fail(format!("no {key} in /proc/{pid}/status")))
}

struct Server {
    child: Child,
    socket_dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(db: &Path, sockets: &Path, pool: &str) -> Result<Server, CliError> {
    let exe = std::env::current_exe().map_err(|e| CliError::io("finding this binary", e))?;
    let _ = std::fs::remove_dir_all(sockets);
    std::fs::create_dir_all(sockets).map_err(|e| CliError::io("socket directory", e))?;
    let child = Command::new(exe)
        .arg("serve")
        .arg(db)
        .args(["--listen", "none", "--trust-local", "--buffer-pool", pool])
        .arg("--socket-dir")
        .arg(sockets)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| CliError::io("starting walden serve", e))?;
    let server = Server {
        child,
        socket_dir: sockets.to_path_buf(),
    };
    let socket = sockets.join(".s.PGSQL.5433");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !socket.exists() {
        if Instant::now() > deadline {
            return Err(fail("walden serve did not start within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(server)
}

fn psql(bin: &Path, server: &Server, sql: &str) -> Result<(), CliError> {
    let out = Command::new(bin.join("psql"))
        .args([
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-At",
            "-p",
            "5433",
            "-U",
            "postgres",
        ])
        .arg("-h")
        .arg(&server.socket_dir)
        .args(["-d", "walden", "-c", sql])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| CliError::io("running psql", e))?;
    if !out.status.success() {
        return Err(fail(format!(
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

fn load(dir: &Path, rows: u64) -> Result<(), CliError> {
    let db = walden::Database::open_or_create(dir, crate::memory::options(Some(256 << 20)))
        .map_err(|e| fail(format!("opening {}: {e}", dir.display())))?;
    let mut s = Session::new(&db);
    let sql = format!(
        "create table big (id bigint, k int, pad text);
         insert into big select g, g % 1000, 'row number ' || g from generate_series(1, {rows}) g;
         create table dim (k int primary key, name text);
         insert into dim select g, 'name ' || g from generate_series(0, 999) g;
         checkpoint"
    );
    s.execute(&sql).map_err(|e| fail(format!("loading: {e}")))?;
    drop(s);
    db.close().map_err(|e| fail(format!("closing: {e}")))?;
    Ok(())
}

pub fn run(args: &StreamArgs) -> Result<ExitCode, CliError> {
    let bin = find_bindir(args.pg_bin.as_deref())
        .ok_or_else(|| fail("psql not found: run scripts/install-postgres.sh or give --pg-bin"))?;
    let base = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("walden-bench-stream-{}", std::process::id())),
    };
    let r = measure(args, &bin, &base);
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&base);
    }
    r
}

fn measure(args: &StreamArgs, bin: &Path, base: &Path) -> Result<ExitCode, CliError> {
    let db = base.join("db");
    let sockets = base.join("sockets");
    let mut out = std::io::stdout().lock();
    let started = Instant::now();
    load(&db, args.rows)?;
    outln!(
        out,
        "loaded {} rows (and a 1,000-row table to join) in {:.1} s; the server's buffer pool: {}",
        args.rows,
        started.elapsed().as_secs_f64(),
        args.buffer_pool
    )?;
    let join = "select b.id, b.pad, d.name from big b join dim d on d.k = b.k";
    let cases: [(&'static str, String); 3] = [
        ("SELECT * to psql", "select * from big".to_string()),
        ("COPY (join) TO STDOUT", format!("copy ({join}) to stdout")),
        (
            "CREATE TABLE AS (join)",
            format!("create table joined as {join}"),
        ),
    ];
    let mut results = Vec::new();
    for (what, sql) in &cases {
        let server = serve(&db, &sockets, &args.buffer_pool)?;
        let pid = server.child.id();
        let start_kib = status_kib(pid, "VmRSS:")?;
        let t = Instant::now();
        psql(bin, &server, sql)?;
        let seconds = t.elapsed().as_secs_f64();
        let peak_kib = status_kib(pid, "VmHWM:")?;
        drop(server);
        results.push(Measured {
            what,
            seconds,
            start_kib,
            peak_kib,
        });
    }
    outln!(
        out,
        "{:<26} {:>10} {:>16} {:>16}",
        "statement",
        "seconds",
        "RSS at start MB",
        "peak RSS MB"
    )?;
    for m in &results {
        outln!(
            out,
            "{:<26} {:>10.1} {:>16.1} {:>16.1}",
            m.what,
            m.seconds,
            m.start_kib as f64 / 1024.0,
            m.peak_kib as f64 / 1024.0
        )?;
    }
    out.flush()
        .map_err(|e| CliError::io("writing to standard output", e))?;
    Ok(ExitCode::SUCCESS)
}
