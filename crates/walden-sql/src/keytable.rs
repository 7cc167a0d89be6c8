//! The build side of a hash join, and GROUP BY's groups: row numbers by key. An
//! open-addressing array of 8-byte slots (linear probing, at most half full), each the
//! high half of a key's hash
//! and the number of its entry; the entries (row, and the key bytes when
//! short: select::key_bytes of one integer is 9 bytes; longer keys go to an arena) lie
//! in insertion order apart. The slots are small enough to stay in cache for a build
//! side of a few hundred thousand rows, and a probe reads an entry only when the hash
//! halves match, so it usually costs one cache miss (a map of byte vectors to row
//! vectors chased three pointers per lookup).
//!
//! The hash is fixed (as PostgreSQL's hash joins' is): its input is the build side's
//! data, and a skewed key only lengthens one run of slots.

/// An empty slot.
const EMPTY: u64 = u64::MAX;

/// Keys up to this long are kept in their entry; longer ones in the arena.
const INLINE: usize = 16;

/// 24 bytes: the hash is not kept (growing computes it again from the key), so that
/// more entries share a cache line.
struct Entry {
    /// The row (a build side of 2^32 rows would not fit in memory first).
    row: u32,
    len: u32,
    /// The key's bytes (short), or its start in the arena (little-endian, long).
    key: [u8; INLINE],
}

pub(crate) struct KeyTable {
    /// (hash >> 32) << 32 | entry number; EMPTY for none.
    slots: Vec<u64>,
    mask: u64,
    entries: Vec<Entry>,
    arena: Vec<u8>,
}

