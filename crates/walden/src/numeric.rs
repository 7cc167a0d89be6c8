//! Exact decimal numbers (PostgreSQL's `numeric`): the value, its stored bytes, its
//! index key, its text, and the arithmetic PostgreSQL defines on it (result scales,
//! rounding half away from zero). The engine prints values in its own messages and
//! orders index keys, so the representation lives here; the SQL layer calls the
//! arithmetic.
//!
//! A value is `mantissa × 10^-scale`, the scale being the display scale PostgreSQL calls
//! `dscale` (`1.50` has mantissa 150, scale 2). The mantissa is an `i128` of at most
//! [`MAX_DIGITS`] decimal digits: fewer than PostgreSQL's 131,072 digits before the point
//! and 16,383 after, so a result beyond that is "value overflows numeric format"
//! (22003). The stored form (docs/format.md, "Numeric") has no such limit, so a later
//! build can widen the mantissa without a format change.

use std::cmp::Ordering;
use std::fmt;

/// Significant decimal digits a value may have (between its highest and lowest digit).
pub const MAX_DIGITS: u32 = 38;
/// The largest display scale, PostgreSQL's NUMERIC_MAX_DISPLAY_SCALE.
pub const MAX_SCALE: u16 = 1000;
/// PostgreSQL's NUMERIC_MIN_SIG_DIGITS: a quotient has at least this many significant
/// digits.
const MIN_SIG_DIGITS: i32 = 16;

/// Why a numeric operation gave no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumericError {
    /// The result needs more than [`MAX_DIGITS`] digits or a scale beyond [`MAX_SCALE`].
    Overflow,
    DivisionByZero,
    /// Text that is not a number.
    Invalid,
    /// `NaN` or an infinity, which this build does not hold.
    NotFinite,
}

/// An exact decimal: `mantissa × 10^-scale`. Equality and order are by value
/// (`1.0 == 1.00`); the scale only changes how the value prints.
///
/// Aligned to 8 bytes, not an i128's 16, so that it is 24 bytes and a row value
/// holding one (`Value::Numeric`) stays as small as one holding a string.
#[derive(Debug, Clone, Copy)]
#[repr(C, packed(8))]
pub struct Numeric {
    mantissa: i128,
    scale: u16,
}

const _: () = assert!(std::mem::size_of::<Numeric>() == 24);

/// 10^n for n ≤ 38, else None.
fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// The bound every mantissa stays below, in magnitude: 10^MAX_DIGITS.
const LIMIT: i128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;
const _: () = assert!(LIMIT == 10i128.pow(MAX_DIGITS));

/// Decimal digits of a magnitude (0 has none).
fn digit_count(m: u128) -> u32 {
    if m == 0 {
        0
    } else {
        m.ilog10() + 1
    }
}

impl Numeric {
    pub const ZERO: Numeric = Numeric {
        mantissa: 0,
        scale: 0,
    };

    /// `mantissa × 10^-scale`, checked against the limits.
    pub fn new(mantissa: i128, scale: u16) -> Result<Numeric, NumericError> {
        if mantissa.unsigned_abs() >= LIMIT as u128 || scale > MAX_SCALE {
            return Err(NumericError::Overflow);
        }
        Ok(Numeric { mantissa, scale })
    }

    pub fn from_i64(x: i64) -> Numeric {
        Numeric {
            mantissa: x as i128,
            scale: 0,
        }
    }

    pub fn mantissa(self) -> i128 {
        self.mantissa
    }

    pub fn scale(self) -> u16 {
        self.scale
    }

    pub fn is_zero(self) -> bool {
        self.mantissa == 0
    }

    /// -1, 0 or 1.
    pub fn signum(self) -> i32 {
        self.mantissa.signum() as i32
    }

