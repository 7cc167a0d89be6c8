//! Window functions — ranking (row_number, rank, dense_rank, percent_rank, cume_dist,
//! ntile), offsets (lag, lead, first/last/nth_value) and aggregates OVER partitions,
//! orders and frames, in grouped and plain queries, named windows — on both table
//! kinds, each against the rows PostgreSQL 15 gave for the same statement on the same
//! table (`psql -A -t`, NULL as an empty field); and PostgreSQL's errors.
#![allow(clippy::unwrap_used)]

mod support;

use support::{db, q, session_of};
use walden::TableKind;
use walden_sql::Session;

const SETUP: &str = r#"
create table emp (id int primary key, dept text, salary int, bonus int);
insert into emp values (1, 'eng', 100, 5), (2, 'eng', 120, NULL), (3, 'eng', 120, 7), (4, 'ops', 90, 1), (5, 'ops', 95, 2), (6, 'sales', 80, NULL), (7, NULL, 70, 3), (8, 'eng', NULL, 4);
"#;

/// (statement, PostgreSQL's rows).
const CASES: &[(&str, &str)] = &[
    (
        r#"select id, row_number() over (order by id) from emp order by id;"#,
        r#"1|1
2|2
3|3
4|4
5|5
6|6
7|7
8|8"#,
    ),
    (
        r#"select id, dept, row_number() over (partition by dept order by salary desc, id) from emp order by id;"#,
        r#"1|eng|4
2|eng|2
3|eng|3
4|ops|2
5|ops|1
6|sales|1
7||1
8|eng|1"#,
    ),
    (
        r#"select id, salary, rank() over (order by salary), dense_rank() over (order by salary) from emp order by id;"#,
        r#"1|100|5|5
2|120|6|6
3|120|6|6
4|90|3|3
5|95|4|4
6|80|2|2
7|70|1|1
8||8|7"#,
    ),
    (
        r#"select id, dept, salary, rank() over (partition by dept order by salary desc) from emp order by id;"#,
        r#"1|eng|100|4
2|eng|120|2
3|eng|120|2
4|ops|90|2
5|ops|95|1
6|sales|80|1
7||70|1
8|eng||1"#,
    ),
    (
        r#"select id, percent_rank() over (order by salary), cume_dist() over (order by salary) from emp order by id;"#,
        r#"1|0.5714285714285714|0.625
2|0.7142857142857143|0.875
3|0.7142857142857143|0.875
4|0.2857142857142857|0.375
5|0.42857142857142855|0.5
6|0.14285714285714285|0.25
7|0|0.125
8|1|1"#,
    ),
    (
        r#"select id, ntile(3) over (order by id) from emp order by id;"#,
        r#"1|1
2|1
3|1
4|2
5|2
6|2
7|3
8|3"#,
    ),
    (
        r#"select id, ntile(5) over (partition by dept order by id) from emp order by id;"#,
        r#"1|1
2|2
3|3
4|1
5|2
6|1
7|1
8|4"#,
    ),
    (
        r#"select id, lag(salary) over (order by id), lead(salary) over (order by id) from emp order by id;"#,
        r#"1||120
2|100|120
3|120|90
4|120|95
5|90|80
6|95|70
7|80|
8|70|"#,
    ),
    (
        r#"select id, lag(salary, 2, 0) over (order by id), lead(salary, 3, -1) over (order by id) from emp order by id;"#,
        r#"1|0|90
2|0|95
3|100|80
4|120|70
5|120|
6|90|-1
7|95|-1
8|80|-1"#,
    ),
    (
        r#"select id, lag(id, -1) over (order by id) from emp order by id;"#,
        r#"1|2
2|3
3|4
4|5
5|6
6|7
7|8
8|"#,
    ),
    (
        r#"select id, dept, sum(salary) over (partition by dept) from emp order by id;"#,
        r#"1|eng|340
2|eng|340
3|eng|340
4|ops|185
5|ops|185
6|sales|80
7||70
8|eng|340"#,
    ),
    (
        r#"select id, sum(salary) over (order by id) from emp order by id;"#,
        r#"1|100
2|220
3|340
4|430
5|525
6|605
7|675
8|675"#,
    ),
    (
        r#"select id, salary, sum(salary) over (order by salary) from emp order by id;"#,
        r#"1|100|435
2|120|675
3|120|675
4|90|240
5|95|335
6|80|150
7|70|70
8||675"#,
    ),
    (
        r#"select id, count(*) over (), count(bonus) over (), avg(salary::float8) over () from emp order by id;"#,
        r#"1|8|6|96.42857142857143
2|8|6|96.42857142857143
3|8|6|96.42857142857143
4|8|6|96.42857142857143
5|8|6|96.42857142857143
6|8|6|96.42857142857143
7|8|6|96.42857142857143
8|8|6|96.42857142857143"#,
    ),
    (
        r#"select id, min(salary) over (partition by dept), max(salary) over (partition by dept) from emp order by id;"#,
        r#"1|100|120
2|100|120
3|100|120
4|90|95
5|90|95
6|80|80
7|70|70
8|100|120"#,
    ),
    (
        r#"select id, sum(salary) over (order by id rows between 1 preceding and 1 following) from emp order by id;"#,
        r#"1|220
2|340
3|330
4|305
5|265
6|245
7|150
8|70"#,
    ),
    (
        r#"select id, sum(salary) over (order by id rows between current row and unbounded following) from emp order by id;"#,
        r#"1|675
2|575
3|455
4|335
5|245
6|150
7|70
8|"#,
    ),
    (
        r#"select id, sum(salary) over (order by id rows 2 preceding) from emp order by id;"#,
        r#"1|100
2|220
3|340
4|330
5|305
6|265
7|245
8|150"#,
    ),
    (
        r#"select id, count(*) over (order by salary range between unbounded preceding and unbounded following) from emp order by id;"#,
        r#"1|8
2|8
3|8
4|8
5|8
6|8
7|8
8|8"#,
    ),
    (
        r#"select id, count(*) over (order by salary range between current row and unbounded following) from emp order by id;"#,
        r#"1|4
2|3
3|3
4|6
5|5
6|7
7|8
8|1"#,
    ),
    (
        r#"select id, first_value(id) over (partition by dept order by id), last_value(id) over (partition by dept order by id) from emp order by id;"#,
        r#"1|1|1
2|1|2
3|1|3
4|4|4
5|4|5
6|6|6
7|7|7
8|1|8"#,
    ),
    (
        r#"select id, last_value(id) over (partition by dept order by id rows between unbounded preceding and unbounded following) from emp order by id;"#,
        r#"1|8
2|8
3|8
4|5
5|5
6|6
7|7
8|8"#,
    ),
    (
        r#"select id, nth_value(id, 2) over (order by id) from emp order by id;"#,
        r#"1|
2|2
3|2
4|2
5|2
6|2
7|2
8|2"#,
    ),
    (
        r#"select id, nth_value(salary, 3) over (order by id rows between unbounded preceding and unbounded following) from emp order by id;"#,
        r#"1|120
2|120
3|120
4|120
5|120
6|120
7|120
8|120"#,
    ),
    (
        r#"select id, string_agg(dept, ',') over (order by id) from emp order by id;"#,
        r#"1|eng
2|eng,eng
3|eng,eng,eng
4|eng,eng,eng,ops
5|eng,eng,eng,ops,ops
6|eng,eng,eng,ops,ops,sales
7|eng,eng,eng,ops,ops,sales
8|eng,eng,eng,ops,ops,sales,eng"#,
    ),
    (
        r#"select id, bool_and(salary > 90) over (partition by dept) from emp order by id;"#,
        r#"1|t
2|t
3|t
4|f
5|f
6|f
7|f
8|t"#,
    ),
    (
        r#"select dept, sum(salary), rank() over (order by sum(salary) desc) from emp group by dept order by dept;"#,
        r#"eng|340|1
ops|185|2
sales|80|3
|70|4"#,
    ),
    (
        r#"select dept, count(*), sum(count(*)) over () from emp group by dept order by dept;"#,
        r#"eng|4|8
ops|2|8
sales|1|8
|1|8"#,
    ),
    (
        r#"select dept, sum(salary) as s, sum(sum(salary)) over (order by dept) from emp group by dept order by dept nulls first;"#,
        r#"|70|675
eng|340|340
ops|185|525
sales|80|605"#,
    ),
    (
        r#"select id, row_number() over w, rank() over w from emp window w as (order by salary desc) order by id;"#,
        r#"1|4|4
2|2|2
3|3|2
4|6|6
5|5|5
6|7|7
7|8|8
8|1|1"#,
    ),
    (
        r#"select id, sum(salary) over (w order by id) from emp window w as (partition by dept) order by id;"#,
        r#"1|100
2|220
3|340
4|90
5|185
6|80
7|70
8|340"#,
    ),
    (
        r#"select id, salary from emp order by row_number() over (order by salary desc nulls last, id) limit 3;"#,
        r#"2|120
3|120
1|100"#,
    ),
    (
        r#"select id, row_number() over (order by id) as rn from emp order by rn desc limit 2;"#,
        r#"8|8
7|7"#,
    ),
    (
        r#"select distinct dept, count(*) over (partition by dept) from emp order by 1;"#,
        r#"eng|4
ops|2
sales|1
|1"#,
    ),
    (
        r#"select * from (select id, row_number() over (partition by dept order by salary desc) as rn from emp) s where rn = 1 order by id;"#,
        r#"5|1
6|1
7|1
8|1"#,
    ),
    (
        r#"select id, salary - lag(salary) over (order by id) as diff from emp order by id;"#,
        r#"1|
2|20
3|0
4|-30
5|5
6|-15
7|-10
8|"#,
    ),
    (
        r#"select id, row_number() over () from emp where dept = 'eng' order by id;"#,
        r#"1|1
2|2
3|3
8|4"#,
    ),
    (r#"select count(*) over () from emp where id < 0;"#, r#""#),
    (
        r#"select id, sum(salary) over (partition by dept order by id rows between 1 preceding and current row) from emp order by id;"#,
        r#"1|100
2|220
3|240
4|90
5|185
6|80
7|70
8|120"#,
    ),
    (
        r#"select id, avg(bonus::float8) over (order by id rows between 2 preceding and 2 following) from emp order by id;"#,
        r#"1|6
2|4.333333333333333
3|3.75
4|3.3333333333333335
5|3.25
6|2.5
7|3
8|3.5"#,
    ),
    (
        r#"select id, sum(salary) over (order by id rows between 3 following and 5 following) from emp order by id;"#,
        r#"1|265
2|245
3|150
4|70
5|
6|
7|
8|"#,
    ),
    (
        r#"select id, sum(salary) over (order by id rows between 2 preceding and 1 preceding) from emp order by id;"#,
        r#"1|
2|100
3|220
4|240
5|210
6|185
7|175
8|150"#,
    ),
    (
        r#"select a.id, rank() over (order by b.salary) from emp a join emp b on a.id = b.id order by a.id;"#,
        r#"1|5
2|6
3|6
4|3
5|4
6|2
7|1
8|8"#,
    ),
    (
        r#"select id, count(*) over (partition by salary > 100) from emp order by id;"#,
        r#"1|5
2|2
3|2
4|5
5|5
6|5
7|5
8|1"#,
    ),
    (
        r#"select id, lag(dept, 1, 'none') over (order by id) from emp order by id;"#,
        r#"1|none
2|eng
3|eng
4|eng
5|ops
6|ops
7|sales
8|"#,
    ),
    (
        r#"select id, max(salary) over (order by id desc) from emp order by id;"#,
        r#"1|120
2|120
3|120
4|95
5|95
6|80
7|70
8|"#,
    ),
];

/// (statement, PostgreSQL's SQLSTATE and message).
const ERRORS: &[(&str, &str, &str)] = &[
    (
        r#"select id from emp where row_number() over () > 1;"#,
        "42P20",
        r#"window functions are not allowed in WHERE"#,
    ),
    (
        r#"select row_number() from emp;"#,
        "42809",
        r#"window function row_number requires an OVER clause"#,
    ),
    (
        r#"select lower(dept) over () from emp;"#,
        "42809",
        r#"OVER specified, but lower is not a window function nor an aggregate function"#,
    ),
    (
        r#"select sum(row_number() over ()) from emp;"#,
        "42803",
        r#"aggregate function calls cannot contain window function calls"#,
    ),
    (
        r#"select id, ntile(0) over () from emp;"#,
        "22014",
        r#"argument of ntile must be greater than zero"#,
    ),
    (
        r#"select id, nth_value(id, 0) over () from emp;"#,
        "22016",
        r#"argument of nth_value must be greater than zero"#,
    ),
    (
        r#"select id, sum(salary) over (rows between unbounded following and current row) from emp;"#,
        "42P20",
        r#"frame start cannot be UNBOUNDED FOLLOWING"#,
    ),
    (
        r#"select id, sum(salary) over (rows between current row and 1 preceding) from emp;"#,
        "42P20",
        r#"frame starting from current row cannot have preceding rows"#,
    ),
    (
        r#"select id, sum(salary) over (rows -1 preceding) from emp;"#,
        "22013",
        r#"frame starting offset must not be negative"#,
    ),
    (
        r#"select id, sum(salary) over w from emp;"#,
        "42704",
        r#"window "w" does not exist"#,
    ),
    (
        r#"select row_number(1) over () from emp;"#,
        "42883",
        r#"function row_number(integer) does not exist"#,
    ),
    (
        r#"select dept from emp group by dept having rank() over () > 1;"#,
        "42P20",
        r#"window functions are not allowed in HAVING"#,
    ),
    (
        r#"select id, row_number() over (w partition by id) from emp window w as (order by id);"#,
        "42P20",
        r#"cannot override PARTITION BY clause of window "w""#,
    ),
];

fn session(kind: TableKind) -> Session {
    let mut s = session_of(&db(), kind, 7);
    s.execute(SETUP).unwrap();
    s
}

#[test]
fn window_functions_give_postgres_rows_on_both_table_kinds() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let mut s = session(kind);
        for (sql, want) in CASES {
            assert_eq!(q(&mut s, sql), *want, "{kind:?}: {sql}");
        }
        // With indexes on the ordering and partitioning columns, the same rows.
        s.execute(
            "create index emp_salary on emp (salary); create index emp_dept on emp (dept, id)",
        )
        .unwrap();
        for (sql, want) in CASES {
            assert_eq!(q(&mut s, sql), *want, "{kind:?} with indexes: {sql}");
        }
    }
}

