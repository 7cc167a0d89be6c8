//! The key-type workload on Walden, in process: a fresh database in a temporary
//! directory, one SQL session, and the statements run through `Session::prepare` /
//! `execute_prepared`, as a client of the SQL layer would run them.

use std::path::Path;
use std::time::Instant;

use walden::rng::SimRng;
use walden::{Database, Value};
use walden_sql::{Prepared, Session, SqlError};

use super::{
    pick_keys, KeyType, KeysEngine, LogTotals, Sizes, LOOKUP_SQL, STATEMENTS_PER_TRANSACTION,
    UPDATE_SQL,
};
use crate::seed::walden_options;
use crate::CliError;

/// The background checkpointer's triggers, set as far out as the PostgreSQL cluster's
/// (`max_wal_size` 8GB, `checkpoint_timeout` 1h): only the benchmark's CHECKPOINTs run.
const CHECKPOINT_WAL_BYTES: u64 = 8 << 30;
const CHECKPOINT_INTERVAL_SECS: u64 = 3600;

pub struct WaldenKeys {
    db: Database,
    session: Session,
    insert: Prepared,
    update: Prepared,
    lookup: Prepared,
    /// The loaded keys in load order (`collect_keys`).
    keys: Vec<Value>,
}

fn sql_error(what: &str, e: SqlError) -> CliError {
    unexpected(what, &e.message)
}

/// A statement that did not do what the workload needs (no row updated, none found).
fn unexpected(what: &str, detail: &str) -> CliError {
    CliError::io(
        "bench keys",
        std::io::Error::other(format!("walden: {what}: {detail}")),
    )
}

impl WaldenKeys {
    /// A new database in `dir` in a configuration of `walden bench seed` (None for a
    /// name that is not one), with `t` created.
    pub fn start(config: &str, dir: &Path, key: KeyType) -> Result<Option<WaldenKeys>, CliError> {
        let Some(opts) = walden_options(config) else {
            return Ok(None);
        };
        let opts = walden::Options {
            checkpoint_wal_bytes: CHECKPOINT_WAL_BYTES,
            checkpoint_interval_secs: CHECKPOINT_INTERVAL_SECS,
            ..opts
        };
        let db = Database::create(dir, opts)?;
        // A fixed seed: gen_random_uuid() makes the same keys in every run.
        let mut session = Session::with_seed(&db, 1);
        let prepare = |sql: &str| session.prepare(sql).map_err(|e| sql_error(sql, e));
        let (insert, update, lookup) = (
            prepare(key.insert_sql())?,
            prepare(UPDATE_SQL)?,
            prepare(LOOKUP_SQL)?,
        );
        let create = key.create_table_sql();
        session
            .execute_one(create)
            .map_err(|e| sql_error(create, e))?;
        Ok(Some(WaldenKeys {
            db,
            session,
            insert,
            update,
            lookup,
            keys: Vec::new(),
        }))
    }

    fn execute(&mut self, sql: &str) -> Result<walden_sql::StatementResult, CliError> {
        self.session.execute_one(sql).map_err(|e| sql_error(sql, e))
    }

    /// Runs `count` statements in transactions of [`STATEMENTS_PER_TRANSACTION`] (one
    /// transaction for all when `per_transaction` is None); `statement(i)` runs the i-th.
    fn in_transactions(
        &mut self,
        count: u64,
        per_transaction: Option<u64>,
        tick: &mut dyn FnMut(u64),
        statement: &mut dyn FnMut(&mut Self, u64) -> Result<(), CliError>,
    ) -> Result<f64, CliError> {
        let per_transaction = per_transaction.unwrap_or(count);
        let started = Instant::now();
        let mut done = 0;
        while done < count {
            let end = (done + per_transaction).min(count);
            self.execute("begin")?;
            for i in done..end {
                statement(self, i)?;
            }
            self.execute("commit")?;
            done = end;
            tick(done);
        }
        Ok(started.elapsed().as_secs_f64())
    }
}

