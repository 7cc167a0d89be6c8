//! ORDER BY with LIMIT keeps only OFFSET + LIMIT rows (a top-N heap): what could go wrong
//! is a result that differs from the full sort's — ties in another order than the stable
//! sort's, DESC or NULLS FIRST/LAST mixed up, a later key ignored, OFFSET miscounted —
//! or a top-N that still keeps every row.
#![allow(clippy::unwrap_used)]

use walden_sql::{value, Session};

mod support;
use support::db;

fn rows(s: &mut Session, sql: &str) -> Vec<String> {
    let r = s.execute_one(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    r.rows
        .iter()
        .map(|row| row.iter().map(value::display).collect::<Vec<_>>().join("|"))
        .collect()
}

/// A table with few distinct values (many ties), NULLs, and `id` in insertion order, so
/// that the order of tied rows shows in the output.
fn fill(s: &mut Session) {
    s.execute("create table t (id int, a int, b text, c float8)")
        .unwrap();
    let mut x = 12345u64;
    let mut next = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let mut values = Vec::new();
    for id in 0..400 {
        let a = match next(6) {
            0 => "null".to_string(),
            v => v.to_string(),
        };
        let b = match next(5) {
            0 => "null".to_string(),
            v => format!("'b{v}'"),
        };
        let c = match next(4) {
            0 => "null".to_string(),
            v => format!("{}.5", v as i64 - 2),
        };
        values.push(format!("({id}, {a}, {b}, {c})"));
    }
    s.execute(&format!("insert into t values {}", values.join(", ")))
        .unwrap();
}

#[test]
fn limited_sorts_equal_the_full_sort_cut() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    fill(&mut s);
    let orders = [
        "a",
        "a desc",
        "a nulls first",
        "a desc nulls last",
        "a, b desc",
        "b desc nulls last, a nulls first",
        "c, a desc, b",
        "a + 1 desc, c desc nulls first",
        "b",
        "2 desc",
    ];
    let cuts = [
        (0u64, 0u64),
        (1, 0),
        (3, 0),
        (7, 5),
        (50, 10),
        (1, 399),
        (5, 398),
        (10, 400),
        (400, 0),
        (1000, 3),
    ];
    let mut compared = 0;
    for order in orders {
        let full = rows(
            &mut s,
            &format!("select id, a, b, c from t order by {order}"),
        );
        assert_eq!(full.len(), 400, "{order}");
        for (limit, offset) in cuts {
            let sql =
                format!("select id, a, b, c from t order by {order} limit {limit} offset {offset}");
            let expected: Vec<String> = full
                .iter()
                .skip(offset as usize)
                .take(limit as usize)
                .cloned()
                .collect();
            assert_eq!(rows(&mut s, &sql), expected, "{sql}");
            compared += 1;
        }
        // OFFSET alone is a full sort.
        let sql = format!("select id, a, b, c from t order by {order} offset 390");
        assert_eq!(rows(&mut s, &sql), full[390..].to_vec(), "{sql}");
    }
    assert_eq!(compared, orders.len() * cuts.len());
    // Ties keep the scan order: with a single key of six values, the first rows of each
    // value come in id order.
    let tied = rows(&mut s, "select a, id from t where a = 3 order by a limit 4");
    let ids: Vec<i64> = tied
        .iter()
        .map(|r| r.split('|').nth(1).unwrap().parse().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
}

#[test]
fn grouped_limited_sorts_equal_the_full_sort_cut() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    fill(&mut s);
    for (order, limit, offset) in [
        ("count(*) desc", 3, 0),
        ("count(*), a", 2, 1),
        ("a desc nulls last", 4, 2),
        ("sum(id) desc", 1, 0),
    ] {
        let base = format!("select a, count(*), sum(id) from t group by a order by {order}");
        let full = rows(&mut s, &base);
        let sql = format!("{base} limit {limit} offset {offset}");
        let expected: Vec<String> = full.iter().skip(offset).take(limit).cloned().collect();
        assert_eq!(rows(&mut s, &sql), expected, "{sql}");
    }
}

#[test]
fn a_limited_sort_keeps_only_its_rows() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    // 64kB holds about a thousand kept rows: a million would not fit.
    s.execute("set statement_mem = 64").unwrap();
    assert_eq!(
        rows(
            &mut s,
            "select g from generate_series(1, 1000000) g order by g desc limit 3"
        ),
        ["1000000", "999999", "999998"]
    );
    assert_eq!(
        rows(
            &mut s,
            "select g, g % 3 from generate_series(1, 1000000) g order by g % 3, g desc limit 2 offset 1"
        ),
        ["999996|0", "999993|0"]
    );
    let e = s
        .execute("select g from generate_series(1, 1000000) g order by g desc")
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "53200",
            "out of memory: query needs more than statement_mem (64kB)"
        )
    );
    // A LIMIT as large as the input keeps everything and is held to the budget too.
    let e = s
        .execute("select g from generate_series(1, 1000000) g order by g desc limit 1000000")
        .unwrap_err();
    assert_eq!(e.code, "53200");
}

