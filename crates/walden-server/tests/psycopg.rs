//! `walden serve` driven by Python's psycopg 3 (tests/clients/psycopg_client.py): a
//! driver nobody here wrote, speaking the extended protocol, binary values, COPY,
//! cancel and named cursors, over the server's Unix socket with trust; and by SQLAlchemy
//! 2 over psycopg (tests/clients/sqlalchemy_client.py). The virtual environment comes from
//! scripts/install-python-clients.sh (CI runs it); without it the test says so and passes.

use std::path::PathBuf;
use std::process::Command;

use walden::{Database, Options};
use walden_server::{Server, ServerConfig};

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WALDEN_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/pyclients/bin/python");
    p.exists().then_some(p)
}

#[test]
fn psycopg_runs_its_checks() {
    runs_its_checks("psycopg_client.py");
}

/// SQLAlchemy 2 over psycopg: `stream_results` reads through a server-side cursor.
#[test]
fn sqlalchemy_runs_its_checks() {
    runs_its_checks("sqlalchemy_client.py");
}

fn runs_its_checks(client: &str) {
    let Some(python) = python() else {
        eprintln!(
            "SKIPPED: no Python environment with psycopg (run scripts/install-python-clients.sh)"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Database::open_or_create(dir.path().join("db"), Options::default()).expect("database");
    let server = Server::start(
        db.clone(),
        ServerConfig {
            listen: Some("127.0.0.1:0".parse().expect("address")),
            socket_dir: Some(dir.path().to_path_buf()),
            trust_local: true,
            ..ServerConfig::default()
        },
    )
    .expect("server");
    let port = server.local_addr().expect("tcp").port();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(client);
    let out = Command::new(&python)
        .arg(&script)
        .arg(dir.path())
        .arg(port.to_string())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    server.shutdown();
    db.close().expect("close");
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "{client} checks failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
}
