//! WITH RECURSIVE against PostgreSQL 15's results: what could go wrong is a round that
//! reads the wrong rows (all rows so far instead of the last round's), UNION that does
//! not drop rows already given (a cycle then never ends), types taken from the wrong
//! term, a reference in a place PostgreSQL refuses that is run anyway, a LIMIT that does
//! not stop an endless recursion, or an endless recursion that cannot be canceled.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use walden::TableKind;
use walden_sql::Session;

mod support;
use support::{db, q, session_of};

const KINDS: [TableKind; 2] = [TableKind::Heap, TableKind::Undo];

fn with_tables(kind: TableKind) -> (walden::Database, Session) {
    let db = db();
    let mut s = session_of(&db, kind, 1);
    s.execute(
        "create table tree (id int primary key, parent int, name text);
         insert into tree values (1, null, 'root'), (2, 1, 'a'), (3, 1, 'b'), (4, 2, 'a1'),
             (5, 2, 'a2'), (6, 5, 'a2x'), (7, 3, 'b1');
         create table edge (src int, dst int);
         insert into edge values (1, 2), (2, 3), (3, 1), (3, 4), (4, 4), (5, 6);",
    )
    .unwrap();
    (db, s)
}

/// The error's SQLSTATE and message.
fn err(s: &mut Session, sql: &str) -> (String, String) {
    let e = s.execute(sql).expect_err(sql);
    (e.code.to_string(), e.message.clone())
}

#[test]
fn a_tree_is_walked_down_and_up() {
    for kind in KINDS {
        let (_db, mut s) = with_tables(kind);
        assert_eq!(
            q(
                &mut s,
                "with recursive sub(id, name, depth, path) as (
                     select id, name, 0, name from tree where parent is null
                     union all
                     select t.id, t.name, s.depth + 1, s.path || '/' || t.name
                     from tree t join sub s on t.parent = s.id)
                 select id, depth, path from sub order by path"
            ),
            "1|0|root\n2|1|root/a\n4|2|root/a/a1\n5|2|root/a/a2\n6|3|root/a/a2/a2x\n3|1|root/b\n7|2|root/b/b1",
            "{kind:?}"
        );
        assert_eq!(
            q(
                &mut s,
                "with recursive up(id, parent) as (
                     select id, parent from tree where id = 6
                     union all
                     select t.id, t.parent from up, tree t where t.id = up.parent)
                 select id from up"
            ),
            "6\n5\n2\n1",
            "{kind:?}"
        );
    }
}

#[test]
fn union_stops_at_a_cycle_union_all_would_not() {
    for kind in KINDS {
        let (_db, mut s) = with_tables(kind);
        assert_eq!(
            q(
                &mut s,
                "with recursive reach(n) as (select 1 union
                     select e.dst from edge e join reach r on e.src = r.n)
                 select n from reach order by n"
            ),
            "1\n2\n3\n4",
            "{kind:?}"
        );
        assert_eq!(
            q(
                &mut s,
                "with recursive reach(n) as (values (1) union select dst from edge, reach where src = n)
                 select count(*) from reach"
            ),
            "4"
        );
        assert_eq!(
            q(
                &mut s,
                "with recursive t(n) as (select 1 union select n from t) select * from t"
            ),
            "1"
        );
        // Under UNION ALL the same graph is endless: the outer LIMIT ends it.
        assert_eq!(
            q(
                &mut s,
                "with recursive walk(n) as (select 1 union all
                     select dst from edge, walk where src = n)
                 select count(*) from (select n from walk limit 50) x"
            ),
            "50"
        );
    }
}

#[test]
fn series_fibonacci_and_types_of_the_non_recursive_term() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    for (sql, want) in [
        (
            "with recursive fib(a, b, i) as (select 0::bigint, 1::bigint, 1
                 union all select b, a + b, i + 1 from fib where i < 50)
             select i, a from fib where i in (1, 2, 3, 10, 50) order by i",
            "1|0\n2|1\n3|1\n10|34\n50|7778742049",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 1000)
             select count(*), sum(n) from t",
            "1000|500500",
        ),
        (
            "with recursive t(n) as (select 1::bigint union all select (n + 1)::int from t where n < 3)
             select n * 2147483647 from t",
            "2147483647\n4294967294\n6442450941",
        ),
        (
            "with recursive t(s) as (select 'x'::text union all select s || 'y' from t where length(s) < 4)
             select s from t",
            "x\nxy\nxyy\nxyyy",
        ),
        (
            "with recursive t as (select 1 as k union all select k + 1 from t where k < 3) select k from t",
            "1\n2\n3",
        ),
        (
            "with recursive t(n) as (select 1, 2 union all select n + 1, 2 from t where n < 3) select * from t",
            "1|2\n2|2\n3|2",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 3)
             select * from t order by n desc",
            "3\n2\n1",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 3)
             select n from t union all select 0 order by 1",
            "0\n1\n2\n3",
        ),
        (
            "with recursive t(n) as (select 1 union all select distinct n + 1 from t where n < 3)
             select * from t",
            "1\n2\n3",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 3 group by n)
             select * from t",
            "1\n2\n3",
        ),
        (
            "with recursive t(n) as (select 1 union all select t.n + 1 from t
                 left join (values (1)) v(x) on true where n < 3)
             select n from t",
            "1\n2\n3",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1 from (select n from t) s where n < 3)
             select * from t",
            "1\n2\n3",
        ),
    ] {
        assert_eq!(q(&mut s, sql), want, "{sql}");
    }
}

