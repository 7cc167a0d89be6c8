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

/// A prepared query keeps its plan: the results are those of the query with its values
/// written in, for point, range and IN conditions through an index; the plan is made
/// again when the catalog changes (a table dropped and made again with its columns
/// elsewhere, an index added) or the values' types do; a query that cannot bind with
/// parameters (LIMIT $1, a text value compared with a uuid) runs with its values
/// written in; a NULL value and a value that makes an error behave as written in.
#[test]
fn cached_plans_follow_the_catalog_and_the_values() {
    let db = db();
    let mut s = Session::with_seed(&db, 3);
    q(
        &mut s,
        "create table t (id int8 primary key, v int4, name text, u uuid)",
    );
    q(
        &mut s,
        "insert into t select g, g * 3, 'n' || g, gen_random_uuid() from generate_series(1, 300) g",
    );
    let rows = |s: &mut Session, sql: &str| -> Vec<Vec<Value>> {
        s.execute(sql).unwrap().pop().unwrap().rows
    };
    let get = s.prepare("select v, name from t where id = $1").unwrap();
    for id in [1i64, 17, 150, 300, 301, -4] {
        let r = s.execute_prepared(&get, &[Value::Int8(id)]).unwrap();
        let want = rows(&mut s, &format!("select v, name from t where id = {id}"));
        assert_eq!(r.rows, want, "id {id}");
    }
    assert!(get.has_cached_plan());
    let range = s
        .prepare("select id from t where id between $1 and $2 order by id desc limit 3")
        .unwrap();
    let within = s
        .prepare("select id, v + $2 from t where id in ($1, $3, $1 + 1) order by id")
        .unwrap();
    for (a, b) in [(10i64, 20i64), (295, 400), (50, 40), (-5, 2)] {
        let r = s
            .execute_prepared(&range, &[Value::Int8(a), Value::Int8(b)])
            .unwrap();
        let want = rows(
            &mut s,
            &format!("select id from t where id between {a} and {b} order by id desc limit 3"),
        );
        assert_eq!(r.rows, want, "{a}..{b}");
        let r = s
            .execute_prepared(&within, &[Value::Int8(a), Value::Int4(7), Value::Int8(b)])
            .unwrap();
        let want = rows(
            &mut s,
            &format!("select id, v + 7 from t where id in ({a}, {b}, {a} + 1) order by id"),
        );
        assert_eq!(r.rows, want, "in {a}, {b}");
    }
    assert!(range.has_cached_plan() && within.has_cached_plan());
    // Values of another type: a text compared with int8 is written in (as a literal it
    // takes the column's type); an int4 gets a plan of its own.
    let r = s
        .execute_prepared(&get, &[Value::Text("17".into())])
        .unwrap();
    assert_eq!(r.rows, rows(&mut s, "select v, name from t where id = 17"));
    assert!(!get.has_cached_plan());
    let r = s.execute_prepared(&get, &[Value::Int4(18)]).unwrap();
    assert_eq!(r.rows, rows(&mut s, "select v, name from t where id = 18"));
    assert!(get.has_cached_plan());
    // NULL matches nothing; 1/0 fails as written in.
    let r = s.execute_prepared(&get, &[Value::Null]).unwrap();
    assert!(r.rows.is_empty());
    let div = s.prepare("select 1 / $1").unwrap();
    let e = s.execute_prepared(&div, &[Value::Int4(0)]).unwrap_err();
    assert_eq!(e.code, "22012");
    // Not bindable with parameters: written in each time.
    let top = s.prepare("select id from t order by id limit $1").unwrap();
    let r = s.execute_prepared(&top, &[Value::Int8(2)]).unwrap();
    assert_eq!(r.rows, vec![vec![Value::Int8(1)], vec![Value::Int8(2)]]);
    assert!(!top.has_cached_plan());
    let by_uuid = s.prepare("select id from t where u = $1").unwrap();
    let u = rows(&mut s, "select u::text from t where id = 5");
    let r = s.execute_prepared(&by_uuid, &[u[0][0].clone()]).unwrap();
    assert_eq!(r.rows, vec![vec![Value::Int8(5)]]);
    // The table made again with its columns elsewhere: the plan follows.
    q(&mut s, "drop table t");
    q(
        &mut s,
        "create table t (name text, id int8 primary key, v int4)",
    );
    q(&mut s, "insert into t values ('a', 1, 10), ('b', 2, 20)");
    // (An int4 value, as the plan last made was for.)
    let r = s.execute_prepared(&get, &[Value::Int4(2)]).unwrap();
    assert_eq!(r.rows, vec![vec![Value::Int4(20), Value::Text("b".into())]]);
    // An index added: the same answers through it.
    let named = s.prepare("select id from t where name = $1").unwrap();
    let r = s
        .execute_prepared(&named, &[Value::Text("a".into())])
        .unwrap();
    assert_eq!(r.rows, vec![vec![Value::Int8(1)]]);
    q(&mut s, "create index t_name on t (name)");
    q(&mut s, "insert into t values ('a', 3, 30)");
    let r = s
        .execute_prepared(&named, &[Value::Text("a".into())])
        .unwrap();
    let mut ids = r.rows;
    ids.sort_by_key(|r| format!("{:?}", r));
    assert_eq!(ids, vec![vec![Value::Int8(1)], vec![Value::Int8(3)]]);
    // Dropped: the error PostgreSQL gives.
    q(&mut s, "drop table t");
    let e = s.execute_prepared(&get, &[Value::Int8(1)]).unwrap_err();
    assert_eq!(e.code, "42P01");
}