    /// Parses PostgreSQL's numeric input: blanks around, a sign, digits with at most one
    /// point, an optional exponent (`1.5e-3`). The scale is the digits after the point
    /// less the exponent, at least 0 (`1e3` is 1000, `1.50` keeps its two).
    pub fn parse(text: &str) -> Result<Numeric, NumericError> {
        let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
        let lower = t.to_ascii_lowercase();
        let unsigned = lower.trim_start_matches(['+', '-']);
        if matches!(unsigned, "nan" | "infinity" | "inf") && lower.len() - unsigned.len() <= 1 {
            return Err(NumericError::NotFinite);
        }
        let (negative, body) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let (number, exponent) = match body.find(['e', 'E']) {
            Some(i) => {
                let e = &body[i + 1..];
                let digits = e.trim_start_matches(['+', '-']);
                if digits.is_empty()
                    || e.len() - digits.len() > 1
                    || !digits.bytes().all(|b| b.is_ascii_digit())
                {
                    return Err(NumericError::Invalid);
                }
                // PostgreSQL refuses exponents beyond ±1000 as out of range.
                let x: i64 = e.parse().map_err(|_| NumericError::Overflow)?;
                if x.abs() > 1000 {
                    return Err(NumericError::Overflow);
                }
                (&body[..i], x)
            }
            None => (body, 0),
        };
        let (int_part, frac_part) = match number.split_once('.') {
            Some((a, b)) => (a, b),
            None => (number, ""),
        };
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (int_part.is_empty() && frac_part.is_empty())
            || !all_digits(int_part)
            || !all_digits(frac_part)
        {
            return Err(NumericError::Invalid);
        }
        let mut scale = frac_part.len() as i64 - exponent;
        let mut digits: Vec<u8> = int_part
            .bytes()
            .chain(frac_part.bytes())
            .map(|b| b - b'0')
            .collect();
        if scale < 0 {
            digits.extend(std::iter::repeat_n(0, (-scale) as usize));
            scale = 0;
        }
        if scale > MAX_SCALE as i64 {
            return Err(NumericError::Overflow);
        }
        let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
        let significant = &digits[first..];
        if significant.len() > MAX_DIGITS as usize {
            return Err(NumericError::Overflow);
        }
        let magnitude = significant.iter().fold(0i128, |m, &d| m * 10 + d as i128);
        Numeric::new(if negative { -magnitude } else { magnitude }, scale as u16)
    }

    /// Aligns two values to one scale (the larger): their mantissas and that scale;
    /// None when a mantissa overflows on the way.
    fn align(self, other: Numeric) -> Option<(i128, i128, u16)> {
        let scale = self.scale.max(other.scale);
        let up = |n: Numeric| -> Option<i128> {
            if n.mantissa == 0 {
                return Some(0);
            }
            n.mantissa.checked_mul(pow10((scale - n.scale) as u32)?)
        };
        Some((up(self)?, up(other)?, scale))
    }

    pub fn checked_add(self, other: Numeric) -> Result<Numeric, NumericError> {
        let (a, b, scale) = self.align(other).ok_or(NumericError::Overflow)?;
        Numeric::new(a.checked_add(b).ok_or(NumericError::Overflow)?, scale)
    }

    pub fn checked_sub(self, other: Numeric) -> Result<Numeric, NumericError> {
        self.checked_add(other.negated())
    }

    pub fn negated(self) -> Numeric {
        Numeric {
            mantissa: -self.mantissa,
            scale: self.scale,
        }
    }

    pub fn abs(self) -> Numeric {
        Numeric {
            mantissa: self.mantissa.abs(),
            scale: self.scale,
        }
    }

    /// The product, at the sum of the scales (PostgreSQL's numeric_mul).
    pub fn checked_mul(self, other: Numeric) -> Result<Numeric, NumericError> {
        let scale = self.scale as u32 + other.scale as u32;
        let m = self
            .mantissa
            .checked_mul(other.mantissa)
            .ok_or(NumericError::Overflow)?;
        if scale > MAX_SCALE as u32 {
            // PostgreSQL caps the scale, rounding the product.
            let m = round_mantissa(m, scale - MAX_SCALE as u32, Rounding::HalfAway)?;
            return Numeric::new(m, MAX_SCALE);
        }
        Numeric::new(m, scale as u16)
    }

