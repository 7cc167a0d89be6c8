//! Results PostgreSQL gives and Walden did not: what could go wrong is a statement
//! returning another value than PostgreSQL 15 (rounding, float range), storing what
//! PostgreSQL refuses (NUL in text), refusing what it accepts (short INSERT rows), or
//! ignoring a clause it does not implement (TABLESAMPLE). Expected values were checked
//! against PostgreSQL 15.
#![allow(clippy::unwrap_used)]

use walden_sql::{Session, SqlType};

mod support;
use support::{db, q};

/// The code and message of a statement that must fail.
fn err(s: &mut Session, sql: &str) -> (&'static str, String) {
    match s.execute(sql) {
        Ok(_) => panic!("{sql} succeeded"),
        Err(e) => (e.code, e.message.clone()),
    }
}

/// The result columns (name, type) of the last statement of `sql`.
fn columns_of(s: &mut Session, sql: &str) -> Vec<(String, SqlType)> {
    s.execute(sql).unwrap().pop().unwrap().columns
}

fn fails(s: &mut Session, sql: &str, code: &str, message: &str) {
    assert_eq!(err(s, sql), (code, message.to_string()), "{sql}");
}

#[test]
fn numeric_rounds_halves_away_from_zero_and_float8_to_even() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(
        q(
            &mut s,
            "select cast(2.5 as int), (-2.5)::int, 3.5::int, 2.5::float8::int, 3.5::float8::int, (-2.5)::float8::int"
        ),
        "3|-3|4|2|4|-2"
    );
    assert_eq!(
        q(
            &mut s,
            "select 2.5::int2, 2.5::int8, (1.5 + 1)::int, 4.5::float8::int8, 0.5::int"
        ),
        "3|3|3|4|1"
    );
    fails(
        &mut s,
        "select 2147483647.5::int",
        "22003",
        "integer out of range",
    );
    fails(
        &mut s,
        "select 2147483648.5::float8::int",
        "22003",
        "integer out of range",
    );
    // A decimal literal is a numeric, as in PostgreSQL.
    let r = s.execute_one("select 1.5, 1.5 * 2, 1.5::float8").unwrap();
    let types: Vec<SqlType> = r.columns.iter().map(|(_, t)| *t).collect();
    assert_eq!(types, [SqlType::Numeric, SqlType::Numeric, SqlType::Float8]);
    // Assignment to an integer column rounds the same way.
    s.execute("create table t (a int, b int8)").unwrap();
    s.execute("insert into t values (2.5, 2.5::float8), (-0.5, 0.5::float8)")
        .unwrap();
    s.execute("insert into t select 4.5, 4.5::float8").unwrap();
    s.execute("insert into t (a) values (6.5)").unwrap();
    assert_eq!(
        q(&mut s, "select a, b from t order by a"),
        "-1|0\n3|2\n5|4\n7|"
    );
    s.execute("update t set b = 1.5 where a = 7").unwrap();
    assert_eq!(q(&mut s, "select b from t where a = 7"), "2");
    s.execute("create table c as select 2.5 x").unwrap();
    // The column is a numeric, as PostgreSQL makes it: its half rounds away from zero.
    assert_eq!(q(&mut s, "select x, x::int from c"), "2.5|3");
}

#[test]
fn float8_out_of_range_is_an_error() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let range = |v: &str| format!("\"{v}\" is out of range for type double precision");
    fails(&mut s, "select 1e400::float8", "22003", &range("1e400"));
    fails(&mut s, "select -1e400::float8", "22003", &range("1e400"));
    fails(&mut s, "select '1e400'::float8", "22003", &range("1e400"));
    fails(
        &mut s,
        "select ' -1e400 '::float8",
        "22003",
        &range("-1e400"),
    );
    fails(&mut s, "select '1e-400'::float8", "22003", &range("1e-400"));
    fails(
        &mut s,
        "select 1e308::float8 * 10",
        "22003",
        "value out of range: overflow",
    );
    fails(
        &mut s,
        "select 1e308::float8 + 1e308::float8",
        "22003",
        "value out of range: overflow",
    );
    fails(
        &mut s,
        "select 1e-308::float8 * 1e-100",
        "22003",
        "value out of range: underflow",
    );
    fails(
        &mut s,
        "select 1e-308::float8 / 1e300",
        "22003",
        "value out of range: underflow",
    );
    // Infinity as input is a value, and so is arithmetic on it; zero stays zero.
    assert_eq!(
        q(
            &mut s,
            "select 'Infinity'::float8, '-inf'::float8 + 1, 'Infinity'::float8 * 2, '0e-400'::float8, 0::float8 * 1e-300"
        ),
        "Infinity|-Infinity|Infinity|0|0"
    );
    s.execute("create table f (x float8)").unwrap();
    s.execute("insert into f values (1e308), (1e308)").unwrap();
    fails(
        &mut s,
        "select sum(x) from f",
        "22003",
        "value out of range: overflow",
    );
    fails(
        &mut s,
        "insert into f values ('1e999')",
        "22003",
        &range("1e999"),
    );
    assert_eq!(q(&mut s, "select count(*) from f"), "2");
}

