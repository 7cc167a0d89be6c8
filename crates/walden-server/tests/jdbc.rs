//! `walden serve` driven by pgjdbc, the PostgreSQL JDBC driver
//! (tests/clients/WaldenJdbc.java): a driver nobody here wrote, over TCP with SCRAM,
//! with what an application does through JDBC — the statements pgjdbc sends on connect,
//! the session's settings (`current_setting`, `set_config`, SET LOCAL), DatabaseMetaData
//! (columns, keys, indexes, schemas, types: pgjdbc's own catalog queries), typed
//! parameters, named server-side statements from a PreparedStatement's fifth run (and
//! binary results with them), transactions, SQLSTATEs, batches, generated keys, dates
//! and numerics, a fetch size and a query timeout. The jar comes from
//! scripts/install-java-clients.sh (CI runs it); without it, or without java and javac,
//! the test says so and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use walden::{Database, Options};

mod support;

const USER: &str = "jdbc_app";
const PASSWORD: &str = "jdbc pass";

/// pgjdbc's jar: $WALDEN_PGJDBC_JAR, or where Debian's libpostgresql-jdbc-java puts it.
fn jar() -> Option<PathBuf> {
    let p = std::env::var_os("WALDEN_PGJDBC_JAR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/java/postgresql.jar"));
    p.exists().then_some(p)
}

/// A JDK tool (`java`, `javac`): from $JAVA_HOME/bin when set, else from PATH; None when
/// it does not run.
fn jdk_tool(name: &str) -> Option<PathBuf> {
    let p = match std::env::var_os("JAVA_HOME") {
        Some(home) => Path::new(&home).join("bin").join(name),
        None => PathBuf::from(name),
    };
    let runs = Command::new(&p)
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    runs.then_some(p)
}

fn show(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn pgjdbc_runs_its_checks() {
    let (java, javac, jar) = match (jdk_tool("java"), jdk_tool("javac"), jar()) {
        (Some(java), Some(javac), Some(jar)) => (java, javac, jar),
        (java, javac, jar) => {
            let missing: Vec<&str> = [
                (java.is_none(), "java"),
                (javac.is_none(), "javac (a JDK, 11 or later)"),
                (
                    jar.is_none(),
                    "pgjdbc's jar (scripts/install-java-clients.sh, or WALDEN_PGJDBC_JAR)",
                ),
            ]
            .into_iter()
            .filter_map(|(gone, what)| gone.then_some(what))
            .collect();
            eprintln!("SKIPPED: no {}", missing.join(", no "));
            return;
        }
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let classes = dir.path().join("classes");
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/WaldenJdbc.java");
    let compiled = Command::new(&javac)
        .arg("-d")
        .arg(&classes)
        .arg("-cp")
        .arg(&jar)
        .arg(&source)
        .output()
        .expect("javac runs");
    assert!(
        compiled.status.success(),
        "javac failed on {}\n{}",
        source.display(),
        show(&compiled)
    );

    let db = Database::open_or_create(dir.path().join("db"), Options::default()).expect("database");
    walden_sql::Session::new(&db)
        .execute(&format!(
            // PostgreSQL 15's public schema: CREATE is its owner's until granted.
            "create role {USER} login password '{PASSWORD}'; grant create on schema public to {USER}"
        ))
        .expect("role");
    let server = support::loopback_server(&db);
    let port = server.local_addr().expect("tcp").port();
    let classpath = std::env::join_paths([jar.as_path(), classes.as_path()]).expect("classpath");
    // A JVM zone other than the machine's (CI's is UTC), half an hour off from whole
    // hours: pgjdbc sends it at startup and writes dates and timestamps with its offset.
    let out = Command::new(&java)
        .arg("-Duser.timezone=Asia/Kolkata")
        .arg("-cp")
        .arg(&classpath)
        .arg("WaldenJdbc")
        .arg(port.to_string())
        .arg(USER)
        .arg(PASSWORD)
        .output()
        .expect("java runs");
    server.shutdown();
    db.close().expect("close");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "pgjdbc checks failed\n{}",
        show(&out)
    );
    // Shown with --nocapture: one line per check.
    print!("{stdout}");
}
