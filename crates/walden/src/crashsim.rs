//! The crash simulation: seeded random workloads on the simulated file layer, crashed at a
//! random write or sync, with unsynced writes dropped, kept or torn (transactions set,
//! roll back to and release savepoints as they go, and some create, alter and drop
//! tables inside their transactions); then recovery
//! (sometimes crashed too, and recovered again) and a check against a model of what was
//! acknowledged, on a heap or an undo table with two indexes (a primary key on `k`, and
//! one on `v`, which half the updates change): after each recovery the rows read through the
//! primary key match the model and `Database::check` finds nothing. Used by the tests and
//! by `walden crashtest`.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::catalog::TableKind;
use crate::engine::{AlterOp, Database, IndexSpec, Options, RowAction};
use crate::error::Error;
use crate::rng::SimRng;
use crate::schema::{Column, ColumnType, Schema, Value};
use crate::store::Protection;
use crate::vfs::{CrashMode, SimVfs};
use crate::wal::WalCompression;
use crate::RowId;

/// How to run the simulation.
#[derive(Debug, Clone)]
pub struct CrashConfig {
    pub protection: Protection,
    /// The kind of the table the workload runs on.
    pub kind: TableKind,
    pub seed: u64,
    /// Crash points to try.
    pub iterations: u64,
    /// The WAL codec; None: each database of the run takes the next of off, lz4, zstd.
    pub compression: Option<WalCompression>,
}

/// What the simulation found. A correct engine has zero in `committed_lost`,
/// `uncommitted_visible` and `wrong_results` (and, outside `none` mode, in
/// `torn_pages_detected`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashReport {
    pub mode: String,
    /// The WAL codec, or `off/lz4/zstd` when the databases took turns.
    pub compression: String,
    /// The table kind (`heap` or `undo`).
    pub kind: String,
    pub seed: u64,
    pub crash_points: u64,
    /// Acknowledged commits whose effects were checked after a recovery.
    pub committed_checked: u64,
    /// Rows of acknowledged commits missing or wrong after recovery.
    pub committed_lost: u64,
    /// Rows visible that no acknowledged (or in-doubt) commit wrote.
    pub uncommitted_visible: u64,
    /// Recoveries that failed or returned data the model cannot explain otherwise.
    pub wrong_results: u64,
    /// Torn pages reported by recovery (`none` mode only; anywhere else it is a failure).
    pub torn_pages_detected: u64,
    pub recoveries: u64,
    /// The first few failures, for the report.
    pub failures: Vec<String>,
}

impl CrashReport {
    /// True when nothing went wrong.
    pub fn passed(&self) -> bool {
        self.committed_lost == 0 && self.uncommitted_visible == 0 && self.wrong_results == 0
    }

    fn fail(&mut self, what: String) {
        self.wrong_results += 1;
        if self.failures.len() < 10 {
            self.failures.push(what);
        }
    }
}

const TABLE: &str = "kv";
const PKEY: &str = "kv_pkey";
const SCRATCH: &str = "scratch";
/// Tables the catalog workload (`ddl_txn`) makes, alters and drops in transactions.
const DDL_TABLES: [&str; 2] = ["ddl_a", "ddl_b"];

/// The committed state of `DDL_TABLES`: each one there, with its columns added since
/// its creation and its rows.
type DdlState = BTreeMap<&'static str, (usize, u64)>;
const DIR: &str = "db";
const ITERATIONS_PER_DATABASE: u64 = 40;

fn schema() -> Schema {
    Schema::new(vec![
        Column::not_null("k", ColumnType::Int8),
        Column::new("v", ColumnType::Int8),
        Column::new("pad", ColumnType::Text),
    ])
}

fn options(vfs: &SimVfs, protection: Protection, codec: WalCompression) -> Options {
    Options {
        vfs: Arc::new(vfs.clone()),
        protection,
        wal_compression: codec,
        page_size: 4096,
        segment_size_bytes: 2 << 20,
        buffer_pool_bytes: 16 * 4096,
        // Undo tables' undo goes to files as each 256-byte segment fills (no memory
        // budget): rollback and readers read it back at every crash point.
        undo_memory_bytes: 0,
        // A transaction's list of changed rows goes to a temporary file past eight
        // rows: rollbacks read it back at every crash point too.
        txn_undo_memory_bytes: 64,
        background: false,
        ..Options::default()
    }
}