/// GROUPS frames against PostgreSQL 15: offsets count peer groups, NULLs (last in
/// ascending order) are a group of their own, and the frame is cut at the partition's
/// edges.
#[test]
fn groups_frames_count_peer_groups() {
    let mut s = session_of(&db(), TableKind::Heap, 7);
    s.execute(
        "create table w (k int, v int);
         insert into w values (1, 1), (1, 2), (2, 4), (3, 8), (3, 16), (5, 32), (null, 64);",
    )
    .unwrap();
    assert_eq!(
        q(
            &mut s,
            "select k, v,
                 sum(v) over (order by k groups between 1 preceding and 1 following),
                 count(*) over (order by k groups between current row and 2 following),
                 sum(v) over (order by k desc groups between unbounded preceding and 1 preceding),
                 max(v) over (order by k groups between 1 following and 2 following),
                 sum(v) over (partition by k % 2 order by k groups 1 preceding)
             from w order by k, v"
        ),
        "1|1|7|5|124|16|3\n1|2|7|5|124|16|3\n2|4|31|4|120|32|4\n3|8|60|4|96|64|27\n\
         3|16|60|4|96|64|27\n5|32|120|2|64|64|56\n|64|96|1|||64"
    );
    let e = s
        .execute("select sum(v) over (groups between 1 preceding and current row) from w")
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("42P20", "GROUPS mode requires an ORDER BY clause")
    );
}

