//! The `walden` command: argument parsing, dispatch to one module per subcommand, and
//! turning every error into one line on stderr and a non-zero exit code.

/// Writes a line to standard output, mapping the error for `?`.
macro_rules! outln {
    ($out:expr) => {
        writeln!($out).map_err(|e| $crate::CliError::io("writing to standard output", e))
    };
    ($out:expr, $($arg:tt)*) => {
        writeln!($out, $($arg)*).map_err(|e| $crate::CliError::io("writing to standard output", e))
    };
}

mod bench;
mod check;
mod crashtest;
mod describe;
mod keys;
mod kill_child;
mod memory;
mod nextval_bench;
mod pgbench;
mod postgres;
mod queries;
mod recover;
mod seed;
mod seed_report;
mod serve;
mod space;
mod sql_shell;
mod stream_bench;
mod user;
mod waldump;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use walden::{Protection, TableKind};

#[derive(Parser)]
#[command(
    name = "walden",
    version,
    about = "Tools for the Walden storage engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Benchmarks: throughput and how many bytes reach the WAL and the data file.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Crashes simulated databases at random points and checks what recovery brings back.
    Crashtest(crashtest::Args),
    /// Prints the records of a database's WAL, or totals per record kind.
    Waldump(waldump::Args),
    /// Verifies every table and index of a database (like amcheck); exits 1 on any
    /// inconsistency.
    Check(check::Args),
    /// After a refused open: opens what can be read of a damaged database
    /// (--accept-data-loss) and says exactly what was dropped.
    Recover(recover::Args),
    /// An interactive SQL shell (PostgreSQL dialect) on a database, or run SQL from -c / -f.
    Sql(sql_shell::Args),
    /// Serves a database over PostgreSQL's wire protocol (psql, pgbench, drivers).
    Serve(serve::Args),
    /// Manages the roles `walden serve` authenticates against (on a database not being
    /// served; through a server, use CREATE ROLE ... PASSWORD).
    #[command(subcommand)]
    User(user::Command),
    /// Appends rows forever, printing each key once its commit is durable (for the
    /// process-kill test).
    #[command(hide = true)]
    KillChild {
        /// The database directory (created if it holds no database).
        dir: PathBuf,
        /// Kind of the table it appends to.
        #[arg(long, value_enum, default_value_t = Kind::Heap)]
        kind: Kind,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Inserts N rows in one transaction into a fresh database.
    Insert(bench::InsertArgs),
    /// The seed workload per protection mode: WAL and data file size after each statement.
    Space(space::SpaceArgs),
    /// The seed workload W1 as SQL, Walden's configurations beside PostgreSQL's.
    Seed(seed::SeedArgs),
    /// Key types (bigserial, uuid): load, updates and lookups by key on Walden, PostgreSQL
    /// and SQLite; seconds, WAL and sizes per part.
    Keys(keys::KeysArgs),
    /// A join workload (point joins, a join with GROUP BY, a top 10) on Walden,
    /// PostgreSQL and SQLite, results checked against each other.
    Queries(queries::QueriesArgs),
    /// PostgreSQL's pgbench against `walden serve` and PostgreSQL in one run: TPS,
    /// latency, WAL, page images and fsyncs per transaction.
    Pgbench(pgbench::PgbenchArgs),
    /// How fast a sequence hands out values in one process (the engine's call and
    /// SQL's nextval), beside PostgreSQL.
    Nextval(nextval_bench::NextvalArgs),
    /// The server's peak memory while large results leave it: SELECT * of N rows to
    /// psql, COPY of a join to STDOUT, CREATE TABLE AS over the join.
    Stream(stream_bench::StreamArgs),
}

/// A torn-page protection mode as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Cow,
    FullPage,
    None,
}

impl Mode {
    pub fn protection(self) -> Protection {
        match self {
            Mode::Cow => Protection::Cow,
            Mode::FullPage => Protection::FullPage,
            Mode::None => Protection::None,
        }
    }
}

/// A table kind as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    Heap,
    Undo,
}

impl Kind {
    pub fn table_kind(self) -> TableKind {
        match self {
            Kind::Heap => TableKind::Heap,
            Kind::Undo => TableKind::Undo,
        }
    }
}

/// Why a subcommand failed. Each prints as one line.
#[derive(Debug)]
pub enum CliError {
    Engine(walden::Error),
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl CliError {
    /// An I/O error of the tool itself (temporary directory, standard output).
    pub fn io(what: impl Into<String>, source: std::io::Error) -> CliError {
        CliError::Io {
            what: what.into(),
            source,
        }
    }
}

impl From<walden::Error> for CliError {
    fn from(e: walden::Error) -> Self {
        CliError::Engine(e)
    }
}

/// A throwaway cluster's error keeps the "postgres: " prefix the cluster code gave its
/// errors when it lived in this crate.
impl From<walden_pgcluster::Error> for CliError {
    fn from(e: walden_pgcluster::Error) -> Self {
        CliError::io("postgres", std::io::Error::other(e))
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Engine(e) => write!(f, "{e}"),
            CliError::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

/// Prints one line to stderr, ignoring a closed stderr (there is nowhere left to report).
fn report_error(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "walden: {line}");
}

/// Replaces the default panic message (several lines, maybe a backtrace) with one line.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".to_string());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        report_error(&format!(
            "internal error{place}: {}",
            message.replace('\n', " ")
        ));
    }));
}

fn main() -> ExitCode {
    install_panic_hook();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(BenchCommand::Insert(args)) => bench::insert(&args),
        Command::Bench(BenchCommand::Space(args)) => space::space(&args),
        Command::Bench(BenchCommand::Seed(args)) => seed::run(&args),
        Command::Bench(BenchCommand::Keys(args)) => keys::run(&args),
        Command::Bench(BenchCommand::Queries(args)) => queries::run(&args),
        Command::Bench(BenchCommand::Pgbench(args)) => pgbench::run(&args),
        Command::Bench(BenchCommand::Nextval(args)) => nextval_bench::run(&args),
        Command::Bench(BenchCommand::Stream(args)) => stream_bench::run(&args),
        Command::Crashtest(args) => crashtest::run(&args),
        Command::Waldump(args) => waldump::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Recover(args) => recover::run(&args),
        Command::Sql(args) => sql_shell::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::User(command) => user::run(&command),
        Command::KillChild { dir, kind } => Ok(kill_child::run(&dir, kind.table_kind())),
    };
    match result {
        Ok(code) => code,
        // The reader went away (`walden waldump DIR | head`): not an error of ours.
        Err(CliError::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            report_error(&e.to_string());
            ExitCode::FAILURE
        }
    }
}
