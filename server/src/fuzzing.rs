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

/// A `/v1/chat/completions` body: accepted only within every bound the plugin is promised (a
/// question of 1..=500 characters, not blank; at most 256 earlier turns of at most 32 KiB; the
/// parameters in their ranges), or refused with a code, a bounded message and, when a field is at
/// fault, its name.
pub fn chat_body(data: &[u8]) {
    use crate::http::chat::request::ChatRequest;
    use turnstile_host::capabilities::conversation::{
        MAX_HISTORY_TURNS, MAX_STOP_SEQUENCES, MAX_TURN_BYTES, MAX_USER_BYTES,
    };
    match ChatRequest::parse(data) {
        Ok(request) => {
            assert!(!request.question.trim().is_empty(), "a blank question");
            assert!(
                request.question.chars().count() <= crate::http::MAX_QUESTION_CHARS,
                "a question over the bound"
            );
            assert!(!request.model.trim().is_empty(), "a blank model");
            let conversation = &request.conversation;
            assert!(conversation.history.len() <= MAX_HISTORY_TURNS);
            assert!(
                conversation
                    .history
                    .iter()
                    .all(|t| t.content.len() <= MAX_TURN_BYTES)
            );
            let parameters = &conversation.parameters;
            assert!(parameters.stop.len() <= MAX_STOP_SEQUENCES);
            assert!(
                parameters
                    .user
                    .as_ref()
                    .is_none_or(|u| u.len() <= MAX_USER_BYTES)
            );
            assert!(parameters.max_tokens.is_none_or(|n| n >= 1));
            assert!(
                parameters
                    .temperature
                    .is_none_or(|t| (0.0..=2.0).contains(&t))
            );
            assert!(request.stream || !request.include_usage);
        }
        Err(refused) => {
            assert!(!refused.code.is_empty());
            assert!(
                refused.message.len() <= MAX_DETAIL_BYTES,
                "a message of {} bytes",
                refused.message.len()
            );
            if let Some(param) = &refused.param {
                assert!(param.len() <= 64, "a param of {} bytes", param.len());
            }
        }
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

/// The request headers read before anything else, on the same bytes: `Authorization` on the
/// admin routes (`AdminPolicy::allows`), `Host` on every route, and the flow header's value on
/// `/retrieve`.
///
/// The bytes: a first line, the operator's `--admin-token` (none when empty) and
/// `--allowed-host`, then the header's value, as a client may send it (bytes a header value cannot hold never reach the server:
/// hyper refuses the request).
///
/// - `Authorization`: with a token, a request passes exactly when it carries `Bearer TOKEN` or
///   HTTP Basic whose password is the token (any user name without `:`), from any address;
///   without one, exactly when it comes from loopback, whatever it carries. The two forms built
///   from the token always pass.
/// - The flow header's value names a flow only when it is 1 to 64 bytes of
///   `A-Z a-z 0-9 . _ : -` (`turnstile_gate::valid_flow_name`, what `flow_of` in `http::flow`
///   applies to the header's one value; `flow_of` itself is private to `http`): safe to log and
///   to use as a metric label as it is.
/// - `Host` (`AllowedHosts::allows`): on a loopback listener, a well-formed host (a name or an
///   address, IPv6 in brackets, perhaps with a port) is allowed only when it is `localhost` or a
///   loopback address — what a page rebound to 127.0.0.1 sends is its own name, refused; with
///   `--allowed-host` (the first line, read by `parse_allowed_host`), only that name, with or
///   without a port; a value `parse_allowed_host` refuses is refused with a bounded message.
/// - The flow header: `flow_of` (`http::flow`) is private to `http`; what it applies to the
///   header's one value, `turnstile_gate::valid_flow_name`, is checked here.
///
/// # Panics
/// When a header is misread.
pub fn headers(data: &[u8]) {
    use axum::http::HeaderValue;
    let (token, value) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (&data[..0], data),
    };
    let token = String::from_utf8_lossy(token).into_owned();
    let token = (!token.is_empty()).then_some(token);
    let Ok(value) = HeaderValue::from_bytes(value) else {
        return;
    };
    let given = value.to_str().ok();
    let loopback: std::net::IpAddr = std::net::Ipv4Addr::LOCALHOST.into();
    let remote: std::net::IpAddr = std::net::Ipv4Addr::new(192, 0, 2, 7).into();
    let policy = crate::http::AdminPolicy {
        token: token.clone(),
        protect_state: false,
    };
    match &token {
        None => {
            assert!(policy.allows(loopback, given) && !policy.allows(remote, given));
        }
        Some(token) => {
            let expected = given.is_some_and(|v| carries_token(v, token));
            assert_eq!(policy.allows(remote, given), expected, "{given:?}");
            assert_eq!(policy.allows(loopback, given), expected, "{given:?}");
            use base64::Engine;
            let basic = base64::engine::general_purpose::STANDARD.encode(format!("fuzz:{token}"));
            for form in [format!("Bearer {token}"), format!("Basic {basic}")] {
                if HeaderValue::from_str(&form).is_ok() {
                    assert!(policy.allows(remote, Some(&form)), "{form:?} refused");
                }
            }
        }
    }
    host_header(token.as_deref(), given);
    if let Some(name) = given
        && turnstile_gate::valid_flow_name(name)
    {
        assert!((1..=turnstile_gate::MAX_FLOW_NAME_BYTES).contains(&name.len()));
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b)),
            "{name:?}"
        );
    }
}

