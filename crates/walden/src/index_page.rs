//! B-tree index pages: the layout of one page of an index (the tree itself is in
//! `access::btree`). The common 32-byte page header (checksum, kind `Index`, item count,
//! LSN, page number, upper, level, owner = index id), a 16-byte B-tree header, then an
//! array of item slots kept in key order that grows up, and item bytes that grow down from
//! the end of the page.
//!
//! Layout (little-endian; docs/format.md):
//! `0..32 page header (26..28 level) | 32..40 right sibling (u64::MAX: none) |
//!  40..42 high-key offset (0: none, +infinity) | 42..44 high-key length | 44..46 flags |
//!  46..48 reserved | 48.. slots (offset u16, length u16), in key order`.
//!
//! Items are byte strings compared bytewise. A leaf item is `key | row id`; an internal
//! item is `separator | child page (u32 big-endian)`, and its first item's separator
//! counts as minus infinity. Every item of a page is below its high key. Removing an item
//! leaves a hole in the item bytes; an insert that finds the free gap too small packs the
//! items first (`compact`), deterministically, so that redo rebuilds the same bytes.

use crate::page::{PageKind, PAGE_HEADER_BYTES, PAGE_SIZES};

/// Bytes of the page header plus the B-tree header.
pub const INDEX_HEADER_BYTES: usize = PAGE_HEADER_BYTES + 16;
/// Bytes of one item slot.
pub const ITEM_SLOT_BYTES: usize = 4;
/// No right sibling.
pub const NO_PAGE: u64 = u64::MAX;
/// Flag: the index's meta page (item 0: root page u64, root level u16; its right-sibling
/// field heads the index's list of free pages).
pub const FLAG_META: u16 = 1;
/// Flag: a free page of the index (no items, no high key, level 0; its right-sibling
/// field names the next free page), taken by the next page the index needs.
pub const FLAG_FREE: u16 = 2;
/// Bytes of an internal item's child pointer.
pub const CHILD_BYTES: usize = 4;

fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// Keys compared as unsigned bytes, as `<[u8]>::cmp` does, eight bytes at a time: a
/// B-tree's keys are short (a bigint key and its row id are 17 bytes), and a search
/// compares one at each of its steps, where a call into the C library's `memcmp` for
/// each costs more than the comparison itself.
#[inline]
pub fn cmp_keys(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    let (mut x, mut y) = (&a[..n], &b[..n]);
    while let (Some((xa, xr)), Some((ya, yr))) =
        (x.split_first_chunk::<8>(), y.split_first_chunk::<8>())
    {
        let (u, v) = (u64::from_be_bytes(*xa), u64::from_be_bytes(*ya));
        if u != v {
            return u.cmp(&v);
        }
        (x, y) = (xr, yr);
    }
    for (p, q) in x.iter().zip(y) {
        if p != q {
            return p.cmp(q);
        }
    }
    a.len().cmp(&b.len())
}

/// The child page an internal item points at.
pub fn child_of(item: &[u8]) -> u64 {
    let n = item.len();
    if n < CHILD_BYTES {
        return NO_PAGE;
    }
    u32::from_be_bytes([item[n - 4], item[n - 3], item[n - 2], item[n - 1]]) as u64
}

/// The separator of an internal item (without its child pointer).
pub fn separator_of(item: &[u8]) -> &[u8] {
    &item[..item.len().saturating_sub(CHILD_BYTES)]
}

/// An internal item: `separator | child`.
pub fn internal_item(separator: &[u8], child: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(separator.len() + CHILD_BYTES);
    v.extend_from_slice(separator);
    v.extend_from_slice(&(child as u32).to_be_bytes());
    v
}

/// Read access to an index page (trusted: checked by `validate` when read from disk).
#[derive(Clone, Copy)]
pub struct IndexPage<'a>(pub &'a [u8]);
/// Write access to an index page.
pub struct IndexPageMut<'a>(pub &'a mut [u8]);

