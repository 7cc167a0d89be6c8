//! The virtual catalog under the queries psql 15 sends for `\d` and friends (captured in
//! `crates/walden-cli/tests/fixtures/psql15`): what could go wrong is a query psql
//! relies on failing, or answering with rows that differ from PostgreSQL's.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use walden::vfs::SimVfs;
use walden::{Database, Options, Value};
use walden_sql::Session;

fn db() -> Database {
    Database::create(
        "db",
        Options {
            vfs: Arc::new(SimVfs::new(1)),
            background: false,
            ..Options::default()
        },
    )
    .unwrap()
}

const SCHEMA: &str = "create table t (a serial primary key, b int not null default 5, c text,
  d varchar(10) unique, e char(3), f bigint, g smallint, h double precision,
  i boolean default true, j uuid);
create index t_c on t(c);
create index t_bf on t (b, f);";

/// The queries of a `psql -E` capture, in order.
fn captured(name: &str) -> Vec<String> {
    let path = format!(
        "{}/../walden-cli/tests/fixtures/psql15/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        match (line, &mut cur) {
            ("********* QUERY **********", _) => cur = Some(String::new()),
            ("**************************", Some(q)) => {
                out.push(q.trim_end().to_string());
                cur = None;
            }
            (l, Some(q)) => {
                q.push_str(l);
                q.push('\n');
            }
            _ => {}
        }
    }
    out
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    let r = s.execute_one(sql).unwrap_or_else(|e| panic!("{e}\n{sql}"));
    r.rows
        .iter()
        .map(|r| r.iter().map(text).collect())
        .collect()
}

fn oid(s: &mut Session, name: &str) -> String {
    rows(
        s,
        &format!("select oid from pg_class where relname = '{name}'"),
    )[0][0]
        .clone()
}

/// Runs the captured queries with PostgreSQL's OIDs (`16385` for t, `16393` for t_pkey)
/// replaced by Walden's.
fn run_all(s: &mut Session, capture: &str) -> Vec<Vec<Vec<String>>> {
    let (t, pkey) = (oid(s, "t"), oid(s, "t_pkey"));
    captured(capture)
        .iter()
        .map(|q| {
            let q = q.replace("16385", &t).replace("16393", &pkey);
            rows(s, &q)
        })
        .collect()
}

#[test]
fn list_queries_answer_as_postgres() {
    let db = db();
    let mut s = Session::new(&db);
    s.execute(SCHEMA).unwrap();
    let all = run_all(&mut s, "d");
    assert_eq!(
        all[0],
        vec![
            vec!["public", "t", "table", "postgres"],
            vec!["public", "t_a_seq", "sequence", "postgres"],
        ]
    );
    assert_eq!(
        run_all(&mut s, "dt")[0],
        vec![vec!["public", "t", "table", "postgres"]]
    );
    assert_eq!(
        run_all(&mut s, "di")[0],
        vec![
            vec!["public", "t_bf", "index", "postgres", "t"],
            vec!["public", "t_c", "index", "postgres", "t"],
            vec!["public", "t_d_key", "index", "postgres", "t"],
            vec!["public", "t_pkey", "index", "postgres", "t"],
        ]
    );
    assert!(run_all(&mut s, "dv")[0].is_empty());
    assert_eq!(run_all(&mut s, "dt_tS")[0].len(), 1);
    assert_eq!(run_all(&mut s, "di_tS")[0].len(), 4);
}

#[test]
fn describe_table_queries_answer_as_postgres() {
    let db = db();
    let mut s = Session::new(&db);
    s.execute(SCHEMA).unwrap();
    let t = oid(&mut s, "t");
    let all = run_all(&mut s, "d_t");
    assert_eq!(all.len(), 9, "every query psql sends for \\d t runs");
    assert_eq!(all[0], vec![vec![t.as_str(), "public", "t"]]);
    // relchecks, relkind, relhasindex, …, relpersistence, relreplident, amname (the
    // default table kind here is undo, an access method of its own).
    assert_eq!(
        all[1],
        vec![vec![
            "0", "r", "t", "f", "f", "f", "f", "f", "f", "", "0", "", "p", "d", "undo"
        ]]
    );
    let columns: Vec<Vec<String>> = all[2].iter().map(|r| r[..4].to_vec()).collect();
    assert_eq!(
        columns[..3],
        [
            vec!["a", "integer", "nextval('t_a_seq'::regclass)", "t"],
            vec!["b", "integer", "5", "t"],
            vec!["c", "text", "", "f"],
        ]
    );
    assert_eq!(columns[3][1], "character varying(10)");
    assert_eq!(columns[4][1], "character(3)");
    assert_eq!(columns[8][2], "true");
    assert_eq!(
        all[3][0][..8],
        [
            "t_pkey",
            "t",
            "t",
            "f",
            "t",
            "CREATE UNIQUE INDEX t_pkey ON public.t USING btree (a)",
            "PRIMARY KEY (a)",
            "p"
        ]
    );
    assert_eq!(
        all[3][3][5..8],
        [
            "CREATE UNIQUE INDEX t_d_key ON public.t USING btree (d)",
            "UNIQUE (d)",
            "u"
        ]
    );
    // No policies, statistics objects, publications, parents or children.
    assert!(all[4..].iter().all(Vec::is_empty), "{:?}", &all[4..]);
    let index = run_all(&mut s, "d_t_pkey");
    assert_eq!(index[2], vec![vec!["a", "integer", "yes", "a"]]);
    assert_eq!(
        index[3],
        vec![vec![
            "t", "t", "f", "t", "f", "f", "f", "f", "btree", "t", ""
        ]]
    );
}

