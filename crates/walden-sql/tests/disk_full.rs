//! A full disk through SQL: the statement that does not fit fails with 53100 (not an
//! I/O error that fences the database), the session's next statements and reads go on,
//! a new session starts, and once space is freed inserts go on. What could go wrong: a
//! full disk that takes the whole database down, or an acknowledged row lost.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use walden::vfs::SimVfs;
use walden::Database;
use walden_sql::Session;

mod support;

#[test]
fn a_full_disk_fails_the_statement_and_nothing_else() {
    let vfs = Arc::new(SimVfs::new(9));
    let db = Database::create("db", support::options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (id int primary key, v text); checkpoint")
        .unwrap();
    vfs.set_capacity(Some(vfs.bytes_used() + (6 << 20)));
    let mut rows = 0i64;
    let err = loop {
        let sql = format!(
            "insert into t select g, repeat('x', 300) from generate_series({}, {}) g",
            rows + 1,
            rows + 100
        );
        match s.execute(&sql) {
            Ok(_) => rows += 100,
            Err(e) => break e,
        }
        assert!(rows < 1_000_000, "the disk never filled");
    };
    assert_eq!(err.code, "53100", "{}", err.message);
    assert!(!db.is_poisoned());
    assert!(rows > 0);
    // The session goes on: reads, and statements that write nothing new.
    assert_eq!(
        support::q(&mut s, "select count(*) from t"),
        rows.to_string()
    );
    assert_eq!(
        support::q(&mut s, "select count(*) from t where id = 1"),
        "1"
    );
    // A new session starts and reads.
    let mut other = Session::with_seed(&db, 2);
    assert_eq!(
        support::q(&mut other, "select max(id) from t"),
        rows.to_string()
    );
    // Space is freed: inserts go on.
    vfs.set_capacity(None);
    s.execute("insert into t values (-1, 'after')").unwrap();
    assert_eq!(
        support::q(&mut other, "select count(*) from t"),
        (rows + 1).to_string()
    );
}

/// A 64 MB tmpfs mounted for the test, unmounted when dropped.
struct SmallFs(std::path::PathBuf);

impl SmallFs {
    /// None (with the reason) where this machine does not let the test mount one.
    fn mount(mb: u64) -> Result<SmallFs, String> {
        let dir = std::env::temp_dir().join(format!("walden-smallfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mb}m"), "tmpfs"])
            .arg(&dir)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            let _ = std::fs::remove_dir(&dir);
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(SmallFs(dir))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// On a real 64 MB file system (a tmpfs; skipped with a message where mounting one is
/// not allowed): inserts until the disk is full fail with 53100 only, reads and new
/// sessions go on, and once a file is removed to free space inserts go on; the database
/// then reopens with every row acknowledged. In each protection mode.
#[test]
fn a_real_small_file_system_fills_and_recovers() {
    for protection in [
        walden::Protection::Cow,
        walden::Protection::FullPage,
        walden::Protection::None,
    ] {
        if !fills_and_recovers(protection) {
            return;
        }
    }
}

/// False when no tmpfs can be mounted here.
fn fills_and_recovers(protection: walden::Protection) -> bool {
    let fs = match SmallFs::mount(64) {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("skipped: cannot mount a 64 MB tmpfs here ({why})");
            return false;
        }
    };
    // Space to give back later.
    let filler = fs.0.join("filler");
    std::fs::write(&filler, vec![7u8; 16 << 20]).unwrap();
    let options = || walden::Options {
        segment_size_bytes: 2 << 20,
        background: false,
        protection,
        ..walden::Options::default()
    };
    let path = fs.0.join("db");
    let db = Database::open_or_create(&path, options()).unwrap();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (id int primary key, v text)")
        .unwrap();
    let mut rows = 0i64;
    let err = loop {
        let sql = format!(
            "insert into t select g, md5(g::text) || repeat('x', 300) from generate_series({}, {}) g",
            rows + 1,
            rows + 1000
        );
        match s.execute(&sql) {
            Ok(_) => rows += 1000,
            Err(e) => break e,
        }
        assert!(rows < 10_000_000, "the disk never filled");
    };
    assert_eq!(err.code, "53100", "{protection:?}: {}", err.message);
    assert!(!db.is_poisoned(), "{protection:?}: {}", err.message);
    assert_eq!(
        support::q(&mut s, "select count(*) from t"),
        rows.to_string()
    );
    let mut other = Session::with_seed(&db, 2);
    assert_eq!(
        support::q(&mut other, "select max(id) from t"),
        rows.to_string()
    );
    std::fs::remove_file(&filler).unwrap();
    s.execute("insert into t values (-1, 'after')").unwrap();
    drop((s, other));
    db.close().unwrap();
    let db = Database::open(&path, options()).unwrap();
    let mut s = Session::with_seed(&db, 3);
    assert_eq!(
        support::q(&mut s, "select count(*) from t"),
        (rows + 1).to_string()
    );
    drop(s);
    db.close().unwrap();
    true
}

/// Every kind of write statement on a full disk: it succeeds (it fitted in the room
/// left) or fails with 53100, never with another error, and never fences the database;
/// after a crash every statement acknowledged is there.
#[test]
fn every_statement_kind_on_a_full_disk() {
    let vfs = Arc::new(SimVfs::new(10));
    let db = Database::create("db", support::options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    s.execute(
        "create table t (id int primary key, v text); create table u (id serial, w text); \
         create view tv as select id from t; checkpoint",
    )
    .unwrap();
    vfs.set_capacity(Some(vfs.bytes_used() + (6 << 20)));
    let mut rows = 0i64;
    loop {
        let sql = format!(
            "insert into t select g, repeat('x', 300) from generate_series({}, {}) g",
            rows + 1,
            rows + 100
        );
        match s.execute(&sql) {
            Ok(_) => rows += 100,
            Err(e) => {
                assert_eq!(e.code, "53100", "{}", e.message);
                break;
            }
        }
    }
    let statements = [
        "insert into t values (-1, 'one')",
        "insert into u (w) select repeat('y', 200) from generate_series(1, 5000)",
        "update t set v = v || '!' where id <= 200",
        "update t set v = 'short'",
        "delete from t where id > 1000",
        "create index t_v on t (v)",
        "create table c as select * from t",
        "alter table t add column extra int",
        "vacuum t",
        "analyze t",
        "truncate u",
        "checkpoint",
    ];
    let mut acknowledged = Vec::new();
    for sql in statements {
        match s.execute(sql) {
            Ok(_) => acknowledged.push(sql),
            Err(e) => assert_eq!(e.code, "53100", "{sql}: {}", e.message),
        }
        assert!(!db.is_poisoned(), "{sql} fenced the database");
        support::q(&mut s, "select count(*) from t");
    }
    let count = support::q(&mut s, "select count(*) from t");
    let sum = support::q(&mut s, "select sum(length(v)) from t");
    drop(s);
    let db = support::crash(db, &vfs);
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(support::q(&mut s, "select count(*) from t"), count);
    assert_eq!(support::q(&mut s, "select sum(length(v)) from t"), sum);
    eprintln!(
        "on the full disk: {} of {} statements fitted: {acknowledged:?}",
        acknowledged.len(),
        statements.len()
    );
}