/// A prepared INSERT ... VALUES keeps its bound form: each run stores exactly what the
/// same statement with its values written in stores, through serial columns, defaults,
/// conversions and errors, and follows the table when it is made again.
#[test]
fn cached_inserts_store_what_written_in_values_store() {
    let db = db();
    let mut s = Session::with_seed(&db, 4);
    let make = "create table t (id bigserial primary key, v int2, name text, u uuid, f float8)";
    q(&mut s, make);
    let rows = |s: &mut Session| -> Vec<Vec<Value>> {
        s.execute("select * from t order by id")
            .unwrap()
            .pop()
            .unwrap()
            .rows
    };
    let ins = s
        .prepare("insert into t (v, name, f) values ($1, $2 || '!', $3 * 2)")
        .unwrap();
    for i in 0..5i32 {
        let r = s
            .execute_prepared(
                &ins,
                &[
                    Value::Int4(i * 100),
                    Value::Text(format!("n{i}")),
                    Value::Int4(i),
                ],
            )
            .unwrap();
        assert_eq!(r.tag, "INSERT 0 1");
    }
    assert!(ins.has_cached_plan());
    // Another value type: a plan of its own, the same conversions (a float8 into int2
    // rounds to even, as the written-in cast does).
    s.execute_prepared(
        &ins,
        &[
            Value::Float8(2.5),
            Value::Text("f".into()),
            Value::Float8(0.25),
        ],
    )
    .unwrap();
    assert!(ins.has_cached_plan());
    // Out of range for int2 and a NULL text: the errors and results of written-in values.
    let e = s
        .execute_prepared(
            &ins,
            &[Value::Int4(70_000), Value::Text("x".into()), Value::Int4(1)],
        )
        .unwrap_err();
    assert_eq!(e.code, "22003", "{e:?}");
    s.execute_prepared(&ins, &[Value::Int4(1), Value::Null, Value::Null])
        .unwrap();
    let got = rows(&mut s);
    q(
        &mut s,
        "create table w (id bigserial primary key, v int2, name text, u uuid, f float8)",
    );
    for i in 0..5i32 {
        q(
            &mut s,
            &format!(
                "insert into w (v, name, f) values ({}, 'n{i}' || '!', {i} * 2)",
                i * 100
            ),
        );
    }
    q(
        &mut s,
        "insert into w (v, name, f) values (2.5::float8, 'f' || '!', 0.25::float8 * 2)",
    );
    q(
        &mut s,
        "insert into w (v, name, f) values (1, null || '!', null * 2)",
    );
    let want = s
        .execute("select * from w order by id")
        .unwrap()
        .pop()
        .unwrap()
        .rows;
    assert_eq!(got, want);
    // A text value for a uuid column binds only written in (it takes the column's type).
    let by_text = s.prepare("insert into t (u, v) values ($1, $2)").unwrap();
    let u = "0e4f7c56-1b1a-4b6e-9a51-3f4b3d0a9c11";
    s.execute_prepared(&by_text, &[Value::Text(u.into()), Value::Int2(9)])
        .unwrap();
    assert!(!by_text.has_cached_plan());
    let r = s
        .execute("select v from t where u = '0e4f7c56-1b1a-4b6e-9a51-3f4b3d0a9c11'")
        .unwrap()
        .pop()
        .unwrap()
        .rows;
    assert_eq!(r, vec![vec![Value::Int2(9)]]);
    // A duplicate key: 23505, nothing stored.
    let keyed = s.prepare("insert into t (id, v) values ($1, $2)").unwrap();
    let e = s
        .execute_prepared(&keyed, &[Value::Int8(1), Value::Int2(0)])
        .unwrap_err();
    assert_eq!(e.code, "23505");
    // The table made again with its columns elsewhere: the plan follows it.
    q(&mut s, "drop table t");
    let e = s
        .execute_prepared(&keyed, &[Value::Int8(1), Value::Int2(0)])
        .unwrap_err();
    assert_eq!(e.code, "42P01");
    q(
        &mut s,
        "create table t (v int2, name text, id int8 primary key)",
    );
    s.execute_prepared(&keyed, &[Value::Int8(7), Value::Int2(3)])
        .unwrap();
    assert!(keyed.has_cached_plan());
    let r = s.execute("select * from t").unwrap().pop().unwrap().rows;
    assert_eq!(r, vec![vec![Value::Int2(3), Value::Null, Value::Int8(7)]]);
    // SQL's EXECUTE runs the same cached plan.
    q(&mut s, "prepare p as insert into t (id, v) values ($1, $2)");
    q(&mut s, "execute p (8, 4)");
    let e = s.execute("execute p (8, 5)").unwrap_err();
    assert_eq!(e.code, "23505");
    let r = s
        .execute("select v from t where id = 8")
        .unwrap()
        .pop()
        .unwrap()
        .rows;
    assert_eq!(r, vec![vec![Value::Int2(4)]]);
}

