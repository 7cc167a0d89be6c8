//! `walden bench keys`: the key-type experiment (issue 13, seed 002's W2). A table
//! `t(id <key> primary key, v int)` with a `bigserial` or a `uuid` key is loaded with
//! single-row inserts, then updated by key (uniformly, then skewed) and read by key, on
//! Walden, PostgreSQL and SQLite alike: seconds, WAL and sizes per part.
//!
//! The workload's shape lives here, once: every engine runs the same parts in the same
//! chunks with the same checkpoints, through [`KeysEngine`]; `keys/` holds one module per
//! engine and the output.

mod on_postgres;
mod on_sqlite;
mod on_walden;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use walden::rng::SimRng;

use crate::bench::TempDir;
use crate::postgres::find_bindir;
use crate::seed::Format;
use crate::CliError;

pub use report::KeysRow;

/// Statements per transaction, in every part that writes.
pub const STATEMENTS_PER_TRANSACTION: u64 = 1_000;
/// The load runs a CHECKPOINT before every this many rows; every part runs in chunks of
/// this many statements (PostgreSQL runs each chunk as one procedure call).
pub const CHUNK_STATEMENTS: u64 = 100_000;
/// The skewed updates: this percentage of them goes to the hot keys ...
pub const HOT_UPDATE_PERCENT: u64 = 75;
/// ... which are this percentage of the keys, the last loaded (recent rows are the hot
/// ones).
pub const HOT_KEY_PERCENT: u64 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyType {
    /// `bigserial primary key`: keys in load order.
    Bigserial,
    /// `uuid primary key` from gen_random_uuid(): keys in random order.
    Uuid,
}

impl KeyType {
    pub fn name(self) -> &'static str {
        match self {
            KeyType::Bigserial => "bigserial",
            KeyType::Uuid => "uuid",
        }
    }

    /// The table, the same text for Walden and PostgreSQL.
    pub fn create_table_sql(self) -> &'static str {
        match self {
            KeyType::Bigserial => "create table t (id bigserial primary key, v int)",
            KeyType::Uuid => "create table t (id uuid primary key, v int)",
        }
    }

    /// The load's insert with its one parameter, `v`. Walden's SQL has no function
    /// defaults yet, so the uuid is generated in the statement, on both servers.
    pub fn insert_sql(self) -> &'static str {
        match self {
            KeyType::Bigserial => "insert into t (v) values ($1)",
            KeyType::Uuid => "insert into t (id, v) values (gen_random_uuid(), $1)",
        }
    }
}

pub const UPDATE_SQL: &str = "update t set v = v + 1 where id = $1";
pub const LOOKUP_SQL: &str = "select v from t where id = $1";

/// The parts of the workload, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Load,
    UpdateUniform,
    UpdateSkewed,
    Lookup,
}

impl Part {
    pub const ALL: [Part; 4] = [
        Part::Load,
        Part::UpdateUniform,
        Part::UpdateSkewed,
        Part::Lookup,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Part::Load => "load",
            Part::UpdateUniform => "update_uniform",
            Part::UpdateSkewed => "update_skewed",
            Part::Lookup => "lookup",
        }
    }
}

/// What an engine has logged so far; a part's figures are the difference over it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogTotals {
    /// Bytes that reached the WAL files.
    pub physical_bytes: u64,
    /// Bytes of the WAL records before compression (PostgreSQL and SQLite: the same as
    /// physical).
    pub logical_bytes: u64,
    /// The part of the logical WAL that changed index pages (None: not reported).
    pub index_logical_bytes: Option<u64>,
    pub page_images: u64,
    /// Undo appended to Walden's undo log (undo tables; 0 elsewhere: PostgreSQL's heap and
    /// SQLite's WAL keep old versions in the table or the WAL itself).
    pub undo_bytes: u64,
}

impl LogTotals {
    fn since(&self, earlier: &LogTotals) -> LogTotals {
        LogTotals {
            physical_bytes: self.physical_bytes.saturating_sub(earlier.physical_bytes),
            logical_bytes: self.logical_bytes.saturating_sub(earlier.logical_bytes),
            index_logical_bytes: self
                .index_logical_bytes
                .zip(earlier.index_logical_bytes)
                .map(|(now, then)| now.saturating_sub(then)),
            page_images: self.page_images.saturating_sub(earlier.page_images),
            undo_bytes: self.undo_bytes.saturating_sub(earlier.undo_bytes),
        }
    }
}

