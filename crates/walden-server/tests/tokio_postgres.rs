//! The server on a free loopback port driven by tokio-postgres, the async driver, over
//! TCP with SCRAM: what could go wrong is any part of the protocol a real driver leans on
//! — typed parameters and binary results, transactions, errors that must leave the
//! connection usable, COPY both ways, cancel, and concurrent sessions whose transfers
//! must neither lose nor invent money.

use std::pin::pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, TryStreamExt};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};
use walden::{Database, Options};
use walden_server::Server;

mod support;

const USER: &str = "app";
const PASSWORD: &str = "tokio pass";

/// A database with a LOGIN role `app` (TCP clients always authenticate), served on a
/// free loopback port.
fn start() -> (tempfile::TempDir, Database, Server) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open_or_create(dir.path(), Options::default()).expect("database");
    walden_sql::Session::new(&db)
        .execute(&format!(
            // PostgreSQL 15's public schema: CREATE is its owner's until granted.
            "create role {USER} login password '{PASSWORD}'; grant create on schema public to {USER}"
        ))
        .expect("role");
    let server = support::loopback_server(&db);
    (dir, db, server)
}

/// A client over TCP, its connection driven by a task of its own.
async fn connect(server: &Server) -> Client {
    let port = server.local_addr().expect("tcp").port();
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={port} user={USER} password='{PASSWORD}' dbname=walden"),
        NoTls,
    )
    .await
    .expect("connects");
    tokio::spawn(async move {
        // The connection ends with an error when the server shuts down under it;
        // the test's own statements report what matters.
        let _ = connection.await;
    });
    client
}