/// Prepared UPDATE and DELETE keep their bound form: each run changes exactly the rows
/// the same statement with its values written in changes, through an index or a scan.
#[test]
fn cached_updates_and_deletes_change_what_written_in_values_change() {
    let db = db();
    let mut s = Session::with_seed(&db, 5);
    let fill = |s: &mut Session, t: &str| {
        q(
            s,
            &format!(
                "create table {t} (id int8 primary key, v int4, name text);
                 insert into {t} select g, g % 7, 'n' || g from generate_series(1, 200) g"
            ),
        );
    };
    fill(&mut s, "t");
    fill(&mut s, "w");
    let all = |s: &mut Session, t: &str| -> Vec<Vec<Value>> {
        s.execute(&format!("select * from {t} order by id"))
            .unwrap()
            .pop()
            .unwrap()
            .rows
    };
    let bump = s
        .prepare("update t set v = v + $2, name = name || $3 where id = $1")
        .unwrap();
    let wide = s
        .prepare("update t set v = $1 where v = $2 and id < $3")
        .unwrap();
    let drop_some = s
        .prepare("delete from t where id between $1 and $2")
        .unwrap();
    for i in 0..20i64 {
        let id = i * 9 + 1;
        let r = s
            .execute_prepared(
                &bump,
                &[
                    Value::Int8(id),
                    Value::Int4(i as i32),
                    Value::Text(format!("-{i}")),
                ],
            )
            .unwrap();
        q(
            &mut s,
            &format!("update w set v = v + {i}, name = name || '-{i}' where id = {id}"),
        );
        assert_eq!(r.tag, "UPDATE 1");
    }
    let r = s
        .execute_prepared(&wide, &[Value::Int4(-1), Value::Int4(3), Value::Int8(100)])
        .unwrap();
    q(&mut s, "update w set v = -1 where v = 3 and id < 100");
    assert!(
        r.tag.starts_with("UPDATE ") && r.tag != "UPDATE 0",
        "{}",
        r.tag
    );
    let r = s
        .execute_prepared(&drop_some, &[Value::Int8(50), Value::Int8(59)])
        .unwrap();
    q(&mut s, "delete from w where id between 50 and 59");
    assert_eq!(r.tag, "DELETE 10");
    assert!(bump.has_cached_plan() && wide.has_cached_plan() && drop_some.has_cached_plan());
    assert_eq!(all(&mut s, "t"), all(&mut s, "w"));
    // A value out of range for the column and a NULL: the errors and results of
    // written-in values; the failed run changed nothing.
    let e = s
        .execute_prepared(
            &bump,
            &[
                Value::Int8(1),
                Value::Int8(1 << 40),
                Value::Text("x".into()),
            ],
        )
        .unwrap_err();
    assert_eq!(e.code, "22003", "{e:?}");
    let r = s
        .execute_prepared(&bump, &[Value::Int8(2), Value::Int4(1), Value::Null])
        .unwrap();
    assert_eq!(r.tag, "UPDATE 1");
    q(
        &mut s,
        "update w set v = v + 1, name = name || null where id = 2",
    );
    assert_eq!(all(&mut s, "t"), all(&mut s, "w"));
    // The table made again: the plan follows it; dropped: PostgreSQL's error.
    q(&mut s, "drop table t");
    let e = s
        .execute_prepared(&drop_some, &[Value::Int8(1), Value::Int8(2)])
        .unwrap_err();
    assert_eq!(e.code, "42P01");
    q(&mut s, "create table t (name text, id int8 primary key)");
    q(&mut s, "insert into t values ('a', 1), ('b', 2), ('c', 3)");
    let r = s
        .execute_prepared(&drop_some, &[Value::Int8(2), Value::Int8(5)])
        .unwrap();
    assert_eq!(r.tag, "DELETE 2");
    assert!(drop_some.has_cached_plan());
}

