//! Pages: the fixed-size unit of the data file. A 32-byte header (checksum, kind, slot
//! count, page LSN, page number, free-space pointer, owner) followed by a slot array that
//! grows up and row data that grows down from the end of the page.
//!
//! Layout (little-endian; see docs/format.md):
//! `0..4 crc32c(bytes 4..) | 4 kind | 5 flags | 6..8 slot_count | 8..16 lsn | 16..24 page_no |
//!  24..26 upper | 26..28 reserved | 28..32 owner | 32.. slots (offset u16, len u16) each`.

/// Bytes of the page header.
pub const PAGE_HEADER_BYTES: usize = 32;
/// Bytes of one slot-array entry.
pub const SLOT_BYTES: usize = 4;
/// Page sizes a database may be created with.
pub const PAGE_SIZES: [usize; 4] = [4096, 8192, 16384, 32768];
/// The default page size.
pub const DEFAULT_PAGE_SIZE: usize = 8192;

const _: () = assert!(PAGE_HEADER_BYTES.is_multiple_of(8));
const _: () = assert!(PAGE_SIZES[3] <= u16::MAX as usize + 1);

/// Flag bit: some slot below `slot_count` is unused (an insert may reuse it).
const FLAG_HAS_FREE_SLOT: u8 = 1;

/// What a page holds. Stored in byte 4 of the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    /// Rows of a heap table.
    Heap = 1,
    /// Transaction status bits.
    Clog = 2,
    /// A chunk of the copy-on-write page map.
    Map = 3,
    /// A node or the meta page of a B-tree index (layout in `index_page.rs`).
    Index = 4,
}

impl PageKind {
    pub fn from_u8(v: u8) -> Option<PageKind> {
        match v {
            1 => Some(PageKind::Heap),
            2 => Some(PageKind::Clog),
            3 => Some(PageKind::Map),
            4 => Some(PageKind::Index),
            _ => None,
        }
    }
}

/// Computes the checksum a page should carry: over the database id (so that a page of
/// another database never passes as one of ours), then everything after the checksum
/// field.
pub fn compute_checksum(page: &[u8], database_id: u64) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&database_id.to_le_bytes()), &page[4..])
}

/// Stores the checksum of the page in its first four bytes.
pub fn seal(page: &mut [u8], database_id: u64) {
    let crc = compute_checksum(page, database_id);
    page[0..4].copy_from_slice(&crc.to_le_bytes());
}

/// Checks a page read from disk: `Err((stored, computed))` when the checksum does not match.
pub fn verify_checksum(page: &[u8], database_id: u64) -> Result<(), (u32, u32)> {
    let stored = u32::from_le_bytes([page[0], page[1], page[2], page[3]]);
    let computed = compute_checksum(page, database_id);
    if stored == computed {
        Ok(())
    } else {
        Err((stored, computed))
    }
}

fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// The LSN stored in a page header.
pub fn page_lsn(page: &[u8]) -> u64 {
    u64::from_le_bytes(page[8..16].try_into().unwrap_or([0; 8]))
}

/// Read access to a page image in memory (trusted: checksum and layout were checked on load).
#[derive(Clone, Copy)]
pub struct PageRef<'a>(pub &'a [u8]);
/// Write access to a page image in memory.
pub struct PageMut<'a>(pub &'a mut [u8]);