/// ORDER BY … LIMIT over a join whose sort keys are one table's columns is pushed down
/// to that table's read (`Top-N Filter`), which drops rows that sort after the last row
/// kept. What could go wrong: a row dropped that belonged in the result (ties, NULLs,
/// DESC, OFFSET), a dropped row of an outer join's NULL-filled side making a
/// NULL-extended row appear, or a bound left by one run of a correlated subquery
/// cutting the next run's rows. Each query is compared with the same query whose sort
/// keys are expressions (`a + 0`), which are not pushed down.
#[test]
fn a_top_n_pushed_into_a_join_keeps_the_same_rows() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    fill(&mut s);
    s.execute("create table u (k int, label text)").unwrap();
    s.execute(
        "insert into u select g % 7, 'u' || g from generate_series(0, 20) g where g % 5 <> 0",
    )
    .unwrap();
    let orders = [
        ("t.a desc", "t.a + 0 desc"),
        ("t.a", "t.a + 0"),
        (
            "t.a nulls first, t.id desc",
            "t.a + 0 nulls first, t.id + 0 desc",
        ),
        (
            "t.a desc nulls last, t.c",
            "t.a + 0 desc nulls last, t.c + 0",
        ),
        ("t.c desc, t.id", "t.c + 0 desc, t.id + 0"),
        ("t.b, t.a", "t.b || '', t.a + 0"),
    ];
    let joins = [
        "t join u on u.k = t.id % 7",
        "u join t on u.k = t.id % 7",
        "t join u on u.k = t.a",
        "t left join u on u.k = t.id % 9",
        "t, u where u.k = t.id % 7 and t.id > 20",
    ];
    let mut pushed = 0;
    for join in joins {
        for (order, plain) in orders {
            for (limit, offset) in [(1, 0), (5, 0), (10, 3), (40, 0), (3, 200)] {
                let sql = format!(
                    "select t.id, t.a, t.b, t.c, u.label from {join} order by {order} \
                     limit {limit} offset {offset}"
                );
                let reference = format!(
                    "select t.id, t.a, t.b, t.c, u.label from {join} order by {plain} \
                     limit {limit} offset {offset}"
                );
                assert_eq!(rows(&mut s, &sql), rows(&mut s, &reference), "{sql}");
                let plan = rows(&mut s, &format!("explain (costs off) {sql}")).join("\n");
                assert!(
                    !plan.contains("Top-N Filter") || !plain.contains("u."),
                    "{plan}"
                );
                pushed += plan.contains("Top-N Filter") as usize;
            }
        }
    }
    assert_eq!(
        pushed,
        joins.len() * orders.len() * 5,
        "every query was pushed down"
    );
    // The NULL-filled side of a LEFT JOIN is not pushed down to: dropping one of its
    // rows would leave a left row unmatched and make a NULL-extended row appear.
    let sql = "select t.id, u.k, u.label from t left join u on u.k = t.id % 9 \
               order by u.k desc, u.label limit 5";
    let plan = rows(&mut s, &format!("explain (costs off) {sql}")).join("\n");
    assert!(!plan.contains("Top-N Filter"), "{plan}");
    assert_eq!(
        rows(&mut s, sql),
        rows(
            &mut s,
            "select t.id, u.k, u.label from t left join u on u.k = t.id % 9 \
             order by u.k + 0 desc, u.label || '' limit 5"
        )
    );
    // A correlated subquery runs its top-N again for each outer row: a bound from one
    // run must not cut the next.
    let sql = "select u.k, (select max(x.id) from (select t.id from t join u v on v.k = t.id % 7 \
               where t.a = u.k order by t.id limit 3) x) from u order by 1, 2";
    let reference =
        "select u.k, (select max(x.id) from (select t.id from t join u v on v.k = t.id % 7 \
               where t.a = u.k order by t.id + 0 limit 3) x) from u order by 1, 2";
    assert_eq!(rows(&mut s, sql), rows(&mut s, reference));
    // EXPLAIN names the keys.
    let plan = rows(
        &mut s,
        "explain (costs off) select t.id, u.label from t join u on u.k = t.id % 7 \
         order by t.a desc nulls last, t.id limit 3",
    );
    assert!(
        plan.iter()
            .any(|l| l.trim() == "Top-N Filter: t.a DESC NULLS LAST, t.id"),
        "{plan:?}"
    );
}
