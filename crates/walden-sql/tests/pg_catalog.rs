//! The virtual catalog under the queries psql 15 sends for `\d` and friends (captured in
//! `crates/walden-cli/tests/fixtures/psql15`) and those pgjdbc 42.5 sends for
//! DatabaseMetaData (`tests/fixtures/pgjdbc42`): what could go wrong is a query a client
//! relies on failing, or answering with rows that differ from PostgreSQL's.
#![allow(clippy::unwrap_used)]

mod support;

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
    // regtype from a name, and the to_reg* functions that give NULL for none
    // (psycopg's type probe: `where t.oid = to_regtype('hstore')`).
    assert_eq!(
        one(
            &mut s,
            "select typname || ' ' || oid::regtype::text from pg_type where oid = to_regtype('integer')"
        ),
        "int4 integer"
    );
    assert_eq!(
        one(
            &mut s,
            "select 'varchar'::regtype::int8 || ',' || 'pg_catalog.INT8'::regtype::int8 || ',' || \
             coalesce(to_regtype('hstore')::text, 'null') || ',' || (to_regclass('t') = 't'::regclass)::text \
             || ',' || coalesce(to_regclass('nope')::text, 'null')"
        ),
        "1043,20,null,true,null"
    );
    let err = s.execute_one("select 'hstore'::regtype").unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        ("42704", "type \"hstore\" does not exist")
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

/// A pgjdbc query of `tests/fixtures/pgjdbc42`, its parameter `$1` (where it has one)
/// written in as `param`.
fn pgjdbc_query(name: &str, param: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/pgjdbc42/{name}.sql",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .replace("$1", param)
}

/// Rows as lines of `|`-separated values.
fn lines(rows: &[Vec<String>]) -> Vec<String> {
    rows.iter().map(|r| r.join("|")).collect()
}

/// The types Walden's `pg_type` lists, as pgjdbc's getTypeInfo query names them.
const WALDEN_TYPES: &[&str] = &[
    "bool|16",
    "bytea|17",
    "char|18",
    "name|19",
    "int8|20",
    "int2|21",
    "int4|23",
    "text|25",
    "oid|26",
    "float8|701",
    "bpchar|1042",
    "varchar|1043",
    "date|1082",
    "timestamp|1114",
    "timestamptz|1184",
    "interval|1186",
    "numeric|1700",
    "regclass|2205",
    "uuid|2950",
    "jsonb|3802",
];

/// A pgjdbc query, its parameter, and the rows PostgreSQL 15 gives over `schema.sql`;
/// where Walden's differ, Walden's (and the case says why).
struct PgjdbcCase {
    name: &'static str,
    param: &'static str,
    postgres: Vec<&'static str>,
    walden: Option<Vec<&'static str>>,
}

fn case(
    name: &'static str,
    param: &'static str,
    postgres: Vec<&'static str>,
    walden: Option<Vec<&'static str>>,
) -> PgjdbcCase {
    PgjdbcCase {
        name,
        param,
        postgres,
        walden,
    }
}

