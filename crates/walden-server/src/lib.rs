//! `walden serve`: PostgreSQL's frontend/backend protocol (version 3.0) over Walden's
//! SQL sessions, so that psql, pgbench and PostgreSQL's drivers use Walden unchanged.
//!
//! One thread per connection, as PostgreSQL has one process per connection: a
//! connection's statements run on its own thread with blocking calls into the engine,
//! and every connection's session shares the one [`walden::Database`] (and so its group
//! commit). The messages and their bytes are the `pgwire` crate's; the connection's
//! states (startup, authentication, simple and extended query, COPY) are here.
//!
//! Layers inside: `wire` (streams and framing) → `values` (a value's text and binary
//! forms) → `conn` (one connection's protocol) → this module (listeners, the
//! connections' registry, cancel and shutdown).

mod conn;
pub mod scram;
mod values;
mod wire;

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use walden::Database;
use walden_sql::CancelHandle;

pub use values::{decode_param, encode_binary, encode_text};
#[doc(hidden)]
pub use wire::decode_all as decode_client_bytes;

/// How a server listens and whom it lets in.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// TCP address to listen on (None: no TCP listener).
    pub listen: Option<SocketAddr>,
    /// Directory of a Unix socket `.s.PGSQL.<port>` (None: none). The port is the TCP
    /// listener's, or 5433 without one.
    pub socket_dir: Option<PathBuf>,
    /// Connections at once; one more is refused with SQLSTATE 53300.
    pub max_connections: usize,
    /// The largest message a client may send (bytes, its length word included); a
    /// larger one closes the connection with an error.
    pub max_message_bytes: usize,
    /// How long a connection may take to start up and authenticate.
    pub startup_timeout: Duration,
    /// Let clients of the Unix socket in without a password (`trust`, as
    /// pg_hba.conf's `local all all trust`). TCP clients always authenticate with
    /// SCRAM: there is no trust over TCP, where anyone who can reach the port would be
    /// let in.
    pub trust_local: bool,
    /// TLS for TCP clients that ask for it (`sslmode=require`), from [`tls_config`].
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Refuse TCP clients that do not use TLS (pg_hba's `hostssl`).
    pub require_tls: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 5433))),
            socket_dir: None,
            max_connections: 100,
            // PostgreSQL's limit: a value may be 1 GB.
            max_message_bytes: 1 << 30,
            startup_timeout: Duration::from_secs(60),
            trust_local: false,
            tls: None,
            require_tls: false,
        }
    }
}

/// A TLS configuration from a certificate chain and its private key, both PEM files
/// (as PostgreSQL's ssl_cert_file and ssl_key_file).
pub fn tls_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> io::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read = |p: &std::path::Path| {
        std::fs::read(p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
    };
    let invalid = |p: &std::path::Path, why: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {why}", p.display()),
        )
    };
    let cert_pem = read(cert)?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| invalid(cert, format!("not a PEM certificate chain: {e:?}")))?;
    if chain.is_empty() {
        return Err(invalid(cert, "no certificate in the file".into()));
    }
    let key_pem = read(key)?;
    let key_der = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| invalid(key, format!("not a PEM private key: {e:?}")))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| io::Error::other(e.to_string()))?
    .with_no_client_auth()
    .with_single_cert(chain, key_der)
    .map_err(|e| invalid(key, format!("does not go with the certificate: {e}")))?;
    Ok(Arc::new(config))
}

/// What every connection shares.
pub(crate) struct Shared {
    pub db: Database,
    pub config: ServerConfig,
    /// Set when the server shuts down: connections end at their next look.
    pub stopping: AtomicBool,
    /// Connections in their session (authenticated or authenticating), by backend id.
    pub backends: Mutex<HashMap<i32, Backend>>,
    /// Backend ids handed out (the "process id" of BackendKeyData).
    next_pid: AtomicU64,
    /// Connection threads running, in startup or in their session (`spawn_connection`
    /// counts them up, each thread down as it ends).
    pub threads: std::sync::atomic::AtomicUsize,
    /// Seed of the cancel keys: from the clock at start, then a generator.
    key_state: AtomicU64,
}

