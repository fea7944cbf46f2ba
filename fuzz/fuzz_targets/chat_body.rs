//! `turnstile_server::fuzzing::chat_body` on the fuzzer's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| turnstile_server::fuzzing::chat_body(data));