/// The rows of a simple query, each as its text cells.
fn cells(messages: &[SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

/// The SQLSTATE of a failed call (None when it is not the server's error).
fn sqlstate<T: std::fmt::Debug>(result: Result<T, tokio_postgres::Error>) -> Option<SqlState> {
    result.expect_err("the statement fails").code().cloned()
}

#[tokio::test]
async fn simple_query_and_typed_parameters() {
    let (_dir, db, server) = start();
    let client = connect(&server).await;
    let messages = client
        .simple_query(
            "create table kinds (id int primary key, big bigint, t text, u uuid, b bool, f float8);
             insert into kinds (id, t) values (0, 'simple');
             select id, t, big from kinds",
        )
        .await
        .expect("simple query");
    assert_eq!(
        cells(&messages),
        vec![vec![Some("0".into()), Some("simple".into()), None]]
    );
    assert!(
        messages
            .iter()
            .any(|m| matches!(m, SimpleQueryMessage::CommandComplete(1))),
        "{messages:?}"
    );
    // A statement prepared with its parameters' types, run for several rows: values at
    // their types' ends, and every column NULL (Option::None) in one row.
    let insert = client
        .prepare_typed(
            "insert into kinds values ($1, $2, $3, $4, $5, $6)",
            &[
                Type::INT4,
                Type::INT8,
                Type::TEXT,
                Type::UUID,
                Type::BOOL,
                Type::FLOAT8,
            ],
        )
        .await
        .expect("prepare");
    let u = uuid::Uuid::from_u128(0x1234_5678_1234_5678_1234_5678_1234_5678);
    type Kinds = (
        i32,
        Option<i64>,
        Option<String>,
        Option<uuid::Uuid>,
        Option<bool>,
        Option<f64>,
    );
    let rows: Vec<Kinds> = vec![
        (
            1,
            Some(1 << 40),
            Some("héllo, wörld".into()),
            Some(u),
            Some(true),
            Some(1.5),
        ),
        (
            i32::MIN,
            Some(i64::MIN),
            Some(String::new()),
            Some(uuid::Uuid::nil()),
            Some(false),
            Some(-0.1),
        ),
        (
            i32::MAX,
            Some(i64::MAX),
            Some("tab\tnewline\nquote'".into()),
            Some(uuid::Uuid::max()),
            Some(true),
            Some(1e300),
        ),
        (4, None, None, None, None, None),
    ];
    for (id, big, t, u, b, f) in &rows {
        let n = client
            .execute(&insert, &[id, big, t, u, b, f])
            .await
            .expect("insert");
        assert_eq!(n, 1);
    }
    // Read back natively (binary results), through another prepared statement with a
    // parameter whose type the server infers.
    let select = client
        .prepare("select id, big, t, u, b, f from kinds where id <> $1 order by id")
        .await
        .expect("prepare select");
    assert_eq!(select.params(), &[Type::INT4]);
    let got: Vec<Kinds> = client
        .query(&select, &[&0i32])
        .await
        .expect("select")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
        .collect();
    let mut expected = rows.clone();
    expected.sort_by_key(|r| r.0);
    assert_eq!(got, expected);
    // Parameters in a WHERE clause, each type compared with what was stored.
    let one = client
        .query_one(
            "select id from kinds where big = $1 and t = $2 and u = $3 and b = $4 and f = $5",
            &[&(1i64 << 40), &"héllo, wörld", &u, &true, &1.5f64],
        )
        .await
        .expect("one row");
    assert_eq!(one.get::<_, i32>(0), 1);
    // The unnamed statement, parsed, bound and run in one round trip with the types
    // given by the client.
    let row = client
        .query_typed_one(
            "select $1 || '!', $2 + 1, $3",
            &[
                (&"typed", Type::TEXT),
                (&41i64, Type::INT8),
                (&None::<uuid::Uuid>, Type::UUID),
            ],
        )
        .await
        .expect("query_typed");
    assert_eq!(
        (row.get(0), row.get(1), row.get(2)),
        ("typed!".to_string(), 42i64, None::<uuid::Uuid>)
    );
    // A NULL parameter compares as NULL: no row.
    let none = client
        .query("select id from kinds where big = $1", &[&None::<i64>])
        .await
        .expect("null parameter");
    assert!(none.is_empty());
    let nulls: i64 = client
        .query_one("select count(*) from kinds where t is null", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(nulls, 1);
    // The same prepared statement run again with other values.
    for id in 10..20i32 {
        client
            .execute(
                &insert,
                &[
                    &id,
                    &i64::from(id),
                    &None::<String>,
                    &None::<uuid::Uuid>,
                    &None::<bool>,
                    &None::<f64>,
                ],
            )
            .await
            .expect("insert again");
    }
    // sum(bigint) is numeric, as in PostgreSQL; the cast reads it back as i64.
    let sum: i64 = client
        .query_one(
            "select sum(big)::bigint from kinds where id between $1 and $2",
            &[&10i32, &19i32],
        )
        .await
        .expect("sum")
        .get(0);
    assert_eq!(sum, (10..20).sum::<i64>());
    drop(client);
    server.shutdown();
    db.close().expect("close");
}

#[tokio::test]
async fn transactions_commit_and_roll_back() {
    let (_dir, _db, server) = start();
    let mut client = connect(&server).await;
    client
        .batch_execute("create table ledger (id int primary key, note text)")
        .await
        .expect("create");
    let other = connect(&server).await;
    let tx = client.transaction().await.expect("begin");
    tx.execute("insert into ledger values ($1, $2)", &[&1i32, &"kept"])
        .await
        .expect("insert");
    // Not committed yet: another session does not see it.
    let seen: i64 = other
        .query_one("select count(*) from ledger", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(seen, 0);
    tx.commit().await.expect("commit");
    let tx = client.transaction().await.expect("begin");
    tx.execute("insert into ledger values ($1, $2)", &[&2i32, &"dropped"])
        .await
        .expect("insert");
    tx.execute("update ledger set note = 'changed' where id = 1", &[])
        .await
        .expect("update");
    tx.rollback().await.expect("rollback");
    // A failed statement inside a transaction: the block refuses the next (25P02)
    // until it ends, and it rolls back.
    let tx = client.transaction().await.expect("begin");
    tx.execute(
        "insert into ledger values ($1, $2)",
        &[&3i32, &"in failed block"],
    )
    .await
    .expect("insert");
    assert_eq!(
        sqlstate(
            tx.execute("insert into ledger values (1, 'dup')", &[])
                .await
        ),
        Some(SqlState::UNIQUE_VIOLATION)
    );
    assert_eq!(
        sqlstate(tx.query("select 1", &[]).await),
        Some(SqlState::IN_FAILED_SQL_TRANSACTION)
    );
    // COMMIT of a failed block ends it as ROLLBACK does, without an error.
    tx.commit().await.expect("commit of a failed block");
    let rows: Vec<(i32, String)> = other
        .query("select id, note from ledger order by id", &[])
        .await
        .expect("select")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(rows, vec![(1, "kept".to_string())]);
    server.shutdown();
}

#[tokio::test]
async fn errors_carry_their_sqlstate_and_leave_the_connection_usable() {
    let (_dir, _db, server) = start();
    let client = connect(&server).await;
    client
        .batch_execute("create table t (a int primary key); insert into t values (1)")
        .await
        .expect("setup");
    let cases: Vec<(Result<u64, tokio_postgres::Error>, SqlState)> = vec![
        (
            client.execute("insert into t values ($1)", &[&1i32]).await,
            SqlState::UNIQUE_VIOLATION,
        ),
        (
            client.execute("select * from nosuch", &[]).await,
            SqlState::UNDEFINED_TABLE,
        ),
        (client.execute("selec 1", &[]).await, SqlState::SYNTAX_ERROR),
        (
            client
                .execute("select a from t where a = 1 / $1", &[&0i32])
                .await,
            SqlState::DIVISION_BY_ZERO,
        ),
        (
            client.execute("select nosuch from t", &[]).await,
            SqlState::UNDEFINED_COLUMN,
        ),
    ];
    for (i, (result, code)) in cases.into_iter().enumerate() {
        assert_eq!(sqlstate(result), Some(code), "case {i}");
        // After each error the connection goes on, with both protocols.
        let n: i64 = client
            .query_one("select count(*) from t", &[])
            .await
            .expect("extended query after an error")
            .get(0);
        assert_eq!(n, 1);
        let rows = cells(&client.simple_query("select 1").await.expect("simple"));
        assert_eq!(rows, vec![vec![Some("1".into())]]);
    }
    // The same through the simple protocol: the error's position and the rest of the
    // script not run.
    let e = client
        .simple_query("insert into t values (2); select * from nosuch; insert into t values (3)")
        .await
        .expect_err("fails");
    let db_error = e.as_db_error().expect("a server error");
    assert_eq!(db_error.code(), &SqlState::UNDEFINED_TABLE);
    let rows = cells(
        &client
            .simple_query("select a from t order by a")
            .await
            .expect("select"),
    );
    assert_eq!(rows, vec![vec![Some("1".into())], vec![Some("2".into())]]);
    server.shutdown();
}

#[tokio::test]
async fn copy_in_and_out_round_trip() {
    let (_dir, _db, server) = start();
    let client = connect(&server).await;
    client
        .batch_execute("create table copied (a int, b text, c float8)")
        .await
        .expect("create");
    // COPY FROM STDIN in chunks that cut rows (and an escape) in the middle: the
    // server must join them.
    let mut text = String::new();
    for i in 0..2000 {
        if i % 7 == 0 {
            text.push_str(&format!("{i}\t\\N\t{i}.5\n"));
        } else {
            text.push_str(&format!("{i}\trow\\t{i}\\\\x\t-{i}\n"));
        }
    }
    let mut sink = pin!(client
        .copy_in::<_, Bytes>("copy copied (a, b, c) from stdin")
        .await
        .expect("copy in starts"));
    for chunk in text.as_bytes().chunks(997) {
        sink.send(Bytes::copy_from_slice(chunk))
            .await
            .expect("copy data");
    }
    let n = sink.as_mut().finish().await.expect("copy in ends");
    assert_eq!(n, 2000);
    let (count, nulls, tab): (i64, i64, String) = {
        let r = client
            .query_one(
                "select count(*), count(*) - count(b), (select b from copied where a = 1) from copied",
                &[],
            )
            .await
            .expect("check");
        (r.get(0), r.get(1), r.get(2))
    };
    assert_eq!((count, nulls, tab.as_str()), (2000, 286, "row\t1\\x"));
    // COPY TO STDOUT gives back the bytes that went in.
    let stream = pin!(client
        .copy_out("copy (select a, b, c from copied order by a) to stdout")
        .await
        .expect("copy out starts"));
    let chunks: Vec<Bytes> = stream.try_collect().await.expect("copy out");
    let out: Vec<u8> = chunks.concat();
    assert_eq!(String::from_utf8(out).expect("utf-8"), text);
    // CSV out, with a header.
    let stream = pin!(client
        .copy_out("copy (select a, b from copied where a in (0, 1) order by a) to stdout with (format csv, header)")
        .await
        .expect("csv out"));
    let csv: Vec<Bytes> = stream.try_collect().await.expect("csv");
    assert_eq!(csv.concat(), b"a,b\n0,\n1,row\t1\\x\n");
    // A COPY that fails on a bad row reports its SQLSTATE; nothing of it is kept, and
    // the connection goes on.
    let mut sink = pin!(client
        .copy_in::<_, Bytes>("copy copied (a, b, c) from stdin")
        .await
        .expect("copy in starts"));
    sink.send(Bytes::from_static(b"5000\tok\t1\nnot a number\tx\t1\n"))
        .await
        .expect("copy data");
    let e = sink.as_mut().finish().await.expect_err("a bad row");
    assert_eq!(e.code(), Some(&SqlState::INVALID_TEXT_REPRESENTATION));
    let n: i64 = client
        .query_one("select count(*) from copied", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(n, 2000);
    server.shutdown();
}

#[tokio::test]
async fn a_cancel_request_stops_a_long_statement() {
    let (_dir, _db, server) = start();
    let client = connect(&server).await;
    let token = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token
            .cancel_query(NoTls)
            .await
            .expect("cancel request sent");
    });
    let started = Instant::now();
    let e = client
        .query_one("select count(*) from generate_series(1, 2000000000)", &[])
        .await
        .expect_err("canceled");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the cancel took {:?}",
        started.elapsed()
    );
    canceller.await.expect("canceller");
    // The same through the simple protocol, and a cross join.
    let token = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token
            .cancel_query(NoTls)
            .await
            .expect("cancel request sent");
    });
    let e = client
        .simple_query(
            "select count(*) from generate_series(1, 100000) a, generate_series(1, 100000) b",
        )
        .await
        .expect_err("canceled");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    canceller.await.expect("canceller");
    // The connection goes on.
    let n: i32 = client
        .query_one("select 41 + $1", &[&1i32])
        .await
        .expect("after the cancel")
        .get(0);
    assert_eq!(n, 42);
    server.shutdown();
}

