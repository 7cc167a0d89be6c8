//! `walden user add | password | list | drop`: what could go wrong is a password kept in
//! clear or taken from the command line, a role that SQL would refuse made anyway, or
//! an error that is not one line and exit status 1.

use std::io::Write;
use std::process::Stdio;

use walden::{Database, Options};
use walden_sql::scram::Verifier;

mod support;
use support::{run, walden};

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// The role's verifier checks `password`.
fn has_password(dir: &std::path::Path, role: &str, password: &str) -> bool {
    let db = Database::open(dir, Options::default()).expect("open");
    let v = db.role(role).and_then(|r| r.password);
    db.close().expect("close");
    v.and_then(|v| Verifier::parse(&v))
        .is_some_and(|v| v.matches(password.as_bytes()))
}

#[test]
fn add_list_password_and_drop() {
    let tmp = tempfile::tempdir().expect("temporary directory");
    let dir = tmp.path().join("db");
    Database::create(&dir, Options::default())
        .expect("create")
        .close()
        .expect("close");
    let dir_arg = dir.to_str().expect("UTF-8 path");
    let file = tmp.path().join("pw");
    std::fs::write(&file, "s3cret pass\n").expect("write");
    let file_arg = file.to_str().expect("UTF-8 path");

    let out = run(&["user", "add", dir_arg, "Alice", "--password-file", file_arg]);
    assert!(out.status.success(), "{out:?}");
    assert!(has_password(&dir, "Alice", "s3cret pass"));
    assert!(!has_password(&dir, "Alice", "s3cret pass\n"));

    // From standard input, as a superuser.
    let mut child = walden()
        .args([
            "user",
            "add",
            dir_arg,
            "root2",
            "--superuser",
            "--password-file",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("walden runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"from stdin\r\nsecond line ignored\n")
        .expect("write");
    let out = child.wait_with_output().expect("walden ends");
    assert!(out.status.success(), "{out:?}");
    assert!(has_password(&dir, "root2", "from stdin"));

    // The bootstrap superuser gets a password.
    let out = run(&[
        "user",
        "password",
        dir_arg,
        "postgres",
        "--password-file",
        file_arg,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(has_password(&dir, "postgres", "s3cret pass"));

    let out = run(&["user", "list", dir_arg]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        text(&out.stdout),
        "Role name  Attributes\n\
         Alice      Password\n\
         postgres   Superuser, Create role, Create DB, Replication, Bypass RLS, Password\n\
         root2      Superuser, Password\n"
    );

    // What SQL refuses is refused, in one line, exit status 1.
    for (args, want) in [
        (
            vec!["user", "add", dir_arg, "Alice", "--password-file", file_arg],
            "walden: user: role \"Alice\" already exists (SQLSTATE 42710)\n",
        ),
        (
            vec!["user", "add", dir_arg, "pg_x", "--password-file", file_arg],
            "walden: user: role name \"pg_x\" is reserved (SQLSTATE 42939)\n",
        ),
        (
            vec!["user", "drop", dir_arg, "postgres"],
            "walden: user: current user cannot be dropped (SQLSTATE 55006)\n",
        ),
        (
            vec![
                "user",
                "password",
                dir_arg,
                "nobody",
                "--password-file",
                file_arg,
            ],
            "walden: user: role \"nobody\" does not exist\n",
        ),
        (
            vec!["user", "drop", dir_arg, "nobody"],
            "walden: user: role \"nobody\" does not exist (SQLSTATE 42704)\n",
        ),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&out.stderr), want, "{args:?}");
    }
    let empty = tmp.path().join("empty");
    std::fs::write(&empty, "\n").expect("write");
    let out = run(&[
        "user",
        "add",
        dir_arg,
        "e",
        "--password-file",
        empty.to_str().expect("UTF-8"),
    ]);
    assert_eq!(text(&out.stderr), "walden: user: the password is empty\n");

    let out = run(&["user", "drop", dir_arg, "Alice"]);
    assert!(out.status.success(), "{out:?}");
    let out = run(&["user", "list", dir_arg]);
    assert!(!text(&out.stdout).contains("Alice"));
}