/// A prepared join keeps its plan (made once, with the parameters unknown) and fills
/// each run's values into the conditions it pushed to each table, into join conditions
/// and keys, choosing each table's read again with the values known. What could go
/// wrong: a parameter left unfilled in a table's condition or a join's, a read chosen
/// for one run's values reused for another's, or a wrong row from an outer join.
#[test]
fn cached_join_plans_give_what_written_in_values_give() {
    let db = db();
    let mut s = Session::with_seed(&db, 5);
    q(
        &mut s,
        "create table c (id int4 primary key, name text, region int4)",
    );
    q(
        &mut s,
        "create table o (id int4 primary key, cid int4, amount int4, note text)",
    );
    q(
        &mut s,
        "create table r (region int4 primary key, label text)",
    );
    q(
        &mut s,
        "insert into c select g, 'c' || g, g % 7 from generate_series(1, 200) g",
    );
    q(
        &mut s,
        "insert into o select g, (g * 37) % 230 + 1, (g * 31) % 101, case when g % 9 = 0 then null else 'n' || g end \
         from generate_series(1, 2000) g",
    );
    q(
        &mut s,
        "insert into r select g, 'r' || g from generate_series(0, 5) g",
    );
    q(&mut s, "create index o_cid on o (cid)");
    q(&mut s, "analyze");
    let rows = |s: &mut Session, sql: &str| -> Vec<Vec<Value>> {
        s.execute(sql).unwrap().pop().unwrap().rows
    };
    let statements = [
        "select o.id, o.amount, c.name from o join c on c.id = o.cid where o.id = $1",
        "select o.id, c.name, r.label from o join c on c.id = o.cid left join r on r.region = c.region \
         where o.id = $1 or o.id = $2 order by o.id",
        "select c.id, count(o.id), sum(o.amount) from c left join o on o.cid = c.id and o.amount > $2 \
         where c.id between $1 and $1 + 20 group by c.id order by c.id",
        "select o.id, c.id from o, c where c.id = o.cid and c.region = $2 and o.amount < $1 order by o.id limit 7",
        "select c.name, o.note from c join o on o.cid = c.id where c.id = $1 and o.note is not null order by o.id",
        "select c.id, o.id from c full join o on o.cid = c.id and o.amount = $1 where coalesce(c.id, $2) <= $2 order by 1, 2",
    ];
    let values = [
        (1, 3),
        (17, 5),
        (150, 0),
        (2000, 6),
        (2001, 2),
        (-4, 1),
        (64, 4),
    ];
    for sql in statements {
        let p = s.prepare(sql).unwrap();
        for (a, b) in values {
            let r = s
                .execute_prepared(&p, &[Value::Int4(a), Value::Int4(b)][..p.params()])
                .unwrap_or_else(|e| panic!("{sql} ({a}, {b}): {e}"));
            let written = sql
                .replace("$1", &a.to_string())
                .replace("$2", &b.to_string());
            assert_eq!(r.rows, rows(&mut s, &written), "{written}");
        }
        assert!(p.has_cached_plan(), "{sql}");
    }
    // The catalog changes under the cached plan: an index dropped, then the table made
    // again; each run still gives what the written-in statement gives.
    let p = s.prepare(statements[0]).unwrap();
    let first = s.execute_prepared(&p, &[Value::Int4(5)]).unwrap().rows;
    assert_eq!(first.len(), 1);
    q(&mut s, "drop index o_cid");
    assert_eq!(
        s.execute_prepared(&p, &[Value::Int4(5)]).unwrap().rows,
        first
    );
    q(&mut s, "drop table o");
    q(
        &mut s,
        "create table o (amount int4, id int4 primary key, cid int4)",
    );
    q(&mut s, "insert into o values (9, 5, 3)");
    assert_eq!(
        s.execute_prepared(&p, &[Value::Int4(5)]).unwrap().rows,
        vec![vec![
            Value::Int4(5),
            Value::Int4(9),
            Value::Text("c3".into())
        ]]
    );
}

