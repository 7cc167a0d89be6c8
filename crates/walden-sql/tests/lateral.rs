//! LATERAL items in FROM against PostgreSQL 15's results: what could go wrong is a
//! lateral subquery run once instead of per row (every row then sees the first row's
//! values), a LEFT JOIN LATERAL that drops rows whose subquery gave nothing, join
//! reordering that runs the lateral item before the items it reads, or a function in
//! FROM over an earlier item's column refused or run with the wrong row.
#![allow(clippy::unwrap_used)]

use walden::TableKind;

mod support;
use support::{db, q, session_of};

#[test]
fn lateral_subqueries_and_functions_read_the_items_before_them() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut s = session_of(&db, kind, 1);
        s.execute(
            "create table dept (id int primary key, name text);
             insert into dept values (1, 'eng'), (2, 'ops'), (3, 'empty');
             create table emp (id int primary key, dept int, name text, salary int);
             insert into emp values (1, 1, 'ann', 300), (2, 1, 'bob', 200), (3, 1, 'cy', 250),
                 (4, 2, 'dee', 100), (5, 2, 'ed', 150), (6, null, 'fi', 500);",
        )
        .unwrap();
        for (sql, want) in [
            // Top two per group.
            (
                "select d.name, s.name, s.salary from dept d,
                     lateral (select name, salary from emp e where e.dept = d.id
                              order by salary desc limit 2) s
                 order by 1, 3 desc",
                "eng|ann|300\neng|cy|250\nops|ed|150\nops|dee|100",
            ),
            (
                "select d.name, s.name from dept d left join lateral
                     (select name from emp e where e.dept = d.id order by salary desc limit 1) s on true
                 order by 1",
                "empty|\neng|ann\nops|ed",
            ),
            (
                "select d.name, s.n from dept d join lateral
                     (select count(*) as n from emp e where e.dept = d.id) s on s.n > 0
                 order by 1",
                "eng|3\nops|2",
            ),
            (
                "select d.name, s.total from dept d cross join lateral
                     (select sum(salary) as total from emp where dept = d.id) s
                 order by 1",
                "empty|\neng|750\nops|250",
            ),
            (
                "select x, y from (values (1), (2)) v(x),
                     lateral (select x * 10 as y union all select x * 100) w
                 order by 1, 2",
                "1|10\n1|100\n2|20\n2|200",
            ),
            (
                "select d.id, s.m from dept d, emp e2,
                     lateral (select max(salary) as m from emp e
                              where e.dept = d.id and e.salary < e2.salary) s
                 where e2.id = 2 order by 1",
                "1|\n2|150\n3|",
            ),
            (
                "select * from dept d, lateral (select d.id * 2 as twice) s where twice > 2 order by 1",
                "2|ops|4\n3|empty|6",
            ),
            ("select * from lateral (select 1 as a) s", "1"),
            (
                "select d.name, s.c from dept d left join lateral
                     (select e.name as c from emp e where e.dept = d.id and e.salary > 260) s on true
                 order by 1, 2",
                "empty|\neng|ann\nops|",
            ),
            (
                "select d.name, g from dept d, generate_series(1, d.id) g order by 1, 2",
                "empty|1\nempty|2\nempty|3\neng|1\nops|1\nops|2",
            ),
        ] {
            assert_eq!(q(&mut s, sql), want, "{kind:?}: {sql}");
        }
        let plan = q(
            &mut s,
            "explain (costs off) select d.name, s.name from dept d,
                 lateral (select name from emp e where e.dept = d.id limit 1) s",
        );
        assert!(plan.starts_with("Nested Loop\n"), "{plan}");
    }
}
