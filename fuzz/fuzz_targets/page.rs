//! Pages as read from the data file: a page that passes `validate` can be read at every
//! slot (and, for an index page, every item and the high key) without going out of
//! bounds; a page that does not is an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use walden::index_page::IndexPage;
use walden::page::PageRef;

fuzz_target!(|data: &[u8]| {
    // A page of 4 KiB: the bytes given, then zeros.
    let mut page = vec![0u8; 4096];
    let n = data.len().min(page.len());
    page[..n].copy_from_slice(&data[..n]);
    let p = PageRef(&page);
    if p.validate().is_ok() {
        for slot in 0..p.slot_count() {
            let _ = p.tuple_ref(slot);
        }
        let ix = IndexPage(&page);
        if ix.validate().is_ok() {
            for i in 0..ix.count() {
                let _ = ix.item(i);
            }
            let _ = ix.high_key();
        }
    }
});