/// The table after a part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sizes {
    /// `count(*)`.
    pub rows: u64,
    pub table_bytes: u64,
    /// The primary key index (0 where the table is its own index: SQLite).
    pub index_bytes: u64,
}

/// One engine in one configuration with the table `t` created. Every method that runs
/// statements returns the seconds they took (checkpoints and key picking by the driver
/// excluded); `tick` is called with the statements done so far in the chunk, for the
/// progress bar, by engines that can.
pub trait KeysEngine {
    fn checkpoint(&mut self) -> Result<(), CliError>;
    fn log_totals(&mut self) -> Result<LogTotals, CliError>;
    /// Inserts rows with `v` = first, first + 1, ..., committing every
    /// [`STATEMENTS_PER_TRANSACTION`] rows and after the last.
    fn load(&mut self, first: u64, count: u64, tick: &mut dyn FnMut(u64)) -> Result<f64, CliError>;
    /// Reads the loaded keys in load order (order by v), for the updates and lookups.
    /// Runs between the load and the updates, outside any measurement.
    fn collect_keys(&mut self) -> Result<u64, CliError>;
    /// `count` updates by key chosen with [`pick_key`], committing every
    /// [`STATEMENTS_PER_TRANSACTION`]. PostgreSQL seeds its own generator from `rng`.
    fn update(
        &mut self,
        count: u64,
        skewed: bool,
        rng: &mut SimRng,
        tick: &mut dyn FnMut(u64),
    ) -> Result<f64, CliError>;
    /// `count` lookups of uniformly chosen keys, in one read transaction (the driver
    /// calls it per chunk: a transaction per [`CHUNK_STATEMENTS`] lookups).
    fn lookup(
        &mut self,
        count: u64,
        rng: &mut SimRng,
        tick: &mut dyn FnMut(u64),
    ) -> Result<f64, CliError>;
    fn sizes(&mut self) -> Result<Sizes, CliError>;
    /// Closes the database or stops the server, reporting errors.
    fn finish(self: Box<Self>) -> Result<(), CliError>;
}

/// The index, in load order, of the key a statement uses: uniform among `key_count`
/// keys, or with `skewed`, [`HOT_UPDATE_PERCENT`] of the time among the last-loaded
/// [`HOT_KEY_PERCENT`] and otherwise among the others. (PostgreSQL's procedure in
/// `keys/on_postgres.rs` does the same in plpgsql.)
pub fn pick_key(rng: &mut SimRng, key_count: u64, skewed: bool) -> u64 {
    let hot = hot_keys(key_count);
    if skewed && key_count > hot {
        if rng.chance(HOT_UPDATE_PERCENT) {
            key_count - hot + rng.below(hot)
        } else {
            rng.below(key_count - hot)
        }
    } else {
        rng.below(key_count)
    }
}

/// `count` picks (positions among `key_count` keys), made before a part starts so that
/// its time is the statements'.
pub fn pick_keys(rng: &mut SimRng, key_count: u64, count: u64, skewed: bool) -> Vec<u64> {
    (0..count)
        .map(|_| pick_key(rng, key_count, skewed))
        .collect()
}

/// How many keys are hot: [`HOT_KEY_PERCENT`] of them, at least one.
pub fn hot_keys(key_count: u64) -> u64 {
    (key_count * HOT_KEY_PERCENT / 100).max(1)
}

