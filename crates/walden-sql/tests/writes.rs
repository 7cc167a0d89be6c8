//! Writes beyond the basic three — column defaults and DEFAULT, INSERT … ON CONFLICT DO
//! NOTHING / DO UPDATE (with WHERE, excluded, ON CONSTRAINT, RETURNING), UPDATE … FROM
//! and DELETE … USING — on both table kinds, each statement's rows against what
//! PostgreSQL 15 returned for the same statements in the same order (`psql -A -t`, NULL
//! as an empty field); PostgreSQL's errors; and ON CONFLICT under concurrent sessions.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use support::{db, q, session_of};
use walden::TableKind;

/// (statement, PostgreSQL's rows), run in order on one session.
const STEPS: &[(&str, &str)] = &[
    (
        r#"create table kv (k int primary key, v text default 'none', n int not null default 0, at float8 default 1.5 * 2)"#,
        r#""#,
    ),
    (
        r#"create table pair (a int, b int, c text, unique (a, b))"#,
        r#""#,
    ),
    (
        r#"create table acct (id int primary key, owner text, bal int)"#,
        r#""#,
    ),
    (r#"create table tx (acct_id int, amt int)"#, r#""#),
    (r#"create table closed (id int)"#, r#""#),
    (
        r#"insert into kv values (1, 'a'), (2, 'b') returning *"#,
        r#"1|a|0|3
2|b|0|3"#,
    ),
    (
        r#"insert into kv (k) values (3) returning k, v, n, at"#,
        r#"3|none|0|3"#,
    ),
    (
        r#"insert into kv values (4, default, 7, default) returning *"#,
        r#"4|none|7|3"#,
    ),
    (
        r#"insert into kv values (1, 'x'), (5, 'c') on conflict do nothing returning k, v"#,
        r#"5|c"#,
    ),
    (
        r#"insert into kv values (2, 'y'), (6, 'd') on conflict (k) do update set v = excluded.v, n = kv.n + 1 returning k, v, n"#,
        r#"2|y|1
6|d|0"#,
    ),
    (
        r#"insert into kv values (2, 'z') on conflict (k) do update set v = excluded.v where kv.n > 5 returning k"#,
        r#""#,
    ),
    (
        r#"insert into kv values (7, 'e'), (7, 'f') on conflict (k) do nothing returning k, v"#,
        r#"7|e"#,
    ),
    (
        r#"insert into kv as t values (1, 'q') on conflict on constraint kv_pkey do update set v = t.v || excluded.v, n = t.n + 10 returning k, v, n"#,
        r#"1|aq|10"#,
    ),
    (
        r#"insert into kv select g, 'g' || g from generate_series(1, 8) g on conflict (k) do update set n = kv.n + 100 returning k, v, n"#,
        r#"1|aq|110
2|y|101
3|none|100
4|none|107
5|c|100
6|d|100
7|e|100
8|g8|0"#,
    ),
    (
        r#"insert into kv values (9, 'h') on conflict (k) do update set v = default returning k, v"#,
        r#"9|h"#,
    ),
    (
        r#"insert into kv values (9, 'i') on conflict (k) do update set v = default returning k, v"#,
        r#"9|none"#,
    ),
    (
        r#"insert into pair values (1, 1, 'x'), (1, 2, 'y'), (null, 1, 'n')"#,
        r#""#,
    ),
    (
        r#"insert into pair values (1, 1, 'xx'), (null, 1, 'nn') on conflict (b, a) do update set c = pair.c || excluded.c returning *"#,
        r#"1|1|xxx
|1|nn"#,
    ),
    (
        r#"select * from kv order by k"#,
        r#"1|aq|110|3
2|y|101|3
3|none|100|3
4|none|107|3
5|c|100|3
6|d|100|3
7|e|100|3
8|g8|0|3
9|none|0|3"#,
    ),
    (
        r#"select * from pair order by a, b, c"#,
        r#"1|1|xxx
1|2|y
|1|n
|1|nn"#,
    ),
    (
        r#"insert into acct values (1, 'a', 100), (2, 'b', 200), (3, 'c', 300), (4, 'd', 400)"#,
        r#""#,
    ),
    (
        r#"insert into tx values (1, 10), (1, 5), (2, -20), (9, 1)"#,
        r#""#,
    ),
    (r#"insert into closed values (4), (4)"#, r#""#),
    (
        r#"update acct set bal = bal + s.total from (select acct_id, sum(amt) as total from tx group by acct_id) s where s.acct_id = acct.id returning id, bal"#,
        r#"1|115
2|180"#,
    ),
    (
        r#"update acct a set owner = upper(c.owner) from acct c where c.id = a.id + 1 returning a.id, a.owner, c.id"#,
        r#"3|D|4
1|B|2
2|C|3"#,
    ),
    (
        r#"select * from acct order by id"#,
        r#"1|B|115
2|C|180
3|D|300
4|d|400"#,
    ),
    (
        r#"delete from acct using closed where closed.id = acct.id returning *"#,
        r#"4|d|400|4"#,
    ),
    (
        r#"delete from tx using acct where tx.acct_id = acct.id and acct.bal > 150 returning tx.*"#,
        r#"2|-20"#,
    ),
    (
        r#"select * from tx order by acct_id, amt"#,
        r#"1|5
1|10
9|1"#,
    ),
    (
        r#"update acct set bal = tx.amt from tx where tx.acct_id = acct.id and acct.id = 1 and tx.amt = 5"#,
        r#""#,
    ),
    (
        r#"update acct set bal = bal * 2 from tx, closed where tx.acct_id = acct.id"#,
        r#""#,
    ),
    (
        r#"select * from acct order by id"#,
        r#"1|B|10
2|C|180
3|D|300"#,
    ),
    (
        r#"update kv set n = default, v = default where k < 3 returning *"#,
        r#"1|none|0|3
2|none|0|3"#,
    ),
];

/// After STEPS: (statement, PostgreSQL's SQLSTATE and message); none changes anything.
const ERRORS: &[(&str, &str, &str)] = &[
    (
        r#"insert into kv values (6, 'e'), (6, 'f') on conflict (k) do update set v = excluded.v"#,
        "21000",
        r#"ON CONFLICT DO UPDATE command cannot affect row a second time"#,
    ),
    (
        r#"insert into kv values (1, 'q') on conflict (v) do nothing"#,
        "42P10",
        r#"there is no unique or exclusion constraint matching the ON CONFLICT specification"#,
    ),
    (
        r#"insert into kv values (1, 'q') on conflict (zz) do nothing"#,
        "42703",
        r#"column "zz" does not exist"#,
    ),
    (
        r#"insert into kv values (1, 'q') on conflict do update set v = 'r'"#,
        "42601",
        r#"ON CONFLICT DO UPDATE requires inference specification or constraint name"#,
    ),
    (
        r#"insert into kv values (1, 'q') on conflict on constraint nope do nothing"#,
        "42704",
        r#"constraint "nope" for table "kv" does not exist"#,
    ),
    (
        r#"insert into kv values (1, 'q') on conflict (k) do update set n = n + 1"#,
        "42702",
        r#"column reference "n" is ambiguous"#,
    ),
    (
        r#"insert into kv values (1, 'q') on conflict (k) do update set n = null"#,
        "23502",
        r#"null value in column "n" of relation "kv" violates not-null constraint"#,
    ),
    (
        r#"create table bad (a int default b)"#,
        "0A000",
        r#"cannot use column reference in DEFAULT expression"#,
    ),
    (
        r#"create table bad (a int default 'x')"#,
        "22P02",
        r#"invalid input syntax for type integer: "x""#,
    ),
    (
        r#"create table bad (a serial default 1)"#,
        "42601",
        r#"multiple default values specified for column "a" of table "bad""#,
    ),
    (
        r#"update acct set bal = 1 from acct"#,
        "42712",
        r#"table name "acct" specified more than once"#,
    ),
    (
        r#"update acct set bal = nope from tx"#,
        "42703",
        r#"column "nope" does not exist"#,
    ),
    (
        r#"insert into kv default values"#,
        "23502",
        r#"null value in column "k" of relation "kv" violates not-null constraint"#,
    ),
];

fn sorted(rows: &str) -> Vec<&str> {
    let mut v: Vec<&str> = rows.lines().collect();
    v.sort_unstable();
    v
}

#[test]
fn writes_give_postgres_rows_on_both_table_kinds() {
    for kind in [TableKind::Heap, TableKind::Undo] {
        let db = db();
        let mut s = session_of(&db, kind, 7);
        for (sql, want) in STEPS {
            let got = q(&mut s, sql);
            if sql.starts_with("select") {
                assert_eq!(got, *want, "{kind:?}: {sql}");
            } else {
                // RETURNING rows come in no defined order.
                assert_eq!(sorted(&got), sorted(want), "{kind:?}: {sql}");
            }
        }
        let before = q(&mut s, "select * from kv order by k");
        for (sql, code, message) in ERRORS {
            let e = s.execute(sql).unwrap_err();
            assert_eq!(
                (e.code, e.message.as_str()),
                (*code, *message),
                "{kind:?}: {sql}"
            );
        }
        assert_eq!(q(&mut s, "select * from kv order by k"), before);
        // Defaults outlive the session (they are in the catalog).
        drop(s);
        let mut s = session_of(&db, kind, 8);
        assert_eq!(
            q(&mut s, "insert into kv (k) values (100) returning *"),
            "100|none|0|3"
        );
    }
}

/// Eight sessions upsert into the same ten keys at once, each statement in its own
/// transaction and some in blocks of several: every key ends up once, and its counter
/// equals the upserts that committed for it. Under REPEATABLE READ a serialization
/// failure (a key another transaction inserted unseen, or a row it changed) is retried,
/// as an application would; under READ COMMITTED there is none (a deadlock is retried).
#[test]
fn concurrent_upserts_neither_duplicate_nor_lose() {
    let levels = ["read committed", "repeatable read"];
    for (kind, level) in [TableKind::Heap, TableKind::Undo]
        .into_iter()
        .flat_map(|k| levels.map(|l| (k, l)))
    {
        let db = db();
        let mut s = session_of(&db, kind, 1);
        s.execute("create table counter (k int primary key, n int not null); create table seen (k int primary key)")
            .unwrap();
        let committed = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..8)
            .map(|w| {
                let db = db.clone();
                let committed = committed.clone();
                std::thread::spawn(move || {
                    let mut s = session_of(&db, kind, 100 + w);
                    s.execute(&format!("set default_transaction_isolation = '{level}'"))
                        .unwrap();
                    let mut retries = 0;
                    for i in 0..60u64 {
                        let k = (i * 7 + w * 3) % 10;
                        let sql = if i % 5 == 0 {
                            format!(
                                "begin; insert into counter values ({k}, 1) on conflict (k) do update set n = counter.n + 1; \
                                 insert into seen values ({k}) on conflict do nothing; commit"
                            )
                        } else {
                            format!(
                                "insert into counter values ({k}, 1) on conflict (k) do update set n = counter.n + 1"
                            )
                        };
                        loop {
                            match s.execute(&sql) {
                                Ok(_) => break,
                                Err(e)
                                    if e.code == "40P01"
                                        || (e.code == "40001" && level == "repeatable read") =>
                                {
                                    retries += 1;
                                    let _ = s.execute("rollback");
                                }
                                Err(e) => panic!("{sql}: {e}"),
                            }
                        }
                        committed.fetch_add(1, Ordering::Relaxed);
                    }
                    retries
                })
            })
            .collect();
        let retries: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        eprintln!("{kind:?}, {level}: {retries} failures retried");
        let total = committed.load(Ordering::Relaxed);
        assert_eq!(total, 480);
        assert_eq!(
            q(
                &mut s,
                "select count(*), count(distinct k), sum(n) from counter"
            ),
            format!("10|10|{total}"),
            "{kind:?}, {level}"
        );
        assert_eq!(q(&mut s, "select count(*) from seen"), "10", "{kind:?}");
    }
}

/// INSERT … SELECT converts each value to its column as PostgreSQL's assignment casts
/// do, whether the value's type is the column's (taken as it is) or not: a bpchar loses
/// its blanks in text, lengths and precisions apply, integers narrow with a check.
#[test]
fn insert_select_converts_values_as_postgres() {
    support::check_on_both(
        "walden_insert_select_converts",
        &[
            ("create table src (c char(5), v varchar(10), n numeric, i int, t text)", ""),
            ("insert into src values ('ab', 'abcdefgh', 12.345, 7, 'hello world')", ""),
            ("create table dst (t text, v3 varchar(3), c4 char(4), n52 numeric(5,2), big bigint, small smallint, n numeric)", ""),
            ("insert into dst (t) select c from src", ""),
            ("insert into dst (v3) select v from src", "ERROR 22001: value too long for type character varying(3)"),
            ("insert into dst (v3) select t from src", "ERROR 22001: value too long for type character varying(3)"),
            ("insert into dst (c4) select t from src", "ERROR 22001: value too long for type character(4)"),
            ("insert into dst (c4, v3) select i::text, c from src", ""),
            ("insert into dst (n52, n) select n, n from src", ""),
            ("insert into dst (n52) select n * 10000 from src", "ERROR 22003: numeric field overflow"),
            ("insert into dst (big, small, t) select i, i, i from src", ""),
            ("insert into dst (small) select i * 100000 from src", "ERROR 22003: smallint out of range"),
            ("insert into dst select t, null, null, null, null, null, null from src", ""),
            (
                "select t, length(t), v3, c4 = '7', octet_length(c4), n52, big, small, n from dst order by t, n52",
                "7|1|||||7|7|\nab|2|||||||\nhello world|11|||||||\n|||||12.35|||12.345\n||ab|t|4||||",
            ),
        ],
    );
}

/// An UPDATE or DELETE reads of each row only the columns its WHERE clause names until
/// the row passes; rows that pass are read whole when the statement needs them (SET,
/// RETURNING), so what it writes and returns is as if every row were read whole.
#[test]
fn modify_reads_what_it_needs_and_changes_whole_rows() {
    support::check_on_both(
        "walden_modify_reads_what_it_needs",
        &[
            ("create table m (a int, b text, c int, d text)", ""),
            ("insert into m select g, 'b' || g, g * 10, repeat('d', 3000 + g) from generate_series(1, 40) g", ""),
            ("update m set c = c + 1 where a % 10 = 3 returning a, b, c, length(d)", "3|b3|31|3003\n13|b13|131|3013\n23|b23|231|3023\n33|b33|331|3033"),
            ("update m set b = b || '!' where c > 395", "",),
            ("delete from m where b like '%!' returning a, b, c, length(d)", "40|b40!|400|3040"),
            ("delete from m where a > 35 and c < 390 returning a, b, c, length(d)", "36|b36|360|3036\n37|b37|370|3037\n38|b38|380|3038"),
            ("delete from m where a between 36 and 39 returning a", "39"),
            ("delete from m where a % 10 = 5", ""),
            ("select count(*), sum(a), sum(c), sum(length(b)), sum(length(d)) from m", "31|550|5504|85|93550"),
            ("delete from m", ""),
            ("select count(*) from m", "0"),
        ],
    );
}

/// EXPLAIN of UPDATE … FROM and DELETE … USING shows the join that finds the rows, under
/// `Update on t` / `Delete on t` as PostgreSQL lays it out (its WHERE names the other
/// relations, which a plan of the target table alone does not know).
#[test]
fn explain_shows_the_join_of_update_from_and_delete_using() {
    let db = db();
    let mut s = walden_sql::Session::with_seed(&db, 1);
    q(
        &mut s,
        "create table t (a int, b int); create table u (a int primary key, c int);
         insert into t values (1, 1), (2, 2); insert into u values (1, 10);",
    );
    assert_eq!(
        q(
            &mut s,
            "explain (costs off) delete from t using u where t.a = u.a"
        ),
        "Delete on t\n  ->  Hash Join\n        Hash Cond: (t.a = u.a)\n        ->  Seq Scan on t\n        ->  Hash\n              ->  Seq Scan on u"
    );
    assert_eq!(
        q(
            &mut s,
            "explain (costs off) update t set b = u.c from u where t.a = u.a and u.c > 0 and t.b + u.c > 1"
        ),
        "Update on t\n  ->  Hash Join\n        Hash Cond: (t.a = u.a)\n        Join Filter: (t.b + u.c > 1)\n        ->  Seq Scan on t\n        ->  Hash\n              ->  Seq Scan on u\n                    Filter: (u.c > 0)"
    );
    // EXPLAIN changes nothing; the statements then do.
    assert_eq!(q(&mut s, "select count(*) from t"), "2");
    assert_eq!(q(&mut s, "delete from t using u where t.a = u.a"), "");
    assert_eq!(q(&mut s, "select count(*) from t"), "1");
}
