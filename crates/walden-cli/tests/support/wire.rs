//! A `walden serve` child on a Unix socket, and a small client of the wire protocol
//! written out here (startup, simple query, ErrorResponse fields), for tests that send
//! what no driver would.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

pub const PORT: &str = "5433";

/// A running `walden serve`, killed when dropped.
pub struct Served {
    pub child: Child,
    pub socket: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `walden serve` of `dir/db` on a Unix socket in `dir` with trust, at most
/// `max_connections` sessions and `startup_timeout` seconds to log in.
pub fn serve(dir: &Path, max_connections: u32, startup_timeout: u32) -> Served {
    let child = super::walden()
        .arg("serve")
        .arg(dir.join("db"))
        .args(["--listen", "none", "--trust-local", "--buffer-pool", "16MB"])
        .arg("--socket-dir")
        .arg(dir)
        .args(["--max-connections", &max_connections.to_string()])
        .args(["--startup-timeout", &startup_timeout.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("walden serve starts");
    let socket = dir.join(format!(".s.PGSQL.{PORT}"));
    let started = Instant::now();
    while UnixStream::connect(&socket).is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "no socket");
        std::thread::sleep(Duration::from_millis(50));
    }
    Served { child, socket }
}

/// The server process's peak resident memory, in kB.
pub fn peak_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmHWM")
}

pub fn startup_packet(major: u16, minor: u16) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&major.to_be_bytes());
    body.extend_from_slice(&minor.to_be_bytes());
    body.extend_from_slice(b"user\0postgres\0database\0walden\0\0");
    let mut out = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// Everything the server sends until it closes the connection (or 10 s pass).
pub fn read_to_close(s: &mut UnixStream) -> Vec<u8> {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// A logged-in session speaking the simple query protocol.
pub struct Client {
    s: UnixStream,
}

/// One backend message: its type and body.
pub fn message(s: &mut UnixStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    s.read_exact(&mut head).ok()?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut body = vec![0u8; len.checked_sub(4)?];
    s.read_exact(&mut body).ok()?;
    Some((head[0], body))
}

/// An ErrorResponse's code and message fields.
pub fn error_fields(body: &[u8]) -> (String, String) {
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
    pub fn connect(socket: &Path) -> Result<Client, (String, String)> {
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

    /// Runs a query: the first column of its rows, or its error (`closed` when the
    /// connection ends first: the server was killed).
    pub fn query(&mut self, sql: &str) -> Result<Vec<String>, (String, String)> {
        let mut m = vec![b'Q'];
        m.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
        m.extend_from_slice(sql.as_bytes());
        m.push(0);
        if let Err(e) = self.s.write_all(&m) {
            return Err(("closed".into(), e.to_string()));
        }
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            let Some(msg) = message(&mut self.s) else {
                return Err(("closed".into(), String::new()));
            };
            match msg {
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
