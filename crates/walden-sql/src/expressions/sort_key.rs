//! Sort keys and key bytes: how kept rows order by their sort keys (`compare_keys`,
//! `sort_kept`), and values as bytes that equal values share, for hashing (`key_bytes`).

use std::cmp::Ordering;

use walden::Value;

use crate::guard::Guard;
use crate::value::{self, as_i64, sort_cmp};

/// A value as a key that equal numbers share (1, 1.0 and 1::int8 alike).
pub(crate) fn norm_key(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Float8(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => {
            key_bytes(&[Value::Int8(*x as i64)], out)
        }
        other => key_bytes(std::slice::from_ref(other), out),
    }
}

/// A kept row's sort keys against another's: the ORDER BY list, each key ascending or
/// descending with its NULLs first or last.
pub(crate) fn compare_keys<K>(order: &[(K, bool, bool)], a: &[Value], b: &[Value]) -> Ordering {
    for (i, (_, desc, nulls_first)) in order.iter().enumerate() {
        let o = compare_key(&a[i], &b[i], *desc, *nulls_first);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Sorts kept rows (output values, sort keys) by their first `n` keys, stably. A
/// cancel request is honoured after it (the caller checks): a comparison that gave up
/// early would not be a total order, which Rust's sorts may panic on.
///
/// When every value of the first key is text, or every one an integer, the rows are
/// sorted through an 8-byte prefix of that key held beside each row's position (as
/// PostgreSQL's abbreviated keys): most comparisons are then of two integers in one
/// array, not of values reached through two pointers each. Prefixes order as their
/// values do (text compares bytewise, and no text holds a NUL byte), so rows whose
/// prefixes differ are in the right order; equal prefixes are compared in full, and
/// equal rows keep their order.
pub(crate) fn sort_kept<K>(
    rows: &mut Vec<(Vec<Value>, Vec<Value>)>,
    order: &[(K, bool, bool)],
    n: usize,
    guard: &Guard,
) {
    // Canceled already: left unsorted, the caller's check reports it.
    if guard.cancelled() {
        return;
    }
    let full = |a: &[Value], b: &[Value]| compare_keys(order, &a[..n], &b[..n]);
    #[derive(PartialEq)]
    enum Prefix {
        Text,
        Int,
    }
    let mut kind = None;
    let mut usable = n > 0 && rows.len() >= 64;
    if usable {
        for r in rows.iter() {
            let k = match r.1.first() {
                Some(Value::Null) => continue,
                Some(Value::Text(_)) => Prefix::Text,
                Some(Value::Int2(_) | Value::Int4(_) | Value::Int8(_)) => Prefix::Int,
                _ => {
                    usable = false;
                    break;
                }
            };
            match &kind {
                None => kind = Some(k),
                Some(seen) if *seen == k => {}
                Some(_) => {
                    usable = false;
                    break;
                }
            }
        }
    }
    if !usable {
        rows.sort_by(|a, b| full(&a.1, &b.1));
        return;
    }
    let (desc, nulls_first) = (order[0].1, order[0].2);
    // (class: NULLs before or after the values, prefix, position)
    let mut keyed: Vec<(u8, u64, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let p = match r.1.first() {
                Some(Value::Text(t)) => {
                    let mut b = [0u8; 8];
                    let len = t.len().min(8);
                    b[..len].copy_from_slice(&t.as_bytes()[..len]);
                    u64::from_be_bytes(b)
                }
                Some(v @ (Value::Int2(_) | Value::Int4(_) | Value::Int8(_))) => {
                    (as_i64(v).unwrap_or(0) as u64) ^ (1 << 63)
                }
                _ => return (if nulls_first { 0 } else { 2 }, 0, i),
            };
            (1, if desc { !p } else { p }, i)
        })
        .collect();
    keyed.sort_unstable_by(|a, b| {
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then_with(|| full(&rows[a.2].1, &rows[b.2].1).then(a.2.cmp(&b.2)))
    });
    let mut taken: Vec<Option<(Vec<Value>, Vec<Value>)>> = rows.drain(..).map(Some).collect();
    rows.extend(keyed.iter().filter_map(|k| taken[k.2].take()));
}

/// How two values of one sort key order, the key descending or not, NULLs first or
/// last.
pub(crate) fn compare_key(x: &Value, y: &Value, desc: bool, nulls_first: bool) -> Ordering {
    match (matches!(x, Value::Null), matches!(y, Value::Null)) {
        (true, true) => Ordering::Equal,
        (true, false) if nulls_first => Ordering::Less,
        (true, false) => Ordering::Greater,
        (false, true) if nulls_first => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) if desc => sort_cmp(x, y).reverse(),
        (false, false) => sort_cmp(x, y),
    }
}

