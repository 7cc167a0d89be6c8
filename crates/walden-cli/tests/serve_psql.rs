//! `walden serve` as a user runs it: the binary started on a free port and a Unix socket
//! (psql comes in by the socket, with `--trust-local`), psql running
//! the seed workload (rows cut to 2,000) and a script of queries with
//! `psql -X -v ON_ERROR_STOP=1 -f`, whose output must be what `walden sql -f` prints for
//! the same files on another database — psql's `\d t`, `\dt` and `\di` included (psql
//! sends its catalog queries over the wire; `walden sql` runs the same queries in
//! process); then SIGTERM stops the server with exit 0.
//! Skipped (with a message) without psql (scripts/install-postgres.sh).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const QUERIES: &str = "\
create table t (id int primary key, name text, amount numeric(10,2), at date);
insert into t select g, 'n' || g, g * 1.5, date '2024-01-01' + g from generate_series(1, 5) g;
select * from t order by id;
update t set amount = amount * 2 where id % 2 = 0 returning id, amount;
select count(*), sum(amount), min(at) from t;
delete from t where id > 3;
select id, name from t order by id desc;
\\d t
\\dt
\\di
";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `walden serve` of `dir/served` on a free port and a Unix socket in `dir`, with
/// trust, once it listens; its standard error goes to `stderr`.
fn serve(dir: &Path, stderr: Stdio) -> (u16, std::process::Child) {
    let port = free_port();
    let server = Command::new(env!("CARGO_BIN_EXE_walden"))
        .arg("serve")
        .arg(dir.join("served"))
        .args(["--listen", &format!("127.0.0.1:{port}"), "--trust-local"])
        .arg("--socket-dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("walden serve starts");
    let socket = dir.join(format!(".s.PGSQL.{port}"));
    let started = Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "walden serve did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (port, server)
}

#[test]
fn psql_through_the_server_prints_what_walden_sql_prints() {
    let psql = Path::new("/usr/lib/postgresql/15/bin/psql");
    if !psql.exists() {
        eprintln!("SKIPPED: psql not installed (scripts/install-postgres.sh)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let seed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/seed.sql"),
    )
    .expect("examples/seed.sql")
    .replace("1000000", "2000");
    let (seed_file, queries_file) = (dir.path().join("seed.sql"), dir.path().join("queries.sql"));
    std::fs::write(&seed_file, seed).expect("write");
    std::fs::write(&queries_file, QUERIES).expect("write");
    let walden = env!("CARGO_BIN_EXE_walden");
    let (port, mut server) = serve(dir.path(), Stdio::piped());
    let through_server = Command::new(psql)
        .args([
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            &dir.path().to_string_lossy(),
            "-p",
            &port.to_string(),
            "-U",
            "postgres",
            "-d",
            "walden",
            "-f",
        ])
        .arg(&seed_file)
        .arg("-f")
        .arg(&queries_file)
        .output()
        .expect("psql runs");
    let direct = Command::new(walden)
        .arg("sql")
        .arg(dir.path().join("direct"))
        .arg("-f")
        .arg(&seed_file)
        .arg("-f")
        .arg(&queries_file)
        .output()
        .expect("walden sql runs");
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let status = server.wait().expect("server exits");
    let mut log = String::new();
    if let Some(mut e) = server.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut log);
    }
    let (a, b) = (
        String::from_utf8_lossy(&through_server.stdout),
        String::from_utf8_lossy(&direct.stdout),
    );
    assert!(
        through_server.status.success(),
        "psql failed: {}{a}",
        String::from_utf8_lossy(&through_server.stderr)
    );
    assert!(direct.status.success(), "walden sql failed: {b}");
    assert_eq!(a, b, "psql through walden serve and walden sql differ");
    assert!(a.contains("INSERT 0 2000") && a.contains("(3 rows)"), "{a}");
    assert!(
        a.contains("Table \"public.t\"") && a.contains("\"t_pkey\" PRIMARY KEY, btree (id)"),
        "{a}"
    );
    assert!(status.success(), "walden serve exited with {status}: {log}");
    assert!(log.contains("stopped"), "{log}");
    let _ = std::io::stderr().flush();
}

/// psql's ON_ERROR_ROLLBACK: psql wraps each statement of a transaction block in a
/// savepoint, released after it or rolled back to after an error, so that a failed
/// statement leaves the block going and the statements before and after it stand.
#[test]
fn psql_on_error_rollback_keeps_the_block_going() {
    let psql = Path::new("/usr/lib/postgresql/15/bin/psql");
    if !psql.exists() {
        eprintln!("SKIPPED: psql not installed (scripts/install-postgres.sh)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("block.sql");
    std::fs::write(
        &script,
        "\\set ON_ERROR_ROLLBACK on\n\
         create table r (a int primary key);\n\
         begin;\n\
         insert into r values (1);\n\
         insert into r values (1);\n\
         insert into r values (2);\n\
         select 1 / 0;\n\
         insert into r values (3);\n\
         commit;\n\
         select string_agg(a::text, ',' order by a) from r;\n",
    )
    .expect("write");
    let (port, mut server) = serve(dir.path(), Stdio::null());
    let out = Command::new(psql)
        .args(["-X", "-At", "-h", &dir.path().to_string_lossy()])
        .args([
            "-p",
            &port.to_string(),
            "-U",
            "postgres",
            "-d",
            "walden",
            "-f",
        ])
        .arg(&script)
        .output()
        .expect("psql runs");
    let _ = server.kill();
    let _ = server.wait();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(stdout.lines().last(), Some("1,2,3"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("duplicate key value violates unique constraint \"r_pkey\"")
            && stderr.contains("division by zero"),
        "{stderr}"
    );
}