    /// The exponent of the leading digit (`123.4` → 2, `0.05` → -2); None for zero.
    fn leading_exponent(self) -> Option<i32> {
        let n = digit_count(self.mantissa.unsigned_abs());
        (n > 0).then(|| n as i32 - 1 - self.scale as i32)
    }

    /// PostgreSQL's weight and first digit in base 10000 (select_div_scale).
    fn base10000_lead(self) -> (i32, u32) {
        let Some(e) = self.leading_exponent() else {
            return (0, 0);
        };
        let weight = e.div_euclid(4);
        // The first base-10000 digit: the decimal digits from 10^e down to 10^(4·weight).
        let width = (e - 4 * weight + 1) as u32;
        let magnitude = self.mantissa.unsigned_abs();
        let n = digit_count(magnitude);
        let first = if n >= width {
            magnitude / 10u128.pow(n - width)
        } else {
            magnitude * 10u128.pow(width - n)
        };
        (weight, first as u32)
    }

    /// The scale of a quotient (PostgreSQL's select_div_scale): at least 16 significant
    /// digits, and not below either operand's scale.
    pub fn div_scale(self, other: Numeric) -> u16 {
        let (w1, d1) = self.base10000_lead();
        let (w2, d2) = other.base10000_lead();
        let mut qweight = w1 - w2;
        if d1 <= d2 {
            qweight -= 1;
        }
        let scale = (MIN_SIG_DIGITS - qweight * 4)
            .max(self.scale as i32)
            .max(other.scale as i32)
            .clamp(0, MAX_SCALE as i32);
        scale as u16
    }

    /// The quotient at PostgreSQL's scale (`div_scale`), rounded half away from zero.
    pub fn checked_div(self, other: Numeric) -> Result<Numeric, NumericError> {
        self.div_at(other, self.div_scale(other))
    }

    /// The quotient at `scale` digits after the point, rounded half away from zero.
    pub fn div_at(self, other: Numeric, scale: u16) -> Result<Numeric, NumericError> {
        if other.mantissa == 0 {
            return Err(NumericError::DivisionByZero);
        }
        if self.mantissa == 0 {
            return Numeric::new(0, scale);
        }
        // q = a·10^(scale + s2 - s1) / b, by long division on magnitudes.
        let shift = scale as i64 + other.scale as i64 - self.scale as i64;
        let mut num = self.mantissa.unsigned_abs();
        let mut den = other.mantissa.unsigned_abs();
        let mut extra = 0u32;
        if shift >= 0 {
            extra = shift as u32;
        } else {
            for _ in 0..(-shift) {
                match den.checked_mul(10) {
                    Some(d) => den = d,
                    // The divisor outgrew every dividend: the quotient rounds to zero.
                    None => return Numeric::new(0, scale),
                }
            }
        }
        let mut q = num / den;
        num %= den;
        for _ in 0..extra {
            let r = num.checked_mul(10).ok_or(NumericError::Overflow)?;
            q = q
                .checked_mul(10)
                .and_then(|q| q.checked_add(r / den))
                .ok_or(NumericError::Overflow)?;
            num = r % den;
            if q >= LIMIT as u128 {
                return Err(NumericError::Overflow);
            }
        }
        let next = num.checked_mul(10).ok_or(NumericError::Overflow)? / den;
        if next >= 5 {
            q += 1;
        }
        let q = i128::try_from(q).map_err(|_| NumericError::Overflow)?;
        let negative = (self.mantissa < 0) != (other.mantissa < 0);
        Numeric::new(if negative { -q } else { q }, scale)
    }

