//! PostgreSQL's own pgbench against the `walden serve` binary (Unix socket,
//! `--trust-local`): what could go wrong is a load pgbench cannot finish (`-i` with
//! client-side COPY and with server-side generation), transactions that fail under
//! concurrency, or balances that no longer add up — TPC-B's invariant is that the
//! accounts', tellers' and branches' balances and the history's deltas all have the same
//! sum. Then `walden check` on the database. Skipped (with a message) without PostgreSQL's
//! client tools (scripts/install-postgres.sh).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BINDIR: &str = "/usr/lib/postgresql/15/bin";
/// The socket's port (the server listens on no TCP port).
const PORT: &str = "5433";

/// A `walden serve` child on a Unix socket in `socket_dir`, once it answers.
fn serve(data: &Path, socket_dir: &Path) -> Child {
    let server = support::walden()
        .arg("serve")
        .arg(data)
        .args(["--listen", "none", "--trust-local", "--socket-dir"])
        .arg(socket_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("walden serve starts");
    let socket = socket_dir.join(format!(".s.PGSQL.{PORT}"));
    let started = Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "walden serve did not listen on {}",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// One of PostgreSQL's client programs, pointed at the socket as `postgres`.
fn client(program: &str, socket_dir: &Path) -> Command {
    let mut c = Command::new(Path::new(BINDIR).join(program));
    c.arg("-h")
        .arg(socket_dir)
        .args(["-p", PORT, "-U", "postgres"])
        .env_remove("PGOPTIONS")
        .env_remove("PGSERVICE")
        .env_remove("PGPASSWORD")
        .env("PGCONNECT_TIMEOUT", "10");
    c
}

/// pgbench with `args` (it must exit 0); its standard output and standard error.
fn pgbench(socket_dir: &Path, cwd: &Path, args: &[&str]) -> String {
    let out = client("pgbench", socket_dir)
        .args(args)
        .arg("walden")
        .current_dir(cwd)
        .output()
        .expect("pgbench runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "pgbench {} exited with {}:\n{text}",
        args.join(" "),
        out.status
    );
    text
}

/// The value after `key` on a line of pgbench's report ("number of failed
/// transactions: 0 (0.000%)").
fn reported(report: &str, key: &str) -> Option<u64> {
    report.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(key)?;
        rest.trim_start_matches([' ', ':', '='])
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

/// A pgbench run's transactions, after checking it processed some and failed none.
fn run(socket_dir: &Path, cwd: &Path, args: &[&str]) -> u64 {
    let report = pgbench(socket_dir, cwd, args);
    let processed = reported(&report, "number of transactions actually processed")
        .unwrap_or_else(|| panic!("no transaction count in pgbench's report:\n{report}"));
    assert!(processed > 0, "no transaction in {args:?}:\n{report}");
    // pgbench 15 prints the line when it counts failures; an older one never retries.
    if let Some(failed) = reported(&report, "number of failed transactions") {
        assert_eq!(failed, 0, "failed transactions in {args:?}:\n{report}");
    }
    assert!(!report.contains("ERROR"), "{args:?}:\n{report}");
    eprintln!("pgbench {}: {processed} transactions", args.join(" "));
    processed
}

/// One row of `sql`'s result through psql, its columns split on `|`.
fn psql_row(socket_dir: &Path, sql: &str) -> Vec<i64> {
    let out = client("psql", socket_dir)
        .args([
            "-X",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            "walden",
            "-c",
            sql,
        ])
        .output()
        .expect("psql runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{sql}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.trim()
        .split('|')
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{sql}: not a number: {v:?}"))
        })
        .collect()
}

/// The row counts of the four tables and the sums of their balances and deltas.
struct Tables {
    counts: Vec<i64>,
    sums: Vec<i64>,
}

fn tables(socket_dir: &Path) -> Tables {
    Tables {
        counts: psql_row(
            socket_dir,
            "select (select count(*) from pgbench_accounts), (select count(*) from pgbench_branches),
                    (select count(*) from pgbench_tellers), (select count(*) from pgbench_history)",
        ),
        sums: psql_row(
            socket_dir,
            "select (select coalesce(sum(abalance), 0) from pgbench_accounts),
                    (select coalesce(sum(bbalance), 0) from pgbench_branches),
                    (select coalesce(sum(tbalance), 0) from pgbench_tellers),
                    (select coalesce(sum(delta), 0) from pgbench_history)",
        ),
    }
}

/// Scale 1's rows, and TPC-B's invariant: every balance sum is the deltas' sum.
fn assert_tpcb_invariant(socket_dir: &Path, history_rows: u64) {
    let t = tables(socket_dir);
    assert_eq!(
        t.counts,
        vec![100_000, 1, 10, history_rows as i64],
        "accounts, branches, tellers, history"
    );
    let delta = t.sums[3];
    assert_eq!(
        t.sums,
        vec![delta; 4],
        "sum(abalance), sum(bbalance), sum(tbalance), sum(delta)"
    );
}

fn stop(mut server: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let status = server.wait().expect("walden serve exits");
    let mut log = String::new();
    if let Some(mut e) = server.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut log);
    }
    assert!(status.success(), "walden serve exited with {status}: {log}");
    assert!(log.contains("stopped"), "{log}");
}

