//! Money transfer: what could go wrong is a lost update, a write skew, a deadlock that
//! hangs, a reader that sees a transfer half done, or a crash that keeps half a transfer
//! or loses an acknowledged one — any of which changes the total of the accounts.
//! Transfers run at both isolation levels: under REPEATABLE READ each reads the balances
//! and writes them back, retrying serialization failures; under READ COMMITTED each is
//! one relative update of both rows, which goes on with the newest version of a row a
//! concurrent transfer changed, and must never fail with a serialization failure.
//! Each run is made on a heap table and on an undo table; on undo tables (rows updated in
//! place, old values in the undo log) a reader also keeps one snapshot open for the whole
//! run and must see the initial balances in every scan.
//! WALDEN_TRANSFERS sets the transfers of the multi-threaded runs (CI default 2,000);
//! WALDEN_MONEY_SEED runs the crash test for one seed only.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use walden::vfs::{CrashMode, RealVfs, SimVfs};
use walden::*;

mod support;
use support::{env_u64, table_opts, TempDir};

const TABLE: &str = "accounts";
const ACCOUNTS: i64 = 100;
const INITIAL: i64 = 1000;
const TOTAL: i64 = ACCOUNTS * INITIAL;
const THREADS: u64 = 8;
/// Serialization failures and deadlocks one transfer may meet before the test calls it
/// a livelock (with 8 threads on 100 accounts a transfer is retried a few times at most).
const MAX_RETRIES: u64 = 20_000;

fn transfers() -> u64 {
    env_u64("WALDEN_TRANSFERS", 2000)
}

fn schema() -> Schema {
    Schema::new(vec![
        Column::not_null("id", ColumnType::Int8),
        Column::not_null("balance", ColumnType::Int8),
    ])
}

/// A small deterministic generator per thread (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[derive(Debug, Clone, Copy)]
struct Transfer {
    from: i64,
    to: i64,
    amount: i64,
}

/// What one worker did.
#[derive(Debug, Default)]
struct Worker {
    acked: Vec<Transfer>,
    /// The transfer whose commit returned an error (it may or may not have happened).
    in_doubt: Option<Transfer>,
    serialization_failures: u64,
    deadlocks: u64,
    /// The error that stopped the worker (crash runs only).
    stopped_by: Option<String>,
}

/// id -> (row id, balance), checking the shape of every row.
fn accounts(tx: &mut Transaction) -> Result<BTreeMap<i64, (RowId, i64)>, Error> {
    let mut out = BTreeMap::new();
    for (rid, r) in tx.scan(TABLE)? {
        let (Value::Int8(id), Value::Int8(balance)) = (&r[0], &r[1]) else {
            panic!("row of unexpected shape {r:?}");
        };
        assert!(
            out.insert(*id, (rid, *balance)).is_none(),
            "account {id} twice"
        );
    }
    Ok(out)
}

fn setup(db: &Database) {
    db.create_table(TABLE, schema()).unwrap();
    let mut tx = db.begin();
    tx.insert_many(
        TABLE,
        (0..ACCOUNTS).map(|id| vec![Value::Int8(id), Value::Int8(INITIAL)]),
    )
    .unwrap();
    tx.commit().unwrap();
}

enum Failure {
    /// Before commit: the transfer certainly did not happen.
    Before(Error),
    /// The commit itself failed: in doubt.
    Commit(Error),
}

/// One attempt: read every account in the snapshot, move money between two of them
/// (REPEATABLE READ), or move it with one update of the two rows, each balance computed
/// from the row's newest version (READ COMMITTED).
fn attempt(db: &Database, t: Transfer, isolation: Isolation) -> Result<(), Failure> {
    if isolation == Isolation::ReadCommitted {
        return attempt_read_committed(db, t);
    }
    let mut tx = db.begin();
    let all = accounts(&mut tx).map_err(Failure::Before)?;
    let (from_id, from_balance) = all[&t.from];
    let (to_id, to_balance) = all[&t.to];
    let update = |tx: &mut Transaction, rid, id, balance| {
        tx.update(TABLE, rid, &[Value::Int8(id), Value::Int8(balance)])
            .map_err(Failure::Before)
    };
    update(&mut tx, from_id, t.from, from_balance - t.amount)?;
    update(&mut tx, to_id, t.to, to_balance + t.amount)?;
    tx.commit().map_err(Failure::Commit)
}