/// Committed state: key -> value. `doubt` holds the state a commit that failed (so was
/// never acknowledged) would have produced: recovery may land on either.
#[derive(Debug, Clone, Default)]
struct Model {
    rows: BTreeMap<i64, i64>,
    doubt: Option<BTreeMap<i64, i64>>,
    commits: u64,
    /// The catalog workload's tables, and the state a commit in doubt would make.
    ddl: DdlState,
    ddl_doubt: Option<DdlState>,
}

/// A row's text: mostly short; one in twenty longer than a quarter page, stored out of
/// line (of two lengths, so that an update sometimes stores the value the row had and
/// keeps its chunks). `Database::check` after each recovery reads every one back.
fn pad(rng: &mut SimRng) -> Value {
    if rng.chance(5) {
        let n = [3_000, 20_000][rng.below(2) as usize];
        return Value::Text("p".repeat(n));
    }
    let n = rng.below(300) as usize;
    Value::Text("p".repeat(n))
}

/// Runs one transaction of random inserts, updates and deletes against `db`, mirroring it
/// in `model`. Returns Err when an operation failed (the crash came).
fn run_txn(
    db: &Database,
    rng: &mut SimRng,
    model: &mut Model,
    next_key: &mut i64,
) -> Result<(), Error> {
    let mut tx = db.begin();
    let mut ids: BTreeMap<i64, RowId> = BTreeMap::new();
    let mut view = model.rows.clone();
    if !view.is_empty() && rng.chance(70) {
        // Find row ids for updates and deletes, and check the snapshot on the way.
        for (id, row) in tx.scan(TABLE)? {
            if let Value::Int8(k) = row[0] {
                ids.insert(k, id);
            }
        }
    }
    // Savepoints set, each with the rows and ids as they were then.
    type Mark = (BTreeMap<i64, i64>, BTreeMap<i64, RowId>);
    let mut marks: Vec<Mark> = Vec::new();
    for _ in 0..1 + rng.below(8) {
        match rng.below(8) {
            0 => {
                tx.savepoint()?;
                marks.push((view.clone(), ids.clone()));
            }
            1 if !marks.is_empty() => {
                let depth = 1 + rng.below(marks.len() as u64) as usize;
                tx.rollback_to_savepoint(depth)?;
                marks.truncate(depth);
                if let Some((v, i)) = marks.last() {
                    (view, ids) = (v.clone(), i.clone());
                }
            }
            2 if !marks.is_empty() => {
                let depth = 1 + rng.below(marks.len() as u64) as usize;
                tx.release_savepoint(depth)?;
                marks.truncate(depth - 1);
            }
            _ => {}
        }
        let choice = rng.below(10);
        if choice < 5 || ids.is_empty() {
            let k = *next_key;
            *next_key += 1;
            let v = rng.below(1_000_000) as i64;
            let id = tx.insert(TABLE, &[Value::Int8(k), Value::Int8(v), pad(rng)])?;
            ids.insert(k, id);
            view.insert(k, v);
        } else {
            let nth = rng.below(ids.len() as u64) as usize;
            let Some((&k, &id)) = ids.iter().nth(nth) else {
                continue;
            };
            if choice < 8 {
                // Half the updates keep `v`: no indexed column changes, so a heap table
                // makes a heap-only version when the row's page has room.
                let v = match view.get(&k) {
                    Some(&old) if rng.below(2) == 0 => old,
                    _ => rng.below(1_000_000) as i64,
                };
                let new = tx.update(TABLE, id, &[Value::Int8(k), Value::Int8(v), pad(rng)])?;
                ids.insert(k, new);
                view.insert(k, v);
            } else {
                tx.delete(TABLE, id)?;
                ids.remove(&k);
                view.remove(&k);
            }
        }
    }
    if rng.chance(15) {
        return tx.rollback();
    }
    match tx.commit() {
        Ok(()) => {
            model.rows = view;
            model.commits += 1;
            Ok(())
        }
        Err(e) => {
            model.doubt = Some(view);
            Err(e)
        }
    }
}