macro_rules! index_readers {
    () => {
        pub fn count(&self) -> usize {
            get_u16(self.0, 6) as usize
        }
        pub fn level(&self) -> u16 {
            get_u16(self.0, 26)
        }
        pub fn is_leaf(&self) -> bool {
            self.level() == 0
        }
        pub fn owner(&self) -> u32 {
            u32::from_le_bytes([self.0[28], self.0[29], self.0[30], self.0[31]])
        }
        pub fn page_no(&self) -> u64 {
            u64::from_le_bytes(self.0[16..24].try_into().unwrap_or([0; 8]))
        }
        fn upper(&self) -> usize {
            get_u16(self.0, 24) as usize
        }
        /// The right sibling, if any.
        pub fn right(&self) -> Option<u64> {
            let r = u64::from_le_bytes(self.0[32..40].try_into().unwrap_or([0xff; 8]));
            (r != NO_PAGE).then_some(r)
        }
        pub fn flags(&self) -> u16 {
            get_u16(self.0, 44)
        }
        pub fn is_meta(&self) -> bool {
            self.flags() & FLAG_META != 0
        }
        pub fn is_free(&self) -> bool {
            self.flags() & FLAG_FREE != 0
        }
        /// The high key (every item is below it); None is plus infinity.
        pub fn high_key(&self) -> Option<&[u8]> {
            let off = get_u16(self.0, 40) as usize;
            let len = get_u16(self.0, 42) as usize;
            (off != 0).then(|| &self.0[off..off + len])
        }
        fn lower(&self) -> usize {
            INDEX_HEADER_BYTES + ITEM_SLOT_BYTES * self.count()
        }
        /// The bytes of item `i` (`i < count`).
        pub fn item(&self, i: usize) -> &[u8] {
            let at = INDEX_HEADER_BYTES + ITEM_SLOT_BYTES * i;
            let off = get_u16(self.0, at) as usize;
            let len = get_u16(self.0, at + 2) as usize;
            &self.0[off..off + len]
        }
        /// Bytes used by items and the high key (slots included).
        pub fn used_bytes(&self) -> usize {
            let mut n = self.count() * ITEM_SLOT_BYTES + self.high_key().map_or(0, |h| h.len());
            for i in 0..self.count() {
                n += self.item(i).len();
            }
            n
        }
        /// Bytes an item may still take, counting holes a compaction would reclaim.
        pub fn free_bytes(&self) -> usize {
            (self.0.len() - INDEX_HEADER_BYTES).saturating_sub(self.used_bytes())
        }
        /// Whether an item of `len` bytes fits (after a compaction if need be).
        pub fn fits(&self, len: usize) -> bool {
            let need = len + ITEM_SLOT_BYTES;
            self.upper().saturating_sub(self.lower()) >= need || self.free_bytes() >= need
        }
        /// The first position whose item is at or above `probe` (Ok when equal).
        pub fn search(&self, probe: &[u8]) -> Result<usize, usize> {
            let (mut lo, mut hi) = (0, self.count());
            while lo < hi {
                let mid = (lo + hi) / 2;
                match cmp_keys(self.item(mid), probe) {
                    std::cmp::Ordering::Less => lo = mid + 1,
                    std::cmp::Ordering::Equal => return Ok(mid),
                    std::cmp::Ordering::Greater => hi = mid,
                }
            }
            Err(lo)
        }
        /// Internal page: the position of the child whose range holds `probe` (the last
        /// separator at or below it; the first item counts as minus infinity).
        pub fn child_pos(&self, probe: &[u8]) -> usize {
            let (mut lo, mut hi) = (1, self.count());
            // Invariant: separators before `lo` are <= probe; from `hi` on, > probe.
            while lo < hi {
                let mid = (lo + hi) / 2;
                if cmp_keys(separator_of(self.item(mid)), probe).is_le() {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo - 1
        }
        /// Whether `probe` lies at or beyond the high key (the search must move right).
        pub fn beyond(&self, probe: &[u8]) -> bool {
            self.high_key().is_some_and(|h| cmp_keys(probe, h).is_ge())
        }
        /// The meta page's root page and level.
        pub fn meta(&self) -> Option<(u64, u16)> {
            if !self.is_meta() || self.count() != 1 {
                return None;
            }
            let it = self.item(0);
            if it.len() != 10 {
                return None;
            }
            let root = u64::from_le_bytes(it[..8].try_into().ok()?);
            Some((root, u16::from_le_bytes([it[8], it[9]])))
        }
    };
}

impl IndexPage<'_> {
    index_readers!();

    /// Checks the layout of a page read from disk (or rebuilt by redo) so that no later
    /// access goes out of bounds: header fields, every slot and the high key inside the
    /// item area, no two overlapping.
    pub fn validate(&self) -> Result<(), String> {
        let size = self.0.len();
        if self.0[4] != PageKind::Index as u8 {
            return Err(format!("not an index page (kind {})", self.0[4]));
        }
        let lower = self.lower();
        let upper = self.upper();
        if lower > size || upper > size || lower > upper {
            return Err(format!(
                "bad bounds: lower {lower}, upper {upper}, size {size}"
            ));
        }
        let mut ranges = Vec::with_capacity(self.count() + 1);
        for i in 0..self.count() {
            let at = INDEX_HEADER_BYTES + ITEM_SLOT_BYTES * i;
            let off = get_u16(self.0, at) as usize;
            let len = get_u16(self.0, at + 2) as usize;
            if off < upper || off + len > size || len == 0 {
                return Err(format!(
                    "item {i} out of bounds: offset {off}, length {len}"
                ));
            }
            ranges.push((off, len, i));
        }
        let hk_off = get_u16(self.0, 40) as usize;
        let hk_len = get_u16(self.0, 42) as usize;
        if hk_off != 0 {
            if hk_off < upper || hk_off + hk_len > size {
                return Err(format!(
                    "high key out of bounds: offset {hk_off}, length {hk_len}"
                ));
            }
            ranges.push((hk_off, hk_len, usize::MAX));
        } else if hk_len != 0 {
            return Err("high key length without an offset".into());
        }
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            if w[0].0 + w[0].1 > w[1].0 {
                return Err("items overlap".into());
            }
        }
        if !self.is_leaf() && !self.is_meta() {
            for i in 0..self.count() {
                if self.item(i).len() < CHILD_BYTES {
                    return Err(format!("internal item {i} has no child pointer"));
                }
            }
        }
        if self.is_meta() && self.meta().is_none() {
            return Err("meta page without root".into());
        }
        let flags = self.flags();
        if flags & !(FLAG_META | FLAG_FREE) != 0 || flags == FLAG_META | FLAG_FREE {
            return Err(format!("unknown flags {flags:#x}"));
        }
        if self.is_free() && (self.count() != 0 || self.level() != 0 || hk_off != 0) {
            return Err("a free page with items, a level or a high key".into());
        }
        Ok(())
    }
}