/// `UPDATE accounts SET balance = balance + (the transfer's part) WHERE id IN (from, to)`
/// at READ COMMITTED, as the SQL layer runs it: the rows found in the statement's
/// snapshot and changed (`modify_rows`), then those a concurrent transfer changed
/// meanwhile judged again in their newest versions (`newest`, `modify_newest`).
fn attempt_read_committed(db: &Database, t: Transfer) -> Result<(), Failure> {
    let mut tx = db.begin_with(Isolation::ReadCommitted);
    tx.new_statement_snapshot().map_err(Failure::Before)?;
    let part = |row: &Row| {
        let (Value::Int8(id), Value::Int8(balance)) = (&row[0], &row[1]) else {
            panic!("row of unexpected shape {row:?}");
        };
        let part = if *id == t.from { -t.amount } else { t.amount };
        RowAction::Update(vec![Value::Int8(*id), Value::Int8(balance + part)])
    };
    let all = accounts(&mut tx).map_err(Failure::Before)?;
    let actions = [t.from, t.to]
        .iter()
        .map(|id| {
            let (rid, balance) = all[id];
            (rid, part(&vec![Value::Int8(*id), Value::Int8(balance)]))
        })
        .collect();
    let mut done = tx.modify_rows(TABLE, actions).map_err(Failure::Before)?;
    let mut moved = done.count;
    while !done.changed.is_empty() {
        let mut verdicts = Vec::new();
        for rid in &done.changed {
            let newest = tx.newest(TABLE, *rid).map_err(Failure::Before)?;
            let newest = newest.expect("accounts are never deleted");
            let action = part(&newest.row);
            verdicts.push((newest, action));
        }
        done = tx.modify_newest(TABLE, verdicts).map_err(Failure::Before)?;
        moved += done.count;
    }
    assert_eq!(moved, 2, "{t:?}");
    tx.commit().map_err(Failure::Commit)
}

/// Runs `n` transfers, retrying serialization failures and deadlocks, until done or a
/// non-retryable error (a crash) stops it.
fn worker(db: &Database, seed: u64, n: u64, isolation: Isolation) -> Worker {
    let mut rng = Rng::new(seed);
    let mut w = Worker::default();
    'transfers: for _ in 0..n {
        let from = rng.below(ACCOUNTS as u64) as i64;
        let to = (from + 1 + rng.below(ACCOUNTS as u64 - 1) as i64) % ACCOUNTS;
        let t = Transfer {
            from,
            to,
            amount: 1 + rng.below(100) as i64,
        };
        for retry in 0.. {
            // A retryable error that never ends is a hang, not contention.
            assert!(
                retry < MAX_RETRIES,
                "transfer {t:?} failed {MAX_RETRIES} times in a row with retryable errors"
            );
            match attempt(db, t, isolation) {
                Ok(()) => {
                    w.acked.push(t);
                    continue 'transfers;
                }
                Err(Failure::Before(Error::SerializationFailure)) => w.serialization_failures += 1,
                Err(Failure::Before(Error::Deadlock)) => w.deadlocks += 1,
                Err(Failure::Before(e)) => {
                    w.stopped_by = Some(e.to_string());
                    break 'transfers;
                }
                Err(Failure::Commit(e)) => {
                    w.in_doubt = Some(t);
                    w.stopped_by = Some(e.to_string());
                    break 'transfers;
                }
            }
        }
    }
    w
}

fn apply(balances: &mut [i64], t: &Transfer) {
    balances[t.from as usize] -= t.amount;
    balances[t.to as usize] += t.amount;
}

