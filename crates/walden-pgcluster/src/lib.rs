//! Throwaway PostgreSQL clusters, shared by `walden bench` and the SQL tests that check
//! Walden against PostgreSQL: the installed server binaries run on a fresh directory with
//! a private Unix socket (no TCP), and the cluster is stopped and its directory removed
//! when it is dropped. It never uses a system service or the system's clusters.
//!
//! PostgreSQL refuses to run as root, so when we are root the server binaries run as the
//! `postgres` OS user (`runuser`), in a directory handed to that user; clients (psql, or a
//! driver given `Cluster::connection_string`) run as ourselves and connect over the
//! cluster's own socket with trust authentication.
//!
//! This crate does not depend on the engine: it only runs programs and files.

mod bindir;
mod cluster;
mod error;
mod host;

pub use bindir::{find_bindir, find_major, server_major};
pub use cluster::{trim_statement, Cluster, SERVER_USER};
pub use error::Error;
