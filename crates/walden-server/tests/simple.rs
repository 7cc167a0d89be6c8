//! The server through a real driver (the `postgres` crate, over tokio-postgres) and raw
//! bytes: the simple query protocol, errors, transactions, limits, shutdown and who is let
//! in (trust on the Unix socket only, SCRAM over TCP).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use walden::{Database, Options};
use walden_server::{Server, ServerConfig};

/// A server on a free loopback port and on a Unix socket in the temporary directory
/// (the database is in its `db` subdirectory).
fn start(config: ServerConfig) -> (tempfile::TempDir, Database, Server) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open_or_create(dir.path().join("db"), Options::default()).expect("database");
    let server = Server::start(
        db.clone(),
        ServerConfig {
            listen: Some("127.0.0.1:0".parse().expect("address")),
            socket_dir: Some(dir.path().to_path_buf()),
            ..config
        },
    )
    .expect("server starts");
    (dir, db, server)
}

/// A configuration that lets Unix-socket clients in without a password.
fn trusted() -> ServerConfig {
    ServerConfig {
        trust_local: true,
        ..ServerConfig::default()
    }
}

/// The connection string of the server's Unix socket, for `user`.
fn local_conninfo(server: &Server, user: &str) -> String {
    let socket = server.socket_path().expect("a socket");
    let dir = socket.parent().expect("its directory");
    let port = server.local_addr().expect("tcp").port();
    format!(
        "host={} port={port} user={user} dbname=walden",
        dir.display()
    )
}

/// A client of the Unix socket, as `postgres`.
fn connect(server: &Server) -> postgres::Client {
    postgres::Client::connect(&local_conninfo(server, "postgres"), postgres::NoTls)
        .expect("connects")
}