#[tokio::test]
async fn concurrent_sessions_keep_their_own_state() {
    let (_dir, _db, server) = start();
    let setup = connect(&server).await;
    setup
        .batch_execute("create table seen (session int, n int, primary key (session, n))")
        .await
        .expect("create");
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(connect(&server).await);
    }
    // Each session has its own settings and its own open transaction, at once.
    let work = clients.iter().enumerate().map(|(i, c)| async move {
        let i = i as i32;
        c.batch_execute(&format!("set application_name = 'session {i}'; begin"))
            .await
            .expect("begin");
        for n in 0..50i32 {
            c.execute("insert into seen values ($1, $2)", &[&i, &n])
                .await
                .expect("insert");
        }
        // Its own rows are visible to it before commit, nobody else's uncommitted ones.
        let mine: i64 = c
            .query_one("select count(*) from seen where session = $1", &[&i])
            .await
            .expect("count")
            .get(0);
        assert_eq!(mine, 50);
        let name = cells(&c.simple_query("show application_name").await.expect("show"));
        assert_eq!(name, vec![vec![Some(format!("session {i}"))]]);
        c.batch_execute("commit").await.expect("commit");
    });
    futures_util::future::join_all(work).await;
    let per_session: Vec<(i32, i64)> = setup
        .query(
            "select session, count(*) from seen group by session order by session",
            &[],
        )
        .await
        .expect("totals")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(per_session, (0..6).map(|i| (i, 50)).collect::<Vec<_>>());
    assert_eq!(server.connections(), 7);
    server.shutdown();
}