#[test]
fn text_cannot_hold_nul() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a text)").unwrap();
    let nul = "invalid byte sequence for encoding \"UTF8\": 0x00";
    fails(&mut s, "select E'a\\000b'", "22021", nul);
    fails(&mut s, "insert into t values (E'\\000')", "22021", nul);
    fails(&mut s, "insert into t values (E'x\\x00')", "22021", nul);
    fails(&mut s, "insert into t values ('a\0b')", "22021", nul);
    fails(&mut s, "select length('\0')", "22021", nul);
    fails(&mut s, "select 'it''s', E'it\\'s\\0'", "22021", nul);
    // A string that really is unterminated is still a syntax error.
    fails(
        &mut s,
        "select E'ab",
        "42601",
        "Unterminated encoded string literal",
    );
    // Other escapes still work.
    s.execute("insert into t values (E'a\\tb')").unwrap();
    assert_eq!(
        q(&mut s, "select length(a), count(*) from t group by a"),
        "3|1"
    );
}

#[test]
fn insert_fills_missing_columns_with_defaults() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int, b serial, c text)")
        .unwrap();
    s.execute("insert into t values (1)").unwrap();
    s.execute("insert into t values (2, 7)").unwrap();
    s.execute("insert into t (a) values (3)").unwrap();
    s.execute("insert into t values (4), (5)").unwrap();
    s.execute("insert into t select 6").unwrap();
    assert_eq!(
        q(&mut s, "select a, b, c is null from t order by a"),
        "1|1|t\n2|7|t\n3|2|t\n4|3|t\n5|4|t\n6|5|t"
    );
    fails(
        &mut s,
        "insert into t values (1, 2, 'c', 4)",
        "42601",
        "INSERT has more expressions than target columns",
    );
    let e = s
        .execute("insert into t values (1, 2, 'c', 4)")
        .unwrap_err();
    assert_eq!(e.position, Some(34));
    fails(
        &mut s,
        "insert into t (a, b) values (1)",
        "42601",
        "INSERT has more target columns than expressions",
    );
    fails(
        &mut s,
        "insert into t values (2), (3, 9)",
        "42601",
        "VALUES lists must all be the same length",
    );
    s.execute("create table n (a int, b int not null)").unwrap();
    fails(
        &mut s,
        "insert into n values (1)",
        "23502",
        "null value in column \"b\" of relation \"n\" violates not-null constraint",
    );
    assert_eq!(q(&mut s, "select count(*) from t"), "6");
}

#[test]
fn tablesample_is_refused_not_ignored() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int)").unwrap();
    s.execute("insert into t select generate_series from generate_series(1, 100)")
        .unwrap();
    for sql in [
        "select count(*) from t tablesample system (10)",
        "select * from t tablesample bernoulli (50) repeatable (1)",
        "delete from t tablesample system (10)",
    ] {
        let (code, message) = err(&mut s, sql);
        assert_eq!(
            (code, message.as_str()),
            ("0A000", "TABLESAMPLE is not supported"),
            "{sql}"
        );
    }
    assert_eq!(q(&mut s, "select count(*) from t"), "100");
}

