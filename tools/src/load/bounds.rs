//! Every `turnstile load` flag's bounds and its parser: the one function that checks a value,
//! whether clap calls it while parsing or `Plan::from_args` does for a [`super::LoadArgs`] built in
//! code. Every error names the value and what is accepted.

use reqwest::Url;
use serde_json::Value;

/// The body sent when `--body` is not given (the classic demo's question).
pub const DEFAULT_BODY: &str = r#"{"question": "How do I parse command line arguments?"}"#;
/// The question `--chat` asks when `--question` is not given (the classic demo's).
pub const DEFAULT_QUESTION: &str = "How do I parse command line arguments?";
/// Longest `--question`, in characters (turnstile takes 500; the tag comes after it).
pub const MAX_QUESTION_CHARS: usize = 400;
/// Longest `--model`, in bytes.
pub const MAX_MODEL_BYTES: usize = 256;
/// Most concurrent users.
pub const MAX_USERS: u32 = 10_000;
/// Highest `--spawn-rate`, in users started per second.
pub const MAX_SPAWN_RATE: f64 = 10_000.0;
/// Longest `--duration`, in seconds (one day).
pub const MAX_DURATION_S: f64 = 86_400.0;
/// Longest `--timeout-s`, in seconds (one hour).
pub const MAX_TIMEOUT_S: f64 = 3_600.0;
/// Largest `--body`, in bytes.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Most bodies in a `--bodies` file.
pub const MAX_BODIES: usize = 100_000;
/// Largest `--bodies` file, in bytes.
pub const MAX_BODIES_FILE_BYTES: u64 = 64 << 20;

/// `--url`: an absolute `http://` URL with a host.
pub(crate) fn url(s: &str) -> Result<String, String> {
    let parsed = Url::parse(s).map_err(|e| {
        format!("not an absolute URL ({e}); expected e.g. http://127.0.0.1:8080/retrieve")
    })?;
    match parsed.scheme() {
        "http" => {}
        "https" => {
            return Err(
                "https is not supported: this build's HTTP client has no TLS; use an http:// URL"
                    .into(),
            );
        }
        other => {
            return Err(format!(
                "scheme {other:?} is not supported; use an http:// URL"
            ));
        }
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("the URL has no host; expected e.g. http://127.0.0.1:8080/retrieve".into());
    }
    Ok(s.to_owned())
}

/// `--users`: a whole number in 1..=[`MAX_USERS`].
pub(crate) fn users(s: &str) -> Result<u32, String> {
    let n = s
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("not a whole number; {}", users_range()))?;
    check_users(n)
}

fn users_range() -> String {
    format!("expected 1..={MAX_USERS} users")
}

pub(crate) fn check_users(n: u32) -> Result<u32, String> {
    if (1..=MAX_USERS).contains(&n) {
        Ok(n)
    } else {
        Err(format!("out of range; {}", users_range()))
    }
}

/// `--spawn-rate`: users started per second, more than 0 and at most [`MAX_SPAWN_RATE`].
pub(crate) fn spawn_rate(s: &str) -> Result<f64, String> {
    check_spawn_rate(number(s, &spawn_rate_range())?)
}

fn spawn_rate_range() -> String {
    format!("expected more than 0 and at most {MAX_SPAWN_RATE} users per second")
}

pub(crate) fn check_spawn_rate(r: f64) -> Result<f64, String> {
    in_range(r, MAX_SPAWN_RATE, spawn_rate_range())
}

/// `--duration`: total seconds (ramp-up included), more than 0 and at most [`MAX_DURATION_S`].
pub(crate) fn duration(s: &str) -> Result<f64, String> {
    check_duration(number(s, &duration_range())?)
}

fn duration_range() -> String {
    format!("expected more than 0 and at most {MAX_DURATION_S} seconds")
}

pub(crate) fn check_duration(d: f64) -> Result<f64, String> {
    in_range(d, MAX_DURATION_S, duration_range())
}