#[test]
fn several_queries_read_earlier_ones_and_one_is_read_twice() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    for (sql, want) in [
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 3),
                 u(m) as (select n * 10 from t)
             select * from u, t where m / 10 = n order by 1",
            "10|1\n20|2\n30|3",
        ),
        (
            "with recursive a(x) as (select 1),
                 b(y) as (select x + 1 from a union all select y + 1 from b where y < 4)
             select * from b",
            "2\n3\n4",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 3),
                 u(n) as (select n from t union all select n + 10 from u where n < 10)
             select n from u order by n",
            "1\n2\n3\n11\n12\n13",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 5)
             select a.n, b.n from t a join t b on b.n = a.n * 2 order by 1",
            "1|2\n2|4",
        ),
        (
            "select (with recursive r(n) as (select x union all select n + 1 from r where n < x + 2)
                     select string_agg(n::text, ',') from r)
             from (values (1), (10)) v(x)",
            "1,2,3\n10,11,12",
        ),
    ] {
        assert_eq!(q(&mut s, sql), want, "{sql}");
    }
}

#[test]
fn a_limit_stops_an_endless_recursion() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    assert_eq!(
        q(
            &mut s,
            "with recursive t(n) as (select 1 union all select n + 1 from t) select n from t limit 10"
        ),
        "1\n2\n3\n4\n5\n6\n7\n8\n9\n10"
    );
    assert_eq!(
        q(
            &mut s,
            "with recursive t(n) as (select 1 union all select n + 1 from t)
             select sum(n) from (select n from t limit 100) x"
        ),
        "5050"
    );
}

#[test]
fn references_where_postgresql_refuses_them() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let recursion = "42P19";
    for (sql, code, message) in [
        (
            "with recursive t(n) as (select n from t union all select 1) select n from t",
            recursion,
            "recursive reference to query \"t\" must not appear within its non-recursive term",
        ),
        (
            "with recursive t(n) as (select 1 from t) select n from t",
            recursion,
            "recursive query \"t\" does not have the form non-recursive-term UNION [ALL] recursive-term",
        ),
        (
            "with recursive t(n) as (select 1 intersect select n + 1 from t) select n from t",
            recursion,
            "recursive query \"t\" does not have the form non-recursive-term UNION [ALL] recursive-term",
        ),
        (
            "with recursive t(n) as (select 1 union all select (select n + 1 from t) where false) select n from t",
            recursion,
            "recursive reference to query \"t\" must not appear within a subquery",
        ),
        (
            "with recursive t(n) as (select 1 union all select max(n) + 1 from t) select n from t",
            recursion,
            "aggregate functions are not allowed in a recursive query's recursive term",
        ),
        (
            "with recursive t(n) as (select 1 union all select a.n + 1 from t a, t b where a.n < 3) select n from t",
            recursion,
            "recursive reference to query \"t\" must not appear more than once",
        ),
        (
            "with recursive t(n) as (select 1 union all select v.x from (values (1)) v(x) left join t on true)
             select n from t",
            recursion,
            "recursive reference to query \"t\" must not appear within an outer join",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 3 order by 1) select n from t",
            "0A000",
            "ORDER BY in a recursive query is not implemented",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 3 limit 1) select n from t",
            "0A000",
            "LIMIT in a recursive query is not implemented",
        ),
        (
            "with recursive t(n) as (select 1 union all select n::bigint + 1 from t where n < 3) select n from t",
            "42804",
            "recursive query \"t\" column 1 has type integer in non-recursive term but type bigint overall",
        ),
        (
            "with recursive t(n, m) as (select 1 union all select n + 1 from t where n < 3) select n from t",
            "42P10",
            "WITH query \"t\" has 1 columns available but 2 columns specified",
        ),
        (
            "with recursive t(n) as (select 1 union all select n + 1, n from t where n < 3) select * from t",
            "42601",
            "each UNION query must have the same number of columns",
        ),
    ] {
        assert_eq!(err(&mut s, sql), (code.to_string(), message.to_string()), "{sql}");
    }
    // The type error points at the non-recursive term, with PostgreSQL's hint.
    let e = s
        .execute("with recursive t(n) as (select 1 union all select n::bigint + 1 from t) select n from t")
        .unwrap_err();
    assert_eq!(e.position, Some(25));
    assert_eq!(
        e.hint.as_deref(),
        Some("Cast the output of the non-recursive term to the correct type.")
    );
}

#[test]
fn explain_names_postgresql_nodes() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let plan = q(
        &mut s,
        "explain (costs off) with recursive t(n) as (select 1 union all select n + 1 from t where n < 3)
         select n from t",
    );
    // PostgreSQL: CTE Scan on t / CTE t / Recursive Union / Result / WorkTable Scan on t.
    let names: Vec<&str> = plan
        .lines()
        .map(|l| l.trim().trim_start_matches("->  "))
        .filter(|l| !l.starts_with("Filter") && *l != "Result")
        .collect();
    assert_eq!(
        names,
        [
            "CTE Scan on t",
            "CTE t",
            "Recursive Union",
            "WorkTable Scan on t"
        ],
        "{plan}"
    );
}

#[test]
fn an_endless_recursion_is_canceled_and_a_union_one_meets_statement_mem() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let handle = s.cancel_handle();
    let done = AtomicBool::new(false);
    let e = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                handle.cancel();
            }
        });
        let r = s.execute("with recursive t(n) as (select 1 union all select n + 1 from t) select count(*) from t");
        done.store(true, Ordering::Relaxed);
        r.expect_err("canceled")
    });
    assert_eq!(
        (e.code, e.message.as_str()),
        ("57014", "canceling statement due to user request")
    );
    // Under UNION every row given is kept to drop its equals: statement_mem bounds them.
    s.execute("set statement_mem = '1MB'").unwrap();
    let e = s
        .execute(
            "with recursive t(n) as (select 1 union select n + 1 from t) select count(*) from t",
        )
        .unwrap_err();
    assert_eq!(e.code, "53200", "{e}");
}