/// A 64-bit hash of bytes: 8 at a time, multiplied and rotated, then mixed (the final
/// steps of MurmurHash3's 64-bit finalizer) so the low bits that pick a bucket depend on
/// every input bit.
pub(crate) fn hash_bytes(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl KeyTable {
    /// A table for `rows` entries (more may be added: it grows).
    pub(crate) fn with_capacity(rows: usize) -> KeyTable {
        let slots = rows.saturating_mul(2).max(16).next_power_of_two();
        KeyTable {
            slots: vec![EMPTY; slots],
            mask: slots as u64 - 1,
            entries: Vec::with_capacity(rows),
            arena: Vec::new(),
        }
    }

    /// Bytes its entries need, for the memory guard: those of a table sized for them
    /// (one made larger for an estimate that did not come true is not charged for
    /// the room it left unused).
    pub(crate) fn bytes(&self) -> u64 {
        let slots = (self.entries.len() * 2).max(16).next_power_of_two();
        (slots * 8 + self.entries.len() * std::mem::size_of::<Entry>() + self.arena.len()) as u64
    }

    /// Adds row `row` under `key`. A key's rows are found in the order they were added.
    pub(crate) fn insert(&mut self, key: &[u8], row: usize) {
        // Entry numbers fill the low half of a slot; u32::MAX of them would not fit in
        // memory as rows first, and the guard stops a statement long before.
        let n = self.entries.len() as u64 & 0xffff_ffff;
        if (self.entries.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let hash = hash_bytes(key);
        let mut inline = [0u8; INLINE];
        if key.len() <= INLINE {
            inline[..key.len()].copy_from_slice(key);
        } else {
            inline[..8].copy_from_slice(&(self.arena.len() as u64).to_le_bytes());
            self.arena.extend_from_slice(key);
        }
        self.entries.push(Entry {
            row: u32::try_from(row).unwrap_or(u32::MAX),
            len: u32::try_from(key.len()).unwrap_or(u32::MAX),
            key: inline,
        });
        self.place(hash, n);
    }

    /// Puts entry `n` in the first empty slot from its hash's.
    fn place(&mut self, hash: u64, n: u64) {
        let mut i = (hash & self.mask) as usize;
        while self.slots[i] != EMPTY {
            i = (i + 1) & self.mask as usize;
        }
        self.slots[i] = (hash >> 32) << 32 | n;
    }

    /// Twice the slots, the entries placed again in the order they were added (so a
    /// key's entries stay in that order along their run of slots).
    fn grow(&mut self) {
        let n = self.slots.len() * 2;
        self.slots = vec![EMPTY; n];
        self.mask = n as u64 - 1;
        for k in 0..self.entries.len() {
            let hash = hash_bytes(self.key_of(&self.entries[k]));
            self.place(hash, k as u64);
        }
    }

    fn key_of<'a>(&'a self, e: &'a Entry) -> &'a [u8] {
        let len = e.len as usize;
        if len <= INLINE {
            return &e.key[..len];
        }
        let mut at = [0u8; 8];
        at.copy_from_slice(&e.key[..8]);
        let at = u64::from_le_bytes(at) as usize;
        &self.arena[at..at + len]
    }

    /// The first row added under `key`, if any (a table of one row per key: groups).
    pub(crate) fn first(&self, key: &[u8]) -> Option<usize> {
        let mut found = None;
        self.each(key, |row| {
            found = Some(row);
            false
        });
        found
    }

    /// The rows added under `key` into `out` (cleared first), in the order added.
    pub(crate) fn find(&self, key: &[u8], out: &mut Vec<usize>) {
        out.clear();
        self.each(key, |row| {
            out.push(row);
            true
        });
    }

    /// Calls `f` with each row added under `key`, in the order added, until it
    /// returns false.
    fn each(&self, key: &[u8], mut f: impl FnMut(usize) -> bool) {
        let h = hash_bytes(key);
        let tag = h >> 32;
        // A short key compares with an entry's as one 16-byte word (both zero-padded),
        // not through a call to memcmp.
        let short = (key.len() <= INLINE).then(|| {
            let mut padded = [0u8; INLINE];
            padded[..key.len()].copy_from_slice(key);
            u128::from_le_bytes(padded)
        });
        let mut i = (h & self.mask) as usize;
        loop {
            let slot = self.slots[i];
            if slot == EMPTY {
                return;
            }
            if slot >> 32 == tag {
                if let Some(e) = self.entries.get((slot & 0xffff_ffff) as usize) {
                    let same = e.len as usize == key.len()
                        && match short {
                            Some(k) => u128::from_le_bytes(e.key) == k,
                            None => self.key_of(e) == key,
                        };
                    if same && !f(e.row as usize) {
                        return;
                    }
                }
            }
            i = (i + 1) & self.mask as usize;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_row_of_a_key_and_no_other() {
        let mut t = KeyTable::with_capacity(4);
        // Far more entries than the capacity asked for, and repeated keys.
        for i in 0..1000usize {
            t.insert(&((i % 300) as u64).to_le_bytes(), i);
        }
        let mut out = Vec::new();
        for k in 0..300u64 {
            t.find(&k.to_le_bytes(), &mut out);
            let want: Vec<usize> = (0..1000).filter(|i| (*i as u64) % 300 == k).collect();
            assert_eq!(out, want, "key {k}");
        }
        t.find(&300u64.to_le_bytes(), &mut out);
        assert!(out.is_empty());
        // Keys longer than an entry holds (kept in the arena), through growth too, and
        // two long keys that differ only past the sixteenth byte.
        let long = |k: u64| format!("{:040}", k % 50).into_bytes();
        let mut l = KeyTable::with_capacity(2);
        for i in 0..500usize {
            l.insert(&long(i as u64), i);
        }
        for k in 0..50u64 {
            l.find(&long(k), &mut out);
            let want: Vec<usize> = (0..500).filter(|i| (*i as u64) % 50 == k).collect();
            assert_eq!(out, want, "long key {k}");
        }
        l.find(&long(50)[..39], &mut out);
        assert!(out.is_empty());
        // A key that is a prefix of another is a different key.
        t.insert(b"ab", 7);
        t.insert(b"abc", 8);
        t.find(b"ab", &mut out);
        assert_eq!(out, vec![7]);
    }

    #[test]
    fn hash_depends_on_every_byte_and_the_length() {
        let base = hash_bytes(b"0123456789abcdef0");
        for i in 0..17 {
            let mut b = b"0123456789abcdef0".to_vec();
            b[i] ^= 1;
            assert_ne!(hash_bytes(&b), base, "byte {i}");
        }
        assert_ne!(hash_bytes(&[0]), hash_bytes(&[0, 0]));
    }
}
