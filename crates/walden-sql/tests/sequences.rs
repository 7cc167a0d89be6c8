//! Sequences through SQL, beside PostgreSQL 15: CREATE/ALTER/DROP SEQUENCE, nextval,
//! currval, lastval and setval with their errors, serial and identity columns, and many
//! sessions sharing one counter. What could go wrong: two sessions given one value, a
//! value handed out again after a rollback or a crash, a session's currval showing
//! another's, a serial default that pg_dump's output cannot restore, or an option
//! PostgreSQL takes refused (or one it refuses taken).
#![allow(clippy::unwrap_used)]

mod support;
use support::{check_on_both, q};

use std::sync::Arc;

use walden::vfs::SimVfs;
use walden::Database;
use walden_sql::Session;

/// The functions and the statements, each outcome as PostgreSQL 15 gave it.
#[test]
fn functions_and_statements_as_postgres() {
    check_on_both(
        "sequences_functions",
        &[
            (r#"create sequence s"#, r#""#),
            (
                r#"select nextval('s'), nextval('s'), currval('s')"#,
                r#"1|2|2"#,
            ),
            (r#"select lastval()"#, r#"2"#),
            (r#"select setval('s', 10)"#, r#"10"#),
            (r#"select nextval('s')"#, r#"11"#),
            (r#"select setval('s', 20, false), nextval('s')"#, r#"20|20"#),
            (r#"select currval('s'), lastval()"#, r#"20|20"#),
            (r#"select nextval('s'::regclass)"#, r#"21"#),
            (r#"select nextval('S')"#, r#"22"#),
            (
                r#"select nextval('"S"')"#,
                r#"ERROR 42P01: relation "S" does not exist"#,
            ),
            (r#"select nextval('public.s')"#, r#"23"#),
            (
                r#"select nextval('other.s')"#,
                r#"ERROR 3F000: schema "other" does not exist"#,
            ),
            (
                r#"create sequence s"#,
                r#"ERROR 42P07: relation "s" already exists"#,
            ),
            (r#"create sequence if not exists s"#, r#""#),
            (
                r#"create sequence down increment by -2 minvalue -5 maxvalue -1 start -1"#,
                r#""#,
            ),
            (
                r#"select nextval('down'), nextval('down'), nextval('down')"#,
                r#"-1|-3|-5"#,
            ),
            (
                r#"select nextval('down')"#,
                r#"ERROR 2200H: nextval: reached minimum value of sequence "down" (-5)"#,
            ),
            (
                r#"create sequence c as smallint maxvalue 3 cycle cache 2"#,
                r#""#,
            ),
            (
                r#"select nextval('c'), nextval('c'), nextval('c'), nextval('c'), nextval('c')"#,
                r#"1|2|3|1|2"#,
            ),
            (r#"create sequence fresh"#, r#""#),
            (
                r#"select currval('fresh')"#,
                r#"ERROR 55000: currval of sequence "fresh" is not yet defined in this session"#,
            ),
            (
                r#"select setval('fresh', 0)"#,
                r#"ERROR 22003: setval: value 0 is out of bounds for sequence "fresh" (1..9223372036854775807)"#,
            ),
            (
                r#"select setval('fresh', 5, true), currval('fresh')"#,
                r#"5|5"#,
            ),
            (r#"create table t (a int)"#, r#""#),
            (
                r#"select nextval('t')"#,
                r#"ERROR 42809: "t" is not a sequence"#,
            ),
            (
                r#"select nextval('nope')"#,
                r#"ERROR 42P01: relation "nope" does not exist"#,
            ),
            (
                r#"drop sequence t"#,
                r#"ERROR 42809: "t" is not a sequence"#,
            ),
            (r#"alter sequence s restart with 100"#, r#""#),
            (r#"select nextval('s')"#, r#"100"#),
            (r#"alter sequence s increment by 5 maxvalue 120"#, r#""#),
            (r#"select nextval('s'), nextval('s')"#, r#"105|110"#),
            (
                r#"alter sequence s maxvalue 50"#,
                r#"ERROR 22023: RESTART value (110) cannot be greater than MAXVALUE (50)"#,
            ),
            (r#"alter sequence s rename to s2"#, r#""#),
            (r#"select nextval('s2')"#, r#"115"#),
            (r#"select nextval('s2')"#, r#"120"#),
            (
                r#"select sequencename, data_type, start_value, min_value, max_value, increment_by, cycle, cache_size, last_value from pg_sequences order by sequencename"#,
                r#"c|smallint|1|1|3|1|t|2|2
down|bigint|-1|-5|-1|-2|f|1|-5
fresh|bigint|1|1|9223372036854775807|1|f|1|5
s2|bigint|1|1|120|5|f|1|120"#,
            ),
            (
                r#"select relname, relkind from pg_class where relkind = 'S' order by relname"#,
                r#"c|S
down|S
fresh|S
s2|S"#,
            ),
            (
                r#"drop sequence nope"#,
                r#"ERROR 42P01: sequence "nope" does not exist"#,
            ),
            (r#"drop sequence if exists nope, fresh"#, r#""#),
            (
                r#"select count(*) from pg_class where relname = 'fresh'"#,
                r#"0"#,
            ),
            (
                r#"create sequence bad increment 0"#,
                r#"ERROR 22023: INCREMENT must not be zero"#,
            ),
            (
                r#"create sequence bad as text"#,
                r#"ERROR 22023: sequence type must be smallint, integer, or bigint"#,
            ),
            (
                r#"create sequence bad minvalue 10 start 5"#,
                r#"ERROR 22023: START value (5) cannot be less than MINVALUE (10)"#,
            ),
            (
                r#"create sequence bad as smallint maxvalue 100000"#,
                r#"ERROR 22023: MAXVALUE (100000) is out of range for sequence data type smallint"#,
            ),
            (
                r#"create sequence bad cache 0"#,
                r#"ERROR 22023: CACHE (0) must be greater than zero"#,
            ),
            (r#"create sequence i4 as integer start 2147483647"#, r#""#),
            (r#"select nextval('i4')"#, r#"2147483647"#),
            (
                r#"select nextval('i4')"#,
                r#"ERROR 2200H: nextval: reached maximum value of sequence "i4" (2147483647)"#,
            ),
        ],
    );
}

/// Serial and identity columns: their defaults, the catalog's view of them, GENERATED
/// ALWAYS, dropping, renaming and TRUNCATE … RESTART IDENTITY.
#[test]
fn serial_and_identity_columns_as_postgres() {
    check_on_both(
        "sequences_columns",
        &[
            (r#"create table t (id serial primary key, v text)"#, r#""#),
            (
                r#"insert into t (v) values ('a'), ('b') returning id"#,
                r#"1
2"#,
            ),
            (
                r#"insert into t values (default, 'c') returning id, v"#,
                r#"3|c"#,
            ),
            (r#"insert into t (id, v) values (10, 'd')"#, r#""#),
            (r#"insert into t (v) values ('e') returning id"#, r#"4"#),
            (
                r#"select pg_get_serial_sequence('t', 'id'), pg_get_serial_sequence('t', 'v')"#,
                r#"public.t_id_seq|"#,
            ),
            (r#"select currval('t_id_seq'), lastval()"#, r#"4|4"#),
            (
                r#"select column_name, column_default, is_nullable from information_schema.columns where table_name = 't' order by ordinal_position"#,
                r#"id|nextval('t_id_seq'::regclass)|NO
v||YES"#,
            ),
            (
                r#"select a.attname, pg_get_expr(d.adbin, d.adrelid) from pg_attrdef d join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum where d.adrelid = 't'::regclass"#,
                r#"id|nextval('t_id_seq'::regclass)"#,
            ),
            (
                r#"select c.relname, d.deptype, d.refobjsubid from pg_depend d join pg_class c on c.oid = d.objid where d.refobjid = 't'::regclass and c.relkind = 'S'"#,
                r#"t_id_seq|a|1"#,
            ),
            (
                r#"update t set id = default where v = 'a' returning id"#,
                r#"5"#,
            ),
            (r#"begin"#, r#""#),
            (
                r#"insert into t (v) values ('rolled back') returning id"#,
                r#"6"#,
            ),
            (r#"rollback"#, r#""#),
            (
                r#"insert into t (v) values ('after rollback') returning id"#,
                r#"7"#,
            ),
            (r#"create table b (id bigserial, s smallserial)"#, r#""#),
            (
                r#"select sequencename, data_type, max_value from pg_sequences where sequencename like 'b%' order by 1"#,
                r#"b_id_seq|bigint|9223372036854775807
b_s_seq|smallint|32767"#,
            ),
            (
                r#"create table gen (id int generated always as identity, v text)"#,
                r#""#,
            ),
            (r#"insert into gen (v) values ('x') returning id"#, r#"1"#),
            (
                r#"insert into gen (id, v) values (5, 'y')"#,
                r#"ERROR 428C9: cannot insert a non-DEFAULT value into column "id""#,
            ),
            (
                r#"insert into gen (id, v) values (default, 'z') returning id"#,
                r#"2"#,
            ),
            (
                r#"update gen set id = 7"#,
                r#"ERROR 428C9: column "id" can only be updated to DEFAULT"#,
            ),
            (
                r#"update gen set id = default where v = 'x' returning id"#,
                r#"3"#,
            ),
            (
                r#"create table gbd (id bigint generated by default as identity (start with 100 increment by 10), v text)"#,
                r#""#,
            ),
            (r#"insert into gbd (v) values ('a') returning id"#, r#"100"#),
            (
                r#"insert into gbd (id, v) values (5, 'b') returning id"#,
                r#"5"#,
            ),
            (r#"insert into gbd (v) values ('c') returning id"#, r#"110"#),
            (
                r#"select a.attname, a.attidentity, a.atthasdef from pg_attribute a where a.attrelid = 'gbd'::regclass and a.attnum > 0 order by a.attnum"#,
                r#"id|d|f
v||f"#,
            ),
            (
                r#"select pg_get_serial_sequence('gbd', 'id')"#,
                r#"public.gbd_id_seq"#,
            ),
            (
                r#"drop sequence t_id_seq"#,
                r#"ERROR 2BP01: cannot drop sequence t_id_seq because other objects depend on it"#,
            ),
            (
                r#"drop sequence gbd_id_seq"#,
                r#"ERROR 2BP01: cannot drop sequence gbd_id_seq because column id of table gbd requires it"#,
            ),
            (
                r#"create table bad (id text generated always as identity)"#,
                r#"ERROR 22023: identity column type must be smallint, integer, or bigint"#,
            ),
            (
                r#"create table bad (id serial default 1)"#,
                r#"ERROR 42601: multiple default values specified for column "id" of table "bad""#,
            ),
            (
                r#"create table bad (id int default 1 generated always as identity)"#,
                r#"ERROR 42601: both default and identity specified for column "id" of table "bad""#,
            ),
            (r#"truncate t restart identity"#, r#""#),
            (r#"insert into t (v) values ('x') returning id"#, r#"1"#),
            (r#"create table "T2" ("Id" serial)"#, r#""#),
            (
                r#"select pg_get_serial_sequence('"T2"', 'Id')"#,
                r#"public."T2_Id_seq""#,
            ),
            (r#"insert into "T2" default values returning "Id""#, r#"1"#),
            (r#"create table t_id_seq1 (a int)"#, r#""#),
            (r#"create table t3 (id serial)"#, r#""#),
            (
                r#"create table t (id serial)"#,
                r#"ERROR 42P07: relation "t" already exists"#,
            ),
            (r#"alter sequence t_id_seq rename to renamed_seq"#, r#""#),
            (
                r#"insert into t (v) values ('after rename') returning id"#,
                r#"2"#,
            ),
            (
                r#"select pg_get_expr(d.adbin, d.adrelid) from pg_attrdef d where d.adrelid = 't'::regclass"#,
                r#"nextval('renamed_seq'::regclass)"#,
            ),
            (r#"drop sequence renamed_seq cascade"#, r#""#),
            (
                r#"insert into t (v) values ('no default')"#,
                r#"ERROR 23502: null value in column "id" of relation "t" violates not-null constraint"#,
            ),
            (r#"drop table t"#, r#""#),
            (
                r#"select count(*) from pg_class where relname like 'renamed%'"#,
                r#"0"#,
            ),
            (r#"drop table gen"#, r#""#),
            (
                r#"select count(*) from pg_sequences where sequencename = 'gen_id_seq'"#,
                r#"0"#,
            ),
            (r#"create sequence owned_s owned by gbd.v"#, r#""#),
            (r#"alter table gbd drop column v"#, r#""#),
            (
                r#"select count(*) from pg_sequences where sequencename = 'owned_s'"#,
                r#"0"#,
            ),
        ],
    );
}

/// Two sessions inserting in turn into one serial key: each row its own id, and each
/// session's currval its own last.
#[test]
fn two_sessions_alternating_share_one_counter() {
    let db = support::db();
    let mut a = Session::with_seed(&db, 1);
    let mut b = Session::with_seed(&db, 2);
    q(&mut a, "create table t (id serial primary key, who text)");
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(q(&mut a, "insert into t (who) values ('a') returning id"));
        ids.push(q(&mut b, "insert into t (who) values ('b') returning id"));
        assert_eq!(q(&mut a, "select currval('t_id_seq')"), ids[2 * i]);
        assert_eq!(q(&mut b, "select currval('t_id_seq')"), ids[2 * i + 1]);
    }
    let want: Vec<String> = (1..=20).map(|i| i.to_string()).collect();
    assert_eq!(ids, want);
    assert_eq!(
        q(&mut a, "select count(distinct id), max(id) from t"),
        "20|20"
    );
}

/// Eight sessions on eight threads, 1,000 single-row inserts each into a `serial
/// primary key` table: 8,000 rows, 8,000 distinct ids, no failed insert.
#[test]
fn eight_sessions_insert_concurrently_without_a_duplicate() {
    let db = support::db();
    let mut s = Session::with_seed(&db, 1);
    q(&mut s, "create table t (id serial primary key, n int)");
    let threads: Vec<_> = (0..8)
        .map(|k| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = Session::with_seed(&db, k);
                for i in 0..1000 {
                    s.execute(&format!("insert into t (n) values ({i})"))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        q(
            &mut s,
            "select count(*), count(distinct id), min(id), max(id) from t"
        ),
        "8000|8000|1|8000"
    );
}

/// Values taken by a transaction that rolled back, or by one that committed, are never
/// given again: not after the rollback, not after a crash (the log ahead is durable
/// before either ends).
#[test]
fn rollbacks_and_crashes_never_give_a_value_again() {
    let vfs = Arc::new(SimVfs::new(3));
    let mut db = Database::create("db", support::options(&vfs)).unwrap();
    let mut s = Session::with_seed(&db, 1);
    q(&mut s, "create table t (id bigserial primary key, v int)");
    let mut seen = Vec::new();
    for round in 0..5 {
        q(&mut s, "begin");
        seen.push(q(&mut s, "insert into t (v) values (1) returning id"));
        q(&mut s, "rollback");
        seen.push(q(&mut s, "insert into t (v) values (2) returning id"));
        // Past the 32 values the insert's record logged ahead: a record of its own.
        seen.push(q(
            &mut s,
            "select max(nextval('t_id_seq')) from generate_series(1, 50)",
        ));
        if round % 2 == 1 {
            q(&mut s, "checkpoint");
        }
        drop(s);
        db = support::crash(db, &vfs);
        s = Session::with_seed(&db, 1);
    }
    let seen: Vec<i64> = seen.iter().map(|v| v.parse().unwrap()).collect();
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        seen.len(),
        "a value was given twice: {seen:?}"
    );
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(q(&mut s, "select count(*) from t"), "5");
}

/// pg_dump's statements for serial, identity and free-standing sequences restore: the
/// rows come back and each sequence goes on where PostgreSQL's did.
#[test]
fn a_pg_dump_of_sequences_restores() {
    let dump = include_str!("fixtures/pg_dump15/sequences.sql");
    // psql's meta-commands are the client's, not statements.
    let script: String = dump
        .lines()
        .filter(|l| !l.starts_with("\\restrict") && !l.starts_with("\\unrestrict"))
        .map(|l| format!("{l}\n"))
        .collect();
    let db = support::db();
    let mut s = Session::with_seed(&db, 1);
    let mut failed = Vec::new();
    s.run_script(&script, &mut |o| {
        if let Err(e) = &o.result {
            // Settings Walden does not have are pg_dump's, not the sequences' (issue 40).
            if !o.text.trim_start().starts_with("SET ") {
                failed.push(format!("{}: {e}", o.text.trim()));
            }
        }
        true
    });
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(
        q(&mut s, "select id, v from t order by id"),
        "1|a\n2|b\n3|c"
    );
    assert_eq!(q(&mut s, "select id, v from g order by id"), "1|x\n2|y");
    assert_eq!(
        q(&mut s, "insert into t (v) values ('d') returning id"),
        "4"
    );
    assert_eq!(
        q(&mut s, "insert into g (v) values ('z') returning id"),
        "3"
    );
    assert_eq!(
        q(&mut s, "insert into d (n) values (2) returning id"),
        "101"
    );
    assert_eq!(q(&mut s, "select nextval('free_s')"), "15");
    assert_eq!(
        support::outcome(&mut s, "insert into g (id, v) values (9, 'no')"),
        r#"ERROR 428C9: cannot insert a non-DEFAULT value into column "id""#
    );
    assert_eq!(
        q(
            &mut s,
            "select pg_get_serial_sequence('d', 'id'), pg_get_serial_sequence('t', 'id')"
        ),
        "public.d_id_seq|public.t_id_seq"
    );
}

/// A serial column of a database made before sequences (format 20: the column flagged
/// serial, no default) gets its sequence when a session opens the database, starting
/// past the column's largest value; sessions then share it.
#[test]
fn a_serial_column_from_before_sequences_gets_its_sequence() {
    use walden::{Column, ColumnType, Schema, Value};
    let db = support::db();
    let mut id = Column::not_null("id", ColumnType::Int4);
    id.serial = true;
    db.create_table(
        "old",
        Schema::new(vec![id, Column::new("v", ColumnType::Text)]),
    )
    .unwrap();
    let mut t = db.begin();
    for i in [1, 2, 7] {
        t.insert("old", &[Value::Int4(i), Value::Text("before".into())])
            .unwrap();
    }
    t.commit().unwrap();
    let mut a = Session::with_seed(&db, 1);
    let mut b = Session::with_seed(&db, 2);
    assert_eq!(
        q(&mut a, "insert into old (v) values ('a') returning id"),
        "8"
    );
    assert_eq!(
        q(&mut b, "insert into old (v) values ('b') returning id"),
        "9"
    );
    assert_eq!(
        q(
            &mut a,
            "select pg_get_serial_sequence('old', 'id'), count(*) from pg_sequences"
        ),
        "public.old_id_seq|1"
    );
    assert_eq!(
        q(&mut a, "select column_default from information_schema.columns where table_name = 'old' and column_name = 'id'"),
        "nextval('old_id_seq'::regclass)"
    );
}