/// Checks a final state: 100 accounts, the total unchanged, and each balance what the
/// acknowledged transfers (plus some subset of the in-doubt ones) make it.
fn check_final(db: &Database, workers: &[Worker], context: &str) {
    let mut tx = db.begin();
    let found = accounts(&mut tx).unwrap();
    tx.commit().unwrap();
    assert_eq!(found.len() as i64, ACCOUNTS, "{context}");
    assert_eq!(
        found.keys().copied().collect::<Vec<_>>(),
        (0..ACCOUNTS).collect::<Vec<_>>()
    );
    let total: i64 = found.values().map(|(_, b)| b).sum();
    assert_eq!(total, TOTAL, "{context}: total changed");
    let found: Vec<i64> = found.values().map(|(_, b)| *b).collect();
    let mut expected = vec![INITIAL; ACCOUNTS as usize];
    for t in workers.iter().flat_map(|w| &w.acked) {
        apply(&mut expected, t);
    }
    let doubt: Vec<Transfer> = workers.iter().filter_map(|w| w.in_doubt).collect();
    let matches = (0..1u32 << doubt.len()).any(|subset| {
        let mut b = expected.clone();
        for (i, t) in doubt.iter().enumerate() {
            if subset & (1 << i) != 0 {
                apply(&mut b, t);
            }
        }
        b == found
    });
    assert!(
        matches,
        "{context}: balances match no outcome of the {} acknowledged and {} in-doubt transfers",
        workers.iter().map(|w| w.acked.len()).sum::<usize>(),
        doubt.len()
    );
}

/// A reader that keeps one transaction, begun before the transfers, open for the whole
/// run: every scan must show the 100 accounts with their initial balances. Returns the
/// number of scans.
fn whole_run_reader(mut tx: Transaction, stop: &AtomicBool) -> u64 {
    let first = accounts(&mut tx).unwrap();
    assert!(
        first.values().all(|(_, b)| *b == INITIAL),
        "the whole-run reader began after a transfer"
    );
    let mut scans = 1;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(5));
        let again = accounts(&mut tx).unwrap();
        assert_eq!(
            again, first,
            "the snapshot of the whole-run reader changed after {scans} scans"
        );
        scans += 1;
    }
    tx.commit().unwrap();
    scans
}

/// A reader that keeps long transactions open: every scan in one transaction must show
/// the same 100 accounts with the same total. Returns the number of scans.
fn long_reader(db: &Database, stop: &AtomicBool) -> u64 {
    let mut scans = 0;
    while !stop.load(Ordering::SeqCst) {
        let mut tx = db.begin();
        let first = accounts(&mut tx).unwrap();
        for _ in 0..4 {
            let again = accounts(&mut tx).unwrap();
            assert_eq!(again.len() as i64, ACCOUNTS);
            assert_eq!(again.values().map(|(_, b)| b).sum::<i64>(), TOTAL);
            assert_eq!(again, first, "a snapshot changed under a long reader");
            scans += 1;
            std::thread::sleep(Duration::from_millis(3));
        }
        tx.commit().unwrap();
    }
    scans
}

#[test]
fn eight_threads_keep_the_total_on_the_real_file_system() {
    real_file_system_run(TableKind::Heap, Isolation::RepeatableRead);
}

#[test]
fn eight_threads_keep_the_total_on_the_real_file_system_undo() {
    real_file_system_run(TableKind::Undo, Isolation::RepeatableRead);
}

#[test]
fn eight_threads_keep_the_total_at_read_committed() {
    real_file_system_run(TableKind::Heap, Isolation::ReadCommitted);
}

#[test]
fn eight_threads_keep_the_total_at_read_committed_undo() {
    real_file_system_run(TableKind::Undo, Isolation::ReadCommitted);
}