fn cells(msgs: &[postgres::SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    msgs.iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn simple_queries_errors_and_transactions() {
    let (_dir, db, server) = start(trusted());
    let mut c = connect(&server);
    c.batch_execute(
        "create table t (a int primary key, b text); insert into t values (1, 'x'), (2, null)",
    )
    .expect("batch");
    let rows = cells(
        &c.simple_query("select a, b, a > 1 from t order by a")
            .expect("select"),
    );
    assert_eq!(
        rows,
        vec![
            vec![Some("1".into()), Some("x".into()), Some("f".into())],
            vec![Some("2".into()), None, Some("t".into())],
        ]
    );
    // An error carries its SQLSTATE and position (counted from the query's start, past
    // the statement before it).
    let e = c
        .simple_query("select 1; select nosuch from t")
        .expect_err("fails");
    let db_error = e.as_db_error().expect("a server error");
    assert_eq!(db_error.code().code(), "42703");
    assert_eq!(
        db_error.position(),
        Some(&postgres::error::ErrorPosition::Original(18))
    );
    // A failed block refuses statements until ROLLBACK; the rows written in it are gone.
    c.batch_execute("begin; insert into t values (3, 'y')")
        .expect("begin");
    assert!(c.batch_execute("select 1/0").is_err());
    let e = c.batch_execute("select 1").expect_err("aborted block");
    assert_eq!(e.code().map(|c| c.code()), Some("25P02"));
    c.batch_execute("rollback").expect("rollback");
    let rows = cells(&c.simple_query("select count(*) from t").expect("count"));
    assert_eq!(rows, vec![vec![Some("2".into())]]);
    // A second connection sees committed rows, and a unique violation is 23505.
    let mut d = connect(&server);
    let e = d
        .batch_execute("insert into t values (1, 'dup')")
        .expect_err("duplicate");
    assert_eq!(e.code().map(|c| c.code()), Some("23505"));
    drop((c, d));
    server.shutdown();
    db.close().expect("close");
}

#[test]
fn too_many_connections_are_refused_with_53300() {
    let (_dir, _db, server) = start(ServerConfig {
        max_connections: 2,
        ..trusted()
    });
    let a = connect(&server);
    let _b = connect(&server);
    let e = postgres::Client::connect(&local_conninfo(&server, "postgres"), postgres::NoTls)
        .err()
        .expect("refused");
    assert_eq!(e.code().map(|c| c.code()), Some("53300"));
    // A place frees when a client leaves.
    drop(a);
    let mut ok = None;
    for _ in 0..50 {
        if let Ok(c) =
            postgres::Client::connect(&local_conninfo(&server, "postgres"), postgres::NoTls)
        {
            ok = Some(c);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ok.is_some(), "a connection after one left");
    drop(ok);
    server.shutdown();
}

/// A protocol 3.0 startup packet naming `user`.
fn startup_packet(user: &str) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&196608i32.to_be_bytes());
    body.extend_from_slice(format!("user\0{user}\0\0").as_bytes());
    let mut startup = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    startup.extend_from_slice(&body);
    startup
}

/// A startup packet on the (trusted) Unix socket, then `tail` raw.
fn raw_session(server: &Server, tail: &[u8]) -> Vec<u8> {
    let mut s = UnixStream::connect(server.socket_path().expect("socket")).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let startup = startup_packet("postgres");
    s.write_all(&startup).expect("startup");
    s.write_all(tail).expect("tail");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

#[test]
fn malformed_and_oversized_messages_close_only_their_connection() {
    let (_dir, _db, server) = start(ServerConfig {
        max_message_bytes: 1 << 20,
        ..trusted()
    });
    let port = server.local_addr().expect("tcp").port();
    let mut c = connect(&server);
    // An unknown message type, a length below 4, and a length past the limit.
    for tail in [
        b"Z\0\0\0\x04".to_vec(),
        b"Q\0\0\0\x02".to_vec(),
        b"Q\x7f\0\0\0".to_vec(),
    ] {
        let out = raw_session(&server, &tail);
        // The server answered the startup (R ... Z) and then a FATAL 08P01.
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains("FATAL") && text.contains("08P01"),
            "{tail:?}: {text}"
        );
    }
    // A query with no terminator inside its length.
    let mut q = b"Q".to_vec();
    q.extend_from_slice(&6i32.to_be_bytes());
    q.extend_from_slice(b"se");
    let text = String::from_utf8_lossy(&raw_session(&server, &q)).into_owned();
    assert!(text.contains("08P01"), "{text}");
    // Garbage instead of a startup packet.
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let _ = s.write_all(&[0xff; 64]);
    drop(s);
    // The first connection was not harmed.
    let rows = cells(&c.simple_query("select 41 + 1").expect("still served"));
    assert_eq!(rows, vec![vec![Some("42".into())]]);
    server.shutdown();
}

#[test]
fn shutdown_ends_sessions_and_rolls_back() {
    let (dir, db, server) = start(trusted());
    let mut c = connect(&server);
    c.batch_execute("create table t (a int); begin; insert into t values (1)")
        .expect("open block");
    server.shutdown();
    assert!(c.batch_execute("select 1").is_err(), "the session ended");
    db.close().expect("close");
    let db = Database::open(dir.path().join("db"), Options::default()).expect("reopen");
    let mut s = walden_sql::Session::new(&db);
    let r = s.execute_one("select count(*) from t").expect("count");
    assert_eq!(r.rows, vec![vec![walden::Value::Int8(0)]]);
}

#[test]
fn a_cancel_request_stops_the_running_statement() {
    let (_dir, _db, server) = start(trusted());
    let mut c = connect(&server);
    let token = c.cancel_token();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        token
            .cancel_query(postgres::NoTls)
            .expect("cancel request sent");
    });
    let e = c
        .simple_query("select count(*) from generate_series(1, 2000000000)")
        .expect_err("canceled");
    assert_eq!(e.code().map(|c| c.code()), Some("57014"));
    canceller.join().expect("thread");
    // The connection goes on; a wrong key cancels nothing.
    let rows = cells(&c.simple_query("select 1").expect("after cancel"));
    assert_eq!(rows, vec![vec![Some("1".into())]]);
    // statement_timeout, set by SET, ends a statement with its own message.
    c.batch_execute("set statement_timeout = '100ms'")
        .expect("set");
    let e = c
        .simple_query("select count(*) from generate_series(1, 2000000000)")
        .expect_err("timed out");
    let db_error = e.as_db_error().expect("server error");
    assert_eq!(
        (db_error.code().code(), db_error.message()),
        ("57014", "canceling statement due to statement timeout")
    );
    server.shutdown();
}

