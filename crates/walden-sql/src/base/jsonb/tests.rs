//! Tests of JSON input, the jsonb operators and functions against PostgreSQL's answers.

use super::*;

fn text(s: &str) -> String {
    match parse(s) {
        Ok(j) => j.to_string(),
        Err(e) => format!(
            "{} {} {}",
            e.code,
            e.message,
            e.detail.clone().unwrap_or_default()
        ),
    }
}

#[test]
fn parses_and_normalizes_as_postgres() {
    assert_eq!(
        text(r#"{"b":1,"aa":2,"b":3, "a": 1.50e1}"#),
        r#"{"a": 15.0, "b": 3, "aa": 2}"#
    );
    assert_eq!(text("-0.0"), "0.0");
    assert_eq!(text("0.000e5"), "0");
    assert_eq!(text("1E+2"), "100");
    assert_eq!(text("12.3e-5"), "0.000123");
    assert_eq!(text(r#""\u00e9\n\t\"\\ \/""#), r#""é\n\t\"\\ /""#);
    assert_eq!(text(r#""\ud83d\ude00""#), "\"\u{1f600}\"");
    assert_eq!(text(" [ ] "), "[]");
}

#[test]
fn errors_carry_postgres_details() {
    let d = |s: &str| {
        parse(s)
            .unwrap_err()
            .detail
            .clone()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(d("01"), "Token \"01\" is invalid.");
    assert_eq!(d(r#"{"a":1,}"#), "Expected string, but found \"}\".");
    assert_eq!(d(r#"{"a" 1}"#), "Expected \":\", but found \"1\".");
    assert_eq!(d(""), "The input string ended unexpectedly.");
    assert_eq!(d("[1,2"), "The input string ended unexpectedly.");
    assert_eq!(d("nul"), "Token \"nul\" is invalid.");
    assert_eq!(d("\"abc"), "Token \"\"abc\" is invalid.");
    assert_eq!(d(r#""\x""#), "Escape sequence \"\\x\" is invalid.");
    assert_eq!(d("[1] x"), "Token \"x\" is invalid.");
    assert_eq!(d("1."), "Token \"1.\" is invalid.");
    assert_eq!(
        d(r#""\ud83d""#),
        "Unicode low surrogate must follow a high surrogate."
    );
    assert_eq!(parse(r#""\u0000""#).unwrap_err().code, "22P05");
    let deep = "[".repeat(100_000);
    assert_eq!(parse(&deep).unwrap_err().code, "54001");
}

#[test]
fn containment_follows_postgres() {
    let c = |a: &str, b: &str| contains(&parse(a).unwrap(), &parse(b).unwrap(), true);
    assert!(c("[1,[2,3]]", "[[3]]"));
    assert!(c("[1,2]", "1"));
    assert!(!c("1", "[1]"));
    assert!(c(r#"{"a":[1,2]}"#, r#"{"a":[2,2]}"#));
    assert!(!c("[[1,2]]", "[1]"));
    assert!(c(r#"{"a":1,"b":{"c":2}}"#, r#"{"b":{}}"#));
}
