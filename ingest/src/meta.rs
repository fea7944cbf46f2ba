//! What a passage carries beside its text (issue 40): its `kind`, its `url` (a link back to
//! where it can be read) and its `fields` (a document's front matter, a row's other columns),
//! within the corpus's bounds (`turnstile_corpus::metadata`), which are checked here before
//! anything is written: the corpus never refuses a line the builder wrote.

use std::fmt::Write;

use serde_json::Value;
pub(crate) use turnstile_corpus::metadata::Fields;
pub(crate) use turnstile_corpus::metadata::check_kind;
use turnstile_corpus::metadata::{MAX_URL_BYTES, check_url, is_flat};

/// `value` as a field's value, if it is one ([`is_flat`]).
pub(crate) fn flat(value: Value) -> Option<Value> {
    is_flat(&value).then_some(value)
}

/// A document's url from its path in ids (`guide/cancel.md`): the path with what a url cannot
/// hold percent-encoded, after `base` (an absolute url, [`check_base_url`]) and one `/` when
/// there is one. `Err` when it would pass the corpus's bound.
pub(crate) fn document_url(base: Option<&str>, id_path: &str) -> Result<String, String> {
    let mut url = String::new();
    let path = id_path.trim_start_matches('/');
    match base {
        Some(base) => {
            url.push_str(base.trim_end_matches('/'));
            url.push('/');
        }
        // A relative reference whose first segment has a `:` (`Help:Contents.html`,
        // `std::vec.md`) would read as a scheme: `./` before it keeps it a path (RFC 3986, 4.2).
        None if path
            .split('/')
            .next()
            .is_some_and(|first| first.contains(':')) =>
        {
            url.push_str("./");
        }
        None => {}
    }
    encode(&mut url, path, "/");
    check_url(&url).map_err(|why| format!("its url: {why}"))?;
    Ok(url)
}

/// A document's url from its front matter (already checked): a relative one (`/cancel/`,
/// `guide/cancel.html`, as a site's permalinks are written) after `base` and one `/` when there
/// is one, as a file's path is; an absolute one, or one that is only a fragment or a query, as
/// it is. `Err` when the joined url would pass the corpus's bound.
pub(crate) fn front_matter_url(base: Option<&str>, url: String) -> Result<String, String> {
    let absolute = url.contains("://") || url.starts_with("//");
    let Some(base) = base.filter(|_| !absolute && !url.starts_with(['#', '?'])) else {
        return Ok(url);
    };
    let joined = format!(
        "{}/{}",
        base.trim_end_matches('/'),
        url.trim_start_matches('/')
    );
    check_url(&joined).map_err(|why| format!("its url after --base-url: {why}"))?;
    Ok(joined)
}

/// `url` with the fragment `anchor` (percent-encoded), when it has none and the result is
/// within the corpus's bound; else `url` as it is (a section's link falls back to its page's).
pub(crate) fn with_fragment(url: &str, anchor: &str) -> String {
    if url.contains('#') || anchor.is_empty() {
        return url.to_owned();
    }
    let mut out = String::with_capacity(url.len() + 1 + anchor.len());
    out.push_str(url);
    out.push('#');
    encode(&mut out, anchor, "/?");
    if check_url(&out).is_ok() {
        out
    } else {
        url.to_owned()
    }
}

/// Appends `text` to `out`, percent-encoding every byte but the unreserved characters, the
/// sub-delimiters, `:`, `@` and those of `also`.
fn encode(out: &mut String, text: &str, also: &str) {
    for c in text.chars() {
        let kept = c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@".contains(c) || also.contains(c);
        if kept {
            out.push(c);
        } else {
            let mut bytes = [0; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
}

/// `--base-url`'s parser: an `http` or `https` url with a host, without a query or a fragment
/// (the files' paths are joined to it), short enough to leave room for them.
pub(crate) fn check_base_url(url: &str) -> Result<String, String> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err("must be an http or https url (`https://host/path`)".to_owned());
    }
    check_url(url)?;
    if url.contains(['?', '#']) {
        return Err("must have no query (`?`) or fragment (`#`)".to_owned());
    }
    if url.len() > MAX_URL_BYTES / 2 {
        return Err(format!("must be at most {} bytes", MAX_URL_BYTES / 2));
    }
    Ok(url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_are_paths_encoded_after_the_base() {
        assert_eq!(
            document_url(None, "guide/cancel.md").unwrap(),
            "guide/cancel.md"
        );
        assert_eq!(
            document_url(Some("https://docs.example.com/help/"), "guide/my plan ü.md").unwrap(),
            "https://docs.example.com/help/guide/my%20plan%20%C3%BC.md"
        );
        assert_eq!(
            document_url(Some("https://h.example"), "a#b?.md").unwrap(),
            "https://h.example/a%23b%3F.md"
        );
        assert!(document_url(Some("https://h.example"), &"ü".repeat(400)).is_err());
        // A file named like a scheme is still a file.
        assert_eq!(
            document_url(None, "Help:Contents.html").unwrap(),
            "./Help:Contents.html"
        );
        assert_eq!(document_url(None, "std::vec.md").unwrap(), "./std::vec.md");
        assert_eq!(document_url(None, "a/b:c.md").unwrap(), "a/b:c.md");
        assert_eq!(
            document_url(Some("https://h.example"), "Help:Contents.html").unwrap(),
            "https://h.example/Help:Contents.html"
        );
        assert_eq!(with_fragment("a.md", "refunds"), "a.md#refunds");
        let front = |base: Option<&str>, url: &str| front_matter_url(base, url.to_owned());
        let base = Some("https://docs.example.com/help/");
        assert_eq!(
            front(base, "/cancel/").unwrap(),
            "https://docs.example.com/help/cancel/"
        );
        assert_eq!(
            front(base, "https://x.example/a").unwrap(),
            "https://x.example/a"
        );
        assert_eq!(front(base, "#top").unwrap(), "#top");
        assert_eq!(front(None, "/cancel/").unwrap(), "/cancel/");
        assert_eq!(
            with_fragment("a.md", "tarifs été"),
            "a.md#tarifs%20%C3%A9t%C3%A9"
        );
        assert_eq!(with_fragment("a.md#x", "refunds"), "a.md#x");
        let long = "a".repeat(MAX_URL_BYTES - 4);
        assert_eq!(with_fragment(&long, "refunds"), long);
    }

    #[test]
    fn a_base_url_is_http_or_https_with_a_host() {
        assert!(check_base_url("https://docs.example.com/help").is_ok());
        assert!(check_base_url("HTTP://h.example").is_ok());
        for bad in [
            "docs/help",
            "/help",
            "ftp://h.example",
            "https://",
            "https://h.example/?q",
            "https://h.example/#x",
            "https://h.example/a b",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fields_are_flat_and_kinds_bounded() {
        assert_eq!(flat(json!("x")), Some(json!("x")));
        assert_eq!(flat(json!([1, "a", true])), Some(json!([1, "a", true])));
        assert_eq!(flat(json!({"a": 1})), None);
        assert_eq!(flat(json!([{"a": 1}])), None);
        assert_eq!(flat(json!(null)), None);
        assert!(check_kind("faq").is_ok());
        assert!(check_kind("").is_err());
        assert!(check_kind("a\u{7}").is_err());
        assert!(check_kind(&"k".repeat(turnstile_corpus::MAX_KIND_BYTES + 1)).is_err());
    }
}