#[test]
fn generic_point_reads_give_what_written_in_values_give() {
    let db = db();
    let mut s = Session::with_seed(&db, 9);
    q(
        &mut s,
        "create table k (id int8 primary key, code text unique, a int4, b int4, v int4, \
         unique (a, b))",
    );
    q(
        &mut s,
        "insert into k select g, 'c' || g, g % 10, g / 10, g * 3 from generate_series(1, 300) g",
    );
    q(&mut s, "create table bp (c char(4) primary key, v int4)");
    q(&mut s, "insert into bp values ('ab', 1), ('abcd', 2)");
    let rows = |s: &mut Session, sql: &str| -> Vec<Vec<Value>> {
        s.execute(sql).unwrap().pop().unwrap().rows
    };
    let literal = |v: &Value| match v {
        Value::Text(t) => format!("'{t}'"),
        Value::Int4(x) => x.to_string(),
        Value::Int8(x) => x.to_string(),
        other => panic!("{other:?}"),
    };
    // (statement, whether its runs share one plan, runs)
    let int8 = |x: i64| Value::Int8(x);
    let cases: Vec<(&str, bool, Vec<Vec<Value>>)> = vec![
        (
            "select v from k where id = $1",
            true,
            vec![
                vec![int8(7)],
                vec![int8(300)],
                vec![int8(0)],
                vec![int8(-1)],
            ],
        ),
        (
            "select id, v from k where $1 = id and v > 10",
            true,
            vec![vec![int8(3)], vec![int8(4)], vec![int8(50)]],
        ),
        (
            "select id from k where code = $1 order by id limit 1 offset 0",
            true,
            vec![
                vec![Value::Text("c12".into())],
                vec![Value::Text("c".into())],
                vec![Value::Text("c300".into())],
            ],
        ),
        (
            "select id, v from k where a = $1 and b = $2",
            true,
            vec![
                vec![Value::Int4(3), Value::Int4(4)],
                vec![Value::Int4(0), Value::Int4(30)],
                vec![Value::Int4(9), Value::Int4(31)],
            ],
        ),
        // Not a whole unique key, a parameter outside WHERE, one of another type:
        // filled in per run as before.
        (
            "select id from k where a = $1 order by id",
            false,
            vec![vec![Value::Int4(3)], vec![Value::Int4(11)]],
        ),
        (
            "select v + $2 from k where id = $1",
            false,
            vec![
                vec![int8(5), Value::Int4(1)],
                vec![int8(6), Value::Int4(-6)],
            ],
        ),
        (
            "select v from k where id = $1 or id = $2",
            false,
            vec![vec![int8(5), int8(9)]],
        ),
        (
            "select v from bp where c = $1",
            false,
            vec![
                vec![Value::Text("ab".into())],
                vec![Value::Text("abcd".into())],
            ],
        ),
    ];
    for (sql, generic, runs) in cases {
        let p = s.prepare(sql).unwrap();
        for values in runs {
            let r = s
                .execute_prepared(&p, &values)
                .unwrap_or_else(|e| panic!("{sql} {values:?}: {e}"));
            let mut written = sql.to_string();
            for (i, v) in values.iter().enumerate().rev() {
                written = written.replace(&format!("${}", i + 1), &literal(v));
            }
            assert_eq!(r.rows, rows(&mut s, &written), "{written}");
        }
        assert_eq!(p.has_generic_plan(), generic, "{sql}");
    }
    // The shared plan reads what the transaction changed, and follows the catalog: the
    // key's index dropped, the run reads without it.
    let p = s.prepare("select v from k where id = $1").unwrap();
    q(&mut s, "begin");
    q(&mut s, "update k set v = -1 where id = 8");
    q(&mut s, "delete from k where id = 9");
    let run = |s: &mut Session, id: i64| s.execute_prepared(&p, &[int8(id)]).unwrap().rows;
    assert_eq!(run(&mut s, 8), vec![vec![Value::Int4(-1)]]);
    assert!(run(&mut s, 9).is_empty());
    assert!(p.has_generic_plan());
    q(&mut s, "rollback");
    assert_eq!(run(&mut s, 9), vec![vec![Value::Int4(27)]]);
    q(&mut s, "alter table k drop constraint k_pkey");
    assert_eq!(run(&mut s, 9), vec![vec![Value::Int4(27)]]);
    assert!(!p.has_generic_plan());
    q(&mut s, "create unique index k_id on k (id)");
    assert_eq!(run(&mut s, 10), vec![vec![Value::Int4(30)]]);
    assert!(p.has_generic_plan());
    // A portal read in parts (a cursor) runs past this call: it reads its values
    // filled in, the same rows.
    struct Rows(Vec<Vec<Value>>);
    impl walden_sql::RowSink for Rows {
        fn start(&mut self, _: &[(String, walden_sql::SqlType)]) -> walden_sql::SqlResult<()> {
            Ok(())
        }
        fn row(&mut self, row: &[Value]) -> walden_sql::SqlResult<()> {
            self.0.push(row.to_vec());
            Ok(())
        }
    }
    q(&mut s, "begin");
    assert!(s.open_portal("p1", &p, &[int8(11)]).unwrap());
    let mut got = Rows(Vec::new());
    s.fetch_portal("p1", 5, &mut got).unwrap();
    assert_eq!(got.0, vec![vec![Value::Int4(33)]]);
    q(&mut s, "commit");
}