/// One transaction of catalog changes on `DDL_TABLES` (docs/recovery.md rule 40): each
/// made (with rows), altered (a column added), filled or dropped, sometimes under a
/// savepoint rolled back to, and the whole committed or rolled back.
fn ddl_txn(db: &Database, rng: &mut SimRng, model: &mut Model) -> Result<(), Error> {
    let mut state = model.ddl.clone();
    let mut tx = db.begin();
    let mut saved: Option<DdlState> = None;
    let rows_of = |rng: &mut SimRng, extra: usize| -> Vec<Vec<Value>> {
        (0..1 + rng.below(40) as i64)
            .map(|k| {
                let mut r = vec![Value::Int8(k), Value::Int8(-k), Value::Text("d".repeat(30))];
                r.extend(std::iter::repeat_n(Value::Null, extra));
                r
            })
            .collect()
    };
    for _ in 0..1 + rng.below(4) {
        let name = DDL_TABLES[rng.below(2) as usize];
        match state.get(name).copied() {
            None => {
                tx.create_table_owning(name, schema(), db.default_table_kind(), Vec::new(), None)?;
                let rows = rows_of(rng, 0);
                tx.insert_many(name, &rows)?;
                state.insert(name, (0, rows.len() as u64));
            }
            Some((extra, n)) => match rng.below(3) {
                0 => {
                    tx.drop_table(name)?;
                    state.remove(name);
                }
                1 => {
                    let column = Column::new(&format!("c{extra}"), ColumnType::Int8);
                    tx.alter_table(name, &AlterOp::AddColumn(column))?;
                    state.insert(name, (extra + 1, n));
                }
                _ => {
                    let rows = rows_of(rng, extra);
                    tx.insert_many(name, &rows)?;
                    state.insert(name, (extra, n + rows.len() as u64));
                }
            },
        }
        if saved.is_none() && rng.chance(30) {
            tx.savepoint()?;
            saved = Some(state.clone());
        }
    }
    if let Some(at) = saved.filter(|_| rng.chance(50)) {
        tx.rollback_to_savepoint(1)?;
        state = at;
    }
    if rng.chance(25) {
        return tx.rollback();
    }
    model.ddl_doubt = Some(state.clone());
    tx.commit()?;
    model.ddl = state;
    model.ddl_doubt = None;
    Ok(())
}

/// The catalog workload's tables as recovery left them (Err: what is wrong with one).
fn ddl_found(db: &Database) -> Result<DdlState, String> {
    let names = db.table_names();
    let mut found = DdlState::new();
    for name in DDL_TABLES {
        if !names.iter().any(|n| n == name) {
            continue;
        }
        let columns = db.schema(name).map_err(|e| e.to_string())?.columns.len();
        let mut tx = db.begin();
        let rows = tx.scan(name).map_err(|e| format!("{name}: {e}"))?;
        if rows.iter().any(|(_, r)| r.len() != columns) {
            return Err(format!(
                "{name}: a row does not have the table's {columns} columns"
            ));
        }
        found.insert(name, (columns.saturating_sub(3), rows.len() as u64));
    }
    Ok(found)
}

