//! Queries over several relations — joins of every kind, subqueries (scalar, EXISTS, IN,
//! ANY/ALL, correlated, in FROM), WITH, set operations, VALUES, DISTINCT [ON], LIKE and
//! the aggregates beyond the basic five — on both table kinds, each against the rows
//! PostgreSQL 15 gave for the same statement on the same tables (`psql -A -t`, NULL
//! as an empty field).
#![allow(clippy::unwrap_used)]

mod support;

use support::{db, q, session_of};
use walden::TableKind;
use walden_sql::Session;

const SETUP: &str = r#"
create table a (id int primary key, x int, s text);
create table b (id int primary key, a_id int, y int);
create table c (k int, v text);
insert into a values (1, 10, 'one'), (2, 20, 'two'), (3, NULL, 'three'), (4, 40, NULL);
insert into b values (1, 1, 100), (2, 1, 200), (3, 2, 300), (4, 9, 400), (5, NULL, 500);
insert into c values (1, 'c1'), (2, 'c2'), (2, 'c2b'), (NULL, 'cnull');
"#;

/// (statement, PostgreSQL's rows).
const CASES: &[(&str, &str)] = &[
    (
        r#"select a.id, b.id from a join b on a.id = b.a_id order by 1, 2;"#,
        r#"1|1
1|2
2|3"#,
    ),
    (
        r#"select a.id, b.id from a left join b on a.id = b.a_id order by 1, 2;"#,
        r#"1|1
1|2
2|3
3|
4|"#,
    ),
    (
        r#"select a.id, b.id from a right join b on a.id = b.a_id order by 1, 2;"#,
        r#"1|1
1|2
2|3
|4
|5"#,
    ),
    (
        r#"select a.id, b.id from a full join b on a.id = b.a_id order by 1 nulls first, 2;"#,
        r#"|4
|5
1|1
1|2
2|3
3|
4|"#,
    ),
    (
        r#"select * from a join c on a.id = c.k order by 1, 5;"#,
        r#"1|10|one|1|c1
2|20|two|2|c2
2|20|two|2|c2b"#,
    ),
    (
        r#"select * from a join c on c.k = a.id where a.x > 5 order by 1, 5;"#,
        r#"1|10|one|1|c1
2|20|two|2|c2
2|20|two|2|c2b"#,
    ),
    (
        r#"select a.id, count(b.id) from a left join b on b.a_id = a.id group by a.id order by 1;"#,
        r#"1|2
2|1
3|0
4|0"#,
    ),
    (
        r#"select id, x from a natural join b order by 1;"#,
        r#"1|10
2|20
3|
4|40"#,
    ),
    (
        r#"select * from a join b using (id) order by 1;"#,
        r#"1|10|one|1|100
2|20|two|1|200
3||three|2|300
4|40||9|400"#,
    ),
    (
        r#"select id from a join b using (id) where id > 2 order by 1;"#,
        r#"3
4"#,
    ),
    (
        r#"select a.s, (select count(*) from b where b.a_id = a.id) from a order by 1;"#,
        r#"one|2
three|0
two|1
|0"#,
    ),
    (
        r#"select id from a where exists (select 1 from b where b.a_id = a.id) order by 1;"#,
        r#"1
2"#,
    ),
    (
        r#"select id from a where not exists (select 1 from b where b.a_id = a.id) order by 1;"#,
        r#"3
4"#,
    ),
    (
        r#"select id from a where id in (select a_id from b) order by 1;"#,
        r#"1
2"#,
    ),
    (
        r#"select id from a where id not in (select a_id from b) order by 1;"#,
        r#""#,
    ),
    (
        r#"select id from a where id not in (select a_id from b where a_id is not null) order by 1;"#,
        r#"3
4"#,
    ),
    (
        r#"select id from a where x > all (select y / 20 from b) order by 1;"#,
        r#"4"#,
    ),
    (
        r#"select id from a where x < any (select y / 10 from b) order by 1;"#,
        r#"1
2
4"#,
    ),
    (
        r#"select (select max(y) from b), (select s from a where id = 2);"#,
        r#"500|two"#,
    ),
    (
        r#"with t as (select id, x from a where x is not null) select count(*), sum(x) from t;"#,
        r#"3|70"#,
    ),
    (
        r#"with t(p, q) as (select id, x from a) select p from t where q > 15 order by p;"#,
        r#"2
4"#,
    ),
    (
        r#"select x from a union select y from b order by 1;"#,
        r#"10
20
40
100
200
300
400
500
"#,
    ),
    (
        r#"select x from a union all select a_id from b order by 1 nulls first;"#,
        r#"

1
1
2
9
10
20
40"#,
    ),
    (
        r#"select a_id from b intersect select id from a order by 1;"#,
        r#"1
2"#,
    ),
    (
        r#"select id from a except select a_id from b order by 1;"#,
        r#"3
4"#,
    ),
    (
        r#"select k from c intersect all select k from c order by 1;"#,
        r#"1
2
2
"#,
    ),
    (
        r#"select distinct k from c order by 1;"#,
        r#"1
2
"#,
    ),
    (
        r#"select distinct on (k) k, v from c order by k, v desc;"#,
        r#"1|c1
2|c2b
|cnull"#,
    ),
    (
        r#"select * from (select id, x * 2 as dx from a) sub where dx > 25 order by id;"#,
        r#"2|40
4|80"#,
    ),
    (
        r#"select * from (values (1, 'x'), (2, 'y')) as v(n, t) order by n desc;"#,
        r#"2|y
1|x"#,
    ),
    (
        r#"values (1, 2), (3, 4);"#,
        r#"1|2
3|4"#,
    ),
    (
        r#"select a1.id, a2.id from a a1, a a2 where a1.x < a2.x order by 1, 2;"#,
        r#"1|2
1|4
2|4"#,
    ),
    (
        r#"select a.id, b.id, c.v from a, b, c where a.id = b.a_id and c.k = a.id order by 1, 2, 3;"#,
        r#"1|1|c1
1|2|c1
2|3|c2
2|3|c2b"#,
    ),
    (
        r#"select a.id from a cross join c where c.v = 'c1';"#,
        r#"1
2
3
4"#,
    ),
    (
        r#"select * from a left join b on a.id = b.a_id and b.y > 150 order by a.id, b.id;"#,
        r#"1|10|one|2|1|200
2|20|two|3|2|300
3||three|||
4|40||||"#,
    ),
    (
        r#"select * from a left join b on a.id = b.a_id where b.id is null order by a.id;"#,
        r#"3||three|||
4|40||||"#,
    ),
    (r#"select count(*) from a, b;"#, r#"20"#),
    (
        r#"select id, (select v from c where c.k = a.id limit 1) from a order by id;"#,
        r#"1|c1
2|c2
3|
4|"#,
    ),
    (
        r#"select id from a where id = (select max(a_id) from b);"#,
        r#""#,
    ),
    (
        r#"select s from a where x = (select x from a where id = 1) or x is null order by s;"#,
        r#"one
three"#,
    ),
    (
        r#"select id, s from a where s like '%o%' order by id;"#,
        r#"1|one
2|two"#,
    ),
    (
        r#"select count(distinct k), string_agg(v, ',') from (select k, v from c order by v) t;"#,
        r#"2|c1,c2,c2b,cnull"#,
    ),
];

fn session(kind: TableKind) -> Session {
    let mut s = session_of(&db(), kind, 7);
    s.execute(SETUP).unwrap();
    s
}

#[test]
fn queries_give_postgres_rows_on_both_table_kinds() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let mut s = session(kind);
        for (sql, want) in CASES {
            assert_eq!(q(&mut s, sql), *want, "{kind:?}: {sql}");
        }
        // With indexes, the same rows (index reads and index joins instead of scans).
        s.execute("create index b_a on b (a_id); create index c_k on c (k); analyze")
            .unwrap();
        for (sql, want) in CASES {
            assert_eq!(q(&mut s, sql), *want, "{kind:?} with indexes: {sql}");
        }
    }
}

