//! What one client can take from the `walden serve` binary: thousands of sockets that
//! never log in, a protocol other than 3.0, a query of 70,000 columns, a value past
//! PostgreSQL's 1 GB. What could go wrong: the process aborting (a thread per socket
//! until thread creation fails takes every session down), a column count wrapping at
//! 16 bits and desynchronising the protocol, a client left waiting with no message, or
//! memory without bound. Each case checks the server still serves a logged-in session
//! and measures the process's peak memory (VmHWM).

#![allow(clippy::unwrap_used)]

mod support;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use support::wire::{error_fields, peak_kb, read_to_close, serve, startup_packet, Client};

/// PostgreSQL's answers to a startup packet of another protocol: protocol 2's in its
/// own format, 4.0's in 3.0's (as PostgreSQL 15 sends them).
#[test]
fn another_protocol_is_told_in_postgres_words() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), 5, 60);
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
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), 5, 2);
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
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), 5, 60);
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

/// A 100 MB query of white space is refused before it is tokenized (sqlparser's token
/// per space would take about 18 GB), and the session goes on.
#[test]
fn a_huge_query_text_is_refused_before_parsing() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), 5, 60);
    let mut c = Client::connect(&server.socket).unwrap();
    let started = Instant::now();
    let e = c
        .query(&format!("select 1{}", " ".repeat(100_000_000)))
        .unwrap_err();
    assert_eq!(
        e,
        (
            "54001".into(),
            "statement too long to parse: more than 1000000 tokens".into()
        )
    );
    assert_eq!(c.query("select 3").unwrap(), ["3"]);
    let peak = peak_kb(server.child.id());
    eprintln!(
        "100 MB of white space refused in {:.2} s: server peak {peak} kB",
        started.elapsed().as_secs_f64()
    );
    assert!(peak < 1_000_000, "peak {peak} kB");
}
