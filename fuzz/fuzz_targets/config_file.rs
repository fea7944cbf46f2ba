//! `turnstile_server::fuzzing::config_file` on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| turnstile_server::fuzzing::config_file(data));