#[test]
fn startup_parameters_and_parameter_status() {
    let (_dir, _db, server) = start(trusted());
    let conninfo = local_conninfo(&server, "postgres");
    let mut c = postgres::Client::connect(
        &format!("{conninfo} application_name=walden-test options='-c statement_timeout=5s'"),
        postgres::NoTls,
    )
    .expect("connects");
    let rows = cells(
        &c.simple_query("show application_name; show statement_timeout; show server_version")
            .expect("show"),
    );
    assert_eq!(
        rows,
        vec![
            vec![Some("walden-test".into())],
            vec![Some("5s".into())],
            vec![Some("15.0".into())]
        ]
    );
    // A startup value Walden cannot honour ends the connection with its error.
    let e = postgres::Client::connect(
        &format!("{conninfo} options='-c DateStyle=German'"),
        postgres::NoTls,
    )
    .err()
    .expect("refused");
    assert_eq!(e.code().map(|c| c.code()), Some("0A000"));
    server.shutdown();
}

#[test]
fn scram_authentication_against_roles_in_the_database() {
    let (_dir, db, server) = start(ServerConfig::default());
    let mut s = walden_sql::Session::new(&db);
    s.execute("create role alice login password 'wonder land'; create role bob password 'x'")
        .expect("roles");
    let port = server.local_addr().expect("tcp").port();
    let login = |user: &str, password: &str| {
        postgres::Client::connect(
            &format!("host=127.0.0.1 port={port} user={user} password='{password}' dbname=walden"),
            postgres::NoTls,
        )
    };
    let mut c = login("alice", "wonder land").expect("the right password");
    let rows = cells(&c.simple_query("select 1").expect("served"));
    assert_eq!(rows, vec![vec![Some("1".into())]]);
    // A wrong password and a user who does not exist fail alike; a role without
    // LOGIN may not log in whatever its password.
    for (user, password, code) in [
        ("alice", "wrong", "28P01"),
        ("mallory", "anything", "28P01"),
        ("bob", "x", "28000"),
    ] {
        let e = login(user, password)
            .err()
            .unwrap_or_else(|| panic!("{user} got in"));
        assert_eq!(e.code().map(|c| c.code()), Some(code), "{user}");
    }
    // Without a password the client cannot answer the exchange.
    let e = postgres::Client::connect(
        &format!("host=127.0.0.1 port={port} user=alice"),
        postgres::NoTls,
    )
    .err()
    .expect("no password");
    assert!(format!("{e:?}").contains("password"), "{e:?}");
    // ALTER ROLE's new password is the one asked for from then on.
    s.execute("alter role alice password 'new'").expect("alter");
    assert!(login("alice", "wonder land").is_err());
    drop(login("alice", "new").expect("new password"));
    server.shutdown();
}

/// The first message a server sends a TCP client whose startup packet names `user`:
/// its type byte and, for an Authentication message, its code (0 Ok, 10 SASL).
fn first_answer_over_tcp(port: u16, user: &str) -> (u8, i32) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let startup = startup_packet(user);
    s.write_all(&startup).expect("startup");
    let mut head = [0u8; 9];
    s.read_exact(&mut head).expect("an answer");
    let code = i32::from_be_bytes([head[5], head[6], head[7], head[8]]);
    (head[0], code)
}