/// Runs the workload until the scheduled crash fires (or a budget of transactions ends,
/// then crashes there).
/// Transactions and maintenance until the crash. Half the time a snapshot taken at the
/// start stays open throughout, so that undo piles up (and goes to files: the options
/// give it no memory); it must still read the rows as they were when it began. Returns
/// what that snapshot read wrong, if anything.
fn workload(
    db: &Database,
    vfs: &SimVfs,
    rng: &mut SimRng,
    model: &mut Model,
    next_key: &mut i64,
) -> Option<String> {
    let mut old = rng.chance(50).then(|| (db.begin(), model.rows.clone()));
    // What failed apart from the held snapshot's reads: a step, or a count after one.
    let mut failed = None;
    let mut completed = true;
    for _ in 0..60 {
        let r = match rng.below(20) {
            0 => db.checkpoint(),
            1 => db.vacuum(TABLE).map(|_| ()),
            3 => ddl_txn(db, rng, model),
            2 => match churn(db, rng) {
                Ok(None) => Ok(()),
                Ok(Some(w)) => {
                    failed.get_or_insert(w);
                    Ok(())
                }
                Err(e) => Err(e),
            },
            _ => run_txn(db, rng, model, next_key),
        };
        if r.is_err() || vfs.power_lost() {
            // Before the scheduled crash nothing may fail: no fault is injected, and
            // one thread works alone.
            if let (Err(e), false) = (&r, vfs.power_lost()) {
                failed.get_or_insert(format!("the workload failed: {e}"));
            }
            completed = false;
            break;
        }
    }
    let mut wrong = None;
    if let (true, Some((tx, rows))) = (completed, old.as_mut()) {
        match tx.scan(TABLE) {
            Ok(found) => {
                let found: BTreeMap<i64, i64> = found
                    .iter()
                    .filter_map(|(_, r)| match (&r[0], &r[1]) {
                        (Value::Int8(k), Value::Int8(v)) => Some((*k, *v)),
                        _ => None,
                    })
                    .collect();
                if found != *rows {
                    wrong = Some(format!(
                        "a snapshot held through the workload reads {} rows, {} were committed when it began",
                        found.len(),
                        rows.len()
                    ));
                }
            }
            // The database may have refused work (an injected fault) meanwhile.
            Err(_) if vfs.power_lost() => {}
            Err(e) => wrong = Some(format!("a snapshot held through the workload: {e}")),
        }
    }
    if completed {
        vfs.crash_now();
    }
    wrong.or(failed)
}

/// A scratch table (with an index) made, filled and sometimes dropped again, or emptied
/// (whole or in part) and vacuumed: the frames of a dropped table are freed unwritten,
/// recovery replays the table's records onto pages that may never have been written,
/// and VACUUM gives emptied pages back (the file cut, pages reused by the next scratch
/// table or by the main one). The table is not in the model; `walden check` after each
/// recovery covers it while it exists, and its rows are counted after the vacuum
/// (Some: what was wrong).
fn churn(db: &Database, rng: &mut SimRng) -> Result<Option<String>, Error> {
    if db.table_names().iter().any(|t| t == SCRATCH) {
        db.drop_table(SCRATCH)?;
    }
    db.create_table(SCRATCH, schema())?;
    db.create_index(&IndexSpec {
        name: "scratch_k",
        table: SCRATCH,
        columns: &["k"],
        ..IndexSpec::default()
    })?;
    let mut tx = db.begin();
    let rows: Vec<Vec<Value>> = (0..1 + rng.below(300) as i64)
        .map(|k| vec![Value::Int8(k), Value::Int8(-k), Value::Text("s".repeat(40))])
        .collect();
    tx.insert_many(SCRATCH, &rows)?;
    tx.commit()?;
    if rng.chance(50) {
        db.drop_table(SCRATCH)?;
    } else if rng.chance(50) {
        let all = rng.chance(50);
        let keep = |k: i64| !all && k % 3 == 0;
        let mut tx = db.begin();
        tx.modify_with(SCRATCH, |_, r| match r[0] {
            Value::Int8(k) if keep(k) => RowAction::Keep,
            _ => RowAction::Delete,
        })?;
        tx.commit()?;
        db.vacuum(SCRATCH)?;
        let want: Vec<i64> = (0..rows.len() as i64).filter(|&k| keep(k)).collect();
        let mut tx = db.begin();
        let mut got: Vec<i64> = tx
            .scan(SCRATCH)?
            .iter()
            .filter_map(|(_, r)| match r[0] {
                Value::Int8(k) => Some(k),
                _ => None,
            })
            .collect();
        tx.commit()?;
        got.sort_unstable();
        if got != want {
            return Ok(Some(format!(
                "the scratch table read {} rows after a vacuum, {} were kept",
                got.len(),
                want.len()
            )));
        }
    }
    Ok(None)
}

fn crash_mode(rng: &mut SimRng) -> CrashMode {
    match rng.below(4) {
        0 => CrashMode::DropUnsynced,
        1 => CrashMode::KeepUnsynced,
        2 => CrashMode::TearUnsynced,
        _ => CrashMode::Random,
    }
}

