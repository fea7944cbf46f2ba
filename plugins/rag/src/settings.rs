//! The operator's settings, parsed: where the model is (`upstream`) and how long its answer may
//! be (`max_tokens`). The model's name and the key are taken as they are.

/// The path every OpenAI-compatible server answers chat completions on, after the upstream's own.
pub const COMPLETIONS_PATH: &str = "/v1/chat/completions";
/// `max_tokens` when the operator sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 256;
/// The largest `max_tokens` taken: the answer is cut at 16 KiB anyway.
pub const MAX_MAX_TOKENS: u32 = 8192;

/// Where the completions are asked for: `scheme://authority` plus the path to POST to.
#[derive(Debug, PartialEq, Eq)]
pub struct Upstream {
    /// `https` (else `http`).
    pub https: bool,
    /// `host[:port]`.
    pub authority: String,
    /// The upstream's own path prefix (if any) and [`COMPLETIONS_PATH`].
    pub path: String,
}

/// The `upstream` setting: `http://HOST[:PORT]` or `https://…`, optionally with a path prefix
/// (`https://example.com/openai` posts to `/openai/v1/chat/completions`). The error names what
/// is wrong, never the value (it could carry credentials).
pub fn upstream(value: &str) -> Result<Upstream, String> {
    let value = value.trim();
    let lower = value.to_ascii_lowercase();
    let (https, rest) = if lower.starts_with("https://") {
        (true, &value["https://".len()..])
    } else if lower.starts_with("http://") {
        (false, &value["http://".len()..])
    } else {
        return Err("upstream: must start with http:// or https://".to_owned());
    };
    let (authority, prefix) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.is_empty() {
        return Err("upstream: names no host".to_owned());
    }
    if authority.contains('@') {
        return Err(
            "upstream: must not carry credentials (bind them with --outbound-bearer)".to_owned(),
        );
    }
    let bad = |c: char| c.is_whitespace() || c.is_control() || matches!(c, '?' | '#' | '\\');
    if rest.contains(bad) {
        return Err(
            "upstream: an origin and an optional path, no query, fragment or spaces".into(),
        );
    }
    Ok(Upstream {
        https,
        authority: authority.to_owned(),
        path: format!("{}{COMPLETIONS_PATH}", prefix.trim_end_matches('/')),
    })
}

/// The tokens an answer may have: what the client asked, at most the operator's `max_tokens`.
pub fn answer_tokens(client: Option<u32>, operator: u32) -> u32 {
    client.map_or(operator, |asked| asked.clamp(1, operator))
}

/// The `max_tokens` setting: 1..=[`MAX_MAX_TOKENS`], [`DEFAULT_MAX_TOKENS`] when absent.
pub fn max_tokens(value: Option<&str>) -> Result<u32, String> {
    let Some(value) = value else {
        return Ok(DEFAULT_MAX_TOKENS);
    };
    match value.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_MAX_TOKENS).contains(&n) => Ok(n),
        _ => Err(format!(
            "max_tokens: a whole number in 1..={MAX_MAX_TOKENS}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_posts_to_the_completions_path() {
        assert_eq!(
            upstream("http://127.0.0.1:9000").unwrap(),
            Upstream {
                https: false,
                authority: "127.0.0.1:9000".into(),
                path: "/v1/chat/completions".into(),
            }
        );
        let prefixed = upstream("HTTPS://api.example.com/openai/").unwrap();
        assert!(prefixed.https);
        assert_eq!(prefixed.authority, "api.example.com");
        assert_eq!(prefixed.path, "/openai/v1/chat/completions");
    }

    #[test]
    fn a_bad_upstream_is_refused_without_echoing_it() {
        for bad in [
            "127.0.0.1:9000",
            "ftp://x",
            "http://",
            "http:///v1",
            "http://user:sk-secret@host",
            "http://host/?key=sk-secret",
            "http://ho st",
        ] {
            let error = upstream(bad).unwrap_err();
            assert!(!error.contains("secret"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_client_asks_for_fewer_tokens_never_more() {
        assert_eq!(answer_tokens(None, 256), 256);
        assert_eq!(answer_tokens(Some(64), 256), 64);
        assert_eq!(answer_tokens(Some(100_000), 256), 256);
    }

    #[test]
    fn max_tokens_has_a_default_and_bounds() {
        assert_eq!(max_tokens(None), Ok(DEFAULT_MAX_TOKENS));
        assert_eq!(max_tokens(Some(" 64 ")), Ok(64));
        for bad in ["0", "-1", "9000", "many"] {
            assert!(max_tokens(Some(bad)).is_err(), "{bad}");
        }
    }
}