/// A group-by key as bytes, so that equal values hash alike (1 as int4 and int8 too).
pub(crate) fn key_bytes(vals: &[Value], out: &mut Vec<u8>) {
    out.clear();
    for v in vals {
        push_key(v, out);
    }
}

/// Appends one value's key bytes (see `key_bytes`).
pub(crate) fn push_key(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(0),
        Value::Float8(x) => {
            out.push(2);
            let x = if *x == 0.0 { 0.0 } else { *x };
            out.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        Value::Text(s) => {
            out.push(3);
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bool(b) => out.extend_from_slice(&[4, *b as u8]),
        Value::Uuid(u) => {
            out.push(5);
            out.extend_from_slice(u);
        }
        // Dates and timestamps that compare equal hash alike (a date as its midnight),
        // and so do intervals of one span ('1 mon' and '30 days').
        Value::Date(_) | Value::Timestamp(_) | Value::Timestamptz(_) => {
            out.push(6);
            let micros = value::instant_micros(v).unwrap_or(0);
            out.extend_from_slice(&micros.to_le_bytes());
        }
        Value::Interval(iv) => {
            out.push(7);
            out.extend_from_slice(&iv.span_micros().to_le_bytes());
        }
        Value::Bytea(b) => {
            out.push(8);
            out.extend_from_slice(&(b.len() as u64).to_le_bytes());
            out.extend_from_slice(b);
        }
        // Numerics equal across scales (1.0, 1.00) hash alike, and an integral one as
        // the integer it equals.
        Value::Numeric(n) => match n.trunc(0).ok().filter(|t| t == n).and_then(|t| t.to_i64()) {
            Some(x) => {
                out.push(1);
                out.extend_from_slice(&x.to_le_bytes());
            }
            None => {
                let (m, exp) = n.normalized();
                out.push(9);
                out.extend_from_slice(&m.to_le_bytes());
                out.extend_from_slice(&exp.to_le_bytes());
            }
        },
        // Documents that compare equal (`1.0` and `1`) have one key.
        Value::Jsonb(j) => {
            out.push(10);
            let key = j.sort_key();
            out.extend_from_slice(&(key.len() as u64).to_le_bytes());
            out.extend_from_slice(&key);
        }
        other => {
            out.push(1);
            out.extend_from_slice(&as_i64(other).unwrap_or(0).to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorting through prefixes gives what a plain stable sort gives: text sharing
    /// long prefixes, integers of every width and sign, NULLs first or last, descending
    /// keys, ties on the first key broken by the second and then by arrival.
    #[test]
    fn prefix_sorts_give_the_plain_stable_order() {
        let cancel = crate::guard::CancelHandle::default();
        let guard = Guard::start(&cancel, u64::MAX);
        let mut rng = walden::rng::SimRng::new(7);
        let words = [
            "",
            "a",
            "ab",
            "abcdefgh",
            "abcdefghi",
            "abcdefgh\u{e9}",
            "b",
            "zz",
        ];
        for case in 0..200 {
            let ints = case % 2 == 0;
            let rows: Vec<(Vec<Value>, Vec<Value>)> = (0..300)
                .map(|i| {
                    let first = match rng.below(10) {
                        0 => Value::Null,
                        _ if ints => match rng.below(3) {
                            0 => Value::Int2(rng.below(7) as i16 - 3),
                            1 => Value::Int4(rng.below(7) as i32 - 3),
                            _ => Value::Int8(if rng.chance(10) {
                                i64::MIN
                            } else {
                                rng.below(7) as i64 - 3
                            }),
                        },
                        _ => {
                            let w = words[rng.below(words.len() as u64) as usize];
                            Value::Text(format!("{w}{}", "x".repeat(rng.below(2) as usize)))
                        }
                    };
                    let second = Value::Int4(rng.below(3) as i32);
                    (vec![Value::Int4(i)], vec![first, second])
                })
                .collect();
            let order = [
                ((), case % 3 == 0, case % 5 == 0),
                ((), case % 7 == 0, false),
            ];
            let mut plain = rows.clone();
            plain.sort_by(|a, b| compare_keys(&order, &a.1, &b.1));
            let mut prefixed = rows;
            sort_kept(&mut prefixed, &order, 2, &guard);
            assert_eq!(prefixed, plain, "case {case}");
        }
    }
}