/// String literals are of PostgreSQL's unknown type until their context types them:
/// VALUES rows, the sides of a set operation and INSERT ... SELECT give them their
/// column's type, generate_series its other bound's, the numeric functions their
/// argument's; where nothing can (both operands unknown), PostgreSQL's 42725. LIMIT and
/// OFFSET take one as a bigint, and NULL as no limit.
#[test]
fn unknown_literals_take_their_context_s_type() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(&mut s, "create table c (id int4 primary key, name text)");
    q(
        &mut s,
        "insert into c select g, 'c' || g from generate_series(1, 5) g",
    );
    let r = s
        .execute("values ('1', 1), (2, '2')")
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(
        r.columns,
        vec![
            ("column1".to_string(), SqlType::Int4),
            ("column2".to_string(), SqlType::Int4)
        ]
    );
    assert_eq!(q(&mut s, "values ('1', 1), (2, '2')"), "1|1\n2|2");
    assert_eq!(q(&mut s, "select '5' union select 1 order by 1"), "1\n5");
    assert_eq!(
        q(&mut s, "select * from generate_series(1, '3')"),
        "1\n2\n3"
    );
    assert_eq!(
        q(
            &mut s,
            "select abs('-1.5'), round('2.5'), round('2.345', 2), sign('-3'), trunc('2.345', 1)"
        ),
        "1.5|2|2.35|-1|2.3"
    );
    assert_eq!(
        q(&mut s, "select id from c order by id limit '2' offset '1'"),
        "2\n3"
    );
    assert_eq!(
        q(
            &mut s,
            "select count(*) from (select id from c limit null offset null) x"
        ),
        "5"
    );
    assert_eq!(
        q(
            &mut s,
            "insert into c (id, name) select '7', 'x' returning *"
        ),
        "7|x"
    );
    fails(
        &mut s,
        "select '1' + '2'",
        "42725",
        "operator is not unique: unknown + unknown",
    );
    fails(
        &mut s,
        "select -'1'",
        "42725",
        "operator is not unique: - unknown",
    );
    fails(
        &mut s,
        "select sum('1')",
        "42725",
        "function sum(unknown) is not unique",
    );
    fails(
        &mut s,
        "values (1), (true)",
        "42804",
        "VALUES types integer and boolean cannot be matched",
    );
    fails(
        &mut s,
        "select 'x' union select 1",
        "22P02",
        "invalid input syntax for type integer: \"x\"",
    );
}

/// Result columns are named as PostgreSQL's FigureColname names them.
#[test]
fn columns_are_named_as_postgresql_names_them() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(&mut s, "create table c (id int4 primary key, name text)");
    let columns = columns_of(
        &mut s,
        "select exists(select 1), (select 1 as one), (select id from c limit 1), \
         case when true then 1 else 2 end, case when true then 1 else (select 2) end, \
         case when true then 1 else id end, extract(year from date '2024-01-01'), \
         date '2024-01-01', interval '1 day', '1'::int::text, (case when true then 1 end)::text \
         from c",
    );
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "exists", "one", "id", "case", "?column?", "id", "extract", "date", "interval", "text",
            "text"
        ]
    );
}