fn pgjdbc_cases() -> Vec<PgjdbcCase> {
    // An index's reltuples and relpages (CARDINALITY, PAGES): PostgreSQL counts an empty
    // index's tuples (0) and its metapage (1); Walden keeps no index statistics (its
    // reltuples are the table's rows as ANALYZE counted them, -1 before, and relpages 0).
    vec![
        case(
            "getColumns",
            "",
            vec![
                "public|meta_child|id|20|t|-1|8|-1|1|||nextval('meta_child_id_seq'::regclass)||0|b",
                "public|meta_child|parent_id|23|t|-1|4|-1|2|||||0|b",
                "public|meta_child|flag|16|f|-1|1|-1|3|||true||0|b",
                "public|meta_kinds|u|2950|f|-1|16|-1|1|||||0|b",
                "public|meta_kinds|j|3802|f|-1|-1|-1|2|||||0|b",
                "public|meta_kinds|i|1186|f|-1|16|-1|3|||||0|b",
                "public|meta_parent|id|23|t|-1|4|-1|1|||||0|b",
                "public|meta_parent|code|1043|t|14|-1|-1|2|||||0|b",
                "public|meta_parent|note|25|f|-1|-1|-1|3|||'none'::text||0|b",
                "public|meta_parent|amount|1700|f|655366|-1|-1|4|||||0|b",
                "public|meta_parent|made|1184|f|-1|8|-1|5|||now()||0|b",
            ],
            None,
        ),
        case(
            "getPrimaryKeys",
            "",
            vec!["|public|meta_child|id|1|meta_child_pkey"],
            None,
        ),
        case(
            "getIndexInfo",
            "",
            vec![
                "|public|meta_child|f||meta_child_pkey|3|1|id|A|0|1|",
                "|public|meta_child|t||meta_child_parent|3|1|parent_id|D|0|1|",
            ],
            Some(vec![
                "|public|meta_child|f||meta_child_pkey|3|1|id|A|-1|0|",
                "|public|meta_child|t||meta_child_parent|3|1|parent_id|D|-1|0|",
            ]),
        ),
        case(
            "getIndexInfo_unique",
            "",
            vec![
                "|public|meta_parent|f||meta_parent_code_key|3|1|code|A|0|1|",
                "|public|meta_parent|f||meta_parent_pkey|3|1|id|A|0|1|",
            ],
            Some(vec![
                "|public|meta_parent|f||meta_parent_code_key|3|1|code|A|-1|0|",
                "|public|meta_parent|f||meta_parent_pkey|3|1|id|A|-1|0|",
            ]),
        ),
        case(
            "getSchemas",
            "",
            vec!["information_schema|", "pg_catalog|", "public|"],
            None,
        ),
        case("max_index_keys", "", vec!["32"], None),
        case(
            "getImportedKeys",
            "",
            vec!["|public|meta_parent|id||public|meta_child|parent_id|1|3|0|meta_child_parent_id_fkey|meta_parent_pkey|7"],
            None,
        ),
        case(
            "getExportedKeys",
            "",
            vec!["|public|meta_parent|id||public|meta_child|parent_id|1|3|0|meta_child_parent_id_fkey|meta_parent_pkey|7"],
            None,
        ),
        case("typeInfoCache_oid", "1186", vec!["f|b|interval|1186"], None),
        case("typeInfoCache_oid", "3802", vec!["f|b|jsonb|3802"], None),
        case("typeName_oid", "2950", vec!["t|pg_catalog|uuid"], None),
    ]
}

#[test]
fn pgjdbc_metadata_queries_answer_as_postgres() {
    let schema = pgjdbc_query("schema", "");
    let db = db();
    let mut s = Session::new(&db);
    s.execute(&schema).unwrap();
    for c in pgjdbc_cases() {
        let got = lines(&rows(&mut s, &pgjdbc_query(c.name, c.param)));
        assert_eq!(got, c.walden.unwrap_or(c.postgres), "{}", c.name);
    }
    // getTypeInfo's list (in no order) and TypeInfoCache's, every type with its kind
    // (`typinput = 'array_in'::regproc` is false: Walden has no array types), the ones
    // on the search path first, then by OID from the highest.
    let mut types = lines(&rows(&mut s, &pgjdbc_query("getTypeInfo", "")));
    types.sort_by_key(|t| t.rsplit('|').next().and_then(|o| o.parse::<u32>().ok()));
    assert_eq!(types, WALDEN_TYPES);
    let cache = lines(&rows(&mut s, &pgjdbc_query("typeInfoCache_all", "")));
    let want: Vec<String> = WALDEN_TYPES
        .iter()
        .rev()
        .map(|t| format!("f|b|{t}"))
        .collect();
    assert_eq!(cache, want);

    // PostgreSQL itself, where installed: the same rows (its type lists hold Walden's
    // types in the same order, among its others).
    let Some(cluster) = support::pg::cluster() else {
        eprintln!("pgjdbc queries on PostgreSQL: {}", support::pg::SKIPPED);
        return;
    };
    let mut c = support::pg::fresh_database(&cluster, "pgjdbc_meta");
    c.batch_execute(&schema).unwrap();
    let mut on_pg = |sql: &str| -> Vec<String> {
        support::pg::row_lines(&c.simple_query(sql).unwrap_or_else(|e| panic!("{e}\n{sql}")))
    };
    for case in pgjdbc_cases() {
        let got = on_pg(&pgjdbc_query(case.name, case.param));
        assert_eq!(got, case.postgres, "{} on PostgreSQL", case.name);
    }
    let mine = |t: &String| {
        WALDEN_TYPES
            .iter()
            .any(|w| t.ends_with(&format!("|{w}")) || t == w)
    };
    let mut pg_types: Vec<String> = on_pg(&pgjdbc_query("getTypeInfo", ""))
        .into_iter()
        .filter(mine)
        .collect();
    pg_types.sort_by_key(|t| t.rsplit('|').next().and_then(|o| o.parse::<u32>().ok()));
    assert_eq!(pg_types, WALDEN_TYPES);
    let pg_cache: Vec<String> = on_pg(&pgjdbc_query("typeInfoCache_all", ""))
        .into_iter()
        .filter(mine)
        .collect();
    assert_eq!(pg_cache, want);
}

