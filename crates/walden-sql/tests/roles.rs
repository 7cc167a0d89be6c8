//! Role statements (CREATE/ALTER/DROP ROLE, USER, GROUP) and the role relations of the
//! virtual catalog, each statement's outcome against what PostgreSQL 15 gave for the
//! same statements in the same order (rows, the command tag, or the error's SQLSTATE
//! and message, with the notices before them), checked against a throwaway PostgreSQL
//! 15 when one is installed; psql 15's `\du` query; passwords kept only as verifiers;
//! roles surviving a crash. What could go wrong: a role statement PostgreSQL accepts
//! refused or the reverse, a password stored or echoed in clear, `\du` failing, a role
//! change lost at recovery.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, Mutex};

use support::{crash, options, pg};
use walden_sql::scram::Verifier;
use walden_sql::{value, Session};

/// A statement's outcome: its notices, then its rows (values `|`-separated, rows on
/// lines) or its command tag, or `ERROR code: message`.
fn run(s: &mut Session, sql: &str) -> String {
    match s.execute(sql) {
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
        Ok(results) => {
            let r = results.last().unwrap();
            let mut out: Vec<String> = r.notices.iter().map(|n| format!("NOTICE: {n}")).collect();
            if r.columns.is_empty() {
                out.push(r.tag.clone());
            } else {
                out.extend(
                    r.rows
                        .iter()
                        .map(|row| row.iter().map(value::display).collect::<Vec<_>>().join("|")),
                );
            }
            out.join("\n")
        }
    }
}

