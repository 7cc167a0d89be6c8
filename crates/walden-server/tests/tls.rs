//! TLS: a client that asks for it (psql with sslmode=require) gets an encrypted
//! session; with --require-tls one that does not is refused. Needs the openssl and psql
//! commands (skipped with a message without them).

use std::process::Command;

use walden::{Database, Options};
use walden_server::{tls_config, Server, ServerConfig};

mod support;
use support::{psql, run_psql};

#[test]
fn tls_sessions_and_required_tls() {
    let (Some(psql), true) = (
        psql(),
        Command::new("openssl").arg("version").output().is_ok(),
    ) else {
        eprintln!("SKIPPED: needs psql (scripts/install-postgres.sh) and openssl");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key) = (dir.path().join("server.crt"), dir.path().join("server.key"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    // A key that does not go with the certificate, and a file that is not PEM.
    assert!(tls_config(&cert, &cert).is_err());
    assert!(tls_config(&key, &key).is_err());
    let db = Database::open_or_create(dir.path().join("db"), Options::default()).expect("db");
    // TCP clients authenticate (SCRAM, inside the TLS session): a role with a password.
    walden_sql::Session::new(&db)
        .execute("create role tls_user login password 'over tls'")
        .expect("role");
    let server = Server::start(
        db.clone(),
        ServerConfig {
            listen: Some("127.0.0.1:0".parse().expect("address")),
            tls: Some(tls_config(&cert, &key).expect("tls config")),
            require_tls: true,
            ..ServerConfig::default()
        },
    )
    .expect("server");
    let port = server.local_addr().expect("tcp").port();
    let (ok, out) = run_psql(
        &psql,
        &["-v", "ON_ERROR_STOP=1"],
        &format!("host=127.0.0.1 port={port} user=tls_user password='over tls' dbname=walden sslmode=require"),
        "select 6 * 7",
    );
    assert!(ok && out.trim() == "42", "{out}");
    let (ok, out) = run_psql(
        &psql,
        &["-v", "ON_ERROR_STOP=1"],
        &format!("host=127.0.0.1 port={port} user=tls_user password='over tls' dbname=walden sslmode=require"),
        "\\conninfo",
    );
    assert!(ok && out.contains("SSL connection"), "{out}");
    let (ok, out) = run_psql(
        &psql,
        &["-v", "ON_ERROR_STOP=1"],
        &format!("host=127.0.0.1 port={port} user=tls_user password='over tls' dbname=walden sslmode=disable"),
        "select 1",
    );
    assert!(!ok && out.contains("requires TLS"), "{out}");
    server.shutdown();
    db.close().expect("close");
}