#[test]
fn updates_and_deletes_read_subqueries_in_one_snapshot() {
    let mut s = session(TableKind::Undo);
    // Each row is judged against b as the statement began.
    q(&mut s, "update a set x = (select count(*) from b where b.a_id = a.id) where id in (select a_id from b)");
    assert_eq!(
        q(&mut s, "select id, x from a order by id"),
        "1|2\n2|1\n3|\n4|40"
    );
    q(
        &mut s,
        "delete from b where not exists (select 1 from a where a.id = b.a_id)",
    );
    assert_eq!(q(&mut s, "select id from b order by id"), "1\n2\n3");
    // A table changed by the statement reads as it was before it.
    q(&mut s, "update a set x = (select max(x) from a) + id");
    assert_eq!(
        q(&mut s, "select id, x from a order by id"),
        "1|41\n2|42\n3|43\n4|44"
    );
    let e = s
        .execute("update a set x = (select id from b)")
        .unwrap_err();
    assert_eq!(e.code, "21000");
}

#[test]
fn join_errors_are_postgres_errors() {
    let mut s = session(TableKind::Heap);
    let cases = [
        (
            "select id from a, b",
            "42702",
            "column reference \"id\" is ambiguous",
        ),
        (
            "select a.id from a join b on c.k = a.id",
            "42P01",
            "missing FROM-clause entry for table \"c\"",
        ),
        (
            "select (select id from b)",
            "21000",
            "more than one row returned by a subquery used as an expression",
        ),
        (
            "select (select id, y from b)",
            "42601",
            "subquery must return only one column",
        ),
        (
            "select id from a union select id, x from a",
            "42601",
            "each UNION query must have the same number of columns",
        ),
        (
            "select id from a join b using (nope)",
            "42703",
            "column \"nope\" specified in USING clause does not exist in left table",
        ),
        (
            "select * from a a1 join a a1 on true",
            "42712",
            "table name \"a1\" specified more than once",
        ),
        (
            "select id from a where id in (select id, x from a)",
            "42601",
            "subquery has too many columns",
        ),
        (
            "select x from a union select s from a",
            "42804",
            "UNION types integer and text cannot be matched",
        ),
        (
            "select 1 from a left join b on b.a_id = c.k",
            "42P01",
            "missing FROM-clause entry for table \"c\"",
        ),
        (
            "select distinct x from a order by id",
            "42P10",
            "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
        ),
    ];
    for (sql, code, message) in cases {
        let e = s.execute(sql).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (code, message), "{sql}");
    }
}

