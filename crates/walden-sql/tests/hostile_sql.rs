//! Hostile SQL through the public Session API: what could go wrong is a deep or huge
//! statement aborting the process (a stack overflow in parsing, binding, evaluating or
//! dropping a tree) instead of an error, or an error message repeating a huge value.
//! Tests run on the test harness's 2 MiB threads: nothing here may depend on a big stack.
#![allow(clippy::unwrap_used)]

use walden_sql::{Session, SqlError};

mod support;
use support::{db, q, short};

fn err(s: &mut Session, sql: &str) -> SqlError {
    match s.execute(sql) {
        Ok(_) => panic!("{} succeeded", short(sql)),
        Err(e) => e,
    }
}

/// `first op first op …`, `n` terms.
fn chain(term: &str, op: &str, n: usize) -> String {
    vec![term; n].join(op)
}

fn nested(inner: &str, n: usize) -> String {
    format!("{}{inner}{}", "(".repeat(n), ")".repeat(n))
}

fn assert_too_complex(s: &mut Session, sql: &str) {
    let e = err(s, sql);
    assert_eq!(
        (e.code, e.message.as_str()),
        ("54001", "statement is too complex"),
        "{}",
        short(sql)
    );
}

#[test]
fn long_operator_chains_work() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let sql = format!("select {}", chain("1", "+", 10_000));
    assert_eq!(q(&mut s, &sql), "10000");
    let sql = format!("select {}", chain("true", " and ", 20_000));
    assert_eq!(q(&mut s, &sql), "t");
    let sql = format!("select length({})", chain("'x'", "||", 20_000));
    assert_eq!(q(&mut s, &sql), "20000");
    let sql = format!("select 7{}", "::int".repeat(10_000));
    assert_eq!(q(&mut s, &sql), "7");
    let sql = format!("select {}", nested("1", 1_000));
    assert_eq!(q(&mut s, &sql), "1");
    let sql = format!("select {}1", "- ".repeat(1_001));
    assert_eq!(q(&mut s, &sql), "-1");
    let sql = format!("select {}true", "not ".repeat(1_001));
    assert_eq!(q(&mut s, &sql), "f");
}

#[test]
fn long_chains_over_columns_work_in_every_clause() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int, b int)").unwrap();
    let sum = chain("1", "+", 10_000);
    s.execute(&format!("insert into t values ({sum}, 0), (2, 0)"))
        .unwrap();
    let ors = (0..4_000)
        .map(|i| format!("a = {}", i * 5))
        .collect::<Vec<_>>()
        .join(" or ");
    assert_eq!(
        q(&mut s, &format!("select a from t where {ors} order by a")),
        "10000"
    );
    let plus_a = format!("a{}", "+1".repeat(10_000));
    assert_eq!(
        q(&mut s, &format!("select {plus_a} from t order by a")),
        "10002\n20000"
    );
    s.execute(&format!("update t set b = b{}", "+1".repeat(10_000)))
        .unwrap();
    assert_eq!(
        q(&mut s, "select a, b from t order by a"),
        "2|10000\n10000|10000"
    );
    assert_eq!(
        q(
            &mut s,
            &format!(
                "select b, count(*) from t group by b having count(*){} > 1",
                "+0".repeat(5_000)
            )
        ),
        "10000|2"
    );
    assert_eq!(
        q(
            &mut s,
            &format!("select {plus_a} from t group by a order by 1")
        ),
        "10002\n20000"
    );
}

#[test]
fn absurd_depth_is_refused_in_every_clause() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("create table t (a int, b int)").unwrap();
    s.execute("insert into t values (1, 2)").unwrap();
    // 300,000 terms: within the token budget, far past the depth bound.
    let million = chain("1", "+", 300_000);
    assert_too_complex(&mut s, &format!("select {million}"));
    // A million terms (two million tokens) is refused before it is tokenized.
    let e = err(&mut s, &format!("select {}", chain("1", "+", 1_000_000)));
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            "54001",
            "statement too long to parse: more than 1000000 tokens"
        )
    );
    assert_too_complex(&mut s, &format!("select a from t where a = {million}"));
    assert_too_complex(&mut s, &format!("insert into t values ({million}, 1)"));
    assert_too_complex(&mut s, &format!("update t set b = {million}"));
    assert_too_complex(&mut s, &format!("select {}", nested("1", 100_000)));
    assert_too_complex(
        &mut s,
        &format!("select {}", chain("true", " or ", 100_000)),
    );
    // Depth adds up across nested parentheses (each level alone would pass), but not
    // across siblings.
    let mut deep = "1".to_string();
    for _ in 0..4 {
        deep = format!("{}+({deep})", chain("1", "+", 15_000));
    }
    assert_too_complex(&mut s, &format!("select {deep}"));
    let wide = nested(&chain("1", "+", 15_000), 1);
    assert_eq!(
        q(&mut s, &format!("select {}", chain(&wide, "+", 4))),
        "60000"
    );
    // Nothing was changed, and the session goes on.
    assert_eq!(q(&mut s, "select a, b from t"), "1|2");
}

