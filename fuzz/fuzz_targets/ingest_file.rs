//! `turnstile_ingest::fuzzing::ingest_file` on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| turnstile_ingest::fuzzing::ingest_file(data));
