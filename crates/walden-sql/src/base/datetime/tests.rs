//! Tests of date/time input, arithmetic and fields against PostgreSQL's answers.

use super::*;
use walden::calendar::MICROS_PER_HOUR;

#[test]
fn parses_as_postgres() {
    assert_eq!(parse_date("2000-01-02"), Ok(1));
    assert_eq!(parse_date("2024-02-30").unwrap_err().code, "22008");
    assert_eq!(parse_date("2024-x").unwrap_err().code, "22007");
    // A zone after a date without a time: ignored by date, midnight there for
    // timestamptz (pgjdbc's setDate sends its text so).
    assert_eq!(parse_date("2000-01-02 +00"), Ok(1));
    assert_eq!(parse_date("2000-01-02 -05:30"), Ok(1));
    assert_eq!(parse_date("2000-01-02 UTC"), Ok(1));
    assert_eq!(parse_date("2000-01-02 +x").unwrap_err().code, "22007");
    assert_eq!(parse_timestamp("2000-01-01 +02", false), Ok(0));
    assert_eq!(
        parse_timestamp("2000-01-01 +02", true),
        Ok(-2 * MICROS_PER_HOUR)
    );
    assert_eq!(
        parse_timestamp("2000-01-01T00:00:01.5", false),
        Ok(1_500_000)
    );
    assert_eq!(parse_timestamp("2000-01-01 02:00:00+02", true), Ok(0));
    assert_eq!(
        parse_timestamp("2000-01-01 02:00:00+02", false),
        Ok(2 * MICROS_PER_HOUR)
    );
    let iv = |s| parse_interval(s).unwrap();
    assert_eq!(
        iv("1 year 2 mons 3 days 04:05:06"),
        Interval {
            months: 14,
            days: 3,
            micros: 14_706_000_000
        }
    );
    assert_eq!(iv("-1 day").days, -1);
    assert_eq!(iv("1.5 months").days, 15);
    assert_eq!(iv("@ 2 hours ago").micros, -2 * MICROS_PER_HOUR);
    assert!(parse_interval("abc").is_err());
}

#[test]
fn month_arithmetic_clamps_the_day() {
    let jan31 = parse_timestamp("2024-01-31", false).unwrap();
    let one_month = Interval {
        months: 1,
        days: 0,
        micros: 0,
    };
    let feb29 = parse_timestamp("2024-02-29", false).unwrap();
    assert_eq!(timestamp_add(jan31, one_month), Ok(feb29));
}
