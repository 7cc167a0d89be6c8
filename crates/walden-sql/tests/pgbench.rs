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

/// One statement of a captured pgbench session, with its parameter values.
struct Sent {
    sql: String,
    params: Vec<i64>,
}

/// The statements of a fixture in `tests/fixtures/pgbench15` (one a line; `-- params:`
/// gives the next one's values).
fn captured(name: &str) -> Vec<Sent> {
    let path = format!(
        "{}/tests/fixtures/pgbench15/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = Vec::new();
    let mut params = Vec::new();
    for line in text.lines() {
        if let Some(values) = line.strip_prefix("-- params: ") {
            params = values.split(", ").map(|v| v.parse().unwrap()).collect();
        } else if !line.starts_with("--") && !line.trim().is_empty() {
            out.push(Sent {
                sql: line.to_string(),
                params: std::mem::take(&mut params),
            });
        }
    }
    out
}

/// The numbers in a statement's text (its literals, in simple mode) or its parameters.
fn numbers(sent: &Sent) -> Vec<i64> {
    if !sent.params.is_empty() {
        return sent.params.clone();
    }
    sent.sql
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// What the statements pgbench ran should have left: each account's balance by the
/// model, and the totals the TPC-B-like invariants compare.
#[derive(Default)]
struct Bank {
    accounts: std::collections::HashMap<i64, i64>,
    /// Sum of every delta applied to accounts (tellers and branches get the same ones in
    /// tpcb-like, none in simple-update).
    total: i64,
    teller_total: i64,
}

/// Runs a captured session: COPY with the data pgbench generates (scale 1), a statement
/// with parameters as a prepared statement (their typing is the server's work; here
/// they are integers), others as pgbench sent them. Checks each SELECT abalance against
/// the model.
fn run_captured(s: &mut Session, name: &str, bank: &mut Bank) {
    for sent in captured(name) {
        let sql = sent.sql.as_str();
        let lower = sql.to_lowercase();
        let result = if lower.starts_with("copy pgbench_accounts from stdin") {
            let Ok(walden_sql::CopyStart::In(mut c)) = s.copy_start(sql.trim_end_matches(';'))
            else {
                panic!("{sql}: not a COPY FROM");
            };
            for aid in 1..=100_000i64 {
                let line = format!("{aid}\t{}\t0\t\n", (aid - 1) / 100_000 + 1);
                c.data(s, line.as_bytes()).unwrap();
            }
            c.data(s, b"\\.\n").unwrap();
            c.finish(s)
        } else if sent.params.is_empty() {
            s.execute_one(sql)
        } else {
            let p = s.prepare(sql.trim_end_matches(';')).unwrap();
            let values: Vec<walden::Value> = sent
                .params
                .iter()
                .map(|&v| walden::Value::Int4(v as i32))
                .collect();
            s.execute_prepared(&p, &values)
        };
        let r = result.unwrap_or_else(|e| panic!("{name}: {sql}: {e}"));
        let n = numbers(&sent);
        if lower.starts_with("update pgbench_accounts") {
            *bank.accounts.entry(n[1]).or_default() += n[0];
            bank.total += n[0];
            assert_eq!(r.tag, "UPDATE 1", "{sql}");
        } else if lower.starts_with("update pgbench_tellers") {
            bank.teller_total += n[0];
            assert_eq!(r.tag, "UPDATE 1", "{sql}");
        } else if lower.starts_with("select abalance") {
            let want = bank.accounts.get(&n[0]).copied().unwrap_or(0);
            assert_eq!(
                r.rows,
                vec![vec![walden::Value::Int4(want as i32)]],
                "{name}: {sql}"
            );
        } else if lower.starts_with("select o.n") {
            assert_eq!(
                r.rows,
                vec![vec![
                    walden::Value::Int4(2),
                    walden::Value::Null,
                    walden::Value::Int8(0)
                ]],
                "the partition check"
            );
        } else if lower.starts_with("select count(*) from pgbench_branches") {
            assert_eq!(r.rows, vec![vec![walden::Value::Int8(1)]]);
        } else if lower.starts_with("truncate pgbench_history") {
            // Each run starts with an empty history.
        }
    }
}

/// Every statement pgbench 15 sent PostgreSQL for `pgbench -i` (its default steps, -I
/// dtGvp, --foreign-keys) and for ten transactions of each built-in script in each
/// query mode (captured from PostgreSQL's log, `tests/fixtures/pgbench15`) runs on
/// Walden, and the bank balances: each account as the model has it, the sums of the
/// accounts, tellers, branches and history equal.
#[test]
fn the_statements_pgbench_15_sends_run() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    // The runs go on the last, with its foreign keys checked on every write.
    for init in ["init.sql", "init-server-side.sql", "init-foreign-keys.sql"] {
        run_captured(&mut s, init, &mut Bank::default());
        assert_eq!(
            q(&mut s, "select (select count(*) from pgbench_branches), (select count(*) from pgbench_tellers), (select count(*) from pgbench_accounts), (select sum(abalance) from pgbench_accounts), (select count(*) from pgbench_history)"),
            "1|10|100000|0|0",
            "{init}"
        );
    }
    assert_eq!(
        q(&mut s, "select relname from pg_class where relkind = 'i' and relname like 'pgbench%' order by 1"),
        "pgbench_accounts_pkey\npgbench_branches_pkey\npgbench_tellers_pkey"
    );
    let mut bank = Bank::default();
    for script in ["tpcb-like", "simple-update"] {
        for mode in ["simple", "extended", "prepared"] {
            let name = format!("{script}-{mode}.sql");
            let before = (bank.total, bank.teller_total);
            run_captured(&mut s, &name, &mut bank);
            let run_total = bank.total - before.0;
            assert_eq!(
                q(
                    &mut s,
                    "select count(*), coalesce(sum(delta), 0), count(mtime) from pgbench_history"
                ),
                format!("10|{run_total}|10"),
                "{name}: this run's history"
            );
            assert_eq!(
                q(&mut s, "select sum(abalance) from pgbench_accounts"),
                bank.total.to_string(),
                "{name}"
            );
            assert_eq!(
                q(&mut s, "select (select sum(tbalance) from pgbench_tellers), (select sum(bbalance) from pgbench_branches)"),
                format!("{0}|{0}", bank.teller_total),
                "{name}"
            );
        }
    }
    for (aid, balance) in &bank.accounts {
        assert_eq!(
            q(
                &mut s,
                &format!("select abalance from pgbench_accounts where aid = {aid}")
            ),
            balance.to_string()
        );
    }
}

/// VACUUM VERBOSE says, per table, what it removed and what it gave back (INFO notices,
/// as PostgreSQL's VACUUM VERBOSE reports in INFO lines); plain VACUUM says nothing.
#[test]
fn vacuum_verbose_says_what_it_gave_back() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(
        &mut s,
        "create table a(x int, t text);
         insert into a select g, repeat('x', 200) from generate_series(1, 2000) g;
         delete from a",
    );
    let r = s.execute("vacuum a").unwrap();
    assert!(r[0].notices.is_empty(), "{:?}", r[0].notices);
    q(
        &mut s,
        "insert into a select g, repeat('x', 200) from generate_series(1, 2000) g;
         delete from a where x > 0",
    );
    let r = s.execute("vacuum (verbose) a").unwrap();
    assert_eq!(r[0].notices.len(), 2, "{:?}", r[0].notices);
    assert_eq!(r[0].notices[0], "INFO:  vacuuming \"public.a\"");
    let said = &r[0].notices[1];
    assert!(
        said.starts_with("INFO:  \"public.a\": removed 2000 row versions; ")
            && said.contains(" empty pages given back, 0 left; "),
        "{said}"
    );
    let given: u64 = said
        .split("; ")
        .nth(1)
        .and_then(|p| p.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(given >= 40, "{said}");
    assert_eq!(db.table_bytes("a").unwrap(), 0);
}