#[test]
fn text_functions_as_postgres() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    support::check_cases(
        &mut s,
        &[
            (
                "select replace('abcabc','b','XY'), replace('abc','','X'), replace('aaa','aa','b'), replace('abc','b','')",
                "aXYcaXYc|abc|ba|ac",
            ),
            (
                "select translate('12345','143','ax'), translate('abcabc','aa','xy'), translate('abc','','x'), translate('héllo','é','e')",
                "a2x5|xbcxbc|abc|hello",
            ),
            (
                "select split_part('a,b,c', ',', 2), split_part('a,b,c', ',', 4), split_part('a,b,c', ',', -1), \
                 split_part('a,b,c', ',', -4), split_part('abc', '', 1), split_part('abc', '', 2), \
                 split_part('abc', '', -1), split_part('a::b', '::', 2), split_part('', ',', 1)",
                "b||c||abc||abc|b|",
            ),
            ("select split_part('a,b', ',', 0)", "ERROR 22023: field position must not be zero"),
            (
                "select left('abcde', 2), left('abcde', -2), left('abc', 10), left('abc', -10), left('abc', 0), \
                 right('abcde', 2), right('abcde', -2), right('abc', 10), right('abc', -10)",
                "ab|abc|abc|||de|cde|abc|",
            ),
            ("select reverse('abcé'), reverse(''), repeat('ab', 0), repeat('ab', -1)", "écba|||"),
            (
                "select btrim('xxaxx','x'), btrim('  a  '), ltrim('  a  '), rtrim('  a  ')||'|', ltrim('xyaxy','yx'), \
                 rtrim('xyaxy','yx'), trim(both 'x' from 'xxaxx'), trim(leading 'x' from 'xxaxx'), \
                 trim(trailing 'x' from 'xxaxx'), trim('  a  ')||'|', trim(both '\"' from '\"ab\"'), \
                 trim('x' from 'xax'), trim(both 'ab' from 'abcba')",
                "a|a|a  |  a||axy|xya|a|axx|xxa|a||ab|a|c",
            ),
            (
                "select strpos('abcb','b'), strpos('abc','z'), strpos('abc',''), position('b' in 'abc'), position('' in 'abc')",
                "2|0|1|2|1",
            ),
            // Strict: NULL in, NULL out.
            (
                "select replace(null,'a','b') is null, replace('a',null,'b') is null, left('abc', null) is null, \
                 split_part(null, ',', 1) is null, translate('a', 'a', null) is null, btrim(null) is null",
                "t|t|t|t|t|t",
            ),
            // A character(n) loses its trailing blanks, as it does becoming text.
            (
                "select replace('a  '::char(3), ' ', 'x'), reverse('ab '::char(3))||'|', left('ab '::char(3), 3)||'|'",
                "a|ba||ab|",
            ),
            ("select left('abc', 'x')", "ERROR 22P02: invalid input syntax for type integer: \"x\""),
        ],
    );
    // Named as PostgreSQL names them.
    let columns = columns_of(
        &mut s,
        "select trim(both 'x' from 'x'), trim(leading 'x' from 'x'), trim(trailing 'x' from 'x'), \
         trim('x'), position('a' in 'a'), strpos('a', 'a'), replace('a', 'a', 'b'), left('a', 1)",
    );
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["btrim", "ltrim", "rtrim", "btrim", "position", "strpos", "replace", "left"]
    );
    assert_eq!(
        columns.iter().map(|(_, t)| *t).collect::<Vec<_>>(),
        [
            SqlType::Text,
            SqlType::Text,
            SqlType::Text,
            SqlType::Text,
            SqlType::Int4,
            SqlType::Int4,
            SqlType::Text,
            SqlType::Text
        ]
    );
}

#[test]
fn nullif_bitwise_operators_and_regproc_as_postgres() {
    support::check_on_both(
        "nullif_bitwise_regproc",
        &[
            (
                "select nullif(1, 1.0) is null, nullif('a', 'b'), nullif(2, null), nullif(1::int2, 1::int8) is null",
                "t|a|2|t",
            ),
            ("select 5 & 3, 5 | 3, 5 # 3, 1::int2 & 3::int8", "1|7|6|1"),
            (
                "select 'a' & 1",
                "ERROR 22P02: invalid input syntax for type integer: \"a\"",
            ),
            // The catalog's functions (regproc) are their names.
            (
                "select 'pg_catalog.array_in'::regproc = 'array_in'::regproc, 'boolin'::regproc::text, 0::regproc::text",
                "t|boolin|-",
            ),
            (
                "select typinput, typoutput, typreceive, typsend, typmodin, typalign, typstorage, \
                 typcategory, typispreferred, typbyval, typelem from pg_type \
                 where typname in ('int4', 'varchar', 'name', 'numeric') order by oid",
                "namein|nameout|namerecv|namesend|-|c|p|S|f|f|18\n\
                 int4in|int4out|int4recv|int4send|-|i|p|N|f|t|0\n\
                 varcharin|varcharout|varcharrecv|varcharsend|varchartypmodin|i|x|S|f|f|0\n\
                 numeric_in|numeric_out|numeric_recv|numeric_send|numerictypmodin|i|m|N|f|f|0",
            ),
        ],
    );
}

/// ORDER BY a bare name takes the output column of that name before a FROM column's
/// (SQL92's rule, PostgreSQL's): `SELECT b AS a … ORDER BY a` sorts by b. Two outputs
/// of the name are PostgreSQL's 42702 unless they are the same FROM column.
#[test]
fn order_by_a_name_takes_the_output_column_first() {
    support::check_on_both(
        "order_by_output_names",
        &[
            ("create table ob (a int, b int)", ""),
            ("insert into ob values (1, 30), (2, 10), (3, 20)", ""),
            ("select b as a from ob order by a", "10\n20\n30"),
            ("select a, b as a from ob order by 1", "1|30\n2|10\n3|20"),
            ("select -a as a from ob order by a", "-3\n-2\n-1"),
            ("select a + 0 as b from ob order by b desc", "3\n2\n1"),
            ("select a, a from ob order by a desc", "3|3\n2|2\n1|1"),
            (
                "select *, a from ob order by a desc",
                "3|20|3\n2|10|2\n1|30|1",
            ),
            (
                "select a as c, b as c from ob order by c",
                "ERROR 42702: ORDER BY \"c\" is ambiguous",
            ),
            ("select b from ob order by a + 0", "30\n10\n20"),
        ],
    );
}

