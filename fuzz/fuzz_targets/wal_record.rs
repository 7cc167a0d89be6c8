//! WAL records as recovery and waldump read them (`walden::fuzzing::wal_record`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| walden::fuzzing::wal_record(data));
