//! Integrity through the `walden` binary: what could go wrong is a second process opening
//! a database that another one has open (and losing its commits), and a damaged database
//! that the operator cannot get back into, or gets back into without being told what was
//! lost.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

mod support;
use support::{run, walden};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("walden-integrity-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_second_process_on_the_same_database_is_refused() {
    let dir = temp_dir("lock");
    let mut child = walden()
        .arg("kill-child")
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kill-child starts");
    let pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // Once it printed a key, it has the database open.
    let first = lines.next();
    let d = dir.to_str().expect("a UTF-8 path");
    let second = run(&["sql", d, "-c", "select 1"]);
    let _ = child.kill();
    let _ = child.wait();
    let after = run(&["sql", d, "-c", "select 1"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(first.is_some(), "kill-child printed nothing");
    assert!(!second.status.success(), "{second:?}");
    let err = text(&second.stderr);
    assert!(
        err.contains(&format!("is in use by process {pid}")),
        "{err}"
    );
    assert!(after.status.success(), "{after:?}");
}

#[test]
fn recover_accepts_data_loss_only_when_asked_and_says_what_it_dropped() {
    let dir = temp_dir("recover");
    let d = dir.to_str().expect("a UTF-8 path");
    let made = run(&[
        "sql",
        d,
        "-c",
        "create table t (a int)",
        "-c",
        "insert into t values (1), (2)",
    ]);
    assert!(made.status.success(), "{made:?}");
    std::fs::remove_file(Path::new(&dir).join("xact")).expect("xact exists");
    let refused = run(&["sql", d, "-c", "select count(*) from t"]);
    let plain = run(&["recover", d]);
    let accepted = run(&["recover", d, "--accept-data-loss"]);
    let after = run(&["sql", d, "-c", "select count(*) from t"]);
    let log = std::fs::read_to_string(Path::new(&dir).join("data-loss.log")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        text(&refused.stderr).contains("xact is missing"),
        "{refused:?}"
    );
    assert!(!plain.status.success(), "{plain:?}");
    assert!(text(&plain.stdout).contains("does not open"), "{plain:?}");
    assert!(accepted.status.success(), "{accepted:?}");
    let said = text(&accepted.stdout);
    assert!(said.contains("dropped:") && said.contains("xact"), "{said}");
    assert!(log.contains("xact"), "{log}");
    assert!(after.status.success(), "{after:?}");
}
