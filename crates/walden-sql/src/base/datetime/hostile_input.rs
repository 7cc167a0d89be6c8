//! Date/time input from any bytes: an error, never a panic.

use super::*;

/// Text from users: any bytes, never a panic.
#[test]
fn odd_text_is_an_error_not_a_panic() {
    for s in [
        "",
        " ",
        "-",
        "2024-01-01 10:00+é1",
        "2024-01-01 10:00+éé",
        "2024-01-01T",
        "9999999999999-01-01",
        "2024-01-01 10:00:00.",
        "é",
        "1 é",
        "@",
        "ago",
        "1 ago ago",
        "--1 day",
        "1:2:3:4",
        "+",
        "1.2.3 days",
        "2024-01-01 bc",
        "0000-01-01",
        "2024-01-01 10:00:00+99",
    ] {
        let _ = parse_date(s);
        let _ = parse_timestamp(s, true);
        let _ = parse_timestamp(s, false);
        let _ = parse_interval(s);
        let _ = crate::bytea::parse(s);
        let _ = crate::bytea::parse(&format!("\\x{s}"));
    }
}
