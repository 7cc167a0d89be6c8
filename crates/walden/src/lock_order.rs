//! Debug checks of the lock order (docs/ARCHITECTURE.md, invariant 6) at the seams where
//! a wrong order would deadlock: page write latches are taken in page-number order, and
//! the WAL writer lock is never taken while the WAL insert lock is held. Each thread
//! keeps what it holds; a lock taken out of order panics before it would block. Release
//! builds keep nothing and check nothing.

#[cfg(debug_assertions)]
use std::cell::RefCell;

/// The kinds of lock checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    /// A page's exclusive latch (the key is the page number).
    PageWrite,
    /// The WAL insert lock.
    WalInsert,
}

#[cfg(debug_assertions)]
thread_local! {
    static HELD: RefCell<Vec<(Lock, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Notes that the thread is about to take `lock` (`key`: the page number), after
/// checking that it may: a page write latch only above every page it has write-latched.
/// (While the thread unwinds from a panic nothing is checked: a second panic would abort.)
#[inline]
pub fn acquire(lock: Lock, key: u64) {
    #[cfg(debug_assertions)]
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        if lock == Lock::PageWrite && !std::thread::panicking() {
            if let Some(&(_, above)) = h
                .iter()
                .find(|(l, k)| *l == Lock::PageWrite && *k >= key)
            {
                drop(h);
                panic!(
                    "lock order: write latch on page {key} taken while holding page {above}'s (page latches go in page-number order)"
                );
            }
        }
        h.push((lock, key));
    });
    #[cfg(not(debug_assertions))]
    let _ = (lock, key);
}

/// Notes that the thread takes `lock` outside the order (`PinnedPage::write_any_order`:
/// under a lock that excludes every other writer of the pages), so that releasing it
/// finds it.
#[inline]
pub fn acquire_unordered(lock: Lock, key: u64) {
    #[cfg(debug_assertions)]
    HELD.with(|h| h.borrow_mut().push((lock, key)));
    #[cfg(not(debug_assertions))]
    let _ = (lock, key);
}

/// Notes that the thread released `lock` (`key` as when it was taken).
#[inline]
pub fn release(lock: Lock, key: u64) {
    #[cfg(debug_assertions)]
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        if let Some(i) = h.iter().rposition(|e| *e == (lock, key)) {
            h.remove(i);
        }
    });
    #[cfg(not(debug_assertions))]
    let _ = (lock, key);
}

/// Checks, before the WAL writer lock is taken, that the thread does not hold the
/// insert lock (the order is writer, then insert).
#[inline]
pub fn before_wal_writer() {
    #[cfg(debug_assertions)]
    HELD.with(|h| {
        if !std::thread::panicking() && h.borrow().iter().any(|(l, _)| *l == Lock::WalInsert) {
            panic!("lock order: WAL writer lock taken while holding the WAL insert lock");
        }
    });
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;

    #[test]
    fn page_latches_out_of_order_are_caught() {
        acquire(Lock::PageWrite, 3);
        acquire(Lock::PageWrite, 7);
        release(Lock::PageWrite, 3);
        release(Lock::PageWrite, 7);
        // In order again after both were released.
        acquire(Lock::PageWrite, 1);
        let r = std::panic::catch_unwind(|| acquire(Lock::PageWrite, 1));
        assert!(r.is_err(), "the same page twice");
        HELD.with(|h| h.borrow_mut().clear());
        acquire(Lock::PageWrite, 9);
        let r = std::panic::catch_unwind(|| acquire(Lock::PageWrite, 4));
        assert!(r.is_err(), "a lower page after a higher one");
        HELD.with(|h| h.borrow_mut().clear());
    }

    #[test]
    fn the_wal_writer_lock_is_not_taken_under_the_insert_lock() {
        before_wal_writer();
        acquire(Lock::WalInsert, 0);
        assert!(std::panic::catch_unwind(before_wal_writer).is_err());
        release(Lock::WalInsert, 0);
        before_wal_writer();
    }
}
