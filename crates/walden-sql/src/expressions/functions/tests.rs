//! Tests of the scalar functions' results.

use super::*;
use walden::rng::SimRng;

fn run(f: Func, args: &[Value]) -> Value {
    let mut rng = SimRng::new(1);
    call(f, args, &mut EvalCtx::new(&mut rng)).unwrap()
}

fn t(s: &str) -> Value {
    Value::Text(s.into())
}

#[test]
fn string_functions_match_postgres() {
    assert_eq!(
        run(Func::Lpad, &[t("x"), Value::Int4(5), t("ab")]),
        t("ababx")
    );
    assert_eq!(run(Func::Lpad, &[t("hello"), Value::Int4(2)]), t("he"));
    assert_eq!(run(Func::Rpad, &[t("x"), Value::Int4(3)]), t("x  "));
    assert_eq!(
        run(Func::Substr, &[t("hello"), Value::Int4(2), Value::Int4(3)]),
        t("ell")
    );
    assert_eq!(
        run(Func::Substr, &[t("hello"), Value::Int4(-1), Value::Int4(3)]),
        t("h")
    );
    assert_eq!(run(Func::Substr, &[t("hello"), Value::Int4(4)]), t("lo"));
    assert_eq!(
        run(Func::Md5, &[t("")]),
        t("d41d8cd98f00b204e9800998ecf8427e")
    );
    assert_eq!(run(Func::Length, &[t("héllo")]), Value::Int4(5));
    assert_eq!(run(Func::Repeat, &[t("ab"), Value::Int4(3)]), t("ababab"));
    assert_eq!(
        run(Func::Mod, &[Value::Int4(-7), Value::Int4(3)]),
        Value::Int4(-1)
    );
    assert_eq!(run(Func::Abs, &[Value::Int8(-7)]), Value::Int8(7));
    assert_eq!(run(Func::Upper, &[Value::Null]), Value::Null);
}

#[test]
fn random_is_in_range_and_uuid_is_v4() {
    let mut rng = SimRng::new(9);
    let mut cx = EvalCtx::new(&mut rng);
    for _ in 0..1000 {
        match call(Func::Random, &[], &mut cx).unwrap() {
            Value::Float8(x) => assert!((0.0..1.0).contains(&x)),
            other => panic!("{other:?}"),
        }
    }
    let u = call(Func::GenRandomUuid, &[], &mut cx).unwrap().to_string();
    assert_eq!(u.len(), 36);
    assert_eq!(&u[14..15], "4");
}