/// `SELECT ALL` (the set quantifier spelled out) keeps duplicates, in a query, a
/// subquery and a set operation's arms.
#[test]
fn select_all_keeps_duplicates() {
    support::check_on_both(
        "select_all",
        &[
            ("create table sa (a int)", ""),
            ("insert into sa values (1), (1), (2)", ""),
            ("select all a from sa order by a", "1\n1\n2"),
            ("select count(*) from (select all a from sa) s", "3"),
            (
                "select all a from sa union all select all a from sa where a = 2 order by 1",
                "1\n1\n2\n2",
            ),
            ("select distinct a from sa order by a", "1\n2"),
        ],
    );
}

/// FETCH FIRST n ROWS ONLY and WITH TIES (with OFFSET … ROWS, DISTINCT ON, a count of
/// 0, and no ORDER BY refused), and `TABLE name`, as PostgreSQL 15 answers them.
#[test]
fn fetch_first_and_table_as_postgresql() {
    support::check_on_both(
        "fetch_first",
        &[
            ("create table ft (a int, b text)", ""),
            (
                "insert into ft values (1,'x'),(1,'y'),(2,'z'),(3,'w'),(3,'v'),(3,'u'),(4,'t')",
                "",
            ),
            (
                "select a from ft order by a fetch first 2 rows with ties",
                "1\n1",
            ),
            (
                "select a, b from ft order by a, b fetch first 3 rows with ties",
                "1|x\n1|y\n2|z",
            ),
            (
                "select a from ft order by a offset 1 rows fetch next 3 rows with ties",
                "1\n2\n3\n3\n3",
            ),
            (
                "select a from ft order by a desc fetch first 1 rows with ties",
                "4",
            ),
            ("select a from ft order by a fetch first row only", "1"),
            (
                "select a from ft order by a offset 2 row fetch first 2 rows only",
                "2\n3",
            ),
            (
                "select a from ft order by a fetch first 0 rows with ties",
                "",
            ),
            (
                "select a from ft fetch first 2 rows with ties",
                "ERROR 42601: WITH TIES cannot be specified without ORDER BY clause",
            ),
            (
                "select distinct on (a) a, b from ft order by a, b fetch first 2 rows with ties",
                "1|x\n2|z",
            ),
            (
                "select count(*) from (select a from ft order by a fetch first 4 rows with ties) s",
                "6",
            ),
            ("table ft", "1|x\n1|y\n2|z\n3|w\n3|v\n3|u\n4|t"),
            (
                "table nosuch",
                "ERROR 42P01: relation \"nosuch\" does not exist",
            ),
            (
                "table ft union select 9, 'n' order by 1, 2 limit 3",
                "1|x\n1|y\n2|z",
            ),
            ("table ft order by b desc limit 2", "2|z\n1|y"),
            ("table ft except table ft", ""),
        ],
    );
}

/// `JOIN … USING (…) AS alias` (PostgreSQL 14's join_using_alias): the alias names
/// the join's merged columns only, in inner, FULL and RIGHT joins, with `alias.*`, and
/// a name taken by a relation refused; the same words where they are no join alias
/// (DELETE … USING a subquery) keep their meaning.
#[test]
fn join_using_alias_as_postgresql() {
    support::check_on_both(
        "join_using_alias",
        &[
            ("create table ja (a int, b int)", ""),
            ("create table jb (a int, c int)", ""),
            ("insert into ja values (1, 1), (2, 2)", ""),
            ("insert into jb values (1, 10), (3, 30)", ""),
            (
                "select j.a, ja.b, jb.c from ja join jb using (a) as j",
                "1|1|10",
            ),
            (
                "select j.a, b, c from ja full join jb using (a) as j order by 1",
                "1|1|10\n2|2|\n3||30",
            ),
            (
                "select x.a from ja right join jb using (a) as x order by 1",
                "1\n3",
            ),
            (
                "select j.* from ja full join jb using (a) AS j order by 1",
                "1\n2\n3",
            ),
            (
                "select count(*) from ja join jb using (a) as j where j.a = 1",
                "1",
            ),
            (
                "select j.b from ja join jb using (a) as j",
                "ERROR 42703: column j.b does not exist",
            ),
            (
                "select * from ja join jb using (a) as ja",
                "ERROR 42712: table name \"ja\" specified more than once",
            ),
            (
                "delete from ja using (select 1 as a) as s where ja.a = s.a",
                "",
            ),
            ("select a from ja", "2"),
        ],
    );
}