fn real_file_system_run(kind: TableKind, isolation: Isolation) {
    let dir = TempDir::new(&format!("money-transfer-{kind}-{isolation:?}"));
    let opts = || Options {
        vfs: Arc::new(RealVfs),
        buffer_pool_bytes: 8 << 20,
        default_table_kind: kind,
        ..Options::default()
    };
    let db = Database::create(&dir.0, opts()).unwrap();
    setup(&db);
    assert_eq!(db.table_kind(TABLE).unwrap(), kind);
    let before = db.stats();
    let per_thread = transfers().div_ceil(THREADS);
    let stop = AtomicBool::new(false);
    let vacuums = AtomicU64::new(0);
    let started = Instant::now();
    let whole_run_tx = (kind == TableKind::Undo).then(|| db.begin());
    let (workers, scans, whole_run_scans) = std::thread::scope(|s| {
        let whole_run = whole_run_tx.map(|tx| s.spawn(|| whole_run_reader(tx, &stop)));
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let db = &db;
                s.spawn(move || worker(db, i + 1, per_thread, isolation))
            })
            .collect();
        let reader = s.spawn(|| long_reader(&db, &stop));
        let vacuum = s.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                db.vacuum(TABLE).unwrap();
                vacuums.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let workers: Vec<Worker> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        stop.store(true, Ordering::SeqCst);
        let scans = reader.join().unwrap();
        let whole_run_scans = whole_run.map(|r| r.join().unwrap());
        vacuum.join().unwrap();
        (workers, scans, whole_run_scans)
    });
    let elapsed = started.elapsed();
    for w in &workers {
        assert_eq!(w.stopped_by, None);
        assert_eq!(w.acked.len() as u64, per_thread);
    }
    let context = format!("real file system, {kind} table, {isolation:?}");
    check_final(&db, &workers, &context);

    let d = db.stats().since(&before);
    let acked: u64 = workers.iter().map(|w| w.acked.len() as u64).sum();
    let serialization: u64 = workers.iter().map(|w| w.serialization_failures).sum();
    let deadlocks: u64 = workers.iter().map(|w| w.deadlocks).sum();
    let vacuums = vacuums.load(Ordering::SeqCst);
    if isolation == Isolation::ReadCommitted {
        assert_eq!(serialization, 0, "{context}: READ COMMITTED never fails so");
    }
    eprintln!(
        "{context}: {acked} transfers in {elapsed:?} ({:.0}/s); {serialization} serialization \
         failures, {deadlocks} deadlocks retried; {scans} consistent long-reader scans; \
         {whole_run_scans:?} whole-run reader scans; {vacuums} vacuums; {} commits, {} aborts, {} WAL fsyncs ({:.2} commits per fsync)",
        acked as f64 / elapsed.as_secs_f64(),
        d.commits,
        d.aborts,
        d.wal_fsyncs,
        d.commits as f64 / d.wal_fsyncs.max(1) as f64
    );
    assert!(acked >= transfers());
    // Every transfer and every vacuum is one commit; every retry one rollback.
    assert_eq!(d.commits, acked + vacuums);
    assert_eq!(d.aborts, serialization + deadlocks);
    assert!(scans > 0);
    if let Some(n) = whole_run_scans {
        assert!(n > 1, "the whole-run reader scanned only once");
    }
    // Group commit: concurrent committers share fsyncs.
    assert!(
        d.wal_fsyncs < d.commits,
        "{} WAL fsyncs for {} commits: no group commit",
        d.wal_fsyncs,
        d.commits
    );
    db.close().unwrap();
    let db = Database::open(&dir.0, opts()).unwrap();
    check_final(&db, &workers, &format!("{context}, reopened"));
    db.close().unwrap();
}

/// A run on the simulated file layer.
#[derive(Debug, Clone, Copy)]
struct SimRun {
    seed: u64,
    protection: Protection,
    kind: TableKind,
    page_size: usize,
    buffer_pool_bytes: u64,
    /// Lose power once this many transfers have committed; None: run to the end.
    crash_after_commits: Option<u64>,
    /// Let the main thread run checkpoints while the transfers go on.
    concurrent_checkpoints: bool,
    isolation: Isolation,
}

impl SimRun {
    fn opts(&self, vfs: &SimVfs) -> Options {
        Options {
            page_size: self.page_size,
            buffer_pool_bytes: self.buffer_pool_bytes,
            ..table_opts(vfs, self.protection, self.kind)
        }
    }
}