    /// The remainder of truncating division, with the dividend's sign, at the larger
    /// scale (PostgreSQL's numeric_mod).
    pub fn checked_rem(self, other: Numeric) -> Result<Numeric, NumericError> {
        if other.mantissa == 0 {
            return Err(NumericError::DivisionByZero);
        }
        let (a, b, scale) = self.align(other).ok_or(NumericError::Overflow)?;
        Numeric::new(a % b, scale)
    }

    /// Rounded half away from zero to `digits` after the point (negative: before it);
    /// the result's scale is `digits`, at least 0 (PostgreSQL's round(numeric, int)).
    pub fn round(self, digits: i32) -> Result<Numeric, NumericError> {
        self.rescale(digits, Rounding::HalfAway)
    }

    /// Truncated toward zero to `digits` after the point (PostgreSQL's trunc).
    pub fn trunc(self, digits: i32) -> Result<Numeric, NumericError> {
        self.rescale(digits, Rounding::Toward)
    }

    /// The smallest integer not below the value, scale 0.
    pub fn ceil(self) -> Result<Numeric, NumericError> {
        self.rescale(0, Rounding::Ceil)
    }

    /// The largest integer not above the value, scale 0.
    pub fn floor(self) -> Result<Numeric, NumericError> {
        self.rescale(0, Rounding::Floor)
    }

    fn rescale(self, digits: i32, how: Rounding) -> Result<Numeric, NumericError> {
        let digits = digits.clamp(-(MAX_SCALE as i32), MAX_SCALE as i32);
        let out_scale = digits.max(0) as u16;
        let cur = self.scale as i32;
        if digits >= cur {
            // More digits than the value has: only the scale grows.
            let up = (digits - cur) as u32;
            if self.mantissa == 0 {
                return Numeric::new(0, out_scale);
            }
            let m = pow10(up)
                .and_then(|p| self.mantissa.checked_mul(p))
                .ok_or(NumericError::Overflow)?;
            return Numeric::new(m, out_scale);
        }
        let cut = (cur - digits) as u32;
        let m = round_mantissa(self.mantissa, cut, how)?;
        // Digits before the point rounded away come back as zeros (round(1234, -2)).
        let back = (-digits).max(0) as u32;
        let m = if m == 0 {
            0
        } else {
            pow10(back)
                .and_then(|p| m.checked_mul(p))
                .ok_or(NumericError::Overflow)?
        };
        Numeric::new(m, out_scale)
    }

    /// Rounded half away from zero to an integer, if it fits an i64 (PostgreSQL's
    /// numeric → bigint).
    pub fn to_i64(self) -> Option<i64> {
        let m = round_mantissa(self.mantissa, self.scale as u32, Rounding::HalfAway).ok()?;
        i64::try_from(m).ok()
    }

    /// The nearest float8 (PostgreSQL parses the value's text with strtod).
    pub fn to_f64(self) -> f64 {
        self.to_string().parse().unwrap_or(f64::NAN)
    }