macro_rules! page_readers {
    () => {
        pub fn kind_byte(&self) -> u8 {
            self.0[4]
        }
        pub fn slot_count(&self) -> u16 {
            get_u16(self.0, 6)
        }
        pub fn lsn(&self) -> u64 {
            page_lsn(self.0)
        }
        pub fn page_no(&self) -> u64 {
            u64::from_le_bytes(self.0[16..24].try_into().unwrap_or([0; 8]))
        }
        pub fn upper(&self) -> usize {
            get_u16(self.0, 24) as usize
        }
        pub fn owner(&self) -> u32 {
            u32::from_le_bytes(self.0[28..32].try_into().unwrap_or([0; 4]))
        }
        fn lower(&self) -> usize {
            PAGE_HEADER_BYTES + SLOT_BYTES * self.slot_count() as usize
        }
        /// Bytes free between the slot array and the row data.
        pub fn free_space(&self) -> usize {
            self.upper().saturating_sub(self.lower())
        }
        /// (offset, length) of a slot; offset 0 means the slot is unused.
        pub fn slot(&self, slot: u16) -> Option<(usize, usize)> {
            if slot >= self.slot_count() {
                return None;
            }
            let at = PAGE_HEADER_BYTES + SLOT_BYTES * slot as usize;
            let off = get_u16(self.0, at) as usize;
            let len = get_u16(self.0, at + 2) as usize;
            if off == 0 {
                None
            } else {
                Some((off, len))
            }
        }
        /// The bytes stored in a slot, or None if the slot is unused (or, on a page
        /// that is not a slotted page's layout, out of the page).
        pub fn tuple(&self, slot: u16) -> Option<&[u8]> {
            self.slot(slot)
                .and_then(|(off, len)| self.0.get(off..off + len))
        }
        /// Bytes the page can still take for a row of `len` bytes, counting a new slot.
        pub fn fits(&self, len: usize) -> bool {
            self.free_space() >= len + SLOT_BYTES
        }
    };
}

impl<'a> PageRef<'a> {
    page_readers!();

    /// Like `tuple`, but borrowing the page bytes rather than this wrapper.
    pub fn tuple_ref(&self, slot: u16) -> Option<&'a [u8]> {
        let bytes: &'a [u8] = self.0;
        self.slot(slot)
            .and_then(|(off, len)| bytes.get(off..off + len))
    }

    /// Checks the layout of a page read from disk so that later slot accesses cannot go
    /// out of bounds. Returns a reason on failure.
    pub fn validate(&self) -> Result<(), String> {
        let size = self.0.len();
        match PageKind::from_u8(self.kind_byte()) {
            None => return Err(format!("unknown page kind {}", self.kind_byte())),
            Some(PageKind::Index) => return crate::index_page::IndexPage(self.0).validate(),
            Some(_) => {}
        }
        let lower = self.lower();
        let upper = self.upper();
        if lower > size || upper > size || lower > upper {
            return Err(format!(
                "bad bounds: lower {lower}, upper {upper}, size {size}"
            ));
        }
        let mut ranges = Vec::with_capacity(self.slot_count() as usize);
        for s in 0..self.slot_count() {
            let at = PAGE_HEADER_BYTES + SLOT_BYTES * s as usize;
            let off = get_u16(self.0, at) as usize;
            let len = get_u16(self.0, at + 2) as usize;
            if off != 0 && (off < upper || off + len > size) {
                return Err(format!(
                    "slot {s} out of bounds: offset {off}, length {len}"
                ));
            }
            if off != 0 {
                ranges.push((off, len, s));
            }
        }
        // Rows must not overlap: compaction and free-space arithmetic rely on it.
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            if w[0].0 + w[0].1 > w[1].0 {
                return Err(format!("slots {} and {} overlap", w[0].2, w[1].2));
            }
        }
        Ok(())
    }
}

impl<'a> PageMut<'a> {
    page_readers!();

