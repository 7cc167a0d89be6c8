//! PostgreSQL's text COPY format for one record: fields between delimiters, backslash
//! escapes (`\t`, `\n`, `\\`, `\b`, `\f`, `\r`, `\v`, octal `\NNN`, hex `\xNN`, and any
//! other byte standing for itself), NULL as `\N` (or the NULL option, compared with
//! the field as written); and values written back as PostgreSQL's `CopyAttributeOutText`
//! writes them.

use std::ops::Range;

use crate::error::SqlResult;

/// Splits `record` into fields decoded into `out`: each field's bytes in `out`, or None
/// for NULL. The fields are checked to be UTF-8 where an escape made a byte that is not
/// ASCII (the record itself is known to be).
pub(crate) fn split(
    record: &[u8],
    delimiter: u8,
    null: &[u8],
    out: &mut Vec<u8>,
    fields: &mut Vec<Option<Range<usize>>>,
) -> SqlResult<()> {
    out.clear();
    fields.clear();
    let mut cur = 0;
    loop {
        let start = cur;
        let first = out.len();
        let mut end;
        let mut found_delimiter = false;
        let mut saw_non_ascii = false;
        loop {
            // A run of plain bytes (neither the delimiter nor a backslash) at once.
            let run = record[cur..]
                .iter()
                .position(|&b| b == delimiter || b == b'\\')
                .unwrap_or(record.len() - cur);
            out.extend_from_slice(&record[cur..cur + run]);
            cur += run;
            end = cur;
            let Some(&c) = record.get(cur) else { break };
            cur += 1;
            if c == delimiter {
                found_delimiter = true;
                break;
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let Some(&e) = record.get(cur) else { break };
            cur += 1;
            let byte = match e {
                b'0'..=b'7' => {
                    let mut v = u32::from(e - b'0');
                    for _ in 0..2 {
                        match record.get(cur) {
                            Some(&d @ b'0'..=b'7') => {
                                v = (v << 3) + u32::from(d - b'0');
                                cur += 1;
                            }
                            _ => break,
                        }
                    }
                    let b = (v & 0xff) as u8;
                    saw_non_ascii |= b == 0 || b >= 0x80;
                    b
                }
                b'x' => match record.get(cur).and_then(|&d| hex(d)) {
                    Some(first_digit) => {
                        cur += 1;
                        let mut v = first_digit;
                        if let Some(d) = record.get(cur).and_then(|&d| hex(d)) {
                            v = (v << 4) + d;
                            cur += 1;
                        }
                        saw_non_ascii |= v == 0 || v >= 0x80;
                        v
                    }
                    None => b'x',
                },
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'v' => 0x0b,
                other => other,
            };
            out.push(byte);
        }
        if &record[start..end] == null {
            out.truncate(first);
            fields.push(None);
        } else {
            if saw_non_ascii {
                super::check_utf8(&out[first..])?;
            }
            fields.push(Some(first..out.len()));
        }
        if !found_delimiter {
            return Ok(());
        }
    }
}

fn hex(d: u8) -> Option<u8> {
    (d as char).to_digit(16).map(|v| v as u8)
}

/// Writes `value` escaped for the text format: the control characters PostgreSQL
/// writes as `\b \f \n \r \t \v`, and the backslash and the delimiter after a backslash.
pub(crate) fn write(out: &mut Vec<u8>, value: &str, delimiter: u8) {
    let bytes = value.as_bytes();
    // Most values need no escape: copied whole.
    if !bytes
        .iter()
        .any(|&c| c < 0x20 || c == b'\\' || c == delimiter)
    {
        out.extend_from_slice(bytes);
        return;
    }
    for &c in bytes {
        let escaped = match c {
            0x08 => Some(b'b'),
            0x0c => Some(b'f'),
            b'\n' => Some(b'n'),
            b'\r' => Some(b'r'),
            b'\t' => Some(b't'),
            0x0b => Some(b'v'),
            _ if c == b'\\' || c == delimiter => Some(c),
            _ => None,
        };
        match escaped {
            Some(e) => out.extend_from_slice(&[b'\\', e]),
            None => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(record: &str) -> SqlResult<Vec<Option<String>>> {
        let mut out = Vec::new();
        let mut spans = Vec::new();
        split(record.as_bytes(), b'\t', b"\\N", &mut out, &mut spans)?;
        Ok(spans
            .into_iter()
            .map(|s| s.map(|r| String::from_utf8_lossy(&out[r]).into_owned()))
            .collect())
    }

    fn some(v: &[&str]) -> Vec<Option<String>> {
        v.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn escapes_decode_as_postgres_decodes_them() {
        assert_eq!(fields("1\tx\t").unwrap(), some(&["1", "x", ""]));
        assert_eq!(fields("").unwrap(), some(&[""]));
        assert_eq!(
            fields("\\N\t\\\\N\tN").unwrap(),
            vec![None, Some("\\N".into()), Some("N".into())]
        );
        assert_eq!(
            fields("a\\tb\\\\c\\101\\x41\\x4g\\q\\z\\\t").unwrap(),
            some(&["a\tb\\cAA\u{4}gqz\t"])
        );
        assert_eq!(
            fields("\\b\\f\\n\\r\\v").unwrap(),
            some(&["\u{8}\u{c}\n\r\u{b}"])
        );
        // Octal takes at most three digits; a trailing backslash is dropped.
        assert_eq!(fields("\\1011\\x414\\").unwrap(), some(&["A1A4"]));
        assert_eq!(fields("\\303\\251").unwrap(), some(&["é"]));
    }

    #[test]
    fn escapes_that_make_bad_utf8_are_refused() {
        for (record, bytes) in [
            ("\\0", "0x00"),
            ("a\\377b", "0xff"),
            ("\\xc3(", "0xc3 0x28"),
        ] {
            let e = fields(record).unwrap_err();
            assert_eq!(
                (e.code, e.message.clone()),
                (
                    "22021",
                    format!("invalid byte sequence for encoding \"UTF8\": {bytes}")
                ),
                "{record}"
            );
        }
    }

    #[test]
    fn values_are_escaped_as_postgres_writes_them() {
        let mut out = Vec::new();
        write(&mut out, "tab\there\nnl\\ \u{1}|\u{8}\u{b}\u{c}\r", b'|');
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "tab\\there\\nnl\\\\ \u{1}\\|\\b\\v\\f\\r"
        );
    }
}