impl KeysEngine for WaldenKeys {
    fn checkpoint(&mut self) -> Result<(), CliError> {
        Ok(self.db.checkpoint()?)
    }

    fn log_totals(&mut self) -> Result<LogTotals, CliError> {
        let stats = self.db.stats();
        Ok(LogTotals {
            physical_bytes: stats.wal_bytes_written,
            logical_bytes: stats.wal_record_bytes,
            index_logical_bytes: Some(stats.index_wal_bytes),
            page_images: stats.page_images,
            undo_bytes: stats.undo_bytes,
        })
    }

    fn load(&mut self, first: u64, count: u64, tick: &mut dyn FnMut(u64)) -> Result<f64, CliError> {
        let per_transaction = Some(STATEMENTS_PER_TRANSACTION);
        self.in_transactions(count, per_transaction, tick, &mut |me, i| {
            // `rows` is at most i32::MAX (KeysArgs), so v fits.
            let v = Value::Int4((first + i) as i32);
            let r = me.session.execute_prepared(&me.insert, &[v]);
            match r {
                Ok(r) if r.tag == "INSERT 0 1" => Ok(()),
                Ok(r) => Err(unexpected("insert", &r.tag)),
                Err(e) => Err(sql_error("insert", e)),
            }
        })
    }

    fn collect_keys(&mut self) -> Result<u64, CliError> {
        let r = self.execute("select id from t order by v")?;
        self.keys = r
            .rows
            .into_iter()
            .filter_map(|row| row.into_iter().next())
            .collect();
        Ok(self.keys.len() as u64)
    }

    fn update(
        &mut self,
        count: u64,
        skewed: bool,
        rng: &mut SimRng,
        tick: &mut dyn FnMut(u64),
    ) -> Result<f64, CliError> {
        let key_count = self.keys.len() as u64;
        let picks = pick_keys(rng, key_count, count, skewed);
        let per_transaction = Some(STATEMENTS_PER_TRANSACTION);
        self.in_transactions(count, per_transaction, tick, &mut |me, i| {
            let key = me.keys[picks[i as usize] as usize].clone();
            match me.session.execute_prepared(&me.update, &[key]) {
                Ok(r) if r.tag == "UPDATE 1" => Ok(()),
                Ok(r) => Err(unexpected("update", &r.tag)),
                Err(e) => Err(sql_error("update", e)),
            }
        })
    }

    fn lookup(
        &mut self,
        count: u64,
        rng: &mut SimRng,
        tick: &mut dyn FnMut(u64),
    ) -> Result<f64, CliError> {
        let key_count = self.keys.len() as u64;
        let picks = pick_keys(rng, key_count, count, false);
        self.in_transactions(count, None, tick, &mut |me, i| {
            let key = me.keys[picks[i as usize] as usize].clone();
            match me.session.execute_prepared(&me.lookup, &[key]) {
                Ok(r) if r.rows.len() == 1 => Ok(()),
                Ok(r) => Err(unexpected("lookup", &format!("{} rows", r.rows.len()))),
                Err(e) => Err(sql_error("lookup", e)),
            }
        })
    }

    fn sizes(&mut self) -> Result<Sizes, CliError> {
        let r = self.execute("select count(*) from t")?;
        let rows = match r.rows.first().and_then(|row| row.first()) {
            Some(Value::Int8(n)) => u64::try_from(*n).unwrap_or(0),
            other => return Err(unexpected("count(*)", &format!("{other:?}"))),
        };
        let index_pages: u64 = self.db.indexes("t")?.iter().map(|ix| ix.pages).sum();
        Ok(Sizes {
            rows,
            table_bytes: self.db.table_bytes("t")?,
            index_bytes: index_pages * self.db.page_size() as u64,
        })
    }

    fn finish(self: Box<Self>) -> Result<(), CliError> {
        let WaldenKeys { db, session, .. } = *self;
        drop(session);
        Ok(db.close()?)
    }
}