#[test]
fn trust_is_for_the_unix_socket_only() {
    let (_dir, _db, server) = start(trusted());
    let port = server.local_addr().expect("tcp").port();
    // Over the socket, `postgres` gets in without a password; a user with no role
    // still does not (28000), trust or not.
    let mut c = connect(&server);
    let rows = cells(&c.simple_query("select current_user").expect("served"));
    assert_eq!(rows, vec![vec![Some("postgres".into())]]);
    let e = postgres::Client::connect(&local_conninfo(&server, "mallory"), postgres::NoTls)
        .err()
        .expect("no such role");
    let db_error = e.as_db_error().expect("a server error");
    assert_eq!(
        (db_error.code().code(), db_error.message()),
        ("28000", "role \"mallory\" does not exist")
    );
    // Over TCP the same user is asked for a password (AuthenticationSASL), never let
    // straight in (AuthenticationOk).
    assert_eq!(first_answer_over_tcp(port, "postgres"), (b'R', 10));
    // A driver without a password cannot answer, and says so.
    let e = postgres::Client::connect(
        &format!("host=127.0.0.1 port={port} user=postgres dbname=walden"),
        postgres::NoTls,
    )
    .err()
    .expect("no password, no session");
    assert!(format!("{e:?}").contains("password missing"), "{e:?}");
    // An empty password (the role has none) fails as a wrong one does, 28P01.
    let e = postgres::Config::new()
        .host("127.0.0.1")
        .port(port)
        .user("postgres")
        .password("")
        .connect(postgres::NoTls)
        .err()
        .expect("an empty password, no session");
    let db_error = e.as_db_error().expect("a server error");
    assert_eq!(
        (db_error.code().code(), db_error.message()),
        (
            "28P01",
            "password authentication failed for user \"postgres\""
        )
    );
    server.shutdown();
}

/// A SASLInitialResponse whose length says more than it carries (pgwire's decoder reads
/// past its end and panics) is refused before authentication, and costs no connection
/// slot: more such attempts than `max_connections`, then a client still gets in.
#[test]
fn a_lying_sasl_initial_response_is_refused_and_frees_its_slot() {
    let (_dir, _db, server) = start(ServerConfig {
        max_connections: 2,
        ..trusted()
    });
    let port = server.local_addr().expect("tcp").port();
    for _ in 0..4 {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let startup = startup_packet("postgres");
        s.write_all(&startup).expect("startup");
        let mut sasl = b"SCRAM-SHA-256\0".to_vec();
        sasl.extend_from_slice(&1000i32.to_be_bytes());
        sasl.extend_from_slice(b"n,,");
        let msg = raw_message(b'p', &sasl);
        s.write_all(&msg).expect("sasl");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("malformed SASLInitialResponse"), "{text}");
    }
    let mut c = connect(&server);
    let rows = cells(&c.simple_query("select 1").expect("served"));
    assert_eq!(rows, vec![vec![Some("1".into())]]);
    server.shutdown();
}

/// A TCP client's startup packet, then what the server says first (AuthenticationSASL).
fn started_over_tcp(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let startup = startup_packet("postgres");
    s.write_all(&startup).expect("startup");
    let mut head = [0u8; 5];
    s.read_exact(&mut head).expect("an answer");
    let mut rest = vec![0u8; i32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4];
    s.read_exact(&mut rest).expect("its body");
    assert_eq!(head[0], b'R', "asked to authenticate");
    s
}

