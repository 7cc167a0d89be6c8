//! `walden sql` run from -c, -f and piped input: what could go wrong is output that differs
//! from psql's (command tags, the aligned table, the error position), seed-workload figures
//! that differ from PostgreSQL's, a failed statement that leaves the exit code at 0, or
//! --on-error-stop running on after an error.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The article's statements, verbatim, with a check of count and sum after the sparse
/// update. At 1,000,000 rows this takes about 15 s in the test profile.
const SEED_SCRIPT: &str = "\
create table demo as select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(0,0);
insert into demo select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(1,1000000);
update demo set b=b+1;
update demo set b=b+1 where mod(a,10)=1;
select count(*), sum(b) from demo;
delete from demo;
vacuum demo;
";

/// The zheap article's (seed 001) statements on its `demoz` table, verbatim (`using zheap`
/// names Walden's undo tables), with a check of count and sum and the table's description.
/// At 1,000,000 rows this takes about 15 s in the test profile.
const DEMOZ_SCRIPT: &str = "\
create table demoz using zheap as select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(0,0);
insert into demoz select generate_series a,generate_series b,generate_series c,generate_series d,generate_series e,generate_series f,lpad('x',100,'x') g from generate_series(1,1000000);
update demoz set b=b+1 where mod(a,10)=1;
select count(*), sum(b) from demoz;
\\d demoz
";

fn sql(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walden"))
        .arg("sql")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the walden binary runs")
}

/// Runs `walden sql DIR` with `input` piped to standard input.
fn sql_piped(dir: &Path, input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_walden"))
        .arg("sql")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the walden binary starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("writing to walden's stdin");
    child.wait_with_output().expect("walden finishes")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("output is UTF-8")
}

fn db_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let temp = tempfile::tempdir().expect("a temporary directory");
    let dir = temp.path().join("db");
    (temp, dir)
}

