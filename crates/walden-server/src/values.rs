//! A value's forms on the wire: text (what `::text` output gives, as psql shows it) and
//! binary (PostgreSQL's send/receive functions: big-endian integers, dates and
//! timestamps from 2000-01-01, numerics in base-10000 digits), both ways.

use walden::{Interval, Numeric, Value};
use walden_sql::error::code;
use walden_sql::{SqlError, SqlResult, SqlType};

/// PostgreSQL type OIDs a client may give a parameter that are not one of Walden's
/// types' own but are read into one.
pub(crate) mod oid {
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const NAME: u32 = 19;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT4: u32 = 23;
    pub const TEXT: u32 = 25;
    pub const OID: u32 = 26;
    pub const JSON: u32 = 114;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
    pub const DATE: u32 = 1082;
    pub const TIMESTAMP: u32 = 1114;
    pub const TIMESTAMPTZ: u32 = 1184;
    pub const INTERVAL: u32 = 1186;
    pub const NUMERIC: u32 = 1700;
    pub const UUID: u32 = 2950;
    pub const JSONB: u32 = 3802;
    pub const RECORD: u32 = 2249;
}

/// The OID PostgreSQL gives a column or parameter of this type.
pub fn type_oid(ty: SqlType) -> u32 {
    match ty {
        SqlType::Int2 => oid::INT2,
        SqlType::Int4 => oid::INT4,
        SqlType::Int8 => oid::INT8,
        SqlType::Float8 => oid::FLOAT8,
        SqlType::Numeric => oid::NUMERIC,
        SqlType::Bool => oid::BOOL,
        SqlType::Text | SqlType::Null => oid::TEXT,
        SqlType::Bpchar => oid::BPCHAR,
        SqlType::Uuid => oid::UUID,
        SqlType::Date => oid::DATE,
        SqlType::Timestamp => oid::TIMESTAMP,
        SqlType::Timestamptz => oid::TIMESTAMPTZ,
        SqlType::Interval => oid::INTERVAL,
        SqlType::Bytea => oid::BYTEA,
        SqlType::Jsonb => oid::JSONB,
        SqlType::Record(_) => oid::RECORD,
    }
}

/// The size PostgreSQL reports for a type (`typlen`; -1 for varying).
pub fn type_len(ty: SqlType) -> i16 {
    match ty {
        SqlType::Int2 => 2,
        SqlType::Int4 | SqlType::Date => 4,
        SqlType::Int8 | SqlType::Float8 | SqlType::Timestamp | SqlType::Timestamptz => 8,
        SqlType::Bool => 1,
        SqlType::Uuid | SqlType::Interval => 16,
        _ => -1,
    }
}

/// Walden's type for a parameter the client typed with `oid` (None: not one Walden
/// reads; 0, unspecified, is None too).
pub fn type_of_oid(o: u32) -> Option<SqlType> {
    Some(match o {
        oid::BOOL => SqlType::Bool,
        oid::BYTEA => SqlType::Bytea,
        oid::INT8 => SqlType::Int8,
        oid::INT2 => SqlType::Int2,
        oid::INT4 | oid::OID => SqlType::Int4,
        oid::TEXT | oid::VARCHAR | oid::BPCHAR | oid::NAME => SqlType::Text,
        oid::JSON | oid::JSONB => SqlType::Jsonb,
        oid::FLOAT4 | oid::FLOAT8 => SqlType::Float8,
        oid::DATE => SqlType::Date,
        oid::TIMESTAMP => SqlType::Timestamp,
        oid::TIMESTAMPTZ => SqlType::Timestamptz,
        oid::INTERVAL => SqlType::Interval,
        oid::NUMERIC => SqlType::Numeric,
        oid::UUID => SqlType::Uuid,
        _ => return None,
    })
}

/// A value's text form (None for NULL).
pub fn encode_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        other => Some(walden_sql::value::display(other)),
    }
}

