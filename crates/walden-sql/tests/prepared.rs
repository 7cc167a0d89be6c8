//! Prepared statements: the API and SQL's PREPARE / EXECUTE / DEALLOCATE. What could go
//! wrong: a value changing the statement (quotes, minus signs, NULL), a wrong parameter
//! count accepted, or a value of the wrong type stored.
#![allow(clippy::unwrap_used)]

use walden::Value;
use walden_sql::Session;

mod support;
use support::{db, q};

#[test]
fn values_stay_values() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(
        &mut s,
        "create table t (id int8 primary key, name text, f float8, u uuid, b bool)",
    );
    let ins = s
        .prepare("insert into t values ($1, $2, $3, $4, $5)")
        .unwrap();
    assert_eq!(ins.params(), 5);
    let hostile = "x'); drop table t; --";
    let uuid = [7u8; 16];
    for (i, name) in [(1i64, hostile), (-2, "it's"), (3, "")] {
        s.execute_prepared(
            &ins,
            &[
                Value::Int8(i),
                Value::Text(name.into()),
                Value::Float8(-0.5),
                Value::Uuid(uuid),
                Value::Bool(i > 0),
            ],
        )
        .unwrap();
    }
    s.execute_prepared(
        &ins,
        &[
            Value::Int8(4),
            Value::Null,
            Value::Float8(f64::NAN),
            Value::Null,
            Value::Null,
        ],
    )
    .unwrap();
    let get = s.prepare("select name, f, b from t where id = $1").unwrap();
    let r = s.execute_prepared(&get, &[Value::Int8(1)]).unwrap();
    assert_eq!(
        r.rows,
        vec![vec![
            Value::Text(hostile.into()),
            Value::Float8(-0.5),
            Value::Bool(true)
        ]]
    );
    let r = s.execute_prepared(&get, &[Value::Int8(-2)]).unwrap();
    assert_eq!(r.rows[0][0], Value::Text("it's".into()));
    let r = s.execute_prepared(&get, &[Value::Int8(4)]).unwrap();
    assert_eq!(r.rows[0][0], Value::Null);
    assert!(matches!(r.rows[0][1], Value::Float8(x) if x.is_nan()));
    // A minus sign after a minus sign is not a comment.
    let sub = s.prepare("select $1-$2").unwrap();
    let r = s
        .execute_prepared(&sub, &[Value::Int4(5), Value::Int4(-5)])
        .unwrap();
    assert_eq!(r.rows, vec![vec![Value::Int4(10)]]);
    // Wrong counts and several statements are refused.
    let e = s.execute_prepared(&get, &[]).unwrap_err();
    assert_eq!(e.code, "08P01");
    assert!(s.prepare("select 1; select 2").is_err());
    assert_eq!(q(&mut s, "select count(*) from t"), "4");
}

#[test]
fn sql_prepare_execute_deallocate() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(
        &mut s,
        "create table t (id bigserial primary key, v int);
         prepare ins (int) as insert into t (v) values ($1);
         execute ins(10); execute ins('20'); execute ins(-3);
         prepare bump as update t set v = v + 1 where id = $1;
         execute bump(2);",
    );
    assert_eq!(q(&mut s, "select v from t order by id"), "10\n21\n-3");
    assert_eq!(s.execute("execute nope(1)").unwrap_err().code, "26000");
    assert_eq!(
        s.execute("prepare ins as select 1").unwrap_err().code,
        "42P05"
    );
    assert_eq!(s.execute("execute ins('x')").unwrap_err().code, "22P02");
    q(&mut s, "deallocate ins");
    assert_eq!(s.execute("deallocate ins").unwrap_err().code, "26000");
    q(&mut s, "deallocate all");
    assert_eq!(s.execute("execute bump(1)").unwrap_err().code, "26000");
}

#[test]
fn parsed_once_errors_point_into_the_prepared_text() {
    let db = db();
    let mut s = Session::with_seed(&db, 1);
    q(&mut s, "create table t (id int8 primary key, v int4)");
    // A bad parameter number is refused when preparing.
    assert_eq!(s.prepare("select $0").unwrap_err().code, "42601");
    // An error found when running points at the prepared text.
    let bad = s.prepare("select v from t where nope = $1").unwrap();
    let e = s.execute_prepared(&bad, &[Value::Int8(1)]).unwrap_err();
    assert_eq!(e.code, "42703");
    assert_eq!(e.position, Some(23));
    // The same prepared statement runs with values of other types each time.
    let echo = s.prepare("select $1").unwrap();
    for v in [
        Value::Int2(-7),
        Value::Int8(i64::MIN),
        Value::Text("$1".into()),
        Value::Null,
    ] {
        let r = s.execute_prepared(&echo, std::slice::from_ref(&v)).unwrap();
        assert_eq!(r.rows, vec![vec![v]]);
    }
}
