//! PostgreSQL's CSV COPY format for one record: fields between delimiters, each made
//! of quoted and unquoted parts (inside quotes the escape character, by default the
//! quote itself, makes the next quote or escape literal), NULL as the NULL option
//! written unquoted (by default an empty unquoted field); and values written back as
//! PostgreSQL's `CopyAttributeOutCSV` writes them.

use std::ops::Range;

use crate::error::{code, SqlError, SqlResult};

/// How a CSV record is read and written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Csv<'a> {
    pub delimiter: u8,
    pub quote: u8,
    pub escape: u8,
    pub null: &'a [u8],
}

/// One field as read: its bytes in the output buffer, and whether any part of it was
/// quoted (a quoted field is never NULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub bytes: Range<usize>,
    pub quoted: bool,
    /// Written as the NULL option, unquoted.
    pub null: bool,
}

/// Splits `record` into fields decoded into `out`.
pub(crate) fn split(
    record: &[u8],
    csv: Csv,
    out: &mut Vec<u8>,
    fields: &mut Vec<Field>,
) -> SqlResult<()> {
    out.clear();
    fields.clear();
    let mut cur = 0;
    loop {
        let start = cur;
        let first = out.len();
        let mut end;
        let mut found_delimiter = false;
        let mut quoted = false;
        'field: loop {
            // Outside quotes.
            loop {
                end = cur;
                let Some(&c) = record.get(cur) else {
                    break 'field;
                };
                cur += 1;
                if c == csv.delimiter {
                    found_delimiter = true;
                    break 'field;
                }
                if c == csv.quote {
                    quoted = true;
                    break;
                }
                out.push(c);
            }
            // Inside quotes.
            loop {
                let Some(&c) = record.get(cur) else {
                    return Err(SqlError::new(
                        code::BAD_COPY_FILE_FORMAT,
                        "unterminated CSV quoted field",
                    ));
                };
                cur += 1;
                if c == csv.escape {
                    if let Some(&next) = record.get(cur) {
                        if next == csv.escape || next == csv.quote {
                            out.push(next);
                            cur += 1;
                            continue;
                        }
                    }
                }
                if c == csv.quote {
                    break;
                }
                out.push(c);
            }
        }
        let null = !quoted && &record[start..end] == csv.null;
        fields.push(Field {
            bytes: first..out.len(),
            quoted,
            null,
        });
        if !found_delimiter {
            return Ok(());
        }
    }
}

/// Writes `value` for CSV: quoted when `force` asks, when it is the NULL option's text,
/// when it holds the delimiter, the quote, a newline or a carriage return, or when it
/// is `\.` alone in a one-column row (which would read as the end of the data); inside
/// quotes, the quote and the escape character are preceded by the escape character.
pub(crate) fn write(out: &mut Vec<u8>, value: &str, csv: Csv, force: bool, one_column: bool) {
    let bytes = value.as_bytes();
    let quote = force
        || bytes == csv.null
        || (one_column && value == "\\.")
        || bytes
            .iter()
            .any(|&c| c == csv.delimiter || c == csv.quote || c == b'\n' || c == b'\r');
    if !quote {
        out.extend_from_slice(bytes);
        return;
    }
    out.push(csv.quote);
    for &c in bytes {
        if c == csv.quote || c == csv.escape {
            out.push(csv.escape);
        }
        out.push(c);
    }
    out.push(csv.quote);
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: Csv = Csv {
        delimiter: b',',
        quote: b'"',
        escape: b'"',
        null: b"",
    };

    fn fields(record: &str, csv: Csv) -> SqlResult<Vec<Option<String>>> {
        let mut out = Vec::new();
        let mut spans = Vec::new();
        split(record.as_bytes(), csv, &mut out, &mut spans)?;
        Ok(spans
            .into_iter()
            .map(|f| (!f.null).then(|| String::from_utf8_lossy(&out[f.bytes]).into_owned()))
            .collect())
    }

    fn v(items: &[Option<&str>]) -> Vec<Option<String>> {
        items.iter().map(|s| s.map(str::to_string)).collect()
    }

    #[test]
    fn fields_read_as_postgres_reads_them() {
        assert_eq!(
            fields("2,x,2020-01-01", DEFAULT).unwrap(),
            v(&[Some("2"), Some("x"), Some("2020-01-01")])
        );
        assert_eq!(
            fields("\"3\",,", DEFAULT).unwrap(),
            v(&[Some("3"), None, None])
        );
        assert_eq!(
            fields("4,\"\",", DEFAULT).unwrap(),
            v(&[Some("4"), Some(""), None])
        );
        assert_eq!(
            fields("5,\"x\"\"y\",a\"b,c\"d", DEFAULT).unwrap(),
            v(&[Some("5"), Some("x\"y"), Some("ab,cd")])
        );
        assert_eq!(fields("\"a\nb\"", DEFAULT).unwrap(), v(&[Some("a\nb")]));
        assert_eq!(fields("", DEFAULT).unwrap(), v(&[None]));
        let e = fields("1,\"x", DEFAULT).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22P04", "unterminated CSV quoted field")
        );
        let backslash = Csv {
            escape: b'\\',
            null: b"NUL",
            ..DEFAULT
        };
        assert_eq!(
            fields("\"a\\\"b\\\\c\\d\",NUL,\"NUL\"", backslash).unwrap(),
            v(&[Some("a\"b\\c\\d"), None, Some("NUL")])
        );
    }

    #[test]
    fn values_are_quoted_as_postgres_quotes_them() {
        let write_one = |value: &str, csv: Csv, force: bool, one: bool| {
            let mut out = Vec::new();
            write(&mut out, value, csv, force, one);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(write_one("plain", DEFAULT, false, false), "plain");
        assert_eq!(write_one("", DEFAULT, false, false), "\"\"");
        assert_eq!(write_one("a,b", DEFAULT, false, false), "\"a,b\"");
        assert_eq!(
            write_one("say \"hi\"", DEFAULT, false, false),
            "\"say \"\"hi\"\"\""
        );
        assert_eq!(write_one("l1\nl2", DEFAULT, false, false), "\"l1\nl2\"");
        assert_eq!(write_one("x", DEFAULT, true, false), "\"x\"");
        assert_eq!(write_one("\\.", DEFAULT, false, true), "\"\\.\"");
        assert_eq!(write_one("\\.", DEFAULT, false, false), "\\.");
        let backslash = Csv {
            escape: b'\\',
            ..DEFAULT
        };
        assert_eq!(
            write_one("a\"b\\c,", backslash, false, false),
            "\"a\\\"b\\\\c,\""
        );
        assert_eq!(write_one("a\\c", backslash, false, false), "a\\c");
    }
}
