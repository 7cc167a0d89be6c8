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
    /// Whether every key so far is one integer (select::push_key's tag 1 and eight
    /// bytes), and the least and greatest of them.
    ints: bool,
    min: i64,
    max: i64,
    /// Whether entries are in the slots as they are added (`with_capacity`), or only
    /// at `seal` (`for_build`: a hash join's build side, whose table may end as an
    /// array and needs no slots).
    placed: bool,
    /// Set by `seal` when the keys are integers over a range not much wider than
    /// their number: the table is then an array indexed by the key.
    direct: Option<Direct>,
}

/// A sealed table of integer keys (a "perfect hash", as DuckDB's hash joins use for
/// dense keys): no hash is computed and a probe reads one slot of an array that is a
/// few bytes per key, not a slot and then an entry of a table twice the keys' number.
struct Direct {
    min: i64,
    /// Per key from `min`: its first entry's number + 1, or 0 for none.
    head: Vec<u32>,
    /// Per entry: the number + 1 of the next entry of its key, or 0; empty when every
    /// key has one entry.
    next: Vec<u32>,
    /// Per entry: its row; empty when each entry's row is its own number.
    rows: Vec<u32>,
}

/// Keys of a sealed table are kept in an array when its length is at most this many
/// times the number of entries (and this is at most `DIRECT_MAX` slots).
const DIRECT_SPREAD: u64 = 4;
const DIRECT_MAX: u64 = 1 << 28;

/// The integer a key of one integer holds.
fn int_key(key: &[u8]) -> Option<i64> {
    match key {
        [1, rest @ ..] => Some(i64::from_le_bytes(rest.try_into().ok()?)),
        _ => None,
    }
}

/// A 64-bit hash of bytes: 8 at a time, multiplied and rotated, then mixed (the final
/// steps of MurmurHash3's 64-bit finalizer) so the low bits that pick a bucket depend on
/// every input bit.
pub(crate) fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = fold(
            h,
            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        );
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = fold(h, u64::from_le_bytes(w));
    }
    finalize(h)
}