    /// Mutable bytes of a used slot, borrowing the page bytes.
    pub fn into_tuple_mut(self, slot: u16) -> Option<&'a mut [u8]> {
        let (off, len) = self.slot(slot)?;
        Some(&mut self.0[off..off + len])
    }

    /// Formats an empty page.
    pub fn init(&mut self, kind: PageKind, page_no: u64, owner: u32) {
        self.0.fill(0);
        self.0[4] = kind as u8;
        self.0[16..24].copy_from_slice(&page_no.to_le_bytes());
        assert!(self.0.len() <= PAGE_SIZES[3], "page size above 32 KiB");
        put_u16(self.0, 24, self.0.len() as u16);
        self.0[28..32].copy_from_slice(&owner.to_le_bytes());
    }

    pub fn set_lsn(&mut self, lsn: u64) {
        debug_assert!(lsn >= self.lsn(), "page LSN must not go backwards");
        self.0[8..16].copy_from_slice(&lsn.to_le_bytes());
    }

    fn set_slot(&mut self, slot: u16, off: usize, len: usize) {
        let at = PAGE_HEADER_BYTES + SLOT_BYTES * slot as usize;
        put_u16(self.0, at, off as u16);
        put_u16(self.0, at + 2, len as u16);
    }

    fn set_slot_count(&mut self, n: u16) {
        put_u16(self.0, 6, n);
    }

    /// The slot an insert will use: the first unused one, or a new one at the end.
    pub fn next_slot(&self) -> u16 {
        if self.0[5] & FLAG_HAS_FREE_SLOT != 0 {
            for s in 0..self.slot_count() {
                if self.slot(s).is_none() {
                    return s;
                }
            }
        }
        self.slot_count()
    }

    /// Stores `bytes` in `slot` (which must be unused or the next new slot). Returns false
    /// when it does not fit. Deterministic, so that redo rebuilds the same bytes.
    pub fn insert_at(&mut self, slot: u16, bytes: &[u8]) -> bool {
        let count = self.slot_count();
        // usize arithmetic: `slot` may come from a (checksummed but hostile) WAL record.
        let new_slots = if slot >= count {
            slot as usize - count as usize + 1
        } else {
            0
        };
        if slot < count && self.slot(slot).is_some() {
            return false;
        }
        if bytes.is_empty()
            || slot == u16::MAX
            || self.free_space() < bytes.len() + new_slots * SLOT_BYTES
        {
            return false;
        }
        if new_slots > 0 {
            for s in count..slot {
                self.set_slot(s, 0, 0);
            }
            self.set_slot_count(slot + 1);
            if new_slots > 1 {
                self.0[5] |= FLAG_HAS_FREE_SLOT;
            }
        }
        let upper = self.upper() - bytes.len();
        self.0[upper..upper + bytes.len()].copy_from_slice(bytes);
        put_u16(self.0, 24, upper as u16);
        self.set_slot(slot, upper, bytes.len());
        if slot < count && self.next_free_slot_after(slot).is_none() {
            self.0[5] &= !FLAG_HAS_FREE_SLOT;
        }
        true
    }

    fn next_free_slot_after(&self, slot: u16) -> Option<u16> {
        (0..self.slot_count()).find(|&s| s != slot && self.slot(s).is_none())
    }

    /// Mutable bytes of a used slot.
    pub fn tuple_mut(&mut self, slot: u16) -> Option<&mut [u8]> {
        let (off, len) = self.slot(slot)?;
        Some(&mut self.0[off..off + len])
    }

    /// Frees the given slots and packs the remaining rows at the end of the page, in slot
    /// order. Trailing unused slots are dropped from the slot array.
    pub fn remove_and_compact(&mut self, slots: &[u16]) {
        for &s in slots {
            if s < self.slot_count() {
                self.set_slot(s, 0, 0);
            }
        }
        let mut count = self.slot_count();
        while count > 0 && self.slot(count - 1).is_none() {
            count -= 1;
        }
        self.set_slot_count(count);
        let live: Vec<(u16, Vec<u8>)> = (0..count)
            .filter_map(|s| self.tuple(s).map(|t| (s, t.to_vec())))
            .collect();
        let mut upper = self.0.len();
        let lower = self.lower();
        self.0[lower..].fill(0);
        for (s, bytes) in &live {
            upper -= bytes.len();
            self.0[upper..upper + bytes.len()].copy_from_slice(bytes);
            self.set_slot(*s, upper, bytes.len());
        }
        put_u16(self.0, 24, upper as u16);
        if live.len() < count as usize {
            self.0[5] |= FLAG_HAS_FREE_SLOT;
        } else {
            self.0[5] &= !FLAG_HAS_FREE_SLOT;
        }
    }

    /// Shortens the tuple of a used slot to its first `len` bytes (at least 1); the
    /// rest is reclaimed by the next compaction. False, changing nothing, otherwise.
    pub fn truncate_tuple(&mut self, slot: u16, len: usize) -> bool {
        let Some((off, old)) = self.slot(slot) else {
            return false;
        };
        if len == 0 || len > old {
            return false;
        }
        self.set_slot(slot, off, len);
        true
    }

    /// Replaces the bytes of a used slot with `bytes` of another length, compacting the
    /// page (other slots keep their numbers). Returns false, changing nothing, when the
    /// page cannot hold them. Deterministic, so that redo rebuilds the same bytes.
    pub fn replace_at(&mut self, slot: u16, bytes: &[u8]) -> bool {
        let Some((_, old_len)) = self.slot(slot) else {
            return false;
        };
        if bytes.is_empty() || self.free_space() + old_len < bytes.len() {
            return false;
        }
        self.remove_and_compact(&[slot]);
        self.insert_at(slot, bytes)
    }

    /// The free-space hole between slot array and row data (dropped from page images).
    pub fn hole(&self) -> (usize, usize) {
        if self.kind_byte() == PageKind::Index as u8 {
            // An index page's slots start after its B-tree header.
            let lower = crate::index_page::INDEX_HEADER_BYTES
                + crate::index_page::ITEM_SLOT_BYTES * self.slot_count() as usize;
            return (lower.min(self.upper()), self.upper());
        }
        (self.lower(), self.upper())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        PageMut(&mut b).init(PageKind::Heap, 7, 3);
        b
    }

    #[test]
    fn insert_read_remove_compact() {
        let mut b = page();
        let mut p = PageMut(&mut b);
        assert_eq!(p.next_slot(), 0);
        assert!(p.insert_at(0, b"hello"));
        assert!(p.insert_at(1, b"world!"));
        assert_eq!(p.tuple(0), Some(&b"hello"[..]));
        assert_eq!(p.tuple(1), Some(&b"world!"[..]));
        let free_before = p.free_space();
        p.remove_and_compact(&[0]);
        assert_eq!(p.tuple(0), None);
        assert_eq!(p.tuple(1), Some(&b"world!"[..]));
        assert_eq!(p.free_space(), free_before + 5);
        assert_eq!(p.next_slot(), 0);
        assert!(p.insert_at(0, b"again"));
        assert_eq!(p.next_slot(), 2);
        assert_eq!(PageRef(&b).validate(), Ok(()));
    }

    #[test]
    fn replace_keeps_slot_numbers() {
        let mut b = page();
        let mut p = PageMut(&mut b);
        for (i, row) in [&b"aaaa"[..], b"bbbb", b"cccc"].iter().enumerate() {
            assert!(p.insert_at(i as u16, row));
        }
        assert!(p.replace_at(1, b"a much longer row"));
        assert!(p.replace_at(2, b"c"));
        assert_eq!(p.tuple(0), Some(&b"aaaa"[..]));
        assert_eq!(p.tuple(1), Some(&b"a much longer row"[..]));
        assert_eq!(p.tuple(2), Some(&b"c"[..]));
        assert!(!p.replace_at(3, b"x"), "unused slot");
        assert!(!p.replace_at(0, &vec![1u8; 5000]), "does not fit");
        assert_eq!(p.tuple(0), Some(&b"aaaa"[..]));
        assert_eq!(PageRef(&b).validate(), Ok(()));
    }

    #[test]
    fn fills_up_and_refuses() {
        let mut b = page();
        let mut p = PageMut(&mut b);
        let row = [1u8; 100];
        let mut n = 0u16;
        while p.insert_at(p.next_slot(), &row) {
            n += 1;
        }
        assert_eq!(n as usize, (4096 - PAGE_HEADER_BYTES) / (100 + SLOT_BYTES));
        assert!(!p.fits(100));
    }

    #[test]
    fn checksum_detects_flip() {
        let mut b = page();
        seal(&mut b, 7);
        assert_eq!(verify_checksum(&b, 7), Ok(()));
        assert!(verify_checksum(&b, 8).is_err());
        b[100] ^= 1;
        assert!(verify_checksum(&b, 7).is_err());
    }

    #[test]
    fn validate_rejects_bad_slot() {
        let mut b = page();
        let mut p = PageMut(&mut b);
        assert!(p.insert_at(0, b"abc"));
        b[PAGE_HEADER_BYTES + 2] = 0xff;
        b[PAGE_HEADER_BYTES + 3] = 0xff;
        assert!(PageRef(&b).validate().is_err());
    }
}