/// Opens after a crash, sometimes crashing during recovery and recovering again.
fn recover(
    vfs: &SimVfs,
    rng: &mut SimRng,
    protection: Protection,
    codec: WalCompression,
    report: &mut CrashReport,
) -> Result<Database, Error> {
    loop {
        vfs.restart(crash_mode(rng));
        let crash_again = rng.chance(20);
        if crash_again {
            vfs.crash_after_ops(1 + rng.below(40));
        }
        report.recoveries += 1;
        match Database::open(DIR, options(vfs, protection, codec)) {
            Ok(db) if !vfs.power_lost() => {
                if crash_again {
                    // The crash point was not reached: cancel it by restarting cleanly.
                    drop(db);
                    vfs.restart(CrashMode::KeepUnsynced);
                    report.recoveries += 1;
                    return Database::open(DIR, options(vfs, protection, codec));
                }
                return Ok(db);
            }
            Ok(db) => drop(db),
            Err(_) if vfs.power_lost() => {}
            Err(e) => return Err(e),
        }
    }
}

/// Compares the recovered table with the model.
fn verify(
    db: &Database,
    model: &mut Model,
    report: &mut CrashReport,
    torn_tolerated: bool,
) -> Result<(), Error> {
    let mut tx = db.begin();
    let mut found = BTreeMap::new();
    for (_, row) in tx.scan(TABLE)? {
        match (&row[0], &row[1]) {
            (Value::Int8(k), Value::Int8(v)) => {
                if found.insert(*k, *v).is_some() {
                    report.uncommitted_visible += 1;
                }
            }
            _ => report.fail(format!("row of unexpected shape {row:?}")),
        }
    }
    drop(tx);
    let committed = if let Some(d) = model.doubt.take() {
        if found == d {
            model.commits += 1;
            d
        } else {
            model.rows.clone()
        }
    } else {
        model.rows.clone()
    };
    for (k, v) in &committed {
        if found.get(k) != Some(v) {
            report.committed_lost += 1;
            if report.failures.len() < 10 {
                report
                    .failures
                    .push(format!("key {k}: committed {v}, found {:?}", found.get(k)));
            }
        }
    }
    for (k, v) in &found {
        if !committed.contains_key(k) {
            report.uncommitted_visible += 1;
            if report.failures.len() < 10 {
                report
                    .failures
                    .push(format!("key {k} = {v} visible but never committed"));
            }
        }
    }
    // The same rows through the primary key, in key order.
    let mut tx = db.begin();
    let mut by_key = Vec::new();
    tx.read(
        crate::Rows::index(PKEY, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
        crate::RowShape::default(),
        |_, row| {
            by_key.push((row[0].clone(), row[1].clone()));
            Ok::<_, crate::Error>(std::ops::ControlFlow::Continue(()))
        },
    )?;
    drop(tx);
    let want: Vec<(Value, Value)> = found
        .iter()
        .map(|(k, v)| (Value::Int8(*k), Value::Int8(*v)))
        .collect();
    if by_key != want {
        report.fail(format!(
            "read through {PKEY}: {} rows, the table has {}",
            by_key.len(),
            want.len()
        ));
    }
    let check = db.check()?;
    if let Some(p) = check.problems.first() {
        if torn_tolerated && p.contains("checksum") {
            // `none` mode detects a torn index page; it does not repair it.
            return Err(Error::CorruptIndex {
                index: String::new(),
                page: 0,
                reason: p.clone(),
            });
        }
    }
    for p in check.problems.iter().take(3) {
        report.fail(format!("check: {p}"));
    }
    // The catalog workload's tables: as committed, or as the commit in doubt left them.
    match ddl_found(db) {
        Ok(found) => {
            let doubt = model.ddl_doubt.take();
            if found == model.ddl || doubt.as_ref() == Some(&found) {
                model.ddl = found;
            } else {
                report.fail(format!(
                    "catalog workload: found {found:?}, committed {:?} (in doubt {doubt:?})",
                    model.ddl
                ));
                model.ddl = found;
            }
        }
        Err(e) => report.fail(format!("catalog workload: {e}")),
    }
    report.committed_checked += model.commits;
    model.commits = 0;
    model.rows = committed;
    Ok(())
}

/// Runs the simulation. Never panics: engine panics are caught and counted as failures.
pub fn run(cfg: &CrashConfig) -> CrashReport {
    let mut report = CrashReport {
        mode: cfg.protection.name().to_string(),
        compression: cfg
            .compression
            .map_or("off/lz4/zstd".to_string(), |c| c.name().to_string()),
        kind: cfg.kind.name().to_string(),
        seed: cfg.seed,
        ..CrashReport::default()
    };
    let mut db_no = 0u64;
    while report.crash_points < cfg.iterations {
        let n = (cfg.iterations - report.crash_points).min(ITERATIONS_PER_DATABASE);
        let before = report.crash_points;
        let seed = cfg.seed.wrapping_mul(1_000_003).wrapping_add(db_no);
        let r = catch_unwind(AssertUnwindSafe(|| {
            // Without a codec named, the databases take turns: off, lz4, zstd.
            let codec = cfg
                .compression
                .unwrap_or(WalCompression::ALL[(db_no % 3) as usize]);
            run_database(cfg.protection, codec, cfg.kind, seed, n, &mut report)
        }));
        if let Err(p) = r {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            report.fail(format!("seed {seed}: panic: {msg}"));
        }
        if report.crash_points == before {
            // A database that failed before its first crash point still counts one, so
            // that the loop ends.
            report.crash_points += 1;
        }
        db_no += 1;
    }
    report
}

/// One database through `n` crash points.
fn run_database(
    protection: Protection,
    codec: WalCompression,
    kind: TableKind,
    seed: u64,
    n: u64,
    report: &mut CrashReport,
) {
    let mut rng = SimRng::new(seed);
    let vfs = SimVfs::new(seed);
    let db = match Database::create(DIR, options(&vfs, protection, codec)) {
        Ok(db) => db,
        Err(e) => return report.fail(format!("seed {seed}: create: {e}")),
    };
    if let Err(e) = db.create_table_with(TABLE, schema(), kind) {
        return report.fail(format!("seed {seed}: create table: {e}"));
    }
    for (name, column, primary) in [(PKEY, "k", true), ("kv_v", "v", false)] {
        let spec = IndexSpec {
            name,
            table: TABLE,
            columns: &[column],
            primary,
            ..IndexSpec::default()
        };
        if let Err(e) = db.create_index(&spec) {
            return report.fail(format!("seed {seed}: create index {name}: {e}"));
        }
    }
    let mut db = Some(db);
    let mut model = Model::default();
    let mut next_key = 0i64;
    for i in 0..n {
        let Some(d) = db.take() else { return };
        vfs.crash_after_ops(1 + rng.below(400));
        if let Some(wrong) = workload(&d, &vfs, &mut rng, &mut model, &mut next_key) {
            report.fail(format!("seed {seed} point {i}: {wrong}"));
        }
        drop(d);
        report.crash_points += 1;
        match recover(&vfs, &mut rng, protection, codec, report) {
            Ok(d) => {
                match verify(&d, &mut model, report, protection == Protection::None) {
                    Ok(()) => {}
                    Err(Error::ChecksumMismatch { .. })
                    | Err(Error::CorruptPage { .. })
                    | Err(Error::CorruptIndex { .. })
                        if protection == Protection::None =>
                    {
                        report.torn_pages_detected += 1;
                        return;
                    }
                    Err(e) => return report.fail(format!("seed {seed} point {i}: verify: {e}")),
                }
                db = Some(d);
            }
            Err(Error::ChecksumMismatch { .. }) | Err(Error::CorruptPage { .. })
                if protection == Protection::None =>
            {
                // Detected, not repaired: the promise of `none` mode. Start over.
                report.torn_pages_detected += 1;
                return;
            }
            Err(e) => {
                if matches!(
                    e,
                    Error::ChecksumMismatch { .. } | Error::CorruptPage { .. }
                ) {
                    report.torn_pages_detected += 1;
                }
                return report.fail(format!("seed {seed} point {i}: recovery: {e}"));
            }
        }
    }
}
