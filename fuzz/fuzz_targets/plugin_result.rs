//! `turnstile_host::fuzzing::ResultCheck` on the fuzzer's bytes: one small corpus for the run.
#![no_main]

use std::sync::OnceLock;

use turnstile_host::fuzzing::ResultCheck;

static CHECK: OnceLock<ResultCheck> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| CHECK.get_or_init(ResultCheck::new).check(data));
