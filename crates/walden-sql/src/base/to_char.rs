//! `to_char(timestamp, format)`: PostgreSQL's template patterns for dates and times
//! (YYYY, MM, DD, HH24, MI, SS, MS, US, Month, Day, AM, Q, IW, …, the FM prefix, quoted
//! text), in the session's time zone, UTC.

use walden::calendar::{
    civil_from_days, days_from_civil, MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_MINUTE,
    MICROS_PER_SECOND, TIMESTAMP_INFINITY, TIMESTAMP_NEG_INFINITY, UNIX_TO_POSTGRES_DAYS,
};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Patterns, longest first where one is a prefix of another (matched without regard to
/// case; the case of a name's letters says how the name is written).
const PATTERNS: &[&str] = &[
    "HH24", "HH12", "HH", "MI", "SSSS", "SS", "MS", "US", "A.M.", "P.M.", "AM", "PM", "YYYY",
    "YYY", "YY", "Y", "MONTH", "MON", "MM", "DAY", "DY", "DDD", "DD", "D", "IYYY", "ID", "IW",
    "WW", "Q", "TZ", "OF",
];

/// A name in the case the pattern was written in: `MONTH`, `Month` or `month`.
fn cased(name: &str, written: &str) -> String {
    let mut letters = written.chars().filter(|c| c.is_ascii_alphabetic());
    let first_upper = letters.next().is_some_and(|c| c.is_ascii_uppercase());
    let rest_upper = letters.next().is_some_and(|c| c.is_ascii_uppercase());
    match (first_upper, rest_upper) {
        (true, true) => name.to_uppercase(),
        (true, false) => name.to_string(),
        _ => name.to_lowercase(),
    }
}

/// The text of `t` (microseconds since 2000-01-01) under `format`; None for an infinite
/// timestamp (PostgreSQL gives NULL). `zone`: a timestamptz (TZ shows `UTC`).
pub fn to_char(t: i64, format: &str, zone: bool) -> Option<String> {
    if t == TIMESTAMP_INFINITY || t == TIMESTAMP_NEG_INFINITY {
        return None;
    }
    let days = t.div_euclid(MICROS_PER_DAY) + UNIX_TO_POSTGRES_DAYS;
    let time = t.rem_euclid(MICROS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    let year = if y <= 0 { 1 - y } else { y };
    let hour = time / MICROS_PER_HOUR;
    let dow = (days + 4).rem_euclid(7);
    let doy = days - days_from_civil(y, 1, 1) + 1;
    let (iso_year, iso_week) = crate::datetime::iso_week(days);
    let mut out = String::new();
    let mut rest = format;
    while !rest.is_empty() {
        let fill = rest.get(..2).is_some_and(|s| s.eq_ignore_ascii_case("FM"));
        let body = if fill { &rest[2..] } else { rest };
        let found = PATTERNS.iter().find(|p| {
            body.len() >= p.len()
                && body.is_char_boundary(p.len())
                && body[..p.len()].eq_ignore_ascii_case(p)
        });
        let Some(p) = found else {
            rest = copy_literal(rest, &mut out);
            continue;
        };
        let written = &body[..p.len()];
        let num = |v: i64, width: usize| {
            if fill {
                v.to_string()
            } else {
                format!("{v:0width$}")
            }
        };
        let name = |s: &str, pad: usize| {
            let s = cased(s, written);
            if fill {
                s
            } else {
                format!("{s:pad$}")
            }
        };
        let meridiem = |s: &str| {
            let s = if hour < 12 {
                s.to_string()
            } else {
                s.replace('A', "P")
            };
            cased(&s, written)
        };
        let piece = match *p {
            "HH24" => num(hour, 2),
            "HH12" | "HH" => num(if hour % 12 == 0 { 12 } else { hour % 12 }, 2),
            "MI" => num(time / MICROS_PER_MINUTE % 60, 2),
            "SS" => num(time / MICROS_PER_SECOND % 60, 2),
            "SSSS" => (time / MICROS_PER_SECOND).to_string(),
            "MS" => num(time % MICROS_PER_SECOND / 1000, 3),
            "US" => num(time % MICROS_PER_SECOND, 6),
            "AM" | "PM" => meridiem("AM"),
            "A.M." | "P.M." => meridiem("A.M."),
            "YYYY" => num(year, 4),
            "YYY" => num(year % 1000, 3),
            "YY" => num(year % 100, 2),
            "Y" => num(year % 10, 1),
            "MONTH" => name(MONTHS[m as usize - 1], 9),
            "MON" => cased(&MONTHS[m as usize - 1][..3], written),
            "MM" => num(m as i64, 2),
            "DAY" => name(DAYS[dow as usize], 9),
            "DY" => cased(&DAYS[dow as usize][..3], written),
            "DDD" => num(doy, 3),
            "DD" => num(d as i64, 2),
            "D" => (dow + 1).to_string(),
            "ID" => (if dow == 0 { 7 } else { dow }).to_string(),
            "IW" => num(iso_week, 2),
            "IYYY" => num(iso_year, 4),
            "WW" => num((doy - 1) / 7 + 1, 2),
            "Q" => ((m - 1) / 3 + 1).to_string(),
            "TZ" => {
                if zone {
                    cased("UTC", written)
                } else {
                    String::new()
                }
            }
            _ => {
                if zone {
                    "+00".into()
                } else {
                    String::new()
                }
            }
        };
        out.push_str(&piece);
        rest = &body[p.len()..];
    }
    Some(out)
}

/// Copies what starts `rest` and is no pattern to `out`: a quoted text as it is, else
/// one character. What follows it.
fn copy_literal<'a>(rest: &'a str, out: &mut String) -> &'a str {
    let c = rest.chars().next().unwrap_or(' ');
    if c == '"' {
        // Quoted text is copied as it is.
        let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
        out.push_str(rest[1..end].trim_end_matches('"'));
        return &rest[end.min(rest.len())..];
    }
    out.push(c);
    &rest[c.len_utf8()..]
}

#[cfg(test)]
mod tests {
    use super::to_char;

    /// Formats from users: any text, never a panic.
    #[test]
    fn odd_formats_are_copied_not_a_panic() {
        for f in [
            "€",
            "FM€",
            "\"",
            "\"€",
            "F",
            "FMFM",
            "é€YYYY\"x",
            "HH2",
            "A.M",
            "\\",
        ] {
            let _ = to_char(0, f, true);
        }
        assert_eq!(to_char(0, "€ YYYY", false).as_deref(), Some("€ 2000"));
    }
}