/// (statement, what PostgreSQL 15 gave), run in order on one database.
const STEPS: &[(&str, &str)] = &[
    ("create role alice", "CREATE ROLE"),
    ("create role alice", "ERROR 42710: role \"alice\" already exists"),
    (
        "create user bob with password 'secret' connection limit 3",
        "CREATE ROLE",
    ),
    (
        "create role carol superuser createdb createrole replication bypassrls noinherit valid until '2030-01-01'",
        "CREATE ROLE",
    ),
    (
        "create role x login nologin",
        "ERROR 42601: conflicting or redundant options",
    ),
    (
        "create role x password 'a' password null",
        "ERROR 42601: conflicting or redundant options",
    ),
    ("create role x foo", "ERROR 42601: unrecognized role option \"foo\""),
    ("create role x password", "ERROR 42601: syntax error at end of input"),
    ("create role x with with", "ERROR 42601: syntax error at or near \"with\""),
    ("create role select", "ERROR 42601: syntax error at or near \"select\""),
    ("create role public", "ERROR 42939: role name \"public\" is reserved"),
    ("create role none", "ERROR 42939: role name \"none\" is reserved"),
    ("create role pg_x", "ERROR 42939: role name \"pg_x\" is reserved"),
    (
        "create role current_user",
        "ERROR 42939: CURRENT_USER cannot be used as a role name here",
    ),
    (
        "create role x connection limit -2",
        "ERROR 22023: invalid connection limit: -2",
    ),
    (
        "create role x valid until 'garbage'",
        "ERROR 22007: invalid input syntax for type timestamp with time zone: \"garbage\"",
    ),
    (
        "create role x unencrypted password 'x'",
        "ERROR 0A000: UNENCRYPTED PASSWORD is no longer supported",
    ),
    ("create role postgres", "ERROR 42710: role \"postgres\" already exists"),
    ("create role \"Dave\" with login", "CREATE ROLE"),
    ("create group grp", "CREATE ROLE"),
    (
        "create role emptypw password ''",
        "NOTICE: empty string is not a valid password, clearing password\nCREATE ROLE",
    ),
    ("create role sys sysid 5", "NOTICE: SYSID can no longer be specified\nCREATE ROLE"),
    ("create role withnothing with", "CREATE ROLE"),
    ("alter role alice login password 'pw2'", "ALTER ROLE"),
    ("alter user bob nologin", "ALTER ROLE"),
    (
        "alter role alice with connection limit 5 valid until 'infinity'",
        "ALTER ROLE",
    ),
    ("alter role alice", "ALTER ROLE"),
    ("alter role nosuch login", "ERROR 42704: role \"nosuch\" does not exist"),
    ("alter role alice rename to alicia", "ALTER ROLE"),
    ("alter role alicia rename to bob", "ERROR 42710: role \"bob\" already exists"),
    ("alter role alicia rename to pg_a", "ERROR 42939: role name \"pg_a\" is reserved"),
    ("alter role alicia rename to public", "ERROR 42939: role name \"public\" is reserved"),
    ("alter role nosuch rename to y", "ERROR 42704: role \"nosuch\" does not exist"),
    ("alter role postgres rename to boss", "ERROR 0A000: session user cannot be renamed"),
    (
        "alter role current_user rename to x",
        "ERROR 42939: CURRENT_USER cannot be used as a role name here",
    ),
    (
        "alter role alicia login nologin",
        "ERROR 42601: conflicting or redundant options",
    ),
    ("alter group grp rename to grp2", "ALTER ROLE"),
    ("alter group grp2 with login", "ERROR 42601: syntax error at or near \"with\""),
    ("alter role current_user createdb", "ALTER ROLE"),
    (
        "select rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, rolconnlimit, rolpassword, rolvaliduntil, rolbypassrls, rolconfig from pg_roles where rolname !~ '^pg_' order by 1",
        "Dave|f|t|f|f|t|f|-1|********||f|\n\
         alicia|f|t|f|f|t|f|5|********|infinity|f|\n\
         bob|f|t|f|f|f|f|3|********||f|\n\
         carol|t|f|t|t|f|t|-1|********|2030-01-01 00:00:00+00|t|\n\
         emptypw|f|t|f|f|f|f|-1|********||f|\n\
         grp2|f|t|f|f|f|f|-1|********||f|\n\
         postgres|t|t|t|t|t|t|-1|********||t|\n\
         sys|f|t|f|f|f|f|-1|********||f|\n\
         withnothing|f|t|f|f|f|f|-1|********||f|",
    ),
    (
        "select rolname, rolpassword like 'SCRAM-SHA-256$4096:%==$%=:%=' from pg_authid where rolname !~ '^pg_' order by 1",
        "Dave|\nalicia|t\nbob|t\ncarol|\nemptypw|\ngrp2|\npostgres|\nsys|\nwithnothing|",
    ),
    (
        "select usename, usesuper, passwd, valuntil from pg_user order by 1",
        "Dave|f|********|\nalicia|f|********|infinity\npostgres|t|********|",
    ),
    (
        "select count(*) from pg_user u join pg_roles r on r.oid = u.usesysid",
        "3",
    ),
    ("select pg_get_userbyid(10)", "postgres"),
    ("drop role nosuch", "ERROR 42704: role \"nosuch\" does not exist"),
    (
        "drop role if exists nosuch, grp2, nosuch2",
        "NOTICE: role \"nosuch\" does not exist, skipping\nNOTICE: role \"nosuch2\" does not exist, skipping\nDROP ROLE",
    ),
    ("drop role postgres", "ERROR 55006: current user cannot be dropped"),
    (
        "drop role current_user",
        "ERROR 22023: cannot use special role specifier in DROP ROLE",
    ),
    (
        "drop role public",
        "ERROR 22023: cannot use special role specifier in DROP ROLE",
    ),
    ("drop role none", "ERROR 42939: role name \"none\" is reserved"),
    ("drop user alicia, nosuch", "ERROR 42704: role \"nosuch\" does not exist"),
    ("drop role alicia, alicia", "ERROR 42704: role \"alicia\" does not exist"),
    ("select count(*) from pg_roles where rolname = 'alicia'", "1"),
    ("drop user alicia, \"Dave\"", "DROP ROLE"),
    ("drop group bob, carol, emptypw, sys, withnothing", "DROP ROLE"),
    (
        "select rolname from pg_roles where rolname !~ '^pg_' order by 1",
        "postgres",
    ),
];

fn walden_session() -> (walden::Database, Session) {
    let db = support::db();
    let s = Session::with_seed(&db, 1);
    (db, s)
}

#[test]
fn role_statements_as_postgresql_gives_them() {
    let (_db, mut s) = walden_session();
    for (sql, want) in STEPS {
        assert_eq!(run(&mut s, sql), *want, "{sql}");
    }
}

/// A PostgreSQL client whose notices are collected, in UTC.
fn pg_client(cluster: &walden_pgcluster::Cluster) -> (postgres::Client, Arc<Mutex<Vec<String>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = notices.clone();
    let mut config: postgres::Config = cluster.connection_string("postgres").parse().unwrap();
    config.notice_callback(move |n| sink.lock().unwrap().push(n.message().to_string()));
    let mut c = config.connect(postgres::NoTls).unwrap();
    c.batch_execute("set timezone = 'UTC'").unwrap();
    (c, notices)
}

