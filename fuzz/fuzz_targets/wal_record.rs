//! WAL records as recovery and waldump read them: any bytes give a record or an error,
//! never a panic, and a record that decodes is described.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(rec) = walden::owners::owners().decode(data, 0) {
        assert!(rec.len as usize <= data.len());
        let _ = walden::owners::owners().describe(&rec);
    }
});