/// splitmix64: the transfers' accounts and amounts, the same every run.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const ACCOUNTS: i32 = 10;
const INITIAL_BALANCE: i64 = 1000;
const WORKERS: u64 = 8;
const TRANSFERS_PER_WORKER: usize = 250;

/// One transfer in its own transaction, logged in `transfers`.
async fn transfer(
    client: &mut Client,
    source: i32,
    target: i32,
    amount: i64,
) -> Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.execute(
        "update accounts set balance = balance - $1 where id = $2",
        &[&amount, &source],
    )
    .await?;
    tx.execute(
        "update accounts set balance = balance + $1 where id = $2",
        &[&amount, &target],
    )
    .await?;
    tx.execute(
        "insert into transfers (source, target, amount) values ($1, $2, $3)",
        &[&source, &target, &amount],
    )
    .await?;
    tx.commit().await
}

/// How often a worker's transfers were retried, by the error that ended them.
#[derive(Default)]
struct Retries {
    serialization_failures: usize,
    deadlocks: usize,
}

/// A worker's transfers between random accounts, each retried after a serialization
/// failure or a deadlock (the other transaction of a deadlock goes on).
async fn transfers(mut client: Client, worker: u64) -> Retries {
    let mut state = worker;
    let mut retries = Retries::default();
    for _ in 0..TRANSFERS_PER_WORKER {
        let source = (next(&mut state) % ACCOUNTS as u64) as i32 + 1;
        let target = (source + (next(&mut state) % (ACCOUNTS as u64 - 1)) as i32) % ACCOUNTS + 1;
        let amount = (next(&mut state) % 100) as i64 + 1;
        loop {
            match transfer(&mut client, source, target, amount).await {
                Ok(()) => break,
                Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) => {
                    retries.serialization_failures += 1;
                }
                Err(e) if e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED) => {
                    retries.deadlocks += 1;
                }
                Err(e) => panic!("worker {worker}: transfer {source} -> {target}: {e}"),
            }
        }
    }
    retries
}