fn pg_run(c: &mut postgres::Client, notices: &Mutex<Vec<String>>, sql: &str) -> String {
    let result = c.simple_query(sql);
    let mut out: Vec<String> = std::mem::take(&mut *notices.lock().unwrap())
        .into_iter()
        .map(|n| format!("NOTICE: {n}"))
        .collect();
    match result {
        Err(e) => {
            let db = e.as_db_error().unwrap();
            return format!("ERROR {}: {}", db.code().code(), db.message());
        }
        Ok(messages) => {
            let rows = pg::row_lines(&messages);
            let tag = messages.iter().find_map(|m| match m {
                postgres::SimpleQueryMessage::CommandComplete(_) => Some(()),
                _ => None,
            });
            let is_query = messages
                .iter()
                .any(|m| matches!(m, postgres::SimpleQueryMessage::RowDescription(_)));
            if is_query {
                out.extend(rows);
            } else if tag.is_some() {
                out.push(command_tag(sql));
            }
        }
    }
    out.join("\n")
}

/// The tag PostgreSQL sends for a role statement (the `postgres` crate gives only the
/// row count of a command).
fn command_tag(sql: &str) -> String {
    let verb = sql.split_whitespace().next().unwrap().to_uppercase();
    format!("{verb} ROLE")
}

/// The steps' expected outcomes are PostgreSQL 15's: checked against one when installed.
#[test]
fn the_steps_are_what_postgresql_gives() {
    let Some(cluster) = pg::cluster() else {
        eprintln!("{}", pg::SKIPPED);
        return;
    };
    let (mut c, notices) = pg_client(&cluster);
    for (sql, want) in STEPS {
        assert_eq!(pg_run(&mut c, &notices, sql), *want, "{sql}");
    }
}

/// psql 15's `\du` query (captured with `psql -E`), verbatim.
const DU_QUERY: &str = r"SELECT r.rolname, r.rolsuper, r.rolinherit,
  r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
  r.rolconnlimit, r.rolvaliduntil,
  ARRAY(SELECT b.rolname
        FROM pg_catalog.pg_auth_members m
        JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid)
        WHERE m.member = r.oid) as memberof
, r.rolreplication
, r.rolbypassrls
FROM pg_catalog.pg_roles r
WHERE r.rolname !~ '^pg_'
ORDER BY 1;";

const DU_ROLES: &str = "create user app password 'x' connection limit 10;
    create role admin superuser createdb createrole noinherit valid until '2031-02-03 04:05:06+00';
    create role readers;
    create role \"Mixed Case\" login replication bypassrls";

const DU_ROWS: &str = "Mixed Case|f|t|f|f|t|-1||{}|t|t\n\
    admin|t|f|t|t|f|-1|2031-02-03 04:05:06+00|{}|f|f\n\
    app|f|t|f|f|t|10||{}|f|f\n\
    postgres|t|t|t|t|t|-1||{}|t|t\n\
    readers|f|t|f|f|f|-1||{}|f|f";

#[test]
fn psql_du_query() {
    let (_db, mut s) = walden_session();
    s.execute(DU_ROLES).unwrap();
    assert_eq!(run(&mut s, DU_QUERY), DU_ROWS);
    let Some(cluster) = pg::cluster() else {
        eprintln!("{}", pg::SKIPPED);
        return;
    };
    let (mut c, notices) = pg_client(&cluster);
    c.batch_execute(DU_ROLES).unwrap();
    assert_eq!(pg_run(&mut c, &notices, DU_QUERY), DU_ROWS);
}