#[test]
fn pgbench_loads_runs_and_keeps_tpcb_balances() {
    if !Path::new(BINDIR).join("pgbench").exists() || !Path::new(BINDIR).join("psql").exists() {
        eprintln!("SKIPPED: pgbench and psql not found in {BINDIR} (scripts/install-postgres.sh)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let data: PathBuf = dir.path().join("data");
    let socket_dir = dir.path();
    let server = serve(&data, socket_dir);
    let started = Instant::now();

    // Server-side generation (INSERT … SELECT FROM generate_series), then the default
    // steps (client-side COPY), which drop and load the tables again.
    let report = pgbench(socket_dir, socket_dir, &["-i", "-I", "dtGvp", "-s", "1"]);
    assert!(report.contains("done in"), "{report}");
    assert_tpcb_invariant(socket_dir, 0);
    let report = pgbench(socket_dir, socket_dir, &["-i", "-s", "1"]);
    assert!(report.contains("done in"), "{report}");
    assert_tpcb_invariant(socket_dir, 0);
    eprintln!("pgbench -i twice in {:?}", started.elapsed());

    // TPC-B-like at 4 clients for 10 s, the simple protocol; pgbench vacuums the small
    // tables and truncates the history first (empty here), later runs keep it (-n).
    let mut history = run(
        socket_dir,
        socket_dir,
        &["-T", "10", "-c", "4", "-j", "2", "-M", "simple"],
    );
    assert_tpcb_invariant(socket_dir, history);
    for protocol in ["extended", "prepared"] {
        history += run(
            socket_dir,
            socket_dir,
            &["-n", "-T", "3", "-c", "4", "-j", "2", "-M", protocol],
        );
        assert_tpcb_invariant(socket_dir, history);
    }

    // simple-update changes only the accounts and the history: those two sums move
    // together, the tellers' and branches' stay.
    let before = tables(socket_dir);
    history += run(
        socket_dir,
        socket_dir,
        &["-n", "-T", "3", "-c", "4", "-j", "2", "-b", "simple-update"],
    );
    let after = tables(socket_dir);
    assert_eq!(after.counts, vec![100_000, 1, 10, history as i64]);
    assert_eq!(after.sums[0], after.sums[3], "sum(abalance) = sum(delta)");
    assert_eq!(after.sums[1..3], before.sums[1..3], "tellers and branches");
    stop(server);

    // The database the server left behind is consistent.
    let out = support::run(&["check", &data.to_string_lossy()]);
    assert!(
        out.status.success(),
        "walden check:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("pgbench scenario in {:?}", started.elapsed());
}