    /// A float8 as a numeric, as PostgreSQL's float8_numeric does: the float printed to
    /// 15 significant digits (`%.15g`) and parsed back.
    pub fn from_f64(x: f64) -> Result<Numeric, NumericError> {
        if !x.is_finite() {
            return Err(NumericError::NotFinite);
        }
        let sci = format!("{x:.14e}");
        let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.trim_end_matches('0').trim_end_matches('.')
        } else {
            mantissa
        };
        Numeric::parse(&format!("{mantissa}e{exponent}"))
    }

    /// Rounds to a column's `numeric(precision, scale)`: the value at `scale` digits,
    /// which must then round to an absolute value below 10^(precision - scale)
    /// (PostgreSQL's apply_typmod); Err carries nothing, the caller knows the typmod.
    pub fn fit(self, precision: i32, scale: i32) -> Result<Numeric, NumericError> {
        let v = self.round(scale)?;
        if let Some(e) = v.leading_exponent() {
            if e + 1 > precision - scale {
                return Err(NumericError::Overflow);
            }
        }
        Ok(v)
    }

    /// The value without trailing zeros: its significant digits as an integer and the
    /// power of ten they are scaled by (`1.50` → (15, -1)); zero is (0, 0).
    pub fn normalized(self) -> (i128, i32) {
        let mut m = self.mantissa;
        let mut exp = -(self.scale as i32);
        if m == 0 {
            return (0, 0);
        }
        while m % 10 == 0 {
            m /= 10;
            exp += 1;
        }
        (m, exp)
    }

    /// Appends the stored form: sign byte (0 positive or zero, 1 negative), scale u16
    /// little-endian, then the mantissa's magnitude in base-10000 digits, most
    /// significant first, each u16 little-endian, without leading zero digits.
    pub fn encode(self, out: &mut Vec<u8>) {
        out.push((self.mantissa < 0) as u8);
        out.extend_from_slice(&self.scale.to_le_bytes());
        let mut m = self.mantissa.unsigned_abs();
        let mut digits = Vec::new();
        while m > 0 {
            digits.push((m % 10_000) as u16);
            m /= 10_000;
        }
        for d in digits.iter().rev() {
            out.extend_from_slice(&d.to_le_bytes());
        }
    }

    /// Bytes of the stored form.
    pub fn encoded_len(self) -> usize {
        3 + 2 * digit_count(self.mantissa.unsigned_abs()).div_ceil(4) as usize
    }

    /// Reads a stored form (all of `bytes`); a reason when they are not one this build
    /// holds.
    pub fn decode(bytes: &[u8]) -> Result<Numeric, String> {
        let (&sign, rest) = bytes.split_first().ok_or("numeric has no sign byte")?;
        if sign > 1 {
            return Err(format!("numeric sign byte {sign}"));
        }
        let scale = rest.get(..2).ok_or("numeric has no scale")?;
        let scale = u16::from_le_bytes([scale[0], scale[1]]);
        let digits = &rest[2..];
        if digits.len() % 2 != 0 {
            return Err("numeric digits end in half a digit".into());
        }
        let mut m: i128 = 0;
        for (i, d) in digits.chunks_exact(2).enumerate() {
            let d = u16::from_le_bytes([d[0], d[1]]);
            if d >= 10_000 || (i == 0 && d == 0) {
                return Err(format!("numeric digit {d} at {i}"));
            }
            m = m
                .checked_mul(10_000)
                .map(|m| m + d as i128)
                .filter(|m| *m < LIMIT)
                .ok_or(format!("numeric of more than {MAX_DIGITS} digits"))?;
        }
        if sign == 1 && m == 0 {
            return Err("numeric negative zero".into());
        }
        Numeric::new(if sign == 1 { -m } else { m }, scale)
            .map_err(|_| format!("numeric scale {scale}"))
    }

    /// Appends the index key (after the value tag): a class byte (1 negative, 2 zero, 3
    /// positive); for a nonzero value then the exponent `e` of `0.d1d2… × 10^e` as an
    /// i16 big-endian with the sign bit flipped, the significant digits without trailing
    /// zeros in pairs, each pair `10·d1 + d2 + 1` (1 to 100; an odd last digit is paired
    /// with 0), and a 0 byte. A negative value's exponent and digit bytes are inverted
    /// (`!e`, `255 - pair`) and its end byte is 255, so bytewise order is numeric order
    /// and values equal across scales (`1.0`, `1.00`) have one key.
    pub fn push_key(self, out: &mut Vec<u8>) {
        let (m, exp) = self.normalized();
        if m == 0 {
            out.push(2);
            return;
        }
        let negative = m < 0;
        let digits = m.unsigned_abs().to_string().into_bytes();
        let e = exp + digits.len() as i32;
        let e_bytes = ((e as i16 as u16) ^ 0x8000).to_be_bytes();
        out.push(if negative { 1 } else { 3 });
        let flip = |b: u8| if negative { !b } else { b };
        out.extend(e_bytes.iter().map(|&b| flip(b)));
        for pair in digits.chunks(2) {
            let hi = pair[0] - b'0';
            let lo = pair.get(1).map_or(0, |d| d - b'0');
            out.push(flip(hi * 10 + lo + 1));
        }
        out.push(flip(0));
    }

    /// Reads a key written by [`Numeric::push_key`] from the front of `key`, advancing
    /// it. The scale is the fewest digits the value needs (`1.50` reads back `1.5`).
    pub fn read_key(key: &mut &[u8]) -> Option<Numeric> {
        let (&class, rest) = key.split_first()?;
        *key = rest;
        let negative = match class {
            2 => return Some(Numeric::ZERO),
            1 => true,
            3 => false,
            _ => return None,
        };
        let flip = |b: u8| if negative { !b } else { b };
        if key.len() < 2 {
            return None;
        }
        let e = (u16::from_be_bytes([flip(key[0]), flip(key[1])]) ^ 0x8000) as i16 as i32;
        *key = &key[2..];
        let mut m: i128 = 0;
        let mut count = 0i32;
        loop {
            let (&b, rest) = key.split_first()?;
            *key = rest;
            let pair = flip(b);
            if pair == 0 {
                break;
            }
            if pair > 100 {
                return None;
            }
            m = m.checked_mul(100)?.checked_add((pair - 1) as i128)?;
            count += 2;
        }
        if m == 0 {
            return None;
        }
        while m % 10 == 0 {
            m /= 10;
            count -= 1;
        }
        let scale = count - e;
        let (m, scale) = if scale < 0 {
            (m.checked_mul(pow10((-scale) as u32)?)?, 0)
        } else {
            (m, scale)
        };
        Numeric::new(if negative { -m } else { m }, u16::try_from(scale).ok()?).ok()
    }
}