/// A value's binary form as a column of type `ty` (None for NULL).
pub fn encode_binary(v: &Value, ty: SqlType) -> SqlResult<Option<Vec<u8>>> {
    if matches!(v, Value::Null) {
        return Ok(None);
    }
    let int = || walden_sql::value::as_i64(v).unwrap_or(0);
    Ok(Some(match ty {
        SqlType::Int2 => (int() as i16).to_be_bytes().to_vec(),
        SqlType::Int4 => (int() as i32).to_be_bytes().to_vec(),
        SqlType::Int8 => int().to_be_bytes().to_vec(),
        SqlType::Float8 => {
            let x = match v {
                Value::Float8(x) => *x,
                Value::Numeric(n) => n.to_f64(),
                _ => int() as f64,
            };
            x.to_bits().to_be_bytes().to_vec()
        }
        SqlType::Bool => vec![matches!(v, Value::Bool(true)) as u8],
        SqlType::Uuid => match v {
            Value::Uuid(u) => u.to_vec(),
            _ => return Err(unencodable(v, ty)),
        },
        SqlType::Date => match v {
            Value::Date(d) => d.to_be_bytes().to_vec(),
            _ => return Err(unencodable(v, ty)),
        },
        SqlType::Timestamp | SqlType::Timestamptz => match v {
            Value::Timestamp(t) | Value::Timestamptz(t) => t.to_be_bytes().to_vec(),
            _ => return Err(unencodable(v, ty)),
        },
        SqlType::Interval => match v {
            Value::Interval(iv) => {
                let mut out = Vec::with_capacity(16);
                out.extend_from_slice(&iv.micros.to_be_bytes());
                out.extend_from_slice(&iv.days.to_be_bytes());
                out.extend_from_slice(&iv.months.to_be_bytes());
                out
            }
            _ => return Err(unencodable(v, ty)),
        },
        SqlType::Bytea => match v {
            Value::Bytea(b) => b.clone(),
            _ => return Err(unencodable(v, ty)),
        },
        SqlType::Numeric => match v {
            Value::Numeric(n) => numeric_send(*n),
            _ => numeric_send(Numeric::from_i64(int())),
        },
        SqlType::Jsonb => {
            let mut out = vec![1u8];
            out.extend_from_slice(encode_text(v).unwrap_or_default().as_bytes());
            out
        }
        SqlType::Text | SqlType::Bpchar | SqlType::Null => {
            encode_text(v).unwrap_or_default().into_bytes()
        }
        SqlType::Record(shape) => record_send(v, shape)?,
    }))
}

