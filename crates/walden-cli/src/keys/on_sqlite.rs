//! The key-type workload on SQLite, the embedded anchor: journal_mode=WAL,
//! synchronous=FULL, prepared statements, the same transactions as the servers. A
//! `bigserial` key is SQLite's `INTEGER PRIMARY KEY` (the rowid); a uuid key is a 16-byte
//! BLOB from randomblob(16) as the primary key of a WITHOUT ROWID table, which SQLite
//! recommends for a non-integer key on small rows: either way the table is one B-tree
//! ordered by the key, with no separate index.
//!
//! SQLite's WAL holds whole pages, each frame a page and a 24-byte header after a 32-byte
//! file header. Automatic checkpoints are off, and the benchmark's checkpoints truncate
//! the WAL file, so the bytes written to it are the sizes it reached before each
//! truncation plus its size now.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rusqlite::types::Value;
use rusqlite::{params, Connection};
use walden::rng::SimRng;

use super::{pick_keys, KeyType, KeysEngine, LogTotals, Sizes, STATEMENTS_PER_TRANSACTION};
use crate::CliError;

/// The page cache, the size of Walden's buffer pool and of the cluster's shared_buffers
/// (SQLite's default is 2 MiB).
const CACHE_KIB: u64 = 256 * 1024;
const WAL_HEADER_BYTES: u64 = 32;
const WAL_FRAME_HEADER_BYTES: u64 = 24;

pub struct SqliteKeys {
    conn: Connection,
    wal_path: PathBuf,
    page_size: u64,
    insert_sql: &'static str,
    /// Bytes and frames of the WAL file truncated by earlier checkpoints.
    truncated: LogTotals,
    /// The loaded keys in load order (`collect_keys`).
    keys: Vec<Value>,
}

fn sqlite_error(what: &str, e: impl std::fmt::Display) -> CliError {
    CliError::io(
        "bench keys",
        std::io::Error::other(format!("sqlite: {what}: {e}")),
    )
}

/// A count or size SQLite returns as a (never negative) integer.
fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl SqliteKeys {
    pub fn start(dir: &Path, key: KeyType) -> Result<SqliteKeys, CliError> {
        let path = dir.join("keys.sqlite");
        let conn = Connection::open(&path).map_err(|e| sqlite_error("open", e))?;
        let (table, insert_sql) = match key {
            KeyType::Bigserial => (
                "create table t (id integer primary key, v int)",
                "insert into t (v) values (?1)",
            ),
            KeyType::Uuid => (
                "create table t (id blob primary key, v int) without rowid",
                "insert into t (id, v) values (randomblob(16), ?1)",
            ),
        };
        let setup = format!(
            "pragma journal_mode = wal; pragma synchronous = full; \
             pragma wal_autocheckpoint = 0; pragma cache_size = -{CACHE_KIB}; {table};"
        );
        conn.execute_batch(&setup)
            .map_err(|e| sqlite_error("setup", e))?;
        let page_size: i64 = conn
            .query_row("pragma page_size", [], |r| r.get(0))
            .map_err(|e| sqlite_error("page_size", e))?;
        let mut wal_path = path.into_os_string();
        wal_path.push("-wal");
        Ok(SqliteKeys {
            conn,
            wal_path: PathBuf::from(wal_path),
            page_size: unsigned(page_size),
            insert_sql,
            truncated: LogTotals::default(),
            keys: Vec::new(),
        })
    }

    /// What the WAL file holds now.
    fn wal_file(&self) -> Result<LogTotals, CliError> {
        let bytes = match std::fs::metadata(&self.wal_path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => {
                return Err(CliError::io(
                    format!("sqlite: reading {}", self.wal_path.display()),
                    e,
                ))
            }
        };
        let frames =
            bytes.saturating_sub(WAL_HEADER_BYTES) / (self.page_size + WAL_FRAME_HEADER_BYTES);
        Ok(LogTotals {
            physical_bytes: bytes,
            logical_bytes: bytes,
            index_logical_bytes: None,
            page_images: frames,
            undo_bytes: 0,
        })
    }

    fn batch(&self, sql: &str) -> Result<(), CliError> {
        self.conn
            .execute_batch(sql)
            .map_err(|e| sqlite_error(sql, e))
    }

    /// Runs `count` statements in transactions of `per_transaction`; `statement(i)` runs
    /// the i-th and returns how many rows it touched, which must be one.
    fn in_transactions(
        &self,
        count: u64,
        per_transaction: u64,
        tick: &mut dyn FnMut(u64),
        statement: &mut dyn FnMut(u64) -> rusqlite::Result<usize>,
    ) -> Result<f64, CliError> {
        let started = Instant::now();
        let mut done = 0;
        while done < count {
            let end = (done + per_transaction).min(count);
            self.batch("begin")?;
            for i in done..end {
                match statement(i) {
                    Ok(1) => {}
                    Ok(n) => return Err(sqlite_error("statement", format!("{n} rows, not 1"))),
                    Err(e) => return Err(sqlite_error("statement", e)),
                }
            }
            self.batch("commit")?;
            done = end;
            tick(done);
        }
        Ok(started.elapsed().as_secs_f64())
    }
}