#[test]
fn deep_statements_that_fail_still_clean_up() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let sum = chain("1", "+", 10_000);
    // A syntax error after a long chain: the parser drops what it built.
    let e = err(&mut s, &format!("select {sum} +"));
    assert_eq!(
        (e.code, e.message.as_str()),
        ("42601", "syntax error at end of input")
    );
    // An unsupported construct around a long chain: never bound, only dropped.
    let e = err(
        &mut s,
        &format!("select 'x' like any (array[({sum})::text])"),
    );
    assert_eq!(e.code, "0A000", "{}", e.message);
    // A type error at the top of a long chain.
    let e = err(&mut s, &format!("select {sum} + true"));
    assert_eq!(
        (e.code, e.message.as_str()),
        ("42883", "operator does not exist: integer + boolean")
    );
    // A script stopped by an error drops the deep statements after it.
    let e = err(&mut s, &format!("select 1/0; select {sum}; select {sum}"));
    assert_eq!(e.code, "22012");
    assert_eq!(q(&mut s, "select 1"), "1");
}

#[test]
fn huge_values_are_clipped_in_error_messages() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    let huge = "x".repeat(10_000_000);
    let clipped = format!("{}...", "x".repeat(40));
    let zeros = "0".repeat(39);
    let cases = [
        (
            format!("select '{huge}'::int"),
            "22P02",
            format!("invalid input syntax for type integer: \"{clipped}\""),
        ),
        (
            format!("select '{huge}'::float8"),
            "22P02",
            format!("invalid input syntax for type double precision: \"{clipped}\""),
        ),
        (
            format!("select '1{}'::int8", "0".repeat(1_000_000)),
            "22003",
            format!("value \"1{zeros}...\" is out of range for type bigint"),
        ),
        (
            format!("select 1{}::float8", "0".repeat(1_000)),
            "22003",
            format!("\"1{zeros}...\" is out of range for type double precision"),
        ),
        (
            format!("create table u (a int) using '{huge}'"),
            "42601",
            format!("syntax error at or near \"'{}...\"", "x".repeat(39)),
        ),
        (
            format!("set synchronous_commit = '{huge}'"),
            "22023",
            format!("invalid value for parameter \"synchronous_commit\": \"{clipped}\""),
        ),
    ];
    for (sql, code, message) in &cases {
        let e = err(&mut s, sql);
        assert_eq!((e.code, &e.message), (*code, message), "{}", short(sql));
    }
    // A text longer than a page is stored (out of line); an error about a row holding
    // one quotes it clipped.
    s.execute("create table w (a text, b int not null)")
        .unwrap();
    s.execute(&format!("insert into w values ('{huge}', 1)"))
        .unwrap();
    let e = err(&mut s, &format!("insert into w values ('{huge}', null)"));
    assert_eq!(e.code, "23502");
    let quoted = e.message.len() + e.detail.as_deref().map_or(0, str::len);
    assert!(quoted < 1000, "{quoted} bytes of message");
    s.execute("delete from w").unwrap();
    // Details quote values clipped too: the failing row, the duplicate key.
    let long = "y".repeat(2_000);
    let long_clipped = format!("{}...", "y".repeat(40));
    let e = err(&mut s, &format!("insert into w values ('{long}', null)"));
    assert_eq!(
        (e.code, e.detail.as_deref()),
        (
            "23502",
            Some(format!("Failing row contains ({long_clipped}, null).").as_str())
        )
    );
    s.execute("create table k (a text primary key)").unwrap();
    let e = err(
        &mut s,
        &format!("insert into k values ('{long}'), ('{long}')"),
    );
    assert_eq!(
        (e.code, e.detail.as_deref()),
        (
            "23505",
            Some(format!("Key (a)=({long_clipped}) already exists.").as_str())
        )
    );
    assert_eq!(q(&mut s, "select count(*) from w"), "0");
}

/// A value a statement builds counts against `statement_mem`: past what the statement
/// may still take, `repeat`, `lpad`, `||` and bytea's `||` refuse to make it (53200)
/// instead of taking the memory; within it they work, in a query and in an INSERT.
#[test]
fn built_values_count_against_statement_mem() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    s.execute("set statement_mem = '64MB'; create table big (v text)")
        .unwrap();
    for sql in [
        "select length(repeat('x', 100000000))",
        "select length(lpad('x', 70000000, 'y'))",
        "select length(repeat('x', 40000000) || repeat('y', 40000000))",
        "select length(decode(repeat('00', 40000000), 'hex') || decode(repeat('00', 40000000), 'hex'))",
        "insert into big values (repeat('x', 100000000))",
        "select length(repeat(v, 100)) from (values ('0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789')) t(v) cross join generate_series(1, 1) where length(repeat(v, 1000000)) > 0",
    ] {
        let e = err(&mut s, sql);
        assert_eq!(e.code, "53200", "{}: {}", short(sql), e.message);
    }
    assert_eq!(
        q(&mut s, "select length(repeat('x', 10000000))"),
        "10000000"
    );
    s.execute("insert into big values (repeat('x', 10000000))")
        .unwrap();
    assert_eq!(q(&mut s, "select length(v) from big"), "10000000");
    // The budget is the statement's: the next one starts afresh.
    s.execute("set statement_mem = '1GB'").unwrap();
    assert_eq!(
        q(&mut s, "select length(repeat('x', 100000000))"),
        "100000000"
    );
}