#[tokio::test]
async fn money_transfers_over_8_connections_keep_the_total() {
    let (_dir, db, server) = start();
    let setup = connect(&server).await;
    setup
        .batch_execute(&format!(
            "create table accounts (id int primary key, balance bigint not null);
             create table transfers (source int, target int, amount bigint);
             insert into accounts select g, {INITIAL_BALANCE} from generate_series(1, {ACCOUNTS}) g"
        ))
        .await
        .expect("setup");
    let total = INITIAL_BALANCE * i64::from(ACCOUNTS);
    let started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..WORKERS {
        let client = connect(&server).await;
        workers.push(tokio::spawn(transfers(client, worker)));
    }
    // While they run, every statement's snapshot holds the whole sum.
    let mut looks = 0;
    while !workers.iter().all(|w| w.is_finished()) {
        let sum: i64 = setup
            .query_one("select sum(balance)::bigint from accounts", &[])
            .await
            .expect("sum")
            .get(0);
        assert_eq!(sum, total, "after {looks} looks");
        looks += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut retries = Retries::default();
    for w in workers {
        let r = w.await.expect("worker");
        retries.serialization_failures += r.serialization_failures;
        retries.deadlocks += r.deadlocks;
    }
    // At READ COMMITTED an update that meets a row a concurrent transaction changed and
    // committed goes on with the newest version (PostgreSQL's EvalPlanQual): no 40001.
    // Deadlocks (two transfers between the same accounts in opposite orders) happen as
    // they do in PostgreSQL.
    assert_eq!(retries.serialization_failures, 0);
    // Every account is there, and each balance is its start plus what the log says
    // came in less what went out: no transfer lost or applied twice.
    let balances: Vec<(i32, i64, i64)> = setup
        .query(
            "select a.id, a.balance,
                    ((select coalesce(sum(amount), 0) from transfers where target = a.id)
                   - (select coalesce(sum(amount), 0) from transfers where source = a.id))::bigint
             from accounts a order by a.id",
            &[],
        )
        .await
        .expect("balances")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(balances.len(), ACCOUNTS as usize);
    for (i, (id, balance, net)) in balances.iter().enumerate() {
        assert_eq!(*id, i as i32 + 1);
        assert_eq!(*balance, INITIAL_BALANCE + net, "account {id}");
    }
    assert_eq!(balances.iter().map(|b| b.1).sum::<i64>(), total);
    let logged: i64 = setup
        .query_one("select count(*) from transfers", &[])
        .await
        .expect("log")
        .get(0);
    assert_eq!(logged, (WORKERS as usize * TRANSFERS_PER_WORKER) as i64);
    eprintln!(
        "{logged} transfers over {WORKERS} connections in {:?}; retried after {} serialization \
         failures and {} deadlocks; {looks} looks at the sum",
        started.elapsed(),
        retries.serialization_failures,
        retries.deadlocks
    );
    drop(setup);
    server.shutdown();
    db.close().expect("close");
}

/// A client logged in over TCP as an ordinary role runs as that role: `current_user`
/// is it, the server says it is no superuser, and the password verifiers are not its
/// to read (PostgreSQL's 42501), nor is the superuser's password its to change.
#[tokio::test]
async fn an_ordinary_role_runs_as_itself() {
    let (_dir, _db, server) = start();
    let client = connect(&server).await;
    let rows = client
        .simple_query("select current_user, session_user")
        .await
        .expect("current_user");
    assert_eq!(
        cells(&rows),
        vec![vec![Some(USER.to_string()), Some(USER.to_string())]]
    );
    let rows = client
        .simple_query("show is_superuser")
        .await
        .expect("show");
    assert_eq!(cells(&rows), vec![vec![Some("off".to_string())]]);
    for sql in [
        "select rolpassword from pg_authid",
        "alter role postgres password 'mine now'",
        "create role intruder superuser login password 'x'",
    ] {
        let e = client.simple_query(sql).await.expect_err(sql);
        assert_eq!(
            e.as_db_error().map(|d| d.code().code()),
            Some("42501"),
            "{sql}: {e}"
        );
    }
    client
        .simple_query(&format!("alter role {USER} password 'changed by itself'"))
        .await
        .expect("a role changes its own password");
}

/// Another role's table is not an ordinary role's to read, change or drop until it is
/// granted (42501 with PostgreSQL's message), and a grant takes effect at the next
/// statement of a connection already open, prepared statements included; a revoke
/// likewise.
#[tokio::test]
async fn another_roles_table_needs_a_grant() {
    let (_dir, db, server) = start();
    let mut admin = walden_sql::Session::new(&db);
    admin
        .execute("create table secrets (id int primary key, what text); insert into secrets values (1, 'k')")
        .expect("superuser's table");
    let client = connect(&server).await;
    let read = client
        .prepare("select what from secrets where id = $1")
        .await
        .expect("prepare");
    for sql in [
        "select * from secrets",
        "update secrets set what = 'x'",
        "delete from secrets",
        "insert into secrets values (2, 'y')",
        "truncate secrets",
        "drop table secrets",
        "alter table secrets add column c int",
        "create index on secrets (what)",
        "grant select on secrets to public",
        "copy secrets to stdout",
    ] {
        let e = client.simple_query(sql).await.expect_err(sql);
        let d = e.as_db_error().expect("a server error");
        assert_eq!(d.code().code(), "42501", "{sql}: {e}");
        assert!(
            d.message() == "permission denied for table secrets"
                || d.message() == "must be owner of table secrets",
            "{sql}: {}",
            d.message()
        );
    }
    let e = client
        .query(&read, &[&1i32])
        .await
        .expect_err("prepared read");
    assert_eq!(e.as_db_error().map(|d| d.code().code()), Some("42501"));
    admin
        .execute(&format!("grant select on secrets to {USER}"))
        .expect("grant");
    let rows = client.query(&read, &[&1i32]).await.expect("granted read");
    assert_eq!(rows[0].get::<_, String>(0), "k");
    admin
        .execute(&format!("revoke select on secrets from {USER}"))
        .expect("revoke");
    let e = client
        .query(&read, &[&1i32])
        .await
        .expect_err("revoked read");
    assert_eq!(e.as_db_error().map(|d| d.code().code()), Some("42501"));
    server.shutdown();
}

/// A portal in a transaction block read a batch at a time (Execute with a row limit,
/// PortalSuspended): its rows are those of its snapshot, whatever another session
/// commits and its own transaction changes between batches; a second portal reads
/// beside it; the portal ends with its transaction.
#[tokio::test]
async fn portals_read_in_batches_keep_their_snapshot() {
    let (_dir, db, server) = start();
    let mut a = connect(&server).await;
    let b = connect(&server).await;
    a.batch_execute(
        "create table pr (id int primary key, v int);
         insert into pr select g, g from generate_series(1, 1000) g",
    )
    .await
    .expect("setup");
    let tx = a.transaction().await.expect("begin");
    let stmt = tx
        .prepare("select id, v from pr where id > $1")
        .await
        .expect("prepare");
    let portal = tx.bind(&stmt, &[&100i32]).await.expect("bind");
    let other = tx.bind(&stmt, &[&990i32]).await.expect("a second portal");
    let first = tx.query_portal(&portal, 300).await.expect("first batch");
    assert_eq!(first.len(), 300);
    assert_eq!(first[0].get::<_, i32>(0), 101);
    let others = tx
        .query_portal(&other, 4)
        .await
        .expect("the other's first batch");
    assert_eq!(others.len(), 4);
    // Another session's commit, and this transaction's own update, between batches.
    b.batch_execute("update pr set v = -1; delete from pr where id > 900")
        .await
        .expect("another session's changes");
    tx.batch_execute("update pr set v = 0 where id <= 500")
        .await
        .expect("this transaction's change");
    // The rest of the other portal (a row limit of 0: all).
    let second = tx.query_portal(&other, 0).await.expect("the other portal");
    assert_eq!(second.len(), 6);
    assert_eq!(second[5].get::<_, i32>(0), 1000);
    let mut rest = Vec::new();
    loop {
        let batch = tx.query_portal(&portal, 250).await.expect("a batch");
        if batch.is_empty() {
            break;
        }
        rest.extend(batch);
    }
    assert_eq!(rest.len(), 600, "rows 401..1000 as the snapshot saw them");
    for (i, row) in rest.iter().enumerate() {
        let id: i32 = row.get(0);
        assert_eq!(id, 401 + i as i32);
        assert_eq!(row.get::<_, i32>(1), id, "the value the snapshot saw");
    }
    tx.commit().await.expect("commit");
    let n: i64 = a
        .query_one("select count(*) from pr where v = -1", &[])
        .await
        .expect("count")
        .get(0);
    // B's -1 on 900 rows, then A's 0 on the first 500 (READ COMMITTED: A's update saw
    // B's commit).
    assert_eq!(n, 400);
    drop((a, b));
    server.shutdown();
    db.close().expect("close");
}

/// Results far larger than `statement_mem` leave the server as they are made: a SELECT
/// of every row, `COPY (query over a join) TO STDOUT`, and `CREATE TABLE AS` over the
/// join all run with 8 MB for the statement where their rows take about 20 MB (each
/// failed with 53200 when results were made whole first); a sort of them still must
/// keep them, and says so.
#[tokio::test]
async fn large_results_stream_within_statement_mem() {
    let (_dir, db, server) = start();
    let c = connect(&server).await;
    c.batch_execute(
        "create table wide (id int, pad text);
         insert into wide select g, repeat('x', 150) || g from generate_series(1, 100000) g;
         create table names (k int primary key, name text);
         insert into names select g, 'name ' || g from generate_series(0, 9) g;
         set statement_mem = '8MB';
         set work_mem = '64MB'",
    )
    .await
    .expect("setup");
    let rows = c
        .simple_query("select * from wide")
        .await
        .expect("select streams");
    let n = rows
        .iter()
        .filter(|m| matches!(m, SimpleQueryMessage::Row(_)))
        .count();
    assert_eq!(n, 100_000);
    let copy = c
        .copy_out("copy (select w.id, w.pad, n.name from wide w join names n on n.k = w.id % 10) to stdout")
        .await
        .expect("copy out");
    let chunks: Vec<Bytes> = copy.try_collect().await.expect("copy data");
    let lines: usize = chunks
        .iter()
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .sum();
    assert_eq!(lines, 100_000);
    c.batch_execute(
        "create table joined as select w.id, w.pad, n.name from wide w join names n on n.k = w.id % 10",
    )
    .await
    .expect("create table as streams");
    let count: i64 = c
        .query_one("select count(*) from joined", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(count, 100_000);
    // A sort keeps its rows: past statement_mem it fails, and the connection goes on.
    assert_eq!(
        sqlstate(c.simple_query("select * from wide order by pad desc").await),
        Some(SqlState::OUT_OF_MEMORY)
    );
    assert_eq!(
        c.query_one("select 1", &[])
            .await
            .expect("usable")
            .get::<_, i32>(0),
        1
    );
    drop(c);
    server.shutdown();
    db.close().expect("close");
}