impl KeysEngine for SqliteKeys {
    fn checkpoint(&mut self) -> Result<(), CliError> {
        let before = self.wal_file()?;
        let busy: i64 = self
            .conn
            .query_row("pragma wal_checkpoint(truncate)", [], |r| r.get(0))
            .map_err(|e| sqlite_error("checkpoint", e))?;
        if busy != 0 {
            return Err(sqlite_error(
                "checkpoint",
                "busy: the WAL was not truncated",
            ));
        }
        self.truncated.physical_bytes += before.physical_bytes;
        self.truncated.logical_bytes += before.logical_bytes;
        self.truncated.page_images += before.page_images;
        Ok(())
    }

    fn log_totals(&mut self) -> Result<LogTotals, CliError> {
        let now = self.wal_file()?;
        Ok(LogTotals {
            physical_bytes: self.truncated.physical_bytes + now.physical_bytes,
            logical_bytes: self.truncated.logical_bytes + now.logical_bytes,
            index_logical_bytes: None,
            page_images: self.truncated.page_images + now.page_images,
            undo_bytes: 0,
        })
    }

    fn load(&mut self, first: u64, count: u64, tick: &mut dyn FnMut(u64)) -> Result<f64, CliError> {
        let mut insert = self
            .conn
            .prepare_cached(self.insert_sql)
            .map_err(|e| sqlite_error("prepare", e))?;
        self.in_transactions(count, STATEMENTS_PER_TRANSACTION, tick, &mut |i| {
            insert.execute(params![(first + i) as i64])
        })
    }

    fn collect_keys(&mut self) -> Result<u64, CliError> {
        let mut select = self
            .conn
            .prepare("select id from t order by v")
            .map_err(|e| sqlite_error("prepare", e))?;
        let keys = select
            .query_map([], |r| r.get::<_, Value>(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<Value>>>())
            .map_err(|e| sqlite_error("select id", e))?;
        drop(select);
        self.keys = keys;
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
        let mut update = self
            .conn
            .prepare_cached("update t set v = v + 1 where id = ?1")
            .map_err(|e| sqlite_error("prepare", e))?;
        let keys = &self.keys;
        self.in_transactions(count, STATEMENTS_PER_TRANSACTION, tick, &mut |i| {
            update.execute([&keys[picks[i as usize] as usize]])
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
        let mut lookup = self
            .conn
            .prepare_cached("select v from t where id = ?1")
            .map_err(|e| sqlite_error("prepare", e))?;
        let keys = &self.keys;
        self.in_transactions(count, count, tick, &mut |i| {
            lookup
                .query_row([&keys[picks[i as usize] as usize]], |r| r.get::<_, i64>(0))
                .map(|_| 1)
        })
    }

    fn sizes(&mut self) -> Result<Sizes, CliError> {
        let rows: i64 = self
            .conn
            .query_row("select count(*) from t", [], |r| r.get(0))
            .map_err(|e| sqlite_error("count(*)", e))?;
        // dbstat (compiled into the bundled SQLite) gives each B-tree's pages: `t`, and
        // the index SQLite makes for a primary key that is not the table's own key.
        let (table_bytes, index_bytes): (i64, i64) = self
            .conn
            .query_row(
                "select coalesce(sum(pgsize) filter (where name = 't'), 0), \
                        coalesce(sum(pgsize) filter (where name in \
                          (select name from sqlite_schema where type = 'index' and tbl_name = 't')), 0) \
                 from dbstat",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| sqlite_error("dbstat", e))?;
        Ok(Sizes {
            rows: unsigned(rows),
            table_bytes: unsigned(table_bytes),
            index_bytes: unsigned(index_bytes),
        })
    }

    fn finish(self: Box<Self>) -> Result<(), CliError> {
        self.conn.close().map_err(|(_, e)| sqlite_error("close", e))
    }
}
