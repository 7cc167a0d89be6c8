//! The control file and a checkpoint file as an open reads them
//! (`walden::fuzzing::control_files`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| walden::fuzzing::control_files(data));