/// Counts a worker as finished however it ends, panics included.
struct Finished<'a>(&'a AtomicU64);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Eight threads transfer on the simulated file layer while a long reader checks every
/// snapshot and the main thread checkpoints; with `crash_after_commits`, power is lost
/// after that many commits. At the end (after recovery, if crashed) the total holds and
/// every acknowledged transfer is there.
fn sim_run(run: SimRun) {
    let SimRun { seed, .. } = run;
    let vfs = SimVfs::new(seed);
    let db = Database::create("db", run.opts(&vfs)).unwrap();
    setup(&db);
    assert_eq!(db.table_kind(TABLE).unwrap(), run.kind);
    let mut rng = Rng::new(seed);
    let per_thread = match run.crash_after_commits {
        Some(_) => u64::MAX,
        None => transfers().div_ceil(THREADS),
    };
    let base = db.stats().commits;
    let finished = AtomicU64::new(0);
    let stop_reader = AtomicBool::new(false);
    let mut checkpoints = 0u64;
    let mut vacuums = 0u64;
    // The first checkpoint or vacuum that failed.
    let mut checkpoint_error: Option<String> = None;
    let whole_run_tx = (run.kind == TableKind::Undo).then(|| db.begin());
    let (workers, scans, whole_run_scans) = std::thread::scope(|s| {
        let whole_run = whole_run_tx.map(|tx| s.spawn(|| whole_run_reader(tx, &stop_reader)));
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let (db, finished) = (&db, &finished);
                s.spawn(move || {
                    let _finished = Finished(finished);
                    worker(db, seed * 100 + i, per_thread, run.isolation)
                })
            })
            .collect();
        let reader = s.spawn(|| long_reader(&db, &stop_reader));
        loop {
            let done = finished.load(Ordering::SeqCst);
            let committed = db.stats().commits - base;
            if done == THREADS
                || (run.crash_after_commits.is_some() && done > 0)
                || run.crash_after_commits.is_some_and(|n| committed >= n)
            {
                break;
            }
            if run.concurrent_checkpoints && rng.below(4) == 0 {
                match db.checkpoint() {
                    Ok(()) => checkpoints += 1,
                    Err(e) => {
                        checkpoint_error = Some(format!("checkpoint: {e}"));
                        break;
                    }
                }
            }
            // Vacuum now and then, so that scans stay short in long runs.
            if rng.below(100) == 0 {
                match db.vacuum(TABLE) {
                    Ok(_) => vacuums += 1,
                    Err(e) => {
                        checkpoint_error = Some(format!("vacuum: {e}"));
                        break;
                    }
                }
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        // Only the crash may stop a worker early.
        let early = finished.load(Ordering::SeqCst);
        if run.crash_after_commits.is_some() || checkpoint_error.is_some() {
            vfs.crash_now();
        }
        stop_reader.store(true, Ordering::SeqCst);
        let workers: Vec<Worker> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let scans = reader.join();
        let whole_run_scans = whole_run.map(|r| r.join());
        assert!(checkpoint_error.is_none(), "{run:?}: {checkpoint_error:?}");
        if run.crash_after_commits.is_some() {
            assert_eq!(
                early,
                0,
                "{run:?}: workers stopped before the crash: {:?}",
                workers.iter().map(|w| &w.stopped_by).collect::<Vec<_>>()
            );
        }
        (workers, scans, whole_run_scans)
    });
    eprintln!(
        "{run:?}: {} commits, {checkpoints} checkpoints, {vacuums} vacuums, {} in doubt, \
         {} long-reader scans, {:?} whole-run reader scans",
        db.stats().commits - base,
        workers.iter().filter(|w| w.in_doubt.is_some()).count(),
        scans.as_ref().map_or(0, |n| *n),
        whole_run_scans
            .as_ref()
            .map(|r| r.as_ref().map_or(0, |n| *n)),
    );
    // A reader that failed after power was lost is expected; one that failed before is not.
    if run.crash_after_commits.is_none() {
        assert!(scans.is_ok(), "{run:?}: the long reader failed");
        if let Some(r) = &whole_run_scans {
            assert!(r.is_ok(), "{run:?}: the whole-run reader failed");
        }
    }
    match run.crash_after_commits {
        None => {
            for w in &workers {
                assert_eq!(w.stopped_by, None, "{run:?}");
                assert_eq!(w.acked.len() as u64, per_thread, "{run:?}");
            }
            check_final(&db, &workers, &format!("{run:?}"));
            if run.isolation == Isolation::ReadCommitted {
                let failures: u64 = workers.iter().map(|w| w.serialization_failures).sum();
                assert_eq!(failures, 0, "{run:?}");
            }
            drop(db);
            vfs.restart(CrashMode::DropUnsynced);
            let db = Database::open("db", run.opts(&vfs)).unwrap();
            check_final(&db, &workers, &format!("{run:?} after reopen"));
        }
        Some(_) => {
            for w in &workers {
                assert!(
                    w.stopped_by.is_some(),
                    "{run:?}: a worker outlived the crash"
                );
            }
            drop(db);
            vfs.restart(CrashMode::Random);
            let db = Database::open("db", run.opts(&vfs)).unwrap();
            check_final(&db, &workers, &format!("{run:?} after the crash"));
            // The recovered database keeps working.
            let more = worker(&db, seed + 7, 50, run.isolation);
            assert_eq!(more.acked.len(), 50);
            let all: Vec<Worker> = workers.into_iter().chain([more]).collect();
            check_final(
                &db,
                &all,
                &format!("{run:?} after the crash and more transfers"),
            );
        }
    }
}