/// Before authentication a client gets little: its time (startup_timeout) runs out even
/// while it trickles bytes, and a message past 65,535 bytes is refused on its length
/// word alone, though max_message_bytes is far larger.
#[test]
fn an_unauthenticated_client_is_limited_in_time_and_message_size() {
    let (_dir, _db, server) = start(ServerConfig {
        startup_timeout: Duration::from_secs(1),
        max_connections: 1,
        ..trusted()
    });
    let port = server.local_addr().expect("tcp").port();
    // One byte of a SASLInitialResponse every 100 ms: at most 200 of them (20 s) before
    // the message would be whole; the server hangs up long before.
    let mut s = started_over_tcp(port);
    let mut sasl = b"SCRAM-SHA-256\0".to_vec();
    sasl.extend_from_slice(&200i32.to_be_bytes());
    sasl.extend_from_slice(&[b'x'; 200]);
    let msg = raw_message(b'p', &sasl);
    let started = std::time::Instant::now();
    let mut sent = 0;
    for b in &msg {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        sent < msg.len(),
        "the whole trickled message was taken ({:?})",
        started.elapsed()
    );
    // A length word past the pre-authentication limit: closed with a protocol error.
    let mut s = started_over_tcp(port);
    let mut head = b"p".to_vec();
    head.extend_from_slice(&100_000i32.to_be_bytes());
    s.write_all(&head).expect("length word");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("08P01"), "{text}");
    // Neither kept the one connection slot: a client gets in.
    let mut c = connect(&server);
    let rows = cells(&c.simple_query("select 1").expect("served"));
    assert_eq!(rows, vec![vec![Some("1".into())]]);
    server.shutdown();
}

/// A raw message of type `kind` carrying `body`.
fn raw_message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// A query or statement that is not UTF-8 fails with 22021 (as in PostgreSQL), instead of
/// running with U+FFFD in place of its bytes; the session goes on, and a transaction
/// block it was in is aborted.
#[test]
fn a_query_that_is_not_utf8_fails_with_22021() {
    let (_dir, _db, server) = start(trusted());
    let mut c = connect(&server);
    c.batch_execute("create table t (v text)").expect("table");
    let mut tail = Vec::new();
    // Simple query: BEGIN, a bad INSERT, COMMIT (which rolls back), then a good one.
    tail.extend(raw_message(b'Q', b"begin\0"));
    tail.extend(raw_message(b'Q', b"insert into t values ('a\xffb')\0"));
    tail.extend(raw_message(b'Q', b"commit\0"));
    // Extended query: a Parse whose text is not UTF-8, then what follows up to Sync is
    // skipped.
    tail.extend(raw_message(
        b'P',
        b"\0insert into t values ('\xc3\x28')\0\0\0",
    ));
    tail.extend(raw_message(b'B', b"\0\0\0\0\0\0\0\0"));
    tail.extend(raw_message(b'E', b"\0\0\0\0\0"));
    tail.extend(raw_message(b'S', b""));
    tail.extend(raw_message(b'Q', b"insert into t values ('ok')\0"));
    tail.extend(raw_message(b'X', b""));
    let out = raw_session(&server, &tail);
    let text = String::from_utf8_lossy(&out);
    assert_eq!(text.matches("22021").count(), 2, "{text}");
    assert!(
        text.contains("invalid byte sequence for encoding \"UTF8\": 0xff"),
        "{text}"
    );
    assert!(text.contains("0xc3"), "{text}");
    assert!(
        text.contains("ROLLBACK"),
        "COMMIT of the aborted block: {text}"
    );
    assert!(text.contains("INSERT 0 1"), "{text}");
    let rows = cells(&c.simple_query("select v from t").expect("served"));
    assert_eq!(rows, vec![vec![Some("ok".into())]]);
    server.shutdown();
}

/// The messages of a backend's answer, as (type, body).
fn messages(mut out: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut all = Vec::new();
    while out.len() >= 5 {
        let kind = out[0];
        let len = i32::from_be_bytes([out[1], out[2], out[3], out[4]]) as usize;
        let Some(body) = out.get(5..1 + len) else {
            break;
        };
        all.push((kind, body.to_vec()));
        out = &out[1 + len..];
    }
    all
}

/// A RowDescription's format codes.
fn formats(body: &[u8]) -> Vec<i16> {
    let count = i16::from_be_bytes([body[0], body[1]]) as usize;
    let mut at = 2;
    let mut out = Vec::new();
    for _ in 0..count {
        at += body[at..].iter().position(|&b| b == 0).expect("name") + 1;
        at += 4 + 2 + 4 + 2 + 4;
        out.push(i16::from_be_bytes([body[at], body[at + 1]]));
        at += 2;
    }
    out
}

