//! Which argument types each scalar function takes, and the type it gives.

use super::Func;
use crate::types::SqlType;

impl Func {
    /// Whether the function takes arguments of these types.
    pub(super) fn accepts(self, args: &[SqlType]) -> bool {
        self.accepts_number_or_text(args) || self.accepts_other(args)
    }

    /// The arithmetic and text functions' argument checks.
    fn accepts_number_or_text(self, args: &[SqlType]) -> bool {
        use SqlType as T;
        // A bpchar reaches only LIKE and `~` (other functions take it as text).
        let text = |t: T| matches!(t, T::Text | T::Bpchar | T::Null);
        let int = |t: T| t.is_integer() || t == T::Null;
        let exact = |t: T| int(t) || t == T::Numeric;
        match (self, args) {
            (Func::Mod, [a, b]) => exact(*a) && exact(*b),
            (Func::Round | Func::Trunc | Func::Ceil | Func::Floor | Func::Sign, [a]) => {
                a.is_numeric() || *a == T::Null
            }
            // Only the numeric forms take a number of digits (round(float8, int) does
            // not exist in PostgreSQL).
            (Func::Round | Func::Trunc, [a, d]) => exact(*a) && int(*d),
            (Func::Abs, [a]) => a.is_numeric() || *a == T::Null,
            (Func::Lpad | Func::Rpad, [s, n]) => text(*s) && int(*n),
            (Func::Lpad | Func::Rpad, [s, n, f]) => text(*s) && int(*n) && text(*f),
            (Func::Repeat, [s, n]) => text(*s) && int(*n),
            (Func::Substr, [s, from]) => text(*s) && int(*from),
            (Func::Substr, [s, from, len]) => text(*s) && int(*from) && int(*len),
            (Func::Length | Func::OctetLength, [s]) => text(*s) || *s == T::Bytea,
            (Func::Upper | Func::Lower | Func::Reverse, [s]) => text(*s),
            (Func::Replace | Func::Translate, [s, a, b]) => text(*s) && text(*a) && text(*b),
            (Func::SplitPart, [s, d, n]) => text(*s) && text(*d) && int(*n),
            (Func::Left | Func::Right, [s, n]) => text(*s) && int(*n),
            (Func::Trim(_), [s]) => text(*s),
            (Func::Trim(_) | Func::Strpos, [s, c]) => text(*s) && text(*c),
            (Func::Md5, [s]) => text(*s) || *s == T::Bytea,
            (Func::Random | Func::GenRandomUuid, []) => true,
            _ => false,
        }
    }

    /// The date, bytea, pattern, array, jsonb, record and system functions' argument
    /// checks.
    fn accepts_other(self, args: &[SqlType]) -> bool {
        use SqlType as T;
        // A bpchar reaches only LIKE and `~` (other functions take it as text).
        let text = |t: T| matches!(t, T::Text | T::Bpchar | T::Null);
        let int = |t: T| t.is_integer() || t == T::Null;
        match (self, args) {
            (Func::Now | Func::CurrentDate | Func::LocalTimestamp | Func::Version, []) => true,
            (Func::DatePart | Func::Extract | Func::DateTrunc, [u, x]) => {
                text(*u) && (x.is_datetime() || matches!(x, T::Interval | T::Null))
            }
            (Func::ByteaConcat, [a, b]) => {
                matches!(a, T::Bytea | T::Null) && matches!(b, T::Bytea | T::Null)
            }
            (Func::Encode, [b, f]) => matches!(b, T::Bytea | T::Null) && text(*f),
            (Func::Decode, [s, f]) => text(*s) && text(*f),
            (Func::Age, [a, b]) => {
                let ts = |t: T| matches!(t, T::Timestamp | T::Timestamptz | T::Null);
                ts(*a) && ts(*b) && (a == b || *a == T::Null || *b == T::Null)
            }
            (Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval, [x]) => {
                matches!(x, T::Interval | T::Null)
            }
            (Func::ToTimestamp, [x]) => x.is_numeric() || *x == T::Null,
            (Func::MakeDate, [y, m, d]) => int(*y) && int(*m) && int(*d),
            (Func::ToChar, [x, f]) => x.is_datetime() && text(*f),
            (Func::Like | Func::ILike, [a, p, e]) => text(*a) && text(*p) && text(*e),
            (Func::RegexMatch | Func::RegexIMatch | Func::EqAnyArray, [a, p]) => {
                text(*a) && text(*p)
            }
            (Func::ArrayToString, [a, s]) => text(*a) && text(*s),
            (Func::ArrayPosition, [a, x]) => text(*a) && text(*x),
            (Func::ArrayUpper | Func::ArrayElement, [a, d]) => text(*a) && int(*d),
            (Func::JsonbTypeof | Func::JsonbArrayLength, [j]) => {
                matches!(j, T::Jsonb | T::Null)
            }
            (Func::JsonbBuildObject | Func::JsonbBuildArray, _) => true,
            (Func::ToJsonb, [_]) => true,
            (Func::Row(_), _) => true,
            (Func::Field(shape, _), [r]) => matches!(r, T::Record(s) if *s == shape),
            (Func::BitAnd | Func::BitOr | Func::BitXor, [a, b]) => {
                (a.is_integer() || *a == T::Null) && (b.is_integer() || *b == T::Null)
            }
            (Func::CurrentSetting, [n]) => text(*n),
            (Func::CurrentSetting, [n, m]) => text(*n) && matches!(m, T::Bool | T::Null),
            (Func::SetConfig, [n, v, l]) => text(*n) && text(*v) && matches!(l, T::Bool | T::Null),
            // A regclass is an OID (an integer here) or a name as text.
            (Func::Nextval | Func::Currval, [r]) => text(*r) || int(*r),
            (Func::Lastval | Func::CurrentUser | Func::SessionUser, []) => true,
            (Func::Advisory(super::Advisory::UnlockAll), []) => true,
            (Func::Advisory(super::Advisory::Key { .. }), [k]) => int(*k),
            (Func::Advisory(super::Advisory::Key { .. }), [a, b]) => {
                matches!(a, T::Int2 | T::Int4 | T::Null) && matches!(b, T::Int2 | T::Int4 | T::Null)
            }
            (Func::Setval, [r, v]) => (text(*r) || int(*r)) && int(*v),
            (Func::Setval, [r, v, c]) => {
                (text(*r) || int(*r)) && int(*v) && matches!(c, T::Bool | T::Null)
            }
            _ => false,
        }
    }