/// A connection as the registry sees it: how to cancel its statement and what it
/// needs to be let cancel.
pub(crate) struct Backend {
    pub secret: i32,
    pub cancel: CancelHandle,
}

impl Shared {
    /// A new backend id and cancel key, registered; None when max_connections are in.
    pub(crate) fn register(&self, cancel: CancelHandle) -> Option<(i32, i32)> {
        let mut backends = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        if backends.len() >= self.config.max_connections {
            return None;
        }
        let pid = (self.next_pid.fetch_add(1, Ordering::Relaxed) % (i32::MAX as u64 - 1000)) as i32
            + 1000;
        let secret = self.random() as i32;
        backends.insert(pid, Backend { secret, cancel });
        Some((pid, secret))
    }

    pub(crate) fn unregister(&self, pid: i32) {
        let mut backends = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        backends.remove(&pid);
    }

    /// Cancels backend `pid`'s running statement if `secret` is its key (a wrong key
    /// is ignored, as PostgreSQL ignores it: the client learns nothing).
    pub(crate) fn cancel(&self, pid: i32, secret: i32) {
        let backends = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = backends.get(&pid) {
            if b.secret == secret {
                b.cancel.cancel();
            }
        }
    }

    /// A 64-bit random number (splitmix64 over a counter seeded from the clock and the
    /// process id: cancel keys need to be unguessable by other local users, not
    /// cryptographic).
    pub(crate) fn random(&self) -> u64 {
        let mut z = self
            .key_state
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A running server. Dropping it without [`Server::shutdown`] leaves its threads
/// running until the process exits.
pub struct Server {
    shared: Arc<Shared>,
    tcp_addr: Option<SocketAddr>,
    socket_path: Option<PathBuf>,
    acceptors: Vec<JoinHandle<()>>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Server {
    /// Listens as `config` says and serves `db` on threads of its own.
    pub fn start(db: Database, config: ServerConfig) -> io::Result<Server> {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ ((std::process::id() as u64) << 32);
        let shared = Arc::new(Shared {
            db,
            config: config.clone(),
            stopping: AtomicBool::new(false),
            backends: Mutex::new(HashMap::new()),
            next_pid: AtomicU64::new(seed % 100_000),
            threads: std::sync::atomic::AtomicUsize::new(0),
            key_state: AtomicU64::new(seed),
        });
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let mut acceptors = Vec::new();
        let mut tcp_addr = None;
        if let Some(addr) = config.listen {
            let listener = TcpListener::bind(addr)?;
            tcp_addr = Some(listener.local_addr()?);
            let (shared, connections) = (shared.clone(), connections.clone());
            acceptors.push(
                std::thread::Builder::new()
                    .name("walden-accept-tcp".into())
                    .spawn(move || accept_tcp(listener, shared, connections))?,
            );
        }
        let mut socket_path = None;
        if let Some(dir) = &config.socket_dir {
            let port = tcp_addr.map_or(5433, |a| a.port());
            let path = dir.join(format!(".s.PGSQL.{port}"));
            // A socket file left by a server that is gone (a connect fails) is
            // replaced; one a live server answers on is not.
            if path.exists() {
                if std::os::unix::net::UnixStream::connect(&path).is_ok() {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("another server is listening on {}", path.display()),
                    ));
                }
                std::fs::remove_file(&path)?;
            }
            let listener = UnixListener::bind(&path)?;
            socket_path = Some(path);
            let (shared, connections) = (shared.clone(), connections.clone());
            acceptors.push(
                std::thread::Builder::new()
                    .name("walden-accept-unix".into())
                    .spawn(move || accept_unix(listener, shared, connections))?,
            );
        }
        if acceptors.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "nothing to listen on: give a TCP address or a socket directory",
            ));
        }
        Ok(Server {
            shared,
            tcp_addr,
            socket_path,
            acceptors,
            connections,
        })
    }

    /// The TCP address listened on (the port chosen when it was 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }

    /// The Unix socket's path, if there is one.
    pub fn socket_path(&self) -> Option<&std::path::Path> {
        self.socket_path.as_deref()
    }

    /// Connections in a session now.
    pub fn connections(&self) -> usize {
        self.shared
            .backends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Stops as PostgreSQL's fast shutdown does: no new connections; each running
    /// statement is canceled and each connection ends with 57P01, its transaction
    /// rolled back; then returns (the caller checkpoints and closes the database).
    pub fn shutdown(self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for b in self
            .shared
            .backends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            b.cancel.cancel();
        }
        // Wake the acceptors, blocked in accept(), with a connection of our own.
        if let Some(addr) = self.tcp_addr {
            let _ = TcpStream::connect_timeout(&wake_addr(addr), Duration::from_secs(1));
        }
        if let Some(path) = &self.socket_path {
            let _ = std::os::unix::net::UnixStream::connect(path);
        }
        for a in self.acceptors {
            let _ = a.join();
        }
        let threads =
            std::mem::take(&mut *self.connections.lock().unwrap_or_else(|p| p.into_inner()));
        for t in threads {
            let _ = t.join();
        }
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Where to connect to reach a listener bound to `addr` (an unspecified address is
/// reached through loopback).
fn wake_addr(addr: SocketAddr) -> SocketAddr {
    let mut a = addr;
    if a.ip().is_unspecified() {
        a.set_ip(if a.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    a
}

fn accept_tcp(
    listener: TcpListener,
    shared: Arc<Shared>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            // Out of file descriptors and the like: wait a little rather than spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = stream.set_nodelay(true);
        spawn_connection(wire::Stream::Tcp(stream), false, &shared, &connections);
    }
}

fn accept_unix(
    listener: UnixListener,
    shared: Arc<Shared>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        spawn_connection(wire::Stream::Unix(stream), true, &shared, &connections);
    }
}

/// The most connection threads at once: twice `max_connections`, as PostgreSQL takes at
/// most about twice as many children as connections. Past it a new connection is
/// refused before it costs a thread, so a flood of sockets that never log in (each held
/// for at most `startup_timeout`) leaves the server and its sessions running.
fn thread_limit(config: &ServerConfig) -> usize {
    config.max_connections.saturating_mul(2).max(2)
}

/// Decrements the count of connection threads as its thread ends.
struct ThreadCount(Arc<Shared>);

impl Drop for ThreadCount {
    fn drop(&mut self) {
        self.0.threads.fetch_sub(1, Ordering::SeqCst);
    }
}

fn spawn_connection(
    stream: wire::Stream,
    local: bool,
    shared: &Arc<Shared>,
    connections: &Arc<Mutex<Vec<JoinHandle<()>>>>,
) {
    if shared.threads.fetch_add(1, Ordering::SeqCst) >= thread_limit(&shared.config) {
        shared.threads.fetch_sub(1, Ordering::SeqCst);
        conn::refuse(stream);
        return;
    }
    let count = ThreadCount(shared.clone());
    let shared2 = shared.clone();
    // The SQL layer grows its own stack for deeply nested statements (depth.rs); this
    // is room for the protocol's frames around it.
    let spawned = std::thread::Builder::new()
        .name("walden-conn".into())
        .stack_size(8 << 20)
        .spawn(move || {
            let _count = count;
            conn::serve(stream, local, &shared2)
        });
    let mut threads = connections.lock().unwrap_or_else(|p| p.into_inner());
    // Forget the threads that have ended, so the list stays as long as the connections.
    threads.retain(|t| !t.is_finished());
    if let Ok(t) = spawned {
        threads.push(t);
    }
}