/// The `Host` checks: the default on loopback, and `--allowed-host FLAG`.
fn host_header(flag: Option<&str>, given: Option<&str>) {
    use crate::http::{AllowedHosts, parse_allowed_host};
    let loopback = AllowedHosts::from_flags(&[], true);
    // Only a well-formed host is ever allowed (`[::1]junk`, `localhost:junk` never are).
    assert!(
        !loopback.allows(given) || given.and_then(well_formed_host).is_some(),
        "{given:?} allowed, though no well-formed host"
    );
    if loopback.allows(given)
        && let Some(name) = given.and_then(well_formed_host)
    {
        let loopback_name = name.eq_ignore_ascii_case("localhost")
            || name
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        assert!(loopback_name, "{given:?} allowed on loopback");
    }
    let Some(flag) = flag else { return };
    match parse_allowed_host(flag) {
        Ok(name) if name == "*" => {
            assert!(AllowedHosts::from_flags(&[name], true).allows(given));
        }
        Ok(name) => {
            assert!(
                !name.is_empty() && !name.contains(['[', ']', '/', ' ']),
                "{name:?}"
            );
            let hosts = AllowedHosts::from_flags(std::slice::from_ref(&name), true);
            let host = if name.contains(':') {
                format!("[{name}]")
            } else {
                name.clone()
            };
            assert!(hosts.allows(Some(&host)), "{host:?} refused");
            assert!(
                hosts.allows(Some(&format!("{host}:8080"))),
                "{host:?}:8080 refused"
            );
            if hosts.allows(given)
                && let Some(other) = given.and_then(well_formed_host)
            {
                assert!(
                    other.eq_ignore_ascii_case(&name),
                    "{given:?} allowed as {name:?}"
                );
            }
        }
        // The value is quoted cut at 64 characters, each escaped in at most 10 bytes.
        Err(message) => assert!(
            message.len() <= 128 + 64 * 10,
            "a message of {} bytes",
            message.len()
        ),
    }
}

/// The host a well-formed `Host` value names, without its port: `NAME[:PORT]` (a name without
/// `:`), or `[IPV6][:PORT]`; `None` for anything else.
fn well_formed_host(value: &str) -> Option<&str> {
    let port_ok = |port: &str| port.is_empty() || port.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = value.strip_prefix('[') {
        let (address, after) = rest.split_once(']')?;
        let port = match after {
            "" => "",
            _ => after.strip_prefix(':')?,
        };
        return (port_ok(port) && address.parse::<std::net::Ipv6Addr>().is_ok()).then_some(address);
    }
    let (name, port) = value.split_once(':').unwrap_or((value, ""));
    (!name.is_empty() && !port.contains(':') && port_ok(port)).then_some(name)
}

/// Whether an `Authorization` value carries `token`, as the contract says it: `Bearer TOKEN`
/// exactly, or `Basic` and the base64 of `USER:TOKEN` (spaces around it allowed).
fn carries_token(value: &str, token: &str) -> bool {
    use base64::Engine;
    if value.strip_prefix("Bearer ") == Some(token) {
        return true;
    }
    let Some(encoded) = value.strip_prefix("Basic ") else {
        return false;
    };
    base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|d| String::from_utf8(d).ok())
        .is_some_and(|pair| pair.split_once(':').is_some_and(|(_, p)| p == token))
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
    fn chat_body_cases() {
        run("chat_body", chat_body);
    }

    #[test]
    fn swap_body_cases() {
        run("swap_body", swap_body);
    }

    #[test]
    fn config_file_cases() {
        run("config_file", config_file);
    }

    #[test]
    fn headers_cases() {
        run("headers", headers);
    }
}