/// A DataRow's cells (None for NULL).
fn data_cells(body: &[u8]) -> Vec<Option<Vec<u8>>> {
    let count = i16::from_be_bytes([body[0], body[1]]) as usize;
    let mut at = 2;
    let mut out = Vec::new();
    for _ in 0..count {
        let len = i32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
        at += 4;
        if len < 0 {
            out.push(None);
        } else {
            out.push(Some(body[at..at + len as usize].to_vec()));
            at += len as usize;
        }
    }
    out
}

/// FETCH from a cursor declared BINARY answers a simple Query in binary (every
/// column's format 1, PostgreSQL's send forms), as PostgreSQL's exec_simple_query does;
/// MOVE and a plain cursor's FETCH stay text, and an extended query's Bind chooses the
/// formats itself (none given: text) whatever the cursor.
#[test]
fn a_binary_cursor_fetches_binary_rows_in_the_simple_protocol() {
    let (_dir, _db, server) = start(trusted());
    let mut tail = Vec::new();
    tail.extend(raw_message(
        b'Q',
        b"begin; declare c binary cursor for select 7::int4 as a, 'h\xc3\xa9'::text as b, null::int8 as n, 1.5::float8 as f from generate_series(1, 3); declare p cursor for select 7::int4; fetch 1 from c; move 1 in c; fetch 1 from p\0",
    ));
    // Extended: FETCH of the binary cursor's last row, Bind giving no result formats.
    tail.extend(raw_message(b'P', b"\0fetch 1 from c\0\0\0"));
    tail.extend(raw_message(b'B', b"\0\0\0\0\0\0\0\0"));
    tail.extend(raw_message(b'D', b"P\0"));
    tail.extend(raw_message(b'E', b"\0\0\0\0\0"));
    tail.extend(raw_message(b'S', b""));
    tail.extend(raw_message(b'Q', b"commit\0"));
    tail.extend(raw_message(b'X', b""));
    let out = raw_session(&server, &tail);
    let all = messages(&out);
    let errors: Vec<String> = all
        .iter()
        .filter(|(k, _)| *k == b'E')
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let descriptions: Vec<Vec<i16>> = all
        .iter()
        .filter(|(k, _)| *k == b'T')
        .map(|(_, b)| formats(b))
        .collect();
    assert_eq!(
        descriptions,
        vec![vec![1, 1, 1, 1], vec![0], vec![0, 0, 0, 0]],
        "binary FETCH, plain FETCH, extended FETCH"
    );
    let rows: Vec<Vec<Option<Vec<u8>>>> = all
        .iter()
        .filter(|(k, _)| *k == b'D')
        .map(|(_, b)| data_cells(b))
        .collect();
    let binary = vec![
        Some(7i32.to_be_bytes().to_vec()),
        Some("hé".as_bytes().to_vec()),
        None,
        Some(1.5f64.to_be_bytes().to_vec()),
    ];
    let text = vec![
        Some(b"7".to_vec()),
        Some("hé".as_bytes().to_vec()),
        None,
        Some(b"1.5".to_vec()),
    ];
    assert_eq!(rows, vec![binary, vec![Some(b"7".to_vec())], text]);
    let tags: Vec<String> = all
        .iter()
        .filter(|(k, _)| *k == b'C')
        .map(|(_, b)| String::from_utf8_lossy(&b[..b.len() - 1]).into_owned())
        .collect();
    assert_eq!(
        tags,
        [
            "BEGIN",
            "DECLARE CURSOR",
            "DECLARE CURSOR",
            "FETCH 1",
            "MOVE 1",
            "FETCH 1",
            "FETCH 1",
            "COMMIT"
        ]
    );
    server.shutdown();
}