/// One word folded into a running hash: rotated in and multiplied.
pub(crate) fn fold(h: u64, w: u64) -> u64 {
    (h.rotate_left(23) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// A running hash mixed (MurmurHash3's 64-bit finalizer) so that every bit of the
/// result depends on every input bit.
pub(crate) fn finalize(mut h: u64) -> u64 {
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
            ints: true,
            min: i64::MAX,
            max: i64::MIN,
            placed: true,
            direct: None,
        }
    }

    /// A table for a build side of about `rows` entries, found only after `seal`.
    pub(crate) fn for_build(rows: usize) -> KeyTable {
        let mut t = KeyTable::with_capacity(0);
        t.entries = Vec::with_capacity(rows);
        t.slots = Vec::new();
        t.mask = 0;
        t.placed = false;
        t
    }

    /// Ends the adding of rows (a hash join's build side, complete): a table whose keys
    /// are integers in a range at most a few times their number becomes an array
    /// indexed by the key, and the hash slots and entries are dropped.
    pub(crate) fn seal(&mut self) {
        if !self.make_direct() && !self.placed {
            let slots = (self.entries.len() * 2).max(16).next_power_of_two();
            self.slots = vec![EMPTY; slots];
            self.mask = slots as u64 - 1;
            for k in 0..self.entries.len() {
                let hash = hash_bytes(self.key_of(&self.entries[k]));
                self.place(hash, k as u64);
            }
        }
        self.placed = true;
    }

    /// Makes the table an array indexed by the key, if its keys allow.
    fn make_direct(&mut self) -> bool {
        let n = self.entries.len();
        if !self.ints || n == 0 || n >= u32::MAX as usize {
            return false;
        }
        let span = (self.max as i128 - self.min as i128 + 1) as u128;
        let limit = (n as u64).saturating_mul(DIRECT_SPREAD).min(DIRECT_MAX);
        if span > limit as u128 {
            return false;
        }
        let mut head = vec![0u32; span as usize];
        let mut next = vec![0u32; n];
        let mut repeated = false;
        // From the last entry back, so that each key's chain runs in the order added.
        for e in (0..n).rev() {
            let Some(k) = int_key(self.key_of(&self.entries[e])) else {
                return false;
            };
            let at = (k as i128 - self.min as i128) as usize;
            repeated |= head[at] != 0;
            next[e] = head[at];
            head[at] = e as u32 + 1;
        }
        if !repeated {
            next = Vec::new();
        }
        let rows = if self
            .entries
            .iter()
            .enumerate()
            .all(|(e, x)| x.row as usize == e)
        {
            Vec::new()
        } else {
            self.entries.iter().map(|x| x.row).collect()
        };
        self.direct = Some(Direct {
            min: self.min,
            head,
            next,
            rows,
        });
        self.slots = Vec::new();
        self.mask = 0;
        self.entries = Vec::new();
        self.arena = Vec::new();
        true
    }

    /// Bytes its entries need, for the memory guard: those of a table sized for them
    /// (one made larger for an estimate that did not come true is not charged for
    /// the room it left unused).
    pub(crate) fn bytes(&self) -> u64 {
        if let Some(d) = &self.direct {
            return ((d.head.len() + d.next.len() + d.rows.len()) * 4) as u64;
        }
        let slots = (self.entries.len() * 2).max(16).next_power_of_two();
        (slots * 8 + self.entries.len() * std::mem::size_of::<Entry>() + self.arena.len()) as u64
    }

    /// Adds row `row` under `key`. A key's rows are found in the order they were added.
    pub(crate) fn insert(&mut self, key: &[u8], row: usize) {
        debug_assert!(
            self.direct.is_none(),
            "a sealed KeyTable takes no more rows"
        );
        if self.ints {
            match int_key(key) {
                Some(k) => {
                    self.min = self.min.min(k);
                    self.max = self.max.max(k);
                }
                None => self.ints = false,
            }
        }
        // Entry numbers fill the low half of a slot; u32::MAX of them would not fit in
        // memory as rows first, and the guard stops a statement long before.
        let n = self.entries.len() as u64 & 0xffff_ffff;
        if self.placed && (self.entries.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
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
        if self.placed {
            self.place(hash_bytes(key), n);
        }
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
        if let Some(d) = &self.direct {
            // Only an integer key can equal one of the table's.
            let Some(k) = int_key(key) else { return };
            let at = (k as i128 - d.min as i128) as u128;
            let Some(&first) = usize::try_from(at).ok().and_then(|at| d.head.get(at)) else {
                return;
            };
            let mut e = first as usize;
            while e != 0 {
                let row = d.rows.get(e - 1).map_or(e - 1, |&r| r as usize);
                if !f(row) {
                    return;
                }
                e = d.next.get(e - 1).map_or(0, |&x| x as usize);
            }
            return;
        }
        if !self.placed {
            // Not sealed (no caller finds before then): every entry, in order.
            debug_assert!(false, "a KeyTable for_build is read before seal");
            for e in &self.entries {
                if self.key_of(e) == key && !f(e.row as usize) {
                    return;
                }
            }
            return;
        }
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

    fn int(k: i64) -> Vec<u8> {
        let mut b = vec![1u8];
        b.extend_from_slice(&k.to_le_bytes());
        b
    }

    #[test]
    fn a_sealed_table_finds_what_the_hashed_one_does() {
        // Integer keys: dense (sealed into an array), dense with repeats and rows that
        // are not their entry's number, negative, and sparse (left hashed).
        let cases: Vec<Vec<(i64, usize)>> = vec![
            (0..1000).map(|i| (i + 5, i as usize)).collect(),
            (0..1000)
                .map(|i| (i % 97 - 40, 3 * i as usize + 1))
                .collect(),
            (0..300).map(|i| (i64::MIN + i, i as usize)).collect(),
            (0..300).map(|i| (i * 1_000_003, i as usize)).collect(),
            vec![(i64::MIN, 0), (i64::MAX, 1)],
        ];
        let mut a = Vec::new();
        let mut b = Vec::new();
        for (n, case) in cases.iter().enumerate() {
            let mut hashed = KeyTable::with_capacity(16);
            let mut sealed = KeyTable::for_build(16);
            for &(k, row) in case {
                hashed.insert(&int(k), row);
                sealed.insert(&int(k), row);
            }
            sealed.seal();
            assert_eq!(sealed.direct.is_some(), n < 3, "case {n}");
            let mut probes: Vec<Vec<u8>> = case.iter().map(|&(k, _)| int(k)).collect();
            probes.extend([
                int(-41),
                int(57),
                int(1005),
                int(i64::MAX),
                vec![0],
                vec![1, 2],
            ]);
            probes.push(vec![2, 5, 0, 0, 0, 0, 0, 0, 0]);
            for p in &probes {
                hashed.find(p, &mut a);
                sealed.find(p, &mut b);
                assert_eq!(a, b, "case {n}, key {p:?}");
                assert_eq!(hashed.first(p), sealed.first(p));
            }
            assert!(sealed.bytes() <= hashed.bytes(), "case {n}");
        }
        // A table with one key that is not an integer is not sealed.
        let mut t = KeyTable::for_build(4);
        t.insert(&int(1), 0);
        t.insert(&[0], 1);
        t.seal();
        assert!(t.direct.is_none());
        t.find(&[0], &mut a);
        assert_eq!(a, vec![1]);
        // Nor is an empty one, which finds nothing.
        let mut e = KeyTable::for_build(4);
        e.seal();
        e.find(&int(0), &mut a);
        assert!(a.is_empty());
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
