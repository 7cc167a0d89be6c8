//! `walden serve`: the database over PostgreSQL's wire protocol, until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use walden::Database;
use walden_server::{Server, ServerConfig};

use crate::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// The database directory (created if it holds no database).
    #[arg(default_value = "walden-data")]
    pub dir: PathBuf,
    /// TCP address to listen on ("none" for no TCP listener).
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: String,
    /// Directory for a Unix socket `.s.PGSQL.<port>` (psql -h DIR).
    #[arg(long)]
    pub socket_dir: Option<PathBuf>,
    /// Connections at once; one more is refused with SQLSTATE 53300.
    #[arg(long, default_value_t = 100)]
    pub max_connections: usize,
    /// The largest message a client may send, in bytes (PostgreSQL's 1 GiB: a value
    /// may be that long).
    #[arg(long, default_value_t = 1 << 30)]
    pub max_message_bytes: usize,
    /// Seconds a connection may take to start up and authenticate.
    #[arg(long, default_value_t = 60)]
    pub startup_timeout: u64,
    /// Let Unix-socket clients in without a password (pg_hba's `local all all trust`).
    /// TCP clients always authenticate with a password (SCRAM-SHA-256).
    #[arg(long)]
    pub trust_local: bool,
    /// TLS certificate chain (PEM) for TCP clients; with --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM); with --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Refuse TCP clients that do not use TLS.
    #[arg(long, requires = "tls_cert")]
    pub require_tls: bool,
    /// The buffer pool's size (`8GB`, `512MB`); default a quarter of the machine's RAM.
    #[arg(long, value_parser = crate::memory::parse_pool_size)]
    pub buffer_pool: Option<u64>,
}

pub fn run(args: &Args) -> Result<ExitCode, CliError> {
    let listen = match args.listen.as_str() {
        "none" | "" => None,
        a => Some(a.parse::<SocketAddr>().map_err(|e| {
            CliError::io(
                format!("--listen {a:?}"),
                std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
            )
        })?),
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(
            walden_server::tls_config(cert, key)
                .map_err(|e| CliError::io("reading the TLS certificate and key", e))?,
        ),
        _ => None,
    };
    let config = ServerConfig {
        listen,
        socket_dir: args.socket_dir.clone(),
        max_connections: args.max_connections.max(1),
        max_message_bytes: args.max_message_bytes.max(1024),
        startup_timeout: Duration::from_secs(args.startup_timeout.max(1)),
        trust_local: args.trust_local,
        tls,
        require_tls: args.require_tls,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone())
            .map_err(|e| CliError::io("installing the signal handlers", e))?;
    }
    let db = Database::open_or_create(&args.dir, crate::memory::options(args.buffer_pool))?;
    let server = Server::start(db.clone(), config)
        .map_err(|e| CliError::io(format!("listening on {}", args.listen), e))?;
    if let Some(a) = server.local_addr() {
        eprintln!("walden serve: {} on {a}", args.dir.display());
    }
    if let Some(p) = server.socket_path() {
        eprintln!("walden serve: {} on {}", args.dir.display(), p.display());
    }
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("walden serve: shutting down (transactions in progress are rolled back)");
    server.shutdown();
    // Checkpoints, so the next open replays nothing.
    db.close()?;
    eprintln!("walden serve: stopped");
    Ok(ExitCode::SUCCESS)
}