/// A password given in clear is stored as a verifier of it, never as given, and no
/// error or notice quotes it; one given as a verifier is kept as it is; an MD5 hash,
/// which SCRAM cannot use, is refused.
#[test]
fn passwords_are_kept_only_as_verifiers() {
    let (db, mut s) = walden_session();
    s.execute("create user u password 'hunter2'").unwrap();
    let stored = db.role("u").unwrap().password.unwrap();
    assert!(!stored.contains("hunter2"));
    assert!(Verifier::parse(&stored).unwrap().matches(b"hunter2"));
    // Another salt each time.
    s.execute("alter role u password 'hunter2'").unwrap();
    let again = db.role("u").unwrap().password.unwrap();
    assert_ne!(again, stored);
    assert!(Verifier::parse(&again).unwrap().matches(b"hunter2"));
    // pg_dump's form: a verifier, kept byte for byte.
    let pg = "SCRAM-SHA-256$4096:OjXxs19fwE7OOFIYZo9E+g==$JEFKDZl+yfE+N85rDMpMk697d+v0mPM455qhNz3ro6A=:IsnQyppljIPp83ReEMzI2IF91qFHRPwbtSig3UT1Zu4=";
    s.execute(&format!("create role dumped login password '{pg}'"))
        .unwrap();
    assert_eq!(db.role("dumped").unwrap().password.as_deref(), Some(pg));
    // E'' strings and dollar quoting are strings too.
    s.execute("alter role dumped password E'p\\x41ss'; create role d2 password $$dollar$$")
        .unwrap();
    let v = db.role("dumped").unwrap().password.unwrap();
    assert!(Verifier::parse(&v).unwrap().matches(b"pAss"));
    let v = db.role("d2").unwrap().password.unwrap();
    assert!(Verifier::parse(&v).unwrap().matches(b"dollar"));
    // Errors point at the statement without quoting the password.
    for sql in [
        "create role e password 'hunter3' 'hunter4'",
        "create role e password 'hunter3' login nologin",
        "create role e password 'hunter3' password 'hunter4'",
        "alter role nosuch password 'hunter3'",
        "create role e encrypted password 'hunter3' garbage",
    ] {
        let e = s.execute(sql).unwrap_err();
        let shown = format!("{e} {:?}", e.detail);
        assert!(!shown.contains("hunter"), "{sql}: {shown}");
    }
    let e = s
        .execute("create role e password 'hunter3' 'hunter4'")
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str(), e.position),
        ("42601", "syntax error at or near \"'…'\"", Some(34))
    );
    let e = s
        .execute("create role e password 'md5abcdefabcdefabcdefabcdefabcdefab'")
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("0A000", "an MD5-hashed password is not supported")
    );
    let e = s
        .execute(&format!("create role e password '{}'", "x".repeat(1025)))
        .unwrap_err();
    assert_eq!((e.code, e.message.as_str()), ("54000", "password too long"));
    assert_eq!(db.role("e"), None);
}

/// Long names are cut to 63 bytes as PostgreSQL cuts them; role statements are DDL,
/// refused in a transaction block; the bootstrap superuser is stored once changed and
/// still cannot be dropped; what PostgreSQL has and Walden does not is named.
#[test]
fn names_blocks_the_bootstrap_role_and_unsupported_forms() {
    let (db, mut s) = walden_session();
    let long = "a".repeat(70);
    assert_eq!(
        run(&mut s, &format!("create role {long}")),
        format!(
            "NOTICE: identifier \"{long}\" will be truncated to \"{}\"\nCREATE ROLE",
            &long[..63]
        )
    );
    assert!(db.role(&long[..63]).is_some());
    assert_eq!(
        run(&mut s, "begin; create role inblock"),
        "ERROR 25001: CREATE ROLE cannot run inside a transaction block"
    );
    assert_eq!(run(&mut s, "rollback"), "ROLLBACK");
    assert_eq!(db.role("postgres"), None);
    assert_eq!(
        run(&mut s, "alter role postgres password 'boss'"),
        "ALTER ROLE"
    );
    let stored = db.role("postgres").unwrap();
    assert!(stored.superuser && stored.login);
    assert!(Verifier::parse(stored.password.as_deref().unwrap())
        .unwrap()
        .matches(b"boss"));
    assert_eq!(
        walden_sql::roles::find(&db, "postgres"),
        Some(stored.clone())
    );
    assert_eq!(
        run(&mut s, "drop role postgres"),
        "ERROR 55006: current user cannot be dropped"
    );
    assert_eq!(
        run(&mut s, "alter role postgres password null"),
        "ALTER ROLE"
    );
    assert_eq!(db.role("postgres").unwrap().password, None);
    for (sql, want) in [
        (
            "create role m in role postgres",
            "ERROR 0A000: IN ROLE in CREATE ROLE (Walden has no role membership) is not supported",
        ),
        (
            "create role m admin postgres",
            "ERROR 0A000: ADMIN in CREATE ROLE (Walden has no role membership) is not supported",
        ),
        (
            "alter role postgres set work_mem = '1MB'",
            "ERROR 0A000: ALTER ROLE ... SET is not supported",
        ),
        (
            "alter role all set work_mem = '1MB'",
            "ERROR 0A000: ALTER ROLE ALL is not supported",
        ),
        (
            "alter group postgres add user x",
            "ERROR 0A000: ALTER GROUP ... ADD USER (Walden has no role membership) is not supported",
        ),
    ] {
        assert_eq!(run(&mut s, sql), want, "{sql}");
    }
}

