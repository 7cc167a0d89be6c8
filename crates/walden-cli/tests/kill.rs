//! A real process killed with SIGKILL at a random moment (mid-commit, mid-checkpoint, or
//! mid-recovery of the previous kill) must never lose a row whose commit it acknowledged,
//! on a heap table or on an undo table (whose child also updates a counter row in place
//! in each transaction: recovery must roll back the one the kill interrupted). Each
//! transaction also writes under a savepoint it rolls back to (a row of key `-k`, the
//! counter set to `-k`): none of that may come back.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use walden::rng::SimRng;
use walden::{Database, Error, Options, TableKind, Value};

/// Kills per table kind.
const ROUNDS: u64 = 100;
const SEED: u64 = 0x6b69_6c6c;
const SIGKILL: i32 = 9;

/// Runs `walden kill-child` on `dir`, kills it after a random delay, and returns the keys
/// it acknowledged.
fn run_round(dir: &Path, kind: TableKind, round: u64) -> Vec<i64> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_walden"))
        .arg("kill-child")
        .arg(dir)
        .args(["--kind", kind.name()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kill-child starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (sender, acks) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let k: i64 = line
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("kill-child printed {line:?}, not a key"));
            if sender.send(k).is_err() {
                break;
            }
        }
    });
    let mut got = Vec::new();
    // Odd rounds start the clock at the first acknowledgement, so the kill lands while rows
    // are being committed; even rounds start it at spawn, so it often lands in recovery.
    if round % 2 == 1 {
        if let Ok(k) = acks.recv_timeout(Duration::from_secs(30)) {
            got.push(k);
        }
    }
    let delay_ms = 20 + SimRng::new(SEED.wrapping_add(round)).below(181);
    std::thread::sleep(Duration::from_millis(delay_ms));
    // Fails only if the child already exited; its status below tells why.
    let _ = child.kill();
    let status = child.wait().expect("wait for kill-child");
    reader.join().expect("the reader thread does not panic");
    got.extend(acks.try_iter());
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    assert_eq!(
        status.signal(),
        Some(SIGKILL),
        "round {round}: kill-child ended on its own ({status}): {stderr}"
    );
    got
}

/// Opens the database as recovery leaves it and returns its keys, sorted. None when the
/// first round was killed before the database was ever created. On undo tables, checks
/// that the counter row holds the largest key.
fn recovered_keys(dir: &Path, kind: TableKind, round: u64) -> Option<Vec<i64>> {
    let db = match Database::open(dir, Options::default()) {
        Ok(db) => db,
        Err(Error::NotADatabase { .. }) if round == 0 => return None,
        Err(e) => panic!("round {round}: recovery failed: {e}"),
    };
    if !db.table_names().iter().any(|t| t == "acks") {
        return Some(Vec::new());
    }
    let mut keys = Vec::new();
    let mut tx = db.begin();
    tx.read(
        walden::Rows::Table("acks"),
        walden::RowShape::default(),
        |_, row| {
            match row.first() {
                Some(Value::Int8(k)) => keys.push(*k),
                other => panic!("round {round}: row with key {other:?}"),
            }
            Ok::<_, walden::Error>(std::ops::ControlFlow::Continue(()))
        },
    )
    .unwrap_or_else(|e| panic!("round {round}: scan failed: {e}"));
    tx.commit().expect("read-only commit");
    keys.sort_unstable();
    assert_eq!(db.table_kind("acks").ok(), Some(kind), "round {round}");
    if kind == TableKind::Undo {
        let max = keys.last().copied().unwrap_or(0);
        if db.table_names().iter().any(|t| t == "counter") {
            let mut tx = db.begin();
            let counter: Vec<Value> = tx
                .scan("counter")
                .unwrap_or_else(|e| panic!("round {round}: scan of counter failed: {e}"))
                .into_iter()
                .flat_map(|(_, row)| row)
                .collect();
            tx.commit().expect("read-only commit");
            // No row yet only when no key was ever committed.
            let expected = if counter.is_empty() && max == 0 {
                vec![]
            } else {
                vec![Value::Int8(max)]
            };
            assert_eq!(
                counter, expected,
                "round {round}: counter row vs largest key"
            );
        } else {
            assert_eq!(max, 0, "round {round}: keys without a counter table");
        }
    }
    Some(keys)
}

#[test]
fn sigkill_never_loses_an_acknowledged_commit() {
    kill_rounds(TableKind::Heap);
}

#[test]
fn sigkill_never_loses_an_acknowledged_commit_undo() {
    kill_rounds(TableKind::Undo);
}

/// The two tests take turns. Run side by side, one test's child, between its fork and its
/// exec, holds a copy of every descriptor the test process has open, the other test's
/// database lock included (flock(2) locks belong to the open file description): the
/// other test's next child then finds its database "in use" (seen under load).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn kill_rounds(kind: TableKind) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let dir = dir.path().join("db");
    let mut total_acks = 0usize;
    let mut rows = 0usize;
    for round in 0..ROUNDS {
        let acks = run_round(&dir, kind, round);
        let Some(keys) = recovered_keys(&dir, kind, round) else {
            assert!(
                acks.is_empty(),
                "round {round}: acks {acks:?} without a database"
            );
            continue;
        };
        // One row per transaction, committed in key order through one sequential log:
        // what survives must be exactly 1..=max, no gaps and no duplicates.
        let max = keys.last().copied().unwrap_or(0);
        let expected: Vec<i64> = (1..=max).collect();
        assert_eq!(keys, expected, "round {round}: keys are not a prefix");
        for k in &acks {
            assert!(
                keys.binary_search(k).is_ok(),
                "round {round}: acknowledged key {k} lost (recovered up to {max})"
            );
        }
        assert!(rows <= keys.len(), "round {round}: rows disappeared");
        total_acks += acks.len();
        rows = keys.len();
    }
    eprintln!(
        "{kind} tables, {ROUNDS} kills: {total_acks} acknowledged commits, {rows} rows, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(total_acks > 0, "no round acknowledged anything");
}
