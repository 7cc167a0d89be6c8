//! Little-endian byte reading with bounds checks, for everything decoded from disk.

/// A cursor over untrusted bytes: every read checks the remaining length.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], at: usize) -> Reader<'a> {
        Reader { bytes, at }
    }
    pub fn pos(&self) -> usize {
        self.at
    }
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.at)
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).ok_or("length overflow")?;
        let s = self.bytes.get(self.at..end).ok_or_else(|| {
            format!(
                "needs {n} bytes at offset {}, {} left",
                self.at,
                self.remaining()
            )
        })?;
        self.at = end;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    /// An unsigned LEB128 varint (at most 10 bytes; overlong or overflowing encodings
    /// are errors).
    pub fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.u8()?;
            let bits = (b & 0x7f) as u64;
            if i == 9 && b > 1 {
                return Err("varint overflows 64 bits".into());
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                if b == 0 && i > 0 {
                    return Err("overlong varint".into());
                }
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }
    /// A varint that must fit in 32 bits.
    pub fn varint32(&mut self) -> Result<u32, String> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| format!("{v} does not fit 32 bits"))
    }
    /// A varint that must fit in 16 bits.
    pub fn varint16(&mut self) -> Result<u16, String> {
        let v = self.varint()?;
        u16::try_from(v).map_err(|_| format!("{v} does not fit 16 bits"))
    }
    /// A zigzag-coded signed varint.
    pub fn varint_signed(&mut self) -> Result<i64, String> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }
    /// A varint-length-prefixed byte string.
    pub fn bytes_v(&mut self) -> Result<&'a [u8], String> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| "length overflow".to_string())?;
        self.take(n)
    }
    /// A u16-length-prefixed UTF-8 string.
    pub fn string(&mut self) -> Result<String, String> {
        let n = self.u16()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "string is not UTF-8".to_string())
    }
}

/// Appends an unsigned LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes of `v` as a varint.
pub fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Appends a zigzag-coded signed varint.
pub fn put_varint_signed(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Appends a varint length and the bytes.
pub fn put_bytes_v(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Appends a u16-length-prefixed string (names are limited to 65535 bytes by the caller).
pub fn put_string(out: &mut Vec<u8>, s: &str) {
    let bytes = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Appends bytes in the order-keeping escaped form index keys use: each `0x00` written
/// `0x00 0xff`, ended by `0x00 0x00`, so that no value's form is a prefix of another's
/// and bytewise order is the bytes' order.
pub fn put_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// Reads bytes written by `put_escaped` from the front of `key`, moving past them;
/// None when they are not such a form.
pub fn read_escaped(key: &mut &[u8]) -> Option<Vec<u8>> {
    let mut s = Vec::new();
    loop {
        let (&b, rest) = key.split_first()?;
        *key = rest;
        if b != 0 {
            s.push(b);
            continue;
        }
        let (&next, rest) = key.split_first()?;
        *key = rest;
        match next {
            0 => return Some(s),
            0xff => s.push(0),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_bad_encodings() {
        let values = [
            0u64,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX,
        ];
        for v in values {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v), "{v}");
            assert_eq!(Reader::new(&b, 0).varint().unwrap(), v);
            for cut in 0..b.len() {
                assert!(Reader::new(&b[..cut], 0).varint().is_err());
            }
        }
        for v in [0i64, -1, 1, -64, 64, i64::MIN, i64::MAX] {
            let mut b = Vec::new();
            put_varint_signed(&mut b, v);
            assert_eq!(Reader::new(&b, 0).varint_signed().unwrap(), v);
        }
        assert!(Reader::new(&[0x80, 0x00], 0).varint().is_err(), "overlong");
        assert!(Reader::new(&[0xff; 10], 0).varint().is_err(), "overflow");
        assert!(Reader::new(&[0xff; 11], 0).varint().is_err());
        assert!(Reader::new(&[0x80, 0x80, 0x04], 0).varint16().is_err());
    }
}