/// Correlated EXISTS and NOT EXISTS read as hash probes where the subquery compares
/// its columns with outer values (one or two keys, NULLs on either side, conditions on
/// the inner table alone, a type the hash must not confuse, nested), and run per outer
/// row where it does not: PostgreSQL 15's answers.
#[test]
fn correlated_exists_as_postgresql() {
    support::check_on_both(
        "hashed_exists",
        &[
            ("create table eo (id int, k int, t text)", ""),
            ("create table ei (k int, w int, t text)", ""),
            (
                "insert into eo values (1, 1, 'a'), (2, 2, 'b'), (3, null, 'c'), (4, 4, null), (5, 5, 'e')",
                "",
            ),
            (
                "insert into ei values (1, 10, 'a'), (1, 20, 'z'), (2, 5, 'b'), (null, 1, 'c'), (4, 50, null), (6, 60, 'f')",
                "",
            ),
            (
                "select id from eo where exists (select 1 from ei where ei.k = eo.k) order by id",
                "1\n2\n4",
            ),
            (
                "select id from eo where not exists (select 1 from ei where ei.k = eo.k) order by id",
                "3\n5",
            ),
            (
                "select id from eo where exists (select 1 from ei where eo.k = ei.k and ei.w > 15) order by id",
                "1\n4",
            ),
            (
                "select id from eo where exists (select 1 from ei where ei.k = eo.k and ei.t = eo.t) order by id",
                "1\n2",
            ),
            (
                "select id from eo where not exists (select * from ei where ei.t = eo.t and ei.w < 100) order by id",
                "4\n5",
            ),
            (
                "select id, exists (select 1 from ei where ei.k = eo.k and ei.w < eo.id * 10) from eo order by id",
                "1|f\n2|t\n3|f\n4|f\n5|f",
            ),
            (
                "select id from eo where exists (select 1 from ei where ei.k = eo.k or ei.w = 1) order by id",
                "1\n2\n3\n4\n5",
            ),
            (
                "select id from eo where exists (select 1 from ei where ei.k = eo.k and exists (select 1 from eo e2 where e2.t = ei.t)) order by id",
                "1\n2",
            ),
            (
                "select count(*) from eo where exists (select 1 from ei where ei.k = eo.id) and not exists (select 1 from ei where ei.w = eo.id)",
                "2",
            ),
        ],
    );
}

/// Correlated scalar aggregates in a select list read as hash probes (count, sum, max,
/// an expression over them, FILTER, keys with no rows and NULL keys, two keys, inner
/// conditions) and those of other shapes run per outer row: PostgreSQL 15's answers.
#[test]
fn correlated_scalar_aggregates_as_postgresql() {
    support::check_on_both(
        "hashed_scalar",
        &[
            ("create table so (id int, k int, t text)", ""),
            ("create table si (k int, w int, t text)", ""),
            (
                "insert into so values (1, 1, 'a'), (2, 2, 'b'), (3, null, 'c'), (4, 4, null), (5, 5, 'e')",
                "",
            ),
            (
                "insert into si values (1, 10, 'a'), (1, 20, 'z'), (2, 5, 'b'), (null, 1, 'c'), (4, null, null), (6, 60, 'f')",
                "",
            ),
            (
                "select id, (select count(*) from si where si.k = so.k) from so order by id",
                "1|2\n2|1\n3|0\n4|1\n5|0",
            ),
            (
                "select id, (select max(w) from si where si.k = so.k), (select sum(w) from si where so.k = si.k) from so order by id",
                "1|20|30\n2|5|5\n3||\n4||\n5||",
            ),
            (
                "select id, (select coalesce(sum(w), -1) * 2 from si where si.k = so.k and si.w > 7) from so order by id",
                "1|60\n2|-2\n3|-2\n4|-2\n5|-2",
            ),
            (
                "select id, (select count(*) filter (where w > 15) from si where si.k = so.k) from so order by id",
                "1|1\n2|0\n3|0\n4|0\n5|0",
            ),
            (
                "select id, (select count(w) from si where si.k = so.k and si.t = so.t) from so order by id",
                "1|1\n2|1\n3|0\n4|0\n5|0",
            ),
            (
                "select id, (select count(*) from si where si.k = so.k or si.k is null) from so order by id",
                "1|3\n2|2\n3|1\n4|2\n5|1",
            ),
            (
                "select id, (select w from si where si.k = so.k and si.w < 10) from so order by id",
                "1|\n2|5\n3|\n4|\n5|",
            ),
            (
                "select sum((select count(*) from si where si.k = so.id)) from so",
                "4",
            ),
        ],
    );
}

