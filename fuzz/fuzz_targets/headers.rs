//! `turnstile_server::fuzzing::headers` on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| turnstile_server::fuzzing::headers(data));
