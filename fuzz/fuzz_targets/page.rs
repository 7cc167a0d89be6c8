//! Pages as read from the data file (`walden::fuzzing::page`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| walden::fuzzing::page(data));