/// A record's binary form, as PostgreSQL's `record_send`: the number of fields, then
/// each field's type OID, length (-1 for NULL) and binary form.
fn record_send(v: &Value, shape: walden_sql::record::RecordShape) -> SqlResult<Vec<u8>> {
    let Value::Text(text) = v else {
        return Err(unencodable(v, SqlType::Record(shape)));
    };
    let fields = walden_sql::record::fields(text)?;
    let types = shape.fields();
    let mut out = (types.len() as i32).to_be_bytes().to_vec();
    for (i, (_, ty)) in types.iter().enumerate() {
        out.extend_from_slice(&type_oid(*ty).to_be_bytes());
        let value = match fields.get(i) {
            Some(Some(f)) => walden_sql::value::parse_text(f, *ty)?,
            _ => Value::Null,
        };
        match encode_binary(&value, *ty)? {
            Some(bytes) => {
                out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                out.extend_from_slice(&bytes);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    Ok(out)
}

fn unencodable(v: &Value, ty: SqlType) -> SqlError {
    SqlError::new(
        code::INTERNAL,
        format!("cannot send {v} in binary as type {}", ty.name()),
    )
}

/// A parameter's value from its bytes: `binary` as the Bind message's format code
/// says, read as the type the client gave (`client_oid`, 0 for none) or else as the
/// statement needs it (`ty`).
pub fn decode_param(bytes: &[u8], binary: bool, client_oid: u32, ty: SqlType) -> SqlResult<Value> {
    let ty = type_of_oid(client_oid).unwrap_or(ty);
    if !binary {
        let text = std::str::from_utf8(bytes).map_err(|_| bad_encoding())?;
        if text.contains('\0') {
            return Err(walden_sql::error::nul_in_text());
        }
        return match ty {
            SqlType::Null | SqlType::Text | SqlType::Bpchar => Ok(Value::Text(text.to_string())),
            _ => walden_sql::value::parse_text(text, ty),
        };
    }
    let fixed = |n: usize| -> SqlResult<&[u8]> {
        if bytes.len() == n {
            Ok(bytes)
        } else {
            Err(SqlError::new(
                INVALID_BINARY,
                format!(
                    "incorrect binary data format in bind parameter: {} bytes for type {} (expected {n})",
                    bytes.len(),
                    ty.name()
                ),
            ))
        }
    };
    Ok(match (ty, client_oid) {
        (SqlType::Float8, oid::FLOAT4) => {
            let b = fixed(4)?;
            Value::Float8(f32::from_be_bytes([b[0], b[1], b[2], b[3]]) as f64)
        }
        (SqlType::Int2, _) => {
            let b = fixed(2)?;
            Value::Int2(i16::from_be_bytes([b[0], b[1]]))
        }
        (SqlType::Int4, _) => {
            let b = fixed(4)?;
            Value::Int4(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        }
        (SqlType::Int8, _) => Value::Int8(i64::from_be_bytes(array8(fixed(8)?))),
        (SqlType::Float8, _) => {
            Value::Float8(f64::from_bits(u64::from_be_bytes(array8(fixed(8)?))))
        }
        (SqlType::Bool, _) => Value::Bool(fixed(1)?[0] != 0),
        (SqlType::Uuid, _) => {
            let mut u = [0u8; 16];
            u.copy_from_slice(fixed(16)?);
            Value::Uuid(u)
        }
        (SqlType::Date, _) => {
            let b = fixed(4)?;
            Value::Date(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        }
        (SqlType::Timestamp, _) => Value::Timestamp(i64::from_be_bytes(array8(fixed(8)?))),
        (SqlType::Timestamptz, _) => Value::Timestamptz(i64::from_be_bytes(array8(fixed(8)?))),
        (SqlType::Interval, _) => {
            let b = fixed(16)?;
            Value::Interval(Interval {
                micros: i64::from_be_bytes(array8(&b[..8])),
                days: i32::from_be_bytes([b[8], b[9], b[10], b[11]]),
                months: i32::from_be_bytes([b[12], b[13], b[14], b[15]]),
            })
        }
        (SqlType::Bytea, _) => Value::Bytea(bytes.to_vec()),
        (SqlType::Numeric, _) => Value::Numeric(numeric_recv(bytes)?),
        (SqlType::Jsonb, o) => {
            // jsonb's binary form is a version byte (1) and the text; json's is the text.
            let text = if o == oid::JSON {
                bytes
            } else {
                match bytes.split_first() {
                    Some((1, rest)) => rest,
                    _ => {
                        return Err(SqlError::new(
                            INVALID_BINARY,
                            "unsupported jsonb version number in bind parameter",
                        ))
                    }
                }
            };
            let text = std::str::from_utf8(text).map_err(|_| bad_encoding())?;
            walden_sql::value::parse_text(text, SqlType::Jsonb)?
        }
        // No parameter is declared a record (`type_of_oid`).
        (SqlType::Record(_), _) => {
            return Err(SqlError::new(
                code::FEATURE_NOT_SUPPORTED,
                "input of anonymous composite types is not implemented",
            ))
        }
        (SqlType::Text | SqlType::Bpchar | SqlType::Null, _) => {
            let text = std::str::from_utf8(bytes).map_err(|_| bad_encoding())?;
            if text.contains('\0') {
                return Err(walden_sql::error::nul_in_text());
            }
            Value::Text(text.to_string())
        }
    })
}

fn array8(b: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    a
}

fn bad_encoding() -> SqlError {
    SqlError::new(
        code::CHARACTER_NOT_IN_REPERTOIRE,
        "invalid byte sequence for encoding \"UTF8\"",
    )
}

/// SQLSTATE invalid_binary_representation.
const INVALID_BINARY: &str = "22P03";

const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;

/// numeric_send: digit count, weight (of the first base-10000 digit), sign, display
/// scale, then the digits.
fn numeric_send(n: Numeric) -> Vec<u8> {
    let scale = n.scale() as usize;
    let digits = n.mantissa().unsigned_abs().to_string();
    // Integer and fraction digits, the fraction padded to whole groups of four and the
    // integer part to the left.
    let (int, frac) = if digits.len() > scale {
        digits.split_at(digits.len() - scale)
    } else {
        ("", digits.as_str())
    };
    let frac = format!("{}{frac}", "0".repeat(scale - frac.len()));
    let int_pad = (4 - int.len() % 4) % 4;
    let int = format!("{}{int}", "0".repeat(int_pad));
    let frac_pad = (4 - frac.len() % 4) % 4;
    let frac = format!("{frac}{}", "0".repeat(frac_pad));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| c.iter().fold(0i16, |a, d| a * 10 + (d - b'0') as i16))
            .collect()
    };
    let int_groups = group(&int);
    let mut all = int_groups.clone();
    all.extend(group(&frac));
    let mut weight = int_groups.len() as i16 - 1;
    // Leading and trailing zero groups are not sent.
    let first = all.iter().position(|&d| d != 0);
    let (digits, sign) = match first {
        None => (Vec::new(), 0u16),
        Some(f) => {
            weight -= f as i16;
            let last = all.iter().rposition(|&d| d != 0).unwrap_or(f);
            (
                all[f..=last].to_vec(),
                if n.signum() < 0 { NUMERIC_NEG } else { 0 },
            )
        }
    };
    let weight = if digits.is_empty() { 0 } else { weight };
    let mut out = Vec::with_capacity(8 + 2 * digits.len());
    out.extend_from_slice(&(digits.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for d in digits {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out
}

/// numeric_recv, into Walden's exact decimal (through its text, which checks the
/// range: up to 38 significant digits).
fn numeric_recv(b: &[u8]) -> SqlResult<Numeric> {
    let bad = || SqlError::new(INVALID_BINARY, "invalid numeric in bind parameter");
    if b.len() < 8 {
        return Err(bad());
    }
    let word = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
    let ndigits = word(0) as usize;
    let weight = word(2) as i16 as i32;
    let sign = word(4);
    let dscale = word(6) as usize;
    if b.len() != 8 + 2 * ndigits || dscale > 1000 || weight.abs() > 1000 {
        return Err(bad());
    }
    if sign == NUMERIC_NAN || sign & 0x2000 != 0 {
        return Err(SqlError::unsupported(
            "numeric NaN and infinity (only finite numerics are held)",
        ));
    }
    if sign != 0 && sign != NUMERIC_NEG {
        return Err(bad());
    }
    let mut int = String::new();
    let mut frac = String::new();
    for i in 0..ndigits {
        let d = word(8 + 2 * i);
        if d >= 10000 {
            return Err(bad());
        }
        let pos = weight - i as i32;
        if pos >= 0 {
            int.push_str(&format!("{d:04}"));
        } else {
            // Groups between the point and this one (weight below -1) are zeros.
            if frac.is_empty() && pos < -1 {
                frac.push_str(&"0000".repeat((-pos - 1) as usize));
            }
            frac.push_str(&format!("{d:04}"));
        }
    }
    // Integer groups after the last digit sent (weight past the digits) are zeros.
    let sent_int = (weight + 1).max(0) as usize;
    let have_int = int.len() / 4;
    if sent_int > have_int {
        int.push_str(&"0000".repeat(sent_int - have_int));
    }
    frac.truncate(dscale);
    while frac.len() < dscale {
        frac.push('0');
    }
    let int = int.trim_start_matches('0');
    let text = format!(
        "{}{}{}{}",
        if sign == NUMERIC_NEG { "-" } else { "" },
        if int.is_empty() { "0" } else { int },
        if dscale > 0 { "." } else { "" },
        frac
    );
    walden_sql::value::parse_text(&text, SqlType::Numeric).and_then(|v| match v {
        Value::Numeric(n) => Ok(n),
        _ => Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_go_and_come_back() {
        for text in [
            "0",
            "1",
            "-1",
            "12345",
            "10000",
            "0.5",
            "-0.0001",
            "123.4500",
            "99999999.99999",
            "100000000",
            "0.00000001",
            "-987654321.123456789",
            "1.0",
        ] {
            let n = Numeric::parse(text).expect("parses");
            let wire = numeric_send(n);
            let back = numeric_recv(&wire).expect("decodes");
            assert_eq!(back.to_string(), n.to_string(), "{text}");
        }
        // PostgreSQL's bytes for 12345.678 (numeric_send): 3 digits, weight 1, dscale 3:
        // 1, 2345, 6780.
        let n = Numeric::parse("12345.678").expect("parses");
        assert_eq!(
            numeric_send(n),
            vec![0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]
        );
        assert!(numeric_recv(&[0, 1, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(numeric_recv(&[0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10]).is_err());
    }

    #[test]
    fn fixed_width_params_check_their_length() {
        assert!(decode_param(&[0, 0, 1], true, 0, SqlType::Int4).is_err());
        assert_eq!(
            decode_param(&[0, 0, 1, 0], true, 0, SqlType::Int4).ok(),
            Some(Value::Int4(256))
        );
        assert_eq!(
            decode_param(b"42", false, 0, SqlType::Int8).ok(),
            Some(Value::Int8(42))
        );
        assert!(decode_param(&[0xff, 0xfe], false, 0, SqlType::Text).is_err());
        assert!(decode_param(b"a\0b", false, 0, SqlType::Text).is_err());
    }
}