fn crash_runs(concurrent_checkpoints: bool, kind: TableKind, isolation: Isolation) {
    // WALDEN_MONEY_SEED runs one seed only (to reproduce a failure).
    let only: Option<u64> = std::env::var("WALDEN_MONEY_SEED")
        .ok()
        .and_then(|s| s.parse().ok());
    for seed in only.map_or(1..=4, |s| s..=s) {
        let mut rng = Rng::new(seed);
        sim_run(SimRun {
            seed,
            protection: if seed % 2 == 0 {
                Protection::FullPage
            } else {
                Protection::Cow
            },
            kind,
            page_size: 8192,
            // Room for the whole table: these runs are about crashes, not eviction.
            buffer_pool_bytes: 64 << 20,
            crash_after_commits: Some(100 + rng.below(transfers().max(200))),
            concurrent_checkpoints,
            isolation,
        });
    }
}

#[test]
fn crash_during_transfers_keeps_the_total() {
    crash_runs(false, TableKind::Heap, Isolation::RepeatableRead);
}

#[test]
fn crash_during_transfers_keeps_the_total_undo() {
    crash_runs(false, TableKind::Undo, Isolation::RepeatableRead);
}

/// The same with checkpoints running alongside the transfers (as the background
/// checkpointer does). See tests/concurrent_checkpoint.rs for the focused reproductions.
#[test]
fn crash_during_transfers_with_concurrent_checkpoints_keeps_the_total() {
    crash_runs(true, TableKind::Heap, Isolation::RepeatableRead);
}

#[test]
fn crash_during_transfers_with_concurrent_checkpoints_keeps_the_total_undo() {
    crash_runs(true, TableKind::Undo, Isolation::RepeatableRead);
}

/// The same at READ COMMITTED: rows changed concurrently are judged again and written in
/// their newest versions while checkpoints run, and recovery keeps the total.
#[test]
fn crash_during_read_committed_transfers_keeps_the_total() {
    crash_runs(true, TableKind::Heap, Isolation::ReadCommitted);
}

#[test]
fn crash_during_read_committed_transfers_keeps_the_total_undo() {
    crash_runs(true, TableKind::Undo, Isolation::ReadCommitted);
}

/// Transfers while a pool far smaller than the table evicts pages (no checkpoints).
#[test]
fn transfers_through_a_small_pool_keep_the_total() {
    small_pool_run(TableKind::Heap);
}

#[test]
fn transfers_through_a_small_pool_keep_the_total_undo() {
    small_pool_run(TableKind::Undo);
}

fn small_pool_run(kind: TableKind) {
    sim_run(SimRun {
        seed: 11,
        protection: Protection::Cow,
        kind,
        page_size: 4096,
        buffer_pool_bytes: 16 * 4096,
        crash_after_commits: None,
        concurrent_checkpoints: false,
        isolation: Isolation::RepeatableRead,
    });
}