/// IN, EXISTS and NOT EXISTS parts of a WHERE clause read as semi- and anti-joins
/// (`flatten`): duplicate and NULL keys on both sides, several keys, inner conditions,
/// an outer join, grouping, DISTINCT, ORDER BY and LIMIT over them, types met across
/// int4/int8 and text; each beside the same condition kept per row (`… or false` is
/// not flattened): PostgreSQL 15's answers.
#[test]
fn flattened_subqueries_as_postgresql() {
    support::check_on_both(
        "flattened",
        &[
            ("create table fo (id int, k int, j int8, t text)", ""),
            ("create table fi (k int8, w int, t varchar(5))", ""),
            ("create table fx (id int, note text)", ""),
            (
                "insert into fo values (1, 1, 10, 'a'), (2, 2, 20, 'b'), (3, null, 30, 'c'), \
                 (4, 4, null, null), (5, 5, 50, 'e'), (6, 1, 10, 'a'), (7, 2, 70, 'x')",
                "",
            ),
            (
                "insert into fi values (1, 10, 'a'), (1, 20, 'z'), (2, 5, 'b'), (null, 1, 'c'), \
                 (4, 50, null), (6, 60, 'f'), (2, 5, 'b'), (10, 7, 'a')",
                "",
            ),
            ("insert into fx values (1, 'one'), (2, 'two'), (5, 'five')", ""),
            (
                "select id from fo where k in (select k from fi) order by id",
                "1\n2\n4\n6\n7",
            ),
            (
                "select id from fo where k in (select k from fi) or false order by id",
                "1\n2\n4\n6\n7",
            ),
            (
                "select id from fo where j in (select k * 10 from fi where w < 50) and id > 1 order by id",
                "2\n6",
            ),
            (
                "select id from fo where t in (select t from fi) order by id",
                "1\n2\n3\n6",
            ),
            (
                "select id from fo o where exists (select 1 from fi i where i.k = o.k and i.t = o.t) order by id",
                "1\n2\n6",
            ),
            (
                "select id from fo o where exists (select 1 from fi i where i.k = o.k and i.t = o.t) or false order by id",
                "1\n2\n6",
            ),
            (
                "select id from fo o where not exists (select 1 from fi i where i.k = o.k) order by id",
                "3\n5",
            ),
            (
                "select id from fo o where not exists (select 1 from fi i where i.k = o.k) or false order by id",
                "3\n5",
            ),
            (
                "select o.id, x.note from fo o left join fx x on x.id = o.id \
                 where exists (select 1 from fi where fi.w = o.j / 2 or fi.w is null and fi.k = o.k) order by o.id",
                "1|one\n2|two\n6|",
            ),
            (
                "select o.id, x.note from fo o left join fx x on x.id = o.id \
                 where o.k in (select k from fi where w > 4) and not exists \
                 (select 1 from fi where fi.t = x.note) order by o.id desc limit 3",
                "7|\n6|\n4|",
            ),
            (
                "select t, count(*) from fo where k in (select k from fi) group by t order by t",
                "a|2\nb|1\nx|1\n|1",
            ),
            (
                "select distinct k from fo o where exists (select 1 from fi where fi.k = o.k + 0) order by k",
                "1\n2\n4",
            ),
            (
                "select count(*) from fo o where exists (select 1 from fi i, fx x where i.k = x.id and i.k = o.k)",
                "4",
            ),
        ],
    );
}