impl IndexPageMut<'_> {
    index_readers!();

    pub fn as_ref(&self) -> IndexPage<'_> {
        IndexPage(self.0)
    }

    /// Formats an empty index page (a node at `level`, no sibling, no high key).
    pub fn init(&mut self, page_no: u64, index: u32, level: u16) {
        assert!(self.0.len() <= PAGE_SIZES[3], "page size above 32 KiB");
        self.0.fill(0);
        self.0[4] = PageKind::Index as u8;
        self.0[16..24].copy_from_slice(&page_no.to_le_bytes());
        let size = self.0.len() as u16;
        put_u16(self.0, 24, size);
        put_u16(self.0, 26, level);
        self.0[28..32].copy_from_slice(&index.to_le_bytes());
        self.set_right(None);
    }

    /// Formats the meta page of an index pointing at `root` (a tree of `level`+1 levels).
    pub fn init_meta(&mut self, page_no: u64, index: u32, root: u64, level: u16) {
        self.init(page_no, index, 0);
        self.mark_meta();
        self.set_meta(root, level);
    }

    /// Marks the page as an index's meta page.
    pub fn mark_meta(&mut self) {
        self.set_flags(FLAG_META);
    }

    /// Sets the page's flags (`FLAG_META`, `FLAG_FREE`).
    pub fn set_flags(&mut self, flags: u16) {
        put_u16(self.0, 44, flags);
    }

    /// Formats a free page whose successor on the free list is `next`.
    pub fn init_free(&mut self, page_no: u64, index: u32, next: Option<u64>) {
        self.init(page_no, index, 0);
        self.set_flags(FLAG_FREE);
        self.set_right(next);
    }

    /// Sets the high key and right sibling together (a page taking over the key range
    /// of an empty sibling it unlinks; the meta page's free-list head). False, with
    /// nothing changed, when the high key does not fit.
    pub fn set_link(&mut self, high_key: Option<&[u8]>, right: Option<u64>) -> bool {
        let old = self.high_key().map_or(0, |h| h.len());
        let new = high_key.map_or(0, |h| h.len());
        if high_key.is_some_and(|h| h.is_empty()) || self.free_bytes() + old < new {
            return false;
        }
        let ok = self.set_high_key(high_key);
        debug_assert!(ok);
        self.set_right(right);
        ok
    }

    /// Points the meta page at a new root.
    pub fn set_meta(&mut self, root: u64, level: u16) {
        let mut it = [0u8; 10];
        it[..8].copy_from_slice(&root.to_le_bytes());
        it[8..].copy_from_slice(&level.to_le_bytes());
        if self.count() == 1 {
            self.remove(&[0]);
        }
        let ok = self.insert(0, &it);
        debug_assert!(ok);
    }

    pub fn set_right(&mut self, right: Option<u64>) {
        self.0[32..40].copy_from_slice(&right.unwrap_or(NO_PAGE).to_le_bytes());
    }

    fn set_slot(&mut self, i: usize, off: usize, len: usize) {
        let at = INDEX_HEADER_BYTES + ITEM_SLOT_BYTES * i;
        put_u16(self.0, at, off as u16);
        put_u16(self.0, at + 2, len as u16);
    }

    fn set_count(&mut self, n: usize) {
        put_u16(self.0, 6, n as u16);
    }

    /// Packs the items and the high key at the end of the page, in position order.
    pub fn compact(&mut self) {
        let items: Vec<Vec<u8>> = (0..self.count()).map(|i| self.item(i).to_vec()).collect();
        let hk = self.high_key().map(|h| h.to_vec());
        let lower = self.lower();
        let mut upper = self.0.len();
        self.0[lower..].fill(0);
        if let Some(h) = &hk {
            upper -= h.len();
            self.0[upper..upper + h.len()].copy_from_slice(h);
            put_u16(self.0, 40, upper as u16);
            put_u16(self.0, 42, h.len() as u16);
        }
        for (i, it) in items.iter().enumerate() {
            upper -= it.len();
            self.0[upper..upper + it.len()].copy_from_slice(it);
            self.set_slot(i, upper, it.len());
        }
        put_u16(self.0, 24, upper as u16);
    }

    /// Reserves `len` bytes in the item area (packing the page if the gap is too small),
    /// with `slots` more slots to come. Returns the offset, or None if it cannot fit.
    fn reserve(&mut self, len: usize, slots: usize) -> Option<usize> {
        let need = len + slots * ITEM_SLOT_BYTES;
        if self.upper().saturating_sub(self.lower()) < need {
            if self.free_bytes() < need {
                return None;
            }
            self.compact();
        }
        let upper = self.upper() - len;
        put_u16(self.0, 24, upper as u16);
        Some(upper)
    }

    /// Inserts `bytes` as item `pos` (0..=count), shifting later items. False (nothing
    /// changed) when it does not fit or `pos` is out of range.
    pub fn insert(&mut self, pos: usize, bytes: &[u8]) -> bool {
        let n = self.count();
        if pos > n || bytes.is_empty() || n >= u16::MAX as usize {
            return false;
        }
        let Some(off) = self.reserve(bytes.len(), 1) else {
            return false;
        };
        self.0[off..off + bytes.len()].copy_from_slice(bytes);
        let at = INDEX_HEADER_BYTES + ITEM_SLOT_BYTES * pos;
        let end = INDEX_HEADER_BYTES + ITEM_SLOT_BYTES * n;
        self.0.copy_within(at..end, at + ITEM_SLOT_BYTES);
        self.set_slot(pos, off, bytes.len());
        self.set_count(n + 1);
        true
    }

    /// Removes the items at `positions` (ascending, each below count), leaving their
    /// bytes as holes.
    pub fn remove(&mut self, positions: &[usize]) {
        let n = self.count();
        let mut keep = INDEX_HEADER_BYTES;
        let mut next = positions.iter().peekable();
        for i in 0..n {
            if next.peek() == Some(&&i) {
                next.next();
                continue;
            }
            let at = INDEX_HEADER_BYTES + ITEM_SLOT_BYTES * i;
            self.0.copy_within(at..at + ITEM_SLOT_BYTES, keep);
            keep += ITEM_SLOT_BYTES;
        }
        let count = (keep - INDEX_HEADER_BYTES) / ITEM_SLOT_BYTES;
        self.0[keep..INDEX_HEADER_BYTES + ITEM_SLOT_BYTES * n].fill(0);
        self.set_count(count);
        if count == 0 && self.high_key().is_none() {
            put_u16(self.0, 24, self.0.len() as u16);
        }
    }

    /// Sets (or clears) the high key. False (nothing changed) when it does not fit.
    pub fn set_high_key(&mut self, key: Option<&[u8]>) -> bool {
        put_u16(self.0, 40, 0);
        put_u16(self.0, 42, 0);
        let Some(key) = key else {
            return true;
        };
        if key.is_empty() {
            return false;
        }
        let Some(off) = self.reserve(key.len(), 0) else {
            return false;
        };
        self.0[off..off + key.len()].copy_from_slice(key);
        put_u16(self.0, 40, off as u16);
        put_u16(self.0, 42, key.len() as u16);
        true
    }

    /// Keeps items `..at` (the left half of a split) and sets the high key and sibling.
    /// False when the high key does not fit (cannot happen after removing a half).
    pub fn truncate(&mut self, at: usize, high_key: &[u8], right: u64) -> bool {
        let positions: Vec<usize> = (at..self.count()).collect();
        self.remove(&positions);
        self.set_right(Some(right));
        self.set_high_key(Some(high_key))
    }

    /// Fills an empty page with `items` (in order), the high key and the sibling of
    /// another page (the right half of a split). False when they do not fit.
    pub fn fill<'i>(
        &mut self,
        items: impl Iterator<Item = &'i [u8]>,
        high_key: Option<&[u8]>,
        right: Option<u64>,
    ) -> bool {
        self.set_right(right);
        if !self.set_high_key(high_key) {
            return false;
        }
        for it in items {
            let n = self.count();
            if !self.insert(n, it) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The word-at-a-time comparison orders keys as the slices' own order does,
        /// prefixes and equal stretches of every length included.
        #[test]
        fn cmp_keys_is_byte_order(
            common in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20),
            a in proptest::collection::vec(0u8..4, 0..20),
            b in proptest::collection::vec(0u8..4, 0..20),
        ) {
            let x = [common.as_slice(), &a].concat();
            let y = [common.as_slice(), &b].concat();
            proptest::prop_assert_eq!(cmp_keys(&x, &y), x.cmp(&y));
            proptest::prop_assert_eq!(cmp_keys(&y, &x), y.cmp(&x));
            proptest::prop_assert_eq!(cmp_keys(&x, &x), std::cmp::Ordering::Equal);
        }
    }

    fn page(size: usize) -> Vec<u8> {
        let mut b = vec![0u8; size];
        IndexPageMut(&mut b).init(9, 3, 0);
        b
    }

    #[test]
    fn insert_search_remove() {
        let mut b = page(4096);
        let mut p = IndexPageMut(&mut b);
        for k in [b"m".as_slice(), b"c", b"x", b"a"] {
            let pos = p.search(k).unwrap_err();
            assert!(p.insert(pos, k));
        }
        let items: Vec<&[u8]> = (0..p.count()).map(|i| p.item(i)).collect();
        assert_eq!(items, [b"a".as_slice(), b"c", b"m", b"x"]);
        assert_eq!(p.search(b"m"), Ok(2));
        assert_eq!(p.search(b"d"), Err(2));
        p.remove(&[0, 2]);
        let items: Vec<&[u8]> = (0..p.count()).map(|i| p.item(i)).collect();
        assert_eq!(items, [b"c".as_slice(), b"x"]);
        assert_eq!(IndexPage(&b).validate(), Ok(()));
    }

    #[test]
    fn fills_compacts_and_truncates() {
        let mut b = page(4096);
        let mut p = IndexPageMut(&mut b);
        let mut n = 0u32;
        while p.insert(
            p.count(),
            &[n.to_be_bytes().as_slice(), &[7u8; 60]].concat(),
        ) {
            n += 1;
        }
        assert_eq!(n as usize, (4096 - INDEX_HEADER_BYTES) / 68);
        // Holes are reused once the gap is gone.
        let evens: Vec<usize> = (0..p.count()).step_by(2).collect();
        p.remove(&evens);
        let free = p.free_bytes();
        assert!(p.insert(0, &[0u8; 64]));
        assert_eq!(p.free_bytes(), free - 68);
        let half = p.count() / 2;
        assert!(p.truncate(half, b"zz", 77));
        assert_eq!(p.count(), half);
        assert_eq!(p.right(), Some(77));
        assert_eq!(p.high_key(), Some(&b"zz"[..]));
        assert!(p.beyond(b"zz") && !p.beyond(b"z"));
        assert_eq!(IndexPage(&b).validate(), Ok(()));
    }

    #[test]
    fn internal_routing() {
        let mut b = page(4096);
        let mut p = IndexPageMut(&mut b);
        p.init(9, 3, 1);
        for (i, sep) in [&b""[..], b"g", b"p"].iter().enumerate() {
            assert!(p.insert(i, &internal_item(sep, 100 + i as u64)));
        }
        let route = |p: &IndexPageMut, k: &[u8]| child_of(p.item(p.child_pos(k)));
        assert_eq!(route(&p, b"a"), 100);
        assert_eq!(route(&p, b"g"), 101);
        assert_eq!(route(&p, b"ga"), 101);
        assert_eq!(route(&p, b"p"), 102);
        assert_eq!(route(&p, b"zzz"), 102);
        assert_eq!(IndexPage(&b).validate(), Ok(()));
    }

    #[test]
    fn meta_page() {
        let mut b = page(4096);
        IndexPageMut(&mut b).init_meta(9, 3, 12, 0);
        assert_eq!(IndexPage(&b).meta(), Some((12, 0)));
        IndexPageMut(&mut b).set_meta(40, 2);
        assert_eq!(IndexPage(&b).meta(), Some((40, 2)));
        assert_eq!(IndexPage(&b).validate(), Ok(()));
    }

    #[test]
    fn validate_rejects_damage() {
        let mut b = page(4096);
        assert!(IndexPageMut(&mut b).insert(0, b"abc"));
        let mut bad = b.clone();
        bad[INDEX_HEADER_BYTES + 2] = 0xff;
        bad[INDEX_HEADER_BYTES + 3] = 0xff;
        assert!(IndexPage(&bad).validate().is_err());
        let mut bad = b.clone();
        bad[6] = 0xff;
        assert!(IndexPage(&bad).validate().is_err());
        let mut bad = b.clone();
        bad[40] = 1;
        bad[42] = 9;
        assert!(IndexPage(&bad).validate().is_err());
    }
}
