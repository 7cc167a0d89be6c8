//! The settings PostgreSQL's clients set and read (`client_encoding`, `DateStyle`,
//! `extra_float_digits`, `application_name`, `statement_timeout`, …), and the read-only
//! ones they look at (`server_version`, `integer_datetimes`, …).
//!
//! Each is either honoured or refused for the values Walden cannot honour: a client
//! asking for `DateStyle = 'German'` or a time zone other than UTC gets an error, not
//! output in a form it did not ask for.

use std::time::Duration;

use crate::error::{code, SqlError, SqlResult};

/// The server version reported to clients (PostgreSQL 15's protocol and catalog).
pub const SERVER_VERSION: &str = "15.0";
pub const SERVER_VERSION_NUM: &str = "150000";

/// What `version()` gives.
pub fn version() -> String {
    format!(
        "PostgreSQL {SERVER_VERSION} (Walden {}) on {}-linux, 64-bit",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    )
}

/// The client settings of one session.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    pub application_name: String,
    pub client_encoding: String,
    pub date_style: String,
    pub extra_float_digits: i32,
    pub search_path: String,
    /// `statement_timeout`: none when 0.
    pub statement_timeout: Option<Duration>,
    /// `lock_timeout`: the longest one wait for a lock may last; none when 0.
    pub lock_timeout: Option<Duration>,
    pub client_min_messages: String,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            application_name: String::new(),
            client_encoding: "UTF8".into(),
            date_style: "ISO, MDY".into(),
            extra_float_digits: 1,
            search_path: "\"$user\", public".into(),
            statement_timeout: None,
            lock_timeout: None,
            client_min_messages: "notice".into(),
        }
    }
}

/// The settings held here, by their canonical names.
pub(super) const NAMES: &[&str] = &[
    "application_name",
    "client_encoding",
    "DateStyle",
    "IntervalStyle",
    "TimeZone",
    "extra_float_digits",
    "search_path",
    "statement_timeout",
    "lock_timeout",
    "client_min_messages",
    "standard_conforming_strings",
    "bytea_output",
    "server_version",
    "server_version_num",
    "server_encoding",
    "integer_datetimes",
    "max_identifier_length",
];

fn invalid(name: &str, value: &str) -> SqlError {
    SqlError::new(
        code::INVALID_PARAMETER,
        format!(
            "invalid value for parameter \"{name}\": \"{}\"",
            crate::error::clip(value)
        ),
    )
}

fn only(name: &str, value: &str, allowed: &str) -> SqlError {
    SqlError::new(
        code::FEATURE_NOT_SUPPORTED,
        format!(
            "{name} \"{}\" is not supported: Walden offers {allowed}",
            crate::error::clip(value)
        ),
    )
}

impl ClientSettings {
    /// The canonical name of one of these settings (names are case-insensitive).
    pub fn name_of(name: &str) -> Option<&'static str> {
        NAMES.iter().find(|n| n.eq_ignore_ascii_case(name)).copied()
    }

    /// A setting's value as SHOW gives it.
    pub fn get(&self, name: &str) -> Option<String> {
        let name = Self::name_of(name)?;
        Some(match name {
            "application_name" => self.application_name.clone(),
            "client_encoding" => self.client_encoding.clone(),
            "DateStyle" => self.date_style.clone(),
            "IntervalStyle" => "postgres".into(),
            "TimeZone" => "UTC".into(),
            "extra_float_digits" => self.extra_float_digits.to_string(),
            "search_path" => self.search_path.clone(),
            "statement_timeout" => match self.statement_timeout {
                None => "0".into(),
                Some(d) => duration_text(d),
            },
            "lock_timeout" => match self.lock_timeout {
                None => "0".into(),
                Some(d) => duration_text(d),
            },
            "client_min_messages" => self.client_min_messages.clone(),
            "standard_conforming_strings" => "on".into(),
            "bytea_output" => "hex".into(),
            "server_version" => SERVER_VERSION.into(),
            "server_version_num" => SERVER_VERSION_NUM.into(),
            "server_encoding" => "UTF8".into(),
            "integer_datetimes" => "on".into(),
            "max_identifier_length" => "63".into(),
            _ => return None,
        })
    }

    /// Sets one (its value as written: `raw`); None when the name is not one of these.
    pub fn set(&mut self, name: &str, raw: &str) -> Option<SqlResult<()>> {
        let name = Self::name_of(name)?;
        let value = raw.trim();
        let lower = value.to_ascii_lowercase();
        Some((|| {
            match name {
                "application_name" => {
                    // PostgreSQL keeps 63 bytes, and only printable ASCII.
                    let mut s: String = value
                        .chars()
                        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
                        .collect();
                    s.truncate(63);
                    self.application_name = s;
                }
                "client_encoding" => match lower.replace(['-', '_'], "").as_str() {
                    "utf8" | "unicode" | "sqlascii" => self.client_encoding = "UTF8".into(),
                    _ => return Err(only(name, value, "UTF8")),
                },
                "DateStyle" => self.date_style = date_style(name, value, &lower)?,
                "IntervalStyle" => {
                    if lower != "postgres" {
                        return Err(only(name, value, "postgres"));
                    }
                }
                "TimeZone" => {
                    if !is_utc(&lower) {
                        return Err(only("time zone", value, "UTC"));
                    }
                }
                "extra_float_digits" => {
                    let n: i32 = value.parse().map_err(|_| {
                        SqlError::new(
                            code::INVALID_PARAMETER,
                            format!("invalid value for parameter \"{name}\": \"{value}\""),
                        )
                    })?;
                    if !(-15..=3).contains(&n) {
                        return Err(SqlError::new(
                            code::INVALID_PARAMETER,
                            format!("{n} is outside the valid range for parameter \"{name}\" (-15 .. 3)"),
                        ));
                    }
                    self.extra_float_digits = n;
                }
                "search_path" => self.search_path = value.to_string(),
                "statement_timeout" | "lock_timeout" => {
                    let ms = parse_millis(value).ok_or_else(|| {
                        invalid(name, value).with_hint(
                            "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".",
                        )
                    })?;
                    let t = (ms > 0.0).then(|| Duration::from_secs_f64(ms / 1000.0));
                    if name == "lock_timeout" {
                        self.lock_timeout = t;
                    } else {
                        self.statement_timeout = t;
                    }
                }
                "client_min_messages" => match lower.as_str() {
                    "debug5" | "debug4" | "debug3" | "debug2" | "debug1" | "debug" | "log"
                    | "notice" | "warning" | "error" => self.client_min_messages = lower.clone(),
                    _ => return Err(invalid(name, value)),
                },
                "standard_conforming_strings" => {
                    if !matches!(lower.as_str(), "on" | "true" | "1" | "yes") {
                        return Err(only(name, value, "on"));
                    }
                }
                "bytea_output" => {
                    if lower != "hex" {
                        return Err(only(name, value, "hex"));
                    }
                }
                _ => {
                    return Err(SqlError::new(
                        "55P02",
                        format!("parameter \"{name}\" cannot be changed"),
                    ))
                }
            }
            Ok(())
        })())
    }
}