#[derive(clap::Args)]
pub struct KeysArgs {
    /// Rows loaded (`v` is an int4 column, so at most 2^31 - 1).
    #[arg(long, default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    rows: u64,
    /// Updates in each of the two update parts (uniform, skewed); 0 skips them.
    #[arg(long, default_value_t = 1_000_000)]
    updates: u64,
    /// Point lookups; 0 skips them.
    #[arg(long, default_value_t = 1_000_000)]
    lookups: u64,
    /// Key types to run, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [KeyType::Bigserial, KeyType::Uuid])]
    key_types: Vec<KeyType>,
    /// Configurations to run, comma-separated (default: default, and postgres/fpw-on,
    /// postgres/fpw-off and sqlite). Walden: default, heap/cow, undo/cow, heap/full-page.
    /// PostgreSQL: postgres/fpw-on, postgres/fpw-off. SQLite: sqlite.
    #[arg(long, value_delimiter = ',')]
    configs: Vec<String>,
    /// PostgreSQL: auto (use it if installed), off, or the server's bin directory.
    #[arg(long, default_value = "auto")]
    postgres: String,
    /// Write keys.json, keys.svg and keys.png here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the tables, or the JSON array, to standard output.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

const WALDEN_CONFIGS: &[&str] = &["default", "heap/cow", "undo/cow", "heap/full-page"];
const POSTGRES_CONFIGS: &[&str] = &["postgres/fpw-on", "postgres/fpw-off"];
const SQLITE_CONFIG: &str = "sqlite";

fn message(text: impl Into<String>) -> CliError {
    CliError::io("bench keys", std::io::Error::other(text.into()))
}

fn choose_configs(args: &KeysArgs, have_postgres: bool) -> Result<Vec<String>, CliError> {
    if args.configs.is_empty() {
        let mut all = vec!["default".to_string()];
        if have_postgres {
            all.extend(POSTGRES_CONFIGS.iter().map(|s| s.to_string()));
        }
        all.push(SQLITE_CONFIG.to_string());
        return Ok(all);
    }
    for c in &args.configs {
        let known = WALDEN_CONFIGS.contains(&c.as_str())
            || POSTGRES_CONFIGS.contains(&c.as_str())
            || c == SQLITE_CONFIG;
        if !known {
            return Err(message(format!(
                "unknown configuration {c:?}; known: {}, {}, {SQLITE_CONFIG}",
                WALDEN_CONFIGS.join(", "),
                POSTGRES_CONFIGS.join(", ")
            )));
        }
        if c.starts_with("postgres/") && !have_postgres {
            return Err(message(format!(
                "{c} needs a PostgreSQL server (none found; scripts/install-postgres.sh installs one, or pass --postgres PATH)"
            )));
        }
    }
    Ok(args.configs.clone())
}

/// Starts one engine in one configuration, in `dir` where it keeps files, with `t`
/// created for `key`.
fn start_engine(
    config: &str,
    key: KeyType,
    dir: &Path,
    bindir: Option<&Path>,
) -> Result<(&'static str, Box<dyn KeysEngine>), CliError> {
    if config == SQLITE_CONFIG {
        return Ok(("sqlite", Box::new(on_sqlite::SqliteKeys::start(dir, key)?)));
    }
    if let Some(settings) = on_postgres::settings(config) {
        let bindir = bindir.ok_or_else(|| message(format!("{config} needs PostgreSQL")))?;
        let engine = on_postgres::PostgresKeys::start(bindir, &settings, key)?;
        return Ok(("postgres", Box::new(engine)));
    }
    let engine = on_walden::WaldenKeys::start(config, dir, key)?
        .ok_or_else(|| message(format!("unknown configuration {config:?}")))?;
    Ok(("walden", Box::new(engine)))
}

/// What one run is asked to do.
struct Plan {
    rows: u64,
    updates: u64,
    lookups: u64,
}

impl Plan {
    fn statements(&self, part: Part) -> u64 {
        match part {
            Part::Load => self.rows,
            Part::UpdateUniform | Part::UpdateSkewed => self.updates,
            Part::Lookup => self.lookups,
        }
    }
}

/// The generator of a part: fixed, so that every Walden and SQLite run picks the same keys.
fn part_seed(part: Part) -> u64 {
    match part {
        Part::Load => 1,
        Part::UpdateUniform => 2,
        Part::UpdateSkewed => 3,
        Part::Lookup => 4,
    }
}

/// A part's figures before the engine and configuration are attached.
struct PartResult {
    seconds: f64,
    checkpoint_seconds: f64,
    logged: LogTotals,
}

/// Runs one part in chunks of [`CHUNK_STATEMENTS`]: a CHECKPOINT before the part, and
/// for the load before every chunk. WAL is counted from before the first checkpoint to
/// the end of the part (the checkpoints' own WAL included); seconds are the statements'
/// and the checkpoints' apart.
fn run_part(
    engine: &mut dyn KeysEngine,
    part: Part,
    statements: u64,
    bar: &ProgressBar,
) -> Result<PartResult, CliError> {
    let before = engine.log_totals()?;
    let mut rng = SimRng::new(part_seed(part));
    let (mut seconds, mut checkpoint_seconds) = (0.0, 0.0);
    let mut done = 0;
    while done < statements {
        if done == 0 || part == Part::Load {
            let started = Instant::now();
            engine.checkpoint()?;
            checkpoint_seconds += started.elapsed().as_secs_f64();
        }
        let count = CHUNK_STATEMENTS.min(statements - done);
        let mut tick = |n: u64| bar.set_position(done + n);
        seconds += match part {
            Part::Load => engine.load(done + 1, count, &mut tick)?,
            Part::UpdateUniform => engine.update(count, false, &mut rng, &mut tick)?,
            Part::UpdateSkewed => engine.update(count, true, &mut rng, &mut tick)?,
            Part::Lookup => engine.lookup(count, &mut rng, &mut tick)?,
        };
        done += count;
        bar.set_position(done);
    }
    let logged = engine.log_totals()?.since(&before);
    Ok(PartResult {
        seconds,
        checkpoint_seconds,
        logged,
    })
}

/// The whole workload on one engine: one row per part that has statements.
fn run_engine(
    engine: &mut dyn KeysEngine,
    name: (&'static str, &str),
    key: KeyType,
    plan: &Plan,
) -> Result<Vec<KeysRow>, CliError> {
    let (engine_name, config) = name;
    let mut rows = Vec::new();
    for part in Part::ALL {
        let statements = plan.statements(part);
        if statements == 0 {
            continue;
        }
        let bar = progress_bar(
            statements,
            &format!("{config} {}: {}", key.name(), part.name()),
        );
        let result = run_part(engine, part, statements, &bar)?;
        bar.finish_and_clear();
        let sizes = engine.sizes()?;
        rows.push(KeysRow {
            engine: engine_name,
            config: config.to_string(),
            key_type: key.name(),
            part: part.name(),
            statements,
            rows: sizes.rows,
            seconds: result.seconds,
            checkpoint_seconds: result.checkpoint_seconds,
            wal_bytes: result.logged.physical_bytes,
            wal_logical_bytes: result.logged.logical_bytes,
            index_wal_bytes: result.logged.index_logical_bytes,
            page_images: result.logged.page_images,
            undo_bytes: result.logged.undo_bytes,
            table_bytes: sizes.table_bytes,
            index_bytes: sizes.index_bytes,
        });
        if part == Part::Load && plan.updates + plan.lookups > 0 {
            let keys = engine.collect_keys()?;
            if keys != plan.rows {
                return Err(message(format!(
                    "{config} {}: {keys} keys after loading {} rows",
                    key.name(),
                    plan.rows
                )));
            }
        }
    }
    Ok(rows)
}

fn progress_bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(what.to_string());
    bar
}

pub fn run(args: &KeysArgs) -> Result<ExitCode, CliError> {
    let bindir = match args.postgres.as_str() {
        "off" => None,
        "auto" => find_bindir(None),
        path => Some(find_bindir(Some(Path::new(path))).ok_or_else(|| {
            message(format!(
                "{path} holds no PostgreSQL server (postgres, initdb, pg_ctl, psql)"
            ))
        })?),
    };
    let configs = choose_configs(args, bindir.is_some())?;
    let plan = Plan {
        rows: args.rows,
        updates: args.updates,
        lookups: args.lookups,
    };
    let mut rows = Vec::new();
    for config in &configs {
        for &key in &args.key_types {
            let dir = TempDir::create()?;
            let (engine_name, mut engine) =
                start_engine(config, key, &dir.path, bindir.as_deref())?;
            rows.extend(run_engine(
                engine.as_mut(),
                (engine_name, config),
                key,
                &plan,
            )?);
            // The engine is done with `dir` before it is removed.
            engine.finish()?;
        }
    }
    crate::seed::print_results(
        args.format,
        || report::to_json(&rows),
        || report::render_table(&rows),
        bindir.is_none() && args.postgres == "auto",
    )?;
    if let Some(dir) = &args.out {
        report::write_outputs(dir, &rows)?.announce();
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skewed_keys_hit_the_last_loaded_percent_three_times_in_four() {
        let key_count = 10_000;
        let hot = hot_keys(key_count);
        assert_eq!(hot, 100);
        let mut rng = SimRng::new(9);
        let picks: Vec<u64> = (0..100_000)
            .map(|_| pick_key(&mut rng, key_count, true))
            .collect();
        assert!(picks.iter().all(|&k| k < key_count));
        let in_hot = picks.iter().filter(|&&k| k >= key_count - hot).count();
        assert!((74_000..76_000).contains(&in_hot), "{in_hot}");
        // Uniform picks land in the hot keys one time in a hundred.
        let uniform_hot = (0..100_000)
            .map(|_| pick_key(&mut rng, key_count, false))
            .filter(|&k| k >= key_count - hot)
            .count();
        assert!((800..1_200).contains(&uniform_hot), "{uniform_hot}");
        // One key: always that one.
        assert_eq!(pick_key(&mut rng, 1, true), 0);
    }
}