/// The size functions DBAs watch space with: a table's pages, its toast relation's
/// (values stored out of line), its indexes'; and `pg_size_pretty` as PostgreSQL 15
/// prints (the expected strings are PostgreSQL 15's output for the same numbers).
#[test]
fn relation_sizes_and_size_pretty() {
    let db = db();
    let mut s = Session::new(&db);
    s.execute("create table docs (id int primary key, body text)")
        .unwrap();
    s.execute("insert into docs select i, 'x' from generate_series(1, 1000) i")
        .unwrap();
    let one = |s: &mut Session, sql: &str| support::q(s, sql);
    let page = db.page_size() as i64;
    let rel: i64 = one(&mut s, "select pg_relation_size('docs')")
        .parse()
        .unwrap();
    assert!(rel > 0 && rel % page == 0, "{rel}");
    assert_eq!(
        one(
            &mut s,
            "select pg_table_size('docs') = pg_relation_size('docs')"
        ),
        "t"
    );
    let ix: i64 = one(&mut s, "select pg_indexes_size('docs')")
        .parse()
        .unwrap();
    assert!(ix >= 2 * page, "{ix}");
    assert_eq!(
        one(
            &mut s,
            "select pg_relation_size('docs_pkey') = pg_indexes_size('docs')"
        ),
        "t"
    );
    // A value stored out of line counts in the table's size, not its relation's.
    s.execute(
        "insert into docs select 0, string_agg(md5(i::text), '') from generate_series(1, 32768) i",
    )
    .unwrap();
    let toast: i64 = one(
        &mut s,
        "select pg_table_size('docs') - pg_relation_size('docs')",
    )
    .parse()
    .unwrap();
    assert!(toast >= 400_000, "{toast}");
    assert_eq!(
        one(
            &mut s,
            "select pg_total_relation_size('docs') = pg_table_size('docs') + pg_indexes_size('docs')"
        ),
        "t"
    );
    assert_eq!(
        one(&mut s, "select pg_relation_size(c.oid) = pg_relation_size('docs') from pg_class c where relname = 'docs'"),
        "t"
    );
    assert_eq!(
        one(
            &mut s,
            "select pg_relation_size('docs', 'fsm'), pg_relation_size(999999) is null"
        ),
        "0|t"
    );
    let e = s
        .execute("select pg_relation_size('docs', 'xyz')")
        .unwrap_err();
    assert_eq!((e.code, e.message.as_str()), ("22023", "invalid fork name"));
    let e = s.execute("select pg_relation_size('nosuch')").unwrap_err();
    assert_eq!(e.code, "42P01", "{e}");
    let numbers = "0, 1, 10239, 10240, 10752, 1000000, 20971519, 20971520, 1073741824, 10737418240, -1000000, -10240, 9223372036854775807, 11258999068426240";
    let want = "0 bytes|1 bytes|10239 bytes|10 kB|11 kB|977 kB|20 MB|20 MB|1024 MB|10 GB|-977 kB|-10 kB|8192 PB|10 PB";
    let got: Vec<String> = numbers
        .split(", ")
        .map(|n| one(&mut s, &format!("select pg_size_pretty({n}::bigint)")))
        .collect();
    assert_eq!(got.join("|"), want);
}