#[test]
fn information_schema_lists_tables_and_columns() {
    let db = db();
    let mut s = Session::new(&db);
    s.execute(SCHEMA).unwrap();
    assert_eq!(
        rows(
            &mut s,
            "select table_schema, table_name, table_type from information_schema.tables \
             where table_schema = 'public'"
        ),
        vec![vec!["public", "t", "BASE TABLE"]]
    );
    let columns = rows(
        &mut s,
        "select column_name, data_type, is_nullable, column_default, character_maximum_length \
         from information_schema.columns where table_name = 't' order by ordinal_position",
    );
    let expected = [
        ["a", "integer", "NO", "nextval('t_a_seq'::regclass)", ""],
        ["b", "integer", "NO", "5", ""],
        ["c", "text", "YES", "", ""],
        ["d", "character varying", "YES", "", "10"],
        ["e", "character", "YES", "", "3"],
        ["f", "bigint", "YES", "", ""],
        ["g", "smallint", "YES", "", ""],
        ["h", "double precision", "YES", "", ""],
        ["i", "boolean", "YES", "true", ""],
        ["j", "uuid", "YES", "", ""],
    ];
    assert_eq!(
        columns,
        expected.map(|r| r.map(String::from).to_vec()).to_vec()
    );
}

#[test]
fn catalog_names_casts_and_arrays() {
    let db = db();
    let mut s = Session::new(&db);
    s.execute(SCHEMA).unwrap();
    let one = |s: &mut Session, sql: &str| rows(s, sql)[0][0].clone();
    // Unqualified catalog names, regclass both ways, format_type.
    assert_eq!(
        one(
            &mut s,
            "select c.oid::pg_catalog.regclass from pg_class c where relname = 't_c'"
        ),
        "t_c"
    );
    assert_eq!(
        one(
            &mut s,
            "select 't'::regclass = (select oid from pg_catalog.pg_class where relname = 't')"
        ),
        "t"
    );
    assert_eq!(
        one(
            &mut s,
            "select format_type(atttypid, atttypmod) from pg_attribute \
                     where attrelid = 't'::regclass and attname = 'd'"
        ),
        "character varying(10)"
    );
    let err = s.execute_one("select 'nope'::regclass").unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        ("42P01", "relation \"nope\" does not exist")
    );
    // Arrays in their text form.
    assert_eq!(
        one(
            &mut s,
            "select array(select relname from pg_class where relkind = 'i' order by 1)"
        ),
        "{t_bf,t_c,t_d_key,t_pkey}"
    );
    assert_eq!(
        one(
            &mut s,
            "select array_to_string(array(select attname from pg_attribute \
                     where attrelid = 't_bf'::regclass order by attnum), ', ')"
        ),
        "b, f"
    );
    assert_eq!(one(&mut s, "select 10 = any('{0,10}')"), "t");
    assert_eq!(one(&mut s, "select 11 = any('{0,10}')"), "f");
    assert_eq!(one(&mut s, "select 11 = any('{0,NULL}')"), "");
    assert_eq!(one(&mut s, "select array_upper('{5,6,7}'::int2[], 1)"), "3");
    assert_eq!(
        one(
            &mut s,
            "select count(*) from pg_attribute where attrelid = 't'::regclass \
                     and attnum = ('{2,3}'::int2[])[2]"
        ),
        "1"
    );
    // generate_series with bounds from the enclosing row.
    assert_eq!(
        rows(
            &mut s,
            "select relname, (select string_agg(x::text, ',') from \
                      pg_catalog.generate_series(1, c.relnatts) x) from pg_class c \
                      where relkind = 'i' order by 1"
        ),
        vec![
            vec!["t_bf", "1,2"],
            vec!["t_c", "1"],
            vec!["t_d_key", "1"],
            vec!["t_pkey", "1"],
        ]
    );
    // The regular-expression operators psql writes.
    assert_eq!(
        rows(
            &mut s,
            "select relname from pg_class where relname OPERATOR(pg_catalog.~) \
                      '^(t_.*)$' COLLATE pg_catalog.default and relname !~ 'key' order by 1"
        ),
        vec![vec!["t_a_seq"], vec!["t_bf"], vec!["t_c"]]
    );
}

#[test]
fn table_kinds_are_access_methods() {
    let db = db();
    let mut s = Session::new(&db);
    s.execute(
        "create table h (a int) using heap; create table z (a int) using undo; create index z_a on z (a)",
    )
    .unwrap();
    assert_eq!(
        rows(
            &mut s,
            "select c.relname, am.amname from pg_class c join pg_am am on am.oid = c.relam order by 1"
        ),
        vec![vec!["h", "heap"], vec!["z", "undo"], vec!["z_a", "btree"]]
    );
}