/// Correlated subqueries over an indexed table read it through one plan whose key is
/// the outer row's values (a unique key, a non-unique index, the first column of a
/// two-column one; NULL and missing keys; a key of another type, a constant bound on
/// an indexed column: chosen per row): PostgreSQL 15's answers.
#[test]
fn correlated_index_reads_as_postgresql() {
    support::check_on_both(
        "correlated_index",
        &[
            ("create table co (id int, k int, j int8, t text)", ""),
            ("create table ci (id int primary key, k int, w int, t text)", ""),
            ("create index ci_k on ci (k)", ""),
            ("create index ci_tw on ci (t, w)", ""),
            (
                "insert into co values (1, 1, 1, 'a'), (2, 2, 2, 'b'), (3, null, null, 'c'), \
                 (4, 4, 4, null), (5, 5, 5, 'e')",
                "",
            ),
            (
                "insert into ci values (1, 1, 10, 'a'), (2, 1, 20, 'z'), (3, 2, 5, 'b'), \
                 (4, null, 1, 'c'), (5, 4, 50, null), (6, 6, 60, 'a'), (7, 2, 7, 'b')",
                "",
            ),
            (
                "select id, (select count(*) from ci where ci.k = co.k) from co order by id",
                "1|2\n2|2\n3|0\n4|1\n5|0",
            ),
            (
                "select id, (select w from ci where ci.id = co.k) from co order by id",
                "1|10\n2|20\n3|\n4|1\n5|50",
            ),
            (
                "select id, (select sum(w) from ci where ci.t = co.t and ci.w > 5) from co order by id",
                "1|70\n2|7\n3|\n4|\n5|",
            ),
            (
                "select id, (select max(w) from ci where ci.k = co.j) from co order by id",
                "1|20\n2|7\n3|\n4|50\n5|",
            ),
            (
                "select id, (select count(*) from ci where ci.k = co.k and ci.t = 'b') from co order by id",
                "1|0\n2|2\n3|0\n4|0\n5|0",
            ),
            (
                "select id from co where exists (select 1 from ci where ci.k = co.k and ci.w < co.id * 10) \
                 or id = 5 order by id",
                "2\n5",
            ),
        ],
    );
}

/// Constants through operators as PostgreSQL simplifies them before a row is read
/// (`optimize::simplify`): a strict operator of NULL is NULL without its other operand
/// being evaluated (no division by zero), AND/OR/NOT of constants, a WHERE or HAVING
/// whose NULL drops the row as false does, and a CHECK constraint, whose NULL passes,
/// left a value: PostgreSQL 15's answers.
#[test]
fn constants_simplified_as_postgresql() {
    support::check_on_both(
        "simplified",
        &[
            ("create table sv (id int, x int)", ""),
            ("insert into sv values (1, 1), (2, 0), (3, null)", ""),
            ("select x / 0 = null from sv order by id", "\n\n"),
            ("select (x / 0 = null) is null from sv where id = 1", "t"),
            ("select null::int + x / 0 from sv where id = 2", ""),
            ("select - (null::int8) + x from sv where id = 2", ""),
            ("select count(*) from sv where x / 0 = null or id = 1", "1"),
            ("select count(*) from sv where x / 0 = null and id > 0", "0"),
            ("select count(*) from sv where not (x / 0 = null)", "0"),
            (
                "select id from sv where (x = null) is null order by id",
                "1\n2\n3",
            ),
            ("select id from sv where true and x = 1", "1"),
            ("select id from sv where false or x = 0", "2"),
            ("select id from sv where not not (x = 1)", "1"),
            (
                "select x, count(*) from sv group by x having null and count(*) > 0",
                "",
            ),
            (
                "select a.id from sv a join sv b on a.id = b.id and b.x / 0 = null",
                "",
            ),
            (
                "select a.id, b.id from sv a left join sv b on a.id = b.id and null order by a.id",
                "1|\n2|\n3|",
            ),
            (
                "select x / 0 from sv where id = 1",
                "ERROR 22012: division by zero",
            ),
            ("create table sc (v int check (v > 0 or null))", ""),
            ("insert into sc values (-1)", ""),
            ("select v from sc", "-1"),
            ("update sv set x = 9 where x / 0 = null", ""),
            ("delete from sv where id = 1 and false", ""),
            ("select count(*) from sv where x = 9", "0"),
            ("select count(*) from sv", "3"),
        ],
    );
}
