//! What one client can take from the `walden serve` binary: thousands of sockets that
//! never log in, a protocol other than 3.0, a query of 70,000 columns, a value past
//! PostgreSQL's 1 GB. What could go wrong: the process aborting (a thread per socket
//! until thread creation fails takes every session down), a column count wrapping at
//! 16 bits and desynchronising the protocol, a client left waiting with no message, or
//! memory without bound. Each case checks the server still serves a logged-in session
//! and measures the process's peak memory (VmHWM).

#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const PORT: &str = "5433";

struct Served {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `walden serve` on a Unix socket with trust, at most `max_connections` sessions and
/// `startup_timeout` seconds to log in.
fn serve(max_connections: u32, startup_timeout: u32) -> Served {
    let dir = tempfile::tempdir().expect("temp dir");
    let child = support::walden()
        .arg("serve")
        .arg(dir.path().join("db"))
        .args(["--listen", "none", "--trust-local", "--buffer-pool", "16MB"])
        .arg("--socket-dir")
        .arg(dir.path())
        .args(["--max-connections", &max_connections.to_string()])
        .args(["--startup-timeout", &startup_timeout.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("walden serve starts");
    let socket = dir.path().join(format!(".s.PGSQL.{PORT}"));
    let started = Instant::now();
    while UnixStream::connect(&socket).is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "no socket");
        std::thread::sleep(Duration::from_millis(50));
    }
    Served {
        child,
        socket,
        _dir: dir,
    }
}

/// The server process's peak resident memory, in kB.
fn peak_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmHWM")
}

fn startup_packet(major: u16, minor: u16) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&major.to_be_bytes());
    body.extend_from_slice(&minor.to_be_bytes());
    body.extend_from_slice(b"user\0postgres\0database\0walden\0\0");
    let mut out = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// Everything the server sends until it closes the connection (or 10 s pass).
fn read_to_close(s: &mut UnixStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// A logged-in session speaking the simple query protocol.
struct Client {
    s: UnixStream,
}

/// One backend message: its type and body.
fn message(s: &mut UnixStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    s.read_exact(&mut head).ok()?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut body = vec![0u8; len.checked_sub(4)?];
    s.read_exact(&mut body).ok()?;
    Some((head[0], body))
}

/// An ErrorResponse's code and message fields.
fn error_fields(body: &[u8]) -> (String, String) {
    let (mut code, mut text) = (String::new(), String::new());
    for field in body.split(|&b| b == 0) {
        match field.first() {
            Some(b'C') => code = String::from_utf8_lossy(&field[1..]).into(),
            Some(b'M') => text = String::from_utf8_lossy(&field[1..]).into(),
            _ => {}
        }
    }
    (code, text)
}

impl Client {
    /// Logs in, or gives the error the server answered with.
    fn connect(socket: &Path) -> Result<Client, (String, String)> {
        let mut s = UnixStream::connect(socket).map_err(|e| ("io".into(), e.to_string()))?;
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        // A refused client may find the connection closed before it writes.
        if s.write_all(&startup_packet(3, 0)).is_err() {
            let reply = read_to_close(&mut s);
            return Err(match reply.first() {
                Some(b'E') => error_fields(&reply[5..]),
                _ => ("closed".into(), String::new()),
            });
        }
        loop {
            match message(&mut s) {
                Some((b'Z', _)) => return Ok(Client { s }),
                Some((b'E', body)) => return Err(error_fields(&body)),
                Some(_) => {}
                None => return Err(("closed".into(), String::new())),
            }
        }
    }

    /// Runs a query: the first column of its rows, or its error.
    fn query(&mut self, sql: &str) -> Result<Vec<String>, (String, String)> {
        let mut m = vec![b'Q'];
        m.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
        m.extend_from_slice(sql.as_bytes());
        m.push(0);
        self.s.write_all(&m).unwrap();
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            match message(&mut self.s).expect("the server answers") {
                (b'D', body) => {
                    let len = i32::from_be_bytes([body[2], body[3], body[4], body[5]]);
                    rows.push(if len < 0 {
                        String::new()
                    } else {
                        String::from_utf8_lossy(&body[6..6 + len as usize]).into()
                    });
                }
                (b'E', body) => error = Some(error_fields(&body)),
                (b'Z', _) => return error.map_or(Ok(rows), Err),
                _ => {}
            }
        }
    }
}