/// Roles made, changed and dropped by SQL survive a crash, with a checkpoint between.
#[test]
fn roles_survive_a_crash() {
    let vfs = Arc::new(walden::vfs::SimVfs::new(3));
    let db = walden::Database::create("db", options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create user a password 'pa'; create role b; checkpoint; alter role a rename to a2; alter role postgres password 'root'; drop role b; create role c superuser")
        .unwrap();
    drop(s);
    let before = walden_sql::roles::all(&db);
    let db = crash(db, &vfs);
    assert_eq!(walden_sql::roles::all(&db), before);
    let names: Vec<String> = before.iter().map(|r| r.name.clone()).collect();
    assert_eq!(names, ["a2", "c", "postgres"]);
    let a2 = db.role("a2").unwrap();
    assert!(
        a2.login
            && Verifier::parse(a2.password.as_deref().unwrap())
                .unwrap()
                .matches(b"pa")
    );
}

/// What an ordinary role may do to roles, and what it may read of them, as PostgreSQL 15
/// answered `bob` (LOGIN) and `cr` (CREATEROLE) on the same statements; the superuser
/// `su` beside them. What could go wrong: any role creating superusers, changing the
/// superuser's password, or reading every verifier from pg_authid.
#[test]
fn an_ordinary_role_is_held_to_postgres_rules() {
    let (db, mut admin) = walden_session();
    for sql in [
        "create role bob login password 'b'",
        "create role cr createrole login",
        "create role su superuser",
    ] {
        run(&mut admin, sql);
    }
    let mut bob = Session::new(&db);
    bob.set_user("bob");
    let cases = [
        ("select current_user, session_user", "bob|bob"),
        ("show session_authorization", "bob"),
        ("show role", "none"),
        ("show is_superuser", "off"),
        (
            "create role x",
            "ERROR 42501: permission denied to create role",
        ),
        (
            "create role x superuser",
            "ERROR 42501: must be superuser to create superusers",
        ),
        (
            "alter role su nosuperuser",
            "ERROR 42501: must be superuser to alter superuser roles or change superuser attribute",
        ),
        (
            "alter role postgres password 'z'",
            "ERROR 42501: must be superuser to alter superuser roles or change superuser attribute",
        ),
        ("alter role bob password 'new'", "ALTER ROLE"),
        ("alter role bob createdb", "ERROR 42501: permission denied"),
        (
            "drop role su",
            "ERROR 42501: permission denied to drop role",
        ),
        (
            "drop role cr",
            "ERROR 42501: permission denied to drop role",
        ),
        (
            "select rolname from pg_authid limit 1",
            "ERROR 42501: permission denied for table pg_authid",
        ),
        (
            "select rolpassword from pg_roles where rolname='bob'",
            "********",
        ),
        (
            "select passwd from pg_shadow limit 1",
            "ERROR 42501: permission denied for view pg_shadow",
        ),
    ];
    for (sql, want) in cases {
        assert_eq!(run(&mut bob, sql), want, "bob: {sql}");
    }
    let mut cr = Session::new(&db);
    cr.set_user("cr");
    let cases = [
        (
            "create role y superuser",
            "ERROR 42501: must be superuser to create superusers",
        ),
        ("create role y", "CREATE ROLE"),
        (
            "alter role su password 'x'",
            "ERROR 42501: must be superuser to alter superuser roles or change superuser attribute",
        ),
        ("alter role bob createdb", "ALTER ROLE"),
        (
            "drop role su",
            "ERROR 42501: must be superuser to drop superusers",
        ),
        (
            "drop role cr",
            "ERROR 55006: current user cannot be dropped",
        ),
        ("alter role cr nocreaterole", "ALTER ROLE"),
        ("drop role y", "ERROR 42501: permission denied to drop role"),
    ];
    for (sql, want) in cases {
        assert_eq!(run(&mut cr, sql), want, "cr: {sql}");
    }
    // The superuser reads the verifiers; its own session says so.
    assert!(run(
        &mut admin,
        "select rolpassword from pg_authid where rolname = 'bob'"
    )
    .starts_with("SCRAM-SHA-256$4096:"));
    assert_eq!(
        run(&mut admin, "select current_user, session_user"),
        "postgres|postgres"
    );
    assert_eq!(run(&mut admin, "show is_superuser"), "on");
}
