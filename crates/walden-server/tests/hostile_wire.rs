//! Random, truncated and malformed protocol messages after a valid startup: the server
//! never panics, answers or closes each such connection, and keeps serving a client
//! that speaks properly beside them.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use proptest::prelude::*;
use walden::{Database, Options};
use walden_server::{Server, ServerConfig};

/// Panics anywhere in the process (the server's threads included) since the hook went in.
fn panics() -> &'static AtomicUsize {
    static COUNT: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    COUNT.get_or_init(|| {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            c.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
        count
    })
}

fn startup() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&196608i32.to_be_bytes());
    body.extend_from_slice(b"user\0postgres\0database\0walden\0\0");
    let mut out = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// One message: a type byte, a length (true, or off by some amount), a body.
fn message() -> impl Strategy<Value = Vec<u8>> {
    let types = prop::sample::select(b"QPBDEHSCXdcfpF\0Z".to_vec());
    let bodies = prop_oneof![
        // Text-like bodies (queries, names) with and without their terminator.
        "[ -~]{0,40}".prop_map(|s| s.into_bytes()),
        "[ -~]{0,20}".prop_map(|s| {
            let mut b = s.into_bytes();
            b.push(0);
            b
        }),
        prop::collection::vec(any::<u8>(), 0..64),
        // Counts and lengths that lie: a Bind-like body with 0xffff parameters.
        Just(vec![0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0]),
        Just(vec![0, 0, 0, 1, 0, 1, 0x7f, 0xff, 0xff, 0xff]),
    ];
    let skew = prop_oneof![4 => Just(0i64), 1 => -8i64..8, 1 => Just(1i64 << 30)];
    (types, bodies, skew).prop_map(|(t, body, skew)| {
        let len = (body.len() as i64 + 4 + skew).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        let mut m = vec![t];
        m.extend_from_slice(&len.to_be_bytes());
        m.extend_from_slice(&body);
        m
    })
}

/// The server, on a Unix socket with trust (so the messages reach the protocol past
/// authentication): the socket's path and the database.
fn server() -> &'static (PathBuf, Database) {
    static SERVER: OnceLock<(PathBuf, Database)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir").keep();
        let db = Database::open_or_create(dir.join("db"), Options::default()).expect("db");
        let server = Server::start(
            db.clone(),
            ServerConfig {
                listen: None,
                socket_dir: Some(dir.clone()),
                trust_local: true,
                max_message_bytes: 1 << 20,
                ..ServerConfig::default()
            },
        )
        .expect("server");
        let socket = server.socket_path().expect("socket").to_path_buf();
        // The server lives as long as the test process.
        std::mem::forget(server);
        (socket, db)
    })
}

fn well_behaved(socket: &std::path::Path) {
    let dir = socket.parent().expect("the socket's directory");
    // Without a TCP listener the socket is named for port 5433.
    let mut c = postgres::Client::connect(
        &format!("host={} port=5433 user=postgres", dir.display()),
        postgres::NoTls,
    )
    .expect("a good client connects");
    let r = c.simple_query("select 20 + 22").expect("and is served");
    assert!(matches!(&r[1], postgres::SimpleQueryMessage::Row(row) if row.get(0) == Some("42")));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn hostile_messages_harm_no_one(messages in prop::collection::vec(message(), 1..8), cut in any::<prop::sample::Index>()) {
        let before = panics().load(Ordering::SeqCst);
        let (socket, _) = server();
        let mut s = UnixStream::connect(socket).expect("connect");
        s.set_read_timeout(Some(Duration::from_millis(300))).expect("timeout");
        let mut bytes = startup();
        for m in &messages {
            bytes.extend_from_slice(m);
        }
        // Sometimes the stream stops in the middle of a message.
        let keep = startup().len() + cut.index(bytes.len() - startup().len() + 1);
        let _ = s.write_all(&bytes[..keep]);
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
        drop(s);
        well_behaved(socket);
        prop_assert_eq!(panics().load(Ordering::SeqCst), before, "a panic in the server");
    }
}
