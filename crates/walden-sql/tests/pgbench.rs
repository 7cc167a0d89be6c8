//! The SQL pgbench 15 sends: what could go wrong is `pgbench -i` or a benchmark run
//! failing on a statement PostgreSQL takes, or getting an answer PostgreSQL would not
//! give (its partition check, a storage parameter, VACUUM ANALYZE of its tables).
#![allow(clippy::unwrap_used)]

mod support;
use support::{check_cases, db, q};
use walden_sql::Session;

/// `WITH (fillfactor=…)` and other storage parameters are checked as PostgreSQL checks
/// them (answers from PostgreSQL 15), then ignored.
#[test]
fn storage_parameters_are_checked_then_ignored() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    check_cases(
        &mut s,
        &[
            ("create table ff1(a int) with (fillfactor=5)", "ERROR 22023: value 5 out of bounds for option \"fillfactor\""),
            ("create table ff2(a int) with (fillfactor='x')", "ERROR 22023: invalid value for integer option \"fillfactor\": x"),
            ("create table ff3(a int) with (bogus=1)", "ERROR 22023: unrecognized parameter \"bogus\""),
            ("create table ff5(a int) with (fillfactor=50.5)", ""),
            ("create table ff6(a int) with (autovacuum_enabled=false, fillfactor=90)", ""),
            ("create table ff7(a int) with (oids=false)", ""),
            ("create table ff8(a int) with (fillfactor=100, fillfactor=90)", "ERROR 22023: parameter \"fillfactor\" specified more than once"),
            ("create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)", ""),
            ("insert into pgbench_tellers(tid,bid,tbalance) values (1,1,0)", ""),
            ("select tid, filler is null from pgbench_tellers", "1|t"),
        ],
    );
    let e = s
        .execute("create table ff9(a int) with (fillfactor=101)")
        .unwrap_err();
    assert_eq!(
        e.detail.as_deref(),
        Some("Valid values are between \"10\" and \"100\".")
    );
}

/// pgbench's history rows take CURRENT_TIMESTAMP (a timestamptz) into a timestamp
/// column: PostgreSQL's assignment cast. Date, timestamp and timestamptz all assign to
/// each other.
#[test]
fn date_and_time_types_assign_to_each_other() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.set_clock(std::sync::Arc::new(|| 86_400_000_000 + 3_600_000_000));
    q(
        &mut s,
        "create table h(ts timestamp, tz timestamptz, d date);
         insert into h values (CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP);
         insert into h values (date '2020-01-02', date '2020-01-02', timestamp '2020-01-02 03:04:05');
         update h set d = tz where d = date '2000-01-02'",
    );
    assert_eq!(
        q(&mut s, "select ts, tz, d from h order by d"),
        "2000-01-02 01:00:00|2000-01-02 01:00:00+00|2000-01-02\n\
         2020-01-02 00:00:00|2020-01-02 00:00:00+00|2020-01-02"
    );
}

/// pgbench 15 asks whether pgbench_accounts is partitioned with this query; for a plain
/// table PostgreSQL answers `2 | NULL | 0`.
#[test]
fn the_partition_check_finds_a_plain_table() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(
        &mut s,
        "create table pgbench_accounts(aid int not null, bid int, abalance int, filler char(84))",
    );
    let sql = "select o.n, p.partstrat, pg_catalog.count(i.inhparent) from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) where c.relname = 'pgbench_accounts' and o.n is not null group by 1, 2 order by 1 asc limit 1";
    assert_eq!(q(&mut s, sql), "2||0", "n, partstrat NULL, count");
    check_cases(
        &mut s,
        &[
            (
                "select current_schemas(true), current_schemas(false)",
                "{pg_catalog,public}|{public}",
            ),
            (
                "select array_position('{a,b,c}', 'c'), array_position('{a,NULL}', 'x')",
                "3|",
            ),
            ("select count(*) from pg_catalog.pg_partitioned_table", "0"),
        ],
    );
}

/// VACUUM and ANALYZE name several tables; `vacuum analyze t` does both; VACUUM stays
/// outside transaction blocks while ANALYZE runs inside one.
#[test]
fn vacuum_and_analyze_take_postgres_forms() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(
        &mut s,
        "create table a(x int); create table b(y int);
         insert into a select g from generate_series(1, 100) g;
         insert into b select g % 7 from generate_series(1, 50) g",
    );
    let tags: Vec<String> = s
        .execute(
            "vacuum analyze a; vacuum (verbose, analyze) a, b (y); vacuum a, b; analyze verbose a, b; vacuum",
        )
        .unwrap()
        .into_iter()
        .map(|r| r.tag)
        .collect();
    assert_eq!(tags, ["VACUUM", "VACUUM", "VACUUM", "ANALYZE", "VACUUM"]);
    let (rows, distinct) = db.table_estimate("b").unwrap();
    assert_eq!((rows, distinct[0].round()), (50.0, 7.0), "b analyzed");
    check_cases(
        &mut s,
        &[
            (
                "vacuum a, nosuch",
                "ERROR 42P01: relation \"nosuch\" does not exist",
            ),
            (
                "vacuum analyze a (nosuch)",
                "ERROR 42703: column \"nosuch\" of relation \"a\" does not exist",
            ),
            ("begin; analyze a, b", ""),
            (
                "vacuum analyze a",
                "ERROR 25001: VACUUM cannot run inside a transaction block",
            ),
            ("rollback", ""),
        ],
    );
}

/// TRUNCATE of several tables (pgbench's data step), RESTART IDENTITY starting serial
/// columns again.
#[test]
fn truncate_several_tables_and_restart_identity() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(
        &mut s,
        "create table s(id serial, v int); create table t(v int);
         insert into s(v) values (1), (2); insert into t values (1)",
    );
    let r = s.execute("begin; truncate table s, t; commit").unwrap();
    assert_eq!(r[1].tag, "TRUNCATE TABLE");
    assert_eq!(q(&mut s, "select count(*) from s, t"), "0");
    q(&mut s, "insert into s(v) values (3)");
    assert_eq!(q(&mut s, "select id from s"), "3");
    q(
        &mut s,
        "truncate s restart identity; insert into s(v) values (4)",
    );
    assert_eq!(q(&mut s, "select id from s"), "1");
}