#[test]
fn explain_shows_the_join_tree() {
    let mut s = session(TableKind::Heap);
    let plan = q(
        &mut s,
        "explain (costs off) select a.id, b.id from a join b on a.id = b.a_id where a.x > 5",
    );
    assert!(
        plan.starts_with("Hash Join\n  Hash Cond: (a.id = b.a_id)\n"),
        "{plan}"
    );
    assert!(
        plan.contains("Seq Scan on a\n") && plan.contains("Filter: (a.x > 5)"),
        "{plan}"
    );
    // A key with an index on the other side, and few rows on this one: looked up.
    q(&mut s, "insert into b select 100 + i, i % 50, i from generate_series(1, 2000) as i; create index b_a on b (a_id)");
    let plan = q(
        &mut s,
        "explain select a.id, b.y from a join b on b.a_id = a.id where a.id = 2",
    );
    assert!(
        plan.contains("Nested Loop") && plan.contains("Index Scan using b_a on b"),
        "{plan}"
    );
    assert_eq!(
        q(
            &mut s,
            "select count(*) from a join b on b.a_id = a.id where a.id = 2"
        ),
        "41"
    );
}

/// EXPLAIN (FORMAT JSON) gives PostgreSQL's JSON form of the same plan: it parses as
/// JSON (read back here as jsonb), nodes nest under "Plans", details are keys; the
/// plans the subquery benchmarks use are joins with the subquery's keys.
#[test]
fn explain_format_json_and_flattened_subqueries() {
    let mut s = session(TableKind::Heap);
    q(&mut s, "insert into b select 100 + i, i % 50, i from generate_series(1, 2000) as i; create index b_a on b (a_id); analyze");
    let json = q(
        &mut s,
        "explain (format json, analyze) select a.id, b.y from a join b on b.a_id = a.id where a.id <= 2",
    );
    assert!(
        json.starts_with("[\n  {\n    \"Plan\": {\n      \"Node Type\": \"Nested Loop\""),
        "{json}"
    );
    let read = |s: &mut Session, path: &str| {
        q(
            s,
            &format!("select ('{}'::jsonb) {path}", json.replace('\'', "''")),
        )
    };
    assert_eq!(read(&mut s, "-> 0 -> 'Plan' ->> 'Join Type'"), "Inner");
    assert_eq!(read(&mut s, "-> 0 -> 'Plan' ->> 'Actual Rows'"), "83");
    assert_eq!(
        read(&mut s, "-> 0 -> 'Plan' -> 'Plans' -> 1 ->> 'Index Name'"),
        "b_a"
    );
    assert_eq!(
        read(&mut s, "-> 0 -> 'Plan' -> 'Plans' -> 1 ->> 'Actual Loops'"),
        "2"
    );
    assert_eq!(
        read(&mut s, "-> 0 -> 'Plan' -> 'Plans' -> 1 ->> 'Index Cond'"),
        "(b.a_id = a.id)"
    );
    assert_eq!(read(&mut s, "-> 0 ? 'Execution Time'"), "t");
    let e = s.execute("explain (format yaml) select 1").unwrap_err();
    assert_eq!(e.code, "0A000", "{e}");
    // IN, EXISTS and NOT EXISTS: joins with the subquery's distinct keys.
    let plan = q(
        &mut s,
        "explain (costs off) select count(*) from b where a_id in (select id from a where x > 5)",
    );
    assert!(
        plan.contains("Subquery Scan on __sj0") && plan.contains("HashAggregate"),
        "{plan}"
    );
    let plan = q(
        &mut s,
        "explain (costs off) select count(*) from b where not exists (select 1 from a where a.id = b.a_id)",
    );
    assert!(
        plan.contains("Left Join") && plan.contains("Filter: (__sj0.__k0 IS NULL)"),
        "{plan}"
    );
    assert_eq!(
        q(&mut s, "select count(*) from b where not exists (select 1 from a where a.id = b.a_id)"),
        q(&mut s, "select count(*) from b where not exists (select 1 from a where a.id = b.a_id) or false")
    );
}