/// RANGE frames with offsets against PostgreSQL 15: the rows whose ORDER BY value is
/// within the offsets (descending turns PRECEDING round), NULLs within no offset of a
/// value and a NULL row's frame its NULL peers.
#[test]
fn range_frames_with_offsets_read_values_within_them() {
    let mut s = session_of(&db(), TableKind::Undo, 7);
    s.execute(
        "create table w (k int, v int);
         insert into w values (1, 1), (1, 2), (2, 4), (3, 8), (3, 16), (5, 32), (null, 64),
             (4, 100), (null, 1);",
    )
    .unwrap();
    assert_eq!(
        q(
            &mut s,
            "select k, v,
                 sum(v) over (order by k range between 1 preceding and 1 following),
                 count(*) over (order by k desc range between 2 preceding and current row),
                 sum(v) over (order by k range between unbounded preceding and 2 preceding),
                 max(v) over (order by k nulls first range between 1 following and 3 following),
                 sum(v) over (order by k::float8 range between current row and 1.5 following)
             from w order by k, v"
        ),
        "1|1|7|5||100|7\n1|2|7|5||100|7\n2|4|31|4||100|28\n3|8|128|4|3|100|124\n\
         3|16|128|4|3|100|124\n4|100|156|2|7|32|132\n5|32|132|1|31||32\n|1|65|2|228|64|65\n\
         |64|65|2|228|64|65"
    );
    for (sql, code, message) in [
        (
            "select sum(v) over (order by k, v range between 1 preceding and current row) from w",
            "42P20",
            "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
        ),
        (
            "select sum(v) over (range between 1 preceding and current row) from w",
            "42P20",
            "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
        ),
        (
            "select sum(v) over (order by v::text range between 1 preceding and current row) from w",
            "42883",
            "RANGE with offset PRECEDING/FOLLOWING is not supported for column type text",
        ),
        (
            "select sum(v) over (order by k range between -1 preceding and current row) from w",
            "22013",
            "invalid preceding or following size in window function",
        ),
    ] {
        let e = s.execute(sql).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (code, message), "{sql}");
    }
}

#[test]
fn window_errors_are_postgres_errors() {
    let mut s = session(TableKind::Heap);
    for (sql, code, message) in ERRORS {
        let e = s.execute(sql).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (*code, *message), "{sql}");
    }
    // Refused with a clear error, not computed wrongly.
    let e = s
        .execute("select count(distinct dept) over () from emp")
        .unwrap_err();
    assert_eq!(e.code, "0A000", "{e}");
    // A position past any frame is NULL (as in PostgreSQL), not an overflow.
    assert_eq!(
        q(
            &mut s,
            "select nth_value(id, 9223372036854775807) over () from emp limit 1"
        ),
        ""
    );
}

#[test]
fn explain_shows_the_window_node() {
    let mut s = session(TableKind::Heap);
    let plan = q(
        &mut s,
        "explain (costs off) select id, rank() over (order by salary) from emp order by id",
    );
    assert_eq!(plan, "Sort\n  ->  WindowAgg\n        ->  Seq Scan on emp");
}