/// PostgreSQL's answers to a startup packet of another protocol: protocol 2's in its
/// own format, 4.0's in 3.0's (as PostgreSQL 15 sends them).
#[test]
fn another_protocol_is_told_in_postgres_words() {
    let server = serve(5, 60);
    let mut s = UnixStream::connect(&server.socket).unwrap();
    s.write_all(&startup_packet(2, 0)).unwrap();
    assert_eq!(
        read_to_close(&mut s),
        b"EFATAL:  unsupported frontend protocol 2.0: server supports 3.0 to 3.0\n\0"
    );
    let mut s = UnixStream::connect(&server.socket).unwrap();
    s.write_all(&startup_packet(4, 0)).unwrap();
    let reply = read_to_close(&mut s);
    assert_eq!(reply[0], b'E');
    let (code, text) = error_fields(&reply[5..]);
    assert_eq!(code, "0A000");
    assert_eq!(
        text,
        "unsupported frontend protocol 4.0: server supports 3.0 to 3.0"
    );
    let mut c = Client::connect(&server.socket).unwrap();
    assert_eq!(c.query("select 1").unwrap(), ["1"]);
}

/// Thousands of sockets that never send a byte: past twice max_connections they are
/// refused at once with 53300 (no thread each); the session logged in before goes on;
/// once the idle ones' startup timeout passes, new clients log in again; the process's
/// memory stays small.
#[test]
fn an_idle_socket_flood_leaves_the_server_serving() {
    let server = serve(5, 2);
    let pid = server.child.id();
    let mut before = Client::connect(&server.socket).unwrap();
    // As many sockets as this process may open, up to 20,000 (the flood).
    let limit = std::env::var("WALDEN_FLOOD_SOCKETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000usize);
    let mut idle = Vec::new();
    let mut waits = 0;
    while idle.len() < limit {
        match UnixStream::connect(&server.socket) {
            Ok(s) => idle.push(s),
            // The listen queue is full until the server accepts: wait for it.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && waits < 10_000 => {
                waits += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("socket {} refused by the kernel: {e}", idle.len()),
        }
    }
    // Those past the server's threads are answered and closed.
    let mut refused = 0;
    for s in idle.iter_mut().rev().take(100) {
        let reply = read_to_close(s);
        if reply.first() == Some(&b'E') {
            let (code, text) = error_fields(&reply[5..]);
            assert_eq!(
                (code.as_str(), text.as_str()),
                ("53300", "sorry, too many clients already")
            );
            refused += 1;
        }
    }
    assert_eq!(refused, 100, "the last sockets of the flood are refused");
    assert_eq!(before.query("select 40 + 2").unwrap(), ["42"]);
    // A new client waits for the idle sockets' startup timeout to pass.
    let started = Instant::now();
    let mut after = loop {
        match Client::connect(&server.socket) {
            Ok(c) => break c,
            Err((code, _)) if code == "53300" || code == "closed" => {
                assert!(started.elapsed() < Duration::from_secs(20), "never let in");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("{e:?}"),
        }
    };
    assert_eq!(after.query("select 'in'").unwrap(), ["in"]);
    let peak = peak_kb(pid);
    eprintln!("{limit} idle sockets: server peak {peak} kB");
    assert!(peak < 400_000, "peak {peak} kB");
    drop(idle);
}

/// A query of 70,000 columns is refused (PostgreSQL's 1,664) and the session goes on;
/// a value past 1 GB is refused before it is made.
#[test]
fn too_many_columns_and_too_large_a_value_are_refused() {
    let server = serve(5, 60);
    let mut c = Client::connect(&server.socket).unwrap();
    let columns = vec!["1"; 70_000].join(",");
    let e = c.query(&format!("select {columns}")).unwrap_err();
    assert_eq!(
        e,
        (
            "54011".into(),
            "target lists can have at most 1664 entries".into()
        )
    );
    assert_eq!(c.query("select 1").unwrap(), ["1"]);
    let e = c
        .query("select length(repeat('x',500000000) || repeat('y',500000000) || repeat('z',500000000))")
        .unwrap_err();
    assert_eq!(
        e,
        (
            "54000".into(),
            "invalid memory alloc request size 1500000004".into()
        )
    );
    assert_eq!(c.query("select 2").unwrap(), ["2"]);
    // The three 500 MB constants are folded when the statement is bound and copied
    // when evaluated; the 1 GB value made of two of them is the largest (measured
    // 2,960,596 kB). What matters: refused, not the process's memory exhausted.
    let peak = peak_kb(server.child.id());
    eprintln!("1.5 GB value refused: server peak {peak} kB");
    assert!(peak < 3_300_000, "peak {peak} kB");
}