/// How [`round_mantissa`] drops digits.
#[derive(Clone, Copy)]
enum Rounding {
    HalfAway,
    Toward,
    Ceil,
    Floor,
}

/// `m` with its last `cut` digits dropped, rounded as `how` says.
fn round_mantissa(m: i128, cut: u32, how: Rounding) -> Result<i128, NumericError> {
    if cut == 0 {
        return Ok(m);
    }
    let Some(p) = pow10(cut) else {
        // Every digit is dropped and the value is below half a unit: zero, or one
        // unit for ceil/floor away from zero.
        return Ok(match how {
            Rounding::Ceil if m > 0 => 1,
            Rounding::Floor if m < 0 => -1,
            _ => 0,
        });
    };
    let (q, r) = (m / p, m % p);
    Ok(match how {
        Rounding::Toward => q,
        Rounding::HalfAway if r.unsigned_abs() * 2 >= p as u128 => q + m.signum(),
        Rounding::HalfAway => q,
        Rounding::Ceil if r > 0 => q + 1,
        Rounding::Floor if r < 0 => q - 1,
        Rounding::Ceil | Rounding::Floor => q,
    })
}

impl PartialEq for Numeric {
    fn eq(&self, other: &Numeric) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Numeric {}

impl PartialOrd for Numeric {
    fn partial_cmp(&self, other: &Numeric) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Numeric {
    fn cmp(&self, other: &Numeric) -> Ordering {
        match self.align(*other) {
            Some((a, b, _)) => a.cmp(&b),
            // A mantissa that overflows when scaled up is beyond every mantissa: the
            // one with the smaller scale has the larger magnitude.
            None => {
                let big = if self.scale < other.scale {
                    self
                } else {
                    other
                };
                let o = if big.mantissa > 0 {
                    Ordering::Greater
                } else {
                    Ordering::Less
                };
                if std::ptr::eq(big, self) {
                    o
                } else {
                    o.reverse()
                }
            }
        }
    }
}

impl std::hash::Hash for Numeric {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.normalized().hash(state);
    }
}

impl fmt::Display for Numeric {
    /// PostgreSQL's output: every digit of the scale, no exponent (`-0.050`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.mantissa.unsigned_abs().to_string();
        let scale = self.scale as usize;
        if self.mantissa < 0 {
            f.write_str("-")?;
        }
        if scale == 0 {
            return f.write_str(&digits);
        }
        if digits.len() > scale {
            let (int, frac) = digits.split_at(digits.len() - scale);
            return write!(f, "{int}.{frac}");
        }
        f.write_str("0.")?;
        let zeros = if self.mantissa == 0 {
            scale
        } else {
            scale - digits.len()
        };
        for _ in 0..zeros {
            f.write_str("0")?;
        }
        if self.mantissa != 0 {
            f.write_str(&digits)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn n(s: &str) -> Numeric {
        Numeric::parse(s).unwrap()
    }

    #[test]
    fn parse_and_print_as_postgres() {
        for (input, shown) in [
            ("1.50", "1.50"),
            ("  -0.050 ", "-0.050"),
            ("1e3", "1000"),
            ("1.5e-3", "0.0015"),
            ("+.5", "0.5"),
            ("5.", "5"),
            ("0.000", "0.000"),
            ("-0", "0"),
            ("00012.30", "12.30"),
        ] {
            assert_eq!(n(input).to_string(), shown, "{input}");
        }
        for bad in ["", "1.2.3", "abc", "1e", "1e+-3", "--1", ".", "1 2", "e5"] {
            assert_eq!(Numeric::parse(bad), Err(NumericError::Invalid), "{bad:?}");
        }
        assert_eq!(Numeric::parse("NaN"), Err(NumericError::NotFinite));
        assert_eq!(Numeric::parse("-Infinity"), Err(NumericError::NotFinite));
        assert_eq!(Numeric::parse(&"9".repeat(39)), Err(NumericError::Overflow));
        assert!(Numeric::parse(&"9".repeat(38)).is_ok());
    }

    #[test]
    fn arithmetic_scales_follow_postgres() {
        assert_eq!(n("1.5").checked_add(n("2.25")).unwrap().to_string(), "3.75");
        assert_eq!(
            n("1.50").checked_mul(n("2.0")).unwrap().to_string(),
            "3.000"
        );
        // select_div_scale: at least 16 significant digits.
        assert_eq!(
            n("1").checked_div(n("3")).unwrap().to_string(),
            "0.33333333333333333333"
        );
        assert_eq!(
            n("10").checked_div(n("4")).unwrap().to_string(),
            "2.5000000000000000"
        );
        assert_eq!(
            n("2").checked_div(n("3")).unwrap().to_string(),
            "0.66666666666666666667"
        );
        assert_eq!(
            n("1234567").checked_div(n("0.003")).unwrap().to_string(),
            "411522333.33333333"
        );
        assert_eq!(
            n("0.0001").checked_div(n("3")).unwrap().to_string(),
            "0.000033333333333333333333"
        );
        assert_eq!(n("-7.5").checked_rem(n("2")).unwrap().to_string(), "-1.5");
        assert_eq!(
            n("1").checked_div(n("0")),
            Err(NumericError::DivisionByZero)
        );
        assert_eq!(n("2.5").round(0).unwrap().to_string(), "3");
        assert_eq!(n("-2.5").round(0).unwrap().to_string(), "-3");
        assert_eq!(n("1234.5").round(-2).unwrap().to_string(), "1200");
        assert_eq!(n("1.2345").round(6).unwrap().to_string(), "1.234500");
        assert_eq!(n("-1.99").trunc(1).unwrap().to_string(), "-1.9");
        assert_eq!(n("-1.1").ceil().unwrap().to_string(), "-1");
        assert_eq!(n("-1.1").floor().unwrap().to_string(), "-2");
        assert_eq!(n("2.5").to_i64(), Some(3));
        assert_eq!(n("-2.5").to_i64(), Some(-3));
        assert_eq!(Numeric::from_f64(0.1).unwrap().to_string(), "0.1");
        assert_eq!(
            Numeric::from_f64(1e20).unwrap().to_string(),
            "100000000000000000000"
        );
        assert_eq!(
            Numeric::from_f64(1.0 / 3.0).unwrap().to_string(),
            "0.333333333333333"
        );
        assert_eq!(n("123.456").fit(5, 2).unwrap().to_string(), "123.46");
        assert_eq!(n("999.995").fit(5, 2), Err(NumericError::Overflow));
        assert_eq!(n("0.0001").fit(2, 5).unwrap().to_string(), "0.00010");
        assert_eq!(n("0.001").fit(2, 5), Err(NumericError::Overflow));
        assert_eq!(n("12345").fit(3, -2).unwrap().to_string(), "12300");
    }

    fn numeric() -> impl Strategy<Value = Numeric> {
        (
            prop_oneof![
                any::<i64>().prop_map(|x| x as i128),
                -1000i128..1000,
                (-LIMIT + 1)..LIMIT
            ],
            prop_oneof![0u16..6, 0u16..40, Just(1000u16)],
        )
            .prop_map(|(m, s)| Numeric::new(m, s).unwrap())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::testing::proptest_cases()))]