/// EXPLAIN ANALYZE runs the query and shows each node's rows and loops (times vary, so
/// they are masked here).
#[test]
fn explain_analyze_shows_actual_rows_and_loops() {
    let mask = |plan: String| -> String {
        plan.lines()
            .map(|l| match (l.find("time="), l.find(" rows=")) {
                (Some(a), Some(b)) if a < b => format!("{}time=T{}", &l[..a], &l[b..]),
                _ if l.starts_with("Planning Time: ") => "Planning Time: T".into(),
                _ if l.starts_with("Execution Time: ") => "Execution Time: T".into(),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    for kind in [TableKind::Heap, TableKind::Undo] {
        let mut s = session(kind);
        q(&mut s, "insert into b select 100 + i, i % 50, i from generate_series(1, 2000) as i; create index b_a on b (a_id)");
        let plan = mask(q(
            &mut s,
            "explain (analyze, costs off) select a.id, b.y from a join b on b.a_id = a.id where a.id <= 2 order by b.y desc limit 3",
        ));
        assert_eq!(
            plan,
            "Limit  (actual time=T rows=3 loops=1)\n\
             \x20 ->  Sort  (actual time=T rows=3 loops=1)\n\
             \x20       ->  Nested Loop  (actual time=T rows=83 loops=1)\n\
             \x20             ->  Index Scan using a_pkey on a  (actual time=T rows=2 loops=1)\n\
             \x20                   Index Cond: (id <= 2)\n\
             \x20             ->  Index Scan using b_a on b  (actual time=T rows=41 loops=2)\n\
             \x20                   Index Cond: (b.a_id = a.id)\n\
             Planning Time: T\n\
             Execution Time: T",
            "{kind:?}"
        );
        // With estimates (after ANALYZE) beside what each node found.
        q(&mut s, "analyze");
        let plan = mask(q(
            &mut s,
            "explain (analyze) select a.s, count(*) from a join b on a.id = b.a_id group by a.s",
        ));
        // a's 4 rows make index lookups into b the cheaper join now; the groups are
        // a.s's 3 distinct values (the fourth group is NULL, which ANALYZE does not
        // count as a value).
        assert_eq!(
            plan,
            "HashAggregate  (rows=3) (actual time=T rows=4 loops=1)\n\
             \x20 ->  Nested Loop  (rows=160) (actual time=T rows=163 loops=1)\n\
             \x20       ->  Seq Scan on a  (rows=4) (actual time=T rows=4 loops=1)\n\
             \x20       ->  Index Scan using b_a on b  (rows=40) (actual time=T rows=40 loops=4)\n\
             \x20             Index Cond: (a.id = b.a_id)\n\
             Planning Time: T\n\
             Execution Time: T",
            "{kind:?}"
        );
        assert_eq!(
            q(
                &mut s,
                "select count(*), count(distinct a.s) from a join b on a.id = b.a_id"
            ),
            "163|3"
        );
        // Writes are not run by EXPLAIN ANALYZE: refused, and nothing changes.
        let e = s.execute("explain analyze delete from b").unwrap_err();
        assert_eq!(e.code, "0A000", "{e}");
        assert_eq!(q(&mut s, "select count(*) from b"), "2005");
    }
}

#[test]
fn returning_gives_the_rows_written() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let mut s = session(kind);
        q(
            &mut s,
            "create table r (id serial primary key, name text, n int)",
        );
        let cases = [
            ("insert into r (name, n) values ('a', 1), ('b', 2) returning id, name", "1|a\n2|b"),
            ("insert into r (name, n) values ('c', 3) returning *", "3|c|3"),
            (
                "insert into r (name, n) select 'd' || i, i from generate_series(4, 5) as i returning id, n * 10 as tens",
                "4|40\n5|50",
            ),
            ("update r set n = n + 100 where id > 3 returning id, n", "4|104\n5|105"),
            ("delete from r where n < 3 returning name", "a\nb"),
            ("update r set n = 0 where false returning id", ""),
            ("update r set n = n + 1 where id in (select id from r where n > 100) returning r.id, n", "4|105\n5|106"),
            ("select * from r order by id", "3|c|3\n4|d4|105\n5|d5|106"),
        ];
        for (sql, want) in cases {
            assert_eq!(q(&mut s, sql), want, "{kind:?}: {sql}");
        }
        let r = s
            .execute("insert into r (name, n) values ('e', 6) returning id as new_id")
            .unwrap();
        let last = r.last().unwrap();
        assert_eq!(last.tag, "INSERT 0 1");
        assert_eq!(last.columns[0].0, "new_id");
    }
}
