//! `walden bench seed`: the seed workload W1 (create, insert, update all, sparse update,
//! delete all, vacuum; a CHECKPOINT before each statement) as SQL, on fresh Walden
//! databases in each configuration and, when a server is installed, on throwaway
//! PostgreSQL clusters — the same statements, measured the same way, side by side.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use walden::{Database, Options, Protection, TableKind};
use walden_sql::Session;

use crate::bench::TempDir;
use crate::postgres::{find_bindir, Cluster, Measure};
use crate::seed_report::{self, SeedRow};
use crate::CliError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Data {
    /// `lpad('x',100,'x')`, as in the seed article.
    Lpad,
    /// 100 hex characters of md5 of random numbers: incompressible.
    Random,
}

impl Data {
    fn name(self) -> &'static str {
        match self {
            Data::Lpad => "lpad",
            Data::Random => "random",
        }
    }

    fn text_expr(self) -> &'static str {
        match self {
            Data::Lpad => "lpad('x',100,'x')",
            Data::Random => "substr(md5(random()::text)||md5(random()::text)||md5(random()::text)||md5(random()::text),1,100)",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(clap::Args)]
pub struct SeedArgs {
    /// Rows inserted by the insert statement.
    #[arg(long, default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    rows: u64,
    /// Configurations to run, comma-separated (default: all). Walden (table kind /
    /// torn-page protection): default, heap/cow, heap/full-page, heap/none, undo/cow,
    /// undo/full-page. PostgreSQL: postgres/fpw-on, postgres/fpw-off, postgres/fpw-on/lz4.
    #[arg(long, value_delimiter = ',')]
    configs: Vec<String>,
    /// PostgreSQL: auto (use it if installed), off, or the server's bin directory.
    #[arg(long, default_value = "auto")]
    postgres: String,
    /// The text column's data.
    #[arg(long, value_enum, default_value_t = Data::Lpad)]
    data: Data,
    /// Write seed.csv, seed.json, seed.svg and seed.png here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the table, or the JSON array, to standard output.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

const WALDEN_CONFIGS: &[&str] = &[
    "default",
    "heap/cow",
    "heap/full-page",
    "heap/none",
    "undo/cow",
    "undo/full-page",
];
const POSTGRES_CONFIGS: &[&str] = &["postgres/fpw-on", "postgres/fpw-off", "postgres/fpw-on/lz4"];

/// The statements of W1, by name, exactly as both engines run them.
pub fn statements(rows: u64, data: Data) -> Vec<(&'static str, String)> {
    let cols = format!(
        "generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,{} g",
        data.text_expr()
    );
    vec![
        (
            "create",
            format!("create table demo as select {cols} from generate_series(0,0)"),
        ),
        (
            "insert",
            format!("insert into demo select {cols} from generate_series(1,{rows})"),
        ),
        ("update_all", "update demo set b=b+1".into()),
        (
            "update_sparse",
            "update demo set b=b+1 where mod(a,10)=1".into(),
        ),
        ("delete", "delete from demo".into()),
        ("vacuum", "vacuum demo".into()),
    ]
}

/// Options of a Walden configuration, `kind/protection`: the table kind (which the
/// statements, the same as PostgreSQL's, get as the database's default kind) and the
/// torn-page protection. `default` is a new database with no settings, as `walden sql`
/// and `walden serve` open it (the buffer pool a quarter of the machine's RAM); the
/// others keep the engine's fixed 256 MiB pool, so that they compare table kinds and
/// protection modes alone.
pub fn walden_options(config: &str) -> Option<Options> {
    let (default_table_kind, protection) = match config {
        "default" => return Some(crate::memory::options(None)),
        "heap/cow" => (TableKind::Heap, Protection::Cow),
        "heap/full-page" => (TableKind::Heap, Protection::FullPage),
        "heap/none" => (TableKind::Heap, Protection::None),
        "undo/cow" => (TableKind::Undo, Protection::Cow),
        "undo/full-page" => (TableKind::Undo, Protection::FullPage),
        _ => return None,
    };
    Some(Options {
        protection,
        default_table_kind,
        ..Options::default()
    })
}

fn postgres_settings(config: &str) -> Option<Vec<(&'static str, &'static str)>> {
    Some(match config {
        "postgres/fpw-on" => vec![("full_page_writes", "on"), ("wal_compression", "off")],
        "postgres/fpw-off" => vec![("full_page_writes", "off"), ("wal_compression", "off")],
        "postgres/fpw-on/lz4" => vec![("full_page_writes", "on"), ("wal_compression", "lz4")],
        _ => return None,
    })
}

fn message(text: impl Into<String>) -> CliError {
    CliError::io("bench seed", std::io::Error::other(text.into()))
}

fn sql_error(stmt: &str, e: walden_sql::SqlError) -> CliError {
    message(format!("{stmt}: {}", e.message))
}

/// Runs W1 on a fresh Walden database in `dir`. `wal_file_bytes`, when given, reads how
/// many bytes reached the WAL files so far: each row then carries that count's change
/// over its statement, for the accounting test.
pub fn run_walden(
    config: &str,
    rows: u64,
    data: Data,
    opts: Options,
    dir: &Path,
    step: &mut dyn FnMut(&str),
    wal_file_bytes: Option<&dyn Fn() -> u64>,
) -> Result<Vec<(SeedRow, Option<u64>)>, CliError> {
    let db = Database::create(dir, opts)?;
    let mut session = Session::with_seed(&db, 1);
    session.set_statement_stats(true);
    let mut out = Vec::new();
    for (name, sql) in statements(rows, data) {
        step(&format!("{config}: {name}"));
        db.checkpoint()?;
        let before = db.stats();
        let files_before = wal_file_bytes.map(|f| f());
        let r = session.execute_one(&sql).map_err(|e| sql_error(name, e))?;
        let stats = r
            .stats
            .clone()
            .ok_or_else(|| CliError::io("seed", std::io::Error::other("no statement stats")))?;
        let files_delta = wal_file_bytes.zip(files_before).map(|(f, b)| f() - b);
        // The pages the statement dirtied reach the data file by the next checkpoint.
        db.checkpoint()?;
        let written = db.stats().since(&before);
        out.push((
            SeedRow {
                engine: "walden",
                config: config.to_string(),
                data: data.name(),
                rows,
                statement: name,
                wal_bytes: stats.wal_bytes_written,
                wal_logical_bytes: stats.wal_record_bytes,
                page_images: stats.page_images,
                undo_bytes: stats.undo_bytes,
                undo_file_bytes: stats.undo_bytes_spilled,
                data_bytes_written: written.data_bytes_written,
                table_bytes: db.table_bytes("demo")?,
                file_bytes: db.data_file_bytes()?,
                seconds: r.elapsed.as_secs_f64(),
            },
            files_delta,
        ));
    }
    drop(session);
    db.close()?;
    Ok(out)
}

fn run_postgres(
    bindir: &Path,
    config: &str,
    rows: u64,
    data: Data,
    step: &mut dyn FnMut(&str),
) -> Result<Vec<SeedRow>, CliError> {
    let settings = postgres_settings(config)
        .ok_or_else(|| message(format!("unknown configuration {config}")))?;
    let cluster = Cluster::start(bindir, &settings)?;
    let mut out = Vec::new();
    for (name, sql) in statements(rows, data) {
        step(&format!("{config}: {name}"));
        cluster.query("checkpoint")?;
        let m = cluster.measure(&sql)?;
        // PostgreSQL's table is its own files: its size is both.
        let table_bytes = cluster.table_bytes("demo")?;
        out.push(SeedRow {
            engine: "postgres",
            config: config.to_string(),
            data: data.name(),
            rows,
            statement: name,
            wal_bytes: m.wal_bytes,
            // The LSN delta counts records as PostgreSQL appends them: its logical WAL.
            wal_logical_bytes: m.wal_bytes,
            page_images: m.page_images,
            // PostgreSQL's heap keeps old row versions in the table: it has no undo.
            undo_bytes: 0,
            undo_file_bytes: 0,
            data_bytes_written: m.data_bytes_written,
            table_bytes,
            file_bytes: table_bytes,
            seconds: m.seconds,
        });
    }
    cluster.stop()?;
    Ok(out)
}

fn choose_configs(args: &SeedArgs, have_postgres: bool) -> Result<Vec<String>, CliError> {
    if args.configs.is_empty() {
        let mut all: Vec<String> = WALDEN_CONFIGS.iter().map(|s| s.to_string()).collect();
        if have_postgres {
            all.extend(POSTGRES_CONFIGS.iter().map(|s| s.to_string()));
        }
        return Ok(all);
    }
    for c in &args.configs {
        let known = WALDEN_CONFIGS.contains(&c.as_str()) || POSTGRES_CONFIGS.contains(&c.as_str());
        if !known {
            return Err(message(format!(
                "unknown configuration {c:?}; known: {}, {}",
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

pub fn run(args: &SeedArgs) -> Result<ExitCode, CliError> {
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
    let bar = ProgressBar::new((configs.len() * 6) as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut step = |what: &str| {
        bar.set_message(what.to_string());
        bar.inc(1);
    };
    let mut rows = Vec::new();
    for config in &configs {
        if let Some(opts) = walden_options(config) {
            let dir = TempDir::create()?;
            let r = run_walden(
                config, args.rows, args.data, opts, &dir.path, &mut step, None,
            )?;
            rows.extend(r.into_iter().map(|(row, _)| row));
        } else if let Some(b) = &bindir {
            rows.extend(run_postgres(b, config, args.rows, args.data, &mut step)?);
        }
    }
    bar.finish_and_clear();
    print_results(
        args.format,
        || seed_report::to_json(&rows),
        || seed_report::render_table(&rows),
        bindir.is_none() && args.postgres == "auto",
    )?;
    if let Some(dir) = &args.out {
        seed_report::write_outputs(dir, &rows)?.announce();
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a benchmark's results to standard output: its tables (with a hint when no
/// PostgreSQL server was found to run beside Walden), or its JSON array.
pub(crate) fn print_results(
    format: Format,
    json: impl FnOnce() -> serde_json::Value,
    table: impl FnOnce() -> String,
    no_postgres: bool,
) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => {
            let text = serde_json::to_string_pretty(&json()).map_err(|e| message(e.to_string()))?;
            outln!(out, "{text}")?;
        }
        Format::Table => {
            outln!(out, "{}", table())?;
            if no_postgres {
                outln!(
                    out,
                    "(no PostgreSQL server found: scripts/install-postgres.sh installs one)"
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;
    use walden::vfs::SimVfs;

    /// The bench's WAL figure for each statement is what reached the WAL files, in every
    /// configuration, heap and undo tables alike.
    #[test]
    fn reported_wal_equals_wal_file_bytes() {
        assert!(WALDEN_CONFIGS.contains(&"undo/cow") && WALDEN_CONFIGS.contains(&"undo/full-page"));
        for config in WALDEN_CONFIGS {
            for data in [Data::Lpad, Data::Random] {
                let vfs = SimVfs::new(7);
                let opts = Options {
                    vfs: Arc::new(vfs.clone()),
                    background: false,
                    ..walden_options(config).unwrap()
                };
                let probe = || vfs.bytes_written_with_prefix(Path::new("db/wal"));
                let rows = run_walden(
                    config,
                    3000,
                    data,
                    opts,
                    Path::new("db"),
                    &mut |_| {},
                    Some(&probe),
                )
                .unwrap();
                assert_eq!(rows.len(), 6);
                for (row, files) in &rows {
                    assert_eq!(Some(row.wal_bytes), *files, "{config} {}", row.statement);
                }
                let insert = &rows[1].0;
                // Compression shrinks the lpad rows' WAL ~30x, so the row data shows in
                // the logical WAL; the physical WAL is never much above it.
                assert!(insert.wal_logical_bytes > 3000 * 100, "{insert:?}");
                assert!(
                    insert.wal_bytes <= insert.wal_logical_bytes + 4096,
                    "{config} {insert:?}"
                );
                assert!(insert.table_bytes > 3000 * 100);
                let update = &rows[2].0;
                assert_eq!(
                    update.page_images > 0,
                    config.ends_with("/full-page"),
                    "{update:?}"
                );
                // Only undo tables write undo: the old values of updated and deleted rows.
                let undo = walden_options(config).unwrap().default_table_kind == TableKind::Undo;
                for (row, _) in &rows {
                    let changes =
                        matches!(row.statement, "update_all" | "update_sparse" | "delete");
                    if undo && changes {
                        assert!(row.undo_bytes > 0, "{config} {row:?}");
                    } else if !undo {
                        assert_eq!(row.undo_bytes, 0, "{config} {row:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn statements_are_the_seed_sql() {
        let s = statements(1_000_000, Data::Lpad);
        assert_eq!(s[1].1, "insert into demo select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(1,1000000)");
        assert_eq!(s[3].1, "update demo set b=b+1 where mod(a,10)=1");
    }
}