        /// The stored form and the text read back as the same value and scale.
        #[test]
        fn stored_and_text_forms_round_trip(x in numeric()) {
            let mut b = Vec::new();
            x.encode(&mut b);
            prop_assert_eq!(b.len(), x.encoded_len());
            let back = Numeric::decode(&b).unwrap();
            prop_assert_eq!((back.mantissa, back.scale), (x.mantissa, x.scale));
            let text = Numeric::parse(&x.to_string()).unwrap();
            prop_assert_eq!((text.mantissa, text.scale), (x.mantissa, x.scale));
        }

        /// Key bytes order as the values do, equal values share a key, and a key reads
        /// back as an equal value.
        #[test]
        fn key_order_is_numeric_order(a in numeric(), b in numeric()) {
            let (mut ka, mut kb) = (Vec::new(), Vec::new());
            a.push_key(&mut ka);
            b.push_key(&mut kb);
            prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            let mut rest = &ka[..];
            prop_assert_eq!(Numeric::read_key(&mut rest), Some(a));
            prop_assert!(rest.is_empty());
        }

        /// Sums and products agree with i128 arithmetic on aligned mantissas, and a
        /// quotient times the divisor is within half a unit of the dividend.
        #[test]
        fn arithmetic_is_exact(a in numeric(), b in numeric()) {
            if let (Ok(s), Some((x, y, _))) = (a.checked_add(b), a.align(b)) {
                prop_assert_eq!(s.mantissa, x + y);
            }
            if let Ok(q) = a.div_at(b, 10) {
                if let (Ok(back), Ok(unit)) = (q.checked_mul(b), Numeric::new(1, 10).and_then(|u| u.checked_mul(b.abs()))) {
                    if let Ok(diff) = back.checked_sub(a) {
                        prop_assert!(diff.abs() <= unit, "{} / {} = {}", a, b, q);
                    }
                }
            }
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            let _ = Numeric::decode(&bytes);
            let _ = Numeric::read_key(&mut &bytes[..]);
        }
    }

    #[test]
    fn same_value_other_scale_has_one_key() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        n("1.0").push_key(&mut a);
        n("1.00").push_key(&mut b);
        assert_eq!(a, b);
        let mut x = Vec::new();
        n("-0.12").push_key(&mut x);
        let mut y = Vec::new();
        n("-0.123").push_key(&mut y);
        assert!(x > y);
    }
}