/// `--timeout-s`: per-request seconds, more than 0 and at most [`MAX_TIMEOUT_S`].
pub(crate) fn timeout(s: &str) -> Result<f64, String> {
    check_timeout(number(s, &timeout_range())?)
}

fn timeout_range() -> String {
    format!("expected more than 0 and at most {MAX_TIMEOUT_S} seconds")
}

pub(crate) fn check_timeout(t: f64) -> Result<f64, String> {
    in_range(t, MAX_TIMEOUT_S, timeout_range())
}

/// `value` in (0, `max`], else "out of range; `range`".
fn in_range(value: f64, max: f64, range: String) -> Result<f64, String> {
    if value.is_finite() && value > 0.0 && value <= max {
        Ok(value)
    } else {
        Err(format!("out of range; {range}"))
    }
}

fn number(s: &str, range: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .map_err(|_| format!("not a number; {range}"))
}

/// `--bodies`: JSON objects, one per line, each of at most [`MAX_BODY_BYTES`]; an error names
/// the line.
pub(crate) fn bodies_file(path: &std::path::Path) -> Result<Vec<bytes::Bytes>, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    if size > MAX_BODIES_FILE_BYTES {
        return Err(format!(
            "{size} bytes; at most {MAX_BODIES_FILE_BYTES} are allowed"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut bodies = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match body_value(line) {
            Ok(Value::Object(_)) => bodies.push(bytes::Bytes::from(line.to_owned())),
            Ok(_) => return Err(format!("line {}: not a JSON object", i + 1)),
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
        if bodies.len() > MAX_BODIES {
            return Err(format!("more than {MAX_BODIES} bodies"));
        }
    }
    if bodies.is_empty() {
        return Err("no body in it (one JSON object per line)".into());
    }
    Ok(bodies)
}

/// Most `--header`s.
pub const MAX_HEADERS: usize = 16;

/// `--header NAME: VALUE`: a valid HTTP header name and value (not `content-type`, which the
/// body sets).
pub(crate) fn header(s: &str) -> Result<String, String> {
    header_pair(s).map(|_| s.to_owned())
}

pub(crate) fn header_pair(
    s: &str,
) -> Result<(reqwest::header::HeaderName, reqwest::header::HeaderValue), String> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| "expected NAME: VALUE".to_owned())?;
    let name = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("{:?} is not a header name", name.trim()))?;
    if name == reqwest::header::CONTENT_TYPE {
        return Err("content-type is set by the body".into());
    }
    let value = reqwest::header::HeaderValue::from_str(value.trim())
        .map_err(|_| "not a header value (visible ASCII and spaces)".to_owned())?;
    Ok((name, value))
}

/// `--body`: JSON text of at most [`MAX_BODY_BYTES`].
pub(crate) fn body(s: &str) -> Result<String, String> {
    body_value(s).map(|_| s.to_owned())
}

pub(crate) fn body_value(s: &str) -> Result<Value, String> {
    if s.len() > MAX_BODY_BYTES {
        return Err(format!(
            "{} bytes; at most {MAX_BODY_BYTES} bytes are allowed",
            s.len()
        ));
    }
    serde_json::from_str(s).map_err(|e| format!("not valid JSON: {e}"))
}

/// `--question`: 1..=[`MAX_QUESTION_CHARS`] characters, not blank.
pub(crate) fn question(s: &str) -> Result<String, String> {
    let chars = s.chars().count();
    if s.trim().is_empty() {
        return Err("blank; expected a question".into());
    }
    if chars > MAX_QUESTION_CHARS {
        return Err(format!(
            "{chars} characters; at most {MAX_QUESTION_CHARS} are allowed (the tag follows)"
        ));
    }
    Ok(s.to_owned())
}

/// `--model`: 1..=[`MAX_MODEL_BYTES`] bytes, no control characters.
pub(crate) fn model(s: &str) -> Result<String, String> {
    if s.is_empty() || s.len() > MAX_MODEL_BYTES || s.chars().any(char::is_control) {
        return Err(format!(
            "expected a model name of 1..={MAX_MODEL_BYTES} bytes without control characters"
        ));
    }
    Ok(s.to_owned())
}
