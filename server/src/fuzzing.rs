//! What the fuzz targets check (`fuzz/`, run by `cargo fuzz`: `fuzz/run.sh`), and the
//! regression cases they found, which `cargo test` runs on stable.
//!
//! Each check takes the fuzzer's bytes and panics when the code under test misbehaves: a panic
//! of its own, an input accepted that breaks a bound, an input refused with the wrong kind of
//! error or with a message that quotes it at any length. A crash the fuzzer finds is kept in
//! `fuzz/regressions/TARGET/` (and its seeds in `fuzz/seeds/TARGET/`); the tests below run every
//! one of them.

use std::ffi::OsString;
use std::path::Path;

use crate::http::ApiError;
use crate::http::RetrieveRequest;
use crate::http::admin::SwapOrder;
use crate::http::corpus_swap::CorpusSwapOrder;
use crate::http::error::MAX_QUOTED_BYTES;
use crate::serve::ServeArgs;
use turnstile_config::{Env, Origin, ResolveError};

/// Longest human message a refused body may get: what the server says plus at most
/// [`MAX_QUOTED_BYTES`] of the body, escaped (an escaped control character takes up to 10 bytes).
const MAX_DETAIL_BYTES: usize = 512 + 10 * MAX_QUOTED_BYTES;

/// A `/retrieve` body: accepted only within every bound (and accepted again, the same, in its
/// plain form), or refused as invalid with a 400 or 422 and a bounded message.
pub fn retrieve_body(data: &[u8]) {
    match RetrieveRequest::parse(data) {
        Ok(request) => {
            assert!(!request.question.trim().is_empty(), "a blank question");
            assert!(
                request.question.chars().count() <= crate::http::MAX_QUESTION_CHARS,
                "a question over the bound"
            );
            assert!((1..=20).contains(&request.limit), "limit {}", request.limit);
            let plain = serde_json::json!({"question": request.question, "limit": request.limit});
            let again = RetrieveRequest::parse(plain.to_string().as_bytes());
            assert_eq!(again.ok().as_ref(), Some(&request), "not accepted again");
        }
        Err(error) => refused_as_invalid(&error),
    }
}

/// The admin swap bodies, `POST /admin/plugin`'s and `POST /admin/corpus`'s, on the same bytes:
/// a candidate with a 64-digit pin (and, for a plugin, bounded settings), or refused as invalid
/// with a 400 or 422 and a bounded message.
pub fn swap_body(data: &[u8]) {
    match SwapOrder::parse(data) {
        Ok(order) => {
            well_formed_pin(&order.trigger);
            if let Some(config) = &order.settings.config {
                assert!(config.len() <= turnstile_host::MAX_PLUGIN_CONFIG_ENTRIES);
                for (key, value) in config {
                    assert!(!key.is_empty() && key.len() <= turnstile_host::MAX_CONFIG_KEY_BYTES);
                    assert!(value.len() <= turnstile_host::MAX_CONFIG_VALUE_BYTES);
                }
            }
        }
        Err(error) => refused_as_invalid(&error),
    }
    match CorpusSwapOrder::parse(data) {
        Ok(order) => {
            assert!(!order.path.as_os_str().is_empty(), "an empty path");
            well_formed_pin(&order.trigger);
        }
        Err(error) => refused_as_invalid(&error),
    }
}

/// An admin trigger's pin, if any, is 64 lowercase hex digits.
fn well_formed_pin(trigger: &turnstile_host::swap::Trigger) {
    if let turnstile_host::swap::Trigger::Admin { sha256: Some(pin) } = trigger {
        assert!(
            pin.as_str().len() == 64
                && pin
                    .as_str()
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "pin {pin}"
        );
    }
}

/// A config file for `serve`: settings that resolve are settings that serve (every check across
/// them passes), and a file that does not resolve is told why in the file's terms — a syntax
/// error or problems at lines of the file, never a command-line error, and never a value read
/// as a flag.
pub fn config_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data).into_owned();
    let lines = text.lines().count().max(1);
    let read = |_: &Path| Ok(text.clone());
    let argv = [OsString::from("--config"), OsString::from("fuzz.toml")];
    match turnstile_config::resolve::<ServeArgs>(argv, &Env::default(), &read) {
        Ok(args) => {
            assert!(args.validate().is_ok(), "resolved but does not validate");
            assert!(args.gate_config().is_ok() && args.plugin_config().is_ok());
            assert!(args.global_config().is_ok());
        }
        Err(ResolveError::Syntax { line, .. }) => assert!(line <= lines + 1, "line {line}"),
        Err(ResolveError::Settings(problems)) => {
            assert!(!problems.is_empty());
            for problem in problems {
                if let Origin::File { line, .. } = problem.origin {
                    assert!((1..=lines + 1).contains(&line), "line {line} of {lines}");
                }
                // clap's two words for a value that was taken for a flag.
                for misread in ["unexpected argument", "a value is required"] {
                    assert!(!problem.message.contains(misread), "{problem}");
                }
            }
        }
        Err(other) => panic!("a config file refused as a command line: {other}"),
    }
}

fn refused_as_invalid(error: &ApiError) {
    let ApiError::Invalid { code, detail, .. } = error else {
        panic!("refused as {error}, not as an invalid request");
    };
    assert!(
        matches!(code.status().as_u16(), 400 | 422),
        "{}",
        code.as_str()
    );
    assert!(
        detail.len() <= MAX_DETAIL_BYTES,
        "{}: a message of {} bytes",
        code.as_str(),
        detail.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every input kept for a target: its seeds and the cases it ever crashed on.
    fn cases(target: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        let mut cases = Vec::new();
        for kind in ["seeds", "regressions"] {
            let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join(target)) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("a readable folder").path();
                let bytes = std::fs::read(&path).expect("a readable case");
                cases.push((path, bytes));
            }
        }
        cases.sort();
        assert!(!cases.is_empty(), "no cases for {target}");
        cases
    }

    fn run(target: &str, check: fn(&[u8])) {
        for (path, bytes) in cases(target) {
            let outcome = std::panic::catch_unwind(|| check(&bytes));
            assert!(outcome.is_ok(), "{target}: {} failed", path.display());
        }
    }

    #[test]
    fn retrieve_body_cases() {
        run("retrieve_body", retrieve_body);
    }

    #[test]
    fn swap_body_cases() {
        run("swap_body", swap_body);
    }

    #[test]
    fn config_file_cases() {
        run("config_file", config_file);
    }
}
