//! Schema changes applications make — views (CREATE [OR REPLACE] VIEW, DROP VIEW,
//! dependencies), ALTER TABLE (ADD/DROP/RENAME COLUMN, RENAME TO, defaults, NOT NULL,
//! keys) — on both table kinds, each statement's result against what PostgreSQL 15 gave
//! for the same statements in the same order (`psql -A -t`: rows, the command tag, or
//! the error's SQLSTATE and message); and that they survive a crash (WAL redo) and a
//! checkpoint. What could go wrong: a view reading stale columns, rows stored before
//! ADD COLUMN decoding wrong or being rewritten, a dropped column coming back, DDL lost
//! at recovery.
#![allow(clippy::unwrap_used)]

mod support;

use support::{db, q};
use walden::TableKind;
use walden_sql::{value, Session};

fn session(db: &walden::Database, kind: TableKind) -> Session {
    let mut s = Session::with_seed(db, 1);
    s.execute(&format!(
        "set default_table_access_method = {}",
        kind.name()
    ))
    .unwrap();
    s
}

/// Runs one statement as the steps record it: the rows of a query, else the command
/// tag; an error as `ERROR code: message`.
fn run(s: &mut Session, sql: &str) -> String {
    match s.execute(sql) {
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
        Ok(results) => {
            let r = results.last().unwrap();
            if r.columns.is_empty() {
                r.tag.clone()
            } else {
                r.rows
                    .iter()
                    .map(|row| row.iter().map(value::display).collect::<Vec<_>>().join("|"))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
    }
}

fn check_steps(steps: &[(&str, &str)]) {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut s = session(&db, kind);
        for (sql, want) in steps {
            assert_eq!(run(&mut s, sql), *want, "{kind:?}: {sql}");
        }
    }
}

/// (statement, what PostgreSQL 15 gave).
const VIEWS: &[(&str, &str)] = &[
    (
        r#"create table emp (id int primary key, name text, dept int, salary int)"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"create table dept (id int primary key, dname text)"#,
        r#"CREATE TABLE"#,
    ),
    (
        r#"insert into dept values (1, 'eng'), (2, 'ops')"#,
        r#"INSERT 0 2"#,
    ),
    (
        r#"insert into emp values (1, 'ann', 1, 100), (2, 'bob', 1, 80), (3, 'cy', 2, 90), (4, 'dee', null, 70)"#,
        r#"INSERT 0 4"#,
    ),
    (
        r#"create view rich as select id, name, salary from emp where salary >= 90"#,
        r#"CREATE VIEW"#,
    ),
    (
        r#"select * from rich order by id"#,
        r#"1|ann|100
3|cy|90"#,
    ),
    (
        r#"create view v2 (ident, who) as select id, name from emp"#,
        r#"CREATE VIEW"#,
    ),
    (r#"select who from v2 where ident = 2"#, r#"bob"#),
    (
        r#"select ident, who from v2 order by ident desc limit 2"#,
        r#"4|dee
3|cy"#,
    ),
    (
        r#"select r.name, d.dname from rich r join emp e on e.id = r.id join dept d on d.id = e.dept order by r.name"#,
        r#"ann|eng
cy|ops"#,
    ),
    (
        r#"create view dept_pay as select d.dname, sum(e.salary) as total, count(*) as n from dept d join emp e on e.dept = d.id group by d.dname"#,
        r#"CREATE VIEW"#,
    ),
    (
        r#"select * from dept_pay order by dname"#,
        r#"eng|180|2
ops|90|1"#,
    ),
    (r#"select count(*) from (select * from rich) s"#, r#"2"#),
    (
        r#"create view rich2 as select * from rich where salary > 95"#,
        r#"CREATE VIEW"#,
    ),
    (r#"select * from rich2"#, r#"1|ann|100"#),
    (
        r#"insert into emp values (5, 'eve', 2, 120)"#,
        r#"INSERT 0 1"#,
    ),
    (
        r#"select * from rich order by id"#,
        r#"1|ann|100
3|cy|90
5|eve|120"#,
    ),
    (
        r#"select * from dept_pay order by dname"#,
        r#"eng|180|2
ops|210|2"#,
    ),
    (
        r#"create or replace view rich as select id, name, salary, dept from emp where salary >= 100"#,
        r#"CREATE VIEW"#,
    ),
    (
        r#"select * from rich order by id"#,
        r#"1|ann|100|1
5|eve|120|2"#,
    ),
    (
        r#"select * from rich2 order by id"#,
        r#"1|ann|100
5|eve|120"#,
    ),
    (
        r#"with x as (select * from rich) select count(*) from x"#,
        r#"2"#,
    ),
    (
        r#"select name from emp where id in (select id from rich) order by name"#,
        r#"ann
eve"#,
    ),
    (
        r#"create view rich as select 1"#,
        r#"ERROR 42P07: relation "rich" already exists"#,
    ),
    (
        r#"create view emp as select 1"#,
        r#"ERROR 42P07: relation "emp" already exists"#,
    ),
    (
        r#"create or replace view rich as select id, name from emp"#,
        r#"ERROR 42P16: cannot drop columns from view"#,
    ),
    (
        r#"create or replace view rich as select id, salary, name, dept from emp"#,
        r#"ERROR 42P16: cannot change name of view column "name" to "salary""#,
    ),
    (
        r#"select * from nosuch"#,
        r#"ERROR 42P01: relation "nosuch" does not exist"#,
    ),
    (r#"drop view emp"#, r#"ERROR 42809: "emp" is not a view"#),
    (
        r#"drop table rich"#,
        r#"ERROR 42809: "rich" is not a table"#,
    ),
    (
        r#"drop view nosuch"#,
        r#"ERROR 42P01: view "nosuch" does not exist"#,
    ),
    (
        r#"insert into dept_pay values ('x', 1, 1)"#,
        r#"ERROR 55000: cannot insert into view "dept_pay""#,
    ),
    (
        r#"update dept_pay set n = 1"#,
        r#"ERROR 55000: cannot update view "dept_pay""#,
    ),
    (
        r#"delete from dept_pay"#,
        r#"ERROR 55000: cannot delete from view "dept_pay""#,
    ),
    (
        r#"truncate dept_pay"#,
        r#"ERROR 42809: "dept_pay" is not a table"#,
    ),
    (
        r#"drop table emp"#,
        r#"ERROR 2BP01: cannot drop table emp because other objects depend on it"#,
    ),
    (
        r#"drop view rich"#,
        r#"ERROR 2BP01: cannot drop view rich because other objects depend on it"#,
    ),
    (
        r#"create view bad (a, b, c) as select 1, 2"#,
        r#"ERROR 42601: CREATE VIEW specifies more column names than columns"#,
    ),
    (
        r#"create view dup as select 1 as a, 2 as a"#,
        r#"ERROR 42701: column "a" specified more than once"#,
    ),
    (
        r#"create table rich (a int)"#,
        r#"ERROR 42P07: relation "rich" already exists"#,
    ),
    (r#"drop view rich cascade"#, r#"DROP VIEW"#),
    (
        r#"select * from rich2"#,
        r#"ERROR 42P01: relation "rich2" does not exist"#,
    ),
    (r#"drop view if exists rich, v2"#, r#"DROP VIEW"#),
    (
        r#"select * from v2"#,
        r#"ERROR 42P01: relation "v2" does not exist"#,
    ),
    (r#"drop table dept cascade"#, r#"DROP TABLE"#),
    (
        r#"select * from dept_pay"#,
        r#"ERROR 42P01: relation "dept_pay" does not exist"#,
    ),
    (r#"create view dept as select 1 as one"#, r#"CREATE VIEW"#),
    (r#"select * from dept"#, r#"1"#),
    (r#"drop view dept"#, r#"DROP VIEW"#),
    (r#"drop table emp"#, r#"DROP TABLE"#),
];

#[test]
fn views_give_postgres_results() {
    check_steps(VIEWS);
}

#[test]
fn explain_of_a_view_shows_its_query_plan() {
    let db = db();
    let mut s = Session::new(&db);
    s.execute("create table t (a int primary key, b int); create view v as select a, b from t where b > 1")
        .unwrap();
    let plan = q(&mut s, "explain select * from v where a = 3");
    assert!(plan.contains("on t"), "{plan}");
}