    /// The result type, for arguments it accepts.
    pub(super) fn returns(self, args: &[SqlType]) -> SqlType {
        use SqlType as T;
        match self {
            Func::Mod | Func::Abs => {
                let t = args.iter().copied().fold(T::Null, T::wider);
                if t == T::Null {
                    T::Int4
                } else {
                    t
                }
            }
            // With one argument, an integer goes to float8 (PostgreSQL's preferred
            // numeric type), as round(5) does there.
            Func::Round | Func::Trunc if args.len() == 2 => T::Numeric,
            Func::Round | Func::Trunc | Func::Ceil | Func::Floor | Func::Sign => {
                if args[0] == T::Numeric {
                    T::Numeric
                } else {
                    T::Float8
                }
            }
            Func::Length | Func::OctetLength | Func::Strpos => T::Int4,
            Func::Nextval | Func::Currval | Func::Lastval | Func::Setval => T::Int8,
            // (void functions give NULL, as text.)
            Func::Advisory(super::Advisory::Key {
                op: super::AdvisoryOp::Try | super::AdvisoryOp::Unlock,
                ..
            }) => T::Bool,
            Func::Advisory(_) => T::Text,
            Func::Row(shape) => T::Record(shape),
            Func::Field(shape, i) => shape.fields()[i].1,
            Func::BitAnd | Func::BitOr | Func::BitXor => match T::wider(args[0], args[1]) {
                T::Null => T::Int4,
                t => t,
            },
            Func::Random | Func::DatePart | Func::Extract => T::Float8,
            Func::Now => T::Timestamptz,
            Func::Version => T::Text,
            Func::CurrentDate => T::Date,
            Func::LocalTimestamp => T::Timestamp,
            // A date is truncated as the timestamptz it converts to, as in PostgreSQL.
            Func::DateTrunc => match args[1] {
                T::Date | T::Null => T::Timestamptz,
                t => t,
            },
            Func::ByteaConcat | Func::Decode => T::Bytea,
            Func::Age | Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval => {
                T::Interval
            }
            Func::ToTimestamp => T::Timestamptz,
            Func::MakeDate => T::Date,
            Func::GenRandomUuid => T::Uuid,
            Func::Like | Func::ILike | Func::RegexMatch | Func::RegexIMatch | Func::EqAnyArray => {
                T::Bool
            }
            Func::ArrayUpper | Func::ArrayPosition | Func::JsonbArrayLength => T::Int4,
            Func::JsonbBuildObject | Func::JsonbBuildArray | Func::ToJsonb => T::Jsonb,
            _ => T::Text,
        }
    }
}