/// DateStyle's value: ISO output, in the day order given (MDY when none is).
fn date_style(name: &str, value: &str, lower: &str) -> SqlResult<String> {
    let parts: Vec<String> = lower
        .split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    let mut order = "MDY";
    for p in &parts {
        match p.as_str() {
            "iso" => {}
            "mdy" | "us" | "noneuropean" => order = "MDY",
            "dmy" | "euro" | "european" => order = "DMY",
            "ymd" => order = "YMD",
            "sql" | "postgres" | "german" => return Err(only(name, value, "ISO output")),
            _ => return Err(invalid(name, value)),
        }
    }
    if parts.is_empty() {
        return Err(invalid(name, value));
    }
    Ok(format!("ISO, {order}"))
}

/// UTC under the names clients use for it.
fn is_utc(tz: &str) -> bool {
    matches!(
        tz,
        "utc"
            | "gmt"
            | "z"
            | "zulu"
            | "etc/utc"
            | "etc/gmt"
            | "etc/universal"
            | "universal"
            | "uct"
            | "etc/uct"
            | "+00"
            | "+00:00"
            | "0"
            | "gmt0"
            | "etc/gmt0"
            | "etc/gmt+0"
            | "etc/gmt-0"
    )
}

/// A duration setting in milliseconds: a bare number (ms) or a number with a unit.
fn parse_millis(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number.parse().ok()?;
    let factor = match unit.trim() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    let ms = n * factor;
    (0.0..=i32::MAX as f64).contains(&ms).then_some(ms)
}

/// A duration as PostgreSQL shows a time setting: the largest unit that divides it.
fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, size) in [
        ("d", 86_400_000u128),
        ("h", 3_600_000),
        ("min", 60_000),
        ("s", 1000),
    ] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_take_what_can_be_honoured() {
        let mut s = ClientSettings::default();
        assert!(s.set("datestyle", "ISO, DMY").is_some_and(|r| r.is_ok()));
        assert_eq!(s.get("DateStyle").as_deref(), Some("ISO, DMY"));
        assert!(s.set("DateStyle", "German").is_some_and(|r| r.is_err()));
        assert!(s.set("timezone", "Etc/UTC").is_some_and(|r| r.is_ok()));
        assert!(s
            .set("TimeZone", "Europe/Paris")
            .is_some_and(|r| r.is_err()));
        assert!(s
            .set("statement_timeout", "1.5s")
            .is_some_and(|r| r.is_ok()));
        assert_eq!(s.statement_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(s.get("statement_timeout").as_deref(), Some("1500ms"));
        assert!(s
            .set("statement_timeout", "2min")
            .is_some_and(|r| r.is_ok()));
        assert_eq!(s.get("statement_timeout").as_deref(), Some("2min"));
        assert!(s.set("statement_timeout", "0").is_some_and(|r| r.is_ok()));
        assert_eq!(s.statement_timeout, None);
        assert!(s
            .set("statement_timeout", "5 parsecs")
            .is_some_and(|r| r.is_err()));
        assert!(s.set("extra_float_digits", "3").is_some_and(|r| r.is_ok()));
        assert!(s.set("extra_float_digits", "4").is_some_and(|r| r.is_err()));
        assert!(s.set("server_version", "16").is_some_and(|r| r.is_err()));
        assert!(s.set("no_such_thing", "1").is_none());
        assert!(s
            .set("client_encoding", "LATIN1")
            .is_some_and(|r| r.is_err()));
    }
}
