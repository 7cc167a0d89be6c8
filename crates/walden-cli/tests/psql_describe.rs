//! psql's describe commands against PostgreSQL 15 and `walden sql`'s against Walden, for
//! the same tables: what could go wrong is any difference in what they print — a
//! column's type, nullability or default, an index line, the table layout, the order of
//! relations, a sequence missing from `\d`, or the message for a name that matches
//! nothing. Without PostgreSQL 15 installed the test says so and passes.

use std::path::Path;
use std::process::{Command, Stdio};

use walden_pgcluster::{find_major, Cluster, SERVER_USER};

/// Views, and tables with a column of every type Walden has, NOT NULL, defaults of each kind psql
/// shows differently, serial columns (their sequences), primary keys (one of two
/// columns), a UNIQUE constraint, unique and plain indexes (some with DESC and NULLS
/// FIRST/LAST columns), varchar(n), char(n) and numeric(p,s).
const SCHEMA: &str = "
create table t (a serial primary key, b int not null default 5, c text,
  d varchar(10) unique, e char(3), f bigint, g smallint, h double precision,
  i boolean default true, j uuid);
create index t_c on t(c);
create index t_bf on t (b, f);
create table u (x int default -1, y text default 'ab', z varchar(5) default 'q',
  w char(2) default 'zz', v double precision default 1.5, s bigserial,
  k boolean not null default false);
create unique index u_x on u (x);
create table w (p int, q smallint, r text not null, primary key (p, q));
create table \"Mixed\" (\"Id\" int);
create table n (a numeric(10,2) not null default 1.5, b numeric, c decimal(5), d numeric(3,-1));
create index n_a on n (a);
create view tv as select a, c, b + 1 as b1 from t;
create view uv (n) as select count(*) from u;
create table fp (id int primary key, k text unique);
create table fc (n int, fp_id int references fp on delete cascade,
  k text references fp (k) on update set null);
create unique index fc_n on fc (n);
alter table fc add foreign key (n) references fc (n);
create table t8 (a8 int, b8 int, c8 text, d8 double precision, e8 int);
create index t8all on t8 (e8 desc, d8 asc, c8 desc nulls last, b8 asc nulls first, a8 desc);
create unique index t8u on t8 (a8 desc nulls last);
";

/// The commands compared, each run on its own (`-c`), as psql runs them.
const COMMANDS: &[&str] = &[
    "\\d",
    "\\dt",
    "\\di",
    "\\dv",
    "\\d t",
    "\\d u",
    "\\d w",
    "\\d \"Mixed\"",
    "\\d tv",
    "\\d uv",
    "\\d fp",
    "\\d fc",
    "\\d n",
    "\\d n_a",
    "\\d t_pkey",
    "\\d t_bf",
    "\\d u_x",
    "\\d w_pkey",
    "\\d t_d_key",
    "\\d t_a_seq",
    "\\d u_s_seq",
    "\\d t8",
    "\\d t8all",
    "\\d t8u",
    "\\d t*",
    "\\dt t*",
    "\\di u*",
    "\\d T",
    "\\d public.u",
    "\\dt public.*",
    "\\di *.t_?key",
    "\\d pg_catalog.nosuch",
    "\\d nosuch",
    "\\dt nosuch*",
];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// psql's standard output and standard error for one command.
fn psql(bindir: &Path, cluster: &Cluster, command: &str) -> (String, String) {
    let out = Command::new(bindir.join("psql"))
        .arg("-X")
        .arg("-h")
        .arg(cluster.socket_dir())
        .args(["-p", &cluster.port().to_string(), "-U", SERVER_USER])
        .args(["-d", "postgres", "-c", command])
        .env_remove("PGOPTIONS")
        .stdin(Stdio::null())
        .output()
        .expect("psql runs");
    (text(&out.stdout), text(&out.stderr))
}

fn walden(dir: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_walden"))
        .arg("sql")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the walden binary runs");
    (text(&out.stdout), text(&out.stderr))
}

/// The schema of the captures in `tests/fixtures/psql15` (its README).
const FIXTURE_SCHEMA: &str = "
create table t (a serial primary key, b int not null default 5, c text,
  d varchar(10) unique, e char(3), f bigint, g smallint, h double precision,
  i boolean default true, j uuid);
create index t_c on t(c);
create index t_bf on t (b, f);
";

/// What psql printed in a capture: its standard output and standard error (captured
/// together), without the `-E` query echoes.
fn printed(capture: &str) -> String {
    let mut out = String::new();
    let mut in_query = false;
    let mut skip_blank = false;
    for line in capture.lines() {
        match line {
            "********* QUERY **********" => in_query = true,
            "**************************" if in_query => {
                in_query = false;
                skip_blank = true;
            }
            _ if in_query => {}
            "" if skip_blank => skip_blank = false,
            l => {
                skip_blank = false;
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out
}

/// Runs without PostgreSQL: each capture's command through `walden sql`, whose output
/// must be what psql printed then.
#[test]
fn describe_commands_print_the_captured_output() {
    let temp = tempfile::tempdir().expect("a temporary directory");
    let dir = temp.path().join("db");
    let (_, err) = walden(&dir, &["-c", FIXTURE_SCHEMA]);
    assert_eq!(err, "");
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/psql15");
    let captures = [
        ("\\d", "d"),
        ("\\dt", "dt"),
        ("\\di", "di"),
        ("\\dv", "dv"),
        ("\\dt t*", "dt_tS"),
        ("\\di t*", "di_tS"),
        ("\\d t", "d_t"),
        ("\\d t_pkey", "d_t_pkey"),
        ("\\d t_a_seq", "d_t_a_seq"),
        ("\\d nosuch", "d_nosuch"),
    ];
    for (command, file) in captures {
        let capture = std::fs::read_to_string(format!("{fixtures}/{file}.txt"))
            .expect("the capture is there");
        let expected = printed(&capture);
        assert!(expected.lines().count() >= 1, "{file} printed something");
        let (out, err) = walden(&dir, &["-c", command]);
        assert_eq!(out + &err, expected, "{command}");
    }
}

#[test]
fn describe_commands_print_what_psql_prints() {
    let Some(bindir) = find_major(15) else {
        eprintln!("skipped: PostgreSQL 15 not found (/usr/lib/postgresql/15/bin)");
        return;
    };
    let cluster = Cluster::start(&bindir, &[]).expect("PostgreSQL 15 starts");
    cluster
        .psql(SCHEMA)
        .expect("the schema is created in PostgreSQL");
    let temp = tempfile::tempdir().expect("a temporary directory");
    let dir = temp.path().join("db");
    let (_, err) = walden(&dir, &["-c", SCHEMA]);
    assert_eq!(err, "", "the schema is created in Walden");
    let mut differ = Vec::new();
    let mut compared = 0;
    for command in COMMANDS {
        let expected = psql(&bindir, &cluster, command);
        if *command == "\\d t" {
            // PostgreSQL answered, so the comparison is not of two empty outputs.
            assert!(
                expected.0.contains("nextval('t_a_seq'::regclass)"),
                "{expected:?}"
            );
        }
        compared += expected.0.lines().count();
        let got = walden(&dir, &["-c", command]);
        if got != expected {
            differ.push(format!(
                "{command}\n--- psql:\n{}{}--- walden sql:\n{}{}",
                expected.0, expected.1, got.0, got.1
            ));
        }
    }
    cluster.stop().expect("PostgreSQL stops");
    eprintln!(
        "{} commands, {compared} lines of psql output compared",
        COMMANDS.len()
    );
    assert!(differ.is_empty(), "\n{}", differ.join("\n"));
}