#[test]
fn commands_print_tags_and_an_aligned_table() {
    let (_temp, dir) = db_dir();
    let out = sql(
        &dir,
        &[
            "-c",
            "create table t (a int, b text)",
            "-c",
            "insert into t values (1,'x'),(2,'y')",
            "-c",
            "select * from t order by a",
        ],
    );
    assert_eq!(text(&out.stderr), "");
    assert_eq!(
        text(&out.stdout),
        "CREATE TABLE\nINSERT 0 2\n a | b \n---+---\n 1 | x\n 2 | y\n(2 rows)\n\n"
    );
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn seed_workload_tags_and_figures_match_postgresql() {
    let (temp, dir) = db_dir();
    let script = temp.path().join("seed.sql");
    std::fs::write(&script, SEED_SCRIPT).expect("writing the script");
    let started = std::time::Instant::now();
    let out = sql(&dir, &["-f", script.to_str().expect("UTF-8 path")]);
    eprintln!("seed workload: {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(text(&out.stderr), "");
    // Sum of b: every a in 0..=1,000,000 plus 1 for all 1,000,001 rows, plus 1 more for
    // the 100,000 rows with mod(a,10) = 1.
    let sum = (0..=1_000_000u64).sum::<u64>() + 1_000_001 + 100_000;
    assert_eq!(sum, 500_001_600_001);
    let expected = format!(
        "SELECT 1\nINSERT 0 1000000\nUPDATE 1000001\nUPDATE 100000\n\
         \x20 count  |     sum      \n---------+--------------\n 1000001 | {sum}\n(1 row)\n\n\
         DELETE 1000001\nVACUUM\n"
    );
    assert_eq!(text(&out.stdout), expected);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn zheap_article_statements_match_postgresql() {
    let (temp, dir) = db_dir();
    let script = temp.path().join("demoz.sql");
    std::fs::write(&script, DEMOZ_SCRIPT).expect("writing the script");
    let started = std::time::Instant::now();
    let out = sql(&dir, &["-f", script.to_str().expect("UTF-8 path")]);
    eprintln!("demoz workload: {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(text(&out.stderr), "");
    // Sum of b: every a in 0..=1,000,000, plus 1 for the 100,000 rows with mod(a,10) = 1.
    let sum = (0..=1_000_000u64).sum::<u64>() + 100_000;
    assert_eq!(sum, 500_000_600_000);
    let expected = format!(
        "SELECT 1\nINSERT 0 1000000\nUPDATE 100000\n\
         \x20 count  |     sum      \n---------+--------------\n 1000001 | {sum}\n(1 row)\n\n\
         \x20              Table \"public.demoz\"\n\
         \x20Column |  Type   | Collation | Nullable | Default \n\
         --------+---------+-----------+----------+---------\n\
         \x20a      | integer |           |          | \n b      | integer |           |          | \n\
         \x20c      | integer |           |          | \n d      | integer |           |          | \n\
         \x20e      | integer |           |          | \n f      | integer |           |          | \n\
         \x20g      | text    |           |          | \n\n"
    );
    assert_eq!(text(&out.stdout), expected);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn wal_flag_prints_what_each_statement_wrote() {
    let (_temp, dir) = db_dir();
    let out = sql(
        &dir,
        &[
            "--wal",
            "-c",
            "create table t (a int)",
            "-c",
            "insert into t select g from generate_series(1, 1000) g",
        ],
    );
    assert_eq!(text(&out.stderr), "");
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert_eq!((lines[0], lines[2]), ("CREATE TABLE", "INSERT 0 1000"));
    for line in [lines[1], lines[3]] {
        assert!(line.starts_with("WAL "), "{line}");
        assert!(line.contains(" records, "), "{line}");
        assert!(line.contains(" page images), "), "{line}");
        assert!(line.contains(" written · undo 0 B · data "), "{line}");
        assert!(line.contains(" · fsync "), "{line}");
        assert!(line.ends_with(" s"), "{line}");
    }
    // A thousand rows are a few kilobytes of WAL, shown in KiB.
    assert!(
        lines[3]
            .split(" (")
            .next()
            .is_some_and(|w| w.ends_with(" KiB")),
        "{}",
        lines[3]
    );
    // An update of an undo table writes undo, shown between the WAL and the data file.
    let out = sql(
        &dir,
        &[
            "--wal",
            "-c",
            "create table u (a int) using undo",
            "-c",
            "insert into u select g from generate_series(1, 1000) g",
            "-c",
            "update u set a = a + 1",
        ],
    );
    assert_eq!(text(&out.stderr), "");
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    assert_eq!(lines[4], "UPDATE 1000");
    let undo = lines[5]
        .split(" · ")
        .find_map(|part| part.strip_prefix("undo "))
        .unwrap_or_else(|| panic!("no undo figure in {}", lines[5]));
    assert!(undo != "0 B" && undo.ends_with('B'), "{}", lines[5]);
    // Without --wal (and not interactive), no WAL line.
    let out = sql(&dir, &["-c", "select 1 as one"]);
    assert_eq!(text(&out.stdout), " one \n-----\n   1\n(1 row)\n\n");
}

#[test]
fn an_error_points_at_its_position_and_sets_the_exit_code() {
    let (_temp, dir) = db_dir();
    let out = sql(&dir, &["-c", "select nope", "-c", "select 1 as one"]);
    assert_eq!(
        text(&out.stderr),
        "ERROR:  column \"nope\" does not exist\nLINE 1: select nope\n               ^\n"
    );
    // psql's default: the next statement still runs.
    assert_eq!(text(&out.stdout), " one \n-----\n   1\n(1 row)\n\n");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn on_error_stop_runs_nothing_after_the_first_error() {
    let (_temp, dir) = db_dir();
    let out = sql(
        &dir,
        &[
            "--on-error-stop",
            "-c",
            "create table t (a int); select nope; insert into t values (1)",
            "-c",
            "insert into t values (2)",
        ],
    );
    assert_eq!(text(&out.stdout), "CREATE TABLE\n");
    assert!(
        text(&out.stderr).starts_with("ERROR:  column \"nope\" does not exist\n"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1));
    let out = sql(&dir, &["-c", "select count(*) from t"]);
    assert_eq!(text(&out.stdout), " count \n-------\n     0\n(1 row)\n\n");
}

#[test]
fn backslash_commands_in_a_file() {
    let (temp, dir) = db_dir();
    let script = temp.path().join("describe.sql");
    let lines = [
        "create table t (id serial primary key, name varchar(20) not null,",
        "  score float8);",
        "create table a (x int);",
        "create table u (x int) using undo;",
        "\\dt",
        "\\d t",
        "\\d u",
        "\\undo",
        "\\d nope",
        "\\frob",
    ];
    std::fs::write(&script, lines.join("\n")).expect("writing the script");
    let out = sql(&dir, &["-f", script.to_str().expect("UTF-8 path")]);
    let expected = "\
CREATE TABLE
CREATE TABLE
CREATE TABLE
        List of relations
 Schema | Name | Type  |  Owner   
--------+------+-------+----------
 public | a    | table | postgres
 public | t    | table | postgres
 public | u    | table | postgres
(3 rows)

                                   Table \"public.t\"
 Column |         Type          | Collation | Nullable |            Default            
--------+-----------------------+-----------+----------+-------------------------------
 id     | integer               |           | not null | nextval('t_id_seq'::regclass)
 name   | character varying(20) |           | not null | 
 score  | double precision      |           |          | 
Indexes:
    \"t_pkey\" PRIMARY KEY, btree (id)

                 Table \"public.u\"
 Column |  Type   | Collation | Nullable | Default 
--------+---------+-----------+----------+---------
 x      | integer |           |          | 

undo held: 0 B (0 B of it in files; 256.0 MiB kept in memory, no limit)
";
    assert_eq!(text(&out.stdout), expected);
    assert_eq!(
        text(&out.stderr),
        "Did not find any relation named \"nope\".\ninvalid command \\frob. Try \\? for help.\n"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn piped_input_is_one_script() {
    let (_temp, dir) = db_dir();
    let input = "\
\\timing off
create table t (a int, b text);
insert into t values
  (1, 'semi;colon'), -- a comment; not the end
  (2, 'it''s');
/* a block comment; still not the end */ select b, a
from t order by a;
begin;
select * from nope;
commit;
select a from t where b = 'x'
";
    let out = sql_piped(&dir, input);
    let expected = "\
Timing is off.
CREATE TABLE
INSERT 0 2
     b      | a 
------------+---
 semi;colon | 1
 it's       | 2
(2 rows)

BEGIN
ROLLBACK
 a 
---
(0 rows)

";
    assert_eq!(text(&out.stdout), expected);
    assert_eq!(
        text(&out.stderr),
        "ERROR:  relation \"nope\" does not exist\nLINE 1: select * from nope\n                      ^\n",
        "the script goes on after the error"
    );
    assert_eq!(out.status.code(), Some(1));
}

/// COPY as psql runs it: FROM STDIN takes a script's next lines up to `\.` (or, for a -c
/// string, standard input); TO STDOUT prints the rows and no tag; an error in the data
/// reads on to `\.`, and the statements after it run.
#[test]
fn copy_reads_and_writes_as_psql_does() {
    let (_temp, dir) = db_dir();
    let input = "\
create table t (a int, b text);
copy t from stdin;
1\tone
2\t\\N
\\.
copy t from stdin (format csv); select 'after';
3,\"multi
line\"
\\.
copy t from stdin;
4\tfour
x\tbad
5\tfive
\\.
copy t to stdout (format csv, header);
select count(*) from t;
";
    let out = sql_piped(&dir, input);
    let expected = "\
CREATE TABLE
COPY 2
COPY 1
 ?column? 
----------
 after
(1 row)

a,b
1,one
2,
3,\"multi
line\"
 count 
-------
     3
(1 row)

";
    assert_eq!(text(&out.stdout), expected);
    assert_eq!(
        text(&out.stderr),
        "ERROR:  invalid input syntax for type integer: \"x\"\nCONTEXT:  COPY t, line 2, column a: \"x\"\n"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_walden"))
        .arg("sql")
        .arg(&dir)
        .args(["-c", "copy t (a) from stdin", "-c", "select sum(a) from t"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the walden binary starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin.write_all(b"10\n20\n").expect("writing");
    drop(stdin);
    let out = child.wait_with_output().expect("walden finishes");
    assert_eq!(text(&out.stdout), "COPY 2\n sum \n-----\n  36\n(1 row)\n\n");
}

#[test]
fn a_missing_file_is_one_line_and_creates_nothing() {
    let (temp, dir) = db_dir();
    let missing = temp.path().join("missing.sql");
    let out = sql(&dir, &["-f", missing.to_str().expect("UTF-8 path")]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("walden: reading ")
            && stderr.ends_with("missing.sql: No such file or directory (os error 2)\n"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.exists());
}

#[test]
fn backslash_q_ends_the_input() {
    let (_temp, dir) = db_dir();
    let out = sql(
        &dir,
        &[
            "-c",
            "select 1 as one",
            "-c",
            "\\q",
            "-c",
            "select 2 as two",
        ],
    );
    assert_eq!(text(&out.stdout), " one \n-----\n   1\n(1 row)\n\n");
    assert_eq!(text(&out.stderr), "");
    assert_eq!(out.status.code(), Some(0));
}

/// A statement that runs for minutes unless canceled.
const LONG_STATEMENT: &str = "select count(*) from generate_series(1, 300000000)";

/// Runs `walden sql DIR ARGS` (with `input` piped in, if any) and presses Ctrl-C once the
/// standard output holds `ready` (what the statements before the long one print): sends
/// SIGINT, and again every two seconds until standard error shows the statement was
/// canceled (a signal that comes just before the long statement starts is dropped, as
/// PostgreSQL drops a cancel request for an idle session). Returns the output.
fn interrupted(dir: &Path, args: &[&str], input: Option<&str>, ready: &str) -> Output {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let mut child = Command::new(env!("CARGO_BIN_EXE_walden"))
        .arg("sql")
        .arg(dir)
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the walden binary starts");
    if let Some(input) = input {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        stdin
            .write_all(input.as_bytes())
            .expect("writing to walden's stdin");
    }
    let collect = |mut from: Box<dyn Read + Send>| {
        let text = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&text);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .expect("output lock")
                    .extend_from_slice(&buf[..n]);
            }
        });
        (text, reader)
    };
    let (stdout, out_reader) = collect(Box::new(child.stdout.take().expect("piped")));
    let (stderr, err_reader) = collect(Box::new(child.stderr.take().expect("piped")));
    let has = |buf: &Arc<Mutex<Vec<u8>>>, what: &str| {
        String::from_utf8_lossy(&buf.lock().expect("output lock")).contains(what)
    };
    let started = Instant::now();
    while !has(&stdout, ready) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "walden never printed {ready:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut signals = 0;
    while !has(&stderr, "canceling statement") {
        assert!(signals < 30, "30 SIGINTs did not cancel the statement");
        std::thread::sleep(Duration::from_millis(300));
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        signals += 1;
        let wait = Instant::now();
        while !has(&stderr, "canceling statement") && wait.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let status = child.wait().expect("walden finishes");
    out_reader.join().expect("stdout reader");
    err_reader.join().expect("stderr reader");
    let take = |buf: Arc<Mutex<Vec<u8>>>| buf.lock().expect("output lock").clone();
    Output {
        status,
        stdout: take(stdout),
        stderr: take(stderr),
    }
}

#[test]
fn ctrl_c_cancels_a_command_and_the_next_one_runs() {
    let (_temp, dir) = db_dir();
    let out = interrupted(
        &dir,
        &[
            "-c",
            "create table t (a int)",
            "-c",
            "begin",
            "-c",
            "insert into t values (1)",
            "-c",
            LONG_STATEMENT,
            "-c",
            "select 2 as two",
            "-c",
            "rollback",
            "-c",
            "select count(*) from t; select 3 as three",
        ],
        None,
        "INSERT 0 1\n",
    );
    // As in PostgreSQL, the canceled statement aborts the block: the next statement
    // fails until ROLLBACK, and the insert is gone.
    assert_eq!(
        text(&out.stderr),
        "ERROR:  canceling statement due to user request\n\
         ERROR:  current transaction is aborted, commands ignored until end of transaction block\n"
    );
    assert_eq!(
        text(&out.stdout),
        "CREATE TABLE\nBEGIN\nINSERT 0 1\nROLLBACK\n count \n-------\n     0\n(1 row)\n\n\
         \x20three \n-------\n     3\n(1 row)\n\n"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn ctrl_c_stops_a_script() {
    let (_temp, dir) = db_dir();
    let input = format!(
        "create table t (a int);\ninsert into t values (1);\n{LONG_STATEMENT};\n\
         insert into t values (2);\n"
    );
    let out = interrupted(&dir, &[], Some(&input), "INSERT 0 1\n");
    assert_eq!(
        text(&out.stderr),
        "ERROR:  canceling statement due to user request\n"
    );
    assert_eq!(text(&out.stdout), "CREATE TABLE\nINSERT 0 1\n");
    // psql's exit code for a script stopped with Ctrl-C.
    assert_eq!(out.status.code(), Some(3));
    let out = sql(&dir, &["-c", "select a from t"]);
    assert_eq!(text(&out.stdout), " a \n---\n 1\n(1 row)\n\n");
}

#[test]
fn backslash_commands_after_sql_on_a_line() {
    let (_temp, dir) = db_dir();
    let input = "\
create table t (a int);
select 1 as one; \\dt
select 'a\\b;' as two \\dt t
;
\\timing off \\\\ select 3 as three;
select 4 as four; \\q
select 5 as five;
";
    let out = sql_piped(&dir, input);
    let list = "        List of relations\n Schema | Name | Type  |  Owner   \n\
                --------+------+-------+----------\n public | t    | table | postgres\n(1 row)\n\n";
    let expected = format!(
        "CREATE TABLE\n one \n-----\n   1\n(1 row)\n\n{list}{list}\
         \x20two  \n------\n a\\b;\n(1 row)\n\n\
         Timing is off.\n three \n-------\n     3\n(1 row)\n\n four \n------\n    4\n(1 row)\n\n"
    );
    assert_eq!(text(&out.stdout), expected);
    assert_eq!(text(&out.stderr), "");
    assert_eq!(out.status.code(), Some(0));
}

/// The interactive shell on a terminal: util-linux `script` gives `walden sql` a pty, and
/// what is written to `script` is typed on it (Ctrl-C as the byte 3, which the terminal
/// turns into SIGINT while a statement runs). What could go wrong: Ctrl-C ending the
/// shell, a bracketed paste of several lines run as one line (a backslash command in it
/// sent as SQL), or a long paste redrawn again and again.
#[test]
fn interactive_ctrl_c_and_pastes() {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux `script` (to get a pty) is not installed");
        return;
    }
    let (_temp, dir) = db_dir();
    // `exec`: the shell `script` starts (whatever $SHELL is; dash does not exec a
    // `-c` command by itself) must not stay in the terminal's foreground process group,
    // where Ctrl-C would kill it.
    let shell = format!(
        "exec {} sql {}",
        env!("CARGO_BIN_EXE_walden"),
        dir.to_str().expect("UTF-8 path")
    );
    let mut child = Command::new("script")
        .args(["-qfec", &shell, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("script starts");
    let mut keys = child.stdin.take().expect("stdin is piped");
    let screen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&screen);
    let mut from = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .expect("screen lock")
                .extend_from_slice(&buf[..n]);
        }
    });
    let shown = || String::from_utf8_lossy(&screen.lock().expect("screen lock")).into_owned();
    let wait_for = |what: &str, after: usize| {
        let started = Instant::now();
        while !shown()[after..].contains(what) {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the shell never showed {what:?}:\n{}",
                shown()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut type_keys = |text: &str| {
        keys.write_all(text.as_bytes()).expect("typing");
        keys.flush().expect("typing");
    };

    wait_for("walden=# ", 0);
    type_keys("begin;\n");
    wait_for("BEGIN", 0);
    // The line fits the terminal's 80 columns, so its echo is not broken by a redraw.
    let line = format!("{LONG_STATEMENT}; select 1 as one;");
    type_keys(&format!("{line}\n"));
    wait_for(&line, 0);
    // Ctrl-C, again until it lands while the statement runs (one typed before the
    // terminal left raw mode is a key for the next prompt, which it clears).
    let mut presses = 0;
    while !shown().contains("canceling statement due to user request") {
        assert!(presses < 30, "30 Ctrl-C did not cancel:\n{}", shown());
        std::thread::sleep(Duration::from_millis(300));
        type_keys("\x03");
        presses += 1;
        let pressed = Instant::now();
        while !shown().contains("canceling statement") && pressed.elapsed() < Duration::from_secs(2)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // Back at the prompt of an aborted block; the rest of the line did not run.
    wait_for("walden=!# ", 0);
    let mark = shown().len();
    type_keys("rollback;\n");
    wait_for("ROLLBACK", mark);
    // A bracketed paste of two lines: the backslash command on the second runs as one.
    let mark = shown().len();
    type_keys("\x1b[200~select 2 as two;\n\\dt\n\x1b[201~\r");
    wait_for("Did not find any relations.", mark);
    // A 50 KB line pasted: drawn about once, not once per character or row.
    let mark = shown().len();
    let long = format!("select length('{}') as n;", "x".repeat(50_000));
    type_keys(&format!("\x1b[200~{long}\x1b[201~\r"));
    wait_for(" 50000\r\n(1 row)", mark);
    let drawn = shown().len() - mark;
    assert!(
        drawn < 3 * long.len(),
        "a {} byte paste drew {drawn} bytes",
        long.len()
    );
    // The same line typed (or pasted without bracketed paste): each character is drawn
    // as it comes, a row end included, not the whole line again at every row end
    // (quadratic: 11 MB for this line before rustyline was patched).
    let mark = shown().len();
    let long = format!("select length('{}') as n;", "y".repeat(50_000));
    type_keys(&format!("{long}\r"));
    wait_for(" 50000\r\n(1 row)", mark);
    let drawn = shown().len() - mark;
    assert!(
        drawn < 3 * long.len(),
        "a {} byte typed line drew {drawn} bytes",
        long.len()
    );
    // Ctrl-D at the prompt ends the shell.
    type_keys("\x04");
    drop(keys);
    let status = child.wait().expect("script finishes");
    reader.join().expect("screen reader");
    assert_eq!(status.code(), Some(0));
    let screen = shown();
    assert!(!screen.contains(" one "), "{screen}");
    assert!(
        screen.contains(" two \r\n-----\r\n   2\r\n(1 row)"),
        "{screen}"
    );
    assert!(screen.ends_with("\\q\r\n"), "{screen}");
}
